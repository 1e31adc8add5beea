"""NumPy reference of ``examples/im2col_gather.kern`` (kernel ``im2col_gather``).

``out`` (``M x K``) is the im2col matrix of ``x`` (NHWC) for a 3x3 filter, stride 1, padding 1,
dilation 1 -- rows ``m = (n, oh, ow)``, columns ``k = (r, s, c)`` channel fastest -- zero-padded:
rows ``m >= N*OH*OW`` and columns ``k >= 9*C`` are 0 (the checked read is out of bounds there).

The problem is 2-D (``P = M*K``): ``make_inputs`` factors ``P`` as ``M * K`` exactly (``K`` the
largest divisor of ``P`` up to 40) and picks ``C``, ``N``, ``H``, ``W`` so that the true im2col
matrix is about ``M x K`` (a few rows/columns more or less, so both the zero tail and the cut-off
are exercised). The reference is written with ``np.pad`` and slicing (independent of kernc).
"""

from __future__ import annotations

import numpy as np

R = S = 3
STRIDE, PAD, DIL = 1, 1, 1


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    K = max([d for d in range(1, 41) if P % d == 0], default=1) if P else 9
    M = P // K if P else 0
    # odd P: fewer columns than K (a zero tail of columns), more rows than M (cut off); even P:
    # the other way round
    C = max(1, K // 9) if P % 2 else max(1, -(-K // 9))
    W = 5
    N = 1 if M < 2 * W else 2
    H = max(1, -(-M // (N * W))) if P % 2 else max(1, M // (N * W))
    OH = (H + 2 * PAD - DIL * (R - 1) - 1) // STRIDE + 1
    OW = (W + 2 * PAD - DIL * (S - 1) - 1) // STRIDE + 1
    return {
        "x": rng.standard_normal((N, H, W, C)).astype(np.float32),
        "out": np.full((M, K), np.nan, np.float32),
        "OH": OH,
        "OW": OW,
    }


def im2col_matrix(x: np.ndarray, R: int, S: int, OH: int, OW: int, stride=(1, 1), pad=(0, 0),
                  dil=(1, 1)) -> np.ndarray:
    """The ``(N*OH*OW) x (R*S*C)`` im2col matrix of NHWC ``x`` (channel fastest), by slicing."""
    N, H, W, C = x.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, pad, dil
    hi = max(H + 2 * ph, (OH - 1) * sh + (R - 1) * dh + 1)
    wi = max(W + 2 * pw, (OW - 1) * sw + (S - 1) * dw + 1)
    xp = np.zeros((N, hi, wi, C), x.dtype)
    xp[:, ph:ph + H, pw:pw + W, :] = x
    cols = np.zeros((N, OH, OW, R, S, C), x.dtype)
    for r in range(R):
        for s in range(S):
            cols[:, :, :, r, s, :] = xp[:, r * dh:r * dh + (OH - 1) * sh + 1:sh,
                                        s * dw:s * dw + (OW - 1) * sw + 1:sw, :]
    return cols.reshape(N * OH * OW, R * S * C)


def reference(inputs: dict) -> dict:
    x = np.asarray(inputs["x"], np.float32)
    M, K = inputs["out"].shape
    full = im2col_matrix(x, R, S, int(inputs["OH"]), int(inputs["OW"]), (STRIDE,) * 2, (PAD,) * 2,
                         (DIL,) * 2)
    out = np.zeros((M, K), np.float32)
    m, k = min(M, full.shape[0]), min(K, full.shape[1])
    out[:m, :k] = full[:m, :k]
    return {"out": out}
