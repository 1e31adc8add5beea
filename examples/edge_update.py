"""NumPy reference of ``examples/edge_update.kern`` (kernel ``edge_update``).

For every edge ``e < E``: ``p = pos[src[e]]``, ``force[dst[e]] += w[e] * p`` (duplicate ``dst`` entries
are summed) and ``energy[0] += w[e] * |p|^2``. ``pos`` and ``force`` use Caspar's layout: numpy arrays
of shape ``(4, V)`` (``caspar_size(3)`` rows) whose flat memory holds vertex ``i`` at ``4*i .. 4*i+3``,
the last slot padding the kernel never touches (the rows of a ``(V, 4)`` array, reshaped).

``make_inputs`` is duplicate-heavy (``V`` is about ``E / 16``) and draws every value on a grid of
multiples of 1/4 in ``[-1, 1]`` (``w`` in ``[0, 1]``), so every float32 partial sum the kernel forms
is exact whatever the summation order; the reference sums in float64 and rounds once at the end.
"""

from __future__ import annotations

import numpy as np


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    """Arguments of ``edge_update`` for ``E = P`` edges over ``V = P // 16 + 2`` vertices."""
    E = P
    V = E // 16 + 2
    pos = (rng.integers(-4, 5, size=(V, 4)) / 4).astype(np.float32)
    pos[:, 3] = 7.0  # padding: a kernel that read it would be visibly wrong
    force = (rng.integers(-8, 9, size=(V, 4)) / 4).astype(np.float32)
    force[:, 3] = -3.0  # padding: must stay as it is
    return {
        "pos": pos.reshape(4, V),
        "src": rng.integers(0, V, size=E).astype(np.uint32),
        "dst": rng.integers(0, V, size=E).astype(np.uint32),
        "w": (rng.integers(0, 5, size=E) / 4).astype(np.float32),
        "force": force.reshape(4, V),
        "energy": np.array([0.5], np.float32),
    }


def reference(inputs: dict) -> dict:
    """Expected final contents of ``force`` (shape ``(4, V)``) and ``energy`` (shape ``(1,)``)."""
    pos = np.asarray(inputs["pos"], dtype=np.float64).reshape(-1, 4)  # vertex i: row i
    src = np.asarray(inputs["src"]).astype(np.int64)
    dst = np.asarray(inputs["dst"]).astype(np.int64)
    w = np.asarray(inputs["w"], dtype=np.float64)
    p = pos[src, :3]
    force = np.array(inputs["force"], dtype=np.float64, copy=True).reshape(-1, 4)
    contrib = np.zeros((force.shape[0], 3))
    np.add.at(contrib, dst, w[:, None] * p)
    force[:, :3] += contrib
    energy = np.asarray(inputs["energy"], dtype=np.float64) + np.sum(w * np.sum(p * p, axis=1))
    return {"force": force.astype(np.float32).reshape(4, -1), "energy": energy.astype(np.float32)}
