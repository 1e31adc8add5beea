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

The facts (``a >= 0``, ``0 <= b < d``, equal divisors) come from the IR itself, not from guesses
(:mod:`kernc.passes.index_facts`). Divisors of 0 cannot occur where the facts hold (an empty loop
or problem runs no such division). Like every ``index`` rewrite in kernc, this assumes the arithmetic does not overflow
(sizes below ``2^31`` with 32-bit ``index``, checked at launch). Runs after ``kern-lower-layouts``
and before ``kern-lower-divisions``, which then sees only the divisions that are really needed.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import ir

from .base import Pass, defined_functions, walk_ops
from .index_facts import DIV, REM, IndexFacts, defining_op, erase_dead


class _Folder(IndexFacts):
    """The folds, on top of the facts of one function."""

    def split(self, x: ir.Value, d: ir.Value):
        """``(a, b)`` with ``x = a*d + b``, ``a >= 0``, ``0 <= b < d`` (``b`` may be ``None``: 0)."""
        op = defining_op(x)
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
        op = defining_op(m)
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
        dop = defining_op(d)
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


@dataclass
class FoldDivisions(Pass):
    """Replace ``index`` divisions and remainders whose result the dividend's structure gives away
    (see the module docstring), then erase the computations left without users."""

    name = "kern-fold-divisions"
    summary = "fold divisions/remainders that undo a linearization (x = a*d + b, 0 <= b < d)"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn in defined_functions(module, {"gpu.func", "func.func"}):
            facts = _Folder(fn)
            folded = []
            for op in walk_ops(fn, DIV | REM):
                x, d = op.operands
                if not isinstance(x.type, ir.IndexType):
                    continue
                new = facts.quotient(x, d) if op.name in DIV else facts.remainder(x, d)
                if new is None:
                    continue
                if new is _ZERO:
                    with op.location, ir.InsertionPoint(op):
                        new = ir.Operation.create(
                            "arith.constant", results=[x.type],
                            attributes={"value": ir.IntegerAttr.get(x.type, 0)}).results[0]
                op.results[0].replace_all_uses_with(new)
                folded.append(op)
            erase_dead(folded)


