"""Index buffers of ``indexed(I)``/``shared(I)``/``shared_sum(I)``/``atomic(I)`` of every integer
type up to 32 bits (u8 u16 u32 i8 i16 i32), widened to ``index`` on load: each accessor against
numpy on the CPU interpreter (the ``shared_indices`` tables built from the narrow array), negative
entries of the signed types and entries past the target as launch errors, and the PTX through
ptxas (a narrow load, no 32-bit index buffer)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import kernc
from kernc.backend import toolkit
from kernc.backend.shared_indices import shared_indices
from kernc.support.errors import CompileError, KerncLaunchError

TYPES = ("u8", "u16", "i8", "i16", "u32", "i32")
M = 50  # target elements (every type holds the indices)


@functools.cache
def program(t: str):
    src = f"""
kernel gather(x: f32[m] read indexed(idx), idx: {t}[n] read, y: f32[n] write) over n {{ y = x; }}
kernel put(v: f32[n] read, idx: {t}[n] read, y: f32[m] write indexed(idx)) over n {{ y = v; }}
kernel staged(x: f32[m] read shared(idx), idx: {t}[n] read, y: f32[n] write) over n {{ y = 2.0 * x; }}
kernel summed(v: f32[n] read, idx: {t}[n] read, y: f32[m] add shared_sum(idx)) over n {{ y += v; }}
kernel counted(idx: {t}[n] read, y: u32[m] add atomic(idx)) over n {{ y += 1u32; }}
"""
    return kernc.compile(src, choose_shared=False)


def _idx(t, n, rng, distinct=False):
    dt = np.dtype(("uint" if t[0] == "u" else "int") + t[1:])
    if distinct:
        return rng.permutation(M)[:n].astype(dt)
    return rng.integers(0, M, n).astype(dt)


@pytest.mark.parametrize("n", [1, 33, 700])
@pytest.mark.parametrize("t", TYPES)
def test_every_accessor_with_a_narrow_index(t, n):
    rng = np.random.default_rng([TYPES.index(t), n])
    p = program(t)
    x = rng.standard_normal(M).astype(np.float32)
    idx = _idx(t, n, rng)
    e = idx.astype(np.int64)
    y = np.zeros(n, np.float32)
    p.gather(x, idx, y)
    np.testing.assert_array_equal(y, x[e])
    y = np.zeros(n, np.float32)
    r = p.staged(x, idx, y)
    np.testing.assert_array_equal(y, 2 * x[e])
    assert r.shared is True  # ran staged, with tables built from the narrow array
    v = rng.integers(-4, 5, n).astype(np.float32)  # exact sums in any order
    y = np.zeros(M, np.float32)
    p.summed(v, idx, y)
    np.testing.assert_array_equal(y, np.bincount(e, weights=v, minlength=M).astype(np.float32))
    cnt = np.zeros(M, np.uint32)
    p.counted(idx, cnt)
    np.testing.assert_array_equal(cnt, np.bincount(e, minlength=M))
    k = min(n, M)
    di = _idx(t, k, rng, distinct=True)
    out = np.full(M, np.nan, np.float32)
    p.put(v[:k], di, out)
    want = np.full(M, np.nan, np.float32)
    want[di.astype(np.int64)] = v[:k]
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("t", ["i8", "i16"])
def test_negative_entries_are_launch_errors(t):
    p = program(t)
    idx = np.array([3, -1, 4], dtype=np.dtype("int" + t[1:]))
    x = np.ones(M, np.float32)
    with pytest.raises(KerncLaunchError, match=r"argument 'idx': entry 1 is -1, but 'x'"):
        p.gather(x, idx, np.zeros(3, np.float32))
    with pytest.raises(KerncLaunchError, match="argument 'idx': entry 1 is -1"):
        p.counted(idx, np.zeros(M, np.uint32))
    with pytest.raises(KerncLaunchError, match="negative index values"):
        shared_indices(idx, 256)


@pytest.mark.parametrize("t", ["u8", "u16"])
def test_entries_past_the_target_are_launch_errors(t):
    idx = np.array([0, M], dtype=np.dtype("uint" + t[1:]))
    with pytest.raises(KerncLaunchError, match=f"entry 1 is {M}, but 'y' \\(atomic\\(idx\\)\\) has {M} elements"):
        program(t).counted(idx, np.zeros(M, np.uint32))


def test_shared_indices_of_narrow_arrays_equal_the_u32_tables():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 100, 1000).astype(np.uint32)
    want = shared_indices(base, 256)
    for dt in (np.uint8, np.uint16, np.int8, np.int16):
        got = shared_indices(base.astype(dt), 256)
        for f in ("unique", "target", "perm", "count"):
            np.testing.assert_array_equal(got.field(f), want.field(f))


def test_wider_or_float_index_buffers_are_errors():
    for t in ("u64", "i64", "f32"):
        src = f"kernel k(x: f32[m] read indexed(idx), idx: {t}[n] read, y: f32[n] write) over n {{ y = x; }}"
        with pytest.raises(CompileError, match="must be a 1-D u8/u16/u32/i8/i16/i32 buffer read sequentially"):
            kernc.compile(src)


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
@pytest.mark.parametrize("t", ["u8", "i16"])
def test_ptx_loads_the_narrow_index(t):
    ptx = program(t).ptx
    width = t[1:]
    assert f"ld.global.b{width}" in ptx or f"ld.global.u{width}" in ptx or f"ld.global.nc.u{width}" in ptx \
        or f"ld.global.nc.b{width}" in ptx, ptx[:2000]
    result = toolkit.run_ptxas(ptx, arch="sm_90")
    assert result.ok, result.log
