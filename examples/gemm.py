"""NumPy reference of ``examples/gemm.kern`` (kernel ``gemm``): ``c = a @ b``.

The problem is 2-D (``P = M*N``): ``make_inputs`` factors ``P`` as ``M * N`` (``M`` the largest
divisor of ``P`` not above its square root) and picks ``K`` from ``P`` (odd, not a multiple of the
pass's 16-wide chunks). :func:`gemm` sums ``k`` ascending in float32, a product then a sum per step,
as the kernel does, so it matches bit for bit (``numpy.matmul`` sums in another order).
"""

from __future__ import annotations

import math

import numpy as np


def factor2(P: int) -> tuple[int, int]:
    """``(M, N)`` with ``M * N == P``, ``M <= N`` as close as possible (``(0, 1)`` for 0)."""
    if P == 0:
        return 0, 1
    m = max(d for d in range(1, math.isqrt(P) + 1) if P % d == 0)
    return m, P // m


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    M, N = factor2(P)
    K = 1 + 2 * (P % 19)
    return {
        "a": rng.standard_normal((M, K)).astype(np.float32),
        "b": rng.standard_normal((K, N)).astype(np.float32),
        "c": np.full((M, N), np.nan, np.float32),
    }


def gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` of ``(M, K)`` and ``(K, N)`` arrays in their dtype, summed ``k`` ascending from 0
    (each step ``acc + a[:, k] * b[k, :]``, rounded twice, like the kernel without ``--fmad``)."""
    acc = np.zeros((a.shape[0], b.shape[1]), a.dtype)
    for k in range(a.shape[1]):
        acc = acc + a[:, k:k + 1] * b[k]
    return acc


def reference(inputs: dict) -> dict:
    return {"c": gemm(np.asarray(inputs["a"], np.float32), np.asarray(inputs["b"], np.float32))}
