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

Accessor ops (the semantics are in ``docs/design/accessors.md``):

- ``kern.read``  -- ``(buffer, args..., sizes...) -> (component values...)``
- ``kern.write`` -- ``(buffer, args..., sizes..., values...)``: ``X[e] = y_t``
- ``kern.add``   -- ``(buffer, args..., sizes..., values...)``: ``X[e] += y_t``

``args`` by accessor: the operands :attr:`AccessorKind.ir_args` of its record in the accessor
registry (``dialect/accessors.py``, which the verifiers below read): none, ``(off, s)`` of type
``index`` (``e = off + t*s``), the index buffer ``I`` (``memref<?xi32>``, ``e = I[t]``) or two
``shared_indices(I)`` tables (``memref<?xi32>``, ``dialect/shared_table.py``). The ``*_default``
reads carry the value read out of bounds in the typed ``default`` attribute (an IRDL variadic
group needs one type for all its operands, so it cannot carry the value among the ``index`` args).
Passes decode the ops with ``dialect/access.py`` (``Access.from_op``).

One result/value per component (``pair`` and ``pair_strided_default``: ``2K`` of them, the first
element's ``K`` components, then the second's). Their type is the *compute* type, which may differ
from the buffer's *storage* (memref element) type: for a float storage type it is a float type at
least as wide (``f16``/``bf16`` storage computes in ``f32``; ``compute f64``); integer storage
computes in its own type.

``kern.layout_apply`` -- ``(coords..., sizes...) -> index``: the flat offset of a coordinate under
``layout``; produced by accessor and view lowering, removed by layout lowering.

Views and coordinate layouts (``view`` params, N-D problems, functional layouts; ``layouts.md``)
------------------------------------------------------------------------------------------------
A ``view`` buffer is accessed by *signed* ``index`` coordinates through its storage ``layout``: a
flat strided layout over size symbols (``(M,N):(N,1)``), or a static swizzled one
``Sw<B,M,S> o (8,64):(64,1)`` (``offset = swizzle(L(c))``). Layout algebra (``coalesce``,
``composition``/``o``, divides, products, ...) is folded before the IR is built (by the frontend,
or by ``kern-fold-layouts`` for hand-written IR), so view ops only ever carry plain strides or one
swizzle over plain strides.

- ``kern.view_load``  -- ``(buffer, coords..., sizes..., mask?) -> value``: ``X[layout(coords)]``.
  Unchecked by default (the program promises the coordinate is in bounds; the CPU interpreter still
  faults out of the buffer). With the unit attribute ``checked`` the element is read only when
  every coordinate lies in its mode (``0 <= c_k < shape_k``, signed, one predicate per mode) *and*
  the optional ``i1`` ``mask`` operand (the in-bounds flag of the outer layers of a chain of
  layouts) holds; otherwise the result is the typed ``default`` attribute (required when checked).
- ``kern.view_store`` -- ``(buffer, coords..., sizes..., mask?, value)``: ``X[layout(coords)] = v``;
  ``checked``: dropped when out of bounds (same predicate as the load).
- ``kern.view_atomic`` -- ``(buffer, coords..., sizes..., mask?, value)`` with the string attribute
  ``kind`` (:data:`VIEW_ATOMIC_KINDS`: ``add``, ``mins``, ``minu``, ``maxs``, ``maxu``, ``ori``,
  ``andi``, float ``minimumf``/``maximumf``; the signedness of integer ``min``/``max`` is the
  frontend's): ``X[layout(coords)] op= v`` as one
  relaxed, device-scoped atomic read-modify-write (several items may update one element). Always
  checked (no ``checked`` attribute): dropped when out of bounds or when ``mask`` is false.
- ``kern.in_bounds`` -- ``(coords..., sizes...) -> i1``: the per-mode predicate
  ``AND_k (0 <= c_k && c_k < shape_k)`` of ``layout`` (signed compares, never merged into one
  offset compare).
- ``kern.delinearize`` -- ``(linear, extents...) -> (coords...)``: the coordinates of ``linear``
  over ``extents``, *last coordinate fastest* (``over (i, j) in (M, N)``: ``j = t % N``,
  ``i = t / N``; the first coordinate is not wrapped). ``linear`` must be non-negative.
- ``kern.swizzle`` -- ``(offset) -> index`` with integer attributes ``bits``, ``base``, ``shift``:
  CuTe's ``Sw<B,M,S>``, ``x ^ ((x & mask) >> S)`` with ``mask = ((1<<B)-1) << (M+S)``.

As for accessors, values have the buffer's *compute* type (``f16``/``bf16`` storage -> ``f32``).
Functional layouts (``layout f(params) : (coords) -> (coords) { ... }``, the built-in ``im2col``)
are not ops: the frontend inlines them at each application as ``arith`` code on ``index`` values
(signed ``divsi``/``remsi``/``floordivsi``), and their domain checks become the ``mask`` operand.
``kern-lower-views`` lowers these ops to ``kern.layout_apply``/``kern.swizzle``, compares and
``memref`` loads/stores under ``scf.if``; ``kern-lower-divisions`` then strength-reduces index
divisions (shifts/masks for powers of two, magic multipliers for kernel-uniform runtime divisors).

``kern.group_reduce`` -- ``(value) -> value`` with ``kind`` (:data:`GROUP_REDUCE_KINDS`) and
``axes``: the reduction of ``value`` across the items that share the other coordinates, seen by
each of them (``sum[j](e)``); ``kern-map-groups`` maps each group to a block.

Thread builtins (all ``() -> index``): ``kern.thread_id`` (``t``), ``kern.block_id``,
``kern.block_dim``, ``kern.lane_id``, ``kern.problem_size`` (``P``).
"""



import functools
from typing import Any, Sequence

from kernc.support.mlir import dialect, ir

from . import accessors
from .accessors import Operand
from .strided import StridedLayout

ext = dialect("ext")

#: The attribute holding the value ``*_default`` reads give out of bounds (exact, typed).
DEFAULT_ATTR = "default"
#: The attribute of ``kern.delinearize`` naming the program's coordinates (``over (i, j)``).
COORD_NAMES_ATTR = "coord_names"


class Kern(ext.Dialect, name="kern"):
    """The kern dialect: accessor and layout ops over flat global buffers."""


def _str(attr) -> str:
    return ir.StringAttr(attr).value


def _syms(op) -> list[str]:
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes["syms"])]


def _segments(op) -> list[int]:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def _layout_error(op, rank, parse=StridedLayout.parse) -> str | None:
    """Problems with the op's ``layout``/``syms`` attributes; ``parse`` reads the layout text
    (``StridedLayout.parse``, or :func:`parse_view_layout` for view ops, which allow a swizzle)."""
    text = _str(op.attributes["layout"])
    try:
        layout = parse(text)
    except ValueError as err:
        return f"bad layout: {err}"
    if rank is not None and layout.rank != rank:
        return f"layout '{text}' has rank {layout.rank}, but {rank} coordinates are given"
    missing = set(layout.symbols) - set(_syms(op))
    if missing:
        return f"layout '{text}' names size symbols {sorted(missing)} that 'syms' does not list"
    return None


def _access_error(op, mode: str, with_values: bool) -> str | None:
    """Shared verifier of read/write/add (``mode``): the first problem found, or ``None``. The
    kinds an op takes, their ``args`` and the ``default`` attribute come from the accessor
    registry (``dialect/accessors.py``)."""
    accessor = _str(op.attributes["accessor"])
    kind = accessors.BY_NAME.get(accessor)
    if kind is None or mode not in kind.modes:
        expected = ", ".join(k.name for k in accessors.for_mode(mode))
        return f"unknown accessor '{accessor}' (expected one of {expected})"
    seg = _segments(op)
    # a `*_default` read may take its default as one more arg (a scalar parameter's value)
    default_operand = kind.default and seg[1] == len(kind.ir_args) + 1
    if seg[1] != len(kind.ir_args) and not default_operand:
        return f"accessor '{accessor}' takes {len(kind.ir_args)} args, got {seg[1]}"
    if seg[2] != len(_syms(op)):
        return f"{seg[2]} size operands for {len(_syms(op))} syms"
    buf_t = op.operands[0].type
    if not isinstance(buf_t, ir.MemRefType) or buf_t.rank != 1:
        return "the buffer must be a 1-D memref"
    values = list(op.operands)[1 + seg[1] + seg[2]:] if with_values else list(op.results)
    if not values:
        return "an element needs at least one component"
    components = len(values)
    if kind.pair:
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
    for spec, a in zip(kind.ir_args, args):
        if spec.type is Operand.INDEX:
            if not isinstance(a.type, ir.IndexType):
                return "strided(off, s) takes index operands"
        elif not isinstance(a.type, ir.MemRefType) or a.type.rank != 1 \
                or not isinstance(a.type.element_type, ir.IntegerType):
            what = "index buffer" if spec.type is Operand.INDEX_BUFFER else "shared_indices tables"
            return f"{accessor}(I) needs 1-D integer memref args (the {what})"
    if default_operand:
        if DEFAULT_ATTR in op.attributes:
            return f"'{accessor}' takes its default as an attribute or as its last arg, not both"
        if args[-1].type != values[0].type:
            return (f"the default value of '{accessor}' must have the compute type {values[0].type}, "
                    f"got {args[-1].type}")
    elif kind.default:
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


def _verifier(check):
    """An op's ``verify_invariants`` from ``check(op)``, which returns the first problem (a message)
    or ``None``: a problem is emitted as an error at the op. An attribute the op lacks or whose value
    is of the wrong kind (hand-written IR given to ``kernc opt``) is reported the same way; the
    verifier never raises."""

    @functools.wraps(check)
    def verify_invariants(self) -> bool:
        try:
            error = check(self)
        except KeyError:
            declared = [k for k, t in type(self).__annotations__.items()
                        if isinstance(t, type) and issubclass(t, ir.Attribute)]
            missing = [k for k in declared if k not in self.attributes]
            error = f"requires attribute '{missing[0]}'" if missing else "lacks a required attribute"
        except (ValueError, TypeError, IndexError, AttributeError) as err:
            error = f"has an attribute of the wrong kind: {err}"
        return _verified(self, error)

    return verify_invariants


class ReadOp(Kern.Operation, name="read"):
    """``kern.read``: the element thread ``t`` reaches through ``accessor``, one result per component."""

    buffer: ext.Operand[Any]
    args: Sequence[ext.Operand[Any]]
    sizes: Sequence[ext.Operand[Any]]
    accessor: ir.StringAttr
    layout: ir.StringAttr
    syms: ir.ArrayAttr
    values: Sequence[ext.Result[Any]]

    @_verifier
    def verify_invariants(self) -> str | None:
        return _access_error(self, accessors.READ, with_values=False)


class WriteOp(Kern.Operation, name="write"):
    """``kern.write``: store the component ``values`` to the element thread ``t`` reaches."""

    buffer: ext.Operand[Any]
    args: Sequence[ext.Operand[Any]]
    sizes: Sequence[ext.Operand[Any]]
    values: Sequence[ext.Operand[Any]]
    accessor: ir.StringAttr
    layout: ir.StringAttr
    syms: ir.ArrayAttr

    @_verifier
    def verify_invariants(self) -> str | None:
        return _access_error(self, accessors.WRITE, with_values=True)


class AddOp(Kern.Operation, name="add"):
    """``kern.add``: add the component ``values`` to the element thread ``t`` reaches."""

    buffer: ext.Operand[Any]
    args: Sequence[ext.Operand[Any]]
    sizes: Sequence[ext.Operand[Any]]
    values: Sequence[ext.Operand[Any]]
    accessor: ir.StringAttr
    layout: ir.StringAttr
    syms: ir.ArrayAttr

    @_verifier
    def verify_invariants(self) -> str | None:
        return _access_error(self, accessors.ADD, with_values=True)


class LayoutApplyOp(Kern.Operation, name="layout_apply"):
    """``kern.layout_apply``: flat offset ``sum_k coords[k] * stride[k]`` of ``layout``."""

    coords: Sequence[ext.Operand[Any]]
    sizes: Sequence[ext.Operand[Any]]
    layout: ir.StringAttr
    syms: ir.ArrayAttr
    offset: ext.Result[ir.IndexType]

    @_verifier
    def verify_invariants(self) -> str | None:
        return _coords_error(self, _layout_error)


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

#: Op names of the view family (``kern-lower-views`` removes them).
VIEW_OPS = ("kern.view_load", "kern.view_store", "kern.view_atomic", "kern.in_bounds", "kern.delinearize")
#: The ``kind`` attribute values of ``kern.view_atomic``: integer ``min``/``max`` carry their
#: signedness (MLIR integers are signless); ``add`` is ``addi`` or ``addf`` by the value's type.
VIEW_ATOMIC_KINDS = ("add", "mins", "minu", "maxs", "maxu", "ori", "andi", "minimumf", "maximumf")
#: The kinds that need an integer value, and those that need a float (IEEE 754-2019 ``minimum``/
#: ``maximum``: a NaN operand gives NaN, ``-0.0 < +0.0``; ``arith.AtomicRMWKind`` names).
VIEW_ATOMIC_INT_KINDS = ("mins", "minu", "maxs", "maxu", "ori", "andi")
VIEW_ATOMIC_FLOAT_KINDS = ("minimumf", "maximumf")
#: The unit attribute marking a checked view access, and the one carrying its default value.
CHECKED_ATTR = "checked"

_SWIZZLE_RE = __import__("re").compile(
    r"\s*(?:Sw|swizzle|Swizzle)\s*<\s*(-?[0-9]+)\s*,\s*(-?[0-9]+)\s*,\s*(-?[0-9]+)\s*>\s*o\s*(?:0\s*o\s*)?(.*)$", 0)


def _parse_plain_view_layout(text: str):
    m = _SWIZZLE_RE.match(text)
    if m:
        sw = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if sw[0] < 0 or sw[1] < 0 or abs(sw[2]) < sw[0]:
            raise ValueError(f"bad swizzle Sw<{sw[0]},{sw[1]},{sw[2]}> in '{text}'")
        return StridedLayout.parse(m.group(4)), sw
    return StridedLayout.parse(text), None


#: Layout algebra operations a view op's ``layout`` text may call (folded with ``kernc.layout``).
ALGEBRA_OPS = ("coalesce", "composition", "complement", "right_inverse", "left_inverse",
               "logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product",
               "zipped_product", "tiled_product", "flat_product", "blocked_product", "raked_product")


def _split_args(text: str) -> list:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


#: Deepest bracket nesting of a layout expression :func:`fold_layout` takes (the text comes from
#: an IR file: each level is a recursive call and a scan of the text).
MAX_LAYOUT_TEXT_NESTING = 64


def fold_layout(text: str):
    """Evaluate a static layout expression in CuTe notation with the layout algebra
    (:mod:`kernc.dialect.layout_algebra`, imported on first use: a cold compile without layout
    algebra never loads it): literals, ``A o B`` (composition, right to left), ``Sw<B,M,S> o L``,
    and calls of :data:`ALGEBRA_OPS`. Returns a layout algebra object; ``LayoutError`` (a
    ``ValueError``) if it is malformed, nested more than :data:`MAX_LAYOUT_TEXT_NESTING` brackets
    deep, or a composition is not admissible (the message names both layouts)."""
    from . import layout_algebra as KL

    depth = deepest = 0
    for ch in text:
        if ch in "(<":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")>":
            depth -= 1
    if deepest > MAX_LAYOUT_TEXT_NESTING:
        raise KL.LayoutError(f"the layout '{text[:40]}...' nests {deepest} brackets, more than "
                             f"{MAX_LAYOUT_TEXT_NESTING}")
    return _fold_layout(text)


def _fold_layout(text: str):
    import re

    from . import layout_algebra as KL
    from .layout_algebra import _split_compose

    parts = [p.strip() for p in _split_compose(text)]
    if len(parts) > 1:
        values = [_fold_layout(p) for p in parts]
        acc = values[-1]
        for v in reversed(values[:-1]):
            if isinstance(v, KL.Swizzle):
                if not isinstance(acc, KL.Layout):
                    raise KL.LayoutError(f"a swizzle must be applied to a plain layout in '{text}'")
                acc = KL.ComposedLayout(v, 0, acc)
            else:
                acc = KL.composition(v, acc)
        return acc
    m = re.match(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*$", text, re.S)
    if m and m.group(1) in ALGEBRA_OPS:
        vals = []
        for i, a in enumerate(_split_args(m.group(2))):
            if m.group(1) == "complement" and i == 1:
                vals.append(int(a) if re.fullmatch(r"-?[0-9]+", a) else KL.parse_layout(a).shape)
            else:
                vals.append(_fold_layout(a))
        try:
            return getattr(KL, m.group(1))(*vals)
        except TypeError as err:
            raise KL.LayoutError(f"{m.group(1)}: {err}") from None
    return KL.parse_layout(text)


def fold_view_layout(text: str) -> str:
    """The flat view-layout text (``(..):(..)`` or ``Sw<B,M,S> o (..):(..)``) of a static layout
    expression (see :func:`fold_layout`); ``ValueError`` if it is not one."""
    from . import layout_algebra as KL

    v = fold_layout(text)

    def flat(L):
        leaves = L.leaves()
        return "(" + ",".join(str(s) for s, _ in leaves) + "):(" + ",".join(str(d) for _, d in leaves) + ")"

    if isinstance(v, KL.Layout):
        return flat(v)
    if isinstance(v, KL.ComposedLayout) and isinstance(v.outer, KL.Swizzle) and v.offset == 0:
        sw = v.outer
        return f"Sw<{sw.bits},{sw.base},{sw.shift}> o {flat(v.inner)}"
    raise KL.LayoutError(f"'{text}' is not a view layout (a plain layout, or a swizzle over one)")


def parse_view_layout(text: str):
    """``(StridedLayout, (B, M, S) or None)`` of a view op's ``layout`` text: ``(M,N):(N,1)`` or
    ``Sw<B,M,S> o (8,64):(64,1)`` (also ``Sw<B,M,S> o 0 o ...``, CuTe's print form). A static
    layout-algebra expression (``(6,2):(8,2) o (4,3):(3,1)``, ``coalesce(...)``) is folded first
    (``kern-fold-layouts`` rewrites the attribute to the folded form). ``ValueError`` if malformed
    or not foldable."""
    try:
        return _parse_plain_view_layout(text)
    except ValueError as plain_error:
        try:
            folded = fold_view_layout(text)
        except ValueError as err:
            raise ValueError(f"{plain_error}; as layout algebra: {err}") from None
        return _parse_plain_view_layout(folded)


def _view_layout_error(op, rank) -> str | None:
    return _layout_error(op, rank, parse=lambda text: parse_view_layout(text)[0])


def _coords_error(op, layout_error) -> str | None:
    """Shared check of ``(coords..., sizes...)`` ops: layout rank = coordinate count, one size per
    sym, all ``index``."""
    seg = _segments(op)
    err = layout_error(op, seg[0])
    if err is None and seg[1] != len(_syms(op)):
        err = f"{seg[1]} size operands for {len(_syms(op))} syms"
    if err is None and not all(isinstance(v.type, ir.IndexType) for v in op.operands):
        err = "operands must be of type index"
    return err


def _view_error(op, value_type, is_store: bool, checked: bool | None = None) -> str | None:
    """The first problem of a view access op; ``checked``: whether it is a checked access (by
    default, whether it has the ``checked`` attribute)."""
    seg = _segments(op)
    if checked is None:
        checked = CHECKED_ATTR in op.attributes
    buf_t = op.operands[0].type
    if not isinstance(buf_t, ir.MemRefType) or buf_t.rank != 1:
        return "the buffer must be a 1-D memref"
    err = _view_layout_error(op, seg[1])
    if err:
        return err
    if seg[2] != len(_syms(op)):
        return f"{seg[2]} size operands for {len(_syms(op))} syms"
    operands = list(op.operands)
    if any(not isinstance(v.type, ir.IndexType) for v in operands[1:1 + seg[1] + seg[2]]):
        return "coordinates and sizes must be of type index"
    if seg[3] > 1:
        return "at most one mask operand"
    if seg[3] == 1:
        m = operands[1 + seg[1] + seg[2]].type
        if not (isinstance(m, ir.IntegerType) and ir.IntegerType(m).width == 1):
            return "the mask must be an i1"
    err = _compute_type_error(buf_t.element_type, value_type)
    if err:
        return err.replace("component values", "the value")
    if checked:
        if not is_store:
            if DEFAULT_ATTR not in op.attributes:
                return f"a checked load needs a '{DEFAULT_ATTR}' attribute (the value read out of bounds)"
            if op.attributes[DEFAULT_ATTR].type != value_type:
                return f"the default value must have the result type {value_type}"
    elif seg[3]:
        return "only checked accesses take a mask"
    return None


class ViewLoadOp(Kern.Operation, name="view_load"):
    """``kern.view_load``: the element at ``layout(coords)`` (``checked``: or the ``default``)."""

    buffer: ext.Operand[Any]
    coords: Sequence[ext.Operand[Any]]
    sizes: Sequence[ext.Operand[Any]]
    mask: Sequence[ext.Operand[Any]]
    layout: ir.StringAttr
    syms: ir.ArrayAttr
    value: ext.Result[Any]

    @_verifier
    def verify_invariants(self) -> str | None:
        return _view_error(self, self.results[0].type, is_store=False)


class ViewStoreOp(Kern.Operation, name="view_store"):
    """``kern.view_store``: store ``value`` at ``layout(coords)`` (``checked``: only in bounds)."""

    buffer: ext.Operand[Any]
    coords: Sequence[ext.Operand[Any]]
    sizes: Sequence[ext.Operand[Any]]
    mask: Sequence[ext.Operand[Any]]
    value: ext.Operand[Any]
    layout: ir.StringAttr
    syms: ir.ArrayAttr

    @_verifier
    def verify_invariants(self) -> str | None:
        return _view_error(self, self.operands[-1].type, is_store=True)


class ViewAtomicOp(Kern.Operation, name="view_atomic"):
    """``kern.view_atomic``: ``X[layout(coords)] = kind(X[...], value)`` atomically, only in bounds."""

    buffer: ext.Operand[Any]
    coords: Sequence[ext.Operand[Any]]
    sizes: Sequence[ext.Operand[Any]]
    mask: Sequence[ext.Operand[Any]]
    value: ext.Operand[Any]
    layout: ir.StringAttr
    syms: ir.ArrayAttr
    kind: ir.StringAttr

    @_verifier
    def verify_invariants(self) -> str | None:
        if CHECKED_ATTR in self.attributes:
            return "an atomic view update is always checked: it takes no 'checked' attribute"
        kind = ir.StringAttr(self.attributes["kind"]).value
        if kind not in VIEW_ATOMIC_KINDS:
            return f"kind must be one of {', '.join(VIEW_ATOMIC_KINDS)}, got '{kind}'"
        vt = self.operands[-1].type
        if kind in VIEW_ATOMIC_INT_KINDS and not isinstance(vt, ir.IntegerType):
            return f"'{kind}' needs an integer value"
        if kind in VIEW_ATOMIC_FLOAT_KINDS and isinstance(vt, ir.IntegerType):
            return f"'{kind}' needs a float value"
        if not isinstance(self.operands[0].type, ir.MemRefType) \
                or ir.MemRefType(self.operands[0].type).element_type != vt:
            return "the value must have the buffer's element type (atomics run in the storage type)"
        return _view_error(self, vt, is_store=True, checked=True)


class InBoundsOp(Kern.Operation, name="in_bounds"):
    """``kern.in_bounds``: ``AND_k 0 <= coords[k] < shape_k`` of ``layout`` (signed, per mode)."""

    coords: Sequence[ext.Operand[Any]]
    sizes: Sequence[ext.Operand[Any]]
    layout: ir.StringAttr
    syms: ir.ArrayAttr
    ok: ext.Result[Any]

    @_verifier
    def verify_invariants(self) -> str | None:
        err = _coords_error(self, _view_layout_error)
        t = self.results[0].type
        if err is None and not (isinstance(t, ir.IntegerType) and ir.IntegerType(t).width == 1):
            err = "the result must be an i1"
        return err


class DelinearizeOp(Kern.Operation, name="delinearize"):
    """``kern.delinearize``: coordinates of ``linear`` over ``extents`` (last fastest)."""

    linear: ext.Operand[Any]
    extents: Sequence[ext.Operand[Any]]
    coords: Sequence[ext.Result[Any]]

    @_verifier
    def verify_invariants(self) -> str | None:
        err = None
        if len(self.results) != len(list(self.operands)) - 1 or not len(self.results):
            err = "one coordinate per extent (at least one)"
        elif not all(isinstance(v.type, ir.IndexType) for v in list(self.operands) + list(self.results)):
            err = "operands and results must be of type index"
        return err


# ---- reductions across items (issue 21; kern-map-groups lowers them) ---------------------------
#: The ``kind`` attribute values of ``kern.group_reduce``: the ``arith`` op that combines two
#: values (float ``max``/``min`` are IEEE 754-2019 ``maximum``/``minimum``: a NaN propagates).
GROUP_REDUCE_KINDS = {"addf": "float", "maximumf": "float", "minimumf": "float", "addi": "int",
                      "maxsi": "int", "maxui": "int", "minsi": "int", "minui": "int", "andi": "int",
                      "ori": "int"}


def group_axes(op) -> list[int]:
    """The ``axes`` of a ``kern.group_reduce`` (an array of integers)."""
    return [ir.IntegerAttr(a).value for a in ir.ArrayAttr(op.attributes["axes"])]


class GroupReduceOp(Kern.Operation, name="group_reduce"):
    """``kern.group_reduce``: ``kind`` of ``value`` over the items of the kernel's N-D problem
    that share every coordinate but those at the positions ``axes`` (of the body's
    ``kern.delinearize``); every item of the group gets the result. ``f32``/``f64`` or an integer
    (``i1`` too): ``f16``/``bf16`` values reduce as ``f32`` (the frontend widens them)."""

    value: ext.Operand[Any]
    kind: ir.StringAttr
    axes: ir.ArrayAttr
    result_: ext.Result[Any]

    @_verifier
    def verify_invariants(self) -> str | None:
        kind = ir.StringAttr(self.attributes["kind"]).value
        axes = group_axes(self)
        vt = self.operands[0].type
        if kind not in GROUP_REDUCE_KINDS:
            return f"kind must be one of {', '.join(GROUP_REDUCE_KINDS)}, got '{kind}'"
        if not axes or sorted(set(axes)) != axes or axes[0] < 0:
            return f"axes must be distinct coordinate positions in increasing order, got {axes}"
        if self.results[0].type != vt:
            return "the result must have the value's type"
        is_float = isinstance(vt, (ir.F32Type, ir.F64Type))
        if not (is_float or isinstance(vt, ir.IntegerType)):
            return f"the value must be f32, f64 or an integer, got {vt}"
        if (GROUP_REDUCE_KINDS[kind] == "float") != is_float:
            return f"'{kind}' needs {'a float' if GROUP_REDUCE_KINDS[kind] == 'float' else 'an integer'} value"
        return None


class SwizzleOp(Kern.Operation, name="swizzle"):
    """``kern.swizzle``: CuTe ``Sw<bits,base,shift>`` of an ``index`` offset."""

    offset: ext.Operand[Any]
    bits: ir.IntegerAttr
    base: ir.IntegerAttr
    shift: ir.IntegerAttr
    result_: ext.Result[Any]

    @_verifier
    def verify_invariants(self) -> str | None:
        b, m, s = (ir.IntegerAttr(self.attributes[k]).value for k in ("bits", "base", "shift"))
        err = None
        if b < 0 or m < 0 or abs(s) < b:
            err = f"Sw<{b},{m},{s}> needs B, M >= 0 and |S| >= B"
        elif not (isinstance(self.operands[0].type, ir.IndexType) and isinstance(self.results[0].type, ir.IndexType)):
            err = "operand and result must be of type index"
        return err


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


def _build(name: str, operands: list, results: list, attrs: dict) -> ir.Operation:
    """Create ``kern.NAME`` at the current insertion point and location, in the generic form.

    ``operands`` / ``results``: one entry per operand / result declared by the op class, in
    declaration order -- a value / type, or a list of them for a variadic (``Sequence``) one, whose
    lengths go into ``operandSegmentSizes`` / ``resultSegmentSizes`` as IRDL expects. The same IR as
    the ``ext`` class constructors, at a third of the cost (they bind every call's arguments through
    ``inspect.signature``), and an empty ``syms = []`` is kept as given (``ext`` drops falsy attrs).
    """
    attrs = dict(attrs)
    flat_operands, flat_results = [], []
    for group, flat, key in ((operands, flat_operands, "operandSegmentSizes"),
                             (results, flat_results, "resultSegmentSizes")):
        sizes, variadic = [], False
        for entry in group:
            if isinstance(entry, (list, tuple)):
                flat.extend(entry)
                sizes.append(len(entry))
                variadic = True
            else:
                flat.append(entry)
                sizes.append(1)
        if variadic:
            attrs[key] = ir.DenseI32ArrayAttr.get(sizes)
    return ir.Operation.create(f"kern.{name}", results=flat_results, operands=flat_operands,
                               attributes=attrs)


def accessor_attrs(accessor, layout: str, syms) -> dict:
    """The attribute dict of an accessor op (call inside an ``ir.Context``); ``accessor`` is an
    :class:`~kernc.dialect.accessors.AccessorKind` or its name."""
    return {
        "accessor": ir.StringAttr.get(getattr(accessor, "name", accessor)),
        "layout": ir.StringAttr.get(layout),
        "syms": ir.ArrayAttr.get([ir.StringAttr.get(s) for s in syms]),
    }


def read(buffer, args, sizes, accessor: str, layout: str, syms, result_types, default=None):
    """Build ``kern.read`` at the current insertion point; returns the op (one result per component).

    ``default``: ``(type, value)`` of the value ``strided_default``/``pair_strided_default`` reads
    give out of bounds, stored exactly as the ``default`` attribute (a typed float/integer attr).
    """
    attrs = accessor_attrs(accessor, layout, syms)
    op = _build("read", [buffer, list(args), list(sizes)], [list(result_types)], attrs)
    if default is not None:
        type_, value = default
        op.operation.attributes[DEFAULT_ATTR] = _typed_attr(type_, value)
    return op


def write(kind: str, buffer, args, sizes, values, accessor: str, layout: str, syms):
    """Build ``kern.write`` (``kind="write"``) or ``kern.add`` (``kind="add"``)."""
    if kind not in ("write", "add"):
        raise ValueError(f"kind must be 'write' or 'add', got {kind!r}")
    attrs = accessor_attrs(accessor, layout, syms)
    return _build(kind, [buffer, list(args), list(sizes), list(values)], [], attrs)


def layout_apply(coords, sizes, layout: str, syms):
    """Build ``kern.layout_apply``; returns its ``index`` result."""
    attrs = {
        "layout": ir.StringAttr.get(layout),
        "syms": ir.ArrayAttr.get([ir.StringAttr.get(s) for s in syms]),
    }
    return _build("layout_apply", [list(coords), list(sizes)], [ir.IndexType.get()], attrs).results[0]


def _view_attrs(layout: str, syms) -> dict:
    return {
        "layout": ir.StringAttr.get(layout),
        "syms": ir.ArrayAttr.get([ir.StringAttr.get(x) for x in syms]),
    }


def _typed_attr(type_, value):
    """``value`` as an attribute of ``type_``: a float, or an integer stored as its bit pattern in
    the signless type (two's complement, so unsigned values of 2^(w-1) and more, e.g. a ``u64``
    default of 2^64 - 1, are representable; MLIR's ``IntegerAttr`` takes a signed 64-bit value)."""
    if isinstance(type_, ir.IntegerType):
        w = ir.IntegerType(type_).width
        v = int(value) & ((1 << w) - 1)
        return ir.IntegerAttr.get(type_, v - (1 << w) if w > 1 and v >= 1 << (w - 1) else v)
    if isinstance(type_, ir.IndexType):
        return ir.IntegerAttr.get(type_, int(value))
    return ir.FloatAttr.get(type_, float(value))


def view_load(buffer, coords, sizes, layout: str, syms, result_type, checked=False, default=None,
              mask=None):
    """Build ``kern.view_load``; returns its result. A ``checked`` load out of bounds gives
    ``default`` (a Python number, 0 when ``None``, stored exactly as a typed attribute of
    ``result_type``); ``mask`` is an optional ``i1``."""
    op = _build("view_load", [buffer, list(coords), list(sizes), [mask] if mask is not None else []],
                [result_type], _view_attrs(layout, syms))
    if checked:
        op.operation.attributes[CHECKED_ATTR] = ir.UnitAttr.get()
        op.operation.attributes[DEFAULT_ATTR] = _typed_attr(result_type, 0 if default is None else default)
    return op.results[0]


def view_store(buffer, coords, sizes, value, layout: str, syms, checked=False, mask=None):
    """Build ``kern.view_store``."""
    op = _build("view_store", [buffer, list(coords), list(sizes), [mask] if mask is not None else [], value],
                [], _view_attrs(layout, syms))
    if checked:
        op.operation.attributes[CHECKED_ATTR] = ir.UnitAttr.get()
    return op


def view_atomic(buffer, coords, sizes, value, layout: str, syms, kind: str, mask=None):
    """Build ``kern.view_atomic`` (``kind`` one of :data:`VIEW_ATOMIC_KINDS`)."""
    attrs = _view_attrs(layout, syms)
    attrs["kind"] = ir.StringAttr.get(kind)
    return _build("view_atomic", [buffer, list(coords), list(sizes), [mask] if mask is not None else [], value],
                  [], attrs)


def in_bounds(coords, sizes, layout: str, syms):
    """Build ``kern.in_bounds``; returns its ``i1`` result."""
    return _build("in_bounds", [list(coords), list(sizes)], [ir.IntegerType.get_signless(1)],
                  _view_attrs(layout, syms)).results[0]


def delinearize(linear, extents) -> list:
    """Build ``kern.delinearize``; returns the coordinates (last fastest)."""
    return list(_build("delinearize", [linear, list(extents)], [[ir.IndexType.get()] * len(extents)], {}).results)


def builtin(name: str) -> ir.Value:
    """Build the builtin ``kern.NAME`` (a key of :data:`BUILTIN_OPS`); returns its ``index`` result."""
    if name not in BUILTIN_OPS:
        raise ValueError(f"unknown builtin {name!r} (one of {', '.join(BUILTIN_OPS)})")
    return _build(name, [], [ir.IndexType.get()], {}).results[0]


def swizzle(offset, bits: int, base: int, shift: int):
    """Build ``kern.swizzle``; returns its ``index`` result."""
    i32 = ir.IntegerType.get_signless(32)
    attrs = {"bits": ir.IntegerAttr.get(i32, bits), "base": ir.IntegerAttr.get(i32, base),
             "shift": ir.IntegerAttr.get(i32, shift)}
    return _build("swizzle", [offset], [ir.IndexType.get()], attrs).results[0]


def group_reduce(value, kind: str, axes) -> ir.Value:
    """Build ``kern.group_reduce`` (``kind`` a key of :data:`GROUP_REDUCE_KINDS`, ``axes`` the
    reduced coordinates' positions); returns its result."""
    i64 = ir.IntegerType.get_signless(64)
    attrs = {"kind": ir.StringAttr.get(kind),
             "axes": ir.ArrayAttr.get([ir.IntegerAttr.get(i64, int(a)) for a in axes])}
    return _build("group_reduce", [value], [value.type], attrs).results[0]
