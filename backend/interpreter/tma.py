"""The tensor memory accelerator's tiled copies (``nvvm.cp.async.bulk.tensor.shared.cluster.global``)
and the ``mbarrier`` s that complete them, so that a read of a copy's destination before the wait that
covers it is a reported race, not a silently right CPU result.

Shared addresses: ``llvm.inttoptr`` of a workgroup address (``memref.extract_aligned_pointer_as_index``,
:func:`kernc.backend.interpreter.memory.workgroup_address`) is that address. A tensor-map kernel
parameter (``!llvm.ptr``) is a :class:`kernc.backend.tensor_map.TensorMap` whose ``array`` is the
global memory it reads.

``mbarrier`` (PTX ISA 9.7.13.15, "Parallel Synchronization and Communication Instructions: mbarrier"),
per block, 8-byte objects in workgroup memory:

- ``nvvm.mbarrier.init addr, count``: phase 0, ``count`` pending arrivals, transaction count 0;
- ``nvvm.mbarrier.arrive.expect_tx addr, tx``: each arriving thread raises the transaction count by
  ``tx`` bytes and is one arrival; ``nvvm.mbarrier.arrive`` an arrival only. The current phase
  completes when no arrival is pending and the transaction count is 0: the phase number advances and
  the pending arrivals are ``count`` again;
- ``nvvm.mbarrier.try_wait.parity addr, P`` (lowered to a wait loop): true once the phase of parity
  ``P`` completed, i.e. at once when the current phase's parity is not ``P`` (the previous phase of
  parity ``P`` is complete); else it waits for the current phase. Here that wait lands every copy in
  flight on the barrier (their ``complete_tx``); a phase that still cannot complete then (arrivals
  pending, or a transaction count the copies did not bring to 0: ``expect_tx`` bytes that do not
  match) would wait forever: ``KerncRuntimeError``.

``cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [dst], [map, {c0,
c1}], [mbar]`` (PTX ISA 9.7.9.25.5.1), one copy per issuing thread: the box of ``map`` at coordinates
``c`` (innermost first; element strides 1) is written to ``dst`` (128-byte aligned), box rows of
``box[0]`` elements packed, each byte address swizzled with the map's swizzle span
(:func:`kernc.backend.interpreter.wgmma.swizzle`, the pattern wgmma's descriptors read); elements out
of the tensor's bounds are 0 (``oob="zero"``) or NaN. Its ``complete_tx`` of the box's bytes goes to
``mbar`` when it lands (above). The ``.im2col`` load mode (PTX ISA 5.5.4, "im2col mode"; the op's
``mode`` ``im2col`` with its im2col offsets, e.g. ``cp.async.bulk.tensor.4d...im2col [dst], [map, {c0,
w0, h0, n0}], [mbar], {ow, oh}``) takes an :class:`kernc.backend.tensor_map.Im2colTensorMap` and
writes ``pixels`` rows of ``channels`` elements in the same packed, swizzled order: row ``p`` the
``p``-th filter-base position of the map's pixel box from ``(n0, h0, w0)``, read at that position plus
the offsets (:func:`im2col_gather`). The data is written at issue (so a ``wgmma`` still reading that memory
sees it changed at its ``wait_group``), and each element is recorded as this copy's until a thread
observes the phase it completed in: a ``memref.load``/``memref.store`` (or a ``wgmma`` operand read)
of such an element by a thread that did not wait for that phase -- no wait, a wait with the wrong
parity, or a wait that returned before the copy landed -- is a ``KerncRuntimeError`` naming both ops
and their locations. The copy writes through the async proxy: it updates the async-proxy view that
``wgmma`` reads are checked against (no ``fence.proxy.async`` needed between them).

State is per batch of blocks (which run in lockstep); every block has its own barriers and copies.
"""

from __future__ import annotations

import numpy as np

from kernc.support.errors import KerncRuntimeError

from .memory import workgroup_address
from .translate import handles
from .wgmma import _state as _wgmma_state
from .wgmma import ir_ints, swizzle

#: ``cp.async.bulk.tensor``'s destination alignment (PTX ISA: 128 bytes in tile mode)
DST_ALIGN = 128


class _Barrier:
    """One mbarrier address's per-block state (arrays of ``nb``) and copies in flight."""

    __slots__ = ("init", "count", "pending", "tx", "phase", "inflight", "loc")

    def __init__(self, nb: int):
        self.init = np.zeros(nb, bool)
        self.count = np.zeros(nb, np.int64)
        self.pending = np.zeros(nb, np.int64)
        self.tx = np.zeros(nb, np.int64)
        self.phase = np.zeros(nb, np.int64)  # completed phases
        self.inflight: list = [[] for _ in range(nb)]
        self.loc = ""


class _Copy:
    """One thread's ``cp.async.bulk.tensor``: its block, destination elements, bytes, location, and
    the phase it completed in (``None`` while in flight) and which of its block's threads saw that."""

    __slots__ = ("block", "buf", "idx", "nbytes", "loc", "done", "seen")

    def __init__(self, block, buf, idx, nbytes, loc, B):
        self.block, self.buf, self.idx, self.nbytes, self.loc = block, buf, idx, nbytes, loc
        self.done = None
        self.seen = np.zeros(B, bool)


class TmaState:
    """Per batch: the barriers by address, the copies by id, per workgroup buffer the id of the copy
    that last wrote each element and is not yet observed by every thread of its block (-1: none)."""

    def __init__(self, fr):
        self.bars: dict[int, _Barrier] = {}
        self.copies: dict[int, _Copy] = {}
        self.by_block: dict[int, set] = {}  # block -> ids of its copies in self.copies
        self.owner: dict[int, np.ndarray] = {}
        self.live: dict[int, int] = {}
        self.next = 0
        self.nb, self.B = fr.nb, fr.B

    def check(self, fr, buf, mask, rel, store: bool, loc: str) -> None:
        """Raise if an active lane of ``mask`` accesses (element offsets ``rel`` of its instance) an
        element of ``buf`` a copy wrote that the lane has not waited for."""
        if not self.live.get(id(buf)):
            return
        owner = self.owner[id(buf)]
        lanes = fr.lane if mask is fr.full else np.flatnonzero(mask)
        r = np.broadcast_to(np.asarray(rel), (fr.L,))[lanes]
        addr = r if buf.base is None else buf.base[lanes] + r
        self._check(fr, buf, owner[addr], lanes, "a store to" if store else "a read of", loc)

    def check_elements(self, fr, buf, idx, lane: int, what: str, loc: str) -> None:
        """The same for elements ``idx`` (flat indices into ``buf.data``) read by lane ``lane``."""
        if self.live.get(id(buf)):
            o = self.owner[id(buf)][np.asarray(idx).reshape(-1)]
            self._check(fr, buf, o, np.full(o.shape, lane), what, loc)

    def _check(self, fr, buf, o, lanes, what, loc) -> None:
        hit = o >= 0
        if not hit.any():
            return
        for rid in np.unique(o[hit]):
            c = self.copies[int(rid)]
            ln = lanes[o == rid]
            ok = c.seen[ln - c.block * fr.B] if c.done is not None else np.zeros(ln.shape, bool)
            if not ok.all():
                t = fr.thread_id(int(ln[np.argmin(ok)]))
                raise KerncRuntimeError(
                    f"{what} workgroup buffer '{buf.name}' (at {loc}) by thread {t}: the element was "
                    f"written by the cp.async.bulk.tensor at {c.loc}, whose mbarrier phase the thread "
                    "has not waited for (mbarrier.try_wait.parity missing, with the wrong parity, or "
                    "returning before the copy landed: expect_tx bytes that do not match) -- a race "
                    "(PTX ISA 9.7.9.25, cp.async.bulk.tensor: completion through the mbarrier)")

    def bar(self, addr: int, what: str, loc: str, init: bool = False) -> _Barrier:
        b = self.bars.get(addr)
        if b is None:
            if not init:
                raise KerncRuntimeError(f"{what} (at {loc}) on shared address {addr}, where no "
                                        "mbarrier.init made an mbarrier")
            b = self.bars[addr] = _Barrier(self.nb)
        return b


def _st(fr) -> TmaState:
    st = fr.memo.get("tma")
    if st is None:
        st = fr.memo["tma"] = TmaState(fr)
    return st


def _active(fr, mask, pred):
    """Active lanes (array) of ``mask`` and the optional predicate value ``pred``."""
    m = np.ones(fr.L, bool) if mask is fr.full else np.asarray(mask)
    if pred is not None:
        m = m & np.broadcast_to(np.asarray(pred, bool), (fr.L,))
    return np.flatnonzero(m)


def _lane_vals(v, lanes):
    return np.broadcast_to(np.asarray(v), (lanes.size,)) if type(v) is not np.ndarray else v[lanes]


def _barrier_buf(fr, addr: int, what: str, loc: str):
    for buf in fr.shadows:
        base = workgroup_address(fr, buf)
        if base <= addr < base + buf.size * buf.itemsize:
            if buf.itemsize != 8 or (addr - base) % 8:
                raise KerncRuntimeError(f"{what} (at {loc}): shared address {addr} is not an 8-byte "
                                        f"aligned 64-bit element (workgroup buffer '{buf.name}')")
            return buf
    raise KerncRuntimeError(f"{what} (at {loc}): shared address {addr} is in no workgroup buffer")


def _complete(b: _Barrier, blk: int, loc: str) -> None:
    """Complete ``b``'s current phase in block ``blk`` if it can."""
    if b.pending[blk] == 0 and b.tx[blk] == 0:
        for c in b.inflight[blk]:
            if c.done is None:
                c.done = int(b.phase[blk])
        b.inflight[blk] = [c for c in b.inflight[blk] if c.done is None]
        b.phase[blk] += 1
        b.pending[blk] = b.count[blk]


def _check_overwrite(fr, buf, rel, blk: int, loc: str) -> None:
    """A copy into elements (offsets ``rel`` of block ``blk``'s instance) a thread loaded or stored
    since the block's last ``gpu.barrier`` (:class:`~.frame._Shadow`): a write-after-read/write race
    (the issuing thread's generic accesses are not ordered before the async proxy's write either)."""
    sh = buf.shadow
    if sh is None:
        return
    sh.fold()
    a = rel if sh.uniform else blk * buf.size + rel
    for arr, did in ((sh.rhi, "loaded"), (sh.writer, "stored to")):
        who = arr[a]
        if (who >= 0).any():
            k = int(np.argmax(who >= 0))
            raise KerncRuntimeError(
                f"data race on {buf.describe()} (workgroup memory of block {fr.first_block + blk}): thread "
                f"{int(who[k])} {did} index {int(rel[k])} and the cp.async.bulk.tensor at {loc} overwrites "
                "it with no gpu.barrier between them")


def _operands(o):
    return [o.operands[i] for i in range(len(o.operands))]


@handles("llvm.inttoptr")
def _inttoptr(tr, o):
    """An integer address as a pointer: the same integer (the interpreter's pointers are addresses)."""
    a = tr.use(o.operands[0])
    r = tr.define(o.results[0])

    def f(fr, mask):
        fr.env[r] = fr.env[a]
    return f


@handles("nvvm.fence.mbarrier.init")
def _fence_init(tr, o):
    """``fence.mbarrier_init``: orders the inits before other threads' use; nothing more to model
    (a use before the block's barrier is still a use after the init in lockstep)."""
    return lambda fr, mask: None


@handles("nvvm.mbarrier.init")
def _init(tr, o):
    ops = _operands(o)
    a, n = tr.use(ops[0]), tr.use(ops[1])
    p = tr.use(ops[2]) if len(ops) > 2 else None
    loc = str(o.location)

    def f(fr, mask):
        env = fr.env
        lanes = _active(fr, mask, None if p is None else env[p])
        if not lanes.size:
            return
        st = _st(fr)
        addrs, counts = _lane_vals(env[a], lanes), _lane_vals(env[n], lanes)
        for addr in np.unique(addrs):
            _barrier_buf(fr, int(addr), "mbarrier.init", loc)
            b = st.bar(int(addr), "mbarrier.init", loc, init=True)
            sel = addrs == addr
            blks = fr.blk[lanes[sel]]
            cnt = counts[sel].astype(np.int64)
            if not (1 <= cnt).all():
                raise KerncRuntimeError(f"mbarrier.init (at {loc}) with an expected arrival count "
                                        f"{int(cnt.min())} (it must be 1..2^20-1)")
            b.init[blks], b.count[blks], b.pending[blks] = True, cnt, cnt
            b.tx[blks], b.phase[blks] = 0, 0
            for blk in np.unique(blks):
                b.inflight[int(blk)] = []
            b.loc = loc
    return f


def _arrive_handler(tr, o, with_tx: bool):
    ops = _operands(o)
    a = tr.use(ops[0])
    tx = tr.use(ops[1]) if with_tx else None
    rest = ops[2:] if with_tx else ops[1:]
    cnt = tr.use(rest[0]) if not with_tx and rest else None  # mbarrier.arrive's optional count
    p = tr.use(rest[0]) if with_tx and rest else None
    res = tr.define(o.results[0]) if len(o.results) else None
    what = "mbarrier.arrive.expect_tx" if with_tx else "mbarrier.arrive"
    loc = str(o.location)

    def f(fr, mask):
        env = fr.env
        lanes = _active(fr, mask, None if p is None else env[p])
        if res is not None:
            env[res] = np.int64(0)  # the state token: opaque, unused here
        if not lanes.size:
            return
        st = _st(fr)
        addrs = _lane_vals(env[a], lanes)
        txs = _lane_vals(env[tx], lanes).astype(np.int64) if tx is not None else np.zeros(lanes.size, np.int64)
        ns = _lane_vals(env[cnt], lanes).astype(np.int64) if cnt is not None else np.ones(lanes.size, np.int64)
        for addr in np.unique(addrs):
            b = st.bar(int(addr), what, loc)
            sel = addrs == addr
            blks = fr.blk[lanes[sel]]
            np.add.at(b.tx, blks, txs[sel])
            np.subtract.at(b.pending, blks, ns[sel])
            for blk in np.unique(blks):
                blk = int(blk)
                if not b.init[blk]:
                    raise KerncRuntimeError(f"{what} (at {loc}) on an mbarrier block {fr.first_block + blk} "
                                            "never initialized")
                if b.pending[blk] < 0:
                    raise KerncRuntimeError(
                        f"{what} (at {loc}): more arrivals than the {int(b.count[blk])} the mbarrier "
                        f"(init at {b.loc}) expects in one phase (block {fr.first_block + blk})")
                _complete(b, blk, loc)
    return f


@handles("nvvm.mbarrier.arrive.expect_tx")
def _arrive_expect_tx(tr, o):
    return _arrive_handler(tr, o, True)


@handles("nvvm.mbarrier.arrive")
def _arrive(tr, o):
    return _arrive_handler(tr, o, False)


@handles("nvvm.mbarrier.try_wait.parity")
def _try_wait_parity(tr, o):
    ops = _operands(o)
    a, ph = tr.use(ops[0]), tr.use(ops[1])
    if len(o.results):
        tr.unsupported(o, "nvvm.mbarrier.try_wait.parity with a result (the non-blocking form)")
    loc = str(o.location)

    def f(fr, mask):
        env = fr.env
        lanes = _active(fr, mask, None)
        if not lanes.size:
            return
        st = _st(fr)
        addrs, pars = _lane_vals(env[a], lanes), _lane_vals(env[ph], lanes).astype(np.int64) & 1
        for addr in np.unique(addrs):
            b = st.bar(int(addr), "mbarrier.try_wait.parity", loc)
            sel = addrs == addr
            ln, par = lanes[sel], pars[sel]
            blks = fr.blk[ln]
            for blk in np.unique(blks):
                blk = int(blk)
                inb = blks == blk
                want = np.unique(par[inb])
                if int(b.phase[blk] & 1) in want:  # some thread waits for the current phase: land the copies
                    for c in b.inflight[blk]:
                        b.tx[blk] -= c.nbytes
                    _complete(b, blk, loc)
                    if int(b.phase[blk] & 1) in want:
                        raise KerncRuntimeError(
                            f"mbarrier.try_wait.parity (at {loc}) waits forever in block "
                            f"{fr.first_block + blk}: the current phase (parity {int(b.phase[blk] & 1)}) "
                            f"cannot complete, {int(b.pending[blk])} arrival(s) pending and a transaction "
                            f"count of {int(b.tx[blk])} bytes after every copy in flight landed "
                            "(expect_tx bytes that do not match the copies, or a missing arrive)")
                # each waiting thread observes the last completed phase of its parity
                done = int(b.phase[blk]) - 1
                for rid in st.by_block.get(blk, ()):
                    c = st.copies[rid]
                    if c.done is None:
                        continue
                    hit = c.done == done
                    if hit:
                        tids = ln[inb][(par[inb] == (done & 1))] - blk * fr.B
                        c.seen[tids] = True
                _retire(st, blk)
    return f


def _retire(st: TmaState, blk: int) -> None:
    mine = st.by_block.get(blk, set())
    for rid in [r for r in mine if st.copies[r].done is not None and st.copies[r].seen.all()]:
        c = st.copies.pop(rid)
        mine.discard(rid)
        owner = st.owner[id(c.buf)]
        own = owner[c.idx] == rid
        owner[c.idx[own]] = -1
        st.live[id(c.buf)] -= 1


@handles("nvvm.cp.async.bulk.tensor.shared.cluster.global")
def _tensor_copy(tr, o):
    seg = ir_ints(o.attributes["operandSegmentSizes"])
    mode = str(o.attributes["mode"]) if "mode" in o.attributes else "tile"
    im2col = "im2col" in mode
    if not ("tile" in mode or im2col) or any(seg[5:7]) or (seg[4] and not im2col):
        tr.unsupported(o, "cp.async.bulk.tensor other than tile or im2col mode without multicast/L2 hint")
    ops = _operands(o)
    starts = np.cumsum([0] + seg)
    part = [ops[starts[i]:starts[i + 1]] for i in range(len(seg))]
    dst, desc = tr.use(part[0][0]), tr.use(part[1][0])
    coords = [tr.use(v) for v in part[2]]
    mbar = tr.use(part[3][0])
    offsets = [tr.use(v) for v in part[4]]  # (im2col mode: i16, signed in the op; 0..2^16-1 in PTX)
    pred = tr.use(part[7][0]) if seg[7] else None
    loc = str(o.location)
    rank = len(coords)

    def f(fr, mask):
        env = fr.env
        lanes = _active(fr, mask, None if pred is None else env[pred])
        if not lanes.size:
            return
        tm = env[desc]
        if tm is None or not hasattr(tm, "box") or tm.array is None:
            raise KerncRuntimeError(f"cp.async.bulk.tensor (at {loc}): its tensor map argument is not a "
                                    "TensorMap description with an array (kernc.backend.tensor_map)")
        if im2col != hasattr(tm, "pixels"):
            raise KerncRuntimeError(f"cp.async.bulk.tensor (at {loc}): a{'n im2col' if im2col else ' tile'}-mode "
                                    f"copy with a{'' if im2col else 'n im2col'} tile-mode tensor map")
        if tm.rank != rank or (not im2col and any(e != 1 for e in tm.estrides())):
            raise KerncRuntimeError(f"cp.async.bulk.tensor (at {loc}): a {rank}-d copy with a rank "
                                    f"{tm.rank} tensor map (or element strides other than 1)")
        st = _st(fr)
        es = tm.elem_bytes
        flat = np.ascontiguousarray(tm.array).reshape(-1).view(np.dtype(f"u{es}"))
        if not im2col:  # the box's element grid (innermost first) and its packed shared byte offsets
            grids = np.meshgrid(*[np.arange(int(x)) for x in reversed(tm.box)], indexing="ij")
            rel = [g.reshape(-1) for g in reversed(grids)]  # rel[d]: box coordinate along dim d
            packed = es * rel[0]
            row = 1
            for d in range(1, rank):
                row *= int(tm.box[d - 1])
                packed = packed + rel[d] * row * es
        d0s = _lane_vals(env[dst], lanes)
        bars = _lane_vals(env[mbar], lanes)
        cs = [_lane_vals(env[c], lanes).astype(np.int64) for c in coords]
        offs = [_lane_vals(env[c], lanes).astype(np.int64) & 0xFFFF for c in offsets]
        for j, lane in enumerate(lanes):
            d0, blk = int(d0s[j]), int(fr.blk[lane])
            if d0 % DST_ALIGN:
                raise KerncRuntimeError(f"cp.async.bulk.tensor (at {loc}): destination {d0} is not "
                                        f"{DST_ALIGN}-byte aligned")
            if im2col:  # rows of the pixel box's walk (im2col_gather), the same packed row-major order
                try:
                    rows, chans, inside, off = im2col_gather(tm, [c[j] for c in cs], [c[j] for c in offs])
                except ValueError as err:
                    raise KerncRuntimeError(f"cp.async.bulk.tensor (at {loc}): {err}") from None
                packed = es * (rows * int(tm.channels) + chans)
                off = off * es
            else:
                g = [cs[d][j] + rel[d] for d in range(rank)]
                inside = np.ones(packed.shape, bool)
                off = np.zeros(packed.shape, np.int64)
                for d in range(rank):
                    inside &= (g[d] >= 0) & (g[d] < int(tm.dims[d]))
                    off = off + (g[d] * es if d == 0 else g[d] * int(tm.strides[d - 1]))
            if (off[inside] // es).max(initial=-1) >= flat.size:
                raise KerncRuntimeError(f"cp.async.bulk.tensor (at {loc}): the tensor map reaches past "
                                        f"its array of {flat.size} elements")
            vals = np.zeros(packed.shape, flat.dtype)
            vals[inside] = flat[off[inside] // es]
            if tm.oob == "nan":
                vals[~inside] = np.array(np.nan, np.dtype(f"f{es}")).view(flat.dtype)
            addr = swizzle(d0 + packed, int(tm.swizzle))
            buf = None
            for cand in fr.shadows:
                base = workgroup_address(fr, cand)
                if base <= int(addr.min()) and int(addr.max()) < base + cand.size * cand.itemsize:
                    buf = cand
                    break
            if buf is None:
                raise KerncRuntimeError(f"cp.async.bulk.tensor (at {loc}): the {tm.box_bytes}-byte box at "
                                        f"shared address {d0} is not within one workgroup buffer")
            if buf.itemsize != es:
                raise KerncRuntimeError(f"cp.async.bulk.tensor (at {loc}): {es}-byte elements into "
                                        f"workgroup buffer '{buf.name}' of {buf.itemsize}-byte elements")
            idx = int(buf.base[lane]) + (addr - workgroup_address(fr, buf)) // es
            _check_overwrite(fr, buf, idx - int(buf.base[lane]), blk, loc)
            buf.data.view(flat.dtype)[idx] = vals
            ws = _wgmma_state(fr)  # the async proxy's view of the buffer (what wgmma reads)
            if ws.proxy is None:
                ws.proxy = {}
            snap = ws.proxy.get(id(buf))
            if snap is None:
                ws.proxy[id(buf)] = buf.data.copy()
            else:
                snap.view(flat.dtype)[idx] = vals
            b = st.bar(int(bars[j]), "cp.async.bulk.tensor's mbarrier", loc)
            rid = st.next
            st.next += 1
            c = _Copy(blk, buf, idx, tm.box_bytes, loc, fr.B)
            st.copies[rid] = c
            st.by_block.setdefault(blk, set()).add(rid)
            b.inflight[blk].append(c)
            owner = st.owner.get(id(buf))
            if owner is None:
                owner = st.owner[id(buf)] = np.full(buf.data.size, -1, np.int64)
            old = owner[idx]
            owner[idx] = rid
            for prev in np.unique(old[old >= 0]):  # a copy whose every element this one overwrote
                pc = st.copies.get(int(prev))
                if pc is not None and not (owner[pc.idx] == prev).any():
                    del st.copies[int(prev)]
                    st.by_block[pc.block].discard(int(prev))
                    st.live[id(buf)] -= 1
            st.live[id(buf)] = st.live.get(id(buf), 0) + 1
    return f


def im2col_gather(tm, coords, offsets):
    """One im2col-mode copy's elements (PTX ISA 5.5.4, "im2col mode"; 5.5.4.2 traversal stride;
    5.5.4.3 out-of-boundary access): ``tm`` a :class:`kernc.backend.tensor_map.Im2colTensorMap`,
    ``coords`` the instruction's coordinates innermost first (``(c0, w0, h0, n0)`` for rank 4: the
    channel start, the filter base inside the pixel box, the image), ``offsets`` its im2col offsets
    (``(ow, oh)``). Returns ``(rows, chans, inside, index)``, arrays of ``pixels * channels`` (row
    ``p``, channel ``c`` at ``p * channels + c``, the packed shared order): the pixel row and channel,
    whether the element is inside the tensor, and its global element index (meaningful where inside).
    Row ``p`` is the ``p``-th filter-base position of the box after ``(n0, h0, w0)`` in (N, H, W) order,
    each spatial step the traversal stride; its pixel is that base plus the offsets. Raises
    ``ValueError`` where the base is not a box position or an offset is outside the rank's range."""
    from kernc.backend.tensor_map import IM2COL_OFFSET

    r = tm.rank
    ns = r - 2
    es = tm.elem_bytes
    est = tm.estrides()
    ext = [tm.box_extent(d) for d in range(ns)]
    if len(coords) != r or len(offsets) != ns:
        raise ValueError(f"a rank {r} im2col map takes {r} coordinates and {ns} im2col offsets, "
                         f"not {len(coords)} and {len(offsets)}")
    for d, o in enumerate(offsets):
        if not 0 <= int(o) <= IM2COL_OFFSET[r]:
            raise ValueError(f"im2col offset {d} is {int(o)}, not in 0..{IM2COL_OFFSET[r]}")
    q = int(coords[-1])  # the start's linear position in (N, spatial...) box order
    for d in reversed(range(ns)):
        rel = int(coords[d + 1]) - int(tm.lower[d])
        if rel % int(est[d + 1]) or not 0 <= rel // int(est[d + 1]) < ext[d]:
            raise ValueError(f"coordinate {d + 1} ({int(coords[d + 1])}) is not a filter-base position "
                             f"of the pixel box ({tm.lower[d]} + k * {est[d + 1]}, k < {ext[d]})")
        q = q * ext[d] + rel // int(est[d + 1])
    P, Cp = int(tm.pixels), int(tm.channels)
    rows = np.repeat(np.arange(P, dtype=np.int64), Cp)
    chans = np.tile(np.arange(Cp, dtype=np.int64), P)
    lin = q + rows
    c = int(coords[0]) + chans
    inside = (c >= 0) & (c < int(tm.dims[0]))
    index = c.copy()
    for d in range(ns):
        k = lin % ext[d]
        lin = lin // ext[d]
        x = int(tm.lower[d]) + k * int(est[d + 1]) + int(offsets[d])
        inside &= (x >= 0) & (x < int(tm.dims[d + 1]))
        index = index + x * (int(tm.strides[d]) // es)
    inside &= lin < int(tm.dims[-1])
    index = index + lin * (int(tm.strides[-1]) // es)
    return rows, chans, inside, index


def im2col_tile(tm, coords, offsets):
    """The workgroup tile one im2col-mode ``cp.async.bulk.tensor`` copy writes (PTX ISA 9.7.9.25.5.1,
    ``.im2col`` load mode; 5.5.4 "im2col mode", 5.5.4.3: an element outside the tensor is filled), at a
    destination aligned to ``8 * swizzle`` bytes: a 1-D array of ``pixels * channels`` elements of the
    map's array dtype, row ``p``'s channel ``c`` at element ``swizzle((p * channels + c) * e) / e``
    (``e`` the element bytes; :func:`kernc.backend.interpreter.wgmma.swizzle`, 5.5.2 "Tensor swizzling
    modes"), out-of-bounds elements 0 (``oob="zero"``) or NaN. ``coords``/``offsets`` as
    :func:`im2col_gather` (which raises ``ValueError`` for a bad base or offset); raises
    ``ValueError`` where the map reaches past its array or, swizzled, the tile is not whole
    ``8 * swizzle``-byte patterns."""
    rows, chans, inside, index = im2col_gather(tm, coords, offsets)
    if tm.swizzle and tm.box_bytes % (8 * int(tm.swizzle)):
        raise ValueError(f"a {tm.box_bytes}-byte tile is not whole {8 * int(tm.swizzle)}-byte swizzle "
                         "patterns")
    flat = np.ascontiguousarray(tm.array).reshape(-1)
    es = tm.elem_bytes
    if flat.itemsize != es:
        raise ValueError(f"the map's array has {flat.itemsize}-byte elements, its dtype {tm.dtype} {es}")
    if index[inside].max(initial=-1) >= flat.size:
        raise ValueError(f"the im2col tensor map reaches past its array of {flat.size} elements")
    vals = np.zeros(rows.shape, flat.dtype)
    vals[inside] = flat[index[inside]]
    if tm.oob == "nan":
        vals[~inside] = np.array(np.nan, np.dtype(f"f{es}")).view(flat.dtype)
    out = np.empty_like(vals)
    out[swizzle((rows * int(tm.channels) + chans) * es, int(tm.swizzle)) // es] = vals
    return out
