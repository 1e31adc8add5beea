"""The ``nvgpu`` dialect's warp-level matrix ops: ``nvgpu.ldmatrix`` and ``nvgpu.mma.sync``, with the
lane-to-fragment mapping of the PTX ISA (so a wrong fragment layout is a wrong result here too).

Values: a ``vector<R x C x T>`` is a tuple of ``R`` tuples of ``C`` lane arrays (or scalars), the
fragment registers of each lane (``vector<4x2xf16>`` holds ``a0..a7`` as ``((a0, a1), (a2, a3),
...)``; ``vector<4x4xi8>`` holds ``a0..a15`` four to a 32-bit register). Both ops are
``.sync.aligned``: every lane of a warp executes them together, else ``KerncRuntimeError``; blocks
must be whole warps.

Fragment layouts, from the PTX ISA (``g = lane >> 2`` the groupID, ``t = lane % 4`` the
threadID_in_group; C and D are the same 16x8 layout for every shape):

- m16n8k16, f16/bf16 (9.7.14.5.8, "Matrix Fragments for mma.m16n8k16 with floating point type"):
  A (16x16, ``.row``) ``a_i``, ``i < 8``: row ``g + 8*((i >> 1) & 1)``, column ``2t + (i & 1) +
  8*(i >> 2)``; B (16x8, ``.col``) ``b_i``, ``i < 4``: row ``2t + (i & 1) + 8*(i >> 1)``, column ``g``;
- m16n8k32, s8 (9.7.14.5.10, "Matrix Fragments for mma.m16n8k32"): A (16x32) ``a_i``, ``i < 16``:
  row ``g + 8*((i >> 2) & 1)``, column ``4t + (i & 3) + 16*(i >> 3)``; B (32x8) ``b_i``, ``i < 8``:
  row ``4t + (i & 3) + 16*(i >> 2)``, column ``g``;
- m16n8k8, tf32 (9.7.14.5.7, "Matrix Fragments for mma.m16n8k8", ``.tf32``): A (16x8) ``a_i``,
  ``i < 4``: row ``g + 8*(i & 1)``, column ``t + 4*(i >> 1)``; B (8x8) ``b_i``, ``i < 2``: row
  ``t + 4*i``, column ``g``;
- C and D (16x8, f32 or s32) ``c_i``, ``i < 4``: row ``g + 8*(i >> 1)``, column ``2t + (i & 1)``.

``ldmatrix`` (9.7.9.25, "ldmatrix"): lanes ``8q .. 8q+7`` give the addresses of rows ``0..7`` of
matrix ``q`` (``.x1``: lanes 0-7, ``.x2``: 0-15, ``.x4``: all); a row is 16 bytes at a 16-byte
aligned address (8 16-bit elements; the ``.b16`` form also moves 16 8-bit or 4 32-bit elements a
row, the 32-bit word at row ``l >> 2``, word ``l % 4`` going to lane ``l`` as for 16-bit pairs); lane
``l`` receives, of each matrix ``q``, the 32-bit word at row ``l >> 2``, word ``l % 4`` (with
``.trans``, 16-bit elements only: rows ``2*(l % 4) + {0, 1}`` of column ``l >> 2``) as register
``q``.

Races: each row is checked as a load of its 16 bytes by the whole warp (its words go to other lanes
than the one giving the address; :func:`.memory.access_check`, as ``memref.load``): a row any
thread stored to since the last ``gpu.barrier`` (or a ``cp.async`` retired since then wrote), or
that a ``cp.async`` has in flight, is a ``KerncRuntimeError``; so is a store to it by any thread
before the next barrier.

Traffic: one ``ldmatrix`` is one shared request per warp, served in one phase per 8x8 matrix (8
rows of 16 bytes: 32 words); its bank conflicts are counted per phase as
:class:`~kernc.backend.interpreter.traffic.RunStats` defines them (rows whose 16 bytes share banks
with another row's conflict: an unpadded 64-byte row stride gives 3 per phase).

Arithmetic of ``mma.sync``:

- m16n8k16 (f16/bf16 products, f32 accumulators) and m16n8k8 ``.tf32``: each product is exact in
  f32 (11-bit or 8-bit significands: at most 22 bits), and ``d = c + sum_k a[m, k]*b[k, n]`` is
  summed in f32 starting from ``c``, ``k`` ascending, each addition rounded to nearest even -- the
  interpreter's order; the ISA leaves the hardware's open, so a GPU result may differ in the last
  bits (the tests compare with a tolerance). A ``.tf32`` operand is an f32 register whose low 13
  bits the tensor core does not read: the interpreter clears them (kern-mma-contractions rounds its
  operands to TF32 before, as ``cvt.rna.tf32.f32`` does, so there are none);
- m16n8k32 ``.satfinite.s32.s8.s8.s32`` (MLIR's convert-nvgpu-to-nvvm always writes
  ``.satfinite`` for integer mma): the ``i8`` registers are signed, the products and the sum
  ``c + sum_k a*b`` exact, and ``d`` that sum clamped to ``[-2**31, 2**31 - 1]`` (the ISA's
  ``.satfinite``; no order matters). So a sum whose k32 partial sums stay within i32 is exact, as
  the loop's; one that leaves i32 saturates here, where the loop's ``arith.addi`` wraps. An op
  marked ``kern.ptx_type = "u8"`` (kern-mma-contractions' u8 contractions, lowered to
  ``.s32.u8.u8.s32`` by kern-lower-unsigned-mma) reads its ``i8`` registers as unsigned bytes.
"""

from __future__ import annotations

import re

import numpy as np

from kernc.dialect.signature import PTX_TYPE_ATTR
from kernc.support.errors import KerncRuntimeError

from .memory import _access, _addr, access_check
from .traffic import BANK_BYTES, WARP_SIZE, _bank_conflicts
from .translate import handles
from .types import _scalar_ty

_LANE = np.arange(WARP_SIZE)
_G, _T = _LANE >> 2, _LANE % 4


def a_position(i: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, col)`` per lane (arrays of 32) of register ``a_i`` of the m16n8k16 A fragment."""
    return _G + 8 * ((i >> 1) & 1), 2 * _T + (i & 1) + 8 * (i >> 2)


def b_position(i: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, col)`` per lane of register ``b_i`` of the m16n8k16 B fragment."""
    return 2 * _T + (i & 1) + 8 * (i >> 1), _G


def a_position_k32(i: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, col)`` per lane of register ``a_i`` (``i < 16``) of the m16n8k32 s8 A fragment."""
    return _G + 8 * ((i >> 2) & 1), 4 * _T + (i & 3) + 16 * (i >> 3)


def b_position_k32(i: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, col)`` per lane of register ``b_i`` (``i < 8``) of the m16n8k32 s8 B fragment."""
    return 4 * _T + (i & 3) + 16 * (i >> 2), _G


def a_position_k8(i: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, col)`` per lane of register ``a_i`` (``i < 4``) of the m16n8k8 tf32 A fragment."""
    return _G + 8 * (i & 1), _T + 4 * (i >> 1)


def b_position_k8(i: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, col)`` per lane of register ``b_i`` (``i < 2``) of the m16n8k8 tf32 B fragment."""
    return _T + 4 * i, _G


def c_position(i: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, col)`` per lane of register ``c_i`` (and ``d_i``) of the m16n8 C/D fragment."""
    return _G + 8 * (i >> 1), 2 * _T + (i & 1)


#: ``k`` of the mma shape -> (the operand element kind, A's and B's register grids ``[R, C]``, the
#: names of their position functions: looked up when an op is translated, so a test can replace one)
_MMA_KINDS = {
    16: ("f16", [4, 2], [2, 2], "a_position", "b_position"),
    32: ("s8", [4, 4], [2, 4], "a_position_k32", "b_position_k32"),
    8: ("tf32", [4, 1], [2, 1], "a_position_k8", "b_position_k8"),
}


def _shape(tr, t, o) -> tuple[list[int], object]:
    m = re.fullmatch(r"vector<((?:\d+x)+)(\w+)>", str(t))
    if not m:
        tr.unsupported(o, f"type {t}")
    return [int(d) for d in m.group(1).rstrip("x").split("x")], _scalar_ty(m.group(2))


def _whole_warps(fr, mask, what: str, loc: str) -> None:
    """``.sync.aligned``: a warp runs ``what`` with all its lanes or none (``KerncRuntimeError``)."""
    if fr.B % WARP_SIZE:
        raise KerncRuntimeError(f"{what} (at {loc}) needs blocks of whole warps; this block has "
                                f"{fr.B} threads")
    if mask is fr.full:
        return
    rows = np.asarray(mask).reshape(-1, WARP_SIZE)
    bad = rows.any(axis=1) & ~rows.all(axis=1)
    if bad.any():
        w = int(np.argmax(bad))
        lane = int(np.argmin(rows[w]))
        raise KerncRuntimeError(
            f"{what} in divergent control flow (at {loc}): thread {fr.thread_id(w * WARP_SIZE + lane)} "
            f"(lane {lane} of its warp) did not reach the {what} that other lanes of its warp "
            "executed; every lane of the warp must execute it (.sync.aligned)")


def _lanes(v, L: int) -> np.ndarray:
    """A register as a ``(L,)`` array (a uniform scalar broadcast)."""
    return v if type(v) is np.ndarray else np.broadcast_to(np.asarray(v), (L,))


@handles("nvgpu.ldmatrix")
def _ldmatrix(tr, o):
    """``nvgpu.ldmatrix`` (``ldmatrix.sync.aligned.m8n8.xN[.trans].shared.b16``)."""
    m = tr.use(o.operands[0])
    idx = [tr.use(v) for v in o.operands[1:]]
    if len(idx) != 1:
        tr.unsupported(o, "nvgpu.ldmatrix of a memref that is not 1-D")
    n = int(o.attributes["numTiles"].value)
    trans = bool(o.attributes["transpose"].value)
    dims, ety = _shape(tr, o.results[0].type, o)
    size = ety.dtype.itemsize
    per = 4 // size  # elements of a 32-bit register (a word of a 16-byte row)
    if size not in (1, 2, 4) or dims != [n, per] or (trans and size != 2):
        tr.unsupported(o, f"ldmatrix of {o.results[0].type}" + (" with .trans" if trans else ""))
    r = tr.define(o.results[0])
    loc = str(o.location)
    src_row = [8 * q + (_LANE >> 2) for q in range(n)]  # the lane giving the row each lane reads
    src_pair = [8 * q + 2 * _T + e for q in range(n) for e in range(2)]  # .trans: rows 2t, 2t+1
    zeros = tuple(ety.zero() for _ in range(per))
    rows_of = None
    if n < 4:  # only lanes 0 .. 8n-1 give row addresses
        def rows_of(fr):
            return fr.lane_in_warp[:fr.B] < 8 * n
    check = access_check(tr, o, o.operands[0], o.operands[1:], False, 16 // size, rows_of, WARP_SIZE)

    def f(fr, mask):
        env = fr.env
        _whole_warps(fr, mask, "nvgpu.ldmatrix", loc)
        buf = env[m]
        first = [env[i] for i in idx]
        act, rel = _access(fr, mask, buf, first, "load", loc)
        if act is not None and act.size == 0:
            env[r] = tuple(zeros for _ in range(n))
            return
        _access(fr, mask, buf, [first[0] + (16 // size - 1)], "load", loc)  # the row's last element
        addr = np.broadcast_to(_addr(fr, buf, act, rel), (fr.L if act is None else act.size,))
        misaligned = (addr * buf.itemsize) % 16 != 0
        if misaligned.any():
            k = int(np.argmax(misaligned))
            lane = k if act is None else int(act[k])
            raise KerncRuntimeError(f"nvgpu.ldmatrix (at {loc}): thread {fr.thread_id(lane)} gives a row "
                                    "address that is not 16-byte aligned")
        full = np.zeros(fr.L, np.int64)
        if act is None:
            full[:] = addr
        else:
            full[act] = addr
        rows = full.reshape(-1, WARP_SIZE)  # [warp, lane]: the row address lane gives
        if check is not None:
            check(fr, mask)
        if fr.collect:
            _count_ldmatrix(fr, mask, buf, rel, act, n)
        data = buf.data
        out = []
        for q in range(n):
            if trans:  # lane l: column l >> 2 of rows 2t, 2t+1 of matrix q
                pair = tuple(data[rows[:, src_pair[2 * q + e]] + (_LANE >> 2)].reshape(-1) for e in range(2))
            else:  # lane l: word t (elements per*t ... per*t + per-1) of row l >> 2 of matrix q
                base = rows[:, src_row[q]] + per * _T
                pair = tuple(data[base + e].reshape(-1) for e in range(per))
            if act is not None:
                pair = tuple(np.where(mask, x, ety.zero()) for x in pair)
            out.append(pair)
        env[r] = tuple(out)
    return f


def _count_ldmatrix(fr, mask, buf, rel, act, n: int) -> None:
    """One request per active warp; per matrix ``q`` a phase of the 4 words of each of its 8 rows
    (the addresses of lanes ``8q .. 8q+7``, within the attribution)."""
    r = np.zeros(fr.L, np.int64)
    if act is None:
        r[:] = rel
    else:
        r[act] = rel
    live = np.ones(fr.L // WARP_SIZE, bool) if act is None else np.asarray(mask).reshape(-1, WARP_SIZE).any(axis=1)
    fr.stats.shared_requests += int(live.sum())
    first = (r.reshape(-1, WARP_SIZE)[live, :8 * n] * buf.itemsize) // BANK_BYTES  # [warp, 8q + row]
    words = first[:, :, None] + np.arange(16 // BANK_BYTES)  # [warp, 8q + row, word]
    fr.stats.shared_bank_conflicts += _bank_conflicts(words.reshape(-1, WARP_SIZE))


@handles("nvgpu.mma.sync")
def _mma_sync(tr, o):
    """``nvgpu.mma.sync``: m16n8k16 with f16 or bf16 operands and f32 accumulators (``mma.sync.aligned
    .m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32``), m16n8k8 with ``tf32Enabled`` f32 operands
    (``.m16n8k8.row.col.f32.tf32.tf32.f32``) and m16n8k32 with i8 operands and i32 accumulators
    (``.m16n8k32.row.col.satfinite.s32.s8.s8.s32``; ``.u8.u8`` where marked ``kern.ptx_type = "u8"``),
    computed as the module docstring says."""
    shape = [int(x) for x in re.findall(r"\d+", str(o.attributes["mmaShape"]))]
    a, bb, c = (tr.use(v) for v in o.operands[:3])
    da, ta = _shape(tr, o.operands[0].type, o)
    db, tb = _shape(tr, o.operands[1].type, o)
    dc, tc = _shape(tr, o.operands[2].type, o)
    kind = _MMA_KINDS.get(shape[2]) if shape[:2] == [16, 8] else None
    tf32 = "tf32Enabled" in o.attributes
    ok = kind is not None and da == kind[1] and db == kind[2] and dc == [2, 2] and len(o.operands) == 3
    if ok and kind[0] == "f16":
        ok = ta.dtype == tb.dtype and ta.dtype.itemsize == 2 and ta.kind == "f" and tc.dtype == np.float32
    elif ok and kind[0] == "tf32":
        ok = tf32 and ta.dtype == tb.dtype == tc.dtype == np.float32
    elif ok:
        ok = ta.dtype == tb.dtype == np.int8 and tc.dtype == np.int32
    unsigned = PTX_TYPE_ATTR in o.attributes
    if unsigned:  # (only the u8 mark exists; kern-lower-unsigned-mma rejects any other the same way)
        ok = ok and kind[0] == "s8" and str(o.attributes[PTX_TYPE_ATTR]) == '"u8"'
    if not ok:
        tr.unsupported(o, f"mma.sync {shape} of {o.operands[0].type}, {o.operands[1].type}, {o.operands[2].type}"
                          + (" (tf32Enabled)" if tf32 else "")
                          + (f" ({PTX_TYPE_ATTR} {o.attributes[PTX_TYPE_ATTR]})" if unsigned else ""))
    r = tr.define(o.results[0])
    loc = str(o.location)
    M, N, K = shape
    (ra, ca), (rb, cb) = kind[1], kind[2]
    apos = [globals()[kind[3]](i) for i in range(ra * ca)]
    bpos = [globals()[kind[4]](i) for i in range(rb * cb)]
    cpos = [c_position(i) for i in range(4)]
    exact = kind[0] == "s8"
    work = np.int64 if exact else np.float32

    def operand(v, L):
        x = _lanes(v, L)
        if kind[0] == "tf32":  # the low 13 bits of a .tf32 operand are not read
            return (np.asarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
        if unsigned:  # the same bytes, as .u8 reads them
            return np.asarray(x, np.int8).view(np.uint8).astype(work)
        return x.astype(work)

    def f(fr, mask):
        env = fr.env
        _whole_warps(fr, mask, "nvgpu.mma.sync", loc)
        L = fr.L
        w = L // WARP_SIZE
        A = np.zeros((w, M, K), work)
        Bm = np.zeros((w, K, N), work)
        C = np.zeros((w, M, N), work)
        for i, (row, col) in enumerate(apos):
            A[:, row, col] = operand(env[a][i // ca][i % ca], L).reshape(w, WARP_SIZE)
        for i, (row, col) in enumerate(bpos):
            Bm[:, row, col] = operand(env[bb][i // cb][i % cb], L).reshape(w, WARP_SIZE)
        for i, (row, col) in enumerate(cpos):
            C[:, row, col] = _lanes(env[c][i >> 1][i & 1], L).reshape(w, WARP_SIZE)
        if exact:  # exact products and sums, clamped to i32 (.satfinite)
            D = np.clip(C + np.einsum("wmk,wkn->wmn", A, Bm), -2**31, 2**31 - 1).astype(np.int32)
        else:
            D = C
            for k in range(K):  # exact f32 products, added to the sum k ascending, rounded each time
                D = D + A[:, :, k, None] * Bm[:, None, k, :]
        out = [D[:, row, col].reshape(L) for row, col in cpos]
        env[r] = ((out[0], out[1]), (out[2], out[3]))
    return f
