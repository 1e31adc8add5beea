"""Numbers from text, exactly, and their one rounding to a float type.

One rule for every place kernc reads a number: the compiler's literals, the launcher's scalar
arguments (:func:`kernc.backend.binding` via the API) and the command line (``kernc run --input
a=0.1``, ``--size n=5``, the integer options):

- Text is ASCII: digits are ``0-9`` only. Python's ``int()``/``float()`` also take other
  scripts' digits (``int("١٢") == 12``) and ``str.isdigit`` takes ``"²"``; kernc refuses them.
- A decimal (``0.1``, ``1e39``) is its exact value (:class:`fractions.Fraction`), rounded *once*,
  to nearest with ties to even, to the type it is used as (:func:`round_to_float`); a value
  whose rounding overflows the type is an error, never an infinity. ``inf``, ``-inf`` and ``nan``
  (any case, ``infinity`` too) written as such are those values (an explicit infinity is a value,
  an overflowing ``1e999`` is not).

Only the standard library is imported, ``fractions`` when first needed (the command line parses
its options with this module at start-up, where ``fractions`` and ``decimal`` would cost 4 ms).
"""

from __future__ import annotations

import re

__all__ = ["FLOAT_FORMATS", "MAX_DECIMAL_EXP", "round_to_float", "decimal_fraction", "parse_int",
           "parse_number", "ascii_int_option"]

#: ``(precision incl. the implicit bit, min normal exponent, max exponent)`` of the float types
#: (IEEE 754 binary16/32/64; bfloat16 keeps binary32's exponent range with 8 bits).
FLOAT_FORMATS = {"f16": (11, -14, 15), "bf16": (8, -126, 127), "f32": (24, -126, 127),
                 "f64": (53, -1022, 1023)}
#: Decimal exponents beyond every float type: f64 ranges over about 4.9e-324 .. 1.8e308.
MAX_DECIMAL_EXP = 1000

_DECIMAL = re.compile(r"([+-]?)([0-9]*)\.?([0-9]*)(?:[eE]([+-]?[0-9]+))?")
_INT = re.compile(r"[+-]?(?:0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|[0-9](?:_?[0-9])*)")
_FLOAT = re.compile(r"[+-]?(?:[0-9](?:_?[0-9])*(?:\.(?:[0-9](?:_?[0-9])*)?)?|\.[0-9](?:_?[0-9])*)"
                    r"(?:[eE][+-]?[0-9](?:_?[0-9])*)?")
_SPECIAL = {"inf": float("inf"), "+inf": float("inf"), "-inf": float("-inf"), "infinity": float("inf"),
            "+infinity": float("inf"), "-infinity": float("-inf"), "nan": float("nan"),
            "+nan": float("nan"), "-nan": float("nan")}


def round_to_float(value, name: str):
    """``value`` (an int or :class:`fractions.Fraction`) rounded once to the nearest value of the
    float type ``name`` (``"f16"``, ``"bf16"``, ``"f32"``, ``"f64"``), ties to even, subnormals
    included. Returns a Python float holding that value exactly (every f16/bf16/f32 value is a
    double), or ``None`` when the rounding overflows the type (``|value|`` at least halfway
    between the largest finite value and the next power of two, IEEE 754's overflow).
    ``round_to_float(Fraction("0.1"), "f32") == float(np.float32("0.1"))``, never a double
    rounding through f64."""
    from fractions import Fraction

    prec, emin, emax = FLOAT_FORMATS[name]
    fr = Fraction(value)
    if fr == 0:
        return 0.0
    sign = -1 if fr < 0 else 1
    a = abs(fr)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:  # now 2**e <= a < 2**(e+1)
        e -= 1
    e = max(e, emin)
    quantum = Fraction(2) ** (e - prec + 1)
    rounded = round(a / quantum) * quantum  # round() on a Fraction ties to even
    if rounded >= Fraction(2) ** (emax + 1):
        return None
    return sign * float(rounded)


def decimal_fraction(text: str) -> Fraction:  # noqa: F821 (fractions is imported when called)
    """The exact value of the ASCII decimal ``text`` (``[+-]digits[.digits][e[+-]digits]``, no
    underscores). An exponent past ``10**±MAX_DECIMAL_EXP`` gives a stand-in of that size (every
    float type rounds both alike: overflow, or zero), so ``1e-99999999`` never builds
    ``10**99999999``. ``ValueError`` if ``text`` is not such a decimal."""
    from fractions import Fraction

    m = _DECIMAL.fullmatch(text)
    if m is None or not (m.group(2) or m.group(3)):
        raise ValueError(f"'{text}' is not a decimal number")
    sign = -1 if m.group(1) == "-" else 1
    if m.group(4) and abs(int(m.group(4))) > MAX_DECIMAL_EXP:
        digits = (m.group(2) + m.group(3)).lstrip("0")
        if not digits:
            return Fraction(0)
        magnitude = int(m.group(4)) - len(m.group(3)) + len(digits)  # 10**(magnitude-1) <= value
        if magnitude > MAX_DECIMAL_EXP:
            return sign * Fraction(10) ** MAX_DECIMAL_EXP
        if magnitude < -MAX_DECIMAL_EXP:
            return Fraction(sign, 10 ** MAX_DECIMAL_EXP)
    return Fraction(text)


def parse_int(text: str) -> int:
    """An integer from ASCII text, the one rule of every integer kernc reads from text (``kernc run
    --size``, an integer ``--input``, the integer options): an optional sign, then decimal digits
    (leading zeros allowed: ``007`` is 7) or ``0x``/``0o``/``0b`` digits, ``_`` between digits
    (``1_000``), surrounding spaces ignored. ``ValueError`` otherwise -- a decimal point or an
    exponent (``1e1``), digits of other scripts (``"١٢"``, ``"²"``)."""
    t = text.strip()
    if not (t.isascii() and _INT.fullmatch(t)):
        raise ValueError(f"'{text}' is not an integer (ASCII digits 0-9)")
    body = t.lstrip("+-")
    return int(t, 0) if body[:2].lower() in ("0x", "0o", "0b") else int(t, 10)


def parse_number(text: str):
    """A number from ASCII text: an ``int`` (:func:`parse_int`'s syntax), the exact
    :class:`~fractions.Fraction` of a decimal (``0.1``, ``1e39``; ``_`` between digits allowed),
    or the float ``inf``/``-inf``/``nan`` spelled as such. ``ValueError`` otherwise (other
    scripts' digits included)."""
    t = text.strip()
    if not t.isascii():
        raise ValueError(f"'{text}' is not a number (ASCII digits 0-9 only)")
    special = _SPECIAL.get(t.lower())
    if special is not None:
        return special
    if _INT.fullmatch(t):
        try:
            return int(t, 0)
        except ValueError:  # '010': a decimal with leading zeros, as float() reads it
            pass
    if _FLOAT.fullmatch(t):
        return decimal_fraction(t.replace("_", ""))
    raise ValueError(f"'{text}' is not a number")


def ascii_int_option(text: str) -> int:
    """argparse ``type=`` for integer options (``--O 2``, ``--elem-bytes 4``): :func:`parse_int`,
    as a usage error otherwise."""
    import argparse

    try:
        return parse_int(text)
    except ValueError:  # argparse's own wording for int options, and why when it is the digits
        why = "" if text.isascii() else " (digits are ASCII 0-9)"
        raise argparse.ArgumentTypeError(f"invalid int value: '{text}'{why}") from None
