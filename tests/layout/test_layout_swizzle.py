"""Swizzles and swizzled (composed) layouts: CuTe ``swizzle.hpp`` semantics, ``layouts.md`` section 2."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.layout import ComposedLayout, Layout, LayoutError, Swizzle, composition, parse_layout


def test_swizzle_bits():
    sw = Swizzle(3, 3, 3)
    assert sw.yyy_mask == 0b111 << 6 and sw.zzz_mask == 0b111 << 3
    # bits 6..8 are XOR-ed onto bits 3..5
    assert sw(0) == 0 and sw(7) == 7
    assert sw(64) == 64 ^ 8 and sw(64 + 8) == 64
    assert sw(0b101_000_000) == 0b101_101_000
    assert [sw(x) for x in range(0, 512, 64)] == [x + (x >> 6 << 3) for x in range(0, 512, 64)]
    # negative shift: CuTe shifts left
    neg = Swizzle(2, 0, -3)
    assert neg.yyy_mask == 0b11 and neg.zzz_mask == 0b11 << 3
    assert neg(0b01) == 0b01 | (0b01 << 3)
    assert neg(neg(123)) == 123
    # numpy arrays
    x = np.arange(1024)
    assert np.array_equal(sw(sw(x)), x)
    assert Swizzle(0, 4, 3)(12345) == 12345  # B = 0 is the identity


def test_swizzle_is_a_permutation_of_each_block():
    sw = Swizzle(3, 4, 3)   # the 128-byte pattern on byte addresses
    block = 1 << (3 + 4 + 3)
    assert sorted(sw(x) for x in range(block)) == list(range(block))


@pytest.mark.parametrize("args", [(3, 3, 2), (-1, 0, 3), (1, -1, 3), (2, 0, -1)])
def test_bad_swizzles(args):
    with pytest.raises(LayoutError):
        Swizzle(*args)


def test_composed_layout():
    L = Layout((8, 64), (64, 1))
    C = composition(Swizzle(3, 3, 3), L)
    assert isinstance(C, ComposedLayout)
    assert str(C) == "Sw<3,3,3> o (8,64):(64,1)"
    assert C.shape == (8, 64) and C.size() == 512 and C.rank == 2
    assert all(C(m, n) == Swizzle(3, 3, 3)(L(m, n)) for m in range(8) for n in range(64))
    # fp16 8x64 tile: each row's 8-element chunks are permuted by the row index (row m, chunk j -> j ^ m)
    assert [C(m, 0) // 8 % 8 for m in range(8)] == list(range(8))
    assert sorted(C.offsets()) == list(range(512))
    assert C.cosize() == 512
    # the offset is added before the swizzle
    D = ComposedLayout(Swizzle(3, 3, 3), 64, L)
    assert str(D) == "Sw<3,3,3> o 64 o (8,64):(64,1)" and parse_layout(str(D)) == D
    assert all(D(i) == Swizzle(3, 3, 3)(64 + L(i)) for i in range(512))
    # composition with a tiler applies to the inner layout
    T = composition(C, (4, 8))
    assert isinstance(T, ComposedLayout) and T.inner == composition(L, (4, 8))
    assert T(3, 5) == C(3, 5)
    # functional interface: bounds are the inner layout's
    assert C.to_source_checked((7, 63)) == (C(7, 63), True)
    assert C.to_source_checked((8, 0))[1] is False
    assert C[1].shape == 64 and C[1](9) == C(0, 9)


def test_parse_kern_spelling():
    assert parse_layout("swizzle<3,3,3> o (8,64):(64,1)") == composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))
    with pytest.raises(LayoutError):
        parse_layout("(8,64):(64,1) o Sw<3,3,3>")
