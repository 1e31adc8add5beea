"""Issue 23's correctness leftovers in the language: a nested storage layout in a parameter is
refused with a message about nesting (it said "layout entries must be sums and products of integers
and size symbols", which they are), and a ``for`` loop with literal bounds whose variable is a view
coordinate is an ``index`` loop (``for k in 0..64 { a[i, k] }`` needed ``0index..64index``)."""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.support.errors import CompileError
from kernc.frontend import ast as A
from kernc.frontend import check, parse


def _errors(src: str) -> list:
    with pytest.raises(CompileError) as info:
        check(parse(src, "t.kern"))
    return info.value.diagnostics


@pytest.mark.parametrize("clause", ["view as (n, (4, 2)):(8, (1, 4))",
                                    "view as (n, 8):(8, (1, 4))",
                                    "read strided(0, 1) as (n, (4, 2)):(8, (1, 4))"])
def test_a_nested_storage_layout_is_one_error_about_nesting(clause):
    src = f"kernel k(x: f32[n, 8] {clause}, y: f32[n] write) over n {{ y = x[thread_id, 3]; }}\n"
    if "strided" in clause:
        src = src.replace("x[thread_id, 3]", "x[3]")
    diags = _errors(src)
    assert len(diags) == 1, [d.message for d in diags]
    d = diags[0]
    assert d.message == ("the storage layout of 'x' nests modes; a parameter's layout has one "
                         "shape entry and one stride per dim, not nested modes")
    col = src.index("(4, 2)") if "(4, 2)" in src else src.index("(1, 4)")
    assert (d.location.line, d.location.column) == (1, col + 1)
    assert "f32[n, 4, 2]" in d.hint


LOOP = """kernel rowsum(a: f32[n, 64] view, y: f32[n] write) over n {
    let s = 0.0;
    for k in 0..64 { s = s + a[thread_id, k]; }
    y = s;
}
kernel count(y: i32[n] write) over n {
    let c = 0;
    for k in 0..5 { c = c + k; }
    y = c;
}
"""


def test_a_literal_loop_whose_variable_is_a_coordinate_is_an_index_loop():
    m = kernc.compile(LOOP)
    a = np.arange(3 * 64, dtype=np.float32).reshape(3, 64) / 7
    y = np.zeros(3, np.float32)
    m.rowsum(a, y, device="cpu")
    want = np.zeros(3, np.float32)
    for k in range(64):  # the loop's order, in f32
        want = want + a[:, k]
    assert np.array_equal(y, want)
    c = np.zeros(4, np.int32)
    m.count(c, device="cpu")  # an i32 loop where the variable is no coordinate: unchanged
    assert c.tolist() == [10] * 4
    loops = [line for line in m.ir("kern").splitlines() if "scf.for" in line]
    assert len(loops) == 1 and ": i32" not in loops[0], loops  # rowsum's loop: over index
    program = check(parse(LOOP, "t.kern"))
    fors = [n for n in A.iter_nodes(program) if isinstance(n, A.For)]
    assert sorted(str(f.sym.ty) for f in fors) == ["i32", "index"]
