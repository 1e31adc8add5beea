"""CuTe-style layout algebra in pure Python (no MLIR): hierarchical layouts, swizzles, im2col.

Public entry point: :mod:`kernc.layout` (a re-export of this module). Design: ``docs/design/layouts.md``.

Notation (CuTe's)
-----------------
A layout ``S:D`` pairs a hierarchical *shape* (an int or a nested tuple of ints) with a congruent
*stride*, e.g. ``(4,(2,3)):(2,(1,8))``. A rank-1 layout with an integral shape prints ``4:1``; a
1-tuple prints ``(4):(1)``. An integer index ``i`` is split colexicographically over the flattened
shape (first mode fastest) and ``L(i) = sum_k c_k * d_k``. The very last mode is not wrapped, so
``L(i)`` is defined for every integer (``i >= size(L)`` continues along the last mode); composition
relies on this extension (``1000:1 o (128,8):(1,128)`` reads 24 elements past the end, which a
kernel must predicate).

Operations and their sources
----------------------------
- ``coalesce``, ``composition``, ``complement``, ``logical_divide``/``zipped_divide``/
  ``tiled_divide``/``flat_divide``, ``logical_product``/``zipped_product``/``tiled_product``/
  ``flat_product``/``blocked_product``/``raked_product``, ``right_inverse``, ``left_inverse``: the
  CuTe documentation (``media/docs/cpp/cute/01_layout.md``, ``02_layout_algebra.md``) and J. Shah,
  "A note on the algebra of CuTe layouts" (Colfax Research), which gives the admissibility
  conditions used here.
- ``Swizzle<B,M,S>``: CuTe's ``swizzle.hpp`` definition (``x ^ ((x & yyy_mask) >> S)``, a left
  shift for negative ``S``).

Trust
-----
The C++ reference silently returns wrong layouts for some inadmissible compositions (NVIDIA/cutlass
issues #2955, #3177). Here a composition never returns a wrong layout:

1. each leaf ``n:r`` of ``B`` is composed with the (coalesced, flattened) ``A`` by the
   stride-division / shape-modulo construction of the CuTe docs, with explicit checks; a case the
   construction cannot express raises :class:`LayoutError`;
2. the leaves are combined (left distributivity). That is only valid when the leaves' images never
   carry between the mixed-radix digits of ``A``; the *no-carry* condition (the sum over leaves of
   the largest digit each leaf uses in every non-last mode of ``A`` stays below that mode's size) is
   a proof that it is;
3. the result is verified: ``R(i) == A(B(i))`` for every ``i < size(B)`` when
   ``size(B) <= VERIFY_EXHAUSTIVE_LIMIT`` and ``size(B)`` times the number of modes evaluated per
   index stays within ``VERIFY_WORK_LIMIT`` (vectorised with numpy; 4096 indices at most in Python
   integers when the values may leave int64); above that, the no-carry proof is required and a
   deterministic sample of at most ``_SAMPLES + 2 * _EDGE_SAMPLES`` indices is checked as well. So
   one verification evaluates a bounded number of points, whatever the layouts.

Failures raise :class:`LayoutError` whose message names both layouts in CuTe notation.

Limits
------
Every static layout has ``size``, offset span (``1 + sum (s_k - 1) |d_k|``, the cosize for
non-negative strides) and entries of magnitude at most ``MAX_LAYOUT_SIZE`` (``2**48``: the 48-bit
virtual address space of current GPUs and CPUs, so no layout of real memory comes near it), at most
``MAX_LAYOUT_MODES`` flattened modes and a nesting depth of at most ``MAX_LAYOUT_DEPTH``; a swizzle
``Sw<B,M,S>`` has ``B + M + |S| <= MAX_SWIZZLE_BITS`` (48: its bit masks stay below
``MAX_LAYOUT_SIZE``). Building a layout past a limit -- a literal or the result of any operation --
raises :class:`LayoutLimitError` (a :class:`LayoutError`). With these bounds every operation costs a bounded amount of work (a
repeated ``blocked_product(b, b)`` squares the size each time and is refused after a few steps,
instead of doubling its modes and its verification time forever).

Symbolic sizes
--------------
A shape or stride entry may be a string naming size symbols (``"n"``, ``"H*W"``, parsed with
:class:`kernc.dialect.strided.Poly`). Such layouts print, parse, and evaluate with an ``env``
(``L(i, env={"n": 8})``, ``L.bind(env)``); the algebra needs static layouts and raises
``LayoutError("... needs static shapes ...")`` otherwise.

Functional layouts
------------------
:class:`FunctionalLayout` is the interface of ``layouts.md`` section 1 (``shape``, ``to_source``,
``to_source_checked``, ``in_bounds``); :class:`Layout`, :class:`ComposedLayout`, :class:`Im2col`
and :func:`chain` results implement it.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
import random
import re

from kernc.support.errors import InternalCompilerError, KerncError

from .strided import Poly

__all__ = [
    "LayoutError",
    "LayoutLimitError",
    "FunctionalLayout",
    "Layout",
    "Swizzle",
    "ComposedLayout",
    "ChainLayout",
    "Im2col",
    "make_layout",
    "parse_layout",
    "coalesce",
    "composition",
    "complement",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "right_inverse",
    "left_inverse",
    "chain",
    "im2col",
    "im2col_dgrad",
    "output_grad",
    "Im2colDgrad",
    "OutputGradMatrix",
    "VERIFY_EXHAUSTIVE_LIMIT",
    "VERIFY_WORK_LIMIT",
    "MAX_LAYOUT_SIZE",
    "MAX_LAYOUT_MODES",
    "MAX_LAYOUT_DEPTH",
    "MAX_SWIZZLE_BITS",
]

#: Compositions with ``size(B)`` up to this are verified exhaustively (``R(i) == A(B(i))``) when
#: the work also stays within :data:`VERIFY_WORK_LIMIT`.
VERIFY_EXHAUSTIVE_LIMIT = 1 << 20
#: Most (index, mode) evaluations one exhaustive verification does (about 0.1 s of numpy); a larger
#: verification needs the no-carry proof and checks a bounded sample.
VERIFY_WORK_LIMIT = 1 << 24
#: Most indices an exhaustive verification evaluates in Python integers (values past int64).
_PY_EXHAUSTIVE_LIMIT = 4096
_SAMPLES = 4096
_EDGE_SAMPLES = 1024
_INT64_SAFE = 1 << 62
#: Largest size, offset span and entry magnitude of a static layout (the 48-bit virtual address
#: space of current GPUs and CPUs; see "Limits" in the module docstring).
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


# ------------------------------------------------------------------------------------------------
# Integer tuples
# ------------------------------------------------------------------------------------------------

def _is_tuple(x) -> bool:
    return isinstance(x, tuple)


def _norm_entry(x, what: str, positive: bool):
    if isinstance(x, bool):
        raise LayoutError(f"{what} entry {x!r} is not an integer")
    if isinstance(x, str):
        text = x.strip()
        if re.fullmatch(r"_[0-9]+", text):  # CuTe's static-integer spelling
            text = text[1:]
        try:
            p = Poly.parse(text)
        except ValueError as err:
            raise LayoutError(f"bad {what} entry '{x}': {err}") from None
        if not p.is_const:
            if positive and any(c < 0 for _, c in p.terms):  # `n-1` could be 0 or negative
                raise LayoutError(f"bad {what} entry '{x}': a symbolic shape entry takes no negative terms")
            return str(p)
        x = p.value
    try:
        v = operator.index(x)
    except TypeError:
        raise LayoutError(f"{what} entry {x!r} is neither an integer nor a size symbol") from None
    if positive and v < 1:
        raise LayoutError(f"shape entries must be positive, got {v}")
    return int(v)


def _norm(t, what: str, positive: bool, depth: int = 0):
    if isinstance(t, (tuple, list)):
        if not t:
            raise LayoutError(f"empty tuple in {what}")
        if depth >= MAX_LAYOUT_DEPTH:
            raise LayoutLimitError(f"the {what} is nested more than {MAX_LAYOUT_DEPTH} deep (MAX_LAYOUT_DEPTH)")
        return tuple(_norm(e, what, positive, depth + 1) for e in t)
    return _norm_entry(t, what, positive)


def _show_int(v: int) -> str:
    """``v`` in decimal, or ``about 2**k`` when it is too long to be worth printing."""
    if abs(v) < 10 ** 30:
        return str(v)
    return f"{'-' if v < 0 else ''}about 2**{abs(v).bit_length() - 1}"


def _limit_text() -> str:
    return f"2**{MAX_LAYOUT_SIZE.bit_length() - 1} (MAX_LAYOUT_SIZE)"


def _check_limits(shape, stride) -> None:
    """Refuse a layout past :data:`MAX_LAYOUT_MODES` or, for its static entries, past
    :data:`MAX_LAYOUT_SIZE` (entry magnitude, size, offset span). Entries are checked before the
    layout is printed, so an enormous one never reaches ``str()``."""
    shapes, strides = _flatten(shape), _flatten(stride)
    if len(shapes) > MAX_LAYOUT_MODES:
        raise LayoutLimitError(f"a layout has {len(shapes)} modes, more than {MAX_LAYOUT_MODES} "
                               f"(MAX_LAYOUT_MODES)")
    for e in shapes + strides:
        if isinstance(e, int) and abs(e) > MAX_LAYOUT_SIZE:
            raise LayoutLimitError(f"the layout entry {_show_int(e)} is larger than {_limit_text()}, the "
                                   f"largest layout")
    size = span = 1
    for s, d in zip(shapes, strides):
        if isinstance(s, int):
            size *= s
            if isinstance(d, int):
                span += (s - 1) * abs(d)
    for what, v in (("size", size), ("offset span (cosize)", span)):
        if v > MAX_LAYOUT_SIZE:
            text = _brief(f"{_fmt(shape)}:{_fmt(stride)}")
            raise LayoutLimitError(f"layout {text} has {what} {_show_int(v)}, more than {_limit_text()}, "
                                   f"the largest layout")


def _flatten(t) -> list:
    if _is_tuple(t):
        out: list = []
        for e in t:
            out.extend(_flatten(e))
        return out
    return [t]


def _unflatten(values, profile):
    it = iter(values)

    def rec(p):
        if _is_tuple(p):
            return tuple(rec(e) for e in p)
        return next(it)

    return rec(profile)


def _product(t) -> int:
    return math.prod(_flatten(t))


def _congruent(a, b) -> bool:
    if _is_tuple(a) != _is_tuple(b):
        return False
    if _is_tuple(a):
        return len(a) == len(b) and all(_congruent(x, y) for x, y in zip(a, b))
    return True


def _fmt(t) -> str:
    if _is_tuple(t):
        return "(" + ",".join(_fmt(e) for e in t) + ")"
    return str(t)


def _depth(t) -> int:
    if _is_tuple(t):
        return 1 + max(_depth(e) for e in t)
    return 0


def _is_static(t) -> bool:
    return all(isinstance(e, int) for e in _flatten(t))


def _poly(e) -> Poly:
    return Poly.const(e) if isinstance(e, int) else Poly.parse(e)


def _entry_from_poly(p: Poly):
    return p.value if p.is_const else str(p)


def _bind_entry(e, env):
    if isinstance(e, int):
        return e
    try:
        return Poly.parse(e).evaluate(env)
    except KeyError as err:
        raise LayoutError(f"size symbol {err} is not bound") from None


def _bind(t, env):
    if _is_tuple(t):
        return tuple(_bind(e, env) for e in t)
    return _bind_entry(t, env)


def _crd2idx(c, s, d):
    """Offset of coordinate ``c`` (int or tuple, possibly hierarchical) in shape ``s`` / stride ``d``.
    An integer coordinate for a tuple mode is split colexicographically, its last sub-mode unbounded."""
    if _is_tuple(c):
        if not _is_tuple(s):
            if len(c) == 1:
                return _crd2idx(c[0], s, d)
            raise LayoutError(f"coordinate {_fmt(c)} is not congruent with shape {_fmt(s)}")
        if len(c) != len(s):
            raise LayoutError(f"coordinate {_fmt(c)} has rank {len(c)}, the shape {_fmt(s)} has rank {len(s)}")
        return sum(_crd2idx(ci, si, di) for ci, si, di in zip(c, s, d))
    c = operator.index(c)
    if _is_tuple(s):
        total = 0
        last = len(s) - 1
        for k, (si, di) in enumerate(zip(s, d)):
            if k == last:
                total += _crd2idx(c, si, di)
            else:
                c, r = divmod(c, _product(si))
                total += _crd2idx(r, si, di)
        return total
    return c * d


def _crd_in_bounds(c, s) -> bool:
    if _is_tuple(c):
        if not _is_tuple(s):
            return len(c) == 1 and _crd_in_bounds(c[0], s)
        return len(c) == len(s) and all(_crd_in_bounds(ci, si) for ci, si in zip(c, s))
    return 0 <= operator.index(c) < _product(s)


def _eval_flat(leaves, x):
    """``sum c_k d_k`` for index ``x`` split over flat ``leaves`` [(s, d)], the last one unbounded.
    Works on Python ints and on numpy integer arrays alike."""
    total = 0
    last = len(leaves) - 1
    for k, (s, d) in enumerate(leaves):
        if k == last:
            total = total + x * d
        else:
            x, r = divmod(x, s)
            total = total + r * d
    return total


# ------------------------------------------------------------------------------------------------
# Functional layouts (layouts.md section 1)
# ------------------------------------------------------------------------------------------------

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


# ------------------------------------------------------------------------------------------------
# Layout
# ------------------------------------------------------------------------------------------------

class Layout(FunctionalLayout):
    """A hierarchical CuTe layout ``shape:stride`` (``01_layout.md``).

    ``Layout(shape, stride=None)``: ``shape`` is a positive int or a nested tuple of them (entries may
    also be size-symbol strings such as ``"n"``); ``stride`` is congruent with ``shape``; omitted, it
    is the generalised column-major (CuTe ``LayoutLeft``) compact stride. ``L(i)`` maps an integer
    index (colexicographic split, the last mode unbounded); ``L(c0, c1)`` / ``L((c0, (c1, c2)))`` map
    coordinates. ``LayoutError`` if shape and stride are not congruent or an entry is bad."""

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

    @staticmethod
    def parse(text: str):
        """Parse CuTe notation; see :func:`parse_layout` (may return a ``ComposedLayout``/``Swizzle``)."""
        return parse_layout(text)

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


# ------------------------------------------------------------------------------------------------
# Coalesce
# ------------------------------------------------------------------------------------------------

def _coalesce_leaves(leaves) -> list:
    out: list = []
    for s, d in leaves:
        if s == 1:
            continue
        if out and out[-1][0] * out[-1][1] == d:
            out[-1] = (out[-1][0] * s, out[-1][1])
        else:
            out.append((s, d))
    return out


def _layout_from_modes(modes) -> Layout:
    modes = _coalesce_leaves(modes)
    if not modes:
        return Layout(1, 0)
    if len(modes) == 1:
        return Layout(modes[0][0], modes[0][1])
    return Layout(tuple(s for s, _ in modes), tuple(d for _, d in modes))


@_limit_context
def coalesce(layout, profile=None) -> Layout:
    """The shortest equivalent layout (``02_layout_algebra.md``, "Coalesce").

    Drops size-1 modes and merges adjacent modes ``s0:d0, s1:s0*d0`` into ``s0*s1:d0``. Result:
    depth <= 1, same size, ``result(i) == layout(i)`` for ``i < size``; ``(2,(1,6)):(1,(6,2))`` ->
    ``12:1``; a layout of size 1 -> ``1:0``. With a ``profile`` tuple, coalesce by mode: mode ``i`` is
    coalesced according to ``profile[i]`` (an int entry = fully), modes past the profile are kept:
    ``coalesce((2,(1,6)):(1,(6,2)), (1,1)) == (2,6):(1,2)``. ``LayoutError`` for symbolic layouts."""
    if isinstance(layout, ComposedLayout):
        return ComposedLayout(layout.outer, layout.offset, coalesce(layout.inner, profile))
    layout = _as_layout(layout, "coalesce")
    _require_static("coalesce", layout)
    if _is_tuple(profile):
        modes = layout.modes()
        if len(profile) > len(modes):
            raise LayoutError(f"coalesce profile {_fmt(profile)} has more modes than '{layout}'")
        out = [coalesce(m, p) for m, p in zip(modes, profile)] + modes[len(profile):]
        return make_layout(*out)
    return _layout_from_modes(layout.leaves())


# ------------------------------------------------------------------------------------------------
# Composition
# ------------------------------------------------------------------------------------------------

class _Inadmissible(Exception):
    pass


def _a_modes(A: Layout) -> list:
    """``A``'s flattened modes, coalesced, keeping A's true last mode last (it is the unbounded one,
    so a trailing size-1 mode still matters for indices past ``size(A)``)."""
    leaves = A.leaves()
    body = _coalesce_leaves(leaves[:-1])
    s_last, d_last = leaves[-1]
    if body and body[-1][0] * body[-1][1] == d_last:
        body[-1] = (body[-1][0] * s_last, body[-1][1])
    else:
        body.append((s_last, d_last))
    return body


def _compose_leaf(modes: list, n: int, r: int):
    """``A o n:r`` for flat coalesced ``A`` modes; returns (result modes, {A mode: largest digit used})."""
    if n == 1:
        return [], {}
    if r == 0:
        return [(n, 0)], {}
    last = len(modes) - 1
    if last == 0:
        return [(n, r * modes[0][1])], {}
    if r < 0:
        raise _Inadmissible(f"the stride {r} of B is negative and A has more than one mode")
    # 1. Divide the stride r out of A's shape, from the left (stride divisibility condition).
    k, rem = 0, r
    while k < last:
        s, d = modes[k]
        if rem % s == 0:
            rem //= s
            k += 1
            continue
        if s % rem == 0:
            break
        if rem * (n - 1) < s:  # every index stays inside mode k: no wrap, no divisibility needed
            return [(n, d * rem)], {k: rem * (n - 1)}
        raise _Inadmissible(
            f"stride divisibility fails: after dividing out the modes before it, B's stride {r} leaves "
            f"{rem}, which neither divides nor is divided by A's mode shape {s}, and {n} indices "
            f"stepping by {rem} leave that mode")
    # 2. Keep the first n elements (shape divisibility condition).
    out, usage, rest, j = [], {}, n, k
    while True:
        s, d = modes[j]
        unit = rem if j == k else 1
        stride = d * unit
        if j == last:
            out.append((rest, stride))
            break
        t = s // unit
        if rest <= t:
            out.append((rest, stride))
            usage[j] = unit * (rest - 1)
            break
        if rest % t:
            raise _Inadmissible(
                f"shape divisibility fails: B's size {n} needs {rest} more elements past A's mode of "
                f"extent {t} (shape {s}, stride {d}), and {t} does not divide {rest}")
        out.append((t, stride))
        usage[j] = unit * (t - 1)
        rest //= t
        j += 1
    return out, usage


def _leaf_result(modes):
    modes = _coalesce_leaves(modes)
    if not modes:
        return 1, 0
    if len(modes) == 1:
        return modes[0]
    return tuple(s for s, _ in modes), tuple(d for _, d in modes)


def _abs_bound(leaves, x_bound: int) -> int:
    """Bound on ``|value|`` of ``_eval_flat(leaves, x)`` for ``0 <= |x| <= x_bound``."""
    if not leaves:
        return 0
    total = sum((s - 1) * abs(d) for s, d in leaves[:-1])
    p = math.prod(s for s, _ in leaves[:-1])
    return total + (x_bound // max(p, 1) + 1) * abs(leaves[-1][1])


def _verify_map(lhs, rhs, n: int, proven: bool, fail, cost: int = 1, vectorisable: bool = True) -> None:
    """Check ``lhs(i) == rhs(i)`` for ``i < n``: exhaustively when that is cheap, else ``proven``
    (the construction's proof) plus a deterministic sample. ``lhs``/``rhs`` accept ints and, when
    ``vectorisable`` (every value fits int64), numpy int64 arrays; ``cost`` is the number of layout
    modes evaluated per index. ``fail(i, got, want)`` raises (``i`` None: too large to verify
    without a proof).

    Work bound: at most ``min(n, VERIFY_EXHAUSTIVE_LIMIT, VERIFY_WORK_LIMIT / cost)`` indices
    vectorised, or ``_PY_EXHAUSTIVE_LIMIT`` in Python integers, or a sample of
    ``_SAMPLES + 2 * _EDGE_SAMPLES`` indices; never more, whatever ``n``."""
    cost = max(1, cost)
    if n <= min(_PY_EXHAUSTIVE_LIMIT, VERIFY_EXHAUSTIVE_LIMIT):
        _check_points(lhs, rhs, range(n), False, fail)
        return
    if vectorisable and n <= VERIFY_EXHAUSTIVE_LIMIT and n * cost <= VERIFY_WORK_LIMIT:
        _check_points(lhs, rhs, range(n), True, fail)
        return
    if not proven:
        fail(None, None, None)
    rng = random.Random(0x6B65726E)
    picks = set(range(min(n, _EDGE_SAMPLES))) | set(range(max(0, n - _EDGE_SAMPLES), n))
    picks |= {rng.randrange(n) for _ in range(_SAMPLES)}
    _check_points(lhs, rhs, sorted(picks), vectorisable, fail)


def _check_points(lhs, rhs, points, vectorised: bool, fail) -> None:
    """``lhs(i) == rhs(i)`` for ``i`` in ``points`` (a range or a sorted list), on one numpy int64
    array when ``vectorised``, else one Python int at a time."""
    if vectorised:
        import numpy as np

        idx = np.asarray(points, dtype=np.int64) if not isinstance(points, range) else \
            np.arange(points.start, points.stop, dtype=np.int64)
        bad = np.nonzero(np.asarray(lhs(idx)) != np.asarray(rhs(idx)))[0]
        if bad.size:
            i = int(idx[bad[0]])
            fail(i, lhs(i), rhs(i))
        return
    for i in points:
        a, b = lhs(i), rhs(i)
        if a != b:
            fail(i, a, b)


def _int64_ok(*bounds) -> bool:
    return all(b < _INT64_SAFE for b in bounds)


def _compose_layouts(A: Layout, B: Layout) -> Layout:
    _require_static("composition", A, B)
    modes = _a_modes(A)
    shapes, strides, usage_total = [], [], {}
    for n, r in B.leaves():
        try:
            out, usage = _compose_leaf(modes, n, r)
        except _Inadmissible as err:
            raise LayoutError(f"composition {A} o {B} is not admissible: {err} (leaf {n}:{r} of B)") from None
        s, d = _leaf_result(out)
        shapes.append(s)
        strides.append(d)
        for m, u in usage.items():
            usage_total[m] = usage_total.get(m, 0) + u
    proven = all(u <= modes[m][0] - 1 for m, u in usage_total.items())
    R = Layout(_unflatten(shapes, B.shape), _unflatten(strides, B.stride))

    a_leaves, b_leaves, r_leaves = modes, B.leaves(), R.leaves()
    n = B.size()
    b_bound = _abs_bound(b_leaves, n)
    vectorisable = _int64_ok(b_bound, _abs_bound(a_leaves, b_bound), _abs_bound(r_leaves, n))

    def lhs(i):
        return _eval_flat(r_leaves, i)

    def rhs(i):
        return _eval_flat(a_leaves, _eval_flat(b_leaves, i))

    def fail(i, got, want):
        if i is None:
            raise LayoutError(
                f"composition {A} o {B} is not admissible: B's modes overlap in A's mixed-radix digits "
                f"(no-carry condition fails) and size {n} is too large to verify every index")
        raise LayoutError(
            f"composition {A} o {B} is not admissible: the modes of B do not distribute over A "
            f"(candidate {R} gives {got} at index {i}, but A(B({i})) = {want})")

    _verify_map(lhs, rhs, n, proven, fail, len(a_leaves) + len(b_leaves) + len(r_leaves), vectorisable)
    return R


@_limit_context
def composition(A, B):
    """Functional composition ``R = A o B``, ``R(i) == A(B(i))`` (``02_layout_algebra.md``, "Composition").

    ``A``: a :class:`Layout`, a :class:`ComposedLayout` (the composition applies to its inner layout)
    or a :class:`Swizzle` (the result is ``ComposedLayout(A, 0, B)``).
    ``B``: a :class:`Layout` (1-D composition; the result's shape refines ``B``'s), an int ``n``
    (``n:1``), or a *tiler*: a tuple whose entries (layouts, ints meaning ``n:1``, nested tilers, or
    ``None`` to keep the mode) are composed with ``A``'s modes one by one; modes past the tiler are
    kept. ``(6,2):(8,2) o (4,3):(3,1) == ((2,2),3):((24,2),8)``.

    Never returns a wrong layout: the result is verified against ``A(B(i))`` (see the module
    docstring). Raises :class:`LayoutError`, naming both layouts, when the composition is not
    admissible (stride or shape divisibility fails, the modes of ``B`` carry into each other in
    ``A``'s digits, a multi-mode ``A`` meets a negative stride) or when a layout is symbolic."""
    if isinstance(A, Swizzle):
        if not isinstance(B, Layout):
            raise LayoutError(f"composition {A} o {B!r}: a swizzle composes with a layout only")
        return ComposedLayout(A, 0, B)
    if isinstance(A, ComposedLayout):
        return ComposedLayout(A.outer, A.offset, composition(A.inner, B))
    if not isinstance(A, Layout):
        raise LayoutError(f"composition: A must be a layout, got {A!r}")
    if isinstance(B, (tuple, list)):
        return _by_mode(composition, A, tuple(B), "composition")
    if isinstance(B, (Swizzle, ComposedLayout)):
        raise LayoutError(f"composition {A} o {B}: composing a layout with a swizzle on the right is not supported")
    return _compose_layouts(A, _as_layout(B, "composition"))


def _by_mode(op, A: Layout, tiler: tuple, name: str) -> Layout:
    modes = A.modes()
    if len(tiler) > len(modes):
        raise LayoutError(f"{name}: the tiler {_tiler_str(tiler)} has more modes than '{A}' (rank {len(modes)})")
    out = []
    for m, t in zip(modes, tiler):
        if t is None:
            out.append(m)
        elif isinstance(t, (tuple, list)):
            out.append(_by_mode(op, m, tuple(t), name))
        else:
            out.append(op(m, _as_layout(t, name)))
    out.extend(modes[len(tiler):])
    return make_layout(*out)


def _tiler_str(t) -> str:
    if isinstance(t, (tuple, list)):
        return "<" + ",".join(_tiler_str(e) for e in t) + ">"
    return "_" if t is None else str(t)


# ------------------------------------------------------------------------------------------------
# Complement
# ------------------------------------------------------------------------------------------------

def _cotarget_size(M) -> int:
    if isinstance(M, Layout):
        return M.size()
    M = _norm(M, "cotarget", positive=True)
    if not _is_static(M):
        raise LayoutError(f"complement needs a static cotarget, got {_fmt(M)}")
    return _product(M)


@_limit_context
def complement(A, cotarget=None) -> Layout:
    """The layout of the positions ``A`` does not reach, up to ``cotarget`` (``02_layout_algebra.md``,
    "Complement"; admissibility from Shah's note).

    ``cotarget`` is an int or a shape (its size is used); default ``cosize(A)``. With ``A``'s
    non-trivial modes sorted by stride, ``(s_i, d_i)``, the result is
    ``(d_0/1, d_1/(s_0 d_0), ..., ceil(M/(s_k d_k))) : (1, s_0 d_0, ..., s_k d_k)``, coalesced.
    Postconditions: strides positive and increasing (ordered), ``make_layout(A, R)`` injective
    (disjoint images), ``size(A) * size(R) >= M`` (the last mode rounds up: ``complement(128:1, 1000)``
    is ``8:128``, covering 1024). Examples: ``complement(4:2, 24) == (2,3):(1,8)``,
    ``complement((2,2):(1,6), 24) == (3,2):(2,12)``.
    ``LayoutError`` when a stride is negative, or ``s_{i-1} d_{i-1}`` does not divide ``d_i`` (the
    image of ``A`` overlaps itself or cannot be completed by an ordered layout)."""
    if isinstance(A, int) and not isinstance(A, bool):
        A = Layout(A, 1)
    if not isinstance(A, Layout):
        raise LayoutError(f"complement: expected a layout, got {A!r}")
    _require_static("complement", A)
    M = A.cosize() if cotarget is None else _cotarget_size(cotarget)
    modes = []
    for s, d in A.leaves():
        if s == 1 or d == 0:
            continue
        if d < 0:
            raise LayoutError(f"complement({A}, {M}) is not defined: negative stride {d}")
        modes.append((d, s))
    modes.sort()
    shapes, strides, curr = [], [], 1
    for d, s in modes:
        if d % curr:
            raise LayoutError(
                f"complement({A}, {M}) is not defined: stride {d} is not a multiple of {curr}, the extent "
                f"covered by the smaller modes (the layout overlaps itself or leaves a hole no ordered "
                f"layout can fill)")
        shapes.append(d // curr)
        strides.append(curr)
        curr = s * d
    shapes.append(-(-M // curr))
    strides.append(curr)
    return _layout_from_modes(list(zip(shapes, strides)))


# ------------------------------------------------------------------------------------------------
# Divide and product
# ------------------------------------------------------------------------------------------------

def _on_composed(fn):
    """Apply a layout-algebra operation to the inner layout of a ComposedLayout."""

    def wrapper(A, B):
        if isinstance(A, ComposedLayout):
            return ComposedLayout(A.outer, A.offset, wrapper(A.inner, B))
        if isinstance(A, int) and not isinstance(A, bool):
            A = Layout(A, 1)
        if not isinstance(A, Layout):
            raise LayoutError(f"{fn.__name__}: expected a layout, got {A!r}")
        return fn(A, B)

    wrapper.__name__ = fn.__name__
    wrapper.__qualname__ = fn.__qualname__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _divide_1d(A: Layout, B: Layout) -> Layout:
    _require_static("logical_divide", A, B)
    return composition(A, make_layout(B, complement(B, A.size())))


@_limit_context
@_on_composed
def logical_divide(A, B):
    """``A ⊘ B = A o (B, B*)`` with ``B* = complement(B, size(A))`` (``02_layout_algebra.md``, "Division").

    ``B``: a layout, an int ``n`` (``n:1``) or a tiler tuple (by mode; ``None`` keeps a mode).
    Result modes: ``(tile, rest)`` (by mode for a tiler: ``((TileM,RestM),(TileN,RestN),L...)``).
    A tile that does not divide ``size(A)`` rounds up, ``1000:1 ⊘ 128:1 == (128,8):(1,128)``: the
    last tile reads past the end and must be predicated (checked) by the kernel. Raises
    :class:`LayoutError` when the complement or the composition is not admissible."""
    if isinstance(B, (tuple, list)):
        return _by_mode(logical_divide, A, tuple(B), "logical_divide")
    return _divide_1d(A, _as_layout(B, "logical_divide"))


def _zip_split(L: Layout, guide):
    if isinstance(guide, (tuple, list)):
        modes = L.modes()
        tiles, rests = [], []
        for i, g in enumerate(guide):
            if g is None:
                raise LayoutError("zipped/tiled/flat forms need a tile for every mode of the tiler (got None)")
            t, r = _zip_split(modes[i], g)
            tiles.append(t)
            rests.append(r)
        rests.extend(modes[len(guide):])
        return make_layout(*tiles), make_layout(*rests)
    return L[0], L[1]


def _zipped(fn, A: Layout, B):
    """``(tiles, rests)`` of ``fn(A, B)`` (a logical divide or product) split along the tiler ``B``."""
    return _zip_split(fn(A, B), B)


@_limit_context
@_on_composed
def zipped_divide(A, B):
    """``logical_divide`` with the tiles gathered into mode 0 and the rests into mode 1:
    ``((TileM,TileN), (RestM,RestN,L,...))``; ``layout<0>(zipped_divide(a, b)) == composition(a, b)``."""
    return make_layout(*_zipped(logical_divide, A, B))


@_limit_context
@_on_composed
def tiled_divide(A, B):
    """``logical_divide`` rearranged as ``((TileM,TileN), RestM, RestN, L, ...)``."""
    tile, rest = _zipped(logical_divide, A, B)
    return make_layout(tile, *rest.modes())


@_limit_context
@_on_composed
def flat_divide(A, B):
    """``logical_divide`` rearranged as ``(TileM, TileN, RestM, RestN, L, ...)``."""
    tile, rest = _zipped(logical_divide, A, B)
    return make_layout(*tile.modes(), *rest.modes())


def _product_1d(A: Layout, B: Layout) -> Layout:
    _require_static("logical_product", A, B)
    return make_layout(A, composition(complement(A, A.size() * B.cosize()), B))


@_limit_context
@_on_composed
def logical_product(A, B):
    """``A ⊗ B = (A, A* o B)`` with ``A* = complement(A, size(A) * cosize(B))``
    (``02_layout_algebra.md``, "Product"): mode 0 is ``A``, mode 1 is ``B`` with each element replaced
    by a unique replica of ``A``. ``(2,2):(4,1) ⊗ 6:1 == ((2,2),(2,3)):((4,1),(2,8))``. ``B``: a
    layout, an int or a tiler tuple (by mode). ``LayoutError`` when not admissible."""
    if isinstance(B, (tuple, list)):
        return _by_mode(logical_product, A, tuple(B), "logical_product")
    return _product_1d(A, _as_layout(B, "logical_product"))


@_limit_context
@_on_composed
def zipped_product(A, B):
    """By-mode ``logical_product`` rearranged as ``((M,N), (TileM,TileN,L,...))``."""
    return make_layout(*_zipped(logical_product, A, B))


@_limit_context
@_on_composed
def tiled_product(A, B):
    """By-mode ``logical_product`` rearranged as ``((M,N), TileM, TileN, L, ...)``."""
    tile, rest = _zipped(logical_product, A, B)
    return make_layout(tile, *rest.modes())


@_limit_context
@_on_composed
def flat_product(A, B):
    """By-mode ``logical_product`` rearranged as ``(M, N, TileM, TileN, L, ...)``."""
    tile, rest = _zipped(logical_product, A, B)
    return make_layout(*tile.modes(), *rest.modes())


def _pad_rank(L: Layout, rank: int) -> Layout:
    modes = L.modes()
    return make_layout(*modes, *[Layout(1, 0)] * (rank - len(modes)))


def _rank_sensitive_product(A, B, raked: bool) -> Layout:
    A = _as_layout(A, "product")
    B = _as_layout(B, "product")
    _require_static("blocked/raked product", A, B)
    rank = max(A.rank, B.rank)
    A2, B2 = _pad_rank(A, rank), _pad_rank(B, rank)
    P = _product_1d(A2, B2)
    blocks, reps = P[0], P[1]
    modes = [make_layout(reps[i], blocks[i]) if raked else make_layout(blocks[i], reps[i]) for i in range(rank)]
    return coalesce(make_layout(*modes), (1,) * rank)


@_limit_context
def blocked_product(A, B) -> Layout:
    """Rank-sensitive product: tile ``A`` (the block) across ``B`` (the arrangement of blocks).

    Both are padded to the same rank with ``1:0`` modes; mode ``i`` of the result is
    ``(A_i, (A* o B)_i)`` coalesced (``02_layout_algebra.md``, "Blocked and Raked Products"):
    ``blocked_product((2,5):(5,1), (3,4):(1,3)) == (6,(5,4)):(5,(1,30))``."""
    return _rank_sensitive_product(A, B, raked=False)


@_limit_context
def raked_product(A, B) -> Layout:
    """Like :func:`blocked_product` but mode ``i`` is ``((A* o B)_i, A_i)``: the elements of ``A``
    are interleaved ("raked", a cyclic distribution) with the arrangement ``B``."""
    return _rank_sensitive_product(A, B, raked=True)


# ------------------------------------------------------------------------------------------------
# Inverses
# ------------------------------------------------------------------------------------------------

@_limit_context
def right_inverse(L) -> Layout:
    """A layout ``R`` with ``L(R(i)) == i`` for every ``i < size(R)``, as large as such a layout can
    be built from ``L``'s modes (CuTe ``right_inverse``): sort the modes by stride and follow the
    chain of strides ``1, s_0, s_0 s_1, ...``; ``R`` maps back to the domain index of each mode.
    ``right_inverse((8,4):(4,1)) == (4,8):(8,1)``; ``1:0`` when no mode has stride 1. Modes with
    zero or negative strides are ignored. ``LayoutError`` for symbolic layouts."""
    L = _as_layout(L, "right_inverse")
    _require_static("right_inverse", L)
    cands = []
    pos = 1
    for s, d in L.leaves():
        if s > 1 and d > 0:
            cands.append((d, s, pos))
        pos *= s
    cands.sort()
    modes, curr = [], 1
    for d, s, p in cands:
        if d < curr:
            continue
        if d > curr:
            break
        modes.append((s, p))
        curr *= s
    R = _layout_from_modes(modes)
    l_leaves, r_leaves = L.leaves(), R.leaves()

    def fail(i, got, want):  # the construction is exact; a failure is a kernc bug
        raise InternalCompilerError(f"right_inverse({L}) = {R} fails at {i}: L(R(i)) = {got}")

    # every value is below size(L) or cosize(L), both within MAX_LAYOUT_SIZE: int64 is exact
    _verify_map(lambda i: _eval_flat(l_leaves, _eval_flat(r_leaves, i)), lambda i: i, R.size(), True, fail,
                len(l_leaves) + len(r_leaves))
    return R


@_limit_context
def left_inverse(L) -> Layout:
    """A layout ``R`` with ``R(L(i)) == i`` for every ``i < size(L)`` (CuTe ``left_inverse``):
    ``right_inverse(make_layout(L, complement(L)))``. ``left_inverse(4:2) == (2,4):(4,1)``.
    ``LayoutError`` when ``L`` is not injective (no left inverse exists) or is symbolic."""
    L = _as_layout(L, "left_inverse")
    _require_static("left_inverse", L)
    try:
        C = complement(L)
    except LayoutError as err:
        raise LayoutError(f"left_inverse({L}) does not exist: {err}") from None
    for s, d in L.leaves():
        if s > 1 and d == 0:
            raise LayoutError(f"left_inverse({L}) does not exist: the layout is not injective (a mode of "
                              f"size {s} has stride 0)")
    # Complement succeeded and no mode broadcasts: (L, C) is a bijection onto range(size(L)*size(C)),
    # so its right inverse is a full inverse. Verified anyway.
    R = right_inverse(make_layout(L, C))
    l_leaves, r_leaves = L.leaves(), R.leaves()

    def fail(i, got, want):
        raise LayoutError(f"left_inverse({L}) does not exist: the layout is not injective "
                          f"(index {i} is not recovered: {got})")

    _verify_map(lambda i: _eval_flat(r_leaves, _eval_flat(l_leaves, i)), lambda i: i, L.size(), True, fail,
                len(l_leaves) + len(r_leaves))
    return R


# ------------------------------------------------------------------------------------------------
# Swizzles
# ------------------------------------------------------------------------------------------------

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
    :class:`Layout` that defines the shape. Printed ``Sw<3,3,3> o 0 o (8,64):(64,1)`` (CuTe's
    ``print`` spells the offset ``_0``); :func:`parse_layout` also accepts the offset omitted and the
    ``.kern`` spelling ``swizzle<3,3,3> o (8,64):(64,1)``. Bounds are the inner layout's."""

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
        every offset) up to ``VERIFY_EXHAUSTIVE_LIMIT`` offsets; above that, for a swizzle outer
        function, the bound ``((x >> t) + 1) << t`` of the largest ``x = offset + o``, where bit
        ``t`` is the first the swizzle leaves alone (a swizzle keeps every bit from ``t`` up, so
        ``outer(x) >> t == x >> t``), so the work is bounded whatever the size. ``LayoutError`` for
        a large layout under an outer function that is not a swizzle."""
        inner = self.inner._static(env, "cosize")
        n = inner.size()
        leaves = inner.leaves()
        swizzle = isinstance(self.outer, Swizzle)
        if swizzle and n <= VERIFY_EXHAUSTIVE_LIMIT and _int64_ok(_abs_bound(leaves, n) + abs(self.offset)):
            import numpy as np

            offs = _eval_flat(leaves, np.arange(n, dtype=np.int64)) + self.offset
            return int(np.max(self.outer(offs))) + 1
        if n <= _PY_EXHAUSTIVE_LIMIT or (not swizzle and n <= VERIFY_EXHAUSTIVE_LIMIT):
            return max(self.outer(self.offset + _eval_flat(leaves, i)) for i in range(n)) + 1
        if not swizzle:
            raise LayoutError(f"cosize of '{self}': {n} offsets is too many to evaluate under a "
                              f"function that is not a swizzle")
        top = self.offset + sum(max(0, (s - 1) * d) for s, d in inner.leaves())
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
        return f"{self.outer} o {self.offset} o {self.inner}"

    def __repr__(self) -> str:
        return f"ComposedLayout('{self}')"

    def __eq__(self, other) -> bool:
        return (isinstance(other, ComposedLayout) and self.outer == other.outer
                and self.offset == other.offset and self.inner == other.inner)

    def __hash__(self) -> int:
        return hash((self.outer, self.offset, self.inner))


# ------------------------------------------------------------------------------------------------
# Parsing
# ------------------------------------------------------------------------------------------------

_ATOM = re.compile(
    r"\s*(-?[0-9]+|_[0-9]+(?![A-Za-z0-9_])|[A-Za-z_][A-Za-z0-9_]*(?:\s*[*+]\s*(?:[0-9]+|[A-Za-z_][A-Za-z0-9_]*))*)")
_SWIZZLE = re.compile(r"\s*(?:Sw|swizzle|Swizzle)\s*<\s*(-?[0-9]+)\s*,\s*(-?[0-9]+)\s*,\s*(-?[0-9]+)\s*>\s*")
_INT = re.compile(r"\s*(-?[0-9]+|_[0-9]+)\s*")


def _parse_inttuple(text: str, pos: int, depth: int = 0):
    n = len(text)
    while pos < n and text[pos].isspace():
        pos += 1
    if pos < n and text[pos] == "(":
        if depth >= MAX_LAYOUT_DEPTH:  # before recursing: deep text must not exhaust the stack
            raise LayoutLimitError(f"the layout '{text.strip()[:60]}...' is nested more than {MAX_LAYOUT_DEPTH} "
                              f"deep (MAX_LAYOUT_DEPTH)")
        pos += 1
        items = []
        while True:
            item, pos = _parse_inttuple(text, pos, depth + 1)
            items.append(item)
            while pos < n and text[pos].isspace():
                pos += 1
            if pos < n and text[pos] == ",":
                pos += 1
                continue
            if pos < n and text[pos] == ")":
                return tuple(items), pos + 1
            raise LayoutError(f"expected ',' or ')' at column {pos + 1} of '{text}'")
    m = _ATOM.match(text, pos)
    if not m:
        raise LayoutError(f"expected a number, a size symbol or '(' at column {pos + 1} of '{text}'")
    atom = m.group(1)
    if re.fullmatch(r"-?[0-9]+", atom):
        value = int(atom)
    elif re.fullmatch(r"_[0-9]+", atom):
        value = int(atom[1:])
    else:
        value = atom.replace(" ", "")
    return value, m.end()


def _parse_layout_term(text: str) -> Layout:
    shape, pos = _parse_inttuple(text, 0)
    rest = text[pos:].strip()
    if not rest:
        return Layout(shape)
    if not rest.startswith(":"):
        raise LayoutError(f"expected ':' after the shape in '{text.strip()}'")
    p = text.index(":", pos) + 1
    stride, pos = _parse_inttuple(text, p)
    if text[pos:].strip():
        raise LayoutError(f"unexpected '{text[pos:].strip()}' after the layout '{text[:pos].strip()}'")
    return Layout(shape, stride)


def _split_compose(text: str) -> list:
    """Split at top-level ``o`` / ``∘`` separators (outside parentheses and angle brackets)."""
    parts, depth, cur, i, n = [], 0, [], 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
        if depth == 0 and ch == "∘":
            parts.append("".join(cur))
            cur = []
            i += 1
            continue
        if (depth == 0 and ch == "o" and (i == 0 or text[i - 1].isspace())
                and (i + 1 == n or text[i + 1].isspace())):
            parts.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def parse_layout(text: str):
    """Parse a layout expression in CuTe notation.

    - ``4:1``, ``(4,(2,3)):(2,(1,8))``, ``(_2,_4):(_1,_2)`` (CuTe's static spelling), symbols
      ``(n,3):(1,n)``; a shape alone (``(4,8)``) gets compact column-major strides.
    - ``Sw<3,3,3>`` / ``swizzle<3,3,3>``: a :class:`Swizzle`.
    - ``Sw<3,3,3> o (8,64):(64,1)`` or ``Sw<3,3,3> o 0 o (8,64):(64,1)`` (the CuTe print form, offset
      ``0``/``_0``): a :class:`ComposedLayout`.
    - ``A o B`` with layouts ``A``, ``B`` (``∘`` also accepted): ``composition(A, B)``, folded right
      to left.

    Raises :class:`LayoutError` with the offending text."""
    if not isinstance(text, str) or not text.strip():
        raise LayoutError("empty layout expression")
    parts = [p.strip() for p in _split_compose(text)]
    if any(not p for p in parts):
        raise LayoutError(f"missing operand around 'o' in '{text.strip()}'")

    def is_swizzle(p):
        return _SWIZZLE.fullmatch(p) is not None

    def swizzle_of(p):
        m = _SWIZZLE.fullmatch(p)
        return Swizzle(int(m.group(1)), int(m.group(2)), int(m.group(3)))

    if len(parts) == 1 and is_swizzle(parts[0]):
        return swizzle_of(parts[0])
    if is_swizzle(parts[-1]):
        raise LayoutError(f"a swizzle must be followed by a layout in '{text.strip()}'")
    acc = _parse_layout_term(parts[-1])
    i = len(parts) - 2
    while i >= 0:
        p = parts[i]
        if _INT.fullmatch(p) and i >= 1 and is_swizzle(parts[i - 1]):
            off = p.strip()
            offset = int(off[1:]) if off.startswith("_") else int(off)
            acc = _compose_parsed(swizzle_of(parts[i - 1]), offset, acc, text)
            i -= 2
            continue
        if is_swizzle(p):
            acc = _compose_parsed(swizzle_of(p), 0, acc, text)
        else:
            acc = composition(_parse_layout_term(p), acc)
        i -= 1
    return acc


def _compose_parsed(sw, offset, inner, text):
    if not isinstance(inner, Layout):
        raise LayoutError(f"a swizzle must be applied to a plain layout in '{text.strip()}'")
    return ComposedLayout(sw, offset, inner)


# ------------------------------------------------------------------------------------------------
# im2col (layouts.md section 3)
# ------------------------------------------------------------------------------------------------

def _pair(v, name):
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise LayoutError(f"im2col: {name} must be an int or a pair, got {v!r}")
        return int(v[0]), int(v[1])
    return int(v), int(v)


class Im2col(FunctionalLayout):
    """The implicit-GEMM view of an NHWC input as an ``M x K`` matrix (see :func:`im2col`)."""

    def __init__(self, N, H, W, C, R, S, stride=(1, 1), padding=(0, 0), dilation=(1, 1), padded_channels=None):
        self.N, self.H, self.W, self.C, self.R, self.S = (int(v) for v in (N, H, W, C, R, S))
        if min(self.N, self.H, self.W, self.C, self.R, self.S) < 1:
            raise LayoutError(f"im2col: sizes must be positive (N={N}, H={H}, W={W}, C={C}, R={R}, S={S})")
        self.sh, self.sw = _pair(stride, "stride")
        self.ph, self.pw = _pair(padding, "padding")
        self.dh, self.dw = _pair(dilation, "dilation")
        if min(self.sh, self.sw, self.dh, self.dw) < 1 or min(self.ph, self.pw) < 0:
            raise LayoutError("im2col: stride and dilation must be positive, padding non-negative")
        self.Cp = self.C if padded_channels is None else int(padded_channels)
        if self.Cp < self.C:
            raise LayoutError(f"im2col: padded_channels={self.Cp} is smaller than C={self.C}")
        self.OH = (self.H + 2 * self.ph - self.dh * (self.R - 1) - 1) // self.sh + 1
        self.OW = (self.W + 2 * self.pw - self.dw * (self.S - 1) - 1) // self.sw + 1
        if self.OH < 1 or self.OW < 1:
            raise LayoutError(f"im2col: the filter ({self.R}x{self.S}, dilation {self.dh}x{self.dw}) does not fit "
                              f"the padded {self.H}x{self.W} input (OH={self.OH}, OW={self.OW})")
        self.M = self.N * self.OH * self.OW
        self.K = self.R * self.S * self.Cp

    @property
    def shape(self) -> tuple:
        """``(M, K) = (N*OH*OW, R*S*C)`` (``C`` = ``padded_channels`` when given)."""
        return (self.M, self.K)

    def extents(self) -> tuple:
        return (self.M, self.K)

    def split(self, c):
        """``(m, k) -> ((n, oh, ow), (r, s, c))``: ``m`` last-fastest over (n, oh, ow), ``k`` over
        (r, s, c) channel fastest."""
        m, k = c
        m, k = operator.index(m), operator.index(k)
        t, ow = divmod(m, self.OW)
        n, oh = divmod(t, self.OH)
        t, ch = divmod(k, self.Cp)
        r, s = divmod(t, self.S)
        return (n, oh, ow), (r, s, ch)

    def to_source(self, c) -> tuple:
        """``(m, k) -> (n, h, w, c)`` with ``h = oh*sh + r*dh - ph``, ``w = ow*sw + s*dw - pw``
        (``h``/``w`` may be negative or past the edge: padding)."""
        (n, oh, ow), (r, s, ch) = self.split(c)
        return (n, oh * self.sh + r * self.dh - self.ph, ow * self.sw + s * self.dw - self.pw, ch)

    def to_source_checked(self, c):
        """``((n, h, w, c), ok)``: ok iff ``0 <= m < M``, ``0 <= k < K``, ``0 <= h < H``, ``0 <= w < W``
        and ``c < C`` (padded channels read 0)."""
        n, h, w, ch = src = self.to_source(c)
        m, k = c
        ok = (0 <= m < self.M and 0 <= k < self.K and 0 <= h < self.H and 0 <= w < self.W and ch < self.C)
        return src, ok

    def input_layout(self) -> Layout:
        """The packed NHWC input layout ``(N,H,W,C):(H*W*C,W*C,C,1)``, the inner layer of the chain."""
        return Layout((self.N, self.H, self.W, self.C), (self.H * self.W * self.C, self.W * self.C, self.C, 1))

    def offsets_layout(self) -> ChainLayout:
        """``chain(input_layout(), self)``: ``(m, k)`` -> flat input offset, checked per layer."""
        return chain(self.input_layout(), self)

    def __str__(self) -> str:
        extra = "" if self.Cp == self.C else f", padded_channels={self.Cp}"
        return (f"im2col(N={self.N}, H={self.H}, W={self.W}, C={self.C}, R={self.R}, S={self.S}, "
                f"stride=({self.sh},{self.sw}), padding=({self.ph},{self.pw}), "
                f"dilation=({self.dh},{self.dw}){extra})")


def im2col(N, H, W, C, R, S, stride=(1, 1), padding=(0, 0), dilation=(1, 1), padded_channels=None) -> Im2col:
    """Convolution input as an implicit ``M x K`` matrix (``layouts.md`` section 3).

    ``M = N*OH*OW``, ``K = R*S*C``, ``OH = (H + 2*ph - dh*(R-1) - 1)//sh + 1`` (likewise ``OW``).
    Row ``m`` splits into ``(n, oh, ow)`` (last fastest), column ``k`` into ``(r, s, c)`` (channel
    fastest -- not PyTorch ``unfold``'s ``(c, r, s)``); the source is ``X[n, h, w, c]`` with
    ``h = oh*sh + r*dh - ph``, ``w = ow*sw + s*dw - pw``, in bounds iff ``0 <= h < H`` and
    ``0 <= w < W`` (else the element reads 0). ``padded_channels`` (>= ``C``) pads ``K`` to
    ``R*S*padded_channels``; channels ``>= C`` are out of bounds. ``stride``/``padding``/``dilation``
    are ints or ``(h, w)`` pairs. Example: ``N=1, H=W=5, C=1``, 3x3, stride 2, pad 1: ``OH=OW=3`` and
    ``(m=4, k=0)`` reads ``(0, 1, 1, 0)``, offset 6 of the input. ``LayoutError`` for bad sizes."""
    return Im2col(N, H, W, C, R, S, stride, padding, dilation, padded_channels)


class OutputGradMatrix(FunctionalLayout):
    """The output gradient ``dY`` (NHWK, ``(N, OH, OW, Kout)``) as one flat ``Kout x M`` matrix for
    the weight-gradient GEMM ``dW[k, (r,s,c)] = sum_m dY[m, k] * im2col[m, (r,s,c)]``: column ``m``
    splits into ``(n, oh, ow)`` in the same pixel order as :func:`im2col`'s rows (the role of CubeCL's
    ``TmaOutGradLayout``; ``layouts.md`` section 3)."""

    def __init__(self, N, OH, OW, K):
        self.N, self.OH, self.OW, self.Kout = (int(v) for v in (N, OH, OW, K))
        if min(self.N, self.OH, self.OW, self.Kout) < 1:
            raise LayoutError(f"output gradient: sizes must be positive (N={N}, OH={OH}, OW={OW}, K={K})")
        self.M = self.N * self.OH * self.OW

    @property
    def shape(self) -> tuple:
        """``(Kout, M)`` with ``M = N*OH*OW``."""
        return (self.Kout, self.M)

    def extents(self) -> tuple:
        return (self.Kout, self.M)

    def to_source(self, c) -> tuple:
        """``(k, m) -> (n, oh, ow, k)``."""
        k, m = (operator.index(v) for v in c)
        t, ow = divmod(m, self.OW)
        n, oh = divmod(t, self.OH)
        return (n, oh, ow, k)

    def to_source_checked(self, c):
        """``((n, oh, ow, k), ok)`` with ok iff ``0 <= k < Kout`` and ``0 <= m < M``."""
        k, m = c
        return self.to_source(c), (0 <= k < self.Kout and 0 <= m < self.M)

    def __str__(self) -> str:
        return f"output_grad(N={self.N}, OH={self.OH}, OW={self.OW}, K={self.Kout})"


def output_grad(N, OH, OW, K) -> OutputGradMatrix:
    """``dY`` of shape ``(N, OH, OW, K)`` viewed as the ``K x M`` matrix of the weight-gradient GEMM
    (see :class:`OutputGradMatrix`). ``LayoutError`` for non-positive sizes."""
    return OutputGradMatrix(N, OH, OW, K)


class Im2colDgrad(FunctionalLayout):
    """The data-gradient (transposed convolution) view of ``dY`` as an ``M' x K'`` matrix.

    ``dX[n, h, w, c] = sum_{r,s,k} dY[n, oh, ow, k] * Wt[k, r, s, c]`` with ``M' = N*H*W`` rows over
    input pixels ``(n, h, w)`` (last fastest) and ``K' = R*S*Kout`` columns over ``(r, s, k)``
    (``k`` fastest). The source pixel is ``oh = (h + ph - r*dh) / sh``, ``ow = (w + pw - s*dw) / sw``,
    valid only where both divisions are exact and ``0 <= oh < OH``, ``0 <= ow < OW``
    (``layouts.md`` section 3: "valid only where the division is exact")."""

    def __init__(self, N, H, W, K, R, S, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
        fwd = Im2col(N, H, W, 1, R, S, stride, padding, dilation)
        self.N, self.H, self.W, self.R, self.S = fwd.N, fwd.H, fwd.W, fwd.R, fwd.S
        self.Kout = int(K)
        if self.Kout < 1:
            raise LayoutError(f"im2col_dgrad: K must be positive, got {K}")
        self.sh, self.sw, self.ph, self.pw, self.dh, self.dw = fwd.sh, fwd.sw, fwd.ph, fwd.pw, fwd.dh, fwd.dw
        self.OH, self.OW = fwd.OH, fwd.OW
        self.M = self.N * self.H * self.W
        self.K = self.R * self.S * self.Kout

    @property
    def shape(self) -> tuple:
        """``(M', K') = (N*H*W, R*S*Kout)``."""
        return (self.M, self.K)

    def extents(self) -> tuple:
        return (self.M, self.K)

    def _split(self, c):
        m, k = (operator.index(v) for v in c)
        t, w = divmod(m, self.W)
        n, h = divmod(t, self.H)
        t, kk = divmod(k, self.Kout)
        r, s = divmod(t, self.S)
        return n, h, w, r, s, kk

    def to_source(self, c) -> tuple:
        """``(m', k') -> (n, oh, ow, k)`` with floor divisions (meaningful only where exact)."""
        n, h, w, r, s, kk = self._split(c)
        return (n, (h + self.ph - r * self.dh) // self.sh, (w + self.pw - s * self.dw) // self.sw, kk)

    def to_source_checked(self, c):
        """``((n, oh, ow, k), ok)``: ok iff both divisions are exact and the pixel is inside dY."""
        m, k = c
        n, h, w, r, s, kk = self._split(c)
        nh, nw = h + self.ph - r * self.dh, w + self.pw - s * self.dw
        ok = (0 <= m < self.M and 0 <= k < self.K and nh % self.sh == 0 and nw % self.sw == 0)
        oh, ow = nh // self.sh, nw // self.sw
        ok = ok and 0 <= oh < self.OH and 0 <= ow < self.OW
        return (n, oh, ow, kk), ok

    def __str__(self) -> str:
        return (f"im2col_dgrad(N={self.N}, H={self.H}, W={self.W}, K={self.Kout}, R={self.R}, S={self.S}, "
                f"stride=({self.sh},{self.sw}), padding=({self.ph},{self.pw}), dilation=({self.dh},{self.dw}))")


def im2col_dgrad(N, H, W, K, R, S, stride=(1, 1), padding=(0, 0), dilation=(1, 1)) -> Im2colDgrad:
    """The output gradient ``dY`` (``(N, OH, OW, K)``) as the ``N*H*W x R*S*K`` matrix of the
    data-gradient GEMM (see :class:`Im2colDgrad`); ``OH``/``OW`` follow the forward convolution of an
    ``H x W`` input. ``LayoutError`` for bad sizes."""
    return Im2colDgrad(N, H, W, K, R, S, stride, padding, dilation)
