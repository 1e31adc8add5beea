"""The first step of a derivative (:mod:`kernc.frontend.derivative`): a checked kernel rewritten
as ``.kern`` source in which every float operation stands alone and no function is called.

- **Functions are inlined** at the source level: a call ``f(a, b)`` becomes ``let`` s binding the
  parameters (fresh names, typed), the body with its names made fresh, and a result variable
  assigned at each ``return``. A body with a ``return`` inside an ``if``/``for`` carries a "done"
  flag: the statements after one that may return run under ``if !done { ... }``, and a loop body
  that may return runs under it too (later iterations do nothing), as the lowering does
  (:mod:`kernc.frontend.lower_functions`).
- **A-normal form**: every float sub-expression that is not a literal becomes a ``let`` of one
  operation over names and literals (``y = exp(a * b) + c;`` -> ``let t1: f64 = a * b; let t2:
  f64 = exp(t1); y = t2 + c;``). The right side of a statement stays one operation. Integer and
  bool expressions are kept whole (they have no derivative); float parts inside them are hoisted
  too. Hoisting is exact: a statement's operands are all evaluated anyway (``&&``, ``||`` and
  ``select`` do not short-circuit), and each is evaluated once, before the statement, as before.

The derivative passes then differentiate one operation at a time, reading the types the checker
gives the rewritten kernel. Errors: :class:`~kernc.errors.CompileError` located at the construct
(a ``return;`` in the kernel body).
"""

from __future__ import annotations

import re

from kernc.support.errors import CompileError, Diagnostic

from . import ast as A
from . import printer as P
from . import types as T

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class FreshNames:
    """Names no identifier of the program's text uses: ``fresh("t")`` gives ``t__1``, ``t__2``..."""

    def __init__(self, text: str):
        self.taken = set(_IDENT.findall(text))
        self.count = 0

    def fresh(self, base: str) -> str:
        while True:
            self.count += 1
            name = f"{base}__{self.count}"
            if name not in self.taken:
                self.taken.add(name)
                return name

    def exact(self, name: str) -> bool:
        """Take ``name`` if it is free (True), else leave it (False)."""
        if name in self.taken:
            return False
        self.taken.add(name)
        return True


def is_float(ty) -> bool:
    return ty is not None and not isinstance(ty, T.CoordType) and T.scalar_of(ty).is_float


def type_name(ty) -> str:
    return T.default_scalar(T.scalar_of(ty)).name


def zeros(ty) -> str:
    """A zero of ``ty``: ``0.0``, ``0``, ``false`` (a literal, typed by its context) or a typed
    vector ``f32([0.0, 0.0, 0.0])``."""
    s = T.default_scalar(T.scalar_of(ty))
    z = "0.0" if s.is_float else "false" if s.is_bool else "0"
    if isinstance(ty, T.VectorType):
        return f"{s.name}([{', '.join([z] * ty.n)}])"
    return z


def typed_let(name: str, ty, value: str) -> str:
    """``let name: T = value;`` for a scalar, ``let name = T(value);`` for a vector (a cast to its
    own type, so literals in ``value`` take the type)."""
    if isinstance(ty, T.VectorType):
        cast = value if value.startswith(type_name(ty) + "([") else f"{type_name(ty)}({value})"
        return f"let {name} = {cast};"
    return f"let {name}: {type_name(ty)} = {value};"


def error(message: str, node, source: str, hint: str | None = None) -> CompileError:
    return CompileError(Diagnostic(message, node.loc, source=source, hint=hint))


def contains(node, kind) -> bool:
    return any(isinstance(n, kind) for n in A.iter_nodes(node))


def constant(e) -> bool:
    """Whether ``e`` is made of literals only (no name, no call of a function)."""
    return not any(isinstance(n, (A.Name, A.Member, A.MultiIndex, A.Method, A.Apply))
                   or (isinstance(n, A.Call) and n.fn is not None) for n in A.iter_nodes(e))


class _Fn:
    """The function whose body is being inlined: its names' renaming, its result variable and
    (bodies with nested returns) its "done" flag."""

    def __init__(self, fn: A.FnDef, result: str, done: str | None):
        self.fn, self.result, self.done = fn, result, done
        self.rename: dict = {}


class Prepare:
    """Rewrite checked kernel ``kernel`` of ``program`` (see the module docstring); ``body()``
    gives its statements as source lines."""

    def __init__(self, program: A.Program, kernel: A.Kernel, names: FreshNames):
        self.program, self.kernel, self.names = program, kernel, names
        self.functions = {f.name: f for f in program.functions}
        self.source = program.source
        #: the user's ``for`` statements, in the order of the prepared kernel's loops
        self.loops: list = []

    def body(self) -> list:
        return self.stmts(self.kernel.body.stmts, None)

    # ---- statements -------------------------------------------------------------------------

    def stmts(self, stmts: list, fn: _Fn | None) -> list:
        out: list = []
        for i, s in enumerate(stmts):
            self.stmt(s, fn, out)
            if fn is not None and contains(s, A.Return):
                rest = stmts[i + 1:]
                if fn.done is None:  # a top-level return ends the body
                    return out
                if rest:
                    out.append(f"if !{fn.done} {{")
                    out.extend(P.indent(self.stmts(rest, fn)))
                    out.append("}")
                return out
        return out

    def block(self, b: A.Block, fn) -> list:
        return P.indent(self.stmts(b.stmts, fn))

    def stmt(self, s, fn: _Fn | None, out: list) -> None:
        if isinstance(s, A.Let):
            name = s.name
            if fn is not None:
                name = fn.rename[s.sym] = self.names.fresh(s.name)
            value = self.ex(s.value, fn, out, top=True)
            ty = f": {s.type_name}" if s.type_name else ""
            if not s.type_name and constant(s.value):  # a literal takes its type from the let
                out.append(typed_let(name, s.value.ty if not T.is_literal(s.value.ty) else s.sym.ty, value))
            else:
                out.append(f"let {name}{ty} = {value};")
        elif isinstance(s, A.Assign):
            target = self.target(s.target, fn, out)
            local = s.sym is not None and s.sym.kind == "local"
            if isinstance(s.value, A.TupleLit):
                value = "(" + ", ".join(self.ex(v, fn, out, top=True) for v in s.value.elems) + ")"
            else:
                value = self.ex(s.value, fn, out, top=not (local and s.op in ("*=", "/=")))
            out.append(f"{target} {s.op} {value};")
        elif isinstance(s, A.If):
            out.extend(self.if_stmt(s, fn, out))
        elif isinstance(s, A.For):
            self.loops.append(s)  # (in the order the prepared text has them: a loop before its body)
            start = self.ex(s.start, fn, out)
            stop = self.ex(s.stop, fn, out)
            var = s.var
            if fn is not None:
                var = fn.rename[s.sym] = self.names.fresh(s.var)
            body = self.block(s.body, fn)
            if fn is not None and fn.done is not None and contains(s.body, A.Return):
                body = [f"    if !{fn.done} {{"] + P.indent(body) + ["    }"]
            out.append(f"for {var} in {start}..{stop} {{")
            out.extend(body)
            out.append("}")
        elif isinstance(s, A.Return):
            if fn is None:
                raise error("a kernel with 'return;' has no derivative kernel yet", s, self.source,
                            hint="guard the rest of the body with 'if' instead")
            out.append(f"{fn.result} = {self.ex(s.value, fn, out, top=True)};")
            if fn.done is not None:
                out.append(f"{fn.done} = true;")
        else:  # pragma: no cover - the parser makes no other statement
            raise TypeError(type(s).__name__)

    def if_stmt(self, s: A.If, fn, out: list) -> list:
        cond = self.ex(s.cond, fn, out)
        lines = [f"if {cond} {{"] + self.block(s.then, fn)
        if s.orelse is None:
            return lines + ["}"]
        if isinstance(s.orelse, A.If):
            inner: list = []
            inner.extend(self.if_stmt(s.orelse, fn, inner))
            return lines + ["} else {"] + P.indent(inner) + ["}"]
        return lines + ["} else {"] + self.block(s.orelse, fn) + ["}"]

    def target(self, t, fn, out: list) -> str:
        if isinstance(t, A.Name):
            return self.name(t, fn)
        if isinstance(t, A.Member):
            return f"{self.target(t.base, fn, out)}.{t.name}"
        if isinstance(t, A.Index):
            return f"{self.target(t.base, fn, out)}[{self.ex(t.index, fn, out)}]"
        if isinstance(t, A.MultiIndex):
            return f"{self.target(t.base, fn, out)}[{', '.join(self.ex(i, fn, out) for i in t.indices)}]"
        if isinstance(t, A.Method):
            return f"{self.target(t.base, fn, out)}.{t.name}({', '.join(self.ex(i, fn, out) for i in t.args)})"
        raise TypeError(type(t).__name__)  # pragma: no cover

    def name(self, e: A.Name, fn) -> str:
        if fn is not None and e.sym in fn.rename:
            return fn.rename[e.sym]
        return e.id

    # ---- expressions ------------------------------------------------------------------------

    def ex(self, e, fn, out: list, top: bool = False) -> str:
        """The text of ``e`` as an operand (``top``: as the whole right side of a statement),
        appending the ``let`` s it needs to ``out``."""
        if isinstance(e, (A.IntLit, A.FloatLit, A.BoolLit)):
            return P.expr(e)
        if isinstance(e, A.Name):
            return self.name(e, fn)
        if isinstance(e, A.Call) and e.fn is not None:
            return self.inline(e, fn, out)
        if constant(e) and not isinstance(e.ty, T.VectorType):
            return P.operand(e)
        text = self.node(e, fn, out)
        if top:
            return text
        if not is_float(e.ty):
            # an integer or bool operation stays inline: as an operand it keeps its parentheses
            # (`(j + 1) % 3` is not `j + 1 % 3`)
            return f"({text})" if isinstance(e, (A.Unary, A.Binary)) else text
        t = self.names.fresh("t")
        out.append(typed_let(t, e.ty, text))
        return t

    def node(self, e, fn, out: list) -> str:
        """``e`` with operands made atoms."""
        sub = lambda x: self.ex(x, fn, out)  # noqa: E731
        if isinstance(e, A.Unary):
            return f"{e.op}{_paren(sub(e.operand))}"
        if isinstance(e, A.Binary):
            return f"{_paren(sub(e.left))} {e.op} {_paren(sub(e.right))}"
        if isinstance(e, A.Call):
            return f"{e.func}({', '.join(sub(a) for a in e.args)})"
        if isinstance(e, A.VectorLit):
            return f"[{', '.join(sub(a) for a in e.elems)}]"
        if isinstance(e, A.Index):
            return f"{_paren(sub(e.base))}[{sub(e.index)}]"
        if isinstance(e, A.Slice):
            lo = P.expr(e.start) if e.start is not None else ""
            hi = P.expr(e.stop) if e.stop is not None else ""
            return f"{_paren(sub(e.base))}[{lo}:{hi}]"
        if isinstance(e, A.Member):
            return f"{sub(e.base)}.{e.name}"
        if isinstance(e, A.MultiIndex):
            return f"{sub(e.base)}[{', '.join(sub(i) for i in e.indices)}]"
        if isinstance(e, A.Method):
            return f"{sub(e.base)}.{e.name}({', '.join(sub(i) for i in e.args)})"
        if isinstance(e, A.Apply):
            return f"{e.func}({', '.join(sub(a) for a in e.args)})({', '.join(sub(c) for c in e.coords)})"
        if isinstance(e, A.TupleLit):
            return f"({', '.join(sub(a) for a in e.elems)})"
        raise TypeError(type(e).__name__)  # pragma: no cover

    def inline(self, call: A.Call, fn: _Fn | None, out: list) -> str:
        f = self.functions[call.fn]
        args = [self.ex(a, fn, out) for a in call.args]
        result = self.names.fresh(f"{f.name}_result")
        inner = _Fn(f, result, self.names.fresh(f"{f.name}_done") if f.nested_return else None)
        out.append(typed_let(result, f.result.ty, zeros(f.result.ty)))
        if inner.done is not None:
            out.append(f"let {inner.done} = false;")
        for p, a in zip(f.params, args):
            name = inner.rename[p.sym] = self.names.fresh(p.name)
            out.append(typed_let(name, p.type.ty, a))
        out.extend(self.stmts(f.body.stmts, inner))
        return result


def _paren(text: str) -> str:
    return f"({text})" if text.startswith("-") else text
