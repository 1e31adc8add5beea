"""Reverse mode: the body of ``K_grad`` from a prepared kernel ``K``
(:mod:`kernc.frontend.derivative_prep`), as ``.kern`` source lines.

Per item, L = sum over outputs of ``y_bar * y`` is differentiated by the textbook adjoint method
(Griewank & Walther, *Evaluating Derivatives*, 2nd ed., ch. 3 and 12): a forward sweep, then the
statements' adjoints in reverse order. Each block is emitted as

    forward sweep of the block (its ``let`` s, each float one with an adjoint ``x__adj`` = 0;
    before each assignment of a local, a copy of its old value)
    reverse sweep: for each statement, last first, the old values restored, then its adjoint

so every statement's adjoint sees the values the forward sweep saw. ``if``/``else``: the reverse
sweep restores what the branch assigns, then branches on the same condition and emits the
branch's own forward and reverse sweeps inside. ``for k in a..b`` (static or runtime bounds) is
reversed by **recomputation**: iteration ``k`` is reversed last-first, and when the body assigns
locals declared outside it, the state at the start of iteration ``k`` is recomputed from the state
before the loop (iterations ``a..k`` run again, ``O(n^2)`` body runs for ``n`` iterations); a body
that carries nothing (it only reads and updates outputs) reverses in ``O(n)``. Nothing is stored
per iteration, so the memory stays per-thread registers whatever the trip count.

Outputs are not stored: an assignment ``y = v`` gives ``v`` the adjoint ``y``'s seed held then and
clears it (the last assignment wins), ``y += v`` passes it on. Reads of differentiated buffers
accumulate per item and go out once at the end through the dual accessor (``x_bar += x__adj``);
a view read ``x[c]`` sends its adjoint at once, ``x_bar.atomic(c) += g``.
"""

from __future__ import annotations

from . import ast as A
from . import printer as P
from . import types as T
from .derivative_model import (unwrap, assigned_locals, classify_target, comp, components, local_only, op_of,
                               printed_block)
from .derivative_prep import error, is_float, typed_let, zeros
from .derivative_rules import neg, terms


class Reverse:
    """Emit the reverse sweep of prepared kernel ``kernel``; ``plan`` (a
    :class:`kernc.frontend.derivative.Plan`) names the differentiated parameters, the seeds and
    the gradient buffers."""

    def __init__(self, kernel: A.Kernel, plan, names, source: str):
        self.kernel, self.plan, self.names, self.source = kernel, plan, names, source
        self.local_adj: dict = {}   # local name -> its adjoint's name
        self.read_adj: dict = {}    # (param name, side or None) -> the accumulator's name
        self.out_adj: dict = {}     # (output name, side or None) -> the seed variable's name
        #: ``(prepared loop, text)``: how each loop was reversed (``kernc grad --remarks``)
        self.remarks: list = []

    # ---- the kernel ---------------------------------------------------------------------------

    def body(self) -> list:
        lines: list = []
        for sym in self.kernel.info.params:
            name = sym.name
            if name in self.plan.seeds and not sym.buffer.is_view:  # an output's seed, read once
                sides = ("first", "second") if sym.buffer.is_pair else (None,)
                for side in sides:
                    var = self.out_adj[(name, side)] = self.names.fresh(f"{name}_adj")
                    seed = self.plan.seeds[name] + (f".{side}" if side else "")
                    lines.append(f"let {var} = {seed};")
            elif name in self.plan.wrt and not (sym.kind == "buffer" and sym.buffer.is_view):
                ty = sym.ty if sym.kind == "scalar" else sym.buffer.value_type
                sides = ("first", "second") if sym.kind == "buffer" and sym.buffer.is_pair else (None,)
                for side in sides:
                    var = self.read_adj[(name, side)] = self.names.fresh(f"{name}_adj")
                    lines.append(typed_let(var, ty, zeros(ty)))
        fwd, rev = self.block(self.kernel.body.stmts)
        lines += fwd + rev
        for (name, side), var in self.read_adj.items():
            if side == "second":
                continue
            bar = self.plan.grads[name]
            if side == "first":
                lines.append(f"{bar} += ({var}, {self.read_adj[(name, 'second')]});")
            else:
                lines.append(f"{bar} += {var};")
        return lines

    # ---- statements ---------------------------------------------------------------------------

    def block(self, stmts: list) -> tuple:
        fwd: list = []
        revs: list = []
        for s in stmts:
            f, r = self.stmt(s)
            fwd += f
            revs.append(r)
        return fwd, [line for r in reversed(revs) for line in r]

    def scoped_block(self, stmts: list) -> list:
        fwd, rev = self.block(stmts)
        return P.indent(fwd + rev)

    def stmt(self, s) -> tuple:
        if isinstance(s, A.Let):
            fwd = [f"let {s.name}{': ' + s.type_name if s.type_name else ''} = {P.expr(s.value)};"]
            if not is_float(s.sym.ty):
                return fwd, []
            adj = self.adj_name(s.name)
            fwd.append(typed_let(adj, s.sym.ty, zeros(s.sym.ty)))
            return fwd, self.acc(s.value, adj)
        if isinstance(s, A.Assign):
            return self.assign(s)
        if isinstance(s, A.If):
            saved, restore = self.snapshot(s)
            then = self.scoped_block(s.then.stmts)
            lines = restore + [f"if {P.expr(s.cond)} {{"] + then
            if s.orelse is not None:
                other = s.orelse.stmts if isinstance(s.orelse, A.Block) else [s.orelse]
                lines += ["} else {"] + self.scoped_block(other)
            return saved + self.plain(s), lines + ["}"]
        if isinstance(s, A.For):
            return self.loop(s)
        raise error("this statement has no derivative", s, self.source)  # pragma: no cover

    def plain(self, s) -> list:
        return printed_block([s], local_only)

    def snapshot(self, s) -> tuple:
        """Copies of the outer locals ``s`` assigns, and the statements restoring them."""
        saved, restore = [], []
        for name in assigned_locals(s):
            copy = self.names.fresh(f"{name}_saved")
            saved.append(f"let {copy} = {name};")
            restore.append(f"{name} = {copy};")
        return saved, restore

    def loop(self, s: A.For) -> tuple:
        saved, restore = self.snapshot(s)
        ty = T.default_scalar(s.sym.ty).name
        lo, hi = self.names.fresh("lo"), self.names.fresh("hi")
        rk, k, k2 = self.names.fresh(f"{s.var}_rev"), self.names.fresh(s.var), self.names.fresh(s.var)
        inner = [f"let {k}: {ty} = {lo} + {hi} - 1 - {rk};"] + restore
        carried = assigned_locals(s)
        self.remarks.append((s, (
            f"loop reversed by recomputation: iteration k reruns iterations before it from the state "
            f"before the loop, as it carries {', '.join(repr(c) for c in carried)} (O(n^2) body runs "
            "for n iterations; nothing is stored)") if carried else
            "loop reversed in O(n): its body carries no local from one iteration to the next"))
        if restore:  # recompute the state at the start of iteration k
            inner += ([f"for {k2} in {lo}..{k} {{", f"    let {s.var}: {ty} = {k2};"]
                      + P.indent(printed_block(s.body.stmts, local_only)) + ["}"])
        inner += ["if true {", f"    let {s.var}: {ty} = {k};"] + self.scoped_block(s.body.stmts) + ["}"]
        rev = restore + [f"let {lo}: {ty} = {P.expr(s.start)};", f"let {hi}: {ty} = {P.expr(s.stop)};",
                         f"for {rk} in {lo}..{hi} {{"] + P.indent(inner) + ["}"] + restore
        return saved + self.plain(s), rev

    def assign(self, s: A.Assign) -> tuple:
        t = classify_target(s)
        if t.kind != "local" and t.name not in self.plan.seeds:
            return [], []  # an integer output: no derivative
        if t.kind == "view":
            g = self.names.fresh("g")
            seed = f"{self.plan.seeds[t.name]}{t.coords}" if s.atomic is None else \
                f"{self.plan.seeds[t.name]}.checked({t.coords[t.coords.index('(') + 1:-1]})"
            if s.op not in ("=", "+=", "-="):
                raise error(f"'{s.op}' on the view '{t.name}' has no derivative kernel yet", s, self.source)
            if s.atomic is not None and s.atomic != "add":
                raise error(f"the atomic min/max update of '{t.name}' has no derivative", s, self.source)
            seed = neg(seed) if s.op == "-=" else seed
            return [], [f"let {g} = {seed};"] + self.acc(s.value, g)
        if t.kind == "output":
            if s.op not in ("=", "+=", "-="):
                raise error(f"'{s.op}' on the output '{t.name}' has no derivative kernel yet", s,
                            self.source, hint="compute the value in a 'let' and assign it")
            if isinstance(s.value, A.TupleLit):  # out = (first, second)
                parts = zip(("first", "second"), s.value.elems)
                return [], [line for side, v in parts for line in self.output_part(
                    self.out_adj[(t.name, side)], None, t.ty, s.op, v)]
            return [], self.output_part(self.out_adj[(t.name, t.side)], t.component, t.ty, s.op, s.value)
        # a local
        copy = self.names.fresh(f"{t.name}_saved")
        fwd = [f"let {copy} = {t.name};"] + self.plain(s)
        rev = [f"{t.name} = {copy};"]
        if not is_float(t.ty):
            return fwd, rev
        adj = self.adj_name(t.name)
        ref = f"{adj}[{t.component}]" if t.component is not None else adj
        old = f"{t.name}[{t.component}]" if t.component is not None else t.name
        g = self.names.fresh("g")
        rev += [f"let {g} = {ref};", f"{ref} = {zeros(t.ty) if t.component is None else '0.0'};"]
        if s.op == "=":
            return fwd, rev + self.acc(s.value, g)
        if s.op in ("+=", "-="):  # x + v: the adjoint goes to x unchanged, and (negated) to v
            rev.append(f"{ref} = {g};")
            if s.op == "-=":
                neg_g = self.names.fresh("g")
                rev.append(f"let {neg_g} = {neg(g)};")
                g = neg_g
            return fwd, rev + self.acc(s.value, g)
        binop = s.op[0]
        for i in components(t.ty if t.component is None else T.scalar_of(t.ty)):
            args = [f"{old}[{i}]" if i is not None else old, comp(s.value, i)]
            gi = f"{g}[{i}]" if i is not None else g
            for which, f in terms("binary", binop, args, [t.ty, s.value.ty]):
                if which == 0:
                    rev.append(f"{ref}{f'[{i}]' if i is not None else ''} += {f(gi)};")
                else:
                    rev += self.add_to(s.value, i, f(gi))
        return fwd, rev

    def output_part(self, var: str, component, ty, op: str, value) -> list:
        """The adjoint of ``y[component] op value`` for an output whose seed variable is ``var``."""
        ref = f"{var}[{component}]" if component is not None else var
        g = self.names.fresh("g")
        lines = [f"let {g} = {neg(ref) if op == '-=' else ref};"]
        if op == "=":
            lines.append(f"{ref} = {zeros(ty) if component is None else '0.0'};")
        return lines + self.acc(value, g)

    # ---- expressions --------------------------------------------------------------------------

    def adj_name(self, local: str) -> str:
        if local not in self.local_adj:
            self.local_adj[local] = self.names.fresh(f"{local}_adj")
        return self.local_adj[local]

    def adjoint_of(self, atom):
        """The adjoint variable of operand ``atom`` (a name or a ``pair`` side), or None when it
        has none (a literal, an integer, a parameter that is not differentiated)."""
        if not is_float(atom.ty):
            return None
        if isinstance(atom, A.Name):
            sym = atom.sym
            if sym is None:
                return None
            if sym.kind == "local":
                return self.adj_name(sym.name)
            if sym.kind in ("scalar", "buffer") and sym.name in self.plan.wrt:
                return self.read_adj.get((sym.name, None))
            return None
        if isinstance(atom, A.Member) and isinstance(atom.base, A.Name):
            if atom.base.id in self.plan.wrt:
                return self.read_adj.get((atom.base.id, atom.name))
        return None

    def add_to(self, atom, i, value: str) -> list:
        """``adj(atom)[i] += value`` (the whole adjoint for a scalar ``atom``: broadcasting)."""
        adj = self.adjoint_of(atom)
        if adj is None:
            return []
        if i is not None and isinstance(atom.ty, T.VectorType):
            return [f"{adj}[{i}] += {value};"]
        return [f"{adj} += {value};"]

    def acc(self, e, g: str) -> list:
        """Statements adding ``g`` (a name of ``e``'s type) times de/d(operands) to the operands'
        adjoints; ``e`` is one operation over atoms (or an atom, a read, a vector literal)."""
        e = unwrap(e)
        if not is_float(e.ty):
            return []
        if isinstance(e, (A.Name, A.Member)):
            return self.add_to(e, None, g) if not isinstance(e, A.Name) or not isinstance(e.ty, T.VectorType) \
                else self.add_whole(e, g)
        if isinstance(e, (A.FloatLit, A.IntLit)):
            return []
        view = self.view_read(e)
        if view is not None:
            name, coords = view
            if name not in self.plan.wrt:
                return []
            return [f"{self.plan.grads[name]}.atomic({coords}) += {g};"]
        if isinstance(e, A.VectorLit):
            return [line for i, x in enumerate(e.elems) for line in self.add_to(x, None, f"{g}[{i}]")]
        if isinstance(e, A.Index):
            adj = self.adjoint_of(e.base)
            return [] if adj is None else [f"{adj}[{P.expr(e.index)}] += {g};"]
        if isinstance(e, A.Slice):
            adj = self.adjoint_of(e.base)
            if adj is None:
                return []
            start = e.start.value if e.start is not None else 0
            return [f"{adj}[{start + i}] += {g}[{i}];" for i in range(T.width(e.ty))]
        op = op_of(e)
        if op is None:
            raise error("this expression has no derivative", e, self.source)
        kind, name, args = op
        lines: list = []
        for i in components(e.ty):
            texts = [comp(a, i) for a in args]
            types = [T.scalar_of(a.ty) if a.ty is not None else None for a in args]
            gi = f"{g}[{i}]" if i is not None else g
            for which, f in terms(kind, name, texts, types):
                lines += self.add_to(args[which], i, f(gi))
        return lines

    def add_whole(self, atom, g: str) -> list:
        adj = self.adjoint_of(atom)
        return [] if adj is None else [f"{adj} += {g};"]

    def view_read(self, e):
        """``(view name, coordinate text)`` of a view read ``x[i, j]`` / ``x.checked(i, j)``."""
        base = getattr(e, "base", None)
        if not isinstance(base, A.Name) or base.sym is None or base.sym.kind != "buffer" \
                or not base.sym.buffer.is_view:
            return None
        if isinstance(e, A.MultiIndex):
            return base.id, ", ".join(P.expr(i) for i in e.indices)
        if isinstance(e, A.Index):
            return base.id, P.expr(e.index)
        if isinstance(e, A.Method) and e.name == "checked":
            return base.id, ", ".join(P.expr(i) for i in e.args)
        return None
