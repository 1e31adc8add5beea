"""kern-tile-contractions beyond the plain gemm: loop nests (collapsed, their order kept), item
coordinates grouped into two flattened sides (the convolutions' GEMM rows m = (n, oh, ow)), batched
products, PolyBench's 2mm/3mm/syrk shapes, every scalar type.

Each kernel must compile tiled (``sig.tiles`` set) and give bitwise the result of the same program
compiled with ``tile=False`` at odd extents (partial tiles, partial chunks); the convolutions also
match their numpy references bit for bit and load fewer global sectors. Nests the pass cannot tile
compile untiled with a remark saying why.
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions
from conftest import EXAMPLES, example_reference


def _module(src: str, tile: bool = True, remarks: bool = False, tensor_cores: bool = True) -> Module:
    # (choose_tile=False: every launch runs the tiled kernel, also those smaller than one block tile)
    return Module(Compilation(src, "t.kern", CompileOptions(tile=tile, remarks=remarks, tensor_cores=tensor_cores),
                              use_cache=False), choose_tile=False)


def _pair(src: str, **options):
    return _module(src, **options), _module(src, tile=False, **options)


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.kind not in "iub" else x


def _copy(inputs: dict) -> dict:
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}


def _run_both(pair, name: str, inputs: dict, outs: list) -> list:
    """The outputs ``outs`` of kernel ``name`` run tiled and untiled on copies of ``inputs``
    (asserted bitwise equal); returns the tiled run's arrays and the two launch results."""
    got = []
    for mod in pair:
        args = _copy(inputs)
        result = getattr(mod, name)(**args)
        got.append((args, result))
    for o in outs:
        np.testing.assert_array_equal(_bits(got[0][0][o]), _bits(got[1][0][o]), err_msg=f"{name}.{o}")
    return got


CONVS = {"conv2d_fwd": "y", "conv2d_wgrad": "gw", "conv2d_dgrad": "dx"}


@pytest.fixture(scope="module")
def conv_pairs():
    return {name: _pair(open(os.path.join(EXAMPLES, f"{name}.kern")).read()) for name in CONVS}


@pytest.mark.parametrize("P", [1, 3 * 5 * 7 * 11, 2 * 9 * 7 * 16, 4 * 5 * 6 * 67])
@pytest.mark.parametrize("name", sorted(CONVS))
def test_convolutions_tiled_bitwise_equal_untiled_and_reference(conv_pairs, name, P):
    ref = example_reference(name)
    inputs = ref.make_inputs(P, np.random.default_rng(P))
    got = _run_both(conv_pairs[name], name, inputs, [CONVS[name]])
    want = ref.reference(_copy(inputs))[CONVS[name]]
    np.testing.assert_array_equal(_bits(got[0][0][CONVS[name]]), _bits(want))
    sig = conv_pairs[name][0]._compilation.signatures[name]
    assert sig.tiles is not None and [t for _, t in sig.tiles] == [64, 64]


def test_convolution_sides_are_flattened(conv_pairs, capsys):
    """conv2d_fwd's rows are m = (n, oh, ow) (what x depends on), its columns k (w's); wgrad's
    rows k (dy's), columns (r, s, c) (x's, through im2col); dgrad's rows (n, ih, iw), columns c."""
    sigs = {n: p[0]._compilation.signatures[n] for n, p in conv_pairs.items()}
    assert sigs["conv2d_fwd"].tiles == [["N*OH*OW", 64], ["K", 64]]
    assert sigs["conv2d_wgrad"].tiles == [["K", 64], ["C*R*S", 64]]
    assert sigs["conv2d_dgrad"].tiles == [["H*N*W", 64], ["C", 64]]
    _module(open(os.path.join(EXAMPLES, "conv2d_fwd.kern")).read(), remarks=True)
    err = capsys.readouterr().err
    assert ("conv2d_fwd.kern" not in err and "t.kern:17:9: remark: tiling 'conv2d_fwd' as 64x64x16 per block, "
            "4x4 items per thread, x and w staged: the loop's reads of x and w depend on the loop variables "
            "and the item coordinates of one side") in err
    assert "x: 16x64 of '(n, oh, ow)', loaded along k" in err


def test_conv2d_fwd_loads_ten_times_fewer_sectors(conv_pairs):
    """The bench's size (P = 2^16, 16 images of 16x16 outputs, 16 channels): the x tile serves the
    64 output channels of a block tile, w's the 64 pixels."""
    ref = example_reference("conv2d_fwd")
    inputs = ref.make_inputs(1 << 16, np.random.default_rng(0))
    inputs["w"][0, 0, 0, 0] = np.inf  # (an inf and its NaNs stay where the untiled kernel makes them)
    got = _run_both(conv_pairs["conv2d_fwd"], "conv2d_fwd", inputs, ["y"])
    tiled, untiled = (r.stats for _, r in got)
    assert untiled.global_load_sectors >= 10 * tiled.global_load_sectors
    assert tiled.shared_bank_conflicts == 0 < tiled.shared_requests


def _gemm_src(T: str, acc: str) -> str:
    return (f"kernel gemm(a: {T}[M, K] view, b: {T}[K, N] view, c: {T}[M, N] view) over (i, j) in (M, N) {{\n"
            f"    let acc = {acc};\n    for k in 0..K {{ acc += a[i, k] * b[k, j]; }}\n    c[i, j] = acc;\n}}\n")


TYPES = {"f16": (np.float16, "0.0"), "bf16": (ml_dtypes.bfloat16, "0.0"), "f64": (np.float64, "0.0f64"),
         "i8": (np.int8, "i8(0)"), "u16": (np.uint16, "u16(0)"), "i64": (np.int64, "0i64")}


@pytest.mark.parametrize("T", sorted(TYPES))
def test_every_scalar_type_tiles_bitwise(T):
    dtype, acc = TYPES[T]
    # (f16/bf16 products summed in f32 go to kern-mma-contractions first: this is the CUDA-core tiling)
    pair = _pair(_gemm_src(T, acc), tensor_cores=False)
    assert pair[0]._compilation.signatures["gemm"].tiles == [["M", 64], ["N", 64]]
    M, K, N = 37, 19, 70
    rng = np.random.default_rng(len(T))
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, (M, K), endpoint=True).astype(dtype)  # wrapping products
        b = rng.integers(info.min, info.max, (K, N), endpoint=True).astype(dtype)
    else:
        a = rng.standard_normal((M, K)).astype(dtype)
        b = rng.standard_normal((K, N)).astype(dtype)
    got = _run_both(pair, "gemm", {"a": a, "b": b, "c": np.zeros((M, N), dtype)}, ["c"])
    assert got[0][1].stats.shared_requests > 0


NESTS = {
    # a contraction over two loop variables (a 2-deep nest): c[i, j] = sum_{p, q} a[i, p, q] b[p, q, j]
    "two_index": ("""
kernel t2(a: f32[M, P, Q] view, b: f32[P, Q, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for p in 0..P { for q in 0..Q { acc += a[i, p, q] * b[p, q, j]; } }
    c[i, j] = acc;
}""", "t2", {"a": (5, 3, 7), "b": (3, 7, 66), "c": (5, 66)}, [["M", 64], ["N", 64]]),
    # a constant outer bound (the frontend unrolled it into 4 loops before: "more than one loop")
    "const_outer": ("""
kernel tc(a: f32[M, K] view, b: f32[Q, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for k1 in 0..4 { for k2 in 0..Q { acc += a[i, k1 * 4 + k2] * b[k2, j]; } }
    c[i, j] = acc;
}""", "tc", {"a": (67, 16), "b": (4, 65), "c": (67, 65)}, [["M", 64], ["N", 64]]),
    # batched, both operands per batch (z fixed per tile), b read through a transposed layout
    "batched": ("""
layout tr(Z, K, N) = (Z, K, N):(K * N, 1, K);
kernel bmm(a: f32[Z, M, K] view, b: f32[Z, K, N] view as tr(Z, K, N), c: f32[Z, M, N] view)
        over (z, i, j) in (Z, M, N) {
    let acc = 0.0;
    for k in 0..K { acc += a[z, i, k] * b[z, k, j]; }
    c[z, i, j] = acc;
}""", "bmm", {"a": (3, 65, 17), "b": (3, 33, 17), "c": (3, 65, 33)}, [["M", 64], ["N", 64]]),
    # PolyBench syrk: C = alpha A A^T + beta C on the lower triangle (A read twice, the epilogue's if)
    "syrk": ("""
kernel syrk(a: f32[N, K] view, c: f32[N, M] view, alpha: f32, beta: f32) over (i, j) in (N, M) {
    let acc = 0.0;
    for k in 0..K { acc += a[i, k] * a[j, k]; }
    if j <= i { c[i, j] = beta * c[i, j] + alpha * acc; }
}""", "syrk", {"a": (70, 19), "c": (70, 70), "alpha": np.float32(1.5), "beta": np.float32(-0.5)},
             [["N", 64], ["M", 64]]),
}


@pytest.mark.parametrize("case", sorted(NESTS))
def test_nests_batched_and_polybench_shapes_tile_bitwise(case):
    src, name, shapes, tiles = NESTS[case]
    pair = _pair(src)
    assert pair[0]._compilation.signatures[name].tiles == tiles
    rng = np.random.default_rng(len(case))
    inputs = {k: rng.standard_normal(v).astype(np.float32) if isinstance(v, tuple) else v
              for k, v in shapes.items()}
    if case == "batched":  # b's storage: (Z, N, K) for its logical (Z, K, N)
        inputs["b"] = np.ascontiguousarray(inputs["b"])
    outs = [k for k in shapes if k == "c"]
    got = _run_both(pair, name, inputs, outs)
    if case == "const_outer":
        ai = inputs["a"].astype(np.float64)
        want = sum(ai[:, 4 * k1:4 * k1 + 4] @ inputs["b"] for k1 in range(4))
        np.testing.assert_allclose(got[0][0]["c"], want, rtol=1e-4, atol=1e-4)
    if case == "two_index":
        want = np.einsum("ipq,pqj->ij", inputs["a"].astype(np.float64), inputs["b"])
        np.testing.assert_allclose(got[0][0]["c"], want, rtol=1e-4, atol=1e-4)


MM = """
kernel mm1(a: f32[NI, NK] view, b: f32[NK, NJ] view, tmp: f32[NI, NJ] view, alpha: f32)
        over (i, j) in (NI, NJ) {
    let acc = 0.0;
    for k in 0..NK { acc += alpha * a[i, k] * b[k, j]; }
    tmp[i, j] = acc;
}
kernel mm2(tmp: f32[NI, NJ] view, c: f32[NJ, NL] view, d: f32[NI, NL] view, beta: f32)
        over (i, l) in (NI, NL) {
    let acc = 0.0;
    for j in 0..NJ { acc += tmp[i, j] * c[j, l]; }
    d[i, l] = beta * d[i, l] + acc;
}
"""


def test_polybench_2mm_3mm_chain_tiles_bitwise():
    """PolyBench 2mm (tmp = alpha A B; D = beta D + tmp C) and 3mm's products (the same two kernel
    shapes chained): every kernel tiled, the chain bitwise the untiled one's."""
    pair = _pair(MM)
    for k in ("mm1", "mm2"):
        assert pair[0]._compilation.signatures[k].tiles is not None
    rng = np.random.default_rng(2)
    NI, NK, NJ, NL = 33, 18, 70, 9
    a, b = rng.standard_normal((NI, NK)).astype(np.float32), rng.standard_normal((NK, NJ)).astype(np.float32)
    c, d0 = rng.standard_normal((NJ, NL)).astype(np.float32), rng.standard_normal((NI, NL)).astype(np.float32)
    outs = []
    for mod in pair:
        tmp, d = np.zeros((NI, NJ), np.float32), d0.copy()
        mod.mm1(a, b, tmp, np.float32(1.5))
        mod.mm2(tmp, c, d, np.float32(0.5))
        e = np.zeros((NI, NL), np.float32)  # 3mm's last product, G = E F, of two products
        mod.mm2(tmp, c, e, np.float32(0.0))
        outs.append((tmp, d, e))
    for x, y in zip(*outs):
        np.testing.assert_array_equal(_bits(x), _bits(y))


DECLINED_NESTS = {
    "not perfect": ("""
kernel k(a: f32[M, R, C] view, b: f32[R, C, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for r in 0..R { acc = acc * 0.5; for q in 0..C { acc += a[i, r, q] * b[r, q, j]; } }
    c[i, j] = acc;
}""", "the loop nest is not perfect"),
    "triangular": ("""
kernel k(a: f32[M, R, C] view, b: f32[R, C, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for r in 0..R { for q in 0..r { acc += a[i, r, q] * b[r, q, j]; } }
    c[i, j] = acc;
}""", "depend on the item or on an outer loop"),
}


@pytest.mark.parametrize("case", sorted(DECLINED_NESTS))
def test_declined_nests_compile_untiled_with_a_remark(case, capsys):
    src, why = DECLINED_NESTS[case]
    _module(src, remarks=True)
    err = capsys.readouterr().err
    assert "remark: not tiling 'k': " in err and why in err, err
    tiled, untiled = _pair(src)
    assert tiled._compilation.signatures["k"].tiles is None
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((5, 3, 4)).astype(np.float32), rng.standard_normal((3, 4, 7)).astype(np.float32)
    _run_both((tiled, untiled), "k", {"a": a, "b": b, "c": np.zeros((5, 7), np.float32)}, ["c"])
