"""The traffic model's counters (backend/interpreter/traffic.py) against a plain per-warp reference.

The counters count distinct sectors and bank-conflict words by sorting rows of a lane matrix; the
reference here walks each warp (or phase) with Python sets, after the definitions in ``RunStats``.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kernc.backend.interpreter import traffic
from kernc.backend.interpreter.traffic import RunStats


def frame(nb: int, B: int):
    """A minimal frame of ``nb`` blocks of ``B`` threads (the fields the counters read)."""
    L = nb * B
    lane = np.arange(L, dtype=np.int64)
    blk, tid = lane // B, lane % B
    wpb = -(-B // 32)
    return SimpleNamespace(stats=RunStats(), warp=blk * wpb + (tid >> 5), lane_in_warp=tid & 31,
                           nwarps=nb * wpb, L=L, B=B)


def reference(fr, act, rel, itemsize: int, kind: str, space: str, vector: int = 0) -> dict:
    lanes = np.arange(fr.warp.size) if act is None else act
    rel = np.broadcast_to(rel, lanes.shape)
    by_warp: dict = {}
    for lane, r in zip(lanes.tolist(), rel.tolist()):
        by_warp.setdefault(int(fr.warp[lane]), []).append((int(fr.lane_in_warp[lane]), int(r)))
    out = dict.fromkeys(("requests", "sectors", "conflicts"), 0)
    out["requests"] = len(by_warp)
    for entries in by_warp.values():
        if space == "global":
            sectors = set()
            for _, r in entries:
                if vector:
                    sectors |= {r * itemsize // 32, ((r + vector) * itemsize - 1) // 32}
                else:
                    sectors.add(r * itemsize // 32)
            out["sectors"] += len(sectors)
            continue
        k = max(itemsize // 4, 1)
        phases: dict = {}
        for lane, r in entries:
            words = [r * itemsize // 4] if k == 1 else [r * k + j for j in range(k)]
            phases.setdefault(lane // (32 // k), set()).update(words)
        for words in phases.values():
            per_bank: dict = {}
            for w in words:
                per_bank[w % 32] = per_bank.get(w % 32, 0) + 1
            out["conflicts"] += max(per_bank.values()) - 1
    return out


def measured(fr, act, rel, itemsize: int, kind: str, space: str, vector: int = 0) -> dict:
    fr.stats = RunStats()
    buf = SimpleNamespace(kind=space, itemsize=itemsize)
    if vector:
        traffic._count_vector(fr, buf, act, rel, vector, kind)
    else:
        traffic._count(fr, buf, act, rel, kind)
    st = fr.stats
    if space == "global":
        req = st.global_load_requests if kind == "load" else st.global_store_requests
        sec = st.global_load_sectors if kind == "load" else st.global_store_sectors
        return {"requests": req, "sectors": sec, "conflicts": 0}
    return {"requests": st.shared_requests, "sectors": 0, "conflicts": st.shared_bank_conflicts}


PATTERNS = ("contiguous", "strided", "random", "few", "reversed", "broadcast")


def indices(rng, pattern: str, L: int) -> np.ndarray:
    lane = np.arange(L, dtype=np.int64)
    if pattern == "contiguous":
        return lane + int(rng.integers(0, 40))
    if pattern == "strided":
        return lane * int(rng.choice([2, 3, 16, 32, 33, 64]))
    if pattern == "random":
        return rng.integers(0, 4 * L, L)
    if pattern == "few":
        return rng.integers(0, 5, L)
    if pattern == "reversed":
        return L - 1 - lane
    return np.full(L, int(rng.integers(0, 100)), dtype=np.int64)


@pytest.mark.parametrize("space", ["global", "workgroup"])
@pytest.mark.parametrize("itemsize", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("B", [32, 96, 100, 256])
def test_counters_match_the_per_warp_reference(space, itemsize, B):
    rng = np.random.default_rng(B * 100 + itemsize)
    fr = frame(3, B)
    for pattern in PATTERNS:
        rel = indices(rng, pattern, fr.L)
        for mask_kind in ("all", "half", "one warp", "one lane", "none"):
            if mask_kind == "all":
                act = None
            elif mask_kind == "half":
                act = np.flatnonzero(rng.random(fr.L) < 0.5)
            elif mask_kind == "one warp":
                act = np.arange(32, 64) if B >= 64 else np.arange(0, 32)
            elif mask_kind == "one lane":
                act = np.array([int(rng.integers(0, fr.L))])
            else:
                act = np.zeros(0, dtype=np.int64)
            r = rel if act is None else rel[act]
            for kind in ("load", "store"):
                want = reference(fr, act, r, itemsize, kind, space)
                assert measured(fr, act, r, itemsize, kind, space) == want, (pattern, mask_kind, kind)


@pytest.mark.parametrize("space", ["global", "workgroup"])
@pytest.mark.parametrize("itemsize", [1, 4, 8, 16])
@pytest.mark.parametrize("B", [64, 100])
def test_masked_counters_match_the_reference(space, itemsize, B):
    """``_count_masked`` (every lane's index, a mask) counts what ``_count`` does on the active lanes."""
    rng = np.random.default_rng(B + itemsize)
    fr = frame(3, B)
    for pattern in PATTERNS:
        rel = indices(rng, pattern, fr.L)
        for p_active in (0.0, 0.3, 0.9, 1.0):
            mask = rng.random(fr.L) < p_active
            if p_active == 0.9:
                mask[::37] = False
            act = np.flatnonzero(mask)
            for kind in ("load", "store"):
                want = reference(fr, act, rel[act], itemsize, kind, space)
                fr.stats = RunStats()
                traffic._count_masked(fr, SimpleNamespace(kind=space, itemsize=itemsize), mask, rel, kind)
                st = fr.stats
                if space == "global":
                    got = {"requests": st.global_load_requests if kind == "load" else st.global_store_requests,
                           "sectors": st.global_load_sectors if kind == "load" else st.global_store_sectors,
                           "conflicts": 0}
                else:
                    got = {"requests": st.shared_requests, "sectors": 0, "conflicts": st.shared_bank_conflicts}
                assert got == want, (pattern, p_active, kind)


@pytest.mark.parametrize("n", [2, 4])
def test_vector_sectors_match_the_reference(n):
    rng = np.random.default_rng(n)
    fr = frame(2, 128)
    for pattern in PATTERNS:
        rel = indices(rng, pattern, fr.L) * n
        for act in (None, np.flatnonzero(rng.random(fr.L) < 0.3)):
            r = rel if act is None else rel[act]
            want = reference(fr, act, r, 4, "load", "global", vector=n)
            assert measured(fr, act, r, 4, "load", "global", vector=n) == want, pattern


def test_known_values():
    fr = frame(1, 64)
    lane = np.arange(64, dtype=np.int64)
    # f32 row of a warp: 4 sectors per request; a column of a row-major 64x64 f32: 32 sectors each
    assert measured(fr, None, lane, 4, "load", "global")["sectors"] == 8
    assert measured(fr, None, lane * 64, 4, "load", "global")["sectors"] == 64
    # stride-32 words: every lane in bank 0, 32 distinct words: 31 conflicts per request
    assert measured(fr, None, lane * 32, 4, "load", "workgroup")["conflicts"] == 62
    # padded tile (stride 33): conflict-free; all lanes one word: a broadcast
    assert measured(fr, None, lane * 33, 4, "load", "workgroup")["conflicts"] == 0
    assert measured(fr, None, lane * 0, 4, "load", "workgroup")["conflicts"] == 0
    # increasing words spanning 33 (a gap at lane 16): words 0 and 32 share bank 0
    assert measured(fr, None, lane + (lane % 32 >= 16), 4, "load", "workgroup")["conflicts"] == 2
    # f64, consecutive: two phases of 16 lanes, 32 words each, conflict-free
    assert measured(fr, None, lane, 8, "load", "workgroup")["conflicts"] == 0


def test_atomic_accumulation_applies_updates_in_lane_order():
    """An atomic whose old values nobody reads is applied by ``ufunc.at``; it must leave memory as
    the lane-order serialisation with old values (``_atomic_apply``) does, to the last bit of a
    float32 sum whose result depends on the order."""
    from kernc.backend.interpreter.gpu import _atomic_apply

    rng = np.random.default_rng(5)
    n = 5000
    addr = rng.integers(0, 40, n)
    vals = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 7, n)).astype(np.float32)
    for fn in (np.add, np.maximum, np.multiply):
        a = rng.standard_normal(40).astype(np.float32)
        b = a.copy()
        with np.errstate(all="ignore"):  # products overflow to inf and nan on both sides
            _atomic_apply(a, addr, vals, fn)
            fn.at(b, addr, vals)
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
