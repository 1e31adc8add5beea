"""Contractions whose per-item code before the loop reads views (``let acc = c[i, j];``, C += A@B),
and loops that read one element more than once (one staged tile for it, named once).
kern-tile-contractions clones the read per item under its guard (bitwise the untiled result),
kern-mma-contractions / kern-wgmma-contractions sum the fragments from 0 and add the item's start in
the epilogue (i8: exact); the remarks say so."""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions

ACC_F32 = """
kernel g(a: f32[M, K] view, b: f32[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = c[i, j];
    for k in 0..K { acc += a[i, k] * b[k, j]; }
    c[i, j] = acc;
}
"""
ACC_F16 = ACC_F32.replace("a: f32", "a: f16").replace("b: f32", "b: f16")
ACC_I8 = """
kernel g(a: i8[M, K] view, b: i8[K, N] view, c: i32[M, N] view) over (i, j) in (M, N) {
    let acc = c[i, j];
    for k in 0..K { acc += i32(a[i, k]) * i32(b[k, j]); }
    c[i, j] = acc;
}
"""


def _module(src, remarks=False, **kw):
    return Module(Compilation(src, "t.kern", CompileOptions(remarks=remarks, **kw), use_cache=False),
                  choose_tile=False)


@pytest.fixture(scope="module")
def f32_pair():
    return _module(ACC_F32), _module(ACC_F32, tile=False)


def _bits(x):
    return np.ascontiguousarray(x).view(np.uint32)


@pytest.mark.parametrize("M, K, N", [(1, 1, 1), (67, 33, 70), (5, 0, 9)])
def test_accumulate_into_c_is_tiled_and_bitwise_untiled(f32_pair, M, K, N):
    tiled, untiled = f32_pair
    assert tiled._compilation.signatures["g"].tiles == [["M", 64], ["N", 64]]
    rng = np.random.default_rng(M + K + N)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    outs = []
    for mod in (tiled, untiled):
        c = c0.copy()
        mod.g(a, b, c)
        outs.append(c)
    np.testing.assert_array_equal(_bits(outs[0]), _bits(outs[1]))
    np.testing.assert_allclose(outs[0], c0 + a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_remarks_say_the_start_is_the_items_own(capsys):
    _module(ACC_F32, remarks=True)
    err = capsys.readouterr().err
    assert "remark: tiling 'g' as 64x64x16 per block" in err, err
    _module(ACC_F16, remarks=True, arch="sm_80")
    err = capsys.readouterr().err
    assert "'g' on tensor cores:" in err and "each item's own start (its value before the loop) is added after them" in err, err


def test_a_store_before_the_loop_is_declined_in_plain_words(capsys):
    src = ACC_F32.replace("let acc = c[i, j];", "c[i, j] = 0.0;\n    let acc = 0.0;")
    _module(src, remarks=True)
    err = capsys.readouterr().err
    assert "not tiling 'g': the code before its loop does more than arithmetic and view reads" in err, err


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_accumulate_into_c_on_tensor_cores(arch):
    M, K, N = 130, 33, 70
    rng = np.random.default_rng(2)
    mod = kernc.compile(ACC_F16, arch=arch)
    ptx_op = "wgmma.mma_async" if arch == "sm_90a" else "mma.sync.aligned"
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    c = c0.copy()
    mod.g(a, b, c)
    np.testing.assert_allclose(c, c0 + a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-4)
    assert mod._compilation.signatures["g"].tiles[0][1] == 128  # the tensor-core tiles
    assert ptx_op in mod.ptx
    modi = kernc.compile(ACC_I8, arch=arch)
    ai = rng.integers(-128, 128, (M, K)).astype(np.int8)
    bi = rng.integers(-128, 128, (K, N)).astype(np.int8)
    c0 = rng.integers(-10**6, 10**6, (M, N)).astype(np.int32)
    c = c0.copy()
    modi.g(ai, bi, c)
    np.testing.assert_array_equal(c, c0 + ai.astype(np.int64) @ bi.astype(np.int64))  # exact
    assert modi._compilation.signatures["g"].tiles == [["M", 128], ["N", 128]]
    assert ptx_op in modi.ptx  # (sm_90a: wgmma .s32.s8.s8, the start added in the epilogue)


SQUARES = """
kernel g(a: f32[M, K] view, b: f32[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    let acc2 = 0.0;
    for k in 0..K { acc += a[i, k] * b[k, j]; acc2 += a[i, k] * a[i, k]; }
    c[i, j] = acc + acc2;
}
"""


def test_repeated_reads_share_one_staged_tile_named_once(capsys):
    """``a[i, k]`` read three times in the body: one workgroup tile of a (not three), the remark
    names it once, and the result is bitwise the untiled one."""
    tiled = _module(SQUARES, remarks=True)
    err = capsys.readouterr().err
    tiles = err.split("through workgroup memory (")[1].split(")")[0]
    assert tiles.count("a: 16x64 of 'i'") == 1 and tiles.count("b: 16x64 of 'j'") == 1, tiles
    gpu_ir = str(tiled.ir("gpu"))
    head = gpu_ir.split("workgroup(")[1].split("kernel attributes")[0]
    assert head.count("address_space<workgroup>") == 2, head  # a's tile and b's
    untiled = _module(SQUARES, tile=False)
    rng = np.random.default_rng(4)
    M, K, N = 67, 21, 66
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    outs = []
    for mod in (tiled, untiled):
        c = np.zeros((M, N), np.float32)
        mod.g(a, b, c)
        outs.append(c)
    np.testing.assert_array_equal(_bits(outs[0]), _bits(outs[1]))
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(outs[0], a64 @ b + (a64 * a64).sum(1)[:, None], rtol=1e-5, atol=1e-5)
