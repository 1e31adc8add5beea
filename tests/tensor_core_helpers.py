"""What the tensor-core GEMM tests (tests/mma, tests/wgmma, tests/tma) share: the gemm examples'
inputs and builds, the f64 tolerance they meet, gemm_f16's GPU IR run on the CPU interpreter, and
the batched gemm with a transposed operand; and the f16 convolutions' shapes, inputs and checks
(within the f64 tolerance and bit for bit the interpreter's documented order)."""

from __future__ import annotations

import math
import os

import numpy as np

import kernc
from conftest import EXAMPLES, example_reference

_sm90a_modules: dict = {}


def sm90_cupy():
    """CuPy, for a GPU test that needs an ``sm_90`` device (wgmma, TMA); skips the test (``pytest.skip``)
    without CuPy, a CUDA driver or such a device."""
    import pytest

    cp = pytest.importorskip("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA device")
    except Exception:  # noqa: BLE001 -- no driver
        pytest.skip("no CUDA device")
    if cp.cuda.Device().compute_capability < "90":
        pytest.skip("needs an sm_90 device")
    return cp


def compiled_sm90a(name: str, **options):
    """The kernc Module of ``examples/NAME.kern`` for ``arch="sm_90a"`` with the compile ``options``
    (e.g. ``tma=True``), compiled once per test session and options."""
    key = (name, tuple(sorted(options.items())))
    if key not in _sm90a_modules:
        _sm90a_modules[key] = kernc.compile_file(os.path.join(EXAMPLES, f"{name}.kern"), arch="sm_90a", **options)
    return _sm90a_modules[key]


def gemm_dtype(name: str):
    """The operand dtype of the example ``gemm_f16`` or ``gemm_bf16`` (``KeyError`` for others)."""
    import ml_dtypes

    return {"gemm_f16": np.float16, "gemm_bf16": ml_dtypes.bfloat16}[name]


def gemm_inputs(M: int, K: int, N: int, dtype, seed: int = 0):
    """Standard-normal ``a`` (M x K) and ``b`` (K x N) of ``dtype``, seeded by ``seed`` and the shape."""
    rng = np.random.default_rng(seed + M * 7 + K * 5 + N)
    return rng.standard_normal((M, K)).astype(dtype), rng.standard_normal((K, N)).astype(dtype)


def assert_within_f64(c, a, b):
    """``c`` (M x N) within 1e-3 relative of the f64 product ``a @ b``, scaled by sqrt(K) (the target
    of issue 25); asserts, naming the largest error."""
    from conftest import example_reference

    ref = example_reference("gemm_f16").gemm_f64(a, b)
    K = a.shape[1]
    scale = np.abs(np.asarray(a, np.float64)) @ np.abs(np.asarray(b, np.float64))
    err = np.abs(c - ref)
    assert np.all(err <= 1e-3 * math.sqrt(K) * np.maximum(scale, 1e-30) / K + 1e-30), err.max()


def check_gemm_example(mod, name: str, M: int, K: int, N: int):
    """``mod.NAME`` (the example gemm_f16 or gemm_bf16 on 128 x 128 tiles) on :func:`gemm_inputs` of
    M x K by K x N: one block per tile, within :func:`assert_within_f64`, and bit for bit the
    interpreter's documented order (k ascending from 0 in f32, exact products); asserts."""
    from conftest import example_reference

    a, b = gemm_inputs(M, K, N, gemm_dtype(name))
    c = np.full((M, N), np.nan, np.float32)
    result = getattr(mod, name)(a, b, c)
    assert result.grid == -(-M // 128) * -(-N // 128)
    assert_within_f64(c, a, b)
    np.testing.assert_array_equal(c, example_reference(name).gemm_f32_sums(a, b))


def gemm_f16_gpu_ir(**options) -> str:
    """The GPU IR text of ``examples/gemm_f16.kern`` under ``CompileOptions(**options)`` (e.g.
    ``arch="sm_90a", tma=True``), compiled afresh (no cache)."""
    from kernc.compiler import Compilation, CompileOptions

    src = open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read()
    return Compilation(src, "gemm_f16.kern", CompileOptions(**options), use_cache=False).gpu_ir()


def run_gemm_f16_ir(text: str, M: int, K: int, N: int, extra=lambda a: []):
    """Run gemm_f16's GPU IR ``text`` on the CPU interpreter as one block of 256 threads on
    :func:`gemm_inputs` (f16): ``(a, b, c)``, c the f32 M x N result (zero-initialised). ``extra(a)``
    gives the arguments after M, K, N (e.g. a's tensor map). Raises what the interpreter raises
    (``KerncRuntimeError`` for a race or an async misuse)."""
    from kernc.backend.interpreter import Interpreter
    from kernc.compiler import context
    from kernc.support.mlir import ir

    with context():
        it = Interpreter(ir.Module.parse(text))
    a, b = gemm_inputs(M, K, N, np.float16)
    c = np.zeros(M * N, np.float32)
    it.run("gemm_f16", 1, 256, [a.reshape(-1), b.reshape(-1), c, M, K, N, *extra(a)])
    return a, b, c.reshape(M, N)


BATCHED_TRANSPOSED_GEMM = """
// a batch of products of a transposed a (stored k-major: its staging runs along i, not k)
kernel bgemm(at: f16[B, K, M] view, b: f16[B, K, N] view, c: f32[B, M, N] view) over (q, i, j) in (B, M, N) {
    let acc = 0.0;
    for k in 0..K {
        acc += at[q, k, i] * b[q, k, j];
    }
    c[q, i, j] = acc;
}
"""


def check_batched_transposed_gemm(mod, batch: int):
    """``mod.bgemm`` (:data:`BATCHED_TRANSPOSED_GEMM`) on ``batch`` products of 21 x 19 by 19 x 35
    within 1e-5 of the f64 einsum; asserts."""
    rng = np.random.default_rng(3)
    at = rng.standard_normal((batch, 19, 21)).astype(np.float16)
    b = rng.standard_normal((batch, 19, 35)).astype(np.float16)
    c = np.zeros((batch, 21, 35), np.float32)
    mod.bgemm(at, b, c)
    want = np.einsum("qki,qkj->qij", at.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


# -- the f16 convolutions (tests/mma/test_conv_tensor_cores.py, tests/mma/test_rolled_staging.py,
#    tests/wgmma/test_wgmma_convolutions.py)

#: the convolution examples' shared geometry module (output_extent, input_extent)
CONV = example_reference("conv_common")


# (N, H, W, C, K, R, S, stride, pad, dil): R*S*C not a multiple of 16, N*OH*OW over one 128-row
# tile, K past one 128-column tile; one pixel and one channel; a 1x1 filter
FWD = [(2, 7, 9, 5, 19, 3, 2, (2, 1), (1, 0), (1, 2)),
       (3, 9, 11, 16, 130, 3, 3, (1, 1), (1, 1), (1, 1)),
       (1, 1, 1, 1, 1, 1, 1, (1, 1), (0, 0), (1, 1)),
       (1, 5, 6, 33, 9, 1, 1, (2, 3), (0, 0), (1, 1))]
# (N, OH, OW, C, K, R, S, stride, pad, dil): M = N*OH*OW not a multiple of 32, K past one tile, the
# flattened (r, s, c) past one tile; one output pixel
WGRAD = [(2, 5, 7, 7, 33, 3, 2, (1, 2), (1, 1), (2, 1)),
         (1, 3, 4, 15, 130, 3, 3, (1, 1), (1, 1), (1, 1)),
         (1, 1, 1, 1, 1, 1, 1, (1, 1), (0, 0), (1, 1))]


def within_f64(got, want, scale, K):
    """Within 1e-3 relative of the f64 result, scaled by sqrt(K) (the target of issue 25): ``scale``
    is the same contraction of the operands' magnitudes."""
    err = np.abs(got - want)
    assert np.all(err <= 1e-3 * math.sqrt(max(K, 1)) * scale / max(K, 1) + 1e-30), err.max()


def fwd_inputs(N, H, W, C, K, R, S, stride, pad, dil, seed=0):
    rng = np.random.default_rng(seed + N * H * W * C + K)
    OH = CONV.output_extent(H, R, stride[0], pad[0], dil[0])
    OW = CONV.output_extent(W, S, stride[1], pad[1], dil[1])
    return {"x": rng.standard_normal((N, H, W, C)).astype(np.float16),
            "w": rng.standard_normal((K, R, S, C)).astype(np.float16),
            "y": np.full((N, OH, OW, K), np.nan, np.float32),
            "sh": stride[0], "sw": stride[1], "ph": pad[0], "pw": pad[1], "dh": dil[0], "dw": dil[1]}


def wgrad_inputs(N, OH, OW, C, K, R, S, stride, pad, dil, seed=0):
    rng = np.random.default_rng(seed + N * OH * OW * C + K)
    H = CONV.input_extent(OH, R, stride[0], pad[0], dil[0])
    W = CONV.input_extent(OW, S, stride[1], pad[1], dil[1])
    return {"x": rng.standard_normal((N, H, W, C)).astype(np.float16),
            "dy": rng.standard_normal((N * OH * OW, K)).astype(np.float16),
            "gw": np.full((K, R, S, C), np.nan, np.float32), "OH": OH, "OW": OW,
            "sh": stride[0], "sw": stride[1], "ph": pad[0], "pw": pad[1], "dh": dil[0], "dw": dil[1]}


def copy_inputs(inputs):
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}


def check_fwd(mod, inputs):
    ref = example_reference("conv2d_fwd_f16")
    args = copy_inputs(inputs)
    mod.conv2d_fwd_f16(**args)
    OH, OW, stride, pad, dil = ref._geometry(inputs)
    want = ref.conv2d_f64(inputs["x"], inputs["w"], OH, OW, stride, pad, dil)
    scale = ref.conv2d_f64(np.abs(inputs["x"]), np.abs(inputs["w"]), OH, OW, stride, pad, dil)
    within_f64(args["y"], want, scale, int(np.prod(inputs["w"].shape[1:])))
    # the interpreter's order ((r, s, c) ascending from 0 in f32, exact products): bit for bit
    np.testing.assert_array_equal(args["y"], ref.reference(copy_inputs(inputs))["y"])
    return args["y"]


def check_wgrad(mod, inputs):
    ref = example_reference("conv2d_wgrad_f16")
    args = copy_inputs(inputs)
    mod.conv2d_wgrad_f16(**args)
    geo = ref._geometry(inputs)
    want = ref.wgrad_f64(inputs["x"], inputs["dy"], *geo)
    scale = ref.wgrad_f64(np.abs(inputs["x"]), np.abs(inputs["dy"]), *geo)
    within_f64(args["gw"], want, scale, inputs["dy"].shape[0])
    np.testing.assert_array_equal(args["gw"], ref.reference(copy_inputs(inputs))["gw"])
    return args["gw"]


def narrow_block_n(monkeypatch, block_n: int) -> None:
    """Make the pipeline's kern-wgmma-contractions build with ``block_n`` (the N of its wgmma and
    its block tile's columns) for the rest of the test (``monkeypatch``: pytest's fixture or a
    ``MonkeyPatch.context()``)."""
    from kernc.passes import pipeline
    from kernc.passes.wgmma_contractions import WgmmaContractions

    real = pipeline.kern_to_gpu

    def narrow(**kw):
        passes = real(**kw)
        for p in passes:
            if p.name == WgmmaContractions.name:  # (an OnDemand: the pass it builds)
                p.built().block_n = block_n
        return passes
    monkeypatch.setattr(pipeline, "kern_to_gpu", narrow)
