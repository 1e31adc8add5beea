"""``kern-select-to-branch``: compute an expensive operand of a ``select`` only where it is selected.

What: an ``arith.select %c, %a, %b`` on scalars whose operand ``%a`` (or ``%b``) is computed by
ops used for nothing else -- its *exclusive cone*: pure ``arith``/``math`` ops in the select's block
whose every result is used only by the select's operand or by other ops of the cone -- and whose
cone holds an expensive op (a float division or remainder, a square root, a transcendental
function, an integer division or remainder) becomes

    %r = scf.if %c -> (T) { <cone of %a>; scf.yield %a } else { <cone of %b>; scf.yield %b }

(a cone without an expensive op stays outside the branch, as does a constant). The ops are moved,
not copied, and the result is the same value: the cones are pure, and only the operand the select
would return is needed.

Why: ``select(s > vmax, vmax / max(s, 1e-30), 1.0)`` computes the division in every thread, as a
select must; C's ``c ? vmax / s : 1.0f``, which nvcc compiles, branches around it. A PTX
``div.rn.f32`` is an ``MUFU.RCP`` + Newton step + range check with a slow-path call (``sqrt.rn``
too), and the values live across that call hold registers: for ``examples/particles.kern`` the
branch takes ptxas from 32 registers to 28 (nvcc: 30), and a warp whose threads all take the cheap
side skips the division. LLVM would speculate the two-op cone back into a select
(``SpeculativeExecution``, cost up to 7 on NVPTX); :data:`passes.gpu_module_to_binary.NVPTX_FLAGS` lowers that
limit to 4, so a branch around more than a single cheap op survives, while a lone division is still
if-converted by ``SimplifyCFG`` (LLVM's own choice, as before).

Runs on the gpu IR on its way to LLVM (``gpu_to_llvm``), not in ``kern_to_gpu``: the CPU
interpreter executes selects and branches alike, and its results cannot differ.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import ir

from . import ir_builder as b
from .base import Pass, walk_ops

#: Ops that lower to a multi-instruction sequence, a slow-path call or a libdevice call in PTX.
EXPENSIVE = frozenset({
    "arith.divf", "arith.remf",
    "arith.divsi", "arith.divui", "arith.remsi", "arith.remui",
    "arith.ceildivsi", "arith.ceildivui", "arith.floordivsi",
    "math.sqrt", "math.rsqrt", "math.cbrt",
    "math.exp", "math.exp2", "math.expm1", "math.log", "math.log2", "math.log10", "math.log1p",
    "math.sin", "math.cos", "math.tan", "math.asin", "math.acos", "math.atan", "math.atan2",
    "math.sinh", "math.cosh", "math.tanh", "math.asinh", "math.acosh", "math.atanh",
    "math.powf", "math.fpowi", "math.ipowi", "math.erf", "math.erfc",
})


def _pure(op) -> bool:
    """An ``arith``/``math`` op (no memory effects, no regions) other than a constant."""
    return op.name.startswith(("arith.", "math.")) and op.name != "arith.constant" and not op.regions


def _op(owner):
    return owner.operation if hasattr(owner, "operation") else owner


#: Largest cone moved into a branch; a bigger one is left alone (the search stays linear in it).
MAX_CONE = 64


def _cone(select, index: int) -> list:
    """The exclusive cone of operand ``index`` of ``select`` (unordered): grown from the operand's
    defining op towards its operands, an op joining once every use of its results is the select's
    operand or an op already in the cone (so a shared op, and what only it uses, never joins).
    ``[]`` when the operand is not computed by such ops or the cone would exceed :data:`MAX_CONE`."""
    block = select.block
    found: list = []

    def joins(v) -> object | None:
        if isinstance(v, ir.BlockArgument):
            return None
        op = _op(v.owner)
        if op.block != block or not _pure(op) or any(op == f for f in found):
            return None
        for res in op.results:
            for use in res.uses:
                user = _op(use.owner)
                if user == select and use.operand_number == index:
                    continue
                if not any(user == f for f in found):
                    return None
        return op

    first = joins(select.operands[index])
    if first is None:
        return []
    found.append(first)
    grown = True
    while grown:  # until no operand of the cone joins it
        grown = False
        for op in list(found):
            for v in op.operands:
                new = joins(v)
                if new is not None:
                    if len(found) == MAX_CONE:
                        return []
                    found.append(new)
                    grown = True
    return found


def _in_dependency_order(cone: list) -> list:
    """The ops of ``cone`` with each after the cone ops it uses (a valid order for the branch's
    block), found within the cone alone: walking the select's whole block for every select made
    the pass quadratic in the block's size."""
    ordered: list = []
    remaining = list(cone)
    while remaining:
        for op in remaining:
            uses = [_op(v.owner) for v in op.operands if not isinstance(v, ir.BlockArgument)]
            if not any(u == r for u in uses for r in remaining if r != op):
                ordered.append(op)
                remaining.remove(op)
                break
    return ordered


def _branch(select) -> bool:
    """Rewrite ``select`` as an ``scf.if`` when one of its operands has an expensive cone."""
    if len(select.results) != 1 or not isinstance(select.operands[0].type, ir.IntegerType):
        return False  # a vector condition selects per element: no branch
    cones = []
    for index in (1, 2):
        cone = _cone(select, index)
        cones.append(_in_dependency_order(cone) if any(op.name in EXPENSIVE for op in cone) else [])
    if not any(cones):
        return False
    with ir.InsertionPoint(select), select.location:
        branch = b.scf.IfOp(select.operands[0], [select.results[0].type], has_else=True)
    for block, value, cone in ((branch.then_block, select.operands[1], cones[0]),
                               (branch.else_block, select.operands[2], cones[1])):
        with ir.InsertionPoint(block), select.location:
            end = b.scf.YieldOp([value])
        for op in cone:
            op.move_before(end)
    select.results[0].replace_all_uses_with(branch.results[0])
    select.erase()
    return True


@dataclass
class SelectToBranch(Pass):
    """Branch around the expensive operand cones of scalar ``arith.select`` ops."""

    name = "kern-select-to-branch"
    summary = "select with a division/sqrt/transcendental operand -> scf.if computing only the chosen one"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        # last first: an outer select takes an inner one (and its division) into its branch before
        # the inner one becomes an scf.if, which no cone can take (select(a, select(b, x / y, 1), 2))
        for op in reversed(walk_ops(module, {"arith.select"})):
            _branch(op)
