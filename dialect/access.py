"""Typed views of kern ops for the passes: what an op reads or writes, decoded once.

A pass holds an ``ir.Operation`` from a walk; ``Access.from_op(op)`` (``kern.read``/``write``/
``add``), ``ViewAccess.from_op(op)`` (``kern.view_load``/``view_store``) and ``Coordinates.from_op``
(``kern.in_bounds``/``layout_apply``) read its operand groups (those the op classes of
``dialect/kern.py`` declare: ``buffer``, ``args``, ``sizes``, ...) and its attributes, so that no
pass slices ``operandSegmentSizes`` or looks attributes up by name. The op must have verified (the
passes run on verified modules); decoding an unverified op may raise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernc.support.mlir import ir

from . import accessors
from .accessors import AccessorKind
from .kern import CHECKED_ATTR, COORD_NAMES_ATTR, DEFAULT_ATTR, parse_view_layout
from .strided import StridedLayout

#: The accessor op names and the access mode of each.
ACCESSOR_OPS = {"kern.read": accessors.READ, "kern.write": accessors.WRITE, "kern.add": accessors.ADD}
#: The view access op names.
VIEW_ACCESS_OPS = ("kern.view_load", "kern.view_store", "kern.view_atomic")


def _syms(attrs) -> list[str]:
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(attrs["syms"])]


def _groups(op) -> list[list]:
    """The op's operands split into the groups its class declares (``operandSegmentSizes``)."""
    operands = list(op.operands)
    groups, at = [], 0
    for n in ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]):
        groups.append(operands[at:at + n])
        at += n
    return groups


@dataclass
class Access:
    """One ``kern.read``/``kern.write``/``kern.add`` op, decoded.

    - ``kind``: the accessor kind's record (``accessors.SHARED``, ...); ``mode``: ``"read"``,
      ``"write"`` or ``"add"``.
    - ``buffer``: the buffer operand (``memref<?xT>``, its element type the *storage* type).
    - ``args``: the ``args`` operands, in the order of ``kind.ir_args``.
    - ``sizes``: the size-symbol operands, in ``syms`` order; ``syms`` the size symbols the layout
      names.
    - ``values``: the component values: a read's results, an update's value operands (``pair``:
      ``2K`` of them, the first element's ``K`` components, then the second's); ``compute`` their
      type.
    - ``components``: components per element (``K``; for ``pair`` per element, not per op).
    - ``layout``: the buffer's layout (``layout_text`` its text), rank 1, or 2 for ``(element,
      component)``.
    - ``default``: the typed attribute of the value a ``*_default`` read gives out of bounds, else
      ``None``.
    """

    op: Any
    kind: AccessorKind
    mode: str
    buffer: ir.Value
    args: list
    sizes: list
    values: list
    components: int
    layout: StridedLayout
    layout_text: str
    syms: list
    compute: ir.Type
    storage: ir.Type
    default: ir.Attribute | None
    atomic: str | None = None

    @classmethod
    def from_op(cls, op) -> "Access":
        """Decode a verified accessor op; ``KeyError`` for an op of another name or an unknown
        accessor kind."""
        op = op.operation if hasattr(op, "operation") else op
        mode = ACCESSOR_OPS[op.name]
        attrs = op.attributes
        kind = accessors.kind(ir.StringAttr(attrs["accessor"]).value)
        # the operand groups of ReadOp/WriteOp/AddOp (buffer, args, sizes[, values]), read from
        # operandSegmentSizes at once (the op classes' accessors cost twice as much per group)
        _, n_args, n_sizes, *_ = ir.DenseI32ArrayAttr(attrs["operandSegmentSizes"])
        operands = list(op.operands)
        buffer = operands[0]
        values = list(op.results) if mode == accessors.READ else operands[1 + n_args + n_sizes:]
        layout_text = ir.StringAttr(attrs["layout"]).value
        return cls(
            op=op, kind=kind, mode=mode, buffer=buffer, args=operands[1:1 + n_args],
            sizes=operands[1 + n_args:1 + n_args + n_sizes], values=values,
            components=len(values) // 2 if kind.pair else len(values),
            layout=StridedLayout.parse(layout_text), layout_text=layout_text,
            syms=_syms(attrs),
            compute=values[0].type, storage=ir.MemRefType(buffer.type).element_type,
            default=attrs[DEFAULT_ATTR] if DEFAULT_ATTR in attrs else None,
        )

    @property
    def location(self):
        return self.op.location

    @property
    def is_read(self) -> bool:
        return self.mode == accessors.READ

    @property
    def offset_stride(self) -> tuple:
        """``(off, s)`` of the strided kinds (``e = off + t*s``); ``ValueError`` for others."""
        if not self.kind.strided:
            raise ValueError(f"accessor '{self.kind.name}' has no (off, s)")
        return self.args[0], self.args[1]

    @property
    def index_param(self) -> ir.Value | None:
        """The index buffer ``I`` the op takes as an operand (``indexed(I)``, ``atomic(I)``:
        ``e = I[t]``); ``None`` for kinds that take ``I`` through its ``shared_indices`` tables
        (:meth:`table`) and for kinds without one."""
        for arg, value in zip(self.kind.ir_args, self.args):
            if arg.type is accessors.Operand.INDEX_BUFFER:
                return value
        return None

    def table(self, name: str) -> ir.Value:
        """The ``shared_indices`` table operand ``name`` (``"unique"``, ``"target"``, ``"perm"``);
        ``KeyError`` if the kind takes no such table."""
        for arg, value in zip(self.kind.ir_args, self.args):
            if arg.type is accessors.Operand.TABLE and arg.name == name:
                return value
        raise KeyError(name)

    def element(self, k: int) -> list:
        """The component values of element ``k`` of the op (0; ``pair``: 0 first, 1 second)."""
        K = self.components
        return self.values[k * K:(k + 1) * K]


@dataclass
class ViewAccess:
    """One ``kern.view_load``/``kern.view_store`` op, decoded: ``X[layout(coords)]``.

    ``mask`` is the optional ``i1`` operand (``None`` without one); ``value`` the loaded result or
    the stored operand, ``compute`` its type; ``layout`` the plain strided part of the view layout
    and ``swizzle`` its ``(B, M, S)`` (or ``None``); ``checked`` whether out-of-bounds accesses are
    dropped (a load then gives ``default``, the typed attribute); ``atomic`` the ``kind`` of a
    ``kern.view_atomic`` (always checked; ``is_store`` too), else ``None``."""

    op: Any
    is_store: bool
    buffer: ir.Value
    coords: list
    sizes: list
    mask: ir.Value | None
    value: ir.Value
    layout: StridedLayout
    swizzle: tuple | None
    layout_text: str
    syms: list
    checked: bool
    default: ir.Attribute | None
    atomic: str | None = None

    @classmethod
    def from_op(cls, op) -> "ViewAccess":
        """Decode a verified view access op; ``KeyError`` for an op of another name."""
        op = op.operation if hasattr(op, "operation") else op
        if op.name not in VIEW_ACCESS_OPS:
            raise KeyError(op.name)
        is_store = op.name != "kern.view_load"
        atomic = ir.StringAttr(op.attributes["kind"]).value if op.name == "kern.view_atomic" else None
        # ViewLoadOp/ViewStoreOp/ViewAtomicOp: buffer, coords, sizes, mask (0 or 1)[, value]
        (buffer,), coords, sizes, mask, *value = _groups(op)
        attrs = op.attributes
        layout_text = ir.StringAttr(attrs["layout"]).value
        layout, swizzle = parse_view_layout(layout_text)
        return cls(
            op=op, is_store=is_store, buffer=buffer, coords=coords, sizes=sizes,
            mask=mask[0] if mask else None, value=value[0][0] if is_store else op.results[0],
            layout=layout, swizzle=swizzle, layout_text=layout_text, syms=_syms(attrs),
            checked=CHECKED_ATTR in attrs or atomic is not None,
            default=attrs[DEFAULT_ATTR] if DEFAULT_ATTR in attrs else None, atomic=atomic,
        )

    @staticmethod
    def buffer_of(op) -> ir.Value:
        """The buffer of a view access op (without decoding the rest)."""
        return op.operands[0]

    @property
    def compute(self) -> ir.Type:
        return self.value.type

    @staticmethod
    def coord_operand(k: int) -> int:
        """The operand number of coordinate ``k`` of a view access (after the buffer), for a pass
        that rewrites the coordinates of a clone."""
        return 1 + k

    @staticmethod
    def value_operand(op) -> int:
        """The operand number of the stored value of a ``kern.view_store`` (the last)."""
        return len(op.operands) - 1

    @property
    def storage(self) -> ir.Type:
        return ir.MemRefType(self.buffer.type).element_type

    @property
    def location(self):
        return self.op.location


@dataclass
class Coordinates:
    """A ``(coords..., sizes...)`` op decoded: ``kern.in_bounds`` (view layout: ``swizzle`` may
    be set) or ``kern.layout_apply`` (a plain strided layout)."""

    op: Any
    coords: list
    sizes: list
    layout: StridedLayout
    swizzle: tuple | None
    syms: list

    @classmethod
    def from_op(cls, op) -> "Coordinates":
        op = op.operation if hasattr(op, "operation") else op
        coords, sizes = _groups(op)  # InBoundsOp/LayoutApplyOp: coords, sizes
        attrs = op.attributes
        text = ir.StringAttr(attrs["layout"]).value
        if op.name == "kern.layout_apply":
            layout, swizzle = StridedLayout.parse(text), None
        elif op.name == "kern.in_bounds":
            layout, swizzle = parse_view_layout(text)
        else:
            raise KeyError(op.name)
        return cls(op=op, coords=coords, sizes=sizes, layout=layout, swizzle=swizzle,
                   syms=_syms(attrs))


@dataclass
class Delinearize:
    """A ``kern.delinearize`` op decoded: ``coords`` of ``linear`` over ``extents``, last fastest;
    ``coord_names`` the program's names of the coordinates (``over (i, j)``: ``["i", "j"]``), or
    ``x0, x1, ...`` when the op does not record them."""

    op: Any
    linear: ir.Value
    extents: list
    coords: list
    coord_names: list

    @classmethod
    def from_op(cls, op) -> "Delinearize":
        op = op.operation if hasattr(op, "operation") else op
        if op.name != "kern.delinearize":
            raise KeyError(op.name)
        (linear,), extents = _groups(op)  # DelinearizeOp: linear, extents
        coords = list(op.results)
        attrs = op.attributes
        names = ([ir.StringAttr(a).value for a in ir.ArrayAttr(attrs[COORD_NAMES_ATTR])]
                 if COORD_NAMES_ATTR in attrs else [f"x{n}" for n in range(len(coords))])
        return cls(op=op, linear=linear, extents=extents, coords=coords, coord_names=names)
