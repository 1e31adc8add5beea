"""The code every accessor lowering builds for one element: its index, offsets, loads and stores.

An accessor op (``dialect/access.py``: :class:`~kernc.dialect.access.Access`) reaches element
``e`` of its buffer; component ``c`` of it lives at ``layout(e, c)`` (``kern.layout_apply``,
lowered by ``kern-lower-layouts``). Values are computed in the op's *compute* type and stored in
the buffer's *storage* type (``f16``/``bf16`` storage computes in ``f32``).
"""

from __future__ import annotations

from kernc.dialect import accessors, kern
from kernc.dialect.access import Access
from kernc.support.mlir import ir

from . import ir_builder as b
from .lower_layouts import emit_poly


def offset(acc: Access, e: ir.Value, c: int) -> ir.Value:
    """The flat offset of component ``c`` of element ``e``."""
    coords = [e] if acc.layout.rank == 1 else [e, b.idx(c)]
    return kern.layout_apply(coords, acc.sizes, acc.layout_text, acc.syms)


def load(acc: Access, e: ir.Value, c: int) -> ir.Value:
    """Component ``c`` of ``X[e]``, in the compute type."""
    return b.convert_float(b.load(acc.buffer, offset(acc, e, c)), acc.compute) if b.is_float(acc.compute) else b.load(acc.buffer, offset(acc, e, c))


def to_storage(acc: Access, v: ir.Value) -> ir.Value:
    """``v`` (compute type) as the buffer stores it."""
    return b.convert_float(v, acc.storage) if b.is_float(acc.storage) else v


def default_value(acc: Access) -> ir.Value:
    """The exact ``default`` attribute of a ``*_default`` read, as an ``arith.constant``."""
    return b.arith.ConstantOp(acc.compute, acc.default).result


def count(acc: Access) -> ir.Value:
    """Number of elements of the buffer's view (the layout's first mode)."""
    env = dict(zip(acc.syms, acc.sizes))
    return emit_poly(acc.layout.shape[0], env)


def element_index(acc: Access, t: ir.Value) -> ir.Value:
    """The element index item ``t`` reaches (the first of a ``pair``): ``t``, ``off + t*s`` or
    ``I[t]`` (:attr:`~kernc.dialect.accessors.AccessorKind.reach`); ``ValueError`` for the kinds
    whose element is not one of these (``shared`` reaches ``I[t]`` through its tables)."""
    if acc.kind.strided:
        off, step = acc.offset_stride
        return b.add(off, b.mul(t, step))
    if acc.index_param is not None:
        return b.index_cast_ui(b.load(acc.index_param, t))
    if acc.kind.reach in (accessors.Reach.ITEM, accessors.Reach.PAIR):
        return t
    raise ValueError(f"no element index for accessor '{acc.kind.name}'")


def load_default(acc: Access, e: ir.Value, c: int, default: ir.Value) -> ir.Value:
    """``X[e]`` component ``c`` if ``0 <= e < M`` else ``default`` (signed compare: e may be < 0)."""
    inb = b.and_(b.cmp("sge", e, b.idx(0)), b.cmp("slt", e, count(acc)))
    return b.if_else(inb, [acc.compute], lambda: [load(acc, e, c)], lambda: [default])[0]


def add_to(acc: Access, e: ir.Value, c: int, v: ir.Value) -> None:
    """``X[e] += v`` for component ``c`` as a plain read-modify-write (one writer)."""
    off = offset(acc, e, c)
    old = b.load(acc.buffer, off)
    new = b.add(b.convert_float(old, acc.compute), v) if b.is_float(acc.compute) else b.add(old, v)
    b.store(to_storage(acc, new), acc.buffer, off)
