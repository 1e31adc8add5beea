"""NumPy reference of ``examples/conv2d_fwd_f16.kern`` (kernel ``conv2d_fwd_f16``): the forward
convolution of ``examples/conv2d_fwd.py`` on f16 ``x`` and ``w``, the sums in f32.

``make_inputs`` is ``conv2d_fwd.make_inputs`` (the same shapes, filter, stride, padding and
dilation) with ``x`` and ``w`` rounded to f16. :func:`reference` sums ``(r, s, c)`` in order in
float32, each product exact (two f16 significands fit f32's): the order of the CPU interpreter's
``mma.sync`` (``backend/interpreter/nvgpu.py``: k ascending, each sum rounded) and of the CUDA-core
tiles, so on the CPU the kernel matches it bit for bit. A GPU's tensor cores add in their own order:
:data:`GPU_TOLERANCE`, and :func:`conv2d_f64` for the 1e-3 relative (scaled by sqrt(K)) bound.
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv2d_fwd import conv2d  # noqa: E402
from conv2d_fwd import make_inputs as _make_inputs  # noqa: E402
from conv_common import im2col, to_f16  # noqa: E402

#: How far a GPU's result may be from :func:`reference` (tensor cores add in their own order; the
#: 18 products of a 3x2x3 filter of standard normal values sum to well under 40 in magnitude).
GPU_TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    return to_f16(_make_inputs(P, rng), "x", "w")


def _geometry(inputs: dict):
    N, OH, OW, K = inputs["y"].shape
    stride = (inputs["sh"], inputs["sw"])
    pad = (inputs["ph"], inputs["pw"])
    dil = (inputs["dh"], inputs["dw"])
    return OH, OW, stride, pad, dil


def conv2d_f64(x, w, OH, OW, stride, pad, dil) -> np.ndarray:
    """The forward convolution in float64 (exact products, sums rounded in f64): the im2col matrix
    ``(N*OH*OW, R*S*C)`` times the filter ``(R*S*C, K)``."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    K, R, S, C = w.shape
    return (im2col(x, R, S, OH, OW, stride, pad, dil) @ w.reshape(K, -1).T).reshape(x.shape[0], OH, OW, K)


def reference(inputs: dict) -> dict:
    return {"y": conv2d(np.asarray(inputs["x"], np.float32), np.asarray(inputs["w"], np.float32),
                        *_geometry(inputs))}


def reference_f64(inputs: dict) -> dict:
    """The output in float64 (:func:`conv2d_f64`), for the 1e-3 relative bound; of the inputs' magnitudes
    (``np.abs`` of each array) it is the bound's scale."""
    return {"y": conv2d_f64(inputs["x"], inputs["w"], *_geometry(inputs))}
