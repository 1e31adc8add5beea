"""NumPy reference of ``examples/conv2d_fwd.kern`` (kernel ``conv2d_fwd``).

``y[n, oh, ow, k] = sum_{r, s, c} x[n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c] * w[k, r, s, c]``
with zero padding, NHWC input, KRSC filter, NHWK output.

The problem is 4-D (``P = N*OH*OW*K``): ``make_inputs`` factors ``P`` exactly into ``N, OH, OW, K``
and derives ``H``/``W`` from the output extents, a 3x2 filter with stride (2, 1), padding (1, 0)
and dilation (1, 2) (so ``OH != H`` and ``OW != W``). The reference sums in the kernel's order
(``r``, then ``s``, then ``c``, in float32), so it matches bit for bit.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_common import factor, input_extent, padded, window  # noqa: E402

R, S, C = 3, 2, 3
STRIDE, PAD, DIL = (2, 1), (1, 0), (1, 2)


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    N, OH, OW, K = factor(P, 4)
    H = input_extent(max(OH, 1), R, STRIDE[0], PAD[0], DIL[0])
    W = input_extent(max(OW, 1), S, STRIDE[1], PAD[1], DIL[1])
    return {
        "x": rng.standard_normal((N, H, W, C)).astype(np.float32),
        "w": rng.standard_normal((K, R, S, C)).astype(np.float32),
        "y": np.full((N, OH, OW, K), np.nan, np.float32),
        "sh": STRIDE[0], "sw": STRIDE[1], "ph": PAD[0], "pw": PAD[1], "dh": DIL[0], "dw": DIL[1],
    }


def conv2d(x, w, OH, OW, stride, pad, dil) -> np.ndarray:
    """Forward convolution, accumulated over (r, s, c) in that order in float32."""
    K, Rf, Sf, Cf = w.shape
    xp = padded(x, Rf, Sf, OH, OW, stride, pad, dil)
    y = np.zeros((x.shape[0], OH, OW, K), np.float32)
    for r in range(Rf):
        for s in range(Sf):
            win = window(xp, r, s, OH, OW, stride, dil)
            for c in range(Cf):
                y = y + win[:, :, :, c:c + 1] * w[:, r, s, c]
    return y


def reference(inputs: dict) -> dict:
    x = np.asarray(inputs["x"], np.float32)
    w = np.asarray(inputs["w"], np.float32)
    N, OH, OW, K = inputs["y"].shape
    stride = (inputs["sh"], inputs["sw"])
    pad = (inputs["ph"], inputs["pw"])
    dil = (inputs["dh"], inputs["dw"])
    return {"y": conv2d(x, w, OH, OW, stride, pad, dil)}
