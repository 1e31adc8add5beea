"""Forward mode: the body of ``K_jvp`` from a prepared kernel ``K``
(:mod:`kernc.frontend.derivative_prep`), as ``.kern`` source lines.

Every float ``let`` ``x`` gets a tangent ``x__dot`` computed next to it from its operands'
tangents (:func:`kernc.frontend.derivative_rules.terms`); an assignment computes the tangent of
its new value first (it may read the old one), then assigns both. Control flow is kept as it is:
both sweeps run together, so ``if``/``else`` and loops with any bounds need nothing more. The
tangent of a differentiated read ``x`` is the same element of ``x_dot`` (``x_dot[c]`` for a view
read ``x[c]``, ``x_dot.checked(c)`` for ``x.checked(c)``); an output ``y``'s updates go to
``y_dot`` through ``y``'s own accessor, so ``y_dot`` receives J x_dot as ``y`` receives its values.
"""

from __future__ import annotations

from . import ast as A
from . import printer as P
from . import types as T
from .derivative_model import unwrap, classify_target, comp, components, op_of
from .derivative_prep import error, is_float, type_name, typed_let, zeros
from .derivative_rules import terms


class Forward:
    """Emit the tangent kernel's body of prepared kernel ``kernel`` (``plan``: a
    :class:`kernc.frontend.derivative.Plan`)."""

    def __init__(self, kernel: A.Kernel, plan, names, source: str):
        self.kernel, self.plan, self.names, self.source = kernel, plan, names, source
        self.dot: dict = {}  # local name -> its tangent's name

    def body(self) -> list:
        return self.stmts(self.kernel.body.stmts)

    def stmts(self, stmts) -> list:
        return [line for s in stmts for line in self.stmt(s)]

    def stmt(self, s) -> list:
        if isinstance(s, A.Let):
            lines = [f"let {s.name}{': ' + s.type_name if s.type_name else ''} = {P.expr(s.value)};"]
            if is_float(s.sym.ty):
                self.dot[s.name] = self.dot.get(s.name) or self.names.fresh(f"{s.name}_dot")
                lines.insert(0, typed_let(self.dot[s.name], s.sym.ty, self.tangent(s.value, s.sym.ty)))
            return lines
        if isinstance(s, A.If):
            lines = [f"if {P.expr(s.cond)} {{"] + P.indent(self.stmts(s.then.stmts))
            if s.orelse is not None:
                other = s.orelse.stmts if isinstance(s.orelse, A.Block) else [s.orelse]
                lines += ["} else {"] + P.indent(self.stmts(other))
            return lines + ["}"]
        if isinstance(s, A.For):
            return ([f"for {s.var} in {P.expr(s.start)}..{P.expr(s.stop)} {{"]
                    + P.indent(self.stmts(s.body.stmts)) + ["}"])
        if isinstance(s, A.Assign):
            return self.assign(s)
        raise error("this statement has no derivative", s, self.source)  # pragma: no cover

    def assign(self, s: A.Assign) -> list:
        t = classify_target(s)
        plain = [f"{P.expr(s.target)} {s.op} {P.expr(s.value)};"]
        if t.kind != "local" and t.name not in self.plan.outputs_dot:
            return []  # an integer output: no derivative
        if t.kind == "view":
            if s.atomic is not None and s.atomic != "add":
                raise error(f"the atomic min/max update of '{t.name}' has no derivative", s, self.source)
            if s.op not in ("=", "+=", "-="):  # (a product rule needs the view's old value: as grad)
                raise error(f"'{s.op}' on the view '{t.name}' has no derivative kernel yet", s, self.source)
            dot = self.plan.outputs_dot[t.name]
            target = f"{dot}.atomic({t.coords[t.coords.index('(') + 1:-1]})" if s.atomic else f"{dot}{t.coords}"
            return [f"{target} {s.op} {self.tangent(s.value, t.ty)};"]
        if t.kind == "output":
            dot = self.plan.outputs_dot[t.name]
            if isinstance(s.value, A.TupleLit):
                parts = [self.tangent(v, t.ty) for v in s.value.elems]
                return [f"{dot} {s.op} ({', '.join(parts)});"]
            if s.op not in ("=", "+=", "-="):
                raise error(f"'{s.op}' on the output '{t.name}' has no derivative kernel yet", s,
                            self.source, hint="compute the value in a 'let' and assign it")
            target = dot + (f".{t.side}" if t.side else "") + (f"[{t.component}]" if t.component else "")
            return [f"{target} {s.op} {self.tangent(s.value, t.ty)};"]
        if not is_float(t.ty):
            return plain
        dot = self.dot[t.name]
        d = self.names.fresh("d")
        if s.op == "=":
            value = self.tangent(s.value, t.ty)
        elif s.op in ("+=", "-="):
            old_dot = f"{dot}[{t.component}]" if t.component is not None else dot
            value = f"{old_dot} {s.op[0]} ({self.tangent(s.value, t.ty)})"
        else:
            old = f"{t.name}[{t.component}]" if t.component is not None else t.name
            old_dot = f"{dot}[{t.component}]" if t.component is not None else dot
            parts = []
            for i in components(t.ty):
                args = [f"{old}[{i}]" if i is not None else old, comp(s.value, i)]
                dots = [f"{old_dot}[{i}]" if i is not None else old_dot, self.atom_dot(s.value, i)]
                parts.append(self.combine(terms("binary", s.op[0], args, [t.ty, s.value.ty]), dots))
            value = _vector(parts, t.ty)
        ref = f"{dot}[{t.component}]" if t.component is not None else dot
        return [typed_let(d, t.ty, value)] + plain + [f"{ref} = {d};"]

    # ---- tangents -----------------------------------------------------------------------------

    def atom_dot(self, atom, i):
        """The tangent of component ``i`` of operand ``atom`` (text), or None when it is zero."""
        if not is_float(atom.ty):
            return None
        sfx = f"[{i}]" if i is not None and isinstance(atom.ty, T.VectorType) else ""
        if isinstance(atom, A.Name):
            sym = atom.sym
            if sym is None:
                return None
            if sym.kind == "local":
                return self.dot[sym.name] + sfx if sym.name in self.dot else None
            if sym.kind in ("scalar", "buffer") and sym.name in self.plan.wrt:
                return self.plan.tangents[sym.name] + sfx
            return None
        if isinstance(atom, A.Member) and isinstance(atom.base, A.Name) and atom.base.id in self.plan.wrt:
            return f"{self.plan.tangents[atom.base.id]}.{atom.name}{sfx}"
        return None

    def combine(self, term_list, dots) -> str | None:
        parts = [f(dots[which]) for which, f in term_list if dots[which] is not None]
        return " + ".join(f"({x})" for x in parts) if parts else None

    def tangent(self, e, ty) -> str:
        """The tangent of ``e`` (one operation over atoms, an atom or a read) as text of type
        ``ty``."""
        e = unwrap(e)
        if not is_float(e.ty):
            return zeros(ty)
        if isinstance(e, (A.Name, A.Member)):
            if isinstance(e.ty, T.VectorType):
                d = self.atom_dot(e, None)
                return d if d is not None else zeros(e.ty)
            d = self.atom_dot(e, None)
            return d if d is not None else zeros(e.ty)
        if isinstance(e, (A.FloatLit, A.IntLit)):
            return zeros(ty)
        if isinstance(e, A.VectorLit):
            return _vector([self.atom_dot(x, None) for x in e.elems], e.ty)
        if isinstance(e, A.Index):
            d = self.atom_dot(e.base, None)
            return f"{d}[{P.expr(e.index)}]" if d is not None else zeros(e.ty)
        if isinstance(e, A.Slice):
            d = self.atom_dot(e.base, None)
            return f"{d}[{P.expr(e.start) if e.start else ''}:{P.expr(e.stop) if e.stop else ''}]" \
                if d is not None else zeros(e.ty)
        base = getattr(e, "base", None)
        if isinstance(base, A.Name) and base.sym is not None and base.sym.kind == "buffer" and base.sym.buffer.is_view:
            if base.id not in self.plan.wrt:
                return zeros(e.ty)
            dot = self.plan.tangents[base.id]
            if isinstance(e, A.MultiIndex):
                return f"{dot}[{', '.join(P.expr(i) for i in e.indices)}]"
            if isinstance(e, A.Index):
                return f"{dot}[{P.expr(e.index)}]"
            return f"{dot}.checked({', '.join(P.expr(i) for i in e.args)})"
        op = op_of(e)
        if op is None:
            raise error("this expression has no derivative", e, self.source)
        kind, name, args = op
        parts = []
        for i in components(e.ty):
            texts = [comp(a, i) for a in args]
            types = [T.scalar_of(a.ty) if a.ty is not None else None for a in args]
            parts.append(self.combine(terms(kind, name, texts, types), [self.atom_dot(a, i) for a in args]))
        return _vector(parts, e.ty)


def _vector(parts: list, ty) -> str:
    """A value of type ``ty`` from its components' texts (None: zero)."""
    if not isinstance(ty, T.VectorType):
        return parts[0] if parts[0] is not None else zeros(ty)
    return f"{type_name(ty)}([{', '.join(x if x is not None else '0.0' for x in parts)}])"
