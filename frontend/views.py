"""Checking view accesses and layout applications in the body: ``x[i, j]``, ``x.checked(i, j)``,
``x.in_bounds(i, j)`` of a ``view`` buffer, with coordinates that are ``index`` values or one
application ``f(args)(m, k)`` of a layout (``docs/design/layouts.md``, ``docs/language.md`` section 3).
"""

from __future__ import annotations

from typing import Optional

from kernc.dialect import accessors

from . import ast as A
from . import types as T
from .diagnostics import did_you_mean
from .language import BUILTIN_FUNCS, MAX_VIEW_RANK, VIEW_ATOMIC_METHODS, VIEW_METHODS
from .layouts import FnLayer
from .names import CheckerBase


class ViewChecks(CheckerBase):
    """View accesses and layout applications; uses the layouts (``lookup_fn_layout``,
    ``instantiate``, ``is_layout_name``), the expressions (``expr``, ``index_value``) and the
    declarations (``poly``) of the checker."""

    def is_application(self, e) -> bool:
        if isinstance(e, A.Apply):
            return True
        return (isinstance(e, A.Call) and e.func not in BUILTIN_FUNCS and e.func not in T.SCALARS
                and self.lookup(e.func) is None and self.is_layout_name(e.func))

    def application(self, e) -> Optional[int]:
        """Check a layout application (``A.Apply``, or ``A.Call`` of a parameterless layout);
        sets ``e.layers`` and ``e.inputs``; returns the number of coordinates it gives."""
        if isinstance(e, A.Apply):
            name, args, coords = e.func, e.args, e.coords
        else:
            name, args, coords = e.func, [], e.args
        fn = self.lookup_fn_layout(name)
        layers = None
        if fn is not None:
            if len(args) != len(fn.params):
                self.error(f"layout '{name}' takes {len(fn.params)} argument"
                           f"{'' if len(fn.params) == 1 else 's'}, got {len(args)}", e.loc,
                           hint=None if not fn.builtin else
                           "im2col(H, W, C, R, S, OH, OW, sh, sw, ph, pw, dh, dw)",
                           note=None if fn.builtin else (f"layout '{name}' is defined here", fn.loc))
                for a in list(args) + list(coords):
                    if not self.is_application(a):
                        self.expr(a)
                return None
            ok = all([self.index_value(a, f"an argument of layout '{name}'") for a in args])
            layers = [FnLayer(fn, [("expr", a) for a in args])] if ok else None
        elif name in self.layouts:
            d = self.layouts[name]
            if len(args) != len(d.params):
                self.error(f"layout '{name}' takes {len(d.params)} argument"
                           f"{'' if len(d.params) == 1 else 's'}, got {len(args)}", e.loc,
                           note=(f"layout '{name}' is defined here", d.loc))
                return None
            vals = [self.poly(a, "layout argument", self._size_ok) for a in args]
            if None not in vals:
                layers = self.instantiate(d, vals, e.loc)
        elif name not in self._bad_layouts:
            self.error(f"unknown layout '{name}'"
                       + did_you_mean(name, list(self.layouts) + list(self.fn_layouts) + ["im2col"]),
                       e.loc)
        n = self.coord_list(coords, f"layout '{name}'")
        if layers is None or n is None:
            return None
        for layer in layers:
            if not layer.accepts(n):
                want = (f"{len(layer.d.coords)}" if isinstance(layer, FnLayer) else
                        f"{layer.layout.rank} (or 1 linear index)")
                self.error(f"layout '{name}' is applied to {n} coordinate{'s' if n != 1 else ''}; "
                           f"its layer {layer} takes {want}", e.loc)
                return None
            n = layer.outputs
        e.layers = layers
        e.inputs = coords
        e.ty = T.CoordType(n)
        return n

    def _size_ok(self, name, loc) -> bool:
        sym = self.lookup(name)
        if sym is not None and sym.kind == "size":
            return True
        self.error(f"arguments of a strided layout must be sizes (size symbols and integers); "
                   f"'{name}' is not a size symbol", loc)
        return False

    def coord_list(self, args: list, what: str) -> Optional[int]:
        """Check coordinates: one layout application, or index values. Returns their count."""
        if len(args) == 1 and self.is_application(args[0]):
            return self.application(args[0])
        if len(args) > MAX_VIEW_RANK:
            self.error(f"{what} takes at most {MAX_VIEW_RANK} coordinates, got {len(args)}",
                       args[0].loc)
            return None
        ok = True
        for a in args:
            if self.is_application(a):
                self.error("a layout application must be the only coordinate", a.loc)
                ok = False
            elif not self.index_value(a, "a coordinate"):
                ok = False
        return len(args) if ok else None

    def view_of(self, base) -> Optional[object]:
        """The view Symbol ``base`` names, or None."""
        if isinstance(base, A.Name):
            sym = self.lookup(base.id)
            if sym is not None and sym.kind == "buffer" and sym.buffer is not None \
                    and sym.buffer.is_view:
                base.sym = sym
                base.ty = sym.ty
                return sym
        return None

    def is_view_name(self, name: str) -> bool:
        """Whether ``name`` is a (well-declared) view buffer in scope."""
        sym = self.lookup(name)
        return sym is not None and sym.kind == "buffer" and sym.buffer is not None and sym.buffer.is_view

    def failed_view(self, base) -> bool:
        """Whether ``base`` names a buffer declared ``view`` whose declaration (dims, layout) gave
        an error: it keeps its view kind, so its accesses add no second error."""
        if not isinstance(base, A.Name):
            return False
        sym = self.lookup(base.id)
        node = getattr(sym, "node", None)
        return (sym is not None and sym.kind == "buffer" and sym.buffer is None
                and getattr(node, "access", None) == accessors.VIEW_MODE)

    def view_access(self, e, sym, args: list) -> bool:
        """Check the coordinates of an access of view ``sym``; sets ``e.view`` and ``e.coords``."""
        b = sym.buffer
        n = self.coord_list(args, f"view '{sym.name}'")
        if n is None:
            return False
        rank = len(b.dims)
        if n != rank:
            self.error(f"view '{sym.name}' has {rank} dim{'s' if rank != 1 else ''}, but "
                       f"{n} coordinate{'s are' if n != 1 else ' is'} given", e.loc)
            return False
        e.view = sym
        e.coords = args
        return True

    def view_read(self, e) -> Optional[T.Type]:
        """``x[i, j]`` / ``x[i]`` (unchecked), ``x.checked(...)``, ``x.in_bounds(...)``."""
        if isinstance(e, A.Method):
            sym = self.view_of(e.base)
            if sym is None and self.failed_view(e.base):
                return None  # (its declaration's error is reported: one mistake, one error)
            if sym is None:
                if not (isinstance(e.base, A.Name) and self.lookup(e.base.id) is None):
                    self.expr(e.base)
                what = f"'{e.base.id}'" if isinstance(e.base, A.Name) else "this value"
                self.error(f"'.{e.name}(...)' is a method of 'view' buffers; {what} is not one",
                           e.loc, hint="declare the buffer `view` to access it by coordinates")
                return None
            if e.name in VIEW_ATOMIC_METHODS:
                ops = VIEW_ATOMIC_METHODS[e.name]
                self.error(f"'{sym.name}.{e.name}(...)' is an update target, not a value", e.loc,
                           hint=f"update it: `{sym.name}.{e.name}(c) {ops[0]} v;`; read the "
                                f"element with `{sym.name}[c]`")
                return None
            if e.name not in VIEW_METHODS:
                self.error(f"view '{sym.name}' has no method '.{e.name}'"
                           + did_you_mean(e.name, VIEW_METHODS), e.loc,
                           hint="views have x[i, j], x.checked(i, j) and x.in_bounds(i, j)")
                return None
            if not self.view_access(e, sym, e.args):
                return None
            return T.BOOL if e.name == "in_bounds" else sym.ty
        sym = e.view_sym
        indices = e.indices if isinstance(e, A.MultiIndex) else [e.index]
        if not self.view_access(e, sym, indices):
            return None
        return sym.ty
