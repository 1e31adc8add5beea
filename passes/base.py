"""The pass interface shared by kernc's own passes and wrapped upstream MLIR passes.

A pass is a small named object with ``apply(ctx, module)`` (the xDSL shape): kernc's passes rewrite the
module through the Python bindings; :class:`UpstreamPass` runs an upstream pipeline string through
``PassManager.parse``. Upstream MLIR cannot nest a Python pass under ``gpu.module``, so kernc passes
are always module-anchored and walk the ops they rewrite themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import ir, passmanager


class Pass:
    """Base class: a named, module-anchored rewrite. Subclasses set ``name`` and implement ``apply``."""

    name: str = ""
    summary: str = ""

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name


@dataclass
class UpstreamPass(Pass):
    """An upstream MLIR pass or nested pipeline, e.g. ``"canonicalize"`` or
    ``"gpu.module(convert-scf-to-cf)"``, anchored at ``builtin.module``."""

    pipeline: str

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.pipeline

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        pass_manager(ctx, self.pipeline).run(module.operation)


#: (context, pipeline) -> its PassManager. A pass manager keeps its passes initialised (for
#: ``canonicalize``: the frozen set of every loaded dialect's patterns, most of its run time on a
#: small kernel) for as long as the context's dialects do not change, so kernc reuses one per
#: pipeline string instead of building it again for every compilation. Its own verifier stays on
#: (after every pass, nested ones included) although ``run_passes`` verifies too: without
#: ``verify_each`` that is the only check between a kernc pass and the upstream passes after it, and
#: ``convert-gpu-to-nvvm`` lowers some invalid ops into valid but wrong LLVM IR.
_PASS_MANAGERS: dict[tuple[int, str], tuple[ir.Context, passmanager.PassManager]] = {}


def pass_manager(ctx: ir.Context, pipeline: str) -> passmanager.PassManager:
    """The (cached) ``PassManager`` of ``builtin.module(pipeline)`` in ``ctx``. Raises the
    bindings' ``MLIRError``/``ValueError`` for a pipeline that does not parse."""
    key = (id(ctx), pipeline)
    hit = _PASS_MANAGERS.get(key)
    if hit is None or hit[0] is not ctx:
        pm = passmanager.PassManager.parse(f"builtin.module({pipeline})", context=ctx)
        hit = _PASS_MANAGERS[key] = (ctx, pm)  # the context is kept alive with it
    return hit[1]


def walk_ops(root, names: set[str] | None = None) -> list:
    """All operations nested under ``root`` (pre-order), optionally only those named in ``names``.

    Collected into a list first so callers may rewrite/erase while iterating.
    """
    found: list = []
    keep, advance = found.append, ir.WalkResult.ADVANCE  # the walk hands over ir.Operation objects

    if names is None:
        def visit(op):
            keep(op)
            return advance
    else:
        def visit(op):
            if op.name in names:
                keep(op)
            return advance

    root.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def functions(module, names: set[str]) -> list:
    """The function ops (``names``, e.g. ``{"gpu.func"}``) of ``module``: those in its body and in the
    bodies of its ``gpu.module`` ops, where kernc's functions live. Unlike :func:`walk_ops` it does
    not visit the functions' bodies, so a pass that handles one function at a time walks each once."""
    found: list = []
    root = module.operation if hasattr(module, "operation") else module
    for block in root.regions[0].blocks:
        for op in block.operations:
            op = op.operation
            if op.name in names:
                found.append(op)
            elif op.name == "gpu.module":
                for inner_block in op.regions[0].blocks:
                    found.extend(f.operation for f in inner_block.operations if f.operation.name in names)
    return found


def defined_functions(module, names: set[str]) -> list:
    """:func:`functions` that have a body (declarations, e.g. of libdevice, are left out)."""
    return [fn for fn in functions(module, names) if fn.regions and len(fn.regions[0].blocks)]
