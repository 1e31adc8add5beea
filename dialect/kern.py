"""The ``kern`` MLIR dialect, defined in Python on IRDL (``mlir.dialects.ext``).

Ops print and parse in MLIR's generic form only (a limit of Python-defined dialects), e.g.::

    %t = "kern.thread_id"() : () -> index
    %v:3 = "kern.read"(%pos, %src, %n) {accessor = "indexed", layout = "(n,3):(1,n)", syms = ["n"],
                                        operandSegmentSizes = array<i32: 1, 1, 1>}
           : (memref<?xf32>, memref<?xi32>, index) -> (f32, f32, f32)

A kernel in the kern IR is a ``func.func`` carrying the ``kern.signature`` attribute
(``dialect/signature.py``); its body is the per-thread program of item ``t`` in ``arith``/``math``/
``scf`` plus the ops below. Buffers are ``memref<?xT>`` over their flat storage; each accessor op
names its accessor kind, the buffer's layout (CuTe notation over size symbols, ``dialect/strided.py``)
and takes the values of those symbols as its ``sizes`` operands, in ``syms`` order.

Accessor ops (the semantics are in ``shared/design/accessors.md``):

- ``kern.read``  -- ``(buffer, args..., sizes...) -> (component values...)``
- ``kern.write`` -- ``(buffer, args..., sizes..., values...)``: ``X[e] = y_t``
- ``kern.add``   -- ``(buffer, args..., sizes..., values...)``: ``X[e] += y_t``

``args`` by accessor (the full table is in ``docs/accessor-lowering.md``): ``sequential``,
``unique``, ``pair``, ``block_sum``, ``sum`` none; ``strided`` ``(off, s)`` of type ``index``
(``e = off + t*s``); ``strided_default`` and ``pair_strided_default`` ``(off, s)`` too, with the value
read out of bounds in the typed ``default`` attribute (an IRDL variadic group needs one type for all
its operands, so it cannot carry the value among the ``index`` args); ``indexed`` and ``atomic`` the index buffer ``I`` (``memref<?xi32>``, ``e = I[t]``);
``shared`` the ``unique, target, count`` tables of ``shared_indices(I)`` and ``shared_sum`` the
``unique, target, perm, count`` tables (all ``memref<?xi32>``).

One result/value per component (``pair`` and ``pair_strided_default``: ``2K`` of them, the first
element's ``K`` components, then the second's). Their type is the *compute* type, which may differ
from the buffer's *storage* (memref element) type: for a float storage type it is a float type at
least as wide (``f16``/``bf16`` storage computes in ``f32``; ``compute f64``); integer storage
computes in its own type.

``kern.layout_apply`` -- ``(coords..., sizes...) -> index``: the flat offset of a coordinate under
``layout``; produced by accessor lowering, removed by layout lowering.

Thread builtins (all ``() -> index``): ``kern.thread_id`` (``t``), ``kern.block_id``,
``kern.block_dim``, ``kern.lane_id``, ``kern.problem_size`` (``P``).
"""



from typing import Any, Sequence

from kernc.mlir import dialect, ir

from .strided import StridedLayout

ext = dialect("ext")

#: Accessor kinds each op accepts, with the number of ``args`` operands they take.
#: The attribute holding the value ``*_default`` reads give out of bounds (exact, typed).
DEFAULT_ATTR = "default"

READ_ACCESSORS = {
    "sequential": 0, "strided": 2, "strided_default": 2, "indexed": 1, "shared": 3, "unique": 0,
    "pair": 0, "pair_strided_default": 2,
}
WRITE_ACCESSORS = {
    "sequential": 0, "strided": 2, "indexed": 1, "block_sum": 0, "sum": 0, "pair": 0,
}
ADD_ACCESSORS = {
    "sequential": 0, "strided": 2, "indexed": 1, "shared_sum": 4, "atomic": 1, "block_sum": 0,
    "sum": 0, "pair": 0,
}
#: Accessors whose ops carry two elements per thread (``2K`` results/values).
PAIR_ACCESSORS = ("pair", "pair_strided_default")
#: Accessors whose ``args`` are all integer ``memref`` s (index buffers or ``shared_indices`` tables).
_MEMREF_ARG_ACCESSORS = ("indexed", "atomic", "shared", "shared_sum")
#: Accessors whose first two ``args`` are ``(off, s)`` of type ``index``.
_STRIDED_ACCESSORS = ("strided", "strided_default", "pair_strided_default")


class Kern(ext.Dialect, name="kern"):
    """The kern dialect: accessor and layout ops over flat global buffers."""


def _str(attr) -> str:
    return ir.StringAttr(attr).value


def _syms(op) -> list[str]:
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes["syms"])]


def _segments(op) -> list[int]:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def _layout_error(op, rank) -> str | None:
    text = _str(op.attributes["layout"])
    try:
        layout = StridedLayout.parse(text)
    except ValueError as err:
        return f"bad layout: {err}"
    if rank is not None and layout.rank != rank:
        return f"layout '{text}' has rank {layout.rank}, but {rank} coordinates are given"
    missing = set(layout.symbols) - set(_syms(op))
    if missing:
        return f"layout '{text}' names size symbols {sorted(missing)} that 'syms' does not list"
    return None


def _access_error(op, table: dict, with_values: bool) -> str | None:
    """Shared verifier of read/write/add: the first problem found, or ``None``."""
    accessor = _str(op.attributes["accessor"])
    if accessor not in table:
        return f"unknown accessor '{accessor}' (expected one of {', '.join(table)})"
    seg = _segments(op)
    if seg[1] != table[accessor]:
        return f"accessor '{accessor}' takes {table[accessor]} args, got {seg[1]}"
    if seg[2] != len(_syms(op)):
        return f"{seg[2]} size operands for {len(_syms(op))} syms"
    buf_t = op.operands[0].type
    if not isinstance(buf_t, ir.MemRefType) or buf_t.rank != 1:
        return "the buffer must be a 1-D memref"
    values = list(op.operands)[1 + seg[1] + seg[2]:] if with_values else list(op.results)
    if not values:
        return "an element needs at least one component"
    components = len(values)
    if accessor in PAIR_ACCESSORS:
        if len(values) % 2:
            return (f"accessor '{accessor}' takes two elements (first, then second): an even number "
                    f"of component values, got {len(values)}")
        components = len(values) // 2
    err = _compute_type_error(buf_t.element_type, values[0].type)
    if err:
        return err
    if any(v.type != values[0].type for v in values):
        return "component values must all have the same (compute) type"
    err = _layout_error(op, None)
    if err:
        return err
    rank = StridedLayout.parse(_str(op.attributes["layout"])).rank
    if components > 1 and rank != 2:
        return f"{components}-component elements need a rank-2 layout (element, component)"
    if components == 1 and rank not in (1, 2):
        return "single-component elements need a rank-1 or rank-2 layout"
    args = list(op.operands)[1:1 + seg[1]]
    if accessor in _MEMREF_ARG_ACCESSORS:
        for a in args:
            if not isinstance(a.type, ir.MemRefType) or a.type.rank != 1 \
                    or not isinstance(a.type.element_type, ir.IntegerType):
                what = "index buffer" if accessor in ("indexed", "atomic") else "shared_indices tables"
                return f"{accessor}(I) needs 1-D integer memref args (the {what})"
    if accessor in _STRIDED_ACCESSORS and any(not isinstance(v.type, ir.IndexType) for v in args[:2]):
        return "strided(off, s) takes index operands"
    if accessor in ("strided_default", "pair_strided_default"):
        if DEFAULT_ATTR not in op.attributes:
            return f"'{accessor}' needs a '{DEFAULT_ATTR}' attribute (the value read out of bounds)"
        dtype = op.attributes[DEFAULT_ATTR].type
        if dtype != values[0].type:
            return (f"the default value of '{accessor}' must have the compute type {values[0].type}, "
                    f"got {dtype}")
    sizes = list(op.operands)[1 + seg[1]:1 + seg[1] + seg[2]]
    if any(not isinstance(v.type, ir.IndexType) for v in sizes):
        return "size operands must be of type index"
    return None


def _float_width(t) -> int | None:
    """Bit width of an MLIR float type, ``None`` for other types."""
    for cls, bits in ((ir.F16Type, 16), (ir.BF16Type, 16), (ir.F32Type, 32), (ir.F64Type, 64)):
        if isinstance(t, cls):
            return bits
    return None


def _compute_type_error(storage, compute) -> str | None:
    """Whether values of type ``compute`` may stand for elements stored as ``storage``.

    Equal types always may; a float storage type may also be computed in a strictly wider float type
    (``f16``/``bf16`` -> ``f32``/``f64``, ``f32`` -> ``f64``). Integer storage computes as stored.
    """
    if compute == storage:
        return None
    sw, cw = _float_width(storage), _float_width(compute)
    if sw is not None and cw is not None and cw > sw:
        return None
    if sw is not None:
        return (f"component values must have the buffer's element type {storage} or a wider float "
                f"(compute) type, got {compute}")
    return f"component values must have the buffer's element type {storage}, got {compute}"


def _verified(op, error: str | None) -> bool:
    if error is None:
        return True
    op.location.emit_error(f"'{op.operation.name}' op {error}")
    return False


class ReadOp(Kern.Operation, name="read"):
    """``kern.read``: the element thread ``t`` reaches through ``accessor``, one result per component."""

    buffer: ext.Operand[Any]
    args: Sequence[ext.Operand[Any]]
    sizes: Sequence[ext.Operand[Any]]
    accessor: ir.StringAttr
    layout: ir.StringAttr
    syms: ir.ArrayAttr
    values: Sequence[ext.Result[Any]]

    def verify_invariants(self) -> bool:
        return _verified(self, _access_error(self, READ_ACCESSORS, with_values=False))


class WriteOp(Kern.Operation, name="write"):
    """``kern.write``: store the component ``values`` to the element thread ``t`` reaches."""

    buffer: ext.Operand[Any]
    args: Sequence[ext.Operand[Any]]
    sizes: Sequence[ext.Operand[Any]]
    values: Sequence[ext.Operand[Any]]
    accessor: ir.StringAttr
    layout: ir.StringAttr
    syms: ir.ArrayAttr

    def verify_invariants(self) -> bool:
        return _verified(self, _access_error(self, WRITE_ACCESSORS, with_values=True))


class AddOp(Kern.Operation, name="add"):
    """``kern.add``: add the component ``values`` to the element thread ``t`` reaches."""

    buffer: ext.Operand[Any]
    args: Sequence[ext.Operand[Any]]
    sizes: Sequence[ext.Operand[Any]]
    values: Sequence[ext.Operand[Any]]
    accessor: ir.StringAttr
    layout: ir.StringAttr
    syms: ir.ArrayAttr

    def verify_invariants(self) -> bool:
        return _verified(self, _access_error(self, ADD_ACCESSORS, with_values=True))


class LayoutApplyOp(Kern.Operation, name="layout_apply"):
    """``kern.layout_apply``: flat offset ``sum_k coords[k] * stride[k]`` of ``layout``."""

    coords: Sequence[ext.Operand[Any]]
    sizes: Sequence[ext.Operand[Any]]
    layout: ir.StringAttr
    syms: ir.ArrayAttr
    offset: ext.Result[ir.IndexType]

    def verify_invariants(self) -> bool:
        seg = _segments(self)
        err = _layout_error(self, seg[0])
        if err is None and seg[1] != len(_syms(self)):
            err = f"{seg[1]} size operands for {len(_syms(self))} syms"
        if err is None and not all(isinstance(v.type, ir.IndexType) for v in self.operands):
            err = "operands must be of type index"
        return _verified(self, err)


class ThreadIdOp(Kern.Operation, name="thread_id"):
    """``kern.thread_id``: the item index ``t = block_id * block_dim + thread_id.x``."""

    result_: ext.Result[ir.IndexType]


class BlockIdOp(Kern.Operation, name="block_id"):
    """``kern.block_id``: the block index (CUDA ``blockIdx.x``)."""

    result_: ext.Result[ir.IndexType]


class BlockDimOp(Kern.Operation, name="block_dim"):
    """``kern.block_dim``: threads per block (CUDA ``blockDim.x``)."""

    result_: ext.Result[ir.IndexType]


class LaneIdOp(Kern.Operation, name="lane_id"):
    """``kern.lane_id``: the thread's lane in its 32-thread warp."""

    result_: ext.Result[ir.IndexType]


class ProblemSizeOp(Kern.Operation, name="problem_size"):
    """``kern.problem_size``: ``P``, the number of items of the launch."""

    result_: ext.Result[ir.IndexType]


BUILTIN_OPS = {
    "thread_id": ThreadIdOp,
    "block_id": BlockIdOp,
    "block_dim": BlockDimOp,
    "lane_id": LaneIdOp,
    "problem_size": ProblemSizeOp,
}

def load(context) -> None:
    """Register the kern dialect in ``context`` (a no-op if it already is).

    Also turns off the context's multithreading: the kern verifiers are Python callbacks, and MLIR's
    parallel verifier would run them on worker threads while the caller holds the GIL (a deadlock).
    """
    context.enable_multithreading(False)
    if context.is_registered_operation("kern.read"):
        return
    with context:
        Kern.load(reload=_loaded_once[0])
    _loaded_once[0] = True


_loaded_once = [False]


def _with_attrs(build, attrs: dict):
    """Build an op, then set ``attrs``. The ``ext`` builder treats falsy attributes (an empty
    ``syms = []`` of a static layout) as absent, so they are filled in after construction."""
    placeholder = {k: (v if v else ir.ArrayAttr.get([ir.StringAttr.get("")])) for k, v in attrs.items()}
    op = build(placeholder)
    for k, v in attrs.items():
        op.operation.attributes[k] = v
    return op


def accessor_attrs(accessor: str, layout: str, syms) -> dict:
    """The attribute dict of an accessor op (call inside an ``ir.Context``)."""
    return {
        "accessor": ir.StringAttr.get(accessor),
        "layout": ir.StringAttr.get(layout),
        "syms": ir.ArrayAttr.get([ir.StringAttr.get(s) for s in syms]),
    }


def read(buffer, args, sizes, accessor: str, layout: str, syms, result_types, default=None):
    """Build ``kern.read`` at the current insertion point; returns the op (one result per component).

    ``default``: ``(type, value)`` of the value ``strided_default``/``pair_strided_default`` reads
    give out of bounds, stored exactly as the ``default`` attribute (a typed float/integer attr).
    """
    attrs = accessor_attrs(accessor, layout, syms)
    op = _with_attrs(lambda a: ReadOp(buffer, list(args), list(sizes), **a, values=list(result_types)), attrs)
    if default is not None:
        type_, value = default
        if isinstance(type_, ir.IntegerType) or isinstance(type_, ir.IndexType):
            attr = ir.IntegerAttr.get(type_, int(value))
        else:
            attr = ir.FloatAttr.get(type_, float(value))
        op.operation.attributes[DEFAULT_ATTR] = attr
    return op


def write(kind: str, buffer, args, sizes, values, accessor: str, layout: str, syms):
    """Build ``kern.write`` (``kind="write"``) or ``kern.add`` (``kind="add"``)."""
    cls = {"write": WriteOp, "add": AddOp}[kind]
    attrs = accessor_attrs(accessor, layout, syms)
    return _with_attrs(lambda a: cls(buffer, list(args), list(sizes), list(values), **a), attrs)


def layout_apply(coords, sizes, layout: str, syms):
    """Build ``kern.layout_apply``; returns its ``index`` result."""
    attrs = {
        "layout": ir.StringAttr.get(layout),
        "syms": ir.ArrayAttr.get([ir.StringAttr.get(s) for s in syms]),
    }
    op = _with_attrs(
        lambda a: LayoutApplyOp(list(coords), list(sizes), **a, offset=ir.IndexType.get()), attrs
    )
    return op.results[0]
