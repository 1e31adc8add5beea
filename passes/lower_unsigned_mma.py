"""``kern-lower-unsigned-mma``: an ``nvgpu.mma.sync`` of unsigned 8-bit operands -> ``nvvm.mma.sync``
with ``.u8`` multiplicands, before ``convert-nvgpu-to-nvvm``.

The gpu IR has one ``i8`` type for both of kern's ``i8`` and ``u8``, and MLIR's
``convert-nvgpu-to-nvvm`` (MLIR 23) writes every integer ``nvgpu.mma.sync`` m16n8k32 as
``mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32``: a ``u8`` byte of 200 would be
multiplied as -56. ``kern-mma-contractions`` marks the ops of ``u8`` contractions with
:data:`~kernc.dialect.signature.PTX_TYPE_ATTR` ``"u8"`` (the CPU interpreter reads the same
attribute); this pass replaces each marked op by the ``nvvm.mma.sync`` the conversion would build,
with ``multiplicandAPtxType``/``multiplicandBPtxType`` ``u8``: PTX ISA 9.7.14.5.14 ("mma"),
``.m16n8k32`` with ``.atype``/``.btype`` ``.u8`` or ``.s8``, ``sm_80`` and later.

The operands are repacked as the conversion packs them (PTX ISA 9.7.14.5.10, "Matrix Fragments for
mma.m16n8k32"): each row of A's ``vector<4x4xi8>`` (B's ``vector<2x4xi8>``) is one 32-bit register,
its bytes in order; C's ``vector<2x2xi32>`` is ``c0 c1 / c2 c3`` and the result struct's four
``i32`` go back in that order. The ops built here are vector-dialect and LLVM-dialect ops that the
upstream ``convert-gpu-to-nvvm`` run after it lowers or keeps.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.dialect.signature import PTX_TYPE_ATTR
from kernc.support.mlir import ir, lazy_dialect

from .base import Pass, walk_ops

vector = lazy_dialect("vector")
nvvm = lazy_dialect("nvvm")


def _registers(frag: ir.Value, rows: int) -> list[ir.Value]:
    """The ``rows`` 32-bit registers of a ``vector<rows x 4 x i8>`` fragment, row by row."""
    i32 = ir.IntegerType.get_signless(32)
    out = []
    for r in range(rows):
        row = vector.ExtractOp(frag, [], [r]).result
        word = vector.BitCastOp(ir.VectorType.get([1], i32), row).result
        out.append(vector.ExtractOp(word, [], [0]).result)
    return out


def _extractvalue(struct: ir.Value, i: int, type_: ir.Type) -> ir.Value:
    return ir.Operation.create("llvm.extractvalue", results=[type_], operands=[struct],
                               attributes={"position": ir.DenseI64ArrayAttr.get([i])}).result


@dataclass
class LowerUnsignedMma(Pass):
    """Replace every ``nvgpu.mma.sync`` marked ``kern.ptx_type = "u8"`` (m16n8k32, ``vector<4x4xi8>``,
    ``vector<2x4xi8>``, ``vector<2x2xi32>``) by ``nvvm.mma.sync`` ``.satfinite.s32.u8.u8.s32``;
    ``ValueError`` (an internal compiler error) for a marked op of another shape or type."""

    name = "kern-lower-unsigned-mma"
    summary = "nvgpu.mma.sync of u8 operands (kern.ptx_type) -> nvvm.mma.sync .u8.u8 (nvgpu has .s8 only)"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for op in walk_ops(module, {"nvgpu.mma.sync"}):
            if PTX_TYPE_ATTR not in op.attributes:
                continue
            kind = ir.StringAttr(op.attributes[PTX_TYPE_ATTR]).value
            i8, i32 = ir.IntegerType.get_signless(8), ir.IntegerType.get_signless(32)
            types = [ir.VectorType(v.type) for v in op.operands[:3]]
            want = ([4, 4], i8), ([2, 4], i8), ([2, 2], i32)
            if (kind != "u8" or len(op.operands) != 3 or str(op.attributes["mmaShape"]) != "[16, 8, 32]"
                    or any(t.shape != s or t.element_type != e for t, (s, e) in zip(types, want))):
                raise ValueError(f"kern-lower-unsigned-mma: an nvgpu.mma.sync marked {kind!r} that is not "
                                 f"m16n8k32 of vector<4x4xi8>, vector<2x4xi8>, vector<2x2xi32>: {op}")
            with ir.InsertionPoint(op), op.location:
                a = _registers(op.operands[0], 4)
                bb = _registers(op.operands[1], 2)
                c = [vector.ExtractOp(op.operands[2], [], [r, col]).result for r in (0, 1) for col in (0, 1)]
                struct = ir.Type.parse("!llvm.struct<(i32, i32, i32, i32)>")
                u8 = ir.Attribute.parse("#nvvm.mma_type<u8>")
                d = nvvm.MmaOp(struct, ir.Attribute.parse("#nvvm.shape<m = 16, n = 8, k = 32>"),
                               ir.Attribute.parse("#nvvm.mma_layout<row>"),
                               ir.Attribute.parse("#nvvm.mma_layout<col>"), a, bb, c,
                               intOverflowBehavior=ir.Attribute.parse("#nvvm.mma_int_overflow<satfinite>"),
                               multiplicandAPtxType=u8, multiplicandBPtxType=u8).result
                acc = ir.VectorType.get([2, 2], i32)
                out = ir.Operation.create("arith.constant", results=[acc], attributes={
                    "value": ir.DenseElementsAttr.get_splat(acc, ir.IntegerAttr.get(i32, 0))}).result
                for i in range(4):
                    out = vector.InsertOp(_extractvalue(d, i, i32), out, [], [i >> 1, i & 1]).result
            op.results[0].replace_all_uses_with(out)
            op.erase()
