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

    __slots__ = ("name", "kind", "data", "size", "base", "dims", "strides", "itemsize")

    def __init__(self, name, kind, data, dims, base=None):
        self.name, self.kind, self.data, self.base = name, kind, data, base
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


class _Frame:
    """Execution state of one batch of blocks: ``L = nb * B`` lanes, the lane arrays of the layout
    (``lane``, ``blk``, ``tid``, ``lane_in_warp``, ``warp``: read-only, shared by every batch of
    ``nb`` blocks of ``B`` threads, as is ``tables``, a dict for what ops derive from them once),
    ``env`` (the SSA values by slot), ``full`` (the all-true mask), the counters ``stats``."""

    __slots__ = ("env", "L", "B", "nb", "first_block", "grid", "full", "lane", "blk", "tid", "bid",
                 "lane_in_warp", "warp", "nwarps", "stats", "collect", "uninit", "index32", "tables",
                 "memo", "pool")

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
