"""NumPy reference of ``examples/saxpy.kern`` (kernel ``saxpy``): ``y += a * x``."""

from __future__ import annotations

import numpy as np


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    """Arguments of ``saxpy`` for a problem of ``P`` items (``n = P``), arrays in storage shape."""
    return {
        "a": np.float32(rng.uniform(-2.0, 2.0)),
        "x": rng.standard_normal(P).astype(np.float32),
        "y": rng.standard_normal(P).astype(np.float32),
    }


def reference(inputs: dict) -> dict:
    """Expected final contents of the output buffers (``y``), computed in float32."""
    a = np.float32(inputs["a"])
    x = np.asarray(inputs["x"], dtype=np.float32)
    y = np.asarray(inputs["y"], dtype=np.float32)
    return {"y": (y + a * x).astype(np.float32)}
