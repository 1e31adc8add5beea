"""``add shared_sum(I)``: the block's values are sorted by index (the ``perm`` table of
``shared_indices(I)``, ``dialect/shared_table.py``), runs of equal index summed with a segmented
scan, and each run adds its total with one atomic (``@deterministic``: per-block run totals merged
in block order by the last block) (``kern-lower-accessors``)."""

from __future__ import annotations

from kernc.dialect import shared_table
from kernc.dialect.accessors import SHARED_SUM
from kernc.support.mlir import ir

from . import ir_builder as b
from . import llvm_ops
from .lower_accessors_block import exchange, last_block
from .lower_accessors_element import add_to, offset, to_storage
from .to_gpu import PARTIALS, scratch_name
from .workgroup import WARP


def update(kc, acc, vals, t, tid, blk, p):
    """``X[u] += sum of y_t over I[t] = u``: the block's values are permuted into sorted index order
    (the ``perm`` table), runs of equal index are reduced with a segmented inclusive scan (warp
    ``shuffle up`` steps, then the run's parts in earlier warps from workgroup memory, in order),
    and the last entry of each run issues one atomic add per component, at ascending addresses.

    Sorted position ``j`` learns its source thread and its run key (the rank of its index value)
    from one coalesced load, ``perm[block*B + j] = thread | rank << 16``; positions past the
    block's threads get the key ``B``, above every rank, so no run continues into them."""
    unique, perm = acc.table(shared_table.UNIQUE), acc.table(shared_table.PERM)
    B = kc.block
    nw = B // WARP
    K = acc.components
    i32 = ir.IntegerType.get_signless(32)
    base = b.mul(blk, b.idx(B))
    nvalid = b.minui(b.idx(B), b.sub(p, base))
    valid = b.cmp("ult", tid, nvalid)
    lane = b.arith.RemUIOp(tid, b.idx(WARP)).result
    warp = b.arith.DivUIOp(tid, b.idx(WARP)).result
    # 1. permute values into sorted order: sorted position j = tid takes the value of the thread
    # in the low half of perm[j] (its run key is the high half). perm is loaded before the exchange's
    # barrier and the run's element, unique[block*B + key], right after it (every position of the
    # block's threads loads it, not only the run ends: LLVM would sink a load used only by the run
    # ends into their branch; positions past the block's threads load nothing), so
    # neither load waits behind the barrier or the scan: on an H200 a 2^24-element scatter-add
    # took 112.5 us with perm loaded after the barrier and unique at the run ends, 84.1 us so.
    def from_perm():
        entry = b.load(perm, b.add(base, tid))
        src = b.index_cast_ui(b.arith.AndIOp(entry, b.const(shared_table.LOW_MASK, i32)).result)
        return [src, b.arith.ShRUIOp(entry, b.const(shared_table.HALF_BITS, i32)).result]

    src, key = b.if_else(valid, [b.index_t(), i32], from_perm, lambda: [b.idx(0), b.const(B, i32)])
    w = exchange(kc, acc, vals[:K], tid, lambda: src, valid, f"{SHARED_SUM.name}({acc.layout_text})")
    if not kc.deterministic:
        # (positions past the block's threads, key B, hold no run: they load no table entry)
        element = b.if_else(valid, [b.index_t()],
                            lambda: [b.index_cast_ui(b.load(unique, b.add(base, b.index_cast_ui(key))))],
                            lambda: [b.idx(0)])[0]
    # 2. keys of all sorted positions, for run ends and run starts in earlier warps
    keys = kc.workgroup(i32, B, f"{SHARED_SUM.name} keys", region="keys")
    b.store(key, keys, tid)
    # 3. segmented inclusive scan within each warp (keys are sorted, so runs are contiguous)
    d = 1
    while d < WARP:
        kup, ok = b.shuffle("up", key, d)
        same = b.and_(ok, b.cmp("eq", kup, key))
        for c in range(K):
            wup, _ = b.shuffle("up", w[c], d)
            w[c] = b.select(same, b.add(w[c], wup), w[c])
        d *= 2
    b.barrier()  # every read of the staged values and every key store is done
    # 4. the last lane of each warp publishes its (partial run) sums
    parts = kc.workgroup(acc.compute, nw * K, f"{SHARED_SUM.name} partials")
    with b.if_(b.cmp("eq", lane, b.idx(WARP - 1))):
        for c in range(K):
            b.store(w[c], parts, b.add(b.idx(c * nw), warp))
    b.barrier()
    # 5. run ends add the run's parts from earlier warps (in order) and issue the atomics
    nxt = b.if_else(b.cmp("ult", b.add(tid, b.idx(1)), nvalid), [i32],
                    lambda: [b.load(keys, b.add(tid, b.idx(1)))], lambda: [b.const(-1, i32)])[0]
    is_end = b.and_(valid, b.cmp("ne", nxt, key))
    with b.if_(is_end):
        totals = _add_earlier_parts(w, key, keys, parts, warp, nw, acc.compute)
        if kc.deterministic:
            partials = kc.arg(scratch_name(kc.param_of(acc.buffer), PARTIALS))
            slot = b.mul(b.add(base, b.index_cast_ui(key)), b.idx(K))
            for c in range(K):
                b.store(totals[c], partials, b.add(slot, b.idx(c)))
        else:
            for c in range(K):
                b.atomic_add(to_storage(acc, totals[c]), acc.buffer, offset(acc, element, c))
    if kc.deterministic:
        _deterministic_shared_sum(kc, acc, tid, blk)


def _add_earlier_parts(w, key, keys, parts, warp, nw, compute) -> list:
    """A run end's totals: its warp's scan values ``w`` plus the partial sums ``parts`` of the
    earlier warps its run reaches into, added nearest warp first. An ``scf.while`` over
    ``k = 1, 2, ...`` that continues while ``k <= warp`` and warp ``warp - k`` ends with ``key``
    (its last key ``keys[(warp-k)*32 + 31]``), so it stops at the first earlier warp of another
    run (a flag-carrying ``scf.for`` up to ``warp`` was unrolled by ptxas at a large cost)."""
    scf = b.scf
    K = len(w)
    i1 = ir.IntegerType.get_signless(1)
    types = [b.index_t()] + [compute] * K
    loop = scf.WhileOp(types, [b.idx(1)] + list(w))
    before = loop.before.blocks.append(*types)
    with ir.InsertionPoint(before):
        k = before.arguments[0]

        def same_key():
            prev = b.sub(warp, k)
            last_key = b.load(keys, b.add(b.mul(prev, b.idx(WARP)), b.idx(WARP - 1)))
            return [b.cmp("eq", last_key, key)]

        more = b.if_else(b.cmp("ule", k, warp), [i1], same_key, lambda: [b.const(0, i1)])[0]
        scf.ConditionOp(more, list(before.arguments))
    after = loop.after.blocks.append(*types)
    with ir.InsertionPoint(after):
        k = after.arguments[0]
        prev = b.sub(warp, k)
        new = [b.add(after.arguments[1 + c], b.load(parts, b.add(b.idx(c * nw), prev))) for c in range(K)]
        scf.YieldOp([b.add(k, b.idx(1))] + new)
    return list(loop.results)[1:]


def _deterministic_shared_sum(kc, acc, tid, blk):
    """``@deterministic`` shared_sum: blocks store their per-index run totals in ``X.partials`` (at
    ``block*B + rank``); the last block to finish adds, for each distinct index ``u`` of the whole
    problem, the partials of the blocks that hold ``u`` in block order (the ``gunique``/``gstart``/
    ``gpos``/``gcount`` merge tables of ``shared_indices``), one plain update per ``u``."""

    name = kc.param_of(acc.buffer)
    index = kc.sig.param(name).index_param
    partials = kc.arg(scratch_name(name, PARTIALS))
    gunique, gstart, gpos, gcount = (kc.arg(shared_table.table_name(index, f))
                                     for f in acc.kind.deterministic_tables)
    K = acc.components
    is_last = last_block(kc, name, tid, blk)
    with b.if_(is_last):
        llvm_ops.fence_acq_rel("device")
        G = b.index_cast_ui(b.load(gcount, b.idx(0)))
        outer = b.scf.ForOp(tid, G, b.idx(kc.block))
        with ir.InsertionPoint(outer.body):
            g = outer.induction_variable
            lo = b.index_cast_ui(b.load(gstart, g))
            hi = b.index_cast_ui(b.load(gstart, b.add(g, b.idx(1))))
            inner = b.scf.ForOp(lo, hi, b.idx(1), [b.add_identity(acc.compute)] * K)
            with ir.InsertionPoint(inner.body):
                pos = b.index_cast_ui(b.load(gpos, inner.induction_variable))
                base = b.mul(pos, b.idx(K))
                b.scf.YieldOp([b.add(inner.inner_iter_args[c], b.load(partials, b.add(base, b.idx(c))))
                               for c in range(K)])
            u = b.index_cast_ui(b.load(gunique, g))
            for c in range(K):
                add_to(acc, u, c, inner.results[c])
            b.scf.YieldOp([])
