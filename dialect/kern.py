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
    if any(v.type != buf_t.element_type for v in values):
        return f"component values must have the buffer's element type {buf_t.element_type}"
    err = _layout_error(op, None)
    if err:
        return err
    rank = StridedLayout.parse(_str(op.attributes["layout"])).rank
    if len(values) > 1 and rank != 2:
        return f"{len(values)}-component elements need a rank-2 layout (element, component)"
    if len(values) == 1 and rank not in (1, 2):
        return "single-component elements need a rank-1 or rank-2 layout"
    if accessor == "indexed":
        idx_t = op.operands[1].type
        if not isinstance(idx_t, ir.MemRefType) or not isinstance(idx_t.element_type, ir.IntegerType):
            return "indexed(I) needs an integer index buffer"
    if accessor == "strided" and any(not isinstance(v.type, ir.IndexType) for v in list(op.operands)[1:3]):
        return "strided(off, s) takes index operands"
    sizes = list(op.operands)[1 + seg[1]:1 + seg[1] + seg[2]]
    if any(not isinstance(v.type, ir.IndexType) for v in sizes):
        return "size operands must be of type index"
    return None


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


def read(buffer, args, sizes, accessor: str, layout: str, syms, result_types):
    """Build ``kern.read`` at the current insertion point; returns the op (one result per component)."""
    attrs = accessor_attrs(accessor, layout, syms)
    return _with_attrs(lambda a: ReadOp(buffer, list(args), list(sizes), **a, values=list(result_types)), attrs)


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
