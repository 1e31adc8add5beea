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
