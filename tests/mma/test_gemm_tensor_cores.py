"""``kern-mma-contractions`` end to end: the f16/bf16 gemm examples on the CPU interpreter's
``mma.sync`` against numpy (f64, and the interpreter's documented f32 order bit for bit), the
fallbacks and their remarks, ``--no-tensor-cores``, and the PTX through ``ptxas``."""

from __future__ import annotations

import re
import os

import numpy as np
import pytest

import kernc
from kernc.backend import toolkit
from kernc.backend.interpreter import nvgpu
from conftest import EXAMPLES, compiled_example, example_reference
from tensor_core_helpers import (BATCHED_TRANSPOSED_GEMM, assert_within_f64, check_batched_transposed_gemm,
                                 check_gemm_example, gemm_dtype, gemm_f16_gpu_ir, gemm_inputs, run_gemm_f16_ir)

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")

# (M, K, N): odd sizes, edges in every coordinate, more than one 128x128 tile and 32-wide k chunk
SHAPES = [(1, 1, 1), (15, 17, 33), (33, 100, 17), (130, 15, 100), (17, 33, 257)]


@pytest.mark.parametrize("name", ["gemm_f16", "gemm_bf16"])
@pytest.mark.parametrize("M, K, N", SHAPES)
def test_gemm_on_tensor_cores_matches_numpy(name, M, K, N):
    mod = compiled_example(name)
    sig = mod._compilation.signatures[name]
    assert sig.tiles == [["M", 128], ["N", 128]]  # the tensor-core tiles
    check_gemm_example(mod, name, M, K, N)


def test_tensor_cores_off_gives_the_cuda_core_tiles_and_the_same_sums():
    path = os.path.join(EXAMPLES, "gemm_f16.kern")
    off = kernc.compile_file(path, tensor_cores=False)
    assert "nvgpu" not in off._compilation.gpu_ir()
    assert off._compilation.signatures["gemm_f16"].tiles == [["M", 64], ["N", 64]]
    a, b = gemm_inputs(33, 40, 70, np.float16)
    c_on, c_off = (np.zeros((33, 70), np.float32) for _ in range(2))
    compiled_example("gemm_f16").gemm_f16(a, b, c_on)
    off.gemm_f16(a, b, c_off)
    np.testing.assert_array_equal(c_on, c_off)  # both sum k ascending in f32 on the CPU


def test_padded_tiles_make_ldmatrix_bank_conflict_free(monkeypatch):
    """The 8-element row padding is what keeps ldmatrix conflict free: padded, 0 conflicts; with
    PAD = 0 the A rows (64 bytes apart) put 4 of a phase's 8 rows in one 4-bank group (3 conflicts
    per phase, 4 phases per x4, 4 x4 per k16 step) and the B rows (256 bytes apart) all 8 (7 per
    phase, 2 phases per x2, 4 x2): 104 per warp and k16 step, 4 steps of K = 64, 8 warps: 3328."""
    from kernc.api import Module
    from kernc.compiler import Compilation, CompileOptions
    from kernc.passes import mma_contractions

    text = open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read()
    a, b = gemm_inputs(64, 64, 64, np.float16)
    c = np.zeros((64, 64), np.float32)
    padded = compiled_example("gemm_f16").gemm_f16(a, b, c).stats
    assert padded.shared_bank_conflicts == 0 and padded.shared_requests > 0
    monkeypatch.setattr(mma_contractions, "PAD", 0)
    mod = Module(Compilation(text, "unpadded.kern", CompileOptions(), use_cache=False))
    assert "memref<4096xf16" in mod._compilation.gpu_ir()  # a: 128 x 32, no padding
    unpadded = mod.gemm_f16(a, b, c).stats
    assert unpadded.shared_bank_conflicts == 3328
    np.testing.assert_array_equal(c, example_reference("gemm_f16").gemm_f32_sums(a, b))


def test_a_wrong_fragment_layout_is_a_wrong_cpu_result(monkeypatch):
    """The interpreter takes the ISA's mapping seriously: with a0..a7's rows and columns swapped
    (the A fragment read as its transpose) the gemm is wrong."""
    good = nvgpu.a_position
    monkeypatch.setattr(nvgpu, "a_position", lambda i: good(i)[::-1])
    mod = kernc.compile_file(os.path.join(EXAMPLES, "gemm_f16.kern"))  # a fresh interpreter
    a, b = gemm_inputs(20, 16, 9, np.float16)
    c = np.zeros((20, 9), np.float32)
    mod.gemm_f16(a, b, c)
    assert not np.allclose(c, example_reference("gemm_f16").gemm_f64(a, b), rtol=1e-2, atol=1e-2)


def test_batched_gemm_with_a_transposed_operand():
    mod = kernc.compile(BATCHED_TRANSPOSED_GEMM)
    assert "nvgpu.mma.sync" in mod._compilation.gpu_ir()
    check_batched_transposed_gemm(mod, 3)


def _remarks(text, capsys, **kw):
    from kernc.compiler import Compilation, CompileOptions

    Compilation(text, "t.kern", CompileOptions(remarks=True, **kw), use_cache=False)
    return capsys.readouterr().err


def test_f32_operands_stay_on_cuda_cores_with_a_remark(capsys):
    text = open(os.path.join(EXAMPLES, "gemm.kern"), encoding="utf-8").read()
    err = _remarks(text, capsys)
    assert "not using tensor cores for 'gemm': its operands are f32: tensor cores would round them to TF32" in err
    assert "tiling 'gemm' as 64x64x16" in err
    assert "mma" not in kernc.compile(text).ptx


def test_sm_75_has_no_tensor_core_path(capsys):
    text = open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read()
    err = _remarks(text, capsys, arch="sm_75")
    assert "not using tensor cores for 'gemm_f16': sm_75 has no mma.sync m16n8k16 for f16 operands" in err
    assert "contractions are not run on tensor cores" not in err  # (no unlocated duplicate)
    assert "tiling 'gemm_f16' as 64x64x16" in err
    # the gpu IR's cache key tells them apart: the same source for sm_90, then sm_75
    assert "mma.sync" in kernc.compile(text, arch="sm_90").ptx
    assert "mma.sync" not in kernc.compile(text, arch="sm_75").ptx


def test_other_loop_bodies_fall_back_with_a_remark(capsys):
    text = """
kernel g(a: f16[M, K] view, b: f16[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for k in 0..K { acc += a[i, k] * b[k, j] + 1.0; }
    c[i, j] = acc;
}
"""
    err = _remarks(text, capsys)
    assert "not using tensor cores for 'g': its loop body is not 'acc += a * b'" in err
    mod = kernc.compile(text)
    a, b = gemm_inputs(5, 3, 4, np.float16)
    c = np.zeros((5, 4), np.float32)
    mod.g(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64) + 3, rtol=1e-5)


@pytest.mark.parametrize("block, tiles", [(32, [["M", 64], ["N", 32]]), (128, [["M", 128], ["N", 64]]),
                                          (512, [["M", 64], ["N", 64]])])
def test_block_sizes(block, tiles, capsys):
    """The warp grid follows @block: 1 warp computes 64x32, 4 warps 2x2 of them; 512 threads (too
    few registers each) stay on CUDA cores, with a remark."""
    text = open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read()
    text = text.replace("kernel gemm_f16", f"@block({block}) kernel gemm_f16")
    err = _remarks(text, capsys)
    mod = kernc.compile(text)
    assert mod._compilation.signatures["gemm_f16"].tiles == tiles
    if block == 512:
        assert "not using tensor cores for 'gemm_f16': its block of" in err
    a, b = gemm_inputs(70, 35, 41, np.float16)
    c = np.zeros((70, 41), np.float32)
    mod.gemm_f16(a, b, c)
    np.testing.assert_array_equal(c, example_reference("gemm_f16").gemm_f32_sums(a, b))


def test_tensor_cores_option_must_be_a_bool():
    with pytest.raises(ValueError, match="tensor_cores must be True or False"):
        kernc.compile("kernel k(x: f32[n] write) over n { x = 1.0; }", tensor_cores="no")


def test_cli_no_tensor_cores(tmp_path, capsys):
    from kernc.cli import main

    src = os.path.join(EXAMPLES, "gemm_f16.kern")
    assert main(["compile", src, "--emit", "ptx", "--no-tensor-cores"]) == 0
    assert "mma.sync" not in capsys.readouterr().out
    assert main(["compile", src, "--emit", "ptx", "--arch", "sm_80"]) == 0
    assert "mma.sync.aligned.m16n8k16" in capsys.readouterr().out
    np.save(tmp_path / "a.npy", np.ones((3, 5), np.float16))
    np.save(tmp_path / "b.npy", np.ones((5, 2), np.float16))
    np.save(tmp_path / "c.npy", np.zeros((3, 2), np.float32))
    for flag in ([], ["--no-tensor-cores"]):
        assert main(["run", src, *flag, "--input", f"a=@{tmp_path / 'a.npy'}", "--input", f"b=@{tmp_path / 'b.npy'}",
                     "--input", f"c=@{tmp_path / 'c.npy'}", "--output-dir", str(tmp_path)]) == 0
        np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), np.full((3, 2), 5, np.float32))


@needs_ptxas
@pytest.mark.parametrize("name", ["gemm_f16", "gemm_bf16"])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a"])
def test_ptx_has_mma_and_ldmatrix_and_assembles_without_spills(name, arch):
    # wgmma=False: on sm_90a kern-wgmma-contractions would take the gemm first (tests/wgmma)
    mod = kernc.compile_file(os.path.join(EXAMPLES, f"{name}.kern"), arch=arch, wgmma=False)
    ptx = mod.ptx
    t = "f16" if name == "gemm_f16" else "bf16"
    assert ptx.count(f"mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32") == 32
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == 8
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16") == 8
    result = toolkit.run_ptxas(ptx, arch=arch)
    assert result.ok, result.log
    assert result.spills[name] == (0, 0), result.log
    assert result.registers[name] <= 255


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["gemm_f16"])  # (bf16 CuPy arrays: tests/gpu/test_cuda.py's example run)
@pytest.mark.parametrize("M, K, N", [(1, 1, 1), (130, 15, 100), (257, 300, 129)])
def test_gemm_on_gpu_tensor_cores_matches_numpy(name, M, K, N):
    """The same semantics on a GPU's tensor cores (CPU: test_gemm_on_tensor_cores_matches_numpy):
    within 1e-3 relative (scaled by sqrt(K)) of the f64 product."""
    import cupy as cp

    mod = compiled_example(name)
    assert "mma.sync.aligned.m16n8k16" in mod.ptx
    a, b = gemm_inputs(M, K, N, gemm_dtype(name))
    c = cp.full((M, N), np.nan, np.float32)
    result = getattr(mod, name)(cp.asarray(a), cp.asarray(b), c)
    cp.cuda.runtime.deviceSynchronize()
    assert result.device == "cuda"
    assert_within_f64(c.get(), a, b)


def _race_ops(msg: str, text: str) -> list[str]:
    """The lines of ``text`` (gpu IR parsed without debug info: locations are its lines) that a race
    report names."""
    lines = text.split("\n")
    return [lines[int(n) - 1].strip() for n in re.findall(r'loc\("-":(\d+):\d+\)', msg)]


@pytest.fixture(scope="module")
def sm80_gemm_f16_ir() -> str:
    return gemm_f16_gpu_ir(arch="sm_80")


def test_missing_barriers_around_ldmatrix_are_reported_races(sm80_gemm_f16_ir):
    """The tiles nvgpu.ldmatrix reads are workgroup memory other threads stored: deleting the barrier
    before the ldmatrix reads (read after write) or the one before the next chunk's stores (write
    after read) is a reported race naming the store and the ldmatrix."""
    from kernc.support.errors import KerncRuntimeError

    text = sm80_gemm_f16_ir
    at = [m.start() for m in re.finditer(r"\n *gpu\.barrier", text)]
    assert len(at) == 2 and "nvgpu.ldmatrix" in text
    a, b, c = run_gemm_f16_ir(text, 64, 64, 64)  # as compiled: no race, right sums
    assert_within_f64(c, a, b)
    for i in at + [None]:
        bad = text.replace("gpu.barrier", "") if i is None else text[:i] + text[text.index("\n", i + 1):]
        with pytest.raises(KerncRuntimeError, match=r"no gpu\.barrier between them") as err:
            run_gemm_f16_ir(bad, 64, 64, 64)
        ops = _race_ops(str(err.value), bad)
        assert len(ops) == 2 and any("nvgpu.ldmatrix" in x for x in ops), (str(err.value), ops)
        assert any("memref.store" in x or "device_async" in x for x in ops), ops
