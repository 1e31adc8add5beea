"""``kern-reduce-iv-divisions``: quotients and remainders of a loop counter become counters too.

In ``for m in 0..M { ... im2col(...)(m, kk) ... }`` (the weight gradient of a convolution) the
layout splits the loop variable ``m`` into ``(n, oh, ow)`` with ``m / OW``, ``(m / OW) % OH`` and
``m / (OH*OW)`` on every iteration. As ``m`` steps by one, ``m % OW`` steps by one and wraps to 0 at
``|OW|``, and ``m / OW`` changes by ``sign(OW)`` exactly when it wraps: the classic strength
reduction of a division of an induction variable by a loop-invariant divisor (S. S. Muchnick,
*Advanced Compiler Design and Implementation*, 14.2; the counter form hand-written CUDA uses for
the same loop). This pass carries those values through the loop (``scf.for`` ``iter_args``)
instead of dividing:

- ``//`` counts as ``/`` where both operands are proven ``>= 0``;
- one *node* per ``(dividend, divisor)`` with the dividend the induction variable ``i`` of an
  ``scf.for`` with step 1 and lower bound ``>= 0``, or the quotient of another node, and the divisor
  defined outside the loop; a division by a product ``a*b`` of such values is the chain ``(x/b)/a``
  (``trunc(trunc(x/b)/a) = trunc(x/(a*b))`` for ``x >= 0`` and non-zero ``a``, ``b``);
- a node carries its quotient ``q`` (signed: ``C`` truncation) and the magnitude ``r`` of its
  remainder; when its dividend's magnitude steps (``i`` always; a child's when its parent wraps),
  ``r`` steps and wraps at ``|d|``, and on a wrap ``q`` steps by ``sign`` (the product of the signs of
  the divisors down to this node). The ``%`` value is ``r`` times the sign of the dividend;
- the initial values divide the lower bound once, before the loop (nothing for the usual 0), by
  the divisor or, when it is 0 (no division of the source runs then), by 1.

Exact for every non-zero divisor (a zero divisor is undefined behaviour in ``arith`` already) and
every trip count; the divisions the rewrite replaces are erased. Runs after ``kern-fold-divisions``
and before ``kern-lower-divisions``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import dialect, ir

from . import ir_builder as b
from .base import Pass, defined_functions, walk_ops
from .index_facts import IndexFacts, const_index, defining_op, erase_dead

_DIVREM = {"arith.divsi", "arith.remsi", "arith.floordivsi"}
#: At most this many nodes per loop (two loop-carried values each).
MAX_NODES = 4


class _Node:
    """One ``(dividend, divisor)`` pair of a loop: its divisions, remainders and counters."""

    def __init__(self, parent, divisor: ir.Value):
        self.parent = parent  # None: the induction variable
        self.divisor = divisor
        self.children: list = []
        self.divs: list = []  # arith.divsi (or floordivsi of operands >= 0): this node's quotient
        self.rems: list = []  # arith.remsi ops whose result is this node's remainder
        self.q = self.r = None  # the loop-carried values in the new loop's body


def _inside(v: ir.Value, loop) -> bool:
    """``v`` is defined inside ``loop`` (its body or deeper)."""
    owner = v.owner.owner if isinstance(v, ir.BlockArgument) else defining_op(v)
    owner = owner.operation if hasattr(owner, "operation") else owner
    while owner is not None:
        if owner == loop:
            return True
        parent = owner.parent
        owner = parent.operation if hasattr(parent, "operation") else parent
    return False


class _Loop:
    """The nodes of one ``scf.for``, found before any rewrite."""

    def __init__(self, loop, facts: IndexFacts):
        self.loop = loop
        self.facts = facts
        self.iv = loop.regions[0].blocks[0].arguments[0]
        self.roots: list = []
        self.by_result: dict = {}  # quotient value -> node
        for op in walk_ops(loop, _DIVREM):
            self._add(op)

    def _invariant(self, d: ir.Value) -> bool:
        return isinstance(d.type, ir.IndexType) and not _inside(d, self.loop)

    def _parent_of(self, x: ir.Value):
        """``(True, node)`` when ``x`` is the induction variable (``node`` None) or a node's
        quotient, else ``(False, None)``."""
        if x == self.iv:
            return True, None
        node = self.by_result.get(x)
        return node is not None, node

    def _child(self, parent, d: ir.Value):
        """The node dividing ``parent``'s quotient (the induction variable for ``None``) by ``d``,
        made on first use; ``None`` when ``d`` is not loop-invariant or the loop has enough nodes."""
        if not self._invariant(d):
            return None
        siblings = self.roots if parent is None else parent.children
        for node in siblings:
            if self.facts.same(node.divisor, d):
                return node
        if self.count() >= MAX_NODES:
            return None
        node = _Node(parent, d)
        siblings.append(node)
        return node

    def count(self) -> int:
        """How many nodes the loop has (each costs two loop-carried values)."""
        return sum(1 for _ in _walk(self.roots))

    def _add(self, op) -> None:
        x, d = op.operands
        if op.name == "arith.floordivsi" and not (self.facts.nonneg(x) and self.facts.nonneg(d)):
            return  # `//` is the truncating quotient only for operands >= 0
        is_div = op.name != "arith.remsi"
        ok, parent = self._parent_of(x)
        if not ok:
            return
        node = self._child(parent, d)
        if node is None and is_div:
            # x / (a*b) -> (x / b) / a, preferring a factor x is already divided by
            dop = defining_op(d)
            if dop is not None and dop.name == "arith.muli":
                a, c = dop.operands
                if self._invariant(a) and self._invariant(c):
                    existing = self.roots if parent is None else parent.children
                    first, second = (a, c) if any(self.facts.same(n.divisor, a) for n in existing) else (c, a)
                    inner = self._child(parent, first)
                    node = self._child(inner, second) if inner is not None else None
        if node is None:
            return
        (node.divs if is_div else node.rems).append(op)
        if is_div:
            self.by_result[op.results[0]] = node


def _abs(v: ir.Value) -> ir.Value:
    return b.select(b.cmp("slt", v, b.idx(0)), b.sub(b.idx(0), v), v)


def _walk(nodes):
    for node in nodes:
        yield node
        yield from _walk(node.children)


@dataclass
class ReduceIVDivisions(Pass):
    """Division and remainder of an ``scf.for`` induction variable (and of those quotients) by
    loop-invariant values become loop-carried counters (see the module docstring)."""

    name = "kern-reduce-iv-divisions"
    summary = "loop-carried quotient/remainder counters for divisions of a loop variable"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn in defined_functions(module, {"gpu.func", "func.func"}):
            facts = IndexFacts(fn)
            replaced: list = []
            for loop in walk_ops(fn, {"scf.for"}):
                lb, _ub, step = list(loop.operands)[:3]
                if const_index(step) != 1 or not isinstance(lb.type, ir.IndexType) or not facts.nonneg(lb):
                    continue
                found = _Loop(loop, facts)
                if any(n.divs or n.rems for n in _walk(found.roots)):
                    replaced += _rewrite(found)
                    facts.forget()  # erased values' addresses may be reused by new ones
            erase_dead(replaced)


def _rewrite(found: _Loop) -> list:
    """Rebuild ``found.loop`` with the counters; returns the divisions it replaced (now unused)."""
    scf = dialect("scf")
    old = found.loop
    lb, ub, step = list(old.operands)[:3]
    old_inits = list(old.operands)[3:]
    nodes = list(_walk(found.roots))  # parents before their children
    with ir.InsertionPoint(old), old.location:
        # before the loop: |d|, each node's sign (the product of the divisors' signs down to it),
        # and the counters at i = lb
        absd, signs = {}, {}
        for node in nodes:
            neg = b.cmp("slt", node.divisor, b.idx(0))
            absd[node] = b.select(neg, b.sub(b.idx(0), node.divisor), node.divisor)
            sign = b.select(neg, b.idx(-1), b.idx(1))
            signs[node] = sign if node.parent is None else b.mul(signs[node.parent], sign)
        start: dict = {}
        for node in nodes:
            dividend = lb if node.parent is None else start[node.parent][0]
            if const_index(lb) == 0:
                start[node] = (b.idx(0), b.idx(0))
            else:
                # Divided here even when the loop runs no iteration or its division is guarded
                # (`if d != 0`): a divisor of 0 must not reach LLVM's sdiv (undefined behaviour, from
                # which LLVM would conclude d != 0 and drop the guard), so it is replaced by 1 --
                # with d = 0 no division of the source runs, or its result is unspecified anyway.
                d = b.select(b.cmp("eq", node.divisor, b.idx(0)), b.idx(1), node.divisor)
                q = dialect("arith").DivSIOp(dividend, d).result
                start[node] = (q, _abs(dialect("arith").RemSIOp(dividend, d).result))
        inits = [v for node in nodes for v in start[node]]
        new = scf.ForOp(lb, ub, step, old_inits + inits)
    old_body = old.regions[0].blocks[0]
    body = new.regions[0].blocks[0]
    args = list(body.arguments)
    old_args = list(old_body.arguments)
    carried = args[len(old_args):]
    for i, node in enumerate(nodes):
        node.q, node.r = carried[2 * i], carried[2 * i + 1]
    # move the body over, then let it read the new block arguments
    ip = ir.InsertionPoint(body)
    for op in list(old_body.operations):
        op.detach_from_parent()
        ip.insert(op)
    for o, n in zip(old_args, args):
        o.replace_all_uses_with(n)
    # the divisions and remainders read the counters
    with ir.InsertionPoint.at_block_begin(body), old.location:
        for node in nodes:
            for op in node.divs:
                op.results[0].replace_all_uses_with(node.q)
            if node.rems:
                r = node.r if node.parent is None else b.mul(node.r, signs[node.parent])
                for op in node.rems:
                    op.results[0].replace_all_uses_with(r)
    # the next values, before the yield
    yield_op = list(body.operations)[-1]
    with ir.InsertionPoint(yield_op), old.location:
        step_of: dict = {}
        nxt = []
        for node in nodes:
            stepped = b.add(node.r, b.idx(1))
            wraps = b.cmp("eq", stepped, absd[node])
            if node.parent is not None:
                wraps = b.and_(step_of[node.parent], wraps)
                stepped = b.select(step_of[node.parent], stepped, node.r)
            step_of[node] = wraps
            nxt += [b.select(wraps, b.add(node.q, signs[node]), node.q), b.select(wraps, b.idx(0), stepped)]
        scf.YieldOp(list(yield_op.operands) + nxt)
    yield_op.erase()
    for o, n in zip(old.results, new.results):
        o.replace_all_uses_with(n)
    old.erase()
    return [op for node in nodes for op in node.divs + node.rems]
