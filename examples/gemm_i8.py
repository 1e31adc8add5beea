"""NumPy reference of ``examples/gemm_i8.kern`` (kernel ``gemm_i8``): ``c = a @ b``, signed i8
inputs, i32 sums.

:func:`gemm_i32` is exact (int64 products and sums, wrapped to int32 as the kernel's ``+=`` does;
``make_inputs``' sizes never leave i32): the kernel matches it bit for bit on the CPU interpreter
and on a GPU, on tensor cores (``mma.sync`` m16n8k32) or CUDA cores alike. ``make_inputs`` shapes
the problem as ``examples/gemm.py`` does, the values uniform over all of i8 (-128 .. 127).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm import factor2  # noqa: E402

#: Integer sums are exact: the GPU's result is numpy's.
GPU_TOLERANCE = {"rtol": 0, "atol": 0}


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    M, N = factor2(P)
    K = 1 + 2 * (P % 19)
    return {
        "a": rng.integers(-128, 128, (M, K)).astype(np.int8),
        "b": rng.integers(-128, 128, (K, N)).astype(np.int8),
        "c": np.full((M, N), -1, np.int32),
    }


def gemm_i32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of ``(M, K)`` and ``(K, N)`` int8 arrays: exact, wrapped to int32."""
    return (np.asarray(a, np.int64) @ np.asarray(b, np.int64)).astype(np.int32)


def reference(inputs: dict) -> dict:
    return {"c": gemm_i32(inputs["a"], inputs["b"])}
