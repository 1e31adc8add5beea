"""NumPy reference of ``examples/gemm_bf16.kern`` (kernel ``gemm_bf16``): ``c = a @ b``, bf16 inputs
(``ml_dtypes.bfloat16``), f32 sums -- as ``examples/gemm_f16.py`` (two bf16 significands fit f32's
too: every product is exact)."""

from __future__ import annotations

import ml_dtypes
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_f16 import GPU_TOLERANCE, gemm_f32_sums, gemm_f64  # noqa: E402, F401
from gemm_f16 import make_inputs as _make_inputs  # noqa: E402


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    return _make_inputs(P, rng, ml_dtypes.bfloat16)


def reference(inputs: dict) -> dict:
    return {"c": gemm_f32_sums(inputs["a"], inputs["b"])}
