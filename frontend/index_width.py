"""What of a kernel can reach ``index`` arithmetic, read from the kern IR lowering just made.

The launcher picks 32-bit ``index`` code for a launch only when no value of the kernel's index
arithmetic can leave int32 (``backend/binding.py``, :func:`~kernc.backend.binding.index_products_overflow`):
every size fits, and so do the products of the scalar arguments and constants that reach index
arithmetic with each other and with the sizes. This module finds those scalars and bounds those
constants on the IR of one kernel, so that every route counts without a list of routes: an
``index(...)`` conversion, the ``(off, s)`` of ``strided`` accessors (which lowering converts), the
bounds of a ``for`` loop over a non-``index`` type, the ``problem_size`` of ``over m``, a local or
loop-carried variable in between.

It is a forward dataflow analysis over SSA values (``scf.for`` iter args to a fixpoint), run on
the ops that matter: those the conversions to ``index`` of non-``index`` values depend on (a
backward slice), the index arithmetic ``index`` scalars take part in, and the index arithmetic
downstream of both (where a shift amount can make any value large). Each value gets a
:class:`_Fact`:

- ``mask``: the scalar params its value depends on (a bit per param, in the order given);
- ``ks`` / ``ku``: a bound on the magnitude that *constants* contribute to it, read as a signed
  and as an unsigned integer (a ``-1 : i32`` is 1 signed and 4294967295 unsigned, and which one an
  index sees depends on the conversion: ``index_cast`` or ``index_castui``); the bound of a product
  is the product of the bounds (``index(s * 256 * 256)``: 65536), of anything else the largest;
- ``const``: the exact value when the value is a constant expression (folded: ``index(i64(1) <<
  33)`` is 2^33).

Operations that can make a value much larger than its operands, beyond a product of two of them,
give the *top* bound (:data:`TOP`, which no 32-bit launch admits) when a scalar or constant feeds
them: a float division by a non-constant, ``exp``/``pow``, a shift by a non-constant amount, a
bitcast. Conversions that can turn a small magnitude into a huge one count as their range: a
signed scalar (or ``index`` one) reaching an ``index_castui`` of a ``w``-bit value went through a
conversion to an unsigned type (``index(u32(s))`` of ``s = -1`` is 2^32 - 1), and a ``w``-bit
subtraction with a scalar operand may wrap around (``index(u - 1u32)`` of ``u = 0``): both bound
by ``2^w - 1``. Values loaded from buffers and computed from thread ids only are not bounded
(README, "Semantics worth knowing": the CPU interpreter reports those that leave int32).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional

from kernc.support.mlir import ir

#: The bound of a value nothing limits (any 32-bit launch would be refused by it).
TOP = 2**64


class _Fact(NamedTuple):
    mask: int = 0
    ks: int = 0
    ku: int = 0
    const: Optional[object] = None  # the exact value (int or float) of a constant expression
    seeded: bool = False            # ``const`` is made from a non-index constant of the program


_EMPTY = _Fact()


class IndexReach(NamedTuple):
    """The result for one kernel: ``params``, the positions (in the list given to
    :func:`index_reach`) of the scalar params whose values reach an ``index`` value, and
    ``constant_bound``, a bound on the magnitude that constants contribute to ``index`` values
    (0 when none does; at most :data:`TOP`)."""

    params: list
    constant_bound: int


def _kind(t) -> tuple:
    if isinstance(t, ir.IndexType):
        return ("index", 64)
    if isinstance(t, ir.IntegerType):
        return ("int", ir.IntegerType(t).width)
    if isinstance(t, ir.FloatType):
        return ("float", 64)
    return ("other", 0)


def _signed(v: int, w: int) -> int:
    v &= (1 << w) - 1
    return v - (1 << w) if w > 1 and v >> (w - 1) else v


def _cap(x) -> int:
    """A magnitude as an int no larger than :data:`TOP` (inf and NaN are :data:`TOP`)."""
    if isinstance(x, float):
        if not math.isfinite(x):
            return TOP
        x = math.ceil(abs(x))
    return min(abs(int(x)), TOP)


def _magnitudes(v, kind: tuple) -> tuple:
    """``(ks, ku)`` of a constant ``v`` of ``kind``: its magnitude as a signed and as an unsigned
    integer of its width (floats and ``index``: the same)."""
    if kind[0] == "int":
        w = kind[1]
        return _cap(_signed(v, w)), _cap(v & ((1 << w) - 1))
    c = _cap(v)
    return c, c


def _product(a: int, b: int) -> int:
    return min(max(a, b, a * b), TOP)


#: Integer ops folded on constants: name -> f(a, b, width) on signed values (``None``: unfolded).
def _udiv(a, b, w):
    m = (1 << w) - 1
    return (a & m) // (b & m) if b & m else None


def _urem(a, b, w):
    m = (1 << w) - 1
    return (a & m) % (b & m) if b & m else None


def _sdiv(a, b, w):
    if b == 0:
        return None
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _srem(a, b, w):
    return None if b == 0 else a - _sdiv(a, b, w) * b


_INT_FOLD = {
    "arith.addi": lambda a, b, w: a + b,
    "arith.subi": lambda a, b, w: a - b,
    "arith.muli": lambda a, b, w: a * b,
    "arith.andi": lambda a, b, w: a & b,
    "arith.ori": lambda a, b, w: a | b,
    "arith.xori": lambda a, b, w: a ^ b,
    "arith.shli": lambda a, b, w: a << b if 0 <= b < w else 0,
    "arith.shrsi": lambda a, b, w: a >> b if 0 <= b < w else (-1 if a < 0 else 0),
    "arith.shrui": lambda a, b, w: (a & ((1 << w) - 1)) >> b if 0 <= b < w else 0,
    "arith.divsi": _sdiv,
    "arith.remsi": _srem,
    "arith.divui": _udiv,
    "arith.remui": _urem,
    "arith.floordivsi": lambda a, b, w: a // b if b else None,
    "arith.ceildivsi": lambda a, b, w: -((-a) // b) if b else None,
    "arith.minsi": lambda a, b, w: min(a, b),
    "arith.maxsi": lambda a, b, w: max(a, b),
    "arith.minui": lambda a, b, w: min(a & ((1 << w) - 1), b & ((1 << w) - 1)),
    "arith.maxui": lambda a, b, w: max(a & ((1 << w) - 1), b & ((1 << w) - 1)),
}
_FLOAT_FOLD = {
    "arith.addf": lambda a, b: a + b,
    "arith.subf": lambda a, b: a - b,
    "arith.mulf": lambda a, b: a * b,
    "arith.divf": lambda a, b: a / b if b else None,
}
#: Ops whose result is no larger in magnitude than their largest operand (give or take a factor
#: of two, which the launcher's bound absorbs: it multiplies by the largest size plus a block).
_TAME = {
    "arith.addi", "arith.andi", "arith.ori", "arith.xori", "arith.divsi", "arith.divui",
    "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi", "arith.minsi",
    "arith.maxsi", "arith.minui", "arith.maxui", "arith.shrsi", "arith.select", "arith.addf",
    "arith.subf", "arith.negf", "arith.remf", "arith.minimumf", "arith.maximumf", "arith.minnumf",
    "arith.maxnumf", "arith.extf", "arith.truncf", "math.absf", "math.absi", "math.floor",
    "math.ceil", "math.round", "math.roundeven", "math.trunc", "math.copysign", "math.sqrt",
    "math.rsqrt", "math.sin", "math.cos", "math.tanh", "math.atan", "math.atan2", "math.erf",
    "math.log", "math.log2", "math.log10", "math.log1p", "math.ctpop", "math.ctlz", "math.cttz",
}


_BRIDGES = ("arith.index_cast", "arith.index_castui")


def _bridges(block, out: list) -> None:
    """The ops of ``block`` (nested ones too) that make an ``index`` of another type: the only
    way a non-``index`` value enters index arithmetic (loop bounds and strided arguments are
    converted by them too)."""
    for view in block.operations:
        op = view.operation
        if op.regions:
            for region in op.regions:
                for b in region.blocks:
                    _bridges(b, out)
        elif op.name in _BRIDGES and not isinstance(op.operands[0].type, ir.IndexType):
            out.append(op)


def _terminator_operands(block) -> list:
    ops = list(block.operations)
    if not ops or ops[-1].operation.name not in ("scf.yield", "scf.condition"):
        return []
    outs = list(ops[-1].operation.operands)
    return outs[1:] if ops[-1].operation.name == "scf.condition" else outs


def _slice(roots: list) -> set:
    """The ops whose results the operands of ``roots`` depend on (through operands, loop-carried
    values and the values regions yield), the roots themselves included: the analysis needs
    the facts of these only."""
    ops: set = set(roots)
    seen: set = set()
    stack = [v for r in roots for v in r.operands]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, ir.BlockArgument):
            parent = v.owner.owner
            parent = parent.operation if hasattr(parent, "operation") else parent
            if parent is None or parent.name in ("func.func", "gpu.func"):
                continue
            operands = list(parent.operands)
            if parent.name == "scf.for":
                k = v.arg_number
                if k == 0:
                    stack += operands[:2]
                else:
                    stack.append(operands[2 + k])
                    stack.append(_terminator_operands(v.owner)[k - 1])
            else:
                stack += operands
            continue
        op = _owner(v)
        ops.add(op)
        if op.name == "scf.for":
            i = list(op.results).index(v)
            stack.append(list(op.operands)[3 + i])
            stack.append(_terminator_operands(op.regions[0].blocks[0])[i])
        elif op.regions:
            i = list(op.results).index(v)
            if op.name != "scf.if":
                stack += list(op.operands)
            for region in op.regions:
                for b in region.blocks:
                    outs = _terminator_operands(b)
                    if i < len(outs):
                        stack.append(outs[i])
        else:
            stack += list(op.operands)
    return ops


def _op_of(x):
    return x.operation if hasattr(x, "operation") else x


def _forward(roots: list, needed: set) -> None:
    """Add to ``needed`` the index arithmetic downstream of ``roots``: the ops using an ``index``
    result of one of them, transitively (through the values ``scf.yield`` hands to loops and
    branches). An index made from a scalar can feed a shift amount (``t << index(u)``), which
    needs the scalar's fact there."""
    stack = list(roots)
    while stack:
        op = stack.pop()
        values = [r for r in op.results if isinstance(r.type, ir.IndexType)]
        if op.name == "scf.for":  # its iv and loop-carried values
            values += [a for a in op.regions[0].blocks[0].arguments if isinstance(a.type, ir.IndexType)]
        for v in values:
            for use in v.uses:
                user = _op_of(use.owner)
                if user.name in ("scf.yield", "scf.condition"):
                    user = _op_of(user.parent)
                if user not in needed:
                    needed.add(user)
                    stack.append(user)


def _constant_value(v):
    """The value of ``v`` when an ``arith.constant`` defines it, else ``None``."""
    op = _owner(v)
    if op is None or op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    return ir.IntegerAttr(attr).value if isinstance(attr, ir.IntegerAttr) else None


class _Analysis:
    def __init__(self, signed_bits: int, needed: set):
        self.facts: dict = {}
        self.signed_bits = signed_bits  # the mask bits of signed integer and index params
        self.needed = needed            # the ops whose facts are needed (:func:`_slice`)
        self.reach_mask = 0
        self.bound = 0

    def fact(self, v) -> _Fact:
        return self.facts.get(v, _EMPTY)

    # -- walking ----------------------------------------------------------------------------------
    def block(self, block) -> None:
        get, needed = self.facts.get, self.needed
        for view in block.operations:
            op = view.operation
            if op.regions:
                name = op.name
                if name == "scf.for":
                    self.for_(op)
                else:
                    self.region_op(op, name)
                continue
            if op not in needed:
                continue
            name = op.name
            if name == "arith.constant":
                self.constant(op)
            else:
                ins = [get(v, _EMPTY) for v in op.operands]
                for f in ins:
                    if f is not _EMPTY:
                        break
                else:
                    continue  # (most ops: values nothing reaches; their results stay empty)
                results = op.results
                if len(results):
                    f = self.transfer(op, name, ins, results)
                    for r in results:
                        self.set(r, f)

    def region_op(self, op, name: str) -> None:
        """``scf.if`` (and any other op with regions but ``scf.for``): its results join what its
        blocks yield (and, but for ``scf.if``'s condition, its operands)."""
        ins = _join([self.fact(v) for v in op.operands]) if name != "scf.if" else _EMPTY
        joined = [_EMPTY] * len(op.results)
        for region in op.regions:
            for block in region.blocks:
                for a in block.arguments:
                    self.set(a, ins)
                self.block(block)
                ops = list(block.operations)
                if ops and ops[-1].operation.name in ("scf.yield", "scf.condition"):
                    outs = list(ops[-1].operation.operands)
                    if ops[-1].operation.name == "scf.condition":
                        outs = outs[1:]
                    for i, y in enumerate(outs[:len(joined)]):
                        joined[i] = _join([joined[i], self.fact(y)])
        for r, f in zip(op.results, joined):
            self.set(r, _join([f, ins]))

    def for_(self, op) -> None:
        operands = list(op.operands)
        lb, ub, inits = operands[0], operands[1], operands[3:]
        body = op.regions[0].blocks[0]
        args = list(body.arguments)
        self.set(args[0], _join([self.fact(lb), self.fact(ub)]))
        carried = [_unknown(self.fact(v)) for v in inits]
        grown = [0] * len(carried)
        while True:
            for a, f in zip(args[1:], carried):
                self.set(a, f)
            self.block(body)
            yields = list(list(body.operations)[-1].operation.operands)
            changed = False
            for i, y in enumerate(yields[:len(carried)]):
                new = _join([carried[i], self.fact(y)])
                if new.mask != carried[i].mask or new.ks != carried[i].ks or new.ku != carried[i].ku:
                    if new.mask == carried[i].mask:
                        # constant bounds growing around a loop (p = p * 2): stop after two steps;
                        # a loop-carried value is a run-time value (README: not bounded)
                        grown[i] += 1
                        if grown[i] > 2:
                            continue
                    carried[i] = new
                    changed = True
            if not changed:
                break
        for r, f in zip(op.results, carried):
            self.set(r, f)

    def set(self, v, f: _Fact) -> None:
        if f is _EMPTY:
            return
        self.facts[v] = f
        k = _cap(f.const) if f.const is not None and f.seeded else f.ks
        if (f.mask or k) and isinstance(v.type, ir.IndexType):
            self.reach_mask |= f.mask
            self.bound = max(self.bound, k)

    # -- transfer functions -----------------------------------------------------------------------
    def constant(self, op) -> None:
        """A constant: the exact value; a non-``index`` one seeds the constants' bound (the
        program's ``index`` constants are bounded by the frontend, KernelSignature.index_literal_max,
        and lowering's own -- extents, 0, 1 -- are sizes)."""
        attr = op.attributes["value"]
        if isinstance(attr, ir.IntegerAttr):
            v = ir.IntegerAttr(attr).value
        elif isinstance(attr, ir.FloatAttr):
            v = ir.FloatAttr(attr).value
        else:
            return
        r = op.results[0]
        kind = _kind(r.type)
        if kind[0] == "index":
            self.facts[r] = _Fact(const=v)
        else:
            ks, ku = _magnitudes(v, kind)
            self.set(r, _Fact(0, ks, ku, v, True))

    def transfer(self, op, name: str, ins: list, res) -> _Fact:
        """The fact of the results of ``op`` (operand facts ``ins``, at least one not empty)."""
        out_kind = _kind(res[0].type)
        if out_kind == ("int", 1):  # comparisons and flags: 0 or 1, whatever fed them
            c = self.fold(op, name, ins, out_kind)
            return _Fact(const=c) if c is not None else _EMPTY
        ins_v = ins[1:] if name == "arith.select" else ins
        mask = 0
        for f in ins_v:
            mask |= f.mask
        for f in ins:
            if f.const is None:
                break
        else:
            const = self.fold(op, name, ins, out_kind)
            if const is not None:
                if any(f.seeded for f in ins):
                    ks, ku = _magnitudes(const, out_kind)
                    return _Fact(mask, ks, ku, const, True)
                return _Fact(mask, 0, 0, const, False)
        ks = max(f.ks for f in ins_v) if ins_v else 0
        ku = max(f.ku for f in ins_v) if ins_v else 0
        wide = mask or ks or ku
        if name in ("arith.muli", "arith.mulf"):
            ks, ku = _product(ins[0].ks, ins[1].ks), _product(ins[0].ku, ins[1].ku)
        elif name == "math.fma":
            ks = max(_product(ins[0].ks, ins[1].ks), ins[2].ks)
            ku = max(_product(ins[0].ku, ins[1].ku), ins[2].ku)
        elif name in ("arith.remsi", "arith.remui", "arith.remf"):
            # |x % y| < |y| and <= |x|: either operand bounds it (the divisor: a hash % n)
            x, y = ins
            return min(x, y, key=lambda f: (_bound(f), bin(f.mask).count("1")))._replace(const=None, seeded=False)
        elif name in ("arith.divsi", "arith.divui", "arith.floordivsi", "arith.ceildivsi"):
            return ins[0]._replace(const=None, seeded=False)  # |x / y| <= |x| (+1): the dividend
        elif name == "arith.andi":
            for f in ins:  # x & c with a constant c >= 0 is at most c
                if f.const is not None and f.seeded and f.ks == f.ku:
                    return _Fact(0, f.ks, f.ku)
        elif name == "arith.subi":
            if mask and out_kind[0] == "int":  # may wrap around as an unsigned value
                ku = (1 << out_kind[1]) - 1
        elif name == "arith.shli":
            c = ins[1].const if ins[1].const is not None else _constant_value(op.operands[1])
            if c is not None and 0 <= c < out_kind[1]:
                ks, ku = _product(ins[0].ks, 1 << c), _product(ins[0].ku, 1 << c)
            elif wide:
                ks = ku = TOP
        elif name == "arith.select" and _guarded_difference(op):
            a, b = (self.fact(v) for v in _owner(op.operands[1]).operands)
            ks, ku = max(ks, a.ks, b.ks), max(a.ku, b.ku, ins[2].ku)  # a > b ? a - b : c never wraps
        elif name == "arith.shrui":
            ks = ku = ins[0].ku
        elif name == "arith.divf":
            c = ins[1].const
            if c is not None and c != 0 and math.isfinite(c):
                k = _product(ins[0].ks, _cap(1 / abs(c)) if abs(c) < 1 else 1)
                ks = ku = k
            elif wide:
                ks = ku = TOP
        elif name == "arith.extui":
            ks = ku = ins[0].ku
        elif name == "arith.extsi":
            a = ins[0]
            ku = (1 << out_kind[1]) - 1 if a.ku > a.ks else a.ku  # a negative constant, widened
        elif name == "arith.trunci":
            w = out_kind[1]
            ks, ku = min(ins[0].ks, 1 << (w - 1)), min(ins[0].ku, (1 << w) - 1)
        elif name == "arith.index_cast":
            pass  # ks: the signed reading, for both directions
        elif name == "arith.index_castui":
            a, in_kind = ins[0], _kind(op.operands[0].type)
            if out_kind[0] == "index" and in_kind[0] == "int" and in_kind[1] < 64:
                ks = ku = a.ku
                if a.mask & self.signed_bits:  # a signed scalar made unsigned on the way
                    ks = ku = max(ks, (1 << in_kind[1]) - 1)
        elif name == "arith.uitofp":
            ks = ku = ins[0].ku
        elif name in ("arith.sitofp", "arith.fptosi", "arith.fptoui"):
            ks = ku = max(ins[0].ks, ins[0].ku)
        elif name in _TAME or not name.startswith(("arith.", "math.")):
            pass  # (buffer loads and other kern ops: run-time values, not bounded here)
        elif wide:  # exp, pow, a bitcast, ...: anything may come out
            ks = ku = TOP
        return _Fact(mask, ks, ku)

    @staticmethod
    def fold(op, name: str, ins: list, kind: tuple):
        """The exact value of ``op`` on constant operands (``None`` when not folded)."""
        try:
            vals = [f.const for f in ins]
            if any(v is None for v in vals):
                return None
            if kind[0] in ("int", "index"):
                w = kind[1]
                if name in _INT_FOLD:
                    r = _INT_FOLD[name](int(vals[0]), int(vals[1]), w)
                    return None if r is None else _signed(r, w)
                if name == "arith.select":
                    return vals[1] if vals[0] else vals[2]
                in_kind = _kind(op.operands[0].type)
                if name in ("arith.extsi", "arith.index_cast", "arith.trunci"):
                    return _signed(int(vals[0]), w)
                if name in ("arith.extui", "arith.index_castui"):
                    src_w = in_kind[1]
                    return _signed(int(vals[0]) & ((1 << src_w) - 1), w)
                if name in ("arith.fptosi", "arith.fptoui"):
                    v = vals[0]
                    if not math.isfinite(v):
                        return None
                    return _signed(int(v), w) if abs(v) < 2.0**w else None
                if name == "arith.cmpi":
                    return None
                return None
            if kind[0] == "float":
                if name in _FLOAT_FOLD:
                    return _FLOAT_FOLD[name](float(vals[0]), float(vals[1]))
                if name == "arith.negf":
                    return -float(vals[0])
                if name in ("arith.extf", "arith.truncf"):
                    return float(vals[0])
                if name == "arith.sitofp":
                    return float(vals[0])
                if name == "arith.uitofp":
                    return float(int(vals[0]) & ((1 << _kind(op.operands[0].type)[1]) - 1))
                if name == "arith.select":
                    return vals[1] if vals[0] else vals[2]
            return None
        except (OverflowError, ValueError, ZeroDivisionError, TypeError, IndexError):
            return None


def _owner(v):
    """The op defining ``v`` (``None`` for a block argument)."""
    if isinstance(v, ir.BlockArgument):
        return None
    op = v.owner
    return op.operation if hasattr(op, "operation") else op


def _guarded_difference(select) -> bool:
    """``select(a > b, a - b, c)`` (``ugt`` or ``sgt``): the trip count lowering makes of a ``for``
    loop over an unsigned or 64-bit type, whose subtraction cannot wrap around."""
    cond, diff = _owner(select.operands[0]), _owner(select.operands[1])
    if cond is None or diff is None or cond.name != "arith.cmpi" or diff.name != "arith.subi":
        return False
    pred = ir.IntegerAttr(cond.attributes["predicate"]).value
    # arith.CmpIPredicate: sgt = 4, ugt = 8
    return pred in (4, 8) and list(cond.operands) == list(diff.operands)


def _bound(f: _Fact) -> int:
    """A fact's constant bound (its value's magnitude for a constant)."""
    return _cap(f.const) if f.const is not None and f.seeded else max(f.ks, f.ku)


def _join(facts: list) -> _Fact:
    mask = ks = ku = 0
    for f in facts:
        mask |= f.mask
        ks, ku = max(ks, f.ks), max(ku, f.ku)
    return _Fact(mask, ks, ku)


def _unknown(f: _Fact) -> _Fact:
    """``f`` with its constant value forgotten (a loop-carried value): a seeded constant keeps its
    magnitude as the bound."""
    if f.const is not None and f.seeded:
        return _Fact(f.mask, max(f.ks, _cap(f.const)), max(f.ku, _cap(f.const)))
    return _Fact(f.mask, f.ks, f.ku)


def index_reach(fn, params: list) -> IndexReach:
    """Analyse the kern-IR function ``fn`` (a ``func.func`` lowering made): ``params`` lists
    ``(block argument, dtype name)`` of its scalar params (``"i32"``, ``"index"``, ``"f32"``...).

    Returns :class:`IndexReach` (the params whose values reach an ``index`` value, and the bound
    of the constants' contribution). Only the ops that conversions to ``index`` depend on are
    analysed (a kernel without such a conversion costs one walk); linear in their number but for
    ``scf.for`` bodies, walked again while the facts of their loop-carried values grow."""
    roots: list = []
    for block in fn.regions[0].blocks:
        _bridges(block, roots)
    # and the index arithmetic an index scalar takes part in directly (thread_id << s)
    for arg, dtype in params:
        if dtype == "index":
            roots += [_op_of(use.owner) for use in arg.uses]
    if not roots:
        return IndexReach([], 0)
    needed = _slice(roots)
    _forward(roots, needed)
    signed = 0
    an = _Analysis(0, needed)
    for k, (arg, dtype) in enumerate(params):
        an.facts[arg] = _Fact(mask=1 << k)
        if dtype == "index" or dtype.startswith("i"):
            signed |= 1 << k
    an.signed_bits = signed
    for block in fn.regions[0].blocks:
        an.block(block)
    return IndexReach([k for k in range(len(params)) if an.reach_mask >> k & 1], min(an.bound, TOP))


# -- the launch-time bound of every index value (kernc.dialect.index_bound) -----------------------

#: arith/math ops whose bound node is one op of kernc.dialect.index_bound on their operands
_BOUND_OPS = {
    "arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul", "arith.divsi": "div",
    "arith.floordivsi": "div", "arith.ceildivsi": "div", "arith.divui": "divu", "arith.ceildivui": "divu",
    "arith.remsi": "rem", "arith.remui": "remu", "arith.andi": "and", "arith.ori": "or", "arith.xori": "or",
    "arith.shrsi": "shr", "arith.shrui": "shru", "arith.minsi": "max", "arith.maxsi": "max",
    "arith.minui": "max", "arith.maxui": "max", "arith.trunci": "id", "math.absi": "mag",
    "arith.addf": "add", "arith.subf": "add", "arith.mulf": "mul", "math.fma": "fma",
    "arith.maximumf": "max", "arith.minimumf": "max", "arith.maxnumf": "max", "arith.minnumf": "max",
    "arith.negf": "id", "math.absf": "id", "arith.extf": "id", "arith.truncf": "id", "math.floor": "id",
    "math.ceil": "id", "math.round": "id", "math.roundeven": "id", "math.trunc": "id",
    "arith.remf": "min", "arith.sitofp": "id", "arith.uitofp": "zext", "arith.fptosi": "sgn",
    "arith.fptoui": "mag",
}
#: math functions with a constant bound on their magnitude
_BOUNDED_FUNCTIONS = {"math.sin": 1, "math.cos": 1, "math.tanh": 1, "math.erf": 1, "math.atan": 2,
                      "math.atan2": 2}
#: kern ops whose index result is a thread coordinate (below the launch's largest size plus a block)
_COORDINATES = ("kern.thread_id", "kern.block_id", "kern.block_dim", "kern.lane_id", "kern.problem_size")
_VIEW_OPS = ("kern.view_load", "kern.view_store")
_ACCESSOR_OPS = ("kern.read", "kern.write", "kern.add")
#: float type -> (significand bits p: round-to-nearest errs by at most 2^-p relative, a bound on
#: the largest finite value); another float type (p, max 0) is always ``top``
_FLOAT_ROUNDING = {"bf16": (8, TOP), "f16": (11, 65504), "f32": (24, TOP), "f64": (53, TOP)}  # (TOP: 2^64, below their max)


def _width(t):
    """The width of a value for :mod:`~kernc.dialect.index_bound` (64: ``index``, 0: a float),
    or ``None`` for a value that is no scalar number (a memref, a vector)."""
    if isinstance(t, ir.IndexType):
        return 64
    if isinstance(t, ir.IntegerType):
        return ir.IntegerType(t).width
    if isinstance(t, ir.FloatType):
        return 0
    return None


class _BoundBuilder:
    """Builds the nodes of :mod:`kernc.dialect.index_bound` for the values of one kern-IR function,
    in one walk (hash-consed; constants folded)."""

    def __init__(self):
        self.nodes: list = []
        self.consts: list = []     # (S, U) of a constant node, else None
        self.keys: dict = {}
        self.of: dict = {}         # ir.Value -> node
        self.fconst: dict = {}     # node -> the float value of a float constant
        self.roots: list = []
        self.items = None          # the node of P + block (a bound on every item t, t + 1)

    # -- nodes ---------------------------------------------------------------------------------
    def node(self, op: str, w: int, *fields) -> int:
        from kernc.dialect import index_bound as ib

        n = ib.LITERALS[op]
        refs = fields[n:]
        if op not in ("p", "z", "L") and all(self.consts[r] is not None for r in refs):
            return self.const(*ib.step([op, w, *fields], self.consts, None))
        key = (op, w, *fields)
        k = self.keys.get(key)
        if k is None:
            k = self.keys[key] = len(self.nodes)
            self.nodes.append([op, w, *fields])
            self.consts.append(None)
        return k

    def const(self, s: int, u: int) -> int:
        key = ("c", s, u)
        k = self.keys.get(key)
        if k is None:
            k = self.keys[key] = len(self.nodes)
            self.nodes.append(["c", 0, s, u])
            self.consts.append((s, u))
        return k

    def top(self, w: int) -> int:
        return self.node("top", w)

    def placeholder(self, w: int) -> int:
        """A loop-carried value: resolved to its bound after the loop (:meth:`finish`)."""
        unbounded = self.top(w)  # (until the loop's walk bounds it)
        self.nodes.append(["X", w, unbounded])
        self.consts.append(None)
        return len(self.nodes) - 1

    def get(self, v) -> int:
        k = self.of.get(v)
        if k is None:
            w = _width(v.type)
            k = self.top(64 if w is None else w)
        return k

    def set(self, v, k: int) -> None:
        self.of[v] = k
        if isinstance(v.type, ir.IndexType):
            self.roots.append(k)

    # -- walking -------------------------------------------------------------------------------
    def block(self, block) -> None:
        for view in block.operations:
            op = view.operation
            name = op.name
            if name == "scf.for":
                self.for_(op)
            elif name == "scf.if":
                self.if_(op)
            elif op.regions:
                for region in op.regions:
                    for b in region.blocks:
                        for a in b.arguments:
                            if _width(a.type) is not None:
                                self.set(a, self.top(_width(a.type)))
                        self.block(b)
                self.results_top(op)
            elif name not in ("scf.yield", "scf.condition", "func.return"):
                try:
                    self.transfer(op, name)
                except (KeyError, ValueError, TypeError, AttributeError, IndexError):
                    # (an op this analysis does not understand: its values are not bounded)
                    self.roots.append(self.top(64))
                    self.results_top(op)

    def results_top(self, op) -> None:
        for r in op.results:
            w = _width(r.type)
            if w is not None:
                self.set(r, self.top(w))

    def if_(self, op) -> None:
        joined: list = [[] for _ in op.results]
        for region in op.regions:
            for b in region.blocks:
                self.block(b)
                for i, y in enumerate(_terminator_operands(b)[:len(joined)]):
                    joined[i].append(self.get(y))
        for r, ks in zip(op.results, joined):
            w = _width(r.type)
            if w is not None:
                self.set(r, self.node("max", w, *ks) if ks else self.top(w))

    def for_(self, op) -> None:
        operands = list(op.operands)
        lb, ub, inits = self.get(operands[0]), self.get(operands[1]), operands[3:]
        body = op.regions[0].blocks[0]
        args = list(body.arguments)
        self.set(args[0], self.node("range", 64, lb, ub))
        trips = self.node("sub", 64, ub, lb)  # at most |ub| + |lb| iterations (a step >= 1)
        xs = []
        for a in args[1:]:
            w = _width(a.type)
            xs.append(None if w is None else self.placeholder(w))
            if w is not None:
                self.set(a, xs[-1])
        first = len(self.nodes)
        self.block(body)
        yields = _terminator_operands(body)
        # the nodes made in the body that depend on this loop's carried values
        carried = {x for x in xs if x is not None}
        dep = set(carried)
        for k in range(first, len(self.nodes)):
            if k in dep:
                continue
            node = self.nodes[k]
            # (an inner loop's carried value counts as depending on ours: its bound comes later)
            if node[0] == "X" or any(r in dep for r in self._refs(node)):
                dep.add(k)
        for x, init, y, r in zip(xs, inits, yields, op.results):
            if x is None:
                continue
            w = self.nodes[x][1]
            e, i0 = self.get(y), self.get(init)
            if e == x:
                bound = i0
            elif e not in dep:
                bound = self.node("max", w, i0, e)
            elif w == 0:  # a float carried around: each trip's rounding compounds (unbounded here)
                bound = self.top(w)
            else:
                lin = self._linear(e, x, dep, 0)
                if lin is None:  # grows in a way not bounded here (p = p * 2, p = p + q)
                    bound = self.top(w)
                else:  # p = p + d each iteration: |p| <= |p0| + trips * |d|
                    _, d, sub = lin
                    step = self.node("mul", w, trips, d if d is not None else self.const(0, 0))
                    bound = self.node("sub" if sub else "add", w, i0, step)
            self.nodes[x][2] = bound
            self.set(r, bound)

    def _refs(self, node) -> list:
        from kernc.dialect.index_bound import LITERALS

        return [] if node[0] == "X" else node[2 + LITERALS[node[0]]:]

    def _linear(self, e: int, x: int, dep: set, depth: int):
        """``(x_count, d, subtracted)`` when node ``e`` is at most ``|x| + |d|`` (``x`` counted at most
        once, ``d`` a node free of the loop's carried values), else ``None``."""
        if e == x:
            return 1, None, False
        if e not in dep:
            return 0, e, False
        node = self.nodes[e]
        op, w = node[0], node[1]
        if depth > 200 or op not in ("add", "sub", "max", "id"):
            return None
        parts = [self._linear(r, x, dep, depth + 1) for r in self._refs(node)]
        if any(p is None for p in parts) or (op == "sub" and parts[1][0]):
            return None
        ds = [p[1] for p in parts if p[1] is not None]
        sub = op == "sub" or any(p[2] for p in parts)
        if op == "max":
            count = max(p[0] for p in parts)
            d = self.node("max", w, *ds) if ds else None
        else:
            count = sum(p[0] for p in parts)
            d = ds[0] if len(ds) == 1 else self.node("add", w, *ds) if ds else None
        return (count, d, sub) if count <= 1 else None

    # -- one op ----------------------------------------------------------------------------------
    def transfer(self, op, name: str) -> None:
        results = list(op.results)
        ins = [self.get(v) for v in op.operands] if name.startswith(("arith.", "math.")) else None
        if name in _VIEW_OPS or name == "kern.in_bounds":
            self.roots.append(self.view_offset(op, name))
        elif name in _ACCESSOR_OPS:
            self.roots += self.accessor_indices(op)
        if not results:
            return
        w = _width(results[0].type)
        if w is None:
            return
        if name == "arith.constant":
            attr = op.attributes["value"]
            if isinstance(attr, ir.IntegerAttr):
                v = ir.IntegerAttr(attr).value
                if w == 64:
                    k = self.const(min(abs(v), 2**63), v if v >= 0 else 2**64 - 1)
                else:
                    s = _signed(v, w)
                    k = self.const(*_clamp_int(w, abs(s), v & ((1 << w) - 1)))
            elif isinstance(attr, ir.FloatAttr):
                from kernc.dialect.index_bound import float_magnitude

                f = ir.FloatAttr(attr).value
                m = float_magnitude(f)
                k = self.const(m, m)
                self.fconst[k] = f
            else:
                k = self.top(w)
            self.set(results[0], k)
            return
        if name in _BOUND_OPS:
            code = _BOUND_OPS[name]
            if code == "zext":
                k = self.node("zext", w, _width(op.operands[0].type) or 64, ins[0])
            elif code in ("id", "sgn", "mag"):
                k = self.node(code, w, ins[0])
            else:
                k = self.node(code, w, *ins)
        elif name == "arith.select":
            if _guarded_difference(op):
                a, b = (self.get(v) for v in _owner(op.operands[1]).operands)
                k = self.node("max", w, self.node("gsub", w, a, b), ins[2])
            else:
                k = self.node("max", w, ins[1], ins[2])
        elif name in ("arith.cmpi", "arith.cmpf"):
            k = self.const(1, 1)
        elif name in ("arith.extsi", "arith.index_cast", "arith.extui", "arith.index_castui"):
            win = _width(op.operands[0].type)
            if win == 64 or win is None:  # index -> integer: a truncation
                k = self.node("id", w, ins[0])
            else:
                k = self.node("zext" if name.endswith("ui") else "sext", w, win, ins[0])
        elif name == "arith.shli":
            amount = self.consts[ins[1]]
            if amount is not None and amount[0] == amount[1] and amount[0] < (w or 64):
                k = self.node("shl", w, amount[0], ins[0])
            else:
                k = self.top(w)
        elif name == "arith.divf":
            c = self.fconst.get(ins[1])
            if c is not None and abs(c) >= 1:
                k = self.node("id", w, ins[0])
            elif c is not None and c != 0 and math.isfinite(c):
                # x / c = x * (1/c): |1/c| of a tiny c overflows a float (1 / 5e-324 is inf), so
                # it goes through _cap (inf -> TOP), never straight into math.ceil
                inv = _cap(1 / abs(c)) if abs(c) > 1 / TOP else TOP
                k = self.node("mul", w, ins[0], self.const(inv, inv))
            else:
                k = self.top(w)
        elif name == "math.copysign":
            k = self.node("id", w, ins[0])
        elif name in ("math.sqrt",):
            k = self.node("max", w, ins[0], self.const(1, 1))
        elif name in _BOUNDED_FUNCTIONS:
            k = self.const(_BOUNDED_FUNCTIONS[name], _BOUNDED_FUNCTIONS[name])
        elif name in ("math.ctpop", "math.ctlz", "math.cttz"):
            k = self.const(w, w)
        elif name in _COORDINATES:
            k = self.node("L", 64)
        elif name == "kern.delinearize":  # coordinate k below extent k
            for r, extent in zip(results, list(op.operands)[1:]):
                self.set(r, self.get(extent))
            return
        elif name == "kern.layout_apply":
            k = self.view_offset(op, name)
        elif name == "kern.swizzle":
            bits, base, shift = (ir.IntegerAttr(op.attributes[a]).value for a in ("bits", "base", "shift"))
            mask = (1 << (bits + base + abs(shift))) - 1
            k = self.node("or", 64, self.get(op.operands[0]), self.const(mask, mask))
        else:  # loads and anything else: the type's range
            self.results_top(op)
            return
        if w == 0:  # a float op: its result rounded to its type, inf past its largest value
            k = self.node("fr", 0, *_FLOAT_ROUNDING.get(str(results[0].type), (0, 0)), k)
        self.set(results[0], k)
        for r in results[1:]:
            if _width(r.type) is not None:
                self.set(r, self.top(_width(r.type)))

    def accessor_indices(self, op) -> list:
        """The bounds of the index arithmetic lowering adds for a ``kern.read``/``write``/``add``:
        for the strided kinds the element ``off + t*s`` (``pair``'s second ``off + (t+1)*s``, a
        staged block's last ``t`` below ``P + block``), bounded by ``|off| + (P + block) * |s|``
        (``L + 1`` for ``P + block`` when the problem size is not known here) with the bounds of the ``off`` and ``s`` operands themselves (any
        expression: ``strided(a * b, s)``, ``strided(M * M, M)``). Other kinds reach elements below
        the buffer's length (``t``, ``t + 1``, ``I[t]`` checked at launch), which the launcher
        counts as a size; so does the layout offset of an element in bounds."""
        from kernc.dialect.access import Access

        acc = Access.from_op(op)
        if not acc.kind.strided:
            return []
        off, s = (self.get(v) for v in acc.offset_stride)
        items = self.items if self.items is not None else self.node("add", 64, self.node("L", 64), self.const(1, 1))
        return [self.node("add", 64, off, self.node("mul", 64, items, s))]

    def view_offset(self, op, name: str) -> int:
        """The bound of the element offset the layout of ``op`` gives its coordinates:
        ``sum_k |c_k| * |d_k|`` over the strides ``d_k`` (polynomials over the size operands),
        with a swizzle's bits on top (``kern-lower-layouts`` and ``kern-lower-views`` compute it)."""
        from kernc.dialect.access import Coordinates
        from kernc.dialect.kern import parse_view_layout

        if name in _VIEW_OPS:
            seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
            operands = list(op.operands)
            coords = operands[seg[0]:seg[0] + seg[1]]
            sizes = operands[seg[0] + seg[1]:seg[0] + seg[1] + seg[2]]
            layout, swizzle = parse_view_layout(ir.StringAttr(op.attributes["layout"]).value)
            syms = [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes["syms"])]
        else:
            c = Coordinates.from_op(op)
            coords, sizes, layout, swizzle, syms = c.coords, c.sizes, c.layout, c.swizzle, c.syms
        env = {s: self.get(v) for s, v in zip(syms, sizes)}
        total = self.const(0, 0)
        for coord, stride in zip(coords, layout.stride):
            d = self.const(0, 0)
            for term_syms, coeff in stride.terms:
                t = self.const(abs(coeff), abs(coeff))
                for s in term_syms:
                    t = self.node("mul", 64, t, env[s])
                d = self.node("add", 64, d, t)
            total = self.node("add", 64, total, self.node("mul", 64, self.get(coord), d))
        if swizzle is not None:
            mask = (1 << (sum(abs(int(x)) for x in swizzle))) - 1
            total = self.node("or", 64, total, self.const(mask, mask))
        return total

    # -- the program -------------------------------------------------------------------------------
    def finish(self) -> list:
        """The nodes the ``max`` of all index values needs, in an order where every node comes
        after those it reads (loop-carried placeholders replaced by their bounds)."""
        roots = list(dict.fromkeys(self.roots))
        if not roots:
            return []
        self.nodes.append(["max", 64, *roots])
        top = len(self.nodes) - 1
        new: dict = {}
        out: list = []
        stack = [(top, False)]
        while stack:
            k, ready = stack.pop()
            if k in new:
                continue
            node = self.nodes[k]
            if node[0] == "X":
                target = node[2]
                if ready:
                    new[k] = new[target]
                else:
                    stack += [(k, True), (target, False)]
                continue
            refs = self._refs(node)
            if ready:
                from kernc.dialect.index_bound import LITERALS

                n = 2 + LITERALS[node[0]]
                new[k] = len(out)
                out.append([*node[:n], *(new[r] for r in refs)])
            else:
                stack.append((k, True))
                stack += [(r, False) for r in refs if r not in new]
        return out


def _clamp_int(w: int, s: int, u: int) -> tuple:
    half, full = 1 << (w - 1), (1 << w) - 1
    s, u = min(s, half), min(u, full)
    return (min(s, u), u) if u < half else (s, u)


def index_bound_program(fn, params: list, sizes: list, problem: tuple | None = None) -> list:
    """The program of :mod:`kernc.dialect.index_bound` bounding every ``index`` value of the
    kern-IR function ``fn``: ``params`` lists ``(block argument, name, dtype name)`` of its scalar
    params, ``sizes`` ``(block argument, name)`` of its size symbols, ``problem`` the kernel's
    ``(problem_size, block)`` (``KernelSignature``: a product of size symbols or an ``index``
    scalar; ``None``: items are bounded by the coordinates' bound). One walk over the ops."""
    from kernc.dialect import index_bound as ib
    from kernc.dialect.strided import Poly

    b = _BoundBuilder()
    named: dict = {}
    for arg, name, dtype in params:
        w = _width(arg.type)
        if w is None:
            continue
        sign = ib.FLOAT if w == 0 else ib.UNSIGNED if dtype.startswith("u") or dtype == "bool" else ib.SIGNED
        named[name] = b.node("p", w, name, sign)
        b.set(arg, named[name])
    for arg, name in sizes:
        named[name] = b.node("z", 64, name)
        b.set(arg, named[name])
    if problem is not None:
        try:
            poly, items = Poly.parse(problem[0]), b.const(problem[1], problem[1])
            for term_syms, coeff in poly.terms:
                t = b.const(abs(coeff), abs(coeff))
                for sym in term_syms:
                    t = b.node("mul", 64, t, named[sym])
                items = b.node("add", 64, items, t)
            b.items = items
        except (KeyError, ValueError):
            pass  # (the coordinates' bound instead)
    for block in fn.regions[0].blocks:
        b.block(block)
    return b.finish()
