"""``read unique``: every item reads element 0, loaded once per block (``kern-lower-accessors``)."""

from __future__ import annotations

from kernc.dialect.accessors import UNIQUE

from . import ir_builder as b
from .lower_accessors_element import load


def stage(kc, acc, slot, t, tid, blk, p, in_range):
    """Thread 0 of the block loads ``X[0]`` once; every thread reads it from workgroup memory."""
    smem = kc.workgroup(acc.compute, acc.components, UNIQUE.name)
    kc.begin_staging()
    with b.if_(b.cmp("eq", tid, b.idx(0))):
        for c in range(acc.components):
            b.store(load(acc, b.idx(0), c), smem, b.idx(c))
    b.barrier()
    with b.if_(in_range):
        for c in range(acc.components):
            b.store(b.load(smem, b.idx(c)), slot, b.idx(c))
