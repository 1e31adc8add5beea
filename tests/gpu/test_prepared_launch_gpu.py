"""Repeated positional GPU calls (``Kernel.__call__``'s prepared fast path) compute what numpy and
the CPU interpreter compute, call after call, as arguments change in every way that binding sees.

Marked ``gpu``; the same semantics without a GPU: ``tests/cache/test_prepared_launch.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernc

pytestmark = pytest.mark.gpu

_MOD = kernc.compile("""
kernel saxpy(a: f32, x: f32[n] read, y: f32[n] add) over n { y += a * x; }
kernel strided(s: f32[m] read strided(off, st), off: index, st: index, y: f32[n] write) over n { y = s; }
kernel upto(n: index, y: f32[m] write indexed(i), i: u32[m] read) over n { y = 1.0; }
kernel total(x: f32[n] read, t: f32[1] write sum) over n { t = x; }
@deterministic
kernel dtotal(x: f32[n] read, t: f32[1] write sum) over n { t = x; }
""")


def test_repeated_saxpy_calls_follow_their_arguments():
    import cupy as cp

    rng = np.random.default_rng(5)
    for n, a in [(1000, 2.0), (1000, np.float32(-0.5)), (1000, 3), (77, 1.5), (1000, 0.25), (5000, 2.0)]:
        x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
        want = y + np.float32(a) * x
        for misaligned in (False, True):  # 16-byte aligned data, then 4-byte aligned: the other PTX
            if misaligned:
                dx, dy = (cp.asarray(np.r_[np.float32(0), v])[1:] for v in (x, y))
            else:
                dx, dy = cp.asarray(x), cp.asarray(y)
            r = _MOD.saxpy(a, dx, dy)
            assert r.device == "cuda" and r.sizes == {"n": n} and r.grid == -(-n // 256)
            np.testing.assert_array_equal(dy.get(), want)


def test_index_scalars_of_both_signs_and_widths():
    import cupy as cp

    s = np.arange(200, dtype=np.float32)
    ds = cp.asarray(s)
    for off, st in [(0, 1), (5, 2), (199, -1), (150, -3), (3, 0), (10, 4)]:
        y = cp.zeros(40, np.float32)
        _MOD.strided(ds, off, st, y)
        np.testing.assert_array_equal(y.get(), s[off + st * np.arange(40)], err_msg=f"off={off} st={st}")


def test_a_problem_size_argument_and_zero_initialised_sums():
    import cupy as cp

    i = cp.arange(1000, dtype=cp.uint32)
    for n in (300, 300, 700, 0, 1000):
        y = cp.zeros(1000, np.float32)
        _MOD.upto(n, y, i)
        np.testing.assert_array_equal(y.get(), (np.arange(1000) < n).astype(np.float32))
    x = cp.asarray(np.arange(1, 1001, dtype=np.float32))
    for kernel in (_MOD.total, _MOD.dtotal):
        t = cp.full(1, 7.0, np.float32)
        for _ in range(3):  # cleared before every call, not accumulated (dtotal: fresh scratch too)
            kernel(x, t)
            assert float(t.get()[0]) == pytest.approx(500500.0, rel=1e-6)


@pytest.mark.parametrize("dtype, values", [
    ("bool", [True, False]), ("i8", [-5, 100]), ("u16", [65000, 1]), ("i32", [-2**31, 7]),
    ("u64", [2**64 - 1, 2**63]), ("f16", [0.1, -2.5]), ("bf16", [0.1, 3.0]), ("f32", [0.1, -0.0]),
    ("f64", [0.1, 1e300]),
])
def test_scalars_of_every_type_reach_the_kernel(dtype, values):
    import cupy as cp

    k = kernc.compile(f"kernel k(s: {dtype}, y: f64[n] write) over n {{ y = f64(s); }}").k
    for v in values * 2:  # full binding, then the prepared path with each value
        y = cp.zeros(3, np.float64)
        k(v, y)
        host = np.zeros(3, np.float64)
        k(v, host)  # the CPU interpreter: the same conversion of the same argument
        np.testing.assert_array_equal(y.get(), host, err_msg=f"{dtype} {v!r}")
        assert host[0] == pytest.approx(float(v), rel=4e-3)  # (bf16 keeps 8 bits)


def test_index_scalar_times_a_coordinate_past_int32():
    """``off + t*st`` past int32 with each value inside it: 64-bit indices, as the CPU computes
    (the 32-bit PTX read X[3] for thread 2); repeated calls in both directions."""
    import cupy as cp

    mod = kernc.compile("kernel sd(X: f32[m] read strided(off, st) default -1, off: index, st: index, "
                        "o: f32[n] write) over n { o = X; }")
    X = cp.arange(10, dtype=cp.float32)
    for off, st, want in [(5, 2, [5, 7, 9]), (5, 2**31 - 1, [5, -1, -1]), (5, 2, [5, 7, 9]),
                          (9, -(2**31) + 1, [9, -1, -1]), (1, 3, [1, 4, 7])]:
        o = cp.zeros(3, cp.float32)
        mod.sd(X, off, st, o)
        assert o.get().tolist() == want, (off, st)
        cpu = np.zeros(3, np.float32)
        mod.sd(np.arange(10, dtype=np.float32), off, st, cpu)
        assert cpu.tolist() == want


def test_literal_strides_and_scalar_products_past_int32():
    """A literal stride and a product of two index scalars past int32: 64-bit PTX, the CPU's values."""
    import cupy as cp

    mod = kernc.compile("kernel s(x: f32[m] read strided(0, 100000) default -1.0, y: f32[n] write) over n { y = x; }\n"
                        "kernel p(y: f32[n] write, a: index, b: index) over n { y = f32(a * b); }")
    x = cp.arange(40000, dtype=cp.float32)
    y = cp.zeros(42951, cp.float32)
    mod.s(x, y)
    assert y.get()[0] == 0.0 and (y.get()[1:] == -1.0).all()
    for a, b in [(3, 4), (50000, 50000), (7, 5)]:
        z = cp.zeros(4, cp.float32)
        mod.p(z, a, b)
        assert (z.get() == np.float32(a * b)).all(), (a, b)
