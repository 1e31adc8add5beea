"""The traffic model: :class:`RunStats` and how one memory op adds to it.

Requests per warp, distinct 32-byte sectors per global request and bank conflicts per workgroup
request, as defined in :class:`RunStats` (after the CUDA C++ Programming Guide, "Device Memory
Accesses" and "Shared Memory").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from kernc.backend.stats_table import stats_html, stats_table

from .frame import _Buf, _Frame

#: Threads per warp (NVIDIA).
WARP_SIZE = 32
#: Bytes per global-memory sector (CUDA Programming Guide, "Device Memory Accesses").
SECTOR_BYTES = 32
#: Shared-memory banks and their width (CUDA Programming Guide, "Shared Memory", compute capability 5.x+).
SHARED_BANKS = 32
BANK_BYTES = 4


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

    Not counted: the tensor memory accelerator's copies (``cp.async.bulk.tensor``) and ``wgmma``'s
    operand reads -- no thread's load or store: a ``--tma`` build's tiles show as no global load
    requests and no shared requests (only its other operand's stores, if any).
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

    def __str__(self) -> str:  # an aligned table (backend/stats_table.py)
        return stats_table(self)

    def _repr_html_(self) -> str:  # Jupyter
        return stats_html(self)


def _count_runs(sorted_keys: np.ndarray) -> int:
    """Number of distinct values of a non-decreasing integer array."""
    n = sorted_keys.size
    if n == 0:
        return 0
    return 1 + int(np.count_nonzero(sorted_keys[1:] != sorted_keys[:-1]))


# Distinct sectors and bank-conflict words are counted per warp (or phase) on a matrix with one row
# per warp and one column per lane (times the keys per lane), sorted along its rows: numpy's sort of
# short rows costs a few ns per element, where np.unique's hash path cost 77-229 ns and was most of
# a transpose's run. Empty cells (inactive lanes) hold _EMPTY, above every key, so a row whose
# active lanes are in order is in order.
_EMPTY = np.iinfo(np.int64).max


def _lane_matrix(fr: _Frame, act, keys: np.ndarray) -> np.ndarray:
    """``keys`` (shape ``(n,)`` or ``(n, k)``: per accessed lane, ``k`` keys >= 0) as an int64 matrix
    of shape ``(warps, 32 * k)``: row = warp (only warps with an active lane), column = lane in the
    warp times ``k`` plus the key's position; ``_EMPTY`` where a lane is inactive or past the
    block's end."""
    k = 1 if keys.ndim == 1 else keys.shape[1]
    if act is None:
        warps, lanes = fr.warp, fr.lane_in_warp
        if warps.size == fr.nwarps * WARP_SIZE:  # every warp full: lanes are already in row order
            return keys.reshape(fr.nwarps, WARP_SIZE * k)
    else:
        warps, lanes = fr.warp[act], fr.lane_in_warp[act]
    n = warps.size
    row = np.zeros(n, dtype=np.int64)
    if n > 1:
        np.cumsum(warps[1:] != warps[:-1], out=row[1:])  # warps are non-decreasing
    nrows = int(row[-1]) + 1 if n else 0
    m = np.full((nrows, WARP_SIZE, k), _EMPTY, dtype=np.int64)
    m[row, lanes] = keys.reshape(n, k)
    return m.reshape(nrows, WARP_SIZE * k)


def _distinct_per_row(m: np.ndarray) -> int:
    """Sum over the rows of ``m`` (a lane matrix) of the number of distinct keys (not ``_EMPTY``)."""
    if m.size == 0:
        return 0
    if not bool((m[:, 1:] >= m[:, :-1]).all()):  # in order already (a coalesced access): no sort
        m = np.sort(m, axis=1)
    # a sorted row holds (changes + 1) distinct values, one of them _EMPTY when its last cell is
    return int(np.count_nonzero(m[:, 1:] != m[:, :-1])) + m.shape[0] - int(np.count_nonzero(m[:, -1] == _EMPTY))


def _distinct_sectors(fr: _Frame, act, warps: np.ndarray, keys: np.ndarray) -> int:
    """Number of distinct ``(warp, key)`` pairs of the accessed lanes (``warps`` non-decreasing,
    aligned with ``keys``, shape ``(n,)`` or ``(n, k)``, keys >= 0).

    Warps whose keys are non-decreasing in lane order (a coalesced access) are counted in one pass;
    otherwise the rows of the :func:`_lane_matrix` are sorted.
    """
    if keys.size == 0:
        return 0
    if act is not None or warps.size != fr.nwarps * WARP_SIZE:
        flat = keys.reshape(-1)
        w = warps if keys.ndim == 1 else np.repeat(warps, keys.shape[1])
        dw = w[1:] != w[:-1]
        if not bool(((flat[1:] < flat[:-1]) & ~dw).any()):
            return 1 + int(np.count_nonzero((flat[1:] != flat[:-1]) | dw))
    return _distinct_per_row(_lane_matrix(fr, act, keys))


def _bank_masks(m: np.ndarray) -> np.ndarray:
    """Per cell of ``m`` (word indices, ``_EMPTY`` for none), the ``uint32`` bit of its bank:
    ``1 << (word mod 32)``. 32-bit masks, half the memory of int64 ones, whose row ORs
    (``np.bitwise_or.reduce(axis=1)``) cost 4-6x less than int64 ORs of halved rows."""
    return np.left_shift(np.uint32(1), m.astype(np.uint32) & np.uint32(SHARED_BANKS - 1))


def _bank_conflicts(m: np.ndarray) -> int:
    """Sum over the rows of ``m`` (one warp request or phase: 32 columns of 4-byte word indices,
    ``_EMPTY`` for none) of (the maximum over the 32 banks of the distinct words in that bank) - 1."""
    rows = m.shape[0]
    if rows == 0:
        return 0
    bits = _bank_masks(m)
    every_bank = np.bitwise_or.reduce(bits, axis=1)
    if bool((every_bank == (1 << SHARED_BANKS) - 1).all()):
        return 0  # 32 lanes in 32 banks in every request (consecutive or odd-strided words)
    valid = m != _EMPTY
    full = bool(valid.all())
    if not full:
        bits[~valid] = 0
        banks = np.bitwise_count(np.bitwise_or.reduce(bits, axis=1))
        if bool((banks == np.count_nonzero(valid, axis=1)).all()):
            return 0  # every active lane of a request in its own bank
    s = m if bool((m[:, 1:] >= m[:, :-1]).all()) else np.sort(m, axis=1)  # (_EMPTY sorts last)
    hi = s[:, -1] if full else np.where(valid if s is m else s != _EMPTY, s, -1).max(axis=1)
    if bool((hi - s[:, 0] < SHARED_BANKS).all()):
        return 0  # each request's words within 32 consecutive ones (a broadcast, ranks): no conflict
    first = np.empty(s.shape, dtype=np.bool_)  # the first of each distinct word
    first[:, 0] = True
    np.not_equal(s[:, 1:], s[:, :-1], out=first[:, 1:])
    first &= s != _EMPTY
    ids = (s & (SHARED_BANKS - 1)) + (np.arange(rows, dtype=np.int64) * SHARED_BANKS)[:, None]
    per_bank = np.bincount(ids[first], minlength=rows * SHARED_BANKS).reshape(rows, SHARED_BANKS)
    return int(np.maximum(per_bank.max(axis=1) - 1, 0).sum())


def _sector_of(rel, itemsize: int):
    """The 32-byte sector of element ``rel`` (>= 0) of a buffer of ``itemsize``-byte elements."""
    if itemsize & (itemsize - 1) == 0 and itemsize <= SECTOR_BYTES:
        return rel >> (SECTOR_BYTES // itemsize).bit_length() - 1
    return (rel * itemsize) // SECTOR_BYTES


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
        nsec = _distinct_sectors(fr, act, warps, np.stack([lo, hi], axis=1))
    else:
        nsec = nreq
    if kind == "load":
        st.global_load_requests += nreq
        st.global_load_sectors += nsec
    else:
        st.global_store_requests += nreq
        st.global_store_sectors += nsec


def _count_run(fr: _Frame, buf: _Buf, start: int, kind: str):
    """Statistics of an access by every lane of the batch of consecutive elements, lane ``l``
    accessing element ``start + l`` of a global buffer, or element ``start + thread`` of a
    workgroup array (one per block): as :func:`_count` counts it, in closed form when the
    warps are whole (a block a multiple of 32 threads)."""
    st = fr.stats
    if buf.kind == "private":
        return
    if buf.kind == "workgroup":
        st.shared_requests += fr.nwarps  # consecutive words: one per bank, or a broadcast
        return
    if fr.B % WARP_SIZE:
        rel = start + np.arange(fr.L, dtype=np.int64)
        _count(fr, buf, None, rel, kind)
        return
    # warp w reads bytes [f, f + 32 * itemsize) with f = (start + 32 w) * itemsize: every warp starts
    # at the same offset o = f mod 32 into a sector, so each touches the same number of sectors
    o = (start * buf.itemsize) % SECTOR_BYTES
    nsec = fr.nwarps * ((o + WARP_SIZE * buf.itemsize - 1) // SECTOR_BYTES + 1)
    if kind == "load":
        st.global_load_requests += fr.nwarps
        st.global_load_sectors += nsec
    else:
        st.global_store_requests += fr.nwarps
        st.global_store_sectors += nsec


class _FirstBlock:
    """The lane layout of the first block of a batch (what :func:`_lane_matrix` reads)."""

    __slots__ = ("warp", "lane_in_warp", "nwarps")

    def __init__(self, fr: _Frame):
        self.warp, self.lane_in_warp = fr.warp[:fr.B], fr.lane_in_warp[:fr.B]
        self.nwarps = fr.nwarps // fr.nb


def _count_periodic(fr: _Frame, buf: _Buf, g: np.ndarray, kind: str):
    """As :func:`_count` for an access of workgroup memory by every lane of the batch at an index
    that is the same function of the thread in every block (``g``: the first block's indices):
    the first block's bank conflicts, times the blocks."""
    st = fr.stats
    st.shared_requests += fr.nwarps
    isz = buf.itemsize
    if isz <= BANK_BYTES:
        words = g if isz == BANK_BYTES else (g * isz) // BANK_BYTES
    else:
        k = isz // BANK_BYTES
        words = g[:, None] * k + np.arange(k)
    first = _lane_matrix(_FirstBlock(fr), None, words).reshape(-1, WARP_SIZE)
    st.shared_bank_conflicts += fr.nb * _bank_conflicts(first)


def _count_masked(fr: _Frame, buf: _Buf, mask: np.ndarray, rel: np.ndarray, kind: str):
    """As :func:`_count` for the lanes of ``mask`` (a bool lane array, most lanes set), with ``rel``
    the index of every lane (any value where ``mask`` is false): the lane matrix is the lanes'
    keys with the inactive ones emptied, without gathering the active lanes first."""
    if buf.kind == "private":
        return
    if fr.L != fr.nwarps * WARP_SIZE or kind == "atomic":
        act = np.flatnonzero(mask)
        _count(fr, buf, act, rel[act], kind)
        return
    st = fr.stats
    nreq = int(np.count_nonzero(mask.reshape(fr.nwarps, WARP_SIZE).any(axis=1)))
    isz = buf.itemsize
    if buf.kind == "global":
        keys = np.where(mask, _sector_of(rel, isz), _EMPTY)
        nsec = _distinct_per_row(keys.reshape(fr.nwarps, WARP_SIZE))
        if kind == "load":
            st.global_load_requests += nreq
            st.global_load_sectors += nsec
        else:
            st.global_store_requests += nreq
            st.global_store_sectors += nsec
        return
    st.shared_requests += nreq
    if isz <= BANK_BYTES:
        words = np.where(mask, rel if isz == BANK_BYTES else (rel * isz) // BANK_BYTES, _EMPTY)
    else:
        k = isz // BANK_BYTES
        words = np.where(mask[:, None], rel[:, None] * k + np.arange(k), _EMPTY)
    st.shared_bank_conflicts += _bank_conflicts(words.reshape(-1, WARP_SIZE))


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
            nsec = _distinct_sectors(fr, act, warps, _sector_of(rel, buf.itemsize))
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
        words = rel if isz == BANK_BYTES else (rel * isz) // BANK_BYTES
    else:
        # an 8- or 16-byte access is served in 2 or 4 phases of 16 or 8 lanes (128 bytes each): a
        # bank conflict is a second word in one bank within a phase, not across phases. Row
        # ``warp`` of the lane matrix holds lane l's k words at columns l*k..l*k+k-1, so its rows
        # of 32 columns are the phases.
        k = isz // BANK_BYTES
        words = rel[:, None] * k + np.arange(k)
    st.shared_bank_conflicts += _bank_conflicts(_lane_matrix(fr, act, words).reshape(-1, WARP_SIZE))
