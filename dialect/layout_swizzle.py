"""Swizzles (CuTe's ``Swizzle<B,M,S>``, ``swizzle.hpp``) and the :class:`ComposedLayout`
``outer o offset o inner`` they make with a layout.
"""

from __future__ import annotations

import operator

from .layout_errors import MAX_SWIZZLE_BITS, LayoutError, LayoutLimitError, _limit_text
from .layout_eval import _max_image
from .layout_type import FunctionalLayout, Layout


class Swizzle:
    """CuTe's ``Swizzle<B,M,S>``: ``x ^ ((x & yyy_mask) >> S)`` (a left shift by ``-S`` when ``S < 0``).

    ``yyy_mask = ((1<<B)-1) << (M + max(0,S))`` selects the ``B`` bits that are XOR-ed into the bits
    ``((1<<B)-1) << (M - min(0,S))`` (for ``S >= 0``: ``mask = ((1<<B)-1) << (M+S)``, shifted down by
    ``S`` onto bits ``M..M+B-1``). Requires ``B, M >= 0`` and ``|S| >= B`` (then it is an involution:
    ``sw(sw(x)) == x``). On fp16 element offsets ``Swizzle(3,3,3)`` is the 128-byte pattern of TMA and
    the Hopper tensor cores (``Swizzle(3,4,3)`` on byte addresses). Printed ``Sw<B,M,S>``; works on
    ints and numpy integer arrays."""

    __slots__ = ("bits", "base", "shift")

    def __init__(self, bits: int, base: int, shift: int):
        bits, base, shift = (operator.index(v) for v in (bits, base, shift))
        if bits < 0 or base < 0:
            raise LayoutError(f"Sw<{bits},{base},{shift}>: B and M must be non-negative")
        if abs(shift) < bits:
            raise LayoutError(f"Sw<{bits},{base},{shift}>: |S| must be at least B (the XOR-ed bit ranges overlap)")
        if bits + base + abs(shift) > MAX_SWIZZLE_BITS:
            raise LayoutLimitError(f"Sw<{bits},{base},{shift}>: B + M + |S| = {bits + base + abs(shift)} is more "
                                   f"than {MAX_SWIZZLE_BITS} (MAX_SWIZZLE_BITS: a swizzle's bits lie below "
                                   f"{_limit_text()}, the largest layout)")
        self.bits, self.base, self.shift = bits, base, shift

    @property
    def yyy_mask(self) -> int:
        """The source bits (those shifted onto :attr:`zzz_mask`)."""
        return ((1 << self.bits) - 1) << (self.base + max(0, self.shift))

    @property
    def zzz_mask(self) -> int:
        """The destination bits (those flipped)."""
        return ((1 << self.bits) - 1) << (self.base - min(0, self.shift))

    def __call__(self, x):
        y = x & self.yyy_mask
        return x ^ (y >> self.shift if self.shift >= 0 else y << -self.shift)

    def __str__(self) -> str:
        return f"Sw<{self.bits},{self.base},{self.shift}>"

    def __repr__(self) -> str:
        return f"Swizzle({self.bits}, {self.base}, {self.shift})"

    def __eq__(self, other) -> bool:
        return (isinstance(other, Swizzle)
                and (self.bits, self.base, self.shift) == (other.bits, other.base, other.shift))

    def __hash__(self) -> int:
        return hash(("Sw", self.bits, self.base, self.shift))


class ComposedLayout(FunctionalLayout):
    """``outer o offset o inner``: ``c -> outer(offset + inner(c))`` (CuTe ``ComposedLayout``).

    ``outer`` is a :class:`Swizzle` (or any callable on ints, e.g. a :class:`Layout`), ``inner`` a
    :class:`Layout` that defines the shape. Printed ``Sw<3,3,3> o (8,64):(64,1)`` when the offset
    is 0 and ``Sw<3,3,3> o 64 o (8,64):(64,1)`` otherwise (CuTe's ``print`` order, outer, offset,
    inner, with the offset a plain integer); :func:`parse_layout` reads both back, and also CuTe's
    ``_0`` spelling of a static offset and the ``.kern`` spelling ``swizzle<3,3,3> o (8,64):(64,1)``.
    Bounds are the inner layout's."""

    __slots__ = ("outer", "offset", "inner")

    def __init__(self, outer, offset, inner):
        if not isinstance(inner, Layout):
            raise LayoutError(f"ComposedLayout: the inner layout must be a Layout, got {inner!r}")
        if not callable(outer):
            raise LayoutError(f"ComposedLayout: the outer function must be a swizzle or a layout, got {outer!r}")
        self.outer = outer
        self.offset = operator.index(offset)
        self.inner = inner

    @property
    def shape(self):
        return self.inner.shape

    @property
    def rank(self) -> int:
        return self.inner.rank

    @property
    def depth(self) -> int:
        return self.inner.depth

    def size(self, env=None) -> int:
        return self.inner.size(env)

    def cosize(self, env=None) -> int:
        """``max(outer(offset + o)) + 1`` over the inner layout's offsets ``o``: exact (numpy over
        every offset, ``layout_eval._max_image``) up to ``VERIFY_EXHAUSTIVE_LIMIT`` offsets; above
        that, for a swizzle outer function, the bound ``((x >> t) + 1) << t`` of the largest
        ``x = offset + o``, where bit ``t`` is the first the swizzle leaves alone (a swizzle keeps
        every bit from ``t`` up, so ``outer(x) >> t == x >> t``), so the work is bounded whatever
        the size. ``LayoutError`` for a large layout under an outer function that is not a
        swizzle."""
        inner = self.inner._static(env, "cosize")
        n = inner.size()
        leaves = inner.leaves()
        swizzle = isinstance(self.outer, Swizzle)
        top = _max_image(self.outer, self.offset, leaves, n, swizzle)
        if top is not None:
            return top + 1
        if not swizzle:
            raise LayoutError(f"cosize of '{self}': {n} offsets is too many to evaluate under a "
                              f"function that is not a swizzle")
        top = self.offset + sum(max(0, (s - 1) * d) for s, d in leaves)
        t = (self.outer.yyy_mask | self.outer.zzz_mask).bit_length()
        return ((top >> t) + 1) << t

    def __getitem__(self, i: int) -> "ComposedLayout":
        return ComposedLayout(self.outer, self.offset, self.inner[i])

    def modes(self) -> list:
        return [self[i] for i in range(self.rank)]

    def __call__(self, *coord, env=None):
        return self.outer(self.offset + self.inner(*coord, env=env))

    def offsets(self, env=None) -> list:
        return [self.outer(self.offset + o) for o in self.inner.offsets(env)]

    def to_source(self, c):
        return self(c)

    def to_source_checked(self, c):
        pos, ok = self.inner.to_source_checked(c)
        return self.outer(self.offset + pos), ok

    def extents(self) -> tuple:
        return self.inner.extents()

    def __str__(self) -> str:
        # a zero offset is no part of the function, so it is not printed (the form `.kern` and
        # `kernc layout` users write); parse_layout reads either form back to an equal layout
        if self.offset == 0:
            return f"{self.outer} o {self.inner}"
        return f"{self.outer} o {self.offset} o {self.inner}"

    def __repr__(self) -> str:
        return f"ComposedLayout('{self}')"

    def __eq__(self, other) -> bool:
        return (isinstance(other, ComposedLayout) and self.outer == other.outer
                and self.offset == other.offset and self.inner == other.inner)

    def __hash__(self) -> int:
        return hash((self.outer, self.offset, self.inner))
