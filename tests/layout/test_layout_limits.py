"""The layout algebra's work is bounded (issue 18, item 3).

``blocked_product(b, b)`` repeated squares the size and doubles the modes each time; verifying the
compositions by evaluating every index made ten such steps take 18 s and twelve more than 100 s.
Now a layout past ``MAX_LAYOUT_SIZE`` (size, offset span, entries), ``MAX_LAYOUT_MODES`` or
``MAX_LAYOUT_DEPTH``, or a swizzle past ``MAX_SWIZZLE_BITS``, is a :class:`LayoutLimitError`, and a
verification evaluates a bounded number of (index, mode) pairs. The work is asserted by counting
evaluations (a spy on ``_eval_flat``), never by timing.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernc.dialect.layout_eval as la
from kernc.layout import (ComposedLayout, Layout, LayoutError, LayoutLimitError, Swizzle, blocked_product,
                          composition, logical_product, parse_layout, raked_product, zipped_product)

P = parse_layout

#: Most (index, mode) evaluations one verification may do: the exhaustive budget, or the sample.
SAMPLE_POINTS = la._SAMPLES + 2 * la._EDGE_SAMPLES


@pytest.fixture
def work(monkeypatch):
    """Counts the (index, mode) pairs ``_eval_flat`` evaluates (an int index counts 1, an array its
    length), in ``work["pairs"]``, and the most indices one call took, in ``work["widest"]``."""
    counter = {"pairs": 0, "widest": 0}
    real = la._eval_flat

    def spy(leaves, x):
        n = int(np.size(x))
        counter["pairs"] += n * max(1, len(leaves))
        counter["widest"] = max(counter["widest"], n)
        return real(leaves, x)

    monkeypatch.setattr(la, "_eval_flat", spy)
    return counter


def test_repeated_blocked_product_is_refused_at_the_size_limit_with_bounded_work(work):
    b = P("(2,2):(1,2)")
    steps = 0
    with pytest.raises(LayoutLimitError) as info:
        for _ in range(12):
            b = blocked_product(b, b)
            steps += 1
    # sizes 16, 256, 2**16, 2**32; the fifth step needs 2**64 > 2**48
    assert steps == 4 and b.size() == 2 ** 32
    msg = str(info.value)
    assert msg.startswith("blocked_product(") and "2**48 (MAX_LAYOUT_SIZE)" in msg
    # four products, one composition each, every one within its budget (2**16 indices on 64 modes
    # for the last); the refused fifth evaluates nothing
    assert work["pairs"] <= 4 * la.VERIFY_WORK_LIMIT


@pytest.mark.parametrize("op, steps", [(raked_product, 4), (zipped_product, 4)])
def test_other_products_of_products_stop_at_the_limit(op, steps, work):
    b = P("(2,2):(1,2)")
    done = 0
    with pytest.raises(LayoutLimitError, match=op.__name__):
        for _ in range(12):
            b = op(b, b)
            done += 1
    assert done == steps
    assert work["widest"] <= la.VERIFY_EXHAUSTIVE_LIMIT


def test_products_of_size_one_layouts_stop_at_the_mode_limit():
    """``logical_product`` does not coalesce: size-1 modes double each time while the size stays 1
    (2**30 modes after 30 lines, before)."""
    b = Layout(1, 0)
    done = 0
    with pytest.raises(LayoutLimitError, match=r"256 modes, more than 128 \(MAX_LAYOUT_MODES\)"):
        for _ in range(30):
            b = logical_product(b, b)
            done += 1
    assert done == 7 and len(b.leaves()) == 128


def test_verification_of_a_provable_composition_samples_instead_of_enumerating(work):
    """Size 2**20 with 20 modes on each side: the old check evaluated all 2**20 indices on the 60
    modes of A, B and R (63 million pairs); the no-carry proof holds, so a bounded sample is
    checked."""
    A = Layout((2,) * 20)
    B = Layout((2,) * 20, tuple(1 << k for k in range(20)))
    R = composition(A, B)
    assert R.size() == 1 << 20
    for i in (0, 1, 12345, (1 << 20) - 1):
        assert R(i) == A(B(i))
    assert work["pairs"] <= SAMPLE_POINTS * 60 * 2


def test_an_unprovable_composition_past_the_work_budget_is_refused(monkeypatch, work):
    monkeypatch.setattr(la, "VERIFY_WORK_LIMIT", 1 << 12)
    # the two modes of B overlap in A's first digit (no-carry fails): with 8192 indices on 6 modes
    # past the budget, nothing is evaluated
    with pytest.raises(LayoutError, match="too large to verify"):
        composition(P("(128,128):(1,1000)"), P("(128,64):(1,1)"))
    assert work["pairs"] == 0


def test_medium_unprovable_compositions_are_still_checked_exhaustively(work):
    R = composition(P("(128,64):(64,1)"), P("(64,128):(128,1)"))
    assert R.size() == 8192
    assert work["widest"] == 8192  # one numpy pass over every index


def _nested(x, depth: int):
    for _ in range(depth):
        x = (x,)
    return x


@pytest.mark.parametrize("make, what", [
    (lambda: Layout(1 << 49, 1), "entry"),
    (lambda: Layout((1 << 30, 1 << 20)), "size"),
    (lambda: Layout(3, 1 << 47), "offset span"),
    (lambda: Layout(3, -(1 << 47)), "offset span"),
    (lambda: Layout((1,) * 129, (0,) * 129), "modes"),
    (lambda: Layout(_nested(2, 33)), "nested"),
    (lambda: P("(" * 40 + "2" + ")" * 40), "nested"),
    (lambda: P("(" * 5000 + "2" + ")" * 5000), "nested"),
    (lambda: Swizzle(20, 20, 20), "MAX_SWIZZLE_BITS"),
    (lambda: Swizzle(1, 0, -48), "MAX_SWIZZLE_BITS"),
    (lambda: P("Sw<64,64,64> o (8,64):(64,1)"), "MAX_SWIZZLE_BITS"),
    (lambda: Layout(10 ** 5000, 1), r"about 2\*\*16609"),
])
def test_layouts_past_a_limit_are_layout_errors(make, what):
    with pytest.raises(LayoutLimitError, match=what):
        make()


def test_layouts_at_the_limits_are_accepted():
    assert Layout(1 << 48, 1).size() == 1 << 48
    assert Layout((1 << 24, 1 << 24), (1 << 24, 1)).cosize() == 1 << 48
    assert len(Layout((1,) * 128, (0,) * 128).leaves()) == 128
    assert Layout(_nested(2, 32)).depth == 32
    assert Swizzle(16, 16, 16).yyy_mask < 1 << 48
    assert Swizzle(1, 0, -47)(1) == 1 | 1 << 47


def test_a_limit_error_names_the_operation_the_user_called():
    big = Layout((1 << 24, 1 << 24))
    with pytest.raises(LayoutLimitError) as info:
        logical_product(big, Layout(2, 1))
    assert str(info.value).startswith("logical_product((16777216,16777216):(1,16777216), 2:1): ")


def _exact_cosize(c: ComposedLayout) -> int:
    return max(c.outer(c.offset + o) for o in c.inner.offsets()) + 1


@pytest.mark.parametrize("text", [
    "Sw<3,3,3> o (8,64):(64,1)", "Sw<3,3,3> o (64,8):(1,64)", "Sw<2,0,-3> o (16,16):(16,1)",
    "Sw<3,4,3> o (4,128):(128,1)", "Sw<1,5,2> o (5,7):(7,1)", "Sw<3,3,3> o 3 o (7,9):(9,1)",
])
def test_the_cosize_of_a_large_swizzled_layout_is_a_bound_of_the_exact_one(monkeypatch, text, work):
    c = P(text) if " o 3 o " not in text else ComposedLayout(Swizzle(3, 3, 3), 3, P("(7,9):(9,1)"))
    exact = _exact_cosize(c)
    assert c.cosize() == exact  # small: every offset evaluated
    monkeypatch.setattr(la, "VERIFY_EXHAUSTIVE_LIMIT", 4)
    monkeypatch.setattr(la, "_PY_EXHAUSTIVE_LIMIT", 4)
    work["pairs"] = 0
    bound = c.cosize()
    t = (c.outer.yyy_mask | c.outer.zzz_mask).bit_length()
    assert exact <= bound <= ((c.offset + c.inner.cosize() - 1) >> t) + 1 << t
    assert work["pairs"] == 0  # no offset evaluated


def test_the_cosize_of_a_huge_swizzled_layout_evaluates_no_offsets(work):
    c = P("Sw<3,3,3> o (1048576,1048576):(1048576,1)")
    assert c.cosize() == 1 << 40
    assert work["pairs"] == 0


def test_limits_are_documented():
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    for doc in ("README.md", "docs/design/language.md", "docs/design/layouts.md"):
        text = (root / doc).read_text()
        assert "MAX_LAYOUT_SIZE" in text and "2**48" in text, doc


def test_deeply_nested_layout_text_from_an_ir_file_is_refused_without_recursion(work):
    """A view op's layout text (``kernc opt`` reads it from the user's IR) nested 3000 calls deep
    took 4 s of rescans (quadratic) and then a RecursionError; ``Poly.parse`` of 2000 nested
    parentheses, a RecursionError."""
    from kernc.dialect.kern import MAX_LAYOUT_TEXT_NESTING, fold_layout
    from kernc.dialect.strided import Poly

    assert str(fold_layout("coalesce(" * 40 + "(2,(1,6)):(1,(6,2))" + ")" * 40)) == "12:1"
    with pytest.raises(LayoutError, match=f"nests 3000 brackets, more than {MAX_LAYOUT_TEXT_NESTING}"):
        fold_layout("coalesce(" * 3000 + "4:1" + ")" * 3000)
    for text in ("(" * 2000 + "n" + ")" * 2000, "-" * 2000 + "n"):
        with pytest.raises(ValueError, match="nests more than 64 parentheses or signs"):
            Poly.parse(text)
    assert str(Poly.parse("(" * 60 + "n+1" + ")" * 60)) == "1+n"
