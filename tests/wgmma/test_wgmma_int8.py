"""i8/u8 contractions on ``sm_90a`` warpgroup tensor cores: ``kern-wgmma-contractions`` runs them as
``wgmma.mma_async.sync.aligned.m64nNk32.s32.{s8,u8}.{s8,u8}`` (chunks of 128 k, one 128-byte row of
1-byte elements; both tiles K-major: the ISA's transpose is for .f16/.bf16 only). On the CPU
interpreter the results are bitwise the ``--no-tensor-cores`` build's and numpy's int64 product
wrapped to i32 (integer sums are exact in any order); the remarks; the PTX through ``ptxas
-arch=sm_90a``; the pass's swizzled slot and the interpreter's descriptor decoding of 1-byte
elements agree; a wrong swizzle or fragment layout is a wrong CPU result."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kernc
from kernc.api import Module
from kernc.backend import toolkit
from kernc.backend.interpreter import wgmma
from kernc.compiler import Compilation, CompileOptions
from kernc.passes.wgmma_contractions import ATOM_BYTES, SWIZZLE_128B, descriptor, swizzled_index
from conftest import EXAMPLES, example_reference
from tensor_core_helpers import narrow_block_n

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")

GEMM = """
kernel g(a: T[M, K] view, b: T[K, N] view, c: i32[M, N] view) over (i, j) in (M, N) {
    let acc: i32 = 0;
    for k in 0..K {
        acc += i32(a[i, k]) * i32(b[k, j]);
    }
    c[i, j] = acc;
}
"""
#: the loop starts from the item's own value: the epilogue adds it (i32, wrapping)
GEMM_ADDED = GEMM.replace("let acc: i32 = 0;", "let acc = c[i, j];")
#: a constant start other than 0: the accumulators start from it (llvm.insertvalue of an i32)
GEMM_START = GEMM.replace("let acc: i32 = 0;", "let acc: i32 = -7;")
SOURCES = {"i8": GEMM.replace("T[", "i8["), "u8": GEMM.replace("T[", "u8["),
           "i8_added": GEMM_ADDED.replace("T[", "i8["), "i8_start": GEMM_START.replace("T[", "i8[")}
# (M, K, N): odd sizes; more than one 128x128 tile and more than one 128-wide k chunk
SHAPES = [(1, 1, 1), (70, 50, 130), (130, 257, 70)]


@pytest.fixture(scope="module")
def builds():
    """{name: (sm_90a wgmma build, --no-tensor-cores build)}, compiled once."""
    return {name: (kernc.compile(src, arch="sm_90a"), kernc.compile(src, arch="sm_90a", tensor_cores=False))
            for name, src in SOURCES.items()}


def _inputs(dtype: str, M: int, K: int, N: int, seed: int = 0):
    rng = np.random.default_rng(seed + 3 * M + 5 * K + 7 * N)
    lo, hi, t = (-128, 128, np.int8) if dtype == "i8" else (0, 256, np.uint8)
    a = rng.integers(lo, hi, (M, K)).astype(t)
    b = rng.integers(lo, hi, (K, N)).astype(t)
    a[0, :], b[:, 0] = (hi - 1, lo) if dtype == "i8" else (255, 255)  # the extreme products
    return a, b


def _exact(a, b, start=0):
    """numpy's int64 product (plus ``start``) wrapped to i32."""
    return (np.asarray(start, np.int64) + a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)


def _run(mod, a, b, c0):
    c = c0.copy()
    mod.g(a, b, c)
    return c


@pytest.mark.parametrize("dtype", ["i8", "u8"])
@pytest.mark.parametrize("M, K, N", SHAPES)
def test_gemm_on_wgmma_is_bitwise_the_loop(builds, dtype, M, K, N):
    on, off = builds[dtype]
    gpu_ir = on._compilation.gpu_ir()
    assert gpu_ir.count("nvvm.wgmma.mma_async") == 4 and "nvgpu.mma.sync" not in gpu_ir
    t = "s8" if dtype == "i8" else "u8"
    assert f"D[<s32>, <one>], A[<{t}>, <one>, <row>], B[<{t}>, <one>, <col>]" in gpu_ir
    assert "nvvm.wgmma" not in off._compilation.gpu_ir()
    assert on._compilation.signatures["g"].tiles == [["M", 128], ["N", 128]]
    a, b = _inputs(dtype, M, K, N)
    c0 = np.full((M, N), -1, np.int32)
    got, loop = _run(on, a, b, c0), _run(off, a, b, c0)
    np.testing.assert_array_equal(got, _exact(a, b))
    np.testing.assert_array_equal(got, loop)
    if dtype == "u8" and M > 1:  # bytes >= 128 read as .s8 would give another product
        assert not np.array_equal(got, _exact(a.view(np.int8), b.view(np.int8)))


@pytest.mark.parametrize("M, K, N", [(70, 50, 130), (130, 257, 70)])
def test_an_items_own_start_is_added_with_i32_wrap_around(builds, M, K, N):
    """``let acc = c[i, j];``: the sums start from 0 and the epilogue adds ``c``; starts near the
    i32 limits wrap as the loop's ``+=`` does (bitwise the --no-tensor-cores build)."""
    on, off = builds["i8_added"]
    a, b = _inputs("i8", M, K, N, seed=1)
    rng = np.random.default_rng(M)
    c0 = rng.integers(-2**31, 2**31, (M, N), dtype=np.int64).astype(np.int32)
    c0[:, 0], c0[0, :] = 2**31 - 1, -2**31  # (row 0 / column 0: the largest products: these wrap)
    got = _run(on, a, b, c0)
    np.testing.assert_array_equal(got, _exact(a, b, c0))
    np.testing.assert_array_equal(got, _run(off, a, b, c0))
    wrapped = c0.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)
    assert ((wrapped > 2**31 - 1) | (wrapped < -2**31)).any()  # the case is there


def test_a_constant_start_other_than_zero(builds):
    on, off = builds["i8_start"]
    assert "llvm.insertvalue" in on._compilation.gpu_ir()
    a, b = _inputs("i8", 70, 50, 130, seed=2)
    c0 = np.zeros((70, 130), np.int32)
    got = _run(on, a, b, c0)
    np.testing.assert_array_equal(got, _exact(a, b, -7))
    np.testing.assert_array_equal(got, _run(off, a, b, c0))


def test_the_swizzled_slots_are_where_the_descriptors_read():
    """The pass's K-major slot of 1-byte elements (:func:`swizzled_index`, elem_bytes 1) is the byte
    the interpreter's descriptor decoding (:func:`wgmma.operand_addresses`) gives for each of the
    chunk's 4 k32 steps (+32 bytes a step), rows of two 8-row atoms; f16's layout is unchanged."""
    base = 1024 * 5
    rows, k = 128, 128
    want = np.array([[swizzled_index(r, kk, 1) for kk in range(k)] for r in range(rows)])
    got = np.concatenate([wgmma.operand_addresses(descriptor(base + 32 * s, 16, ATOM_BYTES, SWIZZLE_128B),
                                                  rows, 32, 1) - base for s in range(4)], axis=1)
    np.testing.assert_array_equal(got, want)
    assert sorted(want.reshape(-1)) == list(range(rows * k))  # a permutation of the tile's bytes
    # f16 (the default element size): 8 elements a 16-byte unit, as before
    assert [swizzled_index(9, kk) for kk in (0, 7, 8, 63)] == [64 * 9 + 8, 64 * 9 + 15, 64 * 9 + 0, 64 * 9 + 6 * 8 + 7]


def test_a_wrong_swizzle_or_fragment_layout_is_a_wrong_cpu_result(builds, monkeypatch):
    on, _ = builds["i8"]
    a, b = _inputs("i8", 70, 130, 50, seed=3)
    c0 = np.zeros((70, 50), np.int32)
    np.testing.assert_array_equal(_run(on, a, b, c0), _exact(a, b))
    good_swizzle, good_d = wgmma.swizzle, wgmma.d_position
    monkeypatch.setattr(wgmma, "swizzle", lambda x, T: x)  # the tiles read unswizzled
    assert not np.array_equal(_run(on, a, b, c0), _exact(a, b))
    monkeypatch.setattr(wgmma, "swizzle", good_swizzle)
    # (the fragment positions are taken when the op is translated: a fresh module)
    monkeypatch.setattr(wgmma, "d_position", lambda i: good_d(i ^ 2))  # rows g and g + 8 swapped
    fresh = Module(Compilation(SOURCES["i8"], "t.kern", CompileOptions(arch="sm_90a"), use_cache=False))
    got = _run(fresh, a, b, c0)
    assert not np.array_equal(got, _exact(a, b))


def _remarks(capsys, src, **kw):
    comp = Compilation(src, "t.kern", CompileOptions(remarks=True, arch="sm_90a", **kw), use_cache=False)
    return comp.gpu_ir(), capsys.readouterr().err


@pytest.mark.parametrize("dtype", ["i8", "u8"])
def test_the_remarks(capsys, dtype):
    ptx = "s8" if dtype == "i8" else "u8"
    _, err = _remarks(capsys, SOURCES[dtype])
    assert (f"'g' on sm_90a warpgroup tensor cores: 128x128 block tiles in chunks of 128 of k, 2 warpgroup(s) "
            f"of wgmma.mma_async m64n128k32 ({ptx}.{ptx}: {dtype} products, s32 sums)") in err, err
    assert "the sums are exact (i32 wrap-around, no .satfinite, as the loop's +=): bitwise the --no-tensor-cores" in err
    assert "not using wgmma" not in err and "f16/bf16 only" not in err
    # b (n-contiguous) stays K-major: no transpose for 8-bit types
    assert (f"'b' staged K-major: wgmma reads {dtype} operands K-major only (its transpose, imm-trans-a/-b, "
            "is for .f16/.bf16") in err, err
    # --tma: a (k-contiguous) by a 128x128 box of 1-byte elements; b keeps the stores (no MN-major
    # tile of 8-bit elements)
    gpu_ir, err = _remarks(capsys, SOURCES[dtype], tma=True)
    assert "nvvm.wgmma.mma_async" in gpu_ir and gpu_ir.count("cp.async.bulk.tensor.shared.cluster.global") == 2
    assert ("'a' of 'g' loaded by the tensor memory accelerator: per chunk one cp.async.bulk.tensor.2d of the box "
            "128x128 (k x rows, out-of-bounds elements zero) into one of 2 128B-swizzled tiles (stages), each "
            "completed on its own mbarrier (expect_tx 16384 bytes)") in err, err
    assert ("'b' of 'g' not loaded by TMA: its rows have stride 1 in its layout (K,N):(N,1), and a tile of 1-byte "
            "elements cannot be MN-major (wgmma transposes f16/bf16 tiles only)") in err, err


@pytest.mark.parametrize("dtype", ["i8", "u8"])
@pytest.mark.parametrize("M, K, N", [(70, 144, 50), (1, 16, 1), (130, 272, 70), (5, 130, 7)])
def test_tma_builds_are_the_exact_product(dtype, M, K, N):
    """``tma=True``: a's tile by a box of 1-byte elements (K % 16 == 0: its rows a multiple of 16
    bytes; K = 130 runs the tma=False build), the exact product either way."""
    mod = kernc.compile(SOURCES[dtype], arch="sm_90a", tma=True)
    m = mod._compilation.signatures["g"].extra[0]
    assert (m.name, m.dtype, m.tensor_map["box"]) == ("__tma_a", dtype, [128, 128])
    a, b = _inputs(dtype, M, K, N, seed=8)
    c = np.zeros((M, N), np.int32)
    result = mod.g(a, b, c)
    assert result.tensor_cores == "wgmma" and result.tma is (K % 16 == 0), result.no_tma
    np.testing.assert_array_equal(c, _exact(a, b))


def test_no_wgmma_and_other_targets_keep_mma_sync(capsys):
    for kw in (dict(wgmma=False), dict(arch="sm_90")):
        comp = Compilation(SOURCES["i8"], "t.kern", CompileOptions(remarks=True, **{"arch": "sm_90a", **kw}),
                           use_cache=False)
        gpu_ir = comp.gpu_ir()
        assert "nvvm.wgmma" not in gpu_ir and "nvgpu.mma.sync" in gpu_ir
    capsys.readouterr()


@needs_ptxas
@pytest.mark.parametrize("dtype", ["i8", "u8"])
def test_ptxas_accepts_the_s8_wgmma_for_sm_90a_without_spills(builds, dtype):
    ptx = builds[dtype][0].ptx
    t = "s8" if dtype == "i8" else "u8"
    assert ptx.count(f"wgmma.mma_async.sync.aligned.m64n128k32.s32.{t}.{t}") == 4
    assert ".satfinite" not in ptx and "mma.sync" not in ptx
    res = toolkit.run_ptxas(ptx, "sm_90a")
    assert res.ok, res.log
    assert res.spills["g"] == (0, 0), res.log
    assert res.registers["g"] <= 128, res.log  # (99 measured: 64 accumulators)


def _i8_conv(name: str) -> str:
    """``examples/NAME.kern`` with i8 operands and i32 sums (``i32(x) * i32(w)``)."""
    text = open(os.path.join(EXAMPLES, f"{name}.kern"), encoding="utf-8").read()
    text = text.replace("f16[", "i8[").replace("f32[", "i32[").replace("let acc = 0.0;", "let acc: i32 = 0;")
    if name == "conv2d_fwd_f16":
        return (text.replace("acc += x.checked(", "acc += i32(x.checked(")
                .replace("(m, kk))\n", "(m, kk)))\n").replace("* w[k, r, s, c];", "* i32(w[k, r, s, c]);"))
    return (text.replace("acc += dy[k, m] * x.checked(", "acc += i32(dy[k, m]) * i32(x.checked(")
            .replace("(m, kk));", "(m, kk)));"))


@pytest.fixture(scope="module")
def conv_builds():
    return {name: (kernc.compile(_i8_conv(name), arch="sm_90a"), kernc.compile(_i8_conv(name), tensor_cores=False))
            for name in ("conv2d_fwd_f16", "conv2d_wgrad_f16")}


def test_i8_convolutions_on_wgmma_are_bitwise_the_loop(conv_builds):
    """The loop nests and flattened sides (the im2col view) with 1-byte tiles: the forward
    convolution (R*S*C = 30: one partial chunk) and the weight gradient (M = 70, both operands read
    along their rows: staged K-major) bitwise the --no-tensor-cores build and the exact sums."""
    conv = example_reference("conv_common")
    geo = {"sh": 2, "sw": 1, "ph": 1, "pw": 0, "dh": 1, "dw": 2}
    rng = np.random.default_rng(5)
    (on, off), ref = conv_builds["conv2d_fwd_f16"], example_reference("conv2d_fwd_f16")
    assert "nvvm.wgmma.mma_async" in on._compilation.gpu_ir()
    N, H, W, C, K, R, S = 2, 7, 9, 5, 130, 3, 2
    OH, OW = conv.output_extent(H, R, 2, 1, 1), conv.output_extent(W, S, 1, 0, 2)
    x = rng.integers(-128, 128, (N, H, W, C)).astype(np.int8)
    w = rng.integers(-128, 128, (K, R, S, C)).astype(np.int8)
    ys = [np.full((N, OH, OW, K), -1, np.int32) for _ in range(2)]
    for mod, y in zip((on, off), ys):
        mod.conv2d_fwd_f16(x=x, w=w, y=y, **geo)
    np.testing.assert_array_equal(ys[0], ys[1])
    want = ref.conv2d_f64(x, w, OH, OW, (2, 1), (1, 0), (1, 2))  # exact: |sums| < 2^53
    np.testing.assert_array_equal(ys[0].astype(np.int64), want.astype(np.int64))
    (on, off), ref = conv_builds["conv2d_wgrad_f16"], example_reference("conv2d_wgrad_f16")
    assert "nvvm.wgmma.mma_async" in on._compilation.gpu_ir()
    N, OH, OW, C, K, R, S = 2, 5, 7, 7, 33, 3, 2
    H, W = conv.input_extent(OH, R, 2, 1, 1), conv.input_extent(OW, S, 1, 0, 2)
    inputs = {"x": rng.integers(-128, 128, (N, H, W, C)).astype(np.int8),
              "dy": rng.integers(-128, 128, (N * OH * OW, K)).astype(np.int8), "OH": OH, "OW": OW, **geo}
    gws = [np.full((K, R, S, C), -1, np.int32) for _ in range(2)]
    for mod, gw in zip((on, off), gws):
        mod.conv2d_wgrad_f16(gw=gw, **inputs)
    np.testing.assert_array_equal(gws[0], gws[1])
    want = ref.wgrad_f64(inputs["x"], inputs["dy"], *ref._geometry({**inputs, "gw": gws[0]}))
    np.testing.assert_array_equal(gws[0].astype(np.int64), want.astype(np.int64))


WAIT = "nvvm.wgmma.wait.group.sync.aligned 0"


def _run_ir(text: str, M: int, K: int, N: int):
    """The i8 gemm's GPU IR ``text`` on the CPU interpreter, one block of 256 threads: ``(a, b, c)``."""
    from kernc.backend.interpreter import Interpreter
    from kernc.compiler import context
    from kernc.support.mlir import ir

    with context():
        it = Interpreter(ir.Module.parse(text))
    a, b = _inputs("i8", M, K, N, seed=4)
    c = np.zeros(M * N, np.int32)
    it.run("g", 1, 256, [a.reshape(-1), b.reshape(-1), c, M, K, N])
    return a, b, c.reshape(M, N)


def test_the_async_rules_hold_for_the_integer_wgmma(builds):
    """As for f16 (test_gemm_wgmma.py): the pass's IR runs; without its wait the epilogue reads
    pending accumulators, with wait_group 1 the next chunk's stores overwrite a pending wgmma's
    1-byte tile (K = 200: two chunks of 128)."""
    from kernc.support.errors import KerncRuntimeError

    text = builds["i8"][0]._compilation.gpu_ir()
    assert text.count(WAIT) == 1
    a, b, c = _run_ir(text, 20, 200, 24)
    np.testing.assert_array_equal(c, _exact(a, b))
    with pytest.raises(KerncRuntimeError, match=r"reads the accumulators of the wgmma\.mma_async at "):
        _run_ir(text.replace(WAIT, ""), 20, 200, 24)
    with pytest.raises(KerncRuntimeError, match="overwritten before the wgmma.wait_group"):
        _run_ir(text.replace(WAIT, WAIT[:-1] + "1"), 20, 200, 24)


def test_one_warpgroup_u8():
    """``@block(128)``: one warpgroup, 64x128 tiles (A at row 0 only)."""
    mod = kernc.compile(SOURCES["u8"].replace("kernel g", "@block(128) kernel g"), arch="sm_90a")
    assert mod._compilation.signatures["g"].tiles == [["M", 64], ["N", 128]]
    a, b = _inputs("u8", 70, 300, 130, seed=6)
    c = np.full((70, 130), -1, np.int32)
    assert mod.g(a, b, c).block == 128
    np.testing.assert_array_equal(c, _exact(a, b))


@pytest.mark.parametrize("block_n", [16, 256])
def test_other_instruction_widths(monkeypatch, block_n):
    """block_n (the N of m64nNk32; 16 and 256 are in the ISA's integer list) 16 and 256 (one
    warpgroup: two would need 48 KiB of tiles): other tiles, other D fragments (8 and 128
    registers), the same exact sums; ptxas takes both."""
    narrow_block_n(monkeypatch, block_n)
    src = SOURCES["i8"].replace("kernel g", "@block(128) kernel g") if block_n == 256 else SOURCES["i8"]
    mod = Module(Compilation(src, "narrow.kern", CompileOptions(arch="sm_90a"), use_cache=False))
    assert f"<m = 64, n = {block_n}, k = 32>" in mod._compilation.gpu_ir()
    a, b = _inputs("i8", 70, 140, 270, seed=7)
    c = np.zeros((70, 270), np.int32)
    bm = 64 if block_n == 256 else 128
    assert mod.g(a, b, c).grid == -(-70 // bm) * -(-270 // block_n)
    np.testing.assert_array_equal(c, _exact(a, b))
    if toolkit.ptxas_path() is not None:
        res = toolkit.run_ptxas(mod.ptx, "sm_90a")
        assert res.ok and res.spills["g"] == (0, 0), res.log
