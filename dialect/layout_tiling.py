"""The divides and products of the layout algebra (``02_layout_algebra.md``, "Division (Tiling)",
"Product (Tiling)"): ``logical_divide`` and its zipped/tiled/flat forms, ``logical_product`` and its
zipped/tiled/flat forms, ``blocked_product`` and ``raked_product``, built from
:mod:`kernc.dialect.layout_compose`.
"""

from __future__ import annotations

from .layout_compose import _by_mode, complement, composition
from .layout_errors import LayoutError, _limit_context
from .layout_swizzle import ComposedLayout
from .layout_type import Layout, _as_layout, _require_static, make_layout


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
    # CuTe's definition is the zip of the logical product, its modes left as they are (CuTe DSL prints
    # ``((2,3),(5,4)):((5,10),(1,30))`` for the docstring's example); coalescing them would hide the
    # block/arrangement split a kernel author indexes by.
    modes = [make_layout(reps[i], blocks[i]) if raked else make_layout(blocks[i], reps[i]) for i in range(rank)]
    return make_layout(*modes)


@_limit_context
def blocked_product(A, B) -> Layout:
    """Rank-sensitive product: tile ``A`` (the block) across ``B`` (the arrangement of blocks).

    Both are padded to the same rank with ``1:0`` modes; mode ``i`` of the result is
    ``(A_i, (A* o B)_i)``, CuTe's hierarchical form (the zip of :func:`logical_product`, modes not
    coalesced; ``02_layout_algebra.md``, "Blocked and Raked Products", and CuTe DSL's output):
    ``blocked_product((2,5):(5,1), (3,4):(1,3)) == ((2,3),(5,4)):((5,10),(1,30))``."""
    return _rank_sensitive_product(A, B, raked=False)


@_limit_context
def raked_product(A, B) -> Layout:
    """Like :func:`blocked_product` but mode ``i`` is ``((A* o B)_i, A_i)``: the elements of ``A``
    are interleaved ("raked", a cyclic distribution) with the arrangement ``B``."""
    return _rank_sensitive_product(A, B, raked=True)
