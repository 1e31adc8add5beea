"""The launcher chooses between the tiled build of a contraction and its untiled build by problem
size (``launch_policy.run_tiled``, ``Variant.tiled``, ``LaunchResult.tiled``), on the CPU
interpreter as on the GPU: a problem smaller than one block tile runs the untiled kernel; ``@tile``
forces the tiled one; the compile remark says so."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kernc
from kernc.backend import launch_policy
from conftest import EXAMPLES

GEMM = open(os.path.join(EXAMPLES, "gemm.kern")).read()


@pytest.fixture(scope="module")
def gemm():
    return kernc.compile(GEMM, filename="t.kern"), kernc.compile(GEMM, filename="t.kern", tile=False)


def _run(mod, M, K, N):
    rng = np.random.default_rng(M * N + K)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    return c, mod.gemm(a, b, c)


@pytest.mark.parametrize("shape, tiled", [((33, 17, 65), False), ((1, 300, 1), False), ((63, 5, 65), False),
                                          ((64, 16, 64), True), ((65, 3, 130), True)])
def test_small_problems_run_the_untiled_build(gemm, shape, tiled):
    c, r = _run(gemm[0], *shape)
    u, ru = _run(gemm[1], *shape)
    assert r.tiled is tiled and ru.tiled is None
    np.testing.assert_array_equal(c.view(np.int32), u.view(np.int32))
    if not tiled:  # the untiled kernel itself ran: its grid and its counters
        assert r.grid == ru.grid and r.stats.to_dict() == ru.stats.to_dict()
    else:
        assert r.stats.shared_requests > 0 and r.grid == -(-shape[0] // 64) * -(-shape[2] // 64)


def test_tile_attribute_forces_the_tiled_kernel(capsys):
    src = "@tile(32, 32, 16)\n" + GEMM.split("\n", 7)[7]
    mod = kernc.compile(src, filename="t.kern")
    c, r = _run(mod, 20, 9, 7)
    assert r.tiled is True and r.stats.shared_requests > 0
    sig = mod._compilation.signatures["gemm"]
    assert sig.contraction == {"tile": [32, 32, 16], "forced": True}
    assert launch_policy.run_tiled(sig, 20 * 7, {"M": 20, "N": 7, "K": 9})


def test_remark_explains_the_choice(capsys):
    from kernc.api import Module
    from kernc.compiler import Compilation, CompileOptions

    Module(Compilation(GEMM, "t.kern", CompileOptions(remarks=True), use_cache=False))
    err = capsys.readouterr().err
    assert ("every output sums in its original order; a launch of fewer than 64x64 items per batch runs the "
            "untiled build instead (launch_policy.run_tiled: a single block tile would hold all of them)") in err
    Module(Compilation("@tile(64, 64, 16)\n" + GEMM.split("\n", 7)[7], "t.kern", CompileOptions(remarks=True),
                       use_cache=False))
    assert "@tile chose it, every launch runs it" in capsys.readouterr().err


def test_run_tiled_per_batch_plane():
    """The plane is the tiled extents' product (a batched kernel: per batch), so a batch of many
    small products runs untiled; kernels the pass did not tile always run as compiled."""
    bsrc = ("kernel bmm(a: f32[Z, M, K] view, b: f32[Z, K, N] view, c: f32[Z, M, N] view) over (z, i, j) in "
            "(Z, M, N) {\n    let acc = 0.0;\n    for k in 0..K { acc += a[z, i, k] * b[z, k, j]; }\n"
            "    c[z, i, j] = acc;\n}\n")
    sig = kernc.compile(bsrc, filename="t.kern")._compilation.signatures["bmm"]
    assert sig.tiles == [["M", 64], ["N", 64]]
    assert not launch_policy.run_tiled(sig, 100 * 32 * 32, {"Z": 100, "M": 32, "N": 32, "K": 8})
    assert launch_policy.run_tiled(sig, 2 * 64 * 64, {"Z": 2, "M": 64, "N": 64, "K": 8})
    assert launch_policy.run_tiled(sig, 0, {"Z": 0, "M": 64, "N": 64, "K": 8})  # (nothing runs)
    saxpy = kernc.compile_file(os.path.join(EXAMPLES, "saxpy.kern"))._compilation.signatures["saxpy"]
    assert saxpy.contraction is None and launch_policy.run_tiled(saxpy, 10, {"n": 10})
