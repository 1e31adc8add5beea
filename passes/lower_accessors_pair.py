"""``pair``: item ``t`` reads elements ``t`` and ``t + 1`` (``read pair``, ``read pair strided(off,
s) default v``), or updates element ``j`` with ``first_j + second_(j-1)`` (``write pair``, ``add
pair``); neighbours trade values through workgroup memory (``kern-lower-accessors``)."""

from __future__ import annotations

from kernc.dialect.accessors import PAIR, WRITE
from kernc.support.mlir import ir

from . import ir_builder as b
from .index_facts import defining_op
from .lower_accessors_block import exchange
from .lower_accessors_element import default_value, element_index, load, load_default, offset, to_storage
from .workgroup import chunks


def stage(kc, acc, slot, t, tid, blk, p, in_range):
    """``(X[e(t)], X[e(t+1)])``: each thread loads its own element into workgroup memory and takes
    its neighbour's from there; the last thread of the block (and of the problem) loads the second
    element from global memory. ``pair_strided_default`` reads ``Xd(off + t*s)`` with a default."""
    B = kc.block
    K = acc.components
    strided = acc.kind.default

    def fetch(t_value, c):
        e = element_index(acc, t_value)
        return load_default(acc, e, c, default_value(acc)) if strided else load(acc, e, c)

    t1 = b.add(t, b.idx(1))
    tid1 = b.add(tid, b.idx(1))
    interior = b.and_(b.cmp("ult", tid1, b.idx(B)), b.cmp("ult", t1, p))
    esize = b.bits(acc.compute) // 8
    for chunk in chunks(K, B, esize):
        smem = kc.workgroup(acc.compute, B * len(chunk), f"{PAIR.name}({acc.layout_text})")
        kc.begin_staging()
        with b.if_(in_range):
            for j, c in enumerate(chunk):
                v = fetch(t, c)
                b.store(v, smem, b.add(b.idx(j * B), tid))
                b.store(v, slot, b.idx(c))
        b.barrier()
        with b.if_(in_range):
            for j, c in enumerate(chunk):
                second = b.if_else(
                    interior, [acc.compute],
                    lambda j=j: [b.load(smem, b.add(b.idx(j * B), tid1))],
                    lambda c=c: [fetch(t1, c)],
                )[0]
                b.store(second, slot, b.idx(K + c))


def negations(values: list) -> dict:
    """``{i: j}`` for every ``values[i]`` that is ``arith.negf(values[j])`` of another of the values
    (``out = (-d, d)``) whose own slot is kept: no ``j`` is itself a key."""
    out = {}
    for i, v in enumerate(values):
        op = defining_op(v)
        if not isinstance(op, ir.Operation) or op.name != "arith.negf":
            continue
        if i in out.values():  # the source of an earlier negation keeps its slot
            continue
        for j, w in enumerate(values):
            if j != i and j not in out and w == op.operands[0]:
                out[i] = j
                break
    return out


def update(kc, acc, vals, t, tid, blk, p):
    """``X[j] (=|+=) first_j + second_{j-1}``: neighbours' ``second`` values are exchanged through
    workgroup memory; the two elements a block shares with its neighbours (its first element and the
    one past its last thread) are updated with atomics. ``write pair`` relies on the launcher having
    zeroed the buffer (``zero_init``)."""
    B = kc.block
    K = acc.components
    first, second = vals[:K], vals[K:]
    in_range = b.cmp("ult", t, p)
    has_prev = b.cmp("ugt", tid, b.idx(0))
    prev = exchange(kc, acc, second, tid, lambda: b.sub(tid, b.idx(1)), b.and_(has_prev, in_range),
                     f"{PAIR.name}({acc.layout_text})")
    with b.if_(in_range):
        t1 = b.add(t, b.idx(1))
        edge = b.and_(b.cmp("eq", tid, b.idx(0)), b.cmp("ugt", t, b.idx(0)))
        last = b.or_(b.cmp("eq", tid, b.idx(B - 1)), b.cmp("eq", t1, p))
        for c in range(K):
            off = offset(acc, t, c)
            total = b.add(first[c], prev[c])

            def interior(off=off, total=total):
                if acc.mode == WRITE:
                    b.store(to_storage(acc, total), acc.buffer, off)
                else:
                    old = b.load(acc.buffer, off)
                    new = b.add(b.convert_float(old, acc.compute), total) if b.is_float(acc.compute) else b.add(old, total)
                    b.store(to_storage(acc, new), acc.buffer, off)
                return []

            b.if_else(edge, [], lambda off=off, total=total: (b.atomic_add(to_storage(acc, total), acc.buffer, off), [])[1], interior)
            with b.if_(last):
                b.atomic_add(to_storage(acc, second[c]), acc.buffer, offset(acc, t1, c))
