"""Regression (new-user trial): an f64 gemm whose accumulator is ``let acc = 0.0;`` (an untyped
float literal: f32) was told ``hint: convert explicitly: f32(...)``, which would lose the f64
precision. The hint now names the literal that gave the type and how to type it; the typed form
compiles and computes in f64."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions
from kernc.errors import CompileError

SRC = """kernel dgemm(a: f64[M, K] view, b: f64[K, N] view, c: f64[M, N] view) over (i, j) in (M, N) {
    let acc = INIT;
    for k in 0..K { acc += a[i, k] * b[k, j]; }
    c[i, j] = acc;
}"""


def compile_(src):
    return Compilation(src, "d.kern", CompileOptions(), use_cache=False)


@pytest.mark.parametrize("init, hint", [
    ("0.0", "hint: 'acc' is 'f32' because its initializer (line 2) is an untyped literal; give the "
            "literal the type it needs, e.g. `let acc = 0.0f64;`, or convert the value: f32(...)"),
    ("0.0f32", "hint: convert explicitly: f32(...)"),  # typed by the user: the plain hint
])
def test_the_hint_names_the_untyped_literal(init, hint):
    with pytest.raises(CompileError) as err:
        compile_(SRC.replace("INIT", init)).kern_ir()
    assert "d.kern:3:36: error: type mismatch in assignment to 'acc': expected 'f32', got 'f64'" in str(err.value)
    assert hint in str(err.value)


def test_the_typed_literal_computes_in_f64():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((9, 7)), rng.standard_normal((7, 11))
    c = np.zeros((9, 11))
    Module(compile_(SRC.replace("INIT", "0.0f64"))).dgemm(a, b, c)
    ref = np.zeros((9, 11))
    for k in range(7):
        ref = ref + a[:, k:k + 1] * b[k]
    np.testing.assert_array_equal(c, ref)
