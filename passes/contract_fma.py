"""``kern-contract-fma``: contract a float multiply feeding an add or subtract into ``math.fma``.

What: on float scalars and vectors (``f16``, ``bf16``, ``f32``, ``f64``)

- ``addf(mulf(a, b), c)`` and ``addf(c, mulf(a, b))`` -> ``math.fma(a, b, c)``;
- ``subf(mulf(a, b), c)`` -> ``math.fma(a, b, negf(c))``;
- ``subf(c, mulf(a, b))`` -> ``math.fma(negf(a), b, c)``;

only when the ``mulf`` result has exactly one use (the add/subtract; otherwise the product is needed
rounded anyway and contracting would compute it twice) and both ops are in the same block. When both
operands of an ``addf``/``subf`` are such products, the left one is contracted. Ops are visited in
program order (pre-order), so the result is a fixed function of the IR. The new ops carry no
fast-math flags; ``negf`` is exact, so each rewrite computes the exact ``a*b +- c`` rounded once.

Why: nvcc contracts by default (``--fmad=true``); ``y += a * x`` is then one ``FFMA`` instead of
``FMUL`` + ``FADD``, fewer instructions and a more accurate result. kernc does not contract by
default, so the CPU interpreter's results equal plain numpy ``a * b + c``. With ``kernc compile
--fmad`` (``CompileOptions.fmad``) this pass runs on the gpu IR, which both the CPU interpreter and
the GPU path consume: the contraction is decided here, deterministically, not by LLVM or ``ptxas``
(the NVPTX backend emits ``mul.rn``/``add.rn``, which ``ptxas`` never fuses), so both devices run
the same ``math.fma`` ops. PTX ``fma.rn`` rounds the exact result once, and the interpreter's
``math.fma`` is correctly rounded too (``backend/exact_fma.py``): the results stay bitwise equal.
On the GPU path ``math.fma`` becomes ``llvm.intr.fma`` without libdevice (``kern-libdevice-to-intrinsics``).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import dialect, ir

from . import ir_builder as b
from .base import Pass, walk_ops

math = dialect("math")


def _float_like(t: ir.Type) -> bool:
    """A float scalar, or a vector of floats."""
    if isinstance(t, ir.VectorType):
        t = ir.VectorType(t).element_type
    return b.is_float(t)


def _sole_user_op(v: ir.Value, name: str, block) -> ir.Operation | None:
    """The ``name`` op defining ``v`` when it sits in ``block`` and ``v`` has exactly one use."""
    if isinstance(v, ir.BlockArgument):
        return None
    op = v.owner
    op = op.operation if hasattr(op, "operation") else op
    if op.name != name or op.block != block:
        return None
    uses = iter(v.uses)
    return op if next(uses, None) is not None and next(uses, None) is None else None


def _product(v: ir.Value, block):
    """``(mulf, negf)`` when ``v`` is a contractible product: a single-use ``arith.mulf`` in ``block``
    (``negf`` is ``None``), or a single-use ``arith.negf`` of one (``o -= a*b`` on an ``add`` output
    lowers to ``o + -(a*b)``); else ``None``."""
    neg = _sole_user_op(v, "arith.negf", block)
    mul = _sole_user_op(neg.operands[0] if neg is not None else v, "arith.mulf", block)
    return (mul, neg) if mul is not None else None


def _contract(op) -> bool:
    """Rewrite the ``arith.addf``/``arith.subf`` ``op`` if one of its operands is a contractible
    product; True if it did."""
    if not _float_like(op.results[0].type):
        return False
    lhs, rhs = op.operands[0], op.operands[1]
    block = op.block
    found, other, product_first = _product(lhs, block), rhs, True
    if found is None:
        found, other, product_first = _product(rhs, block), lhs, False
    if found is None:
        return False
    mul, neg = found
    a, x = mul.operands[0], mul.operands[1]
    arith = b.arith
    with ir.InsertionPoint(op), op.location:
        # p = a*x (or -(a*x) = (-a)*x, exactly); then p + c, c + p, p - c = fma(.., -c), c - p
        if neg is not None:
            a = arith.NegFOp(a).result
        if op.name == "arith.addf":                      # p + c, c + p
            new = math.FmaOp(a, x, other).result
        elif product_first:                              # p - c = fma(a, x, -c)
            new = math.FmaOp(a, x, arith.NegFOp(other).result).result
        else:                                            # c - p = fma(-a, x, c)
            new = math.FmaOp(arith.NegFOp(a).result, x, other).result
    op.results[0].replace_all_uses_with(new)
    op.erase()
    if neg is not None:
        neg.erase()
    mul.erase()
    return True


@dataclass
class ContractFMA(Pass):
    """Contract single-use ``mulf`` + ``addf``/``subf`` pairs into ``math.fma`` (``--fmad``)."""

    name = "kern-contract-fma"
    summary = "a*b+c -> math.fma (single-use products, same block; kernc compile --fmad)"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for op in walk_ops(module, {"arith.addf", "arith.subf"}):
            _contract(op)
