"""``kern-mma-contractions``: the contractions of f16/bf16 operands on tensor cores (``mma.sync``).

A kernel ``kern-tile-contractions`` would tile (:class:`~kernc.passes.tile_contractions._Analysis`
is its matcher, used here as is: the two *sides* of item coordinates, each flattened, the batch
coordinates, the loop or perfect loop nest) whose loop is exactly a product-sum of an ``f16`` (or
``bf16``) read depending on ``(i, k)`` and one of the same storage type depending on ``(k, j)``,
accumulated in ``f32``,

.. code-block:: text

    let acc = 0.0;
    for k in lb..ub { acc += a[i, k] * b[k, j]; }
    ... code after the loop, per item (c[i, j] = acc) ...

-- ``i`` and ``j`` each the flattened coordinates of one side (``conv2d_fwd_f16``: ``i = (n, oh,
ow)``, ``j = k``; ``conv2d_wgrad_f16``: ``i = k``, ``j = (r, s, c)``), ``k`` one loop or a perfect
nest collapsed into one in its order (``for r { for s { for c {...} } }``, innermost fastest:
:func:`~kernc.passes.tile_contractions.collapse_nest`), the reads any views (im2col, the
output-gradient ``K x M`` view, checked reads and their defaults), the rest of the body their index
arithmetic --
is rewritten as the warp-level tensor-core GEMM of CUTLASS's ``sm80`` kernels and the PTX ISA's
"Warp-level matrix multiply-accumulate instructions" (``mma.sync.aligned.m16n8k16.row.col.f32``
fed by ``ldmatrix``):

1. *Block tile* ``BM x BN`` of the flattened sides (batch coordinates fixed per tile), blocks looping over the tiles
   (grid-stride, as ``kern-tile-contractions``). The block's ``W = B/32`` warps form a ``WM x WN``
   grid (``WN >= WM``, powers of two), each computing a ``warp_m x warp_n`` (64x32) warp tile of
   ``MT x NT`` (4x4) ``m16n8`` accumulator fragments: ``BM = WM*warp_m``, ``BN = WN*warp_n``
   (128x128 for 256 threads).
2. *Staging per k-chunk* of ``BK`` (32): the block loads the ``BM x BK`` tile of the ``(i, k)`` read
   and the ``BK x BN`` tile of the ``(k, j)`` read into workgroup memory, cooperatively: the tile is
   of the *logical* view (each view read cloned with the tile's coordinates, a side's flattened
   index split back into its coordinates, ``k`` into the nest's loop variables, so any layout is
   loaded through its own; the index arithmetic no chunk changes computed once per tile), the lanes
   of a warp along the view's unit-stride coordinate, 0 past the edges (``i``, ``j`` beyond their
   flattened extents, ``k >= ub``; a checked read's default inside them): any extents. Each tile
   lies so that those stores are consecutive (:class:`_Stage`): *k contiguous*
   (``smem[x*S + kk]``, ``S = BK + 8``) for a read loaded along ``k``, else *x contiguous*
   (``smem[kk*S + x]``, ``S = X + 8``). Rows are *padded* by 8 elements: a row is then an odd
   number of 16-byte units, so the eight 16-byte rows one ``ldmatrix`` phase reads fall in eight
   distinct 4-bank groups (no bank conflict), and every row stays 16-byte aligned as ``ldmatrix``
   requires.
3. *Fragments* (PTX ISA 9.7.14.5.8 and 9.7.9.25): per ``k16`` step, ``ldmatrix.x4`` gives each
   ``m16`` A fragment (matrices 0..3 are a0a1, a2a3, a4a5, a6a7 of the ISA's A layout: from a k
   contiguous tile lane ``l`` gives row ``l % 16``, column ``8*(l/16)``; from an m contiguous one,
   with ``.trans``, row ``k = l%8 + 8*(l/16)``, column ``8*((l/8)%2)``) and ``ldmatrix.x2`` each
   ``n8`` B fragment (the ISA's ``.col`` layout is the ``n x k`` tile by rows: from a k contiguous
   tile lane ``l < 16`` gives row ``n = l%8``, column ``8*(l/8)``; from an n contiguous one, with
   ``.trans``, row ``k = l``), then ``MT*NT`` ``nvgpu.mma.sync`` (m16n8k16) update the
   accumulators, kept as ``vector<2x2xf32>`` loop values.
4. *The epilogue*: accumulator element ``c{2h+e}`` of fragment ``(mt, nt)`` is item
   ``(i0 + wm*warp_m + 16*mt + g + 8h, j0 + wn*warp_n + 8*nt + 2*t + e)`` (``g = lane/4``, ``t =
   lane%4``: the ISA's C/D layout), each side split back into its coordinates; the code before and
   after the loop runs for it under ``i < Mi && j < Mj`` (the flattened extents).

The sums are not in the kernel's order (a tensor core adds the products of a k16 step in an order
the ISA leaves open; the CPU interpreter's is documented in
:mod:`kernc.backend.interpreter.nvgpu`): the result is not bitwise the untiled kernel's, which the
remark says. ``f32`` operands would need TF32 (10-bit mantissas), which is never chosen silently:
such a contraction stays on ``kern-tile-contractions``' path, with a remark.

Applies on ``sm_80`` and later (``arch``); elsewhere, or when a kernel is not such a contraction
(other loop body, other types, ``@tile`` given, a block that is not a power-of-two number of
warps or has more than :data:`MAX_BLOCK` threads), the kernel is left to ``kern-tile-contractions`` and ``remarks`` says why. Off with
``--no-tensor-cores`` / ``kernc.compile(..., tensor_cores=False)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from kernc.dialect import kern
from kernc.dialect.mapping import MAPPING_ATTR, ItemMapping
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.support.mlir import dialect, ir

from . import ir_builder as b
from .base import Pass, functions, internal, option
from .targets import PTX_VERSION
from .tile_contractions import (Decline, _Analysis, _clone, _hoistable, _product, _slice, _split, collapse_nest,
                                flat_extents)
from .workgroup import SHARED_LIMIT, WARP, KernelContext, emit_remark

gpu = dialect("gpu")
nvgpu = dialect("nvgpu")
vector = dialect("vector")

#: The first architecture with ``mma.sync.aligned.m16n8k16`` for f16/bf16 and ``ldmatrix``
#: (PTX ISA, "Warp-level matrix multiply-accumulate instructions": ``sm_80`` for ``.bf16`` and
#: m16n8k16; ``ldmatrix`` needs ``sm_75``).
MIN_SM = 80
#: Elements each staged row is padded by (16 bytes of f16; see the module docstring, step 2).
PAD = 8
#: The mma instruction shape (m, n, k).
MMA_M, MMA_N, MMA_K = 16, 8, 16
#: Most threads per block: each thread holds 64 f32 accumulators, its fragments and the staging
#: addresses (about 210 registers at 256 threads, ptxas -v); 512 threads would leave 128 (65536
#: registers per block) and spill.
MAX_BLOCK = 256


def sm_number(arch: str) -> int:
    """``80`` of ``"sm_80"``, ``90`` of ``"sm_90a"``; ``ValueError`` for another spelling."""
    m = re.fullmatch(r"sm_(\d+)a?", arch)
    if not m:
        raise ValueError(f"not an SM architecture: {arch!r}")
    return int(m.group(1))


@dataclass(frozen=True)
class MmaConfig:
    """A ``bm x bn`` block tile in chunks of ``bk``, ``wm x wn`` warps of ``warp_m x warp_n``
    items each (``mt x nt`` m16n8 fragments)."""

    wm: int
    wn: int
    warp_m: int
    warp_n: int
    bk: int

    @property
    def bm(self) -> int:
        return self.wm * self.warp_m

    @property
    def bn(self) -> int:
        return self.wn * self.warp_n

    @property
    def mt(self) -> int:
        return self.warp_m // MMA_M

    @property
    def nt(self) -> int:
        return self.warp_n // MMA_N


@dataclass(frozen=True)
class _Stage:
    """Where a staged read's ``X x bk`` tile (``X``: ``bm`` for side ``i``, ``bn`` for side ``j``)
    lies in workgroup memory: ``x_major``, ``smem[x*stride + kk]`` (rows of ``k``: the lanes of a
    warp store along ``k``, the read's unit-stride coordinate), else ``smem[kk*stride + x]`` (rows of
    the tile coordinate); ``stride`` is the row's length padded by :data:`PAD` elements."""

    side: int
    x_major: bool
    rows: int
    stride: int

    @property
    def elems(self) -> int:
        return self.rows * self.stride

    def slot(self, kk, x):
        """The element of tile position ``(x, kk)`` (index values)."""
        if self.x_major:
            return b.add(b.mul(x, b.idx(self.stride)), kk)
        return b.add(b.mul(kk, b.idx(self.stride)), x)


def _stage(c: MmaConfig, s) -> _Stage:
    """The workgroup tile of staged read ``s``: oriented so that the cooperative stores of a warp,
    whose lanes run along the read's unit-stride coordinate (``s.k_fastest``: along ``k``), are
    consecutive elements (no bank conflict); ``ldmatrix`` then reads it with or without ``.trans``."""
    X = c.bm if s.side == 0 else c.bn
    if s.k_fastest:
        return _Stage(s.side, True, X, c.bk + PAD)
    return _Stage(s.side, False, c.bk, X + PAD)


def mma_config(block: int, warp_m: int, warp_n: int, bk: int) -> MmaConfig | str:
    """The configuration of a block of ``block`` threads, or why there is none (a remark)."""
    if block % WARP or (block // WARP) & (block // WARP - 1):
        return f"its block of {block} threads is not a power-of-two number of warps"
    if block > MAX_BLOCK:
        return (f"its block of {block} threads would leave each thread fewer registers than its "
                f"accumulators and fragments need (at most {MAX_BLOCK} threads)")
    if warp_m % MMA_M or warp_n % (2 * MMA_N) or bk % MMA_K or min(warp_m, warp_n, bk) <= 0:
        return (f"a {warp_m}x{warp_n} warp tile in chunks of {bk} is not made of m16n8k16 steps "
                "(warp_m a multiple of 16, warp_n of 16, block_k of 16)")
    w = block // WARP
    wm = 1 << ((w.bit_length() - 1) // 2)
    return MmaConfig(wm, w // wm, warp_m, warp_n, bk)


@dataclass
class MmaContractions(Pass):
    """Run the f16/bf16 contractions ``kern-tile-contractions`` matches on tensor cores:
    ``ldmatrix``-fed ``mma.sync`` m16n8k16, f32 accumulators, padded workgroup tiles."""

    name = "kern-mma-contractions"
    summary = "f16/bf16 contraction loops on tensor cores: ldmatrix + mma.sync m16n8k16, f32 sums"

    #: the target (``kernc compile --arch``): tensor cores from ``sm_80``
    arch: str = option("sm_90", choices=tuple(PTX_VERSION))
    #: the items of one warp (multiples of 16) and the loop chunk staged per step (multiple of 16)
    warp_m: int = option(64)
    warp_n: int = option(32)
    block_k: int = option(32)
    #: a callable that receives each one-line remark (``kernc compile --remarks``), or ``None``
    remarks: Callable[[str], None] | None = internal(None)

    def _remark(self, op, text: str) -> None:
        emit_remark(self.remarks, op, text)

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn in functions(module, {"gpu.func"}):
            if SIGNATURE_ATTR not in fn.attributes:
                continue
            sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
            plan = _Analysis(fn, sig)
            try:
                plan.run()
            except Decline:
                continue  # kern-tile-contractions says why
            if plan.loop is None:
                continue
            got = self._decide(sig, plan)
            if isinstance(got, str):
                self._remark(plan.loop, f"not using tensor cores for '{sig.name}': {got}")
                continue
            config, parts = got
            _Rewrite(fn, sig, plan, config, parts).run()
            self._remark(plan.loop, _describe(sig, plan, config, parts))

    def _decide(self, sig: KernelSignature, plan: _Analysis):
        """``(config, parts)`` for a contraction this pass takes, or why not (a remark)."""
        sm = sm_number(self.arch)
        if sm < MIN_SM:
            return (f"{self.arch} has no mma.sync m16n8k16 for f16/bf16 (sm_{MIN_SM} and later); "
                    "the contraction is tiled on CUDA cores")
        if sig.tile_config is not None:
            return "the kernel asks for a CUDA-core tile with @tile"
        parts = _match(plan)
        if isinstance(parts, str):
            return parts
        config = mma_config(plan.block, self.warp_m, self.warp_n, self.block_k)
        if isinstance(config, str):
            return config
        need = sum(_stage(config, st).elems for st in (parts.a, parts.b)) * 2
        if need > SHARED_LIMIT:
            return (f"its {config.bm}x{config.bn}x{config.bk} tiles need {need} bytes of workgroup "
                    f"memory, more than the {SHARED_LIMIT} bytes a block may use")
        return config, parts


@dataclass
class _Parts:
    """The matched loop: the staged reads ``a`` (side ``i``) and ``b`` (side ``j``), their storage
    type ``elem`` (f16 or bf16), the accumulator's initial value ``init`` (a float constant)."""

    a: object
    b: object
    elem: ir.Type
    init: float


def _owner(v):
    o = v.owner
    return o.operation if hasattr(o, "operation") else o


def _match(plan: _Analysis) -> _Parts | str:
    """The loop as ``acc += a * b`` of f16/bf16 reads, f32 sums; or why it is not (a remark)."""
    if len(plan.staged) != 2 or {s.side for s in plan.staged} != {0, 1}:
        return "its loop does not read one (i, k) and one (k, j) operand"
    sa, sb = sorted(plan.staged, key=lambda s: s.side)
    f32 = ir.F32Type.get()
    elems = [ir.MemRefType(s.op.operands[0].type).element_type for s in (sa, sb)]
    if any(isinstance(e, ir.F32Type) for e in elems):
        return ("its operands are f32: tensor cores would round them to TF32 (10-bit mantissas), "
                "which is never done without asking")
    if not all(isinstance(e, (ir.F16Type, ir.BF16Type)) for e in elems) or elems[0] != elems[1]:
        return f"its operands are {elems[0]} and {elems[1]}, not both f16 or both bf16"
    if any(s.op.results[0].type != f32 for s in (sa, sb)):
        return "its operands are computed in another type than f32"
    if len(plan.iter_args) != 1 or plan.iter_args[0].type != f32:
        return "it does not accumulate one f32 value"
    if not _product_sum(plan, sa, sb):
        return "its loop body is not 'acc += a * b'"
    init = _owner(plan.loop.operands[3])
    if not isinstance(init, ir.Operation) or init.name != "arith.constant":
        return "its sum does not start from a constant"
    return _Parts(sa, sb, elems[0], ir.FloatAttr(init.attributes["value"]).value)


def _product_sum(plan: _Analysis, sa, sb) -> bool:
    """Whether the innermost loop body yields ``acc + a*b`` (either order) of the two staged reads:
    the rest of the body (their index arithmetic, an inner loop's bounds) feeds nothing else."""
    acc = plan.iter_args[0]
    if len(plan.yld.operands) != 1:
        return False
    add = _owner(plan.yld.operands[0])
    if not isinstance(add, ir.Operation) or add.name != "arith.addf" or acc not in list(add.operands):
        return False
    rest = [v for v in add.operands if v != acc]
    mul = _owner(rest[0]) if len(rest) == 1 else None
    return (isinstance(mul, ir.Operation) and mul.name == "arith.mulf"
            and set(mul.operands) == {sa.op.results[0], sb.op.results[0]})


def _describe(sig, plan: _Analysis, c: MmaConfig, p: _Parts) -> str:
    tiles = []
    for s in (p.a, p.b):
        st = _stage(c, s)
        X = c.bm if s.side == 0 else c.bn
        shape = f"{X}x{c.bk}, k contiguous" if st.x_major else f"{c.bk}x{X}, {plan.side_name(s.side)} contiguous"
        tiles.append(f"{s.name} of {plan.side_name(s.side)}: {shape}, ldmatrix.{'x4' if s.side == 0 else 'x2'}"
                     f"{'' if st.x_major else '.trans'}")
    nest = f"; its nest of {len(plan.levels)} loops runs as one k, innermost fastest" if len(plan.levels) > 1 else ""
    return (f"'{sig.name}' on tensor cores: {c.bm}x{c.bn} block tiles in chunks of {c.bk} of k, "
            f"{c.wm}x{c.wn} warps of {c.warp_m}x{c.warp_n} items, mma.sync m16n8k16 ({p.elem} "
            f"products, f32 sums) fed by ldmatrix from workgroup tiles of the logical views "
            f"({'; '.join(tiles)}), rows padded by {PAD} elements (no bank conflict){nest}; the sums "
            f"are not in the loop's order (not bitwise the --no-tensor-cores result)")


class _Rewrite:
    """Build the tensor-core kernel of a matched contraction (the module docstring's steps 1-4)."""

    def __init__(self, fn, sig, plan: _Analysis, c: MmaConfig, parts: _Parts) -> None:
        self.fn, self.sig, self.plan, self.c, self.p = fn, sig, plan, c, parts
        self.stages = [_stage(c, s) for s in (parts.a, parts.b)]

    def run(self) -> None:
        fn, sig, plan, c, p = self.fn, self.sig, self.plan, self.c, self.p
        guard = plan.guard
        B = plan.block
        E = list(plan.delin.extents)
        kc = KernelContext(fn, sig, guard, B)
        self.smem = [kc.workgroup(p.elem, st.elems, f"tensor-core tile of '{s.name}'",
                                  region=f"mma.{s.name}.{'ab'[st.side]}", location=s.op.location)
                     for s, st in zip((p.a, p.b), self.stages)]
        kc.check_limit()
        loc = plan.loop.location
        with ir.InsertionPoint(guard), loc:
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            blk = kern.BlockIdOp(b.index_t()).result
            ext = [_product([E[x] for x in side]) for side in plan.sides]  # the flattened sides
            nbi = b.arith.DivUIOp(b.add(ext[0], b.idx(c.bm - 1)), b.idx(c.bm)).result
            nbj = b.arith.DivUIOp(b.add(ext[1], b.idx(c.bn - 1)), b.idx(c.bn)).result
            per = b.mul(nbi, nbj)
            count = per
            for x in plan.batch:
                count = b.mul(count, E[x])
            tiles = b.scf.ForOp(blk, count, gpu.GridDimOp(gpu.Dimension.x).result)
            with ir.InsertionPoint(tiles.body):
                end = b.scf.YieldOp([])
        with ir.InsertionPoint(end), loc:
            self._tile(tiles.induction_variable, tid, E, ext, per, nbj, B)
        guard.erase()
        for op in reversed(plan.entry[:3]):
            op.erase()
        nb = len(plan.batch)
        tiled = ItemMapping(B, tuple(flat_extents(plan)), tuple([1] * nb + [c.bm, c.bn]),
                            c.mt * c.nt * 4, self._thread_values(), True)
        assert tiled.problem() is None, tiled.problem()
        sig.tiles = tiled.launch_tiles()
        fn.attributes[SIGNATURE_ATTR] = ir.StringAttr.get(sig.to_json())
        fn.attributes[MAPPING_ATTR] = ir.StringAttr.get(tiled.to_json())

    def _thread_values(self) -> str:
        """The CuTe TV layout: thread ``4g + t + 32*(wn + WN*wm)``, value ``e + 2h + 4mt + 4MT*nt``
        at tile position ``(wm*warp_m + 16mt + 8h + g, wn*warp_n + 8nt + 2t + e)``, positions
        column-major over ``(1, ..., BM, BN)`` (row stride 1, column stride ``BM``)."""
        c = self.c
        bm = c.bm
        return (f"((4,8,{c.wn},{c.wm}),(2,2,{c.mt},{c.nt})):"
                f"(({2 * bm},1,{c.warp_n * bm},{c.warp_m}),({bm},8,16,{8 * bm}))")

    def _tile(self, tile, tid, E, ext, per, nbj, B) -> None:
        plan, c, p = self.plan, self.c, self.p
        if plan.batch:
            rest = b.arith.DivUIOp(tile, per).result
            in_batch = b.sub(tile, b.mul(rest, per))
            coord = _split(rest, plan.batch, E)
        else:
            in_batch, coord = tile, {}
        bi = b.arith.DivUIOp(in_batch, nbj).result
        bj = b.sub(in_batch, b.mul(bi, nbj))
        x0 = [b.mul(bi, b.idx(c.bm)), b.mul(bj, b.idx(c.bn))]
        lane = b.arith.RemUIOp(tid, b.idx(WARP)).result
        warp = b.arith.DivUIOp(tid, b.idx(WARP)).result
        wm = b.arith.DivUIOp(warp, b.idx(c.wn)).result
        wn = b.arith.RemUIOp(warp, b.idx(c.wn)).result
        w0 = [b.mul(wm, b.idx(c.warp_m)), b.mul(wn, b.idx(c.warp_n))]  # the warp's tile, within the block's
        first = {plan.coords[x]: v for x, v in coord.items()}
        for level in plan.levels:  # the bounds (the same for every item) from the code before the loop
            for v in level.operands[:2]:
                d = _owner(v)
                if any(d == op for op in plan.pre) and v not in first:
                    for op in _slice(d, plan):
                        if op.results[0] not in first:
                            _clone(op, first)
        ivs, lb, ub = collapse_nest(plan, first)
        f32 = ir.F32Type.get()
        acc_t = ir.VectorType.get([2, 2], f32)
        init = b.const(p.init, f32)
        accs0 = [vector.BroadcastOp(acc_t, init).result for _ in range(c.mt * c.nt)]
        coop = [self._slots(s, st, x0, tid, E, ext, first, B) for s, st in zip((p.a, p.b), self.stages)]
        chunks = b.scf.ForOp(lb, ub, b.idx(c.bk), accs0)
        with ir.InsertionPoint(chunks.body):
            k0 = chunks.induction_variable
            b.barrier()  # the previous chunk's (or tile's) ldmatrix reads are done
            for s, smem, (slots, per_chunk) in zip((p.a, p.b), self.smem, coop):
                T = s.op.results[0].type
                for kk, at, ok, slot, inside in slots:
                    k = b.add(k0, kk)

                    def then(at=at, s=s, k=k, per_chunk=per_chunk):
                        m = dict(at)
                        m.update(ivs(k))
                        for op in per_chunk:
                            _clone(op, m)
                        return [m[s.op.results[0]]]
                    val = b.if_else(b.and_(ok, b.cmp("ult", k, ub)), [T], then, lambda T=T: [b.zero(T)])
                    val = b.convert_float(val[0], p.elem)  # exact: the read widened an elem
                    if inside is None:
                        b.store(val, smem, slot)
                    else:  # the last round of slots of a tile that is not a multiple of the block
                        with b.if_(inside):
                            b.store(val, smem, slot)
            b.barrier()
            accs = list(chunks.inner_iter_args)
            for ks in range(c.bk // MMA_K):
                afr = [self._a_fragment(lane, b.add(w0[0], b.idx(mt * MMA_M)), ks * MMA_K) for mt in range(c.mt)]
                bfr = [self._b_fragment(lane, b.add(w0[1], b.idx(nt * MMA_N)), ks * MMA_K) for nt in range(c.nt)]
                for mt in range(c.mt):
                    for nt in range(c.nt):
                        x = mt * c.nt + nt
                        accs[x] = nvgpu.MmaSyncOp(acc_t, afr[mt], bfr[nt], accs[x],
                                                  [MMA_M, MMA_N, MMA_K]).result
            b.scf.YieldOp(accs)
        self._epilogue(list(chunks.results), lane, x0, w0, ext, E, first)

    def _a_fragment(self, lane, m, k: int):
        """The ``ldmatrix.x4`` A fragment of rows ``m..m+15``, columns ``k..k+15`` (matrices 0..3:
        a0a1, a2a3, a4a5, a6a7 of the ISA's A layout: rows ``+0/+8``, then columns ``+8``). Rows of
        k (``m x k`` tile): lane ``l`` gives row ``m + l%16``, column ``k + 8*(l/16)``. Rows of m
        (``k x m`` tile, ``.trans``): lane ``l`` gives row ``k + l%8 + 8*(l/16)``, column ``m +
        8*((l/8)%2)``: each 8x8 matrix transposed back."""
        st, frag = self.stages[0], ir.VectorType.get([4, 2], self.p.elem)
        if st.x_major:
            row = b.add(m, b.arith.RemUIOp(lane, b.idx(16)).result)
            col = b.add(b.mul(b.arith.DivUIOp(lane, b.idx(16)).result, b.idx(8)), b.idx(k))
        else:
            row = b.add(b.add(b.arith.RemUIOp(lane, b.idx(8)).result,
                              b.mul(b.arith.DivUIOp(lane, b.idx(16)).result, b.idx(8))), b.idx(k))
            col = b.add(m, b.mul(b.arith.RemUIOp(b.arith.DivUIOp(lane, b.idx(8)).result, b.idx(2)).result,
                                 b.idx(8)))
        addr = b.add(b.mul(row, b.idx(st.stride)), col)
        return nvgpu.LdMatrixOp(frag, self.smem[0], [addr], not st.x_major, 4).result

    def _b_fragment(self, lane, n, k: int):
        """The ``ldmatrix.x2`` B fragment of rows ``k..k+15``, columns ``n..n+7`` (the ISA's ``.col``
        B layout: matrices b0b1 of rows ``k..k+7``, b2b3 of ``k+8..k+15``). Rows of n (``k x n``
        tile, ``.trans``): lane ``l < 16`` gives row ``k + l``, column ``n``. Rows of k (``n x k``
        tile): lane ``l`` gives row ``n + l%8``, column ``k + 8*((l/8)%2)``."""
        st, frag = self.stages[1], ir.VectorType.get([2, 2], self.p.elem)
        l16 = b.arith.RemUIOp(lane, b.idx(16)).result
        if st.x_major:
            row = b.add(n, b.arith.RemUIOp(lane, b.idx(8)).result)
            col = b.add(b.mul(b.arith.DivUIOp(l16, b.idx(8)).result, b.idx(8)), b.idx(k))
        else:
            row, col = b.add(l16, b.idx(k)), n
        addr = b.add(b.mul(row, b.idx(st.stride)), col)
        return nvgpu.LdMatrixOp(frag, self.smem[1], [addr], not st.x_major, 2).result

    def _epilogue(self, accs, lane, x0, w0, ext, E, first) -> None:
        """The code after the loop per accumulator element, under its item's guard: element
        ``c{2h+e}`` of fragment ``(mt, nt)`` is item ``(x0 + w0 + 16mt + g + 8h, x0' + w0' + 8nt + 2t
        + e)`` of the flattened sides (``g = lane/4``, ``t = lane%4``: the ISA's C/D layout), each
        side split back into its coordinates."""
        plan, c = self.plan, self.c
        g = b.arith.DivUIOp(lane, b.idx(4)).result
        t2 = b.mul(b.arith.RemUIOp(lane, b.idx(4)).result, b.idx(2))

        def at(side: int, x):
            return b.cmp("ult", x, ext[side]), {plan.coords[q]: v for q, v in _split(x, plan.sides[side], E).items()}
        rows = {(mt, h): at(0, b.add(b.add(x0[0], w0[0]), b.add(g, b.idx(mt * MMA_M + 8 * h))))
                for mt in range(c.mt) for h in range(2)}
        cols = {(nt, e): at(1, b.add(b.add(x0[1], w0[1]), b.add(t2, b.idx(nt * MMA_N + e))))
                for nt in range(c.nt) for e in range(2)}
        for (mt, h), (ok_i, at_i) in rows.items():
            for (nt, e), (ok_j, at_j) in cols.items():
                m = {**first, **at_i, **at_j}
                with b.if_(b.and_(ok_i, ok_j)):
                    for op in plan.pre:
                        _clone(op, m)
                    m[plan.loop.results[0]] = vector.ExtractOp(accs[mt * c.nt + nt], [], [h, e]).result
                    for op in plan.post:
                        _clone(op, m)

    def _slots(self, s, st: _Stage, x0, tid, E, ext, first, B) -> tuple[list, list]:
        """The cooperative loads of staged read ``s`` into its tile ``st``: ``(slots, per_chunk)``,
        slots ``(kk, at, in_range, smem index, inside)`` for ``e = tid + r*B`` (``at``: the values of
        its coordinates and of its index arithmetic that no chunk changes, computed once per tile;
        ``inside``: ``e < total``, ``None`` where every lane's slot is in the tile), the lanes of a
        warp along its unit-stride coordinate; ``per_chunk`` the ops each chunk re-computes."""
        c, plan = self.c, self.plan
        sliced = _slice(s.op, plan)
        hoist = _hoistable(sliced[:-1], plan, E)
        X = c.bm if s.side == 0 else c.bn
        total = c.bk * X
        slots = []
        for r in range(-(-total // B)):
            e = b.add(tid, b.idx(r * B)) if r else tid
            if s.k_fastest:
                kk = b.arith.RemUIOp(e, b.idx(c.bk)).result
                xl = b.arith.DivUIOp(e, b.idx(c.bk)).result
            else:
                xl = b.arith.RemUIOp(e, b.idx(X)).result
                kk = b.arith.DivUIOp(e, b.idx(X)).result
            x = b.add(x0[s.side], xl)
            ok = b.cmp("ult", x, ext[s.side])
            inside = b.cmp("ult", e, b.idx(total)) if (r + 1) * B > total else None
            at = dict(first)
            at.update({plan.coords[q]: v for q, v in _split(x, plan.sides[s.side], E).items()})
            for op in hoist:
                _clone(op, at)
            slots.append((kk, at, ok, st.slot(kk, xl), inside))
        return slots, [op for op in sliced if op not in hoist]


__all__ = ["MmaContractions", "MmaConfig", "mma_config", "sm_number"]
