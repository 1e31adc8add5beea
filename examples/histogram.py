"""NumPy reference of ``examples/histogram.kern`` (kernel ``histogram``): ``hist += bincount(data)``.

``make_inputs`` draws bytes with a skewed distribution (a quarter of them one value, so a warp's
updates collide on one bin) and a non-zero starting histogram (the kernel adds onto it).
"""

from __future__ import annotations

import numpy as np


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    """Arguments of ``histogram`` for ``P`` bytes (``n = P``): ``data`` u8[P], ``hist`` u32[256]."""
    data = rng.integers(0, 256, P).astype(np.uint8)
    data[rng.random(P) < 0.25] = 7
    return {"data": data, "hist": rng.integers(0, 1000, 256).astype(np.uint32)}


def reference(inputs: dict) -> dict:
    """Expected final ``hist`` (u32): the start plus the count of each byte value."""
    counts = np.bincount(np.asarray(inputs["data"], np.uint8), minlength=256)
    return {"hist": (np.asarray(inputs["hist"], np.uint32) + counts).astype(np.uint32)}
