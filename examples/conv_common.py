"""Shared by the convolution examples' references (not an example itself: no ``.kern``)."""

from __future__ import annotations

import numpy as np


def factor(P: int, n: int) -> list:
    """``n`` factors of ``P`` (product exactly ``P``), as balanced as the prime factors allow;
    ``P = 0`` gives ``[0, 1, ..., 1]``."""
    if P == 0:
        return [0] + [1] * (n - 1)
    primes, q, d = [], P, 2
    while d * d <= q:
        while q % d == 0:
            primes.append(d)
            q //= d
        d += 1
    if q > 1:
        primes.append(q)
    out = [1] * n
    for p in sorted(primes, reverse=True):
        out[out.index(min(out))] *= p
    return out


def input_extent(out: int, k: int, stride: int, pad: int, dil: int) -> int:
    """The smallest input extent ``H >= 1`` whose output extent is ``out`` (``out >= 1``)."""
    return max(1, (out - 1) * stride + dil * (k - 1) + 1 - 2 * pad)


def output_extent(h: int, k: int, stride: int, pad: int, dil: int) -> int:
    return (h + 2 * pad - dil * (k - 1) - 1) // stride + 1


def padded(x: np.ndarray, R: int, S: int, OH: int, OW: int, stride, pad, dil) -> np.ndarray:
    """NHWC ``x`` zero-padded by ``pad`` (and on the far side as far as the windows reach)."""
    N, H, W, C = x.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, pad, dil
    hi = max(H + 2 * ph, (OH - 1) * sh + (R - 1) * dh + 1)
    wi = max(W + 2 * pw, (OW - 1) * sw + (S - 1) * dw + 1)
    xp = np.zeros((N, hi, wi, C), x.dtype)
    xp[:, ph:ph + H, pw:pw + W, :] = x
    return xp


def window(xp: np.ndarray, r: int, s: int, OH: int, OW: int, stride, dil) -> np.ndarray:
    """``xp[n, oh*sh + r*dh, ow*sw + s*dw, c]`` for all ``(n, oh, ow, c)``: shape (N, OH, OW, C)."""
    (sh, sw), (dh, dw) = stride, dil
    return xp[:, r * dh:r * dh + (OH - 1) * sh + 1:sh, s * dw:s * dw + (OW - 1) * sw + 1:sw, :]


def im2col(x: np.ndarray, R: int, S: int, OH: int, OW: int, stride, pad, dil) -> np.ndarray:
    """The im2col matrix of NHWC ``x``: ``(N*OH*OW, R*S*C)``, row ``(n, oh, ow)``, column ``(r, s,
    c)`` (the examples' order), zero padding; in ``x``'s dtype."""
    C = x.shape[3]
    xp = padded(x, R, S, OH, OW, stride, pad, dil)
    cols = np.stack([window(xp, r, s, OH, OW, stride, dil) for r in range(R) for s in range(S)], axis=3)
    return cols.reshape(-1, R * S * C)


def to_f16(inputs: dict, *names: str) -> dict:
    """``inputs`` with the arrays ``names`` rounded to float16 (the f16 forms of the examples)."""
    return {k: (v.astype(np.float16) if k in names else v) for k, v in inputs.items()}
