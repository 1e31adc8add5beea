"""The solver's three products from kernc: the residual kernel of ``reprojection.kern`` and its
derivatives ``reprojection_grad`` (``kernc.grad``: ``J^T rbar``) and ``reprojection_jvp``
(``kernc.jvp``: ``J v``), with respect to the cameras and the points.

Every buffer of the kernels is stored ``as caspar`` (host arrays of shape ``(rows, count)``,
:mod:`kernc.caspar`); this module converts the solver's ``(C, 9)``/``(Np, 3)``/``(M, 2)`` arrays
to and from them. On ``device="cuda"`` the arrays go through CuPy (the conversion stays on the
host: the solver's vectors are numpy arrays).
"""

from __future__ import annotations

import os

import numpy as np

import kernc
from kernc.caspar import from_caspar, to_caspar

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "reprojection.kern")
WRT = ("cam", "pt")


class KerncOps:
    """``residual``, ``jvp`` and ``vjp`` (see :mod:`solver`) of a :class:`bal.BALProblem`'s
    observations, from kernc kernels run on ``device`` (``"cpu"``: the interpreter; ``"cuda"``)."""

    def __init__(self, problem, device: str = "cpu"):
        with open(SOURCE, encoding="utf-8") as f:
            text = f.read()
        self.forward = kernc.compile(text, filename=SOURCE).reprojection
        self.grad = kernc.grad(text, kernel="reprojection", wrt=WRT, filename=SOURCE).reprojection_grad
        self.jvp_kernel = kernc.jvp(text, kernel="reprojection", wrt=WRT, filename=SOURCE).reprojection_jvp
        self.device = device
        self.M = len(problem.observed)
        self.fixed = {"cam_idx": problem.cam_idx, "pt_idx": problem.pt_idx,
                      "observed": to_caspar(problem.observed)}
        if device == "cuda":
            import cupy

            self._to = cupy.asarray
            self._from = cupy.asnumpy
        else:
            self._to = self._from = np.asarray
        self.fixed = {k: self._to(v) for k, v in self.fixed.items()}
        self.launches = 0

    def _args(self, x) -> dict:
        return {"cam": self._to(to_caspar(x[0])), "pt": self._to(to_caspar(x[1])), **self.fixed}

    def _zeros(self, rows: int, count: int):
        return self._to(np.zeros((rows, count)))

    def residual(self, x) -> np.ndarray:
        """``r(x)``, ``(M, 2)``."""
        out = self._zeros(2, self.M)
        self.forward(**self._args(x), residual=out)
        self.launches += 1
        return from_caspar(self._from(out), 2)

    def jvp(self, x, v) -> np.ndarray:
        """``J v`` for ``v = (dcameras (C, 9), dpoints (Np, 3))``, ``(M, 2)``."""
        out = self._zeros(2, self.M)
        self.jvp_kernel(**self._args(x), residual=self._zeros(2, self.M),
                        cam_dot=self._to(to_caspar(v[0])), pt_dot=self._to(to_caspar(v[1])),
                        residual_dot=out)
        self.launches += 1
        return from_caspar(self._from(out), 2)

    def vjp(self, x, rbar) -> tuple:
        """``J^T rbar`` as ``(cameras_bar (C, 9), points_bar (Np, 3))`` for ``rbar`` ``(M, 2)``."""
        cam_bar = self._to(np.zeros_like(to_caspar(x[0])))
        pt_bar = self._to(np.zeros_like(to_caspar(x[1])))
        self.grad(**self._args(x), residual=self._zeros(2, self.M),
                  residual_bar=self._to(to_caspar(np.asarray(rbar))), cam_bar=cam_bar, pt_bar=pt_bar)
        self.launches += 1
        return from_caspar(self._from(cam_bar), 9), from_caspar(self._from(pt_bar), 3)
