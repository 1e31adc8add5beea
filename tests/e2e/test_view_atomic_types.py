"""View atomics on every element type and kind (``x.atomic(c) += v``, ``atomic_min``, ``atomic_max``,
``atomic_or``, ``atomic_and``): the CPU interpreter against numpy, the PTX through ptxas for sm_80 and
sm_90 (native ``atom`` where the target has one, a ``cas`` loop where not), and the located errors."""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest

import kernc
from kernc.backend import toolkit
from kernc.support.errors import CompileError

INTS = ("i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64")
FLOATS = ("f16", "bf16", "f32", "f64")
KINDS = {"add": ("atomic", "+="), "min": ("atomic_min", "="), "max": ("atomic_max", "="),
         "or": ("atomic_or", "="), "and": ("atomic_and", "=")}
BINS = 7


def _cases():
    for t in INTS + FLOATS:
        for kind in KINDS:
            if t in FLOATS and kind in ("or", "and"):
                continue
            yield t, kind


CASES = list(_cases())


@functools.cache
def program(arch: str = "sm_90"):
    src = "".join(f"kernel {k}_{t}(v: {t}[n] read, key: u8[n] read, h: {t}[{BINS}] view) over n {{\n"
                  f"    h.{KINDS[k][0]}(index(key)) {KINDS[k][1]} v;\n}}\n" for t, k in CASES)
    return kernc.compile(src, arch=arch)


def _dtype(t):
    return np.dtype(ml_dtypes.bfloat16) if t == "bf16" else np.dtype(
        {"f16": "float16", "f32": "float32", "f64": "float64"}.get(t) or ("uint" if t[0] == "u" else "int") + t[1:])


def _float_reference(h, key, v, kind):
    """min/max as IEEE 754-2019 minimum/maximum (NaN wins, -0.0 < +0.0), written per bin."""
    out = h.copy()
    for b in range(BINS):
        vals = [float(x) for x in [h[b], *v[key == b]]]
        if any(x != x for x in vals):
            out[b] = np.nan
            continue
        pick = max(vals) if kind == "max" else min(vals)
        if pick == 0.0:
            signs = [np.signbit(x) for x in vals if x == 0.0]
            pick = (0.0 if not all(signs) else -0.0) if kind == "max" else (-0.0 if any(signs) else 0.0)
        out[b] = pick
    return out


def _reference(h, key, v, t, kind):
    if t in FLOATS and kind in ("min", "max"):
        return _float_reference(h, key, v, kind)
    out = h.copy()
    fn = {"add": np.add, "min": np.minimum, "max": np.maximum, "or": np.bitwise_or, "and": np.bitwise_and}[kind]
    fn.at(out, key.astype(np.int64), v)  # in item order, as the interpreter applies them
    return out


def _inputs(t, kind, n, rng):
    dt = _dtype(t)
    if t in FLOATS:
        pool = np.array([0.0, -0.0, 1.5, -2.25, 3.0, -7.0, np.inf, -np.inf, 0.125], np.float32)
        v = rng.choice(pool if kind != "add" else pool[np.isfinite(pool)], n).astype(dt)
        if kind != "add":
            v[rng.random(n) < 0.02] = np.nan  # some bins meet a NaN, some do not
        h = rng.choice(np.array([0.0, -0.0, 2.0, -1.0], np.float32), BINS).astype(dt)
    else:
        info = np.iinfo(dt)
        v = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
        h = rng.integers(info.min, info.max, BINS, endpoint=True, dtype=dt)
    key = rng.integers(0, BINS + 2, n).astype(np.uint8)  # bins 7, 8: out of bounds, skipped
    return h, key, v


@pytest.mark.parametrize("n", [1, 33, 1001])
@pytest.mark.parametrize("t,kind", CASES)
def test_interpreter_matches_numpy(t, kind, n):
    rng = np.random.default_rng([CASES.index((t, kind)), n])
    h, key, v = _inputs(t, kind, n, rng)
    want = _reference(h, key[key < BINS], v[key < BINS], t, kind)
    getattr(program(), f"{kind}_{t}")(v, key, h)
    bits = f"u{h.itemsize}"  # bitwise: NaN == NaN and -0.0 != +0.0
    if t in FLOATS:  # (the GPU's NaN is canonical: compare NaNs as NaNs, the rest by their bits)
        assert np.array_equal(np.isnan(h.astype(np.float32)), np.isnan(want.astype(np.float32)))
        keep = ~np.isnan(want.astype(np.float32))
        h, want = h[keep], want[keep]
    np.testing.assert_array_equal(h.view(bits), want.view(bits))


def test_signed_zero_and_nan_rules():
    """max(-0.0, +0.0) is +0.0 and min is -0.0 in either order; a NaN wins over everything."""
    p = program()
    key = np.zeros(2, np.uint8)
    for vals in ([0.0, -0.0], [-0.0, 0.0]):
        hi = np.full(BINS, -np.inf, np.float32)
        p.max_f32(np.array(vals, np.float32), key, hi)
        lo = np.full(BINS, np.inf, np.float32)
        p.min_f32(np.array(vals, np.float32), key, lo)
        assert hi[0] == 0 and not np.signbit(hi[0]) and lo[0] == 0 and np.signbit(lo[0])
    h = np.zeros(BINS, np.float32)
    p.max_f32(np.array([np.nan, 5.0], np.float32), key, h)
    assert np.isnan(h[0])


needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_ptx_assembles(arch):
    ptx = program(arch).ptx
    result = toolkit.run_ptxas(ptx, arch=arch)
    assert result.ok, result.log
    entries = {e.split("(")[0].split()[-1]: e for e in ptx.split(".entry")[1:]}
    # native: one atom/red of the kind on 32/64-bit integers; f32/f64 add; f16 add (sm_70+)
    assert "global.add.u32" in entries["add_u32"] and ".cas." not in entries["add_u32"]
    assert "global.or.b64" in entries["or_u64"] and "global.min.s32" in entries["min_i32"]
    assert "global.add.noftz.f16" in entries["add_f16"]
    # a compare-and-swap loop on the containing 32-bit word (8/16-bit integers), float min/max
    for name in ("add_u8", "max_i16", "min_f32", "max_f64", "max_f16"):
        assert "atom.relaxed.gpu.global.cas.b" in entries[name], name
    # bf16 add: native on sm_90 only
    assert ("global.add.noftz.bf16" in entries["add_bf16"]) == (arch == "sm_90")
    assert (".cas." in entries["add_bf16"]) == (arch == "sm_80")


@pytest.mark.parametrize("method,t", [("atomic_or", "f32"), ("atomic_and", "bf16")])
def test_bitwise_on_float_is_a_located_error(method, t):
    src = f"kernel k(v: {t}[n] read, h: {t}[4] view) over n {{\n    h.{method}(0) = v;\n}}\n"
    with pytest.raises(CompileError) as err:
        kernc.compile(src)
    text = str(err.value)
    assert f"an atomic {method[7:]} of 'h' (a '{t}' view) is not supported" in text
    assert ":2:" in text and "u32/u64 view" in text


def test_deterministic_accepts_float_min_max():
    """Float min/max are one total order (NaN and signed zeros included): any update order gives the
    same bits, so @deterministic accepts them (float adds it refuses)."""
    src = ("@deterministic kernel k(v: f32[n] read, key: u8[n] read, h: f32[4] view) over n {\n"
           "    h.atomic_max(index(key)) = v;\n}\n")
    mod = kernc.compile(src)
    h = np.full(4, -np.inf, np.float32)
    mod.k(np.array([1.0, -0.0, 0.0, 2.0], np.float32), np.array([0, 1, 1, 0], np.uint8), h)
    np.testing.assert_array_equal(h.view(np.uint32), np.array([2.0, 0.0, -np.inf, -np.inf], np.float32).view(np.uint32))
