"""``kern-tile-contractions``: tile the contractions of N-D kernels through workgroup memory.

A kernel written one output per item,

.. code-block:: text

    kernel gemm(a: f32[M, K] view, b: f32[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
        let acc = 0.0;
        for k in 0..K { acc += a[i, k] * b[k, j]; }
        c[i, j] = acc;
    }

re-reads a whole row of ``a`` and a whole column of ``b`` per output: 2*K loads per item where the
items of a row of outputs share their ``a`` reads and those of a column their ``b`` reads. This pass
applies the classic shared-memory tiling of a matrix product (V. Volkov and J. Demmel, "Benchmarking
GPUs to tune dense linear algebra", SC'08; the CUDA C++ Programming Guide's "Shared Memory" matrix
multiplication; register micro-tiles as in CUTLASS's thread-level GEMM) to the kernel's own loop:

1. *Block tile.* The item coordinates split into two *sides* and batch coordinates
   (:func:`_groups`): each staged read depends on the coordinates of one side only (``a[i, k]``:
   ``i``; conv2d_fwd's ``x.checked(im2col(...)(m, kk))``, ``m = (n*OH + oh)*OW + ow``: ``(n, oh,
   ow)``; ``w[k, r, s, c]``: ``k``), each side flattened into one coordinate (its linear index over
   its extents, last fastest) and tiled ``BM`` (side ``i``) x ``BN`` (side ``j``); the batch
   coordinates are fixed per tile (a batched GEMM whose operands both depend on ``z``). Block ``b`` loops over the tiles ``b, b +
   grid, ...`` of the tile grid (row-major, last coordinate fastest; one block per tile at launch:
   the signature's ``tiles``), as ``kern-coalesce-views`` does.
2. *Thread micro-tile (thread coarsening).* The ``B`` threads of a block form a ``TY x TX`` grid
   (``TX = BN / TN``, ``TY = BM / TM``); thread ``(ty, tx)`` computes the ``TM x TN`` items ``i = i0
   + ty + u*TY``, ``j = j0 + tx + v*TX`` (``u < TM``, ``v < TN``): strided, so that the lanes of a
   warp read consecutive words of workgroup memory (no bank conflict without vector loads) and store
   consecutive ``j`` of the output.
3. *Staging per k-chunk.* The loop ``for k in lb..ub`` (step 1, block-uniform bounds; a perfect
   nest of such loops, ``for r { for s { for c {...} } }``, is one loop over ``0..R*S*C`` whose
   index is split back into ``(r, s, c)``, innermost fastest: the nest's order) runs in chunks
   of ``BK``. Each view read in its body whose coordinates depend on ``k`` and on one tile coordinate
   (``a[i, k]``: side ``i``; ``b[k, j]``: side ``j``) and on nothing loaded or accumulated is
   *staged* (a read repeated in the body, ``a[i, k] * a[i, k]``, is merged into its first: one
   tile): per chunk the block loads its ``BK x BM`` (``BK x BN``) tile of the *logical* view --
   the view read itself is cloned with the tile's coordinates, so any layout (a transposed view,
   im2col, a checked read and its default) is loaded through its own layout -- cooperatively, the
   lanes of a warp along the view's unit-stride coordinate (coalesced), into ``smem[kk*S + x]``.
   ``S`` is padded where the lanes of a warp store along ``k`` (``S = BM + 32/BK``, so the warp's
   ``32/BK`` rows of ``BK`` lanes fill the 32 banks). Slots past the edge (``x`` beyond its extent,
   ``k >= ub``) hold 0 and are never read for a valid item. Double-buffered (``double_buffer``,
   the default): each tile has two halves; a barrier before a tile's first chunk (the previous
   tile's reads are done) and its loads into half 0; per chunk one barrier (this chunk's stores
   are seen, the previous chunk's reads of the other half done), then the next chunk's loads into
   registers, the inner loop, and their stores into the other half -- the global loads in flight
   during the products. Single-buffered: a barrier before the stores (the previous chunk's reads
   are done) and one after them.

   *Rounds of slots.* A ``BK x X`` tile is ``R = ceil(BK*X / B)`` rounds of one slot per thread,
   slot ``e = tid + r*B``. Its cooperative loads are a loop over the rounds (``scf.for r < R``),
   not ``R`` copies of the slot's code: unrolled, every round repeated the view read's index
   arithmetic (conv2d_fwd's im2col splits: the pass turned its 61 ops into 1733, 282 divisions,
   4677 SASS instructions on sm_90; as a loop: 627 ops, 62 divisions, 2179 instructions, the
   warm compile 0.42x the time; docs/compile-time.md). Where the rounds share their tile coordinate (lanes along it, ``B`` a
   multiple of its extent ``X``: ``e % X = tid % X``, ``e / X = tid / X + r*B/X``; gemm's ``b``)
   it and the index arithmetic that no chunk changes are computed once per tile; otherwise they
   are computed in the loop, per round and chunk. The loop is marked not to be unrolled
   (``llvm.loop_annotation<unroll = <disable = true>>``, which ``scf-to-cf`` hands to its back
   branch) where each round has a tile coordinate of its own (its index arithmetic, an im2col
   split, again), and left to LLVM, which unrolls it, where the rounds share it: by ptxas -v on
   sm_90 and sm_80 (default, ``--fmad`` and non-negative-scalar PTX), 0 spills in gemm and every
   conv example this way, where rolling every loop spilled 8 bytes in conv2d_dgrad (sm_90) and
   also rolling conv2d_wgrad's x (whose rounds divide per chunk) 4 bytes with ``--fmad``. The plain loads
   of a double-buffered tile stay unrolled (their values are held in registers, one per round,
   across the chunk's products), and so does a tile of one round. The inner loop runs, per item,
   only the body's ops the products need: the staged reads' index arithmetic is not cloned per
   item (it was dead code there, expanded by ``kern-lower-divisions`` before ``canonicalize``).

   *cp.async* (``arch`` ``sm_80`` and later, ``async_copy``; double-buffered only): a staged read
   whose element ``cp.async`` can copy unchanged (storage type = compute type, 4 or 8 bytes: f32,
   f64, i32, i64; a checked read only with default 0, the zero-fill of a copy of ``src-size`` 0)
   is copied global -> workgroup by ``nvgpu.device_async_copy`` (``cp.async.ca.shared.global``;
   PTX ISA 9.7.9.25.3) rather than loaded into registers and stored: per slot its address and
   in-bounds predicate computed under the slot's guard, the predicate as ``srcElements`` (0:
   nothing read, the slot zero-filled). The tile's first chunk: the copies, one group
   (``nvgpu.device_async_create_group``), its wait (``nvgpu.device_async_wait {numGroups = 0}``);
   per chunk: the barrier (every thread retired this chunk's group: its copies are seen by all,
   and the other half's reads are done), the next chunk's copies into the other half and their
   group, the inner loop (the copies in flight during it), the wait for that group. f16/bf16
   (2-byte elements; no vector copy along the unit stride yet) and non-zero defaults keep the
   plain loads, and the remark says which operands are copied how and why.
4. *The inner loop* ``kk < min(BK, ub - k0)`` reads each staged value of the thread's ``TM`` rows and
   ``TN`` columns once from workgroup memory, then runs the original loop body for each of its
   ``TM*TN`` items with ``k = k0 + kk``, the staged reads replaced by those values and the item's own
   accumulators: every output sums in the original order (``k`` ascending, the same ops), so the
   result is bitwise that of the untiled kernel. Reads of the body that are not staged are emitted
   per item, under the item's guard.
5. *The epilogue*: the code after the loop (the store of ``c[i, j]``) runs per item under ``i < Ei
   && j < Ej``.

Configuration: ``BM x BN x BK`` = 64x64x16 for 256 threads (4x4 items per thread; fewer threads keep
16 items per thread on a smaller tile), or the kernel attribute ``@tile(BM, BN, BK)`` (signature
``tile_config``): powers of two, ``BM*BN`` a multiple of the block, at most :data:`MAX_ITEMS` items
per thread, the staged tiles within :data:`~kernc.passes.workgroup.SHARED_LIMIT` bytes -- else a
located ``CompileError`` naming the limit.

Runs after ``kern-lower-accessors`` and before ``kern-coalesce-views`` (which declines a tiled
kernel) and ``kern-lower-views``. It applies when the ``gpu.func`` is the guarded body of an N-D
problem delinearized from the thread id (nothing else in the kernel, no workgroup memory, the thread
id used for nothing else), the guard's body is pure code and view reads (per item: cloned for
each item of the micro-tile, the reads under its guard, e.g. ``let acc = c[i, j];``), one ``scf.for`` (or perfect nest: each
loop's body pure code and the next loop, which carries the outer one's iter args; inner bounds
independent of the outer loops), then any code; the innermost body is pure code and view reads, and
at least one read is staged; a staged buffer is only read. The launcher runs the untiled build for
a problem smaller than one block tile per batch (``launch_policy.run_tiled``; not under ``@tile``). A
kernel it declines compiles untiled, and ``remarks`` says why (``kernc compile --remarks``); the pass
is left out by ``--no-tile`` / ``kernc.compile(..., tile=False)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from kernc.dialect import kern
from kernc.dialect.access import Delinearize, ViewAccess
from kernc.dialect.mapping import MAPPING_ATTR, ItemMapping, of_function
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.dialect.strided import Poly
from kernc.support.errors import CompileError, Diagnostic, SourceLocation
from kernc.support.mlir import dialect, ir, lazy_dialect

from . import ir_builder as b
from .base import Pass, functions, internal, option, walk_ops
from .lower_views import in_bounds_value, offset_value
from .targets import ASYNC_COPY_SM, PTX_VERSION  # (cp.async from ASYNC_COPY_SM)
from .to_gpu import GUARD_ATTR
from .workgroup import SHARED_LIMIT, WARP, KernelContext, emit_remark

gpu = dialect("gpu")
nvgpu = lazy_dialect("nvgpu")  # (cp.async only: loaded when a tile is staged with it)

#: The element sizes (bytes) one ``cp.async`` copies (its ``cp-size``: 4, 8 or 16; ``.cg`` 16 only).
ASYNC_COPY_BYTES = (4, 8, 16)

#: Most items one thread may compute (its accumulators live in registers; 8x8 is the largest
#: micro-tile CUTLASS's SGEMM kernels use).
MAX_ITEMS = 64
#: Items per thread of the default configuration (4x4).
DEFAULT_ITEMS = 16
_ENTRY = ["kern.thread_id", "kern.problem_size", "arith.cmpi", "scf.if", "gpu.return"]
_PURE_PREFIXES = ("arith.", "math.")
#: What a remark calls the ops a tiled loop body cannot hold, in the source's words (and how to
#: write it so it tiles); other ops are named as they are
_BODY_OP_WORDS = {
    "kern.view_store": ("a store to a view", "sum into a `let` and store it after the loop"),
    "scf.if": ("an `if`", "sum a `select(c, x, 0.0)` instead"),
    "kern.in_bounds": ("a checked read whose default is not a literal", "a literal default tiles"),
    "kern.view_atomic": ("an atomic update of a view", ""),
}
_THREAD_BUILTINS = {"kern.thread_id", "kern.block_id", "kern.lane_id"}


def _owner(v):
    o = v.owner
    return o.operation if hasattr(o, "operation") else o


def _pure(op) -> bool:
    return op.name.startswith(_PURE_PREFIXES) and len(op.regions) == 0


def _plain_read(op) -> bool:
    """Whether ``op`` is a view read of one element (``kern.view_load``; a checked read whose default
    is computed has a region and is not)."""
    return op.name == "kern.view_load" and not op.regions


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _const_int(v):
    o = _owner(v)
    if isinstance(o, ir.Operation) and o.name == "arith.constant" and isinstance(v.type, ir.IndexType):
        return ir.IntegerAttr(o.attributes["value"]).value
    return None


class Decline(Exception):
    """The kernel is not tiled; the message says why (a remark)."""


@dataclass(frozen=True)
class Config:
    """A block tile ``bm x bn`` items, chunks of ``bk`` of the loop, ``tm x tn`` items per thread
    of a ``ty x tx`` thread grid (``ty = bm / tm``, ``tx = bn / tn``)."""

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int

    @property
    def ty(self) -> int:
        return self.bm // self.tm

    @property
    def tx(self) -> int:
        return self.bn // self.tn


def micro_tile(bm: int, bn: int, block: int) -> tuple[int, int] | str:
    """``(tm, tn)``: the items per thread ``bm*bn/block`` as a micro-tile, ``tm >= tn``, both powers
    of two dividing ``bm`` and ``bn``; or the reason there is none (a message naming the limit)."""
    if (bm * bn) % block:
        return f"a {bm}x{bn} tile is not a multiple of the block of {block} threads"
    items = bm * bn // block
    if items > MAX_ITEMS:
        return (f"{items} items per thread ({bm}x{bn} over {block} threads) is more than the "
                f"{MAX_ITEMS} a thread may hold in registers")
    tn = 1 << (int(math.log2(items)) // 2)
    tm = items // tn
    if tm > bm or tn > bn:
        return (f"a {bm}x{bn} tile cannot give {block} threads {tm}x{tn} items each (its {items} items "
                f"per thread are laid out {tm}x{tn}, which needs at least {tm} rows and "
                f"{tn} columns; a tile closer to square fits)")
    return tm, tn


@dataclass
class _Staged:
    """A staged view read: ``side`` the tile coordinate it depends on (0: ``i``, 1: ``j``),
    ``k_fastest`` whether the lanes of a warp load it along ``k`` (its unit-stride mode is ``k``'s),
    ``stride`` the row stride ``S`` of its workgroup tile."""

    op: object
    name: str
    side: int
    k_fastest: bool
    stride: int = 0
    smem: object = None
    #: bytes of an element of its workgroup tile (the read's value type)
    elem_bytes: int = 4
    #: staged with ``cp.async`` (``nvgpu.device_async_copy``) rather than plain loads and stores
    async_copy: bool = False


@dataclass
class _Staging:
    """How the cooperative loads of a staged read are emitted: ``slots`` (``(kk, at, ok, smem index,
    exists)`` per slot, computed once per tile: unrolled) or ``None`` (a loop over its ``rounds``,
    ``slot(e, r=r)`` giving the parts of slot ``e`` of round ``r``); ``per_chunk`` the ops of its
    read that each chunk computes again; ``rolled``: the loop is marked not to be unrolled."""

    slots: list | None
    per_chunk: list
    slot: Callable
    rounds: int
    rolled: bool


@dataclass
class TileContractions(Pass):
    """Tile the contraction loops of N-D kernels: block tiles through workgroup memory, thread
    micro-tiles, the accumulation order kept."""

    name = "kern-tile-contractions"
    summary = "tile contraction loops: workgroup-memory block tiles, register micro-tiles, order kept"

    #: the default block tile (items along the problem's last two coordinates) and loop chunk, for
    #: 256 threads (4x4 items each); ``@tile(BM, BN, BK)`` overrides them per kernel
    block_m: int = option(64)
    block_n: int = option(64)
    block_k: int = option(16)
    #: two workgroup buffers per staged tile, one barrier per chunk: the next chunk's loads are
    #: issued before this chunk's products and stored after them (the global-load latency hidden
    #: behind the products; with ``async_copy``, ``cp.async`` instead of loads and stores)
    double_buffer: bool = option(True)
    #: on ``arch`` sm_80 and later, copy the double-buffered tiles with ``cp.async``
    #: (``nvgpu.device_async_copy``, a group per chunk, retired by ``wait_group 0`` and seen after
    #: the barrier before the chunk's products): the copies bypass the registers; ``kernc compile
    #: --no-async-copy`` turns it off
    async_copy: bool = option(True)
    #: the target (``kernc compile --arch``): ``cp.async`` from ``sm_80``
    arch: str = option("sm_90", choices=tuple(PTX_VERSION))
    #: a test hook: drop the chunk loop's ``nvgpu.device_async_wait`` (``"wait"``), make it leave
    #: the chunk's group in flight (``"wait1"``: ``numGroups = 1``) or drop the barrier after it
    #: (``"barrier"``), to check that the CPU interpreter reports the race such a kernel has;
    #: ``""``: none (the only value a compile uses)
    drop_sync: str = internal("")
    #: a callable that receives each one-line remark (``kernc compile --remarks``), or ``None``
    remarks: Callable[[str], None] | None = internal(None)

    def _remark(self, op, text: str) -> None:
        emit_remark(self.remarks, op, text)

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn, sig, plan, why in _analysed_kernels(module, _untiled):
            if why is not None:
                if plan.loop is not None:  # (an N-D kernel without a loop is no contraction)
                    self._remark(plan.loop, f"not tiling '{sig.name}': {why}")
                continue
            if plan.loop is None:
                continue
            config = self._config(sig, plan)
            if isinstance(config, str):
                self._remark(plan.loop, f"not tiling '{sig.name}': {config}")
                continue
            plain = self._async_plan(plan)
            at = plan.loop.location  # (the rewrite erases the loop)
            _Rewrite(fn, sig, plan, config, self.double_buffer, self.drop_sync).run()
            self._remark(at, _describe(sig, plan, config, self.double_buffer, plain))

    def _async_plan(self, plan: "_Analysis") -> str:
        """Mark the staged reads that ``cp.async`` copies (``_Staged.async_copy``); the remark's
        words on it: which are copied so, and why the others keep plain loads."""
        if not self.async_copy:
            return "plain loads (cp.async is off: --no-async-copy)"
        if int(self.arch[3:].rstrip("a")) < ASYNC_COPY_SM:  # ("sm_90a" -> 90; arch is checked)
            return f"plain loads ({self.arch} has no cp.async: sm_{ASYNC_COPY_SM} and later)"
        if not self.double_buffer:
            return "plain loads (single-buffered: cp.async pays with double buffering only)"
        why = {}
        for s in plan.staged:
            reason = _plain_reason(s)
            if reason is None:
                s.async_copy = True
            else:
                why.setdefault(s.name, reason)
        copied = list(dict.fromkeys(s.name for s in plan.staged if s.async_copy))
        out = []
        if copied:
            out.append(f"{' and '.join(copied)} staged with cp.async (nvgpu.device_async_copy, one "
                       f"group per chunk, waited for before the chunk's products, the next chunk's "
                       f"copies in flight during them)")
        out += [f"{n} with plain loads ({r})" for n, r in why.items()]
        return "; ".join(out)

    def _config(self, sig: KernelSignature, plan: "_Analysis") -> Config | str:
        """The configuration of ``sig``'s kernel: its ``@tile`` (a ``CompileError`` when it cannot
        fit), else the default, or why the default does not fit (a remark)."""
        block = plan.block
        requested = sig.tile_config
        if requested is not None:
            bm, bn, bk = requested["tile"]
            where = SourceLocation(*requested["at"])

            def fail(text: str, hint: str):
                raise CompileError(Diagnostic(f"@tile({bm}, {bn}, {bk}) of kernel '{sig.name}': {text}",
                                              where, hint=hint))
        else:
            bm, bn, bk = self.block_m, self.block_n, self.block_k
            while bm * bn // block > DEFAULT_ITEMS and bm * bn > block:  # fewer threads: a smaller tile
                if bn >= bm:
                    bn //= 2
                else:
                    bm //= 2

            def fail(text: str, hint: str):
                return text
        for n in (bm, bn, bk):
            if not _pow2(n):
                return fail(f"the tile extent {n} is not a power of two", "use extents like 64, 64, 16")
        got = micro_tile(bm, bn, block)
        if isinstance(got, str):
            return fail(got, f"use a tile of {block} to {block * MAX_ITEMS} items (e.g. @tile(64, 64, 16) "
                             f"for 256 threads)")
        tm, tn = got
        config = Config(bm, bn, bk, tm, tn)
        need = sum(bk * _row_stride(s, config) * (b.bits(s.op.results[0].type) // 8) for s in plan.staged) * (
            2 if self.double_buffer else 1)
        if need > SHARED_LIMIT:
            return fail(f"its staged tiles need {need} bytes of workgroup memory, more than the "
                        f"{SHARED_LIMIT} bytes (48 KiB) a block may use", "use a smaller BK or tile")
        return config


def _groups(n: int, reads: list) -> tuple | None:
    """The item coordinates ``0..n-1`` split into the two sides of the contraction and the batch
    ones, ``((side i, side j), batch)`` (tuples of coordinate numbers in order), for the reads of
    the loop that depend on the loop variable, given as the sets of item coordinates each depends on:
    no read may depend on both sides (nothing would be shared), at least one read depends on a
    side. Of the splits that allow it (3^n, ``n`` is small) the one with the most reads staged,
    then the fewest batch coordinates (fixed per tile), then side ``j`` holding the last
    coordinate (the outputs' stores along it), then the coordinates in order (``i`` before ``j``).
    ``None`` when there is none. ``a[i, k] * b[k, j]``: ``(((0,), (1,)), ())``; ``conv2d_fwd``'s
    ``x(im2col(m, kk)) * w[k, r, s, c]`` over ``(n, oh, ow, k)``: ``(((0, 1, 2), (3,)), ())``."""
    import itertools

    best, key = None, None
    for assign in itertools.product((0, 1, 2), repeat=n):
        side = [{x for x in range(n) if assign[x] == g} for g in (0, 1)]
        if not side[0] or not side[1]:
            continue
        if any(r & side[0] and r & side[1] for r in reads):
            continue
        staged = sum(1 for r in reads if r & (side[0] | side[1]))
        if not staged:
            continue
        order = sum(1 for x in side[0] for y in side[1] if x > y)
        k = (-staged, assign.count(2), (n - 1) not in side[1], order, assign)
        if key is None or k < key:
            best, key = assign, k
    if best is None:
        return None
    pick = [tuple(x for x in range(n) if best[x] == g) for g in (0, 1, 2)]
    return (pick[0], pick[1]), pick[2]


def _row_stride(s: _Staged, c: Config) -> int:
    """The row stride ``S`` of staged read ``s``'s tile ``smem[kk*S + x]``: its extent along its
    tile coordinate, padded when a warp stores along ``k`` (``32/BK`` rows of ``BK`` lanes each: a
    padding of ``32/BK`` words puts them in 32 distinct banks; one word when ``BK >= 32``; 8-byte
    elements: ``16/BK`` elements, below)."""
    x = c.bm if s.side == 0 else c.bn
    if not s.k_fastest:
        return x
    if s.elem_bytes == 8:
        # an 8-byte element spans two banks and a warp's access is served as two phases of 16
        # lanes (CUDA C++ Programming Guide, "Shared Memory" of compute capability 5.x and later):
        # 16/BK rows of BK lanes per phase, a padding of 16/BK elements (one when BK >= 16) puts
        # a phase's 16 elements in 32 distinct banks (2 * 66 words per row, not 2 * 65: 2-way)
        return x + (16 // c.bk if c.bk < 16 else 1)
    return x + (WARP // c.bk if c.bk < WARP else 1)


def _plain_reason(s: _Staged) -> str | None:
    """Why staged read ``s`` cannot be one ``cp.async`` of its element (``None``: it can). The copy
    moves the storage bytes unchanged (no conversion: storage and compute type equal) of 4, 8 or 16
    bytes (:data:`ASYNC_COPY_BYTES`; one f16/bf16 element is 2: kept plain, no vector copy along the
    unit stride yet), and zero-fills a copy of ``src-size`` 0 (PTX ISA 9.7.9.25.3.1): a checked
    read whose default is not +0 cannot be given that way."""
    v = ViewAccess.from_op(s.op)
    storage = ir.MemRefType(v.buffer.type).element_type
    size = b.bits(storage) // 8
    if size not in ASYNC_COPY_BYTES:
        return (f"a {storage} element is {size} bytes and cp.async copies 4, 8 or 16; no vector copy "
                f"along the unit stride yet")
    if storage != v.value.type:
        return f"its elements are {storage}, computed as {v.value.type}: cp.async copies them unconverted"
    if v.checked and v.default is not None and not _is_plus_zero(v.default):
        return f"its checked read's default {v.default} is not 0, and cp.async fills with zeros"
    return None


def _is_plus_zero(attr) -> bool:
    """Whether a typed attribute is ``0`` (``+0.0`` for a float: the bits cp.async's zero-fill gives)."""
    if isinstance(attr.type, ir.IntegerType):
        return ir.IntegerAttr(attr).value == 0
    x = ir.FloatAttr(attr).value
    return x == 0.0 and math.copysign(1.0, x) > 0


def _describe(sig, plan: "_Analysis", c: Config, double: bool = False, plain: str = "") -> str:
    names = [s.name for s in plan.staged]
    staged = " and ".join(dict.fromkeys(names))
    tiles = ", ".join(
        f"{s.name}: {c.bk}x{c.bm if s.side == 0 else c.bn} of {plan.side_name(s.side)}, "
        f"loaded along {'k' if s.k_fastest else plan.side_name(s.side)}, rows of "
        f"{_row_stride(s, c)} elements" for s in plan.staged)
    serves: dict = {}  # items served per element loaded -> the reads
    for s in plan.staged:
        serves.setdefault(c.bn if s.side == 0 else c.bm, []).append(s.name)
    reuse = [f"each element of {' and '.join(dict.fromkeys(ns))} loaded from global memory serves {n} item{'s' if n != 1 else ''}"
             for n, ns in serves.items()]
    return (f"tiling '{sig.name}' as {c.bm}x{c.bn}x{c.bk} per block, {c.tm}x{c.tn} items per thread, "
            f"{staged} staged: the loop's reads of {staged} depend on the loop variable"
            f"{'s' if len(plan.levels) > 1 else ''} and the item coordinates of one side, so per chunk of {c.bk} the block stages them through workgroup memory ({tiles}); "
            f"{'; '.join(dict.fromkeys(reuse))}; "
            f"{'double-buffered (the next chunk loaded during this one); ' if double else ''}"
            f"{plain + '; ' if plain else ''}"
            f"every output sums in its original order; "
            + ("@tile chose it, every launch runs it" if sig.tile_config is not None else
               f"a launch of fewer than {c.bm}x{c.bn} items per batch runs the untiled build instead "
               f"(launch_policy.run_tiled: a single block tile would hold all of them)"))


class _Analysis:
    """Whether kernel ``fn`` is a contraction this pass tiles (:meth:`run` raises :class:`Decline`),
    and its parts: the guard, the delinearization, the code before the loop, the loop, after it."""

    def __init__(self, fn, sig: KernelSignature) -> None:
        self.fn, self.sig = fn, sig
        self.loop = None
        self.staged: list[_Staged] = []

    def run(self) -> None:
        fn, sig = self.fn, self.sig
        entry = [op.operation for op in fn.regions[0].blocks[0].operations]
        while entry and entry[0].name == "arith.constant":  # (literal extents, moved up: below)
            entry.pop(0)
        if [op.name for op in entry] != _ENTRY or GUARD_ATTR not in entry[3].attributes:
            self._find_loop(entry)
            raise Decline("the kernel stages accessors or computes outside its per-item body")
        self.guard = entry[3]
        self.entry = entry
        body = [op.operation for op in self.guard.regions[0].blocks[0].operations][:-1]
        self._find_loop(body)
        if self.loop is None:
            return
        if "workgroup_attributions" in fn.attributes:
            raise Decline("the kernel already uses workgroup memory")
        mapping = of_function(fn)
        if mapping is None:  # (kern-map-groups removes the linear mapping)
            raise Decline("the kernel's items are mapped to the groups of its reductions across items")
        self.block = mapping.block
        if mapping.tile is not None:
            raise Decline("the kernel's items are mapped to tiles already")
        at = next((x for x, op in enumerate(body) if op.name == "kern.delinearize"), len(body))
        # literal extents (over (i, j) in (64, 128)): their constants, at the kernel's entry, where
        # the tiled kernel's block coordinates use them (pure: moved whether or not it tiles)
        for op in [op for op in body[:at] if op.name == "arith.constant"]:
            op.move_before(entry[0])
            body.remove(op)
        if len(body) < 2 or body[0].name != "kern.thread_id" or body[1].name != "kern.delinearize":
            raise Decline("the problem is not an N-D one delinearized from the thread id")
        delin = Delinearize.from_op(body[1])
        if len(delin.extents) < 2 or len(mapping.extents) != len(delin.extents):
            raise Decline("the problem is not an N-D one 'over (i, j) in (M, N)' over size symbols")
        if len(list(body[0].results[0].uses)) != 1 or _owner(delin.linear) != body[0]:
            raise Decline("the kernel uses the thread id beyond the problem coordinates")
        if any(op != body[0] for op in walk_ops(self.guard, _THREAD_BUILTINS)):
            raise Decline("the kernel reads thread_id(), block_id() or lane_id(), which tiling changes")
        self.delin = delin
        self.extents = list(mapping.extents)
        self.coords = list(delin.coords)
        self.coord_names = delin.coord_names
        n = len(self.coords)
        self.ij = (n - 2, n - 1)
        at = body.index(self.loop)
        self.pre, self.post = body[2:at], body[at + 1:]
        for op in self.pre:
            if not _pure(op) and not _plain_read(op):
                raise Decline(f"the code before its loop does more than arithmetic and view reads (it holds "
                              f"{_BODY_OP_WORDS.get(op.name, (repr(op.name),))[0]}: a store, a branch or "
                              f"a call is not cloned per item)")
        self._nest()
        # dependence tags: coordinate numbers, "k" (the loop variables), "acc" (iter args), "mem"
        tags: dict = {}
        for x, c in enumerate(self.coords):
            tags[c] = {x}
        for op in self.pre:
            self._tag(op, tags)
            if _plain_read(op):  # (a per-item value: nothing staged may depend on it, nor the bounds)
                tags[op.results[0]] = tags[op.results[0]] | {"mem"}
        for level in self.levels:
            if any(self._tags(v, tags) - {"k"} for v in level.operands[:2]) or (
                    level != self.loop and any(self._tags(v, tags) for v in level.operands[:2])):
                raise Decline("the loop's bounds depend on the item or on an outer loop (they must be "
                              "the same for a block)")
            if _const_int(level.operands[2]) != 1:
                raise Decline("the loop's step is not 1")
            lbody = level.regions[0].blocks[0]
            tags[lbody.arguments[0]] = {"k"}
            for a in list(lbody.arguments)[1:]:
                tags[a] = {"acc"}
            for op in lbody.operations:  # (constants of an inner loop's bounds: tagged before use)
                if _pure(op.operation):
                    self._tag(op.operation, tags)
        self.ivs = [level.regions[0].blocks[0].arguments[0] for level in self.levels]
        self.iv = self.ivs[0]
        inner = self.levels[-1].regions[0].blocks[0]
        self.iter_args = list(inner.arguments)[1:]
        self.yld = list(inner.operations)[-1]
        names = sig.arg_names
        args = list(fn.regions[0].blocks[0].arguments)
        self._merge_reads(args)
        reads = []  # (op, name, item coordinates it depends on), in program order
        for op in self.body:
            if op.name == "kern.view_load" and not op.regions:
                used = set().union(*(self._tags(v, tags) for v in op.operands))
                name = next((nm for nm, a in zip(names, args) if a == op.operands[0]), "?")
                if used & {"acc", "mem"}:
                    raise Decline(f"where the loop reads '{name}' depends on values it loaded or accumulates")
                reads.append((op, name, used))
                tags[op.results[0]] = used | {"mem"}
            elif _pure(op):
                self._tag(op, tags)
            else:
                what, how = _BODY_OP_WORDS.get(op.name, (repr(op.name), ""))
                raise Decline(f"the loop's body holds {what}: only arithmetic and view reads are "
                              f"tiled{'; ' + how if how else ''}")
        self.groups = _groups(len(self.coords), [{x for x in u if isinstance(x, int)}
                                                 for _, _, u in reads if "k" in u])
        if self.groups is None:  # why not, in the terms of the last two coordinates
            for op, name, used in reads:
                if all(x in used for x in self.ij):
                    raise Decline(f"the loop reads '{name}' at an element of its own for every item "
                                  f"(it depends on both '{self.coord_names[self.ij[0]]}' and "
                                  f"'{self.coord_names[self.ij[1]]}'): nothing to share")
            raise Decline("no view read in the loop depends on the loop variable and on the item "
                          "coordinates of one side only: the items share no read")
        self.sides, self.batch = self.groups
        self.tags = tags
        direct = []
        for op, name, used in reads:
            side = [g for g, xs in enumerate(self.sides) if used & set(xs)]
            if "k" in used and len(side) == 1:
                self.staged.append(_Staged(op, name, side[0], self._k_fastest(op, tags),
                                           elem_bytes=b.bits(op.results[0].type) // 8))
            else:
                direct.append(op)
        for s in self.staged:
            users = [u.owner for u in s.op.operands[0].uses]
            if any(u.name != "kern.view_load" for u in users):
                raise Decline(f"the kernel also writes '{s.name}', which it would stage")
        self.direct = direct

    def _merge_reads(self, args) -> None:
        """Replace each view read of the loop's body that repeats an earlier one (the same buffer,
        coordinates and attributes: ``a[i, k] * a[i, k]``) by that one, where the kernel only reads
        the buffer (no store between them can change the element): one staged tile per distinct
        read, each named once in the remark."""
        first, body = {}, []
        for op in self.body:
            if op.name == "kern.view_load" and not op.regions and op.operands[0] in args and all(
                    u.owner.name == "kern.view_load" for u in op.operands[0].uses):
                key = (tuple(op.operands), tuple(sorted(str(op.attributes[n]) for n in range(len(op.attributes)))))
                if key in first:
                    op.results[0].replace_all_uses_with(first[key].results[0])
                    op.erase()
                    continue
                first[key] = op
            body.append(op)
        self.body = body

    def side_name(self, g: int) -> str:
        """``'i'``, or ``'(n, oh, ow)'`` for a side of several coordinates (tiled as one, flattened)."""
        names = [self.coord_names[x] for x in self.sides[g]]
        return f"'{names[0]}'" if len(names) == 1 else f"'({', '.join(names)})'"

    def _nest(self) -> None:
        """The perfect loop nest from ``self.loop`` down (``self.levels``, outermost first): each
        loop's body is pure code and one loop that takes its iter args and whose results it yields;
        ``self.body`` the ops of all levels but the inner loops and yields, in order (run per
        iteration of the innermost loop, the nest collapsed: its order of iterations kept)."""
        self.levels, self.body = [self.loop], []
        while True:
            blk = self.levels[-1].regions[0].blocks[0]
            ops = [op.operation for op in blk.operations]
            loops = [op for op in ops[:-1] if op.name == "scf.for"]
            if not loops:
                self.body += ops[:-1]
                return
            if len(loops) > 1:
                raise Decline("the loop's body holds more than one loop")
            f = loops[0]
            rest = [op for op in ops[:-1] if op != f]
            if (list(f.operands[3:]) != list(blk.arguments)[1:] or list(ops[-1].operands) != list(f.results)
                    or any(v in list(f.results) + list(blk.arguments)[1:] for op in rest for v in op.operands)):
                raise Decline("the loop nest is not perfect (code between its loops uses what they accumulate)")
            if not all(_pure(op) for op in rest):
                raise Decline("the loop nest is not perfect (code between its loops other than arithmetic)")
            self.body += rest
            self.levels.append(f)

    def _find_loop(self, ops) -> None:
        loops = [op for op in ops if op.name == "scf.for"]
        if len(loops) == 1:
            self.loop = loops[0]
        elif len(loops) > 1:
            self.loop = loops[0]
            raise Decline("the per-item body has more than one loop")

    @staticmethod
    def _tags(v, tags) -> set:
        return tags.get(v, set())

    def _tag(self, op, tags) -> None:
        used = set().union(set(), *(tags.get(v, set()) for v in op.operands))
        for r in op.results:
            tags[r] = used

    def _k_fastest(self, op, tags) -> bool:
        """Whether the view read ``op``'s unit-stride mode is the one its ``k`` dependence is in
        (then the lanes of a warp load along ``k``); ``False`` (along the tile coordinate) else."""
        view = ViewAccess.from_op(op)
        one = [p for p, st in enumerate(view.layout.stride) if str(st) == "1"]
        if view.swizzle is not None or not one or one[0] >= len(view.coords):
            return True
        return "k" in tags.get(view.coords[one[0]], set())


def _analysed_kernels(module, keep: Callable[[ir.Operation], bool] = lambda fn: True):
    """The kernels of ``module`` (its ``gpu.func`` ops that carry a kernel signature) that ``keep``
    accepts, each analysed as a contraction (:class:`_Analysis`): ``(fn, sig, plan, declined)``, where
    ``declined`` is the :class:`Decline` that stopped the analysis or ``None`` where it ran through
    (``plan.loop`` is then ``None`` for a kernel without a contraction loop). The loop of the three
    contraction passes; a kernel may be rewritten between two items (the list is taken first)."""
    for fn in functions(module, {"gpu.func"}):
        if SIGNATURE_ATTR not in fn.attributes or not keep(fn):
            continue
        sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
        plan = _Analysis(fn, sig)
        try:
            plan.run()
        except Decline as why:
            yield fn, sig, plan, why
            continue
        yield fn, sig, plan, None


def _mapped_to_tiles(fn) -> bool:
    """Whether kernel ``fn``'s items are mapped to tiles already (kern-wgmma-contractions or
    kern-mma-contractions took it)."""
    mapping = of_function(fn)
    return mapping is not None and mapping.tile is not None


def _untiled(fn) -> bool:
    """Whether kern-tile-contractions may tile kernel ``fn``: its items are mapped, not to tiles
    already (:func:`_mapped_to_tiles`) nor to the groups of reductions across items
    (kern-map-groups, no item mapping): else nothing to tile, nothing to say."""
    return of_function(fn) is not None and not _mapped_to_tiles(fn)


def _clone(op, mapping: dict):
    """Clone ``op`` at the insertion point with its operands (nested ones too) replaced through
    ``mapping`` (old value -> new value); the clone's results are added to ``mapping``."""
    new = op.clone()
    _remap(new, mapping)
    for old, r in zip(op.results, new.results):
        mapping[old] = r
    return new


def _remap(op, mapping: dict) -> None:
    for n, v in enumerate(op.operands):
        got = mapping.get(v)
        if got is not None:
            op.operands[n] = got
    for region in op.regions:
        for block in region.blocks:
            for o in block.operations:
                _remap(o, mapping)


class _Rewrite:
    """Build the tiled kernel of an analysed contraction (the module docstring's steps 1-5)."""

    def __init__(self, fn, sig, plan: _Analysis, c: Config, double: bool = True, drop_sync: str = "") -> None:
        self.fn, self.sig, self.plan, self.c, self.double = fn, sig, plan, c, double
        self.drop_sync = drop_sync

    def run(self) -> None:
        fn, sig, plan, c = self.fn, self.sig, self.plan, self.c
        guard = plan.guard
        B = plan.block
        E = list(plan.delin.extents)
        kc = KernelContext(fn, sig, guard, B)
        loc = plan.loop.location
        for s in plan.staged:
            s.stride = _row_stride(s, c)
            s.smem = kc.workgroup(s.op.results[0].type, c.bk * s.stride * (2 if self.double else 1),
                                  f"staged tile of '{s.name}'",
                                  region=f"tile.{s.name}.{plan.staged.index(s)}", location=s.op.location)
        kc.check_limit()
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
        # the original body is rebuilt: drop it, and the entry's guard condition
        guard.erase()
        for op in reversed(plan.entry[:3]):
            op.erase()
        tiled = ItemMapping(B, tuple(flat_extents(plan)), tuple([1] * len(plan.batch) + [c.bm, c.bn]), c.tm * c.tn,
                            self._thread_values(), True)
        assert tiled.problem() is None, tiled.problem()
        sig.tiles = tiled.launch_tiles()
        sig.contraction = {"tile": [c.bm, c.bn, c.bk], "forced": sig.tile_config is not None}
        fn.attributes[SIGNATURE_ATTR] = ir.StringAttr.get(sig.to_json())
        fn.attributes[MAPPING_ATTR] = ir.StringAttr.get(tiled.to_json())

    def _thread_values(self) -> str:
        """The CuTe TV layout of the micro-tiles: thread ``tx + ty*TX`` value ``u + v*TM`` at tile
        position ``(ty + u*TY, tx + v*TX)``, positions column-major over ``(1, ..., BM, BN)``."""
        c = self.c
        si, sj = 1, c.bm
        return f"(({c.tx},{c.ty}),({c.tm},{c.tn})):(({sj},{si}),({c.ty * si},{c.tx * sj}))"

    def _tile(self, tile, tid, E, ext, per, nbj, B) -> None:
        plan, c = self.plan, self.c
        batch = plan.batch
        coord = {}
        if batch:
            rest = b.arith.DivUIOp(tile, per).result
            in_batch = b.sub(tile, b.mul(rest, per))
            coord = _split(rest, batch, E)
        else:
            in_batch = tile
        bi = b.arith.DivUIOp(in_batch, nbj).result
        bj = b.sub(in_batch, b.mul(bi, nbj))
        x0 = [b.mul(bi, b.idx(c.bm)), b.mul(bj, b.idx(c.bn))]
        tx = b.arith.RemUIOp(tid, b.idx(c.tx)).result
        ty = b.arith.DivUIOp(tid, b.idx(c.tx)).result
        rows = [b.add(ty, b.idx(u * c.ty)) if u else ty for u in range(c.tm)]  # within the tile
        cols = [b.add(tx, b.idx(v * c.tx)) if v else tx for v in range(c.tn)]
        iu = [b.add(x0[0], r) for r in rows]
        jv = [b.add(x0[1], q) for q in cols]
        ok_i = [b.cmp("ult", x, ext[0]) for x in iu]
        ok_j = [b.cmp("ult", x, ext[1]) for x in jv]
        at_i = [_split(x, plan.sides[0], E) for x in iu]
        at_j = [_split(x, plan.sides[1], E) for x in jv]
        items = [(u, v) for u in range(c.tm) for v in range(c.tn)]
        maps, valid = {}, {}
        for u, v in items:  # each item's code before the loop; its view reads under its guard
            m = {plan.coords[x]: val for part in (coord, at_i[u], at_j[v]) for x, val in part.items()}
            valid[u, v] = b.and_(ok_i[u], ok_j[v])
            for op in plan.pre:
                if _plain_read(op):  # (`let acc = c[i, j];`: 0 past the edge, never used there)
                    T = op.results[0].type
                    m[op.results[0]] = b.if_else(valid[u, v], [T], lambda op=op, m=m: [_clone(op, m).results[0]],
                                                 lambda T=T: [b.zero(T)])[0]
                else:
                    _clone(op, m)
            maps[u, v] = m
        first = maps[0, 0]
        ivs, lb, ub = collapse_nest(plan, first)
        nacc = len(plan.iter_args)
        inits = [maps[it].get(v, v) for it in items for v in plan.loop.operands[3:]]
        # the cooperative loads of each staged read: slot e = tid + r*B of its BK x X tile, for the
        # rounds r < R = ceil(BK*X / B): a loop over the rounds (module docstring, step 3), not unrolled
        # per slot, except where the values loaded are held in registers across the chunk's
        # products (the plain loads of a double-buffered tile: one register per round)
        coop = []
        for s in plan.staged:
            sliced = _slice(s.op, plan)
            hoist = _hoistable(sliced[:-1], plan, E)
            per_chunk = [op for op in sliced if op not in hoist]
            X = c.bm if s.side == 0 else c.bn
            total = c.bk * X
            R = -(-total // B)
            looped = R > 1 and (s.async_copy or not self.double)
            fixed = None
            if looped and not s.k_fastest and B % X == 0:
                # e % X = tid % X and e / X = tid / X + r*(B/X) in every round: the slot's tile
                # coordinate, and the index arithmetic that no chunk changes, once per tile
                xl = b.arith.RemUIOp(tid, b.idx(X)).result
                x = b.add(x0[s.side], xl)
                at = {plan.coords[q]: coord[q] for q in batch}
                at.update({plan.coords[q]: val for q, val in _split(x, plan.sides[s.side], E).items()})
                for op in hoist:
                    _clone(op, at)
                fixed = (xl, b.cmp("ult", x, ext[s.side]), at, b.arith.DivUIOp(tid, b.idx(X)).result)

            def slot(e, s=s, X=X, total=total, hoist=hoist, fixed=fixed, r=None):
                """``(kk, at, ok, smem index, exists)`` of slot ``e`` (of round ``r``, a value, where
                ``fixed``): its row ``kk`` of the tile, the values of its index arithmetic that no
                chunk changes (``at``), whether its tile coordinate is within its extent and the
                thread has it (``exists``: ``e < BK*X``, ``None`` where the rounds cover the tile)."""
                exists = b.cmp("ult", e, b.idx(total)) if total % B else None
                if fixed is not None:
                    xl, ok, at, kk0 = fixed
                    kk = b.add(kk0, b.mul(r, b.idx(B // X)))
                else:
                    kk, xl, x, ok = _slot_position(e, s.k_fastest, c.bk, X, x0[s.side], ext[s.side])
                    at = {plan.coords[q]: coord[q] for q in batch}
                    at.update({plan.coords[q]: val for q, val in _split(x, plan.sides[s.side], E).items()})
                    for op in hoist:  # (once per tile; per round and chunk in a loop over the rounds)
                        _clone(op, at)
                if exists is not None:
                    ok = b.and_(ok, exists)
                return kk, at, ok, b.add(b.mul(kk, b.idx(s.stride)), xl), exists
            # the slots of an unrolled staging, once per tile
            slots = None if looped else [slot(b.add(tid, b.idx(r * B)) if r else tid) for r in range(R)]
            # a loop whose rounds share their tile coordinate (gemm's b, conv2d_wgrad's x and dy,
            # conv2d_dgrad's w) is left to LLVM, which unrolls it; where each round has a tile
            # coordinate of its own the loop is kept (ptxas numbers: module docstring, step 3)
            rolled = looped and fixed is None
            coop.append(_Staging(slots, per_chunk, slot, R, rolled))

        def rounds(entry: _Staging, body) -> None:
            """``body(kk, at, ok, slot, exists)`` for each slot of a staged read: in a loop over its
            rounds (``scf.for r in 0..R``, marked not to be unrolled where ``rolled``), or for each
            slot of the tile's."""
            if entry.slots is not None:
                for parts in entry.slots:
                    body(*parts)
                return
            round_loop(entry.rounds, B, tid, lambda e, r: body(*entry.slot(e, r=r)),
                       "disable = true" if entry.rolled else None)

        def value(s, entry, k0, kk, at, ok):
            """The element of slot ``(kk, at)`` of staged read ``s`` in the chunk at ``k0`` (0 past the
            edge, where nothing is loaded)."""
            T = s.op.results[0].type
            k = b.add(k0, kk)

            def then():
                m = dict(at)
                m.update(ivs(k))
                for op in entry.per_chunk:
                    _clone(op, m)
                return [m[s.op.results[0]]]
            return b.if_else(b.and_(ok, b.cmp("slt", k, ub)), [T], then, lambda: [b.zero(T)])[0]

        def fetch(k0) -> list:
            """The plain loads of the chunk at ``k0`` held in registers: ``(value, smem, slot, exists)``
            per slot of the unrolled staged reads (the looped ones: :func:`load_store`)."""
            out = []
            for s, entry in zip(plan.staged, coop):
                if s.async_copy or entry.slots is None:
                    continue
                for kk, at, ok, slot, exists in entry.slots:
                    out.append((value(s, entry, k0, kk, at, ok), s, slot, exists))
            return out

        def load_store(k0) -> None:
            """The plain loads of the chunk at ``k0`` of the looped staged reads, each stored at once."""
            for s, entry in zip(plan.staged, coop):
                if s.async_copy or entry.slots is not None:
                    continue

                def body(kk, at, ok, slot, exists, s=s, entry=entry):
                    val = value(s, entry, k0, kk, at, ok)
                    if exists is None:
                        b.store(val, s.smem, slot)
                    else:
                        with b.if_(exists):
                            b.store(val, s.smem, slot)
                rounds(entry, body)

        def copy(k0, half):
            """The ``cp.async`` of the chunk at ``k0`` into ``half`` (``None``: half 0) of the tiles
            of the async staged reads, and one group committing them (its token returned). Each copy moves the element
            of the slot's view read (address computed under the slot's guard, as the plain load
            is) or, past the edge, its ``src-size`` 0 zero-fills the slot (``srcElements``)."""
            tokens = []
            index, i1 = b.index_t(), ir.IntegerType.get_signless(1)
            for s, entry in zip(plan.staged, coop):
                if not s.async_copy:
                    continue
                src = ViewAccess.from_op(s.op).buffer
                per_chunk = entry.per_chunk

                def body(kk, at, ok, slot, exists, s=s, src=src, per_chunk=per_chunk):
                    k = b.add(k0, kk)

                    def address():
                        m = dict(at)
                        m.update(ivs(k))
                        new = None
                        for op in per_chunk:
                            new = _clone(op, m)
                        v = ViewAccess.from_op(new)  # (the slice ends with the view read)
                        off = offset_value(v.coords, v.sizes, v.layout, v.swizzle, v.syms)
                        inb = in_bounds_value(v.coords, v.sizes, v.layout, v.syms) if v.checked else \
                            b.const(1, i1)
                        if v.mask is not None:
                            inb = b.and_(inb, v.mask)
                        new.erase()
                        # src-size 0 reads nothing: the offset is 0 then, in the buffer or at its base
                        return [b.select(inb, off, b.idx(0)), b.select(inb, b.idx(1), b.idx(0))]
                    dst = slot if half is None else b.add(b.mul(half, b.idx(c.bk * s.stride)), slot)

                    def issue():
                        off, n = b.if_else(b.and_(ok, b.cmp("slt", k, ub)), [index, index], address,
                                           lambda: [b.idx(0), b.idx(0)])
                        return nvgpu.DeviceAsyncCopyOp(s.smem, [dst], src, [off], 1, srcElements=n).result
                    if exists is None:
                        token = issue()
                        if entry.slots is not None:
                            tokens.append(token)
                        # (a token in the rounds' loop stays there: the group is the thread's copies)
                    else:  # (a token of a copy under scf.if stays there: the group is the thread's)
                        with b.if_(exists):
                            issue()
                rounds(entry, body)
            return nvgpu.DeviceAsyncCreateGroupOp(tokens).result

        def wait(group, in_loop: bool = False) -> None:
            """Wait until no group of this thread is in flight (``cp.async.wait_group 0``)."""
            if self.drop_sync == "wait" and in_loop:
                return
            nvgpu.DeviceAsyncWaitOp(group, numGroups=1 if self.drop_sync == "wait1" and in_loop else 0)

        def put(fetched, half) -> None:
            for val, s, slot, exists in fetched:
                at = b.add(b.mul(half, b.idx(c.bk * s.stride)), slot) if half is not None else slot
                if exists is None:
                    b.store(val, s.smem, at)
                else:  # a partial last round: a thread without this slot stores nothing
                    with b.if_(exists):
                        b.store(val, s.smem, at)

        asynchronous = self.double and any(s.async_copy for s in plan.staged)
        if self.double:  # chunk 0 into half 0, once the previous tile's reads are done
            b.barrier()
            put(fetch(lb), None)
            if asynchronous:
                # the group of chunk 0, retired at once (nothing to overlap it with); its token is
                # the one every wait names: a wait for 0 groups in flight retires them all
                # (cp.async.wait_group names no group), and a token carried through the loop would
                # be a block argument after scf-to-cf, a type convert-gpu-to-nvvm does not convert
                first_group = copy(lb, None)
                wait(first_group)
        chunks = b.scf.ForOp(lb, ub, b.idx(c.bk), inits)
        with ir.InsertionPoint(chunks.body):
            k0 = chunks.induction_variable
            if self.double:
                # half (chunk number % 2) holds this chunk; the barrier: its stores are seen, and every
                # read of the other half (the previous chunk's) is done, so the next chunk's loads,
                # in flight during this chunk's products, may be stored there after them. cp.async:
                # every thread retired this chunk's group (the wait at the end of the previous
                # chunk, or after the first copies), and the barrier makes its copies visible to
                # every thread; then the next chunk's copies start, into the other half, in flight
                # during the products, and are waited for after them (PTX ISA 9.7.9.25.3). (The
                # wait after the products rather than before this barrier: the same overlap, and
                # ptxas keeps conv2d_wgrad within its registers on sm_90, where it spilled 16 bytes.)
                cur = b.arith.AndIOp(b.arith.DivUIOp(b.sub(k0, lb), b.idx(c.bk)).result, b.idx(1)).result
                if self.drop_sync != "barrier" or not asynchronous:
                    b.barrier()
                ahead = fetch(b.add(k0, b.idx(c.bk)))
                if asynchronous:
                    copy(b.add(k0, b.idx(c.bk)), b.sub(b.idx(1), cur))
                offset = {id(s): b.mul(cur, b.idx(c.bk * s.stride)) for s in plan.staged}
            else:
                b.barrier()  # the previous chunk's (or tile's) reads of the tiles are done
                put(fetch(k0), None)
                load_store(k0)
                b.barrier()
                offset = {}
            kn = b.minui(b.idx(c.bk), b.sub(ub, k0))
            inner = b.scf.ForOp(b.idx(0), kn, b.idx(1), list(chunks.inner_iter_args))
            body = _item_body(plan)
            with ir.InsertionPoint(inner.body):
                kk = inner.induction_variable
                at_k = ivs(b.add(k0, kk))
                accs = list(inner.inner_iter_args)
                base = {id(s): b.mul(kk, b.idx(s.stride)) for s in plan.staged}
                for s in plan.staged:
                    if id(s) in offset:
                        base[id(s)] = b.add(offset[id(s)], base[id(s)])
                got = {}
                for s in plan.staged:
                    for w, q in enumerate(rows if s.side == 0 else cols):
                        got[id(s), w] = b.load(s.smem, b.add(base[id(s)], q))
                out = []
                for n_it, (u, v) in enumerate(items):
                    m = dict(maps[u, v])
                    m.update(at_k)
                    for a, acc in zip(plan.iter_args, accs[n_it * nacc:(n_it + 1) * nacc]):
                        m[a] = acc
                    for s in plan.staged:
                        m[s.op.results[0]] = got[id(s), u if s.side == 0 else v]
                    for op in body:
                        if op in plan.direct:  # a read of the item's own: under its guard
                            T = op.results[0].type
                            m[op.results[0]] = b.if_else(valid[u, v], [T],
                                                         lambda op=op, m=m: [_clone(op, m).results[0]],
                                                         lambda T=T: [b.zero(T)])[0]
                        else:
                            _clone(op, m)
                    out += [m.get(v_, v_) for v_ in plan.yld.operands]
                b.scf.YieldOp(out)
            if self.double:
                put(ahead, b.sub(b.idx(1), cur))
            if asynchronous:
                wait(first_group, in_loop=True)
            b.scf.YieldOp(list(inner.results))
        for n_it, (u, v) in enumerate(items):  # each item's code after the loop, under its guard
            m = maps[u, v]
            for r, acc in zip(plan.loop.results, list(chunks.results)[n_it * nacc:(n_it + 1) * nacc]):
                m[r] = acc
            with b.if_(valid[u, v]):
                for op in plan.post:
                    _clone(op, m)


def flat_extents(plan: _Analysis) -> list[str]:
    """The extents of the virtual problem a tiled kernel's mapping describes: the batch
    coordinates', then side ``i``'s and side ``j``'s each flattened (the product of its extents,
    ``N*OH*OW``)."""
    return [plan.extents[x] for x in plan.batch] + [
        str(math.prod((Poly.parse(plan.extents[x]) for x in side[1:]), start=Poly.parse(plan.extents[side[0]])))
        for side in plan.sides]


def collapse_nest(plan: _Analysis, first: dict):
    """``(ivs, lb, ub)``: the loop nest as one loop ``lb..ub``, ``ivs(k)`` the nest's loop
    variables (a ``{old value: new value}`` dict) at its iteration ``k``; ``first`` maps the
    values of the code before the loop its bounds use. One loop: itself. Several:
    ``0..prod(trips)``, ``trip = ub - lb`` (0 when ``ub <= lb``), the innermost fastest (``iv =
    lb + k / (inner trips) % trip``): the iterations in the nest's order. (Also
    ``kern-mma-contractions``' loop over the chunks of a nest.)"""
    if len(plan.levels) == 1:
        return (lambda k: {plan.iv: k}), *(first.get(v, v) for v in plan.loop.operands[:2])
    m = dict(first)
    bounds, trips = [], []
    for level in plan.levels:
        lo, hi = (_hoist(v, plan, m) for v in level.operands[:2])
        bounds.append(lo)
        trips.append(b.select(b.cmp("slt", lo, hi), b.sub(hi, lo), b.idx(0)))
    total = _product(trips)

    def ivs(k):
        out, q = {}, k
        for level, lo, t in reversed(list(zip(plan.ivs, bounds, trips))):
            if level is plan.ivs[0]:
                out[level] = b.add(lo, q)
            else:
                out[level] = b.add(lo, b.arith.RemUIOp(q, t).result)
                q = b.arith.DivUIOp(q, t).result
        return out
    return ivs, b.idx(0), total


_DIVISIONS = {"arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi",
              "arith.ceildivui"}


def _item_body(plan: _Analysis) -> list:
    """The ops of the loop body an item runs in the inner loop (program order): the staged reads
    and the index arithmetic only they use are left out (read from workgroup memory instead; each
    copy of that arithmetic, an im2col read's divisions, was dead code that ``kern-lower-divisions``
    expanded before ``canonicalize`` dropped it: 16 copies per chunk in conv2d_fwd); the reads of
    the item's own (``plan.direct``) and what the yield uses are kept."""
    staged = [s.op for s in plan.staged]
    needed = set(plan.yld.operands)
    keep = []
    for op in reversed(plan.body):
        if any(op == s for s in staged):
            continue
        if op in plan.direct or any(r in needed for r in op.results):
            keep.append(op)
            needed.update(op.operands)
    return keep[::-1]


def _hoistable(ops: list, plan: _Analysis, E: list) -> list:
    """The ops of a cooperative load's slice (program order) that the tile loop may compute once
    per slot, before the chunk loop: those that depend on no loop variable nor on an op left in
    the loop. A division or remainder only by a value that is not 0 whenever a tile runs (a
    problem extent, a product of them, a positive constant): hoisted out of the loop and its guard,
    it runs where the kernel would not have run it, and a division by 0 is undefined behaviour."""
    extents = set(E)

    def nonzero(v) -> bool:
        if v in extents or (_const_int(v) or 0) > 0:
            return True
        o = _owner(v)
        return isinstance(o, ir.Operation) and o.name == "arith.muli" and all(nonzero(w) for w in o.operands)

    left = set()  # results of the ops that stay in the loop
    out = []
    for op in ops:
        stays = ("k" in plan.tags.get(op.results[0], set()) if len(op.results) else True) or any(
            v in left for v in op.operands) or (op.name in _DIVISIONS and not nonzero(op.operands[1]))
        if stays:
            left.update(op.results)
        else:
            out.append(op)
    return out


def _product(values: list):
    """The product of index values (one value: itself)."""
    out = values[0]
    for v in values[1:]:
        out = b.mul(out, v)
    return out


def round_loop(rounds: int, block: int, tid, body, unroll: str | None = None) -> None:
    """``body(e, r)`` at the insertion point in ``scf.for r in 0..rounds``, ``e = tid + r*block`` the
    slot of thread ``tid`` in round ``r`` of a cooperative staging; ``unroll``: the loop's
    ``llvm.loop_annotation<unroll = <...>>`` parameters (``"disable = true"``, ``"count = 4"``;
    scf-to-cf hands a loop's llvm attributes to its back branch), ``None``: none (LLVM decides).
    Shared by kern-tile-contractions, kern-mma-contractions and kern-wgmma-contractions."""
    loop = b.scf.ForOp(b.idx(0), b.idx(rounds), b.idx(1))
    if unroll is not None:
        loop.attributes["loop_annotation"] = ir.Attribute.parse(f"#llvm.loop_annotation<unroll = <{unroll}>>")
    with ir.InsertionPoint(loop.body):
        r = loop.induction_variable
        body(b.add(tid, b.mul(r, b.idx(block))), r)
        b.scf.YieldOp([])


def _slot_position(e, k_fastest: bool, bk: int, X: int, x0, extent) -> tuple:
    """Where slot ``e`` (an index value) of the cooperative load of a ``bk x X`` staged tile falls:
    ``(kk, xl, x, in_range)`` -- its row ``kk`` (along the contraction loop) and column ``xl`` of the
    tile, ``x = x0 + xl`` its coordinate along the tile's side and ``in_range`` (i1) whether
    ``x < extent``. The lanes of a warp run along the read's unit-stride coordinate: ``kk`` fastest
    when ``k_fastest``, else ``xl`` (coalesced global loads). Shared by kern-tile-contractions,
    kern-mma-contractions and kern-wgmma-contractions, which store the slot at their own layout."""
    if k_fastest:
        kk = b.arith.RemUIOp(e, b.idx(bk)).result
        xl = b.arith.DivUIOp(e, b.idx(bk)).result
    else:
        xl = b.arith.RemUIOp(e, b.idx(X)).result
        kk = b.arith.DivUIOp(e, b.idx(X)).result
    x = b.add(x0, xl)
    return kk, xl, x, b.cmp("ult", x, extent)


def _split(x, coords: tuple, E: list) -> dict:
    """The coordinates ``coords`` (numbers, in order) of linear index ``x`` over their extents
    ``E[c]``, the last fastest: ``{coordinate number: value}``."""
    out = {}
    for c in reversed(coords[1:]):
        q = b.arith.DivUIOp(x, E[c]).result
        out[c] = b.sub(x, b.mul(q, E[c]))
        x = q
    out[coords[0]] = x
    return out


def _hoist(v, plan: _Analysis, m: dict):
    """``v`` (a loop bound, the same for every item and iteration) at the insertion point: mapped
    through ``m``, or the pure ops of the loop nest that compute it cloned."""
    if v in m:
        return m[v]
    inside = {r: o for o in plan.body for r in o.results}
    if v in inside:
        o = inside[v]
        for w in o.operands:
            _hoist(w, plan, m)
        _clone(o, m)
        return m[v]
    return v


def _slice(op, plan: _Analysis) -> list:
    """The ops of the code before the loop and of the loop's body that ``op`` depends on, and ``op``,
    in program order (what a cooperative load re-computes for its slot)."""
    inside = {}
    for o in plan.pre + plan.body:
        for r in o.results:
            inside[r] = o
    need, todo = set(), [op]
    while todo:
        o = todo.pop()
        if any(o == x for x in need):
            continue
        need.add(o)
        for v in o.operands:
            d = inside.get(v)
            if d is not None:
                todo.append(d)
    return [o for o in plan.pre + plan.body if o in need]
