"""Convolutions as implicit GEMMs through the im2col view: the shipped examples against numpy
reference convolutions, for several strides, paddings and dilations (``examples/conv2d_*.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import compiled_example, example_reference
from helpers import launch

# (N, H, W, C), (K, R, S), stride, padding, dilation
CONVS = [
    ((1, 5, 5, 1), (1, 3, 3), (1, 1), (1, 1), (1, 1)),
    ((2, 6, 7, 3), (4, 3, 3), (2, 2), (1, 1), (1, 1)),
    ((2, 7, 5, 2), (3, 2, 3), (1, 2), (0, 2), (2, 1)),
    ((1, 9, 8, 3), (2, 3, 2), (3, 1), (2, 0), (1, 3)),
    ((3, 4, 4, 5), (6, 1, 1), (1, 1), (0, 0), (1, 1)),
]


def _extent(h, r, s, p, d):
    return (h + 2 * p - d * (r - 1) - 1) // s + 1


@pytest.mark.parametrize("xshape, wshape, stride, pad, dil", CONVS)
def test_conv2d_forward(xshape, wshape, stride, pad, dil):
    mod = compiled_example("conv2d_fwd")
    ref = example_reference("conv2d_fwd")
    N, H, W, C = xshape
    K, R, S = wshape
    OH, OW = _extent(H, R, stride[0], pad[0], dil[0]), _extent(W, S, stride[1], pad[1], dil[1])
    rng = np.random.default_rng(sum(xshape) + K)
    x = rng.standard_normal(xshape).astype(np.float32)
    w = rng.standard_normal((K, R, S, C)).astype(np.float32)
    y = np.full((N, OH, OW, K), np.nan, np.float32)
    launch(mod, "conv2d_fwd", x, w, y, *stride, *pad, *dil)
    want = ref.conv2d(x, w, OH, OW, stride, pad, dil)
    np.testing.assert_array_equal(y, want)          # same summation order: bit-exact
    # and against a float64 direct convolution (independent of the im2col slicing)
    direct = np.zeros((N, OH, OW, K))
    for n, oh, ow, k in np.ndindex(N, OH, OW, K):
        for r, s in np.ndindex(R, S):
            h, ww = oh * stride[0] + r * dil[0] - pad[0], ow * stride[1] + s * dil[1] - pad[1]
            if 0 <= h < H and 0 <= ww < W:
                direct[n, oh, ow, k] += float(np.dot(x[n, h, ww].astype(np.float64), w[k, r, s]))
    np.testing.assert_allclose(y, direct, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("xshape, wshape, stride, pad, dil", CONVS)
def test_conv2d_weight_gradient(xshape, wshape, stride, pad, dil):
    mod = compiled_example("conv2d_wgrad")
    ref = example_reference("conv2d_wgrad")
    N, H, W, C = xshape
    K, R, S = wshape
    OH, OW = _extent(H, R, stride[0], pad[0], dil[0]), _extent(W, S, stride[1], pad[1], dil[1])
    rng = np.random.default_rng(sum(xshape) * K)
    x = rng.standard_normal(xshape).astype(np.float32)
    dy = rng.standard_normal((N, OH, OW, K)).astype(np.float32)
    gw = np.full((K, R, S, C), np.nan, np.float32)
    launch(mod, "conv2d_wgrad", x, dy.reshape(N * OH * OW, K), gw, OH, OW, *stride, *pad, *dil)
    want = ref.wgrad(x, dy.reshape(-1, K), R, S, OH, OW, stride, pad, dil)
    np.testing.assert_array_equal(gw, want)
    # the weight gradient is the adjoint of the forward convolution: <conv(x, w), dy> = <w, gw>
    fwd = example_reference("conv2d_fwd")
    w = rng.standard_normal((K, R, S, C))
    lhs = float(np.sum(fwd.conv2d(x.astype(np.float64), w, OH, OW, stride, pad, dil) * dy))
    assert np.isclose(lhs, float(np.sum(w * gw)), rtol=1e-4)
