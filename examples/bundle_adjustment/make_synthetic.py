"""Generate the synthetic BAL problem shipped as ``synthetic.bal`` (and the ground truth it came from).

    python examples/bundle_adjustment/make_synthetic.py [--out synthetic.bal] [--seed 7]

``C`` cameras on a ring of radius 12 around the origin, all looking at it, ``Np`` points uniform
in a ball of radius 3; every camera sees every point (``M = C * Np`` observations), observed with
Gaussian pixel noise of ``sigma`` pixels (focal 500). The file holds the *perturbed* start: camera
rotations and translations and the points moved by a few per cent, focal lengths by 2 per cent.

With ``C = 48`` and ``Np = 128`` the least-squares optimum leaves an RMS residual of about
``sigma * sqrt(1 - n / (2M)) = 0.97 sigma`` (``n = 9C + 3Np`` parameters fitted to ``2M``
residuals), which is what "the noise floor" means in the tests.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from bal import BALProblem, write_bal
from model import residual, rotate

HERE = os.path.dirname(os.path.abspath(__file__))
SIGMA = 1.0  # pixel noise of the shipped file


def look_at_angle_axis(centre: np.ndarray) -> np.ndarray:
    """The angle-axis rotation ``R`` of a camera at ``centre`` looking at the origin in BAL's
    convention (the camera looks down its -z axis): ``R`` maps world directions to camera ones,
    with ``R @ (-centre / |centre|) = (0, 0, -1)``."""
    back = centre / np.linalg.norm(centre)           # camera +z, pointing away from the origin
    right = np.cross([0.0, 0.0, 1.0], back)
    right /= np.linalg.norm(right)
    up = np.cross(back, right)
    R = np.stack([right, up, back])                  # rows: camera axes in world coordinates
    return log_map(R)


def log_map(R: np.ndarray) -> np.ndarray:
    """The angle-axis vector of the rotation matrix ``R``, through its unit quaternion (Shepperd's
    method: the largest of the four squared components first, stable at every angle up to pi)."""
    tr = np.trace(R)
    q2 = np.array([1.0 + tr, 1.0 + 2.0 * R[0, 0] - tr, 1.0 + 2.0 * R[1, 1] - tr, 1.0 + 2.0 * R[2, 2] - tr])
    k = int(np.argmax(q2))
    s = 2.0 * np.sqrt(q2[k])  # 4 * |q_k|
    if k == 0:
        q = [s / 4, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    elif k == 1:
        q = [(R[2, 1] - R[1, 2]) / s, s / 4, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s]
    elif k == 2:
        q = [(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, s / 4, (R[1, 2] + R[2, 1]) / s]
    else:
        q = [(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, s / 4]
    w, v = q[0], np.array(q[1:])
    if w < 0:
        w, v = -w, -v
    n = np.linalg.norm(v)
    return v * (2.0 * np.arctan2(n, w) / n) if n > 0 else 2.0 * v


def make_problem(C: int = 48, Np: int = 128, sigma: float = SIGMA, seed: int = 7):
    """``(start, truth)``: the perturbed :class:`BALProblem` and the ground-truth one."""
    rng = np.random.default_rng(seed)
    cams = np.zeros((C, 9))
    for i in range(C):
        a = 2.0 * np.pi * i / C
        centre = np.array([12.0 * np.cos(a), 12.0 * np.sin(a), 2.0 * np.sin(3.0 * a)])
        aa = look_at_angle_axis(centre)
        t = -rotate(aa[None], centre[None])[0]      # P = R X + t is 0 at the camera centre
        cams[i] = [*aa, *t, 500.0, 0.0, 0.0]
    u = rng.standard_normal((Np, 3))
    points = 3.0 * u / np.linalg.norm(u, axis=1, keepdims=True) * rng.uniform(0, 1, (Np, 1)) ** (1 / 3)
    cam_idx = np.repeat(np.arange(C, dtype=np.uint32), Np)
    pt_idx = np.tile(np.arange(Np, dtype=np.uint32), C)
    clean = residual(cams, points, cam_idx, pt_idx, np.zeros((C * Np, 2)))
    observed = clean + rng.normal(0.0, sigma, clean.shape)
    truth = BALProblem(cams, points, cam_idx, pt_idx, observed)
    start_c = cams.copy()
    start_c[:, 0:3] += rng.normal(0.0, 0.02, (C, 3))
    start_c[:, 3:6] += rng.normal(0.0, 0.2, (C, 3))
    start_c[:, 6] *= 1.0 + rng.normal(0.0, 0.02, C)
    start_p = points + rng.normal(0.0, 0.2, points.shape)
    start = BALProblem(start_c, start_p, cam_idx, pt_idx, observed)
    return start, truth


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "synthetic.bal"))
    ap.add_argument("--seed", type=int, default=7)
    ns = ap.parse_args(argv)
    start, _ = make_problem(seed=ns.seed)
    write_bal(start, ns.out)
    print(f"wrote {ns.out}: {start.sizes[0]} cameras, {start.sizes[1]} points, {start.sizes[2]} observations")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
