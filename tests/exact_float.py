"""Exact float references for tests (independent of kernc): rational -> IEEE binary16/32/64 rounding
(to nearest, ties to even, subnormals, overflow to infinity) and the correctly rounded fused
multiply-add it gives, computed with ``fractions.Fraction``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

#: dtype -> (significand bits p including the implicit one, emin, emax)
FORMATS = {
    np.dtype(np.float16): (11, -14, 15),
    np.dtype(np.float32): (24, -126, 127),
    np.dtype(np.float64): (53, -1022, 1023),
}


def round_fraction(q: Fraction, dtype, negative_zero: bool = False):
    """The exact rational ``q`` rounded to nearest (ties to even) in ``dtype``, as a numpy scalar.

    ``q == 0`` gives ``-0.0`` if ``negative_zero`` else ``+0.0``; a nonzero ``q`` that rounds to zero
    keeps its sign."""
    dtype = np.dtype(dtype)
    p, emin, emax = FORMATS[dtype]
    if q == 0:
        return dtype.type(-0.0 if negative_zero else 0.0)
    sign = -1 if q < 0 else 1
    q = abs(q)
    # e = floor(log2 q), exactly
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if q < Fraction(2) ** e:
        e -= 1
    assert Fraction(2) ** e <= q < Fraction(2) ** (e + 1)
    quantum = max(e, emin) - (p - 1)  # exponent of the last significand bit (subnormals: fixed)
    m = q / Fraction(2) ** quantum
    n = m.numerator // m.denominator
    rest = m - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    if n == 0:
        return dtype.type(-0.0 if sign < 0 else 0.0)
    if n * Fraction(2) ** quantum >= Fraction(2) ** (emax + 1):
        return dtype.type(sign * math.inf)
    return dtype.type(sign * math.ldexp(n, quantum))  # exact: n < 2^p, in range


def fma_reference(a, b, c, dtype):
    """IEEE 754 ``fusedMultiplyAdd(a, b, c)`` rounded to nearest even in ``dtype`` (numpy scalar)."""
    dtype = np.dtype(dtype)
    a, b, c = (float(v) for v in (a, b, c))
    if math.isnan(a) or math.isnan(b) or math.isnan(c):
        return dtype.type(math.nan)
    if math.isinf(a) or math.isinf(b):
        if a == 0 or b == 0:
            return dtype.type(math.nan)  # inf * 0
        prod = math.copysign(math.inf, a) * math.copysign(1.0, b)
        if math.isinf(c) and c != prod:
            return dtype.type(math.nan)  # inf - inf
        return dtype.type(prod)
    if math.isinf(c):
        return dtype.type(c)
    x = Fraction(a) * Fraction(b) + Fraction(c)
    # an exact zero is -0 only when both addends are -0 (x*y = -0 and z = -0); else +0 (RN)
    prod_neg = (math.copysign(1.0, a) * math.copysign(1.0, b)) < 0
    neg_zero = (a == 0 or b == 0) and c == 0 and prod_neg and math.copysign(1.0, c) < 0
    return round_fraction(x, dtype, negative_zero=neg_zero)
