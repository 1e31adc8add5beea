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

``args`` by accessor: ``sequential`` none (``e = t``); ``strided`` ``(off, s)`` of type ``index``
(``e = off + t*s``); ``indexed`` the index buffer ``I`` (``memref<?xi32>``, ``e = I[t]``).
One result/value per component; their type is the buffer's element type.

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
READ_ACCESSORS = {"sequential": 0, "strided": 2, "indexed": 1}
WRITE_ACCESSORS = {"sequential": 0, "strided": 2, "indexed": 1}
ADD_ACCESSORS = {"sequential": 0, "strided": 2, "indexed": 1}


class Kern(ext.Dialect, name="kern"):
    """The kern dialect: accessor and layout ops over flat global buffers."""


def _str(attr) -> str:
    return ir.StringAttr(attr).value


def _syms(op) -> list[str]:
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes["syms"])]


def _segments(op) -> list[int]:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def _layout_ok(op, rank: int | None) -> bool:
    try:
        layout = StridedLayout.parse(_str(op.attributes["layout"]))
    except ValueError:
        return False
    if rank is not None and layout.rank != rank:
        return False
    return set(layout.symbols) <= set(_syms(op))


def _access_ok(op, table: dict, with_values: bool) -> bool:
    """Shared verifier of read/write/add: accessor known, arg count, sizes, component count."""
    accessor = _str(op.attributes["accessor"])
    if accessor not in table:
        return False
    seg = _segments(op)
    if seg[1] != table[accessor] or seg[2] != len(_syms(op)):
        return False
    buf_t = op.operands[0].type
    if not isinstance(buf_t, ir.MemRefType) or buf_t.rank != 1:
        return False
    elem = buf_t.element_type
    values = list(op.operands)[1 + seg[1] + seg[2]:] if with_values else list(op.results)
    if not values or any(v.type != elem for v in values):
        return False
    rank = 1 if len(values) == 1 else 2
    if not _layout_ok(op, None):
        return False
    layout = StridedLayout.parse(_str(op.attributes["layout"]))
    if layout.rank not in (rank, 1 if rank == 1 else 2):
        return False
    if accessor == "indexed":
        idx_t = op.operands[1].type
        if not isinstance(idx_t, ir.MemRefType) or not isinstance(idx_t.element_type, ir.IntegerType):
            return False
    if accessor == "strided":
        if any(not isinstance(v.type, ir.IndexType) for v in list(op.operands)[1:3]):
            return False
    return all(isinstance(v.type, ir.IndexType) for v in list(op.operands)[1 + seg[1]:1 + seg[1] + seg[2]])


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
        return _access_ok(self, READ_ACCESSORS, with_values=False)


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
        return _access_ok(self, WRITE_ACCESSORS, with_values=True)


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
        return _access_ok(self, ADD_ACCESSORS, with_values=True)


class LayoutApplyOp(Kern.Operation, name="layout_apply"):
    """``kern.layout_apply``: flat offset ``sum_k coords[k] * stride[k]`` of ``layout``."""

    coords: Sequence[ext.Operand[Any]]
    sizes: Sequence[ext.Operand[Any]]
    layout: ir.StringAttr
    syms: ir.ArrayAttr
    offset: ext.Result[ir.IndexType]

    def verify_invariants(self) -> bool:
        seg = _segments(self)
        if not _layout_ok(self, seg[0]) or seg[1] != len(_syms(self)):
            return False
        return all(isinstance(v.type, ir.IndexType) for v in self.operands)


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

_loaded: set = set()


def load(context) -> None:
    """Register the kern dialect in ``context`` (once per context)."""
    key = id(context)
    if key in _loaded:
        return
    with context:
        Kern.load(reload=bool(_loaded))
    _loaded.add(key)


def accessor_attrs(accessor: str, layout: str, syms: list) -> dict:
    """The attribute dict of an accessor op (call inside an ``ir.Context``)."""
    return {
        "accessor": ir.StringAttr.get(accessor),
        "layout": ir.StringAttr.get(layout),
        "syms": ir.ArrayAttr.get([ir.StringAttr.get(s) for s in syms]),
    }
