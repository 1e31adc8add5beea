"""``kern-lower-layouts``: ``kern.layout_apply`` and ``kern.swizzle`` -> ``index`` arithmetic.

A flat strided layout maps coordinate ``c`` to ``sum_k c_k * d_k`` (CuTe, ``02_layout_algebra.md``);
each stride ``d_k`` is a polynomial over size symbols (``dialect/strided.py``) whose symbols are the
op's ``sizes`` operands. Static strides become constants: a stride of 0 drops the term, 1 adds the
coordinate itself, a power of two ``2^k`` is a left shift by ``k`` (exact for negative coordinates
too: two's complement), others a multiplication.

``kern.swizzle`` (CuTe ``Sw<B,M,S>``): ``x ^ ((x & yyy_mask) >> S)`` with
``yyy_mask = ((1<<B)-1) << (M + max(0,S))`` (a left shift by ``-S`` for negative ``S``).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.dialect.access import Coordinates
from kernc.dialect.poly_arith import emit_poly
from kernc.support.mlir import dialect, ir

from .base import Pass, walk_ops
from .ir_builder import idx as index_const

arith = dialect("arith")


@dataclass
class LowerLayouts(Pass):
    """Replace every ``kern.layout_apply`` with the dot product of coordinates and strides, and every
    ``kern.swizzle`` with its xor/and/shift."""

    name = "kern-lower-layouts"
    summary = "lower kern.layout_apply and kern.swizzle to index arithmetic"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for op in walk_ops(module, {"kern.layout_apply", "kern.swizzle"}):
            (self._swizzle if op.name == "kern.swizzle" else self._layout_apply)(op)

    @staticmethod
    def _layout_apply(op) -> None:
        apply = Coordinates.from_op(op)
        coords, layout = apply.coords, apply.layout
        env = dict(zip(apply.syms, apply.sizes))
        with ir.InsertionPoint(op), op.location:
            offset = None
            for c, d in zip(coords, layout.stride):
                if d.is_const and d.value == 0:
                    continue
                if d.is_const and d.value == 1:
                    term = c
                elif d.is_const and d.value > 0 and d.value & (d.value - 1) == 0:
                    term = arith.ShLIOp(c, index_const(d.value.bit_length() - 1)).result
                else:
                    term = arith.MulIOp(c, emit_poly(d, env)).result
                offset = term if offset is None else arith.AddIOp(offset, term).result
            if layout.start.terms:  # a plane of Caspar's storage (dialect/strided.py)
                start = emit_poly(layout.start, env)
                offset = start if offset is None else arith.AddIOp(offset, start).result
            if offset is None:
                offset = index_const(0)
        op.results[0].replace_all_uses_with(offset)
        op.erase()

    @staticmethod
    def _swizzle(op) -> None:
        bits, base, shift = (ir.IntegerAttr(op.attributes[k]).value for k in ("bits", "base", "shift"))
        x = op.operands[0]
        with ir.InsertionPoint(op), op.location:
            mask = ((1 << bits) - 1) << (base + max(0, shift))
            y = arith.AndIOp(x, index_const(mask)).result
            if shift > 0:
                y = arith.ShRUIOp(y, index_const(shift)).result
            elif shift < 0:
                y = arith.ShLIOp(y, index_const(-shift)).result
            out = arith.XOrIOp(x, y).result
        op.results[0].replace_all_uses_with(out)
        op.erase()
