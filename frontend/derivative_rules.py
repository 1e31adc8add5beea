"""The derivative of each scalar float operation of ``.kern``, shared by reverse mode
(:mod:`kernc.frontend.reverse_mode`) and forward mode (:mod:`kernc.frontend.forward_mode`).

:func:`terms` gives, for ``r = op(a_0, a_1, ...)``, the pairs ``(i, f_i)`` with ``f_i(g)`` the
source text of ``(dr/da_i) * g``: reverse mode adds ``f_i(r_bar)`` to ``a_i``'s adjoint, forward
mode sums ``f_i(a_i_dot)``. Each is linear in ``g``, so ``<r_bar, J a_dot> = <J^T r_bar, a_dot>``
holds exactly in real arithmetic.

The rules where an operation is not differentiable (``docs/derivatives.md``):

- ``sqrt(a)``: ``g / (2 sqrt(a))``, ``+inf`` at ``a = 0`` (times ``g``, as IEEE 754 says: a zero
  ``g`` gives NaN); ``rsqrt(a)``: ``-g rsqrt(a) / (2a)``; ``log(a)``: ``g / a``.
- ``abs(a)``: ``sign(a) g`` with ``0`` at ``a = 0`` (the subgradient of least norm).
- ``min(a, b)`` / ``max(a, b)``: the whole of ``g`` goes to the operand the result is (``a`` at a
  tie, and the non-NaN operand when one is NaN, as ``min``/``max`` ignore a NaN).
- ``floor``, ``ceil``, ``//`` and comparisons: derivative 0 everywhere (also at the jumps).
- ``a % b`` (C ``fmod``, ``a - trunc(a/b) b``): ``g`` to ``a``, ``-trunc(a/b) g`` to ``b``;
  ``a %% b`` (floored, ``a - floor(a/b) b``): ``g`` to ``a``, ``-floor(a/b) g`` to ``b``.
- ``select(c, a, b)``: ``g`` to the chosen operand only (``select(c, g, 0)``), so a NaN or inf in
  the other operand's derivative never leaks through.
- A cast between float types passes ``g`` cast back; a cast from or to an integer has no
  derivative (integers have none).
"""

from __future__ import annotations

from . import types as T


def neg(x: str) -> str:
    return f"-({x})"


def p(x: str) -> str:
    """``x`` as an operand (parenthesised unless it is a plain name or a component ``v[i]``)."""
    if x.replace("_", "a").replace("[", "").replace("]", "").isalnum() and not x[0].isdigit():
        return x
    return f"({x})"


_UNARY = {
    "exp": lambda a: lambda g: f"{p(g)} * exp({a})",
    "log": lambda a: lambda g: f"{p(g)} / {p(a)}",
    "sqrt": lambda a: lambda g: f"{p(g)} / (2.0 * sqrt({a}))",
    "rsqrt": lambda a: lambda g: neg(f"{p(g)} * rsqrt({a}) / (2.0 * {p(a)})"),
    "sin": lambda a: lambda g: f"{p(g)} * cos({a})",
    "cos": lambda a: lambda g: neg(f"{p(g)} * sin({a})"),
    "tanh": lambda a: lambda g: f"{p(g)} * (1.0 - tanh({a}) * tanh({a}))",
    "abs": lambda a: lambda g: f"select({p(a)} > 0.0, {g}, select({p(a)} < 0.0, {neg(g)}, 0.0))",
}


def terms(kind: str, op: str, args: list, arg_types: list) -> list:
    """``[(i, f_i)]`` for the scalar operation ``kind`` (``"unary"``, ``"binary"``, ``"call"``)
    ``op`` over operand texts ``args`` (atoms: names, components, literals) of scalar types
    ``arg_types``; operands without a derivative are left out. ``KeyError``-free: an operation
    without a rule here has none (integer and bool operations never reach it)."""
    if kind == "unary":
        return [(0, lambda g: neg(g))] if op == "-" else []
    if kind == "binary":
        a, b = (p(x) for x in args)
        if op == "+":
            return [(0, lambda g: g), (1, lambda g: g)]
        if op == "-":
            return [(0, lambda g: g), (1, lambda g: neg(g))]
        if op == "*":
            return [(0, lambda g: f"{p(g)} * {b}"), (1, lambda g: f"{p(g)} * {a}")]
        if op == "/":
            return [(0, lambda g: f"{p(g)} / {b}"), (1, lambda g: neg(f"{p(g)} * {a} / ({b} * {b})"))]
        if op == "%":
            q = f"{a} / {b}"
            return [(0, lambda g: g),
                    (1, lambda g: neg(f"{p(g)} * select({q} < 0.0, ceil({q}), floor({q}))"))]
        if op == "%%":
            return [(0, lambda g: g), (1, lambda g: neg(f"{p(g)} * floor({a} / {b})"))]
        return []  # //, comparisons, logic: no derivative
    # calls: builtins and casts
    if op in _UNARY:
        return [(0, _UNARY[op](args[0]))]
    if op in ("min", "max"):
        a, b = (p(x) for x in args)
        cmp = "<=" if op == "min" else ">="
        first = f"({a} {cmp} {b}) || ({b} != {b})"
        return [(0, lambda g: f"select({first}, {g}, 0.0)"), (1, lambda g: f"select({first}, 0.0, {g})")]
    if op == "fma":
        a, b, _ = (p(x) for x in args)
        return [(0, lambda g: f"{p(g)} * {b}"), (1, lambda g: f"{p(g)} * {a}"), (2, lambda g: g)]
    if op == "select":
        c = args[0]
        return [(1, lambda g: f"select({c}, {g}, 0.0)"), (2, lambda g: f"select({c}, 0.0, {g})")]
    if op in T.SCALARS and arg_types and T.scalar_of(arg_types[0]).is_float:
        src = T.default_scalar(T.scalar_of(arg_types[0])).name
        return [(0, lambda g: f"{src}({g})")]
    return []  # floor, ceil, int casts
