"""The state every part of the checker shares, its error reporting and name resolution: the scopes
of a kernel body, reserved names (keywords, type names, builtins) and type names.

The checker (:mod:`kernc.frontend.check`) is one object made of parts with one job each, all built
on :class:`CheckerBase`: declarations (:mod:`~kernc.frontend.declarations`), accessor clauses
(:mod:`~kernc.frontend.accessor_clauses`), layouts (:mod:`~kernc.frontend.layouts`), views
(:mod:`~kernc.frontend.views`), statements (:mod:`~kernc.frontend.statements`) and expressions
(:mod:`~kernc.frontend.expressions`). A part calls the others' methods through ``self`` (each
part's docstring names the ones it uses); none imports another part, and :mod:`kernc.frontend.check`
puts them together.
"""

from __future__ import annotations

from typing import Optional

from kernc.support.errors import Diagnostic, SourceLocation

from . import ast as A
from . import types as T
from .diagnostics import did_you_mean, error_diagnostic
from .language import BUILTIN_FUNCS, BUILTIN_VALUES, KEYWORDS
from .symbols import KernelInfo, Symbol


class CheckerBase:
    """The checker's shared state: the ``program``, the diagnostics found so far (``diags``), the
    name ``scopes`` (innermost last: name -> :class:`Symbol`), the kernel being checked (``info``),
    the read buffers its body uses (``used_reads``) and whether accessor arguments are being checked
    (``in_accessor``)."""

    def __init__(self, program: A.Program):
        self.program = program
        self.diags: list[Diagnostic] = []
        self.scopes: list[dict] = []
        self.info: Optional[KernelInfo] = None
        self.used_reads: list = []
        self.in_accessor = False
        #: the parameters of the kernel being checked, by name (``default NAME`` clauses)
        self.kernel_params: dict = {}
        self.functions: dict = {}  # name -> ast.FnDef (frontend/functions.py)
        self.current_fn = None     # the function whose body is being checked

    def error(self, msg: str, loc: SourceLocation, hint: Optional[str] = None,
              note: Optional[tuple] = None) -> None:
        """Report the error ``msg`` at ``loc`` (see :func:`~kernc.frontend.diagnostics.error_diagnostic`)."""
        self.diags.append(error_diagnostic(msg, loc, self.program.source, hint, note))

    def name_free(self, name: str, loc: SourceLocation, what: str) -> bool:
        """Report (and return False) if ``name`` is reserved or already visible."""
        if name in KEYWORDS:
            self.error(f"'{name}' is a keyword and cannot be used as {what}", loc)
            return False
        if name in T.SCALARS:
            self.error(f"'{name}' is a type name and cannot be used as {what}", loc)
            return False
        if name in BUILTIN_FUNCS:
            self.error(f"'{name}' is a builtin function and cannot be used as {what}", loc)
            return False
        if name in BUILTIN_VALUES:
            self.error(f"'{name}' is a builtin value and cannot be used as {what}", loc)
            return False
        if name in self.functions:
            self.error(f"'{name}' is a function and cannot be used as {what}", loc,
                       note=("the function is defined here", self.functions[name].loc))
            return False
        for scope in reversed(self.scopes):
            if name in scope:
                prev = scope[name]
                self.error(f"redeclaration of '{name}'", loc,
                           note=("previously declared here", prev.loc) if prev.loc else None)
                return False
        return True

    def lookup(self, name: str) -> Optional[Symbol]:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def visible_names(self) -> list:
        names = set()
        for scope in self.scopes:
            names |= set(scope)
        return sorted(names)

    def type_named(self, name: str, loc: SourceLocation) -> Optional[T.ScalarType]:
        t = T.SCALARS.get(name)
        if t is None:
            self.error(f"unknown type '{name}'" + did_you_mean(name, T.SCALARS), loc,
                       hint="types: bool, i8..i64, u8..u64, f16, bf16, f32, f64, index")
        return t
