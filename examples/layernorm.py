"""NumPy reference of ``examples/layernorm.kern``: kernel ``layernorm`` (forward) and
``layernorm_bwd`` (:func:`backward`).

Forward, per row ``r`` of ``x: f32[R, N]``: ``mean = sum(x) / N``, the biased variance
``var = sum((x - mean)^2) / N``, ``rstd = 1 / sqrt(var + eps)``, ``y = (x - mean) * rstd * w + b``.
Backward, with ``xhat = (x - mean) * rstd`` and ``g = dy * w``: ``dx = (g - mean_j(g * xhat) * xhat
- mean_j(g)) * rstd``, ``dw += sum_r dy * xhat``, ``db += sum_r dy``. Computed in float64 and
rounded to float32 (the kernel computes in float32, in another order: :data:`TOLERANCE`).
``make_inputs`` factors ``P = R * N`` as ``transpose.factor2`` does.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from transpose import factor2  # noqa: E402

#: float32 sums in a fixed tree against float64: a few ulps of the row's scale.
TOLERANCE = {"rtol": 1e-5, "atol": 2e-6}


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    R, N = factor2(P)
    f = np.float32
    return {
        "x": (1.5 + 2 * rng.standard_normal((R, N))).astype(f),
        "w": rng.uniform(0.5, 1.5, N).astype(f), "b": rng.standard_normal(N).astype(f),
        "y": np.zeros((R, N), f), "mean": np.zeros(R, f), "rstd": np.zeros(R, f), "eps": f(1e-5),
    }


def reference(inputs: dict) -> dict:
    x = np.asarray(inputs["x"], np.float64)
    R, N = x.shape
    if x.size == 0:
        return {"y": np.zeros((R, N), np.float32), "mean": np.zeros(R, np.float32),
                "rstd": np.zeros(R, np.float32)}
    mean = x.mean(axis=1)
    var = ((x - mean[:, None]) ** 2).mean(axis=1)
    rstd = 1 / np.sqrt(var + float(inputs["eps"]))
    y = (x - mean[:, None]) * rstd[:, None] * inputs["w"] + inputs["b"]
    f = np.float32
    return {"y": y.astype(f), "mean": mean.astype(f), "rstd": rstd.astype(f)}


def backward_inputs(R: int, N: int, rng: np.random.Generator) -> dict:
    """Arguments of ``layernorm_bwd`` (``mean``/``rstd`` from the forward reference)."""
    f = np.float32
    fwd = make_inputs(0, rng)
    fwd.update(x=(1.5 + 2 * rng.standard_normal((R, N))).astype(f), w=rng.uniform(0.5, 1.5, N).astype(f),
               b=np.zeros(N, f), y=np.zeros((R, N), f), mean=np.zeros(R, f), rstd=np.zeros(R, f))
    stats = reference(fwd) if R * N else {"mean": np.zeros(R, f), "rstd": np.zeros(R, f)}
    return {"x": fwd["x"], "w": fwd["w"], "mean": stats["mean"], "rstd": stats["rstd"],
            "dy": rng.standard_normal((R, N)).astype(f), "dx": np.zeros((R, N), f),
            "dw": np.zeros(N, f), "db": np.zeros(N, f)}


def backward(inputs: dict) -> dict:
    """Expected ``dx``, ``dw``, ``db`` of ``layernorm_bwd`` (``dw``/``db`` added onto theirs)."""
    x, dy = (np.asarray(inputs[k], np.float64) for k in ("x", "dy"))
    w = np.asarray(inputs["w"], np.float64)
    mean, rstd = (np.asarray(inputs[k], np.float64)[:, None] for k in ("mean", "rstd"))
    xhat = (x - mean) * rstd
    g = dy * w
    N = x.shape[1]
    c1 = (g * xhat).sum(axis=1, keepdims=True) / N
    c2 = g.sum(axis=1, keepdims=True) / N
    f = np.float32
    return {"dx": ((g - c1 * xhat - c2) * rstd).astype(f),
            "dw": (inputs["dw"] + (dy * xhat).sum(axis=0)).astype(f),
            "db": (inputs["db"] + dy.sum(axis=0)).astype(f)}
