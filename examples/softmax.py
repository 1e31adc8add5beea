"""NumPy reference of ``examples/softmax.kern`` (kernel ``softmax``): ``y`` = the softmax of each
row of ``x`` (``exp(x - max) / sum(exp(x - max))``, float32).

The problem is 2-D (``P = R*N``): ``make_inputs`` factors ``P`` as ``R * N`` with ``R`` the
largest divisor of ``P`` not above its square root (``transpose.factor2``), so a prime ``P`` is one
row of ``P`` items (the looped path past 4096).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transpose import factor2  # noqa: E402

#: The sums run in another order than numpy's (a fixed tree): a few ulps apart.
TOLERANCE = {"rtol": 1e-5, "atol": 1e-7}
#: ``exp`` is numpy's on the CPU interpreter and libm's ``expf`` in ``bench/cuda/softmax.cu``'s
#: emulation (libdevice's on a GPU): a few ulps apart, so the two agree within :data:`TOLERANCE`,
#: not bit for bit (the reductions' order is the same).
EXACT_VS_CUDA = False


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    R, N = factor2(P)
    return {"x": (4 * rng.standard_normal((R, N))).astype(np.float32), "y": np.zeros((R, N), np.float32)}


def reference(inputs: dict) -> dict:
    x = np.asarray(inputs["x"], dtype=np.float32)
    if x.size == 0:
        return {"y": np.zeros_like(x)}
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True, dtype=np.float32)).astype(np.float32)}
