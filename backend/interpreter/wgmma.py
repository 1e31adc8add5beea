"""Hopper's warpgroup matrix multiply (``nvvm.wgmma.*``) and the LLVM struct values that carry its
accumulators, with the PTX ISA's descriptor decoding and register fragments, so that a wrong
descriptor, swizzle or fragment layout is a wrong result here too, and a missing wait is an error.

Values: an ``!llvm.struct<(f32, ...)>`` of ``R`` accumulators is a :class:`_Acc`, its registers a
tuple of ``R`` lane arrays (or scalars), and the ``wgmma.mma_async`` that produced it while it is
not retired (``llvm.mlir.zero``/``undef``, ``llvm.insertvalue``/``extractvalue`` of such structs).

Workgroup addresses (:func:`kernc.backend.interpreter.memory.workgroup_address`): the shared window
of a block holds its workgroup buffers in attribution order, each at a multiple of 1024 bytes from
1024; ``memref.extract_aligned_pointer_as_index`` of a workgroup buffer gives that address.

``nvvm.wgmma.mma_async`` (PTX ISA 9.7.15, ``wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}``
and ``.m64nNk32.s32.{s8,u8}.{s8,u8}`` (the same type both sides; no ``.satfinite``), A and B from
shared memory, scales 1; each K-major (``layoutA`` ``row``, ``layoutB`` ``col``: ``imm-trans-a``/
``imm-trans-b`` 0) or, f16/bf16 only (the ISA has no transpose for 8-bit types), MN-major
(``layoutA`` ``col``, ``layoutB`` ``row``: transposed)):

- *Descriptors* (9.7.15.5.1): start address ``(d & 0x3FFF) << 4``, leading byte offset
  ``((d >> 16) & 0x3FFF) << 4``, stride byte offset ``((d >> 32) & 0x3FFF) << 4``, base offset
  ``(d >> 49) & 7`` (0 only, else unsupported), swizzle mode ``d >> 62`` (0 none, 1 128B, 2 64B,
  3 32B). Row ``r`` (of M = 64 for A, N for B), element ``k < K`` (16 of 2-byte, 32 of 1-byte
  elements: 32 bytes of a row either way) of an ``e``-byte element type is at byte ``start +
  (r//8)*SBO + (r%8)*16 + (k//u)*LBO + e*(k%u)`` (``u = 16/e`` elements a 16-byte unit: the
  canonical layouts are in 16-byte units, 9.7.15.5.1.2) without swizzle, and with a ``T``-byte
  swizzle at ``x = start + (r//8)*SBO + (r%8)*T + e*k`` swizzled to ``x XOR ((x >> 3) & (T/16 - 1) << 4)``
  (the 16-byte unit within a ``T``-byte row XORed with the row's index in the pattern: address
  bits 4.. XOR bits 7..). The swizzle works on absolute addresses, so the buffer must declare an
  alignment of at least the pattern's repeat (``8*T`` bytes) -- else ``KerncRuntimeError``. The
  descriptor must be the same in every thread of the warpgroup (9.7.15.5.1).
- *MN-major* (9.7.15.5.1.2, "Shared Memory Matrix Layout": the canonical layouts, e.g. 128B
  ``((8,8,m),(8,k)) : ((1,8,LBO),(64,SBO))`` in 16-byte units, and "Leading/Stride Dimension Byte
  Offset" for MN-major): with a ``T``-byte swizzle the leading byte offset is the stride from one
  ``T/2`` rows (of M or N: one ``T``-byte row of the atom; 64 for 128B) to the next, the stride byte
  offset the one from 8 ``k`` to the next; element ``(r, k)`` is at ``x = start + 2*(r % (T/2)) +
  (r // (T/2))*LBO + T*(k%8) + (k//8)*SBO``, swizzled as above. Without swizzle (interleaved): 8x8
  core matrices, ``start + 2*(r%8) + (r//8)*SBO + 16*(k%8) + (k//8)*LBO``.
- *Accumulators* (9.7.15, "Register Fragments": the D matrix of m64nN, the same for ``.f32`` and
  ``.s32``): register ``d_i`` (``i < N/2``) of thread ``32w + 4g + t`` of the warpgroup is element
  ``(16w + g + 8*((i >> 1) & 1), 8*(i >> 2) + 2t + (i & 1))``.
- *Arithmetic*: f16/bf16: products exact in f32 (f16/bf16 significands), ``D = C + sum_k
  A[m, k]*B[n, k]`` summed in f32 from ``C``, ``k`` ascending, each addition rounded to nearest even
  (the interpreter's order; the ISA leaves the hardware's open). s8/u8 (bytes read signed for
  ``.s8``, unsigned for ``.u8``): products and the sum from ``C`` exact in int64 (``k`` ascending;
  32 products of at most 2^15 in magnitude and an i32 ``C`` cannot overflow it), then wrapped to
  i32 (two's complement, as ``+=`` in i32 and ``.s32`` accumulation without ``.satfinite`` do):
  the same result in any order.

Async semantics modelled (9.7.15, the ``wgmma.fence``, ``commit_group``, ``wait_group``), each a
``KerncRuntimeError`` naming the op and its location when broken:

- a ``wgmma.mma_async`` needs a ``wgmma.fence`` since the start or the last ``wait_group`` (the
  accumulator registers may have been accessed in between);
- it reads the workgroup memory when it issues; that memory must hold what it held at the last
  ``fence.proxy.async.shared::cta`` (generic-proxy stores become visible to the async proxy only
  through that fence), and must not change before a ``wait_group`` retires the ``wgmma``'s group
  (checked at the wait: the bytes are compared with what it read);
- its operand reads are checked against the barrier intervals as the loads of every thread of the
  warpgroup (:func:`_track_reads`): an element any thread stored to since the last ``gpu.barrier``
  (another warp of the warpgroup at least executes the read), or that a ``cp.async`` has in flight,
  is a ``KerncRuntimeError``; so is a store by a thread to an element a ``wgmma`` read before the
  next barrier;
- its accumulators may feed another ``wgmma.mma_async`` of the same shape while pending, but any
  other read (``llvm.extractvalue``) before the ``wait_group`` that retires it is an error;
- ``wait_group N`` retires the oldest committed groups until at most ``N`` are pending; ops not yet
  committed stay pending.

All four are ``.sync.aligned``: every thread of a warpgroup (128 threads, blocks of whole warpgroups)
executes them together. The state is per batch of blocks (which run in lockstep).

Traffic: a ``wgmma``'s shared-memory reads go through the async proxy and are not counted in
:class:`~kernc.backend.interpreter.traffic.RunStats` (no requests, no bank conflicts).
"""

from __future__ import annotations

import re

import numpy as np

from kernc.support.errors import KerncRuntimeError

from .frame import SITES, site
from .memory import WINDOW_ALIGN, _interval_race, workgroup_address
from .translate import handles

WARPGROUP = 128
_L = np.arange(WARPGROUP)
_W, _G, _T = _L // 32, (_L % 32) // 4, _L % 4


def d_position(i: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, col)`` per thread of a warpgroup (arrays of 128) of accumulator ``d_i`` of m64nN."""
    return 16 * _W + _G + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * _T + (i & 1)


def decode(desc: int) -> dict:
    """The fields of a wgmma matrix descriptor (bytes; ``swizzle`` the mode code)."""
    d = int(desc) & ((1 << 64) - 1)
    return {"start": (d & 0x3FFF) << 4, "lbo": ((d >> 16) & 0x3FFF) << 4,
            "sbo": ((d >> 32) & 0x3FFF) << 4, "base_offset": (d >> 49) & 7, "swizzle": d >> 62}


#: bytes of a swizzled row per mode code (0: no swizzle)
SWIZZLE_BYTES = {0: 0, 1: 128, 2: 64, 3: 32}


def operand_addresses(desc: int, rows: int, k: int = 16, elem_bytes: int = 2,
                      mn_major: bool = False) -> np.ndarray:
    """``(rows, k)`` byte addresses of an operand's elements (row ``r`` of M or N, element ``k``),
    K-major or (``mn_major``) MN-major, per the module docstring."""
    f = decode(desc)
    r = np.arange(rows)[:, None]
    kk = np.arange(k)[None, :]
    T = SWIZZLE_BYTES[f["swizzle"]]
    per16 = 16 // elem_bytes
    if mn_major:
        if T == 0:  # 8x8 core matrices: 16 bytes of 8 rows, k%8 16 bytes apart; rows%8.. at SBO, k/8 at LBO
            return (f["start"] + elem_bytes * (r % per16) + (r // per16) * f["sbo"] + (kk % 8) * 16
                    + (kk // 8) * f["lbo"])
        per_row = T // elem_bytes  # rows of the operand in one T-byte row of the atom
        x = (f["start"] + elem_bytes * (r % per_row) + (r // per_row) * f["lbo"] + (kk % 8) * T
             + (kk // 8) * f["sbo"])
        return swizzle(x, T)
    if T == 0:
        return (f["start"] + (r // 8) * f["sbo"] + (r % 8) * 16 + (kk // per16) * f["lbo"]
                + elem_bytes * (kk % per16))
    x = f["start"] + (r // 8) * f["sbo"] + (r % 8) * T + elem_bytes * kk
    return swizzle(x, T)


def swizzle(x, T: int):
    """Shared byte address(es) ``x`` under the ``T``-byte swizzle (32, 64, 128; 0: none): the 16-byte
    unit within a ``T``-byte row XORed with the row's index in the ``8*T``-byte pattern (address bits
    4.. XOR bits 7..; PTX ISA 9.7.15.5.1, the same pattern ``cp.async.bulk.tensor`` writes with a
    tensor map's swizzle mode, 5.5.2 "Tensor swizzling modes")."""
    if not T:
        return x
    return x ^ ((x >> 3) & (((T // 16) - 1) << 4))


class _Acc:
    """An accumulator struct: ``regs`` (lane arrays or scalars), ``rec`` the pending wgmma or None."""

    __slots__ = ("regs", "rec")

    def __init__(self, regs, rec=None):
        self.regs, self.rec = tuple(regs), rec


class _Rec:
    """One issued ``wgmma.mma_async``: where (``loc``), what it read (``reads``: buffer, data
    indices, the values read), whether a ``wait_group`` retired it."""

    __slots__ = ("loc", "reads", "retired")

    def __init__(self, loc, reads):
        self.loc, self.reads, self.retired = loc, reads, False


class _State:
    __slots__ = ("fenced", "open", "groups", "proxy")

    def __init__(self):
        self.fenced = False
        self.open: list = []    # issued, not committed
        self.groups: list = []  # committed, not retired (oldest first)
        self.proxy = None       # {buffer id: copy of its data} at the last fence.proxy.async


def _state(fr) -> _State:
    st = fr.memo.get("wgmma")
    if st is None:
        st = fr.memo["wgmma"] = _State()
    return st


def _nregs(t) -> int:
    """Registers of an accumulator struct type (all ``f32`` or all ``i32``), or -1."""
    return len(_acc_fields(t) or ()) or -1


def _acc_fields(t) -> list[str] | None:
    m = re.fullmatch(r"!llvm\.struct<\((.*)\)>", str(t))
    if not m:
        return None
    fields = [x.strip() for x in m.group(1).split(",")]
    return fields if len(set(fields)) == 1 and fields[0] in ("f32", "i32") else None


def _bits(a: np.ndarray) -> np.ndarray:
    """The elements' bits (an unsigned view of their size): compared, -0.0 is not 0.0, NaN is itself."""
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def _groups(fr, mask, what: str, loc: str) -> np.ndarray:
    """The warpgroups of the batch that run ``what`` (all their threads, or none: ``.sync.aligned``)."""
    if fr.B % WARPGROUP:
        raise KerncRuntimeError(f"{what} (at {loc}) needs blocks of whole warpgroups ({WARPGROUP} "
                                f"threads); this block has {fr.B}")
    n = fr.L // WARPGROUP
    if mask is fr.full:
        return np.arange(n)
    rows = np.asarray(mask).reshape(n, WARPGROUP)
    bad = rows.any(axis=1) & ~rows.all(axis=1)
    if bad.any():
        w = int(np.argmax(bad))
        lane = int(np.argmin(rows[w]))
        raise KerncRuntimeError(
            f"{what} in divergent control flow (at {loc}): thread {fr.thread_id(w * WARPGROUP + lane)} "
            "did not reach it while other threads of its warpgroup did; every thread of the warpgroup "
            "must execute it (.sync.aligned)")
    return np.flatnonzero(rows.any(axis=1))


def _lanes(v, L: int) -> np.ndarray:
    return v if type(v) is np.ndarray else np.broadcast_to(np.asarray(v), (L,))


@handles("llvm.mlir.zero", "llvm.mlir.undef", "llvm.mlir.poison")
def _struct_constant(tr, o):
    """A struct of f32 or i32 accumulators: zeros (``zero``), or NaN (f32) / ``0x7FC00000`` (i32:
    the same bits) for ``undef``/``poison``."""
    n = _nregs(o.results[0].type)
    if n < 0:
        tr.unsupported(o, f"{o.name} of {o.results[0].type}")
    if _acc_fields(o.results[0].type)[0] == "i32":
        v = np.int32(0 if o.name == "llvm.mlir.zero" else 0x7FC00000)
    else:
        v = np.float32(0.0 if o.name == "llvm.mlir.zero" else np.nan)
    r = tr.define(o.results[0])

    def f(fr, mask):
        fr.env[r] = _Acc([v] * n)
    return f


def _position(tr, o) -> int:
    pos = list(ir_ints(o.attributes["position"]))
    if len(pos) != 1:
        tr.unsupported(o, f"{o.name} at a nested position {pos}")
    return pos[0]


def ir_ints(attr) -> list[int]:
    """The integers of an attribute's text (``array<i64: 3>`` -> ``[3]``, ``0 : i32`` -> ``[0]``),
    type widths left out."""
    text = re.sub(r"\b[iu]\d+\b", "", str(attr))
    return [int(x) for x in re.findall(r"-?\d+", text)]


@handles("llvm.insertvalue")
def _insertvalue(tr, o):
    if _nregs(o.results[0].type) < 0:
        tr.unsupported(o, f"llvm.insertvalue into {o.results[0].type}")
    k = _position(tr, o)
    s, v = tr.use(o.operands[0]), tr.use(o.operands[1])
    r = tr.define(o.results[0])
    loc = str(o.location)

    def f(fr, mask):
        acc = fr.env[s]
        _check_read(acc, "llvm.insertvalue", loc)
        regs = list(acc.regs)
        regs[k] = fr.env[v] if mask is fr.full else np.where(mask, fr.env[v], regs[k])
        fr.env[r] = _Acc(regs)
    return f


def _check_read(acc: _Acc, what: str, loc: str) -> None:
    if acc.rec is not None and not acc.rec.retired:
        raise KerncRuntimeError(
            f"{what} (at {loc}) reads the accumulators of the wgmma.mma_async at {acc.rec.loc} before "
            "a wgmma.wait_group retired it: the registers are undefined until then (PTX ISA "
            "9.7.15, wgmma.wait_group)")


@handles("llvm.extractvalue")
def _extractvalue(tr, o):
    if _nregs(o.operands[0].type) < 0:
        tr.unsupported(o, f"llvm.extractvalue of {o.operands[0].type}")
    k = _position(tr, o)
    s = tr.use(o.operands[0])
    r = tr.define(o.results[0])
    loc = str(o.location)

    def f(fr, mask):
        acc = fr.env[s]
        _check_read(acc, "llvm.extractvalue", loc)
        fr.env[r] = acc.regs[k]
    return f


@handles("nvvm.wgmma.fence.aligned")
def _fence(tr, o):
    loc = str(o.location)

    def f(fr, mask):
        _groups(fr, mask, "wgmma.fence", loc)
        _state(fr).fenced = True
    return f


@handles("nvvm.fence.proxy")
def _fence_proxy(tr, o):
    """``fence.proxy.async.shared::cta``: the generic-proxy writes so far become visible to the
    async proxy (a snapshot of the batch's workgroup memory, which wgmma reads are checked against)."""
    kind = str(o.attributes["kind"])
    if "async" not in kind:
        tr.unsupported(o, f"nvvm.fence.proxy {kind}")

    def f(fr, mask):
        _state(fr).proxy = {id(buf): buf.data.copy() for buf in fr.shadows}
    return f


@handles("nvvm.wgmma.commit.group.sync.aligned")
def _commit(tr, o):
    loc = str(o.location)

    def f(fr, mask):
        _groups(fr, mask, "wgmma.commit_group", loc)
        st = _state(fr)
        st.groups.append(st.open)
        st.open = []
    return f


@handles("nvvm.wgmma.wait.group.sync.aligned")
def _wait(tr, o):
    n = ir_ints(o.attributes["group"])[-1]
    loc = str(o.location)

    def f(fr, mask):
        _groups(fr, mask, "wgmma.wait_group", loc)
        st = _state(fr)
        while len(st.groups) > n:
            for rec in st.groups.pop(0):
                for buf, idx, seen in rec.reads:
                    now = buf.data[idx]
                    changed = _bits(now) != _bits(seen)
                    if changed.any():
                        raise KerncRuntimeError(
                            f"workgroup buffer '{buf.name}' that the wgmma.mma_async at {rec.loc} reads "
                            f"was overwritten before the wgmma.wait_group (at {loc}) that retires it "
                            "(PTX ISA 9.7.15, wgmma.wait_group: the shared memory of a pending wgmma must not be "
                            "modified)")
                rec.retired = True
        st.fenced = False  # the registers may be accessed now; the next wgmma needs a fence
    return f


def _find(fr, addr: np.ndarray, what: str, loc: str):
    """The workgroup buffer holding every byte address of ``addr``, and its element indices."""
    lo, hi = int(addr.min()), int(addr.max())
    for i, buf in enumerate(fr.shadows):
        base = workgroup_address(fr, buf)
        if base <= lo and hi < base + buf.size * buf.itemsize:
            off = addr - base
            if (off % buf.itemsize).any():
                raise KerncRuntimeError(f"wgmma.mma_async (at {loc}): {what} addresses are not "
                                        f"{buf.itemsize}-byte aligned in '{buf.name}'")
            return i, buf, off // buf.itemsize
    raise KerncRuntimeError(f"wgmma.mma_async (at {loc}): the {what} descriptor addresses bytes "
                            f"{lo}..{hi} of the shared window, not within one workgroup buffer")


@handles("nvvm.wgmma.mma_async")
def _mma_async(tr, o):
    """``nvvm.wgmma.mma_async`` m64nNk16 of f16/bf16 operands with f32 accumulators, or m64nNk32 of
    s8/u8 ones with s32 accumulators, from workgroup memory (the module docstring)."""
    attrs = o.attributes
    shape = ir_ints(attrs["shape"])
    types = [str(attrs[x]) for x in ("typeA", "typeB", "typeD")]
    elem = re.search(r"<(\w+)>", types[0]).group(1)
    integer = elem in ("s8", "u8")
    K = 32 if integer else 16
    fields = _acc_fields(o.results[0].type)
    ok = (len(shape) == 3 and shape[0] == 64 and shape[2] == K and types[0] == types[1]
          and elem in ("f16", "bf16", "s8", "u8") and ("s32" if integer else "f32") in types[2]
          and fields is not None and fields[0] == ("i32" if integer else "f32")
          and re.search(r"<(row|col)>", str(attrs["layoutA"])) and re.search(r"<(row|col)>", str(attrs["layoutB"]))
          and not (integer and ("col" in str(attrs["layoutA"]) or "row" in str(attrs["layoutB"])))
          and all("one" in str(attrs[x]) for x in ("scaleA", "scaleB", "scaleD"))
          and "satfinite" not in attrs)
    N = shape[1] if len(shape) == 3 else 0
    if not ok or N % 8 or not 8 <= N <= 256 or _nregs(o.results[0].type) != N // 2:
        tr.unsupported(o, f"wgmma.mma_async {shape} {types}")
    c, da, db = (tr.use(v) for v in o.operands[:3])
    r = tr.define(o.results[0])
    loc = str(o.location)
    align = _alignments(tr)
    nreg = N // 2
    pos = [d_position(i) for i in range(nreg)]
    prow = np.stack([p[0] for p in pos])  # (nreg, 128)
    pcol = np.stack([p[1] for p in pos])
    want = {"f16": "float16", "bf16": "bfloat16", "s8": "int8", "u8": "int8"}[elem]  # (u8: i8 buffers)
    ebytes = 1 if integer else 2
    mn = {"A": "col" in str(attrs["layoutA"]), "B": "row" in str(attrs["layoutB"])}  # transposed: MN-major
    items: list = []  # (warpgroup, buffer, element indices in its block's array, operand) read
    sid = site(loc)

    def operand(fr, groups, dv, rows, what):
        d = _lanes(dv, fr.L).reshape(-1, WARPGROUP)
        vals, reads = [], []
        for g in groups:
            if (d[g] != d[g, 0]).any():
                raise KerncRuntimeError(f"wgmma.mma_async (at {loc}): the {what} descriptor differs "
                                        "between threads of a warpgroup (it must be the same)")
            f = decode(d[g, 0])
            if f["base_offset"]:
                raise KerncRuntimeError(f"wgmma.mma_async (at {loc}): {what} descriptor with a matrix "
                                        "base offset, which the interpreter does not model")
            addr = operand_addresses(d[g, 0], rows, K, ebytes, mn_major=mn[what])
            i, buf, el = _find(fr, addr, what, loc)
            T = SWIZZLE_BYTES[f["swizzle"]]
            al = _view_alignment(buf) if buf.window is not None else align[i]
            if T and al < 8 * T:
                raise KerncRuntimeError(
                    f"wgmma.mma_async (at {loc}): the {what} tile's {T}-byte swizzle repeats every "
                    f"{8 * T} bytes of absolute address, but workgroup buffer '{buf.name}' is only "
                    f"{al}-byte aligned (llvm.align, or a dynamic workgroup memory view's offset)")
            if buf.data.dtype.name != want:
                raise KerncRuntimeError(f"wgmma.mma_async (at {loc}): {what} is {elem} but workgroup "
                                        f"buffer '{buf.name}' holds {buf.data.dtype.name}")
            idx = int(buf.base[g * WARPGROUP]) + el
            tma = fr.memo.get("tma")  # a TMA destination read before its mbarrier wait (tma.py)
            if tma is not None:
                tma.check_elements(fr, buf, idx, g * WARPGROUP, f"the {what} operand read of", loc)
            seen = buf.data[idx]
            st = _state(fr)
            snap = None if st.proxy is None else st.proxy.get(id(buf))
            if snap is None or (_bits(snap[idx]) != _bits(seen)).any():
                raise KerncRuntimeError(
                    f"wgmma.mma_async (at {loc}) reads workgroup buffer '{buf.name}' as {what}, "
                    "written by ordinary stores after the last fence.proxy.async.shared::cta (or with "
                    "none): the async proxy wgmma reads through may not see them (PTX ISA, \"Async Proxy\")")
            if integer:  # the bytes as .s8 / .u8 read them, exact in int64
                vals.append((seen.view(np.uint8) if elem == "u8" else seen).astype(np.int64))
            else:
                vals.append(seen.astype(np.float32))
            reads.append((buf, idx, seen.copy()))
            items.append((g, buf, el, what))
        return vals, reads

    def f(fr, mask):
        env = fr.env
        groups = _groups(fr, mask, "wgmma.mma_async", loc)
        st = _state(fr)
        if not st.fenced:
            raise KerncRuntimeError(
                f"wgmma.mma_async (at {loc}) without a wgmma.fence since the start or the last "
                "wgmma.wait_group (PTX ISA 9.7.15, wgmma.fence: needed before the first wgmma and after the "
                "accumulator registers were accessed)")
        acc = env[c]
        L = fr.L
        items.clear()
        A, ra = operand(fr, groups, env[da], 64, "A")
        Bm, rb = operand(fr, groups, env[db], N, "B")
        _track_reads(fr, mask, items, loc, sid)
        dt = np.int32 if integer else np.float32
        regs = [np.array(_lanes(x, L), dt) for x in acc.regs]
        R = np.stack(regs).reshape(nreg, -1, WARPGROUP)  # (reg, warpgroup, thread)
        for gi, g in enumerate(groups):
            a, bm = A[gi], Bm[gi]
            if integer:  # exact int64 products and sum from C, wrapped to i32 once (two's complement)
                D = np.zeros((64, N), np.int64)
                D[prow, pcol] = R[:, g, :]
                for k in range(K):
                    D = D + a[:, k, None] * bm[None, :, k]
                R[:, g, :] = D[prow, pcol].astype(np.int32)
                continue
            D = np.zeros((64, N), np.float32)
            D[prow, pcol] = R[:, g, :]
            for k in range(16):  # exact f32 products, added k ascending, rounded each time
                D = D + a[:, k, None] * bm[None, :, k]
            R[:, g, :] = D[prow, pcol]
        rec = _Rec(loc, ra + rb)
        st.open.append(rec)
        out = R.reshape(nreg, L)
        env[r] = _Acc([out[i] for i in range(nreg)], rec)
    return f


def _track_reads(fr, mask, items, loc: str, sid: int) -> None:
    """The barrier-interval race check (:func:`.memory._track`) of a ``wgmma``'s operand reads
    ``items`` (warpgroup ``g`` of the batch, buffer, element indices in its block's array,
    operand name): each element as loaded by every thread of the warpgroup, so a store by any
    thread since the last barrier is a race, and so is one before the next barrier (the reads are
    logged as by the warpgroup's first and last thread). Also a read of an element a ``cp.async``
    has in flight. Uniform mode (:class:`~.frame._Shadow`) when every block's warpgroups read the
    same indices."""
    wpb = fr.B // WARPGROUP
    for buf in {id(b): b for _, b, _, _ in items}.values():
        sh = buf.shadow
        if sh is None:
            continue
        mine = [(g, el, what) for g, b, el, what in items if b is buf]
        if sh.npending:
            for g, el, what in mine:
                flat = int(buf.base[g * WARPGROUP]) + el
                busy = sh.pending[flat] > 0
                if busy.any():
                    raise KerncRuntimeError(
                        f"data race on {buf.describe()} (workgroup memory of block "
                        f"{fr.first_block + g // wpb}): the wgmma.mma_async at {loc} reads its {what} operand "
                        f"at index {int(el.reshape(-1)[np.argmax(busy.reshape(-1))])} while a cp.async to it "
                        f"(nvgpu.device_async_copy at {sh.pending_loc}) is in flight (no "
                        "nvgpu.device_async_wait has retired it)")
        uniform = sh.uniform and mask is fr.full
        if uniform:  # every block's warpgroups read what block 0's read
            ref = {(what, g): el for g, el, what in mine if g < wpb}
            uniform = all(np.array_equal(el, ref.get((what, g % wpb))) for g, el, what in mine)
        if uniform:
            mine, first = [x for x in mine if x[0] < wpb], fr.first_block
        else:
            if sh.uniform:
                sh.spread()
            first = None
        for g, el, what in mine:
            addr = el.reshape(-1) if first is not None else int(buf.base[g * WARPGROUP]) + el.reshape(-1)
            lo = (g % wpb) * WARPGROUP
            who = f"the warpgroup of threads {lo}-{lo + WARPGROUP - 1} (its wgmma {what} operand)"
            if sh.writes:
                w = sh.writer[addr]
                bad = w >= 0
                if bad.any():
                    k = int(np.argmax(bad))
                    _interval_race(fr, buf, first, addr[k], f"thread {int(w[k])}", "stored to",
                                   SITES[int(sh.wsite[addr[k]])], who, "loads", loc)
            sh.log.append((addr, np.full(addr.size, lo, np.int32), sid))
            sh.log.append((addr, np.full(addr.size, lo + WARPGROUP - 1, np.int32), sid))


def _view_alignment(buf) -> int:
    """The byte alignment of a view of the dynamic workgroup memory (``buf.window``: its byte offset
    from the memory's :data:`WINDOW_ALIGN`-aligned base): the largest power of two dividing the
    offset, at most :data:`WINDOW_ALIGN`."""
    off = buf.window
    return WINDOW_ALIGN if off == 0 else min(off & -off, WINDOW_ALIGN)


def _alignments(tr) -> list[int]:
    """The declared byte alignment (``llvm.align``, else 16) of each workgroup attribution."""
    attrs = tr.fop.attributes
    n = int(attrs["workgroup_attributions"].value) if "workgroup_attributions" in attrs else 0
    out = [16] * n
    if "workgroup_attrib_attrs" in attrs:
        for i, d in enumerate(attrs["workgroup_attrib_attrs"]):
            m = re.search(r"llvm\.align = (\d+)", str(d))
            if m and i < n:
                out[i] = int(m.group(1))
    return [min(a, WINDOW_ALIGN) for a in out]
