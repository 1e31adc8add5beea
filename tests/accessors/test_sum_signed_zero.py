"""One signed-zero rule for every sum output (trial of issue 18, F03): a sum of only ``-0.0`` terms
is ``-0.0`` (IEEE 754), as ``add`` outputs and ``write block_sum`` give it. ``write sum`` (plain and
``@deterministic``) gave ``+0.0``: the launcher zero-filled it with ``+0.0`` before adding the terms;
it now fills ``-0.0``, the identity of a float sum, when the launch has items."""

from __future__ import annotations

import numpy as np
import pytest

import kernc

SRC = """
@block(32) kernel ws(x: f32[n] read, y: f32[1] write sum) over n { y = x; }
@block(32) @deterministic kernel wsd(x: f32[n] read, y: f32[1] write sum) over n { y = x; }
@block(32) kernel wb(x: f32[n] read, y: f32[nb] write block_sum) over n { y = x; }
@block(32) kernel wp(x: f32[n] read, y: f32[n1] write pair) over n { y = (x, x); }
@block(32) kernel wsv(x: f32[n] read, y: f32[1, 2] write sum) over n { y[0] = x; y[1] = x; }
@block(32) kernel wsi(x: i32[n] read, y: i32[1] write sum) over n { y = x; }
"""


@pytest.fixture(scope="module")
def mod():
    return kernc.compile(SRC)


@pytest.mark.parametrize("name, shape", [("ws", 1), ("wsd", 1), ("wb", 2), ("wp", 46), ("wsv", (1, 2))])
def test_a_sum_of_negative_zeros_is_negative_zero(mod, name, shape):
    x = np.full(45, -0.0, np.float32)
    y = np.full(shape, 7.0, np.float32)
    mod[name](x, y)
    assert (y == 0).all() and np.signbit(y).all(), y


@pytest.mark.parametrize("name, shape", [("ws", 1), ("wsd", 1), ("wsv", (1, 2))])
def test_one_positive_zero_makes_the_sum_positive_zero(mod, name, shape):
    x = np.full(45, -0.0, np.float32)
    x[17] = 0.0
    y = np.full(shape, 7.0, np.float32)
    mod[name](x, y)
    assert (y == 0).all() and not np.signbit(y).any()


def test_an_empty_sum_and_integer_sums_are_plain_zero(mod):
    y = np.full(1, 7.0, np.float32)
    mod.ws(np.zeros(0, np.float32), y)
    assert y[0] == 0 and not np.signbit(y[0])
    yi = np.full(1, 7, np.int32)
    mod.wsi(np.array([3, -3], np.int32), yi)
    assert yi[0] == 0
