"""An fma is computed in the type the program computes in, on the CPU interpreter and in the PTX.

Regression for a rewrite that narrowed every ``fptrunc(fma(fpext ...))`` to an fma of the narrow type:
an ``f16`` buffer computes in ``f32`` and a ``compute f64`` buffer in ``f64``, so their fmas must stay
``f32`` / ``f64`` fmas followed by one conversion (the value the interpreter computes), while an fma of
``f16`` values (``let x: f16``) is one ``fma.rn.f16``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernc
from kernc.compiler import Compilation, CompileOptions


def _ptx(src, **opts):
    return Compilation(src, "k.kern", CompileOptions(**opts), use_cache=False).ptx()


F16_IN_F32 = "kernel k(a: f16[n] read, b: f16[n] read, c: f16[n] read, o: f16[n] write) over n { o = fma(a, b, c); }"
F16_FMAD = "kernel k(a: f16[n] read, b: f16[n] read, c: f16[n] read, o: f16[n] write) over n { o = a * b + c; }"
F16_LET = ("kernel k(a: f16[n] read, b: f16[n] read, c: f16[n] read, o: f16[n] write) over n "
           "{ let x: f16 = f16(a); let y: f16 = f16(b); let z: f16 = f16(c); let r: f16 = fma(x, y, z); o = f32(r); }")
F64_COMPUTE = ("kernel k(a: f32[n] read, b: f32[n] read, c: f32[n] read, o: f32[n] write) over n "
               "{ o = f32(fma(f64(a), f64(b), f64(c))); }")


@pytest.mark.parametrize("src,fmad", [(F16_IN_F32, False), (F16_FMAD, True)])
def test_f16_storage_fma_is_an_f32_fma(src, fmad):
    ptx = _ptx(src, fmad=fmad)
    assert re.search(r"\bfma\.rn\.f32\b", ptx) and "fma.rn.f16" not in ptx, ptx
    # exact a*b+c = 1.60107421875...: just below the f16 midpoint 1.6010742..., so the single-rounded
    # f16 fma is 1.6005859375, but the program rounds to f32 first (1.6010742) and then to f16: 1.6015625
    a, b, c = (np.array([v], np.float16) for v in (-0.11712646484375, -0.93798828125, 1.4912109375))
    o = np.zeros(1, np.float16)
    kernc.compile(src, fmad=fmad).k(a, b, c, o)
    expected = np.float16(np.float32(np.float64(a[0]) * np.float64(b[0]) + np.float64(c[0])))
    assert o[0] == expected == np.float16(1.6015625)


def test_f16_let_fma_is_one_f16_rounding():
    ptx = _ptx(F16_LET)
    assert re.search(r"\bfma\.rn\.f16\b", ptx), ptx
    a, b, c = (np.array([v], np.float16) for v in (-0.11712646484375, -0.93798828125, 1.4912109375))
    o = np.zeros(1, np.float16)
    kernc.compile(F16_LET).k(a, b, c, o)
    assert o[0] == np.float16(1.6005859375)  # the correctly rounded f16 fma


def test_compute_f64_fma_stays_f64():
    ptx = _ptx(F64_COMPUTE)
    assert re.search(r"\bfma\.rn\.f64\b", ptx) and "fma.rn.f32" not in ptx, ptx
    a, b, c = (np.array([v], np.float32) for v in (24929 / 2**14, 673 / 2**10, 2.0**-80))
    o = np.zeros(1, np.float32)
    kernc.compile(F64_COMPUTE).k(a, b, c, o)
    assert o[0] == np.float32(1.0)  # the f64 fma rounded to f32 (an f32 fma would give 1 + 2^-23)
