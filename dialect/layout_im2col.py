"""Convolutions as matrices (``layouts.md`` section 3): :func:`im2col` (the implicit-GEMM view of an
NHWC input), :func:`output_grad` (the output gradient of the weight-gradient GEMM) and
:func:`im2col_dgrad` (the data-gradient view), functional layouts with bounds.
"""

from __future__ import annotations

import operator

from .layout_errors import LayoutError
from .layout_type import ChainLayout, FunctionalLayout, Layout, chain


def _pair(v, name):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise LayoutError(f"im2col: {name} must be an int or a pair, got {v!r}")
        return int(v[0]), int(v[1])
    return int(v), int(v)


class Im2col(FunctionalLayout):
    """The implicit-GEMM view of an NHWC input as an ``M x K`` matrix (see :func:`im2col`)."""

    def __init__(self, N, H, W, C, R, S, stride=(1, 1), padding=(0, 0), dilation=(1, 1), padded_channels=None):
        self.N, self.H, self.W, self.C, self.R, self.S = (int(v) for v in (N, H, W, C, R, S))
        if min(self.N, self.H, self.W, self.C, self.R, self.S) < 1:
            raise LayoutError(f"im2col: sizes must be positive (N={N}, H={H}, W={W}, C={C}, R={R}, S={S})")
        self.sh, self.sw = _pair(stride, "stride")
        self.ph, self.pw = _pair(padding, "padding")
        self.dh, self.dw = _pair(dilation, "dilation")
        if min(self.sh, self.sw, self.dh, self.dw) < 1 or min(self.ph, self.pw) < 0:
            raise LayoutError("im2col: stride and dilation must be positive, padding non-negative")
        self.Cp = self.C if padded_channels is None else int(padded_channels)
        if self.Cp < self.C:
            raise LayoutError(f"im2col: padded_channels={self.Cp} is smaller than C={self.C}")
        self.OH = (self.H + 2 * self.ph - self.dh * (self.R - 1) - 1) // self.sh + 1
        self.OW = (self.W + 2 * self.pw - self.dw * (self.S - 1) - 1) // self.sw + 1
        if self.OH < 1 or self.OW < 1:
            raise LayoutError(f"im2col: the filter ({self.R}x{self.S}, dilation {self.dh}x{self.dw}) does not fit "
                              f"the padded {self.H}x{self.W} input (OH={self.OH}, OW={self.OW})")
        self.M = self.N * self.OH * self.OW
        self.K = self.R * self.S * self.Cp

    @property
    def shape(self) -> tuple:
        """``(M, K) = (N*OH*OW, R*S*C)`` (``C`` = ``padded_channels`` when given)."""
        return (self.M, self.K)

    def extents(self) -> tuple:
        return (self.M, self.K)

    def split(self, c):
        """``(m, k) -> ((n, oh, ow), (r, s, c))``: ``m`` last-fastest over (n, oh, ow), ``k`` over
        (r, s, c) channel fastest."""
        m, k = c
        m, k = operator.index(m), operator.index(k)
        t, ow = divmod(m, self.OW)
        n, oh = divmod(t, self.OH)
        t, ch = divmod(k, self.Cp)
        r, s = divmod(t, self.S)
        return (n, oh, ow), (r, s, ch)

    def to_source(self, c) -> tuple:
        """``(m, k) -> (n, h, w, c)`` with ``h = oh*sh + r*dh - ph``, ``w = ow*sw + s*dw - pw``
        (``h``/``w`` may be negative or past the edge: padding)."""
        (n, oh, ow), (r, s, ch) = self.split(c)
        return (n, oh * self.sh + r * self.dh - self.ph, ow * self.sw + s * self.dw - self.pw, ch)

    def to_source_checked(self, c):
        """``((n, h, w, c), ok)``: ok iff ``0 <= m < M``, ``0 <= k < K``, ``0 <= h < H``, ``0 <= w < W``
        and ``c < C`` (padded channels read 0)."""
        n, h, w, ch = src = self.to_source(c)
        m, k = c
        ok = (0 <= m < self.M and 0 <= k < self.K and 0 <= h < self.H and 0 <= w < self.W and ch < self.C)
        return src, ok

    def input_layout(self) -> Layout:
        """The packed NHWC input layout ``(N,H,W,C):(H*W*C,W*C,C,1)``, the inner layer of the chain."""
        return Layout((self.N, self.H, self.W, self.C), (self.H * self.W * self.C, self.W * self.C, self.C, 1))

    def offsets_layout(self) -> ChainLayout:
        """``chain(input_layout(), self)``: ``(m, k)`` -> flat input offset, checked per layer."""
        return chain(self.input_layout(), self)

    def __str__(self) -> str:
        extra = "" if self.Cp == self.C else f", padded_channels={self.Cp}"
        return (f"im2col(N={self.N}, H={self.H}, W={self.W}, C={self.C}, R={self.R}, S={self.S}, "
                f"stride=({self.sh},{self.sw}), padding=({self.ph},{self.pw}), "
                f"dilation=({self.dh},{self.dw}){extra})")


def im2col(N, H, W, C, R, S, stride=(1, 1), padding=(0, 0), dilation=(1, 1), padded_channels=None) -> Im2col:
    """Convolution input as an implicit ``M x K`` matrix (``layouts.md`` section 3).

    ``M = N*OH*OW``, ``K = R*S*C``, ``OH = (H + 2*ph - dh*(R-1) - 1)//sh + 1`` (likewise ``OW``).
    Row ``m`` splits into ``(n, oh, ow)`` (last fastest), column ``k`` into ``(r, s, c)`` (channel
    fastest -- not PyTorch ``unfold``'s ``(c, r, s)``); the source is ``X[n, h, w, c]`` with
    ``h = oh*sh + r*dh - ph``, ``w = ow*sw + s*dw - pw``, in bounds iff ``0 <= h < H`` and
    ``0 <= w < W`` (else the element reads 0). ``padded_channels`` (>= ``C``) pads ``K`` to
    ``R*S*padded_channels``; channels ``>= C`` are out of bounds. ``stride``/``padding``/``dilation``
    are ints or ``(h, w)`` pairs. Example: ``N=1, H=W=5, C=1``, 3x3, stride 2, pad 1: ``OH=OW=3`` and
    ``(m=4, k=0)`` reads ``(0, 1, 1, 0)``, offset 6 of the input. ``LayoutError`` for bad sizes."""
    return Im2col(N, H, W, C, R, S, stride, padding, dilation, padded_channels)


class OutputGradMatrix(FunctionalLayout):
    """The output gradient ``dY`` (NHWK, ``(N, OH, OW, Kout)``) as one flat ``Kout x M`` matrix for
    the weight-gradient GEMM ``dW[k, (r,s,c)] = sum_m dY[m, k] * im2col[m, (r,s,c)]``: column ``m``
    splits into ``(n, oh, ow)`` in the same pixel order as :func:`im2col`'s rows (the role of CubeCL's
    ``TmaOutGradLayout``; ``layouts.md`` section 3)."""

    def __init__(self, N, OH, OW, K):
        self.N, self.OH, self.OW, self.Kout = (int(v) for v in (N, OH, OW, K))
        if min(self.N, self.OH, self.OW, self.Kout) < 1:
            raise LayoutError(f"output gradient: sizes must be positive (N={N}, OH={OH}, OW={OW}, K={K})")
        self.M = self.N * self.OH * self.OW

    @property
    def shape(self) -> tuple:
        """``(Kout, M)`` with ``M = N*OH*OW``."""
        return (self.Kout, self.M)

    def extents(self) -> tuple:
        return (self.Kout, self.M)

    def to_source(self, c) -> tuple:
        """``(k, m) -> (n, oh, ow, k)``."""
        k, m = (operator.index(v) for v in c)
        t, ow = divmod(m, self.OW)
        n, oh = divmod(t, self.OH)
        return (n, oh, ow, k)

    def to_source_checked(self, c):
        """``((n, oh, ow, k), ok)`` with ok iff ``0 <= k < Kout`` and ``0 <= m < M``."""
        k, m = c
        return self.to_source(c), (0 <= k < self.Kout and 0 <= m < self.M)

    def __str__(self) -> str:
        return f"output_grad(N={self.N}, OH={self.OH}, OW={self.OW}, K={self.Kout})"


def output_grad(N, OH, OW, K) -> OutputGradMatrix:
    """``dY`` of shape ``(N, OH, OW, K)`` viewed as the ``K x M`` matrix of the weight-gradient GEMM
    (see :class:`OutputGradMatrix`). ``LayoutError`` for non-positive sizes."""
    return OutputGradMatrix(N, OH, OW, K)


class Im2colDgrad(FunctionalLayout):
    """The data-gradient (transposed convolution) view of ``dY`` as an ``M' x K'`` matrix.

    ``dX[n, h, w, c] = sum_{r,s,k} dY[n, oh, ow, k] * Wt[k, r, s, c]`` with ``M' = N*H*W`` rows over
    input pixels ``(n, h, w)`` (last fastest) and ``K' = R*S*Kout`` columns over ``(r, s, k)``
    (``k`` fastest). The source pixel is ``oh = (h + ph - r*dh) / sh``, ``ow = (w + pw - s*dw) / sw``,
    valid only where both divisions are exact and ``0 <= oh < OH``, ``0 <= ow < OW``
    (``layouts.md`` section 3: "valid only where the division is exact")."""

    def __init__(self, N, H, W, K, R, S, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
        fwd = Im2col(N, H, W, 1, R, S, stride, padding, dilation)
        self.N, self.H, self.W, self.R, self.S = fwd.N, fwd.H, fwd.W, fwd.R, fwd.S
        self.Kout = int(K)
        if self.Kout < 1:
            raise LayoutError(f"im2col_dgrad: K must be positive, got {K}")
        self.sh, self.sw, self.ph, self.pw, self.dh, self.dw = fwd.sh, fwd.sw, fwd.ph, fwd.pw, fwd.dh, fwd.dw
        self.OH, self.OW = fwd.OH, fwd.OW
        self.M = self.N * self.H * self.W
        self.K = self.R * self.S * self.Kout

    @property
    def shape(self) -> tuple:
        """``(M', K') = (N*H*W, R*S*Kout)``."""
        return (self.M, self.K)

    def extents(self) -> tuple:
        return (self.M, self.K)

    def _split(self, c):
        m, k = (operator.index(v) for v in c)
        t, w = divmod(m, self.W)
        n, h = divmod(t, self.H)
        t, kk = divmod(k, self.Kout)
        r, s = divmod(t, self.S)
        return n, h, w, r, s, kk

    def to_source(self, c) -> tuple:
        """``(m', k') -> (n, oh, ow, k)`` with floor divisions (meaningful only where exact)."""
        n, h, w, r, s, kk = self._split(c)
        return (n, (h + self.ph - r * self.dh) // self.sh, (w + self.pw - s * self.dw) // self.sw, kk)

    def to_source_checked(self, c):
        """``((n, oh, ow, k), ok)``: ok iff both divisions are exact and the pixel is inside dY."""
        m, k = c
        n, h, w, r, s, kk = self._split(c)
        nh, nw = h + self.ph - r * self.dh, w + self.pw - s * self.dw
        ok = (0 <= m < self.M and 0 <= k < self.K and nh % self.sh == 0 and nw % self.sw == 0)
        oh, ow = nh // self.sh, nw // self.sw
        ok = ok and 0 <= oh < self.OH and 0 <= ow < self.OW
        return (n, oh, ow, kk), ok

    def __str__(self) -> str:
        return (f"im2col_dgrad(N={self.N}, H={self.H}, W={self.W}, K={self.Kout}, R={self.R}, S={self.S}, "
                f"stride=({self.sh},{self.sw}), padding=({self.ph},{self.pw}), dilation=({self.dh},{self.dw}))")


def im2col_dgrad(N, H, W, K, R, S, stride=(1, 1), padding=(0, 0), dilation=(1, 1)) -> Im2colDgrad:
    """The output gradient ``dY`` (``(N, OH, OW, K)``) as the ``N*H*W x R*S*K`` matrix of the
    data-gradient GEMM (see :class:`Im2colDgrad`); ``OH``/``OW`` follow the forward convolution of an
    ``H x W`` input. ``LayoutError`` for bad sizes."""
    return Im2colDgrad(N, H, W, K, R, S, stride, padding, dilation)
