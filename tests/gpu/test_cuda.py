"""The same end-to-end cases as ``tests/e2e/test_examples.py``, launched on a CUDA GPU via CuPy.

Marked ``gpu``: skipped cleanly (see ``tests/conftest.py``) where no device is present. Every
behaviour here also has a CPU-interpreter test of the same semantics.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import EXAMPLE_NAMES, compiled_example, example_reference

pytestmark = pytest.mark.gpu

SIZES = [0, 1, 31, 32, 33, 255, 256, 257, 1000, 4097]


@pytest.mark.parametrize("P", SIZES)
@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_on_gpu_matches_numpy(name, P):
    import cupy as cp

    mod = compiled_example(name)
    ref = example_reference(name)
    inputs = ref.make_inputs(P, np.random.default_rng(1234 + P))
    expected = ref.reference({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()})
    args = {k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    result = getattr(mod, name)(**args)
    cp.cuda.runtime.deviceSynchronize()
    assert result.device == "cuda"
    # GPU math (libdevice) may differ from numpy by a few ulps; tensor cores sum in an order of their
    # own (examples/gemm_f16.py: a reference may name its GPU tolerance)
    tol = getattr(ref, "GPU_TOLERANCE", {"rtol": 1e-5, "atol": 1e-6})
    for out, want in expected.items():
        np.testing.assert_allclose(args[out].get(), want, **tol, err_msg=f"{name}.{out} P={P}")


def test_gpu_and_cpu_agree_bitwise_on_saxpy():
    import cupy as cp

    mod = compiled_example("saxpy")
    x = np.linspace(-1, 1, 5000, dtype=np.float32)
    y = np.cos(x).astype(np.float32)
    yc, yg = y.copy(), cp.asarray(y)
    mod.saxpy(np.float32(0.3), x, yc)
    mod.saxpy(np.float32(0.3), cp.asarray(x), yg)
    assert np.array_equal(yg.get(), yc)


@pytest.mark.parametrize("fmad", [False, True])
def test_gpu_and_cpu_agree_bitwise_with_and_without_fmad(fmad):
    """--fmad contracts on the IR both devices run: fma.rn on the GPU, the exact fma on the CPU."""
    import cupy as cp

    import kernc

    src = ("kernel k(a: f32, x: f32[n] read, y: f32[n] add, d: f64[n] read, z: f64[n] write, "
           "h: f16[n] read, w: f16[n] write) over n { y += a * x; z = d * d - 1.0; "
           "let g: f16 = f16(h) * f16(h) + f16(1.0); w = f32(g); }")
    mod = kernc.compile(src, fmad=fmad)
    rng = np.random.default_rng(5)
    n = 1 << 16
    a = np.float32(1 + 2.0 ** -12)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    d = (1 + rng.standard_normal(n) * 1e-8).astype(np.float64)
    h = rng.standard_normal(n).astype(np.float16)
    cpu = [y.copy(), np.zeros(n), np.zeros(n, np.float16)]
    gpu = [cp.asarray(y), cp.zeros(n), cp.zeros(n, cp.float16)]
    mod.k(a, x, cpu[0], d, cpu[1], h, cpu[2])
    mod.k(a, cp.asarray(x), gpu[0], cp.asarray(d), gpu[1], cp.asarray(h), gpu[2])
    for c, g in zip(cpu, gpu):
        assert np.array_equal(g.get(), c)


def test_gpu_launch_validation():
    import cupy as cp

    from kernc import KerncLaunchError

    mod = compiled_example("saxpy")
    with pytest.raises(KerncLaunchError, match="different devices"):
        mod.saxpy(1.0, np.ones(4, np.float32), cp.ones(4, cp.float32))
    with pytest.raises(KerncLaunchError, match="argument 'x': expected dtype float32"):
        mod.saxpy(1.0, cp.ones(4, cp.float64), cp.ones(4, cp.float32))
    with pytest.raises(KerncLaunchError, match="size 'n' is 3 here but 4"):
        mod.saxpy(1.0, cp.ones(4, cp.float32), cp.ones(3, cp.float32))


def test_zero_size_gpu_launch_leaves_outputs():
    import cupy as cp

    mod = compiled_example("saxpy")
    res = mod.saxpy(1.0, cp.ones(0, cp.float32), cp.ones(0, cp.float32))
    assert res.grid == 0
