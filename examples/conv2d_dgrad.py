"""NumPy reference of ``examples/conv2d_dgrad.kern`` (kernel ``conv2d_dgrad``).

``dx[n, ih, iw, c] = sum_{r, s, k} dy[n, oh, ow, k] * w[k, r, s, c]`` over the ``(oh, ow)`` with
``oh*sh = ih + ph - r*dh`` and ``ow*sw = iw + pw - s*dw`` inside ``dy`` (the gradient of the forward
convolution of ``examples/conv2d_fwd.kern`` with respect to its input): NHWC ``dx``, NHWK ``dy``,
KRSC filter.

The problem is 4-D (``P = N*H*W*C``): ``make_inputs`` factors ``P`` exactly into ``N, H, W, C``
and takes a 3x2 filter with stride (2, 1), padding (1, 1) and dilation (1, 2), ``K = 5`` output
channels, and the output extents of the forward convolution. The reference sums in the kernel's
order (``r``, then ``s``, then ``k``, in float32), so it matches bit for bit.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_common import factor, output_extent  # noqa: E402

R, S, K = 3, 2, 5
STRIDE, PAD, DIL = (2, 1), (1, 1), (1, 2)


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    N, H, W, C = factor(P, 4)
    OH = max(1, output_extent(H, R, STRIDE[0], PAD[0], DIL[0]))
    OW = max(1, output_extent(W, S, STRIDE[1], PAD[1], DIL[1]))
    return {
        "dy": rng.standard_normal((N, OH, OW, K)).astype(np.float32),
        "w": rng.standard_normal((K, R, S, C)).astype(np.float32),
        "dx": np.full((N, H, W, C), np.nan, np.float32),
        "sh": STRIDE[0], "sw": STRIDE[1], "ph": PAD[0], "pw": PAD[1], "dh": DIL[0], "dw": DIL[1],
    }


def _taps(n_in: int, n_out: int, tap: int, stride: int, pad: int, dil: int) -> tuple:
    """For input positions ``0..n_in-1``: the output position each reads at filter tap ``tap``
    (``(i + pad - tap*dil) / stride``) and whether there is one (exact, inside ``0..n_out-1``)."""
    t = np.arange(n_in) + pad - tap * dil
    o = t // stride
    ok = (t % stride == 0) & (o >= 0) & (o < n_out)
    return np.where(ok, o, 0), ok


def dgrad(dy, w, H, W, stride, pad, dil) -> np.ndarray:
    """Data gradient ``(N, H, W, C)``, accumulated over (r, s, k) in that order in float32."""
    N, OH, OW, Kd = dy.shape
    _, Rf, Sf, C = w.shape
    dx = np.zeros((N, H, W, C), np.float32)
    for r in range(Rf):
        oh, okh = _taps(H, OH, r, stride[0], pad[0], dil[0])
        for s in range(Sf):
            ow, okw = _taps(W, OW, s, stride[1], pad[1], dil[1])
            ok = okh[None, :, None, None] & okw[None, None, :, None]
            g = np.where(ok, dy[:, oh][:, :, ow], np.float32(0))
            for k in range(Kd):
                dx = dx + g[:, :, :, k:k + 1] * w[k, r, s, :]
    return dx


def reference(inputs: dict) -> dict:
    dy = np.asarray(inputs["dy"], np.float32)
    w = np.asarray(inputs["w"], np.float32)
    N, H, W, C = inputs["dx"].shape
    stride = (inputs["sh"], inputs["sw"])
    pad = (inputs["ph"], inputs["pw"])
    dil = (inputs["dh"], inputs["dw"])
    return {"dx": dgrad(dy, w, H, W, stride, pad, dil)}
