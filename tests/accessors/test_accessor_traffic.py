"""Memory traffic of the accessors, from ``result.stats`` of CPU-interpreter calls.

- ``shared(I)``: exactly the loads of ``traffic_model.shared_read_loads`` (each block loads each of
  its distinct elements once, ascending, by consecutive threads; plus the tables);
- ``shared_sum(I)``: exactly one atomic per distinct (index, component) per block, and the loads of
  ``atomic(I)`` plus one per run end; ``atomic(I)``: one per thread and component; ``sum``: one per component per block; ``block_sum``: none; pair writes:
  two per component per block (minus the first block's left edge);
- ``unique``: one load per component per block; ``pair`` reads: each element once per block plus one
  block-edge element per block;
- switching ``indexed`` -> ``shared`` and ``atomic`` -> ``shared_sum`` keeps the results (bitwise /
  within rounding) and lowers the element sectors / atomics (``shared``'s tables cost 8 bytes per
  thread against ``indexed``'s 4: both are loaded by every thread, so that the element load waits
  for one table load, not two).
"""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.backend.shared_indices import shared_indices

import accessor_cases as ac
import traffic_model as tm

_SRC: dict = {}


def compiled(src):
    if src not in _SRC:
        _SRC[src] = kernc.compile(src)
    return _SRC[src]


def _traffic_cases():
    out = []
    for B, K, lay, dtype, comp in ((32, 1, None, "f32", None), (256, 3, "soa", "f32", None),
                                   (256, 3, "aos", "f16", None), (1024, 7, "aos", "f32", None),
                                   (1024, 7, "soa", "f64", None), (1024, 4, "soa", "f32", "f64"),
                                   (256, 2, "aos", "f64", None)):
        for pat in ("dup", "perm", "clustered", "max", "equal", "rsorted"):
            out.append(pytest.param(B, K, lay, dtype, comp, pat,
                                    id=f"B{B}-K{K}{lay or ''}-{dtype}{'c' + comp if comp else ''}-{pat}"))
    return out


@pytest.mark.parametrize("B,K,layout,dtype,compute,pattern", _traffic_cases())
def test_shared_read_loads_are_exact(B, K, layout, dtype, compute, pattern):
    mod = ac.module("shared", B, K, dtype, layout, compute)
    sb = ac.np_dtype(dtype).itemsize
    cb = 8 if (compute == "f64" or dtype == "f64") else 4
    for P in (1, 33, B + 1, 3 * B + 7):
        rng = np.random.default_rng(P)
        m = ac.index_capacity(pattern, P)
        I = ac.index_pattern(pattern, P, m, rng)
        X = np.zeros((m, K), ac.np_dtype(dtype))
        y = np.zeros((P, K) if K > 1 else (P,), ac.np_dtype(dtype))
        xs = ac.to_storage(X, K, layout)
        st = mod.k(x=xs, i=I, y=y).stats
        want = tm.shared_read_loads(I, B, K, m, layout, sb, cb, aligned=xs.ctypes.data % 16 == 0)
        assert (st.global_load_requests, st.global_load_sectors) == want, (P, want)
        assert st.global_atomics == 0


def _distinct_per_block(I, B):
    return sum(np.unique(I[b:b + B]).size for b in range(0, I.size, B))


@pytest.mark.parametrize("pattern", ["dup", "perm", "clustered", "equal", "max"])
@pytest.mark.parametrize("B,K,layout", [(32, 1, None), (256, 3, "soa"), (1024, 7, "aos")])
def test_shared_sum_one_atomic_per_distinct_index_and_component_per_block(B, K, layout, pattern):
    mod = ac.module("shared_sum", B, K, "f32", layout, None)
    base = ac.module("atomic", B, K, "f32", layout, None)
    for P in (1, B - 1, B + 1, 3 * B + 7):
        rng = np.random.default_rng(P)
        m = ac.index_capacity(pattern, P)
        I = ac.index_pattern(pattern, P, m, rng)
        v = ac.values(rng, (P, K), "f32", True)
        xs = np.zeros((m, K), np.float32)
        xa = np.zeros((m, K), np.float32)
        st = mod.k(v=ac.to_storage(v, K, None), x=ac.to_storage(xs, K, layout), i=I).stats
        sa = base.k(v=ac.to_storage(v, K, None), x=ac.to_storage(xa, K, layout), i=I).stats
        assert st.global_atomics == K * _distinct_per_block(I, B)
        assert st.global_atomics == K * int(shared_indices(I, B).count.sum())
        assert sa.global_atomics == K * P
        if pattern != "perm" and P > 1:
            assert st.global_atomics < sa.global_atomics
        # loads: atomic(I)'s (the values, and I[t] where shared_sum loads perm[t], which packs each
        # sorted entry's thread and key) plus one unique[] load per run end: no table is gathered
        # at a permuted address and no per-block table is read by every thread
        run_ends = tm.shared_sum_run_end_loads(I, B)
        assert (st.global_load_requests, st.global_load_sectors) == (
            sa.global_load_requests + run_ends[0], sa.global_load_sectors + run_ends[1]), P


@pytest.mark.parametrize("B,K,layout", [(32, 1, None), (256, 3, "soa"), (1024, 2, "aos")])
def test_atomic_counts_of_sums_and_pair_writes(B, K, layout):
    for acc, per_block in (("write_sum", 1), ("add_sum", 1), ("write_block_sum", 0), ("add_block_sum", 0),
                           ("write_pair", 2), ("add_pair", 2)):
        for P in (1, B, B + 1, 3 * B + 7):
            res = ac.run_case(acc, B, K, "f32", layout, None, P)
            nb = -(-P // B)
            # pair writes: each block's first element (except block 0's) and the element past its
            # last thread are shared with a neighbour block
            want = K * per_block * nb - (K if acc.endswith("pair") else 0)
            assert res.stats.global_atomics == want, (acc, P)


@pytest.mark.parametrize("B,K,layout", [(32, 1, None), (256, 3, "soa"), (1024, 7, "aos")])
def test_unique_loads_once_per_block(B, K, layout):
    for P in (1, B, B + 1, 3 * B + 7):
        res = ac.run_case("unique", B, K, "f32", layout, None, P)
        nb = -(-P // B)
        assert res.stats.global_load_requests == K * nb
        assert res.stats.global_load_sectors == K * nb


@pytest.mark.parametrize("B,K,layout", [(32, 1, None), (256, 3, "soa"), (1024, 7, "aos")])
def test_pair_reads_each_element_once_plus_block_edges(B, K, layout):
    """Each thread loads its own element; the second comes from its neighbour through shared memory,
    except for the last thread of each block (and of the problem), which loads it from global."""
    for P in (1, 31, B, B + 1, 3 * B + 7):
        res = ac.run_case("pair", B, K, "f32", layout, None, P)
        t = np.arange(P)
        own = tm._warp_requests(t, t, B)[0]            # warp requests over the threads t < P
        nb = -(-P // B)
        assert res.stats.global_load_requests == K * (own + nb)
        # own loads: per warp and component, the sectors of the warp's consecutive elements
        m = P + 3
        sec = 0
        for c in range(K):
            sec += tm._warp_requests(t, tm.element_offsets(t, c, K, m, layout) * 4, B)[1]
        assert res.stats.global_load_sectors == sec + K * nb


@pytest.mark.parametrize("B,K,layout", [
    (256, 3, "soa"), (256, 7, "aos"), (1024, 1, None), (64, 2, "soa"),
    (1024, 4, "aos"), (256, 4, "aos"),  # 16-byte elements: staged with one vector load each
])
def test_shared_beats_indexed_on_clustered_indices_with_identical_results(B, K, layout):
    """Threads of a block share a few scattered elements (``hubs``): ``indexed`` fetches their
    sectors once per warp, ``shared`` once per block. (Its tables cost more: every thread loads
    ``target[t]`` and every thread below its block's count ``unique[b*B + tid]``, where ``indexed``
    loads ``I[t]``; so the element sectors are compared, the table sectors being exactly those of
    the traffic model.)"""
    gather = ac.module("indexed", B, K, "f32", layout, None)
    staged = ac.module("shared", B, K, "f32", layout, None)
    for P in (B + 1, 3 * B + 7):
        rng = np.random.default_rng(P)
        m = ac.index_capacity("hubs", P)
        I = ac.index_pattern("hubs", P, m, rng)
        X = ac.to_storage(ac.values(rng, (m, K), "f32", False), K, layout)
        y1 = np.zeros((P, K) if K > 1 else (P,), np.float32)
        y2 = np.zeros_like(y1)
        s1 = gather.k(x=X, i=I, y=y1).stats
        s2 = staged.k(x=X, i=I, y=y2).stats
        assert y1.tobytes() == y2.tobytes()
        if not (layout == "aos" and K in (2, 4)):  # (aos 8/16-byte elements are loaded as vectors)
            assert (s1.global_load_requests, s1.global_load_sectors) == tm.indexed_read_loads(I, B, K, m, layout, 4)
        nb = -(-P // B)
        t, slots = np.arange(P), np.arange(nb * B)
        stagers = slots[slots % B < shared_indices(I, B).count.astype(np.int64)[slots // B]]
        index_sectors = tm._warp_requests(t, t * 4, B)[1]
        table_sectors = index_sectors + tm._warp_requests(stagers, stagers * 4, B)[1]  # target, unique
        assert s2.global_load_sectors - table_sectors < s1.global_load_sectors - index_sectors


@pytest.mark.parametrize("B", [64, 256])
def test_switching_indexed_to_shared_and_atomic_to_shared_sum(B):
    """One kernel in four versions: swapping ``indexed`` for ``shared`` keeps every result bit and
    lowers the sectors; swapping ``atomic`` for ``shared_sum`` keeps the sums (within rounding) and
    lowers the atomics to one per distinct target and component per block."""
    src = ("@block(BLOCK)\nkernel edge(pos: f32[V, 3] read GATHER(src) as soa, src: u32[E] read, dst: u32[E] read,\n"
           "             w: f32[E] read, force: f32[V, 3] add SCATTER(dst), y: f32[E, 3] write) over E {\n"
           "    let p = pos;\n    y = p;\n    force += w * p;\n}\n").replace("BLOCK", str(B))
    rng = np.random.default_rng(B)
    E = 5 * B + 3
    V = ac.index_capacity("hubs", E)
    pos = rng.normal(size=(3, V)).astype(np.float32)
    src_i = ac.index_pattern("hubs", E, V, rng)                 # neighbours share a few nodes
    dst_i = rng.integers(0, 9, E).astype(np.uint32)             # few targets: many duplicates
    w = rng.uniform(0.25, 1, E).astype(np.float32)
    terms = w[:, None].astype(np.float64) * pos.T[src_i]
    want = np.zeros((V, 3))
    scale = np.zeros((V, 3))
    np.add.at(want, dst_i, terms)
    np.add.at(scale, dst_i, np.abs(terms))
    runs = {}
    for g in ("indexed", "shared"):
        for sc in ("atomic", "shared_sum"):
            mod = compiled(src.replace("GATHER", g).replace("SCATTER", sc))
            f = np.zeros((V, 3), np.float32)
            y = np.zeros((E, 3), np.float32)
            st = mod.edge(pos, src_i, dst_i, w, f, y).stats
            assert y.tobytes() == pos.T[src_i].tobytes()
            ac.check_sum(f, want, scale, "f32", f"{g}/{sc}")
            runs[g, sc] = (st, f)
    base = runs["indexed", "atomic"][0]
    gather = runs["shared", "atomic"][0]
    scatter = runs["indexed", "shared_sum"][0]
    assert gather.global_load_sectors < base.global_load_sectors
    assert gather.global_atomics == base.global_atomics == 3 * E
    assert runs["shared", "atomic"][1].tobytes() == runs["indexed", "atomic"][1].tobytes()
    assert scatter.global_atomics == 3 * int(shared_indices(dst_i, B).count.sum())
    assert scatter.global_atomics < base.global_atomics
    assert runs["shared", "shared_sum"][1].tobytes() == runs["indexed", "shared_sum"][1].tobytes()


def test_shared_sum_equals_atomic_bitwise_on_exact_data():
    """With values whose partial sums are all exact, the two scatter-adds agree to the bit."""
    for B in (32, 256, 1024):
        for P in (B + 1, 3 * B + 7):
            rng = np.random.default_rng(P)
            I = ac.index_pattern("dup", P, 10, rng)
            v = (rng.integers(-64, 65, (P, 3)) / 16).astype(np.float32)
            xs = np.zeros((10, 3), np.float32)
            xa = np.zeros((10, 3), np.float32)
            ac.module("shared_sum", B, 3, "f32", "aos", None).k(v=v, x=xs, i=I)
            ac.module("atomic", B, 3, "f32", "aos", None).k(v=v, x=xa, i=I)
            assert xs.tobytes() == xa.tobytes()


@pytest.mark.parametrize("K", [1, 3, 9])  # 4-, 12- and 36-byte elements
def test_no_staging_loads_past_the_blocks_distinct_count(K):
    """Regression (issue 23): threads past their block's distinct count loaded ``unique[b*B + tid]``
    and element 0, so with one distinct index per block ``shared(I)`` made more load requests than
    ``indexed(I)`` (160 against 128 at 4 bytes) and a sorted gather of 12-byte elements more
    sectors (2007 against 1448). Now only a block's first ``ceil(count/32)`` warps stage: on both
    inputs ``shared`` loads at most ``indexed``'s sectors and requests, with the same bits."""
    B = 256
    gather = ac.module("indexed", B, K, "f32", None, None)
    staged = ac.module("shared", B, K, "f32", None, None)
    rng = np.random.default_rng(K)
    for P in (4 * B, 4 * B + 77):
        m = max(P // 8, 1)
        for I in ((np.arange(P) // B * 7).astype(np.uint32),                     # one distinct per block
                  np.sort(rng.integers(0, m, P)).astype(np.uint32)):             # sorted, 8 uses each
            X = ac.to_storage(ac.values(rng, (int(I.max()) + 1, K), "f32", False), K, None)
            y1 = np.zeros((P, K) if K > 1 else (P,), np.float32)
            y2 = np.zeros_like(y1)
            s1 = gather.k(x=X, i=I, y=y1).stats
            s2 = staged.k(x=X, i=I, y=y2).stats
            assert y1.tobytes() == y2.tobytes()
            assert s2.global_load_sectors <= s1.global_load_sectors, (P, K)
            assert s2.global_load_requests <= s1.global_load_requests, (P, K)
