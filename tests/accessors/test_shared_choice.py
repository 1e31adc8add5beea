"""The launcher's choice between staged ``shared(I)``/``shared_sum(I)`` and their plain forms
``indexed(I)``/``atomic(I)`` (``launch_policy.shared_pays``, reported as ``LaunchResult.shared``),
on the CPU interpreter's counters (issue 23):

- on the same inputs ``shared(I)`` never loads more sectors or makes more load requests than
  ``indexed(I)`` (random, sorted, clustered and one-distinct-per-block indices; 4-, 12- and 36-byte
  elements; sizes that are not multiples of a warp or a block), with the same result bits;
- on 36-byte clustered elements it loads at most 0.4x ``indexed``'s sectors;
- the model the choice uses is exact: its sectors and requests differ between the two forms by
  what the counters of the two kernels differ by;
- ``shared_sum(I)`` with no reuse runs as ``atomic(I)``; ``choose_shared=False`` turns the choice
  off (always staged).
"""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.backend import launch_policy
from kernc.backend.shared_indices import shared_indices
from kernc.backend.variant import Variant

B = 256
_MODS: dict = {}


def gather(acc: str, K: int, choose_shared: bool = True):
    """``y = x`` through ``acc(i)`` (``indexed`` or ``shared``), ``f32`` elements of ``K``
    components, compiled once per session."""
    key = (acc, K, choose_shared)
    if key not in _MODS:
        xt, yt = ("f32[m]", "f32[n]") if K == 1 else (f"f32[m, {K}]", f"f32[n, {K}]")
        _MODS[key] = kernc.compile(f"@block({B})\nkernel k(x: {xt} read {acc}(i), i: u32[n] read, y: {yt} write) "
                                   f"over n {{\n    y = x;\n}}\n", choose_shared=choose_shared)
    return _MODS[key]


def indices(pattern: str, P: int, rng) -> np.ndarray:
    """``P`` indices into ``P // 8`` elements (8 uses each on average): uniformly ``random``,
    ``sorted``, ``clustered`` (sorted, then shuffled within each block) or ``one`` distinct per block."""
    m = max(P // 8, 1)
    if pattern == "one":
        return (np.arange(P) // B * 7).astype(np.uint32)
    I = rng.integers(0, m, P).astype(np.uint32)
    if pattern == "random":
        return I
    I.sort()
    if pattern == "clustered":
        for b in range(0, P, B):
            I[b:b + B] = rng.permutation(I[b:b + B])
    return I


def run(mod, I, K, rng):
    X = rng.standard_normal((int(I.max()) + 1, K) if K > 1 else int(I.max()) + 1).astype(np.float32)
    y = np.full((I.size, K) if K > 1 else I.size, np.nan, np.float32)
    res = mod.k(X, I, y)
    return res, y


@pytest.mark.parametrize("K", [1, 3, 9])  # 4-, 12- and 36-byte elements
@pytest.mark.parametrize("pattern", ["random", "sorted", "clustered", "one"])
def test_shared_never_loads_more_than_indexed(K, pattern):
    for P in (1000, 4 * B + 77):
        rng = np.random.default_rng([K, P, len(pattern)])
        I = indices(pattern, P, rng)
        r_ind, y_ind = run(gather("indexed", K), I, K, np.random.default_rng(P))
        r_sh, y_sh = run(gather("shared", K), I, K, np.random.default_rng(P))
        assert y_sh.tobytes() == y_ind.tobytes()
        s, i = r_sh.stats, r_ind.stats
        assert s.global_load_sectors <= i.global_load_sectors, (P, s, i)
        assert s.global_load_requests <= i.global_load_requests, (P, s, i)
        assert r_ind.shared is None and r_sh.shared in (True, False)
        if not r_sh.shared:  # the plain form ran: exactly indexed's traffic
            assert (s.global_load_sectors, s.global_load_requests) == (i.global_load_sectors,
                                                                       i.global_load_requests)


def test_choice_follows_reuse():
    """Random indices into ``4P`` elements (about one use per distinct index per block) run as
    ``indexed``; clustered ones (8 uses each within a block) staged; both reported in the result
    and its repr."""
    rng = np.random.default_rng(3)
    P = 4 * B
    low, _ = run(gather("shared", 1), rng.integers(0, 4 * P, P).astype(np.uint32), 1, rng)
    high, _ = run(gather("shared", 1), indices("clustered", P, rng), 1, rng)
    assert (low.shared, high.shared) == (False, True)
    assert "shared as indexed" in repr(low) and "shared staged" in repr(high)


def test_clustered_36_byte_elements_at_most_0_4x_indexed_sectors():
    rng = np.random.default_rng(36)
    I = indices("clustered", 4 * B + 77, rng)
    r_ind, _ = run(gather("indexed", 9), I, 9, np.random.default_rng(1))
    r_sh, _ = run(gather("shared", 9), I, 9, np.random.default_rng(1))
    assert r_sh.shared is True
    assert r_sh.stats.global_load_sectors <= 0.4 * r_ind.stats.global_load_sectors


@pytest.mark.parametrize("K", [1, 2, 3, 4, 9])  # 2 and 4: 8- and 16-byte vector loads
def test_model_is_exact_on_the_interpreters_counters(K):
    """``shared_read_traffic``'s staged-minus-indexed sectors and requests equal the counters' of
    the two kernels (both always as compiled: ``choose_shared=False``)."""
    rng = np.random.default_rng(K)
    for P, m in ((1000, 250), (4 * B + 77, 300)):
        I = rng.integers(0, m, P).astype(np.uint32)
        st = {a: run(gather(a, K, choose_shared=False), I, K, np.random.default_rng(0))[0].stats
              for a in ("indexed", "shared")}
        sig = gather("shared", K).k.signature
        t = launch_policy.shared_read_traffic(sig.shared_accesses[0], shared_indices(I, B),
                                              {"m": int(I.max()) + 1, "n": P})
        real = (st["shared"].global_load_sectors - st["indexed"].global_load_sectors,
                st["shared"].global_load_requests - st["indexed"].global_load_requests)
        assert real == (t["shared"][0] - t["indexed"][0], t["shared"][1] - t["indexed"][1])


def test_choose_shared_false_keeps_staging():
    rng = np.random.default_rng(5)
    I = rng.integers(0, 16 * B, 4 * B).astype(np.uint32)
    res, y = run(gather("shared", 1, choose_shared=False), I, 1, np.random.default_rng(2))
    plain, y2 = run(gather("shared", 1), I, 1, np.random.default_rng(2))
    assert (res.shared, plain.shared) == (True, False)
    assert y.tobytes() == y2.tobytes()
    assert Variant(shared=False).name == "index 32, shared as indexed"


SCATTER = """@block(256)
kernel s(v: f32[n] read, x: f32[m] add shared_sum(i), i: u32[n] read) over n {
    x += v;
}
"""


def test_shared_sum_without_reuse_runs_as_atomic():
    """Distinct indices (no reuse: staging saves no atomic) run as ``atomic(I)``: one atomic per
    thread; 8 uses per index within a block stay staged: one atomic per distinct index per block.
    The sums are exact either way (values on a grid of 1/4)."""
    mod = kernc.compile(SCATTER)
    rng = np.random.default_rng(8)
    P = 4 * B + 77
    v = (rng.integers(-8, 8, P) / 4).astype(np.float32)
    for I, staged in ((rng.permutation(P).astype(np.uint32), False),
                      ((np.arange(P) // 8).astype(np.uint32), True)):
        x = np.zeros(int(I.max()) + 1, np.float32)
        res = mod.s(v, x, I)
        want = np.zeros_like(x, dtype=np.float64)
        np.add.at(want, I, v)
        assert x.tolist() == want.tolist()
        assert res.shared is staged
        assert res.stats.global_atomics == (int(shared_indices(I, B).count.sum()) if staged else P)


def test_large_launches_count_a_sample_of_blocks(monkeypatch):
    """Above ``SAMPLE_ITEMS`` items the model counts every k-th full block (a few ms at 2^20 items,
    where counting all took half the interpreter's launch); on these inputs the sample gives the
    choice that counting every block gives."""
    sig = gather("shared", 3).k.signature
    p = sig.shared_accesses[0]
    rng = np.random.default_rng(11)
    P = 16 * B + 77
    for pattern, I in (("random", rng.integers(0, 8 * P, P).astype(np.uint32)),
                       ("clustered", indices("clustered", P, rng)), ("one", indices("one", P, rng))):
        tab = shared_indices(I, B)
        env = {"m": int(I.max()) + 1, "n": P}
        full = launch_policy.shared_pays(sig, {"i": tab}, env)
        monkeypatch.setattr(launch_policy, "SAMPLE_ITEMS", 4 * B)
        sampled = launch_policy.shared_read_traffic(p, tab, env)
        assert launch_policy.shared_pays(sig, {"i": tab}, env) == full == (pattern != "random")
        monkeypatch.undo()
        whole = launch_policy.shared_read_traffic(p, tab, env)
        assert sampled["indexed"][1] < whole["indexed"][1]  # (fewer warps counted)
