"""Levenberg-Marquardt with matrix-free preconditioned conjugate gradients, for bundle adjustment.

The solver sees the problem only through three products of the residual ``r(x)`` (``(M, 2)``) and
its Jacobian ``J`` at ``x = (cameras (C, 9), points (Np, 3))``:

- ``ops.residual(x)``: ``r(x)``;
- ``ops.jvp(x, v)``: ``J v`` for a tangent ``v = (dcameras, dpoints)``;
- ``ops.vjp(x, rbar)``: ``J^T rbar`` as ``(cameras_bar, points_bar)``.

:class:`~kernels.KerncOps` gets them from one residual kernel and ``kernc.grad``/``kernc.jvp`` of
it; :class:`NumpyOps` from the numpy model, for tests.

Each iteration solves ``(J^T J + lam D) step = -J^T r`` with ``D = diag(J^T J)`` (Marquardt's
scaling, clipped to ``[1e-6, 1e32]`` as Ceres does) by conjugate gradients, each CG iteration one
``jvp`` and one ``vjp``, preconditioned by the block-Jacobi inverse of ``J^T J + lam D`` (one 9x9
block per camera, one 3x3 per point). The blocks come from 12 ``jvp`` products with unit tangents:
every residual depends on one camera and one point, so a tangent of 1 in parameter ``k`` of every
camera gives each observation's derivative by that parameter of its camera. The damping follows
Nielsen's rule (H. B. Nielsen, "Damping parameter in Marquardt's method", IMM-REP-1999-05):
``lam *= max(1/3, 1 - (2 rho - 1)^3)`` after a step with gain ratio ``rho > 0``, else
``lam *= nu; nu *= 2``. Conjugate gradients: Hestenes and Stiefel's preconditioned form
(Nocedal and Wright, "Numerical Optimization", Algorithm 5.3), stopped at relative residual
``cg_tol`` (an inexact Newton step).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import model


def _dot(a, b) -> float:
    return float(sum(np.vdot(x, y) for x, y in zip(a, b)))


def _axpy(alpha, x, y):
    return tuple(yi + alpha * xi for xi, yi in zip(x, y))


@dataclass
class Iteration:
    """One LM iteration: ``cost`` (0.5 |r|^2) after it, ``lam``, CG iterations, step accepted."""

    cost: float
    lam: float
    cg_iterations: int
    accepted: bool


@dataclass
class Result:
    """The solver's end state: ``x = (cameras, points)``, ``cost``, ``rms`` (pixels), ``history``."""

    x: tuple
    cost: float
    rms: float
    initial_cost: float
    history: list = field(default_factory=list)


def jacobian_blocks(ops, x, C: int, Np: int, cam_idx, pt_idx):
    """``(Jc, Jp)``: each observation's Jacobian by its camera ``(M, 2, 9)`` and point ``(M, 2, 3)``,
    from 12 ``jvp`` products with unit tangents (see the module docstring)."""
    cams, pts = x
    M = len(cam_idx)
    Jc = np.empty((M, 2, 9))
    Jp = np.empty((M, 2, 3))
    for k in range(9):
        dc = np.zeros_like(cams)
        dc[:, k] = 1.0
        Jc[:, :, k] = ops.jvp(x, (dc, np.zeros_like(pts)))
    for k in range(3):
        dp = np.zeros_like(pts)
        dp[:, k] = 1.0
        Jp[:, :, k] = ops.jvp(x, (np.zeros_like(cams), dp))
    return Jc, Jp


def _gram_blocks(Jc, Jp, C, Np, cam_idx, pt_idx):
    """Diagonal blocks of ``J^T J``: ``(C, 9, 9)`` and ``(Np, 3, 3)``."""
    Hc = np.zeros((C, 9, 9))
    Hp = np.zeros((Np, 3, 3))
    np.add.at(Hc, cam_idx, np.einsum("mri,mrj->mij", Jc, Jc))
    np.add.at(Hp, pt_idx, np.einsum("mri,mrj->mij", Jp, Jp))
    return Hc, Hp


def levenberg_marquardt(ops, x0, cam_idx, pt_idx, *, max_iterations: int = 30, lam0: float = 1e-4,
                        cg_max: int = 100, cg_tol: float = 1e-3, ftol: float = 1e-10,
                        callback=None) -> Result:
    """Minimise ``0.5 |r(x)|^2`` from ``x0 = (cameras (C, 9), points (Np, 3))`` (float64).

    Stops after ``max_iterations`` iterations, or when an accepted step lowers the cost by less than
    ``ftol`` relative. ``callback(iteration_number, Iteration)`` is called after each iteration.
    """
    C, Np = len(x0[0]), len(x0[1])
    x = tuple(np.array(a, np.float64) for a in x0)
    r = ops.residual(x)
    cost = 0.5 * float(np.vdot(r, r))
    result = Result(x, cost, 0.0, cost)
    lam, nu = lam0, 2.0
    if r.size == 0 or cost == 0.0:  # nothing observed, or already exact: nothing to improve
        result.rms = 0.0
        return result
    for it in range(max_iterations):
        g = ops.vjp(x, r)                                       # J^T r
        Jc, Jp = jacobian_blocks(ops, x, C, Np, cam_idx, pt_idx)
        Hc, Hp = _gram_blocks(Jc, Jp, C, Np, cam_idx, pt_idx)
        D = (np.clip(np.diagonal(Hc, axis1=1, axis2=2), 1e-6, 1e32),
             np.clip(np.diagonal(Hp, axis1=1, axis2=2), 1e-6, 1e32))
        Pc = np.linalg.inv(Hc + lam * D[0][:, :, None] * np.eye(9))
        Pp = np.linalg.inv(Hp + lam * D[1][:, :, None] * np.eye(3))

        def normal(v):  # (J^T J + lam D) v
            jtjv = ops.vjp(x, ops.jvp(x, v))
            return tuple(a + lam * d * b for a, d, b in zip(jtjv, D, v))

        def precondition(v):
            return (np.einsum("cij,cj->ci", Pc, v[0]), np.einsum("pij,pj->pi", Pp, v[1]))

        # PCG on (J^T J + lam D) s = -g
        b = tuple(-gi for gi in g)
        s = tuple(np.zeros_like(bi) for bi in b)
        res = b
        z = precondition(res)
        p = z
        rz = _dot(res, z)
        bnorm = np.sqrt(_dot(b, b))
        k = 0
        for k in range(1, cg_max + 1):
            Ap = normal(p)
            pAp = _dot(p, Ap)
            if not pAp > 0:  # (a direction the damped normal equations do not see)
                break
            alpha = rz / pAp
            s = _axpy(alpha, p, s)
            res = _axpy(-alpha, Ap, res)
            if np.sqrt(_dot(res, res)) <= cg_tol * bnorm:
                break
            z = precondition(res)
            rz_new = _dot(res, z)
            p = _axpy(rz_new / rz, p, z)
            rz = rz_new
        x_new = tuple(a + d for a, d in zip(x, s))
        r_new = ops.residual(x_new)
        cost_new = 0.5 * float(np.vdot(r_new, r_new))
        # predicted decrease of the damped quadratic model: -(g.s) - 0.5 s.(J^T J) s
        Js = ops.jvp(x, s)
        predicted = -_dot(g, s) - 0.5 * float(np.vdot(Js, Js))
        rho = (cost - cost_new) / predicted if predicted > 0 else -1.0
        accepted = rho > 0 and np.isfinite(cost_new)
        if accepted:
            decrease = (cost - cost_new) / cost
            x, r, cost = x_new, r_new, cost_new
            lam *= max(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3)
            nu = 2.0
        else:
            lam *= nu
            nu *= 2.0
        step = Iteration(cost, lam, k, bool(accepted))
        result.history.append(step)
        if callback is not None:
            callback(it, step)
        if accepted and decrease < ftol:
            break
    result.x, result.cost = x, cost
    result.rms = float(np.sqrt(2.0 * cost / r.size)) if r.size else 0.0
    return result


class NumpyOps:
    """The three products from the numpy model (:mod:`model`): the residual exactly, ``J v`` and
    ``J^T rbar`` from per-observation Jacobian blocks by central differences (step ``1e-6``
    relative). For tests of the solver; kernc's are in :mod:`kernels`."""

    def __init__(self, cam_idx, pt_idx, observed):
        self.cam_idx, self.pt_idx, self.observed = cam_idx, pt_idx, observed
        self._at = None

    def residual(self, x):
        return model.residual(x[0], x[1], self.cam_idx, self.pt_idx, self.observed)

    def _blocks(self, x):
        key = (x[0].tobytes(), x[1].tobytes())
        if self._at is None or self._at[0] != key:
            c, p = x[0][self.cam_idx], x[1][self.pt_idx]
            Jc, Jp = np.empty((len(c), 2, 9)), np.empty((len(c), 2, 3))
            for J, base, other, cams_first in ((Jc, c, p, True), (Jp, p, c, False)):
                for k in range(base.shape[1]):
                    h = 1e-6 * np.maximum(1.0, np.abs(base[:, k]))
                    hi, lo = base.copy(), base.copy()
                    hi[:, k] += h
                    lo[:, k] -= h
                    f = (lambda v: model.project(v, other)) if cams_first else (lambda v: model.project(other, v))
                    J[:, :, k] = (f(hi) - f(lo)) / (2.0 * h[:, None])
            self._at = (key, Jc, Jp)
        return self._at[1], self._at[2]

    def jvp(self, x, v):
        Jc, Jp = self._blocks(x)
        return (np.einsum("mrk,mk->mr", Jc, v[0][self.cam_idx])
                + np.einsum("mrk,mk->mr", Jp, v[1][self.pt_idx]))

    def vjp(self, x, rbar):
        Jc, Jp = self._blocks(x)
        cb, pb = np.zeros_like(x[0]), np.zeros_like(x[1])
        np.add.at(cb, self.cam_idx, np.einsum("mrk,mr->mk", Jc, rbar))
        np.add.at(pb, self.pt_idx, np.einsum("mrk,mr->mk", Jp, rbar))
        return cb, pb
