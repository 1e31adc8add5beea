"""``kern-to-gpu``: wrap each kern kernel (``func.func`` with ``kern.signature``) into a ``gpu.func``.

The per-thread body of item ``t`` becomes the body of a ``gpu.func ... kernel`` inside
``gpu.module @kernels`` with:

- buffer arguments moved to the global address space (``memref<?xT, #gpu.address_space<global>>``) so
  PTX uses ``ld.global``/``st.global``;
- ``t = block_id.x * B + thread_id.x`` with the block size ``B`` a constant (``known_block_size``);
- the whole body under the guard ``scf.if t < P`` (unsigned compare; ``P`` the problem size), so the
  threads of the last block past ``P`` do nothing of their own;
- the thread builtins replaced: ``kern.thread_id`` -> ``t``, ``kern.block_id`` -> ``gpu.block_id x``,
  ``kern.block_dim`` -> ``B``, ``kern.lane_id`` -> ``gpu.lane_id``, ``kern.problem_size`` -> ``P``.

The result is the gpu IR of ``docs/gpu-ir.md``, which the CPU interpreter executes.
"""

from __future__ import annotations

from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.mlir import dialect, ir

from .base import Pass, walk_ops
from .lower_accessors import index_const

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


def problem_size_value(sig: KernelSignature, args) -> ir.Value:
    """The ``index`` value of ``P``: a size-symbol argument or an integer scalar param."""
    names = sig.arg_names
    value = args[names.index(sig.problem_size)]
    if isinstance(value.type, ir.IndexType):
        return value
    dtype = sig.param(sig.problem_size).dtype
    cast = arith.IndexCastUIOp if dtype.startswith("u") else arith.IndexCastOp
    return cast(ir.IndexType.get(), value).result


class OutlineToGpu(Pass):
    """Move every kern kernel into ``gpu.module @kernels`` as a guarded ``gpu.func``."""

    name = "kern-to-gpu"
    summary = "wrap kern kernels into gpu.func with thread indexing and the t < P guard"

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
            bid = gpu.BlockIdOp(gpu.Dimension.x).result
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            t = arith.AddIOp(arith.MulIOp(bid, index_const(block_size)).result, tid).result
            p = problem_size_value(sig, list(entry.arguments))
            guard = arith.CmpIOp(arith.CmpIPredicate.ult, t, p).result
            if_op = scf.IfOp(guard)
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
        builtins = {
            "kern.thread_id": lambda: t,
            "kern.problem_size": lambda: p,
            "kern.block_id": lambda: bid,
            "kern.block_dim": lambda: index_const(block_size),
            "kern.lane_id": lambda: gpu.LaneIdOp().result,
        }
        for op in walk_ops(gfn, set(builtins)):
            with ir.InsertionPoint(op), op.location:
                value = builtins[op.name]()
            op.results[0].replace_all_uses_with(value)
            op.erase()
