"""Builders for the few LLVM-dialect ops kernc's own passes create.

The generated ``dialects.llvm`` Python module defines a class for each of the LLVM dialect's several
hundred ops and enums; importing it costs ~15 ms, about a tenth of a cold ``kernc compile``. kernc
creates a handful of LLVM ops, so it builds them here in the generic form with
``ir.Operation.create`` (the same IR as the generated builders, checked by the verifier). Each
builder inserts at the current insertion point with the current location, like the generated ones.
Attribute spellings: the ``LLVMOps.td`` op definitions of MLIR 23.
"""

from __future__ import annotations

from kernc.support.mlir import ir

#: ``LLVM::AtomicOrdering`` values (``llvm/Support/AtomicOrdering.h``, mirrored by MLIR's
#: ``AtomicOrdering`` enum attribute, stored as an ``i64``).
ACQ_REL = 6


def _create(name: str, results=(), operands=(), attributes=None) -> ir.Operation:
    return ir.Operation.create(name, results=list(results), operands=list(operands),
                               attributes=attributes or {})


def constant(type_: ir.Type, value: int) -> ir.Value:
    """``llvm.mlir.constant(value : type_) : type_`` for an integer ``type_``."""
    return _create("llvm.mlir.constant", [type_],
                   attributes={"value": ir.IntegerAttr.get(type_, value)}).result


def undef(type_: ir.Type) -> ir.Value:
    """``llvm.mlir.undef : type_``."""
    return _create("llvm.mlir.undef", [type_]).result


def insertvalue(container: ir.Value, value: ir.Value, position: list[int]) -> ir.Value:
    """``llvm.insertvalue value, container[position]``: ``container`` (a struct/array value) with the
    element at ``position`` (one index per nesting level) replaced by ``value``."""
    return _create("llvm.insertvalue", [container.type], [container, value],
                   {"position": ir.DenseI64ArrayAttr.get(list(position))}).result


def intrinsic(name: str, result_type: ir.Type, operands: list[ir.Value]) -> ir.Value:
    """An ``llvm.intr.*`` op ``name`` (``"llvm.intr.sqrt"``, ``"llvm.intr.fma"``) without fast-math
    flags, so every one rounds as IEEE 754 says (``sqrt.rn``, ``fma.rn`` on NVPTX)."""
    return _create(name, [result_type], operands).result


def fence_acq_rel(syncscope: str = "device") -> ir.Operation:
    """``llvm.fence syncscope(syncscope) acq_rel`` (``"device"`` becomes PTX ``fence.acq_rel.gpu``)."""
    i64 = ir.IntegerType.get_signless(64)
    return _create("llvm.fence", attributes={"ordering": ir.IntegerAttr.get(i64, ACQ_REL),
                                             "syncscope": ir.StringAttr.get(syncscope)})
