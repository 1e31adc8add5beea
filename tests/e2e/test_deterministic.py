"""``@deterministic`` sums and shared sums: fixed reduction order, no float atomics, reproducible."""

from __future__ import annotations

import numpy as np
import pytest

import kernc

SRC = """
@deterministic @block({B})
kernel s(y: f32[n] read, O: f32[1, 2] add sum, X: f32[m, 3] add shared_sum(I) as soa, I: u32[n] read) over n {{
    O = [y, 2.0 * y];
    X = [y, -y, 1.0];
}}
"""
_mods: dict = {}


def module(B: int):
    if B not in _mods:
        _mods[B] = kernc.compile(SRC.format(B=B))
    return _mods[B]


@pytest.mark.parametrize("B", [32, 256])
@pytest.mark.parametrize("P", [0, 1, 31, 33, 257, 1000])
def test_deterministic_sums_match_numpy_and_repeat_bitwise(B, P):
    mod = module(B)
    rng = np.random.default_rng(P)
    y = rng.standard_normal(P).astype(np.float32)
    I = rng.integers(0, 17, P).astype(np.uint32)
    runs = []
    for _ in range(2):
        O = np.ones((1, 2), np.float32)
        X = np.zeros((3, 17), np.float32)
        res = mod.s(y, O, X, I)
        runs.append((O, X, res.stats))
    (O, X, stats), (O2, X2, _) = runs
    assert np.array_equal(O, O2) and np.array_equal(X, X2)
    total = y.astype(np.float64).sum()
    np.testing.assert_allclose(O[0], [1 + total, 1 + 2 * total], rtol=1e-5, atol=1e-5)
    ref = np.zeros((3, 17))
    np.add.at(ref[0], I, y.astype(np.float64))
    np.add.at(ref[1], I, -y.astype(np.float64))
    np.add.at(ref[2], I, 1.0)
    np.testing.assert_allclose(X, ref, rtol=1e-5, atol=1e-5)
    # the only atomics are the two block counters (one per deterministic output) per block
    assert stats.global_atomics == 2 * (-(-P // B))


def test_deterministic_sum_order_is_independent_of_the_values_arrival():
    """The result is a function of the inputs only: permuting nothing but re-running in a fresh
    module gives the identical bits (no dependence on atomics order)."""
    y = (np.arange(5000, dtype=np.float32) * np.float32(1e-3)) ** 2
    a = np.zeros((1, 2), np.float32)
    b = np.zeros((1, 2), np.float32)
    module(256).s(y, a, np.zeros((3, 1), np.float32), np.zeros(5000, np.uint32))
    kernc.compile(SRC.format(B=256)).s(y, b, np.zeros((3, 1), np.float32), np.zeros(5000, np.uint32))
    assert np.array_equal(a, b)


def test_deterministic_ptx_has_fences_and_no_float_atomics():
    ptx = module(256).ptx
    assert ptx.count("fence.acq_rel.gpu") >= 2
    atoms = [line for line in ptx.splitlines() if "atom." in line]
    assert atoms and all(".u32" in line for line in atoms), atoms


def test_merge_tables():
    from kernc.backend.shared_indices import shared_indices

    I = np.array([5, 3, 5, 9] * 20 + [3, 7], np.uint32)
    t = shared_indices(I, 32)
    m = t.merge_tables()
    assert list(m["gunique"]) == [3, 5, 7, 9] and int(m["gcount"][0]) == 4
    # value 3 appears in every block (3 blocks), 7 only in the last
    starts = list(m["gstart"])
    assert starts[1] - starts[0] == 3 and starts[3] - starts[2] == 1
    slots = m["gpos"][starts[0]:starts[1]]
    assert list(slots // 32) == [0, 1, 2]  # block order
    for s in slots:
        b, r = divmod(int(s), 32)
        assert t.unique[b * 32 + r] == 3
