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


DEFAULTS = """kernel k(x: f32[m] read strided(off, 1) default amb, off: i32, amb: f32, t: f32[R, C] view default amb,
         y: f32[n] write, z: f32[R, C] view) over (i, j) in (R, C) {
    y = x;
    z[i, j] = t.checked(i - 1, j) + t.checked(i, j + 1);
}
kernel p(x: i32[m, 2] read pair strided(-1, 1) default d, d: i32, y: i32[n, 2] write) over n {
    y = x.first * 10 + x.second;
}
"""


@pytest.fixture(scope="module")
def defaults():
    return kernc.compile(DEFAULTS)


@pytest.mark.parametrize("amb", [-7.0, 0.5, float("inf")])
def test_a_scalar_parameter_is_the_default_of_strided_and_view_reads(defaults, amb):
    """Rodinia hotspot's ambient temperature: ``default amb`` of a strided read and of a view's
    checked reads gives the parameter's value out of bounds (only literals were accepted)."""
    R, C = 3, 5
    x = np.arange(1, 7, dtype=np.float32)
    t = np.arange(R * C, dtype=np.float32).reshape(R, C)
    y = np.zeros(R * C, np.float32)
    z = np.zeros((R, C), np.float32)
    defaults.k(x, 2, amb, t, y, z, device="cpu")
    a = np.float32(amb)
    want_y = np.array([x[2 + q] if 2 + q < len(x) else a for q in range(R * C)], np.float32)
    pad = np.full((R + 1, C + 1), a, np.float32)  # t with a border of amb above and right
    pad[1:, :C] = t
    want_z = pad[:R, :C] + pad[1:, 1:]
    assert np.array_equal(y, want_y) and np.array_equal(z, want_z)


def test_a_scalar_parameter_is_the_default_of_a_pair_strided_read(defaults):
    x = np.arange(1, 9, dtype=np.int32).reshape(4, 2)
    y = np.zeros((6, 2), np.int32)
    defaults.p(x, -3, y, device="cpu")
    ext = np.concatenate([np.full((1, 2), -3), x, np.full((2, 2), -3)])  # element -1 .. 5
    assert np.array_equal(y, ext[:6] * 10 + ext[1:7])


def test_a_parameter_default_compiles_to_ptx(defaults):
    from kernc.backend import toolkit

    ptx = defaults.ptx
    assert ".entry k(" in ptx and ".entry p(" in ptx
    if toolkit.ptxas_path() is not None:
        result = toolkit.run_ptxas(ptx, arch="sm_90")
        assert result.ok, result.log[-2000:]


def test_a_literal_loop_whose_variable_indexes_a_1d_view_is_an_index_loop():
    """``y[q]`` of a 1-D view is a coordinate too (it was an i32 loop: "a coordinate must be an
    'index'"), and so is the coordinate of ``x.atomic(..)``."""
    src = """kernel k(x: f32[n] read, y: f32[m] view) over n {
    if thread_id == 0 { for q in 0..4 { y[q] = x; } }
}
kernel h(x: u32[n] read, y: u32[m] view) over n {
    for q in 0..2 { y.atomic(q) += x; }
}
"""
    m = kernc.compile(src)
    y = np.zeros(6, np.float32)
    m.k(np.array([2.5, 1.0], np.float32), y, device="cpu")
    assert y.tolist() == [2.5] * 4 + [0.0, 0.0]
    z = np.zeros(3, np.uint32)
    m.h(np.array([1, 2, 3], np.uint32), z, device="cpu")
    assert z.tolist() == [6, 6, 0]
