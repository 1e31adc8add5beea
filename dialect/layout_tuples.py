"""CuTe's integer tuples (``IntTuple``): the nested shapes and strides of a layout.

An entry is an int or a size-symbol string (``"n"``, ``"H*W"``, parsed with
:class:`kernc.dialect.strided.Poly`); a tuple nests entries or tuples. Here: normalising and checking
them against the limits (:mod:`kernc.dialect.layout_errors`), flattening and unflattening, products,
congruence, printing in CuTe notation, binding size symbols, and coordinates to offsets
(``crd2idx``, ``01_layout.md``).
"""

from __future__ import annotations

import math
import operator
import re

from .layout_errors import (MAX_LAYOUT_DEPTH, MAX_LAYOUT_MODES, MAX_LAYOUT_SIZE, LayoutError, LayoutLimitError,
                            _brief, _limit_text, _show_int)
from .strided import Poly


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
