"""Errors of user functions (issue 22, item 1): exact ``file:line:col`` of each error and of its
notes; an error inside a body is reported once, at the function's line, however many calls; an
error that depends on the call (an argument) is at the argument, with a note at the parameter."""

from __future__ import annotations

import pytest

from kernc.support.errors import CompileError

from frontend_helpers import compile_text

KERNEL = ("kernel k(a: f32, x: f32[n] read, v: f32[n, 3] read, y: f32[n] write) over n {\n"
          "    %s\n}\n")


def diagnostics(src: str) -> list:
    """``[(error line, [note lines])]`` of the diagnostics of ``src`` (``t.kern``)."""
    with pytest.raises(CompileError) as info:
        compile_text(src, "t.kern")
    return [(d.format().splitlines()[0], [n.format().splitlines()[0] for n in d.notes])
            for d in info.value.diagnostics]


# (functions, kernel statement, [(error, [notes])])
CASES = [
    # arguments: at the argument, a note at the parameter
    ("fn f(p: f32[3], s: f32) -> f32 { return s; }", "y = f(a, a);",
     [("t.kern:3:11: error: type mismatch in argument 1 ('p') of 'f': expected 'f32[3]', got 'f32'",
       ["t.kern:1:6: note: parameter 'p' of 'f' is declared 'f32[3]' here"])]),
    ("fn f(s: f32) -> f32 { return s; }", "y = f(v[0]) + f(1.5f64);",
     [("t.kern:3:21: error: type mismatch in argument 1 ('s') of 'f': expected 'f32', got 'f64'",
       ["t.kern:1:6: note: parameter 's' of 'f' is declared 'f32' here"])]),
    ("fn f(p: f32[3], s: f32) -> f32 { return s; }", "y = f(v);",
     [("t.kern:3:9: error: 'f' takes 2 arguments, got 1", ["t.kern:1:4: note: 'f' is defined here"])]),
    # a body error: once, at the body, whatever the calls
    ("fn f(s: f32) -> f32 {\n    let u: i32 = s;\n    return s;\n}", "y = f(a) + f(x);",
     [("t.kern:2:18: error: type mismatch in the initializer of 'u': expected 'i32', got 'f32'", [])]),
    ("fn f(s: f32) -> f32 { return s + thread_id; }", "y = f(a);",
     [("t.kern:1:32: error: cannot mix 'f32' and 'index' in '+': no implicit int/float conversion", [])]),
    # recursion, direct and mutual, naming the cycle
    ("fn f(s: f32) -> f32 { return f(s) + 1.0; }", "y = f(a);",
     [("t.kern:1:30: error: function 'f' calls itself", [])]),
    ("fn f(s: f32) -> f32 { return g(s); }\nfn g(s: f32) -> f32 {\n    return h(s);\n}\n"
     "fn h(s: f32) -> f32 { return f(s) * 2.0; }", "y = a;",
     [("t.kern:1:30: error: recursive calls: 'f' -> 'g' -> 'h' -> 'f'",
       ["t.kern:3:12: note: 'g' calls 'h' here", "t.kern:5:30: note: 'h' calls 'f' here"])]),
    ("fn e(s: f32) -> f32 { return f(s); }\nfn f(s: f32) -> f32 { return g(s); }\n"
     "fn g(s: f32) -> f32 { return f(s); }", "y = e(a);",
     [("t.kern:2:30: error: recursive calls: 'f' -> 'g' -> 'f'", ["t.kern:3:30: note: 'g' calls 'f' here"])]),
    # a body names a kernel's buffer or parameter
    ("fn f(s: f32) -> f32 { return s * x; }", "y = f(a);",
     [("t.kern:1:34: error: function 'f' cannot use 'x': functions take values, and 'x' is a buffer "
       "of kernel 'k'", ["t.kern:2:18: note: 'x' is declared here"])]),
    ("fn f(s: f32) -> f32 { return x[0]; }", "y = a;",
     [("t.kern:1:30: error: function 'f' cannot use 'x': functions take values, and 'x' is a buffer "
       "of kernel 'k'", ["t.kern:2:18: note: 'x' is declared here"])]),
    ("fn f(s: f32) -> f32 { y = s; return s; }", "y = f(a);",
     [("t.kern:1:23: error: function 'f' cannot use 'y': functions take values, and 'y' is a buffer "
       "of kernel 'k'", ["t.kern:2:53: note: 'y' is declared here"])]),
    ("fn f(s: f32) -> f32 { return s * a; }", "y = f(a);",
     [("t.kern:1:34: error: function 'f' cannot use 'a', a parameter of kernel 'k': a function sees "
       "only its parameters", ["t.kern:2:10: note: 'a' is declared here"])]),
    # returns
    ("fn f(s: f32) -> f32 { if s > 0.0 { return s; } }", "y = f(a);",
     [("t.kern:1:4: error: function 'f' may reach the end of its body without returning a value", [])]),
    ("fn f(s: f32) -> f32 { for i in 0..3 { return s; } }", "y = f(a);",
     [("t.kern:1:4: error: function 'f' may reach the end of its body without returning a value", [])]),
    ("fn f(s: f32) -> f32 { return; }", "y = f(a);",
     [("t.kern:1:23: error: function 'f' returns 'f32': write 'return value;'", [])]),
    ("", "return 1.0;", [("t.kern:2:12: error: a kernel returns no value: 'return;' ends the thread", [])]),
    ("fn f(s: f32) -> f32[3] { return s; }", "y = f(a)[0];",
     [("t.kern:1:33: error: type mismatch in the result of 'f': expected 'f32[3]', got 'f32'",
       ["t.kern:1:17: note: 'f' is declared to return 'f32[3]' here"])]),
    # names and signatures
    ("fn f(s: f32) -> f32 { return s; }\nfn f(t: f32) -> f32 { return t; }", "y = f(a);",
     [("t.kern:2:4: error: redefinition of function 'f'", ["t.kern:1:4: note: previous definition is here"])]),
    ("fn exp(s: f32) -> f32 { return s; }", "y = a;",
     [("t.kern:1:4: error: 'exp' is a builtin function and cannot name a function", [])]),
    ("layout f = (4):(1);\nfn f(s: f32) -> f32 { return s; }", "y = a;",
     [("t.kern:2:4: error: 'f' is already a layout and cannot name a function",
       ["t.kern:1:8: note: the layout is defined here"])]),
    ("fn f(s: f32) -> f32 { s = 1.0; return s; }", "y = f(a);",
     [("t.kern:1:23: error: cannot assign to parameter 's'", [])]),
    ("fn f(s: f32) -> f32 { return s; }", "let f = 1.0; y = a;",
     [("t.kern:3:9: error: 'f' is a function and cannot be used as a variable",
       ["t.kern:1:4: note: the function is defined here"])]),
    ("fn f(s: f32[1]) -> f32 { return s[0]; }", "y = a;",
     [("t.kern:1:13: error: a vector type has 2 to 64 components, written as an integer literal: got '1'",
       [])]),
    ("fn f(s: f32, s: f32) -> f32 { return s; }", "y = a;",
     [("t.kern:1:14: error: duplicate parameter 's' of function 'f'",
       ["t.kern:1:6: note: previous declaration is here"])]),
    ("fn foo(s: f32) -> f32 { return s; }", "y = fo(a);",
     [("t.kern:3:9: error: unknown function 'fo'; did you mean 'foo'?", [])]),
]


@pytest.mark.parametrize("fns, stmt, expected", CASES)
def test_function_errors(fns, stmt, expected):
    src = (fns + "\n" if fns else "") + KERNEL % stmt
    assert diagnostics(src) == expected


def test_literal_arguments_adapt():
    """An unsuffixed literal takes its parameter's type (as for any typed context)."""
    compile_text("fn f(s: f32, v: f64[2]) -> f32 { return s; }\n" + KERNEL % "y = f(1, [2, 0.5]);")
