"""Regression (new-user trial): a contraction over literal extents (``over (i, j) in (64, 128)``, or
``(64, N)``) was neither tiled nor put on tensor cores ("the problem is not an N-D one delinearized
from the thread id": the extents' constants sat between the thread id and its delinearization).
Now it is tiled (CUDA cores, mma.sync, wgmma), with the untiled build's results."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions

SRC = """kernel g(a: T[64, K] view, b: T[K, N] view, c: f32[64, N] view) over (i, j) in (64, N) {
    let acc = 0.0;
    for k in 0..K { acc += a[i, k] * b[k, j]; }
    c[i, j] = acc;
}"""
ALL_LITERAL = SRC.replace("K]", "40]").replace("[K,", "[40,").replace("N]", "128]").replace(
    "(64, N)", "(64, 128)").replace("0..K", "0..40")


@functools.cache
def build(src, dtype, **opts):
    return Module(Compilation(src.replace("T[", f"{dtype}["), "lit.kern", CompileOptions(**opts),
                              use_cache=False), choose_tile=True)


@pytest.mark.parametrize("src", [SRC, ALL_LITERAL], ids=["64xN", "64x128"])
@pytest.mark.parametrize("dtype, opts, how", [
    ("f32", {}, "tiled"), ("f16", {"arch": "sm_80"}, "mma.sync"), ("f16", {"arch": "sm_90a"}, "wgmma")])
def test_literal_extents_tile(src, dtype, opts, how):
    rng = np.random.default_rng(2)
    T = np.float32 if dtype == "f32" else np.float16
    a = rng.integers(-3, 4, (64, 40)).astype(T)  # small integers: every order of sums is exact
    b = rng.integers(-3, 4, (40, 128)).astype(T)
    c = np.full((64, 128), np.nan, np.float32)
    res = build(src, dtype, **opts).g(a, b, c)
    assert res.tiled is True if how == "tiled" else res.tensor_cores == how
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
