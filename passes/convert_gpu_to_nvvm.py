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
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import ir

from .base import UpstreamPass, functions

#: What a kernel function is renamed to while the upstream conversion names its workgroup globals.
MARK = "$"


def compiler_pipeline(index_bits: int = 32) -> str:
    """The upstream pipeline the compiler runs (``passes/pipeline.py``), for ``index`` of
    ``index_bits`` bits."""
    return ("gpu.module(convert-scf-to-cf,"
            f"convert-gpu-to-nvvm{{index-bitwidth={index_bits}}},"
            "reconcile-unrealized-casts)")


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
        finally:
            if renamed:
                back = {name + MARK: name for name in renamed}
                for fn in functions(module, {"gpu.func", "llvm.func"}):
                    name = ir.StringAttr(fn.attributes["sym_name"]).value
                    if name in back:
                        fn.attributes["sym_name"] = ir.StringAttr.get(back[name])
