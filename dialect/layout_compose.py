"""Coalesce, composition, complement and the inverses (``02_layout_algebra.md``; admissibility from
J. Shah, "A note on the algebra of CuTe layouts", Colfax Research).

Composition never returns a wrong layout: each leaf of ``B`` is composed with the coalesced ``A``
by the stride-division / shape-modulo construction of the CuTe docs, the leaves are combined when
the *no-carry* condition proves it valid, and the result is verified against ``A(B(i))``
(:mod:`kernc.dialect.layout_eval`); see the ``Trust`` section of
:mod:`kernc.dialect.layout_algebra`. The divides and products are built from these
(:mod:`kernc.dialect.layout_tiling`).
"""

from __future__ import annotations

from kernc.support.errors import InternalCompilerError

from .layout_errors import LayoutError, _limit_context, _tiler_str
from .layout_eval import _abs_bound, _int64_ok, _verify_map
from .layout_swizzle import ComposedLayout, Swizzle
from .layout_tuples import _fmt, _is_static, _is_tuple, _norm, _product, _unflatten
from .layout_type import Layout, _as_layout, _require_static, make_layout


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

    def fail(i, got, want):
        if i is None:
            raise LayoutError(
                f"composition {A} o {B} is not admissible: B's modes overlap in A's mixed-radix digits "
                f"(no-carry condition fails) and size {n} is too large to verify every index")
        raise LayoutError(
            f"composition {A} o {B} is not admissible: the modes of B do not distribute over A "
            f"(candidate {R} gives {got} at index {i}, but A(B({i})) = {want})")

    _verify_map([r_leaves], [b_leaves, a_leaves], n, proven, fail, vectorisable)  # R(i) == A(B(i))
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
    _verify_map([r_leaves, l_leaves], [], R.size(), True, fail)  # L(R(i)) == i
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

    _verify_map([l_leaves, r_leaves], [], L.size(), True, fail)  # R(L(i)) == i
    return R
