"""Regression (new-user trial): indexing an assigned non-view buffer hints at `view`, as a read does."""

from __future__ import annotations

import pytest

import kernc


def test_indexed_output_hints_at_view():
    with pytest.raises(kernc.CompileError) as e:
        kernc.compile("kernel h(data: u8[n] read, hist: u32[256] add) over n { hist[index(data)] += 1; }")
    text = str(e.value)
    assert "cannot index 'hist' of scalar type 'u32'" in text
    assert "needs a 'view' buffer" in text and "hist.atomic(i) += v" in text


def test_indexed_local_has_no_view_hint():
    with pytest.raises(kernc.CompileError) as e:
        kernc.compile("kernel h(x: f32[n] read) over n { let a = 1.0; a[0] = 2.0; }")
    assert "cannot index 'a'" in str(e.value) and "view" not in str(e.value)


def test_unknown_function_lists_the_builtins():
    with pytest.raises(kernc.CompileError) as e:
        kernc.compile("kernel h(x: f32[n] read, y: f32[n] write) over n { y = pow(x, 2.0); }")
    text = str(e.value)
    assert "unknown function 'pow'" in text and "the builtins: abs, ceil, cos, exp" in text
    assert "exp(p * log(x))" in text
