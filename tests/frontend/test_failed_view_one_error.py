"""One mistake, one error (trial of issue 18, last item): a view whose layout fails (an entry past
MAX_LAYOUT_SIZE) lost its view kind, so every ``x.checked(...)``/``x.in_bounds(...)`` added
"'.checked(...)' is a method of 'view' buffers; 'x' is not one"."""

from __future__ import annotations

import pytest

import kernc
from kernc import CompileError

BIG = 4611686018427387904


def errors(src: str) -> list:
    with pytest.raises(CompileError) as err:
        kernc.compile(src, filename="v.kern")
    return [d.message for d in err.value.diagnostics]


def test_a_failed_view_layout_gives_one_error():
    msgs = errors(f"layout L(R) = (R, {BIG}):({BIG}, 1);\n"
                  "kernel k(x: f32[M, N] view as L(M), y: f32[n] write) over n {\n"
                  "    y = x.checked(0, 0) + x[0, 1];\n"
                  "    if x.in_bounds(1, 1) { x[1, 1] = 2.0; }\n"
                  "}\n")
    assert len(msgs) == 1 and "MAX_LAYOUT_SIZE" in msgs[0], msgs


def test_a_buffer_that_is_not_a_view_still_gets_the_method_error():
    msgs = errors("kernel k(x: f32[n] read, y: f32[n] write) over n { y = x.checked(0); }\n")
    assert any("is a method of 'view' buffers; 'x' is not one" in m for m in msgs), msgs
