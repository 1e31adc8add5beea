"""NumPy reference of ``examples/transpose.kern`` (kernel ``transpose``): ``b = a.T``.

The problem is 2-D (``P = R*C``): ``make_inputs`` factors ``P`` as ``R * C`` with ``R`` the largest
divisor of ``P`` not above its square root (``R = 0, C = 1`` for ``P = 0``; ``R = 1`` for a prime),
so the launch has exactly ``P`` threads.
"""

from __future__ import annotations

import math

import numpy as np


def factor2(P: int) -> tuple[int, int]:
    """``(R, C)`` with ``R * C == P``, ``R <= C`` as close as possible."""
    if P == 0:
        return 0, 1
    r = max(d for d in range(1, math.isqrt(P) + 1) if P % d == 0)
    return r, P // r


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    R, C = factor2(P)
    return {
        "a": rng.standard_normal((R, C)).astype(np.float32),
        "b": np.zeros((C, R), np.float32),
    }


def reference(inputs: dict) -> dict:
    return {"b": np.ascontiguousarray(np.asarray(inputs["a"], np.float32).T)}
