"""``kern-lower-accessors``: accessor ops -> ``memref``/``gpu``/``scf`` code inside each ``gpu.func``.

Runs after ``kern-to-gpu``: every accessor op sits in the body of a ``gpu.func`` under the guard
``scf.if t < P`` (``kern.guard``). Semantics: ``docs/design/accessors.md``; IR contract:
``docs/accessor-lowering.md``.

*Per-thread* accessors (``sequential``, ``strided``, ``strided_default``, ``indexed`` reads and
writes, ``atomic`` adds) are lowered in place: the element index ``e`` thread ``t`` reaches, then per
component a ``kern.layout_apply`` offset and a load, store, read-modify-write or atomic.

*Block-wide* accessors need every thread of the block, including those past ``P``:

- reads (``shared``, ``unique``, ``pair``, ``pair_strided_default``) stage through workgroup memory
  *before* the guard, leave the thread's values in a private slot (``memref.alloca``), and the op is
  replaced by loads of that slot inside the guard (a ``pair`` read's last step, which only reads the
  staged values after the last barrier and branches, opens the guard's body: :func:`_merge_into_guard`);
- updates (``shared_sum``, ``block_sum``, ``sum``, ``pair`` writes) store the thread's contribution in
  a private slot inside the guard and reduce *after* the guard (a ``pair`` value ``-w`` of another
  value ``w`` is negated after the guard instead: :func:`_block_update`).

Every sum starts from, and every value a thread past ``P`` or a missing neighbour contributes is,
the identity of addition (``ir_builder.add_identity``: ``-0.0`` for floats, not ``+0.0``), so an
``add`` output that no thread changes keeps its bits, a ``-0.0`` included, as the per-thread
accessors keep them (the frontend's pending update of an ``add`` output starts as ``-0.0`` too).

So every ``gpu.barrier`` and ``gpu.shuffle`` sits outside divergent control flow. Workgroup memory is
one buffer per element type, sized to the largest accessor's need and reused by all accessors of the
kernel (a barrier separates uses; ``passes/workgroup.py``).

This module holds the pass and its dispatch on the accessor kind: each kind's record
(``dialect/accessors.py``) names the module that lowers it (``AccessorKind.lowering``):

- ``lower_accessors_per_thread.py``: ``sequential``, ``strided``, ``strided_default``,
  ``indexed``, ``atomic`` (and their vector loads and stores);
- ``lower_accessors_shared.py``: ``shared(I)``; ``lower_accessors_shared_sum.py``:
  ``shared_sum(I)``;
- ``lower_accessors_unique.py``: ``unique``;
- ``lower_accessors_pair.py``: ``pair`` reads and updates, ``pair strided(off, s) default v``;
- ``lower_accessors_sum.py``: ``sum`` and ``block_sum``;
- ``lower_accessors_element.py``: an element's index, offsets, loads and stores (every kind);
  ``lower_accessors_block.py``: exchanges, warp and block sums, the last-block election.
"""

from __future__ import annotations

import dataclasses
import importlib

from dataclasses import dataclass

from kernc.dialect import accessors
from kernc.dialect.access import ACCESSOR_OPS, Access
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.support.errors import CompileError, Diagnostic, InternalCompilerError
from kernc.support.mlir import ir

from . import ir_builder as b
from .base import Pass, functions, walk_ops
from .to_gpu import GUARD_ATTR
from .workgroup import KernelContext, source_location

#: The lowering modules by name. A kind's record names its module (``AccessorKind.lowering``,
#: ``dialect/accessors.py``), which lowers its ops with
#:
#: - ``lower(acc, kc)`` (per-thread kinds): in place, returning the read's values;
#: - ``stage(kc, acc, slot, t, tid, blk, p, in_range)`` (block-wide reads): stages what the items
#:   read before the guard and leaves each thread's values in its private slot;
#: - ``update(kc, acc, values, t, tid, blk, p)`` (block-wide updates): reduces or exchanges the
#:   threads' values after the guard.
#:
#: Each is imported when a kernel first holds an op of one of its kinds (a first run compiles the
#: source of the modules it imports: a saxpy needs the per-thread one only).
LOWERINGS = ("lower_accessors_per_thread", "lower_accessors_shared", "lower_accessors_shared_sum",
             "lower_accessors_unique", "lower_accessors_pair", "lower_accessors_sum")


def lowering(kind: accessors.AccessorKind):
    """The module that lowers the ops of accessor ``kind`` (:data:`LOWERINGS`, imported on first
    use); ``KeyError`` for a kind without accessor ops (``view``)."""
    if kind.lowering not in LOWERINGS:
        raise KeyError(kind.lowering)
    return importlib.import_module(f"{__package__}.{kind.lowering}")


_ACCESSORS_AND_IFS = set(ACCESSOR_OPS) | {"scf.if"}


@dataclass
class LowerAccessors(Pass):
    """Rewrite every accessor op into ``memref``/``gpu``/``scf`` code."""

    name = "kern-lower-accessors"
    summary = "lower kern.read/write/add to memory, workgroup staging, shuffles and atomics"

    #: stage ``shared(I)`` reads and ``shared_sum(I)`` updates through workgroup memory (``False``:
    #: lower them as ``indexed(I)`` and ``atomic(I)``, the build the launcher runs where staging
    #: cannot pay, ``launch_policy.shared_pays``; a ``@deterministic`` ``shared_sum`` stays staged,
    #: since ``atomic`` is not deterministic). The kernel's signature and tables stay as they are.
    stage_shared: bool = True

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn in functions(module, {"gpu.func", "func.func"}):
            ops = walk_ops(fn, _ACCESSORS_AND_IFS)  # one walk finds the guard and the accessors
            accesses = [op for op in ops if op.name != "scf.if"]
            guards = [op for op in ops if op.name == "scf.if" and GUARD_ATTR in op.attributes]
            if fn.name == "gpu.func" and SIGNATURE_ATTR in fn.attributes and len(guards) == 1:
                _check_inside_guard(accesses, guards[0])
                sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
                kc = KernelContext(fn, sig, guards[0], int(sig.block))
                for op in accesses:
                    acc = Access.from_op(op)
                    lower_access(kc, acc if self.stage_shared else plain_form(kc, acc))
                _merge_into_guard(kc)
                kc.check_limit()
            else:  # not an outlined kernel (kernc opt on kern IR): per-thread lowering in place
                for op in accesses:
                    lower_access(None, Access.from_op(op))


def plain_form(kc: KernelContext, acc: Access) -> Access:
    """``acc`` as the per-thread accessor of the same semantics when it is a ``shared(I)`` read
    (``indexed(I)``: bitwise the same values) or a non-``@deterministic`` ``shared_sum(I)``
    update (``atomic(I)``: the same sum, in another order), taking ``I`` itself (the kernel's
    argument) in place of its tables; any other access unchanged."""
    plain = {accessors.SHARED.name: accessors.INDEXED, accessors.SHARED_SUM.name: accessors.ATOMIC}
    kind = plain.get(acc.kind.name)
    if kind is None or (kind is accessors.ATOMIC and kc.deterministic):
        return acc
    index = kc.arg(kc.sig.param(kc.param_of(acc.buffer)).index_param)
    return dataclasses.replace(acc, kind=kind, args=[index])


def _check_inside_guard(accesses: list, guard) -> None:
    """``CompileError`` at the first accessor op of an outlined kernel that is not inside its guard
    ``scf.if t < P {kern.guard}``: the lowering relies on it (per-thread accesses stay in range;
    block-wide staging goes just before the guard). Only hand-edited IR (``kernc opt``) breaks
    this; ``kern-to-gpu`` puts the whole body in the guard."""
    for op in accesses:
        if not _inside(op, guard.operation):
            raise CompileError(Diagnostic(
                f"'{op.name}' must be inside the kernel body, the scf.if {{kern.guard}} that kern-to-gpu "
                f"builds", source_location(op.location)))


def _merge_into_guard(kc: KernelContext) -> None:
    """Make the last in-range step of a block-wide read's staging (the ``scf.if t < P`` after its
    last barrier) the start of the guard's body when that step branches itself (``pair``: the
    neighbour from workgroup memory or, at the block's edge, from global memory). Two regions on
    ``t < P`` in a row become one: the staged value reaches the body without crossing a join, and
    ptxas needs one reconvergence region where it had one per region (``laplacian_1d``: 69 -> 65
    SASS instructions). A step without branches of its own (``shared``, ``unique``) stays where it
    is: ptxas predicates it for free, and merged, it hoists the body's address arithmetic above the
    barrier (``edge_update``: 23 -> 25 registers).

    Exact: only the private slots of block-wide updates (``memref.alloca`` and zero stores into
    them, :func:`block_update`) may sit between the two regions, and they touch neither the
    step's memory nor its values. The workgroup memory the step reads is not written again before
    the next barrier: block-wide updates begin their staging with one
    (:meth:`KernelContext.begin_staging`)."""
    guard = kc.guard.operation
    body = guard.regions[0].blocks[0]
    between = []
    before = _ops_before(guard)
    prev = before.pop() if before else None
    while prev is not None and prev.name in ("arith.constant", "memref.alloca", "memref.store"):
        between.append(prev)
        prev = before.pop() if before else None
    if (prev is None or prev.name != "scf.if" or len(prev.results) or len(prev.regions[1].blocks)
            or not any(prev.operands[0] == c for c in kc.in_range) or not _branches(prev)
            or not all(_stores_constant_into(op, between) for op in between if op.name == "memref.store")):
        return
    first = body.operations[0]
    for op in list(prev.regions[0].blocks[0].operations)[:-1]:  # all but the scf.yield
        op.move_before(first)
    prev.erase()


def _branches(region_op) -> bool:
    """Whether the body of ``region_op`` holds an op with regions of its own (an ``scf.if``)."""
    return any(len(op.operation.regions) for op in region_op.regions[0].blocks[0].operations)


def _stores_constant_into(store, ops: list) -> bool:
    """Whether ``store`` (a ``memref.store``) stores an ``arith.constant`` into a ``memref.alloca``
    among ``ops``."""
    value, slot = _owner(store.operands[0]), _owner(store.operands[1])
    return (isinstance(value, ir.Operation) and value.name == "arith.constant"
            and isinstance(slot, ir.Operation) and slot.name == "memref.alloca"
            and any(slot == o for o in ops))


def _owner(value: ir.Value):
    """The operation that defines ``value`` (a block argument's block for arguments)."""
    owner = value.owner
    return owner.operation if hasattr(owner, "operation") else owner


def _ops_before(op) -> list:
    """The operations before ``op`` in its block, in order (one pass over the block)."""
    before = []
    for other in op.block.operations:
        other = other.operation
        if other == op:
            return before
        before.append(other)
    raise ValueError("the operation is not in its own block")  # pragma: no cover - MLIR invariant


def lower_access(kc: KernelContext | None, acc: Access) -> None:
    """Lower one accessor op: in place when per-thread, around the guard when block-wide (``kc``)."""
    op = acc.op
    block_wide = acc.kind.block_wide
    if block_wide and kc is None:
        raise CompileError(Diagnostic(
            f"accessor '{acc.kind.name}' can only be lowered inside a gpu.func (run kern-to-gpu first)"))
    with acc.location:
        if not block_wide:
            with ir.InsertionPoint(op):
                results = lowering(acc.kind).lower(acc, kc)
        elif acc.is_read:
            results = _block_read(kc, acc)
        else:
            _block_update(kc, acc)
            results = []
    for old, new in zip(op.results, results):
        old.replace_all_uses_with(new)
    op.erase()


def _inside(op, ancestor) -> bool:
    parent = op.parent
    while parent is not None:
        if parent == ancestor:
            return True
        parent = parent.parent
    return False


def _hoist_before_guard(kc: KernelContext, values) -> None:
    """Move the (side-effect free, ``arith``/``kern`` builtin) ops that compute ``values`` from inside
    the guard to just before it, so block-wide staging before the guard can use them (e.g. the
    ``off``/``s`` of ``pair strided(off, s)``, computed from scalar params at the kernel entry)."""
    guard = kc.guard.operation
    for v in values:
        owner = v.owner
        op = owner.operation if hasattr(owner, "operation") else owner
        if not isinstance(op, ir.Operation) or not _inside(op, guard):
            continue
        if not (op.name.startswith("arith.") or op.name in ("kern.thread_id", "kern.block_id",
                                                              "kern.block_dim", "kern.problem_size")):
            raise InternalCompilerError(
                f"an accessor operand ({op.name}) cannot be computed before the kernel body")
        _hoist_before_guard(kc, list(op.operands))
        op.move_before(guard)


def _block_read(kc: KernelContext, acc: Access) -> list:
    nres = len(acc.values)
    _hoist_before_guard(kc, acc.args)
    from .lower_accessors_block import tid_values

    with ir.InsertionPoint(kc.guard):
        slot = b.alloca(acc.compute, nres)
        t, tid, blk, p = tid_values()
        in_range = b.cmp("ult", t, p)
        kc.in_range.append(in_range)
        lowering(acc.kind).stage(kc, acc, slot, t, tid, blk, p, in_range)
    with ir.InsertionPoint(acc.op):
        return [b.load(slot, b.idx(i)) for i in range(nres)]


def _block_update(kc: KernelContext, acc: Access) -> None:
    """The thread's values cross the guard in a private slot initialised to the identity of
    addition (``-0.0`` for floats); after the guard the accessor's block-wide part runs on the
    slot's contents (the identity for threads past ``P``).

    ``pair`` uses a thread's values only where that thread is in range (its own ``first`` and
    ``second`` under ``t < P``, its ``second`` as the neighbour of thread ``t + 1 < P``), so a value
    that is ``-w`` of another value ``w`` of the op does not cross the guard: it is negated after
    the guard (``+0`` instead of the identity ``-0`` past ``P``, where nothing reads it). LLVM then sees
    ``fadd(fneg w, x)``, which it folds to ``fsub(x, w)`` -- exact: IEEE 754 defines ``x - w`` as
    ``x + (-w)``, signed zeros included, and nvcc folds the same CUDA expression alike -- instead of
    adding a value that is ``-w`` on one path and ``0`` on the other (a ``phi`` it cannot fold: one
    more ``FADD`` and one more initialised register). The CPU interpreter runs the same
    ``negf`` and ``addf`` on the same values: bitwise the same results."""
    from . import lower_accessors_pair as pair
    from . import lower_accessors_sum as sums
    from .lower_accessors_block import tid_values

    n = len(acc.values)
    derived = pair.negations(acc.values) if acc.kind is accessors.PAIR else {}
    kept = [i for i in range(n) if i not in derived]
    with ir.InsertionPoint(kc.guard):
        slot = b.alloca(acc.compute, len(kept))
        for k in range(len(kept)):  # (max/min: the identity of their reduction)
            init = b.add_identity(acc.compute) if acc.kind.reduce == "add" else sums.identity(kc, acc)
            b.store(init, slot, b.idx(k))
    with ir.InsertionPoint(acc.op):
        for k, i in enumerate(kept):
            b.store(acc.values[i], slot, b.idx(k))
    # after the guard, in lowering order (before the gpu.return that ends the function body)
    with ir.InsertionPoint.at_block_terminator(kc.guard.operation.block):
        t, tid, blk, p = tid_values()
        loaded = {i: b.load(slot, b.idx(k)) for k, i in enumerate(kept)}
        vals = [loaded[i] if i in loaded else b.arith.NegFOp(loaded[derived[i]]).result
                for i in range(n)]
        lowering(acc.kind).update(kc, acc, vals, t, tid, blk, p)
