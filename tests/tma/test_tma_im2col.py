"""TMA im2col mode on the host and in the interpreter: conv2d_fwd's legality check
(conv2d_im2col_reason) and each reason it gives, check_im2col's driver limits named before
cuTensorMapEncodeIm2col is called (a stand-in driver records the call), the call's arguments, and the
interpreter's tile of an im2col-mode copy (im2col_tile) compared bitwise against a numpy im2col of the
same NHWC f16 input: padding borders, stride 2, dilation 2, odd sizes, rows past the last image."""

from __future__ import annotations

import re
import types

import numpy as np
import pytest

from kernc.backend.interpreter.tma import im2col_gather, im2col_tile
from kernc.backend.interpreter.wgmma import swizzle
from kernc.backend.tensor_map import (MAP_BYTES, Conv2dGeometry, Im2colTensorMap, check_im2col,
                                      conv2d_im2col_map, conv2d_im2col_reason, encode_im2col)
from kernc.support.errors import KerncLaunchError


def _enum(*names):
    return types.SimpleNamespace(**{n: n for n in names})


class _Driver:
    """cuda.bindings.driver as far as encode_im2col uses it."""

    CUtensorMapDataType = _enum("CU_TENSOR_MAP_DATA_TYPE_FLOAT16", "CU_TENSOR_MAP_DATA_TYPE_FLOAT32")
    CUtensorMapInterleave = _enum("CU_TENSOR_MAP_INTERLEAVE_NONE")
    CUtensorMapSwizzle = _enum(*(f"CU_TENSOR_MAP_SWIZZLE_{s}" for s in ("NONE", "32B", "64B", "128B")))
    CUtensorMapL2promotion = _enum("CU_TENSOR_MAP_L2_PROMOTION_L2_128B")
    CUtensorMapFloatOOBfill = _enum("CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE",
                                    "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA")
    cuuint64_t = type("cuuint64_t", (int,), {})
    cuuint32_t = type("cuuint32_t", (int,), {})

    def __init__(self, err=0):
        self.calls, self.err = [], err

    def cuTensorMapEncodeIm2col(self, *args):
        self.calls.append(args)
        return self.err, bytes(range(MAP_BYTES))

    def cuGetErrorString(self, err):
        return 0, b"invalid argument"


def _geom(N, H, W, C, R, S, sh=1, sw=1, ph=0, pw=0, dh=1, dw=1):
    OH = (H + 2 * ph - dh * (R - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (S - 1) - 1) // sw + 1
    return Conv2dGeometry(N, H, W, C, R, S, OH, OW, sh, sw, ph, pw, dh, dw)


# --- the host description and its legality check ---------------------------------------------------

G = _geom(2, 9, 9, 128, 3, 3, ph=1, pw=1)  # a 3x3 'same' convolution, 128 channels


def test_conv2d_map_describes_the_nhwc_input():
    tm = conv2d_im2col_map(G, 64, 128)
    assert tm.dims == (128, 9, 9, 2) and tm.strides == (256, 2304, 20736)
    assert tm.lower == (-1, -1) and tm.upper == (-1, -1) and tm.estrides() == (1, 1, 1, 1)
    assert (tm.box_extent(0), tm.box_extent(1)) == (G.OW, G.OH) == (9, 9)
    assert tm.box == (64, 128) and tm.box_bytes == 16384
    assert conv2d_im2col_reason(G, 64, 128) is None


def test_strided_dilated_map_corners_and_extents():
    g = _geom(1, 11, 13, 64, 3, 3, sh=2, sw=2, ph=2, pw=2, dh=2, dw=2)
    tm = conv2d_im2col_map(g, 64, 64)
    assert tm.lower == (-2, -2) and tm.upper == (-2, -2) and tm.estrides() == (1, 2, 2, 1)
    assert (tm.box_extent(0), tm.box_extent(1)) == (g.OW, g.OH) == (7, 6)
    assert conv2d_im2col_reason(g, 64, 64) is None


REASONS = [
    (_geom(1, 8, 8, 96, 3, 3, ph=1, pw=1), {}, "C = 96 is not a multiple of the 64-channel chunk: a chunk "
     "would straddle two filter taps"),
    (_geom(1, 8, 8, 32, 3, 3), {}, "C = 32 is not a multiple of the 64-channel chunk"),
    (Conv2dGeometry(1, 8, 8, 64, 3, 3, 6, 8), {}, "the output is 6 x 8, not the convolution's 6 x 6 \\(OH = "
     "\\(H \\+ 2\\*ph - dh\\*\\(R-1\\) - 1\\) / sh \\+ 1, OW likewise\\): TMA's im2col walk covers exactly the "
     "convolution's output positions"),
    (_geom(1, 300, 300, 64, 3, 3, ph=130, pw=1), {}, "the padding / dilated filter put the pixel box's "
     "lower corner \\(-1, -130\\) \\(W, H\\) outside -128..127"),
    (_geom(1, 300, 300, 64, 3, 3, dh=100, dw=1), {}, "upper corner \\(-2, -200\\) \\(W, H\\) outside -128..127"),
    (_geom(1, 600, 600, 64, 3, 3, dh=200), {}, "the dilated filter span \\(400, 2\\) is beyond the im2col "
     "offsets' range 0..255"),
    (_geom(1, 40, 40, 64, 3, 3, sh=9), {}, "the stride \\(9, 1\\) is beyond the traversal strides' 1..8"),
    (G, dict(pixels=2048), "pixels per column is 2048, not in 1..1024"),
    (_geom(1, 8, 8, 512, 1, 1), dict(channels=512, swizzle=0), "channels per pixel is 512, not in 1..256"),
    (G, dict(address=0x1008), "the global address 0x1008 is not 16-byte aligned"),
    (G, dict(channels=128), "a pixel's 256 bytes are more than the 128-byte swizzle span"),
    (_geom(1, 8, 8, 4, 1, 1), dict(channels=4, swizzle=0), "the byte stride of dimension 1 is 8 \\(the stride between pixels; dimensions innermost first\\): it "
     "must be "
     "a positive multiple of 16 .* \\(a pixel of 4 x 2 bytes is no multiple of 16 bytes: C must be a multiple of 8\\)"),
    (_geom(1, 8, 8, 64, 1, 1), dict(channels=4, swizzle=0), "a pixel's 8 bytes \\(4 channels\\) are not a "
     "multiple of 16"),
    (Conv2dGeometry(1, 8, 8, 64, 3, 3, 6, 6, ph=-1), {}, "negative padding"),
    # (trial: it said "not the convolution's -2 x -2")
    (Conv2dGeometry(1, 2, 2, 64, 5, 5, 1, 1), {}, "the padded image \\(2 x 2\\) is smaller than the dilated "
     "filter \\(5 x 5\\): the convolution has no output position"),
]


@pytest.mark.parametrize("g, kw, message", REASONS)
def test_each_reason_conv_stays_on_the_plain_path(g, kw, message):
    kw = {"channels": 64, "pixels": 128, **kw}
    reason = conv2d_im2col_reason(g, **kw)
    assert reason is not None
    assert re.search(message, reason), reason


def test_an_odd_channel_count_gives_an_unaligned_stride():
    # C = 12 f16: a 24-byte pixel, so the W stride is not a multiple of 16 bytes
    tm = conv2d_im2col_map(_geom(1, 8, 8, 12, 1, 1), 8, 64, swizzle=0)
    with pytest.raises(KerncLaunchError, match="kernel 'conv', im2col tensor map parameter 'x': the byte "
                       "stride of dimension 1 is 24 \\(the stride between pixels; dimensions innermost first\\): it must be a "
                       "positive multiple of 16"):
        check_im2col(tm, 0, "x", "conv")


GOOD = conv2d_im2col_map(G, 64, 128)
BAD = [
    (dict(dims=(64, 8, 8, 2, 2, 2), strides=(128,) * 5, lower=(0,) * 4, upper=(0,) * 4,
          element_strides=(1,) * 6), "rank 6 is not in 3..5"),
    (dict(lower=(-1,)), "lower has 1 entries, the rank 4 needs 2"),
    (dict(lower=(0, -129)), "lower corner 1 is -129, not in -128..127 \\(rank 4\\)"),
    (dict(upper=(128, 0)), "upper corner 0 is 128, not in -128..127"),
    (dict(dims=(64, 8, 2), strides=(128, 1024), lower=(-40000,), upper=(0,), element_strides=(1, 1, 1)),
     "lower corner 0 is -40000, not in -32768..32767 \\(rank 3\\)"),
    (dict(dims=(64, 8, 8, 8, 2), strides=(128, 1024, 8192, 65536), lower=(0, 0, -17), upper=(0, 0, 0),
          element_strides=(1,) * 5), "lower corner 2 is -17, not in -16..15 \\(rank 5\\)"),
    (dict(strides=(136, 2304, 20736)), "the byte stride of dimension 1 is 136"),
    (dict(element_strides=(1, 9, 1, 1)), "element stride 1 is 9, not in 1..8"),
    (dict(lower=(5, 0), upper=(-9, 0)), "the pixel box is empty along spatial dimension 0"),
    (dict(swizzle=16), "swizzle 16 is not 0, 32, 64 or 128"),
    (dict(oob="inf"), "oob fill 'inf' is not 'zero' or 'nan'"),
]


@pytest.mark.parametrize("change, message", BAD)
def test_a_driver_limit_broken_is_named_before_the_driver_is_called(change, message):
    d = _Driver()
    tm = Im2colTensorMap(**{**GOOD.__dict__, **change})
    with pytest.raises(KerncLaunchError, match="kernel 'conv', im2col tensor map parameter 'x': " + message):
        encode_im2col(tm, 0x10000, "x", "conv", driver=d)
    assert d.calls == []


def test_the_driver_receives_the_im2col_arguments():
    d = _Driver()
    assert encode_im2col(GOOD, 0x10000, "x", "conv", driver=d) == bytes(range(MAP_BYTES))
    (args,) = d.calls
    assert args[:3] == ("CU_TENSOR_MAP_DATA_TYPE_FLOAT16", 4, 0x10000)
    assert args[3] == [128, 9, 9, 2] and all(type(x) is _Driver.cuuint64_t for x in args[3] + args[4])
    assert args[4] == [256, 2304, 20736]
    assert args[5] == [-1, -1] and args[6] == [-1, -1] and all(type(x) is int for x in args[5] + args[6])
    assert (args[7], args[8]) == (64, 128)
    assert type(args[7]) is _Driver.cuuint32_t and type(args[8]) is _Driver.cuuint32_t
    assert args[9] == [1, 1, 1, 1] and all(type(x) is _Driver.cuuint32_t for x in args[9])
    assert args[10:] == ("CU_TENSOR_MAP_INTERLEAVE_NONE", "CU_TENSOR_MAP_SWIZZLE_128B",
                         "CU_TENSOR_MAP_L2_PROMOTION_L2_128B", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")


def test_a_driver_failure_names_the_parameter_and_reason():
    with pytest.raises(KerncLaunchError, match="kernel 'conv', tensor map parameter 'x': "
                       "cuTensorMapEncodeIm2col failed: invalid argument"):
        encode_im2col(GOOD, 0x10000, "x", "conv", driver=_Driver(err=1))


# --- the interpreter's tile against numpy's im2col -------------------------------------------------

def _im2col(x, g):
    """conv2d_fwd's im2col view of NHWC ``x``: ``(N*OH*OW, R*S*C)``, zero outside the input."""
    N, H, W, C = x.shape
    xp = np.zeros((N, H + 2 * g.ph + g.sh * g.OH, W + 2 * g.pw + g.sw * g.OW, C), x.dtype)
    xp[:, g.ph:g.ph + H, g.pw:g.pw + W] = x
    cols = np.empty((N, g.OH, g.OW, g.R, g.S, C), x.dtype)
    for r in range(g.R):
        for s in range(g.S):
            cols[:, :, :, r, s] = xp[:, r * g.dh:r * g.dh + g.sh * g.OH:g.sh,
                                     s * g.dw:s * g.dw + g.sw * g.OW:g.sw]
    return cols.reshape(N * g.OH * g.OW, g.R * g.S * C)


CASES = [
    # (N, H, W, C, R, S, sh, sw, ph, pw, dh, dw), channels, pixels, swizzle
    ((2, 5, 5, 64, 3, 3, 1, 1, 1, 1, 1, 1), 64, 64, 128),   # 'same' padding: every border
    ((1, 9, 7, 64, 3, 3, 2, 2, 1, 1, 1, 1), 64, 32, 128),   # stride 2, odd sizes
    ((2, 7, 9, 32, 3, 3, 1, 1, 2, 2, 2, 2), 32, 32, 64),    # dilation 2, padding 2
    ((1, 11, 13, 16, 3, 5, 2, 1, 3, 2, 2, 1), 16, 32, 0),   # mixed: stride, dilation, odd, unswizzled
    ((3, 3, 5, 128, 2, 2, 1, 2, 0, 1, 1, 1), 64, 16, 128),  # two chunks per tap, rows past the last image
]


@pytest.mark.parametrize("shape, channels, pixels, swz", CASES)
def test_the_tile_is_numpy_im2col_bitwise(shape, channels, pixels, swz):
    N, H, W, C, R, S, sh, sw, ph, pw, dh, dw = shape
    g = _geom(N, H, W, C, R, S, sh, sw, ph, pw, dh, dw)
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    x[x == 0] = 1  # a 0 in the input would hide a zero fill read from it
    A = _im2col(x, g)
    M = N * g.OH * g.OW
    tm = conv2d_im2col_map(g, channels, pixels, swizzle=swz, array=x)
    if C % channels == 0:
        assert conv2d_im2col_reason(g, channels, pixels, swz) is None
    es = 2
    packed = (np.arange(pixels)[:, None] * channels + np.arange(channels)[None, :]) * es
    pos = swizzle(packed, swz) // es
    seen = 0
    for m0 in range(0, M, pixels):
        n0, rest = divmod(m0, g.OH * g.OW)
        oh0, ow0 = divmod(rest, g.OW)
        coords0 = (ow0 * sw - pw, oh0 * sh - ph, n0)
        for r in range(R):
            for s in range(S):
                for c0 in range(0, C, channels):
                    tile = im2col_tile(tm, (c0,) + coords0, (s * dw, r * dh))
                    want = np.zeros((pixels, channels), np.float16)
                    rows = min(pixels, M - m0)
                    k = (r * S + s) * C + c0
                    want[:rows] = A[m0:m0 + rows, k:k + channels]
                    assert np.array_equal(tile[pos].view(np.uint16), want.view(np.uint16)), (m0, r, s, c0)
                    seen += int((tile == 0).sum())
    assert seen > 0  # the padding borders (and any rows past the end) were filled with zeros


def test_the_nan_fill_marks_out_of_bounds_pixels():
    g = _geom(1, 4, 4, 16, 3, 3, ph=1, pw=1)
    x = np.ones((1, 4, 4, 16), np.float16)
    tm = Im2colTensorMap(**{**conv2d_im2col_map(g, 16, 16, swizzle=0, array=x).__dict__, "oob": "nan"})
    tile = im2col_tile(tm, (0, -1, -1, 0), (0, 0)).reshape(16, 16)
    # filter tap (0, 0) at output row 0 reads row -1 and column -1: outside for oh = 0 or ow = 0
    outside = np.array([oh == 0 or ow == 0 for oh in range(4) for ow in range(4)])
    assert np.isnan(tile[outside]).all() and (tile[~outside] == 1).all()


def test_a_base_off_the_box_or_an_offset_out_of_range_is_refused():
    g = _geom(1, 9, 9, 64, 3, 3, sh=2, sw=2, ph=1, pw=1)
    tm = conv2d_im2col_map(g, 64, 16, array=np.zeros((1, 9, 9, 64), np.float16))
    with pytest.raises(ValueError, match="coordinate 1 \\(0\\) is not a filter-base position of the pixel "
                       "box \\(-1 \\+ k \\* 2, k < 5\\)"):
        im2col_gather(tm, (0, 0, -1, 0), (0, 0))
    with pytest.raises(ValueError, match="im2col offset 1 is 256, not in 0..255"):
        im2col_gather(tm, (0, -1, -1, 0), (0, 256))
    with pytest.raises(ValueError, match="a rank 4 im2col map takes 4 coordinates and 2 im2col offsets"):
        im2col_gather(tm, (0, -1, -1), (0, 0))
