"""``kern-wgmma-contractions``: f16/bf16 and i8/u8 contractions on Hopper's warpgroup tensor cores (``wgmma``).

The contractions ``kern-mma-contractions`` takes (its matcher, :func:`~kernc.passes.mma_contractions._match`
over :class:`~kernc.passes.tile_contractions._Analysis`, used here as is: ``acc += a[i, k] * b[k, j]``
of f16 or bf16 reads summed in f32, or ``acc += i32(a[i, k]) * i32(b[k, j])`` of i8 or u8 reads
summed in i32 -- *integer kinds*, below; not ``@tf32`` f32 ones, which stay on ``mma.sync`` with a
remark) run, on ``sm_90a``, as warpgroup matrix multiplies reading both
operands from workgroup memory (PTX ISA 9.7.15, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate
Instructions"). As there, ``i`` and ``j`` are each the flattened coordinates of one side and ``k`` a
loop or a perfect nest collapsed into one (:func:`~kernc.passes.tile_contractions.collapse_nest`):
the convolutions (``conv2d_fwd_f16``: rows ``(n, oh, ow)``, a ``(r, s, c)`` nest; ``conv2d_wgrad_f16``:
columns ``(r, s, c)``), each side's flattened index split back into its coordinates where a slot is
staged and where an item's code after the loop runs:

1. *Block tile* ``BM x BN`` (``BM = 64 * W``, ``W = block/128`` warpgroups of 4 warps; ``BN`` =
   ``block_n``, 128 by default), blocks looping over the tiles (grid-stride) as in
   ``kern-mma-contractions``.
2. *Staging per k-chunk* of ``BK = 64`` (one 128-byte row of f16/bf16): the ``BM x 64`` A tile and
   the ``BN x 64`` B tile (B transposed: ``n`` rows of ``k``) are stored *K-major* in the canonical
   layout of the 128-byte swizzle mode (9.7.15.5.1): element ``(r, k)`` of a tile at byte
   ``128*r + 16*((k/8) XOR (r%8)) + 2*(k%8)``, so 8-row groups are 1024 bytes apart (the stride byte
   offset), the 16-byte chunks of a row permuted by the row's index within its group. Each read is the
   view read cloned with the tile's coordinates (0 past ``M``, ``N``, ``K``: any extents). The tiles
   are 1024-byte aligned (``llvm.align`` on the workgroup attributions), as the swizzle's repeat needs
   with a matrix base offset of 0. The generic-proxy stores are made visible to ``wgmma``'s async
   proxy with ``fence.proxy.async.shared::cta`` and a barrier.
3. *Matrix descriptors* (9.7.15.5.1, 64 bits): start address ``(addr & 0x3FFFF) >> 4`` in bits
   0-13, leading byte offset ``>> 4`` in 16-29 (1: unused by swizzled K-major layouts), stride byte
   offset ``1024 >> 4`` in 32-45, base offset 0 in 49-51, swizzle mode 1 (128B) in 62-63. Warpgroup
   ``q``'s A starts at row ``64q``; the ``k16`` step ``s`` of a chunk adds ``32*s`` bytes to both start
   addresses (the swizzle applies to the address bits, so a step inside a 128-byte row stays in the
   canonical layout).
4. *Per chunk*: ``wgmma.fence``; 4 ``wgmma.mma_async.sync.aligned.m64nBNk16.f32.{f16,bf16}``
   (``nvvm.wgmma.mma_async``; A and B K-major: ``row``/``col`` layouts, no transpose); one
   ``wgmma.commit_group``; ``wgmma.wait_group 0`` before the next chunk's barrier and stores (the
   pending ``wgmma`` read the tiles), and before the epilogue reads the accumulators.
5. *Epilogue*: accumulator ``d_i`` (``i < BN/2``) of thread ``128q + 32w + 4g + t`` is item
   ``(i0 + 64q + 16w + g + 8*((i>>1)&1), j0 + 8*(i>>2) + 2t + (i&1))`` (PTX ISA 9.7.15, "Register
   Fragments", the wgmma D matrix of m64nN: the m16n8 C layout of each warp's 16 rows, repeated
   along N); the code after the loop runs for it under ``i < M && j < N``.

*Integer kinds* (i8/u8 operands, ``MmaKind.integer``): ``wgmma.mma_async.sync.aligned.m64nBNk32
.s32.{s8,u8}.{s8,u8}`` (PTX ISA 9.7.15.5: N 8, 16, 24, 32 and the multiples of 16 to 256, so every
``block_n`` taken here), ``i32`` accumulators (the same D fragment as f32's), no ``.satfinite``: the
sums wrap as the loop's ``+=`` in i32 does, so they are exact and bitwise the loop's in any order.
Elements are 1 byte, so a chunk is ``BK = 128`` k (one 128-byte row, :attr:`WgmmaConfig.bk`) and a
tile the same 16 KiB; the K-major 128B layout is the same bytes in its 16-byte units, 16 elements a
unit: element ``(r, k)`` at byte ``128*r + 16*((k/16) XOR (r%8)) + (k%16)`` (:func:`swizzled_index`
with ``elem_bytes`` 1); the 4 ``k32`` steps of a chunk add ``32*s`` bytes, as f16's ``k16`` ones.
Both tiles are K-major: the ISA transposes (``imm-trans-a``/``-b``) ``.f16``/``.bf16`` only, so an
operand read along its rows keeps the 4-way conflicting K-major stores (:func:`mn_major_sides` says
so at its read). Under ``--tma`` a k-contiguous operand comes by a ``128 x X`` box of 1-byte
elements (``expect_tx`` and stage bytes of the element size); one read along its rows keeps the
stores (no 8-bit MN-major tile), and im2col-mode copies are f16/bf16 only, with remarks. The epilogue adds an item's own
start (``let acc = c[i, j];``) with ``arith.addi``. ptxas ``sm_90a``: 99 registers (gemm i8/u8,
``block_n`` 128; 38 at 16, 162 at 240; 156 at 256 on one warpgroup: two need 48 KiB of tiles), the i8 convolutions 118 (fwd) and 145 (wgrad), 0 spills.

Cost (ptxas ``sm_90a``, the gemm examples): 101 registers at ``block_n = 128`` (64 accumulators; the
staging is a loop over rounds of slots, not unrolled: unrolled, every round's address stayed live
across the chunk loop, 255 registers), 60 at 64, 0 spills; 32 KiB of workgroup memory; the
convolutions 118 (fwd) and 170 (wgrad) registers, 0 spills (204 and 254 in the 64-bit build). The
staging stores of an operand whose lanes run along its rows (the gemms' ``b``, both of
conv2d_wgrad_f16's) would go K-major down 128-byte rows, conflicting 4-way (conv2d_wgrad_f16 at P =
2^16: 49152 conflicts; gemm 130x100x70 and wgrad (2,5,7,7,33,3,2): 3072): such an operand is staged
*MN-major* instead (:func:`mn_major_sides`, with a remark at its read; ``--no-wgmma-mn-major`` /
``wgmma_mn_major=False`` turns it off): element ``(r, k)`` at byte ``8192*(r/64) + 1024*(k/8) +
128*(k%8) + 16*(((r%64)/8) XOR (k%8)) + 2*(r%8)`` (:func:`mn_swizzled_index`; PTX ISA 9.7.15.5.1.2,
the MN-major 128B canonical layout: leading byte offset 8192 from one 64 rows to the next, stride
byte offset 1024 from one 8 ``k`` to the next; the ``k16`` step adds 2048 bytes), read transposed
(``layoutA`` ``col`` / ``layoutB`` ``row``: ``imm-trans-a``/``-b`` 1), each warp's stores along a
128-byte row: 0 conflicts (3072 -> 0 at those sizes), bitwise the K-major CPU results; ptxas
``sm_90a`` gemm_f16 104 registers, conv2d_wgrad_f16 161, 0 spills. The ``k``-fastest operand's
stores are K-major and do not conflict.

*TMA* (``tma=True``, ``kernc compile --tma``; opt-in): an operand whose tile is a box of its view
(:func:`_tma_map`: a view read at exactly ``(x, k)``/``(k, x)`` with ``k`` stride 1 and no start
offset, in a loop that ends at the view's ``k`` extent -- the gemms' ``a``; or at ``x`` and a loop
nest's variables whose dimensions flatten to one ``k`` of stride 1 -- conv2d_fwd_f16's ``w[k, r, s,
c]``; or whose rows are contiguous -- the gemms' ``b[k, j]``, conv2d_wgrad_f16's ``dy``: ``X/64``
boxes of ``64 x 64`` into its MN-major tile, box ``q`` at the leading byte offset ``8192q``) is
loaded by the tensor memory accelerator (PTX ISA 9.7.9.25,
``cp.async.bulk.tensor``; 9.7.13.15, ``mbarrier``): its ``64 x X`` box at ``(k0, x0)`` of a tensor map
over ``(K, X-extent)`` with the 128B swizzle writes exactly the K-major swizzled tile of step 2 (the
swizzle is on the shared address, the tile 1024-byte aligned), zeros past the edges as the clone
reads give. Per block, once: an mbarrier (count 1) initialised by thread 0, ``fence.mbarrier_init``,
a barrier. Per chunk, after its first barrier: thread 0's ``mbarrier.arrive.expect_tx`` of the
box's bytes and the copy, then the other operand's stores, fence and barrier (the copy lands
meanwhile), then every thread's ``mbarrier.try_wait.parity`` with the parity of the number of
chunks this block waited for before (``(tiles done) * (chunks per tile) + chunk``, mod 2). The tensor
map is a hidden ``!llvm.ptr`` parameter after the size symbols (``Param.tensor_map``, ``docs/gpu-ir.md``).
A read whose tile rows are a 2-d convolution's flattened output positions (conv2d_fwd_f16's ``x``,
:func:`~kernc.passes.wgmma_contractions_im2col.im2col_read`) is loaded in TMA's im2col mode instead (PTX ISA
5.5.4): per chunk (64 channels ``c0..`` of one filter tap ``(r, s)``; the launcher checks that ``C``
is a multiple of 64) one rank-4 copy at ``(c0, ow0*sw - pw, oh0*sh - ph, n0)`` with im2col offsets
``(s*dw, r*dh)``, whose ``BM`` pixel rows are the tile's rows ``m0 ..`` in order, zeros in the
padding and past the last image: the same K-major swizzled tile. A weight gradient's ``x``
(conv2d_wgrad_f16: rows the filter taps ``(r, s, c)``, k the pixels) takes one such copy per
64-row block of its MN-major tile: 64 channels of the block's tap by the chunk's 64 pixels.
A ``(k, j)`` operand of a loop that may start from ``-0.0`` keeps the stores (its pad past K must
be ``-0.0``, :func:`pad_value`; a box fills ``+0.0``).

*Stages* (``tma_stages``, default 2; ``kernc compile --tma-stages``): a TMA'd operand's buffer holds
``S`` tiles and there are ``S`` mbarriers (``memref<S x i64>``); the block's chunk ``g`` (``(tiles
done) * (chunks per tile) + chunk``) lands in stage ``g % S`` and is waited for with parity ``(g /
S) & 1`` on that stage's mbarrier. Before a tile's chunk loop thread 0 issues the copies of its
chunks ``0..S-2`` (each predicated on the chunk existing: ``ceil(max(ub - lb, 0) / 64)`` chunks);
in chunk ``c``, after its first barrier, that of chunk ``c+S-1`` (if any) into the stage chunk
``c-1``'s wgmma read: every warpgroup waited for that wgmma (``wait_group 0``) before the barrier,
so the barrier orders the reads before the copy (the prologue's stages were read before the
previous tile's last chunk barrier: no barrier of its own). :func:`tma_stages` builds fewer where
:func:`tma_bytes` exceed the arch's opt-in maximum of dynamic workgroup memory (227 KiB on
``sm_90a``), or 48 KiB of static workgroup memory with ``--no-dynamic-shared-memory``, with a remark:
gemm_f16's 128x128 tiles (a 16 KiB a tile, b 16 KiB) need 49168 bytes for 2, over 48 KiB: dynamic
workgroup memory (``kern-dynamic-workgroup-memory``, with a remark; one stage with the option off);
on one warpgroup (``@block(128)``, 64-row tiles) 2 stages are 32784 bytes and 3 are 40984. ptxas ``sm_90a``: 97
registers (gemm_f16, one stage), 92/93/92 at 1/2/3 stages on one warpgroup, 0 spills.

The sums are not in the loop's order (the CPU interpreter's documented order:
:mod:`kernc.backend.interpreter.wgmma`). Applies on ``sm_90a`` only (wgmma is an ``a``-feature of
sm_90): on other targets the contraction is left to ``kern-mma-contractions``, with a remark; also
when the block is not 128 or 256 threads or ``@tile`` is given. Off with ``--no-wgmma`` /
``kernc.compile(..., wgmma=False)`` (and with ``--no-tensor-cores``).
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from typing import Callable

from kernc.dialect.access import ViewAccess
from kernc.dialect.signature import Param
from kernc.dialect.strided import Poly, StridedLayout
from kernc.support.mlir import dialect, ir, lazy_dialect

from . import ir_builder as b
from . import llvm_ops
from .base import Pass, internal, option
from .wgmma_contractions_im2col import im2col_read
from .mma_contractions import (MIN_SM, _match, _owner, _Rewrite, _Stage, epilogue_sum, pad_value, sm_number,
                               tile_loop)
from .targets import PTX_VERSION, WGMMA_ARCHS
from .tile_contractions import _Analysis, _analysed_kernels, _clone, _slice, _slot_position, _split, round_loop
from .workgroup import SHARED_LIMIT, WARP, emit_remark, workgroup_limit

gpu = dialect("gpu")
memref = dialect("memref")
nvvm = lazy_dialect("nvvm")  # (loaded when a kernel is rewritten: sm_90a only)

#: Threads of a warpgroup (4 consecutive warps, the first a multiple of 4).
WARPGROUP = 128
#: The instruction's m and k (f16/bf16: m64nNk16; s8/u8: m64nNk32, :data:`WG_K_INT`).
WG_M, WG_K = 64, 16
#: The k of the integer shapes (s8/u8 operands, s32 accumulators: m64nNk32), and the bytes of k
#: one instruction reads of each row (both kinds: 32, the descriptor step per instruction).
WG_K_INT, WG_K_BYTES = 32, 32
#: The k chunk staged per step: one 128-byte swizzle row of 2-byte elements.
BK = 64
#: Bytes of a row of a staged tile, of an 8-row swizzle atom (the stride byte offset).
ROW_BYTES, ATOM_BYTES = 128, 1024
#: The descriptor's swizzle-mode code of the 128-byte swizzle (bits 62-63; 0 none, 2 64B, 3 32B).
SWIZZLE_128B = 1
#: Most threads per block: 2 warpgroups (each thread holds ``block_n/2`` accumulators).
MAX_BLOCK = 256
#: An MN-major tile's 128B swizzle atom: 64 rows (of M or N: one 128-byte row of 2-byte elements)
#: by 8 ``k``; the leading byte offset (from one 64 rows to the next: the 8 atoms of a 64-``k``
#: chunk) and the stride byte offset (from one 8 ``k`` to the next atom) of the MN-major layout.
MN_ATOM, MN_LBO, MN_SBO = 64, 8 * ATOM_BYTES, ATOM_BYTES


def descriptor(addr: int, lbo: int, sbo: int, swizzle: int, base_offset: int = 0) -> int:
    """The 64-bit wgmma matrix descriptor (PTX ISA 9.7.15.5.1) of a tile at shared byte address
    ``addr`` with leading/stride byte offsets ``lbo``/``sbo`` (multiples of 16) and swizzle mode
    code ``swizzle`` (0 none, 1 128B, 2 64B, 3 32B)."""
    return (((addr & 0x3FFFF) >> 4) | ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32
            | (base_offset & 7) << 49 | (swizzle & 3) << 62)


def mn_swizzled_index(r: int, k: int) -> int:
    """Element index of ``(r, k)`` (``k < 64``) in an MN-major 128B-swizzled tile of 2-byte elements
    (the module docstring, step 2): byte ``8192*(r/64) + 1024*(k/8) + 128*(k%8) + 16*(((r%64)/8)
    XOR (k%8)) + 2*(r%8)``."""
    return ((r >> 6) * (MN_LBO // 2) + (k >> 3) * (MN_SBO // 2) + (k & 7) * (ROW_BYTES // 2)
            + ((((r & 63) >> 3) ^ (k & 7)) << 3) + (r & 7))


def swizzled_index(r: int, k: int, elem_bytes: int = 2) -> int:
    """Element index of ``(r, k)`` (``k < 128 / elem_bytes``: one 128-byte row) in a K-major
    128B-swizzled tile of ``elem_bytes``-byte elements (the module docstring, step 2): byte
    ``128*r + 16*((k/u) XOR (r%8)) + elem_bytes*(k%u)``, ``u = 16 / elem_bytes`` elements a 16-byte
    unit (8 of f16/bf16, 16 of i8/u8)."""
    u = 16 // elem_bytes
    return r * (ROW_BYTES // elem_bytes) + (((k // u) ^ (r & 7)) * u) + (k % u)


@dataclass(frozen=True)
class WgmmaConfig:
    """``W`` warpgroups, a ``64W x bn`` block tile, chunks of ``bk`` (64 of 2-byte, 128 of 1-byte
    elements: one 128-byte row). The ``wm``/``wn``/``warp_*``/``mt``/
    ``nt`` fields are those :class:`~kernc.passes.mma_contractions._Rewrite` reads (the tile loop,
    the item mapping): each warp owns 16 rows and all ``bn`` columns; the workgroup tiles' sizes
    are :meth:`_WgmmaRewrite._stages` (``bm x bk`` and ``bn x bk``, K-major)."""

    groups: int
    bn: int
    bk: int = BK
    #: bytes of an operand element: 2 (f16/bf16), 1 (i8/u8: ``bk`` 128, one 128-byte row)
    elem_bytes: int = 2

    @property
    def bm(self) -> int:
        return WG_M * self.groups

    @property
    def wg_k(self) -> int:
        """The instruction's k: 32 bytes of k (k16 of f16/bf16, k32 of s8/u8; PTX ISA 9.7.15.5)."""
        return WG_K_BYTES // self.elem_bytes

    wn, warp_m, mt = 1, 16, 1

    @property
    def wm(self) -> int:
        return 4 * self.groups

    @property
    def warp_n(self) -> int:
        return self.bn

    @property
    def nt(self) -> int:
        return self.bn // 8

    def shared_bytes(self, elem_bytes: int) -> int:
        return (self.bm + self.bn) * self.bk * elem_bytes


@dataclass
class WgmmaContractions(Pass):
    """Run the f16/bf16 (m64nNk16, f32 accumulators) and i8/u8 (m64nNk32, s32 accumulators)
    contractions ``kern-mma-contractions`` matches with warpgroup ``wgmma`` from 128B-swizzled
    workgroup tiles, on ``sm_90a``."""

    name = "kern-wgmma-contractions"
    summary = ("f16/bf16 and i8/u8 contraction loops on sm_90a warpgroup tensor cores: wgmma m64nNk16/k32 "
               "from swizzled workgroup tiles")

    #: the target (``kernc compile --arch``): wgmma on ``sm_90a`` only
    arch: str = option("sm_90a", choices=tuple(PTX_VERSION))
    #: the instruction's N and the block tile's columns (8..256, a multiple of 16 here)
    block_n: int = option(128)
    #: load the eligible operand tiles with the tensor memory accelerator (``cp.async.bulk.tensor``
    #: on an mbarrier) instead of per-thread stores (``kernc compile --tma``)
    tma: bool = option(False)
    #: the TMA'd tiles' pipeline depth: buffers (each with its own mbarrier) the copies of the next
    #: chunks land in while a chunk's wgmma runs (``kernc compile --tma-stages``); fewer where that
    #: many do not fit in the static workgroup memory, with a remark
    tma_stages: int = option(2)
    #: whether the tiles and TMA stages may take dynamic workgroup memory over 48 KiB, up to
    #: ``arch``'s opt-in maximum (``kern-dynamic-workgroup-memory``; ``False``:
    #: ``--no-dynamic-shared-memory``, 48 KiB of static memory)
    dynamic_shared_memory: bool = option(True)
    #: stage an operand whose read's lanes run along its rows (``b[k, j]``, n-contiguous) MN-major
    #: (read by wgmma transposed), its stores along 128-byte rows; ``False``
    #: (``kernc compile --no-wgmma-mn-major``): every tile K-major (4-way conflicting stores)
    mn_major: bool = option(True)
    #: whether a kernel's ``@tile`` keeps it on CUDA cores (``False`` under ``kernc compile --no-tile``)
    tile_attr: bool = option(True)
    #: a callable that receives each one-line remark (``kernc compile --remarks``), or ``None``
    remarks: Callable[[str], None] | None = internal(None)

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn, sig, plan, why in _analysed_kernels(module):
            if why is not None:
                continue
            if plan.loop is None or (sig.tile_config is not None and self.tile_attr) or sm_number(self.arch) < MIN_SM:
                continue  # kern-mma-contractions says why
            parts = _match(plan, "tf32" in (sig.tensor_cores or {}))
            if isinstance(parts, str):
                continue  # the same
            if parts.kind.ptx == "tf32":
                # @tf32 f32 contractions: wgmma has m64nNk8 .tf32, this pass does not build it
                emit_remark(self.remarks, plan.loop,
                            f"not using wgmma for '{sig.name}': its f32 operands take "
                            "kern-mma-contractions' mma.sync (wgmma is built here for f16/bf16/i8/u8)")
                continue
            got = self._decide(plan, parts)
            if isinstance(got, str):
                emit_remark(self.remarks, plan.loop, f"not using wgmma for '{sig.name}': {got}")
                continue
            tma = {}
            if self.tma:
                for s in (parts.a, parts.b):
                    why = _tma_map(fn, sig, plan, s, got, self.mn_major)
                    if s.side == 1 and not isinstance(why, str) and _minus_zero_start(parts):
                        why = ("its loop may start from -0.0 (the item's own value, or -0.0): past K its tile must "
                               "hold -0.0, which keeps a sum of only -0.0 products -0.0, and a box fills +0.0")
                    if isinstance(why, str):
                        emit_remark(self.remarks, s.op, f"'{s.name}' of '{sig.name}' not loaded by TMA: {why}; "
                                    "its tile is staged by per-thread stores")
                    else:
                        tma[s.side] = why
            limit = workgroup_limit(self.arch, self.dynamic_shared_memory)
            stages, short = tma_stages(got, set(tma), self.tma_stages, limit) if tma else (1, None)
            at = plan.loop.location  # (the rewrite erases the loop and the staged reads)
            at_read = {side: (parts.a if side == 0 else parts.b).op.location for side in tma}
            mn, why_mn = mn_major_sides(parts, got, tma, self.mn_major)
            at_mn = {s.side: s.op.location for s in (parts.a, parts.b)}
            _WgmmaRewrite(fn, sig, plan, got, parts, tma, stages, limit if tma else SHARED_LIMIT, mn).run()
            emit_remark(self.remarks, at, _describe(sig, got, parts, mn))
            for side, text in sorted(why_mn.items()):
                emit_remark(self.remarks, at_mn[side], text)
            for side, m in sorted(tma.items()):
                s = parts.a if side == 0 else parts.b
                emit_remark(self.remarks, at_read[side], _describe_tma(sig, s, m, got, stages, short, len(tma) < 2))

    def _decide(self, plan: _Analysis, parts) -> WgmmaConfig | str:
        if self.arch not in WGMMA_ARCHS:
            return (f"{self.arch} has no wgmma (an sm_90a feature: compile with --arch sm_90a); "
                    "kern-mma-contractions' mma.sync is used")
        if plan.block % WARPGROUP or plan.block > MAX_BLOCK:
            return (f"its block of {plan.block} threads is not 1 or 2 warpgroups of {WARPGROUP} "
                    "threads; kern-mma-contractions' mma.sync is used")
        n = self.block_n
        integer = parts.kind.integer
        if n % 16 or not 16 <= n <= 256:
            return (f"block_n={n} is not an N of wgmma m64nNk{WG_K_INT if integer else WG_K} taken here "
                    "(16..256, a multiple of 16)")
        if integer:  # s8/u8: 1-byte elements, one 128-byte row of 128 k a chunk (4 k32 steps)
            c = WgmmaConfig(plan.block // WARPGROUP, n, ROW_BYTES, 1)
        else:
            c = WgmmaConfig(plan.block // WARPGROUP, n)
        need = c.shared_bytes(c.elem_bytes) + 2 * ATOM_BYTES
        if need > SHARED_LIMIT:  # (the tiles' configuration: 48 KiB, with or without dynamic memory)
            return f"its tiles need {need} bytes of workgroup memory, more than {SHARED_LIMIT}"
        return c


def mn_major_sides(p, c: WgmmaConfig, tma: dict, on: bool = True) -> tuple[set, dict]:
    """The sides (0: ``a``, 1: ``b``) whose tiles are MN-major -- those TMA'd by MN-major boxes
    (``tma``: the maps of the TMA'd sides, :func:`_tma_map`; the TMA remark says so), and the
    staged ones below -- and the remark of each staged side whose read's lanes run along its rows
    (not ``k_fastest``: the case whose K-major stores go down 128-byte rows, 4-way bank conflicts),
    at that read: MN-major, or why not (``on`` False: ``--no-wgmma-mn-major``; a tile of rows not a
    multiple of the 64-row atom; 8-bit elements, which wgmma does not transpose)."""
    sides = {side for side, m in tma.items() if m.get("major") == "mn"}
    why = {}
    for s in (p.a, p.b):
        if s.k_fastest or s.side in tma:
            continue
        X = c.bm if s.side == 0 else c.bn
        what = ("m" if s.side == 0 else "n")
        if p.kind.integer:
            why[s.side] = (f"'{s.name}' staged K-major: wgmma reads {_kern_type(p)} operands K-major only (its "
                           "transpose, imm-trans-a/-b, is for .f16/.bf16: PTX ISA 9.7.15.5), so with its read's "
                           f"lanes along {what} each warp's 1-byte stores go down 128-byte rows (4-way bank "
                           "conflicts)")
        elif not on:
            why[s.side] = (f"'{s.name}' staged K-major (--no-wgmma-mn-major): its read's lanes run along "
                           f"{what}, so each warp's 2-byte stores go down 128-byte rows (4-way bank conflicts)")
        elif X % MN_ATOM:
            why[s.side] = (f"'{s.name}' staged K-major: its {X}-row tile is not a multiple of the MN-major "
                           f"128B swizzle atom's {MN_ATOM} rows (its stores conflict 4-way)")
        else:
            sides.add(s.side)
            why[s.side] = (f"'{s.name}' staged MN-major (1024-byte 128B-swizzle atoms of {MN_ATOM} {what} x 8 k, "
                           f"{c.bk * X * 2} bytes; wgmma reads it transposed, layout"
                           f"{'A col' if s.side == 0 else 'B row'}): its read's lanes run along {what}, so "
                           "each warp's 2-byte stores run along a 128-byte row (no bank conflicts; K-major "
                           "they would go down 128-byte rows, 4-way); off with --no-wgmma-mn-major")
    return sides, why


def _kern_type(p) -> str:
    """The kern element type of the matched operands' kind (``i8`` for ``.s8``)."""
    return "i8" if p.kind.ptx == "s8" else p.kind.ptx


def _describe(sig, c: WgmmaConfig, p, mn=frozenset()) -> str:
    def major(side):
        return "MN-major" if side in mn else "K-major"
    if p.kind.integer:
        return (f"'{sig.name}' on sm_90a warpgroup tensor cores: {c.bm}x{c.bn} block tiles in chunks of "
                f"{c.bk} of k, {c.groups} warpgroup(s) of wgmma.mma_async m64n{c.bn}k{c.wg_k} "
                f"({p.kind.ptx}.{p.kind.ptx}: {_kern_type(p)} products, s32 sums) reading 128B-swizzled "
                f"workgroup tiles of {p.a.name} ({c.bm}x{c.bk}, K-major) and {p.b.name} (transposed, "
                f"{c.bn}x{c.bk}, K-major) through matrix descriptors; wgmma.wait_group 0 per chunk; the sums "
                "are exact (i32 wrap-around, no .satfinite, as the loop's +=): bitwise the --no-tensor-cores "
                "result in any order"
                + ("; they start from 0 and each item's own start (its value before the loop) is added after "
                   "them" if p.added else ""))
    return (f"'{sig.name}' on sm_90a warpgroup tensor cores: {c.bm}x{c.bn} block tiles in chunks of "
            f"{c.bk} of k, {c.groups} warpgroup(s) of wgmma.mma_async m64n{c.bn}k16 ({p.elem} products, "
            f"f32 sums) reading 128B-swizzled workgroup tiles of {p.a.name} ({c.bm}x{c.bk}, {major(0)}) and "
            f"{p.b.name} (transposed, {c.bn}x{c.bk}, {major(1)}) through matrix descriptors; wgmma.wait_group 0 per "
            f"chunk; on a GPU the sums' order differs from the loop's (not bitwise the --no-tensor-cores "
            f"result); the CPU interpreter adds them k ascending"
            + ("; they start from -0.0 and each item's own start (its value before the loop) is added after "
               "them" if p.added else ""))


def tma_bytes(c: WgmmaConfig, tma_sides, stages: int) -> int:
    """Bytes of workgroup memory of the tiles and mbarriers with the TMA'd sides ``tma_sides`` (0:
    the ``bm x bk`` tile, 1: the ``bn x bk`` one, of ``c.elem_bytes``-byte elements) in ``stages``
    buffers each: the
    tiles (each a multiple of 1024 bytes, so their 1024-byte alignment adds nothing) and one 8-byte
    mbarrier per stage, allocated last."""
    tiles = sum(c.elem_bytes * (c.bm if side == 0 else c.bn) * c.bk * (stages if side in tma_sides else 1)
                for side in (0, 1))
    return tiles + 8 * stages


def tma_stages(c: WgmmaConfig, tma_sides, requested: int, limit: int = SHARED_LIMIT) -> tuple[int, str | None]:
    """The stages built (:data:`WgmmaContractions.tma_stages`): ``requested``, or the most below it
    whose :func:`tma_bytes` fit in ``limit`` bytes (:func:`~kernc.passes.workgroup.workgroup_limit`:
    the arch's opt-in maximum with dynamic workgroup memory, else the 48 KiB
    :data:`~kernc.passes.workgroup.SHARED_LIMIT`; 1 always fits: :meth:`WgmmaContractions._decide`
    checked the one-stage tiles), and what the remark says of it: why it is fewer, or, where the
    stages take more than 48 KiB, that they are dynamic workgroup memory (``None`` otherwise)."""
    n = requested
    while n > 1 and tma_bytes(c, tma_sides, n) > limit:
        n -= 1
    if n == requested:
        if tma_bytes(c, tma_sides, n) > SHARED_LIMIT:
            return n, (f"{n} TMA stages use {tma_bytes(c, tma_sides, n)} bytes of dynamic workgroup memory "
                       "(over the 48 KiB static limit; kern-dynamic-workgroup-memory, off with "
                       "--no-dynamic-shared-memory)")
        return n, None
    static = limit == SHARED_LIMIT
    return n, (f"{requested} stages need {tma_bytes(c, tma_sides, requested)} bytes of workgroup memory, more "
               f"than the {limit} bytes "
               + ("(48 KiB) of static workgroup memory a block may use" if static else
                  "of dynamic workgroup memory a block may use on this arch")
               + f": {n} stage{'s' if n > 1 else ''} ({tma_bytes(c, tma_sides, n)} bytes) built")


def _tma_map(fn, sig, plan: _Analysis, s, c: WgmmaConfig, mn_major: bool = True) -> dict | str:
    """The tensor map of staged read ``s`` (:attr:`Param.tensor_map`), or why it has none. Eligible:
    a ``kern.view_load`` of a view param (no batch) at the tile's row coordinate ``x`` and the loop's
    variable ``k`` -- or the variables of a nest, whose dimensions flatten to one of stride 1 (the
    view's extents the loops' bounds, the strides of a dense row: ``w[k, r, s, c]``) -- whose layout
    gives ``k`` stride 1 and no start offset: then the ``X x 64`` tile of a chunk is the box ``(64,
    X)`` at ``(k0, x0)`` of the map over ``(K, X-extent)`` with the row stride of ``x``, copied with the
    128B swizzle into the K-major tile (the swizzle of step 2, the same bytes). Where ``x`` has stride
    1 instead (the gemms' ``b[k, j]``, conv2d_wgrad_f16's ``dy``; ``mn_major``, ``X`` a multiple of
    64) the tile is MN-major: ``X/64`` boxes ``(64, 64)`` at ``(x0 + 64q, k0)`` of the map over
    ``(X-extent, K)`` with the stride of ``k``, box ``q`` at byte ``8192q`` (the leading byte offset):
    a box's row ``k`` of 64 elements at ``128k``, swizzled, is the MN-major atoms' element ``(x, k)``
    at ``1024*(k/8) + 128*(k%8) + 16*((x/8) XOR (k%8)) + 2*(x%8)``
    (:func:`mn_swizzled_index`; ``"major": "mn"``, ``"copies"``). A read whose tile rows
    are flattened coordinates is a 2-d convolution's im2col view or nothing
    (:func:`~kernc.passes.wgmma_contractions_im2col.im2col_read`: the im2col mode's map). The runtime conditions
    (a row byte stride that is a multiple of 16 below 2^40, a 16-byte aligned base) are the
    launcher's (``backend/tensor_map.py``)."""
    op = s.op
    if op.name != "kern.view_load":
        return f"its read is {op.name}, not a plain view read"
    if plan.batch:
        return "the contraction is batched"
    if "workgroup_attributions" in fn.attributes and ir.IntegerAttr(fn.attributes["workgroup_attributions"]).value:
        return "the kernel already has workgroup buffers"
    entry = fn.regions[0].blocks[0]
    buf = op.operands[0]
    names = sig.arg_names
    pos = [i for i, a in enumerate(entry.arguments) if a == buf]
    if not pos or pos[0] >= len(sig.params):
        return "its buffer is not a kernel parameter"
    param = sig.params[pos[0]]
    if param.kind != "buffer" or param.layout is None or param.accessor != "view":
        return f"'{names[pos[0]]}' is not a view"
    X = c.bm if s.side == 0 else c.bn
    if X > 256:
        return f"its {X}-row tile is more than a TMA box's 256 rows"
    view = ViewAccess.from_op(op)
    if view.swizzle is not None:
        return f"its layout {view.layout_text} is swizzled"
    if len(plan.sides[s.side]) != 1:
        if c.elem_bytes != 2:
            return "its tile's rows are flattened coordinates, and im2col-mode copies are built for f16/bf16 only"
        return im2col_read(plan, s, view, names, entry, X, lambda ub, ext: _ends_at(ub, ext, entry, names))
    layout = StridedLayout.parse(param.layout)
    coords = list(view.coords)
    x = plan.coords[plan.sides[s.side][0]]
    if len(coords) != 1 + len(plan.levels) or coords.count(x) != 1 or any(coords.count(iv) != 1 for iv in plan.ivs):
        return "its coordinates are not the tile's and the loop's own"
    xd = coords.index(x)
    kds = [coords.index(iv) for iv in plan.ivs]  # (outermost first)
    kd = kds[-1]
    mn = str(layout.stride[xd]) == "1" and str(layout.stride[kd]) != "1"
    if mn and c.elem_bytes != 2:
        return (f"its rows have stride 1 in its layout {param.layout}, and a tile of 1-byte elements cannot be "
                "MN-major (wgmma transposes f16/bf16 tiles only)")
    if mn and not mn_major:
        return (f"its rows have stride 1 in its layout {param.layout} and MN-major tiles are off "
                "(--no-wgmma-mn-major): a box's rows would be n-contiguous")
    if mn and X % MN_ATOM:
        return (f"its rows have stride 1 in its layout {param.layout} and its {X}-row tile is not a multiple "
                f"of the MN-major atom's {MN_ATOM} rows (one box each)")
    if not mn and (not layout.stride[kd].is_const or layout.stride[kd].value != 1):
        return (f"k has stride {layout.stride[kd]} in its layout {param.layout}, not 1, nor its rows (the box's "
                "rows must be k- or row-contiguous)")
    if not layout.start.is_const or layout.start.value:
        return f"its layout {param.layout} starts at an offset"
    for outer, inner in zip(kds, kds[1:]):
        if layout.stride[outer] != layout.stride[inner] * layout.shape[inner]:
            return (f"its loop nest's dimensions do not flatten to one k of stride 1 in its layout "
                    f"{param.layout} (a box's k is one dimension's)")
    for level, d in zip(plan.levels, kds):
        if not _ends_at(level.operands[1], layout.shape[d], entry, names) or (
                len(kds) > 1 and not _ends_at(level.operands[0], Poly.const(0), entry, names)):
            # the box reads up to the view's edge, past the loop's end: with both operands copied, their
            # products there would be summed (the stored operand's tile is 0 at k >= the loop's end)
            return (f"its loop does not end at the view's k extent {layout.shape[d]} (the box would bring "
                    "elements past the loop's end)" if len(kds) == 1 else
                    f"its loop nest does not run over the whole of the view's {layout.shape[d]} from 0 (the "
                    "box's k is the nest's, flattened)")
    K = math.prod((layout.shape[d] for d in kds[1:]), start=layout.shape[kds[0]])
    if mn:
        return {"view": param.name, "dims": [str(layout.shape[xd]), str(K)], "strides": [str(layout.stride[kd])],
                "box": [MN_ATOM, c.bk], "swizzle": ROW_BYTES, "major": "mn", "copies": X // MN_ATOM}
    return {"view": param.name, "dims": [str(K), str(layout.shape[xd])],
            "strides": [str(layout.stride[xd])], "box": [c.bk, X], "swizzle": ROW_BYTES}


def _ends_at(ub: ir.Value, extent, entry, names: list[str]) -> bool:
    """Whether the loop bound ``ub`` is the view extent ``extent`` (a Poly): the same size-symbol
    argument, or the same constant."""
    if extent.is_const:
        if not isinstance(ub, ir.OpResult):
            return False
        d = _owner(ub)
        return d.name == "arith.constant" and ir.IntegerAttr(d.attributes["value"]).value == extent.value
    name = str(extent)
    return name in names and names.index(name) < len(entry.arguments) and ub == entry.arguments[names.index(name)]


def _minus_zero_start(p) -> bool:
    """Whether the contraction ``p`` may start from ``-0.0`` (from the item's own value, or the
    literal): then its ``(k, j)`` tile's pad past K must be ``-0.0`` (:func:`pad_value`; with ``+0.0``
    a sum of only ``-0.0`` products would end ``+0.0``), which a TMA box's zero fill is not. A sum
    from any other start is never ``-0.0`` (IEEE 754: ``x + y`` is ``-0.0`` only for two ``-0.0``)."""
    if p.kind.integer:
        return False
    return p.added or (p.init == 0 and math.copysign(1.0, p.init) < 0)


def _box_bytes(m: dict, elem_bytes: int = 2) -> int:
    """Bytes the copies of one chunk of map ``m`` bring (``elem_bytes``-byte elements; ``copies`` boxes)."""
    return elem_bytes * m["box"][0] * m["box"][1] * m.get("copies", 1)


def _describe_tma(sig, s, m: dict, c: WgmmaConfig, stages: int = 1, short: str | None = None,
                  stored: bool = True) -> str:
    if m.get("mode") == "im2col":
        if m["rows"] == "taps":
            copy = (f"cp.async.bulk.tensor.4d.im2col per 64-row block of the MN-major tile ({m['copies']} copies "
                    f"of {m['box'][0]} channels of one filter tap, the block's, as the im2col offsets "
                    f"(s*{m['dilation'][0]}, r*{m['dilation'][1]}), x {m['box'][1]} pixels, the chunk's (n, oh, ow); "
                    "padding and pixels past the last image zero; read by wgmma transposed)")
        else:
            copy = (f"cp.async.bulk.tensor.4d.im2col of {m['box'][0]} channels x {m['box'][1]} pixels (the rows "
                    f"(n, oh, ow) from the tile's first, the chunk's filter tap as its im2col offsets "
                    f"(s*{m['dilation'][0]}, r*{m['dilation'][1]}); padding and rows past the last image zero)")
        launch = ("at launch C a multiple of 64, the output the convolution's"
                  + (", the loop's bound N*OH*OW" if "loop" in m else "")
                  + " and the geometry in the im2col ranges, else the tma=False build runs")
    elif m.get("major") == "mn":
        copy = (f"cp.async.bulk.tensor.2d per 64-row block of the MN-major tile ({m['copies']} boxes "
                f"{m['box'][0]}x{m['box'][1]}, rows x k, out-of-bounds elements zero; its rows are contiguous, "
                "read by wgmma transposed)")
        launch = "k byte stride a multiple of 16 at launch"
    else:
        copy = (f"cp.async.bulk.tensor.2d of the box {m['box'][0]}x{m['box'][1]} (k x rows, out-of-bounds "
                "elements zero)")
        launch = "row byte stride a multiple of 16 at launch"
    if stages == 1:
        how = ("into its 128B-swizzled tile, completed on an mbarrier (expect_tx "
               f"{_box_bytes(m, c.elem_bytes)} bytes), issued " + ("before the other operand's stores" if stored else
                                                    "at the chunk's start (both operands copied)"))
    else:
        how = (f"into one of {stages} 128B-swizzled tiles (stages), each completed on its own mbarrier "
               f"(expect_tx {_box_bytes(m, c.elem_bytes)} bytes), the copy of chunk c+{stages - 1} issued "
               f"after chunk c's first barrier, before its wgmma (the first "
               + ("one" if stages == 2 else str(stages - 1)) + " before the chunk loop)")
    return (f"'{s.name}' of '{sig.name}' loaded by the tensor memory accelerator: per chunk one {copy} "
            f"{how}; the tensor map is the hidden parameter '{_map_name(s.name)}' ({launch})"
            + (f"; {short}" if short else ""))


#: ``mbarrier.try_wait.parity``'s suspend-time hint (ns) per try of its wait loop
TRY_WAIT_TICKS = 10_000_000


def _i32(v: int) -> ir.Value:
    return b.const(v, ir.IntegerType.get_signless(32))


def _to_i32(v: ir.Value) -> ir.Value:
    return b.arith.IndexCastOp(ir.IntegerType.get_signless(32), v).result


def _shared_ptr(smem, offset=None) -> ir.Value:
    """The ``!llvm.ptr<3>`` of workgroup buffer ``smem`` (its 32-bit shared-window address), plus
    ``offset`` bytes (an index value) if given."""
    addr = memref.ExtractAlignedPointerAsIndexOp(smem).result
    if offset is not None:
        addr = b.add(addr, offset)
    addr = _to_i32(addr)
    return ir.Operation.create("llvm.inttoptr", results=[ir.Type.parse("!llvm.ptr<3>")], operands=[addr]).result


def _map_name(view: str) -> str:
    return f"__tma_{view}"


def _i64(v: int) -> ir.Value:
    return b.const(v, ir.IntegerType.get_signless(64))


def _attr(text: str) -> ir.Attribute:
    return ir.Attribute.parse(text)


class _WgmmaRewrite(_Rewrite):
    """:class:`~kernc.passes.mma_contractions._Rewrite`'s tile loop, item mapping and workgroup
    buffers, with the wgmma main loop and epilogue of the module docstring (steps 2-5); ``tma``: the
    tensor map (:func:`_tma_map`) of each side loaded by TMA."""

    def __init__(self, fn, sig, plan, c, parts, tma: dict | None = None, stages: int = 1,
                 limit: int = SHARED_LIMIT, mn=frozenset()) -> None:
        self.tma = tma or {}
        self.mn = frozenset(mn)  # the sides staged MN-major (mn_major_sides)
        self.smem_limit = limit  # (workgroup_limit: the stages may be dynamic workgroup memory)
        self.nstages = stages if self.tma else 1
        super().__init__(fn, sig, plan, c, parts)
        self.maps = {}

    def _stages(self) -> list[_Stage]:
        """Both tiles K-major, rows of ``bk`` (64, or 128 of 1-byte elements: 128 bytes) without padding (the 128B swizzle
        spreads an ldmatrix-free wgmma's reads; :func:`swizzled_index` places the elements); a
        TMA'd side's buffer holds its ``nstages`` tiles one after another (stage ``s`` at row
        ``s * X``: ``128 * X * s`` bytes, a multiple of 1024)."""
        c = self.c
        rows = [X * (self.nstages if side in self.tma else 1) for side, X in ((0, c.bm), (1, c.bn))]
        return [_Stage(0, True, rows[0], c.bk), _Stage(1, True, rows[1], c.bk)]

    def _stage_bytes(self, side: int) -> int:
        """Bytes of one tile of ``side`` (the offset from one stage to the next)."""
        return (self.c.bm if side == 0 else self.c.bn) * ROW_BYTES

    def run(self) -> None:
        fn, sig = self.fn, self.sig
        if self.tma:  # the maps' arguments follow the inputs (before the workgroup attributions)
            entry = fn.regions[0].blocks[0]
            ptr = ir.Type.parse("!llvm.ptr")
            ft = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
            for side, m in sorted(self.tma.items()):
                s = self.p.a if side == 0 else self.p.b
                self.maps[side] = entry.add_argument(ptr, fn.location)
                sig.extra.append(Param(name=_map_name(s.name), kind="tensor_map",
                                       dtype=_kern_type(self.p),
                                       tensor_map=m))
            fn.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
                list(ft.inputs) + [ptr] * len(self.tma), list(ft.results)))
        super().run()
        # the 128B swizzle's 1024-byte repeat: align both tiles (every attribution, for simplicity)
        n = ir.IntegerAttr(self.fn.attributes["workgroup_attributions"]).value
        al = ir.DictAttr.get({"llvm.align": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), ATOM_BYTES)})
        self.fn.attributes["workgroup_attrib_attrs"] = ir.ArrayAttr.get([al] * n)

    def _tile(self, tile, tid, E, ext, per, nbj, B) -> None:
        plan, c, p = self.plan, self.c, self.p
        self.smem_a, self.smem_b = self.smem
        if plan.batch:
            rest = b.arith.DivUIOp(tile, per).result
            in_batch = b.sub(tile, b.mul(rest, per))
            coord = _split(rest, plan.batch, E)
        else:
            in_batch, coord = tile, {}
        bi = b.arith.DivUIOp(in_batch, nbj).result
        bj = b.sub(in_batch, b.mul(bi, nbj))
        x0 = [b.mul(bi, b.idx(c.bm)), b.mul(bj, b.idx(c.bn))]
        self.E, self.ext = E, ext
        self.bases = {side: self._im2col_base(side, m, x0, E) for side, m in self.tma.items()
                      if m.get("rows") == "pixels"}
        lane = b.arith.RemUIOp(tid, b.idx(WARP)).result
        warp = b.arith.DivUIOp(tid, b.idx(WARP)).result
        group = b.arith.DivUIOp(tid, b.idx(WARPGROUP)).result
        first = {plan.coords[x]: v for x, v in coord.items()}
        ivs, lb, ub = tile_loop(plan, first)
        self.ivs_at = ivs
        acc_e = ir.IntegerType.get_signless(32) if p.kind.integer else ir.F32Type.get()  # an accumulator
        nreg = c.bn // 2
        acc_t = ir.Type.parse("!llvm.struct<(" + ", ".join([str(acc_e)] * nreg) + ")>")
        if p.init == 0.0 and math.copysign(1.0, p.init) > 0:  # (a -0.0 start stays -0.0: inserted)
            acc0 = ir.Operation.create("llvm.mlir.zero", results=[acc_t]).result
        else:
            acc0 = llvm_ops.undef(acc_t)
            init = b.const(p.init, acc_e)
            for r in range(nreg):
                acc0 = llvm_ops.insertvalue(acc0, init, [r])
        S = self.nstages
        a_row = b.mul(group, b.idx(WG_M * ROW_BYTES))
        # (warpgroup q's A: row 64q, 8192*q bytes on in either layout: 64 rows of 128 bytes K-major,
        # one MN_LBO MN-major)
        desc_a = self._descriptor(self.smem_a, a_row, 0 in self.mn)
        desc_b = self._descriptor(self.smem_b, None, 1 in self.mn)
        if self.maps:
            tma = self._tma_setup(tile, tid, lb, ub)
            barp, lead = tma[0], tma[1]
            # the chunks this block ran before this tile's: (tiles done) * (chunks per tile)
            g0 = b.mul(b.arith.DivUIOp(b.sub(tile, tma[3]), tma[4]).result, tma[5])
            for j in range(S - 1):  # the prologue: the copies of chunks 0..S-2 (those there are)
                self._issue(tma, b.add(g0, b.idx(j)), b.add(lb, b.idx(j * c.bk)), x0,
                            b.and_(lead, b.cmp("slt", b.idx(j), tma[5])))
        chunks = b.scf.ForOp(lb, ub, b.idx(c.bk), [acc0])
        with ir.InsertionPoint(chunks.body):
            k0 = chunks.induction_variable
            b.barrier()  # every warpgroup's wgmma of the previous chunk waited for: the tiles are free
            if self.maps:  # the TMA copies first: they land while the other operand is stored
                if S == 1:  # this chunk's copy, into the one tile
                    self._issue(tma, None, k0, x0, lead)
                ci = b.arith.DivUIOp(b.sub(k0, lb), b.idx(c.bk)).result  # this chunk's index in the tile
                g = b.add(g0, ci)
                if S > 1:  # chunk c+S-1's, into the stage chunk c-1's wgmma (waited for, then the barrier) read
                    ahead = b.and_(lead, b.cmp("slt", b.add(ci, b.idx(S - 1)), tma[5]))
                    self._issue(tma, b.add(g, b.idx(S - 1)), b.add(k0, b.idx((S - 1) * c.bk)), x0, ahead)
            for s, smem in zip((p.a, p.b), (self.smem_a, self.smem_b)):
                if s.side in self.maps:
                    continue
                T = s.op.results[0].type
                X = c.bm if s.side == 0 else c.bn

                def store(e, r, s=s, smem=smem, T=T, X=X):
                    kk, x, ok, slot, inside = self._slot(s, x0, e, ext, X)
                    k = b.add(k0, kk)
                    m = dict(first)  # the side's coordinates from its flattened index x
                    m.update({plan.coords[q]: v for q, v in _split(x, plan.sides[s.side], E).items()})
                    m.update(ivs(k))

                    def then(m=m, s=s):
                        for op in _slice(s.op, plan):
                            _clone(op, m)
                        return [m[s.op.results[0]]]
                    val = b.if_else(b.and_(ok, b.cmp("slt", k, ub)), [T], then, lambda T=T, s=s: [pad_value(s, T)])
                    val = b.convert_float(val[0], p.elem)  # exact: the read widened an elem
                    if inside is None:
                        b.store(val, smem, slot)
                    else:
                        with b.if_(inside):
                            b.store(val, smem, slot)
                # a loop over the rounds of slots, not unrolled here: an unrolled staging keeps every
                # round's addresses live across the chunk loop (255 registers at 128x128 tiles)
                round_loop(-(-c.bk * X // B), B, tid, store)
            # generic-proxy stores -> the async proxy wgmma reads through (PTX ISA, "Async Proxy": a
            # fence.proxy.async is needed between them), then every thread's stores are in
            if len(self.maps) < 2:
                nvvm.FenceProxyOp(_attr("#nvvm.proxy_kind<async.shared>"), space=_attr("#nvvm.shared_space<cta>"))
                b.barrier()
            if self.maps:  # this chunk's copies landed: the phase (g / S) & 1 of stage g % S's mbarrier completed
                if S == 1:
                    par = _to_i32(b.arith.AndIOp(g, b.idx(1)).result)
                    nvvm.MBarrierTryWaitParityOp(barp, par, _i32(TRY_WAIT_TICKS))
                else:
                    stage = b.arith.RemUIOp(g, b.idx(S)).result
                    par = _to_i32(b.arith.AndIOp(b.arith.DivUIOp(g, b.idx(S)).result, b.idx(1)).result)
                    nvvm.MBarrierTryWaitParityOp(self._bar_ptr(stage), par, _i32(TRY_WAIT_TICKS))
                    if 0 in self.maps:
                        desc_a = self._descriptor(self.smem_a, b.add(a_row, b.mul(stage, b.idx(self._stage_bytes(0)))),
                                                  0 in self.mn)
                    if 1 in self.maps:
                        desc_b = self._descriptor(self.smem_b, b.mul(stage, b.idx(self._stage_bytes(1))), 1 in self.mn)
            nvvm.WgmmaFenceAlignedOp()  # the accumulator registers are about to be read by wgmma
            acc = chunks.inner_iter_args[0]
            ty = p.kind.ptx if p.kind.integer else "bf16" if isinstance(p.elem, ir.BF16Type) else "f16"
            for ks in range(c.bk // c.wg_k):
                # K-major +32 bytes (16 k of f16/bf16, 32 of s8/u8, of a 128-byte row), MN-major +2048
                # (two 8-k atoms); the start-address field counts 16 bytes
                step_a, step_b = (_i64(ks * (2 * MN_SBO if side in self.mn else WG_K_BYTES) // 16) for side in (0, 1))
                da = b.arith.AddIOp(desc_a, step_a).result if ks else desc_a
                db = b.arith.AddIOp(desc_b, step_b).result if ks else desc_b
                acc = nvvm.WgmmaMmaAsyncOp(
                    acc_t, acc, da, db, _attr(f"#nvvm.shape<m = {WG_M}, n = {c.bn}, k = {c.wg_k}>"),
                    _attr(f"#nvvm.wgmma_type<{ty}>"), _attr(f"#nvvm.wgmma_type<{ty}>"),
                    _attr(f"#nvvm.wgmma_type<{'s32' if p.kind.integer else 'f32'}>"),
                    _attr("#nvvm.wgmma_scale_out<one>"),
                    _attr("#nvvm.wgmma_scale_in<one>"), _attr("#nvvm.wgmma_scale_in<one>"),
                    _attr(f"#nvvm.mma_layout<{'col' if 0 in self.mn else 'row'}>"),
                    _attr(f"#nvvm.mma_layout<{'row' if 1 in self.mn else 'col'}>")).result
            nvvm.WgmmaGroupSyncAlignedOp()
            nvvm.WgmmaWaitGroupSyncOp(0)  # before the next chunk overwrites the tiles they read
            b.scf.YieldOp([acc])
        # the epilogue: d_i of the thread is item (16*warp + g + 8h, 8nt + 2t + e), i = e + 2h + 4nt
        out = chunks.results[0]
        g = b.arith.DivUIOp(lane, b.idx(4)).result
        t2 = b.mul(b.arith.RemUIOp(lane, b.idx(4)).result, b.idx(2))
        row0 = b.add(b.add(x0[0], b.mul(warp, b.idx(16))), g)
        col0 = b.add(x0[1], t2)
        for h in range(2):
            i = b.add(row0, b.idx(8 * h))
            ok_i = b.cmp("ult", i, ext[0])
            for nt in range(c.nt):
                for e in range(2):
                    j = b.add(col0, b.idx(8 * nt + e))
                    with b.if_(b.and_(ok_i, b.cmp("ult", j, ext[1]))):
                        m = dict(first)  # the item's coordinates from the flattened (i, j)
                        for side, x in ((0, i), (1, j)):
                            m.update({plan.coords[q]: v for q, v in _split(x, plan.sides[side], E).items()})
                        for op in plan.pre:
                            _clone(op, m)
                        reg = e + 2 * h + 4 * nt
                        m[plan.loop.results[0]] = epilogue_sum(p, plan, m, ir.Operation.create(
                            "llvm.extractvalue", results=[acc_e], operands=[out],
                            attributes={"position": ir.DenseI64ArrayAttr.get([reg])}).result)
                        for op in plan.post:
                            _clone(op, m)

    def _tma_setup(self, tile, tid, lb, ub) -> tuple:
        """The mbarriers (a workgroup ``memref<S x i64>``, one per stage, initialised once per block
        before the tile loop: count 1, thread 0 arrives) and the values the chunks use: ``(stage 0's
        barrier pointer, thread 0?, {side: stage 0's tile pointer}, the tile loop's start and step,
        chunks per tile)`` (chunks per tile ``ceil(max(ub - lb, 0) / 64)``: 0 for an empty loop)."""
        fn = self.fn
        space = ir.Attribute.parse("#gpu.address_space<workgroup>")
        entry = fn.regions[0].blocks[0]
        S = self.nstages
        bar = entry.add_argument(ir.MemRefType.get([S], ir.IntegerType.get_signless(64), memory_space=space),
                                 fn.location)
        self.bar = bar
        n = ir.IntegerAttr(fn.attributes["workgroup_attributions"]).value
        fn.attributes["workgroup_attributions"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), n + 1)
        tiles = ir.BlockArgument(tile).owner.owner
        with ir.InsertionPoint(tiles):
            barp = _shared_ptr(bar)
            lead = b.cmp("eq", tid, b.idx(0))
            for s in range(S):
                nvvm.MBarrierInitOp(barp if s == 0 else self._bar_ptr(b.idx(s)), _i32(1), predicate=lead)
            nvvm.FenceMbarrierInitOp()  # the init visible to the async proxy (the copies' complete_tx)
            b.barrier()
            dsts = {side: _shared_ptr(self.smem_a if side == 0 else self.smem_b) for side in self.maps}
        # (the bounds may be computed in the tile loop's body: here, after the setup)
        span = b.arith.MaxSIOp(b.sub(ub, lb), b.idx(0)).result
        nch = b.arith.DivUIOp(b.add(span, b.idx(self.c.bk - 1)), b.idx(self.c.bk)).result
        return barp, lead, dsts, tiles.operands[0], tiles.operands[2], nch

    def _bar_ptr(self, stage) -> ir.Value:
        """The ``!llvm.ptr<3>`` of stage ``stage``'s mbarrier (an index value)."""
        return _shared_ptr(self.bar, b.mul(stage, b.idx(8)))

    def _issue(self, tma, g, k, x0, pred) -> None:
        """The ``expect_tx`` and copies of the chunk at ``k`` into stage ``g % S`` (``g``: the block's
        chunk index; ``None``: the one stage) by the threads of ``pred`` (thread 0 where a copy is due;
        a predicate, not an ``scf.if``: the unpredicated op wants a ``shared::cluster`` pointer)."""
        barp, dsts = tma[0], tma[2]
        if g is not None:
            stage = b.arith.RemUIOp(g, b.idx(self.nstages)).result
            barp = self._bar_ptr(stage)
            dsts = {side: _shared_ptr(self.smem_a if side == 0 else self.smem_b,
                                      b.mul(stage, b.idx(self._stage_bytes(side)))) for side in self.maps}
        nbytes = sum(_box_bytes(m, self.c.elem_bytes) for m in self.tma.values())
        nvvm.MBarrierArriveExpectTxOp(barp, _i32(nbytes), predicate=pred)
        for side, tmap in sorted(self.maps.items()):
            m = self.tma[side]
            smem = self.smem_a if side == 0 else self.smem_b
            base = None if g is None else b.mul(stage, b.idx(self._stage_bytes(side)))

            def block(q, side=side, smem=smem, base=base):  # the destination of 64-row block q
                if not q:
                    return dsts[side]
                return _shared_ptr(smem, b.idx(q * MN_LBO) if base is None else b.add(base, b.idx(q * MN_LBO)))
            if m.get("mode") == "im2col":
                self._issue_im2col(side, m, tmap, k, x0, barp, dsts[side], block, pred)
            elif m.get("major") == "mn":  # box q: rows x0+64q.. at the q-th leading byte offset
                for q in range(m["copies"]):
                    nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
                        block(q), tmap, [_to_i32(b.add(x0[side], b.idx(q * MN_ATOM)) if q else x0[side]), _to_i32(k)],
                        barp, [], predicate=pred)
            else:
                nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
                    dsts[side], tmap, [_to_i32(k), _to_i32(x0[side])], barp, [], predicate=pred)

    def _issue_im2col(self, side, m, tmap, k, x0, barp, dst, block, pred) -> None:
        """The im2col-mode copies of the chunk at ``k`` (:func:`~kernc.passes.wgmma_contractions_im2col.im2col_read`).
        ``"rows": "pixels"``: the chunk's 64 k are channels ``c0..`` of one filter tap ``(r, s)`` (``C`` a
        multiple of 64, checked at launch), the tile's rows the filter-base positions from its first
        (:meth:`_im2col_base`): one copy. ``"taps"``: the chunk's 64 k are 64 pixels from ``k``'s
        ``(n, oh, ow)``; each 64-row block ``q`` the 64 channels of one tap (row ``x0 + 64q`` split
        into ``(r, s, c0)``, clamped to the last block: a block past ``R*S*C`` loads rows no item
        stores, so the copy's bytes still match the expect_tx): one copy per block into the MN-major
        tile (``block(q)``: its destination)."""
        i16 = ir.IntegerType.get_signless(16)
        dw, dh = (self._param(t) for t in m["dilation"])
        tw, th, tc = m["taps"]

        def issue(dst, chan, tap_w, tap_h, n0, h0, w0):
            offsets = [b.arith.IndexCastOp(i16, b.mul(tap_w, dw)).result,
                       b.arith.IndexCastOp(i16, b.mul(tap_h, dh)).result]
            nvvm.CpAsyncBulkTensorGlobalToSharedClusterOp(
                dst, tmap, [_to_i32(v) for v in (chan, w0, h0, n0)], barp, offsets,
                mode=_attr("#nvvm.tma_load_mode<im2col>"), predicate=pred)
        if m["rows"] == "pixels":
            at = self.ivs_at(k)
            issue(dst, at[self.plan.ivs[tc]], at[self.plan.ivs[tw]], at[self.plan.ivs[th]], *self.bases[side])
            return
        if len(self.plan.levels) == 3:  # the pixel loops' (n, oh, ow) at k
            at = self.ivs_at(k)
            n0, oh0, ow0 = (at[iv] for iv in self.plan.ivs)
        else:  # one loop m: (m / (OH*OW), m / OW % OH, m % OW)
            OW, OH = (self._param(t) for t in m["out"])
            q = b.arith.DivUIOp(k, OW).result
            n0, oh0, ow0 = b.arith.DivUIOp(q, OH).result, b.arith.RemUIOp(q, OH).result, b.arith.RemUIOp(k, OW).result
        n0, h0, w0 = self._filter_base(m, n0, oh0, ow0)
        rows = self.plan.sides[side]
        last = b.arith.MaxSIOp(b.sub(self.ext[side], b.idx(MN_ATOM)), b.idx(0)).result
        for q in range(m["copies"]):
            x = b.arith.MinSIOp(b.add(x0[side], b.idx(q * MN_ATOM)) if q else x0[side], last).result
            tap = _split(x, rows, self.E)
            issue(block(q), tap[rows[tc]], tap[rows[tw]], tap[rows[th]], n0, h0, w0)

    def _param(self, text: str) -> ir.Value:
        """A geometry entry of an im2col map (:func:`~kernc.passes.wgmma_contractions_im2col.im2col_read`): a
        literal, or the kernel parameter of that name, as an index value."""
        if text.lstrip("-").isdigit():
            return b.idx(int(text))
        return self.fn.regions[0].blocks[0].arguments[self.sig.arg_names.index(text)]

    def _im2col_base(self, side: int, m: dict, x0, E) -> tuple:
        """The tile's first filter-base position ``(n0, oh0*sh - ph, ow0*sw - pw)`` of im2col-mode
        side ``side`` (its rows ``(n, oh, ow)`` split from the tile's first row ``x0[side]``): the
        coordinates ``(c0, w0, h0, n0)`` of its copies but the channel."""
        rows = self.plan.sides[side]
        at = _split(x0[side], rows, E)
        return self._filter_base(m, *(at[q] for q in rows))

    def _filter_base(self, m: dict, n0, oh0, ow0) -> tuple:
        """The filter-base position ``(n0, oh0*sh - ph, ow0*sw - pw)`` of output position ``(n0, oh0,
        ow0)`` under im2col map ``m``'s stride and padding."""
        sw, sh = (self._param(t) for t in m["stride"])
        pw, ph = (self._param(t) for t in m["pad"])
        return n0, b.sub(b.mul(oh0, sh), ph), b.sub(b.mul(ow0, sw), pw)

    def _descriptor(self, smem, offset, mn: bool = False) -> ir.Value:
        """The i64 descriptor of the tile at ``smem`` (+ ``offset`` bytes, an index); ``mn``: of an
        MN-major tile (leading byte offset :data:`MN_LBO`, stride :data:`MN_SBO`)."""
        i64 = ir.IntegerType.get_signless(64)
        addr = memref.ExtractAlignedPointerAsIndexOp(smem).result
        if offset is not None:
            addr = b.add(addr, offset)
        addr = b.arith.IndexCastOp(i64, addr).result
        start = b.arith.ShRUIOp(b.arith.AndIOp(addr, _i64(0x3FFFF)).result, _i64(4)).result
        rest = descriptor(0, MN_LBO, MN_SBO, SWIZZLE_128B) if mn else descriptor(0, 16, ATOM_BYTES, SWIZZLE_128B)
        return b.arith.OrIOp(start, _i64(rest - (1 << 64) if rest >= 1 << 63 else rest)).result

    def _slot(self, s, x0, e, ext, X: int) -> tuple:
        """Slot ``e`` of the cooperative load of staged read ``s`` into its ``X x bk`` tile (``X`` =
        ``bm`` or ``bn``; ``bk`` 64, or 128 for 1-byte elements): ``(kk, x, in_range, smem index,
        inside)`` (``inside``: ``e < X*bk``, ``None`` where the block's rounds cover the tile exactly),
        the lanes of a warp along the read's unit-stride coordinate, stored at :func:`swizzled_index`
        ``(x, kk, elem_bytes)``."""
        c, plan = self.c, self.plan
        total = c.bk * X
        kk, xl, x, ok = _slot_position(e, s.k_fastest, c.bk, X, x0[s.side], ext[s.side])
        inside = b.cmp("ult", e, b.idx(total)) if total % plan.block else None
        if s.side in self.mn:  # mn_swizzled_index(xl, kk), in index arithmetic
            def shr(v, n):
                return b.arith.ShRUIOp(v, b.idx(n)).result
            k8 = b.and_(kk, b.idx(7))
            unit = b.arith.XOrIOp(shr(b.and_(xl, b.idx(MN_ATOM - 1)), 3), k8).result  # the 16 bytes, swizzled
            atoms = b.add(b.mul(shr(xl, 6), b.idx(MN_LBO // 2)), b.mul(shr(kk, 3), b.idx(MN_SBO // 2)))
            within = b.add(b.add(b.mul(k8, b.idx(ROW_BYTES // 2)), b.mul(unit, b.idx(8))), b.and_(xl, b.idx(7)))
            slot = b.add(atoms, within)
            return kk, x, ok, slot, inside
        u = 16 // c.elem_bytes  # elements of a 16-byte unit: 8 (f16/bf16), 16 (i8/u8)
        chunk = b.arith.XOrIOp(b.arith.ShRUIOp(kk, b.idx(u.bit_length() - 1)).result,
                               b.arith.AndIOp(xl, b.idx(7)).result).result
        slot = b.add(b.add(b.mul(xl, b.idx(ROW_BYTES // c.elem_bytes)), b.mul(chunk, b.idx(u))),
                     b.arith.AndIOp(kk, b.idx(u - 1)).result)
        return kk, x, ok, slot, inside

__all__ = ["WgmmaContractions", "WgmmaConfig", "descriptor", "swizzled_index", "mn_swizzled_index",
           "mn_major_sides", "WGMMA_ARCHS"]
