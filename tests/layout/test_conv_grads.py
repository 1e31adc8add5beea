"""Convolution gradient views (layouts.md section 3): the weight gradient through the K x M output
gradient matrix, the data gradient through the transposed map with exact-division validity, both
against direct numpy references."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from kernc.layout import im2col, im2col_dgrad, output_grad


def conv_fwd(x, w, stride, pad, dil):
    """Direct NHWC convolution: x (N,H,W,C), w (K,R,S,C) -> y (N,OH,OW,K)."""
    N, H, W, C = x.shape
    K, R, S, _ = w.shape
    OH = (H + 2 * pad[0] - dil[0] * (R - 1) - 1) // stride[0] + 1
    OW = (W + 2 * pad[1] - dil[1] * (S - 1) - 1) // stride[1] + 1
    y = np.zeros((N, OH, OW, K))
    for n, oh, ow, r, s in itertools.product(range(N), range(OH), range(OW), range(R), range(S)):
        h, ww = oh * stride[0] + r * dil[0] - pad[0], ow * stride[1] + s * dil[1] - pad[1]
        if 0 <= h < H and 0 <= ww < W:
            y[n, oh, ow] += w[:, r, s, :] @ x[n, h, ww]
    return y


CASES = [((1, 1), (0, 0), (1, 1)), ((2, 2), (1, 1), (1, 1)), ((1, 2), (2, 1), (2, 1)), ((3, 2), (1, 0), (1, 2))]


@pytest.mark.parametrize("stride,pad,dil", CASES)
def test_weight_gradient_through_output_grad_matrix(stride, pad, dil):
    rng = np.random.default_rng(0)
    N, H, W, C, K, R, S = 2, 6, 5, 3, 4, 3, 2
    x = rng.standard_normal((N, H, W, C))
    fwd = im2col(N, H, W, C, R, S, stride=stride, padding=pad, dilation=dil)
    dy = rng.standard_normal((N, fwd.OH, fwd.OW, K))
    A = fwd.gather(x)                                       # (M, R*S*C)
    G = output_grad(N, fwd.OH, fwd.OW, K).gather(dy)        # (K, M)
    dw = (G @ A).reshape(K, R, S, C)
    # reference: d/dw of sum(y * dy) for the direct convolution
    ref = np.zeros((K, R, S, C))
    for k, r, s, c in itertools.product(range(K), range(R), range(S), range(C)):
        e = np.zeros((K, R, S, C))
        e[k, r, s, c] = 1
        ref[k, r, s, c] = np.sum(conv_fwd(x, e, stride, pad, dil) * dy)
    np.testing.assert_allclose(dw, ref, atol=1e-9)


@pytest.mark.parametrize("stride,pad,dil", CASES)
def test_data_gradient_through_transposed_map(stride, pad, dil):
    rng = np.random.default_rng(1)
    N, H, W, C, K, R, S = 1, 5, 6, 2, 3, 3, 2
    w = rng.standard_normal((K, R, S, C))
    fwd = im2col(N, H, W, C, R, S, stride=stride, padding=pad, dilation=dil)
    dy = rng.standard_normal((N, fwd.OH, fwd.OW, K))
    view = im2col_dgrad(N, H, W, K, R, S, stride=stride, padding=pad, dilation=dil)
    assert view.shape == (N * H * W, R * S * K)
    A = view.gather(dy)                                     # (N*H*W, R*S*K), k fastest
    Wt = w.transpose(1, 2, 0, 3).reshape(R * S * K, C)     # rows (r, s, k)
    dx = (A @ Wt).reshape(N, H, W, C)
    # reference: dx = d/dx of sum(conv(x, w) * dy), linear in x
    ref = np.zeros((N, H, W, C))
    for n, h, ww, c in itertools.product(range(N), range(H), range(W), range(C)):
        e = np.zeros((N, H, W, C))
        e[n, h, ww, c] = 1
        ref[n, h, ww, c] = np.sum(conv_fwd(e, w, stride, pad, dil) * dy)
    np.testing.assert_allclose(dx, ref, atol=1e-9)


def test_exact_division_validity():
    v = im2col_dgrad(1, 5, 5, 1, 3, 3, stride=(2, 2), padding=(1, 1))
    # h = 0, r = 0: (0 + 1 - 0) / 2 is not exact -> invalid; r = 1: (0 + 1 - 1)/2 = 0 exact -> valid
    assert not v.in_bounds((0, 0))
    (_, oh, ow, _), ok = v.to_source_checked((0, 1 * 3 * 1 + 1 * 1 + 0))   # r=1, s=1, k=0
    assert ok and (oh, ow) == (0, 0)
