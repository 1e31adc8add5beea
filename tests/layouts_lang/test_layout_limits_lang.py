"""Checking layout definitions costs bounded work (issue 18, item 3).

``layout b_i = blocked_product(b_{i-1}, b_{i-1});`` for i = 1..10 took 18 s to check, 12 lines
more than 100 s: each reference to a definition evaluated it again (2**i evaluations of ``b_0``)
and the layouts doubled their modes and squared their size each line. Now each definition is
evaluated once per set of arguments, and a layout past the limits (``MAX_LAYOUT_SIZE`` ...) is an
error at the operation that built it. The work is counted (algebra calls, evaluated indices), never
timed.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernc.dialect.layout_eval as la
import kernc.layout as KL
from kernc import frontend
from kernc.support.errors import CompileError

KERNEL = "kernel k(x: f32[n] read, y: f32[n] write) over n { y = x; }\n"
#: (index, mode) evaluations a whole check below may do: a few bounded verifications.
WORK_CAP = 8 * la.VERIFY_WORK_LIMIT


@pytest.fixture
def counted(monkeypatch):
    """Counts calls of each algebra operation the checker calls (``kernc.layout.<op>``) and the
    (index, mode) pairs evaluated; more than :data:`WORK_CAP` pairs fails at once (the old code
    would take minutes)."""
    calls: dict = {}
    work = {"pairs": 0}
    for name in ("blocked_product", "raked_product", "logical_product", "composition"):
        real = getattr(KL, name)

        def spy(*args, _real=real, _name=name):
            calls[_name] = calls.get(_name, 0) + 1
            return _real(*args)

        monkeypatch.setattr(KL, name, spy)
    real_eval = la._eval_flat

    def eval_spy(leaves, x):
        work["pairs"] += int(np.size(x)) * max(1, len(leaves))
        assert work["pairs"] <= WORK_CAP, "unbounded layout evaluation"
        return real_eval(leaves, x)

    monkeypatch.setattr(la, "_eval_flat", eval_spy)
    return calls, work


def _check(src: str):
    return frontend.check(frontend.parse(src, "t.kern"))


def _chain(op: str, lines: int, first: str = "(2,2):(1,2)") -> str:
    return (f"layout b0 = {first};\n"
            + "".join(f"layout b{i} = {op}(b{i - 1}, b{i - 1});\n" for i in range(1, lines + 1)))


def test_the_issue_repro_is_one_located_error_with_linear_work(counted):
    calls, work = counted
    with pytest.raises(CompileError) as info:
        _check(_chain("blocked_product", 12) + KERNEL)
    (d,) = info.value.diagnostics  # b6..b12 refer to the failed b5: reported once
    assert (d.location.line, d.location.column) == (6, 13)
    assert d.message.startswith("'blocked_product' gives a layout past the limits: ")
    assert "2**48 (MAX_LAYOUT_SIZE)" in d.message
    assert calls["blocked_product"] == 5  # b1..b5 once each (2**13 - 2 calls before)


def test_a_chain_under_the_limit_evaluates_each_definition_once(counted):
    calls, work = counted
    program = _check(_chain("blocked_product", 4) + KERNEL)
    assert calls["blocked_product"] == 4
    b4 = [item for item in program.items if getattr(item, "name", None) == "b4"][0]
    assert b4.value.size() == 2 ** 32 and len(b4.value.leaves()) == 32


@pytest.mark.parametrize("op, first, line, limit", [
    ("logical_product", "(1,1):(0,0)", 8, "more than 128 (MAX_LAYOUT_MODES)"),  # size 1, modes double
    ("raked_product", "(2,2):(1,2)", 6, "(MAX_LAYOUT_SIZE)"),
    ("zipped_product", "(2,2):(1,2)", 6, "(MAX_LAYOUT_SIZE)"),
])
def test_other_products_of_products_are_located_errors(counted, op, first, line, limit):
    with pytest.raises(CompileError) as info:
        _check(_chain(op, 14, first) + KERNEL)
    (d,) = info.value.diagnostics
    assert d.location.line == line and f"'{op}' gives a layout past the limits" in d.message
    assert limit in d.message


def test_a_parameterised_chain_is_evaluated_once_per_argument(counted):
    calls, _ = counted
    src = ("layout b0(n) = (n,2):(1,n);\n"
           + "".join(f"layout b{i}(n) = blocked_product(b{i - 1}(n), b{i - 1}(n));\n" for i in range(1, 14))
           + "kernel k(x: f32[n] view as b13(4), y: f32[n] write) over n { y = 0.0; }\n")
    with pytest.raises(CompileError) as info:
        _check(src)
    (d,) = info.value.diagnostics
    assert d.location.line == 6 and "past the limits" in d.message
    assert [n.location.line for n in d.notes] == [15]  # "layout 'b13' is used here"
    # each definition once with its symbolic parameter (deferred: not static) and b1..b5 once with 4
    assert calls["blocked_product"] <= 13 + 5


def test_a_long_composition_chain_stays_linear(counted):
    calls, _ = counted
    src = "layout b0 = (2,2):(1,2);\n" + "".join(f"layout b{i} = b{i - 1} o b{i - 1};\n" for i in range(1, 40))
    program = _check(src + KERNEL)
    assert calls["composition"] == 39
    assert str(program.items[39].value) == "(2,2):(1,2)"


def test_a_huge_swizzled_view_is_checked_without_enumerating_its_offsets(counted):
    """A static ``swizzle<3,3,3> o (2**20, 2**20):(2**20, 1)`` view: the swizzle's cosize listed
    all 2**40 offsets (a hang); it is now bounded from the largest offset."""
    _, work = counted
    src = ("layout s = swizzle<3,3,3> o (1048576, 1048576):(1048576, 1);\n"
           "kernel k(x: f16[1048576, 1048576] view as s, y: f32[n] write) over n { y = 0.0; }\n")
    program = _check(src)
    assert work["pairs"] == 0
    (kern,) = [item for item in program.items if getattr(item, "name", None) == "k"]
    assert kern is not None


@pytest.mark.parametrize("src, where, text", [
    ("layout s = swizzle<64, 64, 64> o (8, 64):(64, 1);\n", (1, 12), "MAX_SWIZZLE_BITS"),
    ("layout s = (1125899906842624, 4):(1, 1125899906842624);\n", (1, 12), "larger than 2**48"),
    ("layout s = (16777216, 16777216, 2):(1, 16777216, 1);\n", (1, 12), "has size 562949953421312"),
    ("layout a = (16777216, 16777216):(1, 16777216);\nlayout s = logical_product(a, (4):(1));\n", (2, 12),
     "'logical_product' gives a layout past the limits"),
])
def test_layouts_past_the_limits_are_located_errors(src, where, text):
    with pytest.raises(CompileError) as info:
        _check(src + KERNEL)
    (d,) = info.value.diagnostics
    assert (d.location.line, d.location.column) == where and text in d.message, d.message


def test_a_chain_of_layouts_that_doubles_per_line_stops_at_the_chain_limit():
    """``c_i(n) = c_{i-1}(n) o c_{i-1}(n)`` does not fold (a size symbol): each line doubled the
    chain, 2**20 layers after 20 lines, each applied to the coordinate in the kernel. Now a chain
    past MAX_CHAIN_LAYERS (64) is one located error, at the line that builds it."""
    from kernc.frontend.layouts import MAX_CHAIN_LAYERS

    lines = 20
    src = ("layout c0(n) = (n):(1);\n"
           + "".join(f"layout c{i}(n) = c{i - 1}(n) o c{i - 1}(n);\n" for i in range(1, lines + 1))
           + f"kernel k(x: f32[n] view, y: f32[n] write) over n {{ y = x[c{lines}(n)(index(0))]; }}\n")
    with pytest.raises(CompileError) as info:
        _check(src)
    (d,) = info.value.diagnostics
    assert MAX_CHAIN_LAYERS == 64
    assert (d.location.line, d.location.column) == (8, 16)  # c7 = c6 o c6: 128 layers
    assert d.message == "this chain of layouts has 128 layers, more than 64 (each is applied to every coordinate)"


def test_a_short_chain_of_layouts_still_folds_into_the_kernel():
    import kernc

    src = ("layout c0(n) = (n):(1);\nlayout c1(n) = c0(n) o c0(n);\nlayout c2(n) = c1(n) o c1(n);\n"
           "kernel k(x: f32[n] view, y: f32[n] write) over n { y = x[c2(n)(index(thread_id))]; }\n")
    mod = kernc.compile(src)
    x = np.arange(5, dtype=np.float32)
    y = np.zeros(5, dtype=np.float32)
    mod.k(x, y)
    assert np.array_equal(y, x)
