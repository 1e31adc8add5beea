"""kern-tile-contractions' cp.async staging on a CUDA GPU: the tiled gemm (sm_80 and later:
``cp.async`` copies, a group per chunk) bitwise equal to the same kernel with plain-load staging
(``async_copy=False``), to the untiled kernel and to the CPU interpreter (no ``--fmad``: the same
products and sums, ``k`` ascending). The CPU side of the same semantics: tests/tile/test_tile_async_copy.py.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import EXAMPLES

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shape", [(70, 37, 65), (256, 64, 192)])
def test_cp_async_gemm_on_gpu_bitwise_equals_plain_untiled_and_cpu(shape):
    import cupy as cp

    import kernc

    if int(cp.cuda.Device().compute_capability) < 80:
        pytest.skip("the device has no cp.async (sm_80 and later)")
    src = open(os.path.join(EXAMPLES, "gemm.kern")).read()
    # sm_80 PTX: cp.async, and the driver JIT-compiles it for any later device
    builds = {name: kernc.compile(src, arch="sm_80", **kw)
              for name, kw in (("async", {}), ("plain", {"async_copy": False}), ("untiled", {"tile": False}))}
    assert "cp.async.ca.shared.global" in builds["async"].ptx
    M, K, N = shape
    rng = np.random.default_rng(M + K + N)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    cpu = np.zeros((M, N), np.float32)
    builds["untiled"].gemm(a, b, cpu)
    for name, mod in builds.items():
        c = cp.zeros((M, N), cp.float32)
        mod.gemm(cp.asarray(a), cp.asarray(b), c)
        cp.cuda.runtime.deviceSynchronize()
        assert np.array_equal(c.get().view(np.int32), cpu.view(np.int32)), name
