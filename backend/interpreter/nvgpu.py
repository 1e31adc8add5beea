"""The ``nvgpu`` dialect's warp-level matrix ops: ``nvgpu.ldmatrix`` and ``nvgpu.mma.sync``, with the
lane-to-fragment mapping of the PTX ISA (so a wrong fragment layout is a wrong result here too).

Values: a ``vector<R x C x T>`` is a tuple of ``R`` tuples of ``C`` lane arrays (or scalars), the
fragment registers of each lane (``vector<4x2xf16>`` holds ``a0..a7`` as ``((a0, a1), (a2, a3),
...)``). Both ops are ``.sync.aligned``: every lane of a warp executes them together, else
``KerncRuntimeError``; blocks must be whole warps.

Fragment layouts, from the PTX ISA (9.7.14.5.8, "Matrix Fragments for mma.m16n8k16 with floating
point type"; ``g = lane >> 2`` the groupID, ``t = lane % 4`` the threadID_in_group):

- A (16x16, ``.row``), ``a_i``, ``i < 8``: row ``g + 8*((i >> 1) & 1)``, column ``2t + (i & 1) +
  8*(i >> 2)``;
- B (16x8, ``.col``), ``b_i``, ``i < 4``: row ``2t + (i & 1) + 8*(i >> 1)``, column ``g``;
- C and D (16x8), ``c_i``, ``i < 4``: row ``g + 8*(i >> 1)``, column ``2t + (i & 1)``.

``ldmatrix`` (9.7.9.25, "ldmatrix"): lanes ``8q .. 8q+7`` give the addresses of rows ``0..7`` of
matrix ``q`` (``.x1``: lanes 0-7, ``.x2``: 0-15, ``.x4``: all); a row is 8 consecutive 16-bit
elements at a 16-byte aligned address; lane ``l`` receives, of each matrix ``q``, the pair at row
``l >> 2``, columns ``2*(l % 4) + {0, 1}`` (with ``.trans``: rows ``2*(l % 4) + {0, 1}`` of column
``l >> 2``) as register ``q``.

Traffic: one ``ldmatrix`` is one shared request per warp, served in one phase per 8x8 matrix (8
rows of 16 bytes: 32 words); its bank conflicts are counted per phase as
:class:`~kernc.backend.interpreter.traffic.RunStats` defines them (rows whose 16 bytes share banks
with another row's conflict: an unpadded 64-byte row stride gives 3 per phase).

Arithmetic of ``mma.sync`` m16n8k16 (f16/bf16 products, f32 accumulators): each product is exact in
f32 (11-bit or 8-bit significands: at most 22 bits), and ``d = c + sum_k a[m, k]*b[k, n]`` is summed
in f32 starting from ``c``, ``k`` ascending, each addition rounded to nearest even -- the
interpreter's order; the ISA leaves the hardware's open, so a GPU result may differ in the last
bits (the tests compare with a tolerance).
"""

from __future__ import annotations

import re

import numpy as np

from kernc.support.errors import KerncRuntimeError

from .memory import _access, _addr
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


def c_position(i: int) -> tuple[np.ndarray, np.ndarray]:
    """``(row, col)`` per lane of register ``c_i`` (and ``d_i``) of the m16n8 C/D fragment."""
    return _G + 8 * (i >> 1), 2 * _T + (i & 1)


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
    if dims != [n, 2] or ety.dtype.itemsize != 2:
        tr.unsupported(o, f"ldmatrix of {o.results[0].type}")
    r = tr.define(o.results[0])
    loc = str(o.location)
    src_row = [8 * q + (_LANE >> 2) for q in range(n)]  # the lane giving the row each lane reads
    src_pair = [8 * q + 2 * _T + e for q in range(n) for e in range(2)]  # .trans: rows 2t, 2t+1

    def f(fr, mask):
        env = fr.env
        _whole_warps(fr, mask, "nvgpu.ldmatrix", loc)
        buf = env[m]
        first = [env[i] for i in idx]
        act, rel = _access(fr, mask, buf, first, "load")
        if act is not None and act.size == 0:
            env[r] = tuple((ety.zero(), ety.zero()) for _ in range(n))
            return
        _access(fr, mask, buf, [first[0] + 7], "load")  # the row's last element
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
        if fr.collect:
            _count_ldmatrix(fr, mask, buf, rel, act, n)
        data = buf.data
        out = []
        for q in range(n):
            if trans:  # lane l: column l >> 2 of rows 2t, 2t+1 of matrix q
                pair = tuple(data[rows[:, src_pair[2 * q + e]] + (_LANE >> 2)].reshape(-1) for e in range(2))
            else:  # lane l: columns 2t, 2t+1 of row l >> 2 of matrix q
                base = rows[:, src_row[q]] + 2 * _T
                pair = tuple(data[base + e].reshape(-1) for e in range(2))
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
    """``nvgpu.mma.sync`` m16n8k16 with f16 or bf16 operands and f32 accumulators (``mma.sync.aligned
    .m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32``), summed as the module docstring says."""
    shape = [int(x) for x in re.findall(r"\d+", str(o.attributes["mmaShape"]))]
    a, bb, c = (tr.use(v) for v in o.operands[:3])
    da, ta = _shape(tr, o.operands[0].type, o)
    db, tb = _shape(tr, o.operands[1].type, o)
    dc, tc = _shape(tr, o.operands[2].type, o)
    if (shape != [16, 8, 16] or da != [4, 2] or db != [2, 2] or dc != [2, 2] or ta.dtype != tb.dtype
            or ta.dtype.itemsize != 2 or tc.dtype != np.float32 or len(o.operands) != 3):
        tr.unsupported(o, f"mma.sync {shape} of {o.operands[0].type}, {o.operands[1].type}, {o.operands[2].type}")
    r = tr.define(o.results[0])
    loc = str(o.location)
    apos = [a_position(i) for i in range(8)]
    bpos = [b_position(i) for i in range(4)]
    cpos = [c_position(i) for i in range(4)]

    def f(fr, mask):
        env = fr.env
        _whole_warps(fr, mask, "nvgpu.mma.sync", loc)
        L = fr.L
        w = L // WARP_SIZE
        A = np.zeros((w, 16, 16), np.float32)
        Bm = np.zeros((w, 16, 8), np.float32)
        C = np.zeros((w, 16, 8), np.float32)
        for i, (row, col) in enumerate(apos):
            A[:, row, col] = _lanes(env[a][i >> 1][i & 1], L).reshape(w, WARP_SIZE).astype(np.float32)
        for i, (row, col) in enumerate(bpos):
            Bm[:, row, col] = _lanes(env[bb][i >> 1][i & 1], L).reshape(w, WARP_SIZE).astype(np.float32)
        for i, (row, col) in enumerate(cpos):
            C[:, row, col] = _lanes(env[c][i >> 1][i & 1], L).reshape(w, WARP_SIZE)
        D = C
        for k in range(16):  # exact f32 products, added to the sum k ascending, rounded each time
            D = D + A[:, :, k, None] * Bm[:, None, k, :]
        out = [D[:, row, col].reshape(L) for row, col in cpos]
        env[r] = ((out[0], out[1]), (out[2], out[3]))
    return f
