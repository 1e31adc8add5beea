"""CuTe notation for layouts: :func:`parse_layout` (``4:1``, ``(4,(2,3)):(2,(1,8))``, ``Sw<3,3,3> o
(8,64):(64,1)``, ``A o B``), also :meth:`Layout.parse`.
"""

from __future__ import annotations

import re

from .layout_compose import composition
from .layout_errors import MAX_LAYOUT_DEPTH, LayoutError, LayoutLimitError
from .layout_swizzle import ComposedLayout, Swizzle
from .layout_type import Layout


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


#: ``Layout.parse(text)`` is :func:`parse_layout`: set here, since parsing folds ``A o B`` with the
#: composition that builds on ``Layout`` (its module cannot import this one).
Layout.parse = staticmethod(parse_layout)
