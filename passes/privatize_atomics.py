"""``kern-privatize-atomics``: a per-block copy in workgroup memory for small atomically updated views.

A kernel whose items update a small view atomically at computed coordinates (a histogram,
``hist.atomic(index(data)) += 1`` over ``hist: u32[256] view``) makes one global atomic per item,
and items with equal bins contend for one address. When every access of such a view ``X`` is a
``kern.view_atomic`` of one kind and its layout is static (no size symbols, no swizzle) with a
storage of at most :attr:`PrivatizeAtomics.max_bytes`, the pass rewrites the kernel as the CUDA
samples' ``histogram256`` does (a per-block sub-histogram in shared memory, merged into the global
one): with ``S`` the elements of the layout's storage, ``B`` threads per block and ``K`` items per
thread,

1. the block fills a workgroup copy ``W[S]`` with the identity of the update (0 for add/or/max of
   unsigned, ``-0.0`` for float add, the type's largest value for min, ``-inf`` for float max, all
   ones for and, ...), then ``gpu.barrier``;
2. its threads run the items of tiles of ``B*K`` items, tiles ``b, b + grid, ...`` (a grid-stride
   loop; the launcher runs one block per tile, ``KernelSignature.tiles``), thread ``tid`` the items
   ``tile*B*K + k*B + tid``, ``k < K`` (consecutive threads at consecutive items), each under the
   kernel's guard ``t < P``; their updates of ``X`` go to ``W`` with the same layout, as workgroup
   atomics (``memref.atomic_rmw`` on workgroup memory: ``atom.shared``);
3. ``gpu.barrier``; every element of ``W`` that differs from the identity (compared by its bits) is
   applied to ``X`` with one global atomic of the same kind.

``K`` is chosen so that a block covers at least :attr:`items_per_element` items per element of the
copy (``K = ceil(items_per_element * S / B)``, at most :attr:`max_items_per_thread`): the flush
then costs at most one global atomic per element and block: ``1 / items_per_element`` per item in
full blocks (256 bins, 256 threads: 16 items per thread, 4096 per block, at most 1/16 global atomic
per item once every block is full; 2^20 equal bytes make 256; a problem of 300 items still up to 256).
Only updates that commute exactly are privatized (integer add, min, max, or, and; float min/max,
one total order), so the result is bitwise the one without the pass; a float add is not (summed
per block first, it would round differently from the item-order sum of the CPU interpreter).

The pass declines (and says why under ``--remarks``, at the update's source line) a kernel whose
items are mapped to tiles already, that uses workgroup memory, barriers or shuffles already
(block-wide accessors), reads ``block_id``/``lane_id`` (their meaning would change), or a view that
the kernel also reads or writes plainly, updates with two kinds or with float adds, whose layout has size symbols or a
swizzle, or whose copy would exceed :attr:`max_bytes`. It runs after ``kern-coalesce-views`` and
before ``kern-lower-views``, on ``kern.view_atomic``; ``kernc compile --no-privatize`` (and
``kernc.compile(privatize=False)``) leaves it out of the pipeline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from kernc.dialect import kern
from kernc.dialect.mapping import MAPPING_ATTR, ItemMapping, of_function
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.dialect.strided import StridedLayout
from kernc.support.mlir import dialect, ir

from . import ir_builder as b
from .base import Pass, functions, internal, option, walk_ops
from .to_gpu import GUARD_ATTR
from .workgroup import KernelContext, emit_remark

gpu = dialect("gpu")
arith = dialect("arith")
scf = dialect("scf")

#: Ops whose presence means the kernel already works per block (block-wide accessors, staging).
_BLOCK_OPS = {"gpu.barrier", "gpu.shuffle"}


class Decline(Exception):
    """Why a kernel or a view is not privatized (the remark's text)."""


def identity_bits(kind: str, elem: ir.Type) -> int:
    """The bits (an unsigned integer of the element's width) of the identity of the atomic
    ``kind`` (``kern.VIEW_ATOMIC_KINDS``) on elements of type ``elem``: ``x op identity == x``."""
    w = b.bits(elem)
    ones = (1 << w) - 1
    if b.is_float(elem):
        exp = {16: 5, 32: 8, 64: 11}[w] if not isinstance(elem, ir.BF16Type) else 8
        mant = w - 1 - exp
        inf = ((1 << exp) - 1) << mant
        sign = 1 << (w - 1)
        return {"add": sign, "minimumf": inf, "maximumf": sign | inf}[kind]
    return {"add": 0, "ori": 0, "maxu": 0, "andi": ones, "minu": ones,
            "mins": ones >> 1, "maxs": 1 << (w - 1)}[kind]


def _bits_type(elem: ir.Type) -> ir.Type:
    return ir.IntegerType.get_signless(b.bits(elem))


def _identity(kind: str, elem: ir.Type) -> ir.Value:
    """The identity of ``kind`` as a value of type ``elem``."""
    bits = identity_bits(kind, elem)
    w = b.bits(elem)
    signed = bits - (1 << w) if bits >> (w - 1) else bits  # IntegerAttr wants the signed value
    word = b.const(signed, _bits_type(elem))
    return arith.BitcastOp(elem, word).result if b.is_float(elem) else word


def _differs(v: ir.Value, kind: str) -> ir.Value:
    """``bits(v) != bits(identity)`` (an ``i1``): floats compared by their bits (``-0.0`` is not
    ``+0.0``, a NaN is not equal to itself)."""
    elem = v.type
    word = arith.BitcastOp(_bits_type(elem), v).result if b.is_float(elem) else v
    bits = identity_bits(kind, elem)
    w = b.bits(elem)
    return b.cmp("ne", word, b.const(bits - (1 << w) if bits >> (w - 1) else bits, _bits_type(elem)))


def _owner(v):
    o = v.owner
    return o.operation if hasattr(o, "operation") else o


@dataclass
class PrivatizeAtomics(Pass):
    """Give small atomically updated views a per-block copy in workgroup memory (histogram256)."""

    name = "kern-privatize-atomics"
    summary = "per-block workgroup copies of small atomically updated views, flushed once per block"

    #: the largest workgroup copy (bytes, all privatized views of a kernel together)
    max_bytes: int = option(16 * 1024)
    #: items a block runs per element of its copy (bounds the flush's global atomics per item)
    items_per_element: int = option(16)
    #: the most items one thread runs (the coarsening factor ``K``)
    max_items_per_thread: int = option(64)
    #: a callable that receives each one-line remark (``kernc compile --remarks``), or ``None``
    remarks: Callable[[str], None] | None = internal(None)

    def _remark(self, op, text: str) -> None:
        emit_remark(self.remarks, op, text)

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn in functions(module, {"gpu.func"}):
            if SIGNATURE_ATTR not in fn.attributes:
                continue
            atomics = walk_ops(fn, {"kern.view_atomic"})
            if not atomics:
                continue
            sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
            try:
                guard = self._check_kernel(fn)
            except Decline as why:
                for op in atomics:
                    self._remark(op, f"not privatizing the atomic updates of '{self._name(fn, sig, op)}': {why}")
                continue
            views = self._views(fn, sig, atomics)
            if views:
                self._rewrite(fn, sig, guard, views)

    # -- analysis -------------------------------------------------------------------------------
    @staticmethod
    def _name(fn, sig, op) -> str:
        args = list(fn.regions[0].blocks[0].arguments)
        buf = op.operands[0]
        for n, a in zip(sig.arg_names, args):
            if a == buf:
                return n
        return "?"

    def _check_kernel(self, fn):
        """The kernel's guard, or :class:`Decline`."""
        guards = [op for op in walk_ops(fn, {"scf.if"}) if GUARD_ATTR in op.attributes]
        if len(guards) != 1:
            raise Decline("the kernel has no single guarded body")
        guard = guards[0]
        mapping = of_function(fn)
        if mapping is not None and mapping.tile is not None:
            raise Decline("the kernel's items are mapped to tiles already")
        if "workgroup_attributions" in fn.attributes or walk_ops(fn, _BLOCK_OPS):
            raise Decline("the kernel already works per block (workgroup memory, barriers or shuffles)")
        ids = sorted({op.name.split(".", 1)[1] for op in walk_ops(fn, {"kern.block_id", "kern.lane_id"})})
        if ids:
            raise Decline(f"the kernel reads {' and '.join(f'{n}()' for n in ids)}, which running several "
                          "items per thread would change")
        cond = _owner(guard.operands[0])
        outside = [op for op in walk_ops(fn, {"kern.thread_id"})
                   if not _inside(op, guard) and not (cond.name == "arith.cmpi" and op.results[0] == cond.operands[0])]
        if outside:
            raise Decline("the kernel uses the item index outside its guarded body")
        return guard

    def _views(self, fn, sig, atomics) -> list:
        """``[(arg, name, ops, kind, layout, S)]`` of the views to privatize (remarks for the others)."""
        by_buf: dict = {}
        for op in atomics:
            by_buf.setdefault(op.operands[0], []).append(op)
        out, total = [], 0
        args = list(fn.regions[0].blocks[0].arguments)
        for buf, ops in by_buf.items():
            name = self._name(fn, sig, ops[0])
            try:
                if buf not in args:
                    raise Decline("its buffer is not a kernel argument")
                if any(u.owner.name != "kern.view_atomic" for u in buf.uses):
                    raise Decline("the kernel also reads or writes it plainly (a block's copy would hide "
                                  "the other blocks' updates)")
                kinds = {ir.StringAttr(op.attributes["kind"]).value for op in ops}
                if len(kinds) != 1:
                    raise Decline(f"it is updated with {len(kinds)} kinds of atomics ({', '.join(sorted(kinds))})")
                kind = next(iter(kinds))
                if kind == "add" and b.is_float(ir.MemRefType(buf.type).element_type):
                    raise Decline("float adds would be summed per block first, a different rounding "
                                  "from the adds in item order (only updates that commute exactly are "
                                  "privatized)")
                layouts = {ir.StringAttr(op.attributes["layout"]).value for op in ops}
                if len(layouts) != 1 or any(len(ir.ArrayAttr(op.attributes["syms"])) for op in ops):
                    raise Decline("its layout is not static (size symbols)")
                text = layouts.pop()
                if "swizzle" in text.lower() or " o " in text:
                    raise Decline("its layout is swizzled")
                S = StridedLayout.parse(text).cosize({})
                elem = ir.MemRefType(buf.type).element_type
                nbytes = S * b.bits(elem) // 8
                if S <= 0:
                    raise Decline("it has no elements")
                if total + nbytes > self.max_bytes:
                    raise Decline(f"its copy ({S} elements, {nbytes} bytes) would not fit the "
                                  f"{self.max_bytes} bytes of workgroup memory the pass may use")
            except Decline as why:
                for op in ops:
                    self._remark(op, f"not privatizing the atomic updates of '{name}': {why}")
                continue
            total += nbytes
            out.append((buf, name, ops, kinds.pop(), S, elem, nbytes))
        return out

    # -- rewrite --------------------------------------------------------------------------------
    def _rewrite(self, fn, sig, guard, views) -> None:
        B = sig.block
        S_max = max(v[4] for v in views)
        K = max(1, min(self.max_items_per_thread, -(-self.items_per_element * S_max // B)))
        BK = B * K
        kc = KernelContext(fn, sig, guard, B)
        cond = _owner(guard.operands[0])
        with ir.InsertionPoint(guard), guard.location:
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            blk = kern.BlockIdOp(b.index_t()).result
            P = kern.builtin("problem_size")
            copies = []
            for n, (buf, name, ops, kind, S, elem, nbytes) in enumerate(views):
                W = kc.workgroup(elem, S, f"privatized copy of '{name}'", region=f"privatize{n}",
                                 location=ops[0].location)
                copies.append(W)
                _strided(S, B, tid, lambda k, W=W, kind=kind, elem=elem: b.store(_identity(kind, elem), W, k))
            b.barrier()
            q = arith.DivUIOp(P, b.idx(BK)).result
            tiles = b.add(q, b.select(b.cmp("ne", b.sub(P, b.mul(q, b.idx(BK))), b.idx(0)), b.idx(1), b.idx(0)))
            tile_loop = scf.ForOp(blk, tiles, gpu.GridDimOp(gpu.Dimension.x).result)
            with ir.InsertionPoint(tile_loop.body):
                item_loop = scf.ForOp(b.idx(0), b.idx(K), b.idx(1))
                with ir.InsertionPoint(item_loop.body):
                    base = b.add(b.mul(tile_loop.induction_variable, b.idx(BK)),
                                 b.mul(item_loop.induction_variable, b.idx(B)))
                    t = b.add(base, tid)
                    ok = b.cmp("ult", t, P)
                    item_end = scf.YieldOp([])
                scf.YieldOp([])
        guard.move_before(item_end)
        with ir.InsertionPoint(_next_in_block(tile_loop.operation)), guard.location:
            b.barrier()
            for (buf, name, ops, kind, S, elem, nbytes), W in zip(views, copies):
                def flush(k, W=W, buf=buf, kind=kind):
                    v = b.load(W, k)
                    with b.if_(_differs(v, kind)):
                        b.atomic_rmw(kind, v, buf, k)
                _strided(S, B, tid, flush)
        # the item index is now the loop's; the old guard condition goes
        for op in walk_ops(guard, {"kern.thread_id"}):
            op.results[0].replace_all_uses_with(t)
            op.erase()
        guard.operands[0] = ok
        if cond.name == "arith.cmpi" and not list(cond.results[0].uses):
            old = [_owner(x) for x in cond.operands]
            cond.erase()
            for o in old:
                if isinstance(o, ir.Operation) and o.name in ("kern.thread_id", "kern.problem_size") \
                        and not list(o.results[0].uses):
                    o.erase()
        for (buf, name, ops, kind, S, elem, nbytes), W in zip(views, copies):
            for op in ops:
                op.operands[0] = W
            dtype = sig.param(name).dtype
            self._remark(ops[0], f"privatizing the atomic updates of '{name}' ({S} x {dtype}, {nbytes} bytes): "
                                 f"a per-block copy in workgroup memory updated with workgroup atomics, "
                                 f"then one global atomic per changed element per block; each thread runs "
                                 f"{K} item{'s' if K != 1 else ''} ({BK} per block: at most one global atomic per element and block, {S / BK:.3g} per item in full blocks)")
        sig.tiles = [[sig.problem_size, BK]]
        fn.attributes[SIGNATURE_ATTR] = ir.StringAttr.get(sig.to_json())
        mapping = ItemMapping(B, (sig.problem_size,), (BK,), K, f"({B},{K}):(1,{B})", True)
        fn.attributes[MAPPING_ATTR] = ir.StringAttr.get(mapping.to_json())


def _strided(S: int, B: int, tid, body) -> None:
    """``for k in tid, tid + B, ... < S: body(k)``: a loop of ``ceil(S / B)`` uniform trips (a
    guard for the last), the block's threads at consecutive elements."""
    loop = scf.ForOp(b.idx(0), b.idx(math.ceil(S / B)), b.idx(1))
    with ir.InsertionPoint(loop.body):
        k = b.add(b.mul(loop.induction_variable, b.idx(B)), tid)
        if S % B:
            with b.if_(b.cmp("ult", k, b.idx(S))):
                body(k)
        else:
            body(k)
        scf.YieldOp([])


def _inside(op, ancestor) -> bool:
    p = op.parent
    while p is not None:
        if p == ancestor:
            return True
        p = p.parent
    return False


def _next_in_block(op):
    found = False
    for o in op.block.operations:
        if found:
            return o
        if o == op:
            found = True
    raise ValueError("no operation follows")
