"""The ``gpu`` dialect's thread model: ids, barriers, warp shuffles, and atomics (``memref.atomic_rmw``,
serialised in lane order)."""

from __future__ import annotations

import numpy as np

from kernc.support.errors import KerncRuntimeError

from . import affine
from .memory import _access, _addr, _Dynamic
from .traffic import WARP_SIZE, _count
from .translate import handles


def _atomic_apply(data: np.ndarray, addr: np.ndarray, vals: np.ndarray, fn) -> np.ndarray:
    """Apply ``data[a] = fn(data[a], v)`` for each (a, v) in lane order; return the old values.

    ``fn`` is a numpy ufunc (its ``accumulate`` gives the exact sequential semantics) or ``None`` for
    ``assign``. Lanes hitting one address are serialised in lane order: for multiplicity ``m`` the
    ``k``-th lane sees the value after the first ``k - 1`` updates. Vectorised: groups of equal
    address are bucketed by ``floor(log2(m))`` and each bucket is one 2-D ``ufunc.accumulate``.
    """
    n = addr.size
    if n == 0:
        return vals[:0].copy()
    order = np.argsort(addr, kind="stable")
    sa = addr[order]
    sv = vals[order]
    newg = np.empty(n, dtype=np.bool_)
    newg[0] = True
    np.not_equal(sa[1:], sa[:-1], out=newg[1:])
    starts = np.flatnonzero(newg)
    ng = starts.size
    if ng == n:  # all addresses distinct
        old = data[addr]
        data[addr] = vals if fn is None else fn(old, vals)
        return old
    counts = np.diff(np.append(starts, n))
    gid = np.cumsum(newg) - 1
    rank = np.arange(n) - starts[gid]
    uaddr = sa[starts]
    init = data[uaddr]
    old_sorted = np.empty(n, dtype=data.dtype)
    if fn is None:
        prev = np.empty_like(sv)
        prev[1:] = sv[:-1]
        old_sorted[:] = np.where(rank == 0, init[gid], prev)
        final = sv[starts + counts - 1]
    else:
        final = np.empty(ng, dtype=data.dtype)
        bucket = np.floor(np.log2(counts)).astype(np.int64)
        lane_bucket = bucket[gid]
        row_of = np.empty(ng, dtype=np.int64)
        for b in np.unique(bucket):
            gsel = np.flatnonzero(bucket == b)
            width = 1 << (int(b) + 1)
            row_of[gsel] = np.arange(gsel.size)
            mat = np.zeros((gsel.size, width), dtype=data.dtype)
            mat[:, 0] = init[gsel]
            lsel = np.flatnonzero(lane_bucket == b)
            rows = row_of[gid[lsel]]
            cols = rank[lsel] + 1
            mat[rows, cols] = sv[lsel]
            acc = fn.accumulate(mat, axis=1, dtype=data.dtype)
            old_sorted[lsel] = acc[rows, cols - 1]
            final[gsel] = acc[np.arange(gsel.size), counts[gsel]]
    data[uaddr] = final
    old = np.empty(n, dtype=data.dtype)
    old[order] = old_sorted
    return old


# arith::AtomicRMWKind enum values -> (name, ufunc or None for assign, view: "s" | "u" | "f" | "k":
# floats through order-preserving integer keys, _minmax_f)
_ATOMIC_KINDS = {
    0: ("addf", np.add, "f"), 1: ("addi", np.add, "s"), 2: ("andi", np.bitwise_and, "s"),
    3: ("assign", None, "s"), 4: ("maximumf", np.maximum, "k"), 5: ("maxnumf", np.fmax, "f"),
    6: ("maxs", np.maximum, "s"), 7: ("maxu", np.maximum, "u"), 8: ("minimumf", np.minimum, "k"),
    9: ("minnumf", np.fmin, "f"), 10: ("mins", np.minimum, "s"), 11: ("minu", np.minimum, "u"),
    12: ("mulf", np.multiply, "f"), 13: ("muli", np.multiply, "s"), 14: ("ori", np.bitwise_or, "s"),
    15: ("xori", np.bitwise_xor, "s"),
}


def _float_key(x: np.ndarray, nan_key: str) -> np.ndarray:
    """IEEE 754 floats (any width, ``bfloat16`` too) as signed integers of the same width in the
    order of the floats, ``-0.0`` below ``+0.0``; every NaN becomes the ``nan_key`` (``"max"`` or
    ``"min"``) end of the integer range. The key of a non-NaN is its bits with the non-sign bits
    flipped when the sign is set (an involution: :func:`_float_of_key` undoes it)."""
    sdt = np.dtype(f"i{x.dtype.itemsize}")
    s = x.view(sdt)
    key = np.where(s < 0, s ^ np.iinfo(sdt).max, s).astype(sdt)
    ext = np.iinfo(sdt).max if nan_key == "max" else np.iinfo(sdt).min
    key[x != x] = ext
    return key


def _float_of_key(key: np.ndarray, dtype) -> np.ndarray:
    """The floats of :func:`_float_key` keys (the ends of the range: a quiet NaN)."""
    info = np.iinfo(key.dtype)
    out = np.where(key < 0, key ^ info.max, key).astype(key.dtype).view(dtype).copy()
    out[(key == info.max) | (key == info.min)] = np.nan
    return out


def _minmax_f(data: np.ndarray, addr: np.ndarray, vals: np.ndarray, fn, fold: bool):
    """``minimumf``/``maximumf`` (IEEE 754-2019 ``minimum``/``maximum``, LLVM's ``fminimum``/
    ``fmaximum``: a NaN operand gives NaN, ``-0.0 < +0.0``) of the lanes' values into ``data`` in
    lane order: the same integer ``fn`` on order-preserving keys (:func:`_float_key`, NaN at the end
    that wins), so signed zeros and NaNs come out as on the GPU; the old values, or ``None`` when
    ``fold``."""
    side = "max" if fn is np.maximum else "min"
    ua, pos = np.unique(addr, return_inverse=True)
    keys = _float_key(data[ua], side)
    vk = _float_key(np.asarray(vals, dtype=data.dtype), side)
    if fold:
        fn.at(keys, pos, vk)
        old = None
    else:
        old = _float_of_key(_atomic_apply(keys, pos, vk, fn), data.dtype)
    data[ua] = _float_of_key(keys, data.dtype)
    return old


# ------------------------------------------------------------------------------------------------
# handlers


def _dim(tr, o):
    s = str(o.attributes["dimension"])  # "#gpu<dim x>"
    d = s.strip().rstrip(">").split()[-1]
    if d not in ("x", "y", "z"):
        tr.unsupported(o, f"{o.name} dimension {s}")
    return d


@handles("gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim", "gpu.lane_id",
          "gpu.global_id", "gpu.subgroup_size")
def _gpu_id(tr, o):
    name = o.name
    r = tr.define(o.results[0])
    d = "x" if name in ("gpu.lane_id", "gpu.subgroup_size") else _dim(tr, o)
    if d != "x" or name in ("gpu.block_dim", "gpu.grid_dim", "gpu.subgroup_size"):
        affine.define(tr, r)  # uniform
    elif name in ("gpu.thread_id", "gpu.block_id"):
        affine.define(tr, r, *((0, 1) if name == "gpu.thread_id" else (1, 0)))
    if name in ("gpu.thread_id", "gpu.lane_id"):
        tr.periodic.add(r)
    if d != "x":
        v = np.int64(1) if name in ("gpu.block_dim", "gpu.grid_dim") else np.int64(0)

        def f(fr, mask):
            fr.env[r] = v
    elif name == "gpu.thread_id":
        def f(fr, mask):
            fr.env[r] = fr.tid
    elif name == "gpu.block_id":
        def f(fr, mask):
            fr.env[r] = fr.bid
    elif name == "gpu.block_dim":
        def f(fr, mask):
            fr.env[r] = np.int64(fr.B)
    elif name == "gpu.grid_dim":
        def f(fr, mask):
            fr.env[r] = np.int64(fr.grid)
    elif name == "gpu.lane_id":
        def f(fr, mask):
            fr.env[r] = fr.lane_in_warp
    elif name == "gpu.global_id":
        def f(fr, mask):
            fr.env[r] = fr.bid * np.int64(fr.B) + fr.tid
    elif name == "gpu.subgroup_size":
        def f(fr, mask):
            fr.env[r] = np.int64(WARP_SIZE)
    else:
        tr.unsupported(o)
    return f


@handles("llvm.fence")
def _fence(tr, o):
    """``llvm.fence``: a no-op here -- every store is visible to every later op, since the
    interpreter runs blocks in order (batches in sequence, lanes of a batch in lockstep)."""
    return lambda fr, mask: None


@handles("gpu.barrier")
def _barrier(tr, o):
    def f(fr, mask):
        if mask is fr.full:
            for buf in fr.shadows:  # a new barrier interval: the race check starts afresh
                buf.shadow.reset()
            return
        counts = mask.reshape(fr.nb, fr.B).sum(axis=1)
        bad = (counts != 0) & (counts != fr.B)
        if bad.any():
            k = int(np.argmax(bad))
            raise KerncRuntimeError(
                f"barrier in divergent control flow: in block {fr.first_block + k}, "
                f"{int(counts[k])} of {fr.B} threads reached gpu.barrier (at {loc}) and the "
                "others did not (a barrier must be reached by all threads of a block or none)")
        rows = np.flatnonzero(counts)
        for buf in fr.shadows:
            buf.shadow.reset(rows)
    loc = str(o.location)
    return f


def _shuffle_lanes(fr, mode: str, b, w):
    """``(src, valid)`` of ``gpu.shuffle`` ``mode`` with offset ``b`` (already ``& 31``) and width
    ``w`` (scalars or lane arrays): the lane each lane reads, and whether that read is valid (the
    source lane is in the width and in the block; an invalid read returns the lane's own value)."""
    lane = fr.lane_in_warp
    if mode == "xor":
        j = lane ^ b
        valid = j <= w - 1
    elif mode == "down":
        j = lane + b
        valid = j <= w - 1
    elif mode == "up":
        j = lane - b
        valid = j >= WARP_SIZE - w
    else:
        j = np.broadcast_to(b, lane.shape)
        valid = j <= w - 1
    valid = valid & (j >= 0) & (j < WARP_SIZE)
    src_tid = fr.tid - lane + j
    valid = valid & (src_tid < fr.B)
    return np.where(valid, fr.lane - lane + j, fr.lane), valid


def _check_converged(fr, mask, w, loc) -> None:
    """``shfl.sync``: every lane of the member mask (lanes below the width ``w``) of a warp that
    executes the shuffle must execute it together; raise ``KerncRuntimeError`` otherwise."""
    lane = fr.lane_in_warp
    if type(w) is not np.ndarray and fr.L == fr.nwarps * WARP_SIZE:  # whole warps: rows of the mask
        rows = mask.reshape(fr.nwarps, WARP_SIZE)
        below = rows[:, :max(0, min(int(w), WARP_SIZE))]
        if not bool((rows.any(axis=1) & ~below.all(axis=1)).any()):
            return
    warp_active = np.bincount(fr.warp, weights=mask, minlength=fr.nwarps) > 0
    missing = ~mask & warp_active[fr.warp] & (lane < w)
    if missing.any():
        k = int(np.argmax(missing))
        raise KerncRuntimeError(
            f"gpu.shuffle in divergent control flow (at {loc}): thread {fr.thread_id(k)} "
            f"(lane {int(lane[k])} of its warp) did not reach the shuffle that other lanes of "
            "its warp executed; all lanes below the shuffle width must take part")


@handles("gpu.shuffle")
def _shuffle(tr, o):
    """``gpu.shuffle``. With a uniform offset and width (a reduction's butterfly) the source lanes
    and the validity of a batch layout are computed once and kept with the layout's lane arrays,
    so a shuffle is one gather."""
    mode = str(o.attributes["mode"]).strip().rstrip(">").split()[-1]
    if mode not in ("xor", "down", "up", "idx"):
        tr.unsupported(o, f"gpu.shuffle mode {mode}")
    v, off, wd = (tr.use(x) for x in o.operands)
    r0, r1 = tr.define(o.results[0]), tr.define(o.results[1])
    loc = str(o.location)

    def f(fr, mask):
        env = fr.env
        b, w = env[off], env[wd]
        if type(b) is not np.ndarray and type(w) is not np.ndarray:
            key = ("shuffle", mode, int(b) & 31, int(w))
            lanes = fr.tables.get(key)
            if lanes is None:
                lanes = fr.tables[key] = _shuffle_lanes(fr, mode, np.int64(key[2]), np.int64(key[3]))
                for a in lanes:
                    a.flags.writeable = False  # shared by every frame of this layout
            src, valid = lanes
            w = np.int64(key[3])
        else:
            b = np.asarray(b).astype(np.int64) & 31
            w = np.asarray(w).astype(np.int64)
            src, valid = _shuffle_lanes(fr, mode, b, w)
        if mask is not fr.full:
            _check_converged(fr, mask, w, loc)
        val = env[v]
        env[r0] = val[src] if type(val) is np.ndarray else val
        env[r1] = valid
    return f


@handles("memref.atomic_rmw")
def _atomic(tr, o):
    kattr = o.attributes["kind"]
    try:
        kname, fn, view = _ATOMIC_KINDS[int(kattr.value)]
    except (AttributeError, KeyError, ValueError):
        tr.unsupported(o, f"memref.atomic_rmw kind {kattr}")
    v = tr.use(o.operands[0])
    m = tr.use(o.operands[1])
    tr.written.add(m)
    idx = [tr.use(x) for x in o.operands[2:]]
    ty = tr.ty(o.results[0].type, o)
    zero = ty.zero()
    # nobody reads the old values (an accumulation): the updates are applied in lane order by
    # ufunc.at, which computes data[a] = fn(data[a], v) one lane after the other like the GPU's
    # serialised atomics, without the sort that returning the old values needs
    fold = fn is not None and not any(True for _ in o.results[0].uses)
    r = tr.define(o.results[0])
    loc = str(o.location)
    if ty.bits == 1 and view not in ("f", "k"):
        tr.unsupported(o, "memref.atomic_rmw on i1")

    def f(fr, mask):
        env = fr.env
        buf = env[m]
        act, rel = _access(fr, mask, buf, [env[i] for i in idx], "atomic", loc)
        if act is not None and act.size == 0:
            env[r] = zero
            return
        if fr.collect:
            _count(fr, buf, act, rel, "atomic")
        n = fr.L if act is None else act.size
        addr = np.broadcast_to(_addr(fr, buf, act, rel), (n,)).astype(np.int64, copy=False)
        val = env[v]
        if type(val) is np.ndarray:
            if act is not None:
                val = val[act]
        else:
            val = np.full(n, val, dtype=ty.dtype)
        data = buf.data
        if view == "k":
            old = _minmax_f(data, addr, val, fn, fold)
            if fold:
                env[r] = zero
                return
        elif fold:
            if view == "u":
                fn.at(data.view(ty.udtype), addr, val.view(ty.udtype))
            else:
                fn.at(data, addr, val)
            env[r] = zero
            return
        if view == "k":
            pass
        elif view == "u":
            old = _atomic_apply(data.view(ty.udtype), addr, val.view(ty.udtype), fn).view(ty.dtype)
        else:
            old = _atomic_apply(data, addr, val, fn)
        if act is None:
            env[r] = old
        else:
            out = np.zeros(fr.L, dtype=ty.dtype)
            out[act] = old
            env[r] = out
    return f


@handles("gpu.dynamic_shared_memory")
def _dynamic_shared_memory(tr, o):
    """``gpu.dynamic_shared_memory``: the block's dynamic workgroup memory (``memref<?xi8>``); its only
    use the interpreter runs is a ``memref.view`` of it (:func:`.memory._view`)."""
    r = tr.define(o.results[0])
    for use in o.results[0].uses:
        if use.owner.name != "memref.view":
            tr.unsupported(use.owner, f"{use.owner.name} of gpu.dynamic_shared_memory (only memref.view)")

    def f(fr, mask):
        fr.env[r] = _Dynamic(fr.dynamic_bytes)
    return f
