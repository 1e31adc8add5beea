"""Correctly rounded fused multiply-add in numpy (vectorised): the CPU interpreter's ``math.fma``.

PTX ``fma.rn.f16/f32/f64`` rounds the exact ``a * b + c`` once, to nearest even. numpy has no FMA,
and the obvious ``a * b + c`` rounds twice (and computing ``f32`` in ``f64`` then casting rounds twice
too), so results differ from the GPU's in the last bit for some inputs. This module computes it
exactly with the *round-to-odd* method of S. Boldo and G. Melquiond, "Emulation of FMA and correctly
rounded sums: proved algorithms using rounding to odd", IEEE Transactions on Computers 57(4), 2008:
rounding the exact value to odd in a format with at least two more significand bits, then to nearest
in the target format, is the correctly rounded result; round-to-odd of a sum is
``RN(x + y)`` plus one step toward the exact error (from TwoSum, Knuth) when that error is nonzero
and ``RN(x + y)`` has an even last bit.

- ``f16``/``f32`` (:func:`fma_narrow`): the product of two ``f16``/``f32`` values is exact in ``f64``
  (at most 48 significand bits, exponents far inside ``f64``'s range), so ``RO64(a*b + c)`` then one
  cast to the target (numpy casts ``float64`` to ``float32``/``float16`` directly, round to nearest
  even, subnormals included) is exact. No range limits: every finite input is handled in the fast path;
  infinities and NaNs follow from the exact ``f64`` product (IEEE 754 ``fusedMultiplyAdd`` rules).
- ``f64`` (:func:`fma_f64`): the paper's FMA emulation: ``(uh, ul) = TwoProduct(a, b)`` (Dekker, with
  Veltkamp's split by ``2^27 + 1``), ``(th, tl) = TwoSum(c, uh)``, ``v = RO(tl + ul)``,
  ``r = RN(th + v)``. It is exact when nothing overflows or underflows, which this module guarantees
  by taking the vectorised path only for lanes with ``a``, ``b``, ``c`` finite and either ``a == 0``
  or ``b == 0`` (then ``a*b + c`` is exact), or all of: ``2^-1022 <= |a|, |b| <= 2^995`` (the split
  neither overflows nor splits a subnormal), ``2^-968 <= |RN(a*b)| <= 2^1021`` (the product's low part
  is a multiple of ``2^-1074``, i.e. representable, and ``th`` cannot overflow), ``|c| <= 2^1021``
  and a result that is 0 or ``>= 2^-968`` in magnitude (no subnormal rounding). The remaining finite
  lanes (huge, tiny or subnormal operands or results -- rare) are computed exactly one by one with
  ``fractions.Fraction`` (Python's ``int / int`` is correctly rounded, overflow included). Lanes with
  a non-finite input take ``a*b + c``, which is IEEE's FMA there except for finite ``a, b`` whose
  product overflows and an infinite ``c``, where the result is ``c``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

__all__ = ["fma", "fma_f64", "fma_narrow", "round_f64_to"]

_SPLITTER = float(2 ** 27 + 1)  # Veltkamp's constant for p = 53


def _two_sum(x, y):
    """``(s, e)`` with ``s = RN(x + y)`` and ``x + y = s + e`` exactly (Knuth's TwoSum, 6 flops)."""
    s = x + y
    yy = s - x
    e = (x - (s - yy)) + (y - yy)
    return s, e


def _sum_round_to_odd(x, y):
    """``RO(x + y)`` in ``float64``: ``x + y`` rounded to the neighbour with an odd last bit when it is
    not representable. Lanes whose sum or error is not finite keep ``RN(x + y)``."""
    s, e = _two_sum(x, y)
    even = (np.asarray(s).view(np.int64) & 1) == 0
    fix = even & (e != 0) & np.isfinite(e) & np.isfinite(s)
    if not np.any(fix):
        return s
    step = np.nextafter(s, np.where(e > 0, np.inf, -np.inf))
    return np.where(fix, step, s)


def fma_narrow(a, b, c, dtype):
    """Correctly rounded ``a * b + c`` for ``float16``/``float32``/``bfloat16`` (``ml_dtypes``)
    operands, as ``dtype``: the product is exact in ``float64``, the sum rounded to odd, then rounded
    once to ``dtype`` (:func:`round_f64_to`)."""
    dtype = np.dtype(dtype)
    if dtype not in (np.float16, np.float32) and dtype.name != "bfloat16":
        raise TypeError(f"fma_narrow: float16, float32 or bfloat16, got {dtype}")
    with np.errstate(all="ignore"):
        a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
        return _scalar(round_f64_to(_sum_round_to_odd(a * b, c), dtype))


def round_f64_to(s, dtype):
    """``float64`` values ``s`` -- exact, or already rounded to odd -- rounded once to nearest even in
    the narrower float ``dtype``. numpy converts to ``float32``/``float16`` directly; ``ml_dtypes``
    converts ``float64`` to ``bfloat16`` through ``float32`` (two roundings), so for ``bfloat16`` the
    value is rounded to odd in ``float32`` first (24 >= 8 + 2 bits; rounding to odd twice is rounding
    to odd once), then to nearest."""
    dtype = np.dtype(dtype)
    s = np.asarray(s, np.float64)
    if dtype.name != "bfloat16":
        return s.astype(dtype)
    with np.errstate(all="ignore"):
        t = s.astype(np.float32)
        inexact = (t.astype(np.float64) != s) & np.isfinite(t) & ((t.view(np.int32) & 1) == 0)
        t = np.where(inexact, np.nextafter(t, np.where(s > t, np.float32(np.inf), np.float32(-np.inf))), t)
    return np.asarray(t, np.float32).astype(dtype)


def _split(x):
    """Veltkamp's split: ``x = hi + lo`` exactly, each with at most 26 significand bits."""
    t = _SPLITTER * x
    hi = t - (t - x)
    return hi, x - hi


def _exact_f64(a: float, b: float, c: float) -> float:
    """``RN(a*b + c)`` of finite doubles, exactly, one lane at a time (slow)."""
    x = Fraction(a) * Fraction(b) + Fraction(c)
    if x == 0:  # a nonzero product cancelled by c (zero products never come here): RN gives +0
        return 0.0
    try:
        return float(x)  # int / int: correctly rounded, sign kept on underflow to zero
    except OverflowError:
        return float("inf") if x > 0 else float("-inf")


def fma_f64(a, b, c):
    """Correctly rounded ``a * b + c`` for ``float64`` operands (see the module docstring)."""
    with np.errstate(all="ignore"):
        a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
        ph = a * b
        ah, al = _split(a)
        bh, bl = _split(b)
        pl = ((ah * bh - ph) + ah * bl + al * bh) + al * bl   # Dekker: a*b = ph + pl exactly
        th, tl = _two_sum(c, ph)
        r = th + _sum_round_to_odd(tl, pl)
        naive = ph + c
        finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
        zero = (a == 0) | (b == 0)
        aa, ab, ap = np.abs(a), np.abs(b), np.abs(ph)
        safe = (finite & ~zero
                & (aa >= 2.0 ** -1022) & (ab >= 2.0 ** -1022) & (aa <= 2.0 ** 995) & (ab <= 2.0 ** 995)
                & (ap >= 2.0 ** -968) & (ap <= 2.0 ** 1021) & (np.abs(c) <= 2.0 ** 1021)
                & ((r == 0) | (np.abs(r) >= 2.0 ** -968)))
        out = np.where(safe, r, naive)
        # a non-finite c with a finite product that overflowed: IEEE gives c (naive: inf + c)
        out = np.where(np.isfinite(a) & np.isfinite(b) & ~np.isfinite(c), c, out)
        slow = finite & ~zero & ~safe
        if np.any(slow):
            shape = slow.shape
            out = np.array(np.broadcast_to(out, shape)).reshape(-1)  # a writable copy
            fa, fb, fc = (np.broadcast_to(v, shape).reshape(-1) for v in (a, b, c))
            for i in np.flatnonzero(slow):
                out[i] = _exact_f64(float(fa[i]), float(fb[i]), float(fc[i]))
            out = out.reshape(shape)
        return _scalar(out)


def fma(a, b, c, dtype):
    """Correctly rounded ``a * b + c`` (IEEE 754 ``fusedMultiplyAdd``, round to nearest even) of
    ``float16``/``float32``/``float64`` values (arrays or scalars, broadcast), as ``dtype``."""
    if np.dtype(dtype) == np.float64:
        return fma_f64(a, b, c)
    return fma_narrow(a, b, c, dtype)


def _scalar(x):
    """A 0-d array to a numpy scalar (the interpreter keeps uniform values as scalars)."""
    if type(x) is np.ndarray and x.ndim == 0:
        return x[()]
    return x
