"""``kern-reduce-iv-divisions`` on the CPU interpreter: quotients and remainders of a loop variable
(and of those quotients, and by products) become loop-carried counters, with C's truncating ``/``
and ``%`` for every non-zero divisor, any sign, any lower bound >= 0 and any trip count."""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from helpers import c_div, c_rem

SOURCE = """
kernel ivdiv(y: i64[n, 6] view, a: index, b: index, lo: index, M: index) over (i) in (n) {
    // per thread a different divisor: a + i (never 0 for the cases below)
    let d = a + i;
    let s0 = i64(0);
    let s1 = i64(0);
    let s2 = i64(0);
    let s3 = i64(0);
    let s4 = i64(0);
    let s5 = i64(0);
    for m in 3..M {
        let w = i64(m + 1);
        s0 += w * i64(m / d);
        s1 += w * i64(m % d);
        s2 += w * i64((m / d) % b);
        s3 += w * i64((m / d) / b);
        s4 += w * i64(m / (b * d));
    }
    for m in n..n + lo {
        s5 += i64(m + 1) * i64(m % b + 7 * (m / b));
    }
    y[i, 0] = s0;
    y[i, 1] = s1;
    y[i, 2] = s2;
    y[i, 3] = s3;
    y[i, 4] = s4;
    y[i, 5] = s5;
}
"""


def _expected(n, a, b, lo, M):
    y = np.zeros((n, 6), np.int64)
    for i in range(n):
        d = a + i
        for m in range(3, M):
            w = m + 1
            y[i, 0] += w * c_div(m, d)
            y[i, 1] += w * c_rem(m, d)
            y[i, 2] += w * c_rem(c_div(m, d), b)
            y[i, 3] += w * c_div(c_div(m, d), b)
            y[i, 4] += w * c_div(m, b * d)
        for m in range(n, n + lo):
            y[i, 5] += (m + 1) * (c_rem(m, b) + 7 * c_div(m, b))
    return y


@pytest.fixture(scope="module")
def mod():
    return kernc.compile(SOURCE)


def _divisions_in_loops(ir_text: str) -> list:
    """The division/remainder lines of ``ir_text`` that are nested in an ``scf.for``."""
    loops, found = [], []
    for line in ir_text.splitlines():
        indent = len(line) - len(line.lstrip())
        if loops and line.strip().startswith("}") and indent == loops[-1]:
            loops.pop()
        elif "scf.for" in line:
            loops.append(indent)
        elif loops and any(f"arith.{op} " in line for op in ("divsi", "remsi", "floordivsi", "divui", "remui")):
            found.append(line.strip())
    return found


def test_the_loops_divide_nothing(mod):
    gpu = mod.ir("gpu")
    assert gpu.count("scf.for") == 2 and "iter_args" in gpu
    assert _divisions_in_loops(gpu) == []
    # the lower bounds 3 and n are divided once, before their loops
    assert 0 < gpu.count("arith.divsi") + gpu.count("arith.remsi") <= 12


@pytest.mark.parametrize("n, a, b, lo, M", [
    (5, 1, 1, 0, 3),      # an empty loop
    (5, 2, 3, 4, 40),
    (4, 3, -2, 9, 50),    # a negative outer divisor: quotients truncate towards 0
    (3, -7, 4, 5, 45),    # d = -7, -6, -5: negative inner divisors
    (3, -9, -5, 13, 60),  # both negative
    (2, 5, 7, 1, 4),      # one iteration
])
def test_values_match_c_semantics(mod, n, a, b, lo, M):
    y = np.full((n, 6), -12345, np.int64)
    mod.ivdiv(y, a, b, lo, M)
    np.testing.assert_array_equal(y, _expected(n, a, b, lo, M))


FLOOR = """
kernel floors(y: i64[n, 2] view, d: index, M: index) over (i) in (n) {
    let s = i64(0);
    let t = i64(0);
    for m in 0..M {
        s += i64(m + 1) * i64(m // n + 3 * (m %% n));   // n is a size: >= 0, so counters
        t += i64(m + 1) * i64(m // d + 5 * (m %% d));   // d may be negative: floor semantics kept
    }
    y[i, 0] = s;
    y[i, 1] = t;
}
"""


@pytest.mark.parametrize("n, d, M", [(3, 4, 20), (4, -3, 17), (1, -1, 5), (2, 7, 0)])
def test_floor_division_by_a_size_is_a_counter_too(n, d, M):
    mod = kernc.compile(FLOOR)
    body = _divisions_in_loops(mod.ir("gpu"))  # gpu.func args: y, d (%arg1), M, n (%arg3)
    y = np.zeros((n, 2), np.int64)
    mod.floors(y, d, M)
    s = sum((m + 1) * (m // n + 3 * (m % n)) for m in range(M))
    t = sum((m + 1) * (m // d + 5 * (m % d)) for m in range(M))  # Python's // and % floor
    np.testing.assert_array_equal(y, np.array([[s, t]] * n, np.int64))
    # the divisions by n became counters; the one by d (floor semantics for a negative d) stays
    assert not any(", %arg3 : index" in line for line in body), body
    assert any("arith.floordivsi" in line and ", %arg1 : index" in line for line in body), body
