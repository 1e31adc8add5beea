"""Layouts show themselves in Jupyter as the picture ``kernc layout --svg`` draws (``_repr_svg_``,
``_repr_html_``); a layout that cannot be drawn gives ``None`` (the notebook shows its repr)."""

from __future__ import annotations

from kernc import cli
from kernc.layout import Layout, composition, layout_to_svg


def test_repr_svg_is_the_cli_picture(tmp_path, capsys):
    L = Layout.parse("(4,8):(8,1)")
    svg = L._repr_svg_()
    assert svg.startswith("<svg") and "<title>(4,8):(8,1)</title>" in svg
    out = tmp_path / "l.svg"
    assert cli.main(["layout", "(4,8):(8,1)", "--svg", str(out)]) == 0
    assert out.read_text() == svg
    assert L._repr_html_() == f'<div class="kernc-layout">{svg}</div>'


def test_composed_and_swizzled_layouts_draw_too():
    C = composition(Layout.parse("(6,2):(8,2)"), Layout.parse("(4,3):(3,1)"))
    assert C._repr_svg_() == layout_to_svg(C)
    S = Layout.parse("Sw<3,3,3> o (8,64):(64,1)")
    assert "<title>Sw&lt;3,3,3&gt;" in S._repr_svg_()


def test_a_layout_that_cannot_be_drawn_gives_none():
    assert Layout.parse("(2,2,2):(1,2,4)")._repr_svg_() is None  # rank 3
    assert Layout.parse("(n):(1)")._repr_html_() is None          # size symbols
