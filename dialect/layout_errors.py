"""Errors and limits of the layout algebra (:mod:`kernc.dialect.layout_algebra`).

Every static layout has ``size``, offset span (``1 + sum (s_k - 1) |d_k|``, the cosize for
non-negative strides) and entries of magnitude at most :data:`MAX_LAYOUT_SIZE` (``2**48``: the 48-bit
virtual address space of current GPUs and CPUs), at most :data:`MAX_LAYOUT_MODES` flattened modes and
a nesting depth of at most :data:`MAX_LAYOUT_DEPTH`; a swizzle ``Sw<B,M,S>`` has ``B + M + |S| <=``
:data:`MAX_SWIZZLE_BITS`. Past a limit, building a layout raises :class:`LayoutLimitError`, which an
algebra operation (:func:`_limit_context`) prefixes with its own name and operands.
"""

from __future__ import annotations

import functools

from kernc.support.errors import KerncError

#: Largest size, offset span and entry magnitude of a static layout (the 48-bit virtual address
#: space of current GPUs and CPUs; see "Limits" in the module docstring of ``layout_algebra``).
MAX_LAYOUT_SIZE = 1 << 48
#: Most flattened modes (leaves) of a layout; one of size at most MAX_LAYOUT_SIZE has at most 48
#: modes of size > 1, the rest are size-1 modes, which products of products would double forever.
MAX_LAYOUT_MODES = 128
#: Deepest nesting of a layout's shape.
MAX_LAYOUT_DEPTH = 32
#: Largest ``B + M + |S|`` of a swizzle ``Sw<B,M,S>``: its masks stay below MAX_LAYOUT_SIZE.
MAX_SWIZZLE_BITS = MAX_LAYOUT_SIZE.bit_length() - 1


class LayoutError(KerncError, ValueError):
    """A layout is malformed, or an algebra operation is not defined for its operands.

    The message names the operands in CuTe notation (e.g. ``composition (4,6,8):(2,3,5) o 6:3 is not
    admissible: ...``)."""


class LayoutLimitError(LayoutError):
    """A layout or swizzle past one of the limits (``MAX_LAYOUT_SIZE``, ``MAX_LAYOUT_MODES``,
    ``MAX_LAYOUT_DEPTH``, ``MAX_SWIZZLE_BITS``). Raised by an algebra operation, the message starts
    with the outermost operation and its operands (``blocked_product(A, B): ...``), not with the
    intermediate layout that passed the limit."""

    def __init__(self, message: str, base: str = None):
        super().__init__(message)
        self.base = message if base is None else base


def _brief(text: str, most: int = 60) -> str:
    return text if len(text) <= most else text[:most - 3] + "..."


def _limit_context(fn):
    """Name ``fn`` and its operands in a :class:`LayoutLimitError` raised inside it (the outermost
    operation's wrapper runs last, so its name is the one the user sees)."""

    @functools.wraps(fn)
    def wrapper(*args):
        try:
            return fn(*args)
        except LayoutLimitError as err:
            ops = ", ".join(_brief(_tiler_str(a) if isinstance(a, (tuple, list)) else str(a)) for a in args)
            raise LayoutLimitError(f"{fn.__name__}({ops}): {err.base}", err.base) from None

    return wrapper


def _show_int(v: int) -> str:
    """``v`` in decimal, or ``about 2**k`` when it is too long to be worth printing."""
    if abs(v) < 10 ** 30:
        return str(v)
    return f"{'-' if v < 0 else ''}about 2**{abs(v).bit_length() - 1}"


def _limit_text() -> str:
    return f"2**{MAX_LAYOUT_SIZE.bit_length() - 1} (MAX_LAYOUT_SIZE)"


def _tiler_str(t) -> str:
    """A tiler (a tuple of layouts, ints and ``None``) as CuTe prints it: ``<2:1,_>``."""
    if isinstance(t, (tuple, list)):
        return "<" + ",".join(_tiler_str(e) for e in t) + ">"
    return "_" if t is None else str(t)
