"""``kern-lower-views``: view accesses and coordinate ops -> ``index`` arithmetic and memory ops.

Runs after ``kern-to-gpu`` and ``kern-lower-accessors`` (the ops sit in the guarded body of a
``gpu.func``; outside one, e.g. ``kernc opt`` on kern IR, they are lowered in place just the same)
and before ``kern-lower-layouts``, which lowers the ``kern.layout_apply``/``kern.swizzle`` it emits.
Semantics: ``dialect/kern.py`` and ``docs/design/layouts.md``.

- ``kern.in_bounds`` -> one pair of *signed* compares per mode, ``c_k >= 0`` and ``c_k < s_k``,
  and-ed together (coordinates may be negative: padding). The per-mode predicates are kept apart
  on purpose: a check of the flat offset against the buffer size would accept ``(i, j) = (0, N)``
  as ``(1, 0)``.
- ``kern.view_load`` -> ``memref.load`` at ``kern.layout_apply`` (+ ``kern.swizzle``), converted to
  the compute type; ``checked``: under ``scf.if (in_bounds && mask)``, else the ``default``.
- ``kern.view_store`` -> ``memref.store`` (converted to the storage type); ``checked``: under
  ``scf.if``, dropped when out of bounds.
- ``kern.view_atomic`` -> ``memref.atomic_rmw`` of its ``kind`` under ``scf.if (in_bounds &&
  mask)`` (``ir_builder.atomic_rmw``, the lowering of the ``atomic(I)`` accessor too; made relaxed
  and device-scoped by ``kern-relax-atomics``).
- ``kern.delinearize`` -> the mixed-radix split, last coordinate fastest: per extent ``E`` (from the
  last) ``q = rest / E`` (``arith.divsi``) and ``c = rest - q * E`` (one division per extent);
  ``kern-fold-divisions`` folds the ones that undo a linearization, and ``kern-lower-divisions`` turns
  the rest into shifts or magic multiplications.
"""

from __future__ import annotations

from dataclasses import dataclass


from kernc.dialect import kern
from kernc.dialect.access import Coordinates, Delinearize, ViewAccess
from kernc.dialect.poly_arith import emit_poly
from kernc.support.mlir import ir

from . import ir_builder as b
from .base import Pass, walk_ops


def in_bounds_value(coords, sizes, layout, syms):
    """``AND_k (0 <= c_k && c_k < s_k)`` with signed compares, one pair per mode."""
    env = dict(zip(syms, sizes))
    zero = b.idx(0)
    ok = None
    for c, s in zip(coords, layout.shape):
        for pred in (b.cmp("sge", c, zero), b.cmp("slt", c, emit_poly(s, env))):
            ok = pred if ok is None else b.and_(ok, pred)
    return ok if ok is not None else b.const(1, ir.IntegerType.get_signless(1))


def offset_value(coords, sizes, layout, swizzle, syms):
    off = kern.layout_apply(list(coords), list(sizes), str(layout), syms)
    if swizzle is not None:
        off = kern.swizzle(off, *swizzle)
    return off


@dataclass
class LowerViews(Pass):
    """Replace ``kern.view_load``/``view_store``/``in_bounds``/``delinearize``."""

    name = "kern-lower-views"
    summary = "lower view accesses, bounds predicates and delinearization to index arithmetic"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for op in walk_ops(module, set(kern.VIEW_OPS)):
            with op.location, ir.InsertionPoint(op):
                results = getattr(self, "_" + op.name.split(".")[1])(op)
            for old, new in zip(op.results, results):
                old.replace_all_uses_with(new)
            op.erase()

    def _in_bounds(self, op) -> list:
        c = Coordinates.from_op(op)
        return [in_bounds_value(c.coords, c.sizes, c.layout, c.syms)]

    def _view_load(self, op) -> list:
        v = ViewAccess.from_op(op)
        compute = v.compute

        def load():
            x = b.load(v.buffer, offset_value(v.coords, v.sizes, v.layout, v.swizzle, v.syms))
            return b.convert_float(x, compute) if b.is_float(compute) else x

        if not v.checked:
            return [load()]
        ok = in_bounds_value(v.coords, v.sizes, v.layout, v.syms)
        if v.mask is not None:
            ok = b.and_(ok, v.mask)
        return b.if_else(ok, [compute], lambda: [load()],
                         lambda: [b.arith.ConstantOp(compute, v.default).result])

    def _view_store(self, op) -> list:
        v = ViewAccess.from_op(op)
        storage = v.storage

        def store():
            x = b.convert_float(v.value, storage) if b.is_float(storage) else v.value
            b.store(x, v.buffer, offset_value(v.coords, v.sizes, v.layout, v.swizzle, v.syms))

        if not v.checked:
            store()
            return []
        ok = in_bounds_value(v.coords, v.sizes, v.layout, v.syms)
        if v.mask is not None:
            ok = b.and_(ok, v.mask)
        with b.if_(ok):
            store()
        return []

    def _view_atomic(self, op) -> list:
        v = ViewAccess.from_op(op)
        ok = in_bounds_value(v.coords, v.sizes, v.layout, v.syms)
        if v.mask is not None:
            ok = b.and_(ok, v.mask)
        with b.if_(ok):
            b.atomic_rmw(v.atomic, v.value, v.buffer,
                         offset_value(v.coords, v.sizes, v.layout, v.swizzle, v.syms))
        return []

    def _delinearize(self, op) -> list:
        d = Delinearize.from_op(op)
        rest, extents = d.linear, d.extents
        coords = []
        for e in reversed(extents[1:]):
            q = b.arith.DivSIOp(rest, e).result
            coords.append(b.sub(rest, b.mul(q, e)))
            rest = q
        coords.append(rest)
        return list(reversed(coords))
