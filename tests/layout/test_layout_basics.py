"""Layout construction, notation, evaluation (CuTe docs ``01_layout.md`` and ``layouts.md`` section 2)."""

from __future__ import annotations

import pytest

from kernc.support.errors import KerncError
from kernc.layout import ComposedLayout, Layout, LayoutError, Swizzle, make_layout, parse_layout


def test_layouts_md_example_offsets():
    # layouts.md section 2: (4,(2,3)):(2,(1,8)) maps 0..23 to [0,2,4,6,1,3,5,7,8,10,12,14,9,...]
    L = Layout.parse("(4,(2,3)):(2,(1,8))")
    assert L.offsets()[:13] == [0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9]
    assert L.offsets() == [L(i) for i in range(24)]
    assert sorted(L.offsets()) == list(range(24))
    assert L(5) == 3
    assert (L.size(), L.cosize(), L.rank, L.depth) == (24, 24, 2, 2)
    assert L.shape == (4, (2, 3)) and L.stride == (2, (1, 8))
    assert str(L) == "(4,(2,3)):(2,(1,8))"
    assert L[0] == Layout(4, 2) and L[1] == Layout((2, 3), (1, 8))


def test_printing_and_roundtrip():
    for text in ["4:1", "(4,(2,3)):(2,(1,8))", "(3):(1)", "((3)):((1))", "(3,(3),3):(1,(1),1)", "8:-1",
                 "(n,3):(1,n)", "(H*W,C):(C,1)"]:
        assert str(Layout.parse(text)) == text
        assert Layout.parse(text) == Layout.parse(str(Layout.parse(text)))
    assert str(Layout(4, 1)) == "4:1"
    assert repr(Layout(4, 1)) == "Layout('4:1')"
    # CuTe's static spelling and spaces are accepted
    assert Layout.parse(" ( _2 , _4 ) : ( _1 , _2 ) ") == Layout((2, 4), (1, 2))
    # a shape alone gets the compact column-major (LayoutLeft) stride
    assert Layout.parse("(2,(2,2))") == Layout((2, (2, 2)), (1, (2, 4)))


def test_cute_01_layout_construction():
    # 01_layout.md "Constructing a Layout": the printed results of make_layout
    assert str(Layout(8)) == "8:1"
    assert str(Layout((2, 4))) == "(2,4):(1,2)"
    assert str(Layout.row_major((2, 4))) == "(2,4):(4,1)"
    assert str(Layout((2, (2, 2)), (4, (2, 1)))) == "(2,(2,2)):(4,(2,1))"
    assert str(Layout((2, (2, 2)))) == "(2,(2,2)):(1,(2,4))"          # s2xh4_col
    assert str(Layout.row_major((2, (2, 2)))) == "(2,(2,2)):(4,(2,1))"  # LayoutRight


def test_cute_01_layout_print2d_print1d():
    # 01_layout.md "Using a Layout": print2D / print1D outputs
    s2xh4 = Layout((2, (2, 2)), (4, (2, 1)))
    assert [[s2xh4(m, n) for n in range(4)] for m in range(2)] == [[0, 2, 1, 3], [4, 6, 5, 7]]
    assert s2xh4.offsets() == [0, 4, 2, 6, 1, 5, 3, 7]
    s2xd4_a = Layout((2, 4), (12, 1))
    assert [[s2xd4_a(m, n) for n in range(4)] for m in range(2)] == [[0, 1, 2, 3], [12, 13, 14, 15]]
    assert s2xd4_a.offsets() == [0, 12, 1, 13, 2, 14, 3, 15]
    # "Vector layouts"
    assert Layout.parse("((4,2)):((2,1))").offsets() == [0, 2, 4, 6, 1, 3, 5, 7]
    assert Layout.parse("((4,2)):((1,4))").offsets() == list(range(8))
    # "Matrix examples": ((2,2),2):((4,1),2)
    L = Layout.parse("((2,2),2):((4,1),2)")
    assert [[L(m, n) for n in range(2)] for m in range(4)] == [[0, 2], [4, 6], [1, 3], [5, 7]]


def test_cute_01_layout_crd2idx():
    # 01_layout.md "Index Mapping": (3,(2,3)):(3,(12,1)); 16, (1,5) and (1,(1,2)) all map to 17
    L = Layout((3, (2, 3)), (3, (12, 1)))
    assert L(16) == L(1, 5) == L((1, (1, 2))) == 17
    table = [[L(i, j) for j in range(6)] for i in range(3)]
    assert table == [[0, 12, 1, 13, 2, 14], [3, 15, 4, 16, 5, 17], [6, 18, 7, 19, 8, 20]]


def test_cute_01_layout_sublayouts_and_concat():
    # 01_layout.md "Sublayouts" and "Concatenation"
    a = Layout((4, (3, 6)))
    assert str(a) == "(4,(3,6)):(1,(4,12))"
    assert str(a[0]) == "4:1" and str(a[1]) == "(3,6):(4,12)" and str(a[1][0]) == "3:4" and str(a[1][1]) == "6:12"
    a, b = Layout(3, 1), Layout(4, 3)
    assert str(make_layout(a, b)) == "(3,4):(1,3)"
    assert str(make_layout(b, a)) == "(4,3):(3,1)"
    assert str(make_layout(make_layout(a, b), make_layout(b, a))) == "((3,4),(4,3)):((1,3),(3,1))"
    assert str(make_layout(a)) == "(3):(1)"
    assert str(make_layout(make_layout(a))) == "((3)):((1))"
    assert str(make_layout(a, make_layout(a), a)) == "(3,(3),3):(1,(1),1)"
    assert str(Layout((2, 3, 5, 7)).flatten()) == "(2,3,5,7):(1,2,6,30)"
    assert str(Layout(((2, 3), (5, 7))).flatten()) == "(2,3,5,7):(1,2,6,30)"


def test_last_mode_is_not_wrapped():
    L = Layout((2, 3), (1, 10))
    assert L(6) == 30 and L(7) == 31  # index 6 is (0, 3): the last mode continues
    assert Layout((2, (2, 3)), (1, (2, 100)))(12) == 300  # (0, (0, 3))


def test_rank_depth_integral():
    L = Layout(8, 2)
    assert (L.rank, L.depth, L[0], L.size(), L.cosize()) == (1, 0, L, 8, 15)
    assert L((3,)) == 6
    with pytest.raises(IndexError):
        L[1]


def test_functional_interface_of_strided_layout():
    L = Layout((3, 4), (4, 1))
    assert L.to_source((2, 3)) == 11
    assert L.to_source_checked((2, 3)) == (11, True)
    assert L.to_source_checked((3, 0)) == (12, False)
    assert L.to_source_checked((-1, 2)) == (-2, False)
    assert not L.in_bounds((0, 4)) and L.is_in_bounds((0, 0))
    assert L.in_bounds(11) and not L.in_bounds(12)
    assert L.extents() == (3, 4)


def test_symbolic_layouts():
    L = Layout.parse("(n,3):(1,n)")
    assert not L.is_static
    assert str(L) == "(n,3):(1,n)"
    assert L(4, 2, env={"n": 8}) == 20
    assert L.bind({"n": 8}) == Layout((8, 3), (1, 8))
    assert L.size(env={"n": 5}) == 15
    assert str(Layout(("n", 3))) == "(n,3):(1,n)"
    assert str(Layout(("H", "W", 4))) == "(H,W,4):(1,H,H*W)"
    with pytest.raises(LayoutError, match="size symbols"):
        L(3)
    with pytest.raises(LayoutError, match="needs static shapes"):
        from kernc.layout import coalesce

        coalesce(L)
    with pytest.raises(LayoutError, match="not bound"):
        L.bind({})


@pytest.mark.parametrize("text", ["", "(4,2", "(4,2):(1)", "4:", "(4,2):(1,2) junk", "(0,2):(1,2)", "4:1 o",
                                  "Sw<3,3> o 4:1", "(4,-2):(1,1)", "((),1):(1,1)"])
def test_parse_errors(text):
    with pytest.raises(LayoutError):
        parse_layout(text)


def test_layout_error_is_a_kernc_error():
    assert issubclass(LayoutError, KerncError) and issubclass(LayoutError, ValueError)
    with pytest.raises(LayoutError, match="not congruent"):
        Layout((2, 3), 1)


def test_parse_swizzle_and_composed_forms():
    sw = parse_layout("Sw<3,3,3>")
    assert sw == Swizzle(3, 3, 3) and str(sw) == "Sw<3,3,3>"
    a = parse_layout("Sw<3,3,3> o (8,64):(64,1)")
    b = parse_layout("swizzle<3,3,3> o (8,64):(64,1)")        # the .kern spelling
    c = Layout.parse("Sw<3,3,3> o _0 o (8,64):(64,1)")         # CuTe's print form
    assert isinstance(a, ComposedLayout) and a == b == c
    assert str(a) == "Sw<3,3,3> o (8,64):(64,1)"
    assert parse_layout(str(a)) == a
    d = parse_layout("Sw<2,0,3> o 16 o 8:1")
    assert d.offset == 16 and d(1) == Swizzle(2, 0, 3)(17)
    # composition of two layouts in the expression language (right to left)
    assert str(parse_layout("(6,2):(8,2) o (4,3):(3,1)")) == "((2,2),3):((24,2),8)"
    assert str(parse_layout("(6,2):(8,2) ∘ (4,3):(3,1)")) == "((2,2),3):((24,2),8)"


@pytest.mark.parametrize("text", ["-1+2*n", "3+-2*n", "n-1", "-(n+1)*2", "-5", "n*m+-1*k", "0"])
def test_poly_text_round_trips(text):
    """``Poly.parse`` reads everything ``str(Poly)`` writes, negative coefficients included (a
    storage dim ``-1+2*n`` used to be unparseable)."""
    from kernc.dialect.strided import Poly

    p = Poly.parse(text)
    assert Poly.parse(str(p)) == p
    assert p.evaluate({"n": 5, "m": 3, "k": 2}) == eval(text, {}, {"n": 5, "m": 3, "k": 2})


@pytest.mark.parametrize("text", ["-", "n-", "n+", "2*"])
def test_poly_text_ending_early_is_a_clear_error(text):
    from kernc.dialect.strided import Poly

    with pytest.raises(ValueError, match="ends where a number, a name or '\\(' should follow"):
        Poly.parse(text)


def test_symbolic_shape_entries_with_negative_terms_are_rejected():
    """``n-1`` could be zero or negative, so it is no shape entry (it parses as a polynomial now)."""
    from kernc.layout import Layout, LayoutError

    with pytest.raises(LayoutError, match="symbolic shape entry takes no negative terms"):
        Layout(("n-1",), (1,))
    assert str(Layout(("2*n", 3), (1, "2*n"))) == "(2*n,3):(1,2*n)"
