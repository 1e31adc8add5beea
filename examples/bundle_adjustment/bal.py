"""The BAL text format of bundle-adjustment problems (Agarwal et al., "Bundle Adjustment in the
Large", ECCV 2010; grail.cs.washington.edu/projects/bal): a header ``num_cameras num_points
num_observations``, one line ``camera point x y`` per observation, then the 9 parameters of each
camera (angle-axis rotation, translation, focal length, k1, k2) and the 3 of each point, one number
per line."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Problem:
    """``cameras`` (C, 9) and ``points`` (P, 3) float64; per observation ``cam``/``point`` (uint32
    indices) and ``xy`` (n, 2) float64 pixel coordinates."""

    cameras: np.ndarray
    points: np.ndarray
    cam: np.ndarray
    point: np.ndarray
    xy: np.ndarray


def read(path) -> Problem:
    """Read a BAL file; ``ValueError`` naming the line for a malformed one."""
    with open(path) as f:
        tokens = f.read().split()
    try:
        nc, np_, no = (int(t) for t in tokens[:3])
        obs = np.array(tokens[3:3 + 4 * no], dtype=np.float64).reshape(no, 4)
        rest = np.array(tokens[3 + 4 * no:], dtype=np.float64)
    except ValueError as err:
        raise ValueError(f"{path}: not a BAL file: {err}") from None
    if rest.size != 9 * nc + 3 * np_:
        raise ValueError(f"{path}: expected {9 * nc + 3 * np_} parameters after the observations, got {rest.size}")
    cam, point = obs[:, 0].astype(np.uint32), obs[:, 1].astype(np.uint32)
    if no and (cam.max() >= nc or point.max() >= np_):
        raise ValueError(f"{path}: an observation names a camera or point past the header's counts")
    return Problem(rest[:9 * nc].reshape(nc, 9), rest[9 * nc:].reshape(np_, 3), cam, point, obs[:, 2:4].copy())


def write(path, p: Problem) -> None:
    lines = [f"{len(p.cameras)} {len(p.points)} {len(p.xy)}"]
    lines += [f"{c} {q} {x:.17g} {y:.17g}" for c, q, (x, y) in zip(p.cam, p.point, p.xy)]
    lines += [f"{v:.17g}" for v in np.concatenate([p.cameras.ravel(), p.points.ravel()])]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
