"""The kernc frontend: ``.kern`` source -> AST -> checked AST -> kern MLIR dialect.

Public API (all errors in the user's program raise :class:`kernc.errors.CompileError`, whose
``diagnostics`` are located ``file:line:col: error: ...`` messages):

- :func:`parse` ``(text, filename="<input>") -> ast.Program``
- :func:`check` ``(program) -> ast.Program`` (annotates types and symbols in place)
- :func:`lower` ``(program, context, verify=True) -> ir.Module`` (kern IR, one ``func.func`` per
  kernel; the accessor contract is ``docs/accessor-lowering.md``)
- :func:`compile_to_kern` ``(text, filename, context) -> ir.Module`` (parse + check + lower)
- :func:`dump_ast` ``(program) -> str`` (for ``kernc compile --emit ast``)
- :func:`nesting_error` ``(err, filename, text) -> CompileError`` (a ``RecursionError`` of the above,
  reported at the innermost statement it happened in)
"""

from __future__ import annotations

from kernc.support.errors import CompileError, Diagnostic, SourceLocation

from . import ast
from .ast import dump_ast
from .check import check
from .lower import lower
from .parser import parse


def compile_to_kern(text: str, filename: str, context) -> "ir.Module":  # noqa: F821
    """Parse, check and lower ``text`` (the contents of ``filename``) in the MLIR ``context``.

    Returns the kern-IR ``ir.Module``; raises :class:`kernc.errors.CompileError` on any error in the
    source.
    """
    return lower(check(parse(text, filename)), context)


def nesting_error(err: RecursionError, filename: str, text: str) -> CompileError:
    """The located error for a program too deeply nested for Python's recursion limit: at the
    innermost statement (``err.kernc_loc``, set by the checker, lowering and parser), else at 1:1."""
    loc = getattr(err, "kernc_loc", None) or _deepest_bracket(filename, text) or SourceLocation(filename, 1, 1)
    return CompileError(Diagnostic(
        "the program is nested too deeply for kernc (a very long expression or deeply nested blocks); "
        "split it with 'let' bindings", loc, source=text))


def _deepest_bracket(filename: str, text: str, at_least: int = 32):
    """The location of the first bracket (``( [ {``) at the deepest nesting of ``text`` (comments
    skipped), when that depth reaches ``at_least``; else ``None``."""
    depth = best = 0
    where = None
    line, col, i, n = 1, 1, 0, len(text)
    while i < n:
        ch = text[i]
        if text.startswith("//", i):  # a line comment: on to its end ('//' is also floor division,
            j = text.find("\n", i)    # which never follows an opening bracket's content here)
            j = n if j < 0 else j
            col += j - i
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            chunk = text[i:j]
            line += chunk.count("\n")
            col = (len(chunk) - chunk.rfind("\n")) if "\n" in chunk else col + len(chunk)
            i = j
            continue
        if ch in "([{":
            depth += 1
            if depth > best:
                best, where = depth, (line, col)
        elif ch in ")]}":
            depth -= 1
        if ch == "\n":
            line, col = line + 1, 1
        else:
            col += 1
        i += 1
    if best < at_least or where is None:
        return None
    return SourceLocation(filename, *where)


__all__ = ["parse", "check", "lower", "compile_to_kern", "dump_ast", "nesting_error", "ast"]
