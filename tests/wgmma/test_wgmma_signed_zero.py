"""Regression (breaker trial): a wgmma contraction whose sum starts at a literal ``-0.0`` began from
``llvm.mlir.zero`` (``+0.0``, since ``-0.0 == 0.0``), so an empty loop gave +0.0 where the loop, the
CUDA-core tiles and mma.sync give -0.0. (With products, the tensor cores' sum of -0.0 terms is
+0.0: the documented tensor-core order, not this.)"""

from __future__ import annotations

import numpy as np

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions

SRC = """kernel g(a: f16[M, K] view, b: f16[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = -0.0;
    for k in 0..K { acc += a[i, k] * b[k, j]; }
    c[i, j] = acc;
}"""


def test_an_empty_sum_from_minus_zero_stays_minus_zero_on_wgmma():
    mod = Module(Compilation(SRC, "z.kern", CompileOptions(arch="sm_90a"), use_cache=False), choose_tile=True)
    c = np.ones((64, 72), np.float32)
    res = mod.g(np.zeros((64, 0), np.float16), np.zeros((0, 72), np.float16), c)
    assert res.tensor_cores == "wgmma"
    assert (c == 0).all() and np.signbit(c).all()
