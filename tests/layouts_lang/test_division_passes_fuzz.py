"""Regressions found by differential fuzzing of ``kern-fold-divisions``, ``kern-reduce-iv-divisions``,
``kern-fold-range-checks`` and the signed -> unsigned division rewrite of ``kern-lower-divisions``.

``kern-reduce-iv-divisions`` divides the loop's lower bound by the divisor *before* the loop to start
its counters (``arith.divsi``/``arith.remsi %lb, %d``). That division runs even when the source never
divides: the loop runs zero times, or its division sits under a guard such as ``if (p != 0)``. On the
CPU interpreter a division by zero gives 0, so the values there stay right; but in LLVM IR an
``sdiv``/``srem`` by zero is undefined behaviour, and LLVM uses the hoisted one to prove ``p != 0``
and deletes the guarded code: the PTX computes wrong results for ``p == 0``, a program that never
divides by zero. The counters' start values must only divide by a divisor known to be non-zero (e.g.
``select(d == 0, 1, d)``: when ``d`` is 0, no original division runs, or its result is unspecified).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernc
from helpers import c_div, c_rem

GUARDED = """
kernel guarded(y: i64[n] view, p: index, M: index) over (i) in (n) {
    let s = i64(0);
    for m in 1..M {
        if (p != 0) { s += i64(m / p); } else { s += 1000; }
    }
    y[i] = s;
}
"""

AFTER_EMPTY_LOOP = """
kernel after(y: i64[n] view, p: index, M: index) over (i) in (n) {
    let s = i64(0);
    for m in 1..M { s += i64(m / p); }
    if (p == 0) { s = 77; }
    y[i] = s;
}
"""

GUARDED_CHAIN = """
kernel chain(y: i64[n] view, a: index, b: index, M: index) over (i) in (n) {
    let s = i64(0);
    for m in i + 2..M {
        if (a != 0 && b != 0) { s = s * 3 + i64((m / a) % b); } else { s += 5000; }
    }
    y[i] = s;
}
"""


def _has_immediate(ptx: str, value: int) -> bool:
    return re.search(rf"(?<![\w$%.]){value}(?!\w)", ptx) is not None


@pytest.mark.parametrize("p, M", [(0, 5), (0, 1), (2, 9), (-3, 8)])
def test_guarded_division_values_cpu(p, M):
    y = np.full(3, -1, np.int64)
    kernc.compile(GUARDED).guarded(y, p, M)
    want = sum(c_div(m, p) if p != 0 else 1000 for m in range(1, M))
    np.testing.assert_array_equal(y, np.full(3, want))


@pytest.mark.parametrize("p, M", [(0, 1), (0, 0), (3, 1), (3, 7)])
def test_check_after_empty_loop_values_cpu(p, M):
    y = np.full(2, -1, np.int64)
    kernc.compile(AFTER_EMPTY_LOOP).after(y, p, M)
    want = 77 if p == 0 else sum(c_div(m, p) for m in range(1, M))
    np.testing.assert_array_equal(y, np.full(2, want))


@pytest.mark.parametrize("a, b, M", [(0, 2, 9), (3, 0, 9), (2, -3, 20), (-2, 4, 3)])
def test_guarded_chain_values_cpu(a, b, M):
    n = 3
    y = np.full(n, -1, np.int64)
    kernc.compile(GUARDED_CHAIN).chain(y, a, b, M)
    want = []
    for i in range(n):
        s = 0
        for m in range(i + 2, M):
            s = s * 3 + c_rem(c_div(m, a), b) if a != 0 and b != 0 else s + 5000
        want.append(s)
    np.testing.assert_array_equal(y, want)


def test_guarded_branch_survives_in_ptx():
    """``p == 0`` must still take the ``else`` branch (``s += 1000``) on the GPU: LLVM may delete it
    only if something divides by ``p`` unconditionally, which the source does not."""
    assert _has_immediate(kernc.compile(GUARDED).ptx, 1000)


def test_check_after_zero_trip_loop_survives_in_ptx():
    """With ``M <= 1`` the loop divides nothing, so ``if (p == 0)`` after it must stay."""
    assert _has_immediate(kernc.compile(AFTER_EMPTY_LOOP).ptx, 77)


def test_guarded_chain_branch_survives_in_ptx():
    assert _has_immediate(kernc.compile(GUARDED_CHAIN).ptx, 5000)
