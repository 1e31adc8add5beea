"""IR types as numpy dtypes: scalar types (:class:`_Ty`) and memref types (:class:`_MemTy`)."""

from __future__ import annotations

import re

import numpy as np

from kernc.support.mlir import ir

from .errors import InterpreterUnsupportedError


class _Ty:
    """A scalar type of the IR: ``kind`` is ``"f"`` (float) or ``"i"`` (integer, ``index``, ``i1``)."""

    __slots__ = ("name", "kind", "bits", "dtype", "sdtype", "udtype")

    def __init__(self, name, kind, bits, dtype, sdtype=None, udtype=None):
        self.name, self.kind, self.bits = name, kind, bits
        self.dtype = np.dtype(dtype)
        self.sdtype = np.dtype(sdtype) if sdtype is not None else self.dtype
        self.udtype = np.dtype(udtype) if udtype is not None else self.dtype

    def zero(self):
        return self.dtype.type(0)

    def __repr__(self):
        return self.name


_INT_DTYPES = {8: (np.int8, np.uint8), 16: (np.int16, np.uint16), 32: (np.int32, np.uint32),
               64: (np.int64, np.uint64)}


_TY_CACHE: dict[str, _Ty] = {}


def _scalar_ty(name: str) -> _Ty:
    ty = _TY_CACHE.get(name)
    if ty is not None:
        return ty
    if name in ("f16", "f32", "f64"):
        dt = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[name]
        ty = _Ty(name, "f", int(name[1:]), dt)
    elif name == "index":
        ty = _Ty(name, "i", 64, np.int64, np.int64, np.uint64)
    elif name == "i1":
        ty = _Ty(name, "i", 1, np.bool_, np.int8, np.uint8)
    elif re.fullmatch(r"i(8|16|32|64)", name):
        bits = int(name[1:])
        s, u = _INT_DTYPES[bits]
        ty = _Ty(name, "i", bits, s, s, u)
    elif name == "bf16":
        try:  # numpy has no bfloat16; ml_dtypes' is a numpy dtype (conversions round to nearest even)
            import ml_dtypes
        except ImportError:
            raise InterpreterUnsupportedError(
                "the CPU interpreter runs bf16 only with the ml_dtypes package (pip install ml_dtypes)"
            ) from None
        ty = _Ty(name, "f", 16, ml_dtypes.bfloat16)
    else:
        raise InterpreterUnsupportedError(f"the CPU interpreter does not support the type '{name}'")
    _TY_CACHE[name] = ty
    return ty


def _is_memref(t) -> bool:
    return str(t).startswith("memref<")


class _MemTy:
    """A memref type: element type, static dims (``None`` for ``?``) and address space."""

    __slots__ = ("elem", "dims", "space")

    def __init__(self, t):
        mt = ir.MemRefType(t)
        self.elem = _scalar_ty(str(mt.element_type))
        dyn = ir.ShapedType.get_dynamic_size()
        self.dims = tuple(None if d == dyn else int(d) for d in mt.shape)
        ms = mt.memory_space
        s = "" if ms is None else str(ms)
        if "workgroup" in s or s.strip() == "3":
            self.space = "workgroup"
        elif "private" in s or s.strip() == "5":
            self.space = "private"
        else:
            self.space = "global"
        layout = str(mt.layout)
        if "strided" in layout and layout.replace(" ", "") not in ("strided<[1]>", "strided<[1],offset:0>"):
            raise InterpreterUnsupportedError(f"the CPU interpreter does not support the memref layout of {t}")

    @property
    def size(self) -> int:
        return int(np.prod([d for d in self.dims], dtype=np.int64)) if self.dims else 1
