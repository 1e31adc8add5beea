"""Levenberg-Marquardt bundle adjustment whose every derivative comes from one kernel.

``ba.kern``'s ``residual`` kernel is compiled with its reverse-mode and forward-mode derivatives
(``kernc.grad``/``kernc.jvp``, wrt the ``@tunable`` cameras and points): ``J^T r`` is
``residual_grad`` seeded with ``r``, ``J v`` is ``residual_jvp``, ``J^T (J v)`` the two in turn. Each
LM step solves ``(J^T J + lam D) d = -J^T r``, ``D = diag(J^T J)`` (Marquardt's scaling), by
conjugate gradients preconditioned with ``(1 + lam) D`` (Jacobi). ``D`` is exact and matrix-free:
each residual depends on one camera and one point, so a tangent of ones in parameter ``k`` of every
camera at once (12 ``residual_jvp`` launches in all) gives each residual's derivative in it, whose
squares summed per camera are ``D``. The damping follows Nielsen's rule (Madsen, Nielsen &
Tingleff, "Methods for non-linear least squares problems", 2004, Algorithm 3.16).

Arrays: cameras ``(C, 9)``, points ``(P, 3)``, observations ``(n, 2)``, all float64, stored ``as
caspar`` on the device side (:func:`to_caspar`). Runs on numpy arrays (the CPU interpreter) or CuPy
arrays (``xp=cupy``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

import kernc
from kernc.frontend.caspar import chunks, rows

HERE = os.path.dirname(os.path.abspath(__file__))


def to_caspar(x: np.ndarray, xp=np) -> np.ndarray:
    """``(M, K)`` float64 -> Caspar's planes ``(rows(K), M)``: chunk ``k`` of element ``i`` at
    ``R_k*M + i*d_k + e`` (``docs/language.md``, ``as caspar``)."""
    m, k = x.shape
    flat = np.zeros(rows(k, 8) * m)
    for first, count, width, row in chunks(k, 8):
        for e in range(count):
            flat[row * m + np.arange(m) * width + e] = x[:, first + e]
    return xp.asarray(flat.reshape(rows(k, 8), m))


def from_caspar(a, k: int) -> np.ndarray:
    flat = np.asarray(a.get() if hasattr(a, "get") else a).ravel()
    m = flat.size // rows(k, 8)
    x = np.zeros((m, k))
    for first, count, width, row in chunks(k, 8):
        for e in range(count):
            x[:, first + e] = flat[row * m + np.arange(m) * width + e]
    return x


def module():
    """The compiled ``residual``, ``residual_grad`` and ``residual_jvp`` (one module)."""
    src = open(os.path.join(HERE, "ba.kern")).read()
    base = src.rstrip()
    jvp = kernc.derivative_source(src, "residual", None, "jvp", "ba.kern")[len(base):]
    return kernc.compile(kernc.derivative_source(src, "residual", None, "grad", "ba.kern") + jvp,
                         filename="ba.kern")


@dataclass
class Result:
    cameras: np.ndarray
    points: np.ndarray
    costs: list = field(default_factory=list)  # 0.5 |r|^2 after each accepted step, the start first
    iterations: int = 0
    cg_iterations: int = 0


class BundleAdjuster:
    """LM on problem ``p`` (:class:`bal.Problem`); ``xp`` is numpy or cupy."""

    def __init__(self, p, mod=None, xp=np):
        self.p, self.xp = p, xp
        self.mod = mod or module()
        self.C, self.P, self.n = len(p.cameras), len(p.points), len(p.xy)
        self.cam_of, self.point_of = xp.asarray(p.cam), xp.asarray(p.point)
        self.obs = to_caspar(p.xy, xp)

    # the three products, each one launch
    def residuals(self, cams, pts):
        r = self.xp.zeros((self.n, 2))
        self.mod.residual(cams, pts, self.cam_of, self.point_of, self.obs, r)
        return r

    def jt(self, cams, pts, u):
        """``J^T u`` as (cameras, points) in caspar storage."""
        cb, pb = self.xp.zeros_like(cams), self.xp.zeros_like(pts)
        self.mod.residual_grad(cams, pts, self.cam_of, self.point_of, self.obs, u, u, cb, pb)
        return cb, pb

    def j(self, cams, pts, dc, dp):
        """``J (dc, dp)``: (n, 2)."""
        out = self.xp.zeros((self.n, 2))
        self.mod.residual_jvp(cams, pts, self.cam_of, self.point_of, self.obs, out, dc, dp, out)
        return out

    def diagonal(self, cams, pts):
        """``diag(J^T J)`` as (C, 9) and (P, 3) arrays (12 jvp launches; see the module docstring)."""
        xp = self.xp
        dc, dp = np.zeros((self.C, 9)), np.zeros((self.P, 3))
        zc, zp = xp.zeros_like(cams), xp.zeros_like(pts)
        cam_of, point_of = np.asarray(self.p.cam), np.asarray(self.p.point)
        for k in range(9):
            e = np.zeros((self.C, 9))
            e[:, k] = 1.0
            jv = np.asarray(_host(self.j(cams, pts, to_caspar(e, xp), zp)))
            np.add.at(dc[:, k], cam_of, (jv * jv).sum(axis=1))
        for k in range(3):
            e = np.zeros((self.P, 3))
            e[:, k] = 1.0
            jv = np.asarray(_host(self.j(cams, pts, zc, to_caspar(e, xp))))
            np.add.at(dp[:, k], point_of, (jv * jv).sum(axis=1))
        return dc, dp

    def solve(self, iterations: int = 30, cg_max: int = 60, cg_tol: float = 1e-3, tol: float = 1e-10) -> Result:
        xp = self.xp
        cams, pts = to_caspar(self.p.cameras, xp), to_caspar(self.p.points, xp)
        r = self.residuals(cams, pts)
        cost = 0.5 * float(xp.sum(r * r))
        result = Result(self.p.cameras, self.p.points, [cost])
        lam, nu = 1e-4, 2.0
        for it in range(iterations):
            gc, gp = self.jt(cams, pts, r)
            g = np.concatenate([from_caspar(gc, 9).ravel(), from_caspar(gp, 3).ravel()])
            dc, dp = self.diagonal(cams, pts)
            d = np.maximum(np.concatenate([dc.ravel(), dp.ravel()]), 1e-12)

            def matvec(v):
                vc, vp = v[:9 * self.C].reshape(self.C, 9), v[9 * self.C:].reshape(self.P, 3)
                jv = self.j(cams, pts, to_caspar(vc, xp), to_caspar(vp, xp))
                uc, up = self.jt(cams, pts, jv)
                return np.concatenate([from_caspar(uc, 9).ravel(), from_caspar(up, 3).ravel()]) + lam * d * v

            step, used = pcg(matvec, -g, 1.0 / ((1.0 + lam) * d), cg_max, cg_tol)
            result.cg_iterations += used
            sc, sp = step[:9 * self.C].reshape(self.C, 9), step[9 * self.C:].reshape(self.P, 3)
            new_c = to_caspar(from_caspar(cams, 9) + sc, xp)
            new_p = to_caspar(from_caspar(pts, 3) + sp, xp)
            new_r = self.residuals(new_c, new_p)
            new_cost = 0.5 * float(xp.sum(new_r * new_r))
            predicted = 0.5 * float(step @ (lam * d * step - g))  # L(0) - L(step), > 0
            rho = (cost - new_cost) / predicted if predicted > 0 else -1.0
            result.iterations = it + 1
            if rho > 0:
                done = cost - new_cost < tol * cost
                cams, pts, r, cost = new_c, new_p, new_r, new_cost
                result.costs.append(cost)
                lam *= max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
                nu = 2.0
                if done:
                    break
            else:
                lam *= nu
                nu *= 2.0
        result.cameras, result.points = from_caspar(cams, 9), from_caspar(pts, 3)
        return result


def pcg(matvec, b, inv_diag, max_iter: int, tol: float):
    """Preconditioned conjugate gradients for ``A x = b`` (Hestenes & Stiefel 1952; Saad,
    "Iterative Methods for Sparse Linear Systems", Algorithm 9.1), from ``x = 0``, until
    ``|r| <= tol |b|``; returns ``(x, iterations)``."""
    x = np.zeros_like(b)
    r = b.copy()
    z = inv_diag * r
    p = z.copy()
    rz = r @ z
    bnorm = np.linalg.norm(b)
    for k in range(max_iter):
        ap = matvec(p)
        alpha = rz / (p @ ap)
        x += alpha * p
        r -= alpha * ap
        if np.linalg.norm(r) <= tol * bnorm:
            return x, k + 1
        z = inv_diag * r
        rz, rz_old = r @ z, rz
        p = z + (rz / rz_old) * p
    return x, max_iter


def _host(a):
    return a.get() if hasattr(a, "get") else a


def residuals_numpy(cameras, points, p):
    """The residuals in numpy (the BAL model, ``make_synthetic.project``), for scipy's solver."""
    w, t = cameras[p.cam, :3], cameras[p.cam, 3:6]
    x = points[p.point]
    th = np.linalg.norm(w, axis=1, keepdims=True)
    k = w / th
    c, s = np.cos(th), np.sin(th)
    rx = x * c + np.cross(k, x) * s + k * (np.sum(k * x, axis=1, keepdims=True) * (1 - c))
    q = rx + t
    pxy = -q[:, :2] / q[:, 2:3]
    r2 = np.sum(pxy * pxy, axis=1, keepdims=True)
    f, k1, k2 = cameras[p.cam, 6:7], cameras[p.cam, 7:8], cameras[p.cam, 8:9]
    return (f * (1 + k1 * r2 + k2 * r2 * r2) * pxy - p.xy).ravel()


def main():
    import bal

    p = bal.read(os.path.join(HERE, "synthetic.bal"))
    res = BundleAdjuster(p).solve()
    rms = np.sqrt(2 * res.costs[-1] / p.xy.size)
    print(f"{res.iterations} LM iterations ({res.cg_iterations} CG), cost {res.costs[0]:.6g} -> "
          f"{res.costs[-1]:.6g}, RMS reprojection error {rms:.4f} px")


if __name__ == "__main__":
    import sys

    sys.path.insert(0, HERE)
    main()
