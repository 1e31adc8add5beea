"""``kern-relax-atomics``: kernc's atomics are relaxed and device-scoped (CUDA ``atomicAdd``).

``memref.atomic_rmw`` lowers to ``llvm.atomicrmw ... acq_rel`` at system scope
(``atom.acq_rel.sys``), a far stronger and slower operation than accumulation needs. After the NVVM
conversion this pass sets every ``llvm.atomicrmw`` inside a ``gpu.module`` to ``monotonic`` ordering
with ``syncscope("device")``, which the NVPTX backend emits as ``atom.relaxed.gpu`` (PTX ISA,
"Memory Consistency Model": relaxed, ``.gpu`` scope) -- the semantics of CUDA's ``atomicAdd``.
An atomic on workgroup memory (``!llvm.ptr<3>``: ``kern-privatize-atomics``' per-block copies) is
seen by its block only, so it gets ``syncscope("block")`` (``atom.relaxed.cta.shared``, CUDA's
``atomicAdd_block``).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import ir

from .base import Pass, functions, walk_ops

#: ``LLVM::AtomicOrdering::monotonic`` (LLVM's name for C++ ``memory_order_relaxed``).
MONOTONIC = 2


@dataclass
class RelaxAtomics(Pass):
    """Make every ``llvm.atomicrmw`` in the GPU modules relaxed and device-scoped (block-scoped on
    workgroup memory)."""

    name = "kern-relax-atomics"
    summary = "atomics: monotonic ordering, syncscope(\"device\")"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for gm in functions(module, {"gpu.module"}):
            for op in walk_ops(gm, {"llvm.atomicrmw"}):
                op.attributes["ordering"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), MONOTONIC)
                shared = str(op.operands[0].type) == "!llvm.ptr<3>"
                op.attributes["syncscope"] = ir.StringAttr.get("block" if shared else "device")
