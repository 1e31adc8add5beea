"""A subset of the accessor matrix launched on a CUDA GPU through CuPy (``@pytest.mark.gpu``; skipped
cleanly without a device, see ``tests/conftest.py``). Same kernels, inputs and numpy references as the
CPU tests (``accessor_cases.run_case(..., device="cuda")``); GPU atomics run in any order, so sums are
compared within ``SUM_RTOL`` of the magnitude of their terms (exactly, for the dyadic f16 data)."""

from __future__ import annotations

import numpy as np
import pytest

import kernc

import accessor_cases as ac

pytestmark = pytest.mark.gpu

SHAPES = [(32, 1, None, "f32", None), (256, 3, "soa", "f32", None), (1024, 7, "aos", "f32", None),
          (256, 2, "aos", "f16", None), (1024, 4, "soa", "f64", None), (256, 3, "aos", "f32", "f64"),
          (256, 4, "aos", "f32", None)]


def _cases():
    out = []
    for acc in ac.ALL:
        for B, K, lay, dtype, comp in SHAPES:
            out.append(pytest.param(acc, B, K, lay, dtype, comp, marks=ac.known_bug_marks(acc),
                                    id=f"{acc}-B{B}-K{K}{lay or ''}-{dtype}{'c' + comp if comp else ''}"))
    return out


@pytest.mark.parametrize("acc,B,K,layout,dtype,compute", _cases())
def test_accessor_on_gpu(acc, B, K, layout, dtype, compute):
    # a large P too (many blocks racing on the atomics), except for f16 sums, whose partial sums
    # would no longer be exact in f16
    big = [] if (dtype == "f16" and acc in ac.SUMS) else [100_003]
    for P in ac.ps_full(B) + big:
        ac.run_case(acc, B, K, dtype, layout, compute, P, device="cuda")


@pytest.mark.parametrize("acc", ["indexed", "shared", "shared_sum", "atomic", "write_indexed", "add_indexed"])
@pytest.mark.parametrize("pattern", ["dup", "perm", "sorted_distinct", "rsorted_distinct", "equal", "max", "max_distinct", "hubs"])
def test_index_patterns_on_gpu(acc, pattern):
    distinct = pattern in ("perm", "sorted_distinct", "rsorted_distinct", "max_distinct")
    if acc in ac.DISTINCT_INDEX and not distinct:
        pytest.skip("plain scatters (write/add indexed) need distinct indices")
    for B in (32, 1024):
        for P in (1, B + 1, 3 * B + 7):
            ac.run_case(acc, B, 3, "f32", "soa", None, P, pattern=pattern, device="cuda")


@pytest.mark.parametrize("acc", ["shared", "shared_sum"])
def test_precomputed_cupy_tables(acc):
    for B in (32, 256):
        for P in (1, B + 1, 3 * B + 7):
            ac.run_case(acc, B, 3, "f32", "soa", None, P, table=True, device="cuda")


@pytest.mark.parametrize("acc", ["sequential", "indexed", "write_indexed", "add_sequential", "shared", "write_sum"])
def test_misaligned_device_buffers(acc):
    for K, dtype in ((4, "f32"), (2, "f64")):
        ac.run_case(acc, 256, K, dtype, "aos", None, 3 * 256 + 7, misalign=True, device="cuda")


def test_cupy_tables_equal_numpy_tables():
    import cupy as cp

    from kernc.backend.shared_indices import shared_indices

    rng = np.random.default_rng(3)
    for B in (32, 256, 1024):
        for P in (0, 1, B + 1, 3 * B + 7):
            I = rng.integers(0, 50, P).astype(np.uint32)
            I[::7] = 0xFFFFFFFF
            h = shared_indices(I, B)
            d = shared_indices(cp.asarray(I), B)
            for name in ("unique", "target", "perm", "count"):
                assert np.array_equal(h.field(name), d.field(name).get()), (B, P, name)


def test_checking_values_on_gpu():
    import cupy as cp

    mod = kernc.compile(
        "kernel ss(x: f32[m] add shared_sum(i), i: u32[n] read, y: f32[n] read) over n { x += y; }\n"
        "kernel sd(x: f32[m] read strided(-1, 2) default -1, y: f32[n] write) over n { y = x; }\n"
        "kernel wp(f: f32[n] read, s: f32[n] read, o: f32[m] write pair) over n { o = (f, s); }\n"
        "kernel ap(f: f32[n] read, s: f32[n] read, o: f32[m] add pair) over n { o = (f, s); }\n"
        "@block(1024)\nkernel ws(o: f32[1] write sum) over n { o = f32(thread_id); }\n")
    x = cp.asarray(np.array([100] + [0] * 9, np.float32))
    mod.ss(x, cp.asarray(np.array([5, 3, 5, 9, 3, 3], np.uint32)), cp.asarray(np.arange(1, 7, dtype=np.float32)))
    assert x.get().tolist() == [100, 0, 0, 13, 0, 4, 0, 0, 0, 4]
    y = cp.zeros(4, cp.float32)
    mod.sd(cp.asarray(np.arange(10, 15, dtype=np.float32)), y)
    assert y.get().tolist() == [-1, 11, 13, -1]
    f = cp.asarray(np.array([1, 2, 3], np.float32))
    s = cp.asarray(np.array([10, 20, 30], np.float32))
    o = cp.full(5, 7, cp.float32)
    mod.wp(f, s, o)
    assert o.get().tolist() == [1, 12, 23, 30, 0]
    o = cp.full(5, 100, cp.float32)
    mod.ap(f, s, o)
    assert o.get().tolist() == [101, 112, 123, 130, 100]
    o = cp.full(1, 5, cp.float32)
    mod.ws(o, n=2049)
    assert o.get().tolist() == [2098176]
    o = cp.full(1, 5, cp.float32)
    mod.ws(o, n=0)
    cp.cuda.runtime.deviceSynchronize()
    assert o.get().tolist() == [0]


@pytest.mark.parametrize("acc", ["shared", "pair", "unique", "indexed"])
def test_gathers_agree_bitwise_with_the_cpu(acc):
    import cupy as cp

    mod = ac.module(acc, 256, 3, "f32", "soa", None)
    rng = np.random.default_rng(8)
    P = 3 * 256 + 7
    m = P + 3
    x = rng.normal(size=(3, m)).astype(np.float32)
    args = {"x": x}
    if acc in ("shared", "indexed"):
        args["i"] = ac.index_pattern("dup", P, m, rng)
    outs = ("y1", "y2") if acc == "pair" else ("y",)
    for o in outs:
        args[o] = np.zeros((P, 3), np.float32)
    dev = {k: cp.asarray(v) for k, v in args.items()}
    mod.k(**args)
    mod.k(**dev)
    cp.cuda.runtime.deviceSynchronize()
    for o in outs:
        assert args[o].tobytes() == dev[o].get().tobytes()
