"""Checking statements: ``let``, assignments (variables, outputs, pair outputs, view elements),
``if``, ``for`` and ``return``; and the control-flow facts the lowering needs (a ``return`` inside
``if``/``for``, outputs assigned on every path).
"""

from __future__ import annotations

from typing import Optional

from . import ast as A
from . import types as T
from .diagnostics import did_you_mean
from .language import ATOMIC_TYPES, PAIR_MEMBERS, VIEW_ATOMIC_METHODS
from .names import CheckerBase
from .symbols import BufferInfo, Symbol


class StatementChecks(CheckerBase):
    """Statements; uses the expressions (``expr``, ``coerce``, ``unify``, ``retype``, ``default``,
    ``component_index``) and the views (``view_of``, ``view_access``) of the checker."""

    def check_block(self, block: A.Block, new_scope: bool = True, extra: Optional[dict] = None) -> None:
        if new_scope:
            self.scopes.append(dict(extra or {}))
        for s in block.stmts:
            self.stmt(s)
        if new_scope:
            self.scopes.pop()

    def stmt(self, s: A.Stmt) -> None:
        try:
            self._stmt(s)
        except RecursionError as err:  # the innermost statement names where (the caller reports it)
            if getattr(err, "kernc_loc", None) is None:
                err.kernc_loc = s.loc
            raise

    def _stmt(self, s: A.Stmt) -> None:
        if isinstance(s, A.Let):
            self.let(s)
        elif isinstance(s, A.Assign):
            self.assign(s)
        elif isinstance(s, A.If):
            self.cond(s.cond)
            self.check_block(s.then)
            if isinstance(s.orelse, A.Block):
                self.check_block(s.orelse)
            elif isinstance(s.orelse, A.If):
                self.stmt(s.orelse)
        elif isinstance(s, A.For):
            self.for_(s)
        elif isinstance(s, A.Return):
            self.return_(s)
        else:  # pragma: no cover - the parser builds no other statements
            self.error(f"unsupported statement {type(s).__name__}", s.loc)

    def cond(self, e: A.Expr) -> None:
        t = self.expr(e)
        if t is None:
            return
        if t != T.BOOL:
            self.error(f"condition must be 'bool', got '{t}'", e.loc,
                       hint="compare explicitly, e.g. `x != 0`" if T.scalar_of(t).is_numeric else None)

    def let(self, s: A.Let) -> None:
        t = self.expr(s.value)
        declared, literal = None, False
        if s.type_name is not None:
            declared = self.type_named(s.type_name, s.type_loc or s.loc)
        if t is not None:
            if declared is not None and isinstance(t, T.VectorType):
                # the declared type is a scalar type (the grammar has no vector types there):
                # `let v: f32 = [1.0, 2.0]` made an f32[2], silently
                self.error(f"type mismatch in the initializer of '{s.name}': expected '{declared}', got "
                           f"'{t}'", s.value.loc,
                           hint=f"a declared type is a scalar type; for a vector, leave it out or convert "
                                f"the value: `let {s.name} = {declared}(...);`")
                t = None
            elif declared is not None:
                if not self.coerce(s.value, declared, f"the initializer of '{s.name}'"):
                    t = None
                else:
                    t = declared
            else:
                literal = T.is_literal(t)
                self.default(s.value)
                t = s.value.ty
        if not self.name_free(s.name, s.loc, "a variable"):
            return
        sym = Symbol(s.name, "local", t, s.loc, literal_default=literal)
        s.sym = sym
        self.scopes[-1][s.name] = sym

    def for_(self, s: A.For) -> None:
        lt = self.expr(s.start)
        rt = self.expr(s.stop)
        ty = None
        if lt is not None and rt is not None:
            ty = self.unify(s.start, s.stop, "..", s.loc)
            if ty is not None:
                # a vector of integer literals (`[0, 1]..3`) is no integer bound: it passed as one
                if T.is_literal(ty) and isinstance(ty, T.ScalarType) and ty.is_int:
                    # literal bounds: an `index` loop where the variable is a view coordinate
                    # (`for k in 0..64 { a[i, k] }`), an i32 loop otherwise
                    ty = T.INDEX if _is_coordinate_in(s.var, s.body, self.is_view_name) else T.I32
                    self.retype(s.start, ty)
                    self.retype(s.stop, ty)
                if not isinstance(ty, T.ScalarType) or not ty.is_int:
                    if T.is_literal(ty):
                        if isinstance(ty, T.ScalarType):
                            ty = T.FLOAT_LIT
                        self.default(s.start)
                        self.default(s.stop)
                    self.error(f"loop bounds must be integers, got '{ty}'", s.loc)
                    ty = None
        scope = {}
        if self.name_free(s.var, s.loc, "a loop variable"):
            sym = Symbol(s.var, "loopvar", ty, s.loc)
            s.sym = sym
            scope[s.var] = sym
        self.check_block(s.body, extra=scope)

    def _broken_buffer(self, base) -> bool:
        """Whether ``base`` names a buffer whose declaration failed (an error was reported there:
        uses of it report nothing more)."""
        sym = self.lookup(base.id) if isinstance(base, A.Name) else None
        return sym is not None and sym.kind == "buffer" and sym.buffer is None

    def view_assign(self, s: A.Assign) -> bool:
        """``x[i, j] op= v`` / ``x.checked(i, j) op= v`` on a view (True if ``s`` targets a view or
        view syntax; errors reported)."""
        target = s.target
        if isinstance(target, A.Method):
            sym = self.view_of(target.base)
            if sym is not None and target.name in VIEW_ATOMIC_METHODS:
                self.atomic_assign(s, sym)
                return True
            if sym is None or target.name != "checked":
                self.expr(s.value)
                if sym is None and self._broken_buffer(target.base):
                    return True  # its declaration's error was reported
                if sym is None:
                    known = self.lookup(target.base.id) if isinstance(target.base, A.Name) else None
                    what = f"'{target.base.id}' is not a view" if known is not None else \
                        f"unknown name '{target.base.id}'"
                    self.error(f"cannot assign to '.{target.name}(...)': {what}", target.loc)
                else:
                    self.error(f"cannot assign to '{sym.name}.{target.name}(...)'; a checked write "
                               f"is `{sym.name}.checked(i, j) = v;`", target.loc)
                return True
            args = target.args
        elif isinstance(target, A.MultiIndex):
            sym = self.view_of(target.base)
            if sym is None:
                self.expr(s.value)
                if self._broken_buffer(target.base):
                    return True  # its declaration's error was reported
                name = target.base.id if isinstance(target.base, A.Name) else "?"
                self.error(f"'{name}' is not a view: x[i, j] = v writes a 'view' buffer",
                           target.loc, hint="declare N-D buffers `view`")
                return True
            args = target.indices
        elif isinstance(target, A.Index) and self.view_of(target.base) is not None:
            sym = target.base.sym
            args = [target.index]
        else:
            return False
        vt = self.expr(s.value)
        s.sym = sym
        b = sym.buffer
        if not self.view_access(target, sym, args):
            return True
        if s.op not in ("=", "+=", "-=", "*="):
            self.error(f"operator '{s.op}' cannot update view '{sym.name}'; use '=', '+=', '-=' or "
                       f"'*='", s.loc)
            return True
        if vt is not None:
            self.coerce_assigned(s.value, sym.ty, f"assignment to '{sym.name}'", b)
        return True

    def atomic_assign(self, s: A.Assign, sym: Symbol) -> None:
        """``x.atomic(c) += v`` / ``-= v``, ``x.atomic_min(c) = v``, ``x.atomic_max(c) = v``: an
        atomic update of a view element (sets ``s.sym`` and ``s.atomic``, the
        ``kern.view_atomic`` kind)."""
        target = s.target
        vt = self.expr(s.value)
        s.sym = sym
        b = sym.buffer
        if not self.view_access(target, sym, target.args):
            return
        ops = VIEW_ATOMIC_METHODS[target.name]
        spelled = f"{sym.name}.{target.name}(...)"
        if s.op not in ops:
            example = f"`{sym.name}.{target.name}(c) {ops[0]} v;`"
            self.error(f"operator '{s.op}' cannot update '{spelled}'; it takes "
                       f"{' or '.join(repr(o) for o in ops)}", s.loc, hint=f"write {example}")
            return
        storage = str(b.elem)
        allowed = ATOMIC_TYPES[target.name]
        what = "an atomic add" if target.name == "atomic" else f"an atomic {target.name[len('atomic_'):]}"
        if storage not in allowed:
            self.error(f"{what} of '{sym.name}' (a '{storage}' view) is not supported: the GPU does "
                       f"{what} on {', '.join(allowed)}", target.loc,
                       hint="declare the view with one of those element types "
                            "(e.g. count in u32 and convert afterwards)"
                            + (", or update the float's bits in a u32/u64 view"
                               if target.name in ("atomic_or", "atomic_and") else ""),
                       note=(f"'{sym.name}' is declared here", sym.loc))
            return
        if b.compute_elem != b.elem and not (b.elem.bits == 16 and b.compute_elem.name == "f32"):
            self.error(f"an atomic update of '{sym.name}' runs in its storage type '{storage}'; "
                       f"a 'compute' clause does not apply to it", target.loc,
                       note=(f"'{sym.name}' is declared here", sym.loc))
            return
        if b.elem.is_float and target.name == "atomic" and "deterministic" in self.info.attributes:
            self.error(f"@deterministic cannot make '{sym.name}' reproducible: '{spelled} {s.op}' "
                       f"adds floats with one atomic per item, in an order that varies from run "
                       f"to run", target.loc,
                       hint="drop @deterministic, or count in an integer type (integer adds are "
                            "exact in any order)")
            return
        if vt is not None and not self.coerce_assigned(s.value, sym.ty, f"'{spelled} {s.op}'", b):
            return
        op = target.name[len("atomic_"):]
        if target.name == "atomic":
            s.atomic = "add"
        elif op in ("or", "and"):
            s.atomic = {"or": "ori", "and": "andi"}[op]
        elif b.elem.is_float:  # IEEE 754-2019 maximum/minimum: NaN wins, -0.0 < +0.0
            s.atomic = op + "imumf"
        else:
            s.atomic = op + ("u" if b.elem.is_unsigned else "s")

    def assign(self, s: A.Assign) -> None:
        if self.view_assign(s):
            return
        target = s.target
        index = target.index if isinstance(target, A.Index) else None
        inner = target.base if isinstance(target, A.Index) else target
        member = inner if isinstance(inner, A.Member) else None
        base = member.base if member is not None else inner
        assert isinstance(base, A.Name)
        sym = self.lookup(base.id)
        tuple_value = s.value if isinstance(s.value, A.TupleLit) else None
        if tuple_value is not None:
            vt = None
            for x in tuple_value.elems:
                self.expr(x)
        else:
            vt = self.expr(s.value)
        if sym is None:
            self.error(f"unknown name '{base.id}'" + did_you_mean(base.id, self.visible_names()),
                       base.loc)
            return
        base.sym = sym
        s.sym = sym
        op = s.op
        b = sym.buffer if sym.kind == "buffer" else None
        if sym.kind == "buffer":
            if b is None:
                return
            if b.is_view:
                self.error(f"cannot assign to the view '{sym.name}' as a whole: a view is written "
                           f"element by element", base.loc,
                           hint=f"write its elements, e.g. "
                                f"{sym.name}[{', '.join('ijklmn'[:max(1, len(b.dims))])}] = ...",
                           note=(f"'{sym.name}' is declared here", sym.loc))
                return
            if not b.is_output:
                self.error(f"cannot assign to '{sym.name}': it is a read buffer", base.loc,
                           hint="declare it `write` or `add` to produce output",
                           note=(f"'{sym.name}' is declared here", sym.loc))
                return
            if op not in ("=", "+=", "-="):
                self.error(f"operator '{op}' cannot update output '{sym.name}'; use '=', '+=' or '-='",
                           s.loc, hint="compute the value in a `let` variable first")
                return
            if op != "=" and getattr(b.kind, "reduce", "add") != "add":
                # (`write max` takes each item's value; an update of the item's pending value is no
                # maximum of anything the reader could name)
                self.error(f"operator '{op}' cannot update the '{b.kind.name}' output '{sym.name}': it "
                           f"takes each item's value with '='", s.loc,
                           hint=f"compute the value in a `let` variable, then `{sym.name} = value;`")
                return
        elif sym.kind in ("scalar", "fnparam"):
            self.error(f"cannot assign to parameter '{sym.name}'", base.loc,
                       hint=f"copy it into a variable: `let {sym.name}2 = {sym.name};`")
            return
        elif sym.kind == "loopvar":
            self.error(f"cannot assign to loop variable '{sym.name}'", base.loc)
            return
        elif sym.kind == "coord":
            self.error(f"cannot assign to the coordinate '{sym.name}' of 'over'", base.loc,
                       hint=f"copy it into a variable: `let {sym.name}2 = {sym.name};`")
            return
        elif sym.kind in ("size", "builtin"):
            self.error(f"cannot assign to '{sym.name}'", base.loc)
            return
        is_pair = b is not None and b.is_pair
        what = (f"'{sym.name}' is declared '{b.access} {b.pattern_text}'" if b is not None
                else f"'{sym.name}' is a variable")
        if member is not None:
            if not is_pair:
                self.error(f"'.{member.name}' can only be assigned on a pair output; {what}",
                           member.loc, hint="declare the output `write pair` or `add pair`")
                return
            if member.name not in PAIR_MEMBERS:
                self.error(f"pair output '{sym.name}' has no member '.{member.name}'"
                           + did_you_mean(member.name, PAIR_MEMBERS), member.loc)
                return
            if tuple_value is not None:
                self.error(f"a tuple is assigned to the whole pair output: `{sym.name} = (a, b);`",
                           tuple_value.loc)
                return
        elif tuple_value is not None:
            if not is_pair:
                self.error(f"a tuple can only be assigned to a pair output; {what}",
                           tuple_value.loc, hint="declare the output `write pair` or `add pair`")
                return
            if index is not None:
                self.error(f"index a component of pair output '{sym.name}' through "
                           f"'{sym.name}.first[k]' or '{sym.name}.second[k]'", target.loc)
                return
            if len(tuple_value.elems) != 2:
                self.error(f"pair output '{sym.name}' takes a tuple of 2 values (first, second), "
                           f"got {len(tuple_value.elems)}", tuple_value.loc)
                return
        elif is_pair:
            self.error(f"pair output '{sym.name}' takes a tuple: `{sym.name} = (first, second);`",
                       s.value.loc if index is None else target.loc,
                       hint=f"or assign one element: `{sym.name}.first = v;` / "
                            f"`{sym.name}.second += v;`")
            return
        ttype = sym.ty
        if ttype is None:
            return
        if member is not None:
            member.ty = ttype
        if index is not None:
            base.ty = ttype
            if not isinstance(ttype, T.VectorType):
                hint = (f"a buffer's name is the thread's element; coordinate access {sym.name}[i] needs a "
                        f"'view' buffer (`{sym.name}: ... view`, then e.g. `{sym.name}.atomic(i) += v` "
                        f"where items may share an element)") if b is not None else None
                self.error(f"cannot index '{sym.name}' of scalar type '{ttype}'", target.loc, hint=hint)
                return
            if not self.component_index(index, ttype.n):
                return
            ttype = ttype.elem
            target.ty = ttype
        else:
            base.ty = ttype
        values = tuple_value.elems if tuple_value is not None else [s.value]
        if op != "=" and not T.scalar_of(ttype).is_numeric:
            self.error(f"operator '{op}' needs a numeric target, '{sym.name}' is '{ttype}'", s.loc)
            return
        if tuple_value is None and vt is None:
            return
        for v in values:
            if v.ty is None:
                continue
            if op != "=" and isinstance(ttype, T.VectorType) and not isinstance(v.ty, T.VectorType):
                self.coerce_assigned(v, ttype.elem, f"'{op}' on '{sym.name}'", b)
            else:
                self.coerce_assigned(v, ttype, f"assignment to '{sym.name}'", b, _widen_hint(sym, v.ty))

    def coerce_assigned(self, e: A.Expr, target: T.Type, what: str, b: Optional[BufferInfo],
                        hint: Optional[str] = None) -> bool:
        """:meth:`coerce` for a value assigned to ``target``; an output also accepts values of its
        storage type (widened exactly to its compute type: ``e.out_convert = (storage, compute)``)."""
        if b is not None and e.ty is not None and not T.is_literal(e.ty) \
                and b.elem != b.compute_elem and T.scalar_of(e.ty) == b.elem \
                and T.with_scalar(e.ty, b.compute_elem) == target:
            e.out_convert = (b.elem, b.compute_elem)
            return True
        return self.coerce(e, target, what, hint)


def _widen_hint(sym: Symbol, value: Optional[T.Type]) -> Optional[str]:
    """The hint for assigning a ``value`` of another scalar type of the same kind to a ``let`` that
    took its type from an untyped literal (``let acc = 0.0;`` is f32, ``acc += a * b`` f64): type
    the literal, rather than convert the value (which would lose its precision)."""
    if not sym.literal_default or value is None or sym.ty is None:
        return None
    s, t = T.scalar_of(value), T.scalar_of(sym.ty)
    if s == t or s.kind != t.kind or s.kind not in ("int", "float") or T.is_literal(value):
        return None
    zero = "0.0" if s.kind == "float" else "0"
    where = f" (line {sym.loc.line})" if sym.loc is not None else ""
    return (f"'{sym.name}' is '{t}' because its initializer{where} is an untyped literal; give the "
            f"literal the type it needs, e.g. `let {sym.name} = {zero}{s};`, or convert the value: {t}(...)")


def has_nested_return(stmts: list, depth: int = 0) -> bool:
    """Whether a ``return`` of ``stmts`` (a block at nesting ``depth``) sits inside an ``if`` or a ``for``."""
    for s in stmts:
        if isinstance(s, A.Return) and depth > 0:
            return True
        if isinstance(s, A.If):
            if has_nested_return(s.then.stmts, depth + 1):
                return True
            if isinstance(s.orelse, A.Block) and has_nested_return(s.orelse.stmts, depth + 1):
                return True
            if isinstance(s.orelse, A.If) and has_nested_return([s.orelse], depth):
                return True
        if isinstance(s, A.For) and has_nested_return(s.body.stmts, depth + 1):
            return True
    return False


def definitely_assigns(stmts: list, out: Symbol, assigned: bool) -> tuple[bool, bool]:
    """Definite assignment of output ``out`` over ``stmts`` entered with ``assigned``.

    Returns ``(assigned at the end, some path leaves through 'return' unassigned)``.
    """
    leaks = False
    for s in stmts:
        if isinstance(s, A.Assign) and s.sym is out:
            assigned = True
        elif isinstance(s, A.Return):
            return assigned, leaks or not assigned
        elif isinstance(s, A.If):
            branches = [s.then.stmts]
            if isinstance(s.orelse, A.Block):
                branches.append(s.orelse.stmts)
            elif isinstance(s.orelse, A.If):
                branches.append([s.orelse])
            else:
                branches.append([])
            results = [definitely_assigns(b, out, assigned) for b in branches]
            leaks = leaks or any(r[1] for r in results)
            assigned = all(r[0] for r in results)
        elif isinstance(s, A.For):
            _, inner_leaks = definitely_assigns(s.body.stmts, out, assigned)
            leaks = leaks or inner_leaks
    return assigned, leaks


def _is_coordinate_in(var: str, body: A.Block, is_view) -> bool:
    """Whether the name ``var`` occurs in a view coordinate inside ``body`` (``x[.., var + 1]``,
    ``y[var]`` of a 1-D view (``is_view(name)``), ``x.checked(..)``, ``x.in_bounds(..)``,
    ``x.atomic(..)`` or a layout application ``L(..)(var)``)."""
    for node in A.iter_nodes(body):
        if isinstance(node, A.MultiIndex):
            coords = node.indices
        elif isinstance(node, A.Index) and isinstance(node.base, A.Name) and is_view(node.base.id):
            coords = [node.index]
        elif isinstance(node, A.Method):
            coords = node.args
        elif isinstance(node, A.Apply):
            coords = node.coords
        else:
            continue
        if any(isinstance(n, A.Name) and n.id == var for c in coords for n in A.iter_nodes(c)):
            return True
    return False
