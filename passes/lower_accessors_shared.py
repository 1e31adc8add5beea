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

    Thread ``tid`` of the block stages element ``unique[block*B + tid]``. That table entry is loaded
    by every thread, unconditionally and alongside ``target[t]`` (the table has ``ceil(P/B)*B``
    entries), and the element itself too, at index 0 past ``count`` (entries there may be anything,
    e.g. in a prebuilt table; the copy in workgroup memory is never read): the three global loads
    form a chain of two, ``target``/``unique`` then ``X``, as ``indexed``'s ``I`` then ``X``. Guarded
    by ``tid < count``, ``unique`` waited for ``target`` (LLVM sinks a load into the only block that
    uses it); on an H200 that made a 2^24-element gather 1.24x slower."""
    unique, target = acc.table(shared_table.UNIQUE), acc.table(shared_table.TARGET)
    B = kc.block
    i32 = ir.IntegerType.get_signless(32)
    base = b.mul(blk, b.idx(B))
    packed = b.if_else(in_range, [i32], lambda: [b.load(target, t)], lambda: [b.zero(i32)])[0]
    entry = b.index_cast_ui(b.load(unique, b.add(base, tid)))
    cnt = b.index_cast_ui(b.arith.ShRUIOp(packed, b.const(shared_table.HALF_BITS, i32)).result)
    r = b.index_cast_ui(b.arith.AndIOp(packed, b.const(shared_table.LOW_MASK, i32)).result)
    e = b.select(b.cmp("ult", tid, cnt), entry, b.idx(0))
    esize = b.bits(acc.compute) // 8
    pieces = chunks(acc.components, B, esize)
    plan = vector_plan(acc, kc) if len(pieces) == 1 else None
    for chunk in pieces:
        smem = kc.workgroup(acc.compute, B * len(chunk), f"{SHARED.name}({acc.layout_text})",
                            location=acc.location)
        kc.begin_staging()
        if plan is not None:  # the whole element in vector loads when aligned
            comps = vectorised(acc, e, plan, lambda: [load(acc, e, c) for c in chunk])
        else:
            comps = [load(acc, e, c) for c in chunk]
        for j, v in enumerate(comps):
            b.store(v, smem, b.add(b.idx(j * B), tid))
        b.barrier()
        with b.if_(in_range):
            for j, c in enumerate(chunk):
                b.store(b.load(smem, b.add(b.idx(j * B), r)), slot, b.idx(c))
