"""``read shared(I)``: each block stages the distinct elements its items read, once each, through
workgroup memory (``kern-lower-accessors``; the tables: ``dialect/shared_table.py``)."""

from __future__ import annotations

from kernc.dialect import shared_table
from kernc.dialect.accessors import SHARED
from kernc.support.mlir import ir

from . import ir_builder as b
from .lower_accessors_element import load
from .lower_accessors_per_thread import vector_plan, vectorised
from .workgroup import chunks


def stage(kc, acc, slot, t, tid, blk, p, in_range):
    """Each block loads each distinct element it needs once (ascending, coalesced) into workgroup
    memory; thread ``t`` then reads its copy at its rank. One coalesced load of the ``shared_indices``
    table, ``target[t] = rank | count << 16``, gives both the rank and the block's number of
    distinct elements (``count``); a thread past the problem reads 0 (it reads nothing).

    Thread ``tid`` of the block stages element ``unique[block*B + tid]`` only when ``tid < count``:
    a thread past the block's distinct count loads neither the table entry nor an element (a warp
    with no stager issues no request; with one distinct index per block only its first warp loads,
    where ``indexed`` loads in every warp). The global loads form a chain of three, ``target``, then
    ``unique``, then ``X`` (``indexed``: ``I`` then ``X``); loading ``unique`` and element 0 in every
    thread shortened it to two but cost loads and requests past the count (on an H200 that chain
    made a 2^24-element gather 1.24x slower; where staging saves no sectors the launcher runs the
    ``indexed`` build instead, ``launch_policy.shared_pays``). A thread's slot of workgroup memory
    past the count holds zero and is never read (ranks are below the count).
"""
    unique, target = acc.table(shared_table.UNIQUE), acc.table(shared_table.TARGET)
    B = kc.block
    i32 = ir.IntegerType.get_signless(32)
    base = b.mul(blk, b.idx(B))
    packed = b.if_else(in_range, [i32], lambda: [b.load(target, t)], lambda: [b.zero(i32)])[0]
    cnt = b.index_cast_ui(b.arith.ShRUIOp(packed, b.const(shared_table.HALF_BITS, i32)).result)
    r = b.index_cast_ui(b.arith.AndIOp(packed, b.const(shared_table.LOW_MASK, i32)).result)
    stager = b.cmp("ult", tid, cnt)  # (count <= the block's threads in range: stagers are in range)
    e = b.if_else(stager, [b.index_t()], lambda: [b.index_cast_ui(b.load(unique, b.add(base, tid)))],
                  lambda: [b.idx(0)])[0]
    esize = b.bits(acc.compute) // 8
    pieces = chunks(acc.components, B, esize)
    plan = vector_plan(acc, kc) if len(pieces) == 1 else None
    for chunk in pieces:
        smem = kc.workgroup(acc.compute, B * len(chunk), f"{SHARED.name}({acc.layout_text})",
                            location=acc.location)
        kc.begin_staging()

        def staged_loads(chunk=chunk):
            if plan is not None:  # the whole element in vector loads when aligned
                return vectorised(acc, e, plan, lambda: [load(acc, e, c) for c in chunk])
            return [load(acc, e, c) for c in chunk]

        comps = b.if_else(stager, [acc.compute] * len(chunk), staged_loads,
                          lambda chunk=chunk: [b.zero(acc.compute)] * len(chunk))
        for j, v in enumerate(comps):
            b.store(v, smem, b.add(b.idx(j * B), tid))
        b.barrier()
        with b.if_(in_range):
            for j, c in enumerate(chunk):
                b.store(b.load(smem, b.add(b.idx(j * B), r)), slot, b.idx(c))
