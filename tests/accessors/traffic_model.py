"""Exact numpy models of the global-memory traffic the CPU interpreter counts for block-wide
accessors, derived from ``passes/lower_accessors.py`` and the counting rules of ``RunStats``
(a *request* = one warp executing a load with >= 1 active lane; *sectors* = distinct 32-byte segments
the active lanes touch, per request)."""

from __future__ import annotations

import numpy as np

from kernc.backend.shared_indices import shared_indices
from kernc.passes.workgroup import STAGING_BUDGET

WARP = 32
SECTOR = 32


def chunks(K: int, B: int, compute_bytes: int) -> list[range]:
    """The component chunks the lowering stages at a time (``STAGING_BUDGET`` bytes per chunk)."""
    per = max(1, min(K, STAGING_BUDGET // (B * compute_bytes)))
    return [range(c, min(c + per, K)) for c in range(0, K, per)]


def element_offsets(e: np.ndarray, c: int, K: int, m: int, layout: str | None) -> np.ndarray:
    """Flat storage offset of component ``c`` of elements ``e``."""
    if K == 1:
        return e
    if layout == "soa":
        return e + c * m
    return e * K + c


def _warp_requests(lanes_global_thread: np.ndarray, byte_addr: np.ndarray, B: int) -> tuple[int, int]:
    """(requests, sectors) of one load executed by the given threads (global thread ids) at the given
    byte addresses."""
    if lanes_global_thread.size == 0:
        return 0, 0
    warp = (lanes_global_thread // B) * (B // WARP) + (lanes_global_thread % B) // WARP
    sec = byte_addr // SECTOR
    reqs = np.unique(warp).size
    secs = np.unique(np.stack([warp, sec]), axis=1).shape[1]
    return int(reqs), int(secs)


def shared_read_loads(I: np.ndarray, B: int, K: int, m: int, layout: str | None,
                      storage_bytes: int, compute_bytes: int, aligned: bool = True) -> tuple[int, int]:
    """Global load (requests, sectors) of a kernel whose only global loads are one ``shared(I)`` read.

    - every thread ``t < P`` loads ``target[t]`` (u32: its rank and its block's ``count``) once;
    - only the threads below their block's count (``tid < count[b]``) load ``unique[b*B + tid]``
      (u32) once, and per component chunk the chunk's components of that element (the distinct
      elements, ascending, consecutive threads); the others load nothing -- one 16-byte
      vector load per element when an ``aos`` element is exactly 16 bytes, staged in one chunk,
      and the buffer is 16-byte ``aligned``.
    """
    P = int(I.size)
    nb = -(-P // B)
    if nb == 0:
        return 0, 0
    tab = shared_indices(I, B)
    count = tab.count.astype(np.int64)
    t_all = np.arange(P)
    req, sec = _warp_requests(t_all, t_all * 4, B)                # target[t]
    slots = np.arange(nb * B)
    stagers = slots[slots % B < count[slots // B]]                 # tid < count[b] only
    r, s = _warp_requests(stagers, stagers * 4, B)                 # unique[b*B + tid]
    req += r
    sec += s
    elems = tab.unique.astype(np.int64)[stagers]
    all_chunks = chunks(K, B, compute_bytes)
    vector = (aligned and layout != "soa" and K > 1 and K * storage_bytes == 16 and len(all_chunks) == 1)
    for ch in all_chunks:
        if vector:
            first = element_offsets(elems, 0, K, m, layout) * storage_bytes
            r, _ = _warp_requests(stagers, first, B)
            lanes = np.concatenate([stagers, stagers])
            _, s = _warp_requests(lanes, np.concatenate([first, first + 15]), B)
            req += r
            sec += s
            ch = []
        for c in ch:
            r, s = _warp_requests(stagers, element_offsets(elems, c, K, m, layout) * storage_bytes, B)
            req += r
            sec += s
    return req, sec


def indexed_read_loads(I: np.ndarray, B: int, K: int, m: int, layout: str | None,
                       storage_bytes: int) -> tuple[int, int]:
    """Global load (requests, sectors) of a kernel whose only global loads are one ``indexed(I)``
    read: every thread ``t < P`` loads ``I[t]`` and then each component of ``X[I[t]]``."""
    P = int(I.size)
    t = np.arange(P)
    r, s = _warp_requests(t, t * 4, B)
    e = I.astype(np.int64)
    for c in range(K):
        r2, s2 = _warp_requests(t, element_offsets(e, c, K, m, layout) * storage_bytes, B)
        r += r2
        s += s2
    return r, s


def shared_sum_run_end_loads(I: np.ndarray, B: int) -> tuple[int, int]:
    """Global load (requests, sectors) of ``unique[b*B + key]`` in a ``shared_sum(I)`` update: every
    thread of a block's threads in range loads the u32 of its sorted position's run, ``key`` = the
    rank of the ``j``-th smallest index of the block (thread ``b*B + j``); positions past the
    block's threads load nothing: ascending addresses, one per run. The rest of its loads, ``perm`` by every thread
    ``t < P``, have exactly the pattern of ``atomic(I)``'s ``I[t]``."""
    P = int(I.size)
    lanes, addrs = [], []
    for b in range(-(-P // B)):
        vals = np.sort(I[b * B:(b + 1) * B].astype(np.int64), kind="stable")
        starts = np.append(True, vals[1:] != vals[:-1])
        rank = np.cumsum(starts) - 1                                    # the run of sorted entry j
        lanes.append(b * B + np.arange(vals.size))
        addrs.append((b * B + rank) * 4)                                 # unique[b*B + key]
    if not lanes:
        return 0, 0
    return _warp_requests(np.concatenate(lanes), np.concatenate(addrs), B)
