"""``kern-fold-divisions`` on the CPU interpreter: divisions that undo a linearization are folded,
the others are kept, and every value equals C's truncating ``/`` and ``%`` computed in Python."""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from helpers import c_div, c_rem

SOURCE = """
kernel lin(y: i32[A, B, C, 6] view, off: index, R: index) over (i, j, k) in (A, B, C) {
    let m = (i * B + j) * C + k;
    y[i, j, k, 0] = i32(m / (B * C) + 10 * ((m / C) % B) + 100 * (m % C));
    let acc = i32(0);
    for r in 0..R {
        for c in 0..C {
            let kk = r * C + c;
            acc += i32((kk / C) * 3 + (kk % C));
        }
    }
    y[i, j, k, 1] = i32(acc);
    // not provably in range: k - off may be negative (truncating division), off may exceed C
    y[i, j, k, 2] = i32((i * C + k - off) / C);
    y[i, j, k, 3] = i32((i * C + k - off) % C);
    y[i, j, k, 4] = i32((j * C + k + off) / C);
    y[i, j, k, 5] = i32((m + off) % (B * C));
}
"""


def _expected(A, B, C, off, R):
    y = np.zeros((A, B, C, 6), np.int32)
    for i in range(A):
        for j in range(B):
            for k in range(C):
                m = (i * B + j) * C + k
                acc = sum((r * C + c) // C * 3 + (r * C + c) % C for r in range(R) for c in range(C))
                y[i, j, k] = (
                    m // (B * C) + 10 * ((m // C) % B) + 100 * (m % C),
                    acc,
                    c_div(i * C + k - off, C),
                    c_rem(i * C + k - off, C),
                    c_div(j * C + k + off, C),
                    c_rem(m + off, B * C),
                )
    return y


@pytest.fixture(scope="module")
def mod():
    return kernc.compile(SOURCE)


def test_linearized_parts_are_read_back_without_division(mod):
    gpu = mod.ir("gpu")
    loop = gpu[gpu.index("scf.for"):]
    body = loop[:loop.index("scf.yield")]
    assert "divsi" not in body and "remsi" not in body, body
    # the four divisions written with an offset stay (two of them share one divisor: C)
    tail = gpu[gpu.rindex("scf.yield"):]
    assert sum(tail.count(op) for op in ("arith.divsi", "arith.remsi")) >= 4, tail


@pytest.mark.parametrize("A, B, C, off, R", [
    (1, 1, 1, 0, 1),
    (2, 3, 5, 2, 3),
    (3, 4, 7, 9, 2),   # off > C: quotients of negative dividends truncate towards 0
    (2, 1, 6, 0, 0),   # an empty loop
])
def test_values_match_c_semantics(mod, A, B, C, off, R):
    y = np.full((A, B, C, 6), -12345, np.int32)
    mod.lin(y, off, R)
    np.testing.assert_array_equal(y, _expected(A, B, C, off, R))


ZERO_EXTENT = """
kernel k(x: f32[R, C] view, y: f32[n] write) over n {
    let c = thread_id % R;
    y = x.checked(c, c);
}
"""


def test_a_checked_read_stays_checked_when_an_extent_is_zero():
    """``c = t % R`` is below ``R`` only when ``R > 0``: with ``R = 0`` the remainder is unspecified,
    and kern-fold-range-checks had dropped ``c < R`` as always true -- an out-of-bounds load (a
    ``KerncRuntimeError`` on the CPU, a stray read on a GPU) instead of the default."""
    mod = kernc.compile(ZERO_EXTENT)
    y = np.full(5, 7.0, np.float32)
    mod.k(np.zeros((0, 4), np.float32), y)
    np.testing.assert_array_equal(y, np.zeros(5, np.float32))
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    mod.k(x, y)
    np.testing.assert_array_equal(y, [x[t % 3, t % 3] for t in range(5)])
