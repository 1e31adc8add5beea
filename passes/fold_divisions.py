"""``kern-fold-divisions``: fold ``index`` divisions and remainders that undo a linearization.

Layouts and ``over`` turn coordinates into a linear index and back. When both directions meet in one
kernel, the divisions only recover what was multiplied in: the im2col view of ``conv2d_fwd`` divides
the GEMM row ``m = (n*OH + oh)*OW + ow`` by ``OW`` and ``OH*OW``, and the column
``kk = (r*S + s)*C + c`` (built from the loop variables) by ``C`` and ``S*C``, in the innermost loop.
This pass replaces such a division by the value it recovers, so no division is left to lower:

- ``(a*d + b) / d  ->  a`` and ``(a*d + b) % d  ->  b`` when ``0 <= b < d`` and ``a >= 0``
  (also ``a*d`` alone: ``b = 0``);
- ``b / d -> 0`` and ``b % d -> b`` when ``0 <= b < d``;
- ``x / (d1*d2)  ->  (x / d1) / d2`` when ``x >= 0`` and the inner quotient folds, and
  ``(x / d1) % d2`` is then folded the same way -- floor division by a product of positive factors
  is division by one factor after the other (e.g. D. E. Knuth, *The Art of Computer Programming*
  vol. 1, 1.2.4, eq. (11): ``floor(floor(x/m)/n) = floor(x/(m n))``).

The facts come from the IR itself, not from guesses:

- ``v >= 0``: non-negative constants, thread/block ids, ``kern.problem_size``, the kernel's size
  symbols (extents are never negative: the launcher binds them from array shapes), ``scf.for``
  induction variables with a non-negative lower bound and a positive step, and sums, products,
  quotients, remainders, minima/maxima and selects of such values;
- ``0 <= b < d``: an ``scf.for`` induction variable with lower bound ``>= 0``, positive step and
  upper bound ``d``; a remainder by ``d`` of a non-negative value, as ``arith.rem*`` or in the form
  ``x - (x/d)*d`` that delinearization produces; a constant below a constant ``d``.

``d`` is matched structurally (the same block argument, or products of the same factors in any
order). Divisors of 0 cannot occur where the facts hold (an empty loop or problem runs no such
division). Like every ``index`` rewrite in kernc, this assumes the arithmetic does not overflow
(sizes below ``2^31`` with 32-bit ``index``, checked at launch). Runs after ``kern-lower-layouts``
and before ``kern-lower-divisions``, which then sees only the divisions that are really needed.
"""

from __future__ import annotations

from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.mlir import ir

from .base import Pass, functions, walk_ops

_DIV = {"arith.divsi", "arith.divui", "arith.floordivsi"}
_REM = {"arith.remsi", "arith.remui"}
_NONNEG_SOURCES = {"kern.thread_id", "kern.problem_size", "kern.block_dim", "gpu.thread_id",
                   "gpu.block_id", "gpu.block_dim", "gpu.grid_dim"}
#: ops whose result is >= 0 when all their operands are (quotients and remainders: the divisor too)
_CLOSED = {"arith.addi", "arith.muli", "arith.divsi", "arith.divui", "arith.floordivsi",
           "arith.ceildivsi", "arith.remsi", "arith.remui", "arith.minsi", "arith.maxsi"}
_PURE = _DIV | _REM | _CLOSED | {"arith.constant", "arith.subi", "arith.select", "arith.cmpi",
                                 "arith.index_cast", "arith.andi", "arith.ori", "arith.xori"}


def _op(v: ir.Value):
    """The defining operation of ``v`` (``None`` for a block argument)."""
    if isinstance(v, ir.BlockArgument):
        return None
    op = v.owner
    return op.operation if hasattr(op, "operation") else op


def _const(v: ir.Value):
    op = _op(v)
    if op is None or op.name != "arith.constant" or not isinstance(v.type, ir.IndexType):
        return None
    return ir.IntegerAttr(op.attributes["value"]).value


class _Facts:
    """Non-negativity, bounds and structural equality of the ``index`` values of one function."""

    def __init__(self, fn):
        entry = fn.regions[0].blocks[0]
        self.size_args = set()
        if SIGNATURE_ATTR in fn.attributes:
            sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
            first = len(sig.params)
            self.size_args = {entry.arguments[i] for i in range(first, first + len(sig.sizes))
                              if i < len(entry.arguments)}
        self._nonneg: dict = {}

    # -- v >= 0 ------------------------------------------------------------------------------------
    def nonneg(self, v: ir.Value) -> bool:
        if v in self._nonneg:
            return self._nonneg[v]
        self._nonneg[v] = False  # cycles (loop-carried values) are not proven
        self._nonneg[v] = ok = self._prove_nonneg(v)
        return ok

    def _prove_nonneg(self, v: ir.Value) -> bool:
        if isinstance(v, ir.BlockArgument):
            if v in self.size_args:
                return True
            loop = self._for_of_iv(v)
            return loop is not None and self.nonneg(loop.operands[0]) and (_const(loop.operands[2]) or 0) > 0
        op = _op(v)
        if op.name == "arith.constant":
            c = _const(v)
            return c is not None and c >= 0
        if op.name in _NONNEG_SOURCES:
            return True
        if op.name in _CLOSED:
            if op.name == "arith.maxsi":
                return any(self.nonneg(x) for x in op.operands)
            return all(self.nonneg(x) for x in op.operands)
        if op.name == "arith.select":
            return self.nonneg(op.operands[1]) and self.nonneg(op.operands[2])
        return self.below(v) is not None  # x - (x/d)*d

    @staticmethod
    def _for_of_iv(v: ir.BlockArgument):
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
            loop = self._for_of_iv(v)
            if loop is not None and self.nonneg(loop.operands[0]) and (_const(loop.operands[2]) or 0) > 0:
                return loop.operands[1]
            return None
        op = _op(v)
        if op.name in _REM and self.nonneg(op.operands[0]) and self.nonneg(op.operands[1]):
            return op.operands[1]
        if op.name == "arith.subi":  # x - (x/d)*d: the remainder as delinearization writes it
            x, prod = op.operands
            pop = _op(prod)
            if pop is not None and pop.name == "arith.muli":
                for q, d in (pop.operands, reversed(list(pop.operands))):
                    qop = _op(q)
                    if (qop is not None and qop.name in _DIV and qop.operands[0] == x
                            and self.same(qop.operands[1], d) and self.nonneg(x) and self.nonneg(d)):
                        return d
        return None

    def less_than(self, b: ir.Value, d: ir.Value) -> bool:
        """``0 <= b < d`` is proven."""
        c, cd = _const(b), _const(d)
        if c is not None and cd is not None:
            return 0 <= c < cd
        bound = self.below(b)
        return bound is not None and self.same(bound, d)

    # -- structural equality -----------------------------------------------------------------------
    def factors(self, v: ir.Value) -> list:
        """``v`` as a flat list of product factors (block arguments, constants, other values)."""
        op = _op(v)
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
            c = _const(f)
            for i, g in enumerate(rest):
                if g == f or (c is not None and _const(g) == c):
                    del rest[i]
                    break
            else:
                return False
        return True

    # -- the folds ---------------------------------------------------------------------------------
    def split(self, x: ir.Value, d: ir.Value):
        """``(a, b)`` with ``x = a*d + b``, ``a >= 0``, ``0 <= b < d`` (``b`` may be ``None``: 0)."""
        op = _op(x)
        if op is None:
            return None
        if op.name == "arith.addi":
            for m, b in (op.operands, reversed(list(op.operands))):
                a = self._multiple(m, d)
                if a is not None and self.less_than(b, d):
                    return a, b
        a = self._multiple(x, d)
        return (a, None) if a is not None else None

    def _multiple(self, m: ir.Value, d: ir.Value):
        """``a >= 0`` with ``m = a*d`` (one ``arith.muli`` with ``d`` as a factor), else ``None``."""
        op = _op(m)
        if op is None or op.name != "arith.muli":
            return None
        for a, f in (op.operands, reversed(list(op.operands))):
            if self.same(f, d) and self.nonneg(a):
                return a
        return None

    def quotient(self, x: ir.Value, d: ir.Value):
        """A value equal to ``x / d`` (``x >= 0``, ``d > 0``) read off the IR, else ``None``."""
        if self.less_than(x, d):
            return _ZERO
        parts = self.split(x, d)
        if parts is not None:
            return parts[0]
        dop = _op(d)
        if dop is not None and dop.name == "arith.muli" and self.nonneg(x):
            for d1, d2 in (reversed(list(dop.operands)), dop.operands):
                if not (self.nonneg(d1) and self.nonneg(d2)):
                    continue
                q = self.quotient(x, d1)
                if q is not None and q is not _ZERO:
                    q2 = self.quotient(q, d2)
                    if q2 is not None:
                        return q2
        return None

    def remainder(self, x: ir.Value, d: ir.Value):
        """A value equal to ``x % d`` (``x >= 0``, ``d > 0``) read off the IR, else ``None``."""
        if self.less_than(x, d):
            return x
        parts = self.split(x, d)
        if parts is not None:
            return parts[1] if parts[1] is not None else _ZERO
        return None


_ZERO = object()  # the fold's result is the constant 0


class FoldDivisions(Pass):
    """Replace ``index`` divisions and remainders whose result the dividend's structure gives away
    (see the module docstring), then erase the computations left without users."""

    name = "kern-fold-divisions"
    summary = "fold divisions/remainders that undo a linearization (x = a*d + b, 0 <= b < d)"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn in functions(module, {"gpu.func", "func.func"}):
            if not fn.regions or not list(fn.regions[0].blocks):
                continue
            facts = _Facts(fn)
            folded = False
            for op in walk_ops(fn, _DIV | _REM):
                x, d = op.operands
                if not isinstance(x.type, ir.IndexType):
                    continue
                new = facts.quotient(x, d) if op.name in _DIV else facts.remainder(x, d)
                if new is None:
                    continue
                if new is _ZERO:
                    with op.location, ir.InsertionPoint(op):
                        new = ir.Operation.create(
                            "arith.constant", results=[x.type],
                            attributes={"value": ir.IntegerAttr.get(x.type, 0)}).results[0]
                op.results[0].replace_all_uses_with(new)
                folded = True
            if folded:
                _erase_dead(fn)


def _erase_dead(fn) -> None:
    """Erase pure ``arith`` ops without users (innermost first, until none is left), so that the
    divisions the folds made dead do not reach ``kern-lower-divisions``."""
    changed = True
    while changed:
        changed = False
        for op in reversed(walk_ops(fn, _PURE)):
            if all(not list(r.uses) for r in op.results):
                op.erase()
                changed = True
