"""The traffic model: :class:`RunStats` and how one memory op adds to it.

Requests per warp, distinct 32-byte sectors per global request and bank conflicts per workgroup
request, as defined in :class:`RunStats` (after the CUDA C++ Programming Guide, "Device Memory
Accesses" and "Shared Memory").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .frame import _Buf, _Frame

#: Threads per warp (NVIDIA).
WARP_SIZE = 32
#: Bytes per global-memory sector (CUDA Programming Guide, "Device Memory Accesses").
SECTOR_BYTES = 32
#: Shared-memory banks and their width (CUDA Programming Guide, "Shared Memory", compute capability 5.x+).
SHARED_BANKS = 32
BANK_BYTES = 4


_KEY_SHIFT = 40  # (warp << _KEY_SHIFT) | address-derived key, for np.unique over (warp, address) pairs


@dataclass
class RunStats:
    """Memory-traffic counters of one :meth:`Interpreter.run`.

    Definitions (after the CUDA C++ Programming Guide, "Device Memory Accesses" and "Shared Memory"):

    - a *request* is one warp-level execution of a load/store instruction with at least one active
      lane; warps are the groups of 32 consecutive threads of a block (the last one may be partial);
    - ``global_*_sectors``: per request, the number of distinct 32-byte segments
      (``byte_address // 32``, byte address = element index * itemsize, buffers assumed 256-byte
      aligned) touched by the warp's active lanes, summed over requests;
    - ``global_atomics``: active lanes that executed a global ``memref.atomic_rmw``;
    - ``shared_requests``: warp requests to workgroup memory (loads, stores and atomics);
    - ``shared_bank_conflicts``: per shared request, (the maximum over the 32 banks of the number of
      distinct 4-byte words the warp accesses in that bank) - 1, summed; bank =
      ``(byte_address // 4) % 32`` within the attribution (each attribution is assumed 128-byte
      aligned); several lanes reading one word is a broadcast, not a conflict; an 8-byte (16-byte)
      element occupies two (four) words, and its request is served in 2 (4) phases of 16 (8)
      consecutive lanes, 128 bytes each, counted separately (a conflict-free f64 warp access counts
      0, as Nsight Compute's excess wavefronts do);
    - ``threads`` = grid * block, ``blocks`` = grid.
    """

    global_load_requests: int = 0
    global_load_sectors: int = 0
    global_store_requests: int = 0
    global_store_sectors: int = 0
    global_atomics: int = 0
    shared_requests: int = 0
    shared_bank_conflicts: int = 0
    threads: int = 0
    blocks: int = 0

    def to_dict(self) -> dict:
        """The counters as a JSON-serialisable ``dict`` of ``int`` (keys as the field names)."""
        return {k: int(v) for k, v in asdict(self).items()}


def _count_runs(sorted_keys: np.ndarray) -> int:
    """Number of distinct values of a non-decreasing integer array."""
    n = sorted_keys.size
    if n == 0:
        return 0
    return 1 + int(np.count_nonzero(sorted_keys[1:] != sorted_keys[:-1]))


def _count_distinct_pairs(warps: np.ndarray, keys: np.ndarray) -> int:
    """Number of distinct ``(warp, key)`` pairs; ``warps`` is non-decreasing, ``keys`` >= 0.

    Warps whose keys are non-decreasing (the common, coalesced case) are counted in O(n) without
    sorting; only the other warps go through ``np.unique``.
    """
    n = keys.size
    if n == 0:
        return 0
    dk = keys[1:] != keys[:-1]
    dw = warps[1:] != warps[:-1]
    broken = (keys[1:] < keys[:-1]) & ~dw
    if not broken.any():
        return 1 + int(np.count_nonzero(dk | dw))
    bad_warps = np.unique(warps[1:][broken])
    in_bad = np.isin(warps, bad_warps)
    total = int(np.unique((warps[in_bad] << _KEY_SHIFT) | keys[in_bad]).size)
    good = ~in_bad
    if good.any():
        gw, gk = warps[good], keys[good]
        total += 1 + int(np.count_nonzero((gk[1:] != gk[:-1]) | (gw[1:] != gw[:-1])))
    return total


def _bank_conflicts(warps: np.ndarray, words: np.ndarray) -> int:
    """Sum over warps (or phases: any integer group id) of (max over banks of distinct words in the
    bank) - 1."""
    if warps.size == 0:
        return 0
    keys = np.unique((warps << _KEY_SHIFT) | words)
    w = keys >> _KEY_SHIFT
    bank = (keys & ((1 << _KEY_SHIFT) - 1)) % SHARED_BANKS
    wb, counts = np.unique((w << 5) | bank, return_counts=True)
    ww = wb >> 5
    starts = np.flatnonzero(np.concatenate(([True], ww[1:] != ww[:-1])))
    worst = np.maximum.reduceat(counts, starts)
    return int((worst - 1).sum())


def _count_vector(fr: _Frame, buf: _Buf, act, rel, n: int, kind: str):
    """Statistics of one ``n``-element vector access per lane: one request per warp; the sectors are
    those the lanes' ``n * itemsize``-byte ranges touch."""
    st = fr.stats
    if buf.kind != "global":
        _count(fr, buf, act, rel, kind)
        return
    warps = fr.warp if act is None else fr.warp[act]
    nreq = fr.nwarps if act is None else _count_runs(warps)
    if type(rel) is np.ndarray:
        lo = (rel * buf.itemsize) // SECTOR_BYTES
        hi = ((rel + n) * buf.itemsize - 1) // SECTOR_BYTES
        keys = np.stack([lo, hi], axis=1).reshape(-1)
        nsec = int(np.unique((np.repeat(warps, 2) << _KEY_SHIFT) | keys).size)
    else:
        nsec = nreq
    if kind == "load":
        st.global_load_requests += nreq
        st.global_load_sectors += nsec
    else:
        st.global_store_requests += nreq
        st.global_store_sectors += nsec


def _count(fr: _Frame, buf: _Buf, act, rel, kind: str):
    """Update the memory statistics for one executed memory op (``kind``: load/store/atomic)."""
    st = fr.stats
    if buf.kind == "private":
        return
    if act is None:
        warps = fr.warp
        nreq = fr.nwarps
    else:
        warps = fr.warp[act]
        nreq = _count_runs(warps)
    if buf.kind == "global":
        if kind == "atomic":
            st.global_atomics += int(warps.size)
            return
        if type(rel) is np.ndarray:
            nsec = _count_distinct_pairs(warps, (rel * buf.itemsize) // SECTOR_BYTES)
        else:
            nsec = nreq
        if kind == "load":
            st.global_load_requests += nreq
            st.global_load_sectors += nsec
        else:
            st.global_store_requests += nreq
            st.global_store_sectors += nsec
        return
    # workgroup memory
    st.shared_requests += nreq
    if type(rel) is not np.ndarray:
        return  # every lane touches the same word(s): broadcast
    isz = buf.itemsize
    if isz <= BANK_BYTES:
        words = (rel * isz) // BANK_BYTES
        w = warps
    else:
        # an 8- or 16-byte access is served in 2 or 4 phases of 16 or 8 lanes (128 bytes each):
        # a bank conflict is a second word in one bank within a phase, not across phases
        k = isz // BANK_BYTES
        lanes = fr.lane_in_warp if act is None else fr.lane_in_warp[act]
        phase = warps * k + lanes // (WARP_SIZE // k)
        words = (rel[:, None] * k + np.arange(k)).reshape(-1)
        w = np.repeat(phase, k)
    st.shared_bank_conflicts += _bank_conflicts(w, words)
