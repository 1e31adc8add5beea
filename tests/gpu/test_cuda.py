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
    for out, want in expected.items():
        # GPU math (libdevice) may differ from numpy by a few ulps
        np.testing.assert_allclose(args[out].get(), want, rtol=1e-5, atol=1e-6, err_msg=f"{name}.{out} P={P}")


def test_gpu_and_cpu_agree_bitwise_on_saxpy():
    import cupy as cp

    mod = compiled_example("saxpy")
    x = np.linspace(-1, 1, 5000, dtype=np.float32)
    y = np.cos(x).astype(np.float32)
    yc, yg = y.copy(), cp.asarray(y)
    mod.saxpy(np.float32(0.3), x, yc)
    mod.saxpy(np.float32(0.3), cp.asarray(x), yg)
    assert np.array_equal(yg.get(), yc)


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
