"""Race diagnostics: a plain view write (``y[c] = v``, ``y[c] += v``, ``y.checked(c) = v``) must
reach an element no other item writes (``docs/language.md``, views).

On a GPU the items run at once, so two items storing to one element race (the last store wins
in no defined order; a ``+=`` loses updates). The checker proves the writes of each view distinct
per item with :func:`kernc.frontend.injective.is_injective_in_items` (every pair of the view's
write statements, each with itself too) and the view's layout injective
(:func:`~kernc.frontend.injective.layout_is_injective`); a write it cannot prove is a located error
pointing at the atomic form (``y.atomic(c) += v``). A write under ``if j == u`` (``u`` the same for
every item) is done by the items with that ``j`` only, so ``if thread_id == 0 { y[0] = v; }`` --
one item writing -- is accepted. A plain write to a view that is also updated atomically races
with those updates and is an error too.
"""

from __future__ import annotations

from kernc.dialect.strided import Poly

from . import ast as A
from .injective import Form, FormBuilder, is_injective_in_items, layout_is_injective, thread_id_form


def check_view_races(checker, kernel: A.Kernel, info) -> None:
    """Report the racy view writes of ``kernel`` (checked, with ``info`` its ``KernelInfo``)
    through ``checker.error``."""
    if not any(p.kind == "buffer" and p.buffer is not None and p.buffer.is_view for p in info.params):
        return  # (no view: nothing to walk)
    body = kernel.body
    lets, reassigned = {}, set()
    for n in A.iter_nodes(body):
        if isinstance(n, A.Let) and n.sym is not None:
            lets[id(n.sym)] = n.value
        elif isinstance(n, A.Assign) and n.sym is not None and n.sym.kind == "local":
            reassigned.add(id(n.sym))
    for k in reassigned:
        lets.pop(k, None)
    problem = info.problem_poly if info.problem_poly is not None else Poly.sym(info.problem_size)
    builder = FormBuilder(info.coords, info.extents, problem, lets)
    n_items = max(1, len(info.coords))
    sites: dict = {}      # view symbol id -> [(forms, pins, stmt)]
    atomics: dict = {}    # view symbol id -> first atomic statement
    symbols: dict = {}
    _walk(body.stmts, {}, builder, n_items, sites, atomics, symbols)
    for key, writes in sites.items():
        sym = symbols[key]
        if key in atomics:
            first = atomics[key]
            for _, _, s in writes:
                checker.error(f"this write of '{sym.name}' races with the atomic updates of "
                              f"'{sym.name}' by other items", s.loc,
                              hint=f"update it atomically too (`{sym.name}.atomic(...) += v;`), or "
                                   f"write it in another kernel",
                              note=(f"'{sym.name}' is updated atomically here", first.loc))
            continue
        if not layout_is_injective(sym.buffer.layout):
            checker.error(f"'{sym.name}' is written by several items, but its layout "
                          f"'{sym.buffer.layout_text}' maps several coordinates to one element: "
                          f"the writes may race", writes[0][2].loc,
                          hint=f"use `{sym.name}.atomic(...) += v;` to accumulate, or a layout "
                               f"whose strides do not overlap",
                          note=(f"'{sym.name}' is declared here", sym.loc))
            continue
        reported = set()
        for j, (fj, pj, sj) in enumerate(writes):
            for i in range(j + 1):
                fi, pi, si = writes[i]
                if id(sj) in reported:
                    break
                if is_injective_in_items(fj, fi, n_items=n_items, extents=builder.extents,
                                         pins=pj, other_pins=pi):
                    continue
                reported.add(id(sj))
                method = "atomic" if sj.op in ("+=", "-=") else "atomic_max"
                op = sj.op if sj.op in ("+=", "-=") else "="
                hint = (f"to accumulate from several items, update atomically: "
                        f"`{sym.name}.{method}(...) {op} v;`" if sj.op != "=" else
                        f"if several items may write one element, combine them atomically "
                        f"(`{sym.name}.atomic(...) += v;`, `.atomic_min`, `.atomic_max`), or "
                        f"guard the write so one item does it (`if thread_id == 0 {{ .. }}`)")
                if info.group_axes and sj.op in ("+=", "-="):  # (groups.py: a reduction does it)
                    c = info.coords[info.group_axes[-1]].name
                    hint += f"; or sum across the items: `{sym.name}[..] = sum[{c}](v);`"
                if i == j:
                    checker.error(f"data race: this write of '{sym.name}' may reach one element "
                                  f"from several items (its coordinates are not provably distinct "
                                  f"per item)", sj.loc, hint=hint)
                else:
                    checker.error(f"data race: this write of '{sym.name}' and the one at line "
                                  f"{si.loc.line} may reach one element from two items", sj.loc,
                                  hint=hint, note=(f"the other write of '{sym.name}'", si.loc))


def _walk(stmts, pins, builder, n_items, sites, atomics, symbols) -> None:
    for s in stmts:
        if isinstance(s, A.Assign):
            sym = s.sym
            if sym is None or sym.kind != "buffer" or sym.buffer is None or not sym.buffer.is_view:
                continue
            coords = getattr(s.target, "coords", None)
            if coords is None:
                continue
            symbols[id(sym)] = sym
            if s.atomic is not None:
                atomics.setdefault(id(sym), s)
                continue
            if len(coords) == 1 and getattr(coords[0], "layers", None) is not None:
                forms = [None]  # a layout application: not analysed
            else:
                forms = [builder.form(c) for c in coords]
            sites.setdefault(id(sym), []).append((forms, dict(pins), s))
        elif isinstance(s, A.If):
            _walk(s.then.stmts, {**pins, **_pins(s.cond, builder, n_items)}, builder, n_items,
                  sites, atomics, symbols)
            if isinstance(s.orelse, A.Block):
                _walk(s.orelse.stmts, pins, builder, n_items, sites, atomics, symbols)
            elif isinstance(s.orelse, A.If):
                _walk([s.orelse], pins, builder, n_items, sites, atomics, symbols)
        elif isinstance(s, A.For):
            _walk(s.body.stmts, pins, builder, n_items, sites, atomics, symbols)


def _pins(cond, builder: FormBuilder, n_items: int) -> dict:
    """Item coordinate -> a key of the uniform value ``cond`` fixes it to (``j == u``, ``u ==
    j``, and-ed with ``&&``; ``thread_id == u`` fixes them all)."""
    out: dict = {}
    if isinstance(cond, A.Binary) and cond.op == "&&":
        return {**_pins(cond.left, builder, n_items), **_pins(cond.right, builder, n_items)}
    if not (isinstance(cond, A.Binary) and cond.op == "=="):
        return out
    a, b = builder.form(cond.left), builder.form(cond.right)
    if a is None or b is None:
        return out
    diff = a + b.scale(Poly.const(-1))
    if diff.has_loop:
        return out
    items = diff.items()
    rest = Form.make({}, diff.const)
    tid = thread_id_form(builder.extents).items()
    for sign in (1, -1):
        if items and items == {k: c * Poly.const(sign) for k, c in tid.items()}:
            return {k: ("t", sign, rest) for k in range(n_items)}
    if len(items) == 1:
        ((k, c),) = items.items()
        if c.is_const and c.value in (1, -1):
            out[k] = ("x", c.value, rest)
    return out
