"""``kern-fma-intrinsic``: libdevice ``fma`` calls -> ``llvm.intr.fma``, a single-rounding ``fma.rn``.

``convert-gpu-to-nvvm`` lowers ``math.fma`` to a call of libdevice's ``__nv_fmaf``/``__nv_fma``, which
would make every kernel with an ``fma`` (all of them under ``--fmad``) link libdevice only to inline
``llvm.fma`` back; and it computes an ``f16``/``bf16`` ``math.fma`` as ``fptrunc(__nv_fmaf(fpext a,
fpext b, fpext c))``, which rounds twice (to ``f32``, then to ``f16``) and so can differ in the last
bit from the correctly rounded result the CPU interpreter computes. This pass, run after
``convert-gpu-to-nvvm`` (like ``kern-ieee-sqrt``), replaces each such call with ``llvm.intr.fma`` on
the call's type, or, for the ``fpext``/``fptrunc`` sandwich of a narrow type, with ``llvm.intr.fma``
on that type (PTX ``fma.rn.f16`` from sm_53, ``fma.rn.bf16`` from sm_80; before that LLVM
promotes ``f16`` to an ``f64`` ``fma``, which is still exact for ``f16`` operands, and ``bf16`` to
``f32``, which can round twice), and drops the then unused declarations. The NVPTX backend emits
``llvm.fma`` as ``fma.rn.f32``/``fma.rn.f64`` (PTX ISA, "fma": one rounding of the exact result).
"""

from __future__ import annotations

from kernc.mlir import dialect, ir

from .base import Pass, walk_ops

llvm = dialect("llvm")

LIBDEVICE_FMA = {"@__nv_fmaf", "@__nv_fma"}


def _op(v: ir.Value):
    """The op defining ``v`` (``None`` for a block argument)."""
    if isinstance(v, ir.BlockArgument):
        return None
    op = v.owner
    return op.operation if hasattr(op, "operation") else op


def _narrow(call):
    """``(sources, fptrunc)`` when ``call`` computes ``fptrunc(fma(fpext x, fpext y, fpext z))`` with
    ``x, y, z`` and the truncation of one type; else ``None``."""
    exts = [_op(v) for v in call.operands]
    if any(e is None or e.name != "llvm.fpext" for e in exts):
        return None
    srcs = [e.operands[0] for e in exts]
    uses = list(call.results[0].uses)
    if len(uses) != 1:
        return None
    trunc = uses[0].owner
    trunc = trunc.operation if hasattr(trunc, "operation") else trunc
    ty = str(srcs[0].type)
    if trunc.name != "llvm.fptrunc" or any(str(s.type) != ty for s in srcs) or str(trunc.results[0].type) != ty:
        return None
    return srcs, trunc


def _has_uses(op) -> bool:
    return any(True for r in op.results for _ in r.uses)


class FMAIntrinsic(Pass):
    """Replace calls of libdevice's ``__nv_fmaf``/``__nv_fma`` with ``llvm.intr.fma``."""

    name = "kern-fma-intrinsic"
    summary = "__nv_fmaf calls -> llvm.intr.fma (fma.rn, no libdevice; f16/bf16 rounded once)"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for call in walk_ops(module, {"llvm.call"}):
            if "callee" not in call.attributes or str(call.attributes["callee"]) not in LIBDEVICE_FMA:
                continue
            narrow = _narrow(call)
            if narrow is not None:
                srcs, trunc = narrow
                with ir.InsertionPoint(trunc), trunc.location:
                    new = llvm.intr_fma(*srcs)
                trunc.results[0].replace_all_uses_with(new)
                trunc.erase()
                exts = []
                for v in call.operands:  # each fpext once (an fpext may feed several operands)
                    e = _op(v)
                    if not any(e == f for f in exts):
                        exts.append(e)
                call.erase()
                for e in exts:
                    if not _has_uses(e):
                        e.erase()
            else:
                with ir.InsertionPoint(call), call.location:
                    new = llvm.intr_fma(*call.operands)
                call.results[0].replace_all_uses_with(new)
                call.erase()
        calls = {str(c.attributes["callee"]) for c in walk_ops(module, {"llvm.call"}) if "callee" in c.attributes}
        for fn in walk_ops(module, {"llvm.func"}):
            name = "@" + ir.StringAttr(fn.attributes["sym_name"]).value
            if name in LIBDEVICE_FMA and name not in calls and len(fn.regions[0].blocks) == 0:
                fn.erase()
