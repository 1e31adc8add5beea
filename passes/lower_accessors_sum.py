"""``sum`` and ``block_sum``: the items' values summed over each block in a fixed order, then added
to element 0 with one atomic per block (``sum``; ``@deterministic``: per-block partials combined in
block order by the last block) or stored/added to element ``block`` (``block_sum``)
(``kern-lower-accessors``). ``max``/``min`` and ``block_max``/``block_min`` the same with the
reduction of their record (:attr:`~kernc.dialect.accessors.AccessorKind.reduce`): integer
``arith.maxsi``/``maxui``/``minsi``/``minui`` by the element type's signedness, float
``arith.maximumf``/``minimumf`` (IEEE 754-2019 ``maximum``/``minimum``: NaN wins, ``-0.0 < +0.0``),
then one ``memref.atomic_rmw`` of that kind per block into the launcher's identity fill (``max``,
``min``) or a store to element ``block``. Being one total order, the result does not depend on the
order of the blocks: ``@deterministic`` needs nothing more."""

from __future__ import annotations

from kernc.dialect.accessors import SUM, WRITE, Reach
from kernc.support.mlir import dialect, ir

from . import ir_builder as b
from . import llvm_ops
from .lower_accessors_block import block_totals, last_block
from .lower_accessors_element import add_to, offset, to_storage
from .to_gpu import PARTIALS, scratch_name


def update(kc, acc, vals, t, tid, blk, p):
    """Block reduction (:func:`block_totals`). ``sum``: one atomic per component per block into
    ``O[0]`` (``@deterministic``: per-block partials combined in block order by the last block);
    ``block_sum``: thread 0 writes/adds ``O[block]``. Thread 0 issues them inside warp 0's region."""
    if acc.kind is SUM and kc.deterministic:
        _deterministic_sum(kc, acc, vals, tid, blk)
        return
    if acc.kind.reduce != "add":
        _extremum(kc, acc, vals, tid, blk)
        return

    def finish(totals):
        target = b.idx(0) if acc.kind is SUM else blk
        for c in range(acc.components):
            if acc.kind is SUM:
                b.atomic_add(to_storage(acc, totals[c]), acc.buffer, offset(acc, target, c))
            elif acc.mode == WRITE:
                b.store(to_storage(acc, totals[c]), acc.buffer, offset(acc, target, c))
            else:
                add_to(acc, target, c, totals[c])

    block_totals(kc, acc, vals, tid, finish)


def _deterministic_sum(kc, acc, vals, tid, blk):
    """``@deterministic`` sum: each block stores its totals (:func:`block_totals`) in
    ``O.partials[block]``; the last block to finish sums the partials in a fixed order (thread i
    takes blocks i, i+B, ..., then the fixed block reduction) and adds the result to ``O`` -- bitwise
    reproducible from run to run."""
    gpu = dialect("gpu")
    name = kc.param_of(acc.buffer)
    partials = kc.arg(scratch_name(name, PARTIALS))
    K = acc.components

    def store_partials(totals):
        for c in range(K):
            b.store(totals[c], partials, b.add(b.mul(blk, b.idx(K)), b.idx(c)))

    block_totals(kc, acc, vals, tid, store_partials)
    is_last = last_block(kc, name, tid, blk)
    with b.if_(is_last):
        llvm_ops.fence_acq_rel("device")
        nblocks = gpu.GridDimOp(gpu.Dimension.x).result
        loop = b.scf.ForOp(tid, nblocks, b.idx(kc.block), [b.add_identity(acc.compute)] * K)
        with ir.InsertionPoint(loop.body):
            q = loop.induction_variable
            b.scf.YieldOp([b.add(loop.inner_iter_args[c], b.load(partials, b.add(b.mul(q, b.idx(K)), b.idx(c))))
                           for c in range(K)])

        def add_final(final):
            for c in range(K):
                add_to(acc, b.idx(0), c, final[c])

        block_totals(kc, acc, list(loop.results), tid, add_final)


def _unsigned(kc, acc) -> bool:
    return kc.sig.param(kc.param_of(acc.buffer)).dtype.startswith("u")


def identity(kc, acc) -> ir.Value:
    """The identity of ``acc``'s max/min reduction in its compute type: ``-inf``/``+inf``, or the
    element type's lowest/highest integer."""
    t = acc.compute
    if b.is_float(t):
        return b.const(float("-inf") if acc.kind.reduce == "max" else float("inf"), t)
    w = b.bits(t)
    if _unsigned(kc, acc):
        lo, hi = 0, -1  # (0 and all ones: IntegerAttr takes the signed value)
    else:
        lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    return b.const(lo if acc.kind.reduce == "max" else hi, t)


def _combine(kc, acc):
    """``(combine, atomic kind)`` of ``acc``'s max/min reduction."""
    arith = b.arith
    mx = acc.kind.reduce == "max"
    if b.is_float(acc.compute):
        op, kind = (arith.MaximumFOp, "maximumf") if mx else (arith.MinimumFOp, "minimumf")
    elif _unsigned(kc, acc):
        op, kind = (arith.MaxUIOp, "maxu") if mx else (arith.MinUIOp, "minu")
    else:
        op, kind = (arith.MaxSIOp, "maxs") if mx else (arith.MinSIOp, "mins")
    return (lambda x, y: op(x, y).result), kind


def _extremum(kc, acc, vals, tid, blk):
    """``max``/``min``: the block's extremum (:func:`block_totals` with the reduction), one atomic
    of its kind per component per block into ``O[0]``; ``block_max``/``block_min``: thread 0
    stores ``O[block]``."""
    combine, kind = _combine(kc, acc)

    def finish(totals):
        for c in range(acc.components):
            v = to_storage(acc, totals[c])  # (rounding is monotonic: the extremum of the rounded values)
            if acc.kind.reach is Reach.BLOCK:
                b.store(v, acc.buffer, offset(acc, blk, c))
            else:
                b.atomic_rmw(kind, v, acc.buffer, offset(acc, b.idx(0), c))

    block_totals(kc, acc, vals, tid, finish, combine, lambda: identity(kc, acc))
