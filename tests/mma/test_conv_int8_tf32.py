"""``kern-mma-contractions`` on i8 and ``@tf32`` convolutions: the loop nests and flattened sides of
``examples/conv2d_fwd_f16.kern`` / ``conv2d_wgrad_f16.kern`` with i8 operands (i32 sums, m16n8k32)
and f32 operands under ``@tf32`` (m16n8k8). 8- and 32-bit elements have no ``ldmatrix.trans``: both
tiles are staged k contiguous whatever the read's unit stride (the wgrad's output-gradient view,
loaded along ``k``, and its im2col view, loaded along ``c``, both across their rows), so these are
the paths the f16 convolutions do not take. On the CPU interpreter: i8 bitwise the
``--no-tensor-cores`` result and the exact product; tf32 bitwise the f32 sums (in the loop's
order) of the TF32-rounded operands, which is what ``--no-tensor-cores`` computes from them, and
within 1e-3 relative (scaled by sqrt(K)) of their f64 product. Small odd extents."""

from __future__ import annotations

import math

import numpy as np
import pytest

import kernc
from conftest import example_reference

CONV = example_reference("conv_common")

FWD_I8 = """
layout nhwc(N, H, W, C) = (N, H, W, C):(H * W * C, W * C, C, 1);

kernel conv_i8(x: i8[N, H, W, C] view as nhwc(N, H, W, C), w: i8[K, R, S, C] view,
               y: i32[N, OH, OW, K] view as nhwc(N, OH, OW, K),
               sh: index, sw: index, ph: index, pw: index, dh: index, dw: index)
        over (n, oh, ow, k) in (N, OH, OW, K) {
    let m = (n * OH + oh) * OW + ow;
    let acc: i32 = 0;
    for r in 0..R {
        for s in 0..S {
            for c in 0..C {
                let kk = (r * S + s) * C + c;
                acc += i32(x.checked(im2col(H, W, C, R, S, OH, OW, sh, sw, ph, pw, dh, dw)(m, kk)))
                       * i32(w[k, r, s, c]);
            }
        }
    }
    y[n, oh, ow, k] = acc;
}
"""

WGRAD_TF32 = """
layout nhwc(N, H, W, C) = (N, H, W, C):(H * W * C, W * C, C, 1);
layout kxm(K, M) = (K, M):(1, K);

@tf32
kernel wgrad_tf32(x: f32[N, H, W, C] view as nhwc(N, H, W, C), dy: f32[K, M] view as kxm(K, M),
                  gw: f32[K, R, S, C] view, OH: index, OW: index,
                  sh: index, sw: index, ph: index, pw: index, dh: index, dw: index)
        over (k, r, s, c) in (K, R, S, C) {
    let kk = (r * S + s) * C + c;
    let acc = 0.0;
    for m in 0..M {
        acc += dy[k, m] * x.checked(im2col(H, W, C, R, S, OH, OW, sh, sw, ph, pw, dh, dw)(m, kk));
    }
    gw[k, r, s, c] = acc;
}
"""


@pytest.fixture(scope="module")
def i8_builds():
    return kernc.compile(FWD_I8), kernc.compile(FWD_I8, tensor_cores=False)


@pytest.fixture(scope="module")
def tf32_builds():
    return kernc.compile(WGRAD_TF32), kernc.compile(WGRAD_TF32, tensor_cores=False)


def _copy(inputs):
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}


def _geometry(stride, pad, dil):
    return {"sh": stride[0], "sw": stride[1], "ph": pad[0], "pw": pad[1], "dh": dil[0], "dw": dil[1]}


def test_remarks_say_both_tiles_are_k_contiguous(capsys):
    from kernc.compiler import Compilation, CompileOptions

    Compilation(FWD_I8, "t.kern", CompileOptions(remarks=True), use_cache=False)
    Compilation(WGRAD_TF32, "t.kern", CompileOptions(remarks=True), use_cache=False)
    err = capsys.readouterr().err
    assert ("'conv_i8' on tensor cores: 128x128 block tiles in chunks of 32 of k, 2x4 warps of 64x32 items, "
            "mma.sync m16n8k32 (i8 products, i32 sums)") in err
    assert ("x of '(n, oh, ow)': 128x32, k contiguous, ldmatrix.x4; w of 'k': 128x32, k contiguous, "
            "ldmatrix.x2), rows padded by 16 elements (ldmatrix without bank conflicts); its nest of 3 loops") in err
    assert "'wgrad_tf32' on tensor cores" in err and "mma.sync m16n8k8 (tf32 products, f32 sums)" in err
    assert ("dy of 'k': 128x32, k contiguous, ldmatrix.x4 (staged m-major across its loads along 'k'); "
            "x of '(r, s, c)': 128x32, k contiguous, ldmatrix.x2 (staged n-major across its loads along "
            "'(r, s, c)')), rows padded by 4 elements (ldmatrix without bank conflicts; the staging stores of "
            "dy and x conflict 4-way)") in err


def test_ir_has_no_ldmatrix_trans(i8_builds, tf32_builds):
    """Per k step of a chunk of 32 (i8: one k32 step, tf32: four k8 steps) 4 ldmatrix.x4 and 4
    ldmatrix.x2 without .trans and 16 mma.sync per warp."""
    for mod, frag, steps in ((i8_builds[0], "vector<4x4xi8>", 1), (tf32_builds[0], "vector<4x1xf32>", 4)):
        gpu = mod._compilation.gpu_ir()
        assert gpu.count("transpose = false") == 8 * steps and "transpose = true" not in gpu
        assert frag in gpu and gpu.count("nvgpu.mma.sync") == 16 * steps
    assert "nvgpu.mma.sync" not in i8_builds[1]._compilation.gpu_ir()


# (N, H, W, C, K, R, S, stride, pad, dil): R*S*C not a multiple of 32, K past one 128-column tile;
# a 1x1 filter over strided pixels
FWD = [(2, 7, 9, 5, 130, 3, 2, (2, 1), (1, 0), (1, 2)),
       (1, 5, 6, 33, 9, 1, 1, (2, 3), (0, 0), (1, 1))]


@pytest.mark.parametrize("shape", FWD, ids=lambda s: "x".join(map(str, s[:7])))
def test_i8_conv_is_bitwise_the_cuda_core_result_and_exact(shape, i8_builds):
    N, H, W, C, K, R, S, stride, pad, dil = shape
    OH = CONV.output_extent(H, R, stride[0], pad[0], dil[0])
    OW = CONV.output_extent(W, S, stride[1], pad[1], dil[1])
    rng = np.random.default_rng(N * H * W * C + K)
    inputs = {"x": rng.integers(-128, 128, (N, H, W, C)).astype(np.int8),
              "w": rng.integers(-128, 128, (K, R, S, C)).astype(np.int8),
              "y": np.full((N, OH, OW, K), -1, np.int32), **_geometry(stride, pad, dil)}
    inputs["x"].flat[0], inputs["w"].flat[0] = -128, -128  # the largest product
    on, off = _copy(inputs), _copy(inputs)
    result = i8_builds[0].conv_i8(**on)
    assert result.grid == -(-(N * OH * OW) // 128) * -(-K // 128)
    i8_builds[1].conv_i8(**off)
    np.testing.assert_array_equal(on["y"], off["y"])
    ref = example_reference("conv2d_fwd_f16")
    want = ref.conv2d_f64(inputs["x"], inputs["w"], OH, OW, stride, pad, dil)  # exact: |sums| < 2^53
    np.testing.assert_array_equal(on["y"].astype(np.int64), want.astype(np.int64))


# (N, OH, OW, C, K, R, S, stride, pad, dil): M = N*OH*OW not a multiple of 8, K past one tile
WGRAD = [(2, 5, 7, 7, 33, 3, 2, (1, 2), (1, 1), (2, 1)),
         (1, 3, 4, 15, 130, 1, 3, (1, 1), (0, 1), (1, 1))]


@pytest.mark.parametrize("shape", WGRAD, ids=lambda s: "x".join(map(str, s[:7])))
def test_tf32_wgrad_is_the_f32_sums_of_the_rounded_operands(shape, tf32_builds):
    N, OH, OW, C, K, R, S, stride, pad, dil = shape
    H = CONV.input_extent(OH, R, stride[0], pad[0], dil[0])
    W = CONV.input_extent(OW, S, stride[1], pad[1], dil[1])
    rng = np.random.default_rng(N * OH * OW * C + K)
    inputs = {"x": rng.standard_normal((N, H, W, C)).astype(np.float32),
              "dy": rng.standard_normal((N * OH * OW, K)).astype(np.float32),
              "gw": np.full((K, R, S, C), np.nan, np.float32), "OH": OH, "OW": OW, **_geometry(stride, pad, dil)}
    tf32 = example_reference("gemm_tf32").round_tf32
    on = _copy(inputs)
    result = tf32_builds[0].wgrad_tf32(**on)
    assert result.grid == -(-K // 128) * -(-(R * S * C) // 128)
    rounded = {**_copy(inputs), "x": tf32(inputs["x"]), "dy": tf32(inputs["dy"])}
    assert not np.array_equal(rounded["x"], inputs["x"])
    off = _copy(rounded)
    tf32_builds[1].wgrad_tf32(**off)  # CUDA cores, plain f32, on the rounded operands: the loop's order
    np.testing.assert_array_equal(on["gw"], off["gw"])
    ref = example_reference("conv2d_wgrad_f16")
    geo = ref._geometry(inputs)
    want = ref.wgrad_f64(rounded["x"], rounded["dy"], *geo)
    scale = ref.wgrad_f64(np.abs(rounded["x"]), np.abs(rounded["dy"]), *geo)
    M = N * OH * OW
    assert np.all(np.abs(on["gw"] - want) <= 1e-3 * math.sqrt(M) * scale / M + 1e-30)
