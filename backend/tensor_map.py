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


@dataclass(frozen=True)
class TensorMap:
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
    def rank(self) -> int:
        return len(self.dims)

    @property
    def elem_bytes(self) -> int:
        return ELEM_BYTES[self.dtype]

    @property
    def box_bytes(self) -> int:
        """Bytes one copy writes to shared memory (the ``expect_tx`` count of a whole box)."""
        n = self.elem_bytes
        for b in self.box:
            n *= int(b)
        return n

    def estrides(self) -> tuple:
        return tuple(self.element_strides) if self.element_strides is not None else (1,) * self.rank


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
            bad(f"the byte stride of dimension {i + 1} is {int(s)}: it must be a positive multiple of "
                f"{GLOBAL_ALIGN} below 2^40 (a row of {tm.dims[0]} x {tm.elem_bytes} bytes must be "
                "padded to 16 bytes)")
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


__all__ = ["TensorMap", "check", "encode", "ELEM_BYTES", "MAP_BYTES", "MAP_ALIGN"]
