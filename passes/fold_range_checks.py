"""``kern-fold-range-checks``: one unsigned compare per bounds check where the IR allows it.

Checked views, functional-layout domains and guarded accesses test ``0 <= c && c < s`` per
coordinate, as two signed compares and an ``and``. When ``s >= 0`` is proven
(:class:`~kernc.passes.index_facts.IndexFacts`: view extents are size symbols), that pair is the
single unsigned compare ``c <u s`` (a negative ``c`` wraps to a huge unsigned value; the same
rewrite LLVM's InstCombine makes when it can see that ``s`` is non-negative, which it cannot for a
kernel argument). And ``0 <= c`` alone is ``true`` when ``c >= 0`` is proven (a thread id, a loop
variable from 0), ``c < s`` when ``0 <= c < s`` is (a loop variable below its bound ``s``). These
checks keep memory accesses in bounds, so only facts that hold for every run count
(``IndexFacts(strict=True)``): not a remainder by a size that may be 0, nor a product that may wrap.

The pair must be conjuncts of one ``arith.andi`` tree whose inner nodes and the two compares have no
other use, so that no other value changes. Runs after ``kern-lower-views``; ``canonicalize`` then
drops the ``and true``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import ir

from . import ir_builder as b
from .base import Pass, defined_functions, walk_ops
from .index_facts import IndexFacts, const_index, defining_op


def _pred(op) -> int:
    return ir.IntegerAttr(op.attributes["predicate"]).value


_SLT, _SGE = int(b.arith.CmpIPredicate.slt), int(b.arith.CmpIPredicate.sge)


def _single_use(v: ir.Value) -> bool:
    uses = list(v.uses)
    return len(uses) == 1


def _lower_check(op):
    """``c`` if ``op`` is ``c >= 0`` on ``index``, else ``None``."""
    if op.name != "arith.cmpi" or not isinstance(op.operands[0].type, ir.IndexType):
        return None
    lhs, rhs = op.operands
    if _pred(op) == _SGE and const_index(rhs) == 0:
        return lhs
    return None


def _upper_check(op):
    """``(c, s)`` if ``op`` is ``c < s`` (signed) on ``index``, else ``None``."""
    if op.name != "arith.cmpi" or not isinstance(op.operands[0].type, ir.IndexType):
        return None
    if _pred(op) == _SLT:
        return op.operands[0], op.operands[1]
    return None


def _leaves(root) -> list:
    """The compares under the ``andi`` tree at ``root`` reached through single-use ``andi`` nodes,
    each itself single-use."""
    out, stack = [], list(root.operands)
    while stack:
        v = stack.pop()
        op = defining_op(v)
        if op is None or not _single_use(v):
            continue
        if op.name == "arith.andi":
            stack.extend(op.operands)
        elif op.name == "arith.cmpi":
            out.append(op)
    return out


def _inner(op) -> bool:
    """``op`` (an ``andi``) feeds exactly one other ``andi``: part of a larger tree."""
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return False
    user = uses[0].owner
    return (user.operation if hasattr(user, "operation") else user).name == "arith.andi"


def _replace(op, value: ir.Value) -> None:
    op.results[0].replace_all_uses_with(value)
    op.erase()


@dataclass
class FoldRangeChecks(Pass):
    """``0 <= c && c < s`` -> ``c <u s`` (``s >= 0`` proven); ``0 <= c`` -> ``true`` (``c >= 0``
    proven). See the module docstring."""

    name = "kern-fold-range-checks"
    summary = "one unsigned compare per bounds check (0 <= c && c < s -> c <u s when s >= 0)"

    #: also take the ``index`` scalar params as ``>= 0`` (``kern-specialize-nonneg-scalars``)
    scalars_nonneg: bool = False

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        i1 = ir.IntegerType.get_signless(1)
        for fn in defined_functions(module, {"gpu.func", "func.func"}):
            facts = IndexFacts(fn, self.scalars_nonneg, strict=True)  # they guard memory accesses
            true_of: list = []  # compares that are always true
            pairs: list = []  # (lower, upper, c, s)
            ops = walk_ops(fn, {"arith.andi", "arith.cmpi"})
            for root in ops:
                if root.name != "arith.andi" or root.results[0].type != i1 or _inner(root):
                    continue  # an inner node: its tree is handled from its root
                lows: dict = {}
                highs: list = []
                for leaf in _leaves(root):
                    c = _lower_check(leaf)
                    if c is not None:
                        lows.setdefault(c, leaf)
                    elif _upper_check(leaf) is not None:
                        highs.append(leaf)
                for high in highs:
                    c, s = _upper_check(high)
                    low = lows.pop(c, None)
                    if low is not None and facts.nonneg(s):
                        pairs.append((low, high, c, s))
            for op in ops:
                c = _lower_check(op)
                if c is not None and facts.nonneg(c):
                    true_of.append(op)
                elif _upper_check(op) is not None and facts.less_than(*_upper_check(op)):
                    true_of.append(op)  # c < s with 0 <= c < s proven: a remainder by s, a loop variable
            paired = [op for low, high, _, _ in pairs for op in (low, high)]
            true_of = [op for op in true_of if not any(op == p for p in paired)]
            for low, high, c, s in pairs:
                with high.location, ir.InsertionPoint(high):
                    _replace(high, b.cmp("ult", c, s))
                with low.location, ir.InsertionPoint(low):
                    _replace(low, b.const(1, i1))
            for op in true_of:
                with op.location, ir.InsertionPoint(op):
                    _replace(op, b.const(1, i1))
