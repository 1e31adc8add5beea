"""``kern-lower-accessors``: accessor ops -> element index + ``kern.layout_apply`` + ``memref`` ops.

For each ``kern.read`` / ``kern.write`` / ``kern.add`` the pass computes the element index ``e`` that
thread ``t`` reaches (``shared/design/accessors.md``):

- ``sequential``: ``e = t``;
- ``strided(off, s)``: ``e = off + t*s`` (signed ``index`` arithmetic);
- ``indexed(I)``: ``e = I[t]`` (an unsigned 32-bit load, zero-extended to ``index``);

then, for each component ``c``, the flat storage offset ``kern.layout_apply(e[, c])`` under the buffer's
layout, and a ``memref.load`` / ``memref.store`` (``add``: load, add, store -- a plain read-modify-write:
``add sequential/strided/indexed`` targets are unique per thread by definition).
The layout ops are turned into index arithmetic by ``kern-lower-layouts`` afterwards.
"""

from __future__ import annotations

from kernc.dialect import kern
from kernc.dialect.strided import StridedLayout
from kernc.mlir import dialect, ir

from .base import Pass, walk_ops

arith = dialect("arith")
memref = dialect("memref")

ACCESSOR_OPS = {"kern.read", "kern.write", "kern.add"}


def index_const(value: int) -> ir.Value:
    """An ``arith.constant`` of type ``index`` at the current insertion point."""
    idx = ir.IndexType.get()
    return arith.ConstantOp(idx, ir.IntegerAttr.get(idx, int(value))).result


def _segments(op) -> list[int]:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def element_index(op, accessor: str, args: list) -> ir.Value:
    """Emit the element index ``e`` thread ``t`` reaches through ``accessor`` (before ``op``)."""
    idx = ir.IndexType.get()
    t = kern.ThreadIdOp(idx).result
    if accessor == "sequential":
        return t
    if accessor == "strided":
        off, step = args
        return arith.AddIOp(off, arith.MulIOp(t, step).result).result
    if accessor == "indexed":
        (index_buf,) = args
        raw = memref.LoadOp(index_buf, [t]).result
        return arith.IndexCastUIOp(idx, raw).result
    raise ValueError(f"kern-lower-accessors: unknown accessor '{accessor}'")


def _add(a: ir.Value, b: ir.Value) -> ir.Value:
    if isinstance(a.type, ir.IntegerType):
        return arith.AddIOp(a, b).result
    return arith.AddFOp(a, b).result


class LowerAccessors(Pass):
    """Rewrite every accessor op into ``memref`` loads/stores at layout offsets."""

    name = "kern-lower-accessors"
    summary = "lower kern.read/write/add to memref ops at kern.layout_apply offsets"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for op in walk_ops(module, ACCESSOR_OPS):
            self._rewrite(op)

    def _rewrite(self, op) -> None:
        seg = _segments(op)
        operands = list(op.operands)
        buf = operands[0]
        args = operands[1:1 + seg[1]]
        sizes = operands[1 + seg[1]:1 + seg[1] + seg[2]]
        accessor = ir.StringAttr(op.attributes["accessor"]).value
        layout_text = ir.StringAttr(op.attributes["layout"]).value
        syms = [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes["syms"])]
        layout = StridedLayout.parse(layout_text)
        kind = op.name
        ncomp = len(op.results) if kind == "kern.read" else len(operands) - 1 - seg[1] - seg[2]
        values = operands[1 + seg[1] + seg[2]:]
        with ir.InsertionPoint(op), op.location:
            e = element_index(op, accessor, args)
            loaded = []
            for c in range(ncomp):
                coords = [e] if layout.rank == 1 else [e, index_const(c)]
                off = kern.layout_apply(coords, sizes, layout_text, syms)
                if kind == "kern.read":
                    loaded.append(memref.LoadOp(buf, [off]).result)
                elif kind == "kern.write":
                    memref.StoreOp(values[c], buf, [off])
                else:
                    old = memref.LoadOp(buf, [off]).result
                    memref.StoreOp(_add(old, values[c]), buf, [off])
        for old, new in zip(op.results, loaded):
            old.replace_all_uses_with(new)
        op.erase()
