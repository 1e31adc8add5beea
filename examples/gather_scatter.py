"""NumPy reference of ``examples/gather_scatter.kern`` (kernel ``gather_scatter``).

For every item ``t < n``: ``out[dst[t]] = 2 * x[idx[t]] + s[off + t*st]`` and, when ``idx[t]`` is
even, ``acc[off + t*st] += x[idx[t]]``. ``make_inputs`` uses a negative stride and unique ``dst``.
"""

from __future__ import annotations

import numpy as np


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    """Arguments of ``gather_scatter`` for ``P`` items (``n = P``), arrays in storage shape.

    ``x`` holds ``m = 2P + 3`` elements gathered through ``idx`` (duplicates allowed); ``s`` and
    ``acc`` hold ``k = 2P + 1`` elements visited with ``off = 2(P-1) + 1`` and ``st = -2``; ``out``
    holds ``m2 = P + 7`` elements of which the ``P`` distinct ``dst`` entries are overwritten.
    """
    m, m2 = 2 * P + 3, P + 7
    st = -2
    off = -st * (P - 1) + 1
    k = off + 1
    return {
        "x": rng.standard_normal(m).astype(np.float32),
        "idx": rng.integers(0, m, size=P).astype(np.uint32),
        "s": rng.standard_normal(k).astype(np.float32),
        "off": int(off),
        "st": int(st),
        "out": rng.standard_normal(m2).astype(np.float32),
        "dst": rng.permutation(m2)[:P].astype(np.uint32),
        "acc": rng.standard_normal(k).astype(np.float32),
    }


def reference(inputs: dict) -> dict:
    """Expected final contents of ``out`` and ``acc`` (float32)."""
    x = np.asarray(inputs["x"], dtype=np.float32)
    idx = np.asarray(inputs["idx"]).astype(np.int64)
    s = np.asarray(inputs["s"], dtype=np.float32)
    dst = np.asarray(inputs["dst"]).astype(np.int64)
    off, st = int(inputs["off"]), int(inputs["st"])
    P = idx.shape[0]
    j = off + np.arange(P, dtype=np.int64) * st
    g = x[idx]
    out = np.array(inputs["out"], dtype=np.float32, copy=True)
    out[dst] = np.float32(2.0) * g + s[j]
    acc = np.array(inputs["acc"], dtype=np.float32, copy=True)
    even = (idx % 2) == 0
    acc[j[even]] += g[even]
    return {"out": out, "acc": acc}
