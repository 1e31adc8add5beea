"""Parser tests: AST shapes, precedence, lexing corner cases, syntax-error diagnostics."""

from __future__ import annotations

import pytest

from kernc.support.errors import CompileError
from kernc.frontend import ast as A
from kernc.frontend import dump_ast, parse

from frontend_helpers import EXAMPLES


def body(src_stmts: str):
    prog = parse("kernel k(a: f32, x: f32[n] read) over n {\n" + src_stmts + "\n}\n", "p.kern")
    return prog.kernels[0].body.stmts


@pytest.mark.parametrize("name", ["saxpy", "gather_scatter", "particles", "edge_update", "laplacian_1d"])
def test_examples_parse(name):
    path = EXAMPLES / f"{name}.kern"
    prog = parse(path.read_text(), str(path))
    assert [k.name for k in prog.kernels] == [name]
    assert prog.filename == str(path)


def test_saxpy_ast():
    prog = parse((EXAMPLES / "saxpy.kern").read_text(), "saxpy.kern")
    k = prog.kernels[0]
    assert [type(p).__name__ for p in k.params] == ["ScalarParam", "BufferParam", "BufferParam"]
    a, x, y = k.params
    assert (a.name, a.type_name) == ("a", "f32")
    assert (x.name, x.elem_name, x.access, [d.id for d in x.dims]) == ("x", "f32", "read", ["n"])
    assert y.access == "add"
    assert k.over.names == ["n"]
    (stmt,) = k.body.stmts
    assert isinstance(stmt, A.Assign) and stmt.op == "+="
    assert isinstance(stmt.value, A.Binary) and stmt.value.op == "*"
    assert (stmt.loc.line, stmt.loc.column) == (3, 7)


def test_precedence_rust_like():
    (s,) = body("let z = 1 + 2 * 3 << 1 & 7 == 2 || false && true;")
    e = s.value
    assert e.op == "||"
    assert e.right.op == "&&"
    cmp = e.left
    assert cmp.op == "=="
    band = cmp.left
    assert band.op == "&"
    shift = band.left
    assert shift.op == "<<"
    assert shift.left.op == "+" and shift.left.right.op == "*"


def _sexpr(e) -> str:
    """The expression as a fully parenthesised string (names and literals by their text)."""
    if isinstance(e, A.Binary):
        return f"({_sexpr(e.left)} {e.op} {_sexpr(e.right)})"
    if isinstance(e, A.Unary):
        return f"({e.op}{_sexpr(e.operand)})"
    return getattr(e, "id", None) or getattr(e, "text", None) or str(getattr(e, "value", e))


@pytest.mark.parametrize("src,expected", [
    # every pair of adjacent levels, both orders
    ("a || b && c", "(a || (b && c))"), ("a && b || c", "((a && b) || c)"),
    ("a && b == c", "(a && (b == c))"), ("a == b && c", "((a == b) && c)"),
    ("a == b | c", "(a == (b | c))"), ("a | b == c", "((a | b) == c)"),
    ("a | b ^ c", "(a | (b ^ c))"), ("a ^ b | c", "((a ^ b) | c)"),
    ("a ^ b & c", "(a ^ (b & c))"), ("a & b ^ c", "((a & b) ^ c)"),
    ("a & b << c", "(a & (b << c))"), ("a << b & c", "((a << b) & c)"),
    ("a << b + c", "(a << (b + c))"), ("a + b >> c", "((a + b) >> c)"),
    ("a + b * c", "(a + (b * c))"), ("a * b - c", "((a * b) - c)"),
    # left associativity within a level
    ("a - b - c", "((a - b) - c)"), ("a / b * c % d // e", "((((a / b) * c) % d) // e)"),
    ("a << b >> c", "((a << b) >> c)"), ("a || b || c", "((a || b) || c)"),
    # unary binds tighter than every binary operator; parentheses win
    ("-a * b", "((-a) * b)"), ("a - -b", "(a - (-b))"), ("(a + b) * c", "((a + b) * c)"),
    ("(a < b) == (c < d)", "((a < b) == (c < d))"),
    ("a * b + c * d < e << f | g && h || i",
     "(((((a * b) + (c * d)) < ((e << f) | g)) && h) || i)"),
])
def test_binary_operator_grouping(src, expected):
    (s,) = body(f"let z = {src};")
    assert _sexpr(s.value) == expected


@pytest.mark.parametrize("src,col", [("a < b < c", 15), ("a == b != c", 16), ("a + 1 < b >= c * 2", 19)])
def test_comparisons_do_not_chain(src, col):
    with pytest.raises(CompileError) as err:
        body(f"let z = {src};")
    d = err.value.diagnostics[0]
    assert "comparisons do not chain" in d.message and "&&" in d.hint
    assert (d.location.line, d.location.column) == (2, col)


def test_binary_location_is_the_operator():
    (s,) = body("let z = a + b * c;")
    assert (s.value.loc.line, s.value.loc.column) == (2, 11)
    assert (s.value.right.loc.line, s.value.right.loc.column) == (2, 15)


def test_floor_division_vs_line_comment():
    stmts = body("let q = 7 // 2; // a comment\n    let r = 7 %% 2; // another // one")
    assert [s.value.op for s in stmts] == ["//", "%%"]


def test_block_comment_after_operand():
    (s,) = body("let q = a /* inline */ * 2.0;")
    assert s.value.op == "*"


def test_literals_and_suffixes():
    (s,) = body("let v = [1.0f64, 2u32, 0x1F, 0b101, 1_000, 3f32, 1e3, -4, -2.5];")
    elems = s.value.elems
    assert [type(e).__name__ for e in elems] == [
        "FloatLit", "IntLit", "IntLit", "IntLit", "IntLit", "FloatLit", "FloatLit", "IntLit", "FloatLit"]
    assert [getattr(e, "suffix") for e in elems] == ["f64", "u32", None, None, None, "f32", None, None, None]
    assert [e.value for e in elems] == [1.0, 2, 31, 5, 1000, 3.0, 1000.0, -4, -2.5]


def test_range_does_not_lex_as_float():
    (s,) = body("for k in 0..3 { }")
    assert isinstance(s, A.For)
    assert (s.start.value, s.stop.value) == (0, 3)


def test_else_if_chain_and_slices():
    (s,) = body("if a < 0.0 { return; } else if a > 1.0 { } else { let w = x; }")
    assert isinstance(s.orelse, A.If)
    assert isinstance(s.orelse.orelse, A.Block)
    (t,) = body("let w = [a, a, a][1:];")
    assert isinstance(t.value, A.Slice) and t.value.start.value == 1 and t.value.stop is None


def test_access_words_are_not_reserved():
    (s,) = body("let read = 1.0;")
    assert s.name == "read"


def test_layout_defs_and_clauses():
    prog = parse("layout rm(R, C) = (R, C):(C, 1);\n"
                 "kernel k(p: f32[n, 3] read as rm(n, 3), q: f32[n, 3] write as (n, 3):(1, n)) over n { }",
                 "l.kern")
    (d,) = prog.layouts
    assert d.name == "rm" and d.params == ["R", "C"]
    p, q = prog.kernels[0].params
    assert isinstance(p.layout, A.LayoutName) and p.layout.name == "rm"
    assert isinstance(q.layout, A.LayoutLiteral) and len(q.layout.stride) == 2


def test_dump_ast_is_deterministic_and_readable():
    text = (EXAMPLES / "saxpy.kern").read_text()
    d1 = dump_ast(parse(text, "saxpy.kern"))
    d2 = dump_ast(parse(text, "saxpy.kern"))
    assert d1 == d2
    assert "Kernel [2:8] name='saxpy'" in d1
    assert "Assign [3:7] op='+='" in d1
    assert "BufferParam [2:38] name='y' elem_name='f32' access='add'" in d1


@pytest.mark.parametrize("src, expected", [
    ("kernel k(a: f32) over n { let x = a\n let y = 2; }",
     "s.kern:1:36: error: expected ';' after 'a'"),
    ("kernel k(a f32) over n { }",
     "s.kern:1:12: error: unexpected name 'f32', expected ':'"),
    ("kernel k(a: f32) over n { let x = $; }",
     "s.kern:1:35: error: unexpected character '$', expected an expression"),
    ("kernel k(a: f32) over n { let x = 1;",
     "s.kern:1:37: error: unexpected end of file, expected '}' or a statement"),
    # the end of the file is reported just after the last token (it was after the one before it)
    ("kernel k(a: f32) over n {\n    let x = a +\n",
     "s.kern:2:16: error: unexpected end of file, expected an expression"),
    ("kernel k(a: f32[n] reed) over n { }",
     "s.kern:1:20: error: unexpected name 'reed', expected an access mode"),
    ("kernel k(a: f32) over n { let x = 2u33; }",
     "s.kern:1:35: error: invalid number literal '2u33'"),
    ("kernel k(a: f32) over n { let x = (a + 1; }",
     "s.kern:1:41: error: unexpected ';', expected ')'"),
    ("kernel k(a: f32 over n { }", "s.kern:1:17: error: unexpected 'over', expected ')' or ','"),
    ("kernel k(a: f32) over n  let x = 1; }", "s.kern:1:26: error: unexpected 'let', expected '{'"),
    ("kernel k(a: f32) over n { if a > 0.0 return; }",
     "s.kern:1:38: error: unexpected 'return', expected '{'"),
    ("func k() {}", "s.kern:1:1: error: unexpected name 'func', expected a kernel, function or layout "
                    "definition"),
    ("fn k() {}", "s.kern:1:8: error: unexpected '{', expected '->'"),
    ("fn f(x) -> f32 { return x; }", "s.kern:1:7: error: unexpected ')', expected ':'"),
    ("fn f(x: f32) -> f32[3 { return x; }", "s.kern:1:23: error: unexpected '{', expected ']'"),
    ("kernel k(a: f32) { }", "s.kern:1:18: error: unexpected '{', expected 'over'"),
    ("kernel k(a: f32) over n { for i in 0 to 3 { } }",
     "s.kern:1:38: error: unexpected name 'to', expected '..'"),
    ("kernel k(a: f32) over n { let x = 1.; }", "s.kern:1:35: error: invalid number literal '1.'"),
    ("kernel k(a: f32) over n { return }", "s.kern:1:34: error: unexpected '}', expected ';'"),
    # number literals Python cannot convert were a ValueError / an ICE instead of a located error
    ("kernel k(a: f32) over n { let x = 0x_; }",
     "s.kern:1:35: error: invalid number literal '0x_': no digits after its prefix"),
    ("kernel k(a: f32) over n { let x = 0b__u8; }",
     "s.kern:1:35: error: invalid number literal '0b__u8': no digits after its prefix"),
    ("kernel k(a: f32) over n { let x = 1" + "0" * 5000 + "; }",
     "s.kern:1:35: error: invalid number literal '1000000000000000000000000000000000000000...': "
     "longer than 4000 characters"),
    ("kernel k(a: f32) over n { let x = 1." + "0" * 5000 + "; }",
     "s.kern:1:35: error: invalid number literal '1.00000000000000000000000000000000000000...': "
     "longer than 4000 characters"),
    # a non-ASCII letter is a character the language does not have, not a name
    ("kernel k(a: f32) over n { let \u00e9 = a; }",
     "s.kern:1:31: error: unexpected character '\u00e9', expected a name"),
    ("kernel k(a: f32) over n { let x = \u0663; }",
     "s.kern:1:35: error: unexpected character '\u0663', expected an expression"),
    # a stray character after a complete kernel offered the '}' or a name of an enclosing block
    ("kernel k(a: f32) over n { }\n$\n",
     "s.kern:2:1: error: unexpected character '$', expected a kernel, function or layout definition"),
    ("kernel k(a: f32[n] write) over n { a = 1.0 $ }",
     "s.kern:1:44: error: unexpected character '$', expected ';'"),
])
def test_syntax_errors(src, expected):
    with pytest.raises(CompileError) as info:
        parse(src, "s.kern")
    (d,) = info.value.diagnostics
    assert d.format().splitlines()[0].startswith(expected)
    assert d.source == src
    assert d.format().splitlines()[-1].strip() == "^" or d.hint


def test_syntax_error_caret_points_at_column():
    with pytest.raises(CompileError) as info:
        parse("kernel k(a: f32) over n {\n    let x = @;\n}", "c.kern")
    lines = str(info.value).splitlines()
    assert lines[0].startswith("c.kern:2:13: error: ")
    assert lines[1] == "    let x = @;"
    assert lines[2] == " " * 12 + "^"


def test_dump_ast_shows_checked_types():
    from kernc.frontend import check

    prog = check(parse((EXAMPLES / "saxpy.kern").read_text(), "saxpy.kern"))
    d = dump_ast(prog)
    assert "Binary [3:12] op='*' : f32" in d
    assert "Name [3:14] id='x' : f32" in d


@pytest.mark.parametrize("rng", ["0u32..3u32", "0i32..3", "0..3u32", "0x0..0b11", "0 .. 3"])
def test_suffixed_integer_literals_before_a_range(rng):
    """'0u32..3u32' was lexed as one invalid number literal."""
    (s,) = body(f"for i in {rng} {{ }}")
    assert isinstance(s, A.For) and isinstance(s.start, A.IntLit) and isinstance(s.stop, A.IntLit)


@pytest.mark.parametrize("src,expected", [
    ("-a", "(-a)"), ("--a", "(-(-a))"), ("-~!a", "(-(~(!a)))"), ("-a * -b", "((-a) * (-b))"),
    ("--1", "(--1)"), ("- -1.5", "(--1.5)"),
])
def test_prefix_operator_chains(src, expected):
    (s,) = body(f"let z = {src};")
    assert _sexpr(s.value) == expected


def test_parenthesised_layout_literal_starts_at_its_parenthesis():
    """``(4):(1)`` is located at its ``(`` (the outermost one), as every other layout literal; the
    inline AST builder located it at the ``4``."""
    d = dump_ast(parse("layout L = (4):(1);\nlayout M = ((4)):((1));\nlayout T = (4, 2):(1, 4);\n"
                       "kernel k(a: f32) over n { }\n", "s.kern"))
    assert "LayoutLiteral [1:12]" in d
    assert "LayoutLiteral [2:12]" in d
    assert "LayoutLiteral [3:12]" in d
