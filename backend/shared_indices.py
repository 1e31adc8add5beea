"""``shared_indices(I, block_size)``: the per-block table behind ``shared(I)`` and ``shared_sum(I)``.

For each block ``b`` of ``B`` consecutive entries of ``I[0:P]`` (the last block may be partial):

- ``unique[b*B + j]`` for ``j < count[b]``: the block's distinct index values, ascending;
- ``target[t]``: the rank of ``I[t]`` among its block's distinct values (low half), packed with
  its block's ``count`` (high half): ``shared_table.pack(rank, count)``. A ``shared(I)`` read then
  needs one coalesced load per thread before it stages the block's distinct elements, instead of a
  load of ``count`` by every thread and a second load after the staging barrier;
- ``perm[b*B + j]``: the ``j``-th entry of the block in sorted order (a stable argsort, so equal
  indices keep thread order and reductions have a fixed order), packed as
  ``shared_table.pack(thread, rank)``: its local thread id in the low half and the rank of its
  index value (the low half of that thread's ``target``) in the high half (the packing:
  ``dialect/shared_table.py``). A block has at most 1024 threads, so both fit. ``shared_sum`` reads
  its sorted entry's source thread and run key with this one coalesced load instead of gathering
  ``target`` at a permuted address (Caspar's ``SharedIndex`` record packs its target and argsort
  fields as 16-bit halves the same way);
- ``count[b]``: how many distinct values block ``b`` has.

All four are ``uint32`` arrays (``unique``, ``target``, ``perm`` of length ``ceil(P/B)*B``, ``count`` of
length ``ceil(P/B)``); entries past ``P`` (the padding of the last block) are never read. No index value is reserved as a
sentinel: validity comes from ``count`` and ``P`` (Caspar's published ``SharedIndex`` encoding
reserves ``0xFFFFFFFF``; kernc does not).

``@deterministic`` ``shared_sum(I)`` kernels also need the *merge tables* (computed on first use):
``gunique`` (the ``G`` distinct values of the whole ``I``, ascending), ``gstart`` (``G + 1`` offsets
into ``gpos``), ``gpos`` (for each distinct value, the slots ``b*B + rank`` of the blocks that hold
it, in block order) and ``gcount`` (``[G]``). Computed with numpy for host arrays and CuPy for device
arrays, fully vectorised (one sort of a packed key).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from kernc.dialect import shared_table
from kernc.dialect.shared_table import pack
from kernc.support.errors import KerncLaunchError


@dataclass
class SharedIndices:
    """A ``shared_indices`` table for index array ``indices`` (kept, so a kernel can take this object
    in place of ``I``) at ``block_size``. Arrays are numpy or CuPy, like ``indices``."""

    indices: object
    block_size: int
    unique: object
    target: object
    perm: object
    count: object

    @property
    def problem_size(self) -> int:
        return int(self.indices.shape[0])

    def field(self, name: str):
        """One table by name: ``unique``, ``target``, ``perm``, ``count`` or a merge table."""
        if name in shared_table.MERGE_TABLES:
            return self.merge_tables()[name]
        return getattr(self, name)

    def merge_tables(self) -> dict:
        """The global merge tables of ``@deterministic`` shared sums (cached)."""
        cached = getattr(self, "_merge", None)
        if cached is None:
            cached = self._merge = _merge_tables(self)
        return cached


def _xp(a):
    if isinstance(a, np.ndarray):
        return np
    import cupy

    return cupy


def shared_indices(indices, block_size: int) -> SharedIndices:
    """Build the table for a 1-D ``uint32`` (or non-negative ``int32``; ``uint16``/``uint8``, or
    non-negative ``int16``/``int8``, widened) index array.

    ``block_size`` must be a power of two in 32..1024 and equal to the ``@block`` size of the kernel
    the table is used with. Raises :class:`KerncLaunchError` for a bad array or block size.

    The table is a snapshot of the values: a launch given the table reads the index array it holds
    (``.indices``, the array passed here) through tables built from the values it had then, so
    after changing the array in place, build the table again (the CPU interpreter catches a stale
    table as an out-of-bounds read at best; on a GPU it reads the wrong elements).

    One sort of a packed key per block: ``value << 32 | thread`` (``uint64``), sorted along the rows
    of a ``(blocks, B)`` matrix, orders each block by value and, among equal values, by thread (the
    stable order). Every table then follows from the sorted keys in a few passes (the value and the
    thread are the two 32-bit halves of a key, read in place). On the host the blocks go through in
    chunks of about :data:`CHUNK` entries, so the scratch memory stays small next to the tables:
    peak memory about the input and the four tables plus 17 bytes per chunk entry.
    """
    if not (isinstance(block_size, int) and 32 <= block_size <= 1024 and block_size & (block_size - 1) == 0):
        raise KerncLaunchError(f"shared_indices: block_size must be a power of two in 32..1024, got {block_size!r}")
    if getattr(indices, "ndim", None) != 1 or getattr(indices, "dtype", None) not in INDEX_DTYPES:
        raise KerncLaunchError("shared_indices: expected a 1-D uint32 (or int32, uint16, int16, uint8, "
                               "int8) array")
    xp = _xp(indices)
    P = int(indices.shape[0])
    B = block_size
    if indices.dtype.kind == "i" and P and int(indices.min()) < 0:
        raise KerncLaunchError("shared_indices: negative index values")
    # 8/16-bit indices are widened (exactly: they are non-negative) to the tables' 32 bits
    vals = indices.view(xp.uint32) if indices.dtype.itemsize == 4 else indices.astype(xp.uint32)
    nb = -(-P // B)
    unique = xp.zeros(nb * B, dtype=xp.uint32)
    target = xp.empty(nb * B, dtype=xp.uint32)
    perm = xp.empty(nb * B, dtype=xp.uint32)
    count = xp.empty(nb, dtype=xp.uint32)
    full = P // B
    step = max(1, CHUNK // B) if xp is np else max(full, 1)  # the device takes every block at once
    for b in range(0, full, step):
        e = min(b + step, full)
        _blocks(xp, vals[b * B:e * B].reshape(e - b, B), unique[b * B:e * B], target[b * B:e * B],
                perm[b * B:e * B], count[b:e])
    rem = P - full * B
    if rem:  # the last block, partial: its padding sorts after every entry, in thread order
        b = full * B
        _blocks(xp, vals[b:P].reshape(1, rem), unique[b:], target[b:P], perm[b:P], count[full:])
        pad = xp.arange(rem, B, dtype=xp.uint32)
        distinct = count[full:]  # the padding's rank: past the block's distinct values
        perm[b + rem:] = pack(pad, distinct)
        target[b + rem:] = pack(distinct, distinct)
    return SharedIndices(indices, B, unique, target, perm, count)


#: The dtypes of the index arrays :func:`shared_indices` takes (the ``I`` of ``shared(I)``).
INDEX_DTYPES = tuple(np.dtype(t) for t in ("uint32", "int32", "uint16", "int16", "uint8", "int8"))
#: Entries per chunk of blocks on the host (see :func:`shared_indices`).
CHUNK = 1 << 16
_HI = 1 if sys.byteorder == "little" else 0  # the uint32 half of a uint64 that holds its high bits


def _blocks(xp, vals, unique, target, perm, count) -> None:
    """The tables of ``r`` blocks of ``w`` entries each: ``vals`` is ``(r, w)`` uint32 (``w`` is the
    block size ``B``, or the entries of a partial last block); ``unique``, ``target``, ``perm``
    (flat, ``r * B``, ``r * w`` and ``r * w`` entries; ``unique`` zero) and ``count`` (``r``) are
    written."""
    r, w = vals.shape
    B = unique.shape[0] // r
    key = xp.empty((r, w), dtype=xp.uint64)
    halves = key.view(xp.uint32).reshape(r, w, 2)
    halves[:, :, _HI] = vals
    halves[:, :, 1 - _HI] = xp.arange(w, dtype=xp.uint32)
    if not bool((key[:, 1:] >= key[:, :-1]).all()):  # (sorted input: the rows are in order already)
        key.sort(axis=1)  # by value, then thread: keys are distinct within a row
    svals, thread = halves[:, :, _HI], halves[:, :, 1 - _HI]
    start = xp.empty((r, w), dtype=bool)  # the first entry of each distinct value of a block
    start[:, 0] = True
    xp.not_equal(svals[:, 1:], svals[:, :-1], out=start[:, 1:])
    rank = xp.cumsum(start, axis=1, dtype=xp.uint32)
    rank -= 1
    distinct = rank[:, -1] + 1
    count[:] = distinct
    perm.reshape(r, w)[:] = pack(thread, rank)
    row = xp.arange(r, dtype=xp.int64)[:, None]
    target[(row * w + thread)] = pack(rank, distinct[:, None])
    # every entry writes its value at its rank: the entries of one run write one value to one slot,
    # so this is the distinct values in order, without compressing the runs' first entries
    unique[(row * B + rank)] = svals


def _merge_tables(t: SharedIndices) -> dict:
    """The ``@deterministic`` merge tables of ``t`` (module docstring) with one sort of a packed key
    ``value << 32 | slot`` (``uint64``) over the ``(block, rank)`` slots ``b*B + rank`` holding a
    distinct value: sorted, the keys run by value and, among equal values, by slot, which is block
    order. The distinct values and the slots are the keys' two 32-bit halves (slots fit: the
    tables are ``uint32`` arrays of ``ceil(P/B)*B`` entries)."""
    xp = _xp(t.indices)
    B = t.block_size
    held = xp.arange(B, dtype=xp.uint32)[None, :] < t.count[:, None]  # (nb, B): slot holds a value
    slots = xp.flatnonzero(held.reshape(-1))
    key = t.unique[slots].astype(xp.uint64)
    key <<= xp.uint64(32)
    key |= slots.astype(xp.uint64)
    key.sort()
    halves = key.view(xp.uint32).reshape(-1, 2)
    values, gpos = halves[:, _HI], halves[:, 1 - _HI]
    start = xp.ones(values.shape[0], dtype=bool)
    if values.shape[0]:
        xp.not_equal(values[1:], values[:-1], out=start[1:])
    starts = xp.flatnonzero(start)
    G = int(starts.shape[0])
    gstart = xp.empty(G + 1, dtype=xp.uint32)
    gstart[:G] = starts
    gstart[G] = values.shape[0]
    return {
        "gunique": values[starts],
        "gstart": gstart,
        "gpos": xp.ascontiguousarray(gpos),
        "gcount": xp.asarray([G], dtype=xp.uint32),
    }
