"""Regression: ``@tensor_cores`` on an f16/bf16 gemm was a compile error on ``sm_90a`` ("it is not a
contraction kern-tile-contractions can tile"): kern-wgmma-contractions had taken the kernel, and
kern-mma-contractions, which runs after it, checked the attribute against the rewritten kernel. A
kernel on wgmma meets ``@tensor_cores``; it runs on wgmma as without the attribute."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions

SRC = """@tensor_cores
kernel g(a: T[M, K] view, b: T[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for k in 0..K { acc += a[i, k] * b[k, j]; }
    c[i, j] = acc;
}"""


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("tma", [False, True])
def test_tensor_cores_attribute_is_met_by_wgmma(dtype, tma):
    comp = Compilation(SRC.replace("T[", f"{dtype}["), "forced.kern",
                       CompileOptions(arch="sm_90a", tma=tma), use_cache=False)
    assert comp.tensor_core_kernels() == {"g": "wgmma"}
    if dtype == "f16" and not tma:  # on the CPU interpreter: the f32 sums of exact products
        rng = np.random.default_rng(0)
        a = rng.integers(-3, 4, (64, 32)).astype(np.float16)
        b = rng.integers(-3, 4, (32, 72)).astype(np.float16)
        c = np.zeros((64, 72), np.float32)
        res = Module(comp).g(a, b, c)
        assert res.tensor_cores == "wgmma"
        np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
