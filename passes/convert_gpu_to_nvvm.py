"""``convert-gpu-to-nvvm`` with workgroup globals whose names no kernel can take.

Upstream ``convert-gpu-to-nvvm`` turns the workgroup attributions of a ``gpu.func @g`` into
``llvm.mlir.global @__wg_g_<n>`` (MLIR's ``GPUFuncOpLowering``, name ``__wg_<function>_<n>``), in
the symbol table of the ``gpu.module`` that holds the kernels: a kernel named ``__wg_g_0`` beside
a kernel ``g`` that stages through workgroup memory made the conversion fail ("redefinition of
symbol"). Around the upstream pipeline, every ``gpu.func`` with workgroup attributions is renamed
``g$`` and renamed back after, so its globals are ``__wg_g$_<n>``: ``$`` is a PTX identifier
character (PTX ISA, "Identifiers": ``[a-zA-Z0-9_$]``) that no ``.kern`` name contains, so no kernel
name can equal one, and the ``$`` ends the function's part of the name, so two kernels' globals
never share one either.

The global upstream makes for ``gpu.dynamic_shared_memory`` (``@__dynamic_shmem__<n>``, an
``!llvm.array<0 x i8>`` in address space 3: MLIR's ``GPUDynamicSharedMemoryOpLowering``, aligned to
16 bytes, ``NVVM::kSharedMemoryAlignmentBit``) is given :data:`DYNAMIC_ALIGN`: the byte offsets
``kern-dynamic-workgroup-memory`` carves its buffers at are aligned up to 1024 (the 128B-swizzled
wgmma/TMA tiles), which they are in the address only with the base aligned so.
"""

from __future__ import annotations

from dataclasses import dataclass

import re

from kernc.support.mlir import ir

from . import llvm_ops
from .base import UpstreamPass, functions, walk_ops

#: What a kernel function is renamed to while the upstream conversion names its workgroup globals.
MARK = "$"
#: The alignment (bytes) of the dynamic workgroup memory's global (``.extern .shared .align 1024``).
DYNAMIC_ALIGN = 1024
#: The name upstream gives the globals of ``gpu.dynamic_shared_memory`` (``__dynamic_shmem__<n>``).
DYNAMIC_PREFIX = "__dynamic_shmem__"


def compiler_pipeline(index_bits: int = 32) -> str:
    """The upstream pipeline the compiler runs (``passes/pipeline.py``), for ``index`` of
    ``index_bits`` bits."""
    # convert-nvgpu-to-nvvm: kern-mma-contractions' nvgpu.ldmatrix / nvgpu.mma.sync (a no-op without);
    # convert-nvvm-to-llvm: the NVVM ops LLVM has no intrinsic for, as inline PTX (kern-wgmma-
    # contractions' nvvm.wgmma.mma_async; a no-op without)
    return ("gpu.module(convert-scf-to-cf,"
            f"convert-gpu-to-nvvm{{index-bitwidth={index_bits}}},convert-nvgpu-to-nvvm,"
            "convert-nvvm-to-llvm,reconcile-unrealized-casts)")


@dataclass
class ConvertGpuToNVVM(UpstreamPass):
    """The upstream ``pipeline`` (``gpu.module(convert-scf-to-cf, convert-gpu-to-nvvm, ...)``,
    the compiler's by default) run with the workgroup-global names above; its ``name`` is the
    pipeline's, as for any :class:`~kernc.passes.base.UpstreamPass`."""

    pipeline: str = compiler_pipeline()

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        renamed = []
        for fn in functions(module, {"gpu.func"}):
            if "workgroup_attributions" in fn.attributes \
                    and ir.IntegerAttr(fn.attributes["workgroup_attributions"]).value:
                name = ir.StringAttr(fn.attributes["sym_name"]).value
                fn.attributes["sym_name"] = ir.StringAttr.get(name + MARK)
                renamed.append(name)
        try:
            super().apply(ctx, module)
            widen_nvgpu_index_casts(module)
            align_dynamic_shared_memory(module)
        finally:
            if renamed:
                back = {name + MARK: name for name in renamed}
                for fn in functions(module, {"gpu.func", "llvm.func"}):
                    name = ir.StringAttr(fn.attributes["sym_name"]).value
                    if name in back:
                        fn.attributes["sym_name"] = ir.StringAttr.get(back[name])


def align_dynamic_shared_memory(module: ir.Module) -> None:
    """Give every ``llvm.mlir.global @__dynamic_shmem__<n>`` (the lowered ``gpu.dynamic_shared_memory``)
    the alignment :data:`DYNAMIC_ALIGN` and external linkage (a module without one is left as it
    is). External: the NVPTX backend prints an external global without initializer as ``.extern
    .shared .align 1024 .b8 __dynamic_shmem__0[]``, the PTX of dynamic shared memory (PTX ISA,
    "Variable declarations": an ``.extern .shared`` array of unspecified size starts at the dynamic
    shared memory); upstream's ``internal`` global printed as a one-byte *static* ``.shared``
    variable (ptxas: "1 bytes smem"), the buffer's other bytes past it."""
    i64 = ir.IntegerType.get_signless(64)
    for g in walk_ops(module, {"llvm.mlir.global"}):
        if ir.StringAttr(g.attributes["sym_name"]).value.startswith(DYNAMIC_PREFIX):
            g.attributes["alignment"] = ir.IntegerAttr.get(i64, DYNAMIC_ALIGN)
            g.attributes["linkage"] = ir.Attribute.parse("#llvm.linkage<external>")


_DESCRIPTOR = re.compile(r"!llvm\.struct<\(ptr(<\d+>)?, ptr(<\d+>)?, i(\d+), array<(\d+) x i\d+>, array<\d+ x i\d+>\)>")


def widen_nvgpu_index_casts(module: ir.Module) -> None:
    """Resolve the casts between ``convert-gpu-to-nvvm{index-bitwidth=32}`` and
    ``convert-nvgpu-to-nvvm`` (which has no index-bitwidth option: its ``index`` is 64 bits): a pair
    of ``unrealized_conversion_cast`` s ``i32 -> index -> i64`` becomes ``llvm.sext`` (``index`` is
    signed), and one from a 32-bit memref descriptor to a 64-bit one (the ``nvgpu.ldmatrix``
    source) the same descriptor with its offset, sizes and strides sign-extended. Other casts are
    left alone (``reconcile-unrealized-casts`` ran already; a left one still fails translation)."""
    i64 = ir.IntegerType.get_signless(64)
    for cast in walk_ops(module, {"builtin.unrealized_conversion_cast"}):
        if len(cast.operands) != 1 or len(cast.results) != 1:
            continue
        inner = cast.operands[0].owner
        inner = inner.operation if hasattr(inner, "operation") else inner
        if not isinstance(inner, ir.Operation) or inner.name != "builtin.unrealized_conversion_cast" \
                or len(inner.operands) != 1:
            continue
        src, dst = inner.operands[0], cast.results[0]
        s_t, d_t = str(src.type), str(dst.type)
        with ir.InsertionPoint(cast), cast.location:
            if s_t == "i32" and d_t == "i64":
                new = _sext(src, i64)
            else:
                ms, md = _DESCRIPTOR.fullmatch(s_t), _DESCRIPTOR.fullmatch(d_t)
                if not (ms and md and ms.group(3) == "32" and md.group(3) == "64"
                        and ms.group(4) == md.group(4)):
                    continue
                new = llvm_ops.undef(dst.type)
                for pos in ([0], [1]):
                    new = llvm_ops.insertvalue(new, _extract(src, pos), pos)
                for pos in [[2]] + [[f, d] for f in (3, 4) for d in range(int(ms.group(4)))]:
                    new = llvm_ops.insertvalue(new, _sext(_extract(src, pos), i64), pos)
        dst.replace_all_uses_with(new)
        cast.erase()
        if not list(inner.results[0].uses):
            inner.erase()


def _sext(v: ir.Value, to: ir.Type) -> ir.Value:
    return ir.Operation.create("llvm.sext", results=[to], operands=[v]).result


def _extract(container: ir.Value, pos: list) -> ir.Value:
    """``llvm.extractvalue container[pos]`` of a memref descriptor: field 0 and 1 pointers, 2 the
    offset, ``[3, d]`` / ``[4, d]`` the sizes and strides (integers of the offset's width)."""
    m = _DESCRIPTOR.fullmatch(str(container.type))
    t = ir.Type.parse(f"!llvm.ptr{m.group(pos[0] + 1) or ''}") if pos[0] < 2 \
        else ir.IntegerType.get_signless(int(m.group(3)))
    return ir.Operation.create("llvm.extractvalue", results=[t], operands=[container],
                               attributes={"position": ir.DenseI64ArrayAttr.get(list(pos))}).result
