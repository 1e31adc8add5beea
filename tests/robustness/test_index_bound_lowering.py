"""The launch-time index bound covers the arithmetic lowering adds and float-to-integer routes
(retrial of issue 18: R01, R02, R03).

R01: ``strided(off, s)`` lowers to ``off + t*s`` (``pair strided``: and ``off + (t+1)*s``). The
bound program bounded ``off`` and ``s`` as values and left ``off + t*s`` to the products rule,
which assumed ``|off|`` is at most the largest scalar; ``strided(a * b, s)`` or ``strided(M * M,
M)`` ran 32-bit past int32 (the CPU interpreter refused "outside int32"; a GPU wraps, and can wrap
into the buffer). Now each strided accessor adds ``|off| + (L + 1) * |s|`` to the program.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.backend import binding, cpu
from kernc.backend.dtypes import numpy_dtype

STRIDED = """
kernel prod_i32(x: f32[m] read strided(a * b, s) default 5.0, a: i32, b: i32, s: i32, y: f32[n] write) over n { y = x; }
kernel prod_u32(x: f32[m] read strided(a * b, s) default 5.0, a: u32, b: u32, s: u32, y: f32[n] write) over n { y = x; }
kernel prod_index(x: f32[m] read strided(a * b, s) default 5.0, a: index, b: index, s: index, y: f32[n] write) over n { y = x; }
kernel negative(x: f32[m] read strided(0 - a * b, s) default 5.0, a: i32, b: i32, s: i32, y: f32[n] write) over n { y = x; }
kernel pair(x: f32[m] read pair strided(a * b, s) default 5.0, a: i32, b: i32, s: i32, y: f32[n] write) over n { y = x.first + x.second; }
kernel sizes(x: f32[M] read strided(M * M, M) default 5.0, y: f32[n] write) over n { y = x; }
"""


@pytest.fixture(scope="module")
def strided():
    return kernc.compile(STRIDED, filename="strided.kern")


def _bits(kernel, args) -> int:
    return binding.bind(kernel.signature, args, {}, cpu.is_host_array, "cpu").index_bits


@pytest.mark.parametrize("name, s, default", [
    ("prod_i32", 46340, 5.0), ("prod_u32", 46340, 5.0), ("prod_index", 46340, 5.0),
    ("negative", -46340, 5.0), ("pair", 46340, 10.0)])
def test_strided_offset_products_leave_int32_and_run_64_bit(strided, name, s, default):
    """``off + t*s`` with ``off = a*b = 2147395600`` (< 2^31) and ``t*s`` reaching 92680: past
    int32, every element out of bounds (the default)."""
    k = getattr(strided, name)
    x, y = np.ones(8, np.float32), np.zeros(3, np.float32)
    assert _bits(k, (x, 46340, 46340, s, y)) == 64
    k(x, 46340, 46340, s, y)  # was: KerncRuntimeError "index arithmetic gives ..., outside int32"
    assert y.tolist() == [default] * 3
    small = np.zeros(3, np.float32)
    assert _bits(k, (x, 1, 2, 1 if s > 0 else -1, small)) == 32  # small values keep 32-bit code
    k(x, 1, 2, 1, small) if s > 0 else k(x, 1, -7, -1, small)  # off 7: elements 7, 6, 5
    assert small.tolist() == ([2.0] * 3 if name == "pair" else [1.0] * 3)


def test_a_strided_offset_of_sizes_alone_is_bounded(strided):
    x, y = np.ones(46340, np.float32), np.zeros(3, np.float32)
    assert _bits(strided.sizes, (x, y)) == 64
    strided.sizes(x, y)
    assert y.tolist() == [5.0] * 3
    assert _bits(strided.sizes, (np.ones(40, np.float32), y)) == 32


FLOATS = """
kernel f16sq(x: f32[M] view default -1.0, f: f16, y: f32[n] write) over n { y = x.checked(index(i64(f * f))); }
kernel f16neg(x: f32[M] view default -1.0, f: f16, y: f32[n] write) over n { y = x.checked(index(i64(-f * f))); }
kernel f16of32(x: f32[M] view default -1.0, f: f32, y: f32[n] write) over n { y = x.checked(index(i64(f16(f * f)))); }
kernel bf16mul(x: f32[M] view default -1.0, f: bf16, g: bf16, s: index, y: f32[n] write) over n {
    y = x.checked(index(i64(f * g)) * s); }
kernel bf16loop(x: f32[M] view default -1.0, f: bf16, T: i32, s: index, y: f32[n] write) over n {
    let acc: bf16 = 0.0; for j in 0..T { acc += f; } y = x.checked(index(i64(acc)) * s); }
kernel f32mul(x: f32[M] view default -1.0, f: f32, y: f32[n] write) over n { y = x.checked(index(i64(f * f))); }
"""


@pytest.fixture(scope="module")
def floats():
    return kernc.compile(FLOATS, filename="floats.kern")


def _f(dtype, v):
    return numpy_dtype(dtype).type(v)


@pytest.mark.parametrize("name, big, small", [
    ("f16sq", [("f16", 300)], [("f16", 3)]),          # inf -> 2^63 - 1
    ("f16neg", [("f16", 300)], [("f16", 3)]),         # -inf -> -2^63
    ("f16of32", [("f32", 300)], [("f32", 3)]),
    ("bf16mul", [("bf16", 2352), ("bf16", 3776), ("index", 241)], [("bf16", 3), ("bf16", 2), ("index", 1)]),
    ("bf16loop", [("bf16", 516), ("i32", 383), ("index", 8192)], [("bf16", 0), ("i32", 3), ("index", 1)]),
])
def test_float_routes_to_index_count_rounding_and_overflow(floats, name, big, small):
    """Each of these launches reaches past int32 (``bf16`` 2352 * 3776 rounds up to 8912896, times
    241; 383 bf16 additions of 516 round up to 262144, times 8192) and ran 32-bit."""
    k = getattr(floats, name)
    x = np.ones(48, np.float32)
    args = [_f(t, v) if t != "index" and t != "i32" else v for t, v in big]
    y = np.zeros(1, np.float32)
    assert _bits(k, (x, *args, y)) == 64
    k(x, *args, y)  # was: KerncRuntimeError "index arithmetic gives ..., outside int32"
    assert y.tolist() == [-1.0]
    args = [_f(t, v) if t != "index" and t != "i32" else v for t, v in small]
    if name != "bf16loop":  # (a float carried around a loop is unbounded: always 64-bit)
        assert _bits(k, (x, *args, y)) == 32
    k(x, *args, y)
    assert y.tolist() == [-1.0 if name == "f16neg" else 1.0]  # x[9], x[-9], x[9], x[6], x[0]


def test_f32_products_stay_32_bit_below_the_limit(floats):
    x, y = np.ones(48, np.float32), np.zeros(1, np.float32)
    assert _bits(floats.f32mul, (x, np.float32(46000), y)) == 32  # 2116000000 (+ f32 rounding)
    assert _bits(floats.f32mul, (x, np.float32(46341), y)) == 64


def test_the_strided_bound_counts_items_not_the_largest_buffer(strided):
    """``t`` of ``off + t*s`` is below ``P + block``: a 2^30-element buffer read at three items
    stays far from int32 (with the largest size in place of ``P`` it would be 2^31 for ``s = 2``)."""
    sig = strided.prod_i32.signature
    got = binding.index_values_bound(sig, {"a": 1, "b": 7, "s": 2}, {"m": 2**30, "n": 3}, 2**30 + sig.block)
    assert got == 2**30  # the size m itself is the largest index value
