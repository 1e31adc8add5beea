"""NumPy reference of ``examples/conv2d_wgrad_f16.kern`` (kernel ``conv2d_wgrad_f16``): the weight
gradient of ``examples/conv2d_wgrad.py`` on f16 ``x`` and ``dy``, the sums in f32.

``make_inputs`` is ``conv2d_wgrad.make_inputs`` (the same shapes, stride, padding and dilation;
``dy`` in its NHWK storage shape ``(M, K)``) with ``x`` and ``dy`` rounded to f16.
:func:`reference` sums ``m = (n, oh, ow)`` in order in float32, each product exact: the CPU
interpreter's ``mma.sync`` order, so on the CPU the kernel matches it bit for bit; a GPU's tensor
cores add in their own order (:data:`GPU_TOLERANCE`; :func:`wgrad_f64` for the 1e-3 relative bound).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv2d_wgrad import make_inputs as _make_inputs  # noqa: E402
from conv2d_wgrad import wgrad  # noqa: E402
from conv_common import im2col, to_f16  # noqa: E402

#: How far a GPU's result may be from :func:`reference` (tensor cores add in their own order; the
#: 24 products of standard normal values per output sum to well under 40 in magnitude).
GPU_TOLERANCE = {"rtol": 1e-4, "atol": 1e-4}


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    return to_f16(_make_inputs(P, rng), "x", "dy")


def _geometry(inputs: dict):
    K, R, S, C = inputs["gw"].shape
    stride = (inputs["sh"], inputs["sw"])
    pad = (inputs["ph"], inputs["pw"])
    dil = (inputs["dh"], inputs["dw"])
    return R, S, int(inputs["OH"]), int(inputs["OW"]), stride, pad, dil


def wgrad_f64(x, dy, R, S, OH, OW, stride, pad, dil) -> np.ndarray:
    """The weight gradient ``(K, R, S, C)`` in float64: ``dy^T`` ``(K, M)`` times the im2col matrix
    ``(M, R*S*C)``."""
    x, dy = np.asarray(x, np.float64), np.asarray(dy, np.float64)
    return (dy.T @ im2col(x, R, S, OH, OW, stride, pad, dil)).reshape(dy.shape[1], R, S, x.shape[3])


def reference(inputs: dict) -> dict:
    return {"gw": wgrad(np.asarray(inputs["x"], np.float32), np.asarray(inputs["dy"], np.float32),
                        *_geometry(inputs))}


def reference_f64(inputs: dict) -> dict:
    """The output in float64 (:func:`wgrad_f64`), for the 1e-3 relative bound; of the inputs' magnitudes
    (``np.abs`` of each array) it is the bound's scale."""
    return {"gw": wgrad_f64(inputs["x"], inputs["dy"], *_geometry(inputs))}
