"""Memory: loads, stores and private allocations of global, workgroup and private memrefs, with
every active lane's index bounds-checked and several lanes storing to one address in one step
reported as a data race; so is, in workgroup memory, an address that two threads of a block touch
between two barriers, at least one of them storing (:func:`_track`: a missing ``gpu.barrier``).
Workgroup memory is a ``gpu.func``'s attributions and the views of its dynamic workgroup memory
(``gpu.dynamic_shared_memory`` + ``memref.view``, :func:`_view`), checked and counted alike."""

from __future__ import annotations

import numpy as np

from kernc.support.errors import KerncRuntimeError
from kernc.support.mlir import ir

from . import affine
from .errors import InterpreterUnsupportedError
from .frame import SITES, _Buf, _empty_alloc, _Frame, _Shadow, site
from .traffic import _count, _count_masked, _count_periodic, _count_run
from .translate import handles
from .types import _MemTy


def _access(fr: _Frame, mask, buf: _Buf, idxs, what: str, loc: str | None = None):
    """Active lanes and indices of a memory access; raises on an out-of-bounds active lane (naming
    the access's source location ``loc``, the op's, where given).

    Returns ``(act, rel)``: ``act`` is ``None`` (every lane active), or an int64 array of active
    lanes (possibly empty); ``rel`` the element offsets inside the instance, a scalar (uniform) or
    an array aligned with ``act`` (or with all lanes when ``act`` is ``None``).
    """
    if mask is fr.full:
        act = None
    else:
        act = np.flatnonzero(mask)
        if act.size == 0:
            return act, None
    sel = []
    for i in idxs:
        if type(i) is np.ndarray and act is not None:
            i = i[act]
        sel.append(i)
    if len(sel) == 1:
        rel = sel[0]
        if type(rel) is np.ndarray:
            if rel.dtype == np.int64:  # one pass: a negative index is a huge unsigned one
                bad = rel.size and rel.view(np.uint64).max() >= buf.size
            else:
                bad = rel.size and (int(rel.min()) < 0 or int(rel.max()) >= buf.size)
            if bad:
                k = int(np.argmax((rel < 0) | (rel >= buf.size)))
                _oob(fr, buf, what, k if act is None else act[k], int(rel[k]), loc)
        elif rel < 0 or rel >= buf.size:
            _oob(fr, buf, what, 0 if act is None else act[0], int(rel), loc)
    else:
        bad = np.zeros((), dtype=np.bool_)
        for d, i in zip(buf.dims, sel):
            bad = bad | (i < 0) | (i >= d)
        if bad.any():
            k = int(np.argmax(bad)) if bad.ndim else 0
            lane = k if act is None else act[k]
            index = tuple(int(i[k]) if type(i) is np.ndarray else int(i) for i in sel)
            _oob(fr, buf, what, lane, index, loc)
        rel = 0
        for st, i in zip(buf.strides, sel):
            rel = rel + i * st
    return act, rel


def _check_store_race(fr, buf, act, addr, rel, val) -> None:
    """Several lanes storing to one address in one step is a data race (the GPU keeps an unspecified
    value, and a read-modify-write loses updates): raise ``KerncRuntimeError`` naming the buffer, two
    threads and the index. This catches, e.g., duplicate indices in ``write/add indexed(I)`` (use
    ``atomic(I)`` or ``shared_sum(I)`` to accumulate)."""
    if type(addr) is not np.ndarray:
        lanes = fr.lane if act is None else act
        if lanes.size > 1 and (type(val) is np.ndarray or act is None or act.size > 1):
            _race(fr, buf, lanes[0], lanes[1], rel if type(rel) is not np.ndarray else rel[0])
        return
    if addr.size < 2:
        return
    if bool((addr[1:] > addr[:-1]).all()):
        return  # increasing (the common case): distinct, no sort needed
    # int32 sorts twice as fast as int64; buffers below 2^31 elements hold every index in it
    sa = np.sort(addr.astype(np.int32) if buf.data.size < 1 << 31 else addr)
    if not bool((sa[1:] == sa[:-1]).any()):
        return
    lanes = fr.lane if act is None else act
    order = np.argsort(addr, kind="stable")  # the race to report: the smallest index, in lane order
    sa = addr[order]
    dup = np.flatnonzero(sa[1:] == sa[:-1])
    if dup.size:
        k = int(dup[0])
        index = rel[order[k]] if type(rel) is np.ndarray else rel
        _race(fr, buf, lanes[order[k]], lanes[order[k + 1]], index)


def _race(fr, buf, lane_a, lane_b, index):
    raise KerncRuntimeError(
        f"data race on {buf.describe()}: threads {fr.thread_id(int(lane_a))} and "
        f"{fr.thread_id(int(lane_b))} both store to index {int(index)} in the same step "
        f"(indexed/strided writes need distinct targets; use atomic(I) or shared_sum(I) to accumulate)"
    )


def _track(fr, buf: _Buf, mask, rel, store: bool, loc: str, periodic: bool, width: int = 1,
           sid: int | None = None, sub=None, group: int = 1) -> None:
    """The barrier-interval race check of a workgroup access (after it passed its bounds check):
    raise ``KerncRuntimeError`` when a thread loads an address another thread of its block stored to
    since the last barrier (read after write), or stores to one another thread stored to or loaded
    (write after write, write after read); else record the access in ``buf.shadow``
    (:class:`~.frame._Shadow`). ``rel``: each lane's first element offset (in its block's array);
    the lane accesses ``width`` consecutive elements from it (a ``vector.load``, an ``ldmatrix``
    row). ``periodic``: the index is known to be the same function of the thread id in every block
    (:func:`.affine.note_pure`; else the uniform mode compares the blocks' indices). ``sid``: the
    op's site (:func:`.frame.site`; default that of ``loc``). ``sub``: ``None``, or a bool array
    of ``B``: the threads of each block (of those in ``mask``) that access. ``group``: a load whose
    data every thread of the thread's aligned ``group`` (a warp: ``nvgpu.ldmatrix``) receives, so a
    store by any thread since the last barrier, or before the next, races with it. The accesses of one step are a
    thread's own (a same-step store race is :func:`_check_store_race`'s). On a GPU these orders are
    undefined without ``__syncthreads()`` between them (CUDA C++ Programming Guide, "Shared Memory")."""
    sh = buf.shadow
    B = fr.B
    if sh.uniform:
        if mask is fr.full and (periodic or type(rel) is not np.ndarray or fr.nb == 1
                                or bool((rel.reshape(fr.nb, B) == rel[:B]).all())):
            tid = fr.tables.get("tid32")
            if tid is None:
                tid = fr.tables["tid32"] = fr.tid[:B].astype(np.int32)
            addr = rel[:B].copy() if type(rel) is np.ndarray else np.full(B, rel, np.int64)
            if sub is not None:
                tid, addr = tid[sub], addr[sub]
            first = fr.first_block
        else:
            sh.spread()
    if not sh.uniform:
        if sub is not None:
            mask = np.tile(sub, fr.nb) if mask is fr.full else mask & np.tile(sub, fr.nb)
        if mask is fr.full:
            tid, addr = fr.tid.astype(np.int32), buf.base + rel
        else:
            act = np.flatnonzero(mask)
            if not act.size:
                return
            tid = fr.tid[act].astype(np.int32)
            addr = buf.base[act] + (rel[act] if type(rel) is np.ndarray else rel)
        first = None
    if width > 1:
        addr = (addr[:, None] + np.arange(width)).reshape(-1)
        tid = np.repeat(tid, width)
    _track_at(fr, buf, tid, addr, first, store, loc, site(loc) if sid is None else sid, group=group)


def _track_at(fr, buf: _Buf, tid, addr, first, store: bool, loc: str, sid: int, who=None,
              group: int = 1) -> None:
    """:func:`_track` of the accesses by threads ``tid`` (int32, ids in their block) of the
    addresses ``addr`` of ``buf.shadow``'s arrays (block 0's array when ``first`` is the batch's
    first block: the uniform mode; else flat, as ``buf.data``). ``who``: a description of the
    accessing threads for the report (default ``thread <tid>``); ``group``: as :func:`_track`'s."""
    sh = buf.shadow
    does = "stores to" if store else "loads"
    if sh.writes:
        w = sh.writer[addr]
        bad = (w >= 0) & (w != tid) if group == 1 else w >= 0
        if bad.any():
            k = int(np.argmax(bad))
            if who is None:
                lo = int(tid[k]) // group * group
                who = f"thread {lo}" if group == 1 else f"the warp of threads {lo}-{lo + group - 1}"
            _interval_race(fr, buf, first, addr[k], f"thread {int(w[k])}", "stored to",
                           SITES[int(sh.wsite[addr[k]])], who, does, loc)
    if not store:
        if group == 1:
            sh.log.append((addr, tid, sid))
        else:  # as loaded by the group's first and last thread: a store by any thread races
            lo = tid // group * group
            sh.log.append((addr, lo, sid))
            sh.log.append((addr, lo + (group - 1), sid))
        return
    sh.fold()
    lo, hi = sh.rlo[addr], sh.rhi[addr]
    bad = (hi >= 0) & ((lo != tid) | (hi != tid))
    if bad.any():
        k = int(np.argmax(bad))
        other = int(lo[k]) if lo[k] != tid[k] else int(hi[k])
        _interval_race(fr, buf, first, addr[k], f"thread {other}", "loaded", SITES[int(sh.rsite[addr[k]])],
                       who or f"thread {int(tid[k])}", does, loc)
    sh.writer[addr] = tid
    sh.wsite[addr] = sid
    sh.writes = True


def _interval_race(fr, buf, first, addr, a: str, did_a: str, loc_a: str, b: str, does_b: str, loc: str):
    """Report the race of ``b``'s access at ``loc`` with ``a``'s earlier one at ``loc_a``."""
    block = first if first is not None else fr.first_block + int(addr) // buf.size
    noun = "store" if did_a == "stored to" else "load"
    raise KerncRuntimeError(
        f"data race on {buf.describe()} (workgroup memory of block {block}): {a} {did_a} index "
        f"{int(addr) % buf.size} and {b} {does_b} it with no gpu.barrier between them (at {loc}; the "
        f"{noun} by {a} at {loc_a}; threads of a block see each other's workgroup stores only after a barrier)")


def _oob(fr, buf, what, lane, index, loc: str | None = None):
    verb = {"load": ("load from", "read"), "store": ("store to", "wrote"),
            "atomic": ("atomic_rmw on", "accessed")}[what]
    if isinstance(index, tuple):
        shape = f"has shape {buf.dims}"
    else:
        shape = f"has {buf.size} elements"
    where = ""
    if buf.kind == "workgroup":
        where = f" (workgroup memory of block {fr.first_block + int(lane) // fr.B})"
    raise KerncRuntimeError(
        f"out-of-bounds {verb[0]} {buf.describe()}{where}: thread {fr.thread_id(lane)} {verb[1]} "
        f"index {index}, buffer {shape}" + (f" (at {loc})" if loc else ""))


def _lane_view(fr: _Frame, buf: _Buf, lin, rel):
    """For an access by every lane of the batch with the 1-D index ``rel`` (coefficients ``lin``,
    see :mod:`.affine`), ``(view, stride)``: a strided view of ``buf.data`` whose element ``l``
    (row-major) is the one lane ``l`` accesses, in bounds for every lane; ``None`` when the access
    is not such a run (a gather, or a lane out of bounds: the general path reports it).

    Loads then copy the view and stores assign to it: about 5x cheaper than a gather, and no race
    check is needed, since every lane has its own element."""
    if buf.kind == "private":  # lane l's array is data[l*size : (l+1)*size]
        if type(rel) is np.ndarray or not 0 <= rel < buf.size:
            return None
        return buf.data[int(rel)::buf.size], 0
    if buf.kind == "global":
        ct = affine.lane_stride(fr, lin, rel)
        if ct is None:
            return None
        start = int(rel[0])
        last = start + ct * (fr.L - 1)
        if start < 0 or last >= buf.size:
            return None
        return buf.data[start:last + 1:ct], ct
    ct = affine.block_stride(fr, lin, rel)  # workgroup memory: block b's array is data[b*size:]
    if ct is None:
        return None
    u = int(rel[0])
    last = u + ct * (fr.B - 1)
    if u < 0 or last >= buf.size:
        return None
    return buf.data.reshape(fr.nb, buf.size)[:, u:last + 1:ct], ct


def _per_block(fr: _Frame, buf: _Buf, rel):
    """For an access of workgroup memory by every lane at a block-periodic index ``rel`` (the same
    function of the thread in every block, see :func:`.affine.note_pure`): the first block's
    indices, in bounds, and the ``(blocks, size)`` view of the memory; ``None`` when an index is
    out of bounds (the general path reports it). Every block then does what the first does: one
    ``take`` along the rows, and the first block's race check and bank conflicts."""
    if buf.kind != "workgroup" or type(rel) is not np.ndarray or rel.shape[0] != fr.L:
        return None
    g = rel[:fr.B]
    if g.dtype != np.int64 or g.view(np.uint64).max() >= buf.size:  # (negative: huge unsigned)
        return None
    return g, buf.data.reshape(fr.nb, buf.size)


def _count_view(fr: _Frame, buf: _Buf, ct: int, rel, kind: str) -> None:
    """The statistics of an access :func:`_lane_view` serves."""
    if buf.kind == "private":
        return
    if ct == 1:
        _count_run(fr, buf, int(rel[0]), kind)
    else:
        _count(fr, buf, None, rel, kind)


#: a load under a mask gathers with every lane when at least 1/_DENSE of the lanes are active
_DENSE = 4


def _dense_load(fr: _Frame, mask, buf: _Buf, rel, zero, loc: str | None = None):
    """A gather by the lanes of ``mask`` (most lanes) with index ``rel`` (int64, every lane) done by
    every lane, the inactive ones reading element 0 of their instance: cheaper than gathering the
    active lanes' indices and scattering the values back. Inactive lanes of the result hold 0."""
    safe = np.where(mask, rel, 0)
    if safe.view(np.uint64).max() >= buf.size:  # (a negative index is a huge unsigned one)
        k = int(np.argmax(mask & ((rel < 0) | (rel >= buf.size))))
        _oob(fr, buf, "load", k, int(rel[k]), loc)
    if fr.collect:
        _count_masked(fr, buf, mask, safe, "load")
    addr = safe if buf.base is None else buf.base + safe
    out = np.take(buf.data, addr, out=fr.pool.take(buf.data.dtype, fr.L), mode="clip")  # (in bounds)
    np.putmask(out, ~mask, zero)
    return out


def _addr(fr, buf, act, rel):
    """Flat addresses into ``buf.data`` of the accessed lanes (an array, or a scalar if uniform)."""
    if buf.base is None:
        return rel
    base = buf.base if act is None else buf.base[act]
    return base + rel


# ------------------------------------------------------------------------------------------------
# handlers


@handles("memref.load")
def _load(tr, o):
    f = _load_untracked(tr, o)
    return _tracked(tr, o, f, o.operands[0], o.operands[1:], False)


def _tracked(tr, o, f, mem, idxs, store: bool):
    """``f`` (a load or store handler), followed by the barrier-interval race check
    (:func:`_track`) when ``mem`` is workgroup memory (and, for a global store, the check that no
    ``cp.async`` in flight reads the address: :func:`check_source_store`)."""
    check = access_check(tr, o, mem, idxs, store)
    if check is None:
        return _source_checked(tr, o, f, mem, idxs) if store else f

    def tracked(fr, mask):
        f(fr, mask)
        check(fr, mask)
    return tracked


def access_check(tr, o, mem, idxs, store: bool, width: int = 1, lanes=None, group: int = 1):
    """The race checks of an op ``o`` that loads or stores (``store``) ``width`` consecutive
    elements of workgroup memref ``mem`` per lane from index ``idxs`` (SSA values): a function
    ``check(fr, mask)`` to call after the access passed its bounds check, or ``None`` when ``mem``
    is not workgroup memory. It raises ``KerncRuntimeError`` when the access touches an element a
    TMA copy wrote that the thread did not wait for (:mod:`.tma`), a ``cp.async`` has in flight
    (:func:`_check_pending`), or another thread accessed since the last barrier
    (:func:`_track`). ``lanes``: ``None`` (every lane of the mask accesses), or a function
    ``fr -> bool array of B``: the threads of each block that access (``nvgpu.ldmatrix``: the lanes
    that give row addresses). ``group``: as :func:`_track`'s."""
    if _MemTy(mem.type).space != "workgroup":
        return None
    m = tr.use(mem)
    idx = [tr.use(v) for v in idxs]
    loc = str(o.location)
    sid = site(loc)
    lin = affine.coefficients(tr, idx[0]) if len(idx) == 1 else None
    periodic = len(idx) == 1 and (idx[0] in tr.periodic or (lin is not None and lin[0] == 0))

    def check(fr, mask):
        buf = fr.env[m]
        tma = fr.memo.get("tma")  # TMA copies in flight (tma.py): is this a read before the wait?
        if buf.shadow is None and tma is None:
            return
        sub = None if lanes is None else lanes(fr)
        if len(idx) == 1:
            rel = fr.env[idx[0]]
        else:
            rel = 0
            for st, i in zip(buf.strides, idx):
                rel = rel + fr.env[i] * st
        if tma is not None or (buf.shadow is not None and buf.shadow.npending):
            some = mask if sub is None else (np.tile(sub, fr.nb) if mask is fr.full else mask & np.tile(sub, fr.nb))
            for c in range(width):
                if tma is not None:
                    tma.check(fr, buf, some, rel + c, store, loc)
                if buf.shadow is not None and buf.shadow.npending:
                    _check_pending(fr, buf, some, rel + c, store, loc)
        if buf.shadow is not None:
            _track(fr, buf, mask, rel, store, loc, periodic, width, sid, sub, group)
    return check


def _source_checked(tr, o, f, mem, idxs):
    """``f``, a store handler to global memref ``mem``, followed by the check that no ``cp.async``
    in flight reads what it stores (:func:`check_source_store`; only while a copy of
    the batch is in flight)."""
    m = tr.use(mem)
    idx = [tr.use(v) for v in idxs]
    loc = str(o.location)

    def checked(fr, mask):
        f(fr, mask)
        if fr.copies is not None and fr.copies.entries:
            buf = fr.env[m]
            rel = 0
            if len(idx) == 1:
                rel = fr.env[idx[0]]
            else:
                for st, i in zip(buf.strides, idx):
                    rel = rel + fr.env[i] * st
            check_source_store(fr, buf, mask, rel, 1, loc)
    return checked


def check_source_store(fr, buf, mask, rel, width: int, loc: str) -> None:
    """A store by the lanes of ``mask`` to ``width`` consecutive elements from index ``rel`` (every
    lane's, or a scalar) of ``buf`` (global memory), some of which a ``cp.async`` in flight reads:
    raise ``KerncRuntimeError`` naming both ops (PTX ISA 9.7.9.25.3: the copy's source is read at an
    unspecified time before the wait that retires it). The copies are ``fr.copies``
    (:class:`.async_copy._Copies`: each entry's ``[6]`` its source buffer, ``[7]`` the flat
    source indices in flight)."""
    c = fr.copies
    act = fr.lane if mask is fr.full else np.flatnonzero(mask)
    if c is None or not act.size:
        return
    r = rel[act] if type(rel) is np.ndarray else np.full(act.size, rel, np.int64)
    addr = (np.asarray(r, np.int64)[:, None] + np.arange(width)).reshape(-1)
    for e in c.entries:
        if e[6] is not buf:
            continue
        hit = np.isin(addr, e[7][e[7] >= 0])
        if hit.any():
            k = int(np.argmax(hit))
            raise KerncRuntimeError(
                f"data race on {buf.describe()}: thread {fr.thread_id(int(act[k // width]))} stores to index "
                f"{int(addr[k])} (at {loc}) while the cp.async (nvgpu.device_async_copy at {e[5]}) that reads "
                "it is in flight: the copy may read the old or the new value (no nvgpu.device_async_wait "
                "has retired its group)")


def _check_pending(fr, buf: _Buf, mask, rel, store: bool, loc: str) -> None:
    """A load or store of a workgroup address a ``cp.async`` has in flight (``_Shadow.pending``,
    :mod:`.async_copy`): raise ``KerncRuntimeError``. Its data is in workgroup memory only once an
    ``nvgpu.device_async_wait`` of the copying thread retires its group (PTX ISA 9.7.9.25.3.3),
    and seen by other threads only after a barrier that follows that wait."""
    sh = buf.shadow
    act = np.flatnonzero(mask) if mask is not fr.full else fr.lane
    if not act.size:
        return
    r = rel[act] if type(rel) is np.ndarray else rel
    if type(r) is np.ndarray:  # (the indices in flight lie in [pending_lo, pending_hi])
        if int(r.max()) < sh.pending_lo or int(r.min()) > sh.pending_hi:
            return
    elif not sh.pending_lo <= r <= sh.pending_hi:
        return
    busy = buf.shadow.pending[buf.base[act] + r] > 0
    if busy.any():
        k = int(np.argmax(busy))
        lane = int(act[k])
        index = int(r[k]) if type(r) is np.ndarray else int(r)
        raise KerncRuntimeError(
            f"data race on {buf.describe()} (workgroup memory of block {fr.first_block + lane // fr.B}): "
            f"thread {fr.thread_id(lane)} {'stores to' if store else 'loads'} index {index} (at {loc}) while a "
            f"cp.async to it (nvgpu.device_async_copy at {buf.shadow.pending_loc}) is in flight: no "
            "nvgpu.device_async_wait (cp.async.wait_group) has retired its group (and other threads see "
            "the copy only after a gpu.barrier following that wait)")


def _load_untracked(tr, o):
    m = tr.use(o.operands[0])
    idx = [tr.use(v) for v in o.operands[1:]]
    ty = tr.ty(o.results[0].type, o)
    zero = ty.zero()
    r = tr.define(o.results[0])
    loc = str(o.location)
    runs = len(idx) == 1  # a 1-D access may be a strided run of the lanes (_lane_view)
    lin = affine.coefficients(tr, idx[0]) if runs else None
    periodic = runs and idx[0] in tr.periodic

    def f(fr, mask):
        env = fr.env
        buf = env[m]
        if runs:
            rel = env[idx[0]]
            if periodic and mask is fr.full:
                blocks = _per_block(fr, buf, rel)
                if blocks is not None:
                    g, rows = blocks
                    if fr.collect:
                        _count_periodic(fr, buf, g, "load")
                    out = fr.pool.take(rows.dtype, fr.L)
                    np.take(rows, g, axis=1, out=out.reshape(fr.nb, fr.B), mode="clip")  # (in bounds)
                    env[r] = out
                    return
            run = _lane_view(fr, buf, lin, rel)
            if run is not None:
                if mask is fr.full:
                    if fr.collect:
                        _count_view(fr, buf, run[1], rel, "load")
                    view = run[0]  # copied: later stores must not change the value
                    out = fr.pool.take(view.dtype, fr.L)
                    np.copyto(out.reshape(view.shape), view)
                    env[r] = out
                elif mask.any():
                    if fr.collect and buf.kind != "private":
                        _count_masked(fr, buf, mask, rel, "load")
                    env[r] = np.where(mask, run[0].reshape(-1), zero)  # inactive lanes: 0, as below
                else:
                    env[r] = zero
                return
            if mask is not fr.full and type(rel) is np.ndarray and rel.dtype == np.int64:
                nact = int(np.count_nonzero(mask))
                if nact * _DENSE >= fr.L:  # mostly active: every lane gathers (the inactive ones element 0)
                    env[r] = _dense_load(fr, mask, buf, rel, zero, loc)
                    return
        act, rel = _access(fr, mask, buf, [env[i] for i in idx], "load", loc)
        if act is not None and act.size == 0:
            env[r] = zero
            return
        if fr.collect:
            _count(fr, buf, act, rel, "load")
        addr = _addr(fr, buf, act, rel)
        if type(addr) is not np.ndarray:
            env[r] = buf.data[addr]
            return
        if act is None:
            env[r] = np.take(buf.data, addr, out=fr.pool.take(buf.data.dtype, fr.L), mode="clip")  # (in bounds)
            return
        out = np.zeros(fr.L, dtype=buf.data.dtype)
        out[act] = buf.data[addr]
        env[r] = out
    return f


@handles("memref.store")
def _store(tr, o):
    return _tracked(tr, o, _store_untracked(tr, o), o.operands[1], o.operands[2:], True)


def _store_untracked(tr, o):
    v = tr.use(o.operands[0])
    m = tr.use(o.operands[1])
    tr.written.add(m)
    idx = [tr.use(x) for x in o.operands[2:]]
    loc = str(o.location)
    runs = len(idx) == 1  # a 1-D access may be a strided run of the lanes (_lane_view)
    lin = affine.coefficients(tr, idx[0]) if runs else None
    periodic = runs and idx[0] in tr.periodic

    def f(fr, mask):
        env = fr.env
        buf = env[m]
        if runs:
            rel = env[idx[0]]
            if periodic and mask is fr.full:
                blocks = _per_block(fr, buf, rel)
                if blocks is not None:
                    g, rows = blocks
                    if fr.collect:
                        _count_periodic(fr, buf, g, "store")
                    val = env[v]
                    _check_store_race(fr, buf, fr.lane[:fr.B], g, g, val)  # blocks have their own memory
                    rows[:, g] = val.reshape(fr.nb, fr.B) if type(val) is np.ndarray else val
                    return
            run = _lane_view(fr, buf, lin, rel)
            if run is not None:
                view, val = run[0], env[v]
                if type(val) is np.ndarray:
                    val = val.reshape(view.shape)
                if mask is fr.full:
                    if fr.collect:
                        _count_view(fr, buf, run[1], rel, "store")
                    view[...] = val
                else:
                    if fr.collect and buf.kind != "private":
                        _count_masked(fr, buf, mask, rel, "store")
                    np.copyto(view, val, casting="unsafe", where=mask.reshape(view.shape))
                return
        act, rel = _access(fr, mask, buf, [env[i] for i in idx], "store", loc)
        if act is not None and act.size == 0:
            return
        if fr.collect:
            _count(fr, buf, act, rel, "store")
        addr = _addr(fr, buf, act, rel)
        val = env[v]
        if type(val) is np.ndarray and act is not None:
            val = val[act]
        _check_store_race(fr, buf, act, addr, rel, val)
        if type(addr) is not np.ndarray and type(val) is np.ndarray:
            val = val[-1]  # several lanes, one address, one value
        buf.data[addr] = val
    return f


@handles("memref.alloca")
def _alloca(tr, o):
    if len(o.operands):
        tr.unsupported(o, "memref.alloca with dynamic sizes")
    mt = _MemTy(o.results[0].type)
    k = tr.nalloca
    tr.nalloca += 1
    name = f"alloca{k}"
    size = mt.size
    tr.private_bytes += size * mt.elem.dtype.itemsize
    dims = mt.dims
    dt = mt.elem.dtype
    r = tr.define(o.results[0])

    def f(fr, mask):
        data = _empty_alloc(fr.L * size, dt, fr.uninit, fr.pool)
        fr.env[r] = _Buf(name, "private", data, dims, base=fr.lane * size)
    return f


@handles("memref.dim")
def _dim(tr, o):
    m = tr.use(o.operands[0])
    i = tr.use(o.operands[1])
    r = tr.define(o.results[0])

    def f(fr, mask):
        env = fr.env
        env[r] = np.int64(env[m].dims[int(env[i])])
    return f


@handles("memref.cast", "memref.assume_alignment")
def _passthrough_memref(tr, o):
    m = tr.use(o.operands[0])
    r = tr.define(o.results[0])

    def f(fr, mask):
        fr.env[r] = fr.env[m]
    return f


#: The alignment of every workgroup buffer in the modelled shared window (bytes; the largest any
#: kernc pass declares: the 128-byte swizzle of wgmma tiles).
WINDOW_ALIGN = 1024


def workgroup_address(fr, buf: _Buf) -> int:
    """The modelled shared-window byte address of workgroup buffer ``buf`` (the same in every block):
    the batch's workgroup attributions in attribution order, each at a multiple of :data:`WINDOW_ALIGN`
    from ``WINDOW_ALIGN`` (a placement any declared alignment up to it allows), then the dynamic
    workgroup memory (at the next multiple of :data:`WINDOW_ALIGN`, as the PTX's ``.extern .shared
    .align 1024`` array), a view of it at its byte offset there (``buf.window``)."""
    addr = WINDOW_ALIGN
    for other in fr.shadows:
        if other.window is not None:
            continue
        if other is buf:
            return addr
        addr += -(-other.size * other.itemsize // WINDOW_ALIGN) * WINDOW_ALIGN
    if buf.window is not None:
        return addr + buf.window
    raise KeyError(buf.name)


class _Dynamic:
    """The value of ``gpu.dynamic_shared_memory`` in a batch: the block's ``nbytes`` of dynamic
    workgroup memory (the launch's ``dynamic_shared_bytes``), seen through ``memref.view`` s."""

    __slots__ = ("nbytes",)

    def __init__(self, nbytes: int):
        self.nbytes = nbytes


@handles("memref.view")
def _view(tr, o):
    """``memref.view %dyn[%byte_shift][] : memref<?xi8, workgroup> to memref<N x T, workgroup>`` of the
    dynamic workgroup memory: a workgroup buffer of its own (:class:`_Buf`, with the race check's
    :class:`~.frame._Shadow`, like an attribution; ``window``: its byte offset, which
    :func:`workgroup_address` adds to the dynamic memory's), the same one for every run of the op
    at the same offset in a batch. ``KerncRuntimeError`` for a view past the launch's dynamic bytes,
    a negative offset or one that is no multiple of the element size, or one that differs per thread;
    ``InterpreterUnsupportedError`` for a view of another memref, dynamic sizes, or two views whose
    bytes overlap (each view has storage of its own here: stores through one would not show
    through the other)."""
    src = o.operands[0]
    if not isinstance(src, ir.OpResult) or src.owner.name != "gpu.dynamic_shared_memory":
        tr.unsupported(o, "memref.view of a memref other than gpu.dynamic_shared_memory")
    if len(o.operands) != 2:
        tr.unsupported(o, "memref.view with dynamic sizes")
    mt = _MemTy(o.results[0].type)
    if mt.space != "workgroup" or any(d is None for d in mt.dims):
        tr.unsupported(o, f"memref.view to {o.results[0].type} (a static workgroup memref only)")
    m, shift = tr.use(src), tr.use(o.operands[1])
    r = tr.define(o.results[0])
    size, dt = mt.size, mt.elem.dtype
    nbytes = size * dt.itemsize
    key_t = str(o.results[0].type)
    loc = str(o.location)

    def f(fr, mask):
        dyn, off = fr.env[m], fr.env[shift]
        if type(off) is np.ndarray:
            if not (off == off.flat[0]).all():
                raise KerncRuntimeError(f"memref.view of the dynamic workgroup memory (at {loc}): the byte "
                                        "offset differs between threads")
            off = off.flat[0]
        off = int(off)
        views = fr.memo.setdefault("dynamic views", {})
        buf = views.get((off, key_t))
        if buf is None:
            if off < 0 or off + nbytes > dyn.nbytes or off % dt.itemsize:
                raise KerncRuntimeError(
                    f"memref.view of the dynamic workgroup memory (at {loc}): {nbytes} bytes at byte offset "
                    f"{off} " + (f"are past the launch's {dyn.nbytes} bytes of dynamic workgroup memory"
                                 if off >= 0 and off + nbytes > dyn.nbytes else
                                 f"(not a multiple of the {dt.itemsize}-byte element)" if off >= 0 else "(negative)"))
            for (o2, t2), other in views.items():
                if off < o2 + other.size * other.itemsize and o2 < off + nbytes:
                    raise InterpreterUnsupportedError(
                        f"memref.view of the dynamic workgroup memory (at {loc}): bytes {off}..{off + nbytes - 1} "
                        f"overlap the view {t2} at byte offset {o2}; the CPU interpreter models each view as a "
                        "buffer of its own")
            buf = _Buf(f"dynamic@{off}", "workgroup", _empty_alloc(fr.nb * size, dt, fr.uninit, fr.pool),
                       mt.dims, base=fr.blk * size)
            buf.window = off
            buf.shadow = _Shadow(fr.nb, size)  # the race check between barriers, as for an attribution
            views[(off, key_t)] = buf
            fr.shadows.append(buf)
        fr.env[r] = buf
    return f


@handles("memref.extract_aligned_pointer_as_index")
def _aligned_pointer(tr, o):
    """``memref.extract_aligned_pointer_as_index``: the host address of the buffer's data (so the
    alignment tests of vectorised accesses take the same path the GPU would for that array); of a
    workgroup buffer, its address in the shared window (:func:`workgroup_address`: what wgmma's
    matrix descriptors hold)."""
    m = tr.use(o.operands[0])
    r = tr.define(o.results[0])

    def f(fr, mask):
        buf = fr.env[m]
        if buf.kind == "workgroup":
            fr.env[r] = np.int64(workgroup_address(fr, buf))
        else:
            fr.env[r] = np.int64(buf.data.ctypes.data)
    return f
