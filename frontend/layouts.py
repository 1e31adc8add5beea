"""Layouts in the language: layout definitions, their evaluation and folding, and named storage
layouts (``docs/design/layouts.md``, ``language.md`` section 3).

This is the part of the checker (:mod:`kernc.frontend.check`) that resolves layouts; the storage
layouts of buffer and view parameters are checked with the declarations
(:mod:`kernc.frontend.declarations`), view accesses and layout applications in the body with the
views (:mod:`kernc.frontend.views`).

Layout values
-------------
A layout expression evaluates to a *chain* of layers, applied first to last to a coordinate:

- :class:`StridedLayer` -- a flat strided layout ``(s0,..):(d0,..)`` over size symbols
  (``dialect/strided.py``), optionally under a static swizzle ``Sw<B,M,S>``. Applied to as many
  coordinates as it has modes (or to one linear index, split colexicographically, first mode
  fastest, as CuTe's ``L(i)``) it gives *one* coordinate, the offset; it is in bounds when every
  coordinate lies in its mode (``0 <= c_k < s_k``), or the linear index in ``[0, size)``.
- :class:`FnLayer` -- a functional layout ``layout f(params) : (coords) [in (extents)] -> (outs)
  { ... }`` with its arguments; in bounds when its optional domain holds.

Static layout algebra is folded here with :mod:`kernc.layout` (``coalesce``, ``composition`` /
``A o B``, ``complement``, the divides and products, the inverses, ``swizzle<B,M,S> o L``), so only
plain strides (or one swizzle over them) reach the kern IR. A composition that is not admissible is
a located error whose message names both layouts (``LayoutError`` from ``kernc.layout``).
A composition that involves size symbols or functional layouts is not folded: it stays a chain of
layers (always correct). Hierarchical results are flattened (a view's dims list the flattened
modes).

The built-in functional layout ``im2col(H, W, C, R, S, OH, OW, sh, sw, ph, pw, dh, dw)`` is the
definition of :data:`IM2COL_SOURCE` (``language.md`` 6.3); a program may define its own ``im2col``,
which then takes precedence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from kernc.dialect.strided import Poly, StridedLayout

from . import ast as A
from . import types as T
from .diagnostics import did_you_mean, note_diagnostic
from .language import ALGEBRA, BUILTIN_FUNCS, BUILTIN_LAYOUTS, KEYWORDS, MAX_CHAIN_LAYERS, TILER_OPS
from .names import CheckerBase
from .parser import parse
from .symbols import Symbol

# kernc.layout (the layout algebra) is imported where a layout is folded, not here: a program
# without layout algebra never loads it (a cold `kernc compile` of saxpy does not).

#: The built-in ``im2col`` (layouts.md section 3 / language.md 6.3, with the domain of ``(m, k)``:
#: ``m >= 0``, ``0 <= k < R*S*C``; ``n < N`` and the padding bounds of ``h``/``w`` belong to the
#: NHWC view the coordinate is applied to). ``m`` splits into ``(n, oh, ow)`` (last fastest) and
#: ``k`` into ``(r, s, c)`` (channel fastest), like ``kernc.layout.im2col``.
IM2COL_SOURCE = """\
layout im2col(H, W, C, R, S, OH, OW, sh, sw, ph, pw, dh, dw) : (m, k) in (_, R * S * C) -> (n, h, w, c) {
    let n = m / (OH * OW);  let oh = (m / OW) % OH;  let ow = m % OW;
    let r = k / (S * C);    let s = (k / C) % S;     let c = k % C;
    return (n, oh * sh + r * dh - ph, ow * sw + s * dw - pw, c);
}
"""

#: The checked built-in functional layouts (name -> ``A.FnLayoutDef``), shared by every checker.
_BUILTIN_FN: dict = {}


@dataclass
class StridedLayer:
    """A flat strided layout (``StridedLayout``) with an optional swizzle ``(B, M, S)``."""

    layout: StridedLayout
    swizzle: Optional[tuple] = None

    @property
    def text(self) -> str:
        """The kern IR ``layout`` attribute: ``(..):(..)`` or ``Sw<B,M,S> o (..):(..)``."""
        if self.swizzle:
            b, m, s = self.swizzle
            return f"Sw<{b},{m},{s}> o {self.layout}"
        return str(self.layout)

    @property
    def outputs(self) -> int:
        return 1

    def accepts(self, n: int) -> bool:
        return n == self.layout.rank or n == 1

    def __str__(self) -> str:
        return self.text


@dataclass
class FnLayer:
    """A functional layout with its arguments: ``("expr", A.Expr)`` (checked ``index``
    expressions of the kernel) or ``("poly", Poly)`` (sizes, from a layout definition)."""

    d: A.FnLayoutDef
    args: list

    @property
    def outputs(self) -> int:
        return len(self.d.outs)

    def accepts(self, n: int) -> bool:
        return n == len(self.d.coords)

    def __str__(self) -> str:
        return f"{self.d.name}(...)"


class _Chain(list):
    """A list of layers (applied first to last) while evaluating a layout expression."""


def _is_alg(v) -> bool:
    from kernc.layout import ComposedLayout, Layout

    return isinstance(v, (Layout, ComposedLayout))


def to_strided(layout) -> StridedLayout:
    """The flat :class:`StridedLayout` of a ``kernc.layout.Layout`` (flattened)."""
    leaves = layout.leaves()
    return StridedLayout(tuple(Poly.parse(str(s)) for s, _ in leaves),
                         tuple(_poly_of(d) for _, d in leaves))


def _poly_of(x) -> Poly:
    if isinstance(x, int):
        return Poly.const(x) if x >= 0 else Poly(((( ), int(x)),))
    return Poly.parse(str(x))


def _entry(p: Poly):
    return p.value if p.is_const else str(p)


class LayoutChecks(CheckerBase):
    """Layout definitions, their evaluation and folding, and named storage layouts; uses ``poly``
    (declarations), ``let`` (statements) and ``index_value`` (expressions) of the checker."""

    def __init__(self, program: A.Program):
        super().__init__(program)
        self.layouts: dict[str, A.LayoutDef] = {}

    # ---- definitions ------------------------------------------------------------------------

    def register_layouts(self) -> None:
        """Record every ``layout`` definition (both kinds), check functional bodies and evaluate
        the definitions that have no parameters (so their errors are reported once, here)."""
        self.fn_layouts: dict = {}
        self._bad_layouts: set = set()
        n0 = len(self.diags)
        seen: dict = {}
        for item in self.program.items:
            if not isinstance(item, (A.LayoutDef, A.FnLayoutDef)):
                continue
            if not self.layout_name_ok(item, seen):
                continue
            seen[item.name] = item
            if isinstance(item, A.FnLayoutDef):
                if self.check_fn_layout(item):
                    self.fn_layouts[item.name] = item
                else:
                    self._bad_layouts.add(item.name)
            else:
                self.check_layout_def(item)
        for d in list(self.layouts.values()):
            if not d.params:  # None after an error, reported here (or where another refers to it)
                try:
                    d.value = self._instance(d, [], d.loc, False)
                except _Deferred:
                    d.value = None
            else:  # validate with symbolic parameters; algebra is folded at each use
                self.eval_layout(d.expr, {p: Poly.sym(p) for p in d.params}, d, lenient=True)
        # a definition that others refer to with other parameter names is evaluated again for each:
        # an error that does not depend on the arguments is reported once
        unique, kept = set(), []
        for diag in self.diags[n0:]:
            key = (diag.message, diag.location, diag.hint)
            if key not in unique:
                unique.add(key)
                kept.append(diag)
        self.diags[n0:] = kept

    def layout_name_ok(self, d, seen: dict) -> bool:
        if d.name in BUILTIN_LAYOUTS:
            self.error(f"'{d.name}' is a builtin layout and cannot be redefined", d.loc)
            return False
        if d.name in ALGEBRA or d.name in BUILTIN_FUNCS or d.name in T.SCALARS:
            what = ("a layout algebra operation" if d.name in ALGEBRA else
                    "a builtin function" if d.name in BUILTIN_FUNCS else "a type name")
            self.error(f"'{d.name}' is {what} and cannot name a layout", d.loc)
            return False
        if d.name in KEYWORDS:
            self.error(f"'{d.name}' is a keyword and cannot name a layout", d.loc)
            return False
        if d.name in seen:
            self.error(f"redefinition of layout '{d.name}'", d.loc,
                       note=("previous definition is here", seen[d.name].loc))
            return False
        if len(set(d.params)) != len(d.params):
            self.error(f"layout '{d.name}' has duplicate parameter names", d.loc)
            return False
        if "_" in d.params:
            self.error(f"'_' cannot name a parameter of layout '{d.name}'", d.loc)
            return False
        return True

    def check_layout_def(self, d: A.LayoutDef) -> None:
        if isinstance(d.expr, A.LayoutLiteral) and len(d.expr.shape) != len(d.expr.stride):
            self.error(f"layout '{d.name}' has {len(d.expr.shape)} shape entries but "
                       f"{len(d.expr.stride)} strides", d.loc)
            return
        d.value = None
        self.layouts[d.name] = d

    def builtin_fn_layout(self, name: str) -> Optional[A.FnLayoutDef]:
        """The built-in functional layout ``name``, or None. It is parsed and checked once per
        process (half a millisecond, a twentieth of compiling a small kernel): the checked
        definition depends only on :data:`IM2COL_SOURCE`, and lowering only reads it."""
        if name != "im2col":
            return None
        d = _BUILTIN_FN.get(name)
        if d is None:
            prog = parse(IM2COL_SOURCE, "<builtin im2col>")
            d = prog.items[0]
            d.builtin = True
            saved = (self.program, self.diags, self.scopes)
            self.program, self.diags, self.scopes = prog, [], []
            ok = self.check_fn_layout(d)
            self.program, self.diags, self.scopes = saved
            assert ok, "the built-in im2col does not check"
            d = _BUILTIN_FN.setdefault(name, d)
        return d

    def lookup_fn_layout(self, name: str) -> Optional[A.FnLayoutDef]:
        if name in self.fn_layouts:
            return self.fn_layouts[name]
        if name in self.layouts:
            return None
        return self.builtin_fn_layout(name)

    def is_layout_name(self, name: str) -> bool:
        return (name in self.layouts or name in self.fn_layouts or name == "im2col"
                or name in getattr(self, "_bad_layouts", ()))

    def check_fn_layout(self, d: A.FnLayoutDef) -> bool:
        """Type-check a functional layout's body once: params and coordinates are ``index``
        values; the lets are local; the result is a tuple of ``len(outs)`` ``index`` values."""
        n0 = len(self.diags)
        scope: dict = {}
        d.param_syms, d.coord_syms = [], []
        saved = self.scopes
        self.scopes = [scope]
        for name, kind, out in [(p, "lparam", d.param_syms) for p in d.params] + \
                [(c, "coord", d.coord_syms) for c in d.coords]:
            if name in scope:
                self.error(f"'{name}' is declared twice in layout '{d.name}'", d.loc)
                continue
            if not self.name_free(name, d.loc, "a layout parameter"):
                continue
            sym = Symbol(name, kind, T.INDEX, d.loc)
            scope[name] = sym
            out.append(sym)
        if len(set(d.outs)) != len(d.outs):
            self.error(f"layout '{d.name}' names an output coordinate twice", d.loc)
        if d.domain is not None:
            if len(d.domain) != len(d.coords):
                self.error(f"the domain of layout '{d.name}' has {len(d.domain)} extents for "
                           f"{len(d.coords)} coordinates", d.domain[0].loc)
            for e in d.domain:
                if isinstance(e, A.Name) and e.id == "_":
                    continue
                self.index_value(e, "a domain extent")
        for s in d.lets:
            self.let(s)
        elems = d.result.elems if isinstance(d.result, A.TupleLit) else [d.result]
        for e in elems:
            self.index_value(e, f"a result coordinate of layout '{d.name}'")
        if len(elems) != len(d.outs):
            self.error(f"layout '{d.name}' returns {len(elems)} coordinate"
                       f"{'s' if len(elems) != 1 else ''} but declares {len(d.outs)} "
                       f"({', '.join(d.outs)})", d.result.loc)
        self.scopes = saved
        return len(self.diags) == n0

    # ---- evaluation -------------------------------------------------------------------------

    def eval_layout(self, e, env: dict, d, lenient: bool = False):
        """Evaluate layout expression ``e`` of definition ``d`` with parameters bound by ``env``
        (name -> Poly). Returns a ``kernc.layout`` object, a ``Swizzle`` or a :class:`_Chain`;
        None after an error. ``lenient``: do not report "needs static shapes" (a parameterised
        definition is folded at each use, with its arguments)."""
        from kernc.layout import LayoutError

        try:
            return self._eval(e, env, d, lenient)
        except _Deferred:
            return None
        except LayoutError as err:  # pragma: no cover - every call site catches its own
            self.error(str(err), getattr(e, "loc", d.loc))
            return None

    def _names_ok(self, env: dict, d):
        def ok(name, loc):
            if name in env:
                return True
            self.error(f"unknown name '{name}' in layout '{d.name}'"
                       + did_you_mean(name, list(env)), loc,
                       hint=f"size parameters are declared as `layout {d.name}({name}) = ...`")
            return False
        return ok

    def _tree(self, e, env: dict, d, what: str):
        if isinstance(e, A.TupleLit):
            parts = [self._tree(x, env, d, what) for x in e.elems]
            if any(p is None for p in parts):
                return None
            return tuple(parts)
        p = self.poly(e, what, self._names_ok(env, d))
        if p is None:
            return None
        return _entry(_subst(p, env))

    def _layout_error(self, err, loc, lenient: bool, op: str = None):
        """Report ``err`` at ``loc`` (``op``: the algebra operation written there, which a limit
        error names instead of the operands' full text: the source line shows them)."""
        from kernc.layout import LayoutLimitError

        if lenient and "static" in str(err):
            raise _Deferred()
        if op is not None and isinstance(err, LayoutLimitError):
            self.error(f"'{op}' gives a layout past the limits: {err.base}", loc)
        else:
            self.error(str(err), loc)
        raise _Deferred()

    def _eval(self, e, env: dict, d, lenient: bool):
        import kernc.layout as KL

        if isinstance(e, A.LayoutLiteral):
            if len(e.shape) != len(e.stride):
                self.error(f"layout has {len(e.shape)} shape entries but {len(e.stride)} strides",
                           e.loc)
                raise _Deferred()
            shape = [self._tree(x, env, d, "layout") for x in e.shape]
            stride = [self._tree(x, env, d, "layout") for x in e.stride]
            if None in shape or None in stride:
                raise _Deferred()
            try:
                return KL.Layout(tuple(shape), tuple(stride))
            except KL.LayoutError as err:
                self._layout_error(err, e.loc, lenient)
        if isinstance(e, A.LayoutSwizzle):
            if e.bits + e.base + abs(e.shift) > KL.MAX_SWIZZLE_BITS:
                # its bit masks ((1 << B) - 1) << (M + |S|) lie past the largest layout (the
                # algebra's one limit, which also keeps them inside an index)
                self.error(f"swizzle<{e.bits}, {e.base}, {e.shift}> reaches bit "
                           f"{e.bits + e.base + abs(e.shift) - 1} (B + M + |S| must be at most "
                           f"{KL.MAX_SWIZZLE_BITS}, MAX_SWIZZLE_BITS)", e.loc)
                raise _Deferred()
            try:
                return KL.Swizzle(e.bits, e.base, e.shift)
            except KL.LayoutError as err:
                self._layout_error(err, e.loc, lenient)
        if isinstance(e, A.Name) and e.id not in env and self.is_layout_name(e.id):
            return self._reference(e.id, [], env, d, e.loc, lenient)
        if isinstance(e, (A.TupleLit, A.IntLit, A.Name, A.Binary)):
            shape = self._tree(e, env, d, "layout")
            if shape is None:
                raise _Deferred()
            try:
                return KL.Layout(shape if isinstance(shape, tuple) else (shape,))
            except KL.LayoutError as err:
                self._layout_error(err, e.loc, lenient)
        if isinstance(e, A.Call):
            if e.func in ALGEBRA:
                return self._algebra(e, env, d, lenient)
            if self.is_layout_name(e.func):
                return self._reference(e.func, e.args, env, d, e.loc, lenient)
            self.error(f"unknown layout or layout operation '{e.func}'"
                       + did_you_mean(e.func, list(ALGEBRA) + list(self.layouts)
                                       + list(self.fn_layouts)), e.loc,
                       hint="layout operations: " + ", ".join(ALGEBRA))
            raise _Deferred()
        if isinstance(e, A.LayoutCompose):  # a tuple right of an `o` is a tiler, as in composition()
            values = [self._tiler(p, env, d, lenient) if i and isinstance(p, A.TupleLit)
                      else self._eval(p, env, d, lenient) for i, p in enumerate(e.pieces)]
            acc = values[-1]
            for piece, v in zip(reversed(e.pieces[:-1]), reversed(values[:-1])):
                acc = self._compose(v, acc, piece.loc, lenient)
            return acc
        self.error("not a layout expression", e.loc)  # pragma: no cover - the grammar prevents it
        raise _Deferred()

    def _reference(self, name: str, args: list, env: dict, d, loc, lenient: bool):
        """``name(args)`` inside a layout expression: another definition, instantiated."""
        fn = self.lookup_fn_layout(name)
        target = fn if fn is not None else self.layouts[name]
        if len(args) != len(target.params):
            self.error(f"layout '{name}' takes {len(target.params)} argument"
                       f"{'' if len(target.params) == 1 else 's'}, got {len(args)}", loc,
                       note=None if getattr(target, "builtin", False) else
                       (f"layout '{name}' is defined here", target.loc))
            raise _Deferred()
        vals = [self.poly(a, "layout argument", self._names_ok(env, d)) for a in args]
        if None in vals:
            raise _Deferred()
        vals = [_subst(v, env) for v in vals]
        if fn is not None:
            return _Chain([FnLayer(fn, [("poly", v) for v in vals])])
        if target is d:
            self.error(f"layout '{name}' refers to itself", loc)
            raise _Deferred()
        return self._instance(target, vals, loc, lenient)

    def _instance(self, target, vals: list, loc, lenient: bool):
        """The value of strided definition ``target`` with arguments ``vals`` (Polys), evaluated
        once per checker and arguments: ``b2 = blocked_product(b1, b1)`` refers to ``b1`` twice,
        and evaluating each reference anew made a chain of such definitions cost 2**n
        evaluations. A failed evaluation (its error reported the first time) raises
        :class:`_Deferred` again without repeating the error."""
        if getattr(self, "_instantiating", None) is None:
            self._instantiating = []
            self._layout_memo = {}
        key = (target.name, tuple(str(v) for v in vals), lenient)
        if key in self._layout_memo:
            v = self._layout_memo[key]
            if v is None:
                raise _Deferred()
            return _Chain(v) if isinstance(v, _Chain) else v  # a chain is a list: the caller's copy
        if target.name in self._instantiating:
            self.error(f"layout '{target.name}' refers to itself", loc)
            raise _Deferred()
        self._instantiating.append(target.name)
        try:
            v = self._eval(target.expr, dict(zip(target.params, vals)), target, lenient)
        except _Deferred:
            self._layout_memo[key] = None
            raise
        finally:
            self._instantiating.pop()
        self._layout_memo[key] = v
        return _Chain(v) if isinstance(v, _Chain) else v

    def _algebra(self, e: A.Call, env: dict, d, lenient: bool):
        import kernc.layout as KL

        lo, hi = ALGEBRA[e.func]
        if not lo <= len(e.args) <= hi:
            want = str(lo) if lo == hi else f"{lo} or {hi}"
            self.error(f"'{e.func}' takes {want} argument{'s' if hi > 1 else ''}, got {len(e.args)}",
                       e.loc)
            raise _Deferred()
        args = []
        for i, a in enumerate(e.args):
            if i == 1 and e.func in TILER_OPS and isinstance(a, A.TupleLit):
                args.append(self._tiler(a, env, d, lenient))
                continue
            if e.func == "complement" and i == 1:
                t = self._tree(a, env, d, "complement cotarget")
                if t is None:
                    raise _Deferred()
                args.append(t)
                continue
            v = self._eval(a, env, d, lenient)
            if not _is_alg(v):
                self.error(f"'{e.func}' needs static layouts, not a functional layout", a.loc)
                raise _Deferred()
            args.append(v)
        try:
            return getattr(KL, e.func)(*args)
        except (KL.LayoutError, TypeError, ValueError) as err:
            self._layout_error(err, e.loc, lenient, e.func)

    def _tiler(self, e: A.TupleLit, env: dict, d, lenient: bool) -> tuple:
        """A tuple as the second argument of ``composition`` or a divide: a CuTe *tiler*, applied
        to the first layout mode by mode. Each entry is a layout, an int ``n`` (``n:1``) or a
        nested tiler (``docs/design/layouts.md``; CuTe's ``Tiler``: a layout, a tuple of layouts,
        or a shape, a tuple of ``n:1``), not the one compact layout ``(2,4):(1,2)`` the tuple means
        elsewhere. Also the right operand of ``o``, which is ``composition``."""
        import kernc.layout as KL

        entries = []
        for x in e.elems:
            if isinstance(x, A.TupleLit):
                entries.append(self._tiler(x, env, d, lenient))
                continue
            if isinstance(x, A.IntLit):  # a shape entry n means the layout n:1
                entries.append(x.value)
                continue
            v = self._eval(x, env, d, lenient)
            if not _is_alg(v):
                self.error("a tiler entry must be a static layout or an integer", x.loc)
                raise _Deferred()
            if isinstance(v, KL.Layout) and isinstance(v.shape, tuple) and len(v.shape) == 1:
                v = KL.Layout(v.shape[0], v.stride[0])  # `2:1` is the mode 2:1, not the tuple (2):(1)
            entries.append(v)
        return tuple(entries)

    def _compose(self, outer, inner, loc, lenient: bool):
        """``outer o inner`` (``outer`` applied after ``inner``)."""
        import kernc.layout as KL

        if isinstance(outer, KL.Swizzle):
            if isinstance(inner, KL.Layout):
                if not inner.is_static:
                    self._layout_error(KL.LayoutError(
                        f"a swizzle needs a static layout, '{inner}' has size symbols"), loc, lenient)
                return KL.ComposedLayout(outer, 0, inner)
            self.error(f"a swizzle must be composed with a plain layout, not '{_show(inner)}'", loc)
            raise _Deferred()
        if isinstance(inner, KL.Swizzle):
            self.error("a swizzle must be the outer (left) operand of 'o', followed by a layout", loc)
            raise _Deferred()
        if isinstance(inner, tuple):  # a tiler (see _tiler): by mode, static layouts only
            if not (isinstance(outer, KL.Layout) and outer.is_static):
                self.error(f"a tiler can only follow a static layout in 'o', not '{_show(outer)}'", loc)
                raise _Deferred()
            try:
                return KL.composition(outer, inner)
            except KL.LayoutError as err:
                self._layout_error(err, loc, lenient, "o")
        if isinstance(outer, KL.Layout) and isinstance(inner, KL.Layout) \
                and outer.is_static and inner.is_static:
            try:
                return KL.composition(outer, inner)
            except KL.LayoutError as err:
                self._layout_error(err, loc, lenient, "o")
        layers = self._layers(inner, loc) + self._layers(outer, loc)
        if len(layers) > MAX_CHAIN_LAYERS:  # `c_i = c_{i-1} o c_{i-1}` doubles a chain per line
            self.error(f"this chain of layouts has {len(layers)} layers, more than {MAX_CHAIN_LAYERS} "
                       f"(each is applied to every coordinate)", loc)
            raise _Deferred()
        return _Chain(layers)

    def _layers(self, v, loc) -> list:
        import kernc.layout as KL

        if isinstance(v, _Chain):
            return list(v)
        if isinstance(v, KL.Layout):
            return [StridedLayer(to_strided(v))]
        if isinstance(v, KL.ComposedLayout):
            if v.offset != 0 or not isinstance(v.outer, KL.Swizzle):
                self.error(f"layout '{v}' is not supported here (a swizzle over a plain layout "
                           f"is)", loc)
                raise _Deferred()
            sw = v.outer
            return [StridedLayer(to_strided(v.inner), (sw.bits, sw.base, sw.shift))]
        self.error("a swizzle alone is not a layout: compose it with one, "
                   "`swizzle<3, 3, 3> o (8, 64):(64, 1)`", loc)
        raise _Deferred()

    def layers_of(self, v, loc) -> Optional[list]:
        """The layer list of an evaluated layout value (None after an error)."""
        if v is None:
            return None
        try:
            return self._layers(v, loc)
        except _Deferred:
            return None

    def instantiate(self, d: A.LayoutDef, args: list, loc) -> Optional[list]:
        """The layers of definition ``d`` with size arguments ``args`` (Polys over the kernel's
        size symbols); errors are located in the definition, with a note at the use."""
        if not d.params:  # evaluated once at its definition, where an error was reported
            return self.layers_of(d.value, d.loc)
        n0 = len(self.diags)
        v = self.eval_layout(d.expr, dict(zip(d.params, args)), d)
        layers = self.layers_of(v, d.loc)
        # an error in the definition is reported once, with a note at its first use; the same
        # error again (another use with the same arguments) is not repeated
        earlier = {(x.message, x.location) for x in self.diags[:n0]}
        new = [x for x in self.diags[n0:] if (x.message, x.location) not in earlier]
        del self.diags[n0:]
        self.diags.extend(new)
        for diag in new:
            if diag.location is not None and diag.location != loc:
                diag.notes.append(note_diagnostic(f"layout '{d.name}' is used here", loc, self.program.source))
        return layers

    # ---- storage layouts of buffers and views -------------------------------------------------

    def named_storage_layout(self, spec: A.LayoutName, names_ok, view: bool) -> Optional[StridedLayer]:
        """The storage layer of ``as NAME(args)`` (a strided definition, folded); None after an
        error (reported)."""
        d = self.layouts.get(spec.name)
        if d is None:
            if self.lookup_fn_layout(spec.name) is not None:
                self.error(f"'{spec.name}' is a functional layout; it cannot be a storage layout",
                           spec.loc, hint=f"apply it to a coordinate in the body: "
                                          f"x.checked({spec.name}(...)(i, j))")
                return None
            self.error(f"unknown layout '{spec.name}'"
                       + did_you_mean(spec.name, list(self.layouts) + list(BUILTIN_LAYOUTS)), spec.loc)
            return None
        args = spec.args or []
        if len(args) != len(d.params):
            self.error(f"layout '{d.name}' takes {len(d.params)} argument"
                       f"{'' if len(d.params) == 1 else 's'}, got {len(args)}", spec.loc,
                       note=(f"layout '{d.name}' is defined here", d.loc))
            return None
        vals = [self.poly(e, "layout argument", names_ok) for e in args]
        if None in vals:
            return None
        layers = self.instantiate(d, vals, spec.loc)
        if layers is None:
            return None
        if len(layers) != 1 or not isinstance(layers[0], StridedLayer):
            self.error(f"layout '{d.name}' is a chain of layouts ({' o '.join(map(str, reversed(layers)))}); "
                       f"a storage layout must be a single strided layout", spec.loc,
                       hint="apply the outer layers to the coordinate in the body instead")
            return None
        if layers[0].swizzle is not None and not view:
            self.error(f"the swizzled layout '{d.name}' can only be the layout of a 'view' buffer",
                       spec.loc)
            return None
        return layers[0]


class _Deferred(Exception):
    """Internal: an error was reported (or a static-only operation is deferred to each use)."""


def _show(v) -> str:
    if isinstance(v, _Chain):
        return " o ".join(str(x) for x in reversed(v))
    return str(v)


def _subst(p: Poly, env: dict) -> Poly:
    """``p`` with each size symbol replaced by its Poly in ``env`` (a layout's arguments)."""
    out = Poly.const(0)
    for syms, coeff in p.terms:
        term = Poly.const(coeff)
        for s in syms:
            term = term * env[s]
        out = out + term
    return out
