"""Checker diagnostics: exact ``file:line:col: error:`` prefixes and message contents."""

from __future__ import annotations

import pytest

from kernc.support.errors import CompileError, Diagnostic
from kernc.frontend import check, parse

from frontend_helpers import error_lines

HEAD = ("kernel k(a: f32, b: i32, u: u32, x: f32[n] read, v: f32[n, 3] read, "
        "y: f32[n] write, w: f32[n, 3] add) over n {\n")


def in_body(stmt: str) -> str:
    return HEAD + "    " + stmt + "\n}\n"


# (source, expected "file:line:col: error: " prefix, message substring)
BODY_CASES = [
    ("let z = a + b;", "t.kern:2:15: error: ", "cannot mix 'f32' and 'i32' in '+'"),
    ("let z = b + u;", "t.kern:2:15: error: ", "cannot mix signed 'i32' and unsigned 'u32'"),
    ("let z = xs;", "t.kern:2:13: error: ", "unknown name 'xs'; did you mean 'x'?"),
    ("let z = thread_idx;", "t.kern:2:13: error: ", "did you mean 'thread_id'?"),
    ("let z = a; let z = a;", "t.kern:2:20: error: ", "redeclaration of 'z'"),
    ("x = a;", "t.kern:2:5: error: ", "cannot assign to 'x': it is a read buffer"),
    ("let q = y;", "t.kern:2:13: error: ", "cannot read output 'y' (declared 'write')"),
    ("a = 1.0;", "t.kern:2:5: error: ", "cannot assign to parameter 'a'"),
    ("let z = sqrt(b);", "t.kern:2:18: error: ", "'sqrt' needs a float argument, got 'i32'"),
    ("let z = min(a);", "t.kern:2:13: error: ", "'min' takes 2 arguments, got 1"),
    ("let z = fma(a, a);", "t.kern:2:13: error: ", "'fma' takes 3 arguments, got 2"),
    ("let z = v[3];", "t.kern:2:15: error: ", "component index 3 is out of range for a 3-component value"),
    ("w[5] = a;", "t.kern:2:7: error: ", "component index 5 is out of range"),
    ("y = b;", "t.kern:2:9: error: ", "expected 'f32', got 'i32'"),
    ("let z: i32 = 1.5;", "t.kern:2:18: error: ", "a float literal cannot be 'i32'"),
    ("if a { }", "t.kern:2:8: error: ", "condition must be 'bool', got 'f32'"),
    ("let z = sqr(a);", "t.kern:2:13: error: ", "unknown function 'sqr'; did you mean 'sqrt'?"),
    ("let z: u8 = 300;", "t.kern:2:17: error: ", "integer literal 300 is out of range for 'u8'"),
    ("let z: u32 = -1;", "t.kern:2:18: error: ", "integer literal -1 is out of range for 'u32'"),
    ("y *= 2.0;", "t.kern:2:7: error: ", "operator '*=' cannot update output 'y'"),
    ("let z = v + [1.0, 2.0];", "t.kern:2:15: error: ", "vector lengths differ in '+': 3 and 2"),
    ("let z = x.first;", "t.kern:2:15: error: ", "'.first' needs a buffer read with 'pair'; 'x' is read 'sequential'"),
    ("for i in 0..a { }", "t.kern:2:9: error: ", "loop bounds must be integers, got 'f32'"),
    ("for i in 0..3 { i = 2; }", "t.kern:2:21: error: ", "cannot assign to loop variable 'i'"),
    ("let z = !b;", "t.kern:2:13: error: ", "'!' needs a bool operand, got 'i32'"),
    ("let f32 = 1;", "t.kern:2:9: error: ", "'f32' is a type name"),
    ("let z = v[0:4];", "t.kern:2:13: error: ", "slice [0:4] is out of range"),
    ("let z = b + 1.5;", "t.kern:2:15: error: ", "a float literal cannot be used as 'i32'"),
    ("let z = 1; z = 2.0;", "t.kern:2:20: error: ", "a float literal cannot be 'i32'"),
    ("let z = x[0];", "t.kern:2:13: error: ", "cannot index 'x' of scalar type 'f32'"),
    ("let z = a & a;", "t.kern:2:15: error: ", "'&' needs integer or bool operands"),
    ("let z = b + i64(b);", "t.kern:2:15: error: ", "mismatched integer types 'i32' and 'i64'"),
    ("let z = f64(a) * a;", "t.kern:2:20: error: ", "mismatched float types 'f64' and 'f32'"),
    ("let z = true + true;", "t.kern:2:18: error: ", "arithmetic '+' on bool values"),
    ("let z = select(a, a, a);", "t.kern:2:20: error: ", "the condition of 'select' must be bool"),
    ("let z = f32;", "t.kern:2:13: error: ", "'f32' is a type, not a value"),
    ("let z = u32(a, a);", "t.kern:2:13: error: ", "the conversion 'u32(...)' takes 1 argument, got 2"),
    ("let z = a < true;", "t.kern:2:15: error: ", "cannot mix 'f32' and 'bool' in '<'"),
]


@pytest.mark.parametrize("stmt, prefix, message", BODY_CASES)
def test_body_errors(stmt, prefix, message):
    lines = error_lines(in_body(stmt))
    assert len(lines) == 1, lines
    assert lines[0].startswith(prefix), lines[0]
    assert message in lines[0], lines[0]


KERNEL_CASES = [
    ("@block(100) kernel k(x: f32[n] read) over n { }", "t.kern:1:8: error: ",
     "block size must be a power of two between 32 and 1024, got 100"),
    ("@block(2048) kernel k(x: f32[n] read) over n { }", "t.kern:1:8: error: ",
     "block size must be a power of two between 32 and 1024, got 2048"),
    ("@block(16) kernel k(x: f32[n] read) over n { }", "t.kern:1:8: error: ", "got 16"),
    ("@blok(128) kernel k(x: f32[n] read) over n { }", "t.kern:1:2: error: ",
     "unknown kernel attribute '@blok'; did you mean 'block'?"),
    ("@block kernel k(x: f32[n] read) over n { }", "t.kern:1:2: error: ",
     "@block takes one integer literal"),
    ("kernel k(x: f32[n] read) over x { }", "t.kern:1:31: error: ", "'x' is a buffer"),
    ("kernel k(a: f32, x: f32[n] read) over a { }", "t.kern:1:39: error: ",
     "the problem size 'a' must be an integer, not 'f32'"),
    ("kernel k(x: f32[n] read, x: f32[n] read) over n { }", "t.kern:1:26: error: ",
     "duplicate parameter 'x'"),
    ("kernel k(x: f33[n] read) over n { }", "t.kern:1:13: error: ",
     "unknown type 'f33'; did you mean 'f32'?"),
    ("kernel k(x: f32[n] write shared(i), i: u32[n] read) over n { }", "t.kern:1:26: error: ",
     "accessor 'shared' is only for 'read' buffers, not 'write'"),
    ("kernel k(x: f32[n] add unique) over n { }", "t.kern:1:24: error: ",
     "accessor 'unique' is only for 'read' buffers, not 'add'"),
    ("kernel k(x: f32[n] read shared_sum(i), i: u32[n] read) over n { }", "t.kern:1:25: error: ",
     "accessor 'shared_sum' needs 'add' access, not 'read'"),
    ("kernel k(x: f32[n] read strid(1, 2)) over n { }", "t.kern:1:25: error: ",
     "unknown accessor 'strid'; did you mean 'strided'?"),
    ("kernel k(x: f32[n] read strided(1)) over n { }", "t.kern:1:25: error: ",
     "accessor 'strided' takes 2 arguments, got 1"),
    ("kernel k(x: f32[n] read strided(offs, 1), off: index) over n { }", "t.kern:1:33: error: ",
     "unknown name 'offs' in accessor arguments; did you mean 'off'?"),
    ("kernel k(x: f32[n] read strided(o, 2), o: f32) over n { }", "t.kern:1:33: error: ",
     "strided arguments must be integers, got 'f32'"),
    ("kernel k(x: f32[n] read indexed(j), j: f32[n] read) over n { }", "t.kern:1:33: error: ",
     "the index buffer 'j' of indexed(j) must be a 1-D u8/u16/u32/i8/i16/i32 buffer read sequentially"),
    ("kernel k(x: f32[n] read indexed(j), j: u32[n] write) over n { }", "t.kern:1:33: error: ",
     "must be a 1-D u8/u16/u32/i8/i16/i32 buffer"),
    ("kernel k(x: f32[n] read indexed(j)) over n { }", "t.kern:1:33: error: ",
     "unknown index buffer 'j'"),
    ("kernel k(x: f32[n, m] read) over n { }", "t.kern:1:20: error: ",
     "the last dim of a multi-component buffer must be an integer literal"),
    ("kernel k(x: f32[n, 3, 3] read) over n { }", "t.kern:1:10: error: ", "has 3 dims"),
    ("kernel k(x: f32[n] read as (m):(1)) over n { }", "t.kern:1:28: error: ",
     "layout (m):(1) does not match the dims [n] of 'x'"),
    ("kernel k(x: f32[n, 3] read as sao) over n { }", "t.kern:1:31: error: ",
     "unknown layout 'sao'; did you mean 'soa'?"),
    ("layout foo(A) = (A, 3):(3, 1);\nkernel k(x: f32[n, 3] read as foo(n, 3)) over n { }",
     "t.kern:2:31: error: ", "layout 'foo' takes 1 argument, got 2"),
    ("layout foo = (A, 3):(3, 1);\nkernel k(x: f32[n, 3] read) over n { }", "t.kern:1:15: error: ",
     "unknown name 'A' in layout 'foo'"),
    ("kernel k(x: f32[n] view strided(0, 1)) over n { }", "t.kern:1:25: error: ",
     "a 'view' buffer takes no accessor pattern ('strided')"),
    ("kernel k(x: f32[n] read) over (i, j) in (n) { }", "t.kern:1:32: error: ",
     "'over' names 2 coordinates but gives 1 extent"),
    ("kernel k(m: index, x: f32[m] read) over m { }", "t.kern:1:27: error: ",
     "'m' is a scalar parameter, not a size symbol"),
    ("kernel k(x: bool[n] read) over n { }", "t.kern:1:13: error: ",
     "buffers of 'bool' are not supported"),
    ("kernel k(x: f32[n] read default 0.0) over n { }", "t.kern:1:33: error: ",
     "'default v' needs a strided read"),
    ("kernel k(x: f32[n] read) over n { }\nkernel k(x: f32[n] read) over n { }",
     "t.kern:2:8: error: ", "redefinition of kernel 'k'"),
    ("kernel k(x: f32[n, 1] read) over n { }", "t.kern:1:20: error: ",
     "a multi-component element needs at least 2 components"),
]


@pytest.mark.parametrize("src, prefix, message", KERNEL_CASES)
def test_kernel_errors(src, prefix, message):
    lines = error_lines(src)
    assert len(lines) == 1, lines
    assert lines[0].startswith(prefix), lines[0]
    assert message in lines[0], lines[0]


def test_several_errors_are_reported_together():
    src = ("kernel k(x: f32[n] read) over n {\n"
           "    let a = x + 1u32;\n"
           "    let b = x * true;\n"
           "    out = 3;\n"
           "}\n")
    lines = error_lines(src)
    assert lines == [
        "t.kern:2:15: error: cannot mix 'f32' and 'u32' in '+': no implicit int/float conversion",
        "t.kern:3:15: error: cannot mix 'f32' and 'bool' in '*'",
        "t.kern:4:5: error: unknown name 'out'",
    ]


def test_diagnostics_are_complete_objects():
    src = in_body("x = a;")
    with pytest.raises(CompileError) as info:
        check(parse(src, "full.kern"))
    (d,) = info.value.diagnostics
    assert isinstance(d, Diagnostic)
    assert (d.location.filename, d.location.line, d.location.column) == ("full.kern", 2, 5)
    assert d.source == src
    assert d.hint == "declare it `write` or `add` to produce output"
    assert d.notes and d.notes[0].severity == "note"
    assert d.notes[0].location.column == HEAD.index("x: f32") + 1
    text = d.format()
    assert "    x = a;\n    ^" in text


def test_hint_for_signed_unsigned_mix():
    with pytest.raises(CompileError) as info:
        check(parse(in_body("let z = b < u;"), "h.kern"))
    (d,) = info.value.diagnostics
    assert d.hint == "cast one operand, e.g. u32(...) or i32(...)"


@pytest.mark.parametrize("src", [
    "", "kernel", "kernel k(", "kernel k() over n {", "@", "layout", "kernel k() over n { let x = ; }",
    "kernel k(x: f32[] read) over n { }", "kernel k(x: f32[n] read as ()) over n { }",
    "kernel k() over n { y[1][2] = 3; }", "kernel k() over n { let x = [; }",
    "\x00\x01", "kernel k() over n { let x = 1..2; }", "kernel k() over n { for in 0..1 {} }",
])
def test_garbage_never_raises_anything_but_compile_error(src):
    try:
        check(parse(src, "g.kern"))
    except CompileError as e:
        assert e.diagnostics and all(d.location is not None for d in e.diagnostics)


def test_mutated_examples_only_raise_compile_errors():
    """A small deterministic fuzz: random edits of the examples never crash the frontend."""
    import random

    from kernc.support.errors import InternalCompilerError  # noqa: F401  (must not be raised either)
    from kernc.frontend import compile_to_kern
    from kernc.support.mlir import ir

    from frontend_helpers import EXAMPLES

    sources = [(EXAMPLES / f"{n}.kern").read_text() for n in ("saxpy", "gather_scatter", "particles")]
    pieces = ["+", "-", "*", "//", "%%", "(", ")", "[", "]", "{", "}", ";", ",", "..", "let ",
              "if ", "return;", "x", "1", "1.5", "u32", "f32(", "=", "+=", " read", " as soa",
              "true", "v[0]", ".first", "strided(off, st)", "indexed(idx)", "@block(64)"]
    rng = random.Random(1234)
    ctx = ir.Context()
    outcomes = {"ok": 0, "error": 0}
    for _ in range(300):
        s = rng.choice(sources)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(s))
            if rng.random() < 0.5:
                s = s[:i] + s[i + rng.randint(1, 8):]
            else:
                s = s[:i] + rng.choice(pieces) + s[i:]
        try:
            module = compile_to_kern(s, "fuzz.kern", ctx)
            assert module.operation.verify()
            outcomes["ok"] += 1
        except CompileError as e:
            assert all(d.location is not None and d.location.filename == "fuzz.kern"
                       for d in e.diagnostics)
            outcomes["error"] += 1
    assert outcomes["ok"] > 10 and outcomes["error"] > 100


@pytest.mark.parametrize("layout, expected", [
    ("layout L = coalesce((4):(1, 2));", "t.kern:1:21: error: layout has 1 shape entries but 2 strides"),
    ("layout L(a) = coalesce((a*2):(1) o (5,3):(3,1));",
     "t.kern:1:24: error: 'coalesce' needs static layouts, not a functional layout"),
])
def test_layout_literal_errors_point_at_the_opening_parenthesis(layout, expected):
    src = layout + "\nkernel k(x: f32[n] read, y: f32[n] write) over n { y = x; }\n"
    assert error_lines(src)[0] == expected


@pytest.mark.parametrize("lit, expected", [
    # an integer token with a float suffix too big for a Python float was an ICE (OverflowError)
    ("1" + "0" * 400 + "f32", "out of range for 'f32'"),
    # huge decimal exponents made the checker build 10**99999999 (it hung)
    ("1e99999999", "out of range for 'f32'"),
    ("-1e99999999", "out of range for 'f32'"),
    ("1e-99999999", None),
    ("-1.5e-99999999f64", None),
    ("0.0e99999999", None),
])
def test_extreme_number_literals_are_checked_quickly(lit, expected):
    import signal

    def too_slow(signum, frame):
        raise TimeoutError(f"checking {lit[:30]} took more than 10 s")

    src = f"kernel k(x: f32[n] read, y: f32[n] write) over n {{ y = x + f32({lit}); }}\n"
    old = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(10)
    try:
        if expected is None:
            check(parse(src, "t.kern"))
        else:
            assert expected in error_lines(src)[0]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_extreme_literals_round_like_their_values():
    from fractions import Fraction

    from kernc.frontend import types as T
    from kernc.frontend.expressions import literal_fraction

    prog = check(parse("kernel k(x: f64[n] read, y: f64[n] write) over n {\n"
                       "    y = x + 1e-99999999 - 2.5e-99999999 + 0.0e99999999;\n}\n", "t.kern"))
    lits = []

    def collect(e):
        from kernc.frontend import ast as A
        if isinstance(e, A.FloatLit):
            lits.append(e)
        for name in ("left", "right", "operand"):
            if getattr(e, name, None) is not None:
                collect(getattr(e, name))

    collect(prog.kernels[0].body.stmts[0].value)
    values = sorted(literal_fraction(lit) for lit in lits)
    assert values[0] == 0 and values[1] > 0  # 0.0e99999999 is zero; the others are tiny, not zero
    assert all(T.exact_float(v, T.F64) == 0.0 for v in values)  # and all round to zero in f64
    assert all(abs(v) < Fraction(1, 10 ** 900) for v in values)


def test_assigning_a_whole_view_says_to_write_its_elements():
    """It said "it is a read buffer" and hinted to declare it `write` (views are written)."""
    src = "kernel k(x: f32[M, N] view) over (i, j) in (M, N) {\n    x = 1.0;\n}\n"
    with pytest.raises(CompileError) as info:
        check(parse(src, "t.kern"))
    (d,) = info.value.diagnostics
    assert d.format().splitlines()[0] == ("t.kern:2:5: error: cannot assign to the view 'x' as a whole: "
                                         "a view is written element by element")
    assert d.hint == "write its elements, e.g. x[i, j] = ..."


@pytest.mark.parametrize("over", ["(i, j) in (M)", "(i, j, k, l, m, o, p, q, r) in (M, N, 1, 1, 1, 1, 1, 1, 1)"])
def test_a_bad_over_clause_still_declares_its_coordinates(over):
    """One mistake in ``over`` also gave an "unknown name" error for every use of a coordinate."""
    src = f"kernel k(a: f32[M, N] view) over {over} {{\n    a[i, j] = 1.0;\n}}\n"
    lines = error_lines(src)
    assert len(lines) == 1 and "'over'" in lines[0], lines


@pytest.mark.parametrize("over, col", [("(i, j, j) in (M, N, 2)", 41), ("(i, thread_id) in (M, N)", 38)])
def test_a_bad_coordinate_is_pointed_at(over, col):
    """The caret was on the first coordinate whichever one was wrong."""
    src = f"kernel k(a: f32[M, N] view) over {over} {{\n    a[i, 0] = 1.0;\n}}\n"
    lines = error_lines(src)
    assert len(lines) == 1 and lines[0].startswith(f"t.kern:1:{col}: error: "), lines


@pytest.mark.parametrize("stmt", ["b[j, i] = a[i, j];", "b.checked(j, i) = a[i, j];"])
def test_a_view_whose_declaration_failed_reports_no_more_errors(stmt):
    """The view's layout names a scalar where a size symbol goes: that is the one error; writes to
    the view said again that it "is not a view" (it is declared one)."""
    src = ("layout padded(R, C, LD) = (R, C):(LD, 1);\n"
           "kernel k(a: f32[R, C] view, b: f32[C, R] view as padded(C, R, LDB), LDB: index)\n"
           "        over (i, j) in (R, C) {\n"
           f"    {stmt}\n"
           "}\n")
    assert error_lines(src) == ["t.kern:2:63: error: 'LDB' is a scalar parameter, not a size symbol"]
