"""Name resolution and type checking of a parsed ``.kern`` program.

:func:`check` validates a :class:`kernc.frontend.ast.Program` and annotates it in place (see
:mod:`kernc.frontend.ast`): expression types, resolved :class:`Symbol` s, and a :class:`KernelInfo`
per kernel (parameters, size symbols, layouts, block size, the kernel signature). All errors found
are collected and raised together as one :class:`kernc.errors.CompileError`.

Language rules enforced here (the reference for the lowering):

- ``let`` bindings are *mutable* local variables with a fixed type; ``x = e``, ``x += e``,
  ``x -= e``, ``x *= e``, ``x /= e`` update them. Names cannot be redeclared while visible (no
  shadowing); loop variables and parameters are read-only.
- Unsuffixed literals take their type from the other operand (an integer literal may become a float;
  a float literal never becomes an integer); alone they default to ``i32`` / ``f32``. An
  integer-literal expression with an integer operation (``/ % // %% << >> & | ^ ~``) keeps integer
  semantics where a float is expected: it is computed as ``i32`` and converted (as in C:
  ``f32(7 / 2)`` is ``3.0``, ``y = 1 << 2`` stores ``4.0``); the node is marked ``computed_as``.
- There is no implicit conversion: mixing int and float, signed and unsigned, or different widths is
  an error with a hint to cast (``f32(x)``, ``u32(x)``, ``index(x)``).
- A scalar operand broadcasts against a vector; two vectors must have the same length.
- A ``read`` buffer's name is the thread's element (a scalar, or a K-vector for ``T[n, K]``); an
  output (``write``/``add``) can only be assigned (``y = v``, ``y += v``, ``y -= v``,
  ``y[k] = v``), never read. An output's pending value starts at zero.
- Accessors (``docs/accessor-lowering.md``): each access mode allows the patterns of
  :data:`ACCESS_PATTERNS`; ``default v`` only on ``read strided(off, s)`` / ``read pair strided``
  (which requires one), with ``v`` a number literal rounded once to the compute type; the index
  param of ``indexed``/``shared``/``shared_sum``/``atomic`` is a sequential 1-D ``u32``/``i32``
  ``read`` buffer with one entry per item. A ``pair`` read is used as ``u.first`` / ``u.second``;
  a ``pair`` output is assigned ``out = (a, b)`` or ``out.first`` / ``out.second``.
- Buffers compute in their compute type (``f16``/``bf16`` -> ``f32``, or ``compute f32|f64`` on
  float storage, never narrower); an output also accepts values of its storage type (widened
  exactly).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Optional

from kernc.dialect.signature import KernelSignature, Param
from kernc.dialect.strided import Poly, StridedLayout
from kernc.errors import CompileError, Diagnostic, InternalCompilerError, SourceLocation
from kernc.exact_numbers import decimal_fraction

from . import ast as A
from . import types as T
from .aliasing import alias_facts
from .layouts import LayoutMixin

#: Builtin values (all of type ``index``).
BUILTIN_VALUES = ("thread_id", "block_id", "block_dim", "lane_id", "problem_size")
#: Builtin functions and their arity.
FLOAT_UNARY = ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "floor", "ceil")
BUILTIN_FUNCS = {**{f: 1 for f in FLOAT_UNARY}, "abs": 1, "min": 2, "max": 2, "fma": 3, "select": 3}
#: Accessor patterns of the language with their argument counts (``pair strided(off, s) default v``
#: combines two of them).
ACCESSORS = {
    "sequential": 0, "strided": 2, "indexed": 1, "shared": 1, "unique": 0, "pair": 0,
    "shared_sum": 1, "atomic": 1, "block_sum": 0, "sum": 0,
}
SUPPORTED_ACCESSORS = ACCESSORS
#: Accessor patterns that parse but are not implemented yet (none left).
PENDING_ACCESSORS: tuple = ()
#: The patterns each access mode allows.
ACCESS_PATTERNS = {
    "read": ("sequential", "strided", "indexed", "shared", "unique", "pair"),
    "write": ("sequential", "strided", "indexed", "block_sum", "sum", "pair"),
    "add": ("sequential", "strided", "indexed", "shared_sum", "atomic", "block_sum", "sum", "pair"),
}
#: Accessors whose argument is an index buffer param ``I``.
INDEX_ACCESSORS = ("indexed", "shared", "shared_sum", "atomic")
#: Block-wide output accessors: their ``write`` op is emitted unconditionally (no "assigned" flag;
#: a thread that assigns nothing contributes 0).
BLOCK_WIDE_OUTPUTS = ("block_sum", "sum", "pair")
#: ``add`` accessors whose op each thread runs on its own (no barrier, shuffle or block-wide
#: exchange), so a thread that assigns nothing can skip it; the collective ones (``sum``,
#: ``block_sum``, ``pair``, ``shared_sum``) need every thread and add its pending 0.
PER_THREAD_ADDS = ("sequential", "strided", "indexed", "atomic")
#: The ``shared_indices`` tables appended as hidden params per index param of shared/shared_sum, and
#: the ones each accessor takes as its ``args`` (``docs/accessor-lowering.md``).
TABLE_FIELDS = ("unique", "target", "perm", "count")
TABLE_ARGS = {"shared": ("unique", "target"), "shared_sum": ("unique", "perm")}
#: Compute types a ``compute`` clause may name.
COMPUTE_TYPES = ("f32", "f64")
KERNEL_ATTRIBUTES = ("block", "deterministic", "checked")
#: Reserved words of the grammar: never names. The access words read/write/add/view and the clause
#: words default/compute are not reserved (they are keywords only right after a buffer's dims), nor
#: is `o` (composition, only inside layout expressions).
KEYWORDS = ("kernel", "layout", "let", "if", "else", "for", "in", "over", "return", "as", "true",
            "false")
#: Most components of a multi-component element ``T[n, K]`` (each is a separate SSA value).
MAX_COMPONENTS = 64
#: The largest ``index`` value (int64): sizes, strides and every constant derived from them must
#: fit, as MLIR's ``index`` constants and the 64-bit PTX hold no more.
INDEX_MAX = 2**63 - 1
#: Prefixes and names a kernel may not have: the kernel name is the PTX entry name, which must be a
#: PTX identifier (``_`` alone is not one) and must not collide with the libdevice functions linked
#: into the same module (``__nv_*``), NVVM/CUDA internals or the CUDA device runtime.
RESERVED_KERNEL_PREFIXES = ("__nv", "__cuda", "__internal", "llvm", "nvvm")
RESERVED_KERNEL_NAMES = ("_", "WARP_SZ", "vprintf", "printf", "malloc", "free", "__assertfail", "memcpy",
                         "memset", "kernels")
#: The PTX names of an entry's parameters (``g_param_0``; LLVM NVPTX), see ``ptx_names_ok``.
_PTX_PARAM_NAME = re.compile(r"(.+)_param_[0-9]+")
BUILTIN_LAYOUTS = ("soa", "aos", "caspar")
PENDING_LAYOUTS: tuple = ()

_ARITH = ("+", "-", "*", "/", "%", "//", "%%")
_BITWISE = ("&", "|", "^")
_SHIFT = ("<<", ">>")
_COMPARE = ("==", "!=", "<", "<=", ">", ">=")
_LOGIC = ("&&", "||")


@dataclass(eq=False)
class BufferInfo:
    """A checked buffer parameter.

    ``elem`` is the storage dtype, ``compute`` the compute dtype of its values (``None``: ``elem``
    after ``f16``/``bf16`` -> ``f32`` promotion; see :attr:`compute_elem`), ``compute_name`` the type
    named by an explicit ``compute`` clause. ``value_type`` is what the body sees (``compute_elem``
    or a K-vector of it; a ``pair`` buffer has two such values). ``accessor`` is the kern IR accessor
    name (``"strided_default"``, ``"pair_strided_default"``, ``"shared"``, ...);
    ``accessor_args`` are the ``(off, s)`` index expressions of the strided forms; ``default_value``
    the exact default (a Python int, or a float holding the value rounded once to the compute
    type); ``index_param`` names the index buffer of ``indexed``/``shared``/``shared_sum``/
    ``atomic``; ``layout`` is the storage layout over ``dims``; ``storage_shape`` the shape of the
    array the user passes (ints and symbol strings).
    """

    name: str
    elem: T.ScalarType
    dims: list
    components: int
    access: str
    accessor: str
    accessor_args: list
    index_param: Optional[str]
    layout: StridedLayout
    storage_shape: list
    loc: SourceLocation
    compute: Optional[T.ScalarType] = None
    compute_name: Optional[str] = None
    default_value: Optional[object] = None
    #: views: the static swizzle ``(B, M, S)`` over ``layout`` (or None), and the layout text the
    #: signature records for the launcher (``layout``, or a flat ``(cosize):(1)`` when a swizzle
    #: reaches past it)
    swizzle: Optional[tuple] = None
    sig_layout: Optional[str] = None

    @property
    def is_view(self) -> bool:
        return self.access == "view"

    @property
    def layout_text(self) -> str:
        """The ``layout`` attribute of the buffer's kern ops (``Sw<B,M,S> o (..):(..)`` for a
        swizzled view)."""
        if self.swizzle:
            b, m, s = self.swizzle
            return f"Sw<{b},{m},{s}> o {self.layout}"
        return str(self.layout)

    @property
    def compute_elem(self) -> T.ScalarType:
        """The scalar type the body computes with (the type of the accessor ops' values)."""
        if self.compute is not None:
            return self.compute
        return promoted(self.elem)

    @property
    def value_type(self) -> T.Type:
        c = self.compute_elem
        return T.VectorType(c, self.components) if self.components > 1 else c

    @property
    def is_output(self) -> bool:
        return self.access in ("write", "add")

    @property
    def is_pair(self) -> bool:
        """``pair`` / ``pair strided(off, s) default v``: two elements per thread."""
        return self.accessor in ("pair", "pair_strided_default")

    @property
    def flat_width(self) -> int:
        """Scalar values per thread in the IR: ``components``, twice that for pair accessors."""
        return self.components * (2 if self.is_pair else 1)

    @property
    def pattern_text(self) -> str:
        """The accessor as the program spells it (for messages)."""
        return {"strided_default": "strided(off, s) default v",
                "pair_strided_default": "pair strided(off, s) default v"}.get(self.accessor,
                                                                               self.accessor)

    def signature_extras(self, problem: str) -> dict:
        """The ``compute``/``zero_init``/``min_elements`` fields of the buffer's signature param."""
        min_elements = None
        if self.accessor == "pair":
            min_elements = f"{problem}+1"
        elif self.accessor == "unique":
            min_elements = "1"
        return {
            "compute": self.compute_name,
            "zero_init": self.access == "write" and self.accessor in ("sum", "pair"),
            "min_elements": min_elements,
        }


def promoted(s: T.ScalarType) -> T.ScalarType:
    """The default compute type of storage type ``s``: ``f32`` for ``f16``/``bf16``, else ``s``."""
    return T.F32 if s.name in ("f16", "bf16") else s


@dataclass(eq=False)
class TableInfo:
    """A hidden ``shared_indices`` table param: ``name`` (``"I.unique"``), the index param ``I``
    (``table_of``) and the table (``field``: ``unique``, ``target``, ``perm`` or ``count``)."""

    name: str
    table_of: str
    field: str


@dataclass(eq=False)
class Symbol:
    """A resolved name.

    ``kind`` is ``"scalar"`` (scalar param), ``"buffer"``, ``"size"`` (size symbol), ``"local"``
    (``let``), ``"loopvar"`` or ``"builtin"`` (``thread_id``...). ``ty`` is the value type (for
    buffers the element value type).
    """

    name: str
    kind: str
    ty: Optional[T.Type]
    loc: Optional[SourceLocation] = None
    buffer: Optional[BufferInfo] = None

    def __repr__(self) -> str:
        return f"Symbol({self.name!r}, {self.kind}, {self.ty})"


@dataclass(eq=False)
class KernelInfo:
    """Everything the lowering needs about a checked kernel.

    ``params`` are the param symbols in source order; ``tables`` the hidden table params that follow
    them (:class:`TableInfo`, four per index param of ``shared``/``shared_sum``); ``sizes`` the size
    symbols in ABI order;
    ``problem_size`` the name giving ``P`` (a size symbol or an integer scalar param);
    ``flagged_outputs`` the outputs that are not assigned on every path and whose final op is
    guarded by an "assigned" flag (:func:`_guarded_output`); ``nested_return`` whether a ``return`` occurs inside an
    ``if``/``for`` (the lowering then tracks a "returned" flag).
    """

    name: str
    block: int
    attributes: list
    params: list
    sizes: list
    problem_size: str
    size_symbols: dict = field(default_factory=dict)
    flagged_outputs: set = field(default_factory=set)
    nested_return: bool = False
    used_reads: list = field(default_factory=list)
    tables: list = field(default_factory=list)
    #: N-D problems ``over (i, j) in (M, N)``: the coordinate symbols, their extents (Polys over
    #: size symbols) and ``P`` as their product; 1-D ``over n``: ``[]``, ``[]`` and None
    coords: list = field(default_factory=list)
    extents: list = field(default_factory=list)
    problem_poly: Optional[Poly] = None
    index_literal_max: int = 0
    #: the buffer params the kernel reads and writes, and the [read, written] pairs that may be
    #: passed one array (``frontend/aliasing.py``)
    reads: list = field(default_factory=list)
    writes: list = field(default_factory=list)
    in_place: list = field(default_factory=list)

    @property
    def problem_symbol(self) -> Symbol:
        for p in self.params:
            if p.name == self.problem_size:
                return p
        return self.size_symbols[self.problem_size]

    @property
    def outputs(self) -> list:
        return [p for p in self.params
                if p.kind == "buffer" and p.buffer is not None and p.buffer.is_output]

    def signature(self) -> KernelSignature:
        """The :class:`kernc.dialect.signature.KernelSignature` of the kernel."""
        params = []
        for p in self.params:
            if p.kind == "scalar":
                params.append(Param(name=p.name, kind="scalar", dtype=p.ty.name))
            else:
                b = p.buffer
                params.append(Param(
                    name=p.name, kind="buffer", dtype=b.elem.name, access=b.access,
                    accessor=b.accessor, index_param=b.index_param,
                    dims=[_poly_entry(d) for d in b.dims], components=b.components,
                    layout=b.sig_layout or str(b.layout), storage_shape=list(b.storage_shape),
                    **b.signature_extras(self.problem_size),
                ))
        for t in self.tables:
            params.append(Param(name=t.name, kind="table", dtype="u32", storage_shape=[],
                                table_of=t.table_of, table_field=t.field))
        return KernelSignature(name=self.name, params=params, sizes=list(self.sizes),
                               problem_size=self.problem_size, block=self.block,
                               attributes=list(self.attributes), index_literal_max=self.index_literal_max,
                               reads=list(self.reads), writes=list(self.writes),
                               in_place=[list(x) for x in self.in_place])


def _poly_entry(p: Poly):
    """An int for a constant polynomial, else its text (a symbol name for a single symbol)."""
    return p.value if p.is_const else str(p)


def _did_you_mean(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def check(program: A.Program) -> A.Program:
    """Type-check ``program`` and annotate it in place; returns it.

    Raises :class:`kernc.errors.CompileError` with every error found (each a located
    :class:`kernc.errors.Diagnostic`).
    """
    checker = _Checker(program)
    try:
        checker.run()
    except (CompileError, RecursionError):  # RecursionError: the caller reports deep nesting
        raise
    except Exception as exc:  # a checker bug, most likely triggered by an earlier error
        if checker.diags:
            raise CompileError(checker.diags) from None
        raise InternalCompilerError(f"the checker failed: {exc!r}") from exc
    return program


class _Checker(LayoutMixin):
    def __init__(self, program: A.Program):
        self.program = program
        self.diags: list[Diagnostic] = []
        self.layouts: dict[str, A.LayoutDef] = {}
        self.scopes: list[dict] = []
        self.info: Optional[KernelInfo] = None
        self.used_reads: list = []
        self.in_accessor = False

    # ---- diagnostics ------------------------------------------------------------------------

    def error(self, msg: str, loc: SourceLocation, hint: Optional[str] = None,
              note: Optional[tuple] = None) -> None:
        notes = []
        if note is not None:
            notes.append(Diagnostic(note[0], note[1], severity="note", source=self.program.source))
        self.diags.append(Diagnostic(msg, loc, source=self.program.source, hint=hint, notes=notes))

    def run(self) -> None:
        kernel_names: dict[str, A.Kernel] = {}
        self.register_layouts()
        # functional layouts compute their offsets with index arithmetic of their own constants
        # (return (m * 100000)): every kernel's index-width bound takes them into account
        self.fn_layout_constant_max = max((abs(n.value) for item in self.program.items
                                           if isinstance(item, A.FnLayoutDef)
                                           for n in A.iter_nodes(item) if isinstance(n, A.IntLit)), default=0)
        for item in self.program.items:
            if isinstance(item, A.Kernel):
                self.kernel_name_ok(item)
                if item.name in kernel_names:
                    self.error(f"redefinition of kernel '{item.name}'", item.loc,
                               note=("previous definition is here", kernel_names[item.name].loc))
                else:
                    kernel_names[item.name] = item
                self.check_kernel(item)
        self.ptx_names_ok(kernel_names)
        if self.diags:
            raise CompileError(self.diags)

    def deterministic_ok(self, params: list, attribute) -> None:
        """``@deterministic`` makes ``sum``/``shared_sum`` reproducible; a float buffer that is
        still added to with atomics in an order that varies from run to run (``add atomic(I)``, and
        ``add pair``, whose block-edge elements take two atomics onto their old value) would not be.
        Integer adds are exact in any order, ``write pair``'s two adds start from zero, and
        ``block_sum`` uses no atomics: those stay allowed."""
        for sym in params:
            b = sym.buffer
            if sym.kind != "buffer" or b is None or b.access != "add" or not b.compute_elem.is_float:
                continue
            if b.accessor == "atomic":
                self.error(f"@deterministic cannot make '{sym.name}' reproducible: 'add atomic' adds "
                           "floats with one atomic per thread, in an order that varies from run to run",
                           b.loc, note=("the attribute is here", attribute.loc),
                           hint=f"use 'add shared_sum({b.index_param})', which @deterministic makes "
                                "bitwise reproducible")
            elif b.accessor == "pair":
                self.error(f"@deterministic cannot make '{sym.name}' reproducible: 'add pair' adds "
                           "two floats with atomics onto each block-edge element, in either order",
                           b.loc, note=("the attribute is here", attribute.loc),
                           hint="drop @deterministic, or write the pairs to a 'write pair' buffer "
                                "(its two adds start from zero) and add that")

    def ptx_names_ok(self, kernels: dict) -> None:
        """No kernel is named like a PTX parameter of another kernel of the file: LLVM's NVPTX
        backend names the parameters of entry ``g`` ``g_param_0``, ``g_param_1``, ..., and ptxas
        (the CUDA driver's JIT too) crashed on an entry ``g_param_1`` after ``g``. (The workgroup
        globals of a kernel cannot collide with a kernel name: ``passes/gpu_to_nvvm.py``.)"""
        for name, k in kernels.items():
            m = _PTX_PARAM_NAME.fullmatch(name)
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
        """Caspar's layout: planes of 16-byte chunks of ``C = 16 / sizeof(T)`` components; element
        ``e`` component ``c`` at ``(c // C) * (n * C) + e * C + c % C``. With ``K <= C`` (one chunk)
        that is the flat ``(n, K):(C, 1)`` over a ``[n, C]`` array; more chunks need a nested layout
        (not supported yet)."""
        spec = p.layout
        if spec.args:
            self.error("layout 'caspar' takes no arguments", spec.loc)
            return None
        chunk = 16 // (elem.bits // 8)
        if len(dims) != 2:
            self.error("layout 'caspar' is for multi-component elements (T[n, K])", spec.loc,
                       hint="a single-component buffer needs no layout clause")
            return None
        k = dims[1].value
        if k > chunk:
            self.error(f"layout 'caspar' with {k} components of '{elem}' (more than one 16-byte "
                       f"chunk of {chunk}) is not supported yet", spec.loc,
                       hint="use 'as soa' or 'as aos'")
            return None
        return StridedLayout((dims[0], dims[1]), (Poly.const(chunk), Poly.const(1)))

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
        if isinstance(spec, A.LayoutName) and spec.name in PENDING_LAYOUTS:
            self.error(f"layout '{spec.name}' is not supported yet", spec.loc)
            return None
        if isinstance(spec, A.LayoutLiteral):
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

    # ---- kernels ----------------------------------------------------------------------------

    def check_kernel(self, k: A.Kernel) -> None:
        block, attributes = 256, []
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
            elif a.name in ("deterministic", "checked"):
                if a.args is not None:
                    self.error(f"@{a.name} takes no arguments", a.loc)
                    continue
                attributes.append(a.name)
            else:
                self.error(f"unknown kernel attribute '@{a.name}'"
                           + _did_you_mean(a.name, KERNEL_ATTRIBUTES), a.loc,
                           hint="kernel attributes: @block(N), @deterministic, @checked")

        params: list[Symbol] = []
        by_name: dict[str, Symbol] = {}
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
            if p.access == "view":
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
                               f"{components}", p.dims[1].loc, hint=f"declare it as {p.elem_name}[{p.dims[0].id if isinstance(p.dims[0], A.Name) else 'n'}]")
                    continue
            for d in dims:
                add_sizes(d, p.loc)
            layout = self.resolve_layout(p, dims, size_name_ok, elem)
            if layout is None:
                continue
            for s in layout.shape + layout.stride:
                add_sizes(s, p.loc)
            shape = storage_shape(layout)
            if isinstance(p.layout, A.LayoutName) and p.layout.name == "caspar":
                shape = [_poly_entry(dims[0]), layout.stride[0].value]
            compute = self.compute_clause(p, elem)
            b = BufferInfo(p.name, elem, dims, components, p.access, "sequential", [], None,
                           layout, shape, p.loc, compute=compute,
                           compute_name=compute.name if compute is not None else None)
            if not self.buffer_range_ok(b, p):
                continue
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
        k.info = info
        self.info = info

        # pass 3: accessor patterns (they refer to other params and to size symbols)
        for sym in params:
            if sym.kind == "buffer" and sym.buffer is not None and not sym.buffer.is_view:
                self.check_accessor(sym, by_name, size_syms, problem)
        if "deterministic" in attributes:
            self.deterministic_ok(params, seen_attrs["deterministic"])
        # hidden shared_indices tables, four per index param of shared/shared_sum (first use order)
        for sym in params:
            b = sym.buffer
            if sym.kind == "buffer" and b is not None and b.accessor in TABLE_ARGS \
                    and b.index_param is not None \
                    and all(t.table_of != b.index_param for t in info.tables):
                info.tables += [TableInfo(f"{b.index_param}.{f}", b.index_param, f)
                                for f in TABLE_FIELDS]

        # body
        builtins = {n: Symbol(n, "builtin", T.INDEX) for n in BUILTIN_VALUES}
        kernel_scope = dict(builtins)
        kernel_scope.update(size_syms)
        kernel_scope.update({s.name: s for s in params})
        kernel_scope.update({s.name: s for s in coord_syms})
        self.scopes = [kernel_scope]
        self.used_reads: list = []
        self.check_block(k.body, new_scope=True)
        info.used_reads = [s for s in params if s in self.used_reads]
        info.nested_return = _has_nested_return(k.body.stmts)
        # the largest constant index expression (strided(0, 256 * 256)): the launcher's choice of
        # 32-bit indices bounds its products (lowering adds what else reaches index arithmetic)
        info.index_literal_max = max(_index_constant_max(k), self.fn_layout_constant_max)
        # what the launcher checks for arrays shared by two buffers (aliasing.py)
        info.reads, info.writes, info.in_place = alias_facts(k, info)
        for out in info.outputs:
            if _guarded_output(out.buffer):
                assigned, leaks = _definitely_assigns(k.body.stmts, out, False)
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
            self.error(f"unknown compute type '{p.compute}'" + _did_you_mean(p.compute, COMPUTE_TYPES),
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

    def check_accessor(self, sym: Symbol, by_name: dict, size_syms: dict,
                       problem: Optional[str] = None) -> None:
        """Check ``sym``'s accessor patterns and ``default`` clause against its access mode; set
        ``accessor``, ``accessor_args``, ``default_value`` and ``index_param`` of its buffer."""
        p: A.BufferParam = sym.node
        b = sym.buffer
        pats = p.patterns
        names = ", ".join(ACCESSORS)
        for pat in pats:
            if pat.name not in ACCESSORS:
                self.error(f"unknown accessor '{pat.name}'"
                           + _did_you_mean(pat.name, list(ACCESSORS) + ["compute", "default"]),
                           pat.loc, hint=f"accessors: {names}")
                return
        if len(pats) > 2 or (len(pats) == 2 and (pats[0].name, pats[1].name) != ("pair", "strided")):
            self.error("only 'pair strided(off, s) default v' combines two accessor patterns",
                       pats[1].loc if pats[0].name == "pair" or len(pats) > 2 else pats[0].loc,
                       hint="one accessor per buffer, e.g. `read shared(I)`")
            return
        for pat in pats:
            want = ACCESSORS[pat.name]
            args = pat.args or []
            if len(args) != want or (want == 0 and pat.args is not None):
                if want == 0:
                    self.error(f"accessor '{pat.name}' takes no arguments", pat.loc)
                else:
                    self.error(f"accessor '{pat.name}' takes {want} argument{'s' if want > 1 else ''}, "
                               f"got {len(args)}", pat.loc,
                               hint="strided(off, s)" if pat.name == "strided" else f"{pat.name}(I)")
                return
        kind = pats[0].name if pats else "sequential"
        strided = pats[-1] if pats and pats[-1].name == "strided" else None
        mode = p.access
        if kind not in ACCESS_PATTERNS[mode]:
            self.access_mode_error(kind, mode, pats[0], p)
            return
        if kind == "pair" and strided is not None and mode != "read":
            self.error(f"'pair strided(off, s) default v' is only for 'read' buffers, not '{mode}'",
                       pats[0].loc, hint="pair outputs are `write pair` or `add pair`")
            return
        if p.default is not None:
            if mode != "read":
                self.error(f"'default' values are only for 'read' buffers, not '{mode}'",
                           p.default.loc, hint="for checked out-of-range writes, declare the buffer as a 'view' and use x.checked(...)")
                return
            if strided is None:
                self.error("'default v' needs a strided read: `strided(off, s) default v` or "
                           "`pair strided(off, s) default v`", p.default.loc,
                           hint=f"'{kind}' reads are always in bounds" if kind != "sequential" else
                           "a sequential read is `strided(0, 1)`: write `strided(0, 1) default v`")
                return
        elif kind == "pair" and strided is not None:
            self.error("'pair strided(off, s)' needs a default value for the items out of range",
                       pats[1].loc, hint="e.g. `pair strided(-1, 1) default 0`")
            return
        if strided is not None:
            if not self.strided_args(strided, by_name, size_syms, b):
                return
        if p.default is not None:
            value = self.default_value(p.default, b)
            if value is None:
                return
            b.default_value = value
        if kind in INDEX_ACCESSORS:
            if not self.index_param(sym, pats[0], by_name, problem):
                return
        if kind == "pair" and strided is not None:
            b.accessor = "pair_strided_default"
        elif strided is not None and p.default is not None:
            b.accessor = "strided_default"
        else:
            b.accessor = kind

    def access_mode_error(self, kind: str, mode: str, pat: A.Pattern, p: A.BufferParam) -> None:
        """Report accessor ``kind`` (pattern ``pat`` of ``p``) used with an access ``mode`` it does
        not support."""
        loc = pat.loc
        if kind in ("shared_sum", "atomic"):
            idx = pat.args[0].id if pat.args and isinstance(pat.args[0], A.Name) else "I"
            if mode == "write":
                hint = (f"duplicate indices are summed into the buffer: declare `{p.name}: "
                        f"{p.elem_name}[...] add {kind}({idx})`, or use `write indexed({idx})` when "
                        f"the indices are unique")
            else:
                hint = f"to gather use shared({idx}) or indexed({idx})"
            self.error(f"accessor '{kind}' needs 'add' access, not '{mode}'", loc, hint=hint)
        elif kind in ("shared", "unique"):
            hint = ("to scatter use indexed(I); to add with duplicate indices use shared_sum(I) or "
                    "atomic(I)") if kind == "shared" else "to add every thread's value into one " \
                "element use 'add sum'"
            self.error(f"accessor '{kind}' is only for 'read' buffers, not '{mode}'", loc, hint=hint)
        else:
            self.error(f"accessor '{kind}' is only for 'write' or 'add' buffers, not '{mode}'", loc,
                       hint="to read one element in every thread use 'unique'")

    def strided_args(self, pat: A.Pattern, by_name: dict, size_syms: dict, b: BufferInfo) -> bool:
        """Check the ``(off, s)`` of ``strided`` (integers over scalar params and size symbols)."""
        args = pat.args or []
        scope = {n: s for n, s in by_name.items() if s.kind == "scalar"}
        scope.update(size_syms)
        saved = self.scopes
        self.scopes = [scope]
        self.in_accessor = True
        ok = True
        for a in args:
            t = self.expr(a)
            if t is None:
                ok = False
                continue
            if T.is_literal(t):
                self.retype(a, T.INDEX)
                t = a.ty
            if not isinstance(t, T.ScalarType) or not t.is_int:
                self.error(f"strided arguments must be integers, got '{t}'", a.loc)
                ok = False
        self.in_accessor = False
        self.scopes = saved
        if ok:
            b.accessor_args = list(args)
        return ok

    def default_value(self, e: A.Expr, b: BufferInfo):
        """The exact value of a ``default v`` literal in ``b``'s compute type (None after an error).

        Floats are rounded once from the literal's decimal text (:func:`types.exact_float`)."""
        ct = b.compute_elem
        neg = False
        lit = e
        while isinstance(lit, A.Unary) and lit.op == "-":
            neg = not neg
            lit = lit.operand
        if not isinstance(lit, (A.IntLit, A.FloatLit)):
            self.error("the default value must be a number literal", e.loc,
                       hint="e.g. `default -1` or `default 0.5`")
            return None
        if lit.suffix is not None and lit.suffix not in (ct.name, b.elem.name):
            self.error(f"the default value {lit.text} has type '{lit.suffix}', but '{b.name}' "
                       f"computes in '{ct}'", e.loc, hint="drop the suffix")
            return None
        if isinstance(lit, A.FloatLit) and not ct.is_float:
            self.error(f"a float literal cannot be the default of a '{ct}' buffer", e.loc)
            return None
        fr = literal_fraction(lit)
        if neg:
            fr = -fr
        e.ty = ct
        if ct.is_int:
            lo, hi = T.int_range(ct)
            if not lo <= fr <= hi:
                self.error(f"default value {fr} is out of range for '{ct}' ({lo}..{hi})", e.loc)
                return None
            return int(fr)
        value = T.exact_float(fr, ct)
        if value is None:
            self.error(f"default value {lit.text} is out of range for '{ct}'", e.loc)
            return None
        if value == 0 and (lit.text.startswith("-") != neg):
            value = -0.0
        return value

    def index_param(self, sym: Symbol, pat: A.Pattern, by_name: dict, problem: Optional[str]) -> bool:
        """Check the index buffer ``I`` of ``indexed/shared/shared_sum/atomic(I)``; set
        ``index_param``. ``I`` must be a sequential 1-D u32/i32 ``read`` buffer with one entry per
        item (its dim is the problem size symbol)."""
        p: A.BufferParam = sym.node
        a = (pat.args or [None])[0]
        what = f"{pat.name}(I)"
        if not isinstance(a, A.Name):
            self.error(f"{what} takes the name of an index buffer parameter", a.loc if a else pat.loc)
            return False
        target = by_name.get(a.id)
        if target is None:
            self.error(f"unknown index buffer '{a.id}'" + _did_you_mean(a.id, by_name), a.loc)
            return False
        if target.kind != "buffer":
            self.error(f"the index of {pat.name}({a.id}) must be a buffer parameter, "
                       f"'{a.id}' is a scalar", a.loc,
                       hint=f"declare it `{a.id}: u32[n] read`")
            return False
        tb = target.buffer
        if tb is None:
            return False
        if target is sym:
            self.error(f"buffer '{p.name}' cannot index itself", a.loc)
            return False
        problems = []
        if tb.access != "read":
            problems.append("read")
        if tb.components != 1:
            problems.append("1-D")
        if tb.elem.name not in ("u32", "i32"):
            problems.append("u32 or i32")
        pats = target.node.patterns
        if (pats and pats[0].name != "sequential") or target.node.default is not None \
                or str(tb.layout) != f"({tb.dims[0]}):(1)":
            problems.append("sequential")
        if problems:
            self.error(f"the index buffer '{a.id}' of {pat.name}({a.id}) must be a 1-D u32 or i32 "
                       f"buffer read sequentially", a.loc,
                       note=(f"'{a.id}' is declared here", target.loc),
                       hint=f"declare it as `{a.id}: u32[{problem or 'n'}] read`")
            return False
        info = self.info
        if problem is not None and info is not None and problem in info.size_symbols \
                and tb.dims[0] != Poly.sym(problem):
            self.error(f"the index buffer '{a.id}' of {pat.name}({a.id}) must have one entry per "
                       f"item: its dim must be the problem size '{problem}', not '{tb.dims[0]}'",
                       a.loc, note=(f"'{a.id}' is declared here", target.loc),
                       hint=f"declare it as `{a.id}: u32[{problem}] read`")
            return False
        sym.buffer.index_param = a.id
        return True

    # ---- scopes -----------------------------------------------------------------------------

    def name_free(self, name: str, loc: SourceLocation, what: str) -> bool:
        """Report (and return False) if ``name`` is reserved or already visible."""
        if name in KEYWORDS:
            self.error(f"'{name}' is a keyword and cannot be used as {what}", loc)
            return False
        if name in T.SCALARS:
            self.error(f"'{name}' is a type name and cannot be used as {what}", loc)
            return False
        if name in BUILTIN_FUNCS:
            self.error(f"'{name}' is a builtin function and cannot be used as {what}", loc)
            return False
        if name in BUILTIN_VALUES:
            self.error(f"'{name}' is a builtin value and cannot be used as {what}", loc)
            return False
        for scope in reversed(self.scopes):
            if name in scope:
                prev = scope[name]
                self.error(f"redeclaration of '{name}'", loc,
                           note=("previously declared here", prev.loc) if prev.loc else None)
                return False
        return True

    def lookup(self, name: str) -> Optional[Symbol]:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def visible_names(self) -> list:
        names = set()
        for scope in self.scopes:
            names |= set(scope)
        return sorted(names)

    def type_named(self, name: str, loc: SourceLocation) -> Optional[T.ScalarType]:
        t = T.SCALARS.get(name)
        if t is None:
            self.error(f"unknown type '{name}'" + _did_you_mean(name, T.SCALARS), loc,
                       hint="types: bool, i8..i64, u8..u64, f16, bf16, f32, f64, index")
        return t

    # ---- statements -------------------------------------------------------------------------

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
            pass
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
        declared = None
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
                self.default(s.value)
                t = s.value.ty
        if not self.name_free(s.name, s.loc, "a variable"):
            return
        sym = Symbol(s.name, "local", t, s.loc)
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
                    self.retype(s.start, T.I32)
                    self.retype(s.stop, T.I32)
                    ty = T.I32
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
            self.error(f"unknown name '{base.id}'" + _did_you_mean(base.id, self.visible_names()),
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
                           hint=f"write its elements, e.g. {sym.name}[{', '.join('ijklmn'[:max(1, len(b.dims))])}] = ...",
                           note=(f"'{sym.name}' is declared here", sym.loc))
                return
            if not b.is_output:
                self.error(f"cannot assign to '{sym.name}': it is a read buffer", base.loc,
                           hint=f"declare it `write` or `add` to produce output",
                           note=(f"'{sym.name}' is declared here", sym.loc))
                return
            if op not in ("=", "+=", "-="):
                self.error(f"operator '{op}' cannot update output '{sym.name}'; use '=', '+=' or '-='",
                           s.loc, hint="compute the value in a `let` variable first")
                return
        elif sym.kind == "scalar":
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
            if member.name not in ("first", "second"):
                self.error(f"pair output '{sym.name}' has no member '.{member.name}'"
                           + _did_you_mean(member.name, ("first", "second")), member.loc)
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
                self.error(f"cannot index '{sym.name}' of scalar type '{ttype}'", target.loc)
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
                self.coerce_assigned(v, ttype, f"assignment to '{sym.name}'", b)

    def coerce_assigned(self, e: A.Expr, target: T.Type, what: str, b: Optional[BufferInfo]) -> bool:
        """:meth:`coerce` for a value assigned to ``target``; an output also accepts values of its
        storage type (widened exactly to its compute type: ``e.out_convert = (storage, compute)``)."""
        if b is not None and e.ty is not None and not T.is_literal(e.ty) \
                and b.elem != b.compute_elem and T.scalar_of(e.ty) == b.elem \
                and T.with_scalar(e.ty, b.compute_elem) == target:
            e.out_convert = (b.elem, b.compute_elem)
            return True
        return self.coerce(e, target, what)

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

    # ---- types: unification and literal retyping --------------------------------------------

    def coerce(self, e: A.Expr, target: T.Type, what: str) -> bool:
        """Make ``e`` (already checked) have type ``target``, retyping literals; report mismatches."""
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
                hint = f"convert explicitly: {ts}(...)"
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
            if isinstance(e, A.Binary) and e.op in _SHIFT and s.is_int and not s.literal:
                ok = self.shift_amount_ok(e, s)
            for c in _children(e):
                if c.ty is not None and T.is_literal(c.ty):
                    if isinstance(e, A.Binary) and e.op in _SHIFT and c is e.right and s.is_float:
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
                           hint=f"convert explicitly, e.g. f32(x)")
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
                if e.name not in ("first", "second"):
                    self.error(f"pair read '{base.id}' has no member '.{e.name}'"
                               + _did_you_mean(e.name, ("first", "second")), e.loc,
                               hint=f"'{base.id}.first' and '{base.id}.second' are its two elements")
                    return None
                if sym not in self.used_reads:
                    self.used_reads.append(sym)
                return sym.ty
        bt = self.expr(base)
        if bt is None:
            return None
        if e.name in ("first", "second"):
            what = "a value"
            if isinstance(base, A.Name) and base.sym is not None:
                b = base.sym.buffer if base.sym.kind == "buffer" else None
                what = (f"'{base.id}' is read '{b.pattern_text}'" if b is not None
                        else f"'{base.id}' is a {base.sym.kind}")
            self.error(f"'.{e.name}' needs a buffer read with 'pair'; {what}", e.loc,
                       hint="declare it `read pair` (elements t and t+1)")
        else:
            self.error(f"unknown member '.{e.name}'" + _did_you_mean(e.name, ("first", "second")),
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
                           + _did_you_mean(e.id, self.visible_names()), e.loc,
                           hint="strided arguments may use integer scalar parameters, size symbols "
                                "and literals")
            else:
                self.error(f"unknown name '{e.id}'" + _did_you_mean(e.id, self.visible_names()), e.loc)
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
                           if b.accessor == "pair" else
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
        if op in _SHIFT:
            for side, st in ((e.left, lt), (e.right, rt)):
                if not T.scalar_of(st).is_int:
                    self.error(f"'{op}' needs integer operands, got '{st}'", side.loc)
                    return None
        t = self.unify(e.left, e.right, op, e.loc)
        if t is None:
            return None
        s = T.scalar_of(t)
        if op in _LOGIC:
            if not s.is_bool:
                self.error(f"'{op}' needs bool operands, got '{t}'", e.loc,
                           hint="use '&' / '|' for bitwise operations" if s.is_int else None)
                return None
            return t
        if op in _COMPARE:
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
        if op in _BITWISE:
            if s.is_float:
                self.error(f"'{op}' needs integer or bool operands, got '{t}'", e.loc)
                return None
            return t
        if op in _SHIFT:
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
                self.error(f"unknown function '{f}'"
                           + _did_you_mean(f, list(BUILTIN_FUNCS) + list(T.SCALARS)), e.loc)
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


# ---- helpers ----------------------------------------------------------------------------------


def literal_fraction(lit) -> "Fraction":  # noqa: F821
    """The exact value of an integer or float literal node, from its source text (no rounding)."""
    from fractions import Fraction

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


def _index_constant_max(k: A.Kernel) -> int:
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


#: Operators whose meaning on integers is not their meaning on floats (or that floats lack).
_INTEGER_ONLY = ("/", "%", "//", "%%", *_BITWISE, *_SHIFT)


def _integer_only(e: A.Expr) -> bool:
    """Whether the integer-literal subtree ``e`` uses an operation that would change meaning (or
    be invalid) if its literals became floats."""
    if isinstance(e, A.Binary) and e.op in _INTEGER_ONLY or isinstance(e, A.Unary) and e.op == "~":
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


def _subst(p: Poly, env: dict) -> Poly:
    out = Poly.const(0)
    for syms, coeff in p.terms:
        term = Poly.const(coeff)
        for s in syms:
            term = term * env[s]
        out = out + term
    return out


def storage_shape(layout: StridedLayout) -> list:
    """The shape of the array holding a buffer of ``layout``.

    If the strides are those of a row-major array of some ordering of the dims, the dims ordered by
    decreasing stride (``(n):(1)`` -> ``[n]``, aos ``(n,3):(3,1)`` -> ``[n, 3]``, soa
    ``(n,3):(1,n)`` -> ``[3, n]``); otherwise ``[cosize]`` (1-D flat storage).
    """
    shape, stride = list(layout.shape), list(layout.stride)
    order: list[int] = []
    expect = Poly.const(1)
    remaining = list(range(len(shape)))
    while remaining:
        nxt = next((i for i in remaining if stride[i] == expect), None)
        if nxt is None:
            break
        order.append(nxt)
        remaining.remove(nxt)
        expect = expect * shape[nxt]
    if not remaining:
        return [_poly_entry(shape[i]) for i in reversed(order)]
    cosize = Poly.const(1)
    for s, d in zip(shape, stride):
        cosize = cosize + (s + Poly.const(-1)) * d
    return [_poly_entry(cosize)]


def _has_nested_return(stmts: list, depth: int = 0) -> bool:
    for s in stmts:
        if isinstance(s, A.Return) and depth > 0:
            return True
        if isinstance(s, A.If):
            if _has_nested_return(s.then.stmts, depth + 1):
                return True
            if isinstance(s.orelse, A.Block) and _has_nested_return(s.orelse.stmts, depth + 1):
                return True
            if isinstance(s.orelse, A.If) and _has_nested_return([s.orelse], depth):
                return True
        if isinstance(s, A.For) and _has_nested_return(s.body.stmts, depth + 1):
            return True
    return False


def _guarded_output(b) -> bool:
    """Whether output buffer ``b``'s final op may sit behind an "assigned" flag (when the output is
    not assigned on every path): every ``write`` but the block-wide ones, and the per-thread
    ``add`` accessors. An unassigned thread then leaves the element as it was, like a store that
    never happened in C; adding its pending 0 instead turned a -0.0 element into +0.0 and cost a
    read-modify-write (or an atomic) per such thread (found by a fuzzing trial)."""
    if b.access == "write":
        return b.accessor not in BLOCK_WIDE_OUTPUTS
    return b.access == "add" and b.accessor in PER_THREAD_ADDS


def _definitely_assigns(stmts: list, out: Symbol, assigned: bool) -> tuple[bool, bool]:
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
            results = [_definitely_assigns(b, out, assigned) for b in branches]
            leaks = leaks or any(r[1] for r in results)
            assigned = all(r[0] for r in results)
        elif isinstance(s, A.For):
            _, inner_leaks = _definitely_assigns(s.body.stmts, out, assigned)
            leaks = leaks or inner_leaks
    return assigned, leaks
