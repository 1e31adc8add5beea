"""Caspar's storage layout (``as caspar``): planes of 16-byte chunks, for elements of any width.

The facts (SymForce Caspar's ``memory/layouts.py``, as the shared design note
``design/caspar-layout.md`` states them): an element of ``N`` scalars is split in order into chunks of
``cs = 16 / sizeof(T)`` scalars (4 floats, 2 doubles), chunk ``k`` holding scalars ``k*cs ...``; a
chunk of ``c`` scalars takes ``d = caspar_size(c)`` slots (a 3-float chunk is padded to a
``float4``), so ``d`` is 1, 2 or 4 (for halves, 8 per chunk, ``d`` is the power of two at or above
``c``: one vector load). Chunk ``k`` starts at row ``R_k = sum of d_j, j < k``, and scalar
``e`` of chunk ``k`` of object ``i`` is at flat offset ``R_k * M + i * d_k + e``. The host array is 2-D,
C-contiguous, of shape ``(caspar_size(N), M)`` (rows past the last chunk are unused: a double
3-vector uses 3 of its 4 rows). ``M`` is the buffer's element count (``dims[0]``).

Each chunk is one strided piece ``(M, c_k):(d_k, 1)+R_k*M`` over its components, lowered as one
accessor op per chunk (one 16-byte vector load or store per chunk and element). The accessors
whose buffer is a flat array rather than planes (``unique``, ``sum``, ``block_sum``: Caspar reads
``A[R_k + e]``, writes ``A[s]`` and ``A[b * caspar_size(N) + e]``) use the one flat layout
``(M, N):(caspar_size(N), 1)``, which equals the planes with ``M = 1``.
"""

from __future__ import annotations

from kernc.dialect import accessors
from kernc.dialect.strided import Poly, StridedLayout

#: Accessors whose ``as caspar`` buffer is flat, object-major (not planes).
FLAT_ACCESSORS = tuple(k.name for k in (accessors.UNIQUE, accessors.SUM, accessors.BLOCK_SUM, accessors.MAX,
                                        accessors.MIN, accessors.BLOCK_MAX, accessors.BLOCK_MIN))


def caspar_size(n: int) -> int:
    """Caspar's padded size of ``n`` floats: ``n + 1`` when ``n % 4 == 3`` (no ``float3``), else ``n``."""
    return n + 1 if n % 4 == 3 else n


def chunk_width(c: int) -> int:
    """Slots a chunk of ``c`` scalars takes: the power of two at or above ``c`` (``caspar_size(c)``
    for the 1 to 4 scalars of a float chunk)."""
    return 1 << (c - 1).bit_length()


def chunks(n: int, elem_bytes: int) -> list:
    """``[(first scalar, count, width d_k, row R_k)]`` of an element of ``n`` scalars of
    ``elem_bytes`` bytes each."""
    cs = 16 // elem_bytes
    out, row = [], 0
    for first in range(0, n, cs):
        c = min(cs, n - first)
        out.append((first, c, chunk_width(c), row))
        row += chunk_width(c)
    return out


def rows(n: int, elem_bytes: int) -> int:
    """The rows of the host array: ``caspar_size(n)``, or more where halves' chunks need them."""
    last = chunks(n, elem_bytes)[-1]
    return max(caspar_size(n), last[3] + last[2])


def flat_layout(m: Poly, n: int, elem_bytes: int) -> StridedLayout:
    """``(M, N):(rows, 1)``: the flat, object-major form (and the planes of a one-chunk element)."""
    return StridedLayout((m, Poly.const(n)), (Poly.const(rows(n, elem_bytes)), Poly.const(1)))


def planes(m: Poly, n: int, elem_bytes: int) -> list:
    """``[(first component, layout)]``: chunk ``k`` as the piece ``(M, c_k):(d_k, 1)+R_k*M`` over its
    ``c_k`` components."""
    return [(first, StridedLayout((m, Poly.const(c)), (Poly.const(d), Poly.const(1)),
                                  Poly.const(r) * m))
            for first, c, d, r in chunks(n, elem_bytes)]
