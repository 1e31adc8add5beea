"""``kern-libdevice-to-intrinsics``: libdevice calls with an exact LLVM intrinsic -> that intrinsic.

``convert-gpu-to-nvvm`` lowers every ``math`` op, and ``arith.minnumf``/``maxnumf``, to a call of the
libdevice function (``__nv_sqrtf``, ``__nv_fminf``, ``__nv_fmaf``, ...). For the functions below the
NVPTX backend has the same single PTX instruction as an LLVM intrinsic (PTX ISA: ``sqrt``, ``min``,
``max``, ``abs``, ``cvt`` with ``.rmi``/``.rpi``), so calling the intrinsic gives the same
result without linking (and optimising) the 480 KB ``libdevice.10.bc`` into the module, which costs
more than compiling a small kernel. Functions without one (``__nv_expf``, ``__nv_fmodf``, ...) stay
calls, and ``kern-attach-target`` links libdevice for them. ``math.fma`` never becomes a call:
``kern-lower-fma`` turns it into ``llvm.intr.fma`` before the conversion.

``sqrt`` is also a *semantic* choice: libdevice's ``__nv_sqrtf`` is ``sqrt.approx.f32`` unless the
``__CUDA_PREC_SQRT`` reflect flag is set, while ``llvm.sqrt`` becomes the correctly rounded
``sqrt.rn`` that the CPU interpreter computes (and CUDA's own default, ``-prec-sqrt=true``). libdevice
implements the others with the instructions the intrinsics select (``llvm.nvvm.fmin.f``,
``llvm.nvvm.fabs.f``, ``llvm.nvvm.floor.f``, ..., without ``.ftz``: kernc
never sets the ``__CUDA_FTZ`` flag). Runs after ``convert-gpu-to-nvvm``, which would turn these
intrinsics back into calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import ir

from . import llvm_ops
from .base import Pass, functions, walk_ops

#: libdevice function -> the LLVM-dialect intrinsic op with the same result (f32 and f64 names).
LIBDEVICE_INTRINSICS = {
    **dict.fromkeys(("__nv_sqrtf", "__nv_sqrt"), "llvm.intr.sqrt"),
    **dict.fromkeys(("__nv_fminf", "__nv_fmin"), "llvm.intr.minnum"),
    **dict.fromkeys(("__nv_fmaxf", "__nv_fmax"), "llvm.intr.maxnum"),
    **dict.fromkeys(("__nv_fabsf", "__nv_fabs"), "llvm.intr.fabs"),
    **dict.fromkeys(("__nv_floorf", "__nv_floor"), "llvm.intr.floor"),
    **dict.fromkeys(("__nv_ceilf", "__nv_ceil"), "llvm.intr.ceil"),
}


def callee(op) -> str | None:
    """The callee name of an ``llvm.call`` (``"__nv_sqrtf"``), ``None`` for an indirect call."""
    if "callee" not in op.attributes:
        return None
    return ir.FlatSymbolRefAttr(op.attributes["callee"]).value


@dataclass
class LibdeviceToIntrinsics(Pass):
    """Replace calls of :data:`LIBDEVICE_INTRINSICS` functions with the intrinsic and drop the
    declarations nothing calls any more."""

    name = "kern-libdevice-to-intrinsics"
    summary = "__nv_sqrtf/fminf/fmaxf/fabsf/floorf/ceilf calls -> llvm.intr.* (no libdevice link)"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        declared = {ir.StringAttr(fn.attributes["sym_name"]).value for fn in functions(module, {"llvm.func"})}
        if not declared & LIBDEVICE_INTRINSICS.keys():
            return  # a call needs its callee's declaration: none to replace (no walk over every op)
        called = set()
        for op in walk_ops(module, {"llvm.call"}):
            name = callee(op)
            intrinsic = LIBDEVICE_INTRINSICS.get(name)
            if intrinsic is None:
                called.add(name)
                continue
            with ir.InsertionPoint(op), op.location:
                new = llvm_ops.intrinsic(intrinsic, op.results[0].type, list(op.operands))
            op.results[0].replace_all_uses_with(new)
            op.erase()
        for fn in functions(module, {"llvm.func"}):
            name = ir.StringAttr(fn.attributes["sym_name"]).value
            if name in LIBDEVICE_INTRINSICS and name not in called and not fn.regions[0].blocks:
                fn.erase()

