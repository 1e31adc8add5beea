"""``kern-mma-contractions`` beyond f16/bf16: i8 contractions with i32 sums on ``mma.sync``
m16n8k32 ``.s8`` (exact: bitwise the CUDA-core result), f32 ones on m16n8k8 ``.tf32`` only under
``@tf32`` (operands rounded as ``cvt.rna.tf32.f32``), and ``@tensor_cores``: tensor cores or a
located error, on the CPU interpreter, through ``ptxas`` and (marked ``gpu``) on a device."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

import kernc
from kernc.backend import toolkit
from kernc.support.errors import CompileError
from conftest import EXAMPLES, compiled_example, example_reference

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")

# (M, K, N): edges in every coordinate, more than one 128x128 tile and one 32-wide k chunk
SHAPES = [(1, 1, 1), (15, 17, 33), (130, 70, 100), (17, 33, 257)]


def _src(name):
    return open(os.path.join(EXAMPLES, f"{name}.kern"), encoding="utf-8").read()


@pytest.fixture(scope="module")
def i8_cuda_cores():
    return kernc.compile(_src("gemm_i8"), tensor_cores=False)


def _i8(M, K, N, seed=0):
    rng = np.random.default_rng(seed + 7 * M + 5 * K + N)
    return rng.integers(-128, 128, (M, K)).astype(np.int8), rng.integers(-128, 128, (K, N)).astype(np.int8)


@pytest.mark.parametrize("M, K, N", SHAPES)
def test_gemm_i8_on_tensor_cores_is_bitwise_the_cuda_core_result(M, K, N, i8_cuda_cores):
    mod = compiled_example("gemm_i8")
    assert "nvgpu.mma.sync" in mod._compilation.gpu_ir()
    assert mod._compilation.signatures["gemm_i8"].tiles == [["M", 128], ["N", 128]]
    assert "nvgpu.mma.sync" not in i8_cuda_cores._compilation.gpu_ir()
    a, b = _i8(M, K, N)
    a[0, :], b[:, 0] = -128, -128  # the largest products
    on, off = (np.full((M, N), -1, np.int32) for _ in range(2))
    result = mod.gemm_i8(a, b, on)
    assert result.grid == -(-M // 128) * -(-N // 128)
    i8_cuda_cores.gemm_i8(a, b, off)
    np.testing.assert_array_equal(on, off)
    np.testing.assert_array_equal(on, example_reference("gemm_i8").gemm_i32(a, b))


def test_gemm_i8_remark_says_exact(capsys):
    err = _remarks(_src("gemm_i8"), capsys)
    assert ("'gemm_i8' on tensor cores: 128x128 block tiles in chunks of 32 of k, 2x4 warps of 64x32 items, "
            "mma.sync m16n8k32 (i8 products, i32 sums) fed by ldmatrix from workgroup tiles of the logical views "
            "(a of 'i': 128x32, k contiguous, ldmatrix.x4; b of 'j': 128x32, k contiguous, ldmatrix.x2 (staged "
            "n-major across its loads along 'j')), rows padded by 16 elements (ldmatrix without bank conflicts; "
            "the staging stores of b conflict 4-way); the sums are exact: bitwise the --no-tensor-cores result "
            "while every 32-wide partial sum stays within i32") in err


def test_i8_ldmatrix_is_bank_conflict_free_the_b_staging_stores_are_not():
    """48-byte rows (32 + 16 bytes of padding): the eight rows of an ldmatrix phase fall in eight
    distinct 16-byte bank groups, for the A tile and the n-major B tile alike: no conflict. The byte
    stores staging b (lanes along n, rows 48 bytes apart: words 12n, 8 distinct banks) conflict
    4-way: 3 per store request, 16 requests per warp and chunk (32x128 bytes over 256 threads), 8
    warps, 2 chunks of K = 64: 768 -- all of them (a's stores run along k: none)."""
    a, b = _i8(64, 64, 64)
    c = np.zeros((64, 64), np.int32)
    stats = compiled_example("gemm_i8").gemm_i8(a, b, c).stats
    assert stats.shared_requests > 0 and stats.shared_bank_conflicts == 3 * 16 * 8 * 2


def _remarks(text, capsys, **kw):
    from kernc.compiler import Compilation, CompileOptions

    Compilation(text, "t.kern", CompileOptions(remarks=True, **kw), use_cache=False)
    return capsys.readouterr().err


# u8 operands run on .u8 tensor cores (tests/mma/test_gemm_u8.py); one u8 and one i8 operand do not
MIXED = _src("gemm_i8").replace("a: i8[", "a: u8[")


def test_i8_on_sm_75_falls_back_with_a_remark(capsys):
    err = _remarks(_src("gemm_i8"), capsys, arch="sm_75")
    # one remark, at the loop (not also an unlocated one for the whole file)
    assert "contractions are not run on tensor cores" not in err and err.count("not using tensor cores") == 1
    assert "not using tensor cores for 'gemm_i8': sm_75 has no mma.sync m16n8k32 for s8 operands (sm_80 and later)" in err
    assert "mma.sync" not in kernc.compile(_src("gemm_i8"), arch="sm_75").ptx


# ---- TF32 -------------------------------------------------------------------------------------

def test_f32_without_tf32_keeps_the_remark_and_cuda_cores(capsys):
    text = _src("gemm_tf32").replace("@tf32\n", "")
    err = _remarks(text, capsys)
    assert ("not using tensor cores for 'gemm_tf32': its operands are f32: tensor cores would round them to "
            "TF32 (10-bit mantissas), which is never done without asking (@tf32)") in err
    assert "mma" not in kernc.compile(text).ptx


def test_tf32_remark_says_it_was_asked_for(capsys):
    err = _remarks(_src("gemm_tf32"), capsys)
    assert "'gemm_tf32' on tensor cores: 128x128 block tiles in chunks of 32 of k" in err
    assert "mma.sync m16n8k8 (tf32 products, f32 sums)" in err
    assert "f32 operands rounded to TF32 as @tf32 asks (cvt.rna.tf32.f32: 10-bit mantissas, to nearest, ties away)" in err


@pytest.mark.parametrize("M, K, N", SHAPES)
def test_gemm_tf32_matches_the_rounded_operands(M, K, N):
    """Bitwise the k-ascending f32 sums of the TF32-rounded operands (the interpreter's order), and
    within 1e-3 relative (scaled by sqrt(K)) of their f64 product; not the unrounded f32 result."""
    ref = example_reference("gemm_tf32")
    rng = np.random.default_rng(M + K + N)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    mod = compiled_example("gemm_tf32")
    assert mod._compilation.signatures["gemm_tf32"].tiles == [["M", 128], ["N", 128]]
    mod.gemm_tf32(a, b, c)
    ra, rb = ref.round_tf32(a), ref.round_tf32(b)
    np.testing.assert_array_equal(c, ref.gemm_f32_sums(ra, rb))
    want = ref.gemm_f64(ra, rb)
    scale = np.abs(ra.astype(np.float64)) @ np.abs(rb.astype(np.float64))
    assert np.all(np.abs(c - want) <= 1e-3 * math.sqrt(K) * np.maximum(scale, 1e-30) / K + 1e-30)
    if K > 1:
        assert not np.array_equal(c, ref.gemm_f32_sums(a, b))  # the rounding did happen


def test_tf32_rounding_is_cvt_rna():
    """K = 1, b = 1: c is a rounded to TF32 -- ties away from zero (both signs), below a tie down,
    above up, a carry into the exponent, overflow to infinity, infinities kept, a NaN quiet."""
    vals = np.array([1 + 2**-11, 1 + 3 * 2**-11, -(1 + 2**-11), 1 + 2**-12, 1 + 2**-11 + 2**-20,
                     2 - 2**-23, 3.4028235e38, np.inf, -np.inf, 1e-40, np.nan], np.float32)
    want = np.array([1 + 2**-10, 1 + 2**-9, -(1 + 2**-10), 1.0, 1 + 2**-10, 2.0, np.inf, np.inf,
                     -np.inf, np.float32(1e-40), np.nan], np.float32)
    want[9] = ((np.float32(1e-40).view(np.uint32) + 0x1000) & 0xFFFFE000).view(np.float32)  # subnormal
    c = np.zeros((len(vals), 1), np.float32)
    compiled_example("gemm_tf32").gemm_tf32(vals[:, None], np.ones((1, 1), np.float32), c)
    np.testing.assert_array_equal(c[:, 0].view(np.uint32)[:-1], want.view(np.uint32)[:-1])
    assert np.isnan(c[-1, 0])


def test_tf32_off_with_no_tensor_cores_is_plain_f32():
    mod = kernc.compile(_src("gemm_tf32"), tensor_cores=False)
    a = np.full((3, 2), 1 + 2**-11, np.float32)
    c = np.zeros((3, 1), np.float32)
    mod.gemm_tf32(a, np.ones((2, 1), np.float32), c)
    np.testing.assert_array_equal(c, np.full((3, 1), 2 * (1 + 2**-11), np.float32))


# ---- @tensor_cores: tensor cores or a located error ---------------------------------------------

FORCED = "@tensor_cores\n" + _src("gemm_f16").split("\n", 8)[-1]  # the kernel, its comment dropped


def test_forced_tensor_cores_compile_where_they_apply():
    mod = kernc.compile(FORCED)
    assert "nvgpu.mma.sync" in mod._compilation.gpu_ir()
    assert mod._compilation.signatures["gemm_f16"].tensor_cores == {"force": ["<string>", 1, 2]}


def _forced_error(text, **kw):
    with pytest.raises(CompileError) as err:
        kernc.compile(text, **kw)
    return str(err.value)


@pytest.mark.parametrize("text, kw, why", [
    (FORCED, {"arch": "sm_75"}, "sm_75 has no mma.sync m16n8k16 for f16 operands (sm_80 and later)"),
    ("@tensor_cores\n" + MIXED.split("\n", 8)[-1], {}, "its operands are u8 and i8, not of one type"),
    ("@tensor_cores\n" + _src("gemm_i8").split("\n", 8)[-1], {"arch": "sm_75"},
     "sm_75 has no mma.sync m16n8k32 for s8 operands"),
    ("@tensor_cores\n" + _src("gemm_tf32").split("\n", 9)[-1].replace("@tf32\n", ""), {},
     "its operands are f32: tensor cores would round them to TF32"),
    (FORCED.replace("acc += a[i, k] * b[k, j];", "acc += a[i, k] * b[k, j] + 1.0;"), {},
     "its loop body is not 'acc += a * b'"),
    (FORCED.replace("@tensor_cores\n", "@tensor_cores @block(512)\n"), {}, "its block of 512 threads"),
    (FORCED.replace("@tensor_cores\n", "@tensor_cores @tile(64, 64, 16)\n"), {},
     "the kernel asks for a CUDA-core tile with @tile"),
    ("@tensor_cores\nkernel k(x: f32[M, N] view, y: f32[M, N] view) over (i, j) in (M, N) { y[i, j] = x[i, j]; }",
     {}, "it has no contraction loop"),
])
def test_forced_tensor_cores_that_cannot_apply_are_located_errors(text, kw, why):
    msg = _forced_error(text, **kw)
    assert msg.startswith("<string>:1:2: error: @tensor_cores of kernel"), msg
    assert "cannot run on tensor cores" in msg and why in msg, msg


def test_forced_tf32_runs_on_tensor_cores():
    mod = kernc.compile("@tensor_cores " + _src("gemm_tf32").split("\n", 8)[-1])
    assert "nvgpu.mma.sync" in mod._compilation.gpu_ir()
    assert set(mod._compilation.signatures["gemm_tf32"].tensor_cores) == {"force", "tf32"}


def test_forced_tensor_cores_on_a_1d_kernel_is_a_located_error():
    msg = _forced_error("@tensor_cores kernel k(x: f32[n] read, y: f32[n] write) over n { y = x; }")
    assert msg.startswith("<string>:1:2: error: @tensor_cores of kernel 'k': cannot run on tensor cores: "
                          "it is over one size"), msg


def test_attribute_arguments_are_errors():
    with pytest.raises(CompileError, match=r"<string>:1:2: error: @tensor_cores takes no arguments"):
        kernc.compile("@tensor_cores(1) " + _src("gemm_i8").split("\n", 8)[-1])
    with pytest.raises(CompileError, match=r"@tf32 takes no arguments"):
        kernc.compile("@tf32(x) " + _src("gemm_i8").split("\n", 8)[-1])


# ---- PTX ----------------------------------------------------------------------------------------

@needs_ptxas
@pytest.mark.parametrize("name, mma, x2, count", [
    ("gemm_i8", "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32", 4, 16),
    ("gemm_tf32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 16, 64)])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a"])
def test_ptx_assembles_without_spills(name, mma, x2, count, arch):
    """One 32-wide k chunk: 4x4 fragments of one k32 step (i8) or four k8 steps (tf32)."""
    # wgmma=False: on sm_90a kern-wgmma-contractions would take gemm_i8 first (tests/wgmma)
    ptx = kernc.compile_file(os.path.join(EXAMPLES, f"{name}.kern"), arch=arch, wgmma=False).ptx
    assert ptx.count(mma) == count
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") == x2
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x2.shared.b16") == x2
    assert ".trans" not in ptx
    result = toolkit.run_ptxas(ptx, arch=arch)
    assert result.ok, result.log
    assert result.spills[name] == (0, 0), result.log
    assert result.registers[name] <= 255


def test_cli_compile_tf32_ptx(capsys):
    from kernc.cli import main

    assert main(["compile", os.path.join(EXAMPLES, "gemm_tf32.kern"), "--emit", "ptx", "--arch", "sm_80"]) == 0
    assert "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32" in capsys.readouterr().out


# ---- GPU (the same semantics as the CPU tests above) ----------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("M, K, N", [(1, 1, 1), (130, 70, 100), (257, 300, 129)])
def test_gemm_i8_on_gpu_is_exact(M, K, N):
    import cupy as cp

    a, b = _i8(M, K, N)
    c = cp.full((M, N), -1, np.int32)
    result = compiled_example("gemm_i8").gemm_i8(cp.asarray(a), cp.asarray(b), c)
    cp.cuda.runtime.deviceSynchronize()
    assert result.device == "cuda"
    np.testing.assert_array_equal(c.get(), example_reference("gemm_i8").gemm_i32(a, b))


@pytest.mark.gpu
@pytest.mark.parametrize("M, K, N", [(1, 1, 1), (130, 70, 100), (257, 300, 129)])
def test_gemm_tf32_on_gpu_matches_the_rounded_operands(M, K, N):
    import cupy as cp

    ref = example_reference("gemm_tf32")
    rng = np.random.default_rng(M + K + N)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = cp.full((M, N), np.nan, np.float32)
    compiled_example("gemm_tf32").gemm_tf32(cp.asarray(a), cp.asarray(b), c)
    cp.cuda.runtime.deviceSynchronize()
    ra, rb = ref.round_tf32(a), ref.round_tf32(b)
    scale = np.abs(ra.astype(np.float64)) @ np.abs(rb.astype(np.float64))
    err = np.abs(c.get() - ref.gemm_f64(ra, rb))
    assert np.all(err <= 1e-3 * math.sqrt(K) * np.maximum(scale, 1e-30) / K + 1e-30), err.max()


BATCHED_I8 = """
// a batch of i8 products, a stored k-major (its staging runs along i) and b n-major (along k)
kernel bgemm(at: i8[B, K, M] view, bt: i8[B, N, K] view, c: i32[B, M, N] view) over (q, i, j) in (B, M, N) {
    let acc: i32 = 5;
    for k in 0..K {
        acc += i32(at[q, k, i]) * i32(bt[q, j, k]);
    }
    c[q, i, j] = acc;
}
"""


def test_batched_i8_gemm_with_transposed_operands():
    """Both staging directions of both tiles, a batch coordinate and a sum starting at 5: exact.
    b's rows are k-contiguous here, so its n-major staging stores run along k: no bank conflict,
    while a's (lanes along i, rows 48 bytes apart) conflict as b's do in gemm_i8."""
    mod = kernc.compile(BATCHED_I8)
    assert "nvgpu.mma.sync" in mod._compilation.gpu_ir()
    rng = np.random.default_rng(4)
    at = rng.integers(-128, 128, (2, 37, 21)).astype(np.int8)
    bt = rng.integers(-128, 128, (2, 35, 37)).astype(np.int8)
    c = np.zeros((2, 21, 35), np.int32)
    mod.bgemm(at, bt, c)
    want = np.einsum("qki,qjk->qij", at.astype(np.int64), bt.astype(np.int64)) + 5
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("name, position", [("gemm_i8", "b_position_k32"), ("gemm_tf32", "a_position_k8")])
def test_a_wrong_fragment_layout_is_a_wrong_cpu_result(name, position, monkeypatch):
    """The interpreter reads each kind's ISA mapping: with one fragment's rows and columns
    swapped (read as its transpose, within the 16x8 / 32x8 / 16x8 bounds it shares) the gemm is
    wrong."""
    from kernc.backend.interpreter import nvgpu

    good = getattr(nvgpu, position)
    if position == "b_position_k32":  # B 32x8: rows 0..31 -> a permutation of them (t and the 16-row half swapped)
        def bad(i):
            row, col = good(i)
            return (row % 16) * 2 % 32 + row // 16, col
    else:  # A 16x8 tf32: columns t and t+4 swapped
        def bad(i):
            row, col = good(i)
            return row, (col + 4) % 8
    monkeypatch.setattr(nvgpu, position, bad)
    mod = kernc.compile_file(os.path.join(EXAMPLES, f"{name}.kern"))  # a fresh interpreter
    ref = example_reference(name)
    rng = np.random.default_rng(9)
    if name == "gemm_i8":
        a, b = _i8(20, 40, 9)
        c = np.zeros((20, 9), np.int32)
        mod.gemm_i8(a, b, c)
        assert not np.array_equal(c, ref.gemm_i32(a, b))
    else:
        a = rng.standard_normal((20, 16)).astype(np.float32)
        b = rng.standard_normal((16, 9)).astype(np.float32)
        c = np.zeros((20, 9), np.float32)
        mod.gemm_tf32(a, b, c)
        assert not np.allclose(c, ref.gemm_f64(a, b), rtol=1e-2, atol=1e-2)
