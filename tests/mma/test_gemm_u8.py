"""u8 contractions on tensor cores: ``kern-mma-contractions`` marks their ``nvgpu.mma.sync``
``kern.ptx_type = "u8"``, ``kern-lower-unsigned-mma`` writes ``mma.sync ... .s32.u8.u8.s32`` (the
``nvgpu`` lowering has ``.s8`` only), and the CPU interpreter reads the bytes unsigned: exact, so
bitwise the CUDA-core result and numpy's int64 product. Bytes >= 128 are where ``.s8`` would be wrong."""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.backend import toolkit
from kernc.passes.lower_unsigned_mma import LowerUnsignedMma
from kernc.support.mlir import ir

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")

GEMM_U8 = """
kernel gemm_u8(a: u8[M, K] view, b: u8[K, N] view, c: i32[M, N] view) over (i, j) in (M, N) {
    let acc: i32 = 0;
    for k in 0..K {
        acc += i32(a[i, k]) * i32(b[k, j]);
    }
    c[i, j] = acc;
}
"""
U8_MMA = "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.u8.u8.s32"


@pytest.fixture(scope="module")
def builds():
    return kernc.compile(GEMM_U8), kernc.compile(GEMM_U8, tensor_cores=False)


def _u8(M, K, N, seed=0):
    rng = np.random.default_rng(seed + 7 * M + 5 * K + N)
    a = rng.integers(0, 256, (M, K)).astype(np.uint8)
    b = rng.integers(0, 256, (K, N)).astype(np.uint8)
    a[0, :], b[:, 0] = 255, 255  # the largest products
    return a, b


@pytest.mark.parametrize("M, K, N", [(1, 1, 1), (15, 17, 33), (130, 70, 100)])
def test_gemm_u8_on_tensor_cores_is_exact(M, K, N, builds):
    on, off = builds
    gpu_ir = on._compilation.gpu_ir()
    assert gpu_ir.count('kern.ptx_type = "u8"') == gpu_ir.count("nvgpu.mma.sync") > 0
    assert "nvgpu.mma.sync" not in off._compilation.gpu_ir()
    a, b = _u8(M, K, N)
    got, cuda_cores = (np.full((M, N), -1, np.int32) for _ in range(2))
    on.gemm_u8(a, b, got)
    off.gemm_u8(a, b, cuda_cores)
    want = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(got, want.astype(np.int32))
    np.testing.assert_array_equal(got, cuda_cores)
    # the same bytes read as .s8 give another product: the mark is what makes it right
    signed = a.view(np.int8).astype(np.int64) @ b.view(np.int8).astype(np.int64)
    assert not np.array_equal(got, signed)


def _remarks(text, capsys, **kw):
    from kernc.compiler import Compilation, CompileOptions

    Compilation(text, "t.kern", CompileOptions(remarks=True, **kw), use_cache=False)
    return capsys.readouterr().err


def test_u8_remark_names_u8_products(capsys):
    # (sm_90a: kern-wgmma-contractions takes it, tests/wgmma/test_wgmma_int8.py)
    for kw in (dict(arch="sm_90"), dict(arch="sm_90a", wgmma=False)):
        err = _remarks(GEMM_U8, capsys, **kw)
        assert "mma.sync m16n8k32 (u8 products, i32 sums)" in err, err


def test_mixed_i8_u8_stays_on_cuda_cores_with_a_remark(capsys):
    mixed = GEMM_U8.replace("b: u8[K, N]", "b: i8[K, N]")
    assert "its operands are u8 and i8, not of one type" in _remarks(mixed, capsys, arch="sm_80")
    assert "nvgpu.mma.sync" not in kernc.compile(mixed, arch="sm_80")._compilation.gpu_ir()


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a"])
def test_u8_ptx_assembles_without_spills(arch):
    # wgmma=False: on sm_90a kern-wgmma-contractions would take the gemm first (tests/wgmma)
    ptx = kernc.compile(GEMM_U8, arch=arch, wgmma=False).ptx
    assert ptx.count(U8_MMA) == 16  # one k32 step of 4x4 fragments per chunk
    assert ".s8" not in ptx
    result = toolkit.run_ptxas(ptx, arch=arch)
    assert result.ok, result.log
    assert result.spills["gemm_u8"] == (0, 0), result.log


def test_a_marked_mma_of_another_shape_is_an_internal_error():
    src = """module attributes {gpu.container_module} { gpu.module @m {
      gpu.func @k(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>, %y: memref<1xvector<2x2xf32>>) kernel {
        %c0 = arith.constant 0 : index
        %d = nvgpu.mma.sync(%a, %b, %c) {kern.ptx_type = "u8", mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
        memref.store %d, %y[%c0] : memref<1xvector<2x2xf32>>
        gpu.return } } }"""
    from kernc.compiler import context
    ctx = context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(src)
        with pytest.raises(ValueError, match="marked 'u8' that is not m16n8k32"):
            LowerUnsignedMma().apply(ctx, module)


@pytest.mark.gpu
@pytest.mark.parametrize("M, K, N", [(1, 1, 1), (130, 70, 100), (257, 300, 129)])
def test_gemm_u8_on_gpu_is_exact(M, K, N, builds):
    import cupy as cp

    a, b = _u8(M, K, N)
    c = cp.full((M, N), -1, np.int32)
    result = builds[0].gemm_u8(cp.asarray(a), cp.asarray(b), c)
    cp.cuda.runtime.deviceSynchronize()
    assert result.device == "cuda"
    np.testing.assert_array_equal(c.get(), (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32))
