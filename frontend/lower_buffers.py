"""Lowering the accessor ops of a kernel's buffers (part of :mod:`kernc.frontend.lower`; contract:
``docs/accessor-lowering.md``): the ``args`` of each buffer's accessor ops, one ``kern.read`` per
buffer the body reads at the start of the body, the pending values of the outputs (and their
"assigned" flags), and one ``kern.write`` / ``kern.add`` per output at the end.
"""

from __future__ import annotations

from math import copysign

from kernc.dialect import accessors, kern
from kernc.dialect.accessors import Operand
from kernc.dialect.poly_arith import emit_poly
from kernc.support.mlir import dialect, ir

from . import types as T
from .lower_expr import ExprLowering, flat
from .symbols import Symbol

scf = dialect("scf")
arith = dialect("arith")


def _accessor_op(cls, b, buffer, args, sizes, values=None, layout=None):
    """Create a kern.read/write/add of buffer ``b`` (a :class:`BufferInfo`), over its layout or
    ``layout`` (a piece of it: one chunk of ``as caspar``)."""
    layout = b.layout if layout is None else layout
    syms = layout.symbols
    if cls is kern.ReadOp:
        default = None
        if b.kind.default:
            default = (T.mlir_type(T.default_scalar(b.compute_elem)), b.default_value)
        return kern.read(buffer, args, sizes, b.accessor, str(layout), syms, values, default=default)
    kind = accessors.WRITE if cls is kern.WriteOp else accessors.ADD
    return kern.write(kind, buffer, args, sizes, values, b.accessor, str(layout), syms)


def _pieces(b) -> list:
    """``[(first component, components, layout or None)]``: the accessor ops of buffer ``b``, one
    per chunk of a multi-chunk ``as caspar`` buffer (``frontend/caspar.py``), else one."""
    if not b.caspar_planes:
        return [(0, b.components, None)]
    return [(first, L.shape[1].value, L) for first, L in b.caspar_planes]


def _piece_values(b, values: list, first: int, n: int) -> list:
    """The values of components ``first .. first+n-1`` (of both elements of a pair)."""
    k = b.components
    parts = [values[first:first + n]]
    if b.is_pair:
        parts.append(values[k + first:k + first + n])
    return [v for part in parts for v in part]



def reduce_identity(reduce: str, s) -> float | int:
    """The identity of the ``max``/``min`` reduction ``reduce`` on scalar type ``s``: ``-inf``/
    ``+inf`` for a float, the type's lowest/highest value for an integer (what an item that
    assigns nothing contributes to a ``write max`` / ``block_min`` ...)."""
    if s.is_float:
        return float("-inf") if reduce == "max" else float("inf")
    lo, hi = (0, (1 << s.bits) - 1) if s.is_unsigned else (-(1 << (s.bits - 1)), (1 << (s.bits - 1)) - 1)
    return lo if reduce == "max" else hi


def is_add_identity(v) -> bool:
    """True if ``v`` is an ``arith.constant`` identity of addition: ``-0.0`` for a float (the
    initial value of a pending ``add`` output, see ``BufferLowering.init_outputs``), ``0`` for an
    integer. A float ``+0.0`` is not one: ``+0.0 + (-0.0)`` is ``+0.0``, not ``-0.0``."""
    try:
        op = v.owner
        if not isinstance(op, ir.Operation) and hasattr(op, "operation"):
            op = op.operation
        if op.name != "arith.constant":
            return False
        attr = op.attributes["value"]
        if isinstance(attr, ir.FloatAttr):
            x = ir.FloatAttr(attr).value
            return x == 0.0 and copysign(1.0, x) < 0
        return ir.IntegerAttr(attr).value == 0
    except Exception:
        return False


class BufferLowering(ExprLowering):
    """The accessor ops of the kernel's buffers: ``accessor_args`` holds each buffer's op args,
    ``assigned_outputs`` the outputs that get a final op."""

    def __init__(self, program, kernel, module):
        super().__init__(program, kernel, module)
        self.accessor_args: dict = {}  # buffer Symbol -> list of op args
        self.assigned_outputs: set = set()

    def bind_accessor_args(self, env: dict) -> None:
        """The ``args`` of every buffer's accessor ops (strided offsets/strides as index, index
        buffers, tables), computed at the start of the body."""
        for p in self.info.params:
            if p.kind != "buffer":
                continue
            with self.loc(p):
                self.accessor_args[p] = self.op_args(p, env)

    def op_args(self, p: Symbol, env: dict) -> list:
        """The ``args`` operands of buffer ``p``'s accessor ops (``docs/accessor-lowering.md``), those
        its record lists (``AccessorKind.ir_args``): the ``(off, s)`` of the strided kinds as
        ``index``, the index buffer ``I``, or the ``shared_indices`` tables of ``I``."""
        b = p.buffer
        kind = b.kind
        if kind.strided:
            return [self.convert(self.expr(a, env), a.ty, T.INDEX) for a in b.accessor_args]
        out = []
        for arg in kind.ir_args:
            if arg.type is Operand.INDEX_BUFFER:
                out.append(self.args[next(s for s in self.info.params if s.name == b.index_param)])
            elif arg.type is Operand.TABLE:
                out.append(self.table_args[(b.index_param, arg.name)])
            else:  # pragma: no cover - a registry invariant: index args are (off, s) of the strided kinds
                raise ValueError(f"accessor '{kind.name}': no frontend value for arg '{arg.name}'")
        return out

    def read_buffers(self, env: dict) -> None:
        """One ``kern.read`` per buffer the body uses, unconditional, at the start (so block-wide
        reads are reached by every thread): its results (the element's ``K`` components, ``2K`` for
        a pair) are the buffer's value in ``env``."""
        for p in self.info.used_reads:
            b = p.buffer
            halves = 2 if b.is_pair else 1
            parts: list = [[] for _ in range(halves)]  # the components of each element
            for _, n, layout in _pieces(b):
                syms = (layout or b.layout).symbols
                with self.loc(p):
                    op = _accessor_op(kern.ReadOp, b, self.args[p], self.accessor_args[p],
                                      [self.size_args[s] for s in syms],
                                      values=[T.mlir_type(b.compute_elem)] * (n * halves), layout=layout)
                    results = list(op.results)
                for h in range(halves):
                    parts[h] += results[h * n:(h + 1) * n]
            results = [v for part in parts for v in part]
            if b.default_param is not None:
                with self.loc(p):
                    results = self.param_default(p, results)
            env[p] = results if (b.components > 1 or b.is_pair) else results[0]

    def param_default(self, p: Symbol, results: list) -> list:
        """``strided(off, s) default NAME``: the read's results (its IR default the placeholder 0)
        with every element out of bounds replaced by the scalar parameter ``NAME``'s value. Element
        ``e = off + t*s`` (a pair's second ``off + (t+1)*s``) is in bounds when ``0 <= e < M``,
        ``M`` the buffer's first dim (signed: ``e`` may be negative), as the lowering of
        ``strided_default`` decides (``passes/lower_accessors_element.py``, ``load_default``)."""
        b = p.buffer
        param = next(s for s in self.info.params if s.name == b.default_param)
        default = self.args[param]
        off, step = self.accessor_args[p][:2]
        t = kern.builtin("thread_id")
        count = emit_poly(b.dims[0], self.size_args)
        zero = arith.constant(ir.IndexType.get(), 0)
        K = b.components
        out = []
        for part in range(2 if b.is_pair else 1):
            item = t if part == 0 else arith.addi(t, arith.constant(ir.IndexType.get(), 1))
            e = arith.addi(off, arith.muli(item, step))
            inb = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, e, zero),
                             arith.cmpi(arith.CmpIPredicate.slt, e, count))
            out += [arith.select(inb, v, default) for v in results[part * K:(part + 1) * K]]
        return out

    def init_outputs(self, env: dict, assigned: list) -> None:
        """The pending value of each output the body assigns (``assigned``: the state keys it
        assigns) or that is block-wide, and its "assigned" flag where it needs one."""
        info = self.info
        for p in info.outputs:
            b = p.buffer
            always = b.access == accessors.WRITE and b.kind.block_wide
            if p not in assigned and not always:
                continue
            self.assigned_outputs.add(p)
            with self.loc(p):
                # An `add` output's pending update starts as the identity of the addition: -0.0
                # for a float (y + (-0.0) == y bitwise, so a component or path that changes
                # nothing keeps the element's bits, a -0.0 included); +0.0 would turn a -0.0
                # element into +0.0. A `write` output's value starts as 0 (+0.0).
                init = -0.0 if (b.access == "add" and T.default_scalar(b.compute_elem).is_float) else 0
                if b.kind.reduce != "add":  # max/min: the identity of the reduction
                    init = reduce_identity(b.kind.reduce, T.default_scalar(b.compute_elem))
                zeros = [self.const(b.compute_elem, init) for _ in range(b.flat_width)]
                env[p] = zeros if (b.components > 1 or b.is_pair) else zeros[0]
                if p in info.flagged_outputs:
                    env[("flag", p)] = self.const(T.BOOL, False)

    def write_outputs(self, env: dict) -> None:
        """One ``kern.write`` / ``kern.add`` per output with a pending value, at the end of the
        body, in ``scf.if %assigned`` where the output has a flag."""
        for p in self.info.outputs:
            if p not in self.assigned_outputs:
                continue
            b = p.buffer
            with self.loc(p):
                values = flat(env[p])
                op_cls = kern.WriteOp if b.access == accessors.WRITE else kern.AddOp

                def emit():
                    for first, n, layout in _pieces(b):
                        sizes = [self.size_args[s] for s in (layout or b.layout).symbols]
                        _accessor_op(op_cls, b, self.args[p], self.accessor_args[p], sizes,
                                     _piece_values(b, values, first, n), layout=layout)

                flag = env.get(("flag", p))
                if flag is not None:
                    ifop = scf.IfOp(flag, [], has_else=False)
                    with ir.InsertionPoint(ifop.then_block):
                        emit()
                        scf.YieldOp([])
                else:
                    emit()
