"""``shared_indices`` tables and the launcher's side of the accessors (CPU).

- ``kernc.backend.shared_indices.shared_indices(I, B)``: the documented encoding for every block
  size, problem size and index pattern, including values at and near ``2**32 - 1`` (no value is
  reserved as a sentinel), ``int32`` input, and clean errors for bad input;
- a precomputed table passed in place of ``I`` is used as given; a table for another block size is
  rejected; entries past ``P`` are never read;
- element-count requirements: ``pair`` (``M >= P + 1``), ``unique`` (``M >= 1``), ``block_sum``
  (``ceil(P/B)`` elements), index values inside the target buffer -- each a ``KerncLaunchError``
  naming the parameter.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import kernc
from kernc.backend.shared_indices import SharedIndices, shared_indices
from kernc.support.errors import KerncLaunchError

import accessor_cases as ac

U32_MAX = 0xFFFFFFFF
_SRC: dict = {}


def compiled(src, choose_shared=True):
    """``src`` compiled once per session; ``choose_shared=False``: ``shared(I)`` always staged."""
    if (src, choose_shared) not in _SRC:
        _SRC[src, choose_shared] = kernc.compile(src, choose_shared=choose_shared)
    return _SRC[src, choose_shared]


# ---- the table encoding -----------------------------------------------------------------------


def check_table(tab: SharedIndices, I: np.ndarray, B: int) -> None:
    """Every documented property of a ``shared_indices`` table (docs/accessor-lowering.md)."""
    P = I.size
    nb = -(-P // B)
    assert tab.block_size == B and tab.indices is I and tab.problem_size == P
    for name, n in (("unique", nb * B), ("target", nb * B), ("perm", nb * B), ("count", nb)):
        arr = tab.field(name)
        assert arr.dtype == np.uint32 and arr.shape == (n,), name
    I64 = I.astype(np.int64)
    for b in range(nb):
        vals = I64[b * B: min(P, (b + 1) * B)]
        n = vals.size
        distinct = np.unique(vals)
        cnt = int(tab.count[b])
        assert cnt == distinct.size
        assert np.array_equal(tab.unique[b * B: b * B + cnt].astype(np.int64), distinct)  # ascending
        packed_target = tab.target[b * B: b * B + n].astype(np.int64)
        target = packed_target & 0xFFFF                                                     # rank | count << 16
        assert (packed_target >> 16 == cnt).all()
        assert (target < cnt).all()
        assert np.array_equal(tab.unique[b * B + target].astype(np.int64), vals)             # round trip
        packed = tab.perm[b * B: b * B + n].astype(np.int64)
        perm, rank = packed & 0xFFFF, packed >> 16                                         # thread | rank << 16
        assert np.array_equal(np.sort(perm), np.arange(n))                                  # a permutation
        assert np.array_equal(perm, np.argsort(vals, kind="stable"))                          # stable argsort
        assert np.array_equal(rank, target[perm])                                           # its thread's rank
        assert (np.diff(rank) >= 0).all()                                                   # ascending keys


def _table_inputs():
    out = []
    for B in (32, 256, 1024):
        for P in (0, 1, B - 1, B, B + 1, 3 * B + 7):
            for pat in ("dup", "perm", "sorted", "rsorted", "equal", "near_max", "all_max"):
                out.append(pytest.param(B, P, pat, id=f"B{B}-P{P}-{pat}"))
    return out


def _indices(pattern, P, rng):
    if pattern == "near_max":
        return rng.choice(np.array([U32_MAX, U32_MAX - 1, U32_MAX - 255, 0, 7], np.uint32), P).astype(np.uint32)
    if pattern == "all_max":
        return np.full(P, U32_MAX, np.uint32)
    return ac.index_pattern(pattern, P, max(P, 1) + 3, rng)


@pytest.mark.parametrize("B,P,pattern", _table_inputs())
def test_table_encoding(B, P, pattern):
    I = _indices(pattern, P, np.random.default_rng(P + B))
    check_table(shared_indices(I, B), I, B)


@pytest.mark.parametrize("B", [32, 256, 1024])
def test_no_index_value_is_reserved(B):
    """0xFFFFFFFF is an ordinary value: counted, listed among the distinct values, targeted."""
    P = 2 * B + 5
    I = np.zeros(P, np.uint32)
    I[::3] = U32_MAX
    I[1::3] = U32_MAX - 1
    tab = shared_indices(I, B)
    check_table(tab, I, B)
    for b in range(-(-P // B)):
        assert int(tab.count[b]) == 3
        assert tab.unique[b * B: b * B + 3].tolist() == [0, U32_MAX - 1, U32_MAX]
    assert (tab.unique[(tab.target[np.arange(P)] & 0xFFFF) + (np.arange(P) // B * B).astype(np.uint32)] == I).all()


def test_int32_indices_and_their_errors():
    rng = np.random.default_rng(0)
    I = rng.integers(0, 2**31 - 1, 300).astype(np.int32)
    I[:5] = 2**31 - 1
    check_table(shared_indices(I, 64), I, 64)
    with pytest.raises(KerncLaunchError, match="negative"):
        shared_indices(np.array([3, -1, 2], np.int32), 32)


@pytest.mark.parametrize("bad", [0, 16, 33, 100, 2048, 256.0, "256", None, True])
def test_bad_block_sizes_are_rejected(bad):
    with pytest.raises(KerncLaunchError, match="block_size"):
        shared_indices(np.arange(10, dtype=np.uint32), bad)


@pytest.mark.parametrize("bad", [np.arange(10, dtype=np.int64), np.arange(10, dtype=np.float32),
                                 np.zeros((2, 5), np.uint32), [1, 2, 3]])
def test_bad_index_arrays_are_rejected(bad):
    with pytest.raises(KerncLaunchError, match="1-D uint32"):
        shared_indices(bad, 32)


# ---- precomputed tables in kernel calls -------------------------------------------------------


@pytest.mark.parametrize("acc", ["shared", "shared_sum"])
@pytest.mark.parametrize("B", [32, 256, 1024])
def test_precomputed_table_in_place_of_I(acc, B):
    for P in (0, 1, B + 1, 3 * B + 7):
        raw = ac.run_case(acc, B, 3, "f32", "soa", None, P, seed=4)
        tab = ac.run_case(acc, B, 3, "f32", "soa", None, P, seed=4, table=True)
        assert raw.stats == tab.stats


def _gather_kernel(B):
    """A ``shared(i)`` gather that always runs staged (the tables as given are what is tested)."""
    return compiled(f"@block({B})\nkernel k(x: f32[m] read shared(i), i: u32[n] read, y: f32[n] write) over n {{ y = x; }}",
                    choose_shared=False)


def test_precomputed_table_is_used_as_given():
    """The launcher uses the given table (it does not rebuild it): a table whose ``target`` points at
    another distinct value of the block changes the gathered values accordingly."""
    mod = _gather_kernel(32)
    I = np.array([2, 0, 2, 1], np.uint32)
    x = np.array([10, 11, 12], np.float32)
    tab = shared_indices(I, 32)
    tab.target[:4] &= np.uint32(0xFFFF0000)               # rank 0 (count kept): every thread reads the smallest value
    y = np.zeros(4, np.float32)
    mod.k(x, tab, y)
    assert y.tolist() == [10, 10, 10, 10]
    y = np.zeros(4, np.float32)
    mod.k(x, I, y)
    assert y.tolist() == [12, 10, 12, 11]


@pytest.mark.parametrize("B", [32, 256])
def test_table_entries_past_P_are_never_read(B):
    """Garbage past ``P`` (and past ``count`` in each block) changes nothing, for shared and shared_sum."""
    read = _gather_kernel(B)
    upd = compiled(f"@block({B})\nkernel k(x: f32[m] add shared_sum(i), i: u32[n] read, v: f32[n] read) over n {{ x += v; }}")
    rng = np.random.default_rng(1)
    P = 2 * B + 3
    I = rng.integers(0, 9, P).astype(np.uint32)
    x = rng.normal(size=9).astype(np.float32)
    clean = shared_indices(I, B)
    dirty = shared_indices(I, B)
    for name in ("unique", "target", "perm"):
        arr = dirty.field(name)
        arr[P:] = U32_MAX
        for b in range(-(-P // B)):
            if name == "unique":
                arr[b * B + int(dirty.count[b]): (b + 1) * B] = U32_MAX
    y1 = np.zeros(P, np.float32)
    y2 = np.zeros(P, np.float32)
    read.k(x, clean, y1)
    read.k(x, dirty, y2)
    assert y1.tobytes() == y2.tobytes() == x[I].tobytes()
    v = rng.integers(-4, 5, P).astype(np.float32)
    s1 = np.zeros(9, np.float32)
    s2 = np.zeros(9, np.float32)
    upd.k(s1, clean, v)
    upd.k(s2, dirty, v)
    want = np.zeros(9)
    np.add.at(want, I, v)
    assert s1.tolist() == s2.tolist() == want.tolist()


@pytest.mark.parametrize("built,kernel", [(32, 256), (256, 32), (1024, 256), (64, 1024)])
def test_table_for_another_block_size_is_rejected(built, kernel):
    mod = _gather_kernel(kernel)
    I = np.arange(40, dtype=np.uint32) % 7
    with pytest.raises(KerncLaunchError, match=rf"'i'.*block size {built}.*@block\({kernel}\)"):
        mod.k(np.zeros(7, np.float32), shared_indices(I, built), np.zeros(40, np.float32))


def test_one_table_serves_shared_and_shared_sum_of_the_same_index():
    mod = compiled("@block(64)\nkernel k(x: f32[m] read shared(i), i: u32[n] read, s: f32[m] add shared_sum(i)) over n { s += x; }")
    rng = np.random.default_rng(9)
    I = rng.integers(0, 20, 300).astype(np.uint32)
    x = rng.integers(-8, 8, 20).astype(np.float32)
    s = np.zeros(20, np.float32)
    mod.k(x, shared_indices(I, 64), s)
    want = np.zeros(20)
    np.add.at(want, I, x[I])
    assert s.tolist() == want.tolist()


# ---- element-count requirements ---------------------------------------------------------------


PAIR_READ = "kernel k(x: f32[m] read pair, y: f32[n] write) over n { y = x.first + x.second; }"
PAIR_WRITE = "kernel k(v: f32[n] read, x: f32[m] {mode} pair) over n {{ x = (v, v); }}"
UNIQUE = "kernel k(x: f32[m, 2] read unique, y: f32[n] write) over n { y = x[1]; }"
BLOCK_SUM = "@block(64)\nkernel k(v: f32[n] read, o: f32[nb] {mode} block_sum) over n {{ o = v; }}"


@pytest.mark.parametrize("P", [1, 5, 300])
def test_pair_read_needs_P_plus_1_elements(P):
    mod = compiled(PAIR_READ)
    with pytest.raises(KerncLaunchError, match=r"'x'.*pair.*at least %d" % (P + 1)):
        mod.k(np.zeros(P, np.float32), np.zeros(P, np.float32))
    y = np.zeros(P, np.float32)
    mod.k(np.arange(P + 1, dtype=np.float32), y)
    assert y.tolist() == (2 * np.arange(P) + 1).tolist()


@pytest.mark.parametrize("mode", ["write", "add"])
def test_pair_write_needs_P_plus_1_elements(mode):
    mod = compiled(PAIR_WRITE.format(mode=mode))
    with pytest.raises(KerncLaunchError, match=r"'x'.*pair"):
        mod.k(np.ones(10, np.float32), np.zeros(10, np.float32))
    x = np.zeros(11, np.float32)
    mod.k(np.ones(10, np.float32), x)
    assert x.tolist() == [1] + [2] * 9 + [1]


def test_unique_needs_one_element():
    mod = compiled(UNIQUE)
    with pytest.raises(KerncLaunchError, match=r"'x'.*unique"):
        mod.k(np.zeros((0, 2), np.float32), np.zeros(3, np.float32))
    y = np.zeros(3, np.float32)
    mod.k(np.array([[1, 2]], np.float32), y)
    assert y.tolist() == [2, 2, 2]
    mod.k(np.zeros((0, 2), np.float32), np.zeros(0, np.float32))    # P == 0: nothing is read


@pytest.mark.parametrize("mode", ["write", "add"])
@pytest.mark.parametrize("P", [1, 64, 65, 200])
def test_block_sum_needs_one_element_per_block(mode, P):
    mod = compiled(BLOCK_SUM.format(mode=mode))
    nb = -(-P // 64)
    with pytest.raises(KerncLaunchError, match=r"'o'.*block_sum.*%d blocks" % nb):
        mod.k(np.ones(P, np.float32), np.zeros(nb - 1, np.float32))
    o = np.zeros(nb, np.float32)
    mod.k(np.ones(P, np.float32), o)
    assert o.tolist() == [min(64, P - 64 * b) for b in range(nb)]


def test_pair_unique_block_sum_accept_empty_buffers_at_P0():
    compiled(PAIR_READ).k(np.zeros(0, np.float32), np.zeros(0, np.float32))
    compiled(BLOCK_SUM.format(mode="write")).k(np.zeros(0, np.float32), np.zeros(0, np.float32))
    compiled(UNIQUE).k(np.zeros((0, 2), np.float32), np.zeros(0, np.float32))


@pytest.mark.parametrize("acc", ["indexed", "shared", "atomic", "shared_sum"])
def test_index_values_outside_the_target_are_rejected(acc):
    read = acc in ("indexed", "shared")
    src = (f"kernel k(x: f32[m] {'read' if read else 'add'} {acc}(i), i: u32[n] read, y: f32[n] {'write' if read else 'read'}) "
           f"over n {{ {'y = x;' if read else 'x += y;'} }}")
    mod = compiled(src)
    with pytest.raises(KerncLaunchError, match=r"'i'.*entry 2 is 5"):
        mod.k(np.zeros(5, np.float32), np.array([0, 4, 5, 1], np.uint32), np.zeros(4, np.float32))
    with pytest.raises(KerncLaunchError, match=rf"'i'.*entry 0 is {U32_MAX}"):
        mod.k(np.zeros(5, np.float32), np.array([U32_MAX, 4], np.uint32), np.zeros(2, np.float32))


def test_bf16_without_ml_dtypes_is_a_clean_launch_error(monkeypatch):
    mod = ac.module("sequential", 32, 1, "bf16", None, None)
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # as if it were not installed
    with pytest.raises(KerncLaunchError, match="ml_dtypes"):
        mod.k(np.zeros(4, np.uint16), np.zeros(4, np.uint16))
