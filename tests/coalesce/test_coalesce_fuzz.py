"""Bugs found by a differential fuzzer of kern-coalesce-views (coalesce=True vs coalesce=False).

A staged store whose stored value is *directly* the result of a staged load (a transposed copy where
both sides have a non-unit stride along the fastest thread coordinate) crashed the pass with
``InternalCompilerError: pass 'kern-coalesce-views' failed: <number>``: the rewrite kept its staged
ops' coordinate positions by ``hash(op)``, and replacing the load's result changes the store's
operands (and so its hash) before the store is rewritten (``KeyError``). Also with ``--remarks``.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions

#: these tests are about the staged kernel itself, at every shape (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("always_staged")

COPY_2D = """
layout rm(R, C) = (R, C):(C, 1);
@block({B})
kernel k(a: f32[C, R] view as rm(C, R), b: f32[C, R] view as rm(C, R)) over (i, j) in (R, C) {{
    b[j, i] = a[j, i];
}}
"""

# 3-D: j has stride A in x and K*A in y, i has stride 1 in both: both accesses are staged
COPY_3D = """
@block(256)
kernel k(x: f32[K, A, B] view as (K, A, B):(A * B, 1, A), y: f32[B, K, A] view)
        over (i, j, k) in (A, B, K) {
    let v = x[k, i, j];
    y[j, k, i] = v;
}
"""


def _module(src: str, coalesce: bool = True, remarks: bool = False) -> Module:
    return Module(Compilation(src, "t.kern", CompileOptions(coalesce=coalesce, remarks=remarks),
                              use_cache=False))


@pytest.mark.parametrize("B", [64, 256, 1024])
@pytest.mark.parametrize("shape", [(37, 53), (64, 96), (1, 1)])
def test_transposed_copy_of_a_staged_load(B, shape):
    R, C = shape
    src = COPY_2D.format(B=B)
    a = np.random.default_rng(R * C).standard_normal((C, R)).astype(np.float32)
    for coalesce in (False, True):
        b = np.full((C, R), -12345.0, np.float32)
        _module(src, coalesce).k(a, b)
        np.testing.assert_array_equal(b, a)


def test_transposed_copy_of_a_staged_load_3d():
    A, B_, K = 7, 33, 3
    rng = np.random.default_rng(0)
    logical = rng.standard_normal((K, A, B_)).astype(np.float32)  # x[k, i, j]
    # (K, A, B):(A*B, 1, A) storage: offset k*A*B + j*A + i -> a numpy array of shape (K, B, A)
    storage = np.ascontiguousarray(logical.transpose(0, 2, 1))
    want = logical.transpose(2, 0, 1)  # y[j, k, i] = x[k, i, j]
    for coalesce in (False, True):
        y = np.full((B_, K, A), -12345.0, np.float32)
        _module(COPY_3D, coalesce).k(storage.copy(), y, A=A, B=B_, K=K)
        np.testing.assert_array_equal(y, want)


def test_remarks_on_a_transposed_copy_do_not_crash(capfd):
    _module(COPY_2D.format(B=256), remarks=True)
    assert "staging 'b'" in capfd.readouterr().err
