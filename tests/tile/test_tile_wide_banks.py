"""Regression (new-user trial): the workgroup tiles of 8-byte elements (f64, i64) were padded as
4-byte ones (``32/BK`` elements per row), so a warp's staging of a k-contiguous tile put two lanes of
each 16-lane phase in one bank: 2304 bank conflicts for a 128^3 f64 gemm, 2176 with @tile(64, 64, 8),
4224 with @tile(64, 32, 4), where f32 had 0. Rows of 8-byte elements are padded by ``16/BK``."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions

from conftest import EXAMPLES

GEMM = open(f"{EXAMPLES}/gemm.kern").read()


@functools.cache
def build(dtype, tile, async_copy):
    zero = "0.0" if dtype[0] == "f" else "0"
    src = GEMM.replace("f32[", f"{dtype}[").replace("let acc = 0.0;", f"let acc = {zero}{dtype};")
    return Module(Compilation(tile + src, "wide.kern", CompileOptions(async_copy=async_copy), use_cache=False))


@pytest.mark.parametrize("async_copy", [True, False])
@pytest.mark.parametrize("tile", ["", "@tile(64, 64, 8)\n", "@tile(64, 32, 4)\n"])
@pytest.mark.parametrize("dtype", ["f64", "i64"])
def test_wide_tiles_have_no_bank_conflicts(dtype, tile, async_copy):
    T = np.float64 if dtype == "f64" else np.int64
    rng = np.random.default_rng(6)
    a = rng.integers(-3, 4, (128, 128)).astype(T)
    b = rng.integers(-3, 4, (128, 128)).astype(T)
    c = np.zeros((128, 128), T)
    res = build(dtype, tile, async_copy).gemm(a, b, c)
    assert res.tiled is True and res.stats.shared_requests > 0
    assert res.stats.shared_bank_conflicts == 0
    np.testing.assert_array_equal(c, a @ b)
