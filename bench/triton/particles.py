"""Triton version of ``examples/particles.kern``: per particle, clamp the speed to ``vmax``
(keeping the direction), advance the position by ``dt``, reflect at the floor ``z = 0``, write the
clamped speed and add the kinetic energy ``0.5 * |v|^2`` to ``energy``.

``pos``, ``vel``, ``new_pos``, ``new_vel`` are struct-of-arrays (3 rows of ``n``). The square root
and the division are IEEE-rounded (``tl.sqrt_rn``, ``tl.div_rn``), as kernc's ``sqrt`` and ``/``
and nvcc's defaults are (Triton's plain ``tl.sqrt`` and ``/`` are the approximate PTX
instructions). One program per 128 particles, 4 warps: kernc's ``@block(128)``.
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 128
NUM_WARPS = 4


@triton.jit
def particles(pos_ptr, vel_ptr, dt, vmax, new_pos_ptr, new_vel_ptr, speed_ptr, energy_ptr, n,
              BLOCK: tl.constexpr):
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = t < n
    vx = tl.load(vel_ptr + t, mask=mask)
    vy = tl.load(vel_ptr + n + t, mask=mask)
    vz = tl.load(vel_ptr + 2 * n + t, mask=mask)
    s = tl.sqrt_rn(vx * vx + vy * vy + vz * vz)
    # scale > 0 only shrinks: fast particles are slowed down to vmax
    scale = tl.where(s > vmax, tl.div_rn(vmax, tl.maximum(s, 1e-30)), 1.0)
    vx, vy, vz = vx * scale, vy * scale, vz * scale
    px = tl.load(pos_ptr + t, mask=mask) + dt * vx
    py = tl.load(pos_ptr + n + t, mask=mask) + dt * vy
    pz = tl.load(pos_ptr + 2 * n + t, mask=mask) + dt * vz
    below = pz < 0.0
    pz = tl.where(below, -pz, pz)
    vz = tl.where(below, -vz, vz)
    tl.store(new_pos_ptr + t, px, mask=mask)
    tl.store(new_pos_ptr + n + t, py, mask=mask)
    tl.store(new_pos_ptr + 2 * n + t, pz, mask=mask)
    tl.store(new_vel_ptr + t, vx, mask=mask)
    tl.store(new_vel_ptr + n + t, vy, mask=mask)
    tl.store(new_vel_ptr + 2 * n + t, vz, mask=mask)
    tl.store(speed_ptr + t, tl.minimum(s, vmax), mask=mask)
    energy = tl.load(energy_ptr + t, mask=mask)
    tl.store(energy_ptr + t, energy + 0.5 * (vx * vx + vy * vy + vz * vz), mask=mask)


KERNEL = particles
SIGNATURE = {"pos_ptr": "*fp32", "vel_ptr": "*fp32", "dt": "fp32", "vmax": "fp32", "new_pos_ptr": "*fp32",
             "new_vel_ptr": "*fp32", "speed_ptr": "*fp32", "energy_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
CONSTEXPRS = {"BLOCK": BLOCK}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` on ``examples/particles.py``'s inputs (see ``bench/triton/saxpy.py``)."""
    n = inputs["speed"].size
    kernel[(triton.cdiv(n, BLOCK),)](
        tensor(inputs["pos"]), tensor(inputs["vel"]), float(inputs["dt"]), float(inputs["vmax"]),
        tensor(inputs["new_pos"]), tensor(inputs["new_vel"]), tensor(inputs["speed"]), tensor(inputs["energy"]), n,
        BLOCK=BLOCK, num_warps=NUM_WARPS)
