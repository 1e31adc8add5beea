"""im2col as a functional layout (``layouts.md`` section 3), against an independent numpy gather."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from kernc.layout import FunctionalLayout, Layout, LayoutError, chain, im2col


def reference_im2col(X, R, S, stride, padding, dilation, padded_channels=None):
    """Gather by slicing a zero-padded copy: rows (n, oh, ow), columns (r, s, c), channel fastest."""
    N, H, W, C = X.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    Cp = C if padded_channels is None else padded_channels
    Xp = np.zeros((N, H + 2 * ph, W + 2 * pw, Cp), dtype=X.dtype)
    Xp[:, ph:ph + H, pw:pw + W, :C] = X
    OH = len(range(0, H + 2 * ph - dh * (R - 1), sh))
    OW = len(range(0, W + 2 * pw - dw * (S - 1), sw))
    cols = []
    for r in range(R):
        for s in range(S):
            patch = Xp[:, r * dh: r * dh + sh * (OH - 1) + 1: sh, s * dw: s * dw + sw * (OW - 1) + 1: sw, :]
            cols.append(patch)                                   # (N, OH, OW, Cp)
    G = np.stack(cols, axis=3)                                   # (N, OH, OW, R*S, Cp)
    return G.reshape(N * OH * OW, R * S * Cp), OH, OW


def test_worked_example():
    # layouts.md: N=1, H=W=5, C=1, 3x3, stride 2, pad 1 -> OH=OW=3; input values 1..25
    X = np.arange(1, 26).reshape(1, 5, 5, 1)
    lay = im2col(1, 5, 5, 1, 3, 3, stride=(2, 2), padding=(1, 1))
    assert (lay.OH, lay.OW) == (3, 3) and lay.shape == (9, 9)
    G = lay.gather(X)
    assert G[0].tolist() == [0, 0, 0, 0, 1, 2, 0, 6, 7]
    assert lay.to_source((4, 0)) == (0, 1, 1, 0)
    offs = lay.offsets_layout()
    assert offs.to_source((4, 0)) == 6 and X.ravel()[6] == 7
    assert offs.to_source_checked((4, 0)) == (6, True)
    assert lay.to_source_checked((0, 0)) == ((0, -1, -1, 0), False)
    assert not lay.in_bounds((0, 3)) and lay.in_bounds((0, 4))
    assert np.array_equal(offs.gather(X.ravel()), G)
    assert np.array_equal(G, reference_im2col(X, 3, 3, (2, 2), (1, 1), (1, 1))[0])


CASES = [
    # (N, H, W, C, R, S, stride, padding, dilation)
    (1, 5, 5, 1, 3, 3, (1, 1), (0, 0), (1, 1)),
    (2, 6, 7, 3, 3, 3, (1, 1), (1, 1), (1, 1)),
    (2, 7, 5, 2, 3, 2, (2, 1), (1, 0), (1, 1)),
    (1, 9, 8, 2, 3, 3, (2, 3), (2, 1), (2, 1)),
    (1, 6, 6, 1, 2, 2, (3, 3), (1, 2), (1, 1)),
    (3, 4, 5, 2, 1, 1, (1, 2), (0, 0), (1, 1)),
    (1, 8, 10, 3, 3, 3, (1, 1), (2, 2), (2, 3)),
]


@pytest.mark.parametrize("case", CASES)
def test_against_numpy_gather(case):
    N, H, W, C, R, S, stride, padding, dilation = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    X = rng.integers(1, 100, size=(N, H, W, C))
    lay = im2col(N, H, W, C, R, S, stride=stride, padding=padding, dilation=dilation)
    ref, OH, OW = reference_im2col(X, R, S, stride, padding, dilation)
    assert (lay.OH, lay.OW) == (OH, OW)
    assert lay.shape == (N * OH * OW, R * S * C) == ref.shape
    assert np.array_equal(lay.gather(X), ref)
    assert np.array_equal(lay.offsets_layout().gather(X.ravel()), ref)
    # padded positions read 0 (X has no zeros, so every 0 is a padded/out-of-bounds position)
    zeros = ref == 0
    oob = np.array([[not lay.in_bounds((m, k)) for k in range(lay.K)] for m in range(lay.M)])
    assert np.array_equal(zeros, oob)


def test_ow_differs_from_w_and_padding_reads_zero():
    lay = im2col(1, 6, 9, 1, 3, 3, stride=(1, 2), padding=(1, 1))
    assert lay.OW == 5 and lay.OW != lay.W and lay.OH == 6
    assert lay.gather(np.ones((1, 6, 9, 1), dtype=int))[0, :3].tolist() == [0, 0, 0]


def test_padded_channels():
    X = np.arange(1, 1 + 2 * 5 * 5 * 3).reshape(2, 5, 5, 3)
    lay = im2col(2, 5, 5, 3, 3, 3, stride=1, padding=1, padded_channels=4)
    assert lay.K == 3 * 3 * 4
    ref, _, _ = reference_im2col(X, 3, 3, (1, 1), (1, 1), (1, 1), padded_channels=4)
    assert np.array_equal(lay.gather(X), ref)
    src, ok = lay.to_source_checked((12, 3))       # channel 3 of 4 is padding
    assert src[3] == 3 and ok is False
    with pytest.raises(LayoutError):
        im2col(1, 5, 5, 3, 3, 3, padded_channels=2)


def test_bounds_of_m_and_k():
    lay = im2col(1, 5, 5, 1, 3, 3, padding=1)
    assert not lay.in_bounds((lay.M, 4)) and not lay.in_bounds((0, lay.K)) and not lay.in_bounds((-1, 4))


def test_bad_sizes():
    with pytest.raises(LayoutError):
        im2col(1, 2, 2, 1, 3, 3)          # filter larger than the input
    with pytest.raises(LayoutError):
        im2col(1, 5, 5, 1, 3, 3, stride=0)


def test_chain_rule_every_layer_in_bounds():
    class Shift(FunctionalLayout):
        """A 1-D view shifted by -2 (a left pad of 2)."""

        @property
        def shape(self):
            return (6,)

        def to_source(self, c):
            return (c[0] - 2,)

        def to_source_checked(self, c):
            return self.to_source(c), 0 <= c[0] < 6

    inner = Layout((4,), (1,))
    ch = chain(inner, Shift())
    assert ch.shape == (6,)
    assert [ch.in_bounds((i,)) for i in range(6)] == [False, False, True, True, True, True]
    assert ch.to_source((3,)) == 1
    assert ch.gather(np.array([10, 20, 30, 40])).tolist() == [0, 0, 10, 20, 30, 40]
    assert not ch.in_bounds((6,))           # the outer layer is out of bounds
    with pytest.raises(LayoutError):
        chain(inner, "not a layout")
