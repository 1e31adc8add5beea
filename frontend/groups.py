"""Reductions across items (``sum[j](e)``, ``max[j](e)``, ...): where they may stand, which
coordinates they reduce, their types, and the once-per-group writes of a kernel that has them
(``docs/language.md``, "Reductions across items").

A reduction ``op[c..](e)`` combines ``e`` over every item that shares the kernel's other
coordinates (its *group*) and gives every item of the group the result. The compiler runs the
body in phases split at the reductions (``kern-map-groups``), so a reduction must be reached by
every item of its group in the same order: it may only stand in the kernel body's top-level
statements, an ``if``'s condition or a loop's bounds (not under ``if``, in a loop's body, in a
function, after a ``return`` some items may take, or inside another reduction), and all
reductions of a kernel reduce the same coordinates.

A plain view store (``=``) whose coordinates name no reduced coordinate and no local variable
(``mean[r] = m;`` with ``r`` kept) is a *once-per-group* write: :func:`prepare_groups` puts it
under ``if j == 0 { .. }`` (every reduced coordinate 0: the group's first item), so one item of
each group writes it and the race check sees the pinned coordinate.
"""

from __future__ import annotations

from . import ast as A
from . import types as T

#: The reductions and the value types each takes.
REDUCTIONS = {"sum": "numeric", "max": "numeric", "min": "numeric", "and": "integer or bool",
              "or": "integer or bool", "all": "bool", "any": "bool"}


def _reductions(node) -> list:
    return [n for n in A.iter_nodes(node) if isinstance(n, A.GroupReduce)]


def _names(e) -> set:
    return {n.id for n in A.iter_nodes(e) if isinstance(n, A.Name)}


def prepare_groups(checker, k: A.Kernel, coord_syms: list, info) -> None:
    """Check where ``k``'s reductions stand and what they reduce (errors through
    ``checker.error``); set each one's ``axes`` and ``info.group_axes`` (the reduced coordinates'
    positions, sorted; ``None`` without reductions), and wrap the once-per-group writes."""
    info.group_axes = None
    found = _reductions(k.body)
    if not found:
        return
    coords = [s.name for s in coord_syms]
    top, after_return = set(), {}
    returned = None
    for s in k.body.stmts:
        # what every item evaluates: a top-level statement's expressions, an `if`'s condition and
        # a loop's bounds (not what runs inside them)
        parts = ([s] if isinstance(s, (A.Let, A.Assign)) else [s.cond] if isinstance(s, A.If)
                 else [s.start, s.stop] if isinstance(s, A.For) else [])
        for part in parts:
            top.update(id(n) for n in _reductions(part))
            if returned is not None:
                after_return.update((id(n), returned) for n in _reductions(part))
        if returned is None:
            returned = next((n for n in A.iter_nodes(s) if isinstance(n, A.Return)), None)
    first_axes = None
    for r in found:
        r.prepared = True
        if r.op not in REDUCTIONS:
            checker.error(f"'{r.op or 'this expression'}[..](..)' is not a reduction", r.loc,
                          hint="reductions across items are " + ", ".join(f"{n}[..](e)" for n in REDUCTIONS))
            continue
        if len(r.args) != 1:
            checker.error(f"'{r.op}[..]' reduces one expression, got {len(r.args)}", r.loc,
                          hint=f"e.g. {r.op}[j](x[i, j])")
            continue
        if len(coords) < 2:
            checker.error(f"'{r.op}[..]' reduces across the items of an N-D kernel; this kernel is 1-D "
                          f"(over {k.over.names[0]})", r.loc,
                          hint="write the kernel over (i, j) in (R, N) and reduce over a coordinate: "
                               f"{r.op}[j](x[i, j]); a sum over all items is a `sum` output")
            continue
        axes = []
        for c in r.coords:
            if not isinstance(c, A.Name) or c.id not in coords:
                what = f"'{c.id}'" if isinstance(c, A.Name) else "an expression"
                checker.error(f"{what} is not a coordinate of kernel '{k.name}' (over "
                              f"({', '.join(coords)})): '{r.op}[..]' reduces over coordinates", c.loc,
                              hint=f"name one or more of {', '.join(coords)}, e.g. {r.op}[{coords[-1]}](..)")
                break
            if coords.index(c.id) in axes:
                checker.error(f"coordinate '{c.id}' is named twice", c.loc)
                break
            axes.append(coords.index(c.id))
        else:
            axes = tuple(sorted(axes))
            if any(n is not r for n in _reductions(r.args[0])):
                checker.error(f"a reduction inside '{r.op}[..]': nested reductions cannot be ordered",
                              r.loc, hint="compute the inner reduction first: `let m = max[j](..);`")
            elif id(r) in after_return:
                checker.error(f"'{r.op}[..]' after a `return` that some items may take: they would not "
                              f"take part in their group's reduction", r.loc,
                              hint="reduce before the `return`, or mask instead of returning: "
                                   "sum[j](select(c, v, 0.0))",
                              note=("the return", after_return[id(r)].loc))
            elif id(r) not in top:
                checker.error(f"'{r.op}[..]' must be reached by every item of its group: it can only "
                              f"stand in the kernel body's top-level statements", r.loc,
                              hint="compute it before the `if` or loop (`let s = sum[j](..);`) and use "
                                   "the value inside; a masked item can add nothing: "
                                   "sum[j](select(c, v, 0.0))")
            elif first_axes is not None and axes != first_axes[0]:
                names = ", ".join(coords[a] for a in first_axes[0])
                checker.error(f"this reduction is over ({', '.join(coords[a] for a in axes)}), another "
                              f"over ({names}): all reductions of a kernel must reduce the same "
                              f"coordinates", r.loc,
                              hint="split the kernel in two, one per grouping",
                              note=("the other reduction", first_axes[1]))
            else:
                r.axes = axes
                if first_axes is None:
                    first_axes = (axes, r.loc)
    if first_axes is None:
        return
    info.group_axes = first_axes[0]
    reduced = [coords[a] for a in info.group_axes]
    views = {p.name for p in k.params if isinstance(p, A.BufferParam) and p.access == "view"}
    lets = {n.name for n in A.iter_nodes(k.body) if isinstance(n, A.Let)}
    lets |= {n.var for n in A.iter_nodes(k.body) if isinstance(n, A.For)}
    _once_per_group(k.body, views, set(reduced) | lets, reduced)


def _once_per_group(block: A.Block, views: set, excluded: set, reduced: list) -> None:
    out = []
    for s in block.stmts:
        out += _once(s, views, excluded, reduced)
    block.stmts[:] = out


def _once(s, views: set, excluded: set, reduced: list) -> list:
    """``[s]``, or a once-per-group write ``s`` under ``if <reduced coordinates> == 0``, after a
    ``let`` of its value when that holds a reduction (which every item must reach)."""
    if isinstance(s, A.If):
        for b in (s.then, s.orelse):
            if isinstance(b, A.Block):
                _once_per_group(b, views, excluded, reduced)
            elif isinstance(b, A.If):
                _once(b, views, excluded, reduced)  # (else if: an If returns itself)
    elif isinstance(s, A.For):
        _once_per_group(s.body, views, excluded, reduced)
    elif isinstance(s, A.Assign) and s.op == "=" and isinstance(s.target, (A.MultiIndex, A.Index, A.Method)):
        # (a `+=` stays every item's: the race check refuses it, pointing at the reduction)
        t = s.target
        if isinstance(t, A.Method) and t.name != "checked":
            return [s]
        base = t.base
        if not (isinstance(base, A.Name) and base.id in views):
            return [s]
        idx = t.indices if isinstance(t, A.MultiIndex) else [t.index] if isinstance(t, A.Index) else t.args
        used = set().union(*(_names(c) for c in idx)) if idx else set()
        if used & excluded or _reductions(s.target):
            return [s]
        cond = None
        for c in reduced:
            eq = A.Binary(s.loc, "==", A.Name(s.loc, c), A.IntLit(s.loc, 0, None, "0"))
            cond = eq if cond is None else A.Binary(s.loc, "&&", cond, eq)
        pre = []
        if _reductions(s.value):  # (a name no program can spell)
            name = f"once.{s.loc.line}.{s.loc.column}"
            pre = [A.Let(s.loc, name, None, s.value)]
            s.value = A.Name(s.loc, name)
        w = A.If(s.loc, cond, A.Block(s.loc, [s]), None)
        w.once_per_group = True
        return pre + [w]
    return [s]


def check_reduction(checker, e: A.GroupReduce):
    """The type of ``e`` (``None`` after an error): its operand's, a scalar of a type the
    reduction takes (literals take their default type)."""
    if e.axes is None:
        for a in e.args:
            checker.expr(a)
        if not getattr(e, "prepared", False) and e.op not in REDUCTIONS:
            checker.error(f"'{e.op or 'this expression'}[..](..)' is not a reduction", e.loc,
                          hint="reductions across items are " + ", ".join(f"{n}[..](e)" for n in REDUCTIONS))
        elif not getattr(e, "prepared", False):
            checker.error(f"'{e.op}[..]' reduces across the items of a kernel: it cannot stand in a "
                          f"function or a parameter's clause, only in the kernel body", e.loc,
                          hint="reduce in the kernel body and pass the value in")
        return None  # (prepare_groups reported why)
    (a,) = e.args
    t = checker.expr(a)
    if t is None:
        return None
    if isinstance(t, T.VectorType):
        checker.error(f"'{e.op}[..]' reduces a scalar, got '{t}'", a.loc,
                      hint=f"reduce each component: {e.op}[..](v[0]), ...")
        return None
    if T.is_literal(t):
        checker.default(a)
        t = a.ty
    s = T.scalar_of(t)
    want = REDUCTIONS[e.op]
    ok = {"numeric": s.is_numeric and not s.is_bool, "bool": s.is_bool,
          "integer or bool": s.is_int or s.is_bool}[want]
    if s.is_index:
        ok = False
        want = "a numeric type other than 'index' (convert, e.g. i32(c))"
    if not ok:
        checker.error(f"'{e.op}[..]' needs a {want} value, got '{t}'", a.loc,
                      hint={"bool": "compare first, e.g. all[j](x[i, j] > 0.0)",
                            "integer or bool": "and/or combine integer bits or bools"}.get(want))
        return None
    return t
