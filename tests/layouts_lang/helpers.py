"""Helpers of the layouts-in-the-language tests (a plain module: tests/conftest.py owns that name).

:func:`launch` calls a compiled kernel on the CPU interpreter. N-D problems (``over (i, j) in (M,
N)``) record ``P`` in the signature as a polynomial over size symbols (``"M*N"``), which the launcher
evaluates from the bound sizes.
"""

from __future__ import annotations



import kernc

def launch(mod, name: str, *args, **kwargs):
    """``mod.<name>(*args, **kwargs)`` on the CPU interpreter (N-D problem sizes bind like any other)."""
    return getattr(mod, name)(*args, **kwargs)


def compile_text(text: str):
    return kernc.compile(text)


def c_div(x: int, d: int) -> int:
    """``x / d`` with C's truncation toward zero (the language's ``/`` on integers), ``d != 0``."""
    q = abs(x) // abs(d)
    return q if (x >= 0) == (d > 0) else -q


def c_rem(x: int, d: int) -> int:
    """``x % d`` with C's sign rule (the sign of ``x``; the language's ``%``), ``d != 0``."""
    return x - c_div(x, d) * d
