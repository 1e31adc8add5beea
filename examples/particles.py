"""NumPy reference of ``examples/particles.kern`` (kernel ``particles``).

Positions and velocities are struct-of-arrays: numpy arrays of shape ``(3, n)``. Each particle's
speed is clamped to ``vmax``, its position advanced by ``dt``, reflected at ``z = 0``; ``speed`` gets
the clamped speed and ``energy`` accumulates ``0.5 * |v|^2``.
"""

from __future__ import annotations

import numpy as np


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    """Arguments of ``particles`` for ``P`` particles (``n = P``); soa arrays have shape ``(3, P)``."""
    pos = rng.uniform(-1.0, 1.0, size=(3, P)).astype(np.float32)
    pos[2] = rng.uniform(0.0, 0.2, size=P).astype(np.float32)
    vel = rng.standard_normal((3, P)).astype(np.float32) * np.float32(2.0)
    if P > 0:
        vel[:, 0] = 0.0  # a particle at rest stays at rest
    return {
        "pos": pos,
        "vel": vel,
        "dt": np.float32(0.05),
        "vmax": np.float32(2.5),
        "new_pos": np.zeros((3, P), np.float32),
        "new_vel": np.zeros((3, P), np.float32),
        "speed": np.zeros(P, np.float32),
        "energy": rng.uniform(0.0, 1.0, size=P).astype(np.float32),
    }


def reference(inputs: dict) -> dict:
    """Expected final contents of ``new_pos``, ``new_vel``, ``speed`` and ``energy`` (float32)."""
    f = np.float32
    pos = np.asarray(inputs["pos"], dtype=f)
    vel = np.asarray(inputs["vel"], dtype=f)
    dt, vmax = f(inputs["dt"]), f(inputs["vmax"])
    s2 = (vel[0] * vel[0] + vel[1] * vel[1]) + vel[2] * vel[2]
    s = np.sqrt(s2)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(s > vmax, vmax / np.maximum(s, f(1e-30)), f(1.0)).astype(f)
    v = vel * scale
    p = pos + dt * v
    below = p[2] < 0
    p[2] = np.where(below, -p[2], p[2])
    v[2] = np.where(below, -v[2], v[2])
    energy = np.asarray(inputs["energy"], dtype=f) + f(0.5) * ((v[0] * v[0] + v[1] * v[1]) + v[2] * v[2])
    return {
        "new_pos": p.astype(f),
        "new_vel": v.astype(f),
        "speed": np.minimum(s, vmax).astype(f),
        "energy": energy.astype(f),
    }
