"""Generate ``synthetic.bal``: 16 cameras on a ring looking at 40 points near the origin, every
point seen by every camera, pixel noise of ``NOISE`` pixels, and the parameters perturbed from the
truth (the solver's start). Run ``python examples/bundle_adjustment/make_synthetic.py`` to
regenerate it (seeded: the same file every time)."""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bal  # noqa: E402

NOISE = 0.5  # pixels (standard deviation of each coordinate)
CAMERAS, POINTS = 16, 40


def rotvec(R: np.ndarray) -> np.ndarray:
    """The angle-axis vector of rotation matrix ``R`` (0 < angle < pi)."""
    angle = np.arccos(np.clip((np.trace(R) - 1) / 2, -1, 1))
    axis = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) / (2 * np.sin(angle))
    return angle * axis


def rotate(w, x):
    th = np.linalg.norm(w)
    k = w / th
    return x * np.cos(th) + np.cross(k, x) * np.sin(th) + k * (k @ x) * (1 - np.cos(th))


def project(cam, x):
    p = rotate(cam[:3], x) + cam[3:6]
    q = -p[:2] / p[2]
    r2 = q @ q
    return cam[6] * (1 + cam[7] * r2 + cam[8] * r2 * r2) * q


def truth(rng):
    cameras = []
    for i in range(CAMERAS):
        phi = 2 * np.pi * i / CAMERAS
        c = np.array([6 * np.cos(phi), 6 * np.sin(phi), 1.5 * np.sin(3 * phi)])
        z = c / np.linalg.norm(c)  # the camera looks down -z at the origin
        x = np.cross([0.0, 0.0, 1.0], z)
        x /= np.linalg.norm(x)
        R = np.stack([x, np.cross(z, x), z])
        cameras.append(np.concatenate([rotvec(R), -R @ c, [500.0, -0.05, 0.01]]))
    return np.array(cameras), rng.uniform(-1, 1, (POINTS, 3))


def main(path=os.path.join(os.path.dirname(os.path.abspath(__file__)), "synthetic.bal")):
    rng = np.random.default_rng(22)
    cameras, points = truth(rng)
    cam = np.repeat(np.arange(CAMERAS), POINTS).astype(np.uint32)
    point = np.tile(np.arange(POINTS), CAMERAS).astype(np.uint32)
    xy = np.array([project(cameras[c], points[q]) for c, q in zip(cam, point)])
    xy += rng.normal(0, NOISE, xy.shape)
    start_cams = cameras.copy()
    start_cams[:, :3] += rng.normal(0, 3e-3, (CAMERAS, 3))
    start_cams[:, 3:6] += rng.normal(0, 1e-2, (CAMERAS, 3))
    start_cams[:, 6] *= 1 + rng.normal(0, 5e-3, CAMERAS)
    start_pts = points + rng.normal(0, 2e-2, points.shape)
    bal.write(path, bal.Problem(start_cams, start_pts, cam, point, xy))


if __name__ == "__main__":
    main(*sys.argv[1:])
