"""Regression: the staged loads of a tiled contraction guarded their loop coordinate with an
unsigned ``k < ub``. A loop that starts below 0 (``for k in lo..K + lo``, ``lo < 0``) summed 0 for
its iterations at ``k < 0``, and an empty loop whose bound is below 0 (``for k in 0..K - 1`` at
``K = 0``) loaded its first chunk out of bounds. Both compare signed now, on CUDA-core tiles
(cp.async and plain loads), ``mma.sync`` and ``wgmma``: the results equal the untiled build's."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions

F32 = """kernel g(a: f32[M, K] view, b: f32[K, N] view, c: f32[M, N] view, lo: index, hi: index)
        over (i, j) in (M, N) {
    let acc = 0.0;
    for k in lo..hi { acc += a.checked(i, k - lo) * b.checked(k - lo, j); }
    c[i, j] = acc;
}"""
F16 = F32.replace("a: f32", "a: f16").replace("b: f32", "b: f16")

BUILDS = {
    "untiled": (F32, {"tile": False, "tensor_cores": False}),
    "tiled_cp_async": (F32, {"arch": "sm_80"}),
    "tiled_plain_loads": (F32, {"arch": "sm_80", "async_copy": False}),
    "tiled_sm_75": (F32, {"arch": "sm_75"}),
    "untiled_f16": (F16, {"tile": False, "tensor_cores": False}),
    "mma_sync": (F16, {"arch": "sm_80"}),
    "wgmma": (F16, {"arch": "sm_90a"}),
}


@functools.cache
def build(name):
    src, opts = BUILDS[name]
    return Module(Compilation(src, "bounds.kern", CompileOptions(**opts), use_cache=False), choose_tile=True)


M, N, K = 70, 66, 20
RNG = np.random.default_rng(3)
A = RNG.integers(-3, 4, (M, K)).astype(np.float32)  # small integers: every order of sums is exact
B = RNG.integers(-3, 4, (K, N)).astype(np.float32)


@pytest.mark.parametrize("lo, hi", [(-3, K - 3), (-8, -1), (0, -1), (-5, 7)])
@pytest.mark.parametrize("name, ref, how", [
    ("tiled_cp_async", "untiled", "tiled"), ("tiled_plain_loads", "untiled", "tiled"),
    ("tiled_sm_75", "untiled", "tiled"), ("mma_sync", "untiled_f16", "mma.sync"),
    ("wgmma", "untiled_f16", "wgmma")])
def test_loops_below_zero_and_empty_loops_sum_as_untiled(name, ref, how, lo, hi):
    f16 = name in ("mma_sync", "wgmma")
    a, b = (A.astype(np.float16), B.astype(np.float16)) if f16 else (A, B)
    out = {}
    for key in (ref, name):
        c = np.full((M, N), np.nan, np.float32)
        res = build(key).g(a, b, c, lo, hi)
        out[key] = c
    assert (res.tensor_cores == how) if f16 else (res.tiled is True)
    expect = A[:, :max(hi - lo, 0)] @ B[:max(hi - lo, 0)]  # exact: small integers
    np.testing.assert_array_equal(out[ref], expect)
    np.testing.assert_array_equal(out[name], out[ref])
