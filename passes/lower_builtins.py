"""``kern-lower-builtins``: thread builtins -> ``gpu`` ops, inside each ``gpu.func``.

``t = block_id.x * B + thread_id.x`` with the block size ``B`` a constant (the kernel's
``known_block_size``, so the multiply becomes a shift); ``kern.block_dim`` -> ``B``;
``kern.lane_id`` -> ``gpu.lane_id``; ``kern.problem_size`` -> ``P``, the size argument (or integer
scalar param, zero-extended or sign-extended to ``index`` by its declared signedness) the signature
names. The values are computed once at the function entry, so they dominate every use.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.dialect import kern
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.support.mlir import dialect, ir

from .base import Pass, functions, walk_ops
from .ir_builder import idx

arith = dialect("arith")
gpu = dialect("gpu")

BUILTINS = {"kern." + name for name in kern.BUILTIN_OPS}


def problem_size_value(sig: KernelSignature, args) -> ir.Value:
    """The ``index`` value of ``P``: a size-symbol argument or an integer scalar param; for an N-D
    problem ``over (i, j) in (M, N)`` the product of its extents (``problem_size`` is then a
    :class:`~kernc.dialect.strided.Poly` text over size symbols, ``"M*N"``)."""
    if sig.problem_size not in sig.arg_names:
        from kernc.dialect.strided import Poly

        from .lower_layouts import emit_poly

        env = {name: args[sig.arg_names.index(name)] for name in sig.sizes}
        return emit_poly(Poly.parse(sig.problem_size), env)
    value = args[sig.arg_names.index(sig.problem_size)]
    if isinstance(value.type, ir.IndexType):
        return value
    dtype = sig.param(sig.problem_size).dtype
    cast = arith.IndexCastUIOp if dtype.startswith("u") else arith.IndexCastOp
    return cast(ir.IndexType.get(), value).result


@dataclass
class LowerBuiltins(Pass):
    """Replace ``kern.thread_id``/``block_id``/``block_dim``/``lane_id``/``problem_size``."""

    name = "kern-lower-builtins"
    summary = "lower kern thread builtins to gpu ids"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn in functions(module, {"gpu.func"}):
            if SIGNATURE_ATTR in fn.attributes:
                self._lower(fn)

    def _lower(self, fn) -> None:
        uses = walk_ops(fn, BUILTINS)
        if not uses:
            return
        sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
        entry = fn.regions[0].blocks[0]
        with ir.InsertionPoint.at_block_begin(entry), fn.location:
            bid = gpu.BlockIdOp(gpu.Dimension.x).result
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            block = idx(sig.block)
            values = {
                "kern.block_id": bid,
                "kern.block_dim": block,
                "kern.thread_id": arith.AddIOp(arith.MulIOp(bid, block).result, tid).result,
                "kern.lane_id": gpu.LaneIdOp().result,
                "kern.problem_size": problem_size_value(sig, list(entry.arguments)),
            }
        for op in uses:
            op.results[0].replace_all_uses_with(values[op.name])
            op.erase()
