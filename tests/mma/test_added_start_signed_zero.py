"""Regression: a tensor-core contraction that starts from the item's own value (``let acc = c[i, j];``,
kern-mma/wgmma-contractions' ``added`` case) summed its fragments from ``+0.0`` and added the start
after: with a start of ``-0.0`` and products that are all ``-0.0`` (``0 * -1``) the loop gives
``-0.0`` (``-0.0 + -0.0``) and the tensor cores gave ``+0.0`` (``-0.0 + (+0.0 + -0.0)``). The
fragments now start from ``-0.0``, the identity of float addition (``acc0 + (-0.0 + s) == acc0 + s``
bitwise for every ``s``, and a sum of only ``-0.0`` terms stays ``-0.0``), on both tensor-core
passes. Past K (a k chunk's tail) the tiles' pads were +0.0 on both sides, whose products (+0.0)
turned an all-zero sum into +0.0 too (breaker trial: mma.sync at K = 1, 8, 16, 24, 48, 200, wgmma
at every K not a multiple of 64): the (k, j) tile is now padded with -0.0 (``pad_value``)."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions

SRC = """kernel g(a: f16[M, K] view, b: f16[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = c[i, j];
    for k in 0..K { acc += a[i, k] * b[k, j]; }
    c[i, j] = acc;
}"""

BUILDS = {"mma.sync": dict(arch="sm_90"), "wgmma": dict(arch="sm_90a"), "tma": dict(arch="sm_90a", tma=True),
          None: dict(arch="sm_90", tensor_cores=False)}


@pytest.fixture(scope="module")
def modules():
    return {k: Module(Compilation(SRC, "z.kern", CompileOptions(**o), use_cache=False), choose_tile=False)
            for k, o in BUILDS.items()}


@pytest.mark.parametrize("start", [-0.0, 0.0, 1.5])
@pytest.mark.parametrize("build", ["mma.sync", "wgmma"])
def test_signed_zero_of_products_and_start_is_the_loops(modules, build, start):
    M, K, N = 17, 128, 9  # (K: whole k chunks of mma.sync (32) and wgmma (64))
    a = np.zeros((M, K), np.float16)  # (+0.0 * -1.0: every product -0.0 ...)
    b = np.full((K, N), -1.0, np.float16)
    a[5, 7], b[7, 2] = -2.0, -0.5  # (... but those of row 5's k = 7: 2.0, and 1.0 for item (5, 2))
    got, want = np.full((M, N), start, np.float32), np.full((M, N), start, np.float32)
    res = modules[build].g(a, b, got)
    assert res.tensor_cores == build
    modules[None].g(a, b, want)
    expect = np.full((M, N), start, np.float32)  # (start + only -0.0 terms: start, its sign kept)
    expect[5] = start + 2.0
    expect[5, 2] = start + 1.0
    np.testing.assert_array_equal(want.view(np.uint32), expect.view(np.uint32))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("K", [1, 8, 17, 40, 96, 200])
def test_past_k_the_pads_add_nothing(modules, K):
    """K not a whole number of k chunks (mma.sync 32, wgmma 64): the chunk's tail multiplies the
    A pad (+0.0) by the B pad (-0.0), -0.0, so a sum of only -0.0 products onto -0.0 stays -0.0.
    Under --tma (regression: b, n-contiguous, came by MN-major boxes, whose fill is +0.0, and every
    such sum ended +0.0 at N = 8) a loop that may start from -0.0 keeps b on the stores."""
    M, N = 3, 8
    a, b = np.zeros((M, K), np.float16), np.full((K, N), -1.0, np.float16)
    a[1, 0] = 1.0
    for build in ("mma.sync", "wgmma", "tma"):
        got = np.full((M, N), -0.0, np.float32)
        ran = modules[build].g(a, b, got)
        assert ran.tensor_cores == {"tma": "wgmma"}.get(build, build)
        if build == "tma":
            assert ran.tma is (K % 8 == 0)  # (a's rows a multiple of 16 bytes: a by TMA)
            assert [p.name for p in modules[build].g.signature.extra] == ["__tma_a"]
        assert (got[1] == -1.0).all()
        assert (got[[0, 2]] == 0).all() and np.signbit(got[[0, 2]]).all()
