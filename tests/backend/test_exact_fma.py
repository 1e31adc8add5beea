"""``math.fma`` on the CPU interpreter is correctly rounded (one rounding, like PTX ``fma.rn``).

The reference is ``tests/exact_float.py``: the exact rational ``a*b + c`` (``fractions.Fraction``)
rounded to the target format, independent of ``backend/exact_fma.py``. Each fixed case below is one
where the naive ``a*b + c`` (in ``f64``, or for ``f32`` in ``f64`` then cast) is wrong.
"""

from __future__ import annotations

import math
from fractions import Fraction
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exact_float import fma_reference, round_fraction
from kernc.backend import exact_fma
from test_interpreter import ew, run_ew

F16, F32, F64 = np.float16, np.float32, np.float64
DBL_MAX = float(np.finfo(F64).max)


def same(x, y) -> bool:
    """Bitwise equal as floats (NaNs equal, zeros by sign)."""
    x, y = np.asarray(x), np.asarray(y)
    return bool(np.all((np.isnan(x) & np.isnan(y)) | ((x == y) & (np.signbit(x) == np.signbit(y)))))


def check(a, b, c, dt, result):
    a, b, c, result = (np.asarray(v, dt) for v in (a, b, c, result))
    for i in np.ndindex(result.shape):
        ref = fma_reference(a[i], b[i], c[i], dt)
        assert same(result[i], ref), (f"fma({float(a[i]).hex()}, {float(b[i]).hex()}, "
                                      f"{float(c[i]).hex()}) : {np.dtype(dt)} = {result[i]!r}, "
                                      f"exact {ref!r}")


# ------------------------------------------------------------------------------------------------
# the reference rounding itself

def test_round_fraction_reference():
    from fractions import Fraction

    rng = random.Random(11)
    for _ in range(3000):
        x = rng.uniform(-1, 1) * 2.0 ** rng.randint(-1074, 1020)
        assert round_fraction(Fraction(x), F64) == x
        with np.errstate(over="ignore"):
            assert same(round_fraction(Fraction(x), F32), F32(x))  # numpy's cast rounds correctly
            assert same(round_fraction(Fraction(x), F16), F16(x))
    # ties to even, subnormal ties, overflow threshold
    assert round_fraction(Fraction(1) + Fraction(1, 2 ** 24), F32) == 1.0
    assert round_fraction(Fraction(1) + Fraction(3, 2 ** 24), F32) == 1 + 2.0 ** -22
    assert round_fraction(Fraction(1, 2 ** 150), F32) == 0.0
    assert round_fraction(Fraction(3, 2 ** 150), F32) == 2.0 ** -148
    assert round_fraction(Fraction(65520), F16) == math.inf
    assert round_fraction(Fraction(65519), F16) == 65504
    assert same(round_fraction(Fraction(-1, 2 ** 1100), F64), -0.0)


# ------------------------------------------------------------------------------------------------
# fixed cases where the naive formula is wrong

# (a, b, c, exact result); found with the Fraction reference
NAIVE_WRONG = [
    # f64: a*b = 1 - 2^-60 exactly rounds to 1 in f64; the fused result keeps -2^-60
    (F64, 1 + 2.0 ** -30, 1 - 2.0 ** -30, -1.0, -(2.0 ** -60)),
    # f64: the product is an f64 midpoint (1 + 2^-20 + 2^-33 + 2^-53); a tiny c decides the tie
    (F64, 1 + 2.0 ** -20, 1 + 2.0 ** -33, 2.0 ** -300, 1 + 2.0 ** -20 + 2.0 ** -33 + 2.0 ** -52),
    # f32 (double rounding through f64): a*b = 1 + 2^-11 + 2^-24 is an f32 midpoint, c below f64's
    # precision: RN64 lands on the midpoint, RN32 then ties to even (down), the exact value is above
    (F32, 1 + 2.0 ** -12, 1 + 2.0 ** -12, 2.0 ** -60, 1 + 2.0 ** -11 + 2.0 ** -23),
    # f32: the same below a midpoint with an odd lower neighbour (RN32 ties up to the even one)
    (F32, float.fromhex("0x1.0dp+0"), float.fromhex("0x1.000bp+0"), -(2.0 ** -70),
     float.fromhex("0x1.0d0b8ep+0")),
    # f64: a*b overflows, c brings it back: 2^1024 - DBL_MAX = 2^971
    (F64, 2.0 ** 512, 2.0 ** 512, -DBL_MAX, 2.0 ** 971),
    # f64: finite a*b overflowing, infinite c: the result is c (naive: inf - inf = nan)
    (F64, 2.0 ** 600, 2.0 ** 600, -math.inf, -math.inf),
    # f64: the product 1.5 * 2^-1074 is a subnormal tie (RN: 2 * 2^-1074); + 2^-1074 the exact
    # 2.5 * 2^-1074 ties to 2 * 2^-1074 (naive: 3 * 2^-1074)
    (F64, 3 * 2.0 ** -600, 2.0 ** -475, 2.0 ** -1074, 2 * 2.0 ** -1074),
]


@pytest.mark.parametrize("dt,a,b,c,want", NAIVE_WRONG)
def test_fixed_cases_naive_is_wrong(dt, a, b, c, want):
    a, b, c = dt(a), dt(b), dt(c)
    ref = fma_reference(a, b, c, dt)
    if want is not None:
        assert same(ref, dt(want))
    with np.errstate(all="ignore"):
        naive = dt(np.float64(a) * np.float64(b) + np.float64(c))
    assert not same(naive, ref), "not a case where the naive formula is wrong"
    assert same(exact_fma.fma(a, b, c, dt), ref)                            # scalars
    assert same(exact_fma.fma(np.array([a, a]), b, np.array([c, c]), dt), [ref, ref])  # broadcast


@pytest.mark.parametrize("dt", [F16, F32, F64])
def test_interpreter_math_fma(dt):
    """The interpreter's ``math.fma`` on lanes: the fixed cases and a random batch."""
    ty = {F16: "f16", F32: "f32", F64: "f64"}[dt]
    it = ew(f"%r = math.fma %a, %b, %c : {ty}", [("a", ty), ("b", ty), ("c", ty)], [("r", ty)])
    cases = [(a, b, c) for d, a, b, c, _ in NAIVE_WRONG if d == dt]
    a, b, c = random_operands(dt, 500, random.Random(5))
    with np.errstate(all="ignore"):
        a = np.concatenate([np.array([x for x, _, _ in cases], dt), a])
        b = np.concatenate([np.array([y for _, y, _ in cases], dt), b])
        c = np.concatenate([np.array([z for _, _, z in cases], dt), c])
    (r,) = run_ew(it, [a, b, c], [dt])
    check(a, b, c, dt, r)


def test_interpreter_fma_f16_rounds_once():
    """f16: 1.5 * 1.333984375 = 2 + 2^-10 is an f16 midpoint; + 2^-24 rounds it up. (Rounding to
    f32 first would land on the midpoint and then tie to even, down to 2.)"""
    it = ew("%r = math.fma %a, %b, %c : f16", [("a", "f16"), ("b", "f16"), ("c", "f16")], [("r", "f16")])
    (r,) = run_ew(it, [np.array([1.5], F16), np.array([1.333984375], F16), np.array([2.0 ** -24], F16)], [F16])
    assert r[0] == F16(2 + 2.0 ** -9)
    assert F16(F32(F32(1.5) * F32(1.333984375)) + F32(2.0 ** -24)) == 2.0  # the double rounding


# ------------------------------------------------------------------------------------------------
# special values

SPECIALS = [
    # (a, b, c, result) -- IEEE 754-2019 fusedMultiplyAdd, round to nearest
    (-0.0, 1.0, 0.0, 0.0),         # x*y = -0, z = +0: +0
    (-0.0, 1.0, -0.0, -0.0),       # both -0: -0
    (0.0, -1.0, -0.0, -0.0),
    (2.0, 3.0, -6.0, 0.0),          # exact cancellation: +0
    (-2.0, 3.0, 6.0, 0.0),
    (math.inf, 0.0, 1.0, math.nan),   # inf * 0: invalid
    (math.inf, 1.0, -math.inf, math.nan),
    (math.inf, -2.0, 1.0, -math.inf),
    (1.0, 2.0, math.inf, math.inf),
    (1.0, math.nan, 1.0, math.nan),
    (1.0, 1.0, math.nan, math.nan),
    (0.0, math.inf, math.nan, math.nan),
]


@pytest.mark.parametrize("dt", [F16, F32, F64])
@pytest.mark.parametrize("a,b,c,want", SPECIALS)
def test_special_values(dt, a, b, c, want):
    a, b, c = dt(a), dt(b), dt(c)
    assert same(fma_reference(a, b, c, dt), dt(want))
    assert same(exact_fma.fma(a, b, c, dt), dt(want))
    assert same(exact_fma.fma(np.array([a]), np.array([b]), np.array([c]), dt), [dt(want)])


def test_overflow_and_underflow_f32():
    big = F32(np.finfo(F32).max)
    check(big, F32(2), -big, F32, exact_fma.fma(big, F32(2), -big, F32))      # = max, not inf
    assert exact_fma.fma(big, F32(2), -big, F32) == big
    assert exact_fma.fma(big, F32(2), F32(0), F32) == np.inf
    tiny = F32(2.0 ** -149)
    assert exact_fma.fma(tiny, F32(0.5), F32(0), F32) == 0.0                   # tie to even: 0
    assert exact_fma.fma(tiny, F32(0.75), F32(0), F32) == tiny
    assert same(exact_fma.fma(-tiny, F32(0.5), F32(0), F32), F32(-0.0))


# ------------------------------------------------------------------------------------------------
# random property tests against the exact reference

_FMT = {F16: (11, -14, 15), F32: (24, -126, 127), F64: (53, -1022, 1023)}


def _random_value(dt, rng, wide: bool):
    p, emin, emax = _FMT[dt]
    k = rng.random()
    if k < 0.04:
        return rng.choice([0.0, -0.0, math.inf, -math.inf, math.nan])
    if k < 0.08:
        return rng.choice([1, -1]) * rng.randrange(1, 2 ** (p - 1)) * 2.0 ** (emin - p + 1)  # subnormal
    m = rng.randrange(2 ** (p - 1), 2 ** p)
    if rng.random() < 0.3:   # few low bits set: products land on or near midpoints
        m = 2 ** (p - 1) + rng.randrange(0, 2 ** rng.randint(1, p - 1))
    elif rng.random() < 0.3:
        m = 2 ** p - 1 - rng.randrange(0, 2 ** rng.randint(1, p - 1))
    e = rng.randint(emin, emax) if wide else rng.randint(-10, 10)
    return rng.choice([1, -1]) * math.ldexp(m, e - p + 1)


def random_operands(dt, n: int, rng: random.Random):
    """``n`` operand triples: mixed ranges, specials, subnormals, near-cancellation, midpoints."""
    p = _FMT[dt][0]
    a, b, c = [], [], []
    with np.errstate(all="ignore"):
        for i in range(n):
            wide = i % 3 == 0
            x, y = dt(_random_value(dt, rng, wide)), dt(_random_value(dt, rng, wide))
            r = rng.random()
            if r < 0.25 and np.isfinite(x) and np.isfinite(y):      # c close to -a*b
                z = -float(x) * float(y) * (1 + rng.choice([0.0, 2.0 ** -rng.randint(1, 2 * p)]))
            elif r < 0.5:                                          # c tiny against a*b
                z = rng.choice([1, -1]) * abs(float(x) * float(y)) * 2.0 ** -rng.randint(p, 3 * p)
            else:
                z = _random_value(dt, rng, wide)
            a.append(x), b.append(y), c.append(dt(z))
    return np.array(a, dt), np.array(b, dt), np.array(c, dt)


@pytest.mark.parametrize("dt", [F16, F32, F64])
def test_random_against_exact_reference(dt):
    a, b, c = random_operands(dt, 4000, random.Random(1234))
    check(a, b, c, dt, exact_fma.fma(a, b, c, dt))
    for i in range(0, 4000, 101):   # uniform (scalar) operands take the same path
        check(a[i], b[i], c[i], dt, exact_fma.fma(a[i], b[i], c[i], dt))


def test_f64_fast_path_covers_ordinary_values(monkeypatch):
    """Ordinary magnitudes never take the slow one-lane-at-a-time path; extreme ones do, exactly."""
    calls = []
    monkeypatch.setattr(exact_fma, "_exact_f64", lambda *v: calls.append(v) or 0.0)
    a, b, c = random_operands(F64, 300, random.Random(7))
    ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & (np.abs(a) > 2.0 ** -100) & \
        (np.abs(b) > 2.0 ** -100) & (np.abs(a) < 2.0 ** 100) & (np.abs(b) < 2.0 ** 100) & \
        (np.abs(c) < 2.0 ** 100) & ((np.abs(c) > 2.0 ** -400) | (c == 0))
    exact_fma.fma(a[ok], b[ok], c[ok], F64)
    assert ok.sum() > 50 and not calls
    exact_fma.fma(F64(2.0 ** 512), F64(2.0 ** 512), F64(-DBL_MAX), F64)
    assert len(calls) == 1


_f64s = st.floats(allow_nan=True, allow_infinity=True, width=64)
_f32s = st.floats(allow_nan=True, allow_infinity=True, width=32)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_f64s, _f64s, _f64s)
def test_hypothesis_f64(a, b, c):
    check(a, b, c, F64, exact_fma.fma(F64(a), F64(b), F64(c), F64))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_f32s, _f32s, _f32s)
def test_hypothesis_f32(a, b, c):
    check(a, b, c, F32, exact_fma.fma(F32(a), F32(b), F32(c), F32))


def _bf16_round(x):
    """The exact rational ``x`` (normal bfloat16 range) rounded to nearest-even bfloat16, as a float:
    bfloat16 values are the float32 values whose low 16 bits are zero."""
    f = np.float32(float(x))  # within one f32 ulp of x, so the bf16 neighbours below bracket x
    top = int(np.asarray(f).view(np.uint32)) >> 16
    cands = [(int(t) << 16) for t in (top - 1, top, top + 1)]
    values = [float(np.array([v], np.uint32).view(np.float32)[0]) for v in cands]
    return min(zip(values, cands), key=lambda vc: (abs(Fraction(vc[0]) - x), (vc[1] >> 16) & 1))[0]


def test_bf16_fma_is_correctly_rounded():
    import ml_dtypes

    rng = np.random.default_rng(11)
    a, b, c = (rng.standard_normal(4000).astype(ml_dtypes.bfloat16) for _ in range(3))
    # near-cancellations and tiny addends make double rounding likely
    c[:1000] = (-(a[:1000].astype(np.float32) * b[:1000].astype(np.float32))).astype(ml_dtypes.bfloat16)
    c[1000:2000] = (c[1000:2000].astype(np.float32) * np.float32(2.0 ** -12)).astype(ml_dtypes.bfloat16)
    got = exact_fma.fma(a, b, c, ml_dtypes.bfloat16)
    for x, y, z, r in zip(a, b, c, got):
        exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        if exact == 0:
            assert float(r) == 0
            continue
        assert float(r) == _bf16_round(exact), (float(x), float(y), float(z), float(r))
