"""``kern-wgmma-contractions`` end to end: the f16/bf16 gemm examples compiled for ``sm_90a`` on the
CPU interpreter's ``wgmma`` against numpy (f64 within the issue's tolerance, and the interpreter's
documented f32 order bit for bit), the async errors on the pass's own IR with its wait removed or
weakened, the other targets and ``wgmma=False`` (``mma.sync``, with the remark), a transposed batch,
and the PTX through ``ptxas -arch=sm_90a``."""

from __future__ import annotations

import re
import os

import numpy as np
import pytest

import kernc
from kernc.backend import toolkit
from kernc.backend.interpreter import wgmma
from kernc.compiler import Compilation, CompileOptions
from kernc.support.errors import KerncRuntimeError
from conftest import EXAMPLES, example_reference
from tensor_core_helpers import (BATCHED_TRANSPOSED_GEMM, assert_within_f64, check_batched_transposed_gemm,
                                 check_gemm_example, compiled_sm90a, gemm_f16_gpu_ir, gemm_inputs, narrow_block_n,
                                 run_gemm_f16_ir)

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")

# (M, K, N): odd sizes, edges everywhere, more than one 128x128 tile and more than one 64-wide k chunk
SHAPES = [(1, 1, 1), (15, 17, 33), (33, 100, 17), (130, 15, 100), (17, 70, 257)]


@pytest.mark.parametrize("name", ["gemm_f16", "gemm_bf16"])
@pytest.mark.parametrize("M, K, N", SHAPES)
def test_gemm_on_wgmma_matches_numpy(name, M, K, N):
    mod = compiled_sm90a(name)
    gpu_ir = mod._compilation.gpu_ir()
    assert "nvvm.wgmma.mma_async" in gpu_ir and "nvgpu.mma.sync" not in gpu_ir
    assert mod._compilation.signatures[name].tiles == [["M", 128], ["N", 128]]
    check_gemm_example(mod, name, M, K, N)


def _gpu_text(**kw) -> str:
    return gemm_f16_gpu_ir(arch="sm_90a", **kw)


WAIT = "nvvm.wgmma.wait.group.sync.aligned 0"


def test_the_pass_ir_runs_and_its_wait_matters():
    text = _gpu_text()
    assert text.count(WAIT) == 1
    a, b, c = run_gemm_f16_ir(text, 20, 70, 24)  # as compiled: right
    np.testing.assert_array_equal(c, example_reference("gemm_f16").gemm_f32_sums(a, b))
    # no wait: the epilogue reads the accumulators of a pending wgmma
    with pytest.raises(KerncRuntimeError, match=r"reads the accumulators of the wgmma\.mma_async at "
                                                r"loc\(.*\) before a wgmma\.wait_group"):
        run_gemm_f16_ir(text.replace(WAIT, ""), 20, 70, 24)
    # wait_group 1: the second k chunk's stores overwrite the tiles the first chunk's wgmma reads
    with pytest.raises(KerncRuntimeError, match="overwritten before the wgmma.wait_group"):
        run_gemm_f16_ir(text.replace(WAIT, WAIT[:-1] + "1"), 20, 70, 24)


def test_missing_barriers_around_the_wgmma_tiles_are_reported_races():
    """wgmma.mma_async reads its A and B tiles as every thread of the warpgroup: deleting the barrier
    between the tile stores and the wgmma (read after write: stores by other warps) or the one before
    the next chunk's stores (write after read) is a reported race naming the store and the wgmma."""
    text = _gpu_text()
    at = [m.start() for m in re.finditer(r"\n *gpu\.barrier", text)]
    assert len(at) == 2
    lines = None
    for i in at + [None]:
        bad = text.replace("gpu.barrier", "") if i is None else text[:i] + text[text.index("\n", i + 1):]
        with pytest.raises(KerncRuntimeError, match=r"no gpu\.barrier between them") as err:
            run_gemm_f16_ir(bad, 20, 70, 24)
        lines = bad.split("\n")
        ops = [lines[int(n) - 1] for n in re.findall(r'loc\("-":(\d+):\d+\)', str(err.value))]
        assert len(ops) == 2 and any("nvvm.wgmma.mma_async" in x for x in ops), (str(err.value), ops)
        assert any("memref.store" in x for x in ops), ops


def test_a_wrong_fragment_layout_is_a_wrong_cpu_result(monkeypatch):
    good = wgmma.d_position
    monkeypatch.setattr(wgmma, "d_position", lambda i: good(i ^ 2))  # rows g and g + 8 swapped
    a, b, c = run_gemm_f16_ir(_gpu_text(), 20, 16, 9)
    assert not np.allclose(c, example_reference("gemm_f16").gemm_f64(a, b), rtol=1e-2, atol=1e-2)


def _remarks(capsys, **kw):
    text = open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read()
    comp = Compilation(text, "t.kern", CompileOptions(remarks=True, **kw), use_cache=False)
    return comp.gpu_ir(), capsys.readouterr().err


def test_other_targets_and_no_wgmma_keep_mma_sync_with_a_remark(capsys):
    gpu_ir, err = _remarks(capsys, arch="sm_90a")
    assert "on sm_90a warpgroup tensor cores: 128x128 block tiles in chunks of 64" in err
    assert "wgmma.mma_async m64n128k16 (f16 products, f32 sums)" in err
    for arch in ("sm_90", "sm_80"):
        gpu_ir, err = _remarks(capsys, arch=arch)
        assert "nvvm.wgmma" not in gpu_ir and "nvgpu.mma.sync" in gpu_ir
        assert f"not using wgmma for 'gemm_f16': {arch} has no wgmma (an sm_90a feature" in err
    gpu_ir, err = _remarks(capsys, arch="sm_90a", wgmma=False)
    assert "nvvm.wgmma" not in gpu_ir and "nvgpu.mma.sync" in gpu_ir
    assert "kern-wgmma-contractions is off (--no-wgmma)" in err
    gpu_ir, err = _remarks(capsys, arch="sm_90a", tensor_cores=False)
    assert "nvvm.wgmma" not in gpu_ir and "nvgpu" not in gpu_ir


def test_the_cache_key_tells_sm_90a_from_sm_90():
    from kernc.backend import cache

    assert cache.option_includes(wgmma=True) != cache.option_includes()
    assert cache.option_includes(wgmma=False) == ()


def test_batched_gemm_with_a_transposed_operand():
    mod = kernc.compile(BATCHED_TRANSPOSED_GEMM, arch="sm_90a")
    assert "nvvm.wgmma.mma_async" in mod._compilation.gpu_ir()
    check_batched_transposed_gemm(mod, 2)


@needs_ptxas
@pytest.mark.parametrize("name", ["gemm_f16", "gemm_bf16"])
def test_ptxas_accepts_the_wgmma_ptx_for_sm_90a_without_spills(name):
    ptx = compiled_sm90a(name).ptx
    elem = "f16" if name == "gemm_f16" else "bf16"
    assert f"wgmma.mma_async.sync.aligned.m64n128k16.f32.{elem}.{elem}" in ptx
    assert "wgmma.fence.sync.aligned" in ptx and "wgmma.commit_group.sync.aligned" in ptx
    assert "wgmma.wait_group.sync.aligned" in ptx and "fence.proxy.async.shared::cta" in ptx
    assert ".shared .align 1024" in ptx
    res = toolkit.run_ptxas(ptx, "sm_90a")
    assert res.ok, res.log
    assert res.spills[name] == (0, 0), res.log
    assert res.registers[name] <= 255


@pytest.mark.gpu
@pytest.mark.parametrize("M, K, N", [(1, 1, 1), (130, 15, 100), (257, 300, 129)])
def test_gemm_on_a_hopper_gpu_matches_numpy(M, K, N):
    """The same semantics on an sm_90 GPU's wgmma (CPU: test_gemm_on_wgmma_matches_numpy): within
    1e-3 relative (scaled by sqrt(K)) of the f64 product; skipped on other GPUs (sm_90a code)."""
    import cupy as cp

    if cp.cuda.Device().compute_capability != "90":
        pytest.skip("sm_90a code needs a compute capability 9.0 GPU")
    mod = compiled_sm90a("gemm_f16")
    assert "wgmma.mma_async" in mod.ptx
    a, b = gemm_inputs(M, K, N, np.float16)
    c = cp.full((M, N), np.nan, np.float32)
    result = mod.gemm_f16(cp.asarray(a), cp.asarray(b), c)
    cp.cuda.runtime.deviceSynchronize()
    assert result.device == "cuda"
    assert_within_f64(c.get(), a, b)


def test_wgmma_must_be_a_bool():
    with pytest.raises(ValueError, match="wgmma must be True or False"):
        kernc.compile("kernel k(x: f32[n] read, y: f32[n] write) over n { y = x; }", wgmma="yes")


@pytest.mark.parametrize("block_n", [64, 16])
def test_other_instruction_widths(monkeypatch, block_n):
    """block_n (the N of m64nNk16) 64 and 16: other tiles, other D fragments, the same sums."""
    from kernc.api import Module

    narrow_block_n(monkeypatch, block_n)
    text = open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read()
    mod = Module(Compilation(text, "narrow.kern", CompileOptions(arch="sm_90a"), use_cache=False))
    assert f"<m = 64, n = {block_n}, k = 16>" in mod._compilation.gpu_ir()
    assert mod._compilation.signatures["gemm_f16"].tiles == [["M", 128], ["N", block_n]]
    a, b = gemm_inputs(70, 80, 90, np.float16)
    c = np.full((70, 90), np.nan, np.float32)
    assert mod.gemm_f16(a, b, c).grid == -(-90 // block_n)
    np.testing.assert_array_equal(c, example_reference("gemm_f16").gemm_f32_sums(a, b))
    assert toolkit.ptxas_path() is None or toolkit.run_ptxas(mod.ptx, "sm_90a").spills["gemm_f16"] == (0, 0)


@pytest.mark.parametrize("name", ["gemm_i8", "gemm_tf32"])
def test_tf32_gemms_on_sm_90a_take_mma_sync_with_a_remark_and_i8_ones_wgmma(capsys, name):
    """kern-wgmma-contractions builds f16/bf16/i8/u8: the @tf32 kind kern-mma-contractions matches
    goes to its mma.sync (regression: the wgmma pass took it as f16 and failed), the i8 one to
    wgmma (tests/wgmma/test_wgmma_int8.py), each with the same result as on sm_90."""
    text = open(os.path.join(EXAMPLES, f"{name}.kern"), encoding="utf-8").read()
    comp = Compilation(text, "t.kern", CompileOptions(remarks=True, arch="sm_90a"), use_cache=False)
    gpu_ir, err = comp.gpu_ir(), capsys.readouterr().err
    if name == "gemm_tf32":
        assert "nvvm.wgmma" not in gpu_ir and "nvgpu.mma.sync" in gpu_ir
        assert (f"not using wgmma for '{name}': its f32 operands take kern-mma-contractions' mma.sync "
                "(wgmma is built here for f16/bf16/i8/u8)") in err, err
    else:
        assert "nvvm.wgmma.mma_async" in gpu_ir and "nvgpu.mma.sync" not in gpu_ir
        assert "not using wgmma" not in err and "m64n128k32 (s8.s8: i8 products, s32 sums)" in err, err
    M, K, N = 19, 40, 23
    rng = np.random.default_rng(3)
    if name == "gemm_i8":
        a = rng.integers(-128, 128, (M, K)).astype(np.int8)
        b = rng.integers(-128, 128, (K, N)).astype(np.int8)
        out = np.int32
    else:
        a, b, out = rng.standard_normal((M, K), np.float32), rng.standard_normal((K, N), np.float32), np.float32
    results = []
    for arch in ("sm_90a", "sm_90"):
        c = np.zeros((M, N), out)
        getattr(kernc.compile_file(os.path.join(EXAMPLES, f"{name}.kern"), arch=arch), name)(a, b, c)
        results.append(c)
    np.testing.assert_array_equal(results[0], results[1])
    if name == "gemm_i8":
        np.testing.assert_array_equal(results[0], a.astype(np.int32) @ b.astype(np.int32))
