"""Flat strided layouts with symbolic sizes, the form buffer layouts take in the kern IR.

A buffer's storage layout maps a coordinate ``(c_0, ..., c_{r-1})`` of its logical dims to a flat
element offset ``sum_k c_k * d_k`` (CuTe's ``S:D``, flat modes only). Shapes and strides may name size
symbols bound at launch: ``(n,3):(1,n)`` is the struct-of-arrays layout of ``f32[n, 3]``.

Each shape/stride entry is a :class:`Poly`, a polynomial with integer coefficients over the symbols
(``3``, ``n``, ``H*W*C``, ``2*n+1``), so the text form round-trips exactly and lowering can emit the
products and sums as ``arith`` ops (see ``passes/lower_layouts.py``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_TOKEN = re.compile(r"\s*(?:([0-9]+)|([A-Za-z_][A-Za-z_0-9]*)|(.))")  # [0-9]: \d takes other scripts
#: Deepest nesting of parentheses and unary minus signs :meth:`Poly.parse` takes.
_MAX_NESTING = 64


@dataclass(frozen=True)
class Poly:
    """A polynomial ``sum coeff * prod(symbols)``; ``terms`` maps a sorted symbol tuple to a coeff."""

    terms: tuple  # tuple[(tuple[str, ...], int)], sorted, no zero coefficients

    @staticmethod
    def const(value: int) -> "Poly":
        return Poly(((( ), int(value)),) if value else ())

    @staticmethod
    def sym(name: str) -> "Poly":
        return Poly((((name,), 1),))

    @staticmethod
    def _make(d: dict) -> "Poly":
        return Poly(tuple(sorted((k, v) for k, v in d.items() if v)))

    def __add__(self, other: "Poly") -> "Poly":
        d = dict(self.terms)
        for k, v in other.terms:
            d[k] = d.get(k, 0) + v
        return Poly._make(d)

    def __mul__(self, other: "Poly") -> "Poly":
        d: dict = {}
        for k1, v1 in self.terms:
            for k2, v2 in other.terms:
                k = tuple(sorted(k1 + k2))
                d[k] = d.get(k, 0) + v1 * v2
        return Poly._make(d)

    @property
    def is_const(self) -> bool:
        return all(not k for k, _ in self.terms)

    @property
    def value(self) -> int:
        """The integer value of a constant polynomial; ``ValueError`` if it names symbols."""
        if not self.is_const:
            raise ValueError(f"'{self}' is not a constant")
        return sum(v for _, v in self.terms)

    @property
    def symbols(self) -> list[str]:
        out: list[str] = []
        for k, _ in self.terms:
            for s in k:
                if s not in out:
                    out.append(s)
        return out

    def evaluate(self, env: dict) -> int:
        """Value with symbols bound by ``env`` (name -> int); ``KeyError`` for an unbound symbol."""
        total = 0
        for k, v in self.terms:
            p = v
            for s in k:
                p *= int(env[s])
            total += p
        return total

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for k, v in self.terms:
            factors = list(k)
            if v != 1 or not factors:
                factors.insert(0, str(v))
            parts.append("*".join(factors))
        return "+".join(parts)

    @staticmethod
    @functools.lru_cache(maxsize=4096)  # immutable results, parsed hundreds of times per compile
    def parse(text: str) -> "Poly":
        """Parse ``int``, ``name``, ``a*b``, ``a+b``, ``a-b``, ``-a`` and parentheses (everything
        :meth:`__str__` writes, e.g. ``-1+2*n``); ``ValueError`` otherwise."""
        toks = [(m.group(1), m.group(2), m.group(3)) for m in _TOKEN.finditer(text) if m.group(0).strip()]
        pos = depth = 0

        def peek():
            return toks[pos] if pos < len(toks) else (None, None, None)

        def atom():
            nonlocal pos, depth
            num, name, ch = peek()
            pos += 1
            if num is not None:
                return Poly.const(int(num))
            if name is not None:
                return Poly.sym(name)
            if ch is None:
                raise ValueError(f"'{text}' ends where a number, a name or '(' should follow")
            if ch in "-(":
                depth += 1  # text from an IR file may nest without end: refused, not a RecursionError
                if depth > _MAX_NESTING:
                    raise ValueError(f"'{text[:40]}...' nests more than {_MAX_NESTING} parentheses or signs")
            if ch == "-":
                e = Poly.const(-1) * atom()
                depth -= 1
                return e
            if ch == "(":
                e = expr()
                if peek()[2] != ")":
                    raise ValueError(f"expected ')' in '{text}'")
                pos += 1
                depth -= 1
                return e
            raise ValueError(f"unexpected '{ch}' in '{text}'")

        def term():
            nonlocal pos
            e = atom()
            while peek()[2] == "*":
                pos += 1
                e = e * atom()
            return e

        def expr():
            nonlocal pos
            e = term()
            while peek()[2] in ("+", "-"):
                sign = Poly.const(-1 if peek()[2] == "-" else 1)
                pos += 1
                e = e + sign * term()
            return e

        result = expr()
        if pos != len(toks):
            raise ValueError(f"trailing text in '{text}'")
        return result


@dataclass(frozen=True)
class StridedLayout:
    """A flat layout ``(s_0,...,s_{r-1}):(d_0,...,d_{r-1})`` whose entries are :class:`Poly` s, with
    an optional ``start`` added to every offset (written ``(s...):(d...)+off``; only the
    planes of Caspar's storage use one: chunk ``k`` of ``as caspar`` starts at ``R_k * M``,
    ``docs/design/caspar-layout.md`` of the shared design notes)."""

    shape: tuple
    stride: tuple
    start: Poly = Poly(())

    def __post_init__(self):
        if len(self.shape) != len(self.stride):
            raise ValueError(f"shape and stride of '{self}' differ in rank")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def symbols(self) -> list[str]:
        out: list[str] = []
        for p in self.shape + self.stride + (self.start,):
            for s in p.symbols:
                if s not in out:
                    out.append(s)
        return out

    def offset(self, coord, env: dict | None = None) -> int:
        """Flat offset of integer coordinate ``coord`` with symbols bound by ``env``."""
        env = env or {}
        return self.start.evaluate(env) + sum(int(c) * d.evaluate(env) for c, d in zip(coord, self.stride))

    def injective(self, enumerate_limit: int = 1 << 16, padded: bool = False) -> bool:
        """Whether distinct coordinates provably give distinct offsets (``False`` when not proved).

        Modes of extent 1 are dropped. Static modes: sorted by ``|stride|``, each stride past the
        span ``sum (e_j - 1) * |d_j|`` of the smaller ones proves it (compact, padded, negative
        strides); failing that a layout of at most ``enumerate_limit`` coordinates is decided by
        listing its offsets (``(8, 2):(1, 4)``: no; ``(2, 2):(3, 2)``: yes). A stride 0 of an extent
        > 1 never is. Symbolic modes: a chain ``|d| = 1, e_0, e_0 * e_1, ...`` in some order (a
        compact layout: size == cosize), strides compared as polynomials; anything else (``(M,
        N):(ld, 1)``, whose ``ld >= N`` is not known) is not proved. ``padded``: a symbolic chain
        may also start at any constant stride and step by a whole multiple (up to 64) of the span
        so far (``(n, 3):(4, 1)``, NHWC with padded channels): distinct offsets too, as the race
        check (``frontend/races.py``) accepts; the in-place check keeps the compact chain."""
        one = Poly.const(1)
        modes = [(e, d) for e, d in zip(self.shape, self.stride) if e != one]
        if all(e.is_const and d.is_const for e, d in modes):
            ext = sorted(((e.value, abs(d.value)) for e, d in modes if e.value > 1), key=lambda m: m[1])
            if any(d == 0 for _, d in ext):
                return False
            span = 0
            for e, d in ext:
                if d <= span:
                    break
                span += (e - 1) * d
            else:
                return True
            count = 1
            for e, _ in ext:
                count *= e
            if count > enumerate_limit:
                return False
            offsets = {0}
            for e, d in ext:
                offsets = {o + k * d for o in offsets for k in range(e)}
            return len(offsets) == count
        rest, need = list(modes), one
        if padded:  # the chain starts at the smallest constant stride
            consts = [m for m in rest if m[1].is_const and m[1].value != 0]
            if not consts:
                return False
            first = min(consts, key=lambda m: abs(m[1].value))
            rest.remove(first)
            need = first[1] * first[0]
        factors = range(1, 65) if padded else (1,)
        while rest:
            for k, (e, d) in enumerate(rest):
                if any(d == need * Poly.const(f) or d == need * Poly.const(-f) for f in factors):
                    need = d * e
                    del rest[k]
                    break
            else:
                return False
        return True

    def cosize(self, env: dict) -> int:
        """``max offset + 1`` over the (non-empty) shape: the storage the layout needs, in elements."""
        dims = [s.evaluate(env) for s in self.shape]
        if any(d <= 0 for d in dims):
            return 0
        span = sum((d - 1) * abs(st.evaluate(env)) for d, st in zip(dims, self.stride)) + 1
        return self.start.evaluate(env) + span

    def __str__(self) -> str:
        text = "(" + ",".join(map(str, self.shape)) + "):(" + ",".join(map(str, self.stride)) + ")"
        return text + f"+{self.start}" if self.start.terms else text

    @staticmethod
    @functools.lru_cache(maxsize=4096)
    def parse(text: str) -> "StridedLayout":
        """Parse ``(shape):(stride)`` text (entries as in :meth:`Poly.parse`); ``ValueError`` if bad."""
        m = re.fullmatch(r"\s*\((.*)\)\s*:\s*\((.*?)\)\s*(?:\+([^()]*))?", text)
        if not m:
            raise ValueError(f"'{text}' is not a layout '(shape):(stride)'")
        shape = tuple(Poly.parse(x) for x in _split(m.group(1)))
        stride = tuple(Poly.parse(x) for x in _split(m.group(2)))
        start = Poly.parse(m.group(3)) if m.group(3) is not None else Poly(())
        return StridedLayout(shape, stride, start)


#: The separator of the pieces of a layout made of several (``as caspar`` with more than one
#: 16-byte chunk: one strided piece per chunk, each over its own components).
PIECES = " | "


def parse_pieces(text: str) -> list:
    """The :class:`StridedLayout` s of a layout text ``A | B | ...`` (one for a plain layout)."""
    return [StridedLayout.parse(t) for t in text.split(PIECES.strip())]


def _split(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts
