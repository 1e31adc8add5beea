"""Building blocks of the block-wide accessor lowerings: the thread ids, values traded through
workgroup memory, warp and block sums, and the last-block election of ``@deterministic``
reductions. Each of them has barriers or shuffles: every thread of the block must call it, outside
divergent control flow.
"""

from __future__ import annotations

from kernc.dialect import kern
from kernc.support.mlir import dialect, ir

from . import ir_builder as b
from . import llvm_ops
from .to_gpu import COUNTER, scratch_name
from .workgroup import WARP, chunks


def tid_values():
    gpu = dialect("gpu")
    t = kern.builtin("thread_id")
    tid = gpu.ThreadIdOp(gpu.Dimension.x).result
    blk = kern.builtin("block_id")
    p = kern.builtin("problem_size")
    return t, tid, blk, p


def warp_sum(v: ir.Value, combine=b.add) -> ir.Value:
    """Butterfly (xor) reduction over the 32 lanes of a warp: every lane gets the warp's sum (or
    the reduction ``combine``, e.g. a max)."""
    for off in (16, 8, 4, 2, 1):
        other, _ = b.shuffle("xor", v, off)
        v = combine(v, other)
    return v


def block_totals(kc, acc, vals, tid, finish, combine=b.add, identity=None) -> None:
    """Sum ``vals`` over the threads of the block in a fixed order: warp butterflies, one partial per
    warp in workgroup memory, then warp 0 reduces the partials and, still inside warp 0's region,
    its lane 0 (thread 0) calls ``finish(totals)`` to store or add them. No value crosses the join
    of warp 0's region, so ptxas sees the final butterfly as convergent (a yielded total used by
    ``tid == 0`` after the join made it emit a divergent copy of the butterfly). Every thread must
    call it (it has a barrier). ``combine``/``identity``: another reduction than the sum (``max``,
    ``min``: :mod:`.lower_accessors_sum`), in the same fixed order."""
    B = kc.block
    nw = B // WARP
    K = len(vals)
    lane = b.arith.RemUIOp(tid, b.idx(WARP)).result
    warp = b.arith.DivUIOp(tid, b.idx(WARP)).result
    sums = [warp_sum(v, combine) for v in vals]
    smem = kc.workgroup(acc.compute, nw * K, f"{acc.kind.name} partials")
    kc.begin_staging()
    with b.if_(b.cmp("eq", lane, b.idx(0))):
        for c in range(K):
            b.store(sums[c], smem, b.add(b.idx(c * nw), warp))
    b.barrier()
    # warp 0 as ``tid < 32`` rather than ``warp == 0``: the warp id then need not live to the end of
    # the kernel (edge_update: 23 registers instead of 25)
    with b.if_(b.cmp("ult", tid, b.idx(WARP))):
        totals = []
        for c in range(K):
            part = b.if_else(
                b.cmp("ult", lane, b.idx(nw)), [acc.compute],
                lambda c=c: [b.load(smem, b.add(b.idx(c * nw), lane))],
                lambda: [identity() if identity else b.add_identity(acc.compute)],
            )[0]
            totals.append(warp_sum(part, combine))
        with b.if_(b.cmp("eq", lane, b.idx(0))):
            finish(totals)


def last_block(kc, name: str, tid, blk) -> ir.Value:
    """After each block stored its partials: thread 0 fences (device scope), counts the block in
    ``NAME.counter`` and tells its block whether it was the last one to finish (the CUDA
    "threadFenceReduction" pattern). Every thread must call it; returns a block-uniform i1."""
    gpu = dialect("gpu")
    i32 = ir.IntegerType.get_signless(32)
    counter = kc.arg(scratch_name(name, COUNTER))
    flag = kc.workgroup(i32, 1, "deterministic flag", region="flag")
    nblocks = gpu.GridDimOp(gpu.Dimension.x).result
    with b.if_(b.cmp("eq", tid, b.idx(0))):
        llvm_ops.fence_acq_rel("device")
        old = b.memref.AtomicRMWOp(b.arith.AtomicRMWKind.addi, b.const(1, i32), counter, [b.idx(0)]).result
        last = b.cmp("eq", b.index_cast_ui(old), b.sub(nblocks, b.idx(1)))
        b.store(b.arith.ExtUIOp(i32, last).result, flag, b.idx(0))
    b.barrier()
    is_last = b.cmp("ne", b.load(flag, b.idx(0)), b.const(0, i32))
    return is_last


def exchange(kc, acc, values, tid, source, valid, label: str) -> list:
    """Threads trade values through workgroup memory: each stores its ``values`` (one per component,
    in ``acc.compute``), then, after a barrier, reads those of thread ``source()`` (an ``index``
    built where it is read) where ``valid`` holds, else the identity of addition (``-0.0``: a
    missing neighbour adds nothing, bitwise). Staged in chunks of components that
    fit the staging budget; every thread must call it (barriers)."""
    B = kc.block
    out = [None] * len(values)
    for chunk in chunks(len(values), B, b.bits(acc.compute) // 8):
        smem = kc.workgroup(acc.compute, B * len(chunk), label)
        kc.begin_staging()
        for j, c in enumerate(chunk):
            b.store(values[c], smem, b.add(b.idx(j * B), tid))
        b.barrier()
        for j, c in enumerate(chunk):
            out[c] = b.if_else(valid, [acc.compute], lambda j=j: [b.load(smem, b.add(b.idx(j * B), source()))],
                               lambda: [b.add_identity(acc.compute)])[0]
    return out
