"""``kern-coalesce-views``: stage transposed view accesses of 2-D problems through a workgroup tile.

In an N-D kernel ``over (i, j) in (R, C)`` consecutive threads of a warp get consecutive ``j`` (the
last coordinate is the fastest, ``kern.delinearize``). A view access whose fastest thread coordinate
``j`` is *not* the storage's unit-stride mode -- the naive transpose ``b[j, i] = a[i, j]`` with ``b``
row-major ``(C, R):(R, 1)`` -- touches one 32-byte sector per lane (stride ``R``): 32 sectors per
warp request instead of 4. This pass applies the shared-memory transpose of NVIDIA's "An Efficient
Matrix Transpose in CUDA C/C++" (M. Harris, NVIDIA Developer Blog): each block stages a tile in
workgroup memory, so that both the global read and the global write move along unit stride, and the
tile's rows are padded (one padding column for a 32x32 tile) so that both shared-memory accesses
are free of bank conflicts.

Runs after ``kern-lower-accessors`` (the body sits in the guard ``scf.if ... {kern.guard}`` of a
``gpu.func``) and before ``kern-lower-views`` (it works on ``kern.view_load``/``view_store``/
``kern.delinearize`` and re-emits view ops that ``kern-lower-views`` lowers). The decision is taken
from the layouts alone; no annotation is needed. It applies when:

- the kernel has a single ``kern.delinearize(t, R, C)`` of the thread id ``t`` (a 2-D problem) and
  ``t`` is used for nothing else, no accessor staged through workgroup memory before, and the block
  ``B`` has at least 64 threads;
- the access is a top-level (unconditional) ``view_store``/``view_load`` of a rank-2, unswizzled,
  unmasked view at exactly ``(j, i)``, whose mode 0 (``j``) has a stride other than 1 and whose mode
  1 (``i``) has stride 1; a staged store's buffer has no other access, a staged load's buffer is
  only read.

Then, with ``TJ = 32`` and ``TI = B / 32``:

1. *Threads are remapped to tiles*: the kernel body (guard included) runs in a loop over the
   tiles ``tile = blk, blk + grid, ...`` of the ``ceil(R/TI) x ceil(C/TJ)`` tile grid
   (``bi = tile / ceil(C/TJ)``, ``bj = tile % ceil(C/TJ)``), so the launch keeps its
   ``ceil(P / B)`` blocks (with partial tiles there are a few more tiles than blocks; the trip
   count is block-uniform, so the barriers inside are safe; one more barrier ends each trip before
   the tile is re-used). Thread ``tid`` is item ``i = bi*TI + tid/TJ``, ``j = bj*TJ + tid%TJ``;
   the guard becomes ``i < R && j < C``. The signature records ``tiles = [[R, TI], [C, TJ]]``
   (informational: the grid stays ``ceil(P / B)``).
2. The tile is ``TI x S`` elements with ``S = TJ + 32/TI`` (33 for 32x32, 36 for 8x32): item
   ``(i, j)`` lives at ``smem[(tid/TJ)*S + tid%TJ]`` (a warp touches 32 consecutive words), the
   transposed side reads it back as ``smem[ii*S + jj]`` with ``ii = tid % TI``, ``jj = tid / TI``:
   the padding spreads the ``32/TI`` columns ``jj`` a warp reads over distinct banks.
3. A staged store becomes ``smem[...] = v`` in the body, then after the guard (every thread):
   ``gpu.barrier`` and ``b[bj*TJ + jj, bi*TI + ii] = smem[ii*S + jj]`` for in-range elements
   (consecutive lanes write consecutive ``i``, ``b``'s unit-stride mode). A staged load is the
   mirror image before the guard: ``smem[ii*S + jj] = a[bj*TJ + jj, bi*TI + ii]``, ``gpu.barrier``,
   and the body reads ``smem[(tid/TJ)*S + tid%TJ]``.

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


def _same(a, c) -> bool:
    return a == c


def _uses(v) -> list:
    return [u.owner for u in v.uses]


class CoalesceViews(Pass):
    """Stage transposed ``view_store``/``view_load`` s of 2-D problems through a padded tile."""

    name = "kern-coalesce-views"
    summary = "stage transposed view accesses through a padded workgroup tile (coalesced, conflict-free)"

    def __init__(self, remarks: Callable[[str], None] | None = None):
        self.remarks = remarks

    def _remark(self, op, text: str) -> None:
        if self.remarks is not None:
            self.remarks(f"{_where(op)}: remark: {text}")

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
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
        if len(delins) != 1 or len(delins[0].operands) != 3:
            return decline_all("the kernel is not a 2-D problem 'over (i, j) in (R, C)'")
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
        i_val, j_val = delin.results[0], delin.results[1]
        coord_names = ([ir.StringAttr(a).value for a in ir.ArrayAttr(delin.attributes["coord_names"])]
                       if "coord_names" in delin.attributes else ["i", "j"])
        iname, jname = coord_names[0], coord_names[1]
        body = guard.regions[0].blocks[0]
        TI = B // TJ
        S = TJ + WARP // TI
        staged = []
        for op in accesses:
            buf = op.operands[0]
            name = pname(buf)
            seg = _segments(op)
            coords = list(op.operands)[1:1 + seg[1]]
            layout, swizzle = kern.parse_view_layout(ir.StringAttr(op.attributes["layout"]).value)
            if name is None:
                self._remark(op, "not staging the access: its buffer is not a kernel argument")
                continue
            if swizzle is not None or layout.rank != 2 or len(coords) != 2:
                self._remark(op, f"not staging '{name}': only rank-2 unswizzled layouts are staged")
                continue
            st0, st1 = layout.stride
            one = Poly.const(1)
            j_pos = [k for k, c in enumerate(coords) if c == j_val]
            if coords[0] == i_val and coords[1] == j_val and st1 == one:
                self._remark(op, f"not staging '{name}': the fastest thread coordinate '{jname}' has "
                                 f"stride 1 in {name}'s layout (already coalesced)")
                continue
            if not (coords[0] == j_val and coords[1] == i_val):
                if coords[0] == i_val and coords[1] == j_val:
                    why = (f"the fastest thread coordinate '{jname}' has stride {st1} in {name}'s layout, "
                           f"but only accesses at the swapped coordinates ({jname}, {iname}) are staged")
                elif not j_pos:
                    why = (f"its coordinates are not the thread coordinates ({iname}, {jname}) or "
                           f"({jname}, {iname})")
                else:
                    why = f"its coordinates are not exactly the swapped thread coordinates ({jname}, {iname})"
                self._remark(op, f"not staging '{name}': {why}")
                continue
            if st0 == one:
                self._remark(op, f"not staging '{name}': the fastest thread coordinate '{jname}' has "
                                 f"stride 1 in {name}'s layout (already coalesced)")
                continue
            if st1 != one:
                self._remark(op, f"not staging '{name}': neither mode of {name}'s layout has stride 1")
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
            self._remark(op, f"staging '{name}' through a {TI}x{S} workgroup tile: the fastest "
                             f"thread coordinate '{jname}' has stride {st0} in {name}'s layout")
            staged.append(op)
        if staged:
            self._rewrite(fn, sig, guard, delin, extents, staged, TI, S)

    # -- rewrite --------------------------------------------------------------------------------
    def _rewrite(self, fn, sig, guard, delin, extents, staged, TI, S) -> None:
        R, C = list(delin.operands)[1:]
        kc = KernelContext(fn, sig, guard, int(sig.block))
        with ir.InsertionPoint(guard), guard.location:
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            blk = kern.BlockIdOp(b.index_t()).result
            nbj = b.arith.DivUIOp(b.add(C, b.idx(TJ - 1)), b.idx(TJ)).result
            nbi = b.arith.DivUIOp(b.add(R, b.idx(TI - 1)), b.idx(TI)).result
            # the launch keeps ceil(P / B) blocks (fewer than tiles when tiles are partial): each
            # block takes the tiles blk, blk + grid, ... (a block-uniform trip count)
            loop = b.scf.ForOp(blk, b.mul(nbi, nbj), gpu.GridDimOp(gpu.Dimension.x).result)
            with ir.InsertionPoint(loop.body):
                loop_end = b.scf.YieldOp([])
        guard.move_before(loop_end)
        with ir.InsertionPoint(loop_end), guard.location:
            b.barrier()  # the next tile re-uses the workgroup tile
        with ir.InsertionPoint(guard), guard.location:
            tile = loop.induction_variable
            bi = b.arith.DivUIOp(tile, nbj).result
            bj = b.sub(tile, b.mul(bi, nbj))
            row = b.arith.DivUIOp(tid, b.idx(TJ)).result
            col = b.arith.RemUIOp(tid, b.idx(TJ)).result
            i = b.add(b.mul(bi, b.idx(TI)), row)
            j = b.add(b.mul(bj, b.idx(TJ)), col)
            valid = b.and_(b.cmp("ult", i, R), b.cmp("ult", j, C))
            own = b.add(b.mul(row, b.idx(S)), col)  # this thread's item in the tile
            ii = b.arith.RemUIOp(tid, b.idx(TI)).result
            jj = b.arith.DivUIOp(tid, b.idx(TI)).result
            tr = b.add(b.mul(bj, b.idx(TJ)), jj)  # the transposed side: mode 0 (j), mode 1 (i)
            tc = b.add(b.mul(bi, b.idx(TI)), ii)
            tvalid = b.and_(b.cmp("ult", tc, R), b.cmp("ult", tr, C))
            tslot = b.add(b.mul(ii, b.idx(S)), jj)
        delin.results[0].replace_all_uses_with(i)
        delin.results[1].replace_all_uses_with(j)
        t_op = _owner(delin.operands[0])
        delin.erase()
        t_op.erase()
        guard.operands[0] = valid
        sig.tiles = [[extents[0], TI], [extents[1], TJ]]
        fn.attributes[SIGNATURE_ATTR] = ir.StringAttr.get(sig.to_json())

        loads = [op for op in staged if op.name == "kern.view_load"]
        stores = [op for op in staged if op.name == "kern.view_store"]
        for n, op in enumerate(loads):
            with op.location:
                elem = op.results[0].type
                smem = kc.workgroup(elem, TI * S, "coalesced view tile", region=f"tile.load{n}",
                                    location=op.location)
                with ir.InsertionPoint(guard):
                    with b.if_(tvalid):
                        new = op.clone()
                        new.move_before(_last_op(ir.InsertionPoint.current))
                        new.operands[1] = tr
                        new.operands[2] = tc
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
        for n, op in enumerate(stores):
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
                        new.operands[1] = tr
                        new.operands[2] = tc
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
