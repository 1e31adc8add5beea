"""The records of a checked program, what the lowering and the launcher read: :class:`Symbol` (a
resolved name), :class:`BufferInfo` (a checked buffer parameter), :class:`TableInfo` (a hidden
``shared_indices`` table) and :class:`KernelInfo` (a checked kernel, with its
:class:`~kernc.dialect.signature.KernelSignature`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from kernc.dialect import accessors
from kernc.dialect.accessors import AccessorKind
from kernc.dialect.signature import KernelSignature, Param
from kernc.dialect.strided import Poly, StridedLayout
from kernc.support.errors import SourceLocation

from . import types as T


@dataclass(eq=False)
class BufferInfo:
    """A checked buffer parameter.

    ``elem`` is the storage dtype, ``compute`` the compute dtype of its values (``None``: ``elem``
    after ``f16``/``bf16`` -> ``f32`` promotion; see :attr:`compute_elem`), ``compute_name`` the type
    named by an explicit ``compute`` clause. ``value_type`` is what the body sees (``compute_elem``
    or a K-vector of it; a ``pair`` buffer has two such values). ``accessor`` is the kern IR accessor
    name (:attr:`kind` its record in ``dialect/accessors.py``; ``strided(off, s) default v`` is
    ``strided_default``);
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
    #: the scalar parameter whose value a ``default NAME`` read gives out of bounds (or None);
    #: ``default_value`` is then 0, the IR's placeholder the lowering selects over
    default_param: Optional[str] = None
    #: views: the static swizzle ``(B, M, S)`` over ``layout`` (or None), and the layout text the
    #: signature records for the launcher (``layout``, or a flat ``(cosize):(1)`` when a swizzle
    #: reaches past it)
    swizzle: Optional[tuple] = None
    sig_layout: Optional[str] = None
    #: ``as caspar`` (``frontend/caspar.py``), and with more than one 16-byte chunk read or updated
    #: by a plane accessor, its chunks ``[(first component, piece layout)]``: one accessor op each
    is_caspar: bool = False
    caspar_planes: Optional[list] = None

    @property
    def kind(self) -> AccessorKind:
        """The record of the buffer's accessor kind (``dialect/accessors.py``)."""
        return accessors.BY_NAME[self.accessor]

    @property
    def is_view(self) -> bool:
        return self.access == accessors.VIEW_MODE

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
        return self.access in (accessors.WRITE, accessors.ADD)

    @property
    def is_pair(self) -> bool:
        """``pair`` / ``pair strided(off, s) default v``: two elements per thread."""
        return self.kind.pair

    @property
    def flat_width(self) -> int:
        """Scalar values per thread in the IR: ``components``, twice that for pair accessors."""
        return self.components * (2 if self.is_pair else 1)

    @property
    def pattern_text(self) -> str:
        """The accessor as the program spells it (for messages)."""
        kind = self.kind
        return kind.spelling if kind.default else kind.name

    def signature_extras(self, problem: str) -> dict:
        """The ``compute``/``zero_init``/``min_elements`` fields of the buffer's signature param
        (``zero_init`` and ``min_elements`` from the accessor's record: ``zero_init``,
        ``elements``)."""
        kind = self.kind
        return {
            "compute": self.compute_name,
            "zero_init": self.access in kind.zero_init,
            "min_elements": kind.elements.min_elements(problem),
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
    #: a ``let`` whose type came from an untyped literal (``let acc = 0.0``: f32), which an error
    #: about assigning it a wider value points at
    literal_default: bool = False

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
    guarded by an "assigned" flag (:func:`guarded_output`); ``nested_return`` whether a ``return`` occurs inside an
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
    #: ``@tile(BM, BN, BK)``: the signature's ``tile_config`` (``None`` without one)
    tile_config: Optional[dict] = None
    #: ``@tensor_cores`` / ``@tf32``: the signature's ``tensor_cores`` (``None`` without either)
    tensor_cores: Optional[dict] = None
    #: reductions across items (``groups.py``): the positions of the reduced coordinates in
    #: ``coords`` (sorted), ``None`` without reductions
    group_axes: Optional[tuple] = None

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
                    dims=[poly_entry(d) for d in b.dims], components=b.components,
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
                               in_place=[list(x) for x in self.in_place], tile_config=self.tile_config,
                               tensor_cores=self.tensor_cores)


def poly_entry(p: Poly):
    """An int for a constant polynomial, else its text (a symbol name for a single symbol)."""
    return p.value if p.is_const else str(p)


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
        return [poly_entry(shape[i]) for i in reversed(order)]
    cosize = Poly.const(1)
    for s, d in zip(shape, stride):
        cosize = cosize + (s + Poly.const(-1)) * d
    return [poly_entry(cosize)]
