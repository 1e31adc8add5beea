"""``kern-lower-divisions``: strength reduction of ``index`` divisions and remainders.

Layout arithmetic divides coordinates by extents: delinearizing ``t`` over ``over (i, j) in (M, N)``,
splitting ``m`` into ``(n, oh, ow)`` in ``im2col``, a linear index into a layout's modes. A 32/64-bit
integer division is a long instruction sequence on NVIDIA GPUs (there is no hardware divider), so
``arith.divsi|divui|floordivsi|remsi|remui`` on ``index`` values become:

- **constant power-of-two divisor** ``2^k``: shifts and masks. ``divui`` -> ``shrui``, ``remui`` ->
  ``andi 2^k-1``, ``floordivsi`` -> ``shrsi``; the truncating ``divsi`` adds the bias ``2^k - 1`` to
  a negative dividend first (``(n + (n < 0 ? 2^k-1 : 0)) >> k``) and ``remsi`` is ``n - (q << k)``
  -- exact for every sign, and independent of the width ``index`` gets later (32 or 64 bits);
- **kernel-uniform runtime divisor** ``d`` (a function argument such as a size symbol, or ``arith``
  of arguments and constants; a dividend that is itself uniform is left alone), when its divisions
  run often enough per thread to pay for the set-up (option ``magic=auto|always|never``, see
  :class:`LowerDivisions`): the
  *round-up* magic-number method of T. Granlund and P. L. Montgomery, "Division by invariant
  integers using multiplication", PLDI 1994, section 4 / Fig. 4.1 (also H. S. Warren, *Hacker's
  Delight*, 2nd ed., chapter 10, unsigned division by divisors >= 1). For ``N = 32``-bit
  operands, with ``l = ceil(log2 d)`` and ``m' = floor(2^32 * (2^l - d) / d) + 1`` (``< 2^32``):
  ``t = mulhi(m', n)``, ``n / d = (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0)`` for all
  ``0 <= n < 2^32``, all in 32 bits except the ``mulhi``, a 64-bit multiply of zero-extended
  operands (``(n * m') >> 32``, which the NVPTX backend selects as ``mul.hi.u32``; the CPU
  interpreter has no ``*_extended`` ops). ``m'`` and the two shifts are computed once at the kernel
  entry (``l`` from the exponent of ``double(d - 1)``, exact below 2^53, so no ``math.ctlz`` and no
  libdevice; ``m'`` from an ``f32`` reciprocal estimate refined with exact 64-bit remainders, see
  :func:`_floor_a_2_32_over_d` -- no 64-bit integer division, a long subroutine on GPUs) and kept
  as 32-bit values; the remainder is ``n - q * d``.
  The method needs ``1 <= d < 2^32`` and ``0 <= n < 2^32``: the rewrite checks both at run time
  (one 64-bit compare of the dividend, the divisor's flag is computed at entry) and keeps the
  original ``arith`` op in the ``else`` branch of an ``scf.if``, so negative coordinates (padding),
  64-bit sizes and a zero divisor keep their exact ``arith`` semantics;
- **constant other divisors** are left to LLVM, whose DAG combiner emits the same magic-number
  multiply for constants (for any width); per-thread divisors stay divisions.

Runs after ``kern-lower-views``/``kern-lower-layouts`` and before ``kern-lower-builtins``
(``kern.problem_size``/``kern.block_dim`` count as uniform).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import ir

from . import ir_builder as b
from .base import Pass, defined_functions, option, walk_ops
from .index_facts import IndexFacts

DIV_OPS = {"arith.divsi", "arith.divui", "arith.floordivsi", "arith.remsi", "arith.remui"}
_PURE = {
    "arith.constant", "arith.addi", "arith.subi", "arith.muli", "arith.divsi", "arith.divui",
    "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi", "arith.ceildivui",
    "arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci",
    "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui", "arith.andi", "arith.ori",
    "arith.xori", "arith.shli", "arith.shrsi", "arith.shrui", "arith.select", "arith.cmpi",
}
_UNIFORM_OPS = {"kern.problem_size", "kern.block_dim"}
_TWO32 = 1 << 32


def _i64():
    return ir.IntegerType.get_signless(64)


def _c64(v: int) -> ir.Value:
    return b.const(v, _i64())


def _attrs(op) -> dict:
    """The attributes of ``op`` as a dict (name -> attribute)."""
    return {name: op.attributes[name] for name in op.attributes}


def _const_int(v: ir.Value):
    """The integer value of an ``arith.constant`` result, else None."""
    if isinstance(v, ir.BlockArgument):
        return None
    op = v.owner
    op = op.operation if hasattr(op, "operation") else op
    if op.name != "arith.constant":
        return None
    try:
        return ir.IntegerAttr(op.attributes["value"]).value
    except (ValueError, TypeError):
        return None


class _Function:
    """Per-function state: uniformity, hoisting to the entry, magic numbers per divisor."""

    def __init__(self, fn):
        self.fn = fn
        self.entry = fn.regions[0].blocks[0]
        self.ip = ir.InsertionPoint(self.entry.operations[0])
        self._uniform: dict = {}
        self._hoisted: dict = {}
        self._magic: dict = {}

    def uniform(self, v: ir.Value) -> bool:
        if isinstance(v, ir.BlockArgument):
            return v.owner == self.entry
        if v in self._uniform:
            return self._uniform[v]
        op = v.owner
        op = op.operation if hasattr(op, "operation") else op
        ok = op.name in _UNIFORM_OPS or (
            op.name in _PURE and len(op.regions) == 0 and all(self.uniform(x) for x in op.operands))
        self._uniform[v] = ok
        return ok

    def hoist(self, v: ir.Value) -> ir.Value:
        """``v`` (uniform) recomputed at the function entry (memoised)."""
        if isinstance(v, ir.BlockArgument):
            return v
        if v in self._hoisted:
            return self._hoisted[v]
        op = v.owner
        op = op.operation if hasattr(op, "operation") else op
        operands = [self.hoist(x) for x in op.operands]
        with self.ip, op.location:
            new = ir.Operation.create(op.name, results=[r.type for r in op.results],
                                      operands=operands,
                                      attributes=_attrs(op))
        for old, nv in zip(op.results, new.results):
            self._hoisted[old] = nv
        return self._hoisted[v]

    def magic(self, d: ir.Value):
        """``(ok_d, m, sh1, sh2)`` of uniform divisor ``d``, computed at the entry: ``ok_d`` (i1)
        says ``1 <= d < 2^32``; the multiplier ``m`` and the shifts ``sh1 = min(l, 1)``,
        ``sh2 = max(l - 1, 0)`` are i32 (32-bit state keeps register pressure low)."""
        d = self.hoist(d)
        if d in self._magic:
            return self._magic[d]
        arith = b.arith
        i32 = ir.IntegerType.get_signless(32)
        with self.ip, self.fn.location:
            d64 = arith.IndexCastOp(_i64(), d).result
            one = _c64(1)
            ok_d = b.cmp("ult", b.sub(d64, one), _c64(_TWO32 - 1))      # 1 <= d < 2^32
            ds = b.select(ok_d, d64, one)
            dm1 = b.sub(ds, one)
            bits = arith.BitcastOp(_i64(), arith.UIToFPOp(ir.F64Type.get(), dm1).result).result
            exp = b.sub(arith.ShRUIOp(bits, _c64(52)).result, _c64(1022))  # floor(log2(d-1)) + 1
            l = b.select(b.cmp("eq", dm1, _c64(0)), _c64(0), exp)          # ceil(log2 d)
            q = _floor_a_2_32_over_d(b.sub(arith.ShLIOp(one, l).result, ds), ds)
            m = arith.TruncIOp(i32, b.add(q, one)).result
            l32 = arith.TruncIOp(i32, l).result
            sh1 = arith.MinUIOp(l32, b.const(1, i32)).result
            sh2 = b.sub(l32, sh1)
        self._magic[d] = (ok_d, m, sh1, sh2)
        return self._magic[d]


#: ``magic=auto``: weight of a division inside a loop (an unknown, probably large, trip count) and
#: outside one, and the total weight per divisor above which the magic numbers pay off.
LOOP_WEIGHT, STRAIGHT_WEIGHT, MAGIC_THRESHOLD = 8, 1, 4
_LOOPS = {"scf.for", "scf.while", "scf.parallel", "scf.forall"}


def _in_loop(op, fn) -> bool:
    """``op`` is inside a loop that may run many times per thread. A grid-stride loop (an
    ``scf.for`` stepping by ``gpu.grid_dim``, as ``kern-coalesce-views`` builds over its tiles) does
    not count: the launcher sizes the grid to the problem, so it runs about once per thread."""
    parent = op.parent
    while parent is not None:
        p = parent.operation if hasattr(parent, "operation") else parent
        if p == fn:
            return False
        if p.name in _LOOPS and not _grid_stride(p):
            return True
        parent = p.parent
    return False


def _grid_stride(loop) -> bool:
    if loop.name != "scf.for":
        return False
    step = loop.operands[2]
    if isinstance(step, ir.BlockArgument):
        return False
    owner = step.owner
    return (owner.operation if hasattr(owner, "operation") else owner).name == "gpu.grid_dim"


def _key(v: ir.Value) -> str:
    """A structural key of a uniform value (equal computations of the same divisor group)."""
    if isinstance(v, ir.BlockArgument):
        return f"%arg{v.arg_number}"
    op = v.owner
    op = op.operation if hasattr(op, "operation") else op
    attrs = ",".join(f"{k}={op.attributes[k]}" for k in sorted(op.attributes))
    return f"{op.name}[{attrs}](" + ",".join(_key(x) for x in op.operands) + ")"


@dataclass
class LowerDivisions(Pass):
    """Shifts for power-of-two divisors, magic multiplications for kernel-uniform divisors.

    ``magic``: ``auto`` (default) uses the magic numbers for a divisor when its divisions are
    executed often enough per thread to pay for computing them (each thread computes them once,
    about the cost of two 32-bit divisions, then saves about half a division per use): a division
    inside a loop counts :data:`LOOP_WEIGHT` (a grid-stride loop, which runs about once per thread,
    does not count as a loop), one outside :data:`STRAIGHT_WEIGHT`, and a divisor
    whose total exceeds :data:`MAGIC_THRESHOLD` is rewritten (a lone ``t / N`` of a 2-D ``over``
    stays one hardware division sequence; the divisions of an im2col inside a loop become
    multiplications). ``always`` rewrites every division by a uniform divisor, ``never`` none (powers
    of two still become shifts).
    """

    name = "kern-lower-divisions"
    summary = "strength-reduce index divisions (shifts/masks, Granlund-Montgomery magic numbers)"

    magic: str = option("auto", choices=("auto", "always", "never"))

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn in defined_functions(module, {"gpu.func", "func.func"}):
            divisions = to_unsigned(fn, walk_ops(fn, DIV_OPS))
            # decide first (uniformity is computed on the unmodified function), then rewrite:
            # power-of-two divisors (no hoisting), then the magic ones (operands read afresh)
            state = _Function(fn)
            pow2, magic, weight = [], [], {}
            for op in divisions:
                if not isinstance(op.results[0].type, ir.IndexType):
                    continue
                n, d = op.operands[0], op.operands[1]
                c = _const_int(d)
                if c is not None:
                    if c > 0 and c & (c - 1) == 0:
                        pow2.append((op, c))
                elif self.magic != "never" and state.uniform(d) and not state.uniform(n):
                    key = _key(d)
                    weight[key] = weight.get(key, 0) + (LOOP_WEIGHT if _in_loop(op, fn) else STRAIGHT_WEIGHT)
                    magic.append((op, key))
            state._uniform.clear()
            for op, c in pow2:
                self._replace(op, lambda op=op, c=c: _pow2(op.name, op.operands[0], c))
            for op, key in magic:
                if self.magic == "always" or weight[key] > MAGIC_THRESHOLD:
                    self._replace(op, lambda op=op: _magic_div(state, op, op.operands[0], op.operands[1]))

    @staticmethod
    def _replace(op, build) -> None:
        with op.location, ir.InsertionPoint(op):
            new = build()
        op.results[0].replace_all_uses_with(new)
        op.erase()


UNSIGNED = {"arith.divsi": "arith.divui", "arith.floordivsi": "arith.divui", "arith.remsi": "arith.remui"}


def to_unsigned(fn, ops: list, facts: IndexFacts | None = None) -> list:
    """``ops`` (the function's divisions) with every signed ``index`` division or remainder whose
    operands are both proven ``>= 0`` (:class:`~kernc.passes.index_facts.IndexFacts`) replaced by the
    unsigned one: the same values, without the absolute values and sign fix-ups a signed division
    costs on GPUs (``IABS``/``LOP3`` in SASS); a power-of-two divisor is then a plain shift or mask."""
    facts = facts or IndexFacts(fn)
    out = []
    for op in ops:
        n, d = op.operands
        if op.name in UNSIGNED and isinstance(n.type, ir.IndexType) and facts.nonneg(n) and facts.nonneg(d):
            with op.location, ir.InsertionPoint(op):
                new = ir.Operation.create(UNSIGNED[op.name], results=[n.type], operands=[n, d])
            op.results[0].replace_all_uses_with(new.results[0])
            op.erase()
            # no facts.forget(): a new op that reuses the erased one's address is also >= 0
            op = new.operation
        out.append(op)
    return out


def _pow2(name: str, n: ir.Value, c: int) -> ir.Value:
    arith = b.arith
    k = c.bit_length() - 1
    is_rem = name in ("arith.remsi", "arith.remui")
    if k == 0:
        return b.idx(0) if is_rem else n
    if name == "arith.divui":
        return arith.ShRUIOp(n, b.idx(k)).result
    if name == "arith.remui":
        return b.and_(n, b.idx(c - 1))
    if name == "arith.floordivsi":
        return arith.ShRSIOp(n, b.idx(k)).result
    bias = b.select(b.cmp("slt", n, b.idx(0)), b.idx(c - 1), b.idx(0))
    q = arith.ShRSIOp(b.add(n, bias), b.idx(k)).result
    if name == "arith.divsi":
        return q
    return b.sub(n, arith.ShLIOp(q, b.idx(k)).result)  # remsi


def _floor_a_2_32_over_d(a: ir.Value, d: ir.Value) -> ir.Value:
    """``floor(a * 2^32 / d)`` (i64) for ``0 <= a < d < 2^32``, without a 64-bit integer division
    (a long subroutine call on GPUs) and without ``double`` (slow on most GPUs, and its division
    has a subroutine slow path too):

    1. ``r ~ 1/d`` in ``f32`` (``afn``: the GPU may use its approximate reciprocal; any relative
       error up to ``2^-20`` is fine), ``q0 = trunc(float(a) * 2^32 * r)``, within ``2^13`` of the
       quotient;
    2. the exact remainder ``R = a * 2^32 - q0 * d`` (64-bit; ``|R| < 2^45``) corrects it:
       ``q1 = q0 + round(float(R) * r)`` is within ``0.51`` of the quotient;
    3. ``q = q1 - 1`` if ``a * 2^32 - q1 * d < 0`` else ``q1``.
    """
    arith = b.arith
    f32 = ir.F32Type.get()
    afn = ir.Attribute.parse("#arith.fastmath<afn>")
    x = arith.ShLIOp(a, _c64(32)).result
    r = arith.DivFOp(b.const(1.0, f32), arith.UIToFPOp(f32, d).result, fastmath=afn).result
    xf = arith.MulFOp(arith.UIToFPOp(f32, a).result, b.const(float(_TWO32), f32)).result
    q0 = arith.FPToUIOp(_i64(), arith.MulFOp(xf, r).result).result
    rem = b.sub(x, b.mul(q0, d))
    cf = arith.MulFOp(arith.SIToFPOp(f32, rem).result, r).result
    half = b.select(arith.CmpFOp(arith.CmpFPredicate.OLT, cf, b.const(0.0, f32)).result, b.const(-0.5, f32), b.const(0.5, f32))
    q1 = b.add(q0, arith.FPToSIOp(_i64(), arith.AddFOp(cf, half).result).result)
    return b.select(b.cmp("slt", b.sub(x, b.mul(q1, d)), _c64(0)), b.sub(q1, _c64(1)), q1)


def _magic_div(state: _Function, op, n: ir.Value, d: ir.Value) -> ir.Value:
    arith = b.arith
    i32 = ir.IntegerType.get_signless(32)
    ok_d, m, sh1, sh2 = state.magic(d)
    n64 = arith.IndexCastOp(_i64(), n).result
    ok = b.and_(ok_d, b.cmp("ult", n64, _c64(_TWO32)))               # 0 <= n < 2^32
    is_rem = op.name in ("arith.remsi", "arith.remui")

    def fast():
        # Granlund-Montgomery Fig. 4.1: t = mulhi(m, n); q = (t + ((n - t) >> sh1)) >> sh2
        n32 = arith.TruncIOp(i32, n64).result
        wide = b.mul(arith.ExtUIOp(_i64(), n32).result, arith.ExtUIOp(_i64(), m).result)
        t = arith.TruncIOp(i32, arith.ShRUIOp(wide, _c64(32)).result).result
        q32 = arith.ShRUIOp(b.add(t, arith.ShRUIOp(b.sub(n32, t), sh1).result), sh2).result
        q = arith.IndexCastUIOp(b.index_t(), q32).result
        return [b.sub(n, b.mul(q, d)) if is_rem else q]

    def exact():
        clone = ir.Operation.create(op.name, results=[op.results[0].type], operands=[n, d],
                                    attributes=_attrs(op))
        return [clone.results[0]]

    return b.if_else(ok, [b.index_t()], fast, exact)[0]
