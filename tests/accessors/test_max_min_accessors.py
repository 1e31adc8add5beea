"""``write max``/``write min`` (one value over all items) and ``write block_max``/``block_min`` (one
per block) on the CPU interpreter against numpy: every integer and float type, odd and empty sizes,
items that assign nothing, NaN and signed zeros (IEEE 754-2019 maximum/minimum: a NaN wins,
``-0.0 < +0.0``), multi-component elements, ``@deterministic``, the launcher's identity fill, and
the PTX through ptxas."""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest

import kernc
from kernc.backend import toolkit

TYPES = ("i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64")
B = 256


def _dt(t):
    return np.dtype(ml_dtypes.bfloat16) if t == "bf16" else np.dtype(
        {"f16": "float16", "f32": "float32", "f64": "float64"}.get(t) or ("uint" if t[0] == "u" else "int") + t[1:])


@functools.cache
def program():
    src = ""
    for t in TYPES:
        for r in ("max", "min"):
            src += f"kernel {r}_{t}(v: {t}[n] read, y: {t}[1] write {r}) over n {{ y = v; }}\n"
            src += (f"kernel block_{r}_{t}(v: {t}[n] read, keep: u8[n] read, y: {t}[nb] write block_{r}) "
                    f"over n {{ if keep != 0u8 {{ y = v; }} }}\n")
    src += "kernel vec(v: f32[n, 3] read, y: f32[1, 3] write max) over n { y = v; }\n"
    src += "@deterministic kernel det(v: f32[n] read, y: f32[1] write min) over n { y = v; }\n"
    return kernc.compile(src)


def _values(t, n, rng):
    dt = _dt(t)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
    pool = np.array([0.0, -0.0, 1.5, -2.25, 3.0, -7.0, np.inf, -np.inf, 65000.0], np.float32)
    return rng.choice(pool, n).astype(dt)


def _extremum(vals, r, t):
    """IEEE maximum/minimum over ``vals`` (the identity when empty), written without numpy's rules."""
    if _dt(t).kind in "iu":
        if vals.size == 0:
            info = np.iinfo(_dt(t))
            return info.min if r == "max" else info.max
        return vals.max() if r == "max" else vals.min()
    xs = [float(x) for x in vals.astype(np.float64)]
    if any(x != x for x in xs):
        return np.nan
    if not xs:
        return -np.inf if r == "max" else np.inf
    pick = max(xs) if r == "max" else min(xs)
    if pick == 0.0:
        neg = [np.signbit(x) for x in xs if x == 0.0]
        pick = (-0.0 if all(neg) else 0.0) if r == "max" else (-0.0 if any(neg) else 0.0)
    return pick


def _same(got, want):
    got = np.asarray(got).astype(np.float64) if got.dtype.kind not in "iu" else np.asarray(got)
    want = np.asarray(want, dtype=got.dtype)
    if got.dtype.kind == "f":
        assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
        keep = ~np.isnan(want)
        assert np.array_equal(got[keep], want[keep]) and np.array_equal(np.signbit(got[keep]), np.signbit(want[keep])), (got, want)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [0, 1, 255, 257, 1000])
@pytest.mark.parametrize("r", ["max", "min"])
@pytest.mark.parametrize("t", TYPES)
def test_one_value_over_all_items(t, r, n):
    rng = np.random.default_rng([TYPES.index(t), n, r == "max"])
    v = _values(t, n, rng)
    if _dt(t).kind not in "iu" and n > 300:
        v[rng.integers(0, n)] = np.nan  # a NaN wins
    y = np.full(1, 42, _dt(t))  # overwritten by the launcher's identity fill
    getattr(program(), f"{r}_{t}")(v, y)
    _same(y, [_extremum(v, r, t)])


@pytest.mark.parametrize("n", [1, 300, 1000])
@pytest.mark.parametrize("r", ["max", "min"])
@pytest.mark.parametrize("t", ["i8", "u16", "i64", "f16", "f32"])
def test_one_value_per_block(t, r, n):
    rng = np.random.default_rng([TYPES.index(t), n])
    v = _values(t, n, rng)
    keep = (rng.random(n) < 0.7).astype(np.uint8)
    keep[:B] = 0 if n > B else keep[:B]  # a whole block that assigns nothing gives the identity
    nb = -(-n // B)
    y = np.zeros(nb, _dt(t))
    getattr(program(), f"block_{r}_{t}")(v, keep, y, nb=nb)
    _same(y, [_extremum(v[k * B:(k + 1) * B][keep[k * B:(k + 1) * B] != 0], r, t) for k in range(nb)])


def test_signed_zeros_in_either_order():
    p = program()
    for vals in ([0.0, -0.0], [-0.0, 0.0]):
        v = np.array(vals * 300, np.float32)
        hi, lo = np.zeros(1, np.float32), np.zeros(1, np.float32)
        p.max_f32(v, hi)
        p.min_f32(v, lo)
        assert not np.signbit(hi[0]) and np.signbit(lo[0])


def test_components_and_deterministic():
    p = program()
    v = np.random.default_rng(1).standard_normal((777, 3)).astype(np.float32)
    y = np.zeros((1, 3), np.float32)
    p.vec(v, y)
    np.testing.assert_array_equal(y[0], v.max(axis=0))
    w = np.random.default_rng(2).standard_normal(5000).astype(np.float32)
    y = np.zeros(1, np.float32)
    p.det(w, y)
    assert y[0] == w.min()


def test_add_max_is_a_located_error():
    from kernc.support.errors import CompileError

    with pytest.raises(CompileError) as err:
        kernc.compile("kernel k(v: f32[n] read, y: f32[1] add max) over n {\n    y += v;\n}\n")
    assert ":1:" in str(err.value) and "max" in str(err.value)


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptx_assembles(arch):
    src = ("kernel fm(v: f32[n] read, y: f32[1] write max) over n { y = v; }\n"
           "kernel um(v: u32[n] read, y: u32[1] write min) over n { y = v; }\n"
           "kernel bm(v: f16[n] read, y: f16[nb] write block_max) over n { y = v; }\n")
    ptx = kernc.compile(src, arch=arch).ptx
    fm = ptx.split(".entry fm(")[1].split(".entry")[0]
    um = ptx.split(".entry um(")[1].split(".entry")[0]
    assert "max.NaN.f32" in fm and "atom.relaxed.gpu.global.cas.b32" in fm  # IEEE maximum, a CAS loop
    assert "shfl.sync.bfly" in fm
    assert ("red.relaxed.gpu.global.min.u32" in um or "atom.relaxed.gpu.global.min.u32" in um)
    result = toolkit.run_ptxas(ptx, arch=arch)
    assert result.ok, result.log


@pytest.mark.parametrize("decl, stmt", [("o: f32[1] write max", "o += x;"), ("o: i32[nb] write block_min", "o -= 1;")])
def test_max_min_outputs_take_only_assignment(decl, stmt):
    # a breaker trial: `+=` compiled and gave -inf / 2147483646
    with pytest.raises(kernc.CompileError, match="it takes each item's value with '='"):
        kernc.compile(f"kernel k(x: f32[n] read, {decl}) over n {{ {stmt} }}")
