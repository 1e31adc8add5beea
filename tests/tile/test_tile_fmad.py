"""Regression: under ``--fmad`` a tiled contraction was not bitwise its untiled build when the body
adds a product that the items of a row share (``a[i, k] * s``, ``f32(k) * a[i, k]``, ``b[k, j] *
b[k, j]``): the cse after kern-tile-contractions merged the items' copies of the product into one
with several uses, which kern-contract-fma leaves unfused, while the untiled kernel fuses it. The
tiled build now contracts per item before that cse."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions

BODIES = {
    "scaled_read": "acc += a[i, k] * s + b[k, j];",
    "k_times_read": "acc += f32(k) * a[i, k] + b[k, j] * s;",
    "squared_read": "acc += a[i, k] + b[k, j] * b[k, j];",
}
SRC = """kernel g(a: f32[M, K] view, b: f32[K, N] view, c: f32[M, N] view, s: f32) over (i, j) in (M, N) {
    let acc = 0.0;
    for k in 0..K { BODY }
    c[i, j] = acc;
}"""


@functools.cache
def build(body, tiled):
    opts = CompileOptions(fmad=True) if tiled else CompileOptions(fmad=True, tile=False, tensor_cores=False)
    return Module(Compilation(SRC.replace("BODY", BODIES[body]), "fmad.kern", opts, use_cache=False),
                  choose_tile=True)


@pytest.mark.parametrize("body", sorted(BODIES))
def test_tiled_and_untiled_fuse_alike(body):
    rng = np.random.default_rng(1)
    M, N, K = 67, 70, 19
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    out = []
    for tiled in (False, True):
        c = np.zeros((M, N), np.float32)
        res = build(body, tiled).g(a, b, c, np.float32(1.3))
        assert res.tiled is (True if tiled else None)
        out.append(c)
    assert out[0].view(np.uint32).tolist() == out[1].view(np.uint32).tolist()
    if body == "scaled_read":  # and that is the fused result: a[i, k] * s + b[k, j] rounded once
        fused = np.zeros((M, N), np.float32)
        for k in range(K):
            fused = fused + (a[:, k:k + 1].astype(np.float64) * np.float64(np.float32(1.3)) + b[k]).astype(np.float32)
        np.testing.assert_array_equal(out[1], fused)
