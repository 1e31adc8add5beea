"""A bound on the magnitude of every ``index`` value of a kernel, evaluated at launch.

The frontend (``frontend/index_width.py``) turns the kern IR of a kernel into a small program:
a list of *nodes*, each computing two bounds for one value from the bounds of earlier nodes:

- ``S``: a bound on ``|v|`` of the value read as a signed integer (of its width ``w``);
- ``U``: a bound on the value read as an unsigned ``w``-bit integer (``2^w - 1`` when it may be
  negative).

Interval arithmetic on magnitudes, bottom-up (each rule is sound for wrapping ``w``-bit
arithmetic because the unsigned reading of a wrapped result is at most the exact one, and the
signed reading of any ``w``-bit value is at most ``2^(w-1)`` in magnitude):
``|a + b| <= |a| + |b|``, ``|a * b| <= |a| * |b|``, ``select`` and ``min``/``max`` the largest,
a division bounded by its dividend, a remainder by both operands, ``x << k`` by ``|x| * 2^k``,
``&`` by the smaller unsigned operand, ``|`` and ``^`` by the next power of two; a float op's
result (``fr``) rounded once to its type, at most ``2^-p`` relative (``p``: 8 for ``bf16``, 11
for ``f16``, 24 for ``f32``, 53 for ``f64``; the unit roundoff of round-to-nearest, Higham,
*Accuracy and Stability of Numerical Algorithms*, 2.1) and ``top`` when the exact result may pass
the type's largest finite value (an ``f16`` product of 300 and 300 is inf, which an integer
conversion saturates to its type's range); a value known
non-negative (``U < 2^(w-1)``) has ``S <= U``. Anything not bounded gives its type's range
(``top``): ``2^(w-1)`` for a ``w``-bit integer, ``2^63`` for ``index``, ``2^64`` for a float.

The leaves are read from the launch: ``p`` a scalar argument (a signed one counts as possibly
negative, so its unsigned reading is the type's range; the bound is monotone in ``|v|``), ``z``
a size symbol, ``L`` the bound of thread coordinates (the largest size, buffer length or problem
size, plus a block), ``c`` a constant. The last node is the ``max`` over all ``index`` values of
the kernel; the launcher runs 32-bit ``index`` code only when its ``S < 2^31``
(``backend/binding.py``). Evaluation is one pass over the nodes, integers only (a program read
from a cache is validated by :func:`problem` first: it cannot run code).
"""

from __future__ import annotations

import math

#: no bound (any 32-bit launch is refused by it)
TOP = 2**64

#: node op -> number of literal fields after ``[op, w]`` (the rest are node references)
LITERALS = {
    "c": 2, "p": 2, "z": 1, "L": 0, "top": 0, "shl": 1, "sext": 1, "zext": 1,
    "add": 0, "sub": 0, "gsub": 0, "mul": 0, "fma": 0, "div": 0, "divu": 0, "rem": 0, "remu": 0,
    "and": 0, "or": 0, "shr": 0, "shru": 0, "max": 0, "min": 0, "id": 0, "sgn": 0, "mag": 0,
    "range": 0, "fr": 2,
}
#: ops with exactly this many node references (``max`` and ``min``: one or more)
_ARITY = {"c": 0, "p": 0, "z": 0, "L": 0, "top": 0, "fma": 3, "shl": 1, "sext": 1, "zext": 1,
          "id": 1, "sgn": 1, "mag": 1, "div": 2, "divu": 2, "rem": 2, "remu": 2, "add": 2, "sub": 2,
          "gsub": 2, "mul": 2, "and": 2, "or": 2, "shr": 1, "shru": 1, "range": 2, "fr": 1}

#: ``p`` leaves: how the argument's value bounds it
SIGNED, UNSIGNED, FLOAT = 0, 1, 2


def float_magnitude(v) -> int:
    """``ceil(|v|)`` of a float, :data:`TOP` for inf, NaN or anything past it."""
    v = float(v)
    if not math.isfinite(v) or abs(v) >= TOP:
        return TOP
    return math.ceil(abs(v))


def leaf(sign: int, w: int, value) -> tuple:
    """``(S, U)`` of a scalar argument ``value`` of a ``w``-bit type (``sign``: :data:`SIGNED`,
    :data:`UNSIGNED` or :data:`FLOAT`)."""
    if sign == FLOAT:
        m = float_magnitude(value)
        return m, m
    v = abs(int(value))
    if sign == UNSIGNED:
        return v, v
    return v, TOP


def _clamp(w: int, s: int, u: int) -> tuple:
    if w == 0:  # a float: S only (U mirrors it); one rounding of up to 2^-10 relative (f16)
        s = min(s + (s >> 10) + 1 if s else 0, TOP)
        return s, s
    half, full = 1 << (w - 1), (1 << w) - 1
    s, u = min(s, half), min(u, full)
    if u < half:  # known non-negative: the signed reading is the unsigned one
        s = min(s, u)
    return s, u


def _p2(x: int) -> int:
    return 1 << x.bit_length()


def step(node, vals: list, leaves) -> tuple:
    """``(S, U)`` of one node, ``vals`` holding those of the nodes before it; ``leaves(node)``
    gives ``(S, U)`` of a ``p``, ``z`` or ``L`` node."""
    op, w = node[0], node[1]
    n = LITERALS[op]
    refs = [vals[i] for i in node[2 + n:]]
    if op == "c":
        return node[2], node[3]
    if op in ("p", "z", "L"):
        s, u = leaves(node)
    elif op == "top":
        s, u = TOP, TOP
    elif op == "add":
        (a, au), (b, bu) = refs
        s, u = a + b, au + bu
    elif op == "sub":
        (a, _), (b, _) = refs
        s, u = a + b, TOP
    elif op == "gsub":  # a - b where a > b: never wraps below 0
        (a, au), (b, _) = refs
        s, u = a + b, au
    elif op == "mul":
        (a, au), (b, bu) = refs
        s, u = a * b, au * bu
    elif op == "fma":
        (a, au), (b, bu), (c, cu) = refs
        s, u = a * b + c, au * bu + cu
    elif op == "div":  # signed: |a / b| <= |a|; non-negative when both are
        (a, au), (_, bu) = refs
        half = 1 << (w - 1) if w else TOP
        s, u = a, au if au < half and bu < half else TOP
    elif op == "divu":
        s, u = TOP, refs[0][1]
    elif op == "rem":  # signed: |a % b| <= min(|a|, |b|), the sign of a
        (a, au), (b, _) = refs
        half = 1 << (w - 1) if w else TOP
        s, u = min(a, b), min(au, b) if au < half else TOP
    elif op == "remu":
        s, u = TOP, min(refs[0][1], refs[1][1])
    elif op == "and":
        (a, au), (b, bu) = refs
        s, u = _p2(max(a, b)), min(au, bu)
    elif op == "or":  # | and ^
        (a, au), (b, bu) = refs
        s, u = _p2(max(a, b)), _p2(min(max(au, bu), TOP)) - 1
    elif op == "shl":
        k = node[2]
        (a, au), = refs
        s, u = min(a, TOP) << k, min(au, TOP) << k
    elif op == "shr":
        (a, au), = refs
        half = 1 << (w - 1) if w else TOP
        s, u = a, au if au < half else TOP
    elif op == "shru":
        s, u = TOP, refs[0][1]
    elif op == "max":
        s, u = max(r[0] for r in refs), max(r[1] for r in refs)
    elif op == "min":
        s, u = min(r[0] for r in refs), min(r[1] for r in refs)
    elif op == "sext":  # from a win-bit value
        (a, au), = refs
        s, u = a, au if au < 1 << (node[2] - 1) else TOP
    elif op == "zext":
        s = u = refs[0][1]
    elif op == "range":  # a loop's induction variable, lb <= iv < ub
        (a, au), (b, bu) = refs
        half = 1 << (w - 1) if w else TOP
        s, u = max(a, b), max(au, bu) if au < half else TOP
    elif op == "fr":  # a float op's result rounded to its type (p significand bits, max finite)
        p, fmax = node[2], node[3]
        (a, _), = refs
        s = TOP if a > fmax else min(a + (a >> p) + 1 if a else 0, fmax)
        u = s
    elif op == "id":
        s, u = refs[0]
    elif op == "sgn":  # the magnitude, of either sign
        s, u = refs[0][0], TOP
    else:  # "mag": a non-negative value bounded by the operand's magnitude (abs, fptoui)
        s, u = TOP, refs[0][0]
    return _clamp(w, min(s, TOP), min(u, TOP))


def evaluate(program: list, leaves) -> int:
    """The bound ``S`` of the program's last node (0 for an empty program); ``leaves(node)`` gives
    ``(S, U)`` of its ``p``, ``z`` and ``L`` nodes (see :func:`leaf`)."""
    vals: list = []
    for node in program:
        vals.append(step(node, vals, leaves))
    return vals[-1][0] if vals else 0


def param_names(program: list) -> set:
    """The names of the scalar arguments the program reads."""
    return {node[2] for node in program if node[0] == "p"}


def problem(program) -> str | None:
    """What is wrong with a program read from a signature, or ``None``: a list of nodes, each
    ``[op, w, literals..., references to earlier nodes...]`` with known ops and integer fields."""
    if not isinstance(program, list):
        return "must be a list of nodes"
    for k, node in enumerate(program):
        if not (isinstance(node, list) and len(node) >= 2 and isinstance(node[0], str) and node[0] in LITERALS
                and type(node[1]) is int and 0 <= node[1] <= 64):
            return f"node {k} is not [op, width, ...]: {node!r}"
        op, n = node[0], LITERALS[node[0]]
        lits, refs = node[2:2 + n], node[2 + n:]
        if len(lits) != n:
            return f"node {k} ({op}) lacks its literals"
        if op == "p" and not (isinstance(lits[0], str) and lits[1] in (SIGNED, UNSIGNED, FLOAT)):
            return f"node {k}: a 'p' node is ['p', w, name, sign]"
        if op == "z" and not isinstance(lits[0], str):
            return f"node {k}: a 'z' node is ['z', w, name]"
        if op in ("c", "shl", "sext", "zext", "fr") and not all(type(x) is int and 0 <= x <= TOP for x in lits):
            return f"node {k}: literals must be integers in 0..2^64"
        if op == "shl" and lits[0] > 64:
            return f"node {k}: a shift of more than 64"
        arity = _ARITY.get(op)
        if (arity is None and not refs) or (arity is not None and len(refs) != arity):
            return f"node {k} ({op}) has {len(refs)} operands"
        if not all(type(r) is int and 0 <= r < k for r in refs):
            return f"node {k} refers to a node that is not before it"
    return None
