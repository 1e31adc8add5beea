"""Regression (breaker trial): ``@tile(...) @tensor_cores`` compiled with ``--no-tile`` was the error
"the kernel asks for a CUDA-core tile with @tile", though ``--no-tile`` overrides ``@tile``: the
tensor-core passes still read the attribute. Under ``tile=False`` the kernel now runs on tensor
cores as ``@tensor_cores`` asks; with ``tile=True`` the two attributes still conflict."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions
from kernc.errors import CompileError

SRC = """@tile(64, 64, 16) @tensor_cores
kernel g(a: f16[M, K] view, b: f16[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for k in 0..K { acc += a[i, k] * b[k, j]; }
    c[i, j] = acc;
}"""


@pytest.mark.parametrize("arch, how", [("sm_80", "mma.sync"), ("sm_90a", "wgmma")])
def test_no_tile_lets_tensor_cores_take_a_tile_attributed_kernel(arch, how):
    comp = Compilation(SRC, "t.kern", CompileOptions(arch=arch, tile=False), use_cache=False)
    assert comp.tensor_core_kernels() == {"g": how}
    if arch == "sm_80":
        rng = np.random.default_rng(4)
        a = rng.integers(-3, 4, (40, 24)).astype(np.float16)
        b = rng.integers(-3, 4, (24, 36)).astype(np.float16)
        c = np.zeros((40, 36), np.float32)
        assert Module(comp).g(a, b, c).tensor_cores == how
        np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))
    with pytest.raises(CompileError, match="asks for a CUDA-core tile with @tile"):
        Compilation(SRC, "t.kern", CompileOptions(arch=arch), use_cache=False).gpu_ir()
