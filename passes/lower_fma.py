"""``kern-lower-fma``: ``math.fma`` -> ``llvm.intr.fma`` on the op's own type, before ``convert-gpu-to-nvvm``.

``convert-gpu-to-nvvm`` would lower ``math.fma`` to a call of libdevice's ``__nv_fmaf``/``__nv_fma``;
for an ``f16``/``bf16`` fma it extends the operands, calls ``__nv_fmaf`` and truncates the result, which
rounds twice (to ``f32``, then to the narrow type) where the CPU interpreter -- and the gpu IR's
meaning -- round once. ``llvm.intr.fma`` on the op's own element type is one rounding of the exact
``a*b + c`` (PTX ISA, "fma": ``fma.rn.f32``/``.f64``, ``fma.rn.f16`` from sm_53, ``fma.rn.bf16`` from
sm_80; before sm_80 LLVM computes a ``bf16`` fma in ``f32``). Rewriting the ``math.fma`` itself, not the
call sequence the conversion leaves, keeps an ``f32`` fma of extended ``f16`` values (a program that
computes in ``f32``) an ``f32`` fma, and an ``f64`` one (``compute f64``) an ``f64`` one.
LLVM-dialect ops are legal in ``convert-gpu-to-nvvm``, so the intrinsic passes through it unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import ir

from . import llvm_ops
from .base import Pass, walk_ops


@dataclass
class LowerFMA(Pass):
    """Replace every ``math.fma`` (scalar or vector, any float type) with ``llvm.intr.fma``."""

    name = "kern-lower-fma"
    summary = "math.fma -> llvm.intr.fma of the same type (one rounding, no libdevice)"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for op in walk_ops(module, {"math.fma"}):
            with ir.InsertionPoint(op), op.location:
                new = llvm_ops.intrinsic("llvm.intr.fma", op.results[0].type, list(op.operands))
            op.results[0].replace_all_uses_with(new)
            op.erase()
