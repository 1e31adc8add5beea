"""``kern-specialize-nonneg-scalars``: a PTX variant for launches whose ``index`` scalars are >= 0.

An ``index`` scalar param may be negative, so ``m / OW`` with a param ``OW`` stays a signed division
(absolute values and sign fix-ups; about a third more registers in ``im2col_gather``) and
``0 <= c && c < s(OW)`` two compares. Most launches pass extents, strides and paddings that are
never negative. Like Triton's specialisation of integer arguments (divisibility by 16, equality
to 1), kernc compiles a second PTX variant for launches whose ``index`` scalar arguments are all
``>= 0`` (the launcher checks the values; ``backend.binding.BoundLaunch.nonneg_scalars``): this
pass takes them as non-negative and repeats the two rewrites that depend on it, signed -> unsigned
division (``kern-lower-divisions``) and one compare per bounds check (``kern-fold-range-checks``).

It runs on a copy of the gpu IR at the start of ``gpu_to_llvm``; the gpu IR itself (what the CPU
interpreter runs) stays valid for every argument.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import ir

from .base import Pass, defined_functions, walk_ops
from .fold_range_checks import FoldRangeChecks
from .index_facts import IndexFacts
from .lower_divisions import DIV_OPS, to_unsigned


@dataclass
class SpecializeNonnegScalars(Pass):
    """Unsigned divisions and single-compare bounds checks, taking ``index`` scalars as ``>= 0``."""

    name = "kern-specialize-nonneg-scalars"
    summary = "PTX variant for index scalar arguments >= 0 (unsigned divisions, one compare per check)"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn in defined_functions(module, {"gpu.func"}):
            to_unsigned(fn, walk_ops(fn, DIV_OPS), IndexFacts(fn, scalars_nonneg=True))
        FoldRangeChecks(scalars_nonneg=True).apply(ctx, module)
