"""bf16 on the CPU interpreter: scalar arguments, and conversions rounded once like PTX ``cvt.rn``."""

from __future__ import annotations

import numpy as np
import pytest

import kernc

ml_dtypes = pytest.importorskip("ml_dtypes")  # a dependency of kernc: always there
BF16 = ml_dtypes.bfloat16


@pytest.mark.parametrize("value", [1.5, 1, np.float32(2.25), BF16(3.5), np.float16(0.5)])
def test_bf16_scalar_parameter(value):
    """Every call of a kernel with a bf16 scalar failed: 'expected a scalar bf16, got a bfloat16'."""
    mod = kernc.compile("kernel sc(b: bf16, o: f32[n] write) over n { o = f32(b); }")
    o = np.zeros(3, np.float32)
    mod.sc(value, o)
    assert o.tolist() == [float(BF16(float(value)))] * 3


@pytest.mark.parametrize("src_type,values,expected", [
    # exact value just above a bf16 midpoint: one rounding goes up, rounding through f32 ties to even
    ("i32", [2**24 + 2**16 + 1, 3, -(2**24 + 2**16 + 1)], [16908288.0, 3.0, -16908288.0]),
    ("f64", [1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-30), 1 + 2**-8], [1.0078125, -1.0078125, 1.0]),
    ("u64", [(1 << 40) + (1 << 32) + 1, (1 << 63) + (1 << 55) + 1, 7], [2.0**40 + 2**33, 2.0**63 + 2**56, 7.0]),
    ("i64", [2**60 + 2**52 + 1, -(2**60 + 2**52 + 1), -5], [2.0**60 + 2**53, -(2.0**60 + 2**53), -5.0]),
])
def test_conversions_to_bf16_round_once(src_type, values, expected):
    """int/f64 -> bf16 went through f32 on the CPU (two roundings) while the PTX cvt.rn rounds once."""
    mod = kernc.compile(f"kernel c(d: {src_type}[n] read, o: bf16[n] write) over n {{ let z: bf16 = bf16(d); o = z; }}")
    assert f"cvt.rn.bf16.{ {'i32': 's32', 'f64': 'f64', 'u64': 'u64', 'i64': 's64'}[src_type] }" in mod.ptx
    d = np.array(values, dtype={"i32": np.int32, "f64": np.float64, "u64": np.uint64, "i64": np.int64}[src_type])
    o = np.zeros(len(values), BF16)
    mod.c(d, o)
    assert o.astype(np.float64).tolist() == expected


def test_compute_f64_store_to_bf16_rounds_once():
    mod = kernc.compile("kernel c(d: f64[n] read, o: bf16[n] write compute f64) over n { o = d; }")
    o = np.zeros(1, BF16)
    mod.c(np.array([1 + 2**-8 + 2**-30]), o)
    assert float(o[0]) == 1.0078125
