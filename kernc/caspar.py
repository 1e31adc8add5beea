"""Host-side conversion to and from Caspar's storage (``as caspar`` buffers).

An ``as caspar`` buffer ``T[M, N]`` is a numpy array of shape ``(rows, M)`` holding planes of
16-byte chunks (``docs/language.md`` §6, ``frontend/caspar.py``; the facts are SymForce Caspar's
``memory/layouts.py``): component ``e`` of chunk ``k`` of element ``i`` sits at flat offset
``R_k * M + i * d_k + e``. :func:`to_caspar` builds that array from the natural ``(M, N)`` one and
:func:`from_caspar` reads it back; padding slots are zero.
"""

from __future__ import annotations

import numpy as np

from kernc.frontend import caspar as _layout


def rows(n: int, dtype) -> int:
    """Rows of the host array of an ``N = n``-component element of ``dtype`` (``caspar_size(n)``
    for floats: 4 for a 3-vector, 10 for a 9-parameter camera... of f32; halves may need more)."""
    return _layout.rows(n, np.dtype(dtype).itemsize)


def to_caspar(x) -> np.ndarray:
    """The Caspar host array ``(rows, M)`` of the elements ``x``, shape ``(M, N)`` with ``N >= 2``,
    any integer or float dtype (kept; a C-contiguous copy). Raises ``ValueError`` for another
    rank, ``N < 2`` or another dtype kind."""
    x = np.asarray(x)
    if x.dtype.kind not in "fiu":
        raise ValueError(f"to_caspar takes integer or float elements (the types kernc stores), got {x.dtype}")
    if x.ndim != 2 or x.shape[1] < 2:
        raise ValueError(f"to_caspar takes elements of shape (M, N) with N >= 2, got shape {x.shape}")
    M, N = x.shape
    out = np.zeros((rows(N, x.dtype), M), x.dtype)
    flat = out.reshape(-1)
    for first, c, d, r in _layout.chunks(N, x.dtype.itemsize):
        flat[r * M:(r + d) * M].reshape(M, d)[:, :c] = x[:, first:first + c]
    return out


def from_caspar(a, n: int) -> np.ndarray:
    """The elements ``(M, n)`` held by the Caspar host array ``a`` (shape ``(rows, M)``, as
    :func:`to_caspar` gives). Raises ``ValueError`` when ``a``'s shape does not fit ``n``."""
    a = np.asarray(a)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"from_caspar's component count must be an integer, got {n!r}")
    if a.dtype.kind not in "fiu":
        raise ValueError(f"from_caspar takes integer or float arrays, got {a.dtype}")
    if a.ndim != 2 or n < 2 or a.shape[0] != rows(n, a.dtype):
        raise ValueError(f"a Caspar array of {n}-component {a.dtype} elements has shape "
                         f"({rows(n, a.dtype) if n >= 2 else '?'}, M), got {a.shape}")
    M = a.shape[1]
    flat = np.ascontiguousarray(a).reshape(-1)
    out = np.empty((M, n), a.dtype)
    for first, c, d, r in _layout.chunks(n, a.dtype.itemsize):
        out[:, first:first + c] = flat[r * M:(r + d) * M].reshape(M, d)[:, :c]
    return out
