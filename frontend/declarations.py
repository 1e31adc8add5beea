"""Checking a kernel's declarations: its name and attributes, its parameters (scalars, buffers and
views with their dims, storage layouts and ``compute`` clauses), the size symbols they bind and
the problem (``over``); then the body and the facts the lowering and the launcher need
(:class:`~kernc.frontend.symbols.KernelInfo`).
"""

from __future__ import annotations

from typing import Optional

from kernc.dialect import accessors, shared_table
from kernc.dialect.strided import PIECES, Poly, StridedLayout
from kernc.support.errors import SourceLocation

from . import ast as A
from . import types as T
from . import caspar
from .accessor_clauses import guarded_output
from .aliasing import alias_facts
from .diagnostics import did_you_mean
from .expressions import index_constant_max
from .language import (ROLE_ATTRIBUTES, BUILTIN_FUNCS, BUILTIN_LAYOUTS, BUILTIN_VALUES, COMPUTE_TYPES, INDEX_MAX, KERNEL_ATTRIBUTES,
                       KEYWORDS, MAX_COMPONENTS, MAX_VIEW_RANK, PTX_PARAM_NAME, RESERVED_KERNEL_NAMES,
                       RESERVED_KERNEL_PREFIXES)
from .names import CheckerBase
from .statements import definitely_assigns, has_nested_return
from .groups import prepare_groups
from .races import check_view_races
from .symbols import BufferInfo, KernelInfo, Symbol, TableInfo, poly_entry, promoted, storage_shape


class DeclarationChecks(CheckerBase):
    """Kernels and their parameters. Uses the accessor clauses (``check_accessor``,
    ``deterministic_ok``, ``default_value``), the layouts (``named_storage_layout``) and the body's
    statements (``check_block``) of the checker."""

    # ---- names ------------------------------------------------------------------------------

    def ptx_names_ok(self, kernels: dict) -> None:
        """No kernel is named like a PTX parameter of another kernel of the file: LLVM's NVPTX
        backend names the parameters of entry ``g`` ``g_param_0``, ``g_param_1``, ..., and ptxas
        (the CUDA driver's JIT too) crashed on an entry ``g_param_1`` after ``g``. (The workgroup
        globals of a kernel cannot collide with a kernel name: ``passes/convert_gpu_to_nvvm.py``.)"""
        for name, k in kernels.items():
            m = PTX_PARAM_NAME.fullmatch(name)
            if m is not None and m.group(1) in kernels:
                self.error(f"'{name}' cannot name a kernel here: it is the PTX name of a parameter of "
                           f"kernel '{m.group(1)}' ({m.group(1)}_param_0, {m.group(1)}_param_1, ...)",
                           k.loc, note=(f"kernel '{m.group(1)}' is defined here", kernels[m.group(1)].loc),
                           hint="choose another name")

    def kernel_name_ok(self, k: A.Kernel) -> None:
        """The kernel name becomes the PTX entry name: no keyword, a PTX identifier, no clash."""
        name = k.name
        if name in KEYWORDS:
            self.error(f"'{name}' is a keyword and cannot name a kernel", k.loc)
        elif name in RESERVED_KERNEL_NAMES or name.startswith(RESERVED_KERNEL_PREFIXES):
            why = ("a lone '_' is not a PTX identifier" if name == "_" else
                   "it is a predefined identifier of PTX (the warp size constant)" if name == "WARP_SZ" else
                   "it is the name of the gpu.module that holds the kernels" if name == "kernels" else
                   "it is reserved for the libdevice/NVVM/CUDA functions linked with the kernel")
            self.error(f"'{name}' cannot name a kernel: {why}", k.loc,
                       hint="choose another name (names starting with '__nv', '__cuda', "
                            "'__internal', 'llvm' or 'nvvm' are reserved)")
        elif name in T.SCALARS or name in BUILTIN_FUNCS or name in BUILTIN_VALUES:
            self.error(f"'{name}' is a builtin name and cannot name a kernel", k.loc)

    # ---- size polynomials and layouts -------------------------------------------------------

    def poly(self, e: A.Expr, what: str, names_ok) -> Optional[Poly]:
        """The polynomial of a dim/layout entry (ints, names, ``+``, ``*``); None after an error.

        ``names_ok(name, loc)`` validates each name (reporting its own error) and returns a bool.
        """
        if isinstance(e, A.IntLit):
            if e.value < 0 or (e.suffix is not None and e.suffix not in ("index",)):
                self.error(f"{what} entries must be non-negative integers or size symbols, "
                           f"not '{e.text}'", e.loc)
                return None
            if e.value > INDEX_MAX:
                self.error(f"{what} entry {e.text} is beyond the index range (at most {INDEX_MAX})",
                           e.loc)
                return None
            return Poly.const(e.value)
        if isinstance(e, A.Name):
            return Poly.sym(e.id) if names_ok(e.id, e.loc) else None
        if isinstance(e, A.Binary) and e.op in ("+", "*"):
            a = self.poly(e.left, what, names_ok)
            b = self.poly(e.right, what, names_ok)
            if a is None or b is None:
                return None
            out = a + b if e.op == "+" else a * b
            if not self.index_range_ok(out, f"the {what} entry", e.loc):
                return None
            return out
        self.error(f"{what} entries must be sums and products of integers and size symbols", e.loc)
        return None

    def flat_storage_layout(self, spec: A.LayoutLiteral, p: A.BufferParam) -> bool:
        """False (one error reported, at the first nested mode) when the literal storage layout of
        ``p`` nests modes (``as (n, (4, 2)):(4, (1, 4 * n))``): a buffer's storage layout gives each
        dim one extent and one stride (:class:`~kernc.dialect.strided.StridedLayout`), so a nested
        mode has no dim to index it; the hint spells the same memory with one dim per mode."""
        nested = next((e for e in [*spec.shape, *spec.stride] if isinstance(e, A.TupleLit)), None)
        if nested is None:
            return True
        self.error(f"the storage layout of '{p.name}' nests modes; a parameter's layout has one "
                   f"shape entry and one stride per dim, not nested modes", nested.loc,
                   hint="give the buffer one dim per mode: f32[n, 8] as (n, (4, 2)):(8, (1, 4)) "
                        "is f32[n, 4, 2] as (n, 4, 2):(8, 1, 4)")
        return False

    def index_range_ok(self, poly: Poly, what: str, loc: SourceLocation) -> bool:
        """Report (and return False) when a constant of ``poly`` -- its value, or a coefficient the
        lowering emits as an ``index`` constant (``4294967296 * 4294967296 * n``) -- is beyond the
        index range (int64: MLIR's ``index`` constants and the 64-bit PTX hold no more)."""
        bad = next((c for _, c in poly.terms if not -INDEX_MAX - 1 <= c <= INDEX_MAX), None)
        if bad is None:
            return True
        text = f"{poly}" if not poly.is_const else f"{poly.value}"
        self.error(f"{what} ({text}) is beyond the index range (at most {INDEX_MAX})", loc)
        return False

    def buffer_range_ok(self, b: BufferInfo, p: A.BufferParam) -> bool:
        """Every constant lowering and the launcher derive from buffer ``b``'s layout fits the
        index range: its size (the product of the dims) and cosize (one past its largest offset,
        ``1 + sum (shape_k - 1) * stride_k``), as constants or as the coefficients of their
        polynomials over the size symbols, and the array it needs (past the cosize where a
        swizzle reaches further)."""
        loc = p.layout.loc if p.layout is not None else p.loc
        L = b.layout
        size, cosize = Poly.const(1), Poly.const(1)
        for sh, st in zip(L.shape, L.stride):
            size = size * sh
            cosize = cosize + (sh + Poly.const(-1)) * st
        what = f"the layout {L} of '{b.name}'"
        if not self.index_range_ok(size, f"the size of {what}", loc):
            return False
        if not self.index_range_ok(cosize, f"the cosize of {what}", loc):
            return False
        for entry in b.storage_shape:
            if isinstance(entry, int) and entry > INDEX_MAX:
                self.error(f"{what} needs an array of {entry} elements, beyond the index range "
                           f"(at most {INDEX_MAX})", loc)
                return False
        return True

    def caspar_layout(self, p: A.BufferParam, dims: list, elem: T.ScalarType) -> Optional[StridedLayout]:
        """Caspar's planes of 16-byte chunks (:mod:`kernc.frontend.caspar`): the flat
        ``(n, K):(caspar_size(K), 1)`` here; the planes of the plane accessors are set once the
        accessor is known (:meth:`caspar_planes`)."""
        spec = p.layout
        if spec.args:
            self.error("layout 'caspar' takes no arguments", spec.loc)
            return None
        if len(dims) != 2:
            self.error("layout 'caspar' is for multi-component elements (T[n, K])", spec.loc,
                       hint="a single-component buffer needs no layout clause")
            return None
        return caspar.flat_layout(dims[0], dims[1].value, elem.bits // 8)

    @staticmethod
    def caspar_planes(b: BufferInfo) -> None:
        """Set the planes of an ``as caspar`` buffer with more than one chunk read or updated
        through a plane accessor: ``caspar_planes`` (one piece per chunk) and the signature's
        layout text (the pieces, ``A | B``)."""
        if b.accessor in caspar.FLAT_ACCESSORS:
            return
        pieces = caspar.planes(b.dims[0], b.components, b.elem.bits // 8)
        if len(pieces) > 1:
            b.caspar_planes = pieces
            b.sig_layout = PIECES.join(str(L) for _, L in pieces)

    def resolve_layout(self, p: A.BufferParam, dims: list, names_ok,
                       elem: Optional[T.ScalarType] = None) -> Optional[StridedLayout]:
        rank = len(dims)
        spec = p.layout
        if isinstance(spec, A.LayoutName) and spec.name == "caspar":
            return self.caspar_layout(p, dims, elem)
        if spec is None or (isinstance(spec, A.LayoutName) and spec.name in BUILTIN_LAYOUTS):
            if spec is not None and spec.args:
                self.error(f"layout '{spec.name}' takes no arguments", spec.loc)
                return None
            if rank == 1:
                if spec is not None:
                    self.error(f"layout '{spec.name}' is for multi-component buffers (T[n, K]); "
                               f"'{p.name}' has one component", spec.loc,
                               hint="a single-component buffer needs no layout clause")
                    return None
                return StridedLayout((dims[0],), (Poly.const(1),))
            if spec is not None and spec.name == "soa":
                return StridedLayout(tuple(dims), (Poly.const(1), dims[0]))
            return StridedLayout(tuple(dims), (dims[1], Poly.const(1)))
        if isinstance(spec, A.LayoutLiteral):
            if not self.flat_storage_layout(spec, p):
                return None
            if len(spec.shape) != len(spec.stride):
                self.error(f"layout has {len(spec.shape)} shape entries but {len(spec.stride)} "
                           f"strides", spec.loc)
                return None
            shape = [self.poly(e, "layout", names_ok) for e in spec.shape]
            stride = [self.poly(e, "layout", names_ok) for e in spec.stride]
            if None in shape or None in stride:
                return None
        else:
            layer = self.named_storage_layout(spec, names_ok, view=False)
            if layer is None:
                return None
            shape, stride = list(layer.layout.shape), list(layer.layout.stride)
        layout = StridedLayout(tuple(shape), tuple(stride))
        if tuple(shape) != tuple(dims):
            dims_text = ", ".join(str(x) for x in dims)
            self.error(f"layout {layout} does not match the dims [{dims_text}] of '{p.name}'",
                       spec.loc, hint="the layout's shape must list the buffer's dims in order")
            return None
        return layout

    def role_names(self, k: A.Kernel, params: dict) -> None:
        """``@tunable(...)``/``@constant(...)`` name parameters of the kernel, each in one role."""
        seen: dict = {}
        for a in k.attributes:
            if a.name not in ROLE_ATTRIBUTES:
                continue
            for x in a.args or []:
                if not isinstance(x, A.Name):
                    continue
                if x.id not in params:
                    self.error(f"@{a.name} names '{x.id}', which is not a parameter of kernel '{k.name}'"
                               + did_you_mean(x.id, list(params)), x.loc)
                elif x.id in seen and seen[x.id] != a.name:
                    self.error(f"'{x.id}' is declared both @{seen[x.id]} and @{a.name}", x.loc)
                seen[x.id] = a.name

    def view_param(self, sym, p: A.BufferParam, elem, dims_names_ok, add_sizes) -> None:
        """Check a ``view`` buffer param: dims (any rank up to :data:`MAX_VIEW_RANK`), storage
        layout (row-major by default, literal, named, or a swizzled named layout), ``default`` and
        ``compute`` clauses; no accessor patterns."""
        if p.patterns:
            self.error(f"a 'view' buffer takes no accessor pattern ('{p.patterns[0].name}')",
                       p.patterns[0].loc,
                       hint="a view is accessed by coordinates in the body: x[i, j], x.checked(i, j)")
            return
        if len(p.dims) > MAX_VIEW_RANK:
            self.error(f"view '{p.name}' has {len(p.dims)} dims; at most {MAX_VIEW_RANK} are "
                       f"supported", p.loc)
            return
        dims = [self.poly(d, "dim", dims_names_ok) for d in p.dims]
        if None in dims or elem is None:
            return
        for d in dims:
            add_sizes(d, p.loc)
        spec = p.layout
        swizzle = None
        if spec is None or (isinstance(spec, A.LayoutName) and spec.name in ("aos", "soa")):
            if spec is not None and spec.args:
                self.error(f"layout '{spec.name}' takes no arguments", spec.loc)
                return
            if spec is not None and len(dims) != 2:
                self.error(f"layout '{spec.name}' is for 2-D views (T[n, K])", spec.loc)
                return
            if spec is not None and spec.name == "soa":
                layout = StridedLayout(tuple(dims), (Poly.const(1), dims[0]))
            else:  # row-major (C order): the last dim is contiguous
                strides, acc = [], Poly.const(1)
                for d in reversed(dims):
                    strides.append(acc)
                    acc = acc * d
                layout = StridedLayout(tuple(dims), tuple(reversed(strides)))
        elif isinstance(spec, A.LayoutName) and spec.name == "caspar":
            self.error("layout 'caspar' is for accessor buffers, not views", spec.loc)
            return
        elif isinstance(spec, A.LayoutLiteral):
            if not self.flat_storage_layout(spec, p):
                return
            if len(spec.shape) != len(spec.stride):
                self.error(f"layout has {len(spec.shape)} shape entries but {len(spec.stride)} "
                           f"strides", spec.loc)
                return
            shape = [self.poly(e, "layout", dims_names_ok) for e in spec.shape]
            stride = [self.poly(e, "layout", dims_names_ok) for e in spec.stride]
            if None in shape or None in stride:
                return
            layout = StridedLayout(tuple(shape), tuple(stride))
        else:
            layer = self.named_storage_layout(spec, dims_names_ok, view=True)
            if layer is None:
                return
            layout, swizzle = layer.layout, layer.swizzle
        if tuple(layout.shape) != tuple(dims):
            dims_text = ", ".join(str(x) for x in dims)
            self.error(f"layout {layout} does not match the dims [{dims_text}] of '{p.name}'",
                       spec.loc, hint="the layout's shape must list the view's dims in order")
            return
        for s in layout.shape + layout.stride:
            add_sizes(s, p.loc)
        shape = storage_shape(layout)
        sig_layout = str(layout)
        if swizzle is not None:
            # only swizzled views need the algebra here (cold start, see layouts.py)
            from kernc.dialect import layout_algebra as KL

            inner = KL.Layout(tuple(poly_entry(x) for x in layout.shape),
                              tuple(poly_entry(x) for x in layout.stride))
            composed = KL.ComposedLayout(KL.Swizzle(*swizzle), 0, inner)
            cos = composed.cosize()
            if cos > inner.cosize():  # the swizzle reaches past the plain layout's storage
                shape, sig_layout = [cos], f"({cos}):(1)"
        compute = self.compute_clause(p, elem)
        b = BufferInfo(p.name, elem, dims, 1, accessors.VIEW_MODE, accessors.VIEW.name, [], None, layout, shape,
                       p.loc, compute=compute, compute_name=compute.name if compute is not None else None)
        b.swizzle = swizzle
        b.sig_layout = sig_layout
        if p.default is not None:
            value = self.default_value(p.default, b)
            if value is None:
                return
            b.default_value = value
        sym.buffer = b
        sym.ty = b.value_type

    # ---- kernels ----------------------------------------------------------------------------

    def check_kernel(self, k: A.Kernel) -> None:
        errors_before = len(self.diags)
        block, attributes, tile_config, tensor_cores = 256, [], None, {}
        seen_attrs: dict[str, A.Attribute] = {}
        for a in k.attributes:
            if a.name in seen_attrs:
                self.error(f"duplicate attribute '@{a.name}'", a.loc)
                continue
            seen_attrs[a.name] = a
            if a.name == "block":
                args = a.args or []
                if len(args) != 1 or not isinstance(args[0], A.IntLit):
                    self.error("@block takes one integer literal, e.g. @block(256)", a.loc)
                    continue
                n = args[0].value
                if n < 32 or n > 1024 or n & (n - 1):
                    self.error(f"block size must be a power of two between 32 and 1024, got {n}",
                               args[0].loc)
                    continue
                block = n
            elif a.name == "tile":  # kern-tile-contractions' configuration (its limits: the pass)
                args = a.args or []
                if len(args) != 3 or not all(isinstance(x, A.IntLit) for x in args):
                    self.error("@tile takes three integer literals, the block tile and its loop "
                               "chunk, e.g. @tile(64, 64, 16)", a.loc)
                    continue
                bad = next((x for x in args if x.value < 1 or x.value & (x.value - 1)), None)
                if bad is not None:
                    self.error(f"a tile extent must be a power of two, got {bad.value}", bad.loc)
                    continue
                tile_config = {"tile": [x.value for x in args],
                               "at": [a.loc.filename, a.loc.line, a.loc.column]}
            elif a.name in ("tensor_cores", "tf32"):  # kern-mma-contractions (its limits: the pass)
                if a.args is not None:
                    self.error(f"@{a.name} takes no arguments", a.loc)
                    continue
                tensor_cores["force" if a.name == "tensor_cores" else "tf32"] = [
                    a.loc.filename, a.loc.line, a.loc.column]
            elif a.name in ROLE_ATTRIBUTES:  # roles of derivatives (frontend/derivative.py)
                bad = next((x for x in a.args or [] if not isinstance(x, A.Name)), None)
                if a.args is None or bad is not None:
                    self.error(f"@{a.name} takes parameter names, e.g. @{a.name}(x, a)",
                               bad.loc if bad is not None else a.loc)
            elif a.name in ("deterministic", "checked"):
                if a.args is not None:
                    self.error(f"@{a.name} takes no arguments", a.loc)
                    continue
                attributes.append(a.name)
            else:
                self.error(f"unknown kernel attribute '@{a.name}'"
                           + did_you_mean(a.name, KERNEL_ATTRIBUTES), a.loc,
                           hint="kernel attributes: @block(N), @deterministic, @checked, @tile(BM, BN, BK), "
                                "@tensor_cores, @tf32, "
                                "@tunable(x, ...), @constant(c, ...)")

        params: list[Symbol] = []
        by_name: dict[str, Symbol] = {}
        self.kernel_params = by_name  # `default NAME` clauses name a scalar parameter
        # pass 1: names and kinds
        for p in k.params:
            if p.name in by_name:
                self.error(f"duplicate parameter '{p.name}'", p.loc,
                           note=("previous declaration is here", by_name[p.name].loc))
                continue
            if not self.name_free(p.name, p.loc, "a parameter"):
                continue
            if isinstance(p, A.ScalarParam):
                ty = self.type_named(p.type_name, p.type_loc or p.loc)
                sym = Symbol(p.name, "scalar", ty, p.loc)
            else:
                sym = Symbol(p.name, "buffer", None, p.loc)
            sym.node = p
            by_name[p.name] = sym
            params.append(sym)

        self.role_names(k, by_name)
        sizes: list[str] = []
        size_syms: dict[str, Symbol] = {}

        def size_name_ok(name, loc):
            if name in by_name:
                kind = "scalar parameter" if by_name[name].kind == "scalar" else "buffer"
                self.error(f"'{name}' is a {kind}, not a size symbol", loc,
                           hint="size symbols are bound from buffer shapes; use a fresh name")
                return False
            if not self.name_free(name, loc, "a size symbol"):
                return False
            return True

        def add_sizes(poly: Poly, loc):
            for s in poly.symbols:
                if s not in size_syms:
                    sizes.append(s)
                    size_syms[s] = Symbol(s, "size", T.INDEX, loc)

        # pass 2: buffers (dims, layout); accessors need every param, so they come in pass 3
        for sym in params:
            p = sym.node
            if sym.kind != "buffer":
                continue
            elem = self.type_named(p.elem_name, p.elem_loc or p.loc)
            if elem is not None and (elem.is_bool or elem.is_index):
                self.error(f"buffers of '{elem}' are not supported", p.elem_loc or p.loc,
                           hint="use u8 for flags" if elem.is_bool else "use i64 (or u32) for indices")
                elem = None
            if p.access == accessors.VIEW_MODE:
                self.view_param(sym, p, elem, size_name_ok, add_sizes)
                if sym.buffer is not None and not self.buffer_range_ok(sym.buffer, p):
                    sym.buffer = None
                continue
            dims = [self.poly(d, "dim", size_name_ok) for d in p.dims]
            if None in dims or elem is None:
                continue
            if len(dims) > 2:
                self.error(f"buffer '{p.name}' has {len(dims)} dims; only T[n] and T[n, K] are supported "
                           f"(N-D buffers are 'view' buffers)", p.loc,
                           hint=f"declare it `{p.name}: {p.elem_name}[...] view` and access it by "
                                f"coordinates")
                continue
            components = 1
            if len(dims) == 2:
                if not dims[1].is_const:
                    self.error("the last dim of a multi-component buffer must be an integer literal "
                               "(the component count)", p.dims[1].loc)
                    continue
                components = dims[1].value
                if components > MAX_COMPONENTS:
                    self.error(f"a multi-component element has at most {MAX_COMPONENTS} components, "
                               f"got {components}", p.dims[1].loc,
                               hint="for large or N-D arrays use a 'view' buffer "
                                    f"(`{p.name}: {p.elem_name}[...] view`)")
                    continue
                if components < 2:
                    self.error(f"a multi-component element needs at least 2 components, got "
                               f"{components}", p.dims[1].loc,
                               hint=f"declare it as {p.elem_name}"
                                    f"[{p.dims[0].id if isinstance(p.dims[0], A.Name) else 'n'}]")
                    continue
            for d in dims:
                add_sizes(d, p.loc)
            layout = self.resolve_layout(p, dims, size_name_ok, elem)
            if layout is None:
                continue
            for s in layout.shape + layout.stride:
                add_sizes(s, p.loc)
            shape = storage_shape(layout)
            is_caspar = isinstance(p.layout, A.LayoutName) and p.layout.name == "caspar"
            if is_caspar:  # Caspar's host array: (caspar_size(K), n)
                shape = [layout.stride[0].value, poly_entry(dims[0])]
            compute = self.compute_clause(p, elem)
            b = BufferInfo(p.name, elem, dims, components, p.access, accessors.SEQUENTIAL.name, [], None,
                           layout, shape, p.loc, compute=compute,
                           compute_name=compute.name if compute is not None else None)
            if not self.buffer_range_ok(b, p):
                continue
            b.is_caspar = is_caspar
            sym.buffer = b
            sym.ty = b.value_type

        # over
        over = k.over
        problem = None
        coord_syms: list = []
        extents: list = []
        problem_poly = None
        if over.extents is not None:
            problem, problem_poly = self.over_nd(over, by_name, size_syms, sizes, coord_syms,
                                                 extents)
        else:
            name = over.names[0]
            if name in by_name:
                s = by_name[name]
                if s.kind == "scalar" and s.ty is not None and s.ty.is_int:
                    problem = name
                elif s.kind == "scalar" and s.ty is not None:
                    self.error(f"the problem size '{name}' must be an integer, not '{s.ty}'", over.loc)
                elif s.kind == "buffer":
                    self.error(f"the problem size must be a size symbol or an integer scalar "
                               f"parameter; '{name}' is a buffer", over.loc,
                               hint=f"use the size symbol of its dims, e.g. over n for {name}: T[n]")
            elif name in size_syms:
                problem = name
            elif self.name_free(name, over.loc, "a size symbol"):
                problem = name
                sizes.append(name)
                size_syms[name] = Symbol(name, "size", T.INDEX, over.loc)

        info = KernelInfo(k.name, block, attributes, params, sizes, problem or "?", size_syms,
                          coords=coord_syms, extents=extents, problem_poly=problem_poly)
        info.tile_config = tile_config
        info.tensor_cores = tensor_cores or None
        # @tensor_cores / @tile on a kernel over one size: an error unless --no-tensor-cores /
        # --no-tile turns the attribute off (kernc.compiler.attribute_errors: it knows the options)
        k.info = info
        self.info = info

        # pass 3: accessor patterns (they refer to other params and to size symbols)
        for sym in params:
            if sym.kind == "buffer" and sym.buffer is not None and not sym.buffer.is_view:
                self.check_accessor(sym, by_name, size_syms, problem)
                if sym.buffer is not None and sym.buffer.is_caspar:
                    self.caspar_planes(sym.buffer)
        if "deterministic" in attributes:
            self.deterministic_ok(params, seen_attrs["deterministic"])
        # hidden shared_indices tables, four per index param of shared/shared_sum (the record's
        # `tables`), in first use order
        for sym in params:
            b = sym.buffer
            if sym.kind == "buffer" and b is not None and b.kind.tables \
                    and b.index_param is not None \
                    and all(t.table_of != b.index_param for t in info.tables):
                info.tables += [TableInfo(shared_table.table_name(b.index_param, f), b.index_param, f)
                                for f in b.kind.tables]

        # body
        builtins = {n: Symbol(n, "builtin", T.INDEX) for n in BUILTIN_VALUES}
        kernel_scope = dict(builtins)
        kernel_scope.update(size_syms)
        kernel_scope.update({s.name: s for s in params})
        kernel_scope.update({s.name: s for s in coord_syms})
        self.scopes = [kernel_scope]
        self.used_reads: list = []
        prepare_groups(self, k, coord_syms, info)  # reductions across items (groups.py)
        self.check_block(k.body, new_scope=True)
        if len(self.diags) == errors_before:  # (a kernel with errors has untyped parts)
            check_view_races(self, k, info)
        info.used_reads = [s for s in params if s in self.used_reads]
        info.nested_return = has_nested_return(k.body.stmts)
        # the largest constant index expression (strided(0, 256 * 256)): the launcher's choice of
        # 32-bit indices bounds its products (lowering adds what else reaches index arithmetic)
        info.index_literal_max = max(index_constant_max(k), self.fn_layout_constant_max,
                                     self.fn_constant_max)
        # what the launcher checks for arrays shared by two buffers (aliasing.py)
        info.reads, info.writes, info.in_place = alias_facts(k, info)
        for out in info.outputs:
            if guarded_output(out.buffer):
                assigned, leaks = definitely_assigns(k.body.stmts, out, False)
                if leaks or not assigned:
                    info.flagged_outputs.add(out)
        self.scopes = []

    def over_nd(self, over: A.Over, by_name: dict, size_syms: dict, sizes: list,
                coord_syms: list, extents: list):
        """``over (i, j) in (M, N)``: coordinates (``index``, last fastest) and extents (sums and
        products of size symbols and integers; a fresh name becomes a size symbol). Returns
        ``(problem_size text, P as a Poly)``. After an error the coordinates are still declared, so
        the body is checked without a cascade of "unknown name" errors."""
        ok = True
        if len(over.names) != len(over.extents):
            self.error(f"'over' names {len(over.names)} coordinate"
                       f"{'s' if len(over.names) != 1 else ''} but gives {len(over.extents)} "
                       f"extent{'s' if len(over.extents) != 1 else ''}", over.loc)
            ok = False
        elif len(over.names) > 8:
            self.error(f"at most 8 coordinates in 'over', got {len(over.names)}", over.loc)
            ok = False

        def extent_ok(name, loc):
            if name in size_syms:
                return True
            if name in by_name:
                kind = by_name[name].kind
                self.error(f"extents of 'over' must be size symbols; '{name}' is a "
                           f"{'scalar parameter' if kind == 'scalar' else 'buffer'}", loc,
                           hint="use a size symbol bound from a view's dims (or passed by keyword)")
                return False
            if not self.name_free(name, loc, "a size symbol"):
                return False
            sizes.append(name)
            size_syms[name] = Symbol(name, "size", T.INDEX, loc)
            return True

        total = Poly.const(1)
        for e in over.extents if ok else ():
            p = self.poly(e, "extent", extent_ok)
            if p is None:
                ok = False
                continue
            extents.append(p)
            total = total * p
        if ok and not self.index_range_ok(total, "the problem size", over.extents[0].loc):
            ok = False
        seen: set = set()
        for n, name in enumerate(over.names):
            loc = over.name_locs[n] if over.name_locs else over.loc
            if name in seen or name in by_name or name in size_syms:
                self.error(f"the coordinate '{name}' of 'over' redeclares a name", loc)
                ok = False
                continue
            if not self.name_free(name, loc, "a coordinate"):
                ok = False
                continue
            seen.add(name)
            coord_syms.append(Symbol(name, "coord", T.INDEX, loc))
        if not ok:
            return None, None
        return str(total), total

    def compute_clause(self, p: A.BufferParam, elem: T.ScalarType) -> Optional[T.ScalarType]:
        """The type of ``p``'s ``compute`` clause (``None`` without one, or after an error)."""
        if p.compute is None:
            return None
        loc = p.compute_loc or p.loc
        ct = T.SCALARS.get(p.compute)
        if ct is None:
            self.error(f"unknown compute type '{p.compute}'" + did_you_mean(p.compute, COMPUTE_TYPES),
                       loc, hint="compute types: f32, f64")
            return None
        if not elem.is_float:
            self.error(f"'compute {ct}' needs a float buffer; '{elem}' values are computed as stored",
                       loc, hint="drop the compute clause")
            return None
        if ct.name not in COMPUTE_TYPES:
            self.error(f"the compute type must be f32 or f64, got '{ct}'", loc,
                       hint=f"'{elem}' storage computes in "
                            f"'{promoted(elem)}' by default" if elem.bits < 32 else None)
            return None
        if ct.bits < elem.bits:
            self.error(f"compute type '{ct}' is narrower than the storage type '{elem}' of "
                       f"'{p.name}'", loc, hint="drop the clause, or use 'compute f64'")
            return None
        return ct
