"""Checking functions: ``fn name(params) -> T { ... }`` definitions, their calls and the call graph.

A function takes values (scalars ``x: f32`` and vectors ``v: f32[3]``) and returns one value; it is
inlined at each call by the lowering (:mod:`kernc.frontend.lower_functions`), so the kern IR has no
calls. The rules (``docs/language.md``, Functions):

- Functions are defined at the top level, in any order with kernels and layouts; a name is one
  function (no overloading) and is no variable, parameter, type, builtin or layout name.
- The body is checked once, in its own scope: the parameters (read-only) and the builtin values
  (``thread_id``, ...). It sees no kernel's names: a buffer is passed by its value, and a body that
  names a kernel's buffer or parameter is an error saying so.
- ``return value;`` gives the result (coerced to the declared type); it may sit anywhere, also inside
  an ``if`` or a ``for`` loop (the rest of the body is skipped, as ``return;`` does in a kernel).
  Every path through the body must end in a ``return`` (a ``return`` inside a loop does not count:
  the loop may run no iteration).
- A call ``f(a, b)`` coerces each argument to its parameter's type (literals adapt, nothing else
  converts); a mismatch is an error at the argument with a note at the parameter.
- Calls between functions are fine; recursion (direct or mutual) is an error at a call of the
  cycle, naming the cycle, with a note at each other call in it.

Uses the statements (``check_block``) and expressions (``expr``, ``coerce``) of the checker; the
lowering reads ``Call.fn`` and ``Return.fn`` (the function's name) and ``FnDef.nested_return``.
"""

from __future__ import annotations

from typing import Optional

from . import ast as A
from . import types as T
from .diagnostics import did_you_mean, error_diagnostic, note_diagnostic
from .expressions import index_constant_max
from .language import BUILTIN_FUNCS, BUILTIN_VALUES, MAX_COMPONENTS
from .names import CheckerBase
from .statements import has_nested_return
from .symbols import Symbol


class FunctionChecks(CheckerBase):
    """Function definitions, calls and the call graph. ``functions`` (name -> :class:`A.FnDef`) is
    filled before any body is checked; ``current_fn`` is the function whose body is being checked
    (None in a kernel); ``calls`` records each call made inside a function body."""

    # ---- definitions ------------------------------------------------------------------------

    def register_functions(self) -> None:
        """Record every function's name and signature, check their bodies, then refuse recursion.
        Runs after the layouts (a function may not be named like one) and before the kernels."""
        self.current_fn = None
        self.calls: list = []  # (caller FnDef, callee FnDef, call node)
        defs = self.program.functions
        for fn in defs:
            if self._function_name_ok(fn):
                self.functions[fn.name] = fn
        for fn in defs:
            self._signature(fn)
        for fn in defs:
            if self.functions.get(fn.name) is fn:
                self._check_body(fn)
        self._refuse_recursion(defs)
        self.fn_constant_max = max((index_constant_max(fn) for fn in defs), default=0)

    def _function_name_ok(self, fn: A.FnDef) -> bool:
        name = fn.name
        what = ("a type name" if name in T.SCALARS else "a builtin function" if name in BUILTIN_FUNCS
                else "a builtin value" if name in BUILTIN_VALUES else None)
        if what is not None:
            self.error(f"'{name}' is {what} and cannot name a function", fn.loc)
            return False
        if self.is_layout_name(name):
            layout = self.layouts.get(name) or self.fn_layouts.get(name)
            self.error(f"'{name}' is already a layout and cannot name a function", fn.loc,
                       note=("the layout is defined here", layout.loc) if layout is not None else None)
            return False
        prev = self.functions.get(name)
        if prev is not None:
            self.error(f"redefinition of function '{name}'", fn.loc,
                       note=("previous definition is here", prev.loc))
            return False
        return True

    def value_type(self, vt: A.ValueType) -> Optional[T.Type]:
        """The type ``T`` or ``T[K]`` of a parameter or result (``K`` an integer literal, 2..64)."""
        s = self.type_named(vt.name, vt.loc)
        if s is None or vt.count is None:
            vt.ty = s
            return s
        n = vt.count
        if n.suffix is not None or not 2 <= n.value <= MAX_COMPONENTS:
            self.error(f"a vector type has 2 to {MAX_COMPONENTS} components, written as an integer "
                       f"literal: got '{n.text}'", n.loc,
                       hint=f"e.g. {vt.name}[3]; a single value is written {vt.name}")
            vt.ty = None
            return None
        vt.ty = T.VectorType(s, n.value)
        return vt.ty

    def _signature(self, fn: A.FnDef) -> None:
        seen: dict = {}
        for p in fn.params:
            ty = self.value_type(p.type)
            if p.name in seen:
                self.error(f"duplicate parameter '{p.name}' of function '{fn.name}'", p.loc,
                           note=("previous declaration is here", seen[p.name].loc))
                continue
            if not self.name_free(p.name, p.loc, "a parameter"):
                continue
            seen[p.name] = p
            p.sym = Symbol(p.name, "fnparam", ty, p.loc)
        self.value_type(fn.result)

    def _check_body(self, fn: A.FnDef) -> None:
        builtins = {n: Symbol(n, "builtin", T.INDEX) for n in BUILTIN_VALUES}
        self.scopes = [builtins, {p.name: p.sym for p in fn.params if p.sym is not None}]
        self.current_fn, self.used_reads = fn, []
        self.check_block(fn.body, new_scope=True)
        self.current_fn, self.scopes = None, []
        fn.nested_return = has_nested_return(fn.body.stmts)
        if not always_returns(fn.body.stmts):
            self.error(f"function '{fn.name}' may reach the end of its body without returning a value",
                       fn.loc, hint="end every path with 'return value;' (a 'return' inside a 'for' "
                                    "loop does not count: the loop may run no iteration)")

    # ---- the body: returns, and names of kernels --------------------------------------------

    def return_(self, s: A.Return) -> None:
        """``return;`` in a kernel, ``return value;`` in a function."""
        fn = self.current_fn
        if fn is None:
            if s.value is not None:
                self.expr(s.value)
                self.error("a kernel returns no value: 'return;' ends the thread", s.value.loc,
                           hint="assign the value to an output, then 'return;'")
            return
        s.fn = fn.name
        rt = fn.result.ty
        if s.value is None:
            self.error(f"function '{fn.name}' returns '{rt or fn.result.name}': write "
                       f"'return value;'", s.loc)
            return
        if self.expr(s.value) is None or rt is None:
            return
        n0 = len(self.diags)
        if not self.coerce(s.value, rt, f"the result of '{fn.name}'") and len(self.diags) > n0:
            self.diags[-1].notes.append(note_diagnostic(
                f"'{fn.name}' is declared to return '{rt}' here", fn.result.loc, self.program.source))

    def _kernel_name_note(self, name: str):
        """``(what, declaration)`` if ``name`` is a parameter of some kernel of the file (for the
        error of a function body that names it), else None."""
        for k in self.program.kernels:
            for p in k.params:
                if p.name == name:
                    what = "a buffer" if isinstance(p, A.BufferParam) else "a parameter"
                    return f"{what} of kernel '{k.name}'", p
        return None

    def _outside_name(self, name: str, loc) -> bool:
        """Report (and return True) a function body's use of a kernel's buffer or parameter."""
        if self.current_fn is None or self.lookup(name) is not None:
            return False
        found = self._kernel_name_note(name)
        if found is None:
            return False
        what, p = found
        fn = self.current_fn.name
        if isinstance(p, A.BufferParam):
            msg = (f"function '{fn}' cannot use '{name}': functions take values, and '{name}' is "
                   f"{what}")
            hint = (f"return the value and assign it to '{name}' in the kernel"
                    if p.access in ("write", "add") else
                    f"pass its element as an argument: `{fn}(..., {name})` in the kernel")
        else:
            msg = f"function '{fn}' cannot use '{name}', {what}: a function sees only its parameters"
            hint = f"pass it as an argument: `{fn}(..., {name})`"
        self.error(msg, loc, hint=hint, note=(f"'{name}' is declared here", p.loc))
        return True

    def name(self, e: A.Name):
        if self._outside_name(e.id, e.loc):
            return None
        return super().name(e)

    def assign(self, s: A.Assign) -> None:
        base = s.target
        while isinstance(base, (A.Index, A.Member, A.MultiIndex, A.Method)):
            base = base.base
        if isinstance(base, A.Name) and self._outside_name(base.id, base.loc):
            if not isinstance(s.value, A.TupleLit):
                self.expr(s.value)
            return
        super().assign(s)

    # ---- calls ------------------------------------------------------------------------------

    def call(self, e: A.Call):
        fn = self.functions.get(e.func)
        if fn is None:
            if self.functions and e.func not in BUILTIN_FUNCS and e.func not in T.SCALARS \
                    and self.lookup(e.func) is None and not self.is_layout_name(e.func):
                for a in e.args:
                    self.expr(a)
                self.error(f"unknown function '{e.func}'"
                           + did_you_mean(e.func, [*self.functions, *BUILTIN_FUNCS, *T.SCALARS]), e.loc)
                return None
            return super().call(e)
        e.fn = fn.name  # a name, not the node: walkers of the AST (vars()) stay in the kernel
        if self.current_fn is not None:
            self.calls.append((self.current_fn, fn, e))
        for a in e.args:
            self.expr(a)
        if len(e.args) != len(fn.params):
            n = len(fn.params)
            self.error(f"'{fn.name}' takes {n} argument{'s' if n != 1 else ''}, got {len(e.args)}",
                       e.loc, note=(f"'{fn.name}' is defined here", fn.loc))
            return fn.result.ty
        for i, (a, p) in enumerate(zip(e.args, fn.params)):
            pt = p.sym.ty if p.sym is not None else None
            if a.ty is None or pt is None:
                continue
            n0 = len(self.diags)
            if not self.coerce(a, pt, f"argument {i + 1} ('{p.name}') of '{fn.name}'"):
                if len(self.diags) > n0:
                    self.diags[-1].notes.append(note_diagnostic(
                        f"parameter '{p.name}' of '{fn.name}' is declared '{pt}' here", p.loc,
                        self.program.source))
        return fn.result.ty

    def _refuse_recursion(self, defs: list) -> None:
        """One error per cycle of the call graph (direct or mutual recursion), at the call that
        leaves the cycle's first function (in source order), naming the cycle."""
        edges: dict = {}
        for caller, callee, call in self.calls:
            edges.setdefault(caller, []).append((callee, call))
        reported: set = set()
        for start in defs:
            if start in reported:
                continue
            path = _cycle_from(start, edges)
            if path is None:
                continue
            fns = [start] + [callee for callee, _ in path]
            if any(f in reported for f in fns[:-1]):
                continue
            reported.update(fns)
            cycle = " -> ".join(f"'{f.name}'" for f in fns)
            first = path[0][1]
            msg = (f"function '{start.name}' calls itself" if len(path) == 1 else
                   f"recursive calls: {cycle}")
            d = error_diagnostic(msg, first.loc, self.program.source,
                                 hint="functions are inlined at each call, so they cannot recurse; "
                                      "write the recursion as a loop")
            for (callee, call), caller in zip(path[1:], fns[1:]):
                d.notes.append(note_diagnostic(f"'{caller.name}' calls '{callee.name}' here",
                                               call.loc, self.program.source))
            self.diags.append(d)


def _cycle_from(start: A.FnDef, edges: dict) -> Optional[list]:
    """The calls ``[(callee, call), ...]`` of a shortest path from ``start`` back to itself in the
    call graph ``edges`` (caller -> [(callee, call)]), or None (breadth-first, so linear)."""
    prev: dict = {}
    frontier = [start]
    seen = {start}
    while frontier:
        nxt = []
        for f in frontier:
            for callee, call in edges.get(f, ()):
                if callee is start:
                    path = [(callee, call)]
                    while f is not start:
                        pf, pcall = prev[f]
                        path.append((f, pcall))
                        f = pf
                    return list(reversed(path))
                if callee not in seen:
                    seen.add(callee)
                    prev[callee] = (f, call)
                    nxt.append(callee)
        frontier = nxt
    return None


def always_returns(stmts: list) -> bool:
    """Whether every path through ``stmts`` ends in a ``return`` (an ``if`` counts when each of its
    branches does; a ``for`` never does)."""
    for s in stmts:
        if isinstance(s, A.Return):
            return True
        if isinstance(s, A.If) and s.orelse is not None:
            orelse = s.orelse.stmts if isinstance(s.orelse, A.Block) else [s.orelse]
            if always_returns(s.then.stmts) and always_returns(orelse):
                return True
    return False
