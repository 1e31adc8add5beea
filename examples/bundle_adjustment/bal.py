"""Reading and writing the BAL ("Bundle Adjustment in the Large") text format.

The format (Agarwal, Snavely, Seitz, Szeliski, "Bundle Adjustment in the Large", ECCV 2010, and the
dataset's page grail.cs.washington.edu/projects/bal):

    <num_cameras> <num_points> <num_observations>
    <camera_index> <point_index> <x> <y>        one line per observation
    ...
    <camera parameter>                          9 per camera, one per line
    ...
    <point coordinate>                          3 per point, one per line

A camera is an angle-axis rotation ``R`` (3), a translation ``t`` (3), a focal length ``f`` and two
radial distortion coefficients ``k1, k2``. A point ``X`` projects as ``P = R X + t``,
``p = -P[:2] / P[2]``, ``r(p) = 1 + k1 |p|^2 + k2 |p|^4``, pixel ``f r(p) p`` (the origin at the image
centre, y up).

Reading never evaluates anything: numbers are parsed with ``int``/``float`` and every count and
index is checked, so a malformed file is a :class:`BALError` naming the line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class BALError(ValueError):
    """A malformed BAL file; the message names the file and line."""


@dataclass
class BALProblem:
    """One bundle-adjustment problem.

    - ``cameras``: float64 ``(C, 9)``: angle-axis (3), translation (3), focal, k1, k2;
    - ``points``: float64 ``(Np, 3)``;
    - ``cam_idx``, ``pt_idx``: uint32 ``(M,)``: the camera and point of each observation;
    - ``observed``: float64 ``(M, 2)``: the observed pixel ``(x, y)``.
    """

    cameras: np.ndarray
    points: np.ndarray
    cam_idx: np.ndarray
    pt_idx: np.ndarray
    observed: np.ndarray

    @property
    def sizes(self) -> tuple[int, int, int]:
        """``(num_cameras, num_points, num_observations)``."""
        return len(self.cameras), len(self.points), len(self.observed)


def read_bal(path: str) -> BALProblem:
    """Parse the BAL file at ``path``. Raises :class:`BALError` (file and line) on malformed input:
    a missing or extra number, a negative count, an index out of range, a non-finite value."""
    tokens = []  # (value text, line number)
    with open(path, "rb") as f:
        for no, raw in enumerate(f, 1):
            try:
                line = raw.decode("ascii")
            except UnicodeDecodeError:
                raise BALError(f"{path}:{no}: not ASCII text") from None
            tokens.extend((tok, no) for tok in line.split())
    pos = 0

    def take(kind, what):
        nonlocal pos
        if pos >= len(tokens):
            raise BALError(f"{path}: file ends before {what}")
        text, no = tokens[pos]
        pos += 1
        try:
            value = kind(text)
        except ValueError:
            raise BALError(f"{path}:{no}: {what} must be {'an integer' if kind is int else 'a number'},"
                           f" got {text!r}") from None
        if kind is float and not np.isfinite(value):
            raise BALError(f"{path}:{no}: {what} is not finite ({text})")
        return value, no

    counts = []
    for what in ("the number of cameras", "the number of points", "the number of observations"):
        n, no = take(int, what)
        if n < 0 or n >= 2**31:
            raise BALError(f"{path}:{no}: {what} must be in [0, 2^31), got {n}")
        counts.append(n)
    C, Np, M = counts
    need = 3 + 4 * M + 9 * C + 3 * Np  # (checked before allocating: a count may be huge)
    if len(tokens) < need:
        raise BALError(f"{path}: {C} cameras, {Np} points and {M} observations need {need} numbers, "
                       f"the file has {len(tokens)}")
    cam_idx = np.empty(M, np.uint32)
    pt_idx = np.empty(M, np.uint32)
    observed = np.empty((M, 2), np.float64)
    for k in range(M):
        c, no = take(int, f"the camera index of observation {k}")
        if not 0 <= c < C:
            raise BALError(f"{path}:{no}: camera index {c} of observation {k} is outside [0, {C})")
        p, no = take(int, f"the point index of observation {k}")
        if not 0 <= p < Np:
            raise BALError(f"{path}:{no}: point index {p} of observation {k} is outside [0, {Np})")
        cam_idx[k], pt_idx[k] = c, p
        observed[k, 0], _ = take(float, f"x of observation {k}")
        observed[k, 1], _ = take(float, f"y of observation {k}")
    cameras = np.array([take(float, f"parameter {j} of camera {i}")[0]
                        for i in range(C) for j in range(9)], np.float64).reshape(C, 9)
    points = np.array([take(float, f"coordinate {j} of point {i}")[0]
                       for i in range(Np) for j in range(3)], np.float64).reshape(Np, 3)
    if pos != len(tokens):
        raise BALError(f"{path}:{tokens[pos][1]}: unexpected text after the last point: {tokens[pos][0]!r}")
    return BALProblem(cameras, points, cam_idx, pt_idx, observed)


def write_bal(problem: BALProblem, path: str) -> None:
    """Write ``problem`` to ``path`` in the BAL format (``%.17g``: read back exactly), atomically: a
    temporary file in the same folder renamed over ``path``."""
    import os
    import tempfile

    C, Np, M = problem.sizes
    lines = [f"{C} {Np} {M}"]
    lines += [f"{c} {p} {x:.17g} {y:.17g}"
              for c, p, (x, y) in zip(problem.cam_idx.tolist(), problem.pt_idx.tolist(), problem.observed)]
    lines += [f"{v:.17g}" for v in problem.cameras.reshape(-1)]
    lines += [f"{v:.17g}" for v in problem.points.reshape(-1)]
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".bal-", suffix=".tmp")
    try:
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would make a shipped file private
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
