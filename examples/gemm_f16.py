"""NumPy reference of ``examples/gemm_f16.kern`` (kernel ``gemm_f16``): ``c = a @ b``, f16 inputs,
f32 sums.

:func:`gemm_f32_sums` sums ``k`` ascending in float32 from 0, each product exact (two f16
significands fit f32's) and each sum rounded: the order of the CPU interpreter's ``mma.sync``
(``backend/interpreter/nvgpu.py``), so on the CPU the kernel matches it bit for bit, on tensor
cores or on CUDA cores alike. A GPU's tensor cores add in an order of their own: compare those
results with :func:`gemm_f64` within a tolerance (1e-3 relative, scaled by ``sqrt(K)``).
``make_inputs`` shapes the problem as ``examples/gemm.py`` does.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm import factor2  # noqa: E402

DTYPE = np.float16
#: How far a GPU's result may be from :func:`reference` (tensor cores add in their own order; the
#: sums of ``make_inputs``' sizes, K <= 37 standard normal products, are below 40 in magnitude).
GPU_TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}


def make_inputs(P: int, rng: np.random.Generator, dtype=DTYPE) -> dict:
    M, N = factor2(P)
    K = 1 + 2 * (P % 19)
    return {
        "a": rng.standard_normal((M, K)).astype(dtype),
        "b": rng.standard_normal((K, N)).astype(dtype),
        "c": np.full((M, N), np.nan, np.float32),
    }


def gemm_f32_sums(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of ``(M, K)`` and ``(K, N)`` f16/bf16 arrays as float32, summed ``k`` ascending."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):
        acc = acc + a[:, k:k + 1] * b[k]
    return acc


def gemm_f64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` in float64 (the exact products, sums rounded in f64)."""
    return np.asarray(a, np.float64) @ np.asarray(b, np.float64)


def reference(inputs: dict) -> dict:
    return {"c": gemm_f32_sums(inputs["a"], inputs["b"])}
