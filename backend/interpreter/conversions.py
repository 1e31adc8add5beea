"""Conversions between the IR's types (``arith`` casts) with the GPU's rounding and saturation:
``fptosi``/``fptoui`` saturate like PTX ``cvt.rzi`` (NaN -> 0), conversions to float round once to
nearest even like ``cvt.rn``."""

from __future__ import annotations

import numpy as np

from kernc.backend import exact_fma

from . import affine
from .numeric import _back, _checked_index32, _from_unsigned, _s, _sv, _unary, _uv
from .translate import handles
from .types import _Ty


def _fptoi(x, ty: _Ty, signed: bool):
    """fptosi/fptoui with the saturating semantics of PTX cvt.rzi (NaN -> 0)."""
    t = np.trunc(np.asarray(x, dtype=np.float64))
    t = np.where(np.isnan(t), 0.0, t)
    if ty.bits == 1:
        return _s(t != 0)
    if signed:
        lo, hi = -(2 ** (ty.bits - 1)), 2 ** (ty.bits - 1) - 1
        dt = ty.sdtype
    else:
        lo, hi = 0, 2 ** ty.bits - 1
        dt = ty.udtype
    over = t >= float(hi)
    under = t <= float(lo)
    safe = np.where(over | under, 0.0, t).astype(dt)
    r = np.where(over, dt.type(hi), np.where(under, dt.type(lo), safe)).astype(dt)
    return _s(_back(r, ty))


def _round_to(x, dtype: np.dtype):
    """``x`` (integers or floats) converted to the float ``dtype`` with one rounding to nearest even,
    as PTX ``cvt.rn`` does. Only ``bfloat16`` needs care (``ml_dtypes`` converts through ``float32``):
    the value goes through :func:`kernc.backend.exact_fma.round_f64_to` from ``float64``, where it is
    exact (integers beyond 2^53 are first rounded to odd exactly, with Python integers)."""
    if dtype.name != "bfloat16":
        return x.astype(dtype)
    a = np.asarray(x)
    if a.dtype.kind in "iu":
        f64 = a.astype(np.float64)
        big = np.abs(f64) >= 2.0 ** 53
        if np.any(big):
            flat, src = f64.reshape(-1), a.reshape(-1)
            for i in np.flatnonzero(big.reshape(-1)):
                flat[i] = _int_round_to_odd_24(int(src[i]))
        a = f64
    out = exact_fma.round_f64_to(a, dtype) if a.dtype == np.float64 else a.astype(dtype)  # f32: one rounding
    return out[()] if out.ndim == 0 else out


def _int_round_to_odd_24(n: int) -> float:
    """The integer ``n`` rounded to odd with a 24-bit significand (exactly a float32 value)."""
    sign, m = (-1 if n < 0 else 1), abs(n)
    shift = m.bit_length() - 24
    if shift > 0:
        q = m >> shift
        if m & ((1 << shift) - 1):
            q |= 1
        m = q << shift
    return float(sign * m)


@handles("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui",
          "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.extf", "arith.truncf",
          "arith.bitcast")
def _cast(tr, o):
    name = o.name
    src = tr.ty(o.operands[0].type, o)
    dst = tr.ty(o.results[0].type, o)
    if name == "arith.extsi":
        def fn(x):
            return _sv(x, src).astype(dst.dtype)
    elif name == "arith.extui":
        def fn(x):
            return _from_unsigned(_uv(x, src), dst)
    elif name == "arith.trunci":
        def fn(x):
            return (x & 1).astype(np.bool_) if dst.bits == 1 else x.astype(dst.dtype)
    elif name == "arith.index_cast":
        def fn(x):
            if dst.bits == 1:
                return (x & 1).astype(np.bool_)
            return _sv(x, src).astype(dst.dtype)
    elif name == "arith.index_castui":
        def fn(x):
            if dst.bits == 1:
                return (x & 1).astype(np.bool_)
            return _from_unsigned(_uv(x, src), dst)
    elif name == "arith.sitofp":
        def fn(x):
            return _round_to(_sv(x, src), dst.dtype)
    elif name == "arith.uitofp":
        def fn(x):
            return _round_to(_uv(x, src), dst.dtype)
    elif name == "arith.fptosi":
        def fn(x):
            return _fptoi(x, dst, True)
    elif name == "arith.fptoui":
        def fn(x):
            return _fptoi(x, dst, False)
    elif name in ("arith.extf", "arith.truncf"):
        def fn(x):
            return _round_to(x, dst.dtype)
    elif name == "arith.bitcast":
        if src.bits != dst.bits:
            tr.unsupported(o, f"arith.bitcast {src} -> {dst}")
        if dst.bits == 1:
            def fn(x):
                return x
        else:
            def fn(x):
                return x.view(dst.dtype)
    else:
        tr.unsupported(o)
    f = _unary(tr, o, fn)
    if affine.uniform(tr, tr.use(o.operands[0])):
        affine.define(tr, tr.use(o.results[0]))
    if dst.name == "index" and src.bits > 32 and name in ("arith.index_cast", "arith.index_castui"):
        return _checked_index32(f, tr.use(o.results[0]), o)
    return f
