"""Lowering expressions to the kern dialect (part of :mod:`kernc.frontend.lower`): literals,
names, operators, calls and conversions (C semantics; signedness picks the ``arith`` op), vector
components (scalarised: a K-vector is K SSA values), view loads and layout applications (a
functional layout's body inlined as ``index`` arithmetic, a strided layer as ``kern.in_bounds`` +
``kern.layout_apply`` (+ ``kern.swizzle``)).
"""

from __future__ import annotations

from typing import Optional

from kernc.dialect import kern
from kernc.dialect.poly_arith import emit_poly
from kernc.dialect.strided import Poly
from kernc.support.errors import InternalCompilerError
from kernc.support.mlir import dialect, ir

from . import ast as A
from . import types as T
from .expressions import literal_fraction
from .language import FLOAT_UNARY
from .layouts import FnLayer, StridedLayer
from .symbols import KernelInfo, Symbol

arith = dialect("arith")
math = dialect("math")

_CMPI = {
    "==": ("eq", "eq"), "!=": ("ne", "ne"),
    "<": ("slt", "ult"), "<=": ("sle", "ule"), ">": ("sgt", "ugt"), ">=": ("sge", "uge"),
}
_CMPF = {"==": "oeq", "!=": "une", "<": "olt", "<=": "ole", ">": "ogt", ">=": "oge"}


def mlir_filename(name: str) -> str:
    """``name`` as MLIR can hold it in a location: a file name that is not UTF-8 reaches Python
    with its bad bytes as surrogate escapes (``os.fsdecode``), which MLIR's strings refuse; they
    become ``\\xNN`` text."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _and(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return arith.andi(a, b)


def flat(v) -> list:
    """The scalar values of ``v``: a vector's list of components, or ``[v]``."""
    return list(v) if isinstance(v, list) else [v]


#: Float binary operators -> ``arith`` builder names.
_FLOAT_BINARY = {"+": "addf", "-": "subf", "*": "mulf", "/": "divf", "%": "remf"}
#: Integer binary operators -> (signed, unsigned) ``arith`` builder names (C truncating ``/ %``,
#: floor ``//``; bitwise and logical ops are the same for both).
_INT_BINARY = {
    "+": ("addi", "addi"), "-": ("subi", "subi"), "*": ("muli", "muli"),
    "/": ("divsi", "divui"), "%": ("remsi", "remui"), "//": ("floordivsi", "divui"),
    "&": ("andi", "andi"), "&&": ("andi", "andi"), "|": ("ori", "ori"), "||": ("ori", "ori"),
    "^": ("xori", "xori"), "<<": ("shli", "shli"), ">>": ("shrsi", "shrui"),
}


class ExprLowering:
    """The lowering of one kernel's expressions: the state they read (the kernel's block arguments:
    ``args`` per param Symbol, ``size_args`` per size symbol, ``table_args`` per (index param, table
    field); ``unrolled``: the loop variables of the unrolled loops that enclose the code being
    lowered, with their values) and the ops of literals, operators, calls, conversions, views and
    layout applications. ``env`` maps the state keys of the SSA state (``lower.py``) to values."""

    def __init__(self, program: A.Program, kernel: A.Kernel, module):
        self.program = program
        self.kernel = kernel
        self.info: KernelInfo = kernel.info
        self.module = module
        self.filename = program.filename
        self.args: dict = {}          # Symbol -> block argument (scalar params, buffers)
        self.size_args: dict = {}     # size symbol name -> block argument
        self.table_args: dict = {}    # (index param, table field) -> block argument
        self.unrolled: dict = {}      # loop variable Symbol -> its value in the unrolled copy

    # ---- helpers ----------------------------------------------------------------------------

    def loc(self, node) -> "ir.Location":
        loc = node.loc if isinstance(node, (A.Node, Symbol)) else node
        return ir.Location.file(mlir_filename(loc.filename), loc.line, loc.column)

    def component(self, index: A.Expr) -> Optional[int]:
        """The value of a component index known while lowering: a literal, or the variable of an
        unrolled loop (then possibly out of range, see :meth:`update` and ``_expr``)."""
        if isinstance(index, A.IntLit):
            return index.value
        if isinstance(index, A.Name) and index.sym in self.unrolled:
            return self.unrolled[index.sym]
        return None

    def const(self, s: T.ScalarType, value):
        s = T.default_scalar(s)
        ty = T.mlir_type(s)
        if s.is_float:
            return arith.constant(ty, float(value))
        if s.is_bool:
            return arith.constant(ty, 1 if value else 0)
        v = int(value)
        if not s.is_index:
            bits = s.bits
            v &= (1 << bits) - 1
            if v >= 1 << (bits - 1):
                v -= 1 << bits
        return arith.constant(ty, v)

    # ---- statements of functional layouts ---------------------------------------------------

    def stmt(self, s, env: dict) -> None:
        try:
            self._stmt(s, env)
        except RecursionError as err:  # the innermost statement names where (the caller reports it)
            if getattr(err, "kernc_loc", None) is None:
                err.kernc_loc = s.loc
            raise

    def _stmt(self, s, env: dict) -> None:
        """A ``let`` (the statements of a functional layout's body); the kernel lowering
        (``lower.py``) adds the other statements."""
        if isinstance(s, A.Let):
            v = self.expr(s.value, env)
            env[s.sym] = list(v) if isinstance(v, list) else v
        else:  # pragma: no cover
            raise InternalCompilerError(f"cannot lower statement {type(s).__name__}")


    def assigned_value(self, e: A.Expr, env: dict):
        """The value of ``e`` assigned to an output or variable (widened from an output's storage
        type to its compute type where the checker asked for it)."""
        v = self.expr(e, env)
        conv = getattr(e, "out_convert", None)
        if conv is not None:
            with self.loc(e):
                v = self.map(lambda x: self.convert(x, *conv), v)
        return v

    # ---- expressions ------------------------------------------------------------------------

    def expr(self, e: A.Expr, env: dict):
        """The SSA value(s) of ``e``: one ``ir.Value`` for scalars, a list for vectors."""
        with self.loc(e):
            inner = getattr(e, "computed_as", None)
            if inner is None:
                return self._expr(e, env)
            # an integer-literal expression in a float context (check.py): computed in its integer
            # type, then converted to the type its parent sees
            outer, e.ty = e.ty, inner
            try:
                v = self._expr(e, env)
            finally:
                e.ty = outer
            return self.map(lambda x: self.convert(x, T.scalar_of(inner), T.scalar_of(outer)), v)

    def _expr(self, e: A.Expr, env: dict):
        if isinstance(e, (A.IntLit, A.FloatLit)):
            s = T.default_scalar(T.scalar_of(e.ty))
            if s.is_float:  # rounded once from the literal's text
                v = T.exact_float(literal_fraction(e), s)
                if v == 0 and isinstance(e, A.FloatLit) and e.text.lstrip().startswith("-"):
                    v = -0.0  # the exact value of "-0.0" is 0: keep the sign the literal spells
                return self.const(s, v if v is not None else float("inf") * (1 if e.value > 0 else -1))
            return self.const(s, e.value)
        if isinstance(e, A.BoolLit):
            return self.const(T.BOOL, e.value)
        if isinstance(e, A.Name):
            return self.name(e, env)
        if isinstance(e, A.Unary):
            v = self.expr(e.operand, env)
            s = T.scalar_of(e.operand.ty)
            return self.map(lambda x: self.scalar_unop(e.op, s, x), v)
        if isinstance(e, A.Binary):
            return self.binary(e, env)
        if isinstance(e, A.Call):
            return self.call(e, env)
        if isinstance(e, A.GroupReduce):
            return self.group_reduce(e, env)
        if isinstance(e, A.VectorLit):
            return [self.expr(x, env) for x in e.elems]
        if isinstance(e, (A.Index, A.MultiIndex, A.Method)) and getattr(e, "view", None) is not None:
            return self.view_read(e, env)
        if isinstance(e, A.Index):
            base = self.expr(e.base, env)
            c = self.component(e.index)
            if c is not None:  # an out-of-range index reads the last component, as the selects
                return base[c] if 0 <= c < len(base) else base[-1]
            k = self.expr(e.index, env)
            kt = e.index.ty
            res = base[-1]
            for i in range(len(base) - 2, -1, -1):
                hit = self.scalar_binop("==", kt, k, self.const(kt, i))
                res = arith.select(hit, base[i], res)
            return res
        if isinstance(e, A.Slice):
            base = self.expr(e.base, env)
            lo, hi = e.bounds
            return list(base[lo:hi])
        if isinstance(e, A.Member):  # u.first / u.second of a pair read
            vals = env[e.base.sym]
            k = e.base.sym.buffer.components
            part = vals[:k] if e.name == "first" else vals[k:]
            return list(part) if k > 1 else part[0]
        raise InternalCompilerError(f"cannot lower expression {type(e).__name__}")  # pragma: no cover

    def name(self, e: A.Name, env: dict):
        sym: Symbol = e.sym
        if sym.kind == "builtin":
            if sym.name == "problem_size" and self.info.problem_poly is not None:
                return emit_poly(self.info.problem_poly, self.size_args)
            if sym.name == "problem_size":
                p = self.info.problem_symbol
                if p.kind == "size":
                    return self.size_args[p.name]
                return self.convert(self.args[p], p.ty, T.INDEX)
            return kern.builtin(sym.name)
        if sym in self.unrolled:
            return self.const(sym.ty, self.unrolled[sym])
        v = env[sym]
        return list(v) if isinstance(v, list) else v

    # ---- views and layouts ------------------------------------------------------------------

    def view_sizes(self, b) -> list:
        return [self.size_args[x] for x in b.layout.symbols]

    def coords(self, args: list, env: dict):
        """``(index values, mask)`` of a view/layout coordinate list: index expressions, or one
        layout application (its layers' in-bounds flag is the mask; None when unchecked)."""
        if len(args) == 1 and getattr(args[0], "layers", None) is not None:
            return self.apply_layout(args[0], env)
        return [self.expr(a, env) for a in args], None

    def apply_layout(self, e, env: dict):
        vals, mask = self.coords(e.inputs, env)
        with self.loc(e):
            for layer in e.layers:
                if isinstance(layer, FnLayer):
                    vals, ok = self.inline_fn(layer, vals, env)
                else:
                    vals, ok = self.apply_strided(layer, vals)
                mask = _and(mask, ok)
        return vals, mask

    def apply_strided(self, layer: StridedLayer, vals: list):
        L = layer.layout
        syms = L.symbols
        sizes = [self.size_args[x] for x in syms]
        text = str(L)
        if len(vals) == L.rank:
            ok = kern.in_bounds(vals, sizes, text, syms)
        else:  # one linear index: CuTe's L(i), split colexicographically (first mode fastest)
            i = vals[0]
            size = emit_poly(_product(L.shape), self.size_args)
            idx0 = arith.constant(ir.IndexType.get(), 0)
            ok = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, i, idx0),
                            arith.cmpi(arith.CmpIPredicate.slt, i, size))
            rev = kern.delinearize(i, [emit_poly(x, self.size_args) for x in reversed(L.shape)])
            vals = list(reversed(rev))
        off = kern.layout_apply(vals, sizes, text, syms)
        if layer.swizzle is not None:
            off = kern.swizzle(off, *layer.swizzle)
        return [off], ok

    def inline_fn(self, layer: FnLayer, vals: list, env: dict):
        """A functional layout's body on coordinates ``vals``: ``(results, domain flag or None)``."""
        d = layer.d
        fenv: dict = {}
        for sym, (kind, a) in zip(d.param_syms, layer.args):
            fenv[sym] = self.expr(a, env) if kind == "expr" else emit_poly(a, self.size_args)
        for sym, v in zip(d.coord_syms, vals):
            fenv[sym] = v
        ok = None
        if d.domain is not None:
            idx0 = arith.constant(ir.IndexType.get(), 0)
            for c, ext in zip(vals, d.domain):
                ok = _and(ok, arith.cmpi(arith.CmpIPredicate.sge, c, idx0))
                if not (isinstance(ext, A.Name) and ext.id == "_"):
                    ok = _and(ok, arith.cmpi(arith.CmpIPredicate.slt, c, self.expr(ext, fenv)))
        for s in d.lets:
            self.stmt(s, fenv)
        results = d.result.elems if isinstance(d.result, A.TupleLit) else [d.result]
        return [self.expr(r, fenv) for r in results], ok

    def view_read(self, e, env: dict):
        b = e.view.buffer
        vals, mask = self.coords(e.coords, env)
        ct = T.mlir_type(b.compute_elem)
        buf, sizes, syms = self.args[e.view], self.view_sizes(b), b.layout.symbols
        if isinstance(e, A.Method) and e.name == "in_bounds":
            return _and(kern.in_bounds(vals, sizes, b.layout_text, syms), mask)
        if isinstance(e, A.Method):  # checked
            v = kern.view_load(buf, vals, sizes, b.layout_text, syms, ct, checked=True,
                               default=b.default_value, mask=mask)
            if b.default_param is None:
                return v
            # `default NAME`: the parameter's value where the access is out of bounds (the
            # load's own default, 0, is then a placeholder)
            param = next(s for s in self.info.params if s.name == b.default_param)
            inb = _and(kern.in_bounds(vals, sizes, b.layout_text, syms), mask)
            return arith.select(inb, v, self.args[param])
        return kern.view_load(buf, vals, sizes, b.layout_text, syms, ct)

    def map(self, fn, *vals):
        """Apply a scalar function elementwise, broadcasting scalars against vectors."""
        n = max((len(v) for v in vals if isinstance(v, list)), default=None)
        if n is None:
            return fn(*vals)
        cols = [v if isinstance(v, list) else [v] * n for v in vals]
        return [fn(*xs) for xs in zip(*cols)]

    def binary(self, e: A.Binary, env: dict):
        a = self.expr(e.left, env)
        b = self.expr(e.right, env)
        s = T.scalar_of(e.left.ty)
        return self.map(lambda x, y: self.scalar_binop(e.op, s, x, y), a, b)

    def scalar_unop(self, op: str, s: T.ScalarType, x):
        if op == "-":
            if s.is_float:
                return arith.negf(x)
            return arith.subi(self.const(s, 0), x)
        if op == "!":
            return arith.xori(x, self.const(T.BOOL, True))
        if op == "~":
            return arith.xori(x, self.const(s, -1))
        raise InternalCompilerError(f"unary '{op}'")  # pragma: no cover

    def scalar_binop(self, op: str, s: T.ScalarType, a, b):
        """One scalar binary op on operands of type ``s`` (signedness picks the arith op)."""
        s = T.default_scalar(s)
        if op in _CMPF and s.is_float:
            return arith.cmpf(getattr(arith.CmpFPredicate, _CMPF[op].upper()), a, b)
        if op in _CMPI:
            signed, unsigned = _CMPI[op]
            pred = unsigned if (s.is_unsigned or s.is_bool) else signed
            return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)
        if s.is_float:
            if op in _FLOAT_BINARY:
                return getattr(arith, _FLOAT_BINARY[op])(a, b)
            if op == "//":
                return math.floor(arith.divf(a, b))
            if op == "%%":
                r = arith.remf(a, b)
                zero = self.const(s, 0.0)
                nonzero = arith.cmpf(arith.CmpFPredicate.UNE, r, zero)
                r_neg = arith.cmpf(arith.CmpFPredicate.OLT, r, zero)
                b_neg = arith.cmpf(arith.CmpFPredicate.OLT, b, zero)
                fix = arith.andi(nonzero, arith.xori(r_neg, b_neg))
                # a zero result takes the divisor's sign (numpy's mod, Python's %): -3 %% 3 is +0.0
                signed_zero = arith.select(b_neg, self.const(s, -0.0), zero)
                return arith.select(nonzero, arith.select(fix, arith.addf(r, b), r), signed_zero)
        else:
            unsigned = s.is_unsigned
            if op in _INT_BINARY:  # (signed, unsigned) op names: signedness reaches the IR here
                return getattr(arith, _INT_BINARY[op][1 if unsigned else 0])(a, b)
            if op == "%%":
                if unsigned:
                    return arith.remui(a, b)
                r = arith.remsi(a, b)
                zero = self.const(s, 0)
                nonzero = arith.cmpi(arith.CmpIPredicate.ne, r, zero)
                signs_differ = arith.cmpi(arith.CmpIPredicate.slt, arith.xori(r, b), zero)
                fix = arith.andi(nonzero, signs_differ)
                return arith.addi(r, arith.select(fix, b, zero))
        raise InternalCompilerError(f"binary '{op}' on {s}")  # pragma: no cover

    def _abs(self, x, s: T.ScalarType):
        """``|x|``: ``math.absf`` for floats; for signed integers ``x < 0 ? 0 - x : x`` (wrapping, so
        ``abs(INT_MIN) == INT_MIN`` as in C and PTX ``abs.s32``; ``math.absi`` has no LLVM lowering for
        every width); unsigned values are their own absolute value."""
        if s.is_float:
            return math.absf(x)
        if s.is_unsigned:
            return x
        zero = self.const(s, 0)
        return arith.select(arith.cmpi(arith.CmpIPredicate.slt, x, zero), arith.subi(zero, x), x)

    def call(self, e: A.Call, env: dict):
        f = e.func
        if f in T.SCALARS:
            (a,) = e.args
            v = self.expr(a, env)
            frm = T.scalar_of(a.ty)
            return self.map(lambda x: self.convert(x, frm, T.SCALARS[f]), v)
        args = [self.expr(a, env) for a in e.args]
        s = T.default_scalar(T.scalar_of(e.ty))
        if f in FLOAT_UNARY:
            op = getattr(math, f)
            return self.map(lambda x: op(x), args[0])
        if f == "abs":
            return self.map(lambda x: self._abs(x, s), args[0])
        if f in ("min", "max"):
            if s.is_float:
                op = arith.minnumf if f == "min" else arith.maxnumf
            elif s.is_unsigned:
                op = arith.minui if f == "min" else arith.maxui
            else:
                op = arith.minsi if f == "min" else arith.maxsi
            return self.map(lambda x, y: op(x, y), *args)
        if f == "fma":
            return self.map(lambda x, y, z: math.fma(x, y, z), *args)
        if f == "select":
            return self.map(lambda c, x, y: arith.select(c, x, y), *args)
        raise InternalCompilerError(f"cannot lower call to '{f}'")  # pragma: no cover

    def group_reduce(self, e: A.GroupReduce, env: dict):
        """``kern.group_reduce`` of ``e``'s operand; ``f16``/``bf16`` reduce in ``f32`` and the
        result is rounded back once; float ``max``/``min`` are IEEE ``maximum``/``minimum``."""
        v = self.expr(e.args[0], env)
        s = T.scalar_of(e.args[0].ty)
        op = {"all": "and", "any": "or"}.get(e.op, e.op)
        if s.is_float:
            kind = {"sum": "addf", "max": "maximumf", "min": "minimumf"}[op]
        else:
            sign = "u" if s.is_unsigned or s.is_bool else "s"
            kind = {"sum": "addi", "max": f"max{sign}i", "min": f"min{sign}i", "and": "andi", "or": "ori"}[op]
        wide = s.is_float and s.bits < 32
        if wide:
            v = self.convert(v, s, T.SCALARS["f32"])
        r = kern.group_reduce(v, kind, e.axes)
        return self.convert(r, T.SCALARS["f32"], s) if wide else r

    def convert(self, v, frm: T.ScalarType, to: T.ScalarType):
        """Convert scalar ``v`` of type ``frm`` to ``to`` (numeric conversion, C semantics)."""
        frm, to = T.default_scalar(frm), T.default_scalar(to)
        if frm == to:
            return v
        tt = T.mlir_type(to)
        if to.is_bool:
            zero = self.const(frm, 0)
            if frm.is_float:
                return arith.cmpf(arith.CmpFPredicate.UNE, v, zero)
            return arith.cmpi(arith.CmpIPredicate.ne, v, zero)
        if frm.is_bool:
            if to.is_float:
                return arith.uitofp(tt, v)
            if to.is_index:
                return arith.index_castui(tt, v)
            return arith.extui(tt, v)
        if frm.is_int and to.is_int:
            if frm.is_index:
                return arith.index_cast(tt, v)
            if to.is_index:
                return arith.index_castui(tt, v) if frm.is_unsigned else arith.index_cast(tt, v)
            if to.bits > frm.bits:
                return arith.extui(tt, v) if frm.is_unsigned else arith.extsi(tt, v)
            if to.bits < frm.bits:
                return arith.trunci(tt, v)
            return v  # same width, other signedness: same bits
        if frm.is_int and to.is_float:
            if frm.is_index:
                v = arith.index_cast(ir.IntegerType.get_signless(64), v)
                return arith.sitofp(tt, v)
            return arith.uitofp(tt, v) if frm.is_unsigned else arith.sitofp(tt, v)
        if frm.is_float and to.is_int:
            if to.is_index:
                v = arith.fptosi(ir.IntegerType.get_signless(64), v)
                return arith.index_cast(tt, v)
            if to.bits < 32:
                # i8/u8/i16/u16: convert to 32 bits (saturating, NaN -> 0: PTX cvt.rzi, and the
                # CPU interpreter), then keep the low bits -- one meaning on both devices (an LLVM
                # fptosi/fptoui to i8 of an out-of-range value would be poison)
                i32 = ir.IntegerType.get_signless(32)
                v = arith.fptoui(i32, v) if to.is_unsigned else arith.fptosi(i32, v)
                return arith.trunci(tt, v)
            return arith.fptoui(tt, v) if to.is_unsigned else arith.fptosi(tt, v)
        # float -> float
        if {frm.name, to.name} == {"f16", "bf16"}:
            v = arith.extf(ir.F32Type.get(), v)
            return arith.truncf(tt, v)
        if to.bits > frm.bits:
            return arith.extf(tt, v)
        return arith.truncf(tt, v)


def _product(polys):
    out = Poly.const(1)
    for p in polys:
        out = out * p
    return out
