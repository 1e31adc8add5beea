"""``kern-coalesce-views``: stage transposed view accesses of N-D problems through a workgroup tile.

In an N-D kernel ``over (..., i, ..., j) in (..., R, ..., C)`` consecutive threads of a warp get
consecutive ``j`` (the last coordinate is the fastest, ``kern.delinearize``). A view access whose
fastest thread coordinate ``j`` is *not* the storage's unit-stride mode -- the naive transpose
``b[j, i] = a[i, j]`` with ``b`` row-major ``(C, R):(R, 1)``, or the NCHW -> NHWC permute
``y[n, h, w, c] = x[n, c, h, w]`` where ``w`` has stride ``C`` in ``y`` -- touches one 32-byte sector
per lane: 32 sectors per warp request instead of 4. This pass applies the shared-memory transpose of
NVIDIA's "An Efficient Matrix Transpose in CUDA C/C++" (M. Harris, NVIDIA Developer Blog) to the
plane of ``j`` and the coordinate ``i`` that has unit stride in that view (``c`` in the permute),
batched over the other coordinates: each block stages a ``TI x 32`` tile of that plane in workgroup
memory, so that both the global read and the global write move along unit stride, and the tile's
rows are padded (one padding column for a 32x32 tile) so that both shared-memory accesses are free
of bank conflicts. As in the CUDA version (a 32x32 tile, blocks of 32x8 threads), each thread moves
several elements of its tile: several independent global loads in flight before the barrier, and
the transposed side writes 128-byte rows.

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

Then, with ``TJ = 32``, ``Rb = B / 32`` tile rows per pass of the block, ``TI = min(32, 4*Rb)``
tile rows and ``K = TI / Rb`` elements per thread (``B`` = 64, 128, 256, 512, 1024: tiles of 8, 16,
32, 32, 32 rows, ``K`` = 4, 4, 4, 2, 1):

1. *Threads are remapped to tiles*: the kernel body runs in a loop over the tiles ``tile = blk,
   blk + grid, ...`` of the ``batch x ceil(Ei/TI) x ceil(Ej/TJ)`` tile grid (``batch``: the
   product of the other extents, whose coordinates are fixed per tile). The signature records
   ``tiles = [[Ei, TI], [Ej, TJ]]`` and the launch has one block per tile (``backend/binding.py``:
   ``grid = P / (Ei*Ej) * ceil(Ei/TI) * ceil(Ej/TJ)``); the loop keeps any grid correct (its trip
   count is block-uniform, so the barriers inside are safe; one more barrier ends each trip before
   the tile is re-used). Thread ``tid`` is the ``K`` items ``i = bi*TI + tid/TJ + k*Rb``,
   ``j = bj*TJ + tid%TJ``, ``k < K``: the guard ``scf.if`` and its body are emitted ``K`` times
   (clones with ``i`` and the tile slot offset), each guard ``i < Ei && j < Ej``.
2. The tile is ``TI x S`` elements with ``S = TJ + 32/TI`` (33 for 32 rows, 34 for 16, 36 for 8):
   item ``k`` lives at ``smem[(tid/TJ + k*Rb)*S + tid%TJ]`` (a warp touches 32 consecutive words);
   the transposed side is tile element ``(ii, jj + k*CJ)`` with ``ii = tid % TI``, ``jj = tid / TI``,
   ``CJ = B / TI`` columns per pass, at ``smem[ii*S + jj + k*CJ]``: a warp reads ``32/TI`` columns
   of ``TI`` rows, and the padding puts row ``ii`` at bank offset ``ii * 32/TI`` (``S`` mod 32),
   so the warp's ``32/TI`` consecutive columns (from a multiple of ``32/TI``: ``32w/TI + k*CJ``)
   fill the gaps: 32 distinct banks. An element is a 4-byte word or larger: 1- and 2-byte values
   are held widened to 32 bits (the padding counts in words), and a view that computes in a wider
   float than it stores (``compute f64`` over f32) is held in its storage type (it converts to or
   from it anyway: no bit changes).
3. A staged store: each of the ``K`` guards yields the stored value (0 where the guard is false),
   then (every thread, after the ``K`` guards, so the bodies' global loads are all issued first)
   the ``K`` tile writes ``smem[...] = v``, one ``gpu.barrier``, and the ``K`` transposed writes of
   the view at ``j = bj*TJ + jj + k*CJ``, ``i = bi*TI + ii`` (the batch coordinates unchanged) from
   ``smem[ii*S + jj + k*CJ]`` for in-range elements (consecutive lanes write consecutive ``i``, the
   view's unit-stride mode: 128-byte rows for a 32-row tile). A staged load is the mirror image
   before the guards: ``K`` guarded transposed loads (yielding 0 out of range), the ``K`` tile
   writes, one barrier, and the body ``k`` reads ``smem[(tid/TJ + k*Rb)*S + tid%TJ]``.

The signature also records the staged accesses as the unstaged kernel would make them
(``staged``: the problem extents and each view's strides). At launch, a tiled kernel whose tiles the
extents would leave emptier than those accesses leave their sectors (``binding.staging_pays``: a
transpose with an extent of a few elements) runs the kernel compiled without this pass instead
(``kernc.api.Kernel.launch``).

``remarks`` (a callable taking one line) explains each view access's decision
(``kernc compile --remarks``); the pass is left out of the pipeline by ``--no-coalesce``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from kernc.dialect import kern
from kernc.dialect.access import Delinearize, ViewAccess
from kernc.dialect.mapping import MAPPING_ATTR, ItemMapping, of_function
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.dialect.strided import Poly
from kernc.support.errors import CompileError, Diagnostic
from kernc.support.mlir import dialect, ir

from . import ir_builder as b
from .base import Pass, functions, internal, walk_ops
from .to_gpu import GUARD_ATTR, item_mapping
from .workgroup import WARP, KernelContext

gpu = dialect("gpu")

TJ = 32
_VIEW_ACCESSES = {"kern.view_load", "kern.view_store"}
_FOUND_BY_THE_FIRST_WALK = {"scf.if", "kern.delinearize", *_VIEW_ACCESSES}
_LOC = re.compile(r'loc\("([^"]+)":(\d+):(\d+)')


def _where(op) -> str:
    m = _LOC.search(str(op.location))
    return f"{m.group(1)}:{m.group(2)}:{m.group(3)}" if m else "<unknown>"


def _owner(v):
    o = v.owner
    return o.operation if hasattr(o, "operation") else o


def _uses(v) -> list:
    return [u.owner for u in v.uses]


@dataclass
class CoalesceViews(Pass):
    """Stage transposed ``view_store``/``view_load`` s of N-D problems through a padded tile."""

    name = "kern-coalesce-views"
    summary = "stage transposed view accesses through a padded workgroup tile (coalesced, conflict-free)"

    #: a callable that receives each one-line remark (``kernc compile --remarks``), or ``None``
    remarks: Callable[[str], None] | None = internal(None)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._said: set = set()

    def _remark(self, op, text: str) -> None:
        # once per source location and text: an unrolled loop repeats the same access (and remark)
        line = f"{_where(op)}: remark: {text}"
        if self.remarks is not None and line not in self._said:
            self._said.add(line)
            self.remarks(line)

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        self._said = set()
        for fn in functions(module, {"gpu.func"}):
            if SIGNATURE_ATTR not in fn.attributes:
                continue
            ops = walk_ops(fn, _FOUND_BY_THE_FIRST_WALK)  # one walk over the kernel for all three
            guards = [op for op in ops if op.name == "scf.if" and GUARD_ATTR in op.attributes]
            if len(guards) != 1:
                continue
            self._kernel(fn, guards[0], [op for op in ops if op.name in _VIEW_ACCESSES],
                         [op for op in ops if op.name == "kern.delinearize"])

    # -- analysis -------------------------------------------------------------------------------
    def _kernel(self, fn, guard, accesses: list, delins: list) -> None:
        """``accesses``: the kernel's ``view_load``/``view_store`` ops; ``delins``: its
        ``kern.delinearize`` ops (both in walk order)."""
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
                self._remark(op, f"not staging '{pname(ViewAccess.buffer_of(op))}': {why}")

        try:
            mapping = of_function(fn) or item_mapping(fn, sig)
        except ValueError as err:
            raise CompileError(Diagnostic(f"kernel '{sig.name}': the {MAPPING_ATTR} attribute: {err}")) from None
        delins = [Delinearize.from_op(op) for op in delins]
        if len(delins) != 1 or len(delins[0].extents) < 2:
            return decline_all("the kernel is not an N-D problem 'over (i, j) in (R, C)'")
        delin = delins[0]
        tdef = _owner(delin.linear)
        if not isinstance(tdef, ir.Operation) or tdef.name != "kern.thread_id":
            return decline_all("the problem is not delinearized from the thread id")
        if not walk_ops(guard, {"kern.delinearize"}):  # (the guard is emitted K times: its body
            # must hold every use of the coordinates)
            return decline_all("the thread coordinates are computed outside the kernel body")
        body_ids = [op for op in walk_ops(guard, {"kern.thread_id", "kern.block_id", "kern.lane_id"})]
        # the staging remaps threads to tile elements: any other use of a thread's ids would change
        builtins = sorted({op.name.split(".", 1)[1] for op in body_ids if op != tdef} - {"thread_id"})
        if builtins:
            return decline_all(f"the kernel reads {' and '.join(f'{n}()' for n in builtins)}, which "
                               f"staging would change (it remaps threads to tile elements)")
        if any(op != tdef for op in body_ids) or len(_uses(tdef.results[0])) != 1:
            return decline_all("the kernel uses the thread id beyond the problem coordinates "
                               "(thread_id(), or an accessor such as a sequential buffer's)")
        if "workgroup_attributions" in fn.attributes:
            return decline_all("the kernel already stages accessors through workgroup memory")
        B = mapping.block
        if B < 64 or B % WARP:
            return decline_all(f"a block of {B} threads is too small for a tile (needs >= 64)")
        if mapping.tile is not None:
            return decline_all("the kernel's items are mapped to tiles already")
        if len(mapping.extents) != len(delin.extents):  # (kern-to-gpu maps the items linearly over
            # [P] when the extents are not size symbols or constants)
            return decline_all("the problem extents are not size symbols or constants")
        extents = list(mapping.extents)
        results = delin.coords
        j_val = results[-1]
        coord_names = delin.coord_names
        jname = coord_names[-1]
        body = guard.regions[0].blocks[0]
        R = B // TJ  # tile rows per pass of the block
        TI = min(TJ, 4 * R)  # at most 4 elements per thread
        K = TI // R
        S = TJ + WARP // TI  # row stride: 33 for 32 rows, 34 for 16, 36 for 8 (conflict-free)
        staged = []  # (op, position of j in its coordinates, position of the tile's other coordinate)
        views = []  # [param, [stride of each thread coordinate]] of each staged access
        ki = None  # the problem coordinate that the staged accesses move along unit stride
        for op in accesses:
            view = ViewAccess.from_op(op)
            buf = view.buffer
            name = pname(buf)
            coords, layout, swizzle = view.coords, view.layout, view.swizzle
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
            if view.mask is not None:
                self._remark(op, f"not staging '{name}': masked accesses are not staged")
                continue
            if op.parent != guard or op.block != body:
                self._remark(op, f"not staging '{name}': the access is conditional (inside an 'if', "
                                 f"a loop, or after a 'return')")
                continue
            others = [u for u in _uses(buf) if u != op]
            if op.name == "kern.view_store" and others:
                self._remark(op, f"not staging '{name}': the kernel accesses it elsewhere")
                continue
            if op.name == "kern.view_load" and any(u.name != "kern.view_load" for u in others):
                self._remark(op, f"not staging '{name}': the kernel also writes it")
                continue
            ki = k_op
            self._remark(op, f"staging '{name}' through a {TI}x{S} workgroup tile, {K} element"
                             f"{'s' if K > 1 else ''} per thread: the fastest "
                             f"thread coordinate '{jname}' has stride {layout.stride[pj]} in {name}'s "
                             f"layout, '{coord_names[ki]}' has stride 1")
            staged.append((op, pj, pi))
            # the access as the unstaged kernel makes it: each thread coordinate's stride
            strides = ["0"] * len(results)
            for p, c in enumerate(coords):
                strides[results.index(c)] = str(layout.stride[p])
            if [name, strides] not in views:  # (a view read twice is one access pattern)
                views.append([name, strides])
        if staged:
            sig.staged = {"extents": extents, "views": views}
            tiled = ItemMapping.tiled(B, extents, (ki, len(extents) - 1), (TI, TJ))
            assert tiled.values == K, (tiled, K)
            self._rewrite(fn, sig, guard, delin, tiled, staged, ki, S)

    # -- rewrite --------------------------------------------------------------------------------
    def _rewrite(self, fn, sig, guard, delin, tiled: ItemMapping, staged, ki, S) -> None:
        """Remap the items to the tiles of ``tiled`` (thread ``tid``'s items: ``tiled.values`` rows
        ``tid / TJ + k*R`` of column ``tid % TJ``, its TV layout) and stage the ``staged`` accesses."""
        E = delin.extents
        k = len(E)
        jk = k - 1
        B = tiled.block
        TI, K = tiled.tile[ki], tiled.values
        R = B // TJ  # tile rows per pass of the block on the body's side
        CJ = B // TI  # tile columns per pass on the transposed side (R * CJ * K == B * K == TI * TJ)
        batch = [x for x in range(k) if x not in (ki, jk)]  # the coordinates fixed per tile
        kc = KernelContext(fn, sig, guard, B)
        with ir.InsertionPoint(guard), guard.location:
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            blk = kern.BlockIdOp(b.index_t()).result
            nbj = b.arith.DivUIOp(b.add(E[jk], b.idx(TJ - 1)), b.idx(TJ)).result
            nbi = b.arith.DivUIOp(b.add(E[ki], b.idx(TI - 1)), b.idx(TI)).result
            per = b.mul(nbi, nbj)  # tiles per batch element
            count = per
            for x in batch:
                count = b.mul(count, E[x])
            # the launch has one block per tile (binding.py: the grid of ``sig.tiles``); the loop
            # over tiles blk, blk + grid, ... keeps any grid correct (a block-uniform trip count)
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
            i0 = b.mul(bi, b.idx(TI))
            j0 = b.mul(bj, b.idx(TJ))
            # the body's side: thread tid is items (i0 + row + k*R, j0 + col), k = 0..K-1, at
            # smem[(row + k*R)*S + col] (a warp touches 32 consecutive words)
            row = b.arith.DivUIOp(tid, b.idx(TJ)).result
            col = b.arith.RemUIOp(tid, b.idx(TJ)).result
            coord[jk] = b.add(j0, col)
            jvalid = b.cmp("ult", coord[jk], E[jk])
            ci, valid, own = [], [], []
            for n in range(K):
                r = b.add(row, b.idx(n * R)) if n else row
                ci.append(b.add(i0, r))
                valid.append(b.and_(b.cmp("ult", ci[n], E[ki]), jvalid))
                own.append(b.add(b.mul(r, b.idx(S)), col))
            coord[ki] = ci[0]
            # the transposed side: thread tid is tile element (ii, jj + k*CJ), consecutive lanes at
            # consecutive ii (the staged view's unit-stride mode), at smem[ii*S + jj + k*CJ]
            ii = b.arith.RemUIOp(tid, b.idx(TI)).result
            jj = b.arith.DivUIOp(tid, b.idx(TI)).result
            tc = b.add(i0, ii)
            tcvalid = b.cmp("ult", tc, E[ki])
            tr, tvalid, tslot = [], [], []
            islot = b.mul(ii, b.idx(S))
            for n in range(K):
                c = b.add(jj, b.idx(n * CJ)) if n else jj
                tr.append(b.add(j0, c))
                tvalid.append(b.and_(tcvalid, b.cmp("ult", tr[n], E[jk])))
                tslot.append(b.add(islot, c))
        for x, r in enumerate(delin.coords):
            r.replace_all_uses_with(coord[x])
        t_op = _owner(delin.linear)
        delin.op.erase()
        t_op.erase()
        guard.operands[0] = valid[0]
        sig.tiles = tiled.launch_tiles()
        fn.attributes[SIGNATURE_ATTR] = ir.StringAttr.get(sig.to_json())
        fn.attributes[MAPPING_ATTR] = ir.StringAttr.get(tiled.to_json())
        # (positions are carried with each op: an op's hash changes with its operands, and a
        # staged store's value may be a staged load's result, replaced below)
        def transposed(new, pj: int, pi: int, n: int) -> None:
            new.operands[ViewAccess.coord_operand(pj)] = tr[n]
            new.operands[ViewAccess.coord_operand(pi)] = tc

        loads = [t for t in staged if t[0].name == "kern.view_load"]
        stores = [t for t in staged if t[0].name == "kern.view_store"]
        # staged loads: the K global loads of each (independent: nothing uses them before the
        # last one is issued), then the tile writes, then one barrier
        for n, (op, pj, pi) in enumerate(loads):
            with op.location:
                elem = op.results[0].type
                held = _held_type(elem, op)
                smem = kc.workgroup(_word_type(held), TI * S, "coalesced view tile", region=f"tile.load{n}",
                                    location=op.location)
                values = []
                with ir.InsertionPoint(guard):
                    for m in range(K):
                        def then(m=m):
                            new = op.clone()
                            transposed(new, pj, pi, m)
                            return [new.results[0]]
                        values += b.if_else(tvalid[m], [elem], then, lambda: [b.zero(elem)])
                    for m in range(K):
                        b.store(_to_tile(values[m], held), smem, tslot[m])
                with ir.InsertionPoint(op):
                    v = _from_tile(b.load(smem, own[0]), held, elem)
                op.results[0].replace_all_uses_with(v)
                op.erase()
        if loads:
            with ir.InsertionPoint(guard), guard.location:
                b.barrier()
        # staged stores: the guard yields their values; the tile writes follow the K guards
        values = [ViewAccess.from_op(op).value for op, _, _ in stores]
        for op, _, _ in stores:
            op.detach_from_parent()  # (kept to clone the transposed stores from)
        if values:
            guard = _yielding(guard, values)
        guards = [guard]
        for n in range(1, K):  # the body for sub-rows k = 1..K-1: i = i0 + row + k*R
            with ir.InsertionPoint(loop_end):
                g = guard.clone().operation
            g.move_after(guards[-1])
            g.operands[0] = valid[n]
            _remap(g, [(ci[0], ci[n]), (own[0], own[n])])
            guards.append(g)
        if stores:
            after = _next_op(guards[-1])
            with ir.InsertionPoint(after), guard.location:
                smems = []
                helds = [_held_type(v.type, op) for v, (op, _, _) in zip(values, stores)]
                for n, (op, pj, pi) in enumerate(stores):
                    smems.append(kc.workgroup(_word_type(helds[n]), TI * S, "coalesced view tile",
                                              region=f"tile.store{n}", location=op.location))
                    for m in range(K):
                        b.store(_to_tile(guards[m].results[n], helds[n]), smems[n], own[m])
                b.barrier()
                for m in range(K):
                    got = [_from_tile(b.load(smem, tslot[m]), held, v.type)
                           for smem, held, v in zip(smems, helds, values)]
                    with b.if_(tvalid[m]):
                        for n, (op, pj, pi) in enumerate(stores):
                            new = op.clone()
                            transposed(new, pj, pi, m)
                            new.operands[ViewAccess.value_operand(new)] = got[n]
        kc.check_limit()


def _held_type(t, op):
    """The type the tile holds a staged access's values of type ``t`` in: the view's storage type
    when both are floats and the storage is narrower (``compute f64`` over ``f32`` storage): the
    access converts to or from it anyway, once, so holding it there changes no bit, and halves the
    tile (an f64 tile took 2 wavefronts per request: a bank conflict each)."""
    storage = ir.MemRefType(op.operands[0].type).element_type
    if b.is_float(t) and b.is_float(storage) and b.bits(storage) < b.bits(t):
        return storage
    return t


def _word_type(t):
    """The tile's element type for values of type ``t``: ``t`` itself, or a 32-bit word for 1- and
    2-byte values (``i8``, ``i16``, ``i1``; ``f16``/``bf16`` as ``f32``). The row padding spreads the
    rows over the banks in 4-byte words: a padding of one 1-byte element moved no row to another
    bank (24 conflicts per 32x33 tile of ``i8``)."""
    if b.bits(t) >= 32:
        return t
    return ir.F32Type.get() if b.is_float(t) else ir.IntegerType.get_signless(32)


def _to_tile(v, held):
    """``v`` as the tile holds it: converted to ``held`` (:func:`_held_type`), then widened to a
    :func:`_word_type` word (exactly: :func:`_from_tile` gives the converted value back)."""
    v = b.convert_float(v, held)  # (the identity when ``held`` is ``v``'s type)
    word = _word_type(held)
    if word == held:
        return v
    return (b.arith.ExtFOp(word, v) if b.is_float(held) else b.arith.ExtUIOp(word, v)).result


def _from_tile(w, held, t):
    """A tile word ``w`` back as a value of type ``t`` (the inverse of :func:`_to_tile`)."""
    if w.type != held:
        w = (b.arith.TruncFOp(held, w) if b.is_float(held) else b.arith.TruncIOp(held, w)).result
    return b.convert_float(w, t)


def _yielding(guard, values):
    """``guard`` rebuilt as an ``scf.if`` that yields ``values`` (zeros where the guard is false)."""
    types = [v.type for v in values]
    with ir.InsertionPoint(guard), guard.location:
        new = b.scf.IfOp(guard.operands[0], types, has_else=True)
        with ir.InsertionPoint(new.then_block):
            term = b.scf.YieldOp(values)
        with ir.InsertionPoint(new.else_block):
            b.scf.YieldOp([b.zero(t) for t in types])
    for o in list(guard.regions[0].blocks[0].operations)[:-1]:  # all but the scf.yield
        o.move_before(term)
    for name in list(guard.attributes):
        new.operation.attributes[name] = guard.attributes[name]
    guard.erase()
    return new.operation


def _remap(root, mapping) -> None:
    """Replace the uses of each ``old`` by ``new`` for ``(old, new)`` in ``mapping`` in the ops nested
    under ``root``."""
    for region in root.regions:
        for block in region.blocks:
            for o in block.operations:
                for n, v in enumerate(o.operands):
                    for old, new in mapping:
                        if v == old:
                            o.operands[n] = new
                            break
                _remap(o, mapping)


def _next_op(op):
    """The operation after ``op`` in its block."""
    found = False
    for o in op.block.operations:
        if found:
            return o
        if o == op:
            found = True
    raise ValueError("no operation follows")
