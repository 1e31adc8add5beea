"""Inlining the calls of user functions while lowering (part of :mod:`kernc.frontend.lower`).

A call ``f(a, b)`` is lowered in place: its arguments in the caller's state, then the function's
body over a state of its own (its parameters bound to the argument values), with the statements'
machinery of the kernel lowering; the value of the call is the value the body returned. So the
kern IR holds no call (``func.call``) and no function: each call is a copy of the body, with the
body's source locations (the function's lines). Functions never recurse (the checker refuses it,
:mod:`kernc.frontend.functions`), so every call ends.

``return value;`` sets the state key :func:`result_key`. In a body whose ``return`` s are all at its
top level (``FnDef.nested_return`` false) the first one ends the lowering of the body, as ``return;``
does in a kernel. Otherwise the body carries its own "returned" flag (:func:`returned_key`, in place
of the kernel's) and the result starts as zeros of its type: the statements after one that may
return run only while the flag is clear, as for ``return;`` in a kernel (``lower.py``), and later
iterations of a loop are skipped.
"""

from __future__ import annotations

from . import ast as A
from . import types as T


def result_key(fn: str) -> tuple:
    """The state key of the value function ``fn`` (a name) returns."""
    return ("result", fn)


def returned_key(fn: str) -> tuple:
    """The state key of function ``fn``'s "returned" flag (bodies with a ``return`` inside
    ``if``/``for``)."""
    return ("returned", fn)


class FunctionLowering:
    """Calls of user functions, inlined. Put before the expression lowering in a kernel lowering's
    bases (its ``call`` comes first); uses its ``stmts``, ``expr``, ``const`` and ``loc``, and
    swaps its ``returned_key`` (the state key ``return`` sets) while a body is lowered."""

    def function(self, name: str) -> A.FnDef:
        """The definition of function ``name`` (the checker made names unique)."""
        defs = self.__dict__.get("_fn_defs")
        if defs is None:
            defs = self._fn_defs = {f.name: f for f in self.program.functions}
        return defs[name]

    def call(self, e: A.Call, env: dict):
        if e.fn is None:
            return super().call(e, env)
        fn = self.function(e.fn)
        args = [self.expr(a, env) for a in e.args]
        fenv = type(env)()  # the body sees its parameters only
        for p, v in zip(fn.params, args):
            fenv[p.sym] = list(v) if isinstance(v, list) else v
        key = result_key(fn.name)
        if fn.nested_return:
            rt = fn.result.ty
            with self.loc(fn):
                zeros = [self.const(T.scalar_of(rt), 0) for _ in range(T.width(rt))]
                fenv[key] = zeros if isinstance(rt, T.VectorType) else zeros[0]
                fenv[returned_key(fn.name)] = self.const(T.BOOL, False)
        outer, self.returned_key = self.returned_key, returned_key(fn.name)
        try:
            self.stmts(fn.body.stmts, fenv)
        finally:
            self.returned_key = outer
        v = fenv[key]
        return list(v) if isinstance(v, list) else v

    def function_return(self, s: A.Return, env: dict) -> None:
        """``return value;`` of a function body: the value becomes its result."""
        v = self.expr(s.value, env)
        env[result_key(s.fn)] = list(v) if isinstance(v, list) else v
