"""Bounded evaluation of flat layouts over many indices: the verification of the algebra's results.

A layout evaluated at index ``x`` over its flat leaves ``[(s_k, d_k)]`` is ``sum c_k d_k`` with ``x``
split colexicographically, the last leaf unbounded (:func:`_eval_flat`). Composition and the
inverses check their result by evaluating such chains of leaves (:func:`_verify_map`: ``R(i) ==
A(B(i))`` for every ``i < size(B)`` when that is cheap -- at most :data:`VERIFY_EXHAUSTIVE_LIMIT`
indices and :data:`VERIFY_WORK_LIMIT` (index, mode) pairs, vectorised with numpy, or
``_PY_EXHAUSTIVE_LIMIT`` indices in Python integers when the values may leave int64 -- else the
construction's proof plus a deterministic sample of ``_SAMPLES + 2 * _EDGE_SAMPLES`` indices); the
cosize of a swizzled layout takes its exact maximum the same way (:func:`_max_image`). Every such
evaluation is in this module, so its work is bounded (and counted, by the tests) in one place.
"""

from __future__ import annotations

import math
import random

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


def _eval_chain(chain, x):
    """``x`` through the flat layouts of ``chain`` (lists of leaves), first to last; ``x`` itself for
    an empty chain."""
    for leaves in chain:
        x = _eval_flat(leaves, x)
    return x


def _abs_bound(leaves, x_bound: int) -> int:
    """Bound on ``|value|`` of ``_eval_flat(leaves, x)`` for ``0 <= |x| <= x_bound``."""
    if not leaves:
        return 0
    total = sum((s - 1) * abs(d) for s, d in leaves[:-1])
    p = math.prod(s for s, _ in leaves[:-1])
    return total + (x_bound // max(p, 1) + 1) * abs(leaves[-1][1])


def _verify_map(lhs: list, rhs: list, n: int, proven: bool, fail, vectorisable: bool = True) -> None:
    """Check ``lhs(i) == rhs(i)`` for ``i < n``: exhaustively when that is cheap, else ``proven``
    (the construction's proof) plus a deterministic sample. ``lhs``/``rhs`` are chains of flat
    layouts (lists of leaves, applied first to last, :func:`_eval_chain`; ``[]`` is the identity),
    evaluated on ints and, when ``vectorisable`` (every value fits int64), on numpy int64 arrays.
    ``fail(i, got, want)`` raises (``i`` None: too large to verify without a proof).

    Work bound, with ``cost`` the number of leaves of both chains (modes evaluated per index): at
    most ``min(n, VERIFY_EXHAUSTIVE_LIMIT, VERIFY_WORK_LIMIT / cost)`` indices vectorised, or
    ``_PY_EXHAUSTIVE_LIMIT`` in Python integers, or a sample of ``_SAMPLES + 2 * _EDGE_SAMPLES``
    indices; never more, whatever ``n``."""
    cost = max(1, sum(len(leaves) for leaves in lhs + rhs))
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


def _check_points(lhs: list, rhs: list, points, vectorised: bool, fail) -> None:
    """``lhs(i) == rhs(i)`` (chains, as in :func:`_verify_map`) for ``i`` in ``points`` (a range or a
    sorted list), on one numpy int64 array when ``vectorised``, else one Python int at a time."""
    if vectorised:
        import numpy as np

        idx = np.asarray(points, dtype=np.int64) if not isinstance(points, range) else \
            np.arange(points.start, points.stop, dtype=np.int64)
        bad = np.nonzero(np.asarray(_eval_chain(lhs, idx)) != np.asarray(_eval_chain(rhs, idx)))[0]
        if bad.size:
            i = int(idx[bad[0]])
            fail(i, _eval_chain(lhs, i), _eval_chain(rhs, i))
        return
    for i in points:
        a, b = _eval_chain(lhs, i), _eval_chain(rhs, i)
        if a != b:
            fail(i, a, b)


def _int64_ok(*bounds) -> bool:
    return all(b < _INT64_SAFE for b in bounds)


def _max_image(fn, offset: int, leaves: list, n: int, vectorised: bool):
    """``max(fn(offset + L(i)))`` over ``i < n`` for the flat layout ``L`` of ``leaves``, evaluated
    exactly when that is cheap: on one numpy int64 array (``vectorised``: ``fn`` takes arrays, as a
    swizzle does) up to :data:`VERIFY_EXHAUSTIVE_LIMIT` indices whose offsets fit int64; one Python
    int at a time up to ``_PY_EXHAUSTIVE_LIMIT`` (``VERIFY_EXHAUSTIVE_LIMIT`` for an ``fn`` on ints
    only). ``None`` past those (the caller bounds it instead)."""
    if vectorised and n <= VERIFY_EXHAUSTIVE_LIMIT and _int64_ok(_abs_bound(leaves, n) + abs(offset)):
        import numpy as np

        offs = _eval_flat(leaves, np.arange(n, dtype=np.int64)) + offset
        return int(np.max(fn(offs)))
    if n <= _PY_EXHAUSTIVE_LIMIT or (not vectorised and n <= VERIFY_EXHAUSTIVE_LIMIT):
        return max(fn(offset + _eval_flat(leaves, i)) for i in range(n))
    return None
