"""``kern-mma-contractions``: the contractions of f16/bf16, i8 and (``@tf32``) f32 operands on tensor
cores (``mma.sync``).

A kernel ``kern-tile-contractions`` would tile (:class:`~kernc.passes.tile_contractions._Analysis`
is its matcher, used here as is) whose loop is exactly a product-sum of an ``f16`` (or ``bf16``)
read depending on ``(i, k)`` and one of the same storage type depending on ``(k, j)``, accumulated in
``f32``,

.. code-block:: text

    let acc = 0.0;
    for k in lb..ub { acc += a[i, k] * b[k, j]; }
    ... code after the loop, per item (c[i, j] = acc) ...

is rewritten as the warp-level tensor-core GEMM of CUTLASS's ``sm80`` kernels and the PTX ISA's
"Warp-level matrix multiply-accumulate instructions" (``mma.sync.aligned.m16n8k16.row.col.f32``
fed by ``ldmatrix``). The same loop of ``i8`` reads widened to ``i32`` with an ``i32`` sum
(``let acc: i32 = 0; acc += i32(a[i, k]) * i32(b[k, j]);``) runs on ``m16n8k32 .s8`` with ``i32``
accumulators, and one of ``f32`` reads in a kernel marked ``@tf32`` on ``m16n8k8 .tf32``;
:data:`KINDS` (one :class:`MmaKind` per operand type) holds what differs -- the instruction's
``k``, the fragments' register grids, the row padding and whether B is read with
``ldmatrix.trans``:

1. *Block tile* ``BM x BN`` of the problem's last two coordinates, blocks looping over the tiles
   (grid-stride, as ``kern-tile-contractions``). The block's ``W = B/32`` warps form a ``WM x WN``
   grid (``WN >= WM``, powers of two), each computing a ``warp_m x warp_n`` (64x32) warp tile of
   ``MT x NT`` (4x4) ``m16n8`` accumulator fragments: ``BM = WM*warp_m``, ``BN = WN*warp_n``
   (128x128 for 256 threads).
2. *Staging per k-chunk* of ``BK`` (32): the block loads the ``BM x BK`` tile of the ``(i, k)`` read
   into ``sa[m*SA + kk]`` and the ``BK x BN`` tile of the ``(k, j)`` read into ``sb[kk*SB + n]`` of
   workgroup memory, cooperatively (each view read cloned with the tile's coordinates, so any layout
   is loaded through its own; lanes along the view's unit-stride coordinate), 0 past the edges
   (``i >= M``, ``j >= N``, ``k >= ub``): any ``M``, ``N``, ``K``. Rows are *padded* by 8 elements
   (``SA = BK + 8``, ``SB = BN + 8``): a row is then an odd number of 16-byte units, so the eight
   16-byte rows one ``ldmatrix`` phase reads fall in eight distinct 4-bank groups (no bank
   conflict), and every row stays 16-byte aligned as ``ldmatrix`` requires. Other kinds pad rows
   by 16 bytes too and stage B *n-major* (``sb[n*SB + kk]``, ``SB = BK + pad``: ``ldmatrix.trans``
   moves 16-bit elements only); their staging stores of a B read whose lanes run along ``n``
   then conflict 4-way (rows 48 or 144 bytes apart reach 8 of the 32 banks).
3. *Fragments*: per ``k16`` step, ``ldmatrix.x4`` gives each ``m16`` A fragment (lane ``l`` gives
   the address of row ``l % 16``, column ``8*(l/16)``: matrices 0..3 are a0a1, a2a3, a4a5, a6a7 of
   the ISA's A layout) and ``ldmatrix.x2.trans`` each ``n8`` B fragment (lane ``l < 16`` gives row
   ``k = l`` of the fragment's columns: the transpose of the row-major ``k x n`` tile is the ISA's
   ``.col`` B layout), then ``MT*NT`` ``nvgpu.mma.sync`` (m16n8k16) update the accumulators, kept
   as ``vector<2x2xf32>`` loop values.
4. *The epilogue*: accumulator element ``c{2h+e}`` of fragment ``(mt, nt)`` is item
   ``(i0 + wm*warp_m + 16*mt + g + 8h, j0 + wn*warp_n + 8*nt + 2*t + e)`` (``g = lane/4``, ``t =
   lane%4``: the ISA's C/D layout); the code after the loop runs for it under ``i < M && j < N``.

The float sums are not in the kernel's order (a tensor core adds the products of a k16 step in an
order the ISA leaves open; the CPU interpreter's is documented in
:mod:`kernc.backend.interpreter.nvgpu`): the result is not bitwise the untiled kernel's, which the
remark says. Integer sums are exact: bitwise the untiled kernel's while every k32 partial sum stays
within i32 (MLIR lowers the integer mma with ``.satfinite``, which clamps where ``arith.addi``
wraps). ``f32`` operands need TF32 (10-bit mantissas), which is never chosen silently: without
``@tf32`` such a contraction stays on ``kern-tile-contractions``' path, with a remark; with it each
staged operand is rounded by :func:`round_tf32` (``cvt.rna.tf32.f32``) first, in the IR, so the
CPU interpreter and the GPU multiply the same values. ``u8`` operands stay on CUDA cores: the
``nvgpu`` dialect's mma.sync lowers ``i8`` as ``.s8`` only.

Applies on ``sm_80`` and later (``arch``; :attr:`MmaKind.min_sm`); elsewhere, or when a kernel is
not such a contraction (other loop body, other types, ``@tile`` given, a block that is not a
power-of-two number of warps or has more than :data:`MAX_BLOCK` threads), the kernel is left to
``kern-tile-contractions`` and ``remarks`` says why -- unless the kernel says ``@tensor_cores``:
then each of those reasons is a ``CompileError`` located at the attribute (the signature's
``tensor_cores["force"]``), never CUDA cores silently. Off with ``--no-tensor-cores`` /
``kernc.compile(..., tensor_cores=False)`` (which overrides ``@tensor_cores``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from kernc.dialect import kern
from kernc.dialect.mapping import MAPPING_ATTR, ItemMapping
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.support.errors import CompileError, Diagnostic, SourceLocation
from kernc.support.mlir import dialect, ir, lazy_dialect

from . import ir_builder as b
from .base import Pass, functions, internal, option
from .targets import PTX_VERSION
from .tile_contractions import Decline, _Analysis, _clone, _slice
from .workgroup import SHARED_LIMIT, WARP, KernelContext, emit_remark

gpu = dialect("gpu")
# imported when a contraction is rewritten: most kernels this pass sees are declined
nvgpu = lazy_dialect("nvgpu")
vector = lazy_dialect("vector")

#: The first architecture with ``mma.sync.aligned.m16n8k16`` for f16/bf16 and ``ldmatrix``
#: (PTX ISA, "Warp-level matrix multiply-accumulate instructions": ``sm_80`` for ``.bf16`` and
#: m16n8k16; ``ldmatrix`` needs ``sm_75``).
MIN_SM = 80
#: Elements each staged 16-bit row is padded by (16 bytes of f16; see the module docstring, step 2);
#: rows of other element types are padded by 16 bytes too (:attr:`MmaKind.pad`).
PAD = 8
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
    8x8 matrix of 16-bit elements is an 8 x (16 bytes) one of any size. ``b_trans``: B staged
    ``k``-major (``sb[kk*SB + n]``) and read with ``ldmatrix.trans`` (16-bit only); else staged
    ``n``-major (``sbt[n*SBT + kk]``, its ``k`` contiguous: the ISA's ``.col`` B rows) and read with
    a plain ``ldmatrix``. ``acc``: the accumulator type (``f32``, ``i32``)."""

    ptx: str
    elem_bytes: int
    acc: str
    b_trans: bool
    min_sm: int = 80

    @property
    def per(self) -> int:
        return 4 // self.elem_bytes

    @property
    def k(self) -> int:
        return 8 * self.per

    @property
    def pad(self) -> int:
        """Elements a staged row is padded by: 16 bytes (see the module docstring, step 2)."""
        return PAD if self.elem_bytes == 2 else 16 // self.elem_bytes

    @property
    def shape(self) -> str:
        return f"m16n8k{self.k}"


#: The operand kinds (PTX ISA 9.7.14.5.8 m16n8k16 f16/bf16, 9.7.14.5.10 m16n8k32 s8, 9.7.14.5.7
#: m16n8k8 tf32; all ``sm_80`` and later for these shapes). ``u8`` is not here: the ``nvgpu``
#: dialect's mma.sync lowers ``i8`` as ``.s8`` only (MLIR's convert-nvgpu-to-nvvm).
KINDS = {
    "f16": MmaKind("f16", 2, "f32", True),
    "bf16": MmaKind("bf16", 2, "f32", True),
    "s8": MmaKind("s8", 1, "s32", False),
    "tf32": MmaKind("tf32", 4, "f32", False),
}
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

    @property
    def sa(self) -> int:
        """Row stride (elements) of the staged ``bm x bk`` A tile."""
        return self.bk + self.kind.pad

    @property
    def sb(self) -> int:
        """Row stride (elements) of the staged B tile: ``bk x bn`` (``kind.b_trans``) or, ``n``-major,
        ``bn x bk``."""
        return (self.bn if self.kind.b_trans else self.bk) + self.kind.pad

    @property
    def b_elems(self) -> int:
        """Elements of the staged B tile."""
        return (self.bk if self.kind.b_trans else self.bn) * self.sb

    def shared_bytes(self, elem_bytes: int | None = None) -> int:
        return (self.bm * self.sa + self.b_elems) * (elem_bytes or self.kind.elem_bytes)


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
    """Run the f16/bf16, i8 and (``@tf32``) f32 contractions ``kern-tile-contractions`` matches on
    tensor cores: ``ldmatrix``-fed ``mma.sync`` (m16n8k16, m16n8k32 .s8, m16n8k8 .tf32), f32 or
    i32 accumulators, padded workgroup tiles; ``CompileError`` at ``@tensor_cores`` when such a
    kernel cannot be taken."""

    name = "kern-mma-contractions"
    summary = ("f16/bf16/i8/@tf32 f32 contraction loops on tensor cores: ldmatrix + mma.sync "
               "m16n8k16/k32/k8, f32 or i32 sums")

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
            except Decline as why:
                _forced(sig, f"it is not a contraction kern-tile-contractions can tile: {why}")
                continue  # kern-tile-contractions says why
            if plan.loop is None:
                _forced(sig, "it has no contraction loop")
                continue
            got = self._decide(sig, plan)
            if isinstance(got, str):
                _forced(sig, got)
                self._remark(plan.loop, f"not using tensor cores for '{sig.name}': {got}")
                continue
            config, parts = got
            _Rewrite(fn, sig, plan, config, parts).run()
            self._remark(plan.loop, _describe(sig, plan, config, parts))

    def _decide(self, sig: KernelSignature, plan: _Analysis):
        """``(config, parts)`` for a contraction this pass takes, or why not (a remark)."""
        sm = sm_number(self.arch)
        if sig.tile_config is not None:
            return "the kernel asks for a CUDA-core tile with @tile"
        parts = _match(plan, "tf32" in (sig.tensor_cores or {}))
        if isinstance(parts, str):
            if sm < MIN_SM:  # (the same words as the compiler's remark where the pass is not run)
                return (f"{self.arch} has no mma.sync m16n8k16 for f16/bf16 (sm_{MIN_SM} and later); "
                        f"the contraction is tiled on CUDA cores (besides, {parts})")
            return parts
        if sm < parts.kind.min_sm:
            return (f"{self.arch} has no mma.sync {parts.kind.shape} for {parts.kind.ptx} operands "
                    f"(sm_{parts.kind.min_sm} and later); the contraction is tiled on CUDA cores")
        config = mma_config(plan.block, self.warp_m, self.warp_n, self.block_k, parts.kind)
        if isinstance(config, str):
            return config
        need = config.shared_bytes()
        if need > SHARED_LIMIT:
            return (f"its {config.bm}x{config.bn}x{config.bk} tiles need {need} bytes of workgroup "
                    f"memory, more than the {SHARED_LIMIT} bytes a block may use")
        return config, parts


def _forced(sig: KernelSignature, why: str) -> None:
    """A ``CompileError`` at ``@tensor_cores`` saying ``why`` when the kernel forces tensor cores;
    nothing otherwise (the caller remarks ``why`` and leaves the kernel to CUDA cores)."""
    at = (sig.tensor_cores or {}).get("force")
    if at is None:
        return
    raise CompileError(Diagnostic(
        f"@tensor_cores of kernel '{sig.name}': cannot run on tensor cores: {why}", SourceLocation(*at),
        hint="write the loop as 'acc += a[i, k] * b[k, j]' of f16/bf16 (f32 sums), i8 widened to i32 "
             "(i32 sums) or, with @tf32, f32 reads, for sm_80 or later; or remove @tensor_cores"))


@dataclass
class _Parts:
    """The matched loop: the staged reads ``a`` (side ``i``) and ``b`` (side ``j``), their storage
    type ``elem`` (f16, bf16, i8 or f32), their :class:`MmaKind`, the accumulator's type ``acc``
    (f32 or i32) and initial value ``init`` (a constant)."""

    a: object
    b: object
    elem: ir.Type
    init: float | int
    kind: MmaKind = KINDS["f16"]
    acc: ir.Type | None = None


def _owner(v):
    o = v.owner
    return o.operation if hasattr(o, "operation") else o


def _match(plan: _Analysis, tf32: bool = False) -> _Parts | str:
    """The loop as ``acc += a * b`` of f16/bf16 reads with f32 sums, of i8 reads widened to i32
    (``i32(a[i, k]) * i32(b[k, j])``, ``arith.extsi``) with i32 sums, or -- ``tf32``: the kernel's
    ``@tf32`` -- of f32 reads with f32 sums; or why it is not (a remark)."""
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
    if name not in ("f16", "bf16", "i8", "f32"):
        why = (": the nvgpu dialect's mma.sync has only the signed .s8 form (MLIR's convert-nvgpu-to-nvvm)"
               if name == "u8" else "")
        return f"its operands are {name}, not f16, bf16, i8 or (with @tf32) f32{why}"
    integer = name == "i8"
    acc_t = i32 if integer else f32
    body = [op for op in plan.body if op != sa.op and op != sb.op]
    exts = [op for op in body if op.name == "arith.extsi" and op.operands[0] in reads]
    if integer:  # the reads widened to i32 (signed), each once
        if (len(exts) != 2 or {e.operands[0] for e in exts} != set(reads)
                or any(e.results[0].type != i32 for e in exts)):
            return "its i8 operands are not both widened to i32 (write i32(a[i, k]) * i32(b[k, j]))"
        vals = [e.results[0] for e in exts]
        body = [op for op in body if op not in exts]
    else:
        if any(r.type != f32 for r in reads):
            return "its operands are computed in another type than f32"
        vals = reads
    if len(plan.iter_args) != 1 or plan.iter_args[0].type != acc_t:
        return f"it does not accumulate one {acc_t} value"
    mul, add = ("arith.muli", "arith.addi") if integer else ("arith.mulf", "arith.addf")
    yld = plan.loop.regions[0].blocks[0].operations[len(plan.body)]
    if (len(body) != 2 or body[0].name != mul or body[1].name != add
            or set(body[0].operands) != set(vals)
            or set(body[1].operands) != {body[0].results[0], plan.iter_args[0]}
            or list(yld.operands) != [body[1].results[0]]):
        return "its loop body is not 'acc += a * b'"
    init = _owner(plan.loop.operands[3])
    if not isinstance(init, ir.Operation) or init.name != "arith.constant":
        return "its sum does not start from a constant"
    value = init.attributes["value"]
    start = ir.IntegerAttr(value).value if integer else ir.FloatAttr(value).value
    kind = KINDS["s8" if integer else "tf32" if name == "f32" else name]
    return _Parts(sa, sb, elems[0], start, kind, acc_t)


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
    unordered = "the sums are not in the loop's order (not bitwise the --no-tensor-cores result)"
    if k.b_trans:
        b_read, padded = f"{p.b.name} ({c.bk}x{c.bn}, ldmatrix.x2.trans)", "no bank conflict"
    else:
        b_read, padded = f"{p.b.name} ({c.bn}x{c.bk}, staged n-major, ldmatrix.x2)", "ldmatrix without bank conflicts"
    if k.ptx == "s8":
        what, tail = "i8 products, i32 sums", (
            "the sums are exact: bitwise the --no-tensor-cores result while every 32-wide partial sum "
            "stays within i32 (mma.sync .satfinite clamps where the loop wraps)")
    elif k.ptx == "tf32":
        what, tail = "tf32 products, f32 sums", (
            "f32 operands rounded to TF32 as @tf32 asks (cvt.rna.tf32.f32: 10-bit mantissas, to nearest, "
            f"ties away); {unordered}")
    else:
        what, tail = f"{p.elem} products, f32 sums", unordered
    return (f"'{sig.name}' on tensor cores: {c.bm}x{c.bn} block tiles in chunks of {c.bk} of k, "
            f"{c.wm}x{c.wn} warps of {c.warp_m}x{c.warp_n} items, mma.sync {k.shape} ({what}) fed by "
            f"ldmatrix from workgroup tiles of {p.a.name} ({c.bm}x{c.bk}) and {b_read}, rows padded by "
            f"{k.pad} elements ({padded}); {tail}")


class _Rewrite:
    """Build the tensor-core kernel of a matched contraction (the module docstring's steps 1-4)."""

    def __init__(self, fn, sig, plan: _Analysis, c: MmaConfig, parts: _Parts) -> None:
        self.fn, self.sig, self.plan, self.c, self.p = fn, sig, plan, c, parts

    def run(self) -> None:
        fn, sig, plan, c, p = self.fn, self.sig, self.plan, self.c, self.p
        guard = plan.guard
        B = plan.block
        E = list(plan.delin.extents)
        n = len(E)
        xi, xj = plan.ij
        batch = list(range(n - 2))
        kc = KernelContext(fn, sig, guard, B)
        self.smem_a = kc.workgroup(p.elem, c.bm * c.sa, f"tensor-core tile of '{p.a.name}'",
                                   region=f"mma.{p.a.name}.a", location=p.a.op.location)
        self.smem_b = kc.workgroup(p.elem, c.b_elems, f"tensor-core tile of '{p.b.name}'",
                                   region=f"mma.{p.b.name}.b", location=p.b.op.location)
        kc.check_limit()
        loc = plan.loop.location
        with ir.InsertionPoint(guard), loc:
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            blk = kern.BlockIdOp(b.index_t()).result
            nbi = b.arith.DivUIOp(b.add(E[xi], b.idx(c.bm - 1)), b.idx(c.bm)).result
            nbj = b.arith.DivUIOp(b.add(E[xj], b.idx(c.bn - 1)), b.idx(c.bn)).result
            per = b.mul(nbi, nbj)
            count = per
            for x in batch:
                count = b.mul(count, E[x])
            tiles = b.scf.ForOp(blk, count, gpu.GridDimOp(gpu.Dimension.x).result)
            with ir.InsertionPoint(tiles.body):
                end = b.scf.YieldOp([])
        with ir.InsertionPoint(end), loc:
            self._tile(tiles.induction_variable, tid, E, per, nbj, batch, B)
        guard.erase()
        for op in reversed(plan.entry[:3]):
            op.erase()
        tiled = ItemMapping(B, tuple(plan.extents), tuple([1] * (n - 2) + [c.bm, c.bn]),
                            c.mt * c.nt * 4, self._thread_values(n), True)
        assert tiled.problem() is None, tiled.problem()
        sig.tiles = tiled.launch_tiles()
        fn.attributes[SIGNATURE_ATTR] = ir.StringAttr.get(sig.to_json())
        fn.attributes[MAPPING_ATTR] = ir.StringAttr.get(tiled.to_json())

    def _thread_values(self, n: int) -> str:
        """The CuTe TV layout: thread ``4g + t + 32*(wn + WN*wm)``, value ``e + 2h + 4mt + 4MT*nt``
        at tile position ``(wm*warp_m + 16mt + 8h + g, wn*warp_n + 8nt + 2t + e)``, positions
        column-major over ``(1, ..., BM, BN)`` (row stride 1, column stride ``BM``)."""
        c = self.c
        bm = c.bm
        return (f"((4,8,{c.wn},{c.wm}),(2,2,{c.mt},{c.nt})):"
                f"(({2 * bm},1,{c.warp_n * bm},{c.warp_m}),({bm},8,16,{8 * bm}))")

    def _tile(self, tile, tid, E, per, nbj, batch, B) -> None:
        plan, c, p = self.plan, self.c, self.p
        xi, xj = plan.ij
        coord = {}
        if batch:
            rest = b.arith.DivUIOp(tile, per).result
            in_batch = b.sub(tile, b.mul(rest, per))
            for x in reversed(batch[1:]):
                q = b.arith.DivUIOp(rest, E[x]).result
                coord[x] = b.sub(rest, b.mul(q, E[x]))
                rest = q
            coord[batch[0]] = rest
        else:
            in_batch = tile
        bi = b.arith.DivUIOp(in_batch, nbj).result
        bj = b.sub(in_batch, b.mul(bi, nbj))
        x0 = [b.mul(bi, b.idx(c.bm)), b.mul(bj, b.idx(c.bn))]
        lane = b.arith.RemUIOp(tid, b.idx(WARP)).result
        warp = b.arith.DivUIOp(tid, b.idx(WARP)).result
        wm = b.arith.DivUIOp(warp, b.idx(c.wn)).result
        wn = b.arith.RemUIOp(warp, b.idx(c.wn)).result
        m0 = b.mul(wm, b.idx(c.warp_m))  # the warp's tile, within the block's
        n0 = b.mul(wn, b.idx(c.warp_n))
        l16 = b.arith.RemUIOp(lane, b.idx(16)).result
        l8x = b.mul(b.arith.DivUIOp(lane, b.idx(16)).result, b.idx(8))
        first = {plan.coords[x]: coord[x] for x in batch}
        for v in plan.loop.operands[:2]:  # the bounds (the same for every item) from the code before
            d = _owner(v)
            if any(d == op for op in plan.pre) and v not in first:
                for op in _slice(d, plan):
                    if op.results[0] not in first:
                        _clone(op, first)
        lb, ub = (first.get(v, v) for v in plan.loop.operands[:2])
        kd = p.kind
        acc_t = ir.VectorType.get([2, 2], p.acc or ir.F32Type.get())
        init = b.const(p.init, p.acc or ir.F32Type.get())
        accs0 = [vector.BroadcastOp(acc_t, init).result for _ in range(c.mt * c.nt)]
        coop = [self._slots(s, x0, tid, E, B) for s in (p.a, p.b)]
        chunks = b.scf.ForOp(lb, ub, b.idx(c.bk), accs0)
        with ir.InsertionPoint(chunks.body):
            k0 = chunks.induction_variable
            b.barrier()  # the previous chunk's (or tile's) ldmatrix reads are done
            for s, smem, slots in zip((p.a, p.b), (self.smem_a, self.smem_b), coop):
                T = s.op.results[0].type
                for kk, x, ok, slot, inside in slots:
                    k = b.add(k0, kk)
                    m = dict(first)
                    m[plan.coords[plan.ij[s.side]]] = x
                    m[plan.iv] = k

                    def then(m=m, s=s):
                        for op in _slice(s.op, plan):
                            _clone(op, m)
                        return [m[s.op.results[0]]]
                    val = b.if_else(b.and_(ok, b.cmp("ult", k, ub)), [T], then, lambda T=T: [b.zero(T)])
                    if p.kind.ptx == "tf32":
                        val = round_tf32(val[0])
                    elif b.is_float(T):
                        val = b.convert_float(val[0], p.elem)  # exact: the read widened an elem
                    else:
                        val = val[0]  # an i8 read is staged as it is
                    if inside is None:
                        b.store(val, smem, slot)
                    else:  # the last round of slots of a tile that is not a multiple of the block
                        with b.if_(inside):
                            b.store(val, smem, slot)
            b.barrier()
            accs = list(chunks.inner_iter_args)
            frag_a = ir.VectorType.get([4, kd.per], p.elem)
            frag_b = ir.VectorType.get([2, kd.per], p.elem)
            row16 = 16 // kd.elem_bytes  # elements of a 16-byte ldmatrix row
            for ks in range(c.bk // kd.k):
                afr = []
                for mt in range(c.mt):  # ldmatrix.x4: lane l gives row l%16, column 16 bytes*(l/16)
                    row = b.add(b.add(m0, b.idx(mt * MMA_M)), l16)
                    col = b.add(l8x, b.idx(ks * kd.k)) if row16 == 8 else b.add(
                        b.mul(b.arith.DivUIOp(lane, b.idx(16)).result, b.idx(row16)), b.idx(ks * kd.k))
                    addr = b.add(b.mul(row, b.idx(c.sa)), col)
                    afr.append(nvgpu.LdMatrixOp(frag_a, self.smem_a, [addr], False, 4).result)
                bfr = []
                for nt in range(c.nt):
                    if kd.b_trans:  # ldmatrix.x2.trans: lane l < 16 gives row k = l of column n
                        krow = b.add(l16, b.idx(ks * MMA_K))
                        col = b.add(n0, b.idx(nt * MMA_N))
                        addr = b.add(b.mul(krow, b.idx(c.sb)), col)
                    else:  # ldmatrix.x2 of the n-major tile: lane l < 16 gives row n = l%8, k 16 bytes*(l/8)
                        nrow = b.add(b.add(n0, b.idx(nt * MMA_N)), b.arith.RemUIOp(lane, b.idx(8)).result)
                        k8 = b.arith.DivUIOp(l16, b.idx(8)).result
                        col = b.add(b.mul(k8, b.idx(row16)), b.idx(ks * kd.k))
                        addr = b.add(b.mul(nrow, b.idx(c.sb)), col)
                    bfr.append(nvgpu.LdMatrixOp(frag_b, self.smem_b, [addr], kd.b_trans, 2).result)
                for mt in range(c.mt):
                    for nt in range(c.nt):
                        x = mt * c.nt + nt
                        accs[x] = nvgpu.MmaSyncOp(acc_t, afr[mt], bfr[nt], accs[x], [MMA_M, MMA_N, kd.k],
                                                  tf32Enabled=True if kd.ptx == "tf32" else None).result
            b.scf.YieldOp(accs)
        # the epilogue: the code after the loop per accumulator element, under its item's guard
        g = b.arith.DivUIOp(lane, b.idx(4)).result
        t2 = b.mul(b.arith.RemUIOp(lane, b.idx(4)).result, b.idx(2))
        for mt in range(c.mt):
            for h in range(2):
                i = b.add(b.add(x0[0], m0), b.add(g, b.idx(mt * MMA_M + 8 * h)))
                ok_i = b.cmp("ult", i, E[xi])
                for nt in range(c.nt):
                    acc = list(chunks.results)[mt * c.nt + nt]
                    for e in range(2):
                        j = b.add(b.add(x0[1], n0), b.add(t2, b.idx(nt * MMA_N + e)))
                        m = dict(first)
                        m[plan.coords[xi]], m[plan.coords[xj]] = i, j
                        with b.if_(b.and_(ok_i, b.cmp("ult", j, E[xj]))):
                            for op in plan.pre:
                                _clone(op, m)
                            m[plan.loop.results[0]] = vector.ExtractOp(acc, [], [h, e]).result
                            for op in plan.post:
                                _clone(op, m)

    def _slots(self, s, x0, tid, E, B) -> list:
        """The cooperative loads of staged read ``s``: ``(kk, x, in_range, smem index, inside)``
        (``inside``: ``e < total``, ``None`` where every lane's slot is in the tile) of slots
        ``e = tid + r*B`` of its tile, the lanes of a warp along its unit-stride coordinate."""
        c, plan = self.c, self.plan
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
            ok = b.cmp("ult", x, E[plan.ij[s.side]])
            inside = b.cmp("ult", e, b.idx(total)) if (r + 1) * B > total else None
            if s.side == 0:
                slot = b.add(b.mul(xl, b.idx(c.sa)), kk)
            elif c.kind.b_trans:
                slot = b.add(b.mul(kk, b.idx(c.sb)), xl)
            else:  # the n-major B tile (MmaKind.b_trans)
                slot = b.add(b.mul(xl, b.idx(c.sb)), kk)
            slots.append((kk, x, ok, slot, inside))
        return slots


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
