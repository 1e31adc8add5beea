"""Facts about ``index`` values that kernc's division passes prove from the IR itself.

- ``v >= 0``: non-negative constants, thread/block ids, ``kern.problem_size``, the kernel's size
  symbols (extents are never negative: the launcher binds them from array shapes), ``scf.for``
  induction variables with a non-negative lower bound and a positive step, and sums, products,
  quotients, remainders, minima/maxima and selects of such values;
- ``0 <= b < d``: an ``scf.for`` induction variable with lower bound ``>= 0``, positive step and
  upper bound ``d``; a remainder by ``d`` of a non-negative value, as ``arith.rem*`` or in the form
  ``x - (x/d)*d`` that delinearization produces; a constant below a constant ``d``;
- ``a`` and ``b`` compute the same product: the same values or constants as factors, in any order.

Used by ``kern-fold-divisions`` and ``kern-reduce-iv-divisions``.
"""

from __future__ import annotations

import functools

from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.support.mlir import ir


DIV = {"arith.divsi", "arith.divui", "arith.floordivsi"}
REM = {"arith.remsi", "arith.remui"}
_NONNEG_SOURCES = {"kern.thread_id", "kern.problem_size", "kern.block_dim", "gpu.thread_id",
                   "gpu.block_id", "gpu.block_dim", "gpu.grid_dim"}
#: ops whose result is >= 0 when all their operands are (quotients and remainders: the divisor too)
_CLOSED = {"arith.addi", "arith.muli", "arith.divsi", "arith.divui", "arith.floordivsi",
           "arith.ceildivsi", "arith.remsi", "arith.remui", "arith.minsi", "arith.maxsi"}
PURE = DIV | REM | _CLOSED | {"arith.constant", "arith.subi", "arith.select", "arith.cmpi",
                                 "arith.index_cast", "arith.andi", "arith.ori", "arith.xori"}


def defining_op(v: ir.Value):
    """The defining operation of ``v`` (``None`` for a block argument)."""
    if isinstance(v, ir.BlockArgument):
        return None
    op = v.owner
    return op.operation if hasattr(op, "operation") else op


def const_index(v: ir.Value):
    """The value of an ``index`` ``arith.constant`` result, else ``None``."""
    op = defining_op(v)
    if op is None or op.name != "arith.constant" or not isinstance(v.type, ir.IndexType):
        return None
    return ir.IntegerAttr(op.attributes["value"]).value


@functools.lru_cache(maxsize=256)
def _nonneg_arg_indices(signature_json: str, scalars: bool) -> tuple[int, ...]:
    """Positions of the kernel arguments that are never negative: the size symbols (they follow the
    params, ``KernelSignature.arg_names``) and, with ``scalars``, the ``index`` scalar params."""
    sig = KernelSignature.from_json(signature_json)
    first = len(sig.params)
    out = list(range(first, first + len(sig.sizes)))
    if scalars:
        out += [i for i, p in enumerate(sig.params) if p.kind == "scalar" and p.dtype == "index"]
    return tuple(out)


class IndexFacts:
    """Non-negativity, bounds and structural equality of the ``index`` values of one function.

    ``scalars_nonneg``: also take the kernel's ``index`` scalar params as ``>= 0`` (only for code
    that is launched when they are: ``kern-specialize-nonneg-scalars``).

    ``strict``: only facts that hold for every run, for removing *safety* checks (a checked view's
    bounds): a quotient or remainder by a divisor that may be 0 is unspecified, and a sum or product
    of coordinates may wrap, so neither counts there; sums and products of sizes and constants (the
    extents) do, and a loop variable is below its bound. Without ``strict`` those facts hold
    wherever the values are specified, which is what rewriting a division needs."""

    def __init__(self, fn, scalars_nonneg: bool = False, strict: bool = False):
        self.strict = strict
        entry = fn.regions[0].blocks[0]
        self.size_args = set()
        if SIGNATURE_ATTR in fn.attributes:
            args = list(entry.arguments)
            self.size_args = {args[i] for i in _nonneg_arg_indices(
                ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value, scalars_nonneg) if i < len(args)}
        self._nonneg: dict = {}

    def forget(self) -> None:
        """Drop what was proven (call after erasing ops: a new value may reuse an old address)."""
        self._nonneg.clear()

    # -- v >= 0 ------------------------------------------------------------------------------------
    def nonneg(self, v: ir.Value) -> bool:
        """``v >= 0`` is proven (memoised; a value on a cycle, e.g. loop-carried, is not)."""
        if v in self._nonneg:
            return self._nonneg[v]
        self._nonneg[v] = False  # cycles (loop-carried values) are not proven
        self._nonneg[v] = ok = self._prove_nonneg(v)
        return ok

    def _prove_nonneg(self, v: ir.Value) -> bool:
        if isinstance(v, ir.BlockArgument):
            if v in self.size_args:
                return True
            loop = self.for_of_iv(v)
            return loop is not None and self.nonneg(loop.operands[0]) and (const_index(loop.operands[2]) or 0) > 0
        op = defining_op(v)
        if op.name == "arith.constant":
            c = const_index(v)
            return c is not None and c >= 0
        if op.name in _NONNEG_SOURCES:
            return True
        if self.strict:
            if op.name in ("arith.addi", "arith.muli"):
                return self._extent(v)
            if op.name in ("arith.minsi", "arith.maxsi", "arith.select"):
                args = op.operands[1:] if op.name == "arith.select" else op.operands
                return all(self.nonneg(x) for x in args)
            return False
        if op.name in _CLOSED:
            if op.name == "arith.maxsi":
                return any(self.nonneg(x) for x in op.operands)
            return all(self.nonneg(x) for x in op.operands)
        if op.name == "arith.select":
            return self.nonneg(op.operands[1]) and self.nonneg(op.operands[2])
        return self.below(v) is not None  # x - (x/d)*d

    def _extent(self, v: ir.Value) -> bool:
        """``v`` is a sum/product of size symbols and non-negative constants only."""
        if isinstance(v, ir.BlockArgument):
            return v in self.size_args
        op = defining_op(v)
        if op.name == "arith.constant":
            return (const_index(v) or 0) >= 0 and const_index(v) is not None
        return op.name in ("arith.addi", "arith.muli") and all(self._extent(x) for x in op.operands)

    @staticmethod
    def for_of_iv(v: ir.BlockArgument):
        """The ``scf.for`` whose induction variable ``v`` is, else ``None``."""
        parent = v.owner.owner
        parent = parent.operation if hasattr(parent, "operation") else parent
        if parent is not None and parent.name == "scf.for" and v.arg_number == 0:
            return parent
        return None

    # -- 0 <= v < d --------------------------------------------------------------------------------
    def below(self, v: ir.Value):
        """A value ``d`` with ``0 <= v < d`` proven from the IR, else ``None``."""
        if isinstance(v, ir.BlockArgument):
            loop = self.for_of_iv(v)
            if loop is not None and self.nonneg(loop.operands[0]) and (const_index(loop.operands[2]) or 0) > 0:
                return loop.operands[1]
            return None
        op = defining_op(v)
        if self.strict:
            return None  # a remainder by a divisor that may be 0 is unspecified
        if op.name in REM and self.nonneg(op.operands[0]) and self.nonneg(op.operands[1]):
            return op.operands[1]
        if op.name == "arith.subi":  # x - (x/d)*d: the remainder as delinearization writes it
            x, prod = op.operands
            pop = defining_op(prod)
            if pop is not None and pop.name == "arith.muli":
                for q, d in (pop.operands, reversed(list(pop.operands))):
                    qop = defining_op(q)
                    if (qop is not None and qop.name in DIV and qop.operands[0] == x
                            and self.same(qop.operands[1], d) and self.nonneg(x) and self.nonneg(d)):
                        return d
        return None

    def less_than(self, b: ir.Value, d: ir.Value) -> bool:
        """``0 <= b < d`` is proven."""
        c, cd = const_index(b), const_index(d)
        if c is not None and cd is not None:
            return 0 <= c < cd
        bound = self.below(b)
        return bound is not None and self.same(bound, d)

    # -- structural equality -----------------------------------------------------------------------
    def factors(self, v: ir.Value) -> list:
        """``v`` as a flat list of product factors (block arguments, constants, other values)."""
        op = defining_op(v)
        if op is not None and op.name == "arith.muli":
            return self.factors(op.operands[0]) + self.factors(op.operands[1])
        return [v]

    def same(self, a: ir.Value, b: ir.Value) -> bool:
        """``a`` and ``b`` compute the same product (the same factors in any order; constants by
        value)."""
        if a == b:
            return True
        fa, fb = self.factors(a), self.factors(b)
        if len(fa) != len(fb):
            return False
        rest = list(fb)
        for f in fa:
            c = const_index(f)
            for i, g in enumerate(rest):
                if g == f or (c is not None and const_index(g) == c):
                    del rest[i]
                    break
            else:
                return False
        return True


def erase_dead(ops) -> None:
    """Erase ``ops`` (pure ops whose results lost their users) and then every pure ``arith`` op that
    loses its last user that way, so that the divisions the folds made dead do not reach
    ``kern-lower-divisions``. Works from the given ops outwards: no walk over the function."""
    work, pending = [], set()  # an op is in the work list at most once (so never popped once erased)

    def push(op) -> None:
        if hash(op) not in pending:
            pending.add(hash(op))
            work.append(op)

    for op in ops:
        push(op)
    while work:
        op = work.pop()
        pending.discard(hash(op))
        if any(list(r.uses) for r in op.results):
            continue
        producers = [defining_op(v) for v in op.operands]
        op.erase()
        for p in producers:
            if p is not None and p.name in PURE:
                push(p)
