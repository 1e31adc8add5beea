"""The layout types: :class:`FunctionalLayout` (the interface of ``layouts.md`` section 1),
:class:`ChainLayout` (:func:`chain`) and CuTe's hierarchical :class:`Layout` ``shape:stride``
(``01_layout.md``), with :func:`make_layout`.
"""

from __future__ import annotations

import itertools

from .layout_errors import LayoutError
from .layout_eval import _eval_flat
from .layout_tuples import (_bind, _check_limits, _congruent, _crd2idx, _crd_in_bounds, _depth, _entry_from_poly,
                            _flatten, _fmt, _is_static, _is_tuple, _norm, _poly, _product, _unflatten)
from .strided import Poly


class FunctionalLayout:
    """A coordinate transform: ``shape``, ``to_source(c)``, ``to_source_checked(c)``, ``in_bounds(c)``.

    ``to_source`` maps a coordinate of the view to a position in the storage below it (an offset,
    or a coordinate of the next layout of a :func:`chain`); ``to_source_checked`` returns that
    position and whether ``c`` is in bounds (a checked read yields a default value, a checked write
    is dropped, when it is not). Coordinates may be negative (padding)."""

    @property
    def shape(self):
        raise NotImplementedError

    def to_source(self, c):
        raise NotImplementedError

    def to_source_checked(self, c):
        raise NotImplementedError

    def in_bounds(self, c) -> bool:
        """Whether coordinate ``c`` is inside the view (and, for a chain, every layer below)."""
        return bool(self.to_source_checked(c)[1])

    def is_in_bounds(self, c) -> bool:
        """Alias of :meth:`in_bounds` (the name used in ``layouts.md``)."""
        return self.in_bounds(c)

    def extents(self) -> tuple:
        """Per-mode extents of the view (the ranges a coordinate tuple iterates over)."""
        return tuple(_product(s) for s in self.shape)

    def gather(self, source, default=0):
        """Materialise the view as a numpy array of ``extents()``: element ``c`` is
        ``source[to_source(c)]`` (a flat index into ``source`` when the position is an int, an
        index tuple otherwise) when in bounds, else ``default``. For tests and small examples."""
        import numpy as np

        src = np.asarray(source)
        flat = src.reshape(-1)
        ext = self.extents()
        out = np.full(ext, default, dtype=src.dtype)
        for c in itertools.product(*(range(n) for n in ext)):
            pos, ok = self.to_source_checked(c)
            if ok:
                out[c] = src[tuple(pos)] if isinstance(pos, tuple) else flat[pos]
        return out


class ChainLayout(FunctionalLayout):
    """``chain(inner, outer)``: ``c -> inner(outer(c))``, in bounds only if every layer is."""

    def __init__(self, inner: FunctionalLayout, outer: FunctionalLayout):
        self.inner = inner
        self.outer = outer

    @property
    def shape(self):
        return self.outer.shape

    def extents(self) -> tuple:
        return self.outer.extents()

    def to_source(self, c):
        return self.inner.to_source(self.outer.to_source(c))

    def to_source_checked(self, c):
        mid, ok_outer = self.outer.to_source_checked(c)
        pos, ok_inner = self.inner.to_source_checked(mid)
        return pos, bool(ok_outer and ok_inner)

    def __str__(self) -> str:
        return f"chain({self.inner}, {self.outer})"


def chain(inner: FunctionalLayout, outer: FunctionalLayout) -> ChainLayout:
    """The layout ``c -> inner.to_source(outer.to_source(c))`` (``layouts.md`` section 1).

    In bounds at ``c`` only if ``outer`` is in bounds at ``c`` **and** ``inner`` is at
    ``outer(c)``; the shape is ``outer``'s. Both arguments are :class:`FunctionalLayout` s (a
    :class:`Layout`, an :class:`Im2col`, another chain, ...)."""
    for x, name in ((inner, "inner"), (outer, "outer")):
        if not isinstance(x, FunctionalLayout):
            raise LayoutError(f"chain: {name} is not a functional layout: {x!r}")
    return ChainLayout(inner, outer)


class Layout(FunctionalLayout):
    """A hierarchical CuTe layout ``shape:stride`` (``01_layout.md``).

    ``Layout(shape, stride=None)``: ``shape`` is a positive int or a nested tuple of them (entries may
    also be size-symbol strings such as ``"n"``); ``stride`` is congruent with ``shape``; omitted, it
    is the generalised column-major (CuTe ``LayoutLeft``) compact stride. ``L(i)`` maps an integer
    index (colexicographic split, the last mode unbounded); ``L(c0, c1)`` / ``L((c0, (c1, c2)))`` map
    coordinates. ``LayoutError`` if shape and stride are not congruent or an entry is bad.

    ``Layout.parse(text)`` is :func:`~kernc.dialect.layout_parse.parse_layout` (it may return a
    ``ComposedLayout`` or a ``Swizzle``), attached by that module: parsing folds ``A o B`` with
    composition, which builds on this class."""

    __slots__ = ("_shape", "_stride")

    def __init__(self, shape, stride=None):
        shape = _norm(shape, "shape", positive=True)
        if stride is None:
            stride = _compact(shape, reverse=False)
        else:
            stride = _norm(stride, "stride", positive=False)
        if not _congruent(shape, stride):
            raise LayoutError(f"shape {_fmt(shape)} and stride {_fmt(stride)} are not congruent")
        for s in _flatten(shape):
            if isinstance(s, int) and s < 1:
                raise LayoutError(f"shape entries must be positive, got {s}")
        _check_limits(shape, stride)
        self._shape = shape
        self._stride = stride

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def col_major(cls, shape) -> "Layout":
        """Compact layout with generalised column-major strides (CuTe ``LayoutLeft``)."""
        return cls(shape)

    @classmethod
    def row_major(cls, shape) -> "Layout":
        """Compact layout with generalised row-major strides (CuTe ``LayoutRight``)."""
        shape = _norm(shape, "shape", positive=True)
        return cls(shape, _compact(shape, reverse=True))

    # -- structure ------------------------------------------------------------------------------
    @property
    def shape(self):
        """The (nested) shape; an int for a rank-1 integral layout."""
        return self._shape

    @property
    def stride(self):
        """The (nested) stride, congruent with :attr:`shape`."""
        return self._stride

    @property
    def rank(self) -> int:
        """Number of top-level modes (1 for an integral shape)."""
        return len(self._shape) if _is_tuple(self._shape) else 1

    @property
    def depth(self) -> int:
        """Nesting depth of the shape: 0 for an int, 1 for a flat tuple, ..."""
        return _depth(self._shape)

    @property
    def is_static(self) -> bool:
        """True when no shape or stride entry is a size symbol."""
        return _is_static(self._shape) and _is_static(self._stride)

    def __getitem__(self, i: int) -> "Layout":
        """Mode ``i`` as a layout (CuTe ``layout<i>``); mode 0 of an integral layout is itself."""
        if not _is_tuple(self._shape):
            if i in (0, -1):
                return self
            raise IndexError(f"mode {i} of rank-1 layout {self}")
        return Layout(self._shape[i], self._stride[i])

    def modes(self) -> list:
        """The top-level modes as layouts."""
        return [self[i] for i in range(self.rank)]

    def flatten(self) -> "Layout":
        """The same function with a flat (depth <= 1) shape."""
        s, d = _flatten(self._shape), _flatten(self._stride)
        if len(s) == 1 and not _is_tuple(self._shape):
            return self
        return Layout(tuple(s), tuple(d))

    def leaves(self) -> list:
        """``[(shape_k, stride_k)]`` over the flattened modes."""
        return list(zip(_flatten(self._shape), _flatten(self._stride)))

    def bind(self, env: dict) -> "Layout":
        """This layout with every size symbol evaluated from ``env`` (name -> int)."""
        return Layout(_bind(self._shape, env), _bind(self._stride, env))

    def _static(self, env=None, what="this operation") -> "Layout":
        if self.is_static:
            return self
        if env is not None:
            return self.bind(env)
        raise LayoutError(f"{what} needs static shapes and strides; '{self}' has size symbols "
                          f"(bind them with env=... or .bind(env))")

    # -- the function ---------------------------------------------------------------------------
    def size(self, env=None) -> int:
        """Size of the domain: the product of the shape."""
        return _product(self._static(env, "size")._shape)

    def cosize(self, env=None) -> int:
        """``max offset + 1`` over the domain; for non-negative strides this is CuTe's
        ``L(size-1) + 1``."""
        L = self._static(env, "cosize")
        return 1 + sum((s - 1) * d for s, d in L.leaves() if d > 0)

    def __call__(self, *coord, env=None) -> int:
        """Offset of an integer index or a (hierarchical) coordinate; ``L(1, 2) == L((1, 2))``."""
        L = self._static(env, "evaluating a layout")
        c = coord[0] if len(coord) == 1 else tuple(coord)
        return _crd2idx(c, L._shape, L._stride)

    def offsets(self, env=None) -> list:
        """``[L(i) for i in range(size)]``."""
        L = self._static(env, "offsets")
        leaves = L.leaves()
        return [_eval_flat(leaves, i) for i in range(L.size())]

    # FunctionalLayout interface: a strided layout is in bounds when every mode is.
    def to_source(self, c) -> int:
        return self(c)

    def to_source_checked(self, c):
        return self(c), _crd_in_bounds(c, self._static(None, "evaluating a layout")._shape)

    def extents(self) -> tuple:
        if not _is_tuple(self._shape):
            return (self.size(),)
        return tuple(_product(s) for s in self._static(None, "extents")._shape)

    # -- text -----------------------------------------------------------------------------------
    def __str__(self) -> str:
        return f"{_fmt(self._shape)}:{_fmt(self._stride)}"

    def __repr__(self) -> str:
        return f"Layout('{self}')"

    def __eq__(self, other) -> bool:
        return isinstance(other, Layout) and self._shape == other._shape and self._stride == other._stride

    def __hash__(self) -> int:
        return hash((self._shape, self._stride))


def _compact(shape, reverse: bool):
    leaves = _flatten(shape)
    order = range(len(leaves) - 1, -1, -1) if reverse else range(len(leaves))
    strides = [0] * len(leaves)
    acc = Poly.const(1)
    for k in order:
        strides[k] = _entry_from_poly(acc)
        acc = acc * _poly(leaves[k])
    return _unflatten(strides, shape)


def make_layout(*layouts) -> Layout:
    """Concatenate layouts into the modes of a new one (CuTe ``make_layout(a, b, ...)``):
    ``make_layout(3:1, 4:3) == (3,4):(1,3)``; one argument gives a 1-tuple ``(3):(1)``."""
    if not layouts:
        raise LayoutError("make_layout needs at least one layout")
    for L in layouts:
        if not isinstance(L, Layout):
            raise LayoutError(f"make_layout takes layouts, got {L!r}")
    return Layout(tuple(L.shape for L in layouts), tuple(L.stride for L in layouts))


def _as_layout(x, what: str) -> Layout:
    if isinstance(x, Layout):
        return x
    if isinstance(x, int) and not isinstance(x, bool):
        return Layout(x, 1)
    raise LayoutError(f"{what}: expected a layout or an int, got {x!r}")


def _require_static(what: str, *layouts):
    for L in layouts:
        if isinstance(L, Layout) and not L.is_static:
            raise LayoutError(f"{what} needs static shapes; '{L}' has size symbols")
