"""``kern-to-gpu``: wrap each kern kernel (``func.func`` with ``kern.signature``) into a ``gpu.func``.

The per-thread body of item ``t`` becomes the body of a ``gpu.func ... kernel`` inside
``gpu.module @kernels`` with:

- buffer arguments moved to the global address space (``memref<?xT, #gpu.address_space<global>>``) so
  PTX uses ``ld.global``/``st.global``;
- ``known_block_size = [B, 1, 1]`` from the signature;
- the whole body under the guard ``scf.if t < P`` (unsigned compare; ``t`` = ``kern.thread_id``,
  ``P`` = ``kern.problem_size``), marked with the unit attribute ``kern.guard``: the threads of the
  last block past ``P`` do nothing of their own, but still take part in the block-wide steps that
  ``kern-lower-accessors`` places before and after the guard.

- the item mapping, the ``kern.mapping`` attribute (``dialect/mapping.py``): the linear one,
  item ``t = block_id * B + thread_id`` (``kern.thread_id``), over the extents of the problem's
  coordinates when the body delinearizes ``t`` over size symbols or constants (``over (i, j) in
  (R, C)``: ``["R", "C"]``), else over ``[P]``;
- for ``@deterministic`` kernels, the hidden scratch params and tables of the reductions whose
  combination across blocks it reorders (:func:`deterministic_extras`).

Accessor ops and thread builtins stay as they are; ``kern-lower-accessors`` and ``kern-lower-builtins``
lower them inside the ``gpu.func``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.dialect import accessors, kern
from kernc.dialect.access import Access, Delinearize
from kernc.dialect.mapping import MAPPING_ATTR, ItemMapping
from kernc.dialect.shared_table import table_name
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature, Param
from kernc.support.mlir import dialect, ir

from .base import Pass, functions, walk_ops

arith = dialect("arith")
gpu = dialect("gpu")
scf = dialect("scf")

GPU_MODULE_NAME = "kernels"


def global_memref(t: ir.Type) -> ir.Type:
    """``memref<?xT>`` -> ``memref<?xT, #gpu.address_space<global>>``; other types unchanged."""
    if not isinstance(t, ir.MemRefType):
        return t
    space = ir.Attribute.parse("#gpu.address_space<global>")
    return ir.MemRefType.get(t.shape, t.element_type, memory_space=space)


GUARD_ATTR = "kern.guard"
DETERMINISTIC = "deterministic"
#: The hidden scratch params of a ``@deterministic`` reduction output ``O`` (``O.partials``: the
#: per-block partial sums; ``O.counter``: how many blocks have finished).
PARTIALS, COUNTER = "partials", "counter"
_DTYPE_OF = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "i32": "i32", "i64": "i64",
             "i16": "i16", "i8": "i8"}


def scratch_name(param: str, what: str) -> str:
    """The hidden scratch param ``what`` (:data:`PARTIALS`, :data:`COUNTER`) of output ``param``."""
    return f"{param}.{what}"


def _memref_of(dtype: str) -> ir.Type:
    elem = {"u32": ir.IntegerType.get_signless(32)}.get(dtype) or ir.Type.parse(
        dtype if not dtype.startswith(("u", "i")) else "i" + dtype[1:])
    return ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], elem)


def deterministic_extras(fn, sig: KernelSignature) -> list:
    """Hidden arguments of a ``@deterministic`` kernel: per output whose accessor kind the
    attribute reorders (``Determinism.REORDERED``: ``sum``, ``shared_sum``), the per-block
    partials and a block counter (scratch), and the global merge tables of the kind's index param
    (``AccessorKind.deterministic_tables``, ``backend/shared_indices.py``). They follow the size
    symbols."""
    names = sig.arg_names
    entry = fn.regions[0].blocks[0]
    extras: list = []
    seen: set = set()
    for op in walk_ops(fn, {"kern.write", "kern.add"}):
        acc = Access.from_op(op)
        if acc.kind.deterministic is not accessors.Determinism.REORDERED:
            continue
        pname = next(names[i] for i, a in enumerate(entry.arguments) if a == acc.buffer)
        k = len(acc.values)
        dtype = _DTYPE_OF[str(acc.compute)]
        per_block = k if acc.kind is accessors.SUM else k * int(sig.block)  # one per block or per item
        extras += [
            Param(scratch_name(pname, PARTIALS), "scratch", dtype, scratch_size=f"{per_block}*__grid"),
            Param(scratch_name(pname, COUNTER), "scratch", "u32", scratch_size="1"),
        ]
        index = sig.param(pname).index_param
        if acc.kind.deterministic_tables and index not in seen:
            seen.add(index)
            extras += [Param(table_name(index, f), "table", "u32", table_of=index, table_field=f)
                       for f in acc.kind.deterministic_tables]
    return extras


def item_mapping(fn, sig: KernelSignature, delinearizations: list | None = None) -> ItemMapping:
    """The linear :class:`~kernc.dialect.mapping.ItemMapping` of kernel ``fn``: over the extents
    of the one ``kern.delinearize`` of ``kern.thread_id`` in its body when they are all size
    symbols or constants (the problem's coordinates), else over ``[problem_size]``.
    ``delinearizations``: the body's ``kern.delinearize`` ops when the caller has them (else
    ``fn`` is walked)."""
    names = sig.arg_names
    args = list(fn.regions[0].blocks[0].arguments)
    if delinearizations is None:
        delinearizations = walk_ops(fn, {"kern.delinearize"})
    delins = [Delinearize.from_op(op) for op in delinearizations]
    extents = None
    if len(delins) == 1 and len(delins[0].extents) >= 2:
        linear = delins[0].linear.owner
        linear = linear.operation if hasattr(linear, "operation") else linear
        if isinstance(linear, ir.Operation) and linear.name == "kern.thread_id":
            extents = []
            for v in delins[0].extents:
                name = next((n for n, a in zip(names, args) if a == v), None)
                owner = v.owner
                owner = owner.operation if hasattr(owner, "operation") else owner
                if name is not None and name in sig.sizes:
                    extents.append(name)
                elif isinstance(owner, ir.Operation) and owner.name == "arith.constant":
                    extents.append(str(ir.IntegerAttr(owner.attributes["value"]).value))
                else:
                    extents = None
                    break
    return ItemMapping.linear(int(sig.block), extents or [sig.problem_size])


@dataclass
class OutlineToGpu(Pass):
    """Move every kern kernel into ``gpu.module @kernels`` as a guarded ``gpu.func``."""

    name = "kern-to-gpu"
    summary = "wrap kern kernels into guarded gpu.func kernels"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        funcs = [
            op for op in functions(module, {"func.func"}) if SIGNATURE_ATTR in op.attributes
        ]
        if not funcs:
            return
        module.operation.attributes["gpu.container_module"] = ir.UnitAttr.get()
        with ir.InsertionPoint(module.body), module.operation.location:
            gmod = gpu.GPUModuleOp(GPU_MODULE_NAME)
            gmod.bodyRegion.blocks.append()
        for fn in funcs:
            self._outline(fn, gmod)
            fn.erase()

    def _outline(self, fn, gmod) -> None:
        sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
        ftype = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        inputs = [global_memref(t) for t in ftype.inputs]
        name = ir.StringAttr(fn.attributes["sym_name"]).value
        block_size = int(sig.block)
        if DETERMINISTIC in sig.attributes:
            sig.extra = deterministic_extras(fn, sig)
            inputs += [global_memref(_memref_of(p.dtype)) for p in sig.extra]
        with ir.InsertionPoint(gmod.bodyRegion.blocks[0]), fn.location:
            gfn = gpu.GPUFuncOp(
                ir.FunctionType.get(inputs, []),
                sym_name=name,
                kernel=True,
                known_block_size=[block_size, 1, 1],
            )
            gfn.attributes[SIGNATURE_ATTR] = ir.StringAttr.get(sig.to_json())
            entry = gfn.add_entry_block()
        with ir.InsertionPoint(entry), fn.location:
            t = kern.builtin("thread_id")
            p = kern.builtin("problem_size")
            guard = arith.CmpIOp(arith.CmpIPredicate.ult, t, p).result
            if_op = scf.IfOp(guard)
            if_op.attributes[GUARD_ATTR] = ir.UnitAttr.get()
            with ir.InsertionPoint(if_op.then_block):
                yield_op = scf.YieldOp([])
            gpu.ReturnOp([])
        old_entry = fn.regions[0].blocks[0]
        for old, new in zip(old_entry.arguments, entry.arguments):
            old.replace_all_uses_with(new)
        delinearizations = []  # (the frontend delinearizes t at the top of the body: no walk)
        for op in list(old_entry.operations):
            op = op.operation
            if op.name == "func.return":
                continue
            if op.name == "kern.delinearize":
                delinearizations.append(op)
            op.move_before(yield_op)
        gfn.attributes[MAPPING_ATTR] = ir.StringAttr.get(item_mapping(gfn, sig, delinearizations).to_json())
