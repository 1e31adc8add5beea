"""Types of expressions: literals and their typing by context, names, operators, calls and
conversions, vector components and slices, pair members; unification and coercion (no implicit
conversions; see the language rules in :mod:`kernc.frontend.check`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

from kernc.dialect import accessors
from kernc.support.errors import SourceLocation
from kernc.support.exact_numbers import decimal_fraction

from . import ast as A
from . import types as T
from .diagnostics import did_you_mean
from .groups import check_reduction
from .language import BITWISE, BUILTIN_FUNCS, COMPARE, FLOAT_UNARY, INTEGER_ONLY, LOGIC, PAIR_MEMBERS, SHIFT
from .names import CheckerBase


class ExpressionChecks(CheckerBase):
    """Expressions; uses the views (``view_of``, ``view_read``) and layouts (``is_layout_name``) of
    the checker."""

    # ---- types: unification and literal retyping --------------------------------------------

    def coerce(self, e: A.Expr, target: T.Type, what: str, typed_hint: Optional[str] = None) -> bool:
        """Make ``e`` (already checked) have type ``target``, retyping literals; report mismatches
        (``typed_hint``: said instead of the default hint for a typed value of another type)."""
        t = e.ty
        if t is None:
            return False
        if t == target:
            return True
        if T.width(t) != T.width(target) or isinstance(t, T.VectorType) != isinstance(target, T.VectorType):
            self.error(f"type mismatch in {what}: expected '{target}', got '{t}'", e.loc)
            return False
        s, ts = T.scalar_of(t), T.scalar_of(target)
        if s.literal and _literal_fits(s, ts):
            return self.retype(e, ts)
        hint = None
        if s.literal and s.is_float and ts.is_int and isinstance(e, A.Call):
            msg = (f"type mismatch in {what}: '{e.func}(...)' gives a float, which cannot be "
                   f"'{ts}'")
            hint = f"math functions compute in floats; convert the result: {ts}({e.func}(...))"
        elif s.literal and s.is_float and ts.is_int:
            msg = f"type mismatch in {what}: a float literal cannot be '{ts}'"
        else:
            msg = f"type mismatch in {what}: expected '{target}', got '{t}'"
            if not s.literal:
                hint = typed_hint or f"convert explicitly: {ts}(...)"
        self.error(msg, e.loc, hint=hint)
        return False

    def default(self, e: A.Expr) -> None:
        if e.ty is not None and T.is_literal(e.ty):
            self.retype(e, T.default_scalar(T.scalar_of(e.ty)))

    def retype(self, e: A.Expr, s: T.ScalarType) -> bool:
        """Give the literal-typed subtree ``e`` the scalar type ``s`` (vectors keep their length)."""
        if e.ty is None or not T.is_literal(e.ty):
            return True
        ok = True
        if isinstance(e, A.IntLit):
            if s.is_int:
                lo, hi = T.int_range(s)
                if not lo <= e.value <= hi:
                    self.error(f"integer literal {e.text} is out of range for '{s}' ({lo}..{hi})",
                               e.loc)
                    ok = False
            elif s.is_float:
                ok = self.float_literal_fits(e, s)
        elif isinstance(e, A.FloatLit):
            if s.is_float and not s.literal:
                ok = self.float_literal_fits(e, s)
            elif not s.is_float:
                self.error(f"a float literal cannot be '{s}'", e.loc)
                ok = False
        elif isinstance(e, (A.Unary, A.Binary, A.Call, A.VectorLit, A.Index, A.Slice)):
            if s.is_float and T.scalar_of(e.ty) is T.INT_LIT and _integer_only(e):
                # 7 / 2 or 1 << 2 where a float is needed: integer semantics, then a conversion
                ok = self.retype(e, T.I32)
                e.computed_as = e.ty
                e.ty = T.with_scalar(e.ty, s)
                return ok
            if isinstance(e, A.Binary) and e.op in SHIFT and s.is_int and not s.literal:
                ok = self.shift_amount_ok(e, s)
            for c in _children(e):
                if c.ty is not None and T.is_literal(c.ty):
                    if isinstance(e, A.Binary) and e.op in SHIFT and c is e.right and s.is_float:
                        continue
                    ok = self.retype(c, s) and ok
        e.ty = T.with_scalar(e.ty, s)
        return ok

    def float_literal_fits(self, e, s: T.ScalarType) -> bool:
        """Report a literal whose value overflows float type ``s`` (``1e400`` as f32, ``70000.0``
        as f16); values that round to zero are fine."""
        if T.exact_float(literal_fraction(e), s) is None:
            self.error(f"{'float' if isinstance(e, A.FloatLit) else 'integer'} literal {e.text} is "
                       f"out of range for '{s}'", e.loc,
                       hint="the largest finite f16 is 65504, bf16/f32 about 3.4e38, f64 about 1.8e308")
            return False
        return True

    def shift_amount_ok(self, e: A.Binary, s: T.ScalarType) -> bool:
        """A constant shift amount must lie in ``[0, bits)`` of the shifted type ``s`` (PTX and
        LLVM do not agree on larger or negative amounts)."""
        amount = e.right
        if isinstance(amount, A.IntLit) and not 0 <= amount.value < s.bits:
            self.error(f"shift amount {amount.value} is out of range for '{s}' (0..{s.bits - 1})",
                       amount.loc)
            return False
        return True

    def unify(self, l: A.Expr, r: A.Expr, op: str, loc: SourceLocation) -> Optional[T.Type]:
        """The common type of two checked operands (broadcasting scalars); retypes literals."""
        lt, rt = l.ty, r.ty
        n = None
        if isinstance(lt, T.VectorType) and isinstance(rt, T.VectorType) and lt.n != rt.n:
            self.error(f"vector lengths differ in '{op}': {lt.n} and {rt.n}", loc)
            return None
        for t in (lt, rt):
            if isinstance(t, T.VectorType):
                n = t.n
        s = self.unify_scalar(T.scalar_of(lt), T.scalar_of(rt), op, loc)
        if s is None:
            return None
        if not s.literal:
            for e in (l, r):
                if T.is_literal(e.ty):
                    if not self.retype(e, s):
                        return None
        return T.VectorType(s, n) if n is not None else s

    def unify_scalar(self, a: T.ScalarType, b: T.ScalarType, op: str, loc) -> Optional[T.ScalarType]:
        if a == b:
            return a
        if a.literal and b.literal:
            return T.FLOAT_LIT if (a.is_float or b.is_float) else T.INT_LIT
        if a.literal or b.literal:
            lit, conc = (a, b) if a.literal else (b, a)
            if _literal_fits(lit, conc):
                return conc
            if lit.is_float and conc.is_int:
                self.error(f"a float literal cannot be used as '{conc}' in '{op}'", loc,
                           hint="convert explicitly, e.g. f32(x)")
            else:
                self.error(f"cannot use an {lit.name} as '{conc}' in '{op}'", loc)
            return None
        if a.is_int and b.is_int:
            if a.signed != b.signed and not (a.is_index or b.is_index):
                s, u = (a, b) if a.signed else (b, a)
                self.error(f"cannot mix signed '{s}' and unsigned '{u}' in '{op}'", loc,
                           hint=f"cast one operand, e.g. {u}(...) or {s}(...)")
            else:
                wide = b if (b.is_index or b.bits > a.bits) else a
                self.error(f"mismatched integer types '{a}' and '{b}' in '{op}'", loc,
                           hint=f"cast one operand, e.g. {wide}(...)")
            return None
        if a.is_float and b.is_float:
            wide = a if a.bits >= b.bits else b
            self.error(f"mismatched float types '{a}' and '{b}' in '{op}'", loc,
                       hint=f"cast one operand, e.g. {wide}(...)")
            return None
        if a.is_numeric and b.is_numeric:
            f, i = (a, b) if a.is_float else (b, a)
            self.error(f"cannot mix '{a}' and '{b}' in '{op}': no implicit int/float conversion", loc,
                       hint=f"convert explicitly, e.g. {f}(...)")
            return None
        self.error(f"cannot mix '{a}' and '{b}' in '{op}'", loc)
        return None

    # ---- expressions ------------------------------------------------------------------------

    def expr(self, e: A.Expr) -> Optional[T.Type]:
        """Check ``e``; set and return ``e.ty`` (None after an error, which is already reported)."""
        t = self._expr(e)
        e.ty = t
        return t

    def _expr(self, e: A.Expr) -> Optional[T.Type]:
        if isinstance(e, A.IntLit):
            if e.suffix is None:
                return T.INT_LIT
            t = T.SCALARS[e.suffix]
            lo, hi = T.int_range(t)
            if not lo <= e.value <= hi:
                self.error(f"integer literal {e.text} is out of range for '{t}' ({lo}..{hi})", e.loc)
                return None
            return t
        if isinstance(e, A.FloatLit):
            if e.suffix is None:
                return T.FLOAT_LIT
            t = T.SCALARS[e.suffix]
            if not self.float_literal_fits(e, t):
                return None
            return t
        if isinstance(e, A.BoolLit):
            return T.BOOL
        if isinstance(e, A.Name):
            return self.name(e)
        if isinstance(e, A.Unary):
            return self.unary(e)
        if isinstance(e, A.Binary):
            return self.binary(e)
        if isinstance(e, A.Call):
            return self.call(e)
        if isinstance(e, A.GroupReduce):
            return check_reduction(self, e)
        if isinstance(e, A.VectorLit):
            return self.vector(e)
        if isinstance(e, A.Index) and self.view_of(e.base) is not None:
            e.view_sym = e.base.sym
            return self.view_read(e)
        if isinstance(e, A.MultiIndex):
            sym = self.view_of(e.base)
            if sym is None:
                bt = self.expr(e.base)
                if bt is not None:
                    what = f"'{e.base.id}'" if isinstance(e.base, A.Name) else "a value"
                    self.error(f"{what} is not a view: x[i, j] indexes a 'view' buffer", e.loc,
                               hint="a vector component is v[k]; declare N-D buffers `view`")
                return None
            e.view_sym = sym
            return self.view_read(e)
        if isinstance(e, A.Method):
            return self.view_read(e)
        if isinstance(e, A.Apply):
            self.error(f"applying layout '{e.func}' gives a coordinate, which can only be the "
                       f"coordinate of a view access", e.loc,
                       hint=f"e.g. x.checked({e.func}(...)(m, k)) or x[{e.func}(...)(m, k)]")
            return None
        if isinstance(e, A.Index):
            bt = self.expr(e.base)
            if bt is None:
                return None
            if not isinstance(bt, T.VectorType):
                what = f"'{e.base.id}'" if isinstance(e.base, A.Name) else "a value"
                hint = None
                if isinstance(e.base, A.Name) and e.base.sym is not None and e.base.sym.kind == "buffer":
                    hint = ("a buffer's name is the thread's element; coordinate access x[i] "
                            "needs a 'view' buffer (declare it as 'x: T[dims] view')")
                self.error(f"cannot index {what} of scalar type '{bt}'", e.loc, hint=hint)
                return None
            if not self.component_index(e.index, bt.n):
                return None
            return bt.elem
        if isinstance(e, A.Slice):
            bt = self.expr(e.base)
            if bt is None:
                return None
            if not isinstance(bt, T.VectorType):
                self.error(f"cannot slice a value of scalar type '{bt}'", e.loc)
                return None
            bounds = []
            for b, dflt in ((e.start, 0), (e.stop, bt.n)):
                if b is None:
                    bounds.append(dflt)
                elif isinstance(b, A.IntLit):
                    b.ty = T.INDEX
                    bounds.append(b.value)
                else:
                    self.error("slice bounds must be integer literals", b.loc)
                    return None
            lo, hi = bounds
            if not 0 <= lo < hi <= bt.n:
                self.error(f"slice [{lo}:{hi}] is out of range for a {bt.n}-component value", e.loc)
                return None
            e.bounds = (lo, hi)
            return T.VectorType(bt.elem, hi - lo)
        if isinstance(e, A.Member):
            return self.member(e)
        if isinstance(e, A.TupleLit):
            for x in e.elems:
                self.expr(x)
            self.error("a tuple (a, b) can only be the value assigned to a pair output", e.loc,
                       hint="declare the output `write pair` or `add pair` and write `out = (a, b);`")
            return None
        self.error(f"unsupported expression {type(e).__name__}", e.loc)  # pragma: no cover
        return None

    def member(self, e: A.Member) -> Optional[T.Type]:
        """``u.first`` / ``u.second`` of a ``pair`` read: the element's value type."""
        base = e.base
        if isinstance(base, A.Name):
            sym = self.lookup(base.id)
            b = sym.buffer if sym is not None and sym.kind == "buffer" else None
            if b is not None and b.is_pair and not b.is_output:
                base.sym = sym
                base.ty = sym.ty
                if e.name not in PAIR_MEMBERS:
                    self.error(f"pair read '{base.id}' has no member '.{e.name}'"
                               + did_you_mean(e.name, PAIR_MEMBERS), e.loc,
                               hint=f"'{base.id}.first' and '{base.id}.second' are its two elements")
                    return None
                if sym not in self.used_reads:
                    self.used_reads.append(sym)
                return sym.ty
        bt = self.expr(base)
        if bt is None:
            return None
        if e.name in PAIR_MEMBERS:
            what = "a value"
            if isinstance(base, A.Name) and base.sym is not None:
                b = base.sym.buffer if base.sym.kind == "buffer" else None
                what = (f"'{base.id}' is read '{b.pattern_text}'" if b is not None
                        else f"'{base.id}' is a {base.sym.kind}")
            self.error(f"'.{e.name}' needs a buffer read with 'pair'; {what}", e.loc,
                       hint="declare it `read pair` (elements t and t+1)")
        else:
            self.error(f"unknown member '.{e.name}'" + did_you_mean(e.name, PAIR_MEMBERS),
                       e.loc, hint="only pair reads have members: '.first' and '.second'")
        return None

    def name(self, e: A.Name) -> Optional[T.Type]:
        sym = self.lookup(e.id)
        if sym is None:
            if e.id in T.SCALARS:
                self.error(f"'{e.id}' is a type, not a value", e.loc,
                           hint=f"to convert a value write {e.id}(x)")
            elif e.id in BUILTIN_FUNCS:
                self.error(f"'{e.id}' is a function; call it as {e.id}(...)", e.loc)
            elif getattr(self, "in_accessor", False):
                self.error(f"unknown name '{e.id}' in accessor arguments"
                           + did_you_mean(e.id, self.visible_names()), e.loc,
                           hint="strided arguments may use integer scalar parameters, size symbols "
                                "and literals")
            else:
                self.error(f"unknown name '{e.id}'" + did_you_mean(e.id, self.visible_names()), e.loc)
            return None
        e.sym = sym
        if sym.kind == "buffer":
            b = sym.buffer
            if b is None:
                return None
            if b.is_view:
                rank = len(b.dims)
                coords = ", ".join("ijklmnop"[:rank])
                self.error(f"'{e.id}' is a view: access its elements by coordinates", e.loc,
                           hint=f"{e.id}[{coords}], {e.id}.checked({coords}) or "
                                f"{e.id}.in_bounds({coords})")
                return None
            if b.is_output:
                self.error(f"cannot read output '{e.id}' (declared '{b.access}')", e.loc,
                           hint="keep the value in a `let` variable and assign that to the output")
                return None
            if b.is_pair:
                self.error(f"'{e.id}' is read '{b.pattern_text}': use '{e.id}.first' or "
                           f"'{e.id}.second'", e.loc,
                           hint="'.first' is the thread's element t, '.second' element t+1"
                           if b.kind is accessors.PAIR else
                           "'.first' is the element at off + t*s, '.second' at off + (t+1)*s")
                return None
            if sym not in self.used_reads:
                self.used_reads.append(sym)
            return sym.ty
        if sym.ty is None:
            return None
        return sym.ty

    def unary(self, e: A.Unary) -> Optional[T.Type]:
        t = self.expr(e.operand)
        if t is None:
            return None
        s = T.scalar_of(t)
        if e.op == "-" and not s.is_numeric:
            self.error(f"cannot negate a value of type '{t}'", e.loc)
            return None
        if e.op == "!" and not s.is_bool:
            self.error(f"'!' needs a bool operand, got '{t}'", e.loc,
                       hint="use '~' for bitwise not" if s.is_int else None)
            return None
        if e.op == "~" and not s.is_int:
            self.error(f"'~' needs an integer operand, got '{t}'", e.loc,
                       hint="use '!' for logical not" if s.is_bool else None)
            return None
        return t

    def binary(self, e: A.Binary) -> Optional[T.Type]:
        lt = self.expr(e.left)
        rt = self.expr(e.right)
        if lt is None or rt is None:
            return None
        op = e.op
        if op in SHIFT:
            for side, st in ((e.left, lt), (e.right, rt)):
                if not T.scalar_of(st).is_int:
                    self.error(f"'{op}' needs integer operands, got '{st}'", side.loc)
                    return None
        t = self.unify(e.left, e.right, op, e.loc)
        if t is None:
            return None
        s = T.scalar_of(t)
        if op in LOGIC:
            if not s.is_bool:
                self.error(f"'{op}' needs bool operands, got '{t}'", e.loc,
                           hint="use '&' / '|' for bitwise operations" if s.is_int else None)
                return None
            return t
        if op in COMPARE:
            # two literal operands compare in their common type (7 / 2 < 3.5 in f32: the int side
            # converts, as in C), which a literal operand defaulted alone would not be
            for side in (e.left, e.right):
                if T.is_literal(side.ty):
                    self.retype(side, T.default_scalar(s))
            t = T.default_type(t)
            if op not in ("==", "!=") and T.scalar_of(t).is_bool:
                self.error(f"'{op}' cannot compare bools", e.loc)
                return None
            return T.with_scalar(t, T.BOOL)
        if op in BITWISE:
            if s.is_float:
                self.error(f"'{op}' needs integer or bool operands, got '{t}'", e.loc)
                return None
            return t
        if op in SHIFT:
            s_ = T.scalar_of(t)
            if s_.is_int and not s_.literal and not self.shift_amount_ok(e, s_):
                return None
            return t
        # arithmetic
        if s.is_bool:
            self.error(f"arithmetic '{op}' on bool values", e.loc,
                       hint="convert with u32(...) or use '&&', '||', '^'")
            return None
        return t

    def vector(self, e: A.VectorLit) -> Optional[T.Type]:
        if not e.elems:
            self.error("empty vector literal", e.loc)
            return None
        types = [self.expr(x) for x in e.elems]
        if None in types:
            return None
        for x in e.elems:
            if isinstance(x.ty, T.VectorType):
                self.error("vector literal elements must be scalars", x.loc)
                return None
        s = T.scalar_of(types[0])
        for x in e.elems[1:]:
            s = self.unify_scalar(s, T.scalar_of(x.ty), "[...]", x.loc)
            if s is None:
                return None
        if not s.literal:
            for x in e.elems:
                if not self.retype(x, s):
                    return None
        return T.VectorType(s, len(e.elems))

    def call(self, e: A.Call) -> Optional[T.Type]:
        f = e.func
        if f in T.SCALARS:
            return self.cast(e, T.SCALARS[f])
        if f not in BUILTIN_FUNCS:
            sym = self.lookup(f)
            if sym is None and self.is_layout_name(f):
                self.error(f"'{f}' is a layout; applying it gives a coordinate, which can only be "
                           f"the coordinate of a view access", e.loc,
                           hint=f"e.g. x[{f}(i, j)]; a layout with parameters is applied as "
                                f"{f}(args)(i, j)")
                return None
            for a in e.args:
                self.expr(a)
            if sym is not None:
                self.error(f"'{f}' is not a function", e.loc)
            else:
                hint = None
                if not did_you_mean(f, list(BUILTIN_FUNCS) + list(T.SCALARS)):
                    hint = (f"the builtins: {', '.join(sorted(BUILTIN_FUNCS))}"
                            + ("; x to the power p is exp(p * log(x))" if f in ("pow", "powf") else "")
                            + "; or define it: `fn NAME(p: T) -> T { ... }`")
                self.error(f"unknown function '{f}'"
                           + did_you_mean(f, list(BUILTIN_FUNCS) + list(T.SCALARS)), e.loc, hint=hint)
            return None
        arity = BUILTIN_FUNCS[f]
        types = [self.expr(a) for a in e.args]
        if len(e.args) != arity:
            self.error(f"'{f}' takes {arity} argument{'s' if arity > 1 else ''}, got {len(e.args)}",
                       e.loc)
            return None
        if None in types:
            return None
        if f in FLOAT_UNARY:
            (a,) = e.args
            s = T.scalar_of(a.ty)
            if s is T.INT_LIT:
                return T.with_scalar(a.ty, T.FLOAT_LIT)
            if not s.is_float:
                self.error(f"'{f}' needs a float argument, got '{a.ty}'", a.loc,
                           hint=f"convert explicitly, e.g. {f}(f32(x))" if s.is_int else None)
                return None
            return a.ty
        if f == "abs":
            (a,) = e.args
            if not T.scalar_of(a.ty).is_numeric:
                self.error(f"'abs' needs a numeric argument, got '{a.ty}'", a.loc)
                return None
            return a.ty
        if f in ("min", "max"):
            t = self.unify(e.args[0], e.args[1], f, e.loc)
            if t is None:
                return None
            if not T.scalar_of(t).is_numeric:
                self.error(f"'{f}' needs numeric arguments, got '{t}'", e.loc)
                return None
            return t
        if f == "fma":
            t = self.unify(e.args[0], e.args[1], f, e.loc)
            if t is None:
                return None
            # unify the third operand with the first two (placeholder node carries their type)
            tmp = A.Name(e.loc, "")
            tmp.ty = t
            t = self.unify(tmp, e.args[2], f, e.loc)
            if t is None:
                return None
            if not T.is_literal(t):
                for a in e.args[:2]:
                    if T.is_literal(a.ty):
                        self.retype(a, T.scalar_of(t))
            s = T.scalar_of(t)
            if s is T.INT_LIT:
                t = T.with_scalar(t, T.FLOAT_LIT)
            elif not s.is_float:
                self.error(f"'fma' needs float arguments, got '{t}'", e.loc)
                return None
            return t
        if f == "select":
            c, a, b = e.args
            self.default(c)
            if T.scalar_of(c.ty) != T.BOOL:
                self.error(f"the condition of 'select' must be bool, got '{c.ty}'", c.loc)
                return None
            t = self.unify(a, b, f, e.loc)
            if t is None:
                return None
            if isinstance(c.ty, T.VectorType):
                if isinstance(t, T.VectorType) and t.n != c.ty.n:
                    self.error(f"vector lengths differ in 'select': {c.ty.n} and {t.n}", e.loc)
                    return None
                t = T.VectorType(T.scalar_of(t), c.ty.n)
            return t
        raise AssertionError(f)  # pragma: no cover

    def cast(self, e: A.Call, to: T.ScalarType) -> Optional[T.Type]:
        if len(e.args) != 1:
            for a in e.args:
                self.expr(a)
            self.error(f"the conversion '{to}(...)' takes 1 argument, got {len(e.args)}", e.loc)
            return None
        (a,) = e.args
        t = self.expr(a)
        if t is None:
            return None
        s = T.scalar_of(t)
        if s.literal:
            if _literal_fits(s, to):
                self.retype(a, to)
            else:
                self.default(a)
        return T.with_scalar(a.ty, to)

    def component_index(self, idx: A.Expr, n: int) -> bool:
        """Check a component index into an ``n``-vector (literal in range, or an integer)."""
        if isinstance(idx, A.IntLit):
            idx.ty = T.INDEX if idx.suffix is None else T.SCALARS[idx.suffix]
            if not 0 <= idx.value < n:
                self.error(f"component index {idx.value} is out of range for a {n}-component value",
                           idx.loc, hint=f"valid indices are 0..{n - 1}")
                return False
            return True
        t = self.expr(idx)
        if t is None:
            return False
        if T.is_literal(t):
            self.retype(idx, T.I32)
            t = idx.ty
        if not isinstance(t, T.ScalarType) or not t.is_int:
            self.error(f"component index must be an integer, got '{t}'", idx.loc)
            return False
        return True

    def index_value(self, e: A.Expr, what: str) -> bool:
        """Check ``e`` as an ``index`` value (integer literals become ``index``)."""
        t = self.expr(e)
        if t is None:
            return False
        if T.is_literal(t) and isinstance(t, T.ScalarType) and t.is_int:
            self.retype(e, T.INDEX)
            t = e.ty
        if t != T.INDEX:
            hint = "convert it with index(...)" if isinstance(t, T.ScalarType) and t.is_int else None
            self.error(f"{what} must be an 'index', got '{t}'", e.loc, hint=hint)
            return False
        return True


def literal_fraction(lit) -> Fraction:
    """The exact value of an integer or float literal node, from its source text (no rounding)."""
    if isinstance(lit, A.IntLit) or not lit.text:
        return Fraction(lit.value)
    text = lit.text.replace("_", "")
    if lit.suffix is not None and text.endswith(lit.suffix):
        text = text[: -len(lit.suffix)]
    try:
        return decimal_fraction(text)  # exact; 1e-99999999 does not build 10**99999999
    except ValueError:  # e.g. a hex integer token with a float suffix
        return Fraction(lit.value)


def _literal_fits(lit: T.ScalarType, t: T.ScalarType) -> bool:
    if t.literal:
        return lit == t or (lit is T.INT_LIT and t is T.FLOAT_LIT)
    if lit is T.INT_LIT:
        return t.is_numeric
    if lit is T.FLOAT_LIT:
        return t.is_float
    return False


def _int_constant(e, memo: dict) -> Optional[int]:
    """The exact value of an integer expression made of literals, ``-``, ``+``, ``*``, ``<<`` and
    integer conversions (``256 * 256``, ``index(3000000000u32)``, ``i64(1) << 33``); else None.
    ``memo`` (node id -> value) keeps a walk over every node of a tree linear."""
    key = id(e)
    if key in memo:
        return memo[key]
    v = None
    if isinstance(e, A.IntLit):
        v = e.value
    elif isinstance(e, A.Unary) and e.op == "-":
        a = _int_constant(e.operand, memo)
        v = -a if a is not None else None
    elif isinstance(e, A.Binary) and e.op in ("+", "-", "*", "<<"):
        a, b = _int_constant(e.left, memo), _int_constant(e.right, memo)
        if a is not None and b is not None and (e.op != "<<" or 0 <= b < 128):
            v = a + b if e.op == "+" else a - b if e.op == "-" else a * b if e.op == "*" else a << b
    elif isinstance(e, A.Call) and e.func in T.SCALARS and T.SCALARS[e.func].is_int and len(e.args) == 1:
        v = _int_constant(e.args[0], memo)
    memo[key] = v
    return v


def index_constant_max(k: A.Kernel) -> int:
    """The largest magnitude of a constant ``index`` expression of kernel ``k`` (a literal stride,
    ``256 * 256``, ``index(3000000000u32)``), for the launcher's choice of index width
    (``KernelSignature.index_literal_max``). The kern IR does not tell the program's ``index``
    constants from lowering's own (extents, 0, 1); what else reaches ``index`` arithmetic -- scalars,
    and constants of other types through conversions -- is read from the IR
    (:mod:`kernc.frontend.index_width`)."""
    index_max = 0
    memo: dict = {}
    for n in A.iter_nodes(k):
        if not isinstance(n, A.Expr) or n.ty is None:
            continue
        s = T.scalar_of(n.ty)
        if isinstance(s, T.ScalarType) and s.is_index:
            v = _int_constant(n, memo)
            if v is not None:
                index_max = max(index_max, abs(v))
    return index_max


def _integer_only(e: A.Expr) -> bool:
    """Whether the integer-literal subtree ``e`` uses an operation that would change meaning (or
    be invalid) if its literals became floats."""
    if isinstance(e, A.Binary) and e.op in INTEGER_ONLY or isinstance(e, A.Unary) and e.op == "~":
        return True
    return any(_integer_only(c) for c in _children(e))


def _children(e: A.Expr) -> list:
    if isinstance(e, A.Unary):
        return [e.operand]
    if isinstance(e, A.Binary):
        return [e.left, e.right]
    if isinstance(e, A.Call):
        return list(e.args)
    if isinstance(e, A.VectorLit):
        return list(e.elems)
    if isinstance(e, (A.Index, A.Slice)):
        return [e.base]
    return []
