"""``kern-mma-contractions``: the contractions of f16/bf16, i8/u8 and (``@tf32``) f32 operands on tensor
cores (``mma.sync``).

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
fed by ``ldmatrix``). The same loop of ``i8`` reads widened to ``i32`` with an ``i32`` sum
(``let acc: i32 = 0; acc += i32(a[i, k]) * i32(b[k, j]);``) runs on ``m16n8k32 .s8`` with ``i32``
accumulators (``u8`` reads, zero-extended, on ``.u8``), and one of ``f32`` reads in a kernel marked ``@tf32`` on ``m16n8k8 .tf32``;
:data:`KINDS` (one :class:`MmaKind` per operand type) holds what differs -- the instruction's
``k``, the fragments' register grids, the row padding and whether a tile may be read with
``ldmatrix.trans``:

1. *Block tile* ``BM x BN`` of the flattened sides (batch coordinates fixed per tile), blocks
   looping over the tiles (grid-stride, as ``kern-tile-contractions``). The block's ``W = B/32``
   warps form a ``WM x WN`` grid (``WN >= WM``, powers of two), each computing a ``warp_m x
   warp_n`` (64x32) warp tile of ``MT x NT`` (4x4) ``m16n8`` accumulator fragments: ``BM =
   WM*warp_m``, ``BN = WN*warp_n`` (128x128 for 256 threads).
2. *Staging per k-chunk* of ``BK`` (32): the block loads the ``BM x BK`` tile of the ``(i, k)`` read
   and the ``BK x BN`` tile of the ``(k, j)`` read into workgroup memory, cooperatively: the tile is
   of the *logical* view (each view read cloned with the tile's coordinates, a side's flattened
   index split back into its coordinates, ``k`` into the nest's loop variables, so any layout is
   loaded through its own; the index arithmetic no chunk changes computed once per tile, for each
   of the ``R = ceil(BK*X / B)`` rounds of slots ``e = tid + r*B``), the lanes
   of a warp along the view's unit-stride coordinate, 0 past the edges (``i``, ``j`` beyond their
   flattened extents, ``k >= ub``; a checked read's default inside them): any extents. A tile of a
   16-bit kind lies so that those stores are consecutive (:class:`_Stage`, :func:`_stage`): *k
   contiguous* (``smem[x*S + kk]``, ``S = BK + 8``) for a read loaded along ``k``, else *x
   contiguous* (``smem[kk*S + x]``, ``S = X + 8``). Rows are *padded* by 8 elements: a row is then
   an odd number of 16-byte units, so the eight 16-byte rows one ``ldmatrix`` phase reads fall in
   eight distinct 4-bank groups (no bank conflict), and every row stays 16-byte aligned as
   ``ldmatrix`` requires. The 8- and 32-bit kinds pad rows by 16 bytes too (:attr:`MmaKind.pad`)
   and stage *both* tiles k contiguous whatever the read's unit stride (``ldmatrix.trans`` moves
   16-bit elements only; the ISA's ``.row`` A and ``.col`` B fragments are rows of ``k``): the
   staging stores of a read whose lanes run along ``x`` (a gemm's ``b[k, j]``, B staged n-major)
   then conflict 4-way (rows 48 or 144 bytes apart reach 8 of the 32 banks).
   *Rolled* (``rolled_staging``: the build of the 64-bit ``index`` variant) the rounds are a loop,
   each chunk computing its slot's coordinates again, unrolled by :data:`ROLLED_UNROLL`: the
   unrolled staging holds every round's coordinates and addresses across the chunk loop, which at 64
   bits (two registers each) spills (conv2d_fwd_f16: 388-404 bytes at ptxas's 255 registers; rolled
   230, 0 spills). The 32-bit build, which every launch below 2^31 elements runs, keeps the
   unrolled staging (0 spills; its loads all in flight at once). The same stores, in the same order
   per slot: bitwise the same results.
3. *Fragments* (PTX ISA 9.7.14.5.8 and 9.7.9.25): per ``k`` step of the kind (k16 for 16-bit,
   k32 for i8, k8 for tf32), ``ldmatrix.x4`` gives each ``m16`` A fragment (matrices 0..3 are
   a0a1, a2a3, a4a5, a6a7 of the ISA's A layout: from a k contiguous tile lane ``l`` gives row ``l %
   16``, column ``16 bytes * (l/16)``; from an m contiguous one, with ``.trans``, row ``k = l%8 +
   8*(l/16)``, column ``8*((l/8)%2)``) and ``ldmatrix.x2`` each ``n8`` B fragment (the ISA's
   ``.col`` layout is the ``n x k`` tile by rows: from a k contiguous tile lane ``l < 16`` gives
   row ``n = l%8``, column ``16 bytes * (l/8)``; from an n contiguous one, with ``.trans``, row ``k
   = l``), then ``MT*NT`` ``nvgpu.mma.sync`` update the accumulators, kept as ``vector<2x2xf32>``
   (``vector<2x2xi32>``) loop values.
4. *The epilogue*: accumulator element ``c{2h+e}`` of fragment ``(mt, nt)`` is item
   ``(i0 + wm*warp_m + 16*mt + g + 8h, j0 + wn*warp_n + 8*nt + 2*t + e)`` (``g = lane/4``, ``t =
   lane%4``: the ISA's C/D layout), each side split back into its coordinates; the code before and
   after the loop runs for it under ``i < Mi && j < Mj`` (the flattened extents).

The float sums are not in the kernel's order (a tensor core adds the products of a k16 step in an
order the ISA leaves open; the CPU interpreter's is documented in
:mod:`kernc.backend.interpreter.nvgpu`): the result is not bitwise the untiled kernel's, which the
remark says. Integer sums are exact: bitwise the untiled kernel's while every k32 partial sum stays
within i32 (MLIR lowers the integer mma with ``.satfinite``, which clamps where ``arith.addi``
wraps). ``f32`` operands need TF32 (10-bit mantissas), which is never chosen silently: without
``@tf32`` such a contraction stays on ``kern-tile-contractions``' path, with a remark; with it each
staged operand is rounded by :func:`round_tf32` (``cvt.rna.tf32.f32``) first, in the IR, so the
CPU interpreter and the GPU multiply the same values. ``u8`` operands: the ``nvgpu`` dialect's
mma.sync lowers ``i8`` as ``.s8`` only, so their ``nvgpu.mma.sync`` carries :data:`PTX_TYPE_ATTR`
and ``kern-lower-unsigned-mma`` (GPU_TO_LLVM) writes it as ``nvvm.mma.sync`` with ``.u8``
multiplicands; the fragments, the staging and ``ldmatrix`` are those of ``i8``.

Applies on ``sm_80`` and later (``arch``; :attr:`MmaKind.min_sm`); elsewhere, or when a kernel is
not such a contraction (other loop body, other types, ``@tile`` given, a block that is not a
power-of-two number of warps or has more than :data:`MAX_BLOCK` threads), the kernel is left to
``kern-tile-contractions`` and ``remarks`` says why -- unless the kernel says ``@tensor_cores``:
then each of those reasons is a ``CompileError`` located at the attribute (the signature's
``tensor_cores["force"]``), never CUDA cores silently. Off with ``--no-tensor-cores`` /
``kernc.compile(..., tensor_cores=False)`` (which overrides ``@tensor_cores``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kernc.dialect import kern
from kernc.dialect.mapping import MAPPING_ATTR, ItemMapping
from kernc.dialect.signature import PTX_TYPE_ATTR, SIGNATURE_ATTR, KernelSignature
from kernc.support.errors import CompileError, Diagnostic, SourceLocation
from kernc.support.mlir import dialect, ir, lazy_dialect

from . import ir_builder as b
from .base import Pass, internal, option
from .targets import MMA_MIN_SM, PTX_VERSION, sm_number
from .tile_contractions import (_Analysis, _analysed_kernels, _clone, _hoistable, _mapped_to_tiles, _product, _slice,
                                _slot_position, _split, collapse_nest, flat_extents,
                                round_loop)
from .workgroup import SHARED_LIMIT, WARP, KernelContext, emit_remark

gpu = dialect("gpu")
# imported when a contraction is rewritten: most kernels this pass sees are declined
nvgpu = lazy_dialect("nvgpu")
vector = lazy_dialect("vector")

#: The first architecture with ``mma.sync`` m16n8k16 for f16/bf16 (``targets.MMA_MIN_SM``).
MIN_SM = MMA_MIN_SM
#: Elements each staged 16-bit row is padded by (16 bytes of f16; see the module docstring, step 2);
#: rows of other element types are padded by 16 bytes too (:attr:`MmaKind.pad`).
PAD = 8
#: The unroll count of a rolled staging's loop over the rounds (:attr:`MmaContractions.rolled_staging`):
#: four global loads in flight per thread and operand; by ptxas -v on sm_80/sm_90 (64-bit index),
#: conv2d_fwd_f16 230 registers, 0 spills (unrolled: 255 and 388-404 bytes of spills; not unrolled,
#: 227-228 registers, one load at a time).
ROLLED_UNROLL = 4
#: The mma instruction shape (m, n, k) of f16/bf16; ``m`` and ``n`` are those of every kind.
MMA_M, MMA_N, MMA_K = 16, 8, 16


@dataclass(frozen=True)
class MmaKind:
    """How contractions of one operand element type run on tensor cores (PTX ISA 9.7.14.5,
    "Matrix multiply-accumulate operation using mma instruction"): ``mma.sync.aligned.m16n8k{k}
    .row.col.{acc}.{ptx}.{ptx}.{acc}``, the operands of a lane four bytes to a 32-bit register.

    ``elem_bytes``: the staged element's size (1, 2 or 4); the fragments are ``vector<4 x per>``
    (A) and ``vector<2 x per>`` (B) of ``per = 4 / elem_bytes`` elements (one 32-bit register a
    row), ``k = 8 * per`` (k16 for 16-bit, k32 for 8-bit, k8 for 32-bit operands): an ldmatrix
    8x8 matrix of 16-bit elements is an 8 x (16 bytes) one of any size. ``b_trans``: a tile may lie
    ``x`` contiguous and be read with ``ldmatrix.trans`` (16-bit elements only); else both tiles
    are staged ``k`` contiguous (``smem[x*S + kk]``: the ISA's ``.row`` A and ``.col`` B rows) and
    read with a plain ``ldmatrix``. ``acc``: the accumulator type (``f32``, ``s32``)."""

    ptx: str
    elem_bytes: int
    acc: str
    b_trans: bool
    min_sm: int = 80

    @property
    def per(self) -> int:
        return 4 // self.elem_bytes

    @property
    def integer(self) -> bool:
        """Integer operands (``s8``/``u8``) with exact ``s32`` sums."""
        return self.acc == "s32"

    @property
    def k(self) -> int:
        return 8 * self.per

    @property
    def pad(self) -> int:
        """Elements a staged row is padded by: 16 bytes (see the module docstring, step 2)."""
        return PAD if self.elem_bytes == 2 else 16 // self.elem_bytes

    @property
    def row16(self) -> int:
        """Elements of a 16-byte ``ldmatrix`` row (8 of 16-bit elements)."""
        return 16 // self.elem_bytes

    @property
    def shape(self) -> str:
        return f"m16n8k{self.k}"


#: The operand kinds (PTX ISA 9.7.14.5.8 m16n8k16 f16/bf16, 9.7.14.5.10 m16n8k32 s8/u8, 9.7.14.5.7
#: m16n8k8 tf32; all ``sm_80`` and later for these shapes). The gpu IR's ``nvgpu.mma.sync`` of
#: ``i8`` operands is ``.s8`` (MLIR's convert-nvgpu-to-nvvm writes no other); a ``u8`` one carries
#: :data:`PTX_TYPE_ATTR` ``"u8"``, which ``kern-lower-unsigned-mma`` lowers to ``.u8.u8``.
KINDS = {
    "f16": MmaKind("f16", 2, "f32", True),
    "bf16": MmaKind("bf16", 2, "f32", True),
    "s8": MmaKind("s8", 1, "s32", False),
    "u8": MmaKind("u8", 1, "s32", False),
    "tf32": MmaKind("tf32", 4, "f32", False),
}
#: Most threads per block: each thread holds 64 f32 accumulators, its fragments and the staging
#: addresses (about 210 registers at 256 threads, ptxas -v); 512 threads would leave 128 (65536
#: registers per block) and spill.
MAX_BLOCK = 256


@dataclass(frozen=True)
class MmaConfig:
    """A ``bm x bn`` block tile in chunks of ``bk``, ``wm x wn`` warps of ``warp_m x warp_n``
    items each (``mt x nt`` m16n8 fragments), operands of ``kind``."""

    wm: int
    wn: int
    warp_m: int
    warp_n: int
    bk: int
    kind: MmaKind = KINDS["f16"]

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

    def stage(self, side: int, k_fastest: bool) -> "_Stage":
        """The workgroup tile of a staged read of side ``side`` (0: ``i``, 1: ``j``) whose lanes run
        along ``k`` (``k_fastest``, the read's unit-stride coordinate) or along its tile coordinate.
        A 16-bit kind orients the tile along the lanes, so a warp's cooperative stores are
        consecutive elements (no bank conflict) and ``ldmatrix`` reads it with or without
        ``.trans``; the other kinds (no ``ldmatrix.trans``: :attr:`MmaKind.b_trans`) lie ``k``
        contiguous whatever the lanes. Rows are padded by :attr:`MmaKind.pad` elements."""
        X = self.bm if side == 0 else self.bn
        if k_fastest or not self.kind.b_trans:
            return _Stage(side, True, X, self.bk + self.kind.pad)
        return _Stage(side, False, self.bk, X + self.kind.pad)

    def shared_bytes(self, a_k_fastest: bool = True, b_k_fastest: bool = False) -> int:
        """Bytes of the two staged tiles (by default a gemm's: ``a[i, k]`` loaded along ``k``,
        ``b[k, j]`` along ``j``)."""
        tiles = (self.stage(0, a_k_fastest), self.stage(1, b_k_fastest))
        return sum(st.elems for st in tiles) * self.kind.elem_bytes


@dataclass(frozen=True)
class _Stage:
    """Where a staged read's ``X x bk`` tile (``X``: ``bm`` for side ``i``, ``bn`` for side ``j``)
    lies in workgroup memory: ``x_major``, ``smem[x*stride + kk]`` (rows of ``k``, k contiguous),
    else ``smem[kk*stride + x]`` (rows of the tile coordinate, x contiguous); ``rows`` rows of
    ``stride`` elements, the row's length padded (:meth:`MmaConfig.stage`)."""

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
    """The workgroup tile of staged read ``s`` (:meth:`MmaConfig.stage`)."""
    return c.stage(s.side, s.k_fastest)


def mma_config(block: int, warp_m: int, warp_n: int, bk: int,
               kind: MmaKind = KINDS["f16"]) -> MmaConfig | str:
    """The configuration of a block of ``block`` threads for ``kind``'s operands, or why there is
    none (a remark)."""
    if block % WARP or (block // WARP) & (block // WARP - 1):
        return f"its block of {block} threads is not a power-of-two number of warps"
    if block > MAX_BLOCK:
        return (f"its block of {block} threads would leave each thread fewer registers than its "
                f"accumulators and fragments need (at most {MAX_BLOCK} threads)")
    if warp_m % MMA_M or warp_n % (2 * MMA_N) or bk % kind.k or min(warp_m, warp_n, bk) <= 0:
        return (f"a {warp_m}x{warp_n} warp tile in chunks of {bk} is not made of {kind.shape} steps "
                f"(warp_m a multiple of 16, warp_n of 16, block_k of {kind.k})")
    w = block // WARP
    wm = 1 << ((w.bit_length() - 1) // 2)
    return MmaConfig(wm, w // wm, warp_m, warp_n, bk, kind)


@dataclass
class MmaContractions(Pass):
    """Run the f16/bf16, i8/u8 and (``@tf32``) f32 contractions ``kern-tile-contractions`` matches on
    tensor cores: ``ldmatrix``-fed ``mma.sync`` (m16n8k16, m16n8k32 .s8/.u8, m16n8k8 .tf32), f32 or
    i32 accumulators, padded workgroup tiles; ``CompileError`` at ``@tensor_cores`` when such a
    kernel cannot be taken."""

    name = "kern-mma-contractions"
    summary = ("f16/bf16/i8/u8/@tf32 f32 contraction loops on tensor cores: ldmatrix + mma.sync "
               "m16n8k16/k32/k8, f32 or i32 sums")

    #: the target (``kernc compile --arch``): tensor cores from ``sm_80``
    arch: str = option("sm_90", choices=tuple(PTX_VERSION))
    #: the items of one warp (multiples of 16) and the loop chunk staged per step (multiple of 16)
    warp_m: int = option(64)
    warp_n: int = option(32)
    block_k: int = option(32)
    #: whether a kernel's ``@tile`` keeps it on CUDA cores (``False`` under ``kernc compile --no-tile``,
    #: which overrides ``@tile``)
    tile_attr: bool = option(True)
    #: stage each tile in a loop over its rounds of slots, per chunk, unrolled by
    #: :data:`ROLLED_UNROLL` (module docstring, step 2), instead of each round's slot computed once
    #: per tile: the build of the 64-bit ``index`` variant (``Compilation.wide_index``)
    rolled_staging: bool = option(False)
    #: a callable that receives each one-line remark (``kernc compile --remarks``), or ``None``
    remarks: Callable[[str], None] | None = internal(None)

    def _remark(self, op, text: str) -> None:
        emit_remark(self.remarks, op, text)

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        # (a kernel kern-wgmma-contractions has put on tensor cores meets @tensor_cores)
        for fn, sig, plan, why in _analysed_kernels(module, lambda fn: not _mapped_to_tiles(fn)):
            if why is not None:
                _forced(sig, f"it is not a contraction kern-tile-contractions can tile: {why}", HINT_BODY)
                continue  # kern-tile-contractions says why
            if plan.loop is None:
                _forced(sig, "it has no contraction loop", HINT_BODY)
                continue
            got = self._decide(sig, plan)
            if isinstance(got, _Reason):
                _forced(sig, got, got.hint)
                self._remark(plan.loop, f"not using tensor cores for '{sig.name}': {got}")
                continue
            config, parts = got
            at = plan.loop.location  # (the rewrite erases the loop)
            _Rewrite(fn, sig, plan, config, parts, self.rolled_staging).run()
            self._remark(at, _describe(sig, plan, config, parts))

    def _decide(self, sig: KernelSignature, plan: _Analysis):
        """``(config, parts)`` for a contraction this pass takes, or why not (a remark)."""
        sm = sm_number(self.arch)
        if sig.tile_config is not None and self.tile_attr:
            return _Reason("the kernel asks for a CUDA-core tile with @tile",
                           "remove @tile (tensor cores take tiles of their own), or remove @tensor_cores")
        parts = _match(plan, "tf32" in (sig.tensor_cores or {}))
        if isinstance(parts, str):  # the loop itself: that reason first, the arch's after it
            hint = ("add @tf32 (f32 reads rounded to TF32 on the tensor cores), or use f16/bf16 operands"
                    if "(@tf32)" in parts else HINT_BODY)
            if sm < MIN_SM:
                parts += f" (and {self.arch} has no mma.sync: sm_{MIN_SM} and later)"
            return _Reason(parts, hint)
        if sm < parts.kind.min_sm:
            return _Reason(f"{self.arch} has no mma.sync {parts.kind.shape} for {parts.kind.ptx} operands "
                           f"(sm_{parts.kind.min_sm} and later)", f"compile with --arch sm_{parts.kind.min_sm} or later")
        config = mma_config(plan.block, self.warp_m, self.warp_n, self.block_k, parts.kind)
        if isinstance(config, str):
            return _Reason(config, f"use @block({MAX_BLOCK}) or less" if plan.block > MAX_BLOCK
                           else "remove @tensor_cores")
        need = config.shared_bytes(parts.a.k_fastest, parts.b.k_fastest)
        if need > SHARED_LIMIT:
            return _Reason(f"its {config.bm}x{config.bn}x{config.bk} tiles need {need} bytes of workgroup "
                           f"memory, more than the {SHARED_LIMIT} bytes a block may use",
                           "use a smaller @block, or remove @tensor_cores")
        return config, parts


#: the hint of a loop that is not of the form tensor cores run
HINT_BODY = ("write the loop as 'acc += a[i, k] * b[k, j]' of f16/bf16 (f32 sums), i8 or u8 widened to i32 "
             "(i32 sums) or, with @tf32, f32 reads; or remove @tensor_cores")


class _Reason(str):
    """Why a contraction is not run on tensor cores (the remark's and the error's text), with the
    ``hint`` that fits that cause (the error's ``hint:`` line under ``@tensor_cores``)."""

    hint: str

    def __new__(cls, text: str, hint: str):
        self = super().__new__(cls, text)
        self.hint = hint
        return self


def _forced(sig: KernelSignature, why: str, hint: str) -> None:
    """A ``CompileError`` at ``@tensor_cores`` saying ``why`` (with ``hint``) when the kernel forces
    tensor cores; nothing otherwise (the caller remarks ``why`` and leaves the kernel to CUDA cores)."""
    at = (sig.tensor_cores or {}).get("force")
    if at is None:
        return
    raise CompileError(Diagnostic(
        f"@tensor_cores of kernel '{sig.name}': cannot run on tensor cores: {why}", SourceLocation(*at),
        hint=hint))


@dataclass
class _Parts:
    """The matched loop: the staged reads ``a`` (side ``i``) and ``b`` (side ``j``), their storage
    type ``elem`` (f16, bf16, i8 or f32), their :class:`MmaKind`, the accumulator's type ``acc``
    (f32 or i32) and initial value ``init`` (a constant); ``added``: the loop's initial value is
    the item's own (``let acc = c[i, j];``, a value of the code before the loop or an argument):
    the fragments start at ``init``, the identity of the addition (0; ``-0.0`` for floats, so that
    a sum of ``-0.0`` products keeps a ``-0.0`` start's sign, as the loop does), and the epilogue
    adds it, ``acc0 + sum``."""

    a: object
    b: object
    elem: ir.Type
    init: float | int
    kind: MmaKind = KINDS["f16"]
    acc: ir.Type | None = None
    added: bool = False


def _owner(v):
    o = v.owner
    return o.operation if hasattr(o, "operation") else o


def _match(plan: _Analysis, tf32: bool = False) -> _Parts | str:
    """The loop (or nest) as ``acc += a * b`` of f16/bf16 reads with f32 sums, of i8 reads widened
    to i32 (``i32(a[i, k]) * i32(b[k, j])``, ``arith.extsi``) with i32 sums, or -- ``tf32``: the
    kernel's ``@tf32`` -- of f32 reads with f32 sums; or why it is not (a remark)."""
    if len(plan.staged) != 2 or {s.side for s in plan.staged} != {0, 1}:
        return "its loop does not read one (i, k) and one (k, j) operand"
    sa, sb = sorted(plan.staged, key=lambda s: s.side)
    f32, i32 = ir.F32Type.get(), ir.IntegerType.get_signless(32)
    elems = [ir.MemRefType(s.op.operands[0].type).element_type for s in (sa, sb)]
    reads = [s.op.results[0] for s in (sa, sb)]
    dtypes = [sig_dtype(plan, s) for s in (sa, sb)]
    if elems[0] != elems[1] or dtypes[0] != dtypes[1]:
        return f"its operands are {dtypes[0]} and {dtypes[1]}, not of one type"
    name = dtypes[0]
    if name == "f32" and not tf32:
        return ("its operands are f32: tensor cores would round them to TF32 (10-bit mantissas), "
                "which is never done without asking (@tf32)")
    if name not in ("f16", "bf16", "i8", "u8", "f32"):
        return f"its operands are {name}, not f16, bf16, i8, u8 or (with @tf32) f32"
    integer = name in ("i8", "u8")
    acc_t = i32 if integer else f32
    if integer:  # the reads widened to i32 (i8 signed, u8 unsigned), each once
        widen = "arith.extsi" if name == "i8" else "arith.extui"
        exts = [op for op in plan.body if op.name == widen and op.operands[0] in reads]
        if (len(exts) != 2 or {e.operands[0] for e in exts} != set(reads)
                or any(e.results[0].type != i32 for e in exts)):
            return f"its {name} operands are not both widened to i32 (write i32(a[i, k]) * i32(b[k, j]))"
        vals = [e.results[0] for e in exts]
    else:
        if any(r.type != f32 for r in reads):
            return "its operands are computed in another type than f32"
        vals = reads
    if len(plan.iter_args) != 1 or plan.iter_args[0].type != acc_t:
        return f"it does not accumulate one {acc_t} value"
    if not _product_sum(plan, vals, integer):
        return "its loop body is not 'acc += a * b'"
    init = _owner(plan.loop.operands[3])
    kind = KINDS["s8" if name == "i8" else "tf32" if name == "f32" else name]
    if not isinstance(init, ir.Operation) or init.name != "arith.constant":
        # the item's own start (its code before the loop, e.g. `let acc = c[i, j];`, or an argument):
        # the fragments sum from the identity of the addition, the epilogue adds it. Floats start
        # from -0.0, not +0.0: acc0 + (-0.0 + s) is acc0 + s bitwise for every s, where +0.0 turned a
        # sum of -0.0 products onto a -0.0 start into +0.0 (the loop keeps -0.0)
        return _Parts(sa, sb, elems[0], 0 if integer else -0.0, kind, acc_t, added=True)
    value = init.attributes["value"]
    start = ir.IntegerAttr(value).value if integer else ir.FloatAttr(value).value
    return _Parts(sa, sb, elems[0], start, kind, acc_t)


def pad_value(s, T: ir.Type) -> ir.Value:
    """What a staged tile holds where staged read ``s`` has no element (past ``K``, or past the
    extent of its rows): ``0`` for the ``(i, k)`` operand, the identity of addition (``-0.0`` for
    floats) for the ``(k, j)`` one. A product of the two pads past ``K`` (or of the A side's TMA
    zero fill and a B pad) is then ``+0.0 * -0.0 = -0.0``, which adds nothing to any sum: a sum of
    only ``-0.0`` terms stays ``-0.0``, as in the loop (with ``+0.0`` on both sides it became
    ``+0.0``). Items past the extents are not written."""
    return b.add_identity(T) if s.side == 1 else b.zero(T)


def tile_loop(plan: _Analysis, first: dict) -> tuple:
    """``(ivs, lb, ub)`` of the contraction's loop (or nest, collapsed into one in its order:
    :func:`~kernc.passes.tile_contractions.collapse_nest`) for a block tile: the code before the loop
    that its bounds use (the same for every item) cloned into ``first`` (the tile's values: its
    batch coordinates) at the insertion point. Shared by kern-mma- and kern-wgmma-contractions."""
    for level in plan.levels:
        for v in level.operands[:2]:
            d = _owner(v)
            if any(d == op for op in plan.pre) and v not in first:
                for op in _slice(d, plan):
                    if op.results[0] not in first:
                        _clone(op, first)
    return collapse_nest(plan, first)


def epilogue_sum(p: _Parts, plan: _Analysis, m: dict, acc):
    """The loop's result for one item from its fragment element ``acc``: ``acc`` itself, or, where
    the loop starts from the item's own value (``p.added``), ``acc0 + acc`` (``acc0`` mapped
    through ``m``, the item's clone of the code before the loop)."""
    if not p.added:
        return acc
    acc0 = plan.loop.operands[3]
    acc0 = m.get(acc0, acc0)
    return b.arith.AddIOp(acc0, acc).result if p.kind.integer else b.arith.AddFOp(acc0, acc).result


def _product_sum(plan: _Analysis, vals: list, integer: bool = False) -> bool:
    """Whether the innermost loop body yields ``acc + a*b`` (either order) of ``vals``, the two
    staged reads (f16/bf16/f32: ``mulf``, ``addf``) or their i32 widenings (i8/u8: ``muli``,
    ``addi``): the rest of the body (their index arithmetic, an inner loop's bounds) feeds nothing
    else."""
    mul_name, add_name = ("arith.muli", "arith.addi") if integer else ("arith.mulf", "arith.addf")
    acc = plan.iter_args[0]
    if len(plan.yld.operands) != 1:
        return False
    add = _owner(plan.yld.operands[0])
    if not isinstance(add, ir.Operation) or add.name != add_name or acc not in list(add.operands):
        return False
    rest = [v for v in add.operands if v != acc]
    mul = _owner(rest[0]) if len(rest) == 1 else None
    return (isinstance(mul, ir.Operation) and mul.name == mul_name
            and set(mul.operands) == set(vals))


def sig_dtype(plan: _Analysis, s) -> str:
    """The kern element type (``"i8"``, ``"u8"``, ``"f16"``, ...) of staged read ``s``'s view: the
    IR's ``i8`` is both."""
    memref = s.op.operands[0]
    args = list(plan.fn.regions[0].blocks[0].arguments)
    for p, arg in zip(plan.sig.params, args):
        if arg == memref:
            return p.dtype
    return str(ir.MemRefType(memref.type).element_type)


def _describe(sig, plan: _Analysis, c: MmaConfig, p: _Parts) -> str:
    k = p.kind
    tiles, conflicts = [], []
    for s in (p.a, p.b):
        st = _stage(c, s)
        X = c.bm if s.side == 0 else c.bn
        shape = f"{X}x{c.bk}, k contiguous" if st.x_major else f"{c.bk}x{X}, {plan.side_name(s.side)} contiguous"
        across = ""
        if st.x_major and not s.k_fastest:  # (8- and 32-bit kinds: no ldmatrix.trans)
            across = f" (staged {'m' if s.side == 0 else 'n'}-major across its loads along {plan.side_name(s.side)})"
            conflicts.append(s.name)
        tiles.append(f"{s.name} of {plan.side_name(s.side)}: {shape}, ldmatrix.{'x4' if s.side == 0 else 'x2'}"
                     f"{'' if st.x_major else '.trans'}{across}")
    if k.b_trans:
        padded = "no bank conflict"
    else:
        padded = "ldmatrix without bank conflicts" + (
            f"; the staging stores of {' and '.join(conflicts)} conflict 4-way" if conflicts else "")
    nest = f"; its nest of {len(plan.levels)} loops runs as one k, innermost fastest" if len(plan.levels) > 1 else ""
    unordered = ("on a GPU the sums' order differs from the loop's (not bitwise the --no-tensor-cores "
                 "result); the CPU interpreter adds them k ascending")
    if k.integer:
        what, tail = f"{'i8' if k.ptx == 's8' else 'u8'} products, i32 sums", (
            "the sums are exact: bitwise the --no-tensor-cores result while every 32-wide partial sum "
            "stays within i32 (mma.sync .satfinite clamps where the loop wraps)")
    elif k.ptx == "tf32":
        what, tail = "tf32 products, f32 sums", (
            "f32 operands rounded to TF32 as @tf32 asks (cvt.rna.tf32.f32: 10-bit mantissas, to nearest, "
            f"ties away); {unordered}")
    else:
        what, tail = f"{p.elem} products, f32 sums", unordered
    if p.added:
        tail += ("; the sums start from " + ("0" if p.kind.integer else "-0.0") + " and each item's own start "
                 "(its value before the loop) is added after them")
    return (f"'{sig.name}' on tensor cores: {c.bm}x{c.bn} block tiles in chunks of {c.bk} of k, "
            f"{c.wm}x{c.wn} warps of {c.warp_m}x{c.warp_n} items, mma.sync {k.shape} ({what}) fed by "
            f"ldmatrix from workgroup tiles of the logical views ({'; '.join(tiles)}), rows padded by "
            f"{k.pad} elements ({padded}){nest}; {tail}")


class _Rewrite:
    """Build the tensor-core kernel of a matched contraction (the module docstring's steps 1-4)."""

    #: the most bytes of workgroup buffers the kernel may have (:meth:`KernelContext.check_limit`;
    #: ``kern-wgmma-contractions``' TMA stages may take dynamic workgroup memory)
    smem_limit: int = SHARED_LIMIT

    def __init__(self, fn, sig, plan: _Analysis, c: MmaConfig, parts: _Parts, rolled: bool = False) -> None:
        self.fn, self.sig, self.plan, self.c, self.p = fn, sig, plan, c, parts
        self.rolled = rolled  # MmaContractions.rolled_staging
        self.stages = self._stages()

    def _stages(self) -> list[_Stage]:
        """The two workgroup tiles (their sizes are the buffers :meth:`run` allocates)."""
        return [_stage(self.c, s) for s in (self.p.a, self.p.b)]

    def run(self) -> None:
        fn, sig, plan, c, p = self.fn, self.sig, self.plan, self.c, self.p
        guard = plan.guard
        B = plan.block
        E = list(plan.delin.extents)
        kc = KernelContext(fn, sig, guard, B)
        self.smem = [kc.workgroup(p.elem, st.elems, f"tensor-core tile of '{s.name}'",
                                  region=f"mma.{s.name}.{'ab'[st.side]}", location=s.op.location)
                     for s, st in zip((p.a, p.b), self.stages)]
        kc.check_limit(self.smem_limit)
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
        ivs, lb, ub = tile_loop(plan, first)
        kd = p.kind
        acc_t = ir.VectorType.get([2, 2], p.acc or ir.F32Type.get())
        init = b.const(p.init, p.acc or ir.F32Type.get())
        accs0 = [vector.BroadcastOp(acc_t, init).result for _ in range(c.mt * c.nt)]
        coop = [self._slots(s, st, x0, tid, E, ext, first, B) for s, st in zip((p.a, p.b), self.stages)]
        chunks = b.scf.ForOp(lb, ub, b.idx(c.bk), accs0)
        with ir.InsertionPoint(chunks.body):
            k0 = chunks.induction_variable
            b.barrier()  # the previous chunk's (or tile's) ldmatrix reads are done
            for s, smem, (staging, per_chunk) in zip((p.a, p.b), self.smem, coop):
                T = s.op.results[0].type

                def stage(kk, at, ok, slot, inside, s=s, smem=smem, T=T, per_chunk=per_chunk):
                    k = b.add(k0, kk)

                    def then(at=at, s=s, k=k, per_chunk=per_chunk):
                        m = dict(at)
                        m.update(ivs(k))
                        for op in per_chunk:
                            _clone(op, m)
                        return [m[s.op.results[0]]]
                    val = b.if_else(b.and_(ok, b.cmp("slt", k, ub)), [T], then, lambda T=T, s=s: [pad_value(s, T)])
                    if kd.ptx == "tf32":
                        val = round_tf32(val[0])
                    elif b.is_float(T):
                        val = b.convert_float(val[0], p.elem)  # exact: the read widened an elem
                    else:
                        val = val[0]  # an i8/u8 read is staged as it is
                    if inside is None:
                        b.store(val, smem, slot)
                    else:  # the last round of slots of a tile that is not a multiple of the block
                        with b.if_(inside):
                            b.store(val, smem, slot)
                staging(stage)
            b.barrier()
            accs = list(chunks.inner_iter_args)
            for ks in range(c.bk // kd.k):
                afr = [self._a_fragment(lane, b.add(w0[0], b.idx(mt * MMA_M)), ks * kd.k) for mt in range(c.mt)]
                bfr = [self._b_fragment(lane, b.add(w0[1], b.idx(nt * MMA_N)), ks * kd.k) for nt in range(c.nt)]
                for mt in range(c.mt):
                    for nt in range(c.nt):
                        x = mt * c.nt + nt
                        mma = nvgpu.MmaSyncOp(acc_t, afr[mt], bfr[nt], accs[x], [MMA_M, MMA_N, kd.k],
                                              tf32Enabled=True if kd.ptx == "tf32" else None)
                        if kd.ptx == "u8":
                            mma.operation.attributes[PTX_TYPE_ATTR] = ir.StringAttr.get("u8")
                        accs[x] = mma.result
            b.scf.YieldOp(accs)
        self._epilogue(list(chunks.results), lane, x0, w0, ext, E, first)

    def _a_fragment(self, lane, m, k: int):
        """The ``ldmatrix.x4`` A fragment of rows ``m..m+15``, columns ``k..k+K-1`` (``K`` the kind's
        k; matrices 0..3: a0a1, a2a3, a4a5, a6a7 of the ISA's A layout: rows ``+0/+8``, then columns
        ``+16 bytes``). Rows of k (``m x k`` tile): lane ``l`` gives row ``m + l%16``, column ``k +
        R*(l/16)`` (``R``: elements of 16 bytes, :attr:`MmaKind.row16`). Rows of m (``k x m`` tile,
        ``.trans``, 16-bit kinds only): lane ``l`` gives row ``k + l%8 + 8*(l/16)``, column ``m +
        8*((l/8)%2)``: each 8x8 matrix transposed back."""
        kd, st = self.p.kind, self.stages[0]
        frag = ir.VectorType.get([4, kd.per], self.p.elem)
        if st.x_major:
            row = b.add(m, b.arith.RemUIOp(lane, b.idx(16)).result)
            col = b.add(b.mul(b.arith.DivUIOp(lane, b.idx(16)).result, b.idx(kd.row16)), b.idx(k))
        else:
            assert kd.b_trans, kd  # (MmaConfig.stage: only 16-bit tiles lie x contiguous)
            row = b.add(b.add(b.arith.RemUIOp(lane, b.idx(8)).result,
                              b.mul(b.arith.DivUIOp(lane, b.idx(16)).result, b.idx(8))), b.idx(k))
            col = b.add(m, b.mul(b.arith.RemUIOp(b.arith.DivUIOp(lane, b.idx(8)).result, b.idx(2)).result,
                                 b.idx(8)))
        addr = b.add(b.mul(row, b.idx(st.stride)), col)
        return nvgpu.LdMatrixOp(frag, self.smem[0], [addr], not st.x_major, 4).result

    def _b_fragment(self, lane, n, k: int):
        """The ``ldmatrix.x2`` B fragment of rows ``k..k+K-1``, columns ``n..n+7`` (the ISA's ``.col``
        B layout: matrices b0b1 of the first ``16 bytes`` of k, b2b3 of the next). Rows of n (``k x
        n`` tile, ``.trans``, 16-bit kinds only): lane ``l < 16`` gives row ``k + l``, column ``n``.
        Rows of k (``n x k`` tile): lane ``l`` gives row ``n + l%8``, column ``k + R*((l/8)%2)``
        (``R``: elements of 16 bytes)."""
        kd, st = self.p.kind, self.stages[1]
        frag = ir.VectorType.get([2, kd.per], self.p.elem)
        l16 = b.arith.RemUIOp(lane, b.idx(16)).result
        if st.x_major:
            row = b.add(n, b.arith.RemUIOp(lane, b.idx(8)).result)
            col = b.add(b.mul(b.arith.DivUIOp(l16, b.idx(8)).result, b.idx(kd.row16)), b.idx(k))
        else:
            assert kd.b_trans, kd
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
                    m[plan.loop.results[0]] = epilogue_sum(
                        self.p, plan, m, vector.ExtractOp(accs[mt * c.nt + nt], [], [h, e]).result)
                    for op in plan.post:
                        _clone(op, m)

    def _slots(self, s, st: _Stage, x0, tid, E, ext, first, B) -> tuple[Callable, list]:
        """The cooperative loads of staged read ``s`` into its tile ``st``: ``(stage, per_chunk)``;
        ``stage(body)`` calls ``body(kk, at, in_range, smem index, inside)`` at the insertion point
        for each slot ``e = tid + r*B`` (``at``: the values of its coordinates and of its index
        arithmetic that no chunk changes; ``inside``: ``e < total``, ``None`` where every lane's slot
        of the round is in the tile), the lanes of a warp along its unit-stride coordinate: for each
        round's slot computed once per tile (here), or, for a rolled staging
        (:attr:`MmaContractions.rolled_staging`), in a loop over the rounds (:func:`round_loop`),
        per chunk; ``per_chunk``: the ops each chunk re-computes."""
        c, plan = self.c, self.plan
        sliced = _slice(s.op, plan)
        hoist = _hoistable(sliced[:-1], plan, E)
        X = c.bm if s.side == 0 else c.bn
        total = c.bk * X

        def slot(e, r):
            kk, xl, x, ok = _slot_position(e, s.k_fastest, c.bk, X, x0[s.side], ext[s.side])
            last = (r + 1) * B > total if r is not None else total % B
            inside = b.cmp("ult", e, b.idx(total)) if last else None
            at = dict(first)
            at.update({plan.coords[q]: v for q, v in _split(x, plan.sides[s.side], E).items()})
            for op in hoist:
                _clone(op, at)
            return kk, at, ok, st.slot(kk, xl), inside
        R = -(-total // B)
        if self.rolled:  # the rounds as a loop, per chunk, unrolled by ROLLED_UNROLL
            def stage(body):
                round_loop(R, B, tid, lambda e, r: body(*slot(e, None)), f"count = {ROLLED_UNROLL}")
        else:  # each round's slot once per tile
            slots = [slot(b.add(tid, b.idx(r * B)) if r else tid, r) for r in range(R)]

            def stage(body):
                for parts in slots:
                    body(*parts)
        return stage, [op for op in sliced if op not in hoist]


def round_tf32(x: ir.Value) -> ir.Value:
    """``f32`` ``x`` rounded to TF32 as ``cvt.rna.tf32.f32`` does (PTX ISA 9.7.9.21, "cvt": ``.rna``
    rounds to nearest, ties away from zero; TF32 keeps f32's exponent and the 10 high mantissa bits):
    ``(bits + 0x1000) & ~0x1fff`` of the bit pattern (a carry out of the mantissa bumps the
    exponent, up to infinity: that is the rounding), a NaN the quiet NaN ``0x7fc00000`` (whose bits
    the tensor core reads). Plain integer ops, so the CPU interpreter and the GPU round alike."""
    i32 = ir.IntegerType.get_signless(32)
    bits = b.arith.BitcastOp(i32, x).result
    rounded = b.and_(b.add(bits, b.const(0x1000, i32)), b.const(-0x2000, i32))
    nan = b.arith.CmpFOp(b.arith.CmpFPredicate.UNO, x, x).result
    return b.arith.BitcastOp(ir.F32Type.get(), b.select(nan, b.const(0x7FC00000, i32), rounded)).result


__all__ = ["KINDS", "MmaContractions", "MmaConfig", "MmaKind", "mma_config", "round_tf32", "sm_number"]
