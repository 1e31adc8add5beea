"""NumPy reference of ``examples/conv2d_wgrad.kern`` (kernel ``conv2d_wgrad``).

``gw[k, r, s, c] = sum_{n, oh, ow} dy[n, oh, ow, k] * x[n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c]``
(zero padding). ``dy`` is passed in its storage shape ``(M, K)`` = ``(N*OH*OW, K)`` (NHWK, the
kernel views it as ``K x M`` with the layout ``(K, M):(1, K)``).

The problem is 4-D (``P = K*R*S*C``): ``make_inputs`` factors ``P`` exactly into ``K, R, S, C``,
takes ``N = 2`` images and a 3x4 output with stride (1, 2), padding (1, 1), dilation (2, 1), and
derives ``H``/``W``. The reference sums over ``m`` in order in float32 (bit-exact with the kernel).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_common import factor, input_extent, padded, window  # noqa: E402

N, OH, OW = 2, 3, 4
STRIDE, PAD, DIL = (1, 2), (1, 1), (2, 1)


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    K, R, S, C = factor(P, 4)
    Rx, Sx = max(R, 1), max(S, 1)
    H = input_extent(OH, Rx, STRIDE[0], PAD[0], DIL[0])
    W = input_extent(OW, Sx, STRIDE[1], PAD[1], DIL[1])
    return {
        "x": rng.standard_normal((N, H, W, C)).astype(np.float32),
        "dy": rng.standard_normal((N * OH * OW, K)).astype(np.float32),
        "gw": np.full((K, R, S, C), np.nan, np.float32),
        "OH": OH, "OW": OW,
        "sh": STRIDE[0], "sw": STRIDE[1], "ph": PAD[0], "pw": PAD[1], "dh": DIL[0], "dw": DIL[1],
    }


def wgrad(x, dy, R, S, OH, OW, stride, pad, dil) -> np.ndarray:
    """Weight gradient ``(K, R, S, C)``, accumulated over m = (n, oh, ow) in order, in float32."""
    Nx, H, W, C = x.shape
    K = dy.shape[1]
    xp = padded(x, R, S, OH, OW, stride, pad, dil)
    cols = np.zeros((Nx * OH * OW, R, S, C), np.float32)
    for r in range(R):
        for s in range(S):
            cols[:, r, s, :] = window(xp, r, s, OH, OW, stride, dil).reshape(-1, C)
    gw = np.zeros((K, R, S, C), np.float32)
    for m in range(Nx * OH * OW):
        gw = gw + dy[m][:, None, None, None] * cols[m][None]
    return gw


def reference(inputs: dict) -> dict:
    x = np.asarray(inputs["x"], np.float32)
    dy = np.asarray(inputs["dy"], np.float32)
    K, R, S, C = inputs["gw"].shape
    stride = (inputs["sh"], inputs["sw"])
    pad = (inputs["ph"], inputs["pw"])
    dil = (inputs["dh"], inputs["dw"])
    return {"gw": wgrad(x, dy, R, S, int(inputs["OH"]), int(inputs["OW"]), stride, pad, dil)}
