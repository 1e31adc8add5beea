"""Property tests of the layout algebra (hypothesis; small shapes, ~150 examples each).

Postconditions after the CuTe documentation (``02_layout_algebra.md``: coalesce, composition,
complement, logical_divide) and CuTe's unit tests (``test/unit/cute/core/*.cpp``)."""

from __future__ import annotations

import math

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kernc.layout import (
    Layout,
    LayoutError,
    Swizzle,
    coalesce,
    complement,
    composition,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    right_inverse,
    zipped_divide,
)

FAST = settings(max_examples=150, deadline=None)


@st.composite
def nested(draw, items, depth=0):
    """Group a list of leaves into a random nested tuple (or a bare leaf), at most 8 levels deep:
    a group of all the items may nest again, so without a bound a draw could pass the layout
    algebra's MAX_LAYOUT_DEPTH (32) and fail for a reason the property is not about."""
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    out, i = [], 0
    while i < len(items):
        k = draw(st.integers(1, len(items) - i))
        group = items[i:i + k]
        deeper = k > 1 and depth < 8 and draw(st.booleans())
        out.append(draw(nested(group, depth + 1)) if deeper else (group[0] if k == 1 else tuple(group)))
        i += k
    return tuple(out)


def build(shapes, strides, profile):
    idx = iter(range(len(shapes)))

    def rec(p):
        if isinstance(p, tuple):
            return tuple(rec(e) for e in p)
        return next(idx)

    skel = rec(profile)

    def fill(p, src):
        if isinstance(p, tuple):
            return tuple(fill(e, src) for e in p)
        return src[p]

    return Layout(fill(skel, shapes), fill(skel, strides))


@st.composite
def layouts(draw, max_leaves=4, max_shape=6, max_stride=24, max_size=256, negative=False):
    n = draw(st.integers(1, max_leaves))
    shapes = draw(st.lists(st.integers(1, max_shape), min_size=n, max_size=n))
    assume(math.prod(shapes) <= max_size)
    lo = -max_stride if negative else 0
    strides = draw(st.lists(st.integers(lo, max_stride), min_size=n, max_size=n))
    profile = draw(nested(list(range(n))))
    return build(shapes, strides, profile)


@st.composite
def injective_layouts(draw, max_leaves=4):
    """Layouts whose sorted modes satisfy Shah's complement condition, in a random mode order."""
    n = draw(st.integers(1, max_leaves))
    shapes = draw(st.lists(st.integers(1, 5), min_size=n, max_size=n))
    gaps = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    strides, curr = [], 1
    for s, g in zip(shapes, gaps):
        strides.append(curr * g)
        curr = curr * g * s
    perm = draw(st.permutations(list(range(n))))
    shapes = [shapes[p] for p in perm]
    strides = [strides[p] for p in perm]
    profile = draw(nested(list(range(n))))
    return build(shapes, strides, profile)


@st.composite
def bijective_layouts(draw, max_leaves=4):
    """Compact layouts with permuted strides: bijections onto range(size)."""
    n = draw(st.integers(1, max_leaves))
    shapes = draw(st.lists(st.integers(1, 5), min_size=n, max_size=n))
    order = draw(st.permutations(list(range(n))))
    strides, curr = [0] * n, 1
    for k in order:
        strides[k] = curr
        curr *= shapes[k]
    profile = draw(nested(list(range(n))))
    return build(shapes, strides, profile)


def flat_eval(L, i):
    leaves = L.leaves()
    total = 0
    for k, (s, d) in enumerate(leaves):
        if k == len(leaves) - 1:
            total += i * d
        else:
            i, r = divmod(i, s)
            total += r * d
    return total


@FAST
@given(layouts(negative=True))
def test_index_evaluation_is_colexicographic(L):
    assert [L(i) for i in range(L.size())] == [flat_eval(L, i) for i in range(L.size())]
    assert L.offsets() == [L(i) for i in range(L.size())]
    assert Layout.parse(str(L)) == L


@FAST
@given(layouts(negative=True))
def test_coalesce_preserves_the_map(L):
    C = coalesce(L)
    assert C.size() == L.size()
    assert C.depth <= 1
    assert C.offsets() == L.offsets()
    assert coalesce(C) == C
    if isinstance(L.shape, tuple):
        prof = tuple(1 for _ in L.shape)
        B = coalesce(L, prof)
        assert B.rank == L.rank
        assert B.offsets() == L.offsets()


@FAST
@given(layouts(), layouts(max_stride=8))
def test_composition_is_correct_whenever_it_returns(A, B):
    try:
        R = composition(A, B)
    except LayoutError as err:
        assert str(A) in str(err) and str(B) in str(err)
        return
    assert R.size() == B.size()
    assert all(R(i) == A(B(i)) for i in range(B.size()))
    if isinstance(B.shape, tuple):  # compatible with B: the same top-level modes and sizes
        assert R.rank == B.rank and all(R[k].size() == B[k].size() for k in range(B.rank))
        assert all(R(c) == A(B(c)) for c in [(0,) * B.rank, tuple(m.size() - 1 for m in B.modes())])


@FAST
@given(layouts(), st.data())
def test_composition_with_prefix_tiles_always_succeeds(A, data):
    # n:r with r and r*n products of consecutive (coalesced) shapes of A are admissible
    C = coalesce(A)
    shapes = [C.shape] if isinstance(C.shape, int) else list(C.shape)
    i = data.draw(st.integers(0, len(shapes) - 1))
    j = data.draw(st.integers(i, len(shapes)))
    r = math.prod(shapes[:i])
    n = math.prod(shapes[i:j])
    B = Layout(n, r)
    R = composition(A, B)
    assert all(R(k) == A(B(k)) for k in range(n))


@FAST
@given(layouts(max_size=64), st.integers(1, 96))
def test_complement_postconditions(A, M):
    try:
        R = complement(A, M)
    except LayoutError as err:
        assert str(A) in str(err)
        return
    offs = [R(i) for i in range(R.size())]
    assert offs == sorted(offs) and len(set(offs)) == len(offs)  # ordered: positive increasing strides
    image = set(A.offsets())
    assert all(R(i) not in image for i in range(1, R.size()))      # disjoint codomains


@FAST
@given(injective_layouts(), st.integers(1, 400))
def test_complement_of_injective_layout_completes_it(A, M):
    R = complement(A, M)
    both = make_layout(A, R)
    n = both.size()
    assert sorted(both.offsets()) == list(range(n))   # (A, A*) is a bijection onto range(size)
    assert n >= M
    largest = max([s * d for s, d in A.leaves() if s > 1] + [1])
    assert n < M + largest or n == A.size()             # and the round-up is minimal


@FAST
@given(injective_layouts())
def test_left_inverse(L):
    R = left_inverse(L)
    assert all(R(L(i)) == i for i in range(L.size()))


@FAST
@given(layouts(negative=True))
def test_right_inverse(L):
    R = right_inverse(L)
    assert all(L(R(i)) == i for i in range(R.size()))


@FAST
@given(bijective_layouts())
def test_right_inverse_of_bijection_is_full(L):
    R = right_inverse(L)
    assert R.size() == L.size()
    assert all(R(L(i)) == i for i in range(L.size()))


@FAST
@given(layouts(max_size=128), layouts(max_leaves=2, max_shape=4, max_stride=6, max_size=16))
def test_logical_divide_is_composition_with_complement(A, B):
    def outcome(f):
        try:
            return f()
        except LayoutError:
            return "error"

    ld = outcome(lambda: logical_divide(A, B))
    ref = outcome(lambda: composition(A, make_layout(B, complement(B, A.size()))))
    assert ld == ref
    if ld != "error":
        assert zipped_divide(A, B) == ld
        assert ld[0] == composition(A, B)


@FAST
@given(bijective_layouts(), st.data())
def test_divide_by_prefix_tile(A, data):
    # a tile of prod(shape[:j]) consecutive indices divides any layout: D(i) == A(i)
    shapes = [s for s, _ in A.leaves()]
    tile = math.prod(shapes[:data.draw(st.integers(0, len(shapes)))])
    D = logical_divide(A, Layout(tile, 1))
    n = A.size()
    assert D.size() == n and sorted(D.offsets()) == list(range(n))
    assert all(D(i) == A(i) for i in range(n))
    assert D[0].size() == tile


@FAST
@given(layouts(max_leaves=3, max_size=32), layouts(max_leaves=2, max_shape=4, max_stride=4, max_size=16))
def test_logical_product_is_correct_whenever_it_returns(A, B):
    try:
        R = logical_product(A, B)
    except LayoutError:
        return
    Astar = complement(A, A.size() * B.cosize())
    assert R.rank == 2 and R[0] == A and R[1].size() == B.size()
    assert all(R[1](i) == Astar(B(i)) for i in range(B.size()))


@FAST
@given(bijective_layouts(max_leaves=3), injective_layouts(max_leaves=2))
def test_logical_product_of_compact_tile_postconditions(A, B):
    R = logical_product(A, B)   # A compact: A* is a single mode, so the product always exists
    assert R.rank == 2 and R[0] == A and R[1].size() == B.size()
    assert len(set(R.offsets())) == R.size()   # B injective -> the replicas of A never overlap


@FAST
@given(st.integers(0, 5), st.integers(0, 5), st.integers(-8, 8), st.integers(0, 1 << 16))
def test_swizzle_is_an_involution(b, m, s, x):
    assume(abs(s) >= b)
    sw = Swizzle(b, m, s)
    assert sw(sw(x)) == x
    if s >= 0:
        mask = ((1 << b) - 1) << (m + s)
        assert sw(x) == x ^ ((x & mask) >> s)
    else:
        assert sw(x) == x ^ ((x & (((1 << b) - 1) << m)) << -s)
