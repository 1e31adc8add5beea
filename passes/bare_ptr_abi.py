"""``kern-bare-ptr-abi``: ``gpu.func`` buffer arguments become plain global pointers.

Upstream ``convert-gpu-to-nvvm`` expands every dynamic 1-D memref argument into the 5-field descriptor
ABI (allocated ptr, aligned ptr, offset, size, stride) -- five PTX params per buffer. kernc kernels
take one ``!llvm.ptr<1>`` per buffer instead (what CUDA C++ kernels take), and rebuild the descriptor
inside the kernel from the pointer (offset 0, stride 1; the size field is unused by loads and stores),
joined to the old memref uses with ``builtin.unrealized_conversion_cast``, which
``reconcile-unrealized-casts`` removes after the NVVM conversion.

The descriptor's integer fields use the index bitwidth of the NVVM conversion (``index_bits``).
With ``align`` (bytes), every pointer argument carries ``llvm.align``: the launcher has checked that
each buffer's address is a multiple of it, so LLVM may use 16-byte vector loads and stores
(``ld.global.v4``) -- vectorisation only where alignment is proven.

Runs after the gpu IR stage (the interpreter never sees it).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import dialect, ir

from . import llvm_ops as llvm
from .base import Pass, functions, option

builtin = dialect("builtin")


@dataclass
class BarePointerABI(Pass):
    """Rewrite memref kernel arguments to ``!llvm.ptr<1>`` plus an in-kernel descriptor.

    ``index_bits``: the width of ``index`` in the NVVM conversion that follows (32, the pipeline's
    default, or 64); ``align``: the byte alignment every pointer argument is declared to have (0:
    none declared)."""

    name = "kern-bare-ptr-abi"
    summary = "pass gpu.func buffers as !llvm.ptr<1> instead of memref descriptors"

    index_bits: int = option(32, choices=(32, 64))
    align: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.align < 0 or self.align & (self.align - 1):
            raise ValueError(f"{self.name}: align must be 0 or a power of two, got {self.align}")

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn in functions(module, {"gpu.func"}):
            if "kernel" in fn.attributes or "gpu.kernel" in fn.attributes:
                self._rewrite(fn)

    def _rewrite(self, fn) -> None:
        entry = fn.regions[0].blocks[0]
        first = entry.operations[0]
        ptr_t = ir.Type.parse("!llvm.ptr<1>")
        ity = ir.IntegerType.get_signless(self.index_bits)
        n = self.index_bits
        desc_t = ir.Type.parse(f"!llvm.struct<(ptr<1>, ptr<1>, i{n}, array<1 x i{n}>, array<1 x i{n}>)>")
        new_inputs = []
        n_inputs = len(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).inputs)
        # only the function's inputs; workgroup/private attributions follow them as block arguments
        for arg in list(entry.arguments)[:n_inputs]:
            if not isinstance(arg.type, ir.MemRefType):
                new_inputs.append(arg.type)
                continue
            memref_t = arg.type
            with ir.InsertionPoint(first), fn.location:
                cast = builtin.UnrealizedConversionCastOp([memref_t], [arg])
            arg.replace_all_uses_except(cast.results[0], cast.operation)
            arg.set_type(ptr_t)
            with ir.InsertionPoint(cast.operation), fn.location:
                zero = llvm.constant(ity, 0)
                one = llvm.constant(ity, 1)
                d = llvm.undef(desc_t)
                d = llvm.insertvalue(d, arg, [0])
                d = llvm.insertvalue(d, arg, [1])
                d = llvm.insertvalue(d, zero, [2])
                d = llvm.insertvalue(d, zero, [3, 0])
                d = llvm.insertvalue(d, one, [4, 0])
            cast.operation.operands[0] = d
            new_inputs.append(ptr_t)
        fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(new_inputs, []))
        if self.align:
            # the launcher checked every buffer's address: let LLVM assume it (and vectorise)
            i64 = ir.IntegerType.get_signless(64)
            attrs = [
                ir.DictAttr.get({"llvm.align": ir.IntegerAttr.get(i64, self.align)}) if t == ptr_t
                else ir.DictAttr.get({})
                for t in new_inputs
            ]
            fn.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)
