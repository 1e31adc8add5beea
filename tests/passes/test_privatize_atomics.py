"""``kern-privatize-atomics`` on the CPU interpreter: privatized kernels give the results of the same
program compiled without the pass (``privatize=False``) for every update kind, N-D problems and odd
sizes, with fewer global atomics; the kernels it declines keep one global atomic per update."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import kernc
from kernc.backend import toolkit

SRC = """
kernel add_u32(key: u16[n] read, h: u32[1000] view) over n { h.atomic(index(key) % 1000) += 1; }
kernel add_f32(v: f32[n] read, key: u8[n] read, h: f32[64] view) over n { h.atomic(index(key & 63u8)) += v; }
kernel max_f32(v: f32[n] read, key: u8[n] read, h: f32[64] view) over n { h.atomic_max(index(key & 63u8)) = v; }
kernel min_i8(v: i8[n] read, key: u8[n] read, h: i8[64] view) over n { h.atomic_min(index(key & 63u8)) = v; }
kernel max_u64(v: u64[n] read, key: u8[n] read, h: u64[64] view) over n { h.atomic_max(index(key & 63u8)) = v; }
kernel or_u16(v: u16[n] read, key: u8[n] read, h: u16[64] view) over n { h.atomic_or(index(key & 63u8)) = v; }
kernel and_i32(v: i32[n] read, key: u8[n] read, h: i32[64] view) over n { h.atomic_and(index(key & 63u8)) = v; }
kernel grid2(x: u8[R, C] view, h: u32[16, 16] view) over (i, j) in (R, C) {
    let b = index(x[i, j]);
    h.atomic(b / 16, b % 16) += 1;
}
kernel by_block(key: u8[n] read, h: u32[256] view) over n { h.atomic(index(key) + block_id * 0) += 1; }
kernel big(key: u16[n] read, h: u32[8192] view) over n { h.atomic(index(key) % 8192) += 1; }
"""


@functools.cache
def mods():
    return kernc.compile(SRC), kernc.compile(SRC, privatize=False)


def _args(name, n, rng):
    dt = {"u32": np.uint32, "f32": np.float32, "i8": np.int8, "u64": np.uint64, "u16": np.uint16,
          "i32": np.int32}[name.split("_")[1]]
    key = rng.integers(0, 256, n).astype(np.uint8)
    if dt is np.float32:
        v = rng.choice(np.array([0.0, -0.0, 1.0, -2.5, 0.25, np.inf, -np.inf], np.float32), n)
        if name == "add_f32":
            v = rng.integers(-4, 5, n).astype(np.float32)  # exact in any order
        h = np.full(64, -0.0 if name == "add_f32" else -np.inf, np.float32)
        return [v, key, h]
    info = np.iinfo(dt)
    v = rng.integers(info.min, info.max, n, endpoint=True, dtype=dt)
    h = rng.integers(info.min, info.max, 64, endpoint=True, dtype=dt)
    return [v, key, h]


@pytest.mark.parametrize("n", [1, 255, 4097, 20000])
@pytest.mark.parametrize("name", ["add_f32", "max_f32", "min_i8", "max_u64", "or_u16", "and_i32"])
def test_same_result_as_unprivatized(name, n):
    on, off = mods()
    a = _args(name, n, np.random.default_rng(n))
    b = [x.copy() for x in a]
    r_on = getattr(on, name)(*a)
    r_off = getattr(off, name)(*b)
    np.testing.assert_array_equal(a[-1].view(f"u{a[-1].itemsize}"), b[-1].view(f"u{b[-1].itemsize}"))
    assert r_off.stats.global_atomics == n
    if name == "add_f32":  # float adds are not privatized (another rounding): one atomic per item
        assert r_on.stats.global_atomics == n and r_on.stats.shared_requests == 0
    else:
        assert r_on.stats.global_atomics <= min(n, 64 * r_on.stats.blocks)


def test_1000_bins_take_63_items_per_thread():
    """1000 bins: K = ceil(16 * 1000 / 256) = 63 items per thread, a block of 16128 items."""
    on, off = mods()
    n = 50000
    key = np.random.default_rng(3).integers(0, 65536, n).astype(np.uint16)
    h1, h2 = np.zeros(1000, np.uint32), np.zeros(1000, np.uint32)
    r = on.add_u32(key, h1)
    off.add_u32(key, h2)
    np.testing.assert_array_equal(h1, h2)
    assert r.stats.blocks == -(-n // (256 * 63))
    assert r.stats.global_atomics <= 1000 * r.stats.blocks <= n / 16 + 1000


def test_n_d_problem():
    on, off = mods()
    x = np.random.default_rng(5).integers(0, 256, (37, 91)).astype(np.uint8)
    h1, h2 = np.zeros((16, 16), np.uint32), np.zeros((16, 16), np.uint32)
    r = on.grid2(x, h1)
    off.grid2(x, h2)
    np.testing.assert_array_equal(h1, np.bincount(x.ravel(), minlength=256).reshape(16, 16).astype(np.uint32))
    np.testing.assert_array_equal(h1, h2)
    assert r.stats.global_atomics < x.size


@pytest.mark.parametrize("name,bins", [("by_block", 256), ("big", 8192)])
def test_declined_kernels_keep_one_global_atomic_per_item(name, bins):
    on, _ = mods()
    n = 3000
    key = np.random.default_rng(7).integers(0, 256, n).astype(np.uint8 if name == "by_block" else np.uint16)
    h = np.zeros(bins, np.uint32)
    r = getattr(on, name)(key, h)
    np.testing.assert_array_equal(h, np.bincount(key.astype(np.int64) % bins, minlength=bins))
    assert r.stats.global_atomics == n and r.stats.shared_requests == 0


def test_remarks_explain_the_declines(capsys):
    kernc.compile(SRC, filename="p.kern", privatize=True)  # (no remarks through the API)
    from kernc.compiler import Compilation, CompileOptions

    Compilation(SRC, "p.kern", CompileOptions(remarks=True), use_cache=False)
    lines = capsys.readouterr().err.splitlines()

    def said(line: int, text: str) -> bool:
        return any(x.startswith(f"p.kern:{line}:") and text in x for x in lines)

    assert said(13, "not privatizing the atomic updates of 'h': the kernel reads block_id()")
    assert said(14, "its copy (8192 elements, 32768 bytes) would not fit the 16384 bytes")
    assert said(2, "privatizing the atomic updates of 'h' (1000 x u32, 4000 bytes)")
    assert said(11, "privatizing the atomic updates of 'h' (256 x u32, 1024 bytes)")
    assert said(3, "not privatizing the atomic updates of 'h': float adds would be summed per block first")


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_privatized_kernels_assemble(arch):
    """Workgroup atomics of every kind here (8/16-bit and float min/max ones as a CAS loop on the
    shared word) assemble, at block scope."""
    ptx = kernc.compile(SRC, arch=arch).ptx
    assert "atom.relaxed.cta.shared.cas.b32" in ptx and "atom.relaxed.cta.shared.add.u32" in ptx
    result = toolkit.run_ptxas(ptx, arch=arch)
    assert result.ok, result.log
