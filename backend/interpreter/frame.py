"""The run-time state: the memref values (:class:`_Buf`) and the state of one batch (:class:`_Frame`)."""

from __future__ import annotations

import numpy as np

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
                 "lane_in_warp", "warp", "nwarps", "stats", "collect", "uninit", "index32", "tables")

    def thread_id(self, lane: int) -> int:
        return self.first_block * self.B + int(lane)


def _empty_alloc(n, dtype, uninit):
    if uninit == "poison":
        a = np.empty(n, dtype=dtype)
        if a.dtype.kind == "f":
            a.fill(np.nan)
        elif a.dtype.kind == "b":
            a.fill(True)
        else:
            a.view(np.uint8).fill(0xA5)
        return a
    return np.zeros(n, dtype=dtype)
