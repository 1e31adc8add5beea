"""``shared_indices(I, block_size)``: the per-block table behind ``shared(I)`` and ``shared_sum(I)``.

For each block ``b`` of ``B`` consecutive entries of ``I[0:P]`` (the last block may be partial):

- ``unique[b*B + j]`` for ``j < count[b]``: the block's distinct index values, ascending;
- ``target[t]``: the rank of ``I[t]`` among its block's distinct values (low 16 bits), packed with
  its block's ``count`` (high 16 bits): ``rank | count << 16``. A ``shared(I)`` read then needs one
  coalesced load per thread before it stages the block's distinct elements, instead of a load of
  ``count`` by every thread and a second load after the staging barrier;
- ``perm[b*B + j]``: the ``j``-th entry of the block in sorted order (a stable argsort, so equal
  indices keep thread order and reductions have a fixed order), packed as ``thread | rank << 16``:
  its local thread id in the low 16 bits and the rank of its index value (the low half of that
  thread's ``target``) in the high 16 bits. A block has at most 1024 threads, so both fit. ``shared_sum`` reads
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
arrays, fully vectorised (one stable lexsort).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kernc.support.errors import KerncLaunchError

FIELDS = ("unique", "target", "perm", "count")


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
        if name in ("gunique", "gstart", "gpos", "gcount"):
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
    """Build the table for a 1-D ``uint32`` (or ``int32`` non-negative) index array.

    ``block_size`` must be a power of two in 32..1024 and equal to the ``@block`` size of the kernel
    the table is used with. Raises :class:`KerncLaunchError` for a bad array or block size.

    The table is a snapshot of the values: a launch given the table reads the index array it holds
    (``.indices``, the array passed here) through tables built from the values it had then, so
    after changing the array in place, build the table again (the CPU interpreter catches a stale
    table as an out-of-bounds read at best; on a GPU it reads the wrong elements).
    """
    if not (isinstance(block_size, int) and 32 <= block_size <= 1024 and block_size & (block_size - 1) == 0):
        raise KerncLaunchError(f"shared_indices: block_size must be a power of two in 32..1024, got {block_size!r}")
    if getattr(indices, "ndim", None) != 1 or getattr(indices, "dtype", None) not in (np.uint32, np.int32):
        raise KerncLaunchError("shared_indices: expected a 1-D uint32 (or int32) array")
    xp = _xp(indices)
    P = int(indices.shape[0])
    B = block_size
    nb = -(-P // B)
    n = nb * B
    vals = xp.full(n, 1 << 32, dtype=xp.int64)       # past P: larger than any uint32 value
    vals[:P] = indices.astype(xp.int64)
    if indices.dtype == np.int32 and P and bool((vals[:P] < 0).any()):
        raise KerncLaunchError("shared_indices: negative index values")
    pos = xp.arange(n, dtype=xp.int64)
    blk = pos // B
    order = xp.lexsort(xp.stack([pos, vals, blk]))   # by block, then value, then position (stable)
    svals = vals[order]
    start = xp.ones(n, dtype=bool)
    if n:
        start[1:] = (svals[1:] != svals[:-1]) | (blk[1:] != blk[:-1])
    # rank of each sorted entry within its block
    runs = xp.cumsum(start.astype(xp.int64)) - 1
    first_run = runs[blk * B]  # run index of each block's first sorted entry
    rank = runs - first_run
    target = xp.zeros(n, dtype=xp.int64)
    target[order] = rank
    perm = ((order - blk * B) | (rank << 16)).astype(xp.uint32)
    unique = xp.zeros(n, dtype=xp.uint32)
    valid = svals < (1 << 32)
    sel = start & valid
    unique[(blk * B + rank)[sel]] = svals[sel].astype(xp.uint32)
    count = xp.zeros(nb, dtype=xp.uint32)
    if n:
        count[:] = xp.bincount(blk[sel], minlength=nb).astype(xp.uint32)[:nb]
    target = (target | (count.astype(xp.int64)[blk] << 16)).astype(xp.uint32)
    return SharedIndices(indices, B, unique, target, perm, count)


def _merge_tables(t: SharedIndices) -> dict:
    xp = _xp(t.indices)
    B = t.block_size
    nb = int(t.count.shape[0])
    counts = t.count.astype(xp.int64)
    blocks = xp.repeat(xp.arange(nb, dtype=xp.int64), counts)          # block of each (block, rank)
    first = xp.cumsum(counts) - counts
    ranks = xp.arange(int(counts.sum()), dtype=xp.int64) - xp.repeat(first, counts)
    values = t.unique.astype(xp.int64)[blocks * B + ranks]
    order = xp.lexsort(xp.stack([blocks, values]))                     # by value, then block
    sv = values[order]
    start = xp.ones(sv.shape[0], dtype=bool)
    if sv.shape[0]:
        start[1:] = sv[1:] != sv[:-1]
    starts = xp.flatnonzero(start)
    G = int(starts.shape[0])
    gstart = xp.zeros(G + 1, dtype=xp.uint32)
    gstart[:G] = starts.astype(xp.uint32)
    gstart[G] = sv.shape[0]
    return {
        "gunique": sv[starts].astype(xp.uint32),
        "gstart": gstart,
        "gpos": (blocks * B + ranks)[order].astype(xp.uint32),
        "gcount": xp.asarray([G], dtype=xp.uint32),
    }
