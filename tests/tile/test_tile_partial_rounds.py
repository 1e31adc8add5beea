"""``@tile`` configurations whose staged tiles hold fewer slots than the block has threads, or a
number that is no multiple of it (the last round of the cooperative loads is partial): every
build -- plain loads (``sm_75``, ``async_copy=False``, f16 operands) and ``cp.async`` -- is bitwise
the untiled kernel (regression: the plain-load path stored a zero for every thread, including the
threads that own no slot of the last round, out of bounds of the tile or over other threads'
slots; breaker trial)."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions

BODY = """kernel g(a: T[M, K] view, b: f32[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for k in 0..K { acc += a[i, k] * b[k, j]; }
    c[i, j] = acc;
}"""
# (attributes, operand type of a, (M, K, N))
CASES = [
    ("@tile(64, 64, 1)", "f32", (65, 2, 65)),
    ("@tile(64, 64, 1)", "f16", (65, 2, 65)),
    ("@tile(64, 64, 2)", "f32", (65, 3, 65)),
    ("@block(1024) @tile(64, 32, 16)", "f32", (70, 17, 33)),
    ("@tile(16, 256, 8)", "f32", (37, 21, 300)),
]
BUILDS = {"sm_75": dict(arch="sm_75"), "plain": dict(arch="sm_90", async_copy=False),
          "cp.async": dict(arch="sm_90")}


def _module(src: str, **kw) -> Module:
    return Module(Compilation(src, "t.kern", CompileOptions(**kw), use_cache=False), choose_tile=False)


@pytest.mark.parametrize("attrs, T, shape", CASES)
def test_partial_rounds_of_staging_are_bitwise_the_untiled_kernel(attrs, T, shape):
    M, K, N = shape
    src = attrs + "\n" + BODY.replace("T[", T + "[")
    rng = np.random.default_rng(M + K + N)
    a = rng.standard_normal((M, K)).astype(np.float16 if T == "f16" else np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    want = np.full((M, N), 7, np.float32)
    _module(src, tile=False).g(a, b, want)
    for name, kw in BUILDS.items():
        mod = _module(src, **kw)
        assert mod._compilation.signatures["g"].tiles, name  # the tiled build ran
        got = np.full((M, N), 7, np.float32)
        mod.g(a, b, got)
        np.testing.assert_array_equal(got, want, err_msg=name)
