"""Binding a kernel call's arguments to its signature: validation, size symbols, grid, variant.

Used by both devices (CPU interpreter and CuPy). The grid and the choice between a staged kernel and
its unstaged build are the launch policy's (:mod:`kernc.backend.launch_policy`); binding applies it
and records the build a call may run as a :class:`~kernc.backend.variant.Variant`.

Every problem is a :class:`KerncLaunchError` naming the parameter: a missing or extra argument, a
wrong dtype (no silent casts: outputs are updated in place, a cast copy would silently drop them), a
shape that does not match the declared storage shape, a size symbol bound to two different values
(``n`` = 1000 from ``x`` but 999 from ``y``), a non-contiguous array, a scalar out of range of its
type, memory shared by a written buffer and another accessed one (:func:`check_aliasing`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from kernc.dialect import accessors, index_bound
from kernc.dialect.accessors import ElementCount
from kernc.dialect.signature import KernelSignature, Param
from kernc.dialect.strided import PIECES, Poly, StridedLayout, parse_pieces
from kernc.support.errors import KerncLaunchError
from kernc.support.exact_numbers import round_to_float

from . import exact_fma, launch_policy
from .dtypes import numpy_dtype
from .launch_policy import MAX_GRID_X
from .shared_indices import SharedIndices, shared_indices
from .variant import Variant


@dataclass
class BoundLaunch:
    """A validated launch: ``args`` in kernel ABI order (flat 1-D buffer views, exact-typed scalars,
    then one int per size symbol), the bound ``sizes``, ``problem_size`` ``P``, ``grid`` blocks of
    ``block`` threads, and the ``variant`` of the program it may run."""

    signature: KernelSignature
    args: list
    sizes: dict
    problem_size: int
    grid: int
    block: int
    #: the build the call may run: ``index_bits`` 32 when every size, buffer length and index
    #: product fits in int32; ``nonneg_scalars`` when the kernel has ``index`` scalar params and
    #: every argument given for them is ``>= 0``; ``staged`` as the launch policy chooses
    #: (:func:`launch_policy.run_staged`; ``False``: the caller launches the kernel compiled without
    #: kern-coalesce-views). ``aligned`` is left ``True``: the CUDA launcher decides it from the
    #: device addresses (``cuda.launch_variant``); the CPU interpreter runs no PTX.
    variant: Variant = Variant()
    arrays: dict = field(default_factory=dict)
    zero_init: list = field(default_factory=list)
    #: every scalar that can reach index arithmetic (:func:`_index_input`) of a call that binds
    #: like this one has ``|v| <`` this bound, or the index width could change
    #: (:func:`index_products_overflow`); ``None``: no bound beyond the index type's range
    index_scalar_bound: int | None = None
    #: why this call cannot run the kernel's TMA build (a tensor map the driver would refuse: e.g. a
    #: row byte stride that is no multiple of 16), which the launcher then runs the ``tma=False``
    #: build of instead (``Compilation.untma``); ``None``: it can (or the kernel has no TMA loads)
    no_tma: str | None = None

    def fill_value(self, name: str) -> float:
        """What the launcher fills the ``zero_init`` buffer ``name`` (``write sum``, ``write pair``)
        with: the identity of a float sum, ``-0.0``, in a launch with items (a sum of only ``-0.0``
        terms is ``-0.0``, IEEE 754, as ``add`` outputs and ``write block_sum`` give it; elements
        no item adds to keep it; ``-0.0`` is 0 for an integer dtype); ``0`` in an empty launch.
        A ``write max``/``write min`` buffer gets the identity of its reduction in every launch:
        ``-inf``/``+inf`` for floats, the dtype's lowest/highest integer (an empty problem's
        extremum)."""
        p = self.signature.param(name)
        reduce = p.accessor_kind.reduce
        if reduce != "add":
            dt = numpy_dtype(p.dtype)
            if dt.kind == "f" or p.dtype in ("f16", "bf16"):
                return float("-inf") if reduce == "max" else float("inf")
            info = np.iinfo(dt)
            return int(info.min) if reduce == "max" else int(info.max)
        return -0.0 if self.grid else 0

    @property
    def index_bits(self) -> int:
        """The width of ``index`` arithmetic of the launch (``variant.index_bits``)."""
        return self.variant.index_bits

    @property
    def nonneg_scalars(self) -> bool:
        """Whether the launch may run the PTX for ``index`` scalars ``>= 0`` (``variant.nonneg_scalars``)."""
        return self.variant.nonneg_scalars

    @property
    def staging_pays(self) -> bool:
        """Whether to run the staged kernel this launch was bound for (``variant.staged``)."""
        return self.variant.staged


def _shared_pays(sig: KernelSignature, tables: dict, env: dict) -> bool:
    """:func:`launch_policy.shared_pays` for these tables, computed once per table object and
    sizes (a prebuilt ``shared_indices`` table passed to repeated launches is measured once)."""
    key = (tuple((p.name, p.accessor, p.index_param, p.dtype, p.layout, p.components)
                 for p in sig.shared_accesses), "deterministic" in sig.attributes, tuple(sorted(env.items())))
    held = [t for t in tables.values() if isinstance(t, SharedIndices)]
    memo = getattr(held[0], "_shared_pays", None) if len(held) == 1 else None
    if memo is not None and key in memo:
        return memo[key]
    pays = launch_policy.shared_pays(sig, tables, env)
    if len(held) == 1:
        if memo is None:
            memo = held[0]._shared_pays = {}
        memo[key] = pays
    return pays


def _show_exact(value) -> str:
    """An int or :class:`~fractions.Fraction` argument for a message: an int in full unless huge, a
    fraction as a 17-digit decimal (``1e+39``, ``0.1``)."""
    if isinstance(value, int):
        return str(value) if abs(value) < 10**40 else f"an integer of {len(str(abs(value)))} digits"
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 17
        return format((Decimal(value.numerator) / Decimal(value.denominator)).normalize(), "g")


def index_products_overflow(values, largest: int, block: int) -> bool:
    """Whether 32-bit ``index`` arithmetic could wrap where the CPU interpreter's 64-bit does not:
    ``values`` are the kernel's scalar arguments that can reach index arithmetic (``index`` ones and
    ``KernelSignature.index_inputs``) and the bound of its constants there
    (``KernelSignature.index_literal_max``); with ``m`` the largest
    magnitude among them, a value times a coordinate plus another (``off + t*s`` of ``strided(off,
    s)``, ``oh*sh + r*dh - ph`` of im2col) or two of them multiplied (``a * b``) can exceed int32
    once ``m * max(m, largest + block)`` does (``largest``: the biggest size, buffer length or
    problem size; a coordinate is below it plus a block). Each value fitting int32 alone is not
    enough: ``5 + 2*(2**31 - 1)`` wraps to 3. A conservative bound: kernels whose integer scalars
    and literals are small (strides, paddings) stay 32-bit. Deeper products (``t * t``,
    ``a * b * c``, ``strided(a * b, s)``) are not bounded by it: ``KernelSignature.index_bound``
    (:func:`index_values_bound`) bounds those, the accessors' ``off + t*s`` included."""
    m = max((_magnitude(v) for v in values), default=0)
    return m * max(m, largest + block) >= 2**31


def _magnitude(v) -> float:
    """``|v|`` of an integer or float scalar; infinite for a float that is not finite."""
    v = abs(v.item() if isinstance(v, np.generic) else v)
    return v if v == v else math.inf


def index_products_bound(largest: int, block: int) -> int:
    """The smallest magnitude ``b`` for which :func:`index_products_overflow` holds with these
    sizes: ``b * max(b, largest + block) >= 2**31``."""
    span = largest + block
    return -(-(2**31) // span) if span * span >= 2**31 else math.isqrt(2**31 - 1) + 1


def _index_input(sig: KernelSignature, p: Param) -> bool:
    """A scalar param whose value can reach ``index`` arithmetic: an ``index`` one, or one the
    kernel's index arithmetic reads by any route (``KernelSignature.index_inputs``, and the
    scalars of ``KernelSignature.index_bound``)."""
    return p.kind == "scalar" and (p.dtype == "index" or p.name in sig.index_inputs
                                   or p.name in _bound_params(sig))


def _products_input(sig: KernelSignature, p: Param) -> bool:
    """A scalar param :func:`index_products_overflow` counts: an ``index`` one or one of
    ``KernelSignature.index_inputs`` (the lowering's own arithmetic, ``off + t*s``, reads them)."""
    return p.kind == "scalar" and (p.dtype == "index" or p.name in sig.index_inputs)


def _bound_params(sig: KernelSignature) -> frozenset:
    cached = getattr(sig, "_index_bound_params", None)
    if cached is None:
        cached = frozenset(index_bound.param_names(sig.index_bound))
        object.__setattr__(sig, "_index_bound_params", cached)
    return cached


def index_values_bound(sig: KernelSignature, scalars: dict, sizes: dict, coordinates: int) -> int:
    """A bound on ``|v|`` of every ``index`` value of the kernel's kern IR in a launch with these
    ``scalars`` (name -> value) and ``sizes``, thread coordinates below ``coordinates`` (the largest
    size plus a block): ``KernelSignature.index_bound`` evaluated (:mod:`kernc.dialect.index_bound`:
    sums, products of any depth, ``select``, shifts, loop-carried sums...). One pass over its nodes."""
    if not sig.index_bound:
        return 0

    def leaves(node):
        if node[0] == "p":
            return index_bound.leaf(node[3], node[1], scalars[node[2]])
        v = coordinates if node[0] == "L" else sizes.get(node[2])
        return (int(v), int(v)) if v is not None else (index_bound.TOP, index_bound.TOP)

    return index_bound.evaluate(sig.index_bound, leaves)


def index_values_limit(sig: KernelSignature, scalars: dict, sizes: dict, coordinates: int) -> int | None:
    """The smallest magnitude ``b`` such that, with every scalar of ``KernelSignature.index_bound``
    of magnitude ``b`` (the worst case of ``|v| <= b``), :func:`index_values_bound` reaches 2^31;
    ``None`` when no scalar takes part. The bound is monotone in each ``|v|``; ``scalars`` (a launch
    that stays 32-bit) is the starting point of the search."""
    names = _bound_params(sig)
    if not names:
        return None

    def fits(m: int) -> bool:
        return index_values_bound(sig, {n: m for n in names}, sizes, coordinates) < 2**31

    start = max((_magnitude(scalars[n]) for n in names), default=0)
    start = min(math.ceil(start), 2**63) if start == start and start != math.inf else 2**63
    if fits(start):  # low fits, high does not (or is 2^63)
        low, high = start, max(start, 1)
        while high < 2**63 and fits(high):
            low, high = high, min(high * 2, 2**63)
        if fits(high):
            return 2**63 + 1
    else:
        if not fits(0):
            return 0
        low, high = 0, start
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid) else (low, mid)
    return low + 1


def _scalar(p: Param, value, index_bits: int = 64):
    dtype = numpy_dtype(p.dtype)
    if type(value) is dtype.type:  # already exactly the parameter's type (np.float32(2) for f32)
        return value
    if hasattr(value, "shape") and getattr(value, "shape", ()) != ():
        raise KerncLaunchError(f"argument '{p.name}': expected a scalar {p.dtype}, got an array")
    if isinstance(value, (np.datetime64, np.timedelta64)):
        raise KerncLaunchError(f"argument '{p.name}': expected a number ({p.dtype}), got {type(value).__name__}")
    if isinstance(value, np.generic) or (hasattr(value, "item") and not isinstance(value, (int, float, bool))):
        value = value.item()  # numpy scalars (np.float64 too, a float subclass) as Python numbers
    if p.dtype == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise KerncLaunchError(f"argument '{p.name}': expected bool, got {type(value).__name__}")
        return np.bool_(value)
    if dtype.kind in "iu":
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            got = (f"the decimal {_show_exact(value)}" if isinstance(value, Fraction)
                   else f"{type(value).__name__} {value!r}")
            raise KerncLaunchError(f"argument '{p.name}': expected an integer ({p.dtype}), got {got}")
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise KerncLaunchError(
                f"argument '{p.name}': {value} is out of range for {p.dtype} [{info.min}, {info.max}]"
            )
        return dtype.type(int(value))
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise KerncLaunchError(f"argument '{p.name}': expected a number ({p.dtype}), got {type(value).__name__}")
    if isinstance(value, (int, Fraction)):
        # an exact value (an int, or the Fraction of a decimal such as `kernc run --input a=0.1`)
        # is rounded once to the type (numpy would go through a double: twice); a rounding that
        # overflows is an error, as for a finite float below (kernc.support.exact_numbers: one rule)
        exact = round_to_float(value, p.dtype)
        if exact is None:
            raise KerncLaunchError(f"argument '{p.name}': {_show_exact(value)} is out of range for {p.dtype}")
        return dtype.type(exact)  # exactly representable: no further rounding
    with np.errstate(over="ignore"):
        if p.dtype == "bf16" and not isinstance(value, (np.float32, np.float16)):
            # ml_dtypes converts a double to bfloat16 through float32: two roundings
            out = dtype.type(exact_fma.round_f64_to(np.float64(value), dtype)[()])
        else:
            out = dtype.type(value)
    # a finite value that overflows the type is an error; inf and nan given as such are values
    if bool(np.isinf(out)) and math.isfinite(float(value)):
        raise KerncLaunchError(f"argument '{p.name}': {value} is out of range for {p.dtype}")
    return out


def _bind_dim(p: Param, axis: int, expected, actual: int, sizes: dict, origin: dict) -> None:
    if isinstance(expected, int) or (isinstance(expected, str) and expected.isascii() and expected.isdigit()):
        if int(expected) != actual:
            raise KerncLaunchError(
                f"argument '{p.name}': dimension {axis} must be {int(expected)}, got {actual}"
            )
        return
    if isinstance(expected, str) and expected.isidentifier():
        sym = expected  # the common case: a dimension that is one size symbol
    else:
        poly = Poly.parse(str(expected))
        if not (len(poly.terms) == 1 and poly.terms[0][1] == 1 and len(poly.terms[0][0]) == 1):
            return
        sym = poly.terms[0][0][0]
    if sym in sizes and sizes[sym] != actual:
        raise KerncLaunchError(
            f"argument '{p.name}': size '{sym}' is {actual} here but {sizes[sym]} from {origin[sym]}"
        )
    sizes.setdefault(sym, actual)
    origin.setdefault(sym, f"'{p.name}'")


def _check_index_values(sig, params, flat, env, problem) -> None:
    """Every ``I[t]`` (``t < P``) of an index param must address an element of its target buffer
    (the kinds whose record requires :attr:`ElementCount.INDEX_VALUES`).

    Always on the CPU, and on the GPU for ``@checked`` kernels (it costs a device reduction).
    Raises :class:`KerncLaunchError` naming the index param, the position and the value.
    """
    for p in params:
        if p.kind != "buffer" or p.accessor_kind.elements is not ElementCount.INDEX_VALUES or not problem:
            continue
        index = flat[p.index_param][:problem]
        count = int(Poly.parse(str(p.dims[0])).evaluate(env)) if p.dims else 0
        values = index.view(index.dtype.newbyteorder("=")) if not index.dtype.isnative else index
        top = int(values.astype("int64").max()) if index.dtype.kind == "u" else int(values.max())
        low = 0 if index.dtype.kind == "u" else int(values.min())
        if top >= count or low < 0:
            bad = (values.astype("int64") >= count) | (values.astype("int64") < 0)
            pos = int(bad.argmax())
            raise KerncLaunchError(
                f"argument '{p.index_param}': entry {pos} is {int(values[pos])}, but '{p.name}' "
                f"({p.accessor}({p.index_param})) has {count} elements"
            )


def _simple_dim(entry) -> bool:
    """A storage dim that :func:`_bind_dim` checks or binds by itself: an integer or a size symbol."""
    return (isinstance(entry, int) or (str(entry).isascii() and str(entry).isdigit())
            or str(entry).isidentifier())


def _compact_storage(storage_shape: list, layout: StridedLayout) -> bool:
    """Whether the storage dims list the layout's extents in decreasing-stride order with row-major
    strides: a permutation of a compact layout, whose array holds exactly ``cosize`` elements (the
    product of the extents, 0 if one is 0) once every dim is checked. Otherwise the storage is the
    layout's 1-D cosize, which an array must cover."""
    if len(storage_shape) != layout.rank:
        return False
    remaining = list(range(layout.rank))
    expect = Poly.const(1)
    for entry in reversed(storage_shape):  # the innermost storage dim has stride 1
        extent = Poly.parse(str(entry))
        k = next((i for i in remaining if layout.shape[i] == extent and layout.stride[i] == expect), None)
        if k is None:
            return False
        remaining.remove(k)
        expect = expect * extent
    return True


class BindPlan:
    """What :func:`bind` needs of a signature, worked out once (a :class:`kernc.api.Kernel` keeps
    its own, so that repeated launches skip this): the user params, the buffers with their numpy
    dtypes, the size checks that apply (exact dims given as expressions, cosize coverage, element
    counts). Build it with ``BindPlan(signature)``."""

    __slots__ = ("user", "buffers", "layouts", "exact_dims", "checked_buffers", "per_item", "index_scalars",
                 "aliasing", "in_place")

    def __init__(self, sig: KernelSignature):
        self.user = [p for p in sig.params if p.kind != "table"]
        #: (param, numpy dtype) of every buffer param
        self.buffers = [(p, numpy_dtype(p.dtype)) for p in sig.params if p.kind == "buffer"]
        #: (param, layout) of the buffers stored as their layout's cosize: the array must cover it
        self.layouts = []
        #: (param, axis, Poly) of the dims of compact storage given as expressions (``f32[2*n]``):
        #: checked exactly once the sizes are bound (integers and size symbols are checked earlier)
        self.exact_dims = []
        for p, _ in self.buffers:
            if not p.layout:
                continue
            if PIECES.strip() in p.layout:  # `as caspar` planes: every piece must fit the array
                self.layouts += [(p, piece) for piece in parse_pieces(p.layout)]
                continue
            layout = StridedLayout.parse(p.layout)
            if not _compact_storage(p.storage_shape, layout):
                self.layouts.append((p, layout))
                continue
            self.exact_dims += [(p, axis, Poly.parse(str(e))) for axis, e in enumerate(p.storage_shape)
                                if not _simple_dim(e)]
        #: (param, element count) of the buffers whose accessor gives thread ``t`` element ``t``
        #: (``sequential``, :attr:`ElementCount.PROBLEM`): they need at least ``P`` elements
        self.per_item = [(p, Poly.parse(str(p.dims[0]))) for p, _ in self.buffers
                         if p.accessor_kind.elements is ElementCount.PROBLEM and p.dims]
        #: buffers with an element-count condition (``min_elements``, or one element per block:
        #: ``block_sum``, :attr:`ElementCount.BLOCKS`)
        self.checked_buffers = [p for p, _ in self.buffers
                                if p.min_elements or p.accessor_kind.elements is ElementCount.BLOCKS]
        #: names of the ``index`` scalar params (``BoundLaunch.nonneg_scalars`` looks at their values)
        self.index_scalars = [p.name for p in sig.params if p.kind == "scalar" and p.dtype == "index"]
        #: (name, written) of the buffers the kernel reads or writes, in param order, when one of
        #: them is written and another accessed (else empty: nothing to check), and the pairs that
        #: may be one array (:func:`check_aliasing`)
        self.aliasing, self.in_place = alias_plan(sig)


def alias_plan(sig: KernelSignature) -> tuple[list, frozenset]:
    """``(buffers, in_place)`` for :func:`check_aliasing`: ``(name, written)`` of every buffer
    param ``sig`` reads or writes (``KernelSignature.reads``/``writes``; without them every
    ``read``/``view`` param is read and every ``write``/``add``/``view`` one written), or ``[]``
    when no two of them could conflict; ``in_place``: the pairs (frozensets of two names) that may
    be passed one array."""
    buffers = [p for p in sig.params if p.kind == "buffer"]
    reads = (sig.reads if sig.reads is not None
             else [p.name for p in buffers if p.access in (accessors.READ, accessors.VIEW_MODE)])
    writes = sig.written()
    accessed = [(p.name, p.name in writes) for p in buffers if p.name in reads or p.name in writes]
    if len(accessed) < 2 or not writes:
        accessed = []
    return accessed, frozenset(frozenset(pair) for pair in sig.in_place)


def _extent(a) -> tuple[int, int]:
    """``(first byte, end)`` of the memory of a C-contiguous array (numpy: its
    ``__array_interface__`` data address; CuPy and the like: ``data.ptr``, the device address
    of its first element, as in ``__cuda_array_interface__``). A C-contiguous array holds every
    byte of ``[first, first + nbytes)``, so two of them share memory exactly when these ranges
    overlap (what ``np.shares_memory`` finds for them, without its search)."""
    start = a.__array_interface__["data"][0] if isinstance(a, np.ndarray) else int(a.data.ptr)
    return start, start + a.size * a.dtype.itemsize


def check_aliasing(sig: KernelSignature, plan: "BindPlan", values: dict) -> None:
    """``KerncLaunchError`` naming both parameters when the arrays in ``values`` (param name ->
    C-contiguous array) for two buffers share memory and the kernel writes one of them: a GPU runs
    its threads in no fixed order, so a thread could read (or write) an element another thread has
    already written, while the CPU interpreter does every read of a step before its writes. Allowed:
    buffers the kernel only reads, and the ``KernelSignature.in_place`` pairs given one array (the
    same address and extent: every item reads and writes the same element of both, as numpy's
    ``out=`` allows for an elementwise operation). Two written buffers may never share memory.
    Empty arrays share nothing."""
    ranges = []
    for name, written in plan.aliasing:
        a = values[name]
        if a.size:
            ranges.append((*_extent(a), name, written))
    for i, (lo1, hi1, n1, w1) in enumerate(ranges):
        for lo2, hi2, n2, w2 in ranges[i + 1:]:
            if not (w1 or w2) or lo1 >= hi2 or lo2 >= hi1:
                continue
            if (lo1, hi1) == (lo2, hi2) and frozenset((n1, n2)) in plan.in_place:
                continue
            how = "are the same array" if (lo1, hi1) == (lo2, hi2) else "share memory"
            if w1 and w2:
                raise KerncLaunchError(
                    f"arguments '{n1}' and '{n2}' {how}, but kernel '{sig.name}' writes both: which "
                    f"write lands last would differ between devices; pass separate arrays")
            r, w = (n2, n1) if w1 else (n1, n2)
            if frozenset((n1, n2)) in plan.in_place:
                raise KerncLaunchError(
                    f"arguments '{r}' and '{w}' overlap without being the same array, but kernel "
                    f"'{sig.name}' reads '{r}' and writes '{w}': an item would read an element that "
                    f"another item writes, and a GPU runs its threads in no fixed order (the CPU "
                    f"interpreter does every read first: the two would disagree); pass one array "
                    f"for both (every item reads and writes the same element of both) or a copy of '{r}'")
            raise KerncLaunchError(
                f"arguments '{r}' and '{w}' {how}, but kernel '{sig.name}' reads '{r}' and writes "
                f"'{w}', and its items do not read and write the same element of both: a GPU runs "
                f"its threads in no fixed order, so an item could read an element another has "
                f"already written (the CPU interpreter does every read first: the two would "
                f"disagree); pass a copy of '{r}'")


def _tensor_map(sig: KernelSignature, p: Param, array, env: dict, device: str, zeros):
    """The argument of the hidden tensor-map parameter ``p`` (``kern-wgmma-contractions``' TMA loads,
    :attr:`Param.tensor_map`) over the view's flat ``array``: on the CPU the
    :class:`~kernc.backend.tensor_map.TensorMap` itself (the interpreter reads through it); on a GPU
    the 128-byte ``CUtensorMap`` from ``cuTensorMapEncodeTiled`` in device memory (``zeros``: a
    CuPy allocation, 256-byte aligned where the driver needs 64; passed as a ``.u64`` pointer
    parameter, ``docs/gpu-ir.md``). ``KerncLaunchError`` naming the parameter when the launch's
    strides or address break the driver's documented limits (``tensor_map.check``: e.g. a row of an
    odd number of f16 elements, whose byte stride is no multiple of 16; marked ``tma_limit``: bind
    then records it as ``BoundLaunch.no_tma`` and the launcher runs the build without TMA), or when
    the driver refuses the map (its reason, ``cuGetErrorString``)."""
    from .tensor_map import ELEM_BYTES, TensorMap, check, encode

    m = p.tensor_map
    if m.get("mode") == "im2col":
        return _im2col_map(sig, p, array, env, device, zeros)
    es = ELEM_BYTES[p.dtype]
    tm = TensorMap(p.dtype, dims=tuple(Poly.parse(d).evaluate(env) for d in m["dims"]),
                   strides=tuple(es * Poly.parse(d).evaluate(env) for d in m["strides"]),
                   box=tuple(m["box"]), swizzle=int(m["swizzle"]), array=array if device == "cpu" else None)
    try:
        check(tm, array.ctypes.data if device == "cpu" else int(array.data.ptr), p.name, sig.name)
    except KerncLaunchError as err:
        err.tma_limit = True  # a documented limit: the launch runs the build without TMA
        raise
    return tm if device == "cpu" else _device_map(encode(tm, int(array.data.ptr), p.name, sig.name), zeros)


def _device_map(raw: bytes, zeros):
    """The 128-byte ``CUtensorMap`` ``raw`` copied to device memory (``zeros``: a CuPy allocation)."""
    from .tensor_map import MAP_BYTES

    out = zeros(MAP_BYTES, np.uint8)
    out.set(np.frombuffer(raw, np.uint8))
    return out


def _im2col_map(sig: KernelSignature, p: Param, array, env: dict, device: str, zeros):
    """:func:`_tensor_map` of an im2col-mode map (``"mode": "im2col"``: a 2-d convolution's NHWC
    input, ``kern-wgmma-contractions`` via :func:`kernc.passes.wgmma_contractions_im2col.im2col_read`): the
    geometry evaluated in ``env`` (sizes and scalar arguments), the map
    :func:`~kernc.backend.tensor_map.conv2d_im2col_map` (an
    :class:`~kernc.backend.tensor_map.Im2colTensorMap` on the CPU, ``cuTensorMapEncodeIm2col``'s
    128 bytes on a GPU). Where the launch's geometry is one the map cannot take
    (:func:`~kernc.backend.tensor_map.conv2d_im2col_reason`: ``C`` not a multiple of the 64-channel
    chunk, an output not the convolution's, a stride, padding or dilation outside the im2col ranges,
    a misaligned address) ``KerncLaunchError`` marked ``tma_limit`` (the build without TMA runs)."""
    from .tensor_map import Conv2dGeometry, conv2d_im2col_map, conv2d_im2col_reason, encode_im2col

    m = p.tensor_map

    def ev(text):
        return int(Poly.parse(text).evaluate(env))
    C, W, H, N = (ev(d) for d in m["dims"])
    (OW, OH), (S, R) = (ev(t) for t in m["out"]), (ev(t) for t in m["filter"])
    (sw, sh), (dw, dh), (pw, ph) = ((ev(t) for t in m[k]) for k in ("stride", "dilation", "pad"))
    g = Conv2dGeometry(N, H, W, C, R, S, OH, OW, sh, sw, ph, pw, dh, dw, p.dtype)
    channels, pixels = (int(x) for x in m["box"])
    address = array.ctypes.data if device == "cpu" else int(array.data.ptr)
    why = conv2d_im2col_reason(g, channels, pixels, int(m["swizzle"]), address)
    if why is None and m.get("unchecked") and (ph or pw):
        why = (f"its read of '{m['view']}' is not checked and the padding (ph, pw) = ({ph}, {pw}) reads outside the "
               f"image (an error the zero fill of TMA would hide; {m['view']}.checked(...) reads 0 there)")
    if why is None and "loop" in m and ev(m["loop"]) != N * OH * OW:  # (a weight gradient's one loop m)
        why = (f"its loop over m ends at {m['loop']} = {ev(m['loop'])}, not N*OH*OW = {N * OH * OW}: the pixel walk "
               "would not stop where the loop does")
    if why is not None:
        err = KerncLaunchError(f"kernel '{sig.name}', im2col tensor map parameter '{p.name}': {why}")
        err.tma_limit = True
        raise err
    tm = conv2d_im2col_map(g, channels, pixels, int(m["swizzle"]), array if device == "cpu" else None)
    return tm if device == "cpu" else _device_map(encode_im2col(tm, address, p.name, sig.name), zeros)


def bind(sig: KernelSignature, args: tuple, kwargs: dict, is_array, device: str, zeros=None,
         plan: BindPlan | None = None, choose_shared: bool = True, choose_tile: bool = True) -> BoundLaunch:
    """Validate a call ``kernel(*args, **kwargs)`` against ``sig``.

    ``is_array(x)`` says whether ``x`` is an array of the target device (numpy for ``"cpu"``, CuPy for
    ``"cuda"``); ``zeros(n, dtype)`` allocates zero-filled scratch memory there (default numpy). Size symbols that no array shape binds are taken from ``kwargs`` (``n=1000``).
    ``plan``: ``BindPlan(sig)``, built here when not given. ``choose_shared``: let the launch
    policy run a kernel's ``shared(I)``/``shared_sum(I)`` accesses as ``indexed(I)``/``atomic(I)``
    where staging cannot pay (:func:`launch_policy.shared_pays`, ``variant.shared``); ``False``:
    always staged. ``choose_tile``: let the launch policy run a kernel kern-tile-contractions tiled
    as its untiled build for a small problem (:func:`launch_policy.run_tiled`, ``variant.tiled``);
    ``False``: always tiled. Raises :class:`KerncLaunchError`.
    """
    params = sig.params
    plan = plan or BindPlan(sig)
    user = plan.user
    if len(args) > len(user):
        n = len(user)
        hint = (f"; size symbols are passed by keyword ({', '.join(f'{s}=...' for s in sig.sizes)})"
                if sig.sizes else "")
        raise KerncLaunchError(
            f"kernel '{sig.name}' takes {n} positional argument{'s' if n != 1 else ''} "
            f"({', '.join(p.name for p in user)}), got {len(args)}{hint}"
        )
    values = {p.name: v for p, v in zip(user, args)}
    kw = dict(kwargs)
    explicit_sizes: dict = {}
    if kw:  # (most launches pass every argument positionally)
        for p in user[: len(args)]:
            if p.name in kw:
                raise KerncLaunchError(f"kernel '{sig.name}': got multiple values for argument '{p.name}'")
        for p in params[len(args):]:
            if p.name in kw and p.kind != "table":
                values[p.name] = kw.pop(p.name)
        explicit_sizes = {k: kw.pop(k) for k in list(kw) if k in sig.sizes}
        if kw:
            raise KerncLaunchError(f"kernel '{sig.name}' has no parameter '{sorted(kw)[0]}'")
    if len(values) < len(user):
        missing = [p.name for p in params if p.name not in values and p.kind != "table"]
        raise KerncLaunchError(f"kernel '{sig.name}': missing argument '{missing[0]}'")

    tables: dict = {}
    for p in params:
        v = values.get(p.name)
        if isinstance(v, SharedIndices):
            if v.block_size != sig.block:
                raise KerncLaunchError(
                    f"argument '{p.name}': shared_indices table built for block size {v.block_size}, "
                    f"kernel '{sig.name}' uses @block({sig.block})"
                )
            tables[p.name] = v
            values[p.name] = v.indices

    sizes: dict = {}
    origin: dict = {}
    flat: dict = {}
    for p, dtype in plan.buffers:
        a = values[p.name]
        if not is_array(a):
            want = "a numpy array" if device == "cpu" else "a CUDA array (CuPy, __cuda_array_interface__ or DLPack)"
            raise KerncLaunchError(f"argument '{p.name}': expected {want}, got {type(a).__name__}")
        if a.dtype != dtype:
            got = a.dtype.name if a.dtype.isnative else f"{a.dtype.name} in non-native byte order ({a.dtype.str})"
            if p.dtype == "bf16":  # numpy has no bfloat16 (and .npy files store it as raw 2-byte void)
                fix = ("convert it with .astype(ml_dtypes.bfloat16), or view raw 2-byte data "
                       "(e.g. loaded from .npy) with .view(ml_dtypes.bfloat16)")
            else:
                fix = f"convert it with .astype(np.{dtype.name}) first"
            raise KerncLaunchError(f"argument '{p.name}': expected dtype {dtype.name} ({p.dtype}), got {got}; {fix}")
        if a.ndim != len(p.storage_shape):
            raise KerncLaunchError(
                f"argument '{p.name}': expected a {len(p.storage_shape)}-D array of shape "
                f"({', '.join(map(str, p.storage_shape))}), got shape {tuple(a.shape)}"
            )
        if not a.flags.c_contiguous:
            why = " so that results are written where you can see them" if p.name in sig.written() else ""
            raise KerncLaunchError(
                f"argument '{p.name}': the array is not C-contiguous; pass a contiguous copy "
                f"(np.ascontiguousarray){why}"
            )
        for axis, (expected, actual) in enumerate(zip(p.storage_shape, a.shape)):
            _bind_dim(p, axis, expected, int(actual), sizes, origin)
        flat[p.name] = a if a.ndim == 1 else a.reshape(-1)  # (a CuPy reshape costs microseconds)

    if plan.aliasing:
        check_aliasing(sig, plan, values)

    for sym, v in explicit_sizes.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or int(v) < 0:
            raise KerncLaunchError(f"size '{sym}' must be a non-negative integer, got {v!r}")
        if sym in sizes and sizes[sym] != int(v):
            raise KerncLaunchError(f"size '{sym}' given as {v} but {origin[sym]} has {sizes[sym]}")
        sizes[sym] = int(v)
    unbound = [s for s in sig.sizes if s not in sizes]
    if unbound:
        raise KerncLaunchError(
            f"kernel '{sig.name}': size '{unbound[0]}' is not bound by any array shape; pass it as {unbound[0]}=..."
        )

    for p, axis, poly in plan.exact_dims:
        want, actual = poly.evaluate(sizes), values[p.name].shape[axis]
        if actual != want:
            raise KerncLaunchError(f"argument '{p.name}': dimension {axis} must be {poly} = {want}, got {actual}")
    # Storage that is not a plain permutation (1-D cosize storage) must be large enough.
    for p, layout in plan.layouts:
        need = layout.cosize(sizes)
        if flat[p.name].size < need:
            raise KerncLaunchError(
                f"argument '{p.name}': layout {p.layout} needs {need} elements, the array has {flat[p.name].size}"
            )

    if sig.problem_size in sizes:
        problem = sizes[sig.problem_size]
    elif sig.problem_size not in values:
        # an N-D problem `over (i, j) in (M, N)`: P is the product of the extents ("M*N")
        try:
            problem = int(Poly.parse(sig.problem_size).evaluate(sizes))
        except (KeyError, ValueError) as err:
            raise KerncLaunchError(
                f"kernel '{sig.name}': cannot compute the problem size {sig.problem_size} ({err})"
            ) from None
    else:
        pv = values[sig.problem_size]
        if isinstance(pv, bool) or not isinstance(pv, numbers.Integral) or int(pv) < 0:
            raise KerncLaunchError(f"argument '{sig.problem_size}': the problem size must be a non-negative integer")
        problem = int(pv)

    env = dict(sizes)
    env.setdefault(sig.problem_size, problem)
    # a tiled kernel loops over its tiles (tile = block id, += grid): one block per tile, capped
    grid, tiles = launch_policy.launch_grid(sig, problem, env)
    if problem:
        for p, count_poly in plan.per_item:
            count = count_poly.evaluate(env)
            if count < problem:
                verb = {"read": "reads", "write": "writes"}.get(p.access, "updates")
                raise KerncLaunchError(
                    f"argument '{p.name}': thread t {verb} element t, so the buffer needs at least "
                    f"P = {problem} elements (the problem size), it has {count}"
                )
    for p in plan.checked_buffers:
        need = p.min_elements
        per_block = p.accessor_kind.elements is ElementCount.BLOCKS
        if not (need and problem) and not per_block:
            continue  # nothing to check for this buffer
        count = int(Poly.parse(str(p.dims[0])).evaluate(env)) if p.dims else 0
        if need and problem:
            want = Poly.parse(str(need)).evaluate(env)
            if count < want:
                raise KerncLaunchError(
                    f"argument '{p.name}': accessor '{p.accessor}' needs at least {want} elements "
                    f"({need}), the buffer has {count}"
                )
        if per_block and count < grid:
            raise KerncLaunchError(
                f"argument '{p.name}': {p.accessor} needs one element per block ({grid} blocks of "
                f"{sig.block}), the buffer has {count}"
            )

    if device == "cpu" or "checked" in sig.attributes:
        _check_index_values(sig, params, flat, env, problem)

    largest = max([problem, *sizes.values(), *(f.size for f in flat.values())], default=0)
    if tiles:  # the tile loop's last step computes about tiles + grid (compared signed), and the
        # items of the last tile (kern-privatize-atomics: t up to P + its tile's items)
        # (kern-map-groups kernels count groups here and have no tiles)
        largest = max(largest, tiles + grid, problem + math.prod(t for _, t in (sig.tiles or ())))
    index_bits = 32 if largest < 2**31 - sig.block else 64

    out_args = []
    for p in params:
        if p.kind == "table":
            if p.table_of not in tables:
                tables[p.table_of] = shared_indices(flat[p.table_of][:problem], sig.block)
            elif tables[p.table_of].problem_size != problem:
                raise KerncLaunchError(
                    f"argument '{p.table_of}': its shared_indices table covers "
                    f"{tables[p.table_of].problem_size} entries, the problem size is {problem}"
                )
            out_args.append(tables[p.table_of].field(p.table_field))
        elif p.kind == "buffer":
            out_args.append(flat[p.name])
        elif p.dtype == "index":
            v = values[p.name]
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise KerncLaunchError(f"argument '{p.name}': expected an integer (index), got {type(v).__name__}")
            lim = 2 ** (index_bits - 1)
            if not -lim <= int(v) < lim:
                if index_bits == 32 and -(2**63) <= int(v) < 2**63:
                    index_bits = 64
                else:
                    raise KerncLaunchError(f"argument '{p.name}': {v} is out of range for index")
            out_args.append(int(v))
        else:
            out_args.append(_scalar(p, values[p.name]))
    scalar_args = {p.name: v for p, v in zip(params, out_args) if p.kind == "scalar"}
    if index_bits == 32 and (index_products_overflow(
            [sig.index_literal_max, *(v for p, v in zip(params, out_args) if _products_input(sig, p))],
            largest, sig.block)
            or index_values_bound(sig, scalar_args, env, largest + sig.block) >= 2**31):
        index_bits = 64
    # a 32-bit launch holds for integer scalars below this magnitude (the prepared GPU path checks)
    scalar_bound = None
    if index_bits == 32:
        scalar_bound = index_products_bound(largest, sig.block)
        limit = index_values_limit(sig, scalar_args, env, largest + sig.block)
        if limit is not None:
            scalar_bound = min(scalar_bound, limit)
    out_args.extend(sizes[s] for s in sig.sizes)
    zeros = zeros or np.zeros
    no_tma = None
    for p in sig.extra:
        if p.kind == "tensor_map":
            try:
                out_args.append(_tensor_map(sig, p, flat[p.tensor_map["view"]], {**env, **scalar_args},
                                            device, zeros))
            except KerncLaunchError as err:
                if not getattr(err, "tma_limit", False):
                    raise  # the driver refused a map that passed the documented limits
                no_tma = no_tma or str(err)  # (the first map's reason)
                out_args.append(None)
        elif p.kind == "table":
            if p.table_of not in tables:
                tables[p.table_of] = shared_indices(flat[p.table_of][:problem], sig.block)
            out_args.append(tables[p.table_of].field(p.table_field))
        else:  # scratch
            n = Poly.parse(p.scratch_size).evaluate({**env, "__grid": grid})
            out_args.append(zeros(max(int(n), 1), numpy_dtype(p.dtype)))

    if grid > MAX_GRID_X:
        raise KerncLaunchError(
            f"kernel '{sig.name}': problem size {problem} needs {grid} blocks of {sig.block}, "
            f"more than the {MAX_GRID_X} CUDA allows in grid x"
        )
    variant = Variant(index_bits,
                      nonneg_scalars=bool(plan.index_scalars) and all(int(values[n]) >= 0 for n in plan.index_scalars),
                      staged=launch_policy.run_staged(sig, problem, env),
                      shared=not (choose_shared and grid and sig.shared_accesses)
                      or _shared_pays(sig, tables, env),
                      tiled=not choose_tile or launch_policy.run_tiled(sig, problem, env))
    return BoundLaunch(sig, out_args, sizes, problem, grid, sig.block, variant,
                       {p.name: values[p.name] for p in params if p.kind == "buffer"},
                       [p.name for p in params if getattr(p, "zero_init", False)], scalar_bound, no_tma)
