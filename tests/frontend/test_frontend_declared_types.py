"""A vector where a scalar type is declared or needed is a located type error (issue 18, item 8).

``let v: f32 = [1.0, 2.0];`` was accepted as an ``f32[2]`` (the declared type, always a scalar
type, was taken as the element type), and a vector of integer literals as a loop bound
(``for i in [0, 1]..3``) passed the checker and failed in lowering (an internal error).
"""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.support.errors import CompileError

HEAD = "kernel k(x: f32[n] read, v2: f32[n, 2] read, y: f32[n] write) over n {\n"


def _error(stmt: str):
    with pytest.raises(CompileError) as info:
        kernc.compile(HEAD + "    " + stmt + "\n}\n", filename="t.kern")
    (d,) = info.value.diagnostics
    return d


@pytest.mark.parametrize("stmt, col, declared, got", [
    ("let v: f32 = [1.0, 2.0]; y = v[0];", 18, "f32", "float literal[2]"),
    ("let v: f64 = [1.0]; y = f32(v[0]);", 18, "f64", "float literal[1]"),
    ("let v: i32 = [1, 2]; y = f32(v[0]);", 18, "i32", "integer literal[2]"),
    ("let v: bool = [true, false]; y = x;", 19, "bool", "bool[2]"),
    ("let v: f32 = v2; y = v[0];", 18, "f32", "f32[2]"),
    ("let v: f32 = [1.0, 2.0] * x; y = v[0];", 29, "f32", "f32[2]"),
])
def test_a_vector_initializer_of_a_scalar_declared_let_is_a_type_error(stmt, col, declared, got):
    d = _error(stmt)
    assert (d.location.line, d.location.column) == (2, col), d
    assert d.message == f"type mismatch in the initializer of 'v': expected '{declared}', got '{got}'"
    assert d.hint.startswith("a declared type is a scalar type")


@pytest.mark.parametrize("stmt", ["for i in [0, 1]..3 { y = x; }", "for i in 0..[3, 4] { y = x; }",
                                  "for i in [0, 1]..[3, 4] { y = x; }"])
def test_a_vector_loop_bound_is_a_type_error_not_an_internal_error(stmt):
    d = _error(stmt)
    assert (d.location.line, d.location.column) == (2, 9)
    assert d.message == "loop bounds must be integers, got 'integer literal[2]'"


def test_declared_scalars_and_undeclared_vectors_still_work():
    mod = kernc.compile(HEAD + "    let s: f32 = 1; let v = [x, 2.0]; let h = f64(v); let t: f64 = h[1];\n"
                               "    y = s + v[0] + f32(t);\n}\n")
    x = np.arange(3, dtype=np.float32)
    y = np.zeros(3, dtype=np.float32)
    mod.k(x, np.zeros((3, 2), np.float32), y)
    assert np.array_equal(y, x + 3.0)
