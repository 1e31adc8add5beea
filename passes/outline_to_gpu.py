"""``kern-to-gpu``: wrap each kern kernel (``func.func`` with ``kern.signature``) into a ``gpu.func``.

The per-thread body of item ``t`` becomes the body of a ``gpu.func ... kernel`` inside
``gpu.module @kernels`` with:

- buffer arguments moved to the global address space (``memref<?xT, #gpu.address_space<global>>``) so
  PTX uses ``ld.global``/``st.global``;
- ``known_block_size = [B, 1, 1]`` from the signature;
- the whole body under the guard ``scf.if t < P`` (unsigned compare; ``t`` = ``kern.thread_id``,
  ``P`` = ``kern.problem_size``), marked with the unit attribute ``kern.guard``: the threads of the
  last block past ``P`` do nothing of their own, but still take part in the block-wide steps that
  ``kern-lower-accessors`` places before and after the guard.

Accessor ops and thread builtins stay as they are; ``kern-lower-accessors`` and ``kern-lower-builtins``
lower them inside the ``gpu.func``.
"""

from __future__ import annotations

from kernc.dialect import kern
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.mlir import dialect, ir

from .base import Pass, walk_ops

arith = dialect("arith")
gpu = dialect("gpu")
scf = dialect("scf")

GPU_MODULE_NAME = "kernels"


def global_memref(t: ir.Type) -> ir.Type:
    """``memref<?xT>`` -> ``memref<?xT, #gpu.address_space<global>>``; other types unchanged."""
    if not isinstance(t, ir.MemRefType):
        return t
    space = ir.Attribute.parse("#gpu.address_space<global>")
    return ir.MemRefType.get(t.shape, t.element_type, memory_space=space)


GUARD_ATTR = "kern.guard"


class OutlineToGpu(Pass):
    """Move every kern kernel into ``gpu.module @kernels`` as a guarded ``gpu.func``."""

    name = "kern-to-gpu"
    summary = "wrap kern kernels into guarded gpu.func kernels"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        funcs = [
            op for op in walk_ops(module, {"func.func"}) if SIGNATURE_ATTR in op.attributes
        ]
        if not funcs:
            return
        module.operation.attributes["gpu.container_module"] = ir.UnitAttr.get()
        with ir.InsertionPoint(module.body), module.operation.location:
            gmod = gpu.GPUModuleOp(GPU_MODULE_NAME)
            gmod.bodyRegion.blocks.append()
        for fn in funcs:
            self._outline(fn, gmod)
            fn.erase()

    def _outline(self, fn, gmod) -> None:
        sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        inputs = [global_memref(t) for t in ftype.inputs]
        name = ir.StringAttr(fn.attributes["sym_name"]).value
        block_size = int(sig.block)
        with ir.InsertionPoint(gmod.bodyRegion.blocks[0]), fn.location:
            gfn = gpu.GPUFuncOp(
                ir.FunctionType.get(inputs, []),
                sym_name=name,
                kernel=True,
                known_block_size=[block_size, 1, 1],
            )
            gfn.attributes[SIGNATURE_ATTR] = fn.attributes[SIGNATURE_ATTR]
            entry = gfn.add_entry_block()
        with ir.InsertionPoint(entry), fn.location:
            idx = ir.IndexType.get()
            t = kern.ThreadIdOp(idx).result
            p = kern.ProblemSizeOp(idx).result
            guard = arith.CmpIOp(arith.CmpIPredicate.ult, t, p).result
            if_op = scf.IfOp(guard)
            if_op.attributes[GUARD_ATTR] = ir.UnitAttr.get()
            with ir.InsertionPoint(if_op.then_block):
                yield_op = scf.YieldOp([])
            gpu.ReturnOp([])
        old_entry = fn.regions[0].blocks[0]
        for old, new in zip(old_entry.arguments, entry.arguments):
            old.replace_all_uses_with(new)
        for op in list(old_entry.operations):
            if op.operation.name == "func.return":
                continue
            op.operation.move_before(yield_op)
