"""Regression: a kernel whose items kern-map-groups mapped to the groups of a reduction across items
has no linear item mapping; kern-tile-contractions and kern-mma-contractions must leave it alone
(they raised an internal error reading the missing mapping) and its values stay right."""

from __future__ import annotations

import numpy as np
import pytest

import kernc

SRC = """
kernel rownorm_{T}(a: {T}[R, K] view, b: {T}[K, N] view, y: f32[R, N] view) over (r, j) in (R, N) {{
    let acc = 0.0;
    for k in 0..K {{
        acc += f32(a[r, k]) * f32(b[k, j]);
    }}
    let s = sum[j](acc);
    y[r, j] = acc / s;
}}
"""


@pytest.mark.parametrize("T, dtype", [("f32", np.float32), ("f16", np.float16)])
def test_contraction_inside_a_group_kernel(T, dtype):
    mod = kernc.compile(SRC.format(T=T), filename="g.kern")
    assert "ld.global" in mod.ptx
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 1.0, (3, 5)).astype(dtype)
    b = rng.uniform(0.5, 1.0, (5, 37)).astype(dtype)
    y = np.zeros((3, 37), np.float32)
    getattr(mod, f"rownorm_{T}")(a, b, y)
    p = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(y, p / p.sum(axis=1, keepdims=True), rtol=1e-5)
