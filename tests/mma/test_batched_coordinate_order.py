"""Batched f16/i8 contractions whose batch coordinate is not the first item coordinate
(``over (i, j, z)``, ``over (i, z, j)``): on tensor cores (``mma.sync``; on ``sm_90a`` warpgroup
``wgmma``, s8 for the i8 one) and on the CUDA-core tiles, against numpy on the CPU interpreter
at odd sizes, and the PTX through ``ptxas`` (an older build crashed in MLIR lowering them)."""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.backend import toolkit

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")

KERNELS = {
    "last_f16": ("""
kernel g(a: f16[B, M, K] view, b: f16[B, K, N] view, c: f32[M, N, B] view) over (i, j, z) in (M, N, B) {
    let acc = 0.0;
    for k in 0..K { acc += a[z, i, k] * b[z, k, j]; }
    c[i, j, z] = acc;
}""", "zik,zkj->ijz"),
    "mid_f16": ("""
kernel g(a: f16[B, M, K] view, b: f16[B, K, N] view, c: f32[M, B, N] view) over (i, z, j) in (M, B, N) {
    let acc = 0.0;
    for k in 0..K { acc += a[z, i, k] * b[z, k, j]; }
    c[i, z, j] = acc;
}""", "zik,zkj->izj"),
    "last_i8": ("""
kernel g(a: i8[B, M, K] view, b: i8[B, K, N] view, c: i32[M, N, B] view) over (i, j, z) in (M, N, B) {
    let acc: i32 = 0;
    for k in 0..K { acc += i32(a[z, i, k]) * i32(b[z, k, j]); }
    c[i, j, z] = acc;
}""", "zik,zkj->ijz"),
}
ARCHS = ["sm_80", "sm_90a"]
_cache: dict = {}


def _module(name, arch, tensor_cores):
    key = (name, arch, tensor_cores)
    if key not in _cache:
        _cache[key] = kernc.compile(KERNELS[name][0], arch=arch, tensor_cores=tensor_cores)
    return _cache[key]


def _inputs(name, B, M, K, N):
    rng = np.random.default_rng(B + 3 * M + 5 * K + 7 * N)
    if name.endswith("i8"):
        a = rng.integers(-128, 128, (B, M, K)).astype(np.int8)
        b = rng.integers(-128, 128, (B, K, N)).astype(np.int8)
    else:
        a = rng.standard_normal((B, M, K)).astype(np.float16)
        b = rng.standard_normal((B, K, N)).astype(np.float16)
    return a, b


@pytest.mark.parametrize("tensor_cores", [True, False])
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", list(KERNELS))
def test_batch_coordinate_anywhere_matches_numpy(name, arch, tensor_cores):
    mod = _module(name, arch, tensor_cores)
    B, M, K, N = 2, 67, 37, 65  # odd sizes; a batch plane over one 64x64 CUDA-core tile (tiled)
    a, b = _inputs(name, B, M, K, N)
    ein = KERNELS[name][1]
    if name.endswith("i8"):
        want = np.einsum(ein, a.astype(np.int64), b.astype(np.int64))
        c = np.zeros(want.shape, np.int32)
        result = mod.g(a, b, c)
        np.testing.assert_array_equal(c, want)  # i32 sums are exact here (|sum| < 2^31)
    else:
        want = np.einsum(ein, a.astype(np.float64), b.astype(np.float64))
        c = np.full(want.shape, np.nan, np.float32)
        result = mod.g(a, b, c)
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)
    sig = mod._compilation.signatures["g"]
    if tensor_cores:
        assert sig.tiles == [["M", 128], ["N", 128]], sig.tiles  # mma.sync: 128x128 per batch
        assert result.grid == 2 * 1 * 1
    else:
        assert result.tiled is True and sig.contraction["tile"] == [64, 64, 16]


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", list(KERNELS))
def test_batch_coordinate_anywhere_assembles_on_tensor_cores(name, arch):
    ptx = _module(name, arch, True).ptx
    # (sm_90a: kern-wgmma-contractions, which flattens the sides as kern-mma-contractions)
    assert ("wgmma.mma_async" if arch == "sm_90a" else "mma.sync.aligned") in ptx
    if name.endswith("i8"):
        assert ("m64n128k32.s32.s8.s8" in ptx) == (arch == "sm_90a")
    result = toolkit.run_ptxas(ptx, arch=arch)
    assert result.ok, result.log
    assert result.spills["g"] == (0, 0), result.log
