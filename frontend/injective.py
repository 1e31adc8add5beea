"""Injectivity in the items: whether the element a statement reaches is distinct per item.

A kernel runs one item per point of its problem (``over n``: ``t`` in ``[0, n)``; ``over (i, j) in
(M, N)``: the coordinates ``i``, ``j``). A plain write to a view is race-free when no two items can
reach one element: the map from the item to the coordinates it writes is *injective in the items*
(and the view's layout is injective, :func:`layout_is_injective`). This module proves that, soundly
and for the forms kernels use; anything it cannot prove counts as "maybe not injective".

What is proved (:func:`is_injective_in_items`, with :func:`affine` building the forms): each
coordinate is taken as an affine form ``sum_k c_k * x_k + sum_l d_l * k_l + u`` over the item
coordinates ``x_k`` (``thread_id`` is the linear item, ``x_0 * E_1 * ... + x_last``), loop variables
``k_l`` (any value: two items may be in different iterations) and a uniform part ``u`` (literals,
size symbols, scalar parameters, ``problem_size``, ``block_dim`` and any expression of those alone:
the same for every item). Coefficients are polynomials over the size symbols (``Poly``). Forms of
``let`` variables assigned once are substituted; a value read from a buffer, ``/``, ``%``,
``block_id``, ``lane_id`` or a product of two item-dependent values has no form. Two accesses ``A``
and ``B`` (of two items ``p != q``) never reach one coordinate tuple when either

- some coordinate ``A_d - B_d`` is a non-zero integer ``c`` and the gcd ``g`` of the (integer)
  coefficients of ``A_d`` does not divide ``c`` (``y[2*t] = ..`` and ``y[2*t + 1] = ..``;
  ``y[i, 0]`` and ``y[i, 1]``), or
- every item coordinate is *determined*, by elimination: an item coordinate pinned to the same
  uniform value in both (``if j == 0 { .. }``; ``if thread_id == u`` pins them all) is determined;
  a coordinate ``d`` with ``A_d`` equal to ``B_d``, free of loop variables, whose undetermined item
  terms are ``c * x_k`` (``c`` a non-zero integer) determines ``x_k`` (``y[i, j]``, ``y[j, i]``,
  ``y[2*t + 1]``, ``y[i, i + j]``); one whose undetermined terms form a mixed-radix chain
  ``c * x_a + c * E_a * m * x_b + ...`` (``c`` a non-zero integer, ``m`` positive integers, ``E``
  the extents) determines them all (``y[i * N + j]`` over ``(i, j) in (M, N)``).

Shared with ``aliasing.py``-style questions (does every item reach a distinct element?) by taking
one access as both ``A`` and ``B``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from kernc.dialect.strided import Poly

from . import ast as A
from . import types as T

_ZERO = Poly.const(0)


@dataclass(frozen=True)
class Form:
    """``sum coeff * atom + const``: atoms ``("item", k)`` (item coordinate ``k``) and
    ``("loop", id)`` (a loop variable); coefficients and ``const`` are :class:`Poly` over uniform
    symbols (size symbols, ``%``-prefixed scalar parameters and opaque uniform values)."""

    terms: tuple = ()           # sorted ((atom, Poly), ...), no zero coefficients
    const: Poly = field(default_factory=lambda: _ZERO)

    @staticmethod
    def make(terms: dict, const: Poly) -> "Form":
        return Form(tuple(sorted(((a, c) for a, c in terms.items() if c != _ZERO), key=lambda x: x[0])),
                    const)

    @property
    def coeffs(self) -> dict:
        return dict(self.terms)

    def __add__(self, other: "Form") -> "Form":
        d = self.coeffs
        for a, c in other.terms:
            d[a] = d.get(a, _ZERO) + c
        return Form.make(d, self.const + other.const)

    def scale(self, p: Poly) -> "Form":
        return Form.make({a: c * p for a, c in self.terms}, self.const * p)

    @property
    def uniform(self) -> bool:
        return not self.terms

    def items(self) -> dict:
        return {a[1]: c for a, c in self.terms if a[0] == "item"}

    @property
    def has_loop(self) -> bool:
        return any(a[0] == "loop" for a, _ in self.terms)


def item_form(k: int) -> Form:
    return Form.make({("item", k): Poly.const(1)}, _ZERO)


def thread_id_form(extents: list) -> Form:
    """``t = x_0 * E_1 * ... * E_last + ... + x_last`` (last coordinate fastest)."""
    terms, stride = {}, Poly.const(1)
    for k in reversed(range(len(extents))):
        terms[("item", k)] = stride
        stride = stride * extents[k]
    return Form.make(terms, _ZERO)


class FormBuilder:
    """The :class:`Form` of checked ``index``/integer expressions of one kernel body (``None``
    where there is none). ``items``: the item coordinate symbols in order (``[]`` for a 1-D
    ``over n``, whose item is ``thread_id``); ``lets``: local symbol -> its only value (locals
    assigned again are left out: they have no form)."""

    def __init__(self, items: list, extents: list, problem: Poly, lets: dict):
        self.items = {id(s): k for k, s in enumerate(items)}
        self.extents = list(extents) if items else [problem]
        self.problem = problem
        self.lets = lets
        self._busy: set = set()
        self._let_forms: dict = {}  # (each let's form once: chains of lets stay linear)

    def form(self, e) -> Optional[Form]:
        if isinstance(e, A.IntLit):
            return Form.make({}, Poly.const(e.value))
        if isinstance(e, A.Name):
            return self._name(e)
        if isinstance(e, A.Unary) and e.op == "-":
            f = self.form(e.operand)
            return None if f is None else f.scale(Poly.const(-1))
        if isinstance(e, A.Binary) and e.op in ("+", "-", "*"):
            a, b = self.form(e.left), self.form(e.right)
            if a is None or b is None:
                return self._opaque(e)
            if e.op == "+":
                return a + b
            if e.op == "-":
                return a + b.scale(Poly.const(-1))
            if a.uniform:
                return b.scale(a.const)
            if b.uniform:
                return a.scale(b.const)
            return None
        if isinstance(e, A.Call) and e.func in T.SCALARS and len(e.args) == 1:
            # an integer conversion keeps the value of the in-range integers kernels index with
            arg_ty = getattr(e.args[0], "ty", None)
            if isinstance(arg_ty, T.ScalarType) and arg_ty.is_int:
                return self.form(e.args[0])
        return self._opaque(e)

    def _opaque(self, e) -> Optional[Form]:
        """A uniform value of its own (an expression of uniform names and literals), else None."""
        for n in A.iter_nodes(e):
            if isinstance(n, (A.Method, A.MultiIndex, A.Index, A.Member, A.Apply)):
                return None
            if isinstance(n, A.Name):
                f = self._name(n)
                if f is None or not f.uniform:
                    return None
        return Form.make({}, Poly.sym(f"%u{id(e)}"))

    def _name(self, e: A.Name) -> Optional[Form]:
        sym = e.sym
        if sym is None:
            return None
        if sym.kind == "coord" and id(sym) in self.items:
            return item_form(self.items[id(sym)])
        if sym.kind == "builtin":
            if sym.name == "thread_id":
                return thread_id_form(self.extents)
            if sym.name == "problem_size":
                return Form.make({}, self.problem)
            if sym.name == "block_dim":
                return Form.make({}, Poly.sym("%block_dim"))
            return None  # block_id, lane_id: per item, not affine in it
        if sym.kind == "size":
            return Form.make({}, Poly.sym(sym.name))
        if sym.kind == "scalar":
            return Form.make({}, Poly.sym(f"%{sym.name}"))
        if sym.kind == "loopvar":
            return Form.make({("loop", id(sym)): Poly.const(1)}, _ZERO)
        if sym.kind == "local" and id(sym) in self.lets and id(sym) not in self._busy:
            if id(sym) not in self._let_forms:
                self._busy.add(id(sym))
                try:
                    self._let_forms[id(sym)] = self.form(self.lets[id(sym)])
                finally:
                    self._busy.discard(id(sym))
            return self._let_forms[id(sym)]
        return None


def _int(p: Poly) -> Optional[int]:
    return p.value if p.is_const else None


def _disjoint(a: Form, b: Form) -> bool:
    """``a`` and ``b`` never take one value: they differ by a constant the gcd of their (equal,
    integer) coefficients does not divide."""
    if a.terms != b.terms:
        return False
    diff = _int(a.const + b.const * Poly.const(-1))
    if diff is None or diff == 0:
        return False
    g = 0
    for _, c in a.terms:
        v = _int(c)
        if v is None:
            return False
        g = math.gcd(g, v)
    return g == 0 or diff % g != 0


def _chain_determines(terms: dict, extents: list) -> bool:
    """The item terms ``{k: coeff}`` form a mixed-radix chain (module docstring)."""
    left = dict(terms)
    first = [k for k, c in left.items() if _int(c) not in (None, 0)]
    for k0 in first:
        rest, k, c = dict(left), k0, left[k0]
        del rest[k]
        while rest:
            step = c * extents[k]
            nxt = None
            for k2, c2 in rest.items():
                for m in range(1, 65):
                    if c2 == step * Poly.const(m):
                        nxt = k2
                        break
                if nxt is not None:
                    break
            if nxt is None:
                break
            k, c = nxt, rest.pop(nxt)
        if not rest:
            return True
    return False


def is_injective_in_items(coords, other=None, *, n_items: int, extents: list,
                          pins=None, other_pins=None) -> bool:
    """Whether two different items never reach one coordinate tuple: ``coords`` (a list of
    :class:`Form`, one per view dimension; ``None`` entries have no form) for one item and
    ``other`` (default: ``coords``, the same access) for the other.

    ``n_items``: the number of item coordinates (1 for ``over n``); ``extents``: their extents
    (``Poly``); ``pins`` / ``other_pins``: item coordinate -> the uniform value (a hashable key) a
    condition around the access fixes it to. The proof is the module docstring's."""
    other = coords if other is None else other
    if len(coords) != len(other) or any(f is None for f in list(coords) + list(other)):
        return False
    pins, other_pins = pins or {}, other_pins or {}
    if any(_disjoint(a, b) for a, b in zip(coords, other)):
        return True
    known = {k for k, v in pins.items() if other_pins.get(k) == v}
    progress = True
    while progress and len(known) < n_items:
        progress = False
        for a, b in zip(coords, other):
            if a != b or a.has_loop:
                continue
            free = {k: c for k, c in a.items().items() if k not in known}
            if not free:
                continue
            if len(free) == 1:
                ((k, c),) = free.items()
                ok = _int(c) not in (None, 0)
            else:
                ok = _chain_determines(free, extents)
            if ok:
                known |= set(free)
                progress = True
    return len(known) >= n_items


def layout_is_injective(layout) -> bool:
    """Whether a view's flat strided ``layout`` (``StridedLayout``, shape and stride ``Poly``
    entries) maps distinct in-bounds coordinates to distinct offsets: static strides sorted by size
    with each at least the span of the smaller ones, or symbolic ones in an exact chain (each
    stride a positive integer multiple of a smaller one times its extent: row-major, column-major,
    NHWC, ``(n, 3):(4, 1)``). A swizzle on top is a bijection of offsets and changes nothing."""
    return layout.injective(padded=True)
