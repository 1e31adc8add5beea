"""``kern-coalesce-views``: stage transposed view accesses of N-D problems through a workgroup tile.

In an N-D kernel ``over (..., i, ..., j) in (..., R, ..., C)`` consecutive threads of a warp get
consecutive ``j`` (the last coordinate is the fastest, ``kern.delinearize``). A view access whose
fastest thread coordinate ``j`` is *not* the storage's unit-stride mode -- the naive transpose
``b[j, i] = a[i, j]`` with ``b`` row-major ``(C, R):(R, 1)``, or the NCHW -> NHWC permute
``y[n, h, w, c] = x[n, c, h, w]`` where ``w`` has stride ``C`` in ``y`` -- touches one 32-byte sector
per lane: 32 sectors per warp request instead of 4. This pass applies the shared-memory transpose of
NVIDIA's "An Efficient Matrix Transpose in CUDA C/C++" (M. Harris, NVIDIA Developer Blog) to the
plane of ``j`` and the coordinate ``i`` that has unit stride in that view (``c`` in the permute),
batched over the other coordinates: each block stages a ``TI x TJ`` tile of that plane in workgroup
memory, so that both the global read and the global write move along unit stride, and the tile's
rows are padded (one padding column for a 32x32 tile) so that both shared-memory accesses are free
of bank conflicts.

Runs after ``kern-lower-accessors`` (the body sits in the guard ``scf.if ... {kern.guard}`` of a
``gpu.func``) and before ``kern-lower-views`` (it works on ``kern.view_load``/``view_store``/
``kern.delinearize`` and re-emits view ops that ``kern-lower-views`` lowers). The decision is taken
from the layouts alone; no annotation is needed. It applies when:

- the kernel has a single ``kern.delinearize(t, E0, ..., E(k-1))`` of the thread id ``t`` (an N-D
  problem, ``k >= 2``) and ``t`` is used for nothing else, no accessor staged through workgroup
  memory before, and the block ``B`` has at least 64 threads;
- the access is a top-level (unconditional) ``view_store``/``view_load`` of an unswizzled, unmasked
  view whose coordinates are the thread coordinates in some order, where ``j``'s mode has a stride
  other than 1 and another mode (coordinate ``i``) has stride 1 -- the same ``i`` for every staged
  access; a staged store's buffer has no other access, a staged load's buffer is only read.

Then, with ``TJ = 32`` and ``TI = B / 32``:

1. *Threads are remapped to tiles*: the kernel body (guard included) runs in a loop over the
   tiles ``tile = blk, blk + grid, ...`` of the ``batch x ceil(Ei/TI) x ceil(Ej/TJ)`` tile grid
   (``batch``: the product of the other extents, whose coordinates are fixed per tile), so the
   launch keeps its ``ceil(P / B)`` blocks (with partial tiles there are a few more tiles than
   blocks; the trip count is block-uniform, so the barriers inside are safe; one more barrier ends
   each trip before the tile is re-used). Thread ``tid`` is item ``i = bi*TI + tid/TJ``,
   ``j = bj*TJ + tid%TJ``; the guard becomes ``i < Ei && j < Ej``. The signature records
   ``tiles = [[Ei, TI], [Ej, TJ]]`` (informational: the grid stays ``ceil(P / B)``).
2. The tile is ``TI x S`` elements with ``S = TJ + 32/TI`` (33 for 32x32, 36 for 8x32): item
   ``(i, j)`` lives at ``smem[(tid/TJ)*S + tid%TJ]`` (a warp touches 32 consecutive words), the
   transposed side reads it back as ``smem[ii*S + jj]`` with ``ii = tid % TI``, ``jj = tid / TI``:
   the padding spreads the ``32/TI`` columns ``jj`` a warp reads over distinct banks.
3. A staged store becomes ``smem[...] = v`` in the body, then after the guard (every thread):
   ``gpu.barrier`` and the view written at ``j = bj*TJ + jj``, ``i = bi*TI + ii`` (the batch
   coordinates unchanged) from ``smem[ii*S + jj]`` for in-range elements (consecutive lanes write
   consecutive ``i``, the view's unit-stride mode). A staged load is the mirror image before the
   guard, and the body reads ``smem[(tid/TJ)*S + tid%TJ]``.

``remarks`` (a callable taking one line) explains each view access's decision
(``kernc compile --remarks``); the pass is left out of the pipeline by ``--no-coalesce``.
"""

from __future__ import annotations

import re
from typing import Callable

from kernc.dialect import kern
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.dialect.strided import Poly
from kernc.mlir import dialect, ir

from . import ir_builder as b
from .base import Pass, walk_ops
from .lower_accessors import KernelContext
from .outline_to_gpu import GUARD_ATTR

gpu = dialect("gpu")

WARP = 32
TJ = 32
_LOC = re.compile(r'loc\("([^"]+)":(\d+):(\d+)')


def _where(op) -> str:
    m = _LOC.search(str(op.location))
    return f"{m.group(1)}:{m.group(2)}:{m.group(3)}" if m else "<unknown>"


def _segments(op) -> list:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def _owner(v):
    o = v.owner
    return o.operation if hasattr(o, "operation") else o


def _uses(v) -> list:
    return [u.owner for u in v.uses]


class CoalesceViews(Pass):
    """Stage transposed ``view_store``/``view_load`` s of N-D problems through a padded tile."""

    name = "kern-coalesce-views"
    summary = "stage transposed view accesses through a padded workgroup tile (coalesced, conflict-free)"

    def __init__(self, remarks: Callable[[str], None] | None = None):
        self.remarks = remarks
        self._said: set = set()

    def _remark(self, op, text: str) -> None:
        # once per source location and text: an unrolled loop repeats the same access (and remark)
        line = f"{_where(op)}: remark: {text}"
        if self.remarks is not None and line not in self._said:
            self._said.add(line)
            self.remarks(line)

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        self._said = set()
        for fn in walk_ops(module, {"gpu.func"}):
            if SIGNATURE_ATTR not in fn.attributes:
                continue
            guards = [op for op in walk_ops(fn, {"scf.if"}) if GUARD_ATTR in op.attributes]
            if len(guards) != 1:
                continue
            self._kernel(fn, guards[0])

    # -- analysis -------------------------------------------------------------------------------
    def _kernel(self, fn, guard) -> None:
        accesses = [op for op in walk_ops(fn, {"kern.view_load", "kern.view_store"})]
        if not accesses:
            return
        sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
        names = sig.arg_names
        args = list(fn.regions[0].blocks[0].arguments)

        def pname(v) -> str | None:
            for n, a in zip(names, args):
                if a == v:
                    return n
            return None

        def decline_all(why: str) -> None:
            for op in accesses:
                self._remark(op, f"not staging '{pname(op.operands[0])}': {why}")

        delins = walk_ops(fn, {"kern.delinearize"})
        if len(delins) != 1 or len(delins[0].operands) < 3:
            return decline_all("the kernel is not an N-D problem 'over (i, j) in (R, C)'")
        delin = delins[0]
        tdef = _owner(delin.operands[0])
        if not isinstance(tdef, ir.Operation) or tdef.name != "kern.thread_id":
            return decline_all("the problem is not delinearized from the thread id")
        body_ids = [op for op in walk_ops(guard, {"kern.thread_id", "kern.block_id", "kern.lane_id"})]
        if any(op != tdef for op in body_ids) or len(_uses(tdef.results[0])) != 1:
            return decline_all("the kernel uses the thread id for more than its coordinates")
        if "workgroup_attributions" in fn.attributes:
            return decline_all("the kernel already stages accessors through workgroup memory")
        B = int(sig.block)
        if B < 64 or B % WARP:
            return decline_all(f"a block of {B} threads is too small for a tile (needs >= 64)")
        extents = []
        for v in list(delin.operands)[1:]:
            name = pname(v)
            d = _owner(v)
            if name is not None and name in sig.sizes:
                extents.append(name)
            elif isinstance(d, ir.Operation) and d.name == "arith.constant":
                extents.append(str(ir.IntegerAttr(d.attributes["value"]).value))
            else:
                return decline_all("the problem extents are not size symbols or constants")
        results = list(delin.results)
        j_val = results[-1]
        coord_names = ([ir.StringAttr(a).value for a in ir.ArrayAttr(delin.attributes["coord_names"])]
                       if "coord_names" in delin.attributes else [f"x{n}" for n in range(len(results))])
        jname = coord_names[-1]
        body = guard.regions[0].blocks[0]
        TI = B // TJ
        S = TJ + WARP // TI
        staged = []  # (op, position of j in its coordinates, position of the tile's other coordinate)
        ki = None  # the problem coordinate that the staged accesses move along unit stride
        for op in accesses:
            buf = op.operands[0]
            name = pname(buf)
            seg = _segments(op)
            coords = list(op.operands)[1:1 + seg[1]]
            layout, swizzle = kern.parse_view_layout(ir.StringAttr(op.attributes["layout"]).value)
            if name is None:
                self._remark(op, "not staging the access: its buffer is not a kernel argument")
                continue
            if swizzle is not None or layout.rank != len(coords):
                self._remark(op, f"not staging '{name}': only unswizzled layouts are staged")
                continue
            if len(coords) != len(results) or set(coords) != set(results):  # not a permutation
                self._remark(op, f"not staging '{name}': its coordinates are not the thread coordinates "
                                 f"({', '.join(coord_names)}) in some order")
                continue
            one = Poly.const(1)
            pj = coords.index(j_val)
            if layout.stride[pj] == one:
                self._remark(op, f"not staging '{name}': the fastest thread coordinate '{jname}' has "
                                 f"stride 1 in {name}'s layout (already coalesced)")
                continue
            units = [p for p, st in enumerate(layout.stride) if st == one]
            if not units:
                self._remark(op, f"not staging '{name}': no mode of {name}'s layout has stride 1")
                continue
            pi = units[0]
            k_op = results.index(coords[pi])
            if ki is not None and k_op != ki:
                self._remark(op, f"not staging '{name}': its unit-stride coordinate "
                                 f"'{coord_names[k_op]}' is not the one of the other staged accesses "
                                 f"('{coord_names[ki]}')")
                continue
            if seg[3] != 0:
                self._remark(op, f"not staging '{name}': masked accesses are not staged")
                continue
            if op.parent != guard or op.block != body:
                self._remark(op, f"not staging '{name}': the access is conditional")
                continue
            others = [u for u in _uses(buf) if u != op]
            if op.name == "kern.view_store" and others:
                self._remark(op, f"not staging '{name}': the kernel accesses it elsewhere")
                continue
            if op.name == "kern.view_load" and any(u.name != "kern.view_load" for u in others):
                self._remark(op, f"not staging '{name}': the kernel also writes it")
                continue
            ki = k_op
            self._remark(op, f"staging '{name}' through a {TI}x{S} workgroup tile: the fastest "
                             f"thread coordinate '{jname}' has stride {layout.stride[pj]} in {name}'s "
                             f"layout, '{coord_names[ki]}' has stride 1")
            staged.append((op, pj, pi))
        if staged:
            self._rewrite(fn, sig, guard, delin, extents, staged, ki, TI, S)

    # -- rewrite --------------------------------------------------------------------------------
    def _rewrite(self, fn, sig, guard, delin, extents, staged, ki, TI, S) -> None:
        E = list(delin.operands)[1:]
        k = len(E)
        jk = k - 1
        batch = [x for x in range(k) if x not in (ki, jk)]  # the coordinates fixed per tile
        kc = KernelContext(fn, sig, guard, int(sig.block))
        with ir.InsertionPoint(guard), guard.location:
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            blk = kern.BlockIdOp(b.index_t()).result
            nbj = b.arith.DivUIOp(b.add(E[jk], b.idx(TJ - 1)), b.idx(TJ)).result
            nbi = b.arith.DivUIOp(b.add(E[ki], b.idx(TI - 1)), b.idx(TI)).result
            per = b.mul(nbi, nbj)  # tiles per batch element
            count = per
            for x in batch:
                count = b.mul(count, E[x])
            # the launch keeps ceil(P / B) blocks (fewer than tiles when tiles are partial): each
            # block takes the tiles blk, blk + grid, ... (a block-uniform trip count)
            loop = b.scf.ForOp(blk, count, gpu.GridDimOp(gpu.Dimension.x).result)
            with ir.InsertionPoint(loop.body):
                loop_end = b.scf.YieldOp([])
        guard.move_before(loop_end)
        with ir.InsertionPoint(loop_end), guard.location:
            b.barrier()  # the next tile re-uses the workgroup tile
        with ir.InsertionPoint(guard), guard.location:
            tile = loop.induction_variable
            if batch:
                rest = b.arith.DivUIOp(tile, per).result  # the batch element, last coordinate fastest
                in_batch = b.sub(tile, b.mul(rest, per))
            else:  # a 2-D problem: one batch element, no division
                in_batch = tile
            bi = b.arith.DivUIOp(in_batch, nbj).result
            bj = b.sub(in_batch, b.mul(bi, nbj))
            coord = {}
            for x in reversed(batch[1:]):
                q = b.arith.DivUIOp(rest, E[x]).result
                coord[x] = b.sub(rest, b.mul(q, E[x]))
                rest = q
            if batch:
                coord[batch[0]] = rest
            row = b.arith.DivUIOp(tid, b.idx(TJ)).result
            col = b.arith.RemUIOp(tid, b.idx(TJ)).result
            coord[ki] = b.add(b.mul(bi, b.idx(TI)), row)
            coord[jk] = b.add(b.mul(bj, b.idx(TJ)), col)
            valid = b.and_(b.cmp("ult", coord[ki], E[ki]), b.cmp("ult", coord[jk], E[jk]))
            own = b.add(b.mul(row, b.idx(S)), col)  # this thread's item in the tile
            ii = b.arith.RemUIOp(tid, b.idx(TI)).result
            jj = b.arith.DivUIOp(tid, b.idx(TI)).result
            tr = b.add(b.mul(bj, b.idx(TJ)), jj)  # the transposed side: coordinate jk, then ki
            tc = b.add(b.mul(bi, b.idx(TI)), ii)
            tvalid = b.and_(b.cmp("ult", tc, E[ki]), b.cmp("ult", tr, E[jk]))
            tslot = b.add(b.mul(ii, b.idx(S)), jj)
        for x, r in enumerate(delin.results):
            r.replace_all_uses_with(coord[x])
        t_op = _owner(delin.operands[0])
        delin.erase()
        t_op.erase()
        guard.operands[0] = valid
        sig.tiles = [[extents[ki], TI], [extents[jk], TJ]]
        fn.attributes[SIGNATURE_ATTR] = ir.StringAttr.get(sig.to_json())
        # (positions are carried with each op: an op's hash changes with its operands, and a
        # staged store's value may be a staged load's result, replaced below)
        def transposed(new, pj: int, pi: int) -> None:
            new.operands[1 + pj] = tr
            new.operands[1 + pi] = tc

        loads = [t for t in staged if t[0].name == "kern.view_load"]
        stores = [t for t in staged if t[0].name == "kern.view_store"]
        for n, (op, pj, pi) in enumerate(loads):
            with op.location:
                elem = op.results[0].type
                smem = kc.workgroup(elem, TI * S, "coalesced view tile", region=f"tile.load{n}",
                                    location=op.location)
                with ir.InsertionPoint(guard):
                    with b.if_(tvalid):
                        new = op.clone()
                        new.move_before(_last_op(ir.InsertionPoint.current))
                        transposed(new, pj, pi)
                        b.store(new.results[0], smem, tslot)
                with ir.InsertionPoint(op):
                    v = b.load(smem, own)
                op.results[0].replace_all_uses_with(v)
                op.erase()
        if loads:
            with ir.InsertionPoint(guard), guard.location:
                b.barrier()
        after = _next_op(guard)
        if stores:
            with ir.InsertionPoint(after), guard.location:
                b.barrier()
        for n, (op, pj, pi) in enumerate(stores):
            with op.location:
                value = op.operands[len(op.operands) - 1]
                smem = kc.workgroup(value.type, TI * S, "coalesced view tile", region=f"tile.store{n}",
                                    location=op.location)
                with ir.InsertionPoint(op):
                    b.store(value, smem, own)
                with ir.InsertionPoint(after):
                    with b.if_(tvalid):
                        v = b.load(smem, tslot)
                        new = op.clone()
                        new.move_before(_last_op(ir.InsertionPoint.current))
                        transposed(new, pj, pi)
                        new.operands[len(new.operands) - 1] = v
                op.erase()
        kc.check_limit()


def _last_op(ip):
    """The terminator of the block ``ip`` inserts before (``b.if_`` inserts before the yield)."""
    return ip.ref_operation


def _next_op(op):
    """The operation after ``op`` in its block."""
    found = False
    for o in op.block.operations:
        if found:
            return o
        if o == op:
            found = True
    raise ValueError("no operation follows")
