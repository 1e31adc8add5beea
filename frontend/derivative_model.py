"""What both derivative modes read of a prepared kernel (:mod:`kernc.frontend.derivative_prep`):
which names are differentiated, what each assignment targets, and the operands of one operation
component by component.

Shapes: a buffer's element is a scalar or a ``K``-vector of its compute type; a ``pair`` read has
two (``u.first``, ``u.second``). Elementwise operations on vectors are differentiated one component
at a time (a scalar operand broadcast over a vector receives the sum over the components).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import ast as A
from . import printer as P
from . import types as T
from .derivative_prep import is_float

#: the builtin math functions that act elementwise (select and fma included)
ELEMENTWISE_CALLS = ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "floor", "ceil", "abs",
                     "min", "max", "fma", "select")


@dataclass
class Target:
    """An assignment's target: ``kind`` ``"local"`` (a ``let``), ``"output"`` (a ``write``/``add``
    buffer's element; ``side`` ``first``/``second`` of a ``pair``), ``"view"`` (a written view:
    ``coords`` the text after the name, ``[i, j]`` or ``.checked(i, j)``); ``component`` the text
    of ``k`` in ``x[k] = v``, or None."""

    kind: str
    name: str
    ty: object
    component: str | None = None
    side: str | None = None
    coords: str | None = None


def classify_target(s: A.Assign) -> Target:
    t = s.target
    sym = s.sym
    if sym is not None and sym.kind == "local":
        if isinstance(t, A.Index):
            return Target("local", sym.name, T.scalar_of(sym.ty), component=P.expr(t.index))
        return Target("local", sym.name, sym.ty)
    buf = sym.buffer
    if buf.is_view:
        if isinstance(t, A.Method):
            return Target("view", sym.name, buf.compute_elem, coords=f".checked({', '.join(P.expr(a) for a in t.args)})")
        if isinstance(t, A.MultiIndex):
            return Target("view", sym.name, buf.compute_elem, coords=f"[{', '.join(P.expr(a) for a in t.indices)}]")
        return Target("view", sym.name, buf.compute_elem, coords=f"[{P.expr(t.index)}]")
    component = None
    if isinstance(t, A.Index):
        component, t = P.expr(t.index), t.base
    side = t.name if isinstance(t, A.Member) else None
    ty = buf.value_type if component is None else buf.compute_elem
    return Target("output", sym.name, ty, component=component, side=side)


def assigned_locals(node) -> list:
    """The locals declared outside ``node`` that it assigns (in first-assignment order)."""
    declared = {n.name for n in A.iter_nodes(node) if isinstance(n, A.Let)}
    seen: list = []
    for n in _walk(node):
        if isinstance(n, A.Assign) and n.sym is not None and n.sym.kind == "local" \
                and n.sym.name not in declared and n.sym.name not in seen:
            seen.append(n.sym.name)
    return seen


def _walk(node):
    """The statements of ``node`` in source order."""
    if isinstance(node, A.Block):
        for s in node.stmts:
            yield from _walk(s)
    elif isinstance(node, A.If):
        yield node
        yield from _walk(node.then)
        if node.orelse is not None:
            yield from _walk(node.orelse)
    elif isinstance(node, A.For):
        yield node
        yield from _walk(node.body)
    else:
        yield node


def comp(atom, i: int | None) -> str:
    """Component ``i`` of operand ``atom`` (a name or a literal): ``v[i]`` for a vector, the atom
    itself for a scalar (broadcast) or when ``i`` is None."""
    text = P.operand(atom)
    if i is not None and isinstance(atom.ty, T.VectorType):
        return f"{text}[{i}]"
    return text


def unwrap(e):
    """``e`` without the casts to its own type the prepared source wraps vector values in
    (``let t = f64(w * p);``)."""
    while isinstance(e, A.Call) and e.fn is None and e.func in T.SCALARS and len(e.args) == 1 \
            and e.args[0].ty == e.ty:
        e = e.args[0]
    return e


def op_of(e):
    """``(kind, op, operands)`` of an elementwise operation node, or None."""
    if isinstance(e, A.Unary):
        return ("unary", e.op, [e.operand])
    if isinstance(e, A.Binary):
        return ("binary", e.op, [e.left, e.right])
    if isinstance(e, A.Call) and (e.func in ELEMENTWISE_CALLS or e.func in T.SCALARS):
        return ("call", e.func, list(e.args))
    return None


def components(ty) -> list:
    """``[None]`` for a scalar, ``[0, 1, ..., K-1]`` for a K-vector."""
    return list(range(ty.n)) if isinstance(ty, T.VectorType) else [None]


def printed_stmt(s, keep) -> list:
    """Statement ``s`` as source lines, leaving out the assignments ``keep(assign)`` refuses
    (the outputs and view writes, for the recomputation of a forward sweep)."""
    if isinstance(s, A.Let):
        ty = f": {s.type_name}" if s.type_name else ""
        return [f"let {s.name}{ty} = {P.expr(s.value)};"]
    if isinstance(s, A.Assign):
        return [f"{P.expr(s.target)} {s.op} {P.expr(s.value)};"] if keep(s) else []
    if isinstance(s, A.If):
        lines = [f"if {P.expr(s.cond)} {{"] + P.indent(printed_block(s.then.stmts, keep))
        if s.orelse is None:
            return lines + ["}"]
        inner = s.orelse.stmts if isinstance(s.orelse, A.Block) else [s.orelse]
        return lines + ["} else {"] + P.indent(printed_block(inner, keep)) + ["}"]
    if isinstance(s, A.For):
        return ([f"for {s.var} in {P.expr(s.start)}..{P.expr(s.stop)} {{"]
                + P.indent(printed_block(s.body.stmts, keep)) + ["}"])
    raise TypeError(type(s).__name__)  # pragma: no cover


def printed_block(stmts, keep) -> list:
    return [line for s in stmts for line in printed_stmt(s, keep)]


def local_only(s: A.Assign) -> bool:
    return s.sym is not None and s.sym.kind == "local"


__all__ = ["unwrap", "Target", "classify_target", "assigned_locals", "comp", "op_of", "components", "is_float",
           "printed_stmt", "printed_block", "local_only"]
