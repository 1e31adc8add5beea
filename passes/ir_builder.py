"""Thin builders over the upstream ``arith``/``memref``/``scf``/``gpu`` Python bindings.

Each helper emits at the current insertion point and returns ``ir.Value`` s, so lowering code reads
like the arithmetic it emits. Nothing here knows about kernc's ops.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

from kernc.support.mlir import dialect, ir

arith = dialect("arith")
memref = dialect("memref")
scf = dialect("scf")
gpu = dialect("gpu")


def index_t() -> ir.Type:
    return ir.IndexType.get()


def const(value, type_: ir.Type) -> ir.Value:
    """``arith.constant`` of ``type_`` (index, integer or float)."""
    if isinstance(type_, (ir.IndexType, ir.IntegerType)):
        return arith.ConstantOp(type_, ir.IntegerAttr.get(type_, int(value))).result
    return arith.ConstantOp(type_, ir.FloatAttr.get(type_, float(value))).result


def idx(value: int) -> ir.Value:
    return const(value, index_t())


def zero(type_: ir.Type) -> ir.Value:
    return const(0, type_)


def add_identity(type_: ir.Type) -> ir.Value:
    """The identity of addition in ``type_``: ``-0.0`` for a float (``x + (-0.0) == x`` for every
    ``x``, bitwise; ``+0.0`` turns ``-0.0`` into ``+0.0``, IEEE 754 6.3), ``0`` for an integer. The
    start of every sum that ends in an ``add`` output, and what a thread contributes that adds
    nothing."""
    return const(-0.0 if is_float(type_) else 0, type_)


def is_add_identity(v: ir.Value) -> bool:
    """Whether ``v`` is an ``arith.constant`` identity of addition (:func:`add_identity`): adding it
    changes no element's bits, so the update can be left out."""
    owner = v.owner
    op = owner.operation if hasattr(owner, "operation") else owner
    if not isinstance(op, ir.Operation) or op.name != "arith.constant":
        return False
    attr = op.attributes["value"]
    if isinstance(attr, ir.FloatAttr):
        x = ir.FloatAttr(attr).value
        return x == 0.0 and math.copysign(1.0, x) < 0
    if isinstance(attr, ir.IntegerAttr):
        return ir.IntegerAttr(attr).value == 0
    return False


def is_float(t: ir.Type) -> bool:
    return isinstance(t, (ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type))


def bits(t: ir.Type) -> int:
    if isinstance(t, (ir.IntegerType,)):
        return ir.IntegerType(t).width
    return {ir.F16Type: 16, ir.BF16Type: 16, ir.F32Type: 32, ir.F64Type: 64}[type(t)]


def add(a: ir.Value, b: ir.Value) -> ir.Value:
    return (arith.AddFOp if is_float(a.type) else arith.AddIOp)(a, b).result


def sub(a, b):
    return arith.SubIOp(a, b).result


def mul(a, b):
    return arith.MulIOp(a, b).result


def cmp(pred: str, a, b) -> ir.Value:
    """Integer/index compare with predicate name (``"ult"``, ``"slt"``, ``"eq"``, ...)."""
    return arith.CmpIOp(getattr(arith.CmpIPredicate, pred), a, b).result


def select(c, a, b):
    return arith.SelectOp(c, a, b).result


def and_(a, b):
    return arith.AndIOp(a, b).result


def or_(a, b):
    return arith.OrIOp(a, b).result


def minui(a, b):
    return arith.MinUIOp(a, b).result


def index_cast_ui(v: ir.Value) -> ir.Value:
    """Zero-extend an unsigned integer to ``index``."""
    return arith.IndexCastUIOp(index_t(), v).result


def index_to_i32(v: ir.Value) -> ir.Value:
    return arith.IndexCastOp(ir.IntegerType.get_signless(32), v).result


def convert_float(v: ir.Value, to: ir.Type) -> ir.Value:
    """``extf``/``truncf`` between float types (identity when equal)."""
    if v.type == to:
        return v
    if bits(to) > bits(v.type):
        return arith.ExtFOp(to, v).result
    return arith.TruncFOp(to, v).result


def load(buf, i) -> ir.Value:
    return memref.LoadOp(buf, [i]).result


def store(v, buf, i) -> None:
    memref.StoreOp(v, buf, [i])


def atomic_add(v, buf, i) -> None:
    """``memref.atomic_rmw addf|addi`` (relaxed device scope after ``kern-relax-atomics``)."""
    atomic_rmw("add", v, buf, i)


def atomic_rmw(kind: str, v, buf, i) -> None:
    """``memref.atomic_rmw`` of ``kind`` (``kern.VIEW_ATOMIC_KINDS``: ``add`` is ``addf`` or
    ``addi`` by ``v``'s type; ``mins minu maxs maxu`` integer min/max), relaxed and device-scoped
    after ``kern-relax-atomics``; the old value is not used."""
    if kind == "add":
        kind = "addf" if is_float(v.type) else "addi"
    memref.AtomicRMWOp(getattr(arith.AtomicRMWKind, kind), v, buf, [i])


def alloca(elem: ir.Type, n: int) -> ir.Value:
    """A per-thread private array of ``n`` elements."""
    return memref.AllocaOp(ir.MemRefType.get([n], elem), [], []).result


def barrier() -> None:
    gpu.BarrierOp()


def shuffle(mode: str, v: ir.Value, offset: int) -> tuple:
    """``gpu.shuffle`` (``xor``/``up``/``down``/``idx``) over a full 32-lane warp; returns (value, valid).

    ``shfl.sync`` moves 32-bit registers (64-bit values go as two): integers narrower than 32 bits
    are sign-extended for the exchange and truncated back, ``f16``/``bf16`` go as ``f32``."""
    i32 = ir.IntegerType.get_signless(32)
    t = v.type
    narrow_int = isinstance(t, ir.IntegerType) and ir.IntegerType(t).width < 32
    narrow_float = isinstance(t, (ir.F16Type, ir.BF16Type))
    if narrow_int:
        v = arith.ExtSIOp(i32, v).result
    elif narrow_float:
        v = arith.ExtFOp(ir.F32Type.get(), v).result
    op = gpu.ShuffleOp(v, const(offset, i32), const(32, i32), getattr(gpu.ShuffleMode, mode.upper()))
    out = op.results[0]
    if narrow_int:
        out = arith.TruncIOp(t, out).result
    elif narrow_float:
        out = arith.TruncFOp(t, out).result
    return out, op.results[1]


@contextmanager
def if_(cond: ir.Value):
    """``scf.if cond { ... }`` with no results; the body is emitted inside the ``with``."""
    op = scf.IfOp(cond)
    with ir.InsertionPoint(op.then_block):
        term = scf.YieldOp([])
    with ir.InsertionPoint(term):
        yield op


def if_else(cond: ir.Value, result_types: list, then_fn, else_fn) -> list:
    """``scf.if`` with results: ``then_fn()``/``else_fn()`` return the yielded value lists."""
    op = scf.IfOp(cond, result_types, has_else=True)
    with ir.InsertionPoint(op.then_block):
        scf.YieldOp(list(then_fn()))
    with ir.InsertionPoint(op.else_block):
        scf.YieldOp(list(else_fn()))
    return list(op.results)
