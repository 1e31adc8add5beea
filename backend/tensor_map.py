"""Tensor maps (the Hopper tensor memory accelerator's descriptors) on the host: a Python description,
its check against the CUDA driver's documented limits, and its encoding with ``cuTensorMapEncodeTiled``.

A :class:`TensorMap` describes a tiled view of a global tensor the way the driver takes it (CUDA
Driver API 6.30, "Tensor Map Object Management", ``cuTensorMapEncodeTiled``): dimensions innermost
(fastest-varying) first, the byte strides of dimensions ``1..rank-1`` (dimension 0 is dense), the box
(the tile one ``cp.async.bulk.tensor`` copies, innermost first), element strides, the shared-memory
swizzle (0, 32, 64 or 128 bytes) and the fill of out-of-bounds elements (``"zero"``, or ``"nan"``:
``CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA``).

On the CPU interpreter the description itself is the kernel argument where the kernel takes a tensor
map (``!llvm.ptr`` parameter; :mod:`kernc.backend.interpreter.tma`), with ``array`` the numpy buffer
it reads. On a GPU, :func:`encode` checks it (:func:`check`, BEFORE the driver call: a violated limit
is then a located message, not the driver's bare ``CUDA_ERROR_INVALID_VALUE``) and returns the
driver's opaque 128-byte map; a driver failure is a ``KerncLaunchError`` naming the kernel parameter
and the driver's reason (``cuGetErrorString``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernc.support.errors import KerncLaunchError

#: bytes per element of the element types a map takes here (kernc type names)
ELEM_BYTES = {"u8": 1, "i8": 1, "u16": 2, "f16": 2, "bf16": 2, "u32": 4, "i32": 4, "f32": 4,
              "u64": 8, "i64": 8, "f64": 8}
#: the driver's CUtensorMapDataType enumerator per kernc type name
_DRIVER_TYPE = {"u8": "UINT8", "i8": "UINT8", "u16": "UINT16", "f16": "FLOAT16", "bf16": "BFLOAT16",
                "u32": "UINT32", "i32": "INT32", "f32": "FLOAT32", "u64": "UINT64", "i64": "INT64",
                "f64": "FLOAT64"}
#: swizzle spans (bytes) and their CUtensorMapSwizzle enumerators
_DRIVER_SWIZZLE = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}
#: the driver's limits (cuTensorMapEncodeTiled's documented requirements, interleave NONE)
MAX_RANK, MAX_DIM, MAX_STRIDE, MAX_BOX, MAX_ELEMENT_STRIDE = 5, 1 << 32, 1 << 40, 256, 8
#: byte alignment of the global address and of every byte stride
GLOBAL_ALIGN = 16
#: bytes of an encoded map (CUtensorMap: 16 x 64-bit words, 64-byte aligned)
MAP_BYTES, MAP_ALIGN = 128, 64


class _MapShape:
    """What every tensor map derives from its ``dtype`` and ``dims`` (:class:`TensorMap`,
    :class:`Im2colTensorMap`): its rank and element size in bytes."""

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def elem_bytes(self) -> int:
        return ELEM_BYTES[self.dtype]


@dataclass(frozen=True)
class TensorMap(_MapShape):
    """A tiled tensor map. ``dtype``: a kernc type name (:data:`ELEM_BYTES`); ``dims``: elements per
    dimension, innermost first; ``strides``: byte strides of dimensions 1.. (``rank - 1`` entries);
    ``box``: elements per dimension of the copied tile, innermost first; ``element_strides``: every
    how many elements a box dimension takes (``None``: all 1); ``swizzle``: 0/32/64/128 bytes;
    ``oob``: ``"zero"`` or ``"nan"``; ``array``: the global memory (a numpy array on the CPU, where
    its first element is the map's origin; on a GPU the address is given to :func:`encode`)."""

    dtype: str
    dims: tuple
    strides: tuple
    box: tuple
    element_strides: tuple | None = None
    swizzle: int = 128
    oob: str = "zero"
    array: Any = None

    @property
    def box_bytes(self) -> int:
        """Bytes one copy writes to shared memory (the ``expect_tx`` count of a whole box)."""
        n = self.elem_bytes
        for b in self.box:
            n *= int(b)
        return n

    def estrides(self) -> tuple:
        return tuple(self.element_strides) if self.element_strides is not None else (1,) * self.rank


def _stride_name(d: int, rows: str = "rows") -> str:
    """What the byte stride of map dimension ``d`` (innermost first) is, in words: the stride
    between ``rows`` (of a matrix; the pixels of an im2col map) for ``d = 1``, of an outer
    dimension above."""
    return f"the stride between {rows}" if d == 1 else "the stride of an outer dimension"


def check(tm: TensorMap, address: int, param: str, kernel: str) -> None:
    """Raise ``KerncLaunchError`` naming ``param`` of ``kernel`` where ``tm`` at global byte address
    ``address`` breaks one of ``cuTensorMapEncodeTiled``'s documented requirements (interleave none):
    rank 1..5; address a multiple of 16; each dimension 1..2^32; each byte stride a multiple of 16 and
    below 2^40; each box dimension 1..256; the inner box row a multiple of 16 bytes and, swizzled, at
    most the swizzle span; element strides 1..8; the NaN fill only for float types."""
    def bad(why: str):
        raise KerncLaunchError(f"kernel '{kernel}', tensor map parameter '{param}': {why}")

    if tm.dtype not in ELEM_BYTES:
        bad(f"element type {tm.dtype!r} has no tensor-map data type (one of {', '.join(ELEM_BYTES)})")
    r = tm.rank
    if not 1 <= r <= MAX_RANK:
        bad(f"rank {r} is not in 1..{MAX_RANK}")
    for what, seq, n in (("strides", tm.strides, r - 1), ("box", tm.box, r),
                         ("element_strides", tm.estrides(), r)):
        if len(seq) != n:
            bad(f"{what} has {len(seq)} entries, the rank {r} needs {n}")
    if int(address) % GLOBAL_ALIGN:
        bad(f"the global address {int(address):#x} is not {GLOBAL_ALIGN}-byte aligned")
    for i, d in enumerate(tm.dims):
        if not 1 <= int(d) <= MAX_DIM:
            bad(f"dimension {i} has {int(d)} elements, not in 1..2^32")
    for i, s in enumerate(tm.strides):
        if int(s) % GLOBAL_ALIGN or not 0 < int(s) < MAX_STRIDE:
            bad(f"the byte stride of dimension {i + 1} is {int(s)} ({_stride_name(i + 1)}; dimensions innermost "
                f"first): it must be a positive multiple of "
                f"{GLOBAL_ALIGN} below 2^40 (a row of {tm.dims[0]} x {tm.elem_bytes} bytes is no multiple of 16 "
                f"bytes: its extent must be a multiple of {GLOBAL_ALIGN // tm.elem_bytes})")
    for i, bx in enumerate(tm.box):
        if not 1 <= int(bx) <= MAX_BOX:
            bad(f"box dimension {i} is {int(bx)}, not in 1..{MAX_BOX}")
    inner = int(tm.box[0]) * tm.elem_bytes
    if inner % GLOBAL_ALIGN:
        bad(f"the inner box dimension is {inner} bytes, not a multiple of {GLOBAL_ALIGN}")
    if tm.swizzle not in _DRIVER_SWIZZLE:
        bad(f"swizzle {tm.swizzle!r} is not 0, 32, 64 or 128 (bytes)")
    if tm.swizzle and inner > tm.swizzle:
        bad(f"the inner box dimension is {inner} bytes, more than the {tm.swizzle}-byte swizzle span")
    for i, e in enumerate(tm.estrides()):
        if not 1 <= int(e) <= MAX_ELEMENT_STRIDE:
            bad(f"element stride {i} is {int(e)}, not in 1..{MAX_ELEMENT_STRIDE}")
    if tm.oob not in ("zero", "nan"):
        bad(f"oob fill {tm.oob!r} is not 'zero' or 'nan'")
    if tm.oob == "nan" and tm.dtype not in ("f16", "bf16", "f32", "f64"):
        bad(f"the NaN out-of-bounds fill needs a float type, not {tm.dtype}")


def encode(tm: TensorMap, address: int, param: str, kernel: str, driver=None) -> bytes:
    """The 128-byte ``CUtensorMap`` of ``tm`` at global address ``address`` (:func:`check` first),
    from ``driver.cuTensorMapEncodeTiled`` (``driver``: ``cuda.bindings.driver`` by default, or a
    stand-in with the same two functions). Raises ``KerncLaunchError`` naming ``param`` and the
    driver's reason (``cuGetErrorString``) when the driver refuses."""
    check(tm, address, param, kernel)
    if driver is None:
        from cuda.bindings import driver
    D = driver
    u64, u32 = D.cuuint64_t, D.cuuint32_t  # (the bindings take these wrappers, not Python ints)
    err, cmap = D.cuTensorMapEncodeTiled(
        getattr(D.CUtensorMapDataType, "CU_TENSOR_MAP_DATA_TYPE_" + _DRIVER_TYPE[tm.dtype]),
        tm.rank, int(address), [u64(int(x)) for x in tm.dims], [u64(int(x)) for x in tm.strides],
        [u32(int(x)) for x in tm.box], [u32(int(x)) for x in tm.estrides()],
        D.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(D.CUtensorMapSwizzle, "CU_TENSOR_MAP_SWIZZLE_" + _DRIVER_SWIZZLE[tm.swizzle]),
        D.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        D.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE if tm.oob == "zero"
        else D.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    if int(err) != 0:
        e2, text = D.cuGetErrorString(err)
        reason = text.decode() if isinstance(text, bytes) else str(text)
        if int(e2) != 0 or not reason:
            reason = f"error {int(err)}"
        raise KerncLaunchError(f"kernel '{kernel}', tensor map parameter '{param}': "
                               f"cuTensorMapEncodeTiled failed: {reason} ({getattr(err, 'name', int(err))})")
    raw = _map_bytes(cmap)
    if len(raw) != MAP_BYTES:
        raise KerncLaunchError(f"kernel '{kernel}', tensor map parameter '{param}': the driver returned "
                               f"{len(raw)} bytes, not a {MAP_BYTES}-byte CUtensorMap")
    return raw


def _map_bytes(cmap) -> bytes:
    """The 128 bytes of a ``CUtensorMap`` (its ``opaque`` 16 x u64 words, little-endian), or of bytes."""
    if isinstance(cmap, (bytes, bytearray)):
        return bytes(cmap)
    words = list(cmap.opaque)
    return b"".join(int(w).to_bytes(8, "little") for w in words)




# --- im2col mode ------------------------------------------------------------------------------------
#: ``cuTensorMapEncodeIm2col``'s documented limits (CUDA Driver API 6.30): the pixel-box corner range
#: per tensor rank (pixelBoxLowerCorner / pixelBoxUpperCorner, W first: rank 3 one signed offset in
#: [-32768, 32767], rank 4 two in [-128, 127], rank 5 three in [-16, 15]), the im2col
#: offsets' range per rank (PTX ISA 5.5.4.1, "im2col mode: Bounding Box": [0, 2^16-1], [0, 2^8-1],
#: [0, 2^5-1]), channels per pixel <= 256, pixels per column <= 1024
IM2COL_CORNER = {3: (-(1 << 15), (1 << 15) - 1), 4: (-(1 << 7), (1 << 7) - 1), 5: (-(1 << 4), (1 << 4) - 1)}
IM2COL_OFFSET = {3: (1 << 16) - 1, 4: (1 << 8) - 1, 5: (1 << 5) - 1}
MAX_CHANNELS_PER_PIXEL, MAX_PIXELS_PER_COLUMN = 256, 1024


@dataclass(frozen=True)
class Im2colTensorMap(_MapShape):
    """An im2col-mode tensor map (``cuTensorMapEncodeIm2col``; PTX ISA 5.5.4, "im2col mode").

    ``dtype``: a kernc type name; ``dims``: elements per dimension innermost first, ``(C, W, H, N)``
    for an NHWC tensor (rank 3..5: ``(C, W, N)``, ``(C, W, H, N)``, ``(C, W, H, D, N)``);
    ``strides``: byte strides of dimensions 1.. (``rank - 1`` entries); ``lower``/``upper``: the
    pixel-box corners, one signed offset per spatial dimension innermost first (``(W, H)``):
    filter-base positions ``lower[d] .. dims[d+1] - 1 + upper[d]`` along spatial dimension ``d`` are
    in the box; ``channels``: channels per pixel (the inner extent of one copy); ``pixels``: pixels
    per column (its row count); ``element_strides``: traversal strides, innermost first (the first is
    ignored by the hardware: keep it 1); ``swizzle``, ``oob``, ``array``: as :class:`TensorMap`.

    One copy at coordinates ``(c0, w0, h0, n0)`` with im2col offsets ``(ow, oh)`` writes ``pixels``
    rows of ``channels`` elements: row ``p`` is the ``p``-th filter-base position of the box in
    (N, H, W) order (W fastest) counted from ``(n0, h0, w0)``, each spatial step the traversal
    stride, and reads channels ``c0 ..`` of the pixel at base + offsets; a pixel outside the tensor,
    or a row past the last image, is filled (``oob``)."""

    dtype: str
    dims: tuple
    strides: tuple
    lower: tuple
    upper: tuple
    channels: int
    pixels: int
    element_strides: tuple | None = None
    swizzle: int = 128
    oob: str = "zero"
    array: Any = None

    @property
    def box(self) -> tuple:
        """The shared-memory tile one copy writes, innermost first: ``(channels, pixels)``."""
        return (int(self.channels), int(self.pixels))

    @property
    def box_bytes(self) -> int:
        """Bytes one copy writes to shared memory (its ``expect_tx`` count)."""
        return self.elem_bytes * int(self.channels) * int(self.pixels)

    def estrides(self) -> tuple:
        return tuple(self.element_strides) if self.element_strides is not None else (1,) * self.rank

    def box_extent(self, d: int) -> int:
        """Filter-base positions in the box along spatial dimension ``d`` (0: W, innermost first):
        ``floor((dims[d+1] - 1 + upper[d] - lower[d]) / stride) + 1`` (PTX ISA 5.5.4.2, "Traversal
        Stride"); 0 where the box is empty."""
        span = int(self.dims[d + 1]) - 1 + int(self.upper[d]) - int(self.lower[d])
        return span // int(self.estrides()[d + 1]) + 1 if span >= 0 else 0


@dataclass(frozen=True)
class Conv2dGeometry:
    """A 2-d convolution's input and window, as conv2d_fwd's ``im2col(H, W, C, R, S, OH, OW, sh, sw,
    ph, pw, dh, dw)`` view takes it: NHWC input ``N x H x W x C`` (``dtype``, dense: byte strides
    ``C*e, W*C*e, H*W*C*e``), an ``R x S`` filter, output ``OH x OW``, strides ``sh, sw``, padding
    ``ph, pw`` and dilations ``dh, dw`` (elements)."""

    N: int
    H: int
    W: int
    C: int
    R: int
    S: int
    OH: int
    OW: int
    sh: int = 1
    sw: int = 1
    ph: int = 0
    pw: int = 0
    dh: int = 1
    dw: int = 1
    dtype: str = "f16"


def conv2d_im2col_map(g: Conv2dGeometry, channels: int, pixels: int, swizzle: int = 128,
                      array: Any = None) -> Im2colTensorMap:
    """The im2col map whose copy at coordinates ``(c0, ow0*sw - pw, oh0*sh - ph, n0)`` with im2col
    offsets ``(s*dw, r*dh)`` is the GEMM A tile of ``pixels`` rows ``m = (n*OH + oh)*OW + ow`` from
    ``(n0, oh0, ow0)`` and ``channels`` reduction columns ``kk = (r*S + s)*C + c0 ..`` of conv2d_fwd's
    im2col view: dims ``(C, W, H, N)``, corners ``lower = (-pw, -ph)``, ``upper = (pw - dw*(S-1),
    ph - dh*(R-1))`` (so the box holds exactly the output positions when ``OW, OH`` are the
    convolution's: :func:`conv2d_im2col_reason`), traversal strides ``(1, sw, sh, 1)``."""
    e = ELEM_BYTES[g.dtype]
    return Im2colTensorMap(
        g.dtype, dims=(g.C, g.W, g.H, g.N), strides=(g.C * e, g.W * g.C * e, g.H * g.W * g.C * e),
        lower=(-g.pw, -g.ph), upper=(g.pw - g.dw * (g.S - 1), g.ph - g.dh * (g.R - 1)),
        channels=channels, pixels=pixels, element_strides=(1, g.sw, g.sh, 1), swizzle=swizzle,
        array=array)


def conv2d_im2col_reason(g: Conv2dGeometry, channels: int, pixels: int, swizzle: int = 128,
                         address: int = 0) -> str | None:
    """Why conv2d_fwd's im2col operand with geometry ``g`` cannot be loaded by TMA im2col copies of
    ``pixels`` x ``channels`` (``None`` when it can): the output size not the convolution's (the box
    traversal does not pad the width to an even tile: an ``OW`` above the positions in the box would
    wrap rows early -- CubeCL's note), a channel chunk straddling two filter taps (``C % channels``),
    corners, im2col offsets or traversal strides outside the rank-4 ranges (driver limits above),
    and every :func:`check_im2col` limit of the map itself."""
    if min(g.N, g.H, g.W, g.C, g.R, g.S, g.OH, g.OW, g.sh, g.sw, g.dh, g.dw) < 1 or min(g.ph, g.pw) < 0:
        return "a size, stride or dilation below 1, or a negative padding"
    oh = (g.H + 2 * g.ph - g.dh * (g.R - 1) - 1) // g.sh + 1
    ow = (g.W + 2 * g.pw - g.dw * (g.S - 1) - 1) // g.sw + 1
    if min(oh, ow) < 1:
        return (f"the padded image ({g.H + 2 * g.ph} x {g.W + 2 * g.pw}) is smaller than the dilated filter "
                f"({g.dh * (g.R - 1) + 1} x {g.dw * (g.S - 1) + 1}): the convolution has no output position for "
                "TMA's im2col walk")
    if (g.OH, g.OW) != (oh, ow):
        return (f"the output is {g.OH} x {g.OW}, not the convolution's {oh} x {ow} (OH = (H + 2*ph - dh*(R-1) - "
                "1) / sh + 1, OW likewise): TMA's im2col walk covers exactly the convolution's output positions, "
                "row by row (it does not pad a row to another width)")
    if g.C % channels:
        return (f"C = {g.C} is not a multiple of the {channels}-channel chunk: a chunk would straddle "
                "two filter taps")
    lo, hi = IM2COL_CORNER[4]
    if max(g.dw * (g.S - 1), g.dh * (g.R - 1)) > IM2COL_OFFSET[4]:
        return (f"the dilated filter span ({g.dh * (g.R - 1)}, {g.dw * (g.S - 1)}) is beyond the "
                f"im2col offsets' range 0..{IM2COL_OFFSET[4]}")
    if max(g.sh, g.sw) > MAX_ELEMENT_STRIDE:
        return f"the stride ({g.sh}, {g.sw}) is beyond the traversal strides' 1..{MAX_ELEMENT_STRIDE}"
    tm = conv2d_im2col_map(g, channels, pixels, swizzle)
    for name, v in (("lower", tm.lower), ("upper", tm.upper)):
        if not all(lo <= int(x) <= hi for x in v):
            return (f"the padding / dilated filter put the pixel box's {name} corner {tuple(v)} "
                    f"(W, H) outside {lo}..{hi}")
    try:
        check_im2col(tm, address, "x", "conv2d")
    except KerncLaunchError as err:
        return str(err).split(": ", 1)[1]
    return None


def check_im2col(tm: Im2colTensorMap, address: int, param: str, kernel: str) -> None:
    """Raise ``KerncLaunchError`` naming ``param`` of ``kernel`` where ``tm`` at global byte address
    ``address`` breaks one of ``cuTensorMapEncodeIm2col``'s documented requirements (interleave none):
    rank 3..5; address a multiple of 16; each dimension 1..2^32; each byte stride a multiple of 16
    below 2^40; one corner per spatial dimension in the rank's range and a non-empty box; channels
    per pixel 1..256 with a row a multiple of 16 bytes and, swizzled, at most the swizzle span;
    pixels per column 1..1024; element strides 1..8."""
    def bad(why: str):
        raise KerncLaunchError(f"kernel '{kernel}', im2col tensor map parameter '{param}': {why}")

    if tm.dtype not in ELEM_BYTES:
        bad(f"element type {tm.dtype!r} has no tensor-map data type (one of {', '.join(ELEM_BYTES)})")
    r = tm.rank
    if not 3 <= r <= MAX_RANK:
        bad(f"rank {r} is not in 3..{MAX_RANK}")
    for what, seq, n in (("strides", tm.strides, r - 1), ("lower", tm.lower, r - 2),
                         ("upper", tm.upper, r - 2), ("element_strides", tm.estrides(), r)):
        if len(seq) != n:
            bad(f"{what} has {len(seq)} entries, the rank {r} needs {n}")
    if int(address) % GLOBAL_ALIGN:
        bad(f"the global address {int(address):#x} is not {GLOBAL_ALIGN}-byte aligned")
    for i, d in enumerate(tm.dims):
        if not 1 <= int(d) <= MAX_DIM:
            bad(f"dimension {i} has {int(d)} elements, not in 1..2^32")
    for i, s in enumerate(tm.strides):
        if int(s) % GLOBAL_ALIGN or not 0 < int(s) < MAX_STRIDE:
            bad(f"the byte stride of dimension {i + 1} is {int(s)} ({_stride_name(i + 1, 'pixels')}; "
                f"dimensions innermost first): it must be a positive multiple of "
                f"{GLOBAL_ALIGN} below 2^40 (a pixel of {tm.dims[0]} x {tm.elem_bytes} bytes is no multiple of 16 "
                f"bytes: C must be a multiple of {GLOBAL_ALIGN // tm.elem_bytes})")
    lo, hi = IM2COL_CORNER[r]
    for name, v in (("lower", tm.lower), ("upper", tm.upper)):
        for i, x in enumerate(v):
            if not lo <= int(x) <= hi:
                bad(f"{name} corner {i} is {int(x)}, not in {lo}..{hi} (rank {r})")
    if not 1 <= int(tm.channels) <= MAX_CHANNELS_PER_PIXEL:
        bad(f"channels per pixel is {int(tm.channels)}, not in 1..{MAX_CHANNELS_PER_PIXEL}")
    if not 1 <= int(tm.pixels) <= MAX_PIXELS_PER_COLUMN:
        bad(f"pixels per column is {int(tm.pixels)}, not in 1..{MAX_PIXELS_PER_COLUMN}")
    inner = int(tm.channels) * tm.elem_bytes
    if inner % GLOBAL_ALIGN:
        bad(f"a pixel's {inner} bytes ({tm.channels} channels) are not a multiple of {GLOBAL_ALIGN}")
    if tm.swizzle not in _DRIVER_SWIZZLE:
        bad(f"swizzle {tm.swizzle!r} is not 0, 32, 64 or 128 (bytes)")
    if tm.swizzle and inner > tm.swizzle:
        bad(f"a pixel's {inner} bytes are more than the {tm.swizzle}-byte swizzle span")
    for i, e in enumerate(tm.estrides()):
        if not 1 <= int(e) <= MAX_ELEMENT_STRIDE:
            bad(f"element stride {i} is {int(e)}, not in 1..{MAX_ELEMENT_STRIDE}")
    for d in range(r - 2):
        if tm.box_extent(d) < 1:
            bad(f"the pixel box is empty along spatial dimension {d} (corners {tm.lower[d]}, "
                f"{tm.upper[d]}, {tm.dims[d + 1]} elements)")
    if tm.oob not in ("zero", "nan"):
        bad(f"oob fill {tm.oob!r} is not 'zero' or 'nan'")
    if tm.oob == "nan" and tm.dtype not in ("f16", "bf16", "f32", "f64"):
        bad(f"the NaN out-of-bounds fill needs a float type, not {tm.dtype}")


def encode_im2col(tm: Im2colTensorMap, address: int, param: str, kernel: str, driver=None) -> bytes:
    """The 128-byte ``CUtensorMap`` of ``tm`` at global address ``address`` (:func:`check_im2col`
    first), from ``driver.cuTensorMapEncodeIm2col`` (``driver``: ``cuda.bindings.driver`` by
    default, or a stand-in). Raises ``KerncLaunchError`` naming ``param`` and the driver's reason."""
    check_im2col(tm, address, param, kernel)
    if driver is None:
        from cuda.bindings import driver
    D = driver
    u64, u32 = D.cuuint64_t, D.cuuint32_t
    err, cmap = D.cuTensorMapEncodeIm2col(
        getattr(D.CUtensorMapDataType, "CU_TENSOR_MAP_DATA_TYPE_" + _DRIVER_TYPE[tm.dtype]),
        tm.rank, int(address), [u64(int(x)) for x in tm.dims], [u64(int(x)) for x in tm.strides],
        [int(x) for x in tm.lower], [int(x) for x in tm.upper], u32(int(tm.channels)),
        u32(int(tm.pixels)), [u32(int(x)) for x in tm.estrides()],
        D.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(D.CUtensorMapSwizzle, "CU_TENSOR_MAP_SWIZZLE_" + _DRIVER_SWIZZLE[tm.swizzle]),
        D.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        D.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE if tm.oob == "zero"
        else D.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    return _driver_result(D, err, cmap, param, kernel, "cuTensorMapEncodeIm2col")


def _driver_result(D, err, cmap, param: str, kernel: str, fn: str) -> bytes:
    if int(err) != 0:
        e2, text = D.cuGetErrorString(err)
        reason = text.decode() if isinstance(text, bytes) else str(text)
        if int(e2) != 0 or not reason:
            reason = f"error {int(err)}"
        raise KerncLaunchError(f"kernel '{kernel}', tensor map parameter '{param}': "
                               f"{fn} failed: {reason} ({getattr(err, 'name', int(err))})")
    raw = _map_bytes(cmap)
    if len(raw) != MAP_BYTES:
        raise KerncLaunchError(f"kernel '{kernel}', tensor map parameter '{param}': the driver returned "
                               f"{len(raw)} bytes, not a {MAP_BYTES}-byte CUtensorMap")
    return raw


__all__ = ["TensorMap", "check", "encode", "Im2colTensorMap", "Conv2dGeometry", "conv2d_im2col_map",
           "conv2d_im2col_reason", "check_im2col", "encode_im2col", "ELEM_BYTES", "MAP_BYTES", "MAP_ALIGN"]
