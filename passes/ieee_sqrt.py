"""``kern-ieee-sqrt``: libdevice ``sqrt`` calls -> ``llvm.intr.sqrt``, the IEEE square root on the GPU.

``math.sqrt`` otherwise lowers to libdevice's ``__nv_sqrtf``, which picks ``sqrt.approx.f32`` unless
the ``__CUDA_PREC_SQRT`` reflect flag is set -- not what the CPU interpreter (and CUDA's own default,
``-prec-sqrt=true``) computes. LLVM's ``llvm.sqrt.f32`` is emitted by the NVPTX backend as the
correctly rounded ``sqrt.rn.f32`` (``f64``: ``sqrt.rn.f64``) (PTX ISA, "sqrt"). Runs after
``convert-gpu-to-nvvm`` (which would turn ``llvm.intr.sqrt`` back into the libdevice call), on the
``llvm.call @__nv_sqrtf``/``@__nv_sqrt`` it produced.
"""

from __future__ import annotations

from kernc.mlir import dialect, ir

from .base import Pass, walk_ops

llvm = dialect("llvm")


LIBDEVICE_SQRT = {"@__nv_sqrtf", "@__nv_sqrt"}


class IEEESqrt(Pass):
    """Replace calls of libdevice's ``__nv_sqrtf``/``__nv_sqrt`` with ``llvm.intr.sqrt``."""

    name = "kern-ieee-sqrt"
    summary = "__nv_sqrtf calls -> llvm.intr.sqrt (sqrt.rn, correctly rounded)"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for op in walk_ops(module, {"llvm.call"}):
            if "callee" not in op.attributes or str(op.attributes["callee"]) not in LIBDEVICE_SQRT:
                continue
            with ir.InsertionPoint(op), op.location:
                new = llvm.SqrtOp(op.operands[0]).result
            op.results[0].replace_all_uses_with(new)
            op.erase()
