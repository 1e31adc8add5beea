"""Comments are allowed wherever whitespace is: a ``//`` after an attribute's or an accessor
pattern's ``)`` was lexed as floor division ("unexpected '//'"), because that ``)`` shared its
lexer state with a call's in an expression. (``//`` right after an operand in an expression is
floor division, by design: grammar.lark.)"""

from __future__ import annotations

import re

import pytest

from kernc import frontend

PLAIN = """layout rm(R, C) = (R, C):(C, 1);
@block(64) @tile(64, 64, 16)
kernel g(a: f32[M, K] view as rm(M, K), x: f32[n] read indexed(idx), idx: i32[n] read,
         c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for k in 0..K {
        acc += a[i, k] * 2.0;
    }
    c[i, j] = acc;
}
"""


def _shape(text):
    """The checked AST without source positions (to compare a program with and without comments)."""
    return re.sub(r" \[\d+:\d+\]", "", frontend.dump_ast(frontend.check(frontend.parse(text, "c.kern"))))


def test_the_reported_case():
    prog = frontend.check(frontend.parse(
        "@block(64)\n// c\nkernel s(x: f32[n] read, y: f32[n] write) over n { y = x; }", "c.kern"))
    assert prog.items[0].info.block == 64


@pytest.mark.parametrize("after", [
    "@block(64)", "@tile(64, 64, 16)", "as rm(M, K)", "indexed(idx)", "layout rm(R, C) = (R, C):(C, 1);",
    "over (i, j) in (M, N)", "idx: i32[n] read,", "{", "let acc = 0.0;", "}",
])
@pytest.mark.parametrize("comment", ["// a comment\n", "/* a comment */"])
def test_a_comment_after_each_declaration_token(after, comment):
    assert after in PLAIN
    text = PLAIN.replace(after, after + " " + comment, 1)
    assert _shape(text) == _shape(PLAIN)


def test_a_line_comment_at_every_line_end_outside_expressions():
    lines = PLAIN.split("\n")
    text = "\n".join(line + "  // end of line" if line and not line.rstrip().endswith(("=", "+", "*")) else line
                     for line in lines)
    assert _shape(text) == _shape(PLAIN)
