"""The ``shared_indices(I, B)`` tables behind ``shared(I)`` and ``shared_sum(I)``: their names and the
packing of two 16-bit fields into one ``u32`` entry.

The launcher builds the tables with numpy or CuPy (``backend/shared_indices.py``), the lowering
emits the loads that unpack them (``passes/lower_accessors_shared.py``,
``passes/lower_accessors_shared_sum.py``); both take the layout of an entry from here. Per block
``b`` of ``B`` consecutive entries of ``I[0:P]`` (the format: ``docs/accessor-lowering.md``):

- ``unique[b*B + j]``, ``j < count[b]``: the block's distinct index values, ascending;
- ``target[t] = pack(rank, count)``: the rank of ``I[t]`` among its block's distinct values in the
  low half, the block's ``count`` in the high half (``rank | count << 16``);
- ``perm[b*B + j] = pack(thread, rank)``: the ``j``-th entry of the block in sorted order, its local
  thread id in the low half and the rank of its value in the high half (``thread | rank << 16``);
- ``count[b]``: how many distinct values block ``b`` has.

A block has at most :data:`MAX_BLOCK` = 1024 threads, so a thread id, a rank and a count (at most
1024: ``count <= B``) each fit a 16-bit half. The helpers work on Python ints and on numpy/CuPy
integer arrays alike (only ``|``, ``&``, ``<<``, ``>>``).
"""

from __future__ import annotations

#: Bits of the low half of a packed entry; the high half starts there.
HALF_BITS = 16
#: The mask of the low half (``0xFFFF``).
LOW_MASK = (1 << HALF_BITS) - 1
#: The largest block size the packing holds (a thread id, rank or count up to ``2^16 - 1``; kernc's
#: blocks have at most 1024 threads).
MAX_BLOCK = LOW_MASK

#: The per-block tables, each a hidden ``kind="table"`` param of the kernel for every index param
#: that ``shared(I)`` or ``shared_sum(I)`` reads (``Param.table_field``), in argument order.
TABLES = ("unique", "target", "perm", "count")
UNIQUE, TARGET, PERM, COUNT = TABLES
#: The global merge tables ``@deterministic`` ``shared_sum(I)`` adds after the size symbols:
#: ``gunique`` (the distinct values of the whole ``I``), ``gstart`` (offsets into ``gpos``),
#: ``gpos`` (the slots ``b*B + rank`` holding each value, in block order), ``gcount`` (``[G]``).
MERGE_TABLES = ("gunique", "gstart", "gpos", "gcount")
GUNIQUE, GSTART, GPOS, GCOUNT = MERGE_TABLES


def table_name(index_param: str, table: str) -> str:
    """The hidden param of ``table`` for index param ``index_param``: ``"I.unique"``."""
    return f"{index_param}.{table}"


def pack(low, high):
    """One entry from its low and high halves (each ``<= LOW_MASK``): ``low | high << 16``."""
    return low | (high << HALF_BITS)


def low_half(entry):
    """The low half of a packed entry: ``entry & 0xFFFF`` (``target``: the rank; ``perm``: the thread)."""
    return entry & LOW_MASK


def high_half(entry):
    """The high half of a packed entry: ``entry >> 16`` (``target``: the count; ``perm``: the rank)."""
    return entry >> HALF_BITS
