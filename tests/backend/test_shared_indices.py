"""``shared_indices`` (backend/shared_indices.py) against two references of the same tables: a
stable argsort of each block's entries in Python (the definition in the module's docstring), and
the implementation it replaced (one lexsort of int64 copies of the input), on random and edge-case
inputs."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.backend import shared_indices as si
from kernc.support.errors import KerncLaunchError


def reference(indices: np.ndarray, B: int) -> dict:
    P = indices.shape[0]
    nb = -(-P // B)
    unique = np.zeros(nb * B, np.uint32)
    target = np.zeros(nb * B, np.uint32)
    perm = np.zeros(nb * B, np.uint32)
    count = np.zeros(nb, np.uint32)
    vals = indices.astype(np.int64)
    for b in range(nb):
        block = vals[b * B:(b + 1) * B]
        order = np.argsort(block, kind="stable")
        distinct = np.unique(block)
        rank_of = {int(v): k for k, v in enumerate(distinct)}
        n = len(distinct)
        count[b] = n
        unique[b * B:b * B + n] = distinct
        for j, t in enumerate(order):
            r = rank_of[int(block[t])]
            perm[b * B + j] = t | (r << 16)
            target[b * B + t] = r | (n << 16)
        for t in range(len(block), B):  # the padding of a partial last block: after every value
            perm[b * B + t] = t | (n << 16)
            target[b * B + t] = n | (n << 16)
    return {"unique": unique, "target": target, "perm": perm, "count": count}


def lexsort_reference(indices: np.ndarray, B: int) -> dict:
    """The tables as kernc built them before the packed-key sort (a 3-key lexsort over int64)."""
    P = int(indices.shape[0])
    nb = -(-P // B)
    n = nb * B
    vals = np.full(n, 1 << 32, dtype=np.int64)
    vals[:P] = indices.astype(np.int64)
    pos = np.arange(n, dtype=np.int64)
    blk = pos // B
    order = np.lexsort(np.stack([pos, vals, blk]))
    svals = vals[order]
    start = np.ones(n, dtype=bool)
    if n:
        start[1:] = (svals[1:] != svals[:-1]) | (blk[1:] != blk[:-1])
    runs = np.cumsum(start.astype(np.int64)) - 1
    rank = runs - runs[blk * B]
    target = np.zeros(n, dtype=np.int64)
    target[order] = rank
    perm = ((order - blk * B) | (rank << 16)).astype(np.uint32)
    unique = np.zeros(n, dtype=np.uint32)
    sel = start & (svals < (1 << 32))
    unique[(blk * B + rank)[sel]] = svals[sel].astype(np.uint32)
    count = np.zeros(nb, dtype=np.uint32)
    if n:
        count[:] = np.bincount(blk[sel], minlength=nb).astype(np.uint32)[:nb]
    target = (target | (count.astype(np.int64)[blk] << 16)).astype(np.uint32)
    return {"unique": unique, "target": target, "perm": perm, "count": count}


def check(indices, B):
    t = si.shared_indices(indices, B)
    want = reference(indices, B)
    for name, w in want.items():
        got = getattr(t, name)
        assert got.dtype == np.uint32, name
        np.testing.assert_array_equal(got, w, err_msg=name)
    assert t.indices is indices and t.block_size == B


CASES = {
    "empty": lambda rng: np.zeros(0, np.uint32),
    "one entry": lambda rng: np.array([7], np.uint32),
    "one partial block": lambda rng: rng.integers(0, 10, 37).astype(np.uint32),
    "one full block": lambda rng: rng.integers(0, 50, 256).astype(np.uint32),
    "all equal": lambda rng: np.full(1000, 5, np.uint32),
    "all distinct descending": lambda rng: np.arange(1000, 0, -1).astype(np.uint32),
    "max values": lambda rng: np.array([0xFFFFFFFF, 0, 0xFFFFFFFF, 0xFFFFFFFE] * 300, np.uint32),
    "random wide": lambda rng: rng.integers(0, 1 << 32, 5000, dtype=np.uint64).astype(np.uint32),
    "random few": lambda rng: rng.integers(0, 3, 4099).astype(np.uint32),
    "int32": lambda rng: rng.integers(0, 1 << 31, 3000).astype(np.int32),
    "int32 max": lambda rng: np.array([2**31 - 1, 0, 2**31 - 1] * 111, np.int32),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("B", [32, 256, 1024])
def test_tables_match_the_reference(case, B):
    check(CASES[case](np.random.default_rng(hash(case) % 1000 + B)), B)


@pytest.mark.parametrize("seed", range(6))
def test_tables_match_the_lexsort_implementation(seed):
    rng = np.random.default_rng(seed)
    B = int(rng.choice([32, 64, 128, 256, 512, 1024]))
    P = int(rng.integers(0, 50_000))
    hi = int(rng.choice([1, 2, 17, 1000, P + 1, 1 << 32]))
    idx = rng.integers(0, hi, P, dtype=np.uint64).astype(np.uint32)
    if seed % 2:
        idx = np.sort(idx)  # clustered, as gathers over sorted points are
    for indices in (idx, (idx >> 1).astype(np.int32)):
        t = si.shared_indices(indices, B)
        for name, want in lexsort_reference(indices, B).items():
            got = getattr(t, name)
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want, err_msg=f"{name} P={P} B={B}")


def test_chunks_match_one_pass(monkeypatch):
    """The host goes through the blocks in chunks; a chunk of one block, or of all of them (as on
    the device), gives the same tables."""
    idx = np.random.default_rng(3).integers(0, 700, 20_000).astype(np.uint32)
    want = si.shared_indices(idx, 64)
    for chunk in (64, 64 * 7, 1 << 22):
        monkeypatch.setattr(si, "CHUNK", chunk)
        got = si.shared_indices(idx, 64)
        for name in ("unique", "target", "perm", "count"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=f"{name} {chunk}")


def test_the_input_is_not_changed():
    idx = np.random.default_rng(4).integers(0, 100, 999).astype(np.uint32)
    before = idx.copy()
    si.shared_indices(idx, 128)
    np.testing.assert_array_equal(idx, before)


def test_bad_input():
    with pytest.raises(KerncLaunchError, match="negative index values"):
        si.shared_indices(np.array([1, -1, 2], np.int32), 32)
    with pytest.raises(KerncLaunchError, match="1-D uint32"):
        si.shared_indices(np.zeros(4, np.int64), 32)
    with pytest.raises(KerncLaunchError, match="power of two"):
        si.shared_indices(np.zeros(4, np.uint32), 48)


def merge_reference(t) -> dict:
    """The merge tables by their definition: for each distinct value of the whole input, ascending,
    the slots ``b*B + rank`` of the blocks holding it, in block order."""
    B = t.block_size
    slots_of: dict = {}
    for b, n in enumerate(t.count):
        for r in range(int(n)):
            slots_of.setdefault(int(t.unique[b * B + r]), []).append(b * B + r)
    values = sorted(slots_of)
    gpos = [s for v in values for s in slots_of[v]]
    gstart = np.cumsum([0] + [len(slots_of[v]) for v in values])
    return {"gunique": np.array(values, np.uint32), "gstart": gstart.astype(np.uint32),
            "gpos": np.array(gpos, np.uint32), "gcount": np.array([len(values)], np.uint32)}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("B", [32, 256])
def test_merge_tables_match_their_definition(seed, B):
    """The ``@deterministic`` merge tables (one sort of a packed ``value << 32 | slot`` key) against
    their definition, with a partial last block, values above 2^31 and one value in every block."""
    rng = np.random.default_rng(seed)
    P = int(rng.integers(1, 5 * B))
    idx = rng.integers(0, max(2, P // 3), P, dtype=np.uint32)
    idx[rng.random(P) < 0.1] = np.uint32(2**32 - 1 - seed)
    idx[::B] = 7
    t = si.shared_indices(idx, B)
    got, want = t.merge_tables(), merge_reference(t)
    for name in ("gunique", "gstart", "gpos", "gcount"):
        assert got[name].dtype == np.uint32, name
        assert np.array_equal(got[name], want[name]), name


def test_merge_tables_of_an_empty_input():
    m = si.shared_indices(np.zeros(0, np.uint32), 32).merge_tables()
    assert m["gunique"].shape == (0,) and list(m["gstart"]) == [0] and m["gpos"].shape == (0,)
    assert int(m["gcount"][0]) == 0
