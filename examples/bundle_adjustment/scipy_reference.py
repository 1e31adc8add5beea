"""The same problem solved by ``scipy.optimize.least_squares`` (trust-region reflective, finite
difference Jacobian with its sparsity pattern), for comparing the final cost with kernc's solver.

SciPy is a test extra (``pip install -e '.[test]'``); nothing of kernc runs here.
"""

from __future__ import annotations

import numpy as np

import model


def solve_with_scipy(cameras, points, cam_idx, pt_idx, observed, *, ftol: float = 1e-12):
    """``(cameras, points, cost)`` at scipy's optimum from the given start (float64 arrays as in
    :class:`bal.BALProblem`); ``cost`` is ``0.5 |r|^2``, as kernc's solver reports it."""
    from scipy.optimize import least_squares
    from scipy.sparse import lil_matrix

    C, Np, M = len(cameras), len(points), len(observed)

    def fun(z):
        return model.residual(z[:9 * C].reshape(C, 9), z[9 * C:].reshape(Np, 3),
                              cam_idx, pt_idx, observed).reshape(-1)

    sparsity = lil_matrix((2 * M, 9 * C + 3 * Np), dtype=np.int8)
    rows = np.arange(M)
    for r in range(2):
        for k in range(9):
            sparsity[2 * rows + r, 9 * cam_idx.astype(np.int64) + k] = 1
        for k in range(3):
            sparsity[2 * rows + r, 9 * C + 3 * pt_idx.astype(np.int64) + k] = 1
    z0 = np.concatenate([cameras.reshape(-1), points.reshape(-1)])
    sol = least_squares(fun, z0, jac_sparsity=sparsity, method="trf", x_scale="jac",
                        ftol=ftol, xtol=1e-12, gtol=1e-12)
    return sol.x[:9 * C].reshape(C, 9), sol.x[9 * C:].reshape(Np, 3), float(sol.cost)
