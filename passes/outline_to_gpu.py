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
from kernc.support.mlir import dialect, ir

from .base import Pass, functions, walk_ops

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
DETERMINISTIC = "deterministic"
#: Accessors whose cross-block combination ``@deterministic`` reorders (``kern-lower-accessors``).
DETERMINISTIC_ACCESSORS = ("sum", "shared_sum")
_DTYPE_OF = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "i32": "i32", "i64": "i64",
             "i16": "i16", "i8": "i8"}


def _memref_of(dtype: str) -> ir.Type:
    elem = {"u32": ir.IntegerType.get_signless(32)}.get(dtype) or ir.Type.parse(
        dtype if not dtype.startswith(("u", "i")) else "i" + dtype[1:])
    return ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], elem)


def deterministic_extras(fn, sig: KernelSignature) -> list:
    """Hidden arguments of a ``@deterministic`` kernel: per ``sum``/``shared_sum`` output, the
    per-block partials and a block counter (scratch), and for ``shared_sum(I)`` the global merge
    tables of ``I`` (``backend/shared_indices.py``). They follow the size symbols."""
    from kernc.dialect.signature import Param

    names = sig.arg_names
    entry = fn.regions[0].blocks[0]
    extras: list = []
    seen: set = set()
    for op in walk_ops(fn, {"kern.write", "kern.add"}):
        accessor = ir.StringAttr(op.attributes["accessor"]).value
        if accessor not in DETERMINISTIC_ACCESSORS:
            continue
        buf = op.operands[0]
        pname = next(names[i] for i, a in enumerate(entry.arguments) if a == buf)
        seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        k = seg[3]
        dtype = _DTYPE_OF[str(op.operands[1 + seg[1] + seg[2]].type)]
        per_block = k if accessor == "sum" else k * int(sig.block)
        extras += [
            Param(f"{pname}.partials", "scratch", dtype, scratch_size=f"{per_block}*__grid"),
            Param(f"{pname}.counter", "scratch", "u32", scratch_size="1"),
        ]
        index = sig.param(pname).index_param
        if accessor == "shared_sum" and index not in seen:
            seen.add(index)
            extras += [Param(f"{index}.{f}", "table", "u32", table_of=index, table_field=f)
                       for f in ("gunique", "gstart", "gpos", "gcount")]
    return extras


class OutlineToGpu(Pass):
    """Move every kern kernel into ``gpu.module @kernels`` as a guarded ``gpu.func``."""

    name = "kern-to-gpu"
    summary = "wrap kern kernels into guarded gpu.func kernels"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        funcs = [
            op for op in functions(module, {"func.func"}) if SIGNATURE_ATTR in op.attributes
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
        if DETERMINISTIC in sig.attributes:
            sig.extra = deterministic_extras(fn, sig)
            inputs += [global_memref(_memref_of(p.dtype)) for p in sig.extra]
        with ir.InsertionPoint(gmod.bodyRegion.blocks[0]), fn.location:
            gfn = gpu.GPUFuncOp(
                ir.FunctionType.get(inputs, []),
                sym_name=name,
                kernel=True,
                known_block_size=[block_size, 1, 1],
            )
            gfn.attributes[SIGNATURE_ATTR] = ir.StringAttr.get(sig.to_json())
            entry = gfn.add_entry_block()
        with ir.InsertionPoint(entry), fn.location:
            t = kern.builtin("thread_id")
            p = kern.builtin("problem_size")
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
