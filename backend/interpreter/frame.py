"""The run-time state: the memref values (:class:`_Buf`) and the state of one batch (:class:`_Frame`)."""

from __future__ import annotations

import sys

import numpy as np


class _Pool:
    """Lane arrays of one run that no value refers to any more, kept for the next op that needs an
    array of the same dtype and length (the hot elementwise ops and gathers write their results
    into one, ``out=``).

    Why: a batch's index arithmetic keeps tens of lane arrays alive until its stores; freeing them
    at the end of the batch lets the C allocator return the memory to the system, and the next
    batch touched fresh pages again (a transpose took 14,000 page faults per run, most of its
    index arithmetic's time). Arrays enter the pool only when the value being released is their
    sole reference and they own their data, so no value can see a pooled array change."""

    __slots__ = ("free", "nbytes")
    #: the most memory the pool keeps (bytes): an interpreter holds at most this much between runs
    LIMIT_BYTES = 32 << 20

    def __init__(self):
        self.free: dict = {}
        self.nbytes = 0

    def take(self, dtype, n: int) -> np.ndarray:
        """A ``(n,)`` array of ``dtype`` (contents undefined)."""
        stack = self.free.get((dtype, n))
        if stack:
            a = stack.pop()
            self.nbytes -= a.nbytes
            return a
        return np.empty(n, dtype)

    def give(self, v) -> None:
        """Keep ``v`` (an array, or a workgroup or private :class:`_Buf`'s memory) if nothing but
        the caller's reference holds it (see the class docstring)."""
        if type(v) is _Buf:
            if v.kind != "global" and sys.getrefcount(v) <= 3:
                data, v.data = v.data, None
                self.give(data)
            return
        if (type(v) is np.ndarray and sys.getrefcount(v) <= 3 and v.base is None and v.ndim == 1
                and v.flags.writeable):
            if self.nbytes + v.nbytes <= self.LIMIT_BYTES:
                self.free.setdefault((v.dtype, v.shape[0]), []).append(v)
                self.nbytes += v.nbytes


class _Buf:
    """A memref value at run time.

    ``data`` is the flat storage; ``size`` the elements of one instance (the whole global buffer, one
    block's workgroup array, one thread's private array); ``base`` ``None`` (global) or an int64 lane
    array of instance offsets into ``data``; ``dims``/``strides`` give the logical (row-major) shape.
    """

    __slots__ = ("name", "kind", "data", "size", "base", "dims", "strides", "itemsize", "shadow", "window")

    def __init__(self, name, kind, data, dims, base=None):
        self.name, self.kind, self.data, self.base = name, kind, data, base
        self.shadow = None  # workgroup memory: its _Shadow (the barrier-interval race check)
        #: a view of the dynamic workgroup memory: its byte offset there (``None``: a buffer of its own)
        self.window = None
        self.dims = tuple(int(d) for d in dims)
        self.size = int(np.prod(self.dims, dtype=np.int64)) if self.dims else 1
        strides, acc = [], 1
        for d in reversed(self.dims):
            strides.append(acc)
            acc *= d
        self.strides = tuple(reversed(strides))
        self.itemsize = data.dtype.itemsize

    def describe(self) -> str:
        return {"global": "buffer", "workgroup": "workgroup buffer", "private": "private buffer"}[self.kind] + \
            f" '{self.name}'"


class _Shadow:
    """Who touched each workgroup address since the last ``gpu.barrier`` of its block (the race
    check of :mod:`.memory`): ``writer`` the thread (id in its block) that stored to it (``-1``:
    none); ``rlo``/``rhi`` the least and greatest thread that loaded it (:data:`NONE`/``-1``: none);
    flat like the buffer's data (block ``b``'s array at ``b*size``). ``writes``: whether a store
    happened since the last barrier (while none did, a load has nothing to check).

    Why the loads are a log (``log``: address and thread arrays, folded into ``rlo``/``rhi`` by
    :meth:`fold` only when a store needs them): in a correct kernel the loads of an interval are
    followed by a barrier, not a store, so they cost a copy each. Why ``uniform``: a tiled kernel's
    workgroup accesses are, as a rule, the same function of the thread id in every block of a
    batch under the full mask; while every access since the last barrier was such, all blocks'
    records are equal and only block 0's are kept (``size`` elements): ``B``-lane work, not
    ``L``-lane; the first other access copies them to every block (:meth:`spread`).

    ``wsite``/``rsite``: the op (an index into :data:`SITES`, its location) that last stored to /
    loaded each address, so that a race report names both accesses (``rsite`` is set by
    :meth:`fold`: the last logged load of the address)."""

    __slots__ = ("writer", "rlo", "rhi", "wsite", "rsite", "log", "uniform", "writes", "folded", "nb",
                 "size", "_full", "pending", "npending", "pending_loc", "pending_lo", "pending_hi")
    NONE = np.iinfo(np.int32).max

    def __init__(self, nb: int, size: int):
        self.nb, self.size = nb, size
        self._full = None  # the (writer, rlo, rhi) of every block, once made
        self.writer = np.full(size, -1, np.int32)
        self.rlo = np.full(size, self.NONE, np.int32)
        self.rhi = np.full(size, -1, np.int32)
        self.wsite = np.zeros(size, np.int32)
        self.rsite = np.zeros(size, np.int32)
        self.log = []
        self.uniform = True
        self.writes = self.folded = False
        # cp.async (.async_copy): the copies in flight to each address of every block (flat, as
        # the data), their total, the location of the last one and the least and greatest index
        # (within a block's array) they target, a quick test for the accesses of the other half of
        # a double-buffered tile; never reset by a barrier
        self.pending = np.zeros(nb * size, np.int32)
        self.npending = 0
        self.pending_loc = ""
        self.pending_lo, self.pending_hi = size, -1

    def fold(self) -> None:
        """Fold the logged loads into ``rlo``/``rhi``."""
        if self.log:
            addr = np.concatenate([a for a, _, _ in self.log])
            tid = np.concatenate([t for _, t, _ in self.log])
            np.minimum.at(self.rlo, addr, tid)
            np.maximum.at(self.rhi, addr, tid)
            for a, _, site in self.log:
                self.rsite[a] = site
            self.log = []
            self.folded = True

    def spread(self) -> None:
        """Leave the uniform mode: every block's records from block 0's."""
        self.fold()
        arrs = (self.writer, self.rlo, self.rhi, self.wsite, self.rsite)
        self._full = arrs  # (block 0's, for the next uniform interval)
        self.writer, self.rlo, self.rhi, self.wsite, self.rsite = (np.tile(x, self.nb) for x in arrs)
        self.uniform = False

    def reset(self, rows=None) -> None:
        """A barrier reached by every block (``rows`` None) or by the blocks ``rows`` only."""
        if rows is None:
            if not self.uniform or self.writes or self.folded:
                if not self.uniform:
                    self.writer, self.rlo, self.rhi, self.wsite, self.rsite = self._full
                    self.uniform = True
                self.writer.fill(-1)
                self.rlo.fill(self.NONE)
                self.rhi.fill(-1)
            self.log = []
            self.writes = self.folded = False
            return
        if self.uniform:
            self.spread()
        self.fold()
        for x, v in ((self.writer, -1), (self.rlo, self.NONE), (self.rhi, -1)):
            x.reshape(self.nb, self.size)[rows] = v


#: the locations of the ops that access workgroup memory, indexed by the site numbers of
#: :class:`_Shadow` (``SITES[0]``: unknown); :func:`site` adds one
SITES: list[str] = ["an unknown op"]
_SITE_IDS: dict[str, int] = {}


def site(loc: str) -> int:
    """The site number of the op at ``loc`` (registered on first use, at translation)."""
    k = _SITE_IDS.get(loc)
    if k is None:
        k = _SITE_IDS[loc] = len(SITES)
        SITES.append(loc)
    return k


class _Frame:
    """Execution state of one batch of blocks: ``L = nb * B`` lanes, the lane arrays of the layout
    (``lane``, ``blk``, ``tid``, ``lane_in_warp``, ``warp``: read-only, shared by every batch of
    ``nb`` blocks of ``B`` threads, as is ``tables``, a dict for what ops derive from them once),
    ``env`` (the SSA values by slot), ``full`` (the all-true mask), the counters ``stats``;
    ``dynamic_bytes``: the bytes of dynamic workgroup memory per block the launch gives
    (``gpu.dynamic_shared_memory``, :mod:`.memory`)."""

    __slots__ = ("env", "L", "B", "nb", "first_block", "grid", "full", "lane", "blk", "tid", "bid",
                 "lane_in_warp", "warp", "nwarps", "stats", "collect", "uninit", "index32", "tables",
                 "memo", "pool", "shadows", "copies", "dynamic_bytes")

    def thread_id(self, lane: int) -> int:
        return self.first_block * self.B + int(lane)


def _empty_alloc(n, dtype, uninit, pool: _Pool | None = None):
    """Fresh workgroup or private memory of ``n`` elements: zeros, or with ``uninit="poison"`` NaN
    (floats), ``True`` (i1) or ``0xA5`` bytes (integers); from ``pool`` when it has such an array."""
    a = pool.take(np.dtype(dtype), n) if pool is not None else np.empty(n, dtype=dtype)
    if uninit == "poison":
        if a.dtype.kind == "f":
            a.fill(np.nan)
        elif a.dtype.kind == "b":
            a.fill(True)
        else:
            a.view(np.uint8).fill(0xA5)
    else:
        a.fill(0)
    return a
