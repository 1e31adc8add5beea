"""``kern-dynamic-workgroup-memory``: a kernel's workgroup buffers over 48 KiB as views of one dynamic
workgroup buffer.

The passes before it give a ``gpu.func`` its workgroup buffers as *workgroup attributions* (static
shared memory: ``.shared`` arrays in the PTX, at most 48 KiB a block, CUDA C++ Programming Guide,
"Shared Memory"). A kernel that needs more takes it as *dynamic* workgroup memory, whose size the
launch gives (``cuLaunchKernel``'s ``sharedMemBytes``) after opting the kernel in
(``cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes)``, CUDA Driver API,
"Execution Control": up to the device's ``MAX_SHARED_MEMORY_PER_BLOCK_OPTIN``). For such a kernel
this pass replaces the attributions by one ``gpu.dynamic_shared_memory : memref<?xi8,
#gpu.address_space<workgroup>>`` (the upstream gpu dialect op; ``convert-gpu-to-nvvm`` lowers it to
the address of an ``llvm.mlir.global @__dynamic_shmem__N`` of type ``!llvm.array<0 x i8>`` in address
space 3, an unsized ``.shared`` array in the PTX) and a ``memref.view`` of it per attribution, in
attribution order, at byte offsets each buffer's alignment rounds up to: its ``llvm.align`` (1024
for the 128B-swizzled tiles of ``kern-wgmma-contractions``: the swizzle repeats every 1024 bytes of
shared address, PTX ISA 9.7.15.5.1, and TMA writes it so, 9.7.9.27.1.2), else the element's own
size. The convert-gpu-to-nvvm wrapper gives the global a 1024-byte alignment
(``passes/convert_gpu_to_nvvm.py``), so every offset's alignment is the address's. The bytes (the
last buffer's end) go into the kernel signature (``KernelSignature.dynamic_shared_bytes``), which
the launchers read: the CUDA launcher's ``sharedMemBytes`` and opt-in (``backend/cuda.py``), the CPU
interpreter's size of the buffer (``backend/interpreter/memory.py``, bounds and race checks as for
an attribution).

Kernels whose buffers fit in 48 KiB keep their attributions: their gpu IR and PTX are the same as
without the pass. A kernel over its target's opt-in maximum
(:func:`~kernc.passes.workgroup.optin_limit`: 227 KiB on ``sm_90``/``sm_90a``, 163 KiB on ``sm_80``,
99 KiB on ``sm_86``/``sm_89``), or over 48 KiB with the pass off (``dynamic=False``), is a located
``CompileError``. Off with ``kernc compile --no-dynamic-shared-memory`` /
``CompileOptions(dynamic_shared_memory=False)``: then the passes that size workgroup buffers keep
within 48 KiB as before (``kern-wgmma-contractions`` builds fewer TMA stages, with a remark).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.support.errors import CompileError, Diagnostic
from kernc.support.mlir import ir

from . import ir_builder as b
from .base import Pass, functions, internal, option
from .targets import PTX_VERSION
from .workgroup import SHARED_LIMIT, emit_remark, optin_limit, source_location

#: The alignment (bytes) of the dynamic workgroup buffer's base: the largest a kernc pass declares
#: (the 128B swizzle's 1024-byte repeat).
BASE_ALIGN = 1024


def workgroup_buffers(fn) -> list[tuple]:
    """The workgroup attributions of ``gpu.func`` ``fn``: ``(block argument, bytes, alignment)`` each,
    in order (alignment: the ``llvm.align`` of ``workgroup_attrib_attrs``, else the element's bytes)."""
    n = ir.IntegerAttr(fn.attributes["workgroup_attributions"]).value if "workgroup_attributions" in fn.attributes else 0
    if not n:
        return []
    entry = fn.regions[0].blocks[0]
    nargs = len(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).inputs)
    attrs = ir.ArrayAttr(fn.attributes["workgroup_attrib_attrs"]) if "workgroup_attrib_attrs" in fn.attributes else None
    out = []
    for k in range(n):
        arg = entry.arguments[nargs + k]
        t = ir.MemRefType(arg.type)
        elem = max(1, b.bits(t.element_type) // 8)
        size = elem
        for d in t.shape:
            size *= d
        align = elem
        if attrs is not None and k < len(attrs):
            d = ir.DictAttr(attrs[k])
            if "llvm.align" in d:
                align = max(align, ir.IntegerAttr(d["llvm.align"]).value)
        out.append((arg, size, align))
    return out


def layout(sizes_aligns) -> tuple[list[int], int]:
    """The byte offsets of buffers ``(bytes, alignment)`` placed in order, each at the next multiple
    of its alignment, and the total bytes (the last one's end)."""
    offsets, at = [], 0
    for size, align in sizes_aligns:
        at = -(-at // align) * align
        offsets.append(at)
        at += size
    return offsets, at


@dataclass
class DynamicWorkgroupMemory(Pass):
    """Carve the workgroup buffers of a kernel that needs more than 48 KiB from one
    ``gpu.dynamic_shared_memory`` buffer (``memref.view`` at aligned byte offsets), its size in the
    kernel signature; a located error past the target's opt-in maximum."""

    name = "kern-dynamic-workgroup-memory"
    summary = "workgroup buffers over 48 KiB as memref.view of one gpu.dynamic_shared_memory buffer"

    #: the target (``kernc compile --arch``): its opt-in maximum bounds the dynamic buffer
    arch: str = option("sm_90", choices=tuple(PTX_VERSION))
    #: use dynamic workgroup memory over 48 KiB (``False``: ``--no-dynamic-shared-memory``, 48 KiB
    #: of static memory at most)
    dynamic: bool = option(True)
    #: a callable that receives each one-line remark (``kernc compile --remarks``), or ``None``
    remarks: Callable[[str], None] | None = internal(None)

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        limit = optin_limit(self.arch) if self.dynamic else SHARED_LIMIT
        for fn in functions(module, {"gpu.func"}):
            bufs = workgroup_buffers(fn)
            if not bufs:
                continue
            offsets, total = layout([(n, a) for _, n, a in bufs])
            if total <= SHARED_LIMIT:
                continue  # static workgroup memory, as without the pass
            name = ir.StringAttr(fn.attributes["sym_name"]).value
            if total > limit:
                parts = ", ".join(f"{n} bytes at {o}" for (_, n, _), o in zip(bufs, offsets))
                where = (f"the {limit} bytes a block may use on {self.arch} with the opt-in to dynamic "
                         "workgroup memory" if self.dynamic else
                         f"the {SHARED_LIMIT} bytes (48 KiB) of static workgroup memory a block may use "
                         "(dynamic workgroup memory is off: --no-dynamic-shared-memory)")
                raise CompileError(Diagnostic(
                    f"kernel '{name}' needs {total} bytes of workgroup memory ({parts}), more than {where}",
                    source_location(fn.location),
                    hint="use a smaller @block or @tile, fewer --tma-stages, or an architecture with more "
                         "shared memory per block"))
            self._carve(fn, bufs, offsets, total)
            emit_remark(self.remarks, fn, f"kernel '{name}' uses {total} bytes of dynamic workgroup memory "
                        f"(over the 48 KiB static limit; the launch opts in, up to {limit} bytes on "
                        f"{self.arch}): its {len(bufs)} workgroup buffers are memref.view of one "
                        f"gpu.dynamic_shared_memory buffer at byte offsets {', '.join(map(str, offsets))}")

    def _carve(self, fn, bufs, offsets, total: int) -> None:
        entry = fn.regions[0].blocks[0]
        space = ir.Attribute.parse("#gpu.address_space<workgroup>")
        i8 = ir.IntegerType.get_signless(8)
        dyn_t = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], i8, memory_space=space)
        first = entry.operations[0]
        with ir.InsertionPoint(first), fn.location:
            dyn = ir.Operation.create("gpu.dynamic_shared_memory", results=[dyn_t]).result
            for (arg, _, _), off in zip(bufs, offsets):
                view = ir.Operation.create("memref.view", results=[arg.type],
                                           operands=[dyn, b.idx(off)]).result
                arg.replace_all_uses_with(view)
        nargs = len(ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).inputs)
        for _ in bufs:
            entry.erase_argument(nargs)
        del fn.attributes["workgroup_attributions"]
        if "workgroup_attrib_attrs" in fn.attributes:
            del fn.attributes["workgroup_attrib_attrs"]
        if SIGNATURE_ATTR in fn.attributes:
            sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
            sig.dynamic_shared_bytes = total
            fn.attributes[SIGNATURE_ATTR] = ir.StringAttr.get(sig.to_json())


__all__ = ["DynamicWorkgroupMemory", "workgroup_buffers", "layout", "BASE_ALIGN"]
