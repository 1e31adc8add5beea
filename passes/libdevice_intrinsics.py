"""``kern-libdevice-to-intrinsics``: libdevice calls with an exact LLVM intrinsic -> that intrinsic.

``convert-gpu-to-nvvm`` lowers every ``math`` op, and ``arith.minnumf``/``maxnumf``, to a call of the
libdevice function (``__nv_sqrtf``, ``__nv_fminf``, ``__nv_fmaf``, ...). For the functions below the
NVPTX backend has the same single PTX instruction as an LLVM intrinsic (PTX ISA: ``sqrt``, ``min``,
``max``, ``abs``, ``cvt`` with ``.rmi``/``.rpi``, ``fma``), so calling the intrinsic gives the same
result without linking (and optimising) the 480 KB ``libdevice.10.bc`` into the module, which costs
more than compiling a small kernel. Functions without one (``__nv_expf``, ``__nv_fmodf``, ...) stay
calls, and ``kern-attach-target`` links libdevice for them.

``fma`` of ``f16``/``bf16`` values is lowered as ``fptrunc(__nv_fmaf(fpext a, fpext b, fpext c))``,
which rounds twice (to ``f32``, then to the narrow type) and can differ in the last bit from the
correctly rounded result the CPU interpreter computes; that sandwich becomes ``llvm.intr.fma`` on
the narrow type (PTX ``fma.rn.f16`` from sm_53, ``fma.rn.bf16`` from sm_80; before that LLVM promotes
``f16`` to an ``f64`` fma, still exact for ``f16`` operands, and ``bf16`` to ``f32``).

``sqrt`` is also a *semantic* choice: libdevice's ``__nv_sqrtf`` is ``sqrt.approx.f32`` unless the
``__CUDA_PREC_SQRT`` reflect flag is set, while ``llvm.sqrt`` becomes the correctly rounded
``sqrt.rn`` that the CPU interpreter computes (and CUDA's own default, ``-prec-sqrt=true``). libdevice
implements the others with the instructions the intrinsics select (``llvm.nvvm.fmin.f``,
``llvm.nvvm.fabs.f``, ``llvm.nvvm.floor.f``, ``llvm.nvvm.fma.rn.f``, ..., without ``.ftz``: kernc
never sets the ``__CUDA_FTZ`` flag). Runs after ``convert-gpu-to-nvvm``, which would turn these
intrinsics back into calls.
"""

from __future__ import annotations

from kernc.mlir import ir

from . import llvm_ops
from .base import Pass, walk_ops

#: libdevice function -> the LLVM-dialect intrinsic op with the same result (f32 and f64 names).
LIBDEVICE_INTRINSICS = {
    **dict.fromkeys(("__nv_sqrtf", "__nv_sqrt"), "llvm.intr.sqrt"),
    **dict.fromkeys(("__nv_fminf", "__nv_fmin"), "llvm.intr.minnum"),
    **dict.fromkeys(("__nv_fmaxf", "__nv_fmax"), "llvm.intr.maxnum"),
    **dict.fromkeys(("__nv_fabsf", "__nv_fabs"), "llvm.intr.fabs"),
    **dict.fromkeys(("__nv_floorf", "__nv_floor"), "llvm.intr.floor"),
    **dict.fromkeys(("__nv_ceilf", "__nv_ceil"), "llvm.intr.ceil"),
    **dict.fromkeys(("__nv_fmaf", "__nv_fma"), "llvm.intr.fma"),
}


def callee(op) -> str | None:
    """The callee name of an ``llvm.call`` (``"__nv_sqrtf"``), ``None`` for an indirect call."""
    if "callee" not in op.attributes:
        return None
    return ir.FlatSymbolRefAttr(op.attributes["callee"]).value


class LibdeviceToIntrinsics(Pass):
    """Replace calls of :data:`LIBDEVICE_INTRINSICS` functions with the intrinsic and drop the
    declarations nothing calls any more."""

    name = "kern-libdevice-to-intrinsics"
    summary = "__nv_sqrtf/fminf/fmaxf/fabsf/floorf/ceilf/fmaf calls -> llvm.intr.* (no libdevice link)"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for op in walk_ops(module, {"llvm.call"}):
            intrinsic = LIBDEVICE_INTRINSICS.get(callee(op))
            if intrinsic is None:
                continue
            narrow = _narrow_sandwich(op) if intrinsic == "llvm.intr.fma" else None
            if narrow is not None:
                _replace_narrow(op, *narrow)
                continue
            with ir.InsertionPoint(op), op.location:
                new = llvm_ops.intrinsic(intrinsic, op.results[0].type, list(op.operands))
            op.results[0].replace_all_uses_with(new)
            op.erase()
        called = {callee(op) for op in walk_ops(module, {"llvm.call"})}
        for fn in walk_ops(module, {"llvm.func"}):
            name = ir.StringAttr(fn.attributes["sym_name"]).value
            if name in LIBDEVICE_INTRINSICS and name not in called and not fn.regions[0].blocks:
                fn.erase()


def _defining_op(v: ir.Value):
    """The op that defines ``v``, ``None`` for a block argument."""
    if isinstance(v, ir.BlockArgument):
        return None
    owner = v.owner
    return owner.operation if hasattr(owner, "operation") else owner


def _narrow_sandwich(call):
    """``(sources, fptrunc)`` when ``call`` computes ``fptrunc(f(fpext x, fpext y, ...))`` with every
    ``x, y, ...`` and the truncated result of one narrow type; else ``None``."""
    exts = [_defining_op(v) for v in call.operands]
    if any(e is None or e.name != "llvm.fpext" for e in exts):
        return None
    sources = [e.operands[0] for e in exts]
    uses = list(call.results[0].uses)
    if len(uses) != 1:
        return None
    trunc = uses[0].owner
    trunc = trunc.operation if hasattr(trunc, "operation") else trunc
    narrow = sources[0].type
    if trunc.name != "llvm.fptrunc" or trunc.results[0].type != narrow or any(s.type != narrow for s in sources):
        return None
    return sources, trunc


def _replace_narrow(call, sources, trunc) -> None:
    """Replace ``fptrunc(fma(fpext ...))`` by one ``llvm.intr.fma`` on the narrow type."""
    with ir.InsertionPoint(trunc), trunc.location:
        new = llvm_ops.intrinsic("llvm.intr.fma", trunc.results[0].type, list(sources))
    trunc.results[0].replace_all_uses_with(new)
    trunc.erase()
    exts = []
    for v in call.operands:  # each fpext once (one may feed several operands)
        e = _defining_op(v)
        if not any(e == f for f in exts):
            exts.append(e)
    call.erase()
    for e in exts:
        if not any(True for r in e.results for _ in r.uses):
            e.erase()
