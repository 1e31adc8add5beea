"""What a module holds for the optional passes: one cheap walk each, before the pass's module is imported.

The pipeline (``passes/pipeline.py``) names each pass by a :class:`~kernc.passes.base.PassRef`; the
rewrites that many kernels give nothing to do (the contraction passes, kern-coalesce-views,
kern-map-groups, kern-privatize-atomics: about 210 KB of source together; the division passes and
kern-select-to-branch, 40 KB more) carry one of the checks below as ``when``, and their module is
imported, and the pass run, only when it says ``True`` (:class:`~kernc.passes.base.OnDemand`). A run without ``.pyc`` files compiles the source of every
module it imports (CPython's ``compile()``: 5.8 MB/s measured on the 2-core development VM,
``docs/compile-time.md``), so a saxpy compile that imports none of them spends about 40 ms less.

Each check is ``(module, options) -> bool``, ``options`` the pass's own (its ``remarks`` among them),
and answers ``False`` only where the pass, run, would leave the module as it is, raise nothing
and say nothing: the reason is written at each, from the pass's ``apply``. (Skipping a pass with
nothing to do changes no IR: the gpu IR and PTX of every example are the same with and without
these checks.) They walk the kernels (``gpu.func`` ops with a kernel signature) only; this module
imports nothing of the passes it stands in for.
"""

from __future__ import annotations

from kernc.dialect.signature import PTX_TYPE_ATTR, SIGNATURE_ATTR, KernelSignature
from kernc.support.mlir import ir

from .base import functions, walk_ops


def _kernels(module) -> list:
    """The ``gpu.func`` ops of ``module`` that carry a kernel signature (the passes' kernels)."""
    return [fn for fn in functions(module, {"gpu.func"}) if SIGNATURE_ATTR in fn.attributes]


def group_reductions(module, options: dict) -> bool:
    """kern-map-groups: a kernel holds a ``kern.group_reduce`` (a reduction across items); it
    rewrites those kernels only."""
    return any(walk_ops(fn, {"kern.group_reduce"}) for fn in _kernels(module))


def view_atomics(module, options: dict) -> bool:
    """kern-privatize-atomics: a kernel holds a ``kern.view_atomic``; it looks at (and remarks
    on) those kernels only."""
    return any(walk_ops(fn, {"kern.view_atomic"}) for fn in _kernels(module))


def contraction_loops(module, options: dict) -> bool:
    """kern-tile-contractions, kern-mma-contractions and kern-wgmma-contractions: a kernel holds
    an ``scf.for`` or asks for tensor cores (``@tensor_cores``). Without a loop their analysis
    (``tile_contractions._Analysis``) finds no contraction loop and changes nothing, each pass
    then goes on to the next kernel without a remark, and only kern-mma-contractions says anything:
    the error at a ``@tensor_cores`` of a kernel with no contraction loop."""
    for fn in _kernels(module):
        if walk_ops(fn, {"scf.for"}):
            return True
        sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
        if sig.tensor_cores is not None:
            return True
    return False


def unsigned_mma(module, options: dict) -> bool:
    """kern-lower-unsigned-mma: a kernel holds an ``nvgpu.mma.sync`` marked ``kern.ptx_type``
    (kern-mma-contractions' u8 contractions); it rewrites those ops only."""
    return any(PTX_TYPE_ATTR in op.attributes
               for fn in _kernels(module) for op in walk_ops(fn, {"nvgpu.mma.sync"}))


def nd_view_accesses(module, options: dict) -> bool:
    """kern-coalesce-views: a kernel holds a ``kern.view_load``/``kern.view_store`` and, unless the
    pass has remarks to give (``--remarks``: it explains each access it does not stage), a
    ``kern.delinearize`` (an N-D problem). It stages the accesses of N-D kernels only: those of a
    kernel without a delinearization it only remarks on. (It also reads such a kernel's
    ``kern.mapping``, whose ``ValueError`` when malformed is a kernc bug, kern-to-gpu writes it:
    not looked for in a kernel skipped so.)"""
    for fn in _kernels(module):
        ops = walk_ops(fn, {"kern.view_load", "kern.view_store", "kern.delinearize"})
        if any(op.name != "kern.delinearize" for op in ops) and (
                options.get("remarks") is not None or any(op.name == "kern.delinearize" for op in ops)):
            return True
    return False


#: The integer divisions and remainders the division passes rewrite (``lower_divisions.DIV_OPS``,
#: ``index_facts.DIV | REM``; ``tests/passes/test_import_diet.py`` checks they are the same).
DIVISIONS = frozenset({"arith.divsi", "arith.divui", "arith.floordivsi", "arith.remsi", "arith.remui"})


def divisions(module, options: dict) -> bool:
    """kern-fold-divisions, kern-reduce-iv-divisions and kern-lower-divisions: the module holds an
    integer division or remainder (:data:`DIVISIONS`); each rewrites those ops only (and the
    loops holding them), a 1-D kernel without a division has nothing for them."""
    return bool(walk_ops(module, DIVISIONS))


def selects(module, options: dict) -> bool:
    """kern-select-to-branch: the module holds an ``arith.select``, the op it turns into a branch."""
    return bool(walk_ops(module, {"arith.select"}))


def workgroup_attributions(module, options: dict) -> bool:
    """kern-dynamic-workgroup-memory: a ``gpu.func`` holds workgroup attributions (the buffers it
    may carve from dynamic workgroup memory); a kernel without any has nothing for it."""
    for fn in functions(module, {"gpu.func"}):
        if "workgroup_attributions" in fn.attributes and ir.IntegerAttr(fn.attributes["workgroup_attributions"]).value:
            return True
    return False
