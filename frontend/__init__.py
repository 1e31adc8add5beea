"""The kernc frontend: ``.kern`` source -> AST -> checked AST -> kern MLIR dialect.

Public API (all errors in the user's program raise :class:`kernc.errors.CompileError`, whose
``diagnostics`` are located ``file:line:col: error: ...`` messages):

- :func:`parse` ``(text, filename="<input>") -> ast.Program``
- :func:`check` ``(program) -> ast.Program`` (annotates types and symbols in place)
- :func:`lower` ``(program, context, verify=True) -> ir.Module`` (kern IR, one ``func.func`` per
  kernel; the accessor contract is ``docs/accessor-lowering.md``)
- :func:`compile_to_kern` ``(text, filename, context) -> ir.Module`` (parse + check + lower)
- :func:`dump_ast` ``(program) -> str`` (for ``kernc compile --emit ast``)
"""

from __future__ import annotations

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


__all__ = ["parse", "check", "lower", "compile_to_kern", "dump_ast", "ast"]
