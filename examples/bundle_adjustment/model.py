"""NumPy reference of the BAL reprojection residual (``reprojection.kern``), for checking kernc's
kernel and for the ``scipy.optimize.least_squares`` comparison.

Shapes: ``cameras`` float64 ``(C, 9)``, ``points`` ``(Np, 3)``, ``cam_idx``/``pt_idx`` ``(M,)``,
``observed`` ``(M, 2)``; the residual is ``(M, 2)`` pixels. Rotation by Rodrigues' formula
``R p = p cos th + (w x p) sin th + w (w . p)(1 - cos th)``, ``w = aa / th``, ``th = |aa|``, and its
first-order form ``p + aa x p`` for ``th^2 < 1e-12`` (as Ceres' ``AngleAxisRotatePoint`` does).
"""

from __future__ import annotations

import numpy as np


def rotate(aa: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Rotate the rows of ``p`` (``(M, 3)``) by the angle-axis rows of ``aa`` (``(M, 3)``)."""
    th2 = np.einsum("ij,ij->i", aa, aa)
    small = th2 < 1e-12
    th = np.sqrt(np.where(small, 1.0, th2))
    w = aa / th[:, None]
    cos, sin = np.cos(th)[:, None], np.sin(th)[:, None]
    big = p * cos + np.cross(w, p) * sin + w * (np.einsum("ij,ij->i", w, p)[:, None] * (1.0 - cos))
    return np.where(small[:, None], p + np.cross(aa, p), big)


def project(cameras: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Pixels ``(M, 2)`` of the point rows seen by the camera rows (both ``M`` rows)."""
    P = rotate(cameras[:, 0:3], points) + cameras[:, 3:6]
    p = -P[:, 0:2] / P[:, 2:3]
    r2 = np.einsum("ij,ij->i", p, p)
    d = 1.0 + r2 * (cameras[:, 7] + cameras[:, 8] * r2)
    return cameras[:, 6:7] * d[:, None] * p


def residual(cameras, points, cam_idx, pt_idx, observed) -> np.ndarray:
    """Reprojection residual ``(M, 2)``: projected minus observed pixel."""
    return project(cameras[cam_idx], points[pt_idx]) - observed
