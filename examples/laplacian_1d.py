"""NumPy reference of ``examples/laplacian_1d.kern`` (kernel ``laplacian_1d``).

For every edge ``t < n`` between nodes ``t`` and ``t+1``: ``d = k[t] * (u[t+1] - u[t])``,
``out[t] -= d`` and ``out[t+1] += d`` (``pair`` reads and an ``add pair`` write). ``u`` and ``out``
hold ``n1 = n + 2`` nodes: the last one is beyond the ``n + 1`` the accessors touch and must keep its
value.

Values are multiples of 1/8 in small ranges, so the float32 kernel is exact in any summation order;
the reference computes in float64 and rounds once at the end.
"""

from __future__ import annotations

import numpy as np


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    """Arguments of ``laplacian_1d`` for ``n = P`` edges (``n1 = P + 2`` nodes)."""
    n1 = P + 2
    return {
        "u": (rng.integers(-16, 17, size=n1) / 8).astype(np.float32),
        "k": (rng.integers(0, 17, size=P) / 8).astype(np.float32),
        "out": (rng.integers(-32, 33, size=n1) / 8).astype(np.float32),
    }


def reference(inputs: dict) -> dict:
    """Expected final contents of ``out``."""
    u = np.asarray(inputs["u"], dtype=np.float64)
    k = np.asarray(inputs["k"], dtype=np.float64)
    n = k.shape[0]
    d = k * (u[1:n + 1] - u[:n])
    out = np.array(inputs["out"], dtype=np.float64, copy=True)
    out[:n] -= d
    out[1:n + 1] += d
    return {"out": out.astype(np.float32)}
