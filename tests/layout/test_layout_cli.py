"""``kernc layout EXPR [--text | --svg FILE] [--banks [--elem-bytes N]]`` (in-process)."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from kernc.cli import main
from kernc.layout import Layout, layout_to_text, parse_layout

# 01_layout.md, "Using a Layout": print_layout(s2xh4)
CUTE_PRINT_LAYOUT = """\
(2,(2,2)):(4,(2,1))
      0   1   2   3
    +---+---+---+---+
 0  | 0 | 2 | 1 | 3 |
    +---+---+---+---+
 1  | 4 | 6 | 5 | 7 |
    +---+---+---+---+
"""


def test_text_matches_cute_print_layout(capsys):
    assert main(["layout", "(2,(2,2)):(4,(2,1))"]) == 0
    assert capsys.readouterr().out == CUTE_PRINT_LAYOUT
    assert main(["layout", "--text", "(2,(2,2)):(4,(2,1))"]) == 0
    assert capsys.readouterr().out == CUTE_PRINT_LAYOUT
    assert layout_to_text(Layout((2, (2, 2)), (4, (2, 1)))) == CUTE_PRINT_LAYOUT


def test_text_of_rank1_composed_and_expression(capsys):
    assert main(["layout", "4:2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "4:2" and out[-2].split() == ["3", "|", "6", "|"]
    assert main(["layout", "(6,2):(8,2) o (4,3):(3,1)"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "((2,2),3):((24,2),8)"
    assert main(["layout", "Sw<3,3,3> o (8,64):(64,1)"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "Sw<3,3,3> o (8,64):(64,1)"


def test_banks(capsys):
    # fp16 8x64 row-major: every row starts in bank 0 (8-way conflict down a column);
    # Sw<3,3,3> spreads the rows over all banks.
    assert main(["layout", "(8,64):(64,1)", "--banks", "--elem-bytes", "2"]) == 0
    plain = capsys.readouterr().out
    assert "banks: (offset*2//4) % 32" in plain
    assert "reading a column is up to 8-way" in plain
    assert main(["layout", "Sw<3,3,3> o (8,64):(64,1)", "--banks", "--elem-bytes", "2"]) == 0
    swz = capsys.readouterr().out
    assert "reading a column is up to 1-way" in swz


def test_svg(tmp_path, capsys):
    path = tmp_path / "L.svg"
    assert main(["layout", "(4,8):(8,1)", "--svg", str(path)]) == 0
    assert "wrote" in capsys.readouterr().out
    root = ET.parse(path).getroot()
    assert root.tag.endswith("svg")
    ns = {"s": "http://www.w3.org/2000/svg"}
    cells = [r for r in root.findall("s:rect", ns) if r.find("s:title", ns) is not None]
    assert len(cells) == 32
    texts = [t.text for t in root.findall("s:text", ns)]
    assert "(4,8):(8,1)" in texts and "31" in texts
    assert not [f for f in os.listdir(tmp_path) if f != "L.svg"]   # no temp file left behind
    banked = tmp_path / "B.svg"
    assert main(["layout", "Sw<3,3,3> o (8,64):(64,1)", "--svg", str(banked), "--banks", "--elem-bytes", "2"]) == 0
    body = banked.read_text()
    assert "hsl(" in body and ">b0<" in body


def test_composed_layout_title_shows_offset_only_when_nonzero(tmp_path, capsys):
    # regression: a composed layout of offset 0 was titled 'Sw<1,2,3> o 0 o (8,8):(8,1)', in the
    # text picture and in the SVG (its <title> and the heading text) alike
    for expr, title in (("Sw<1,2,3> o (8,8):(8,1)", "Sw<1,2,3> o (8,8):(8,1)"),
                        ("Sw<1,2,3> o 0 o (8,8):(8,1)", "Sw<1,2,3> o (8,8):(8,1)"),
                        ("Sw<1,2,3> o _0 o (8,8):(8,1)", "Sw<1,2,3> o (8,8):(8,1)"),
                        ("Sw<1,2,3> o 4 o (8,8):(8,1)", "Sw<1,2,3> o 4 o (8,8):(8,1)")):
        assert main(["layout", expr]) == 0
        assert capsys.readouterr().out.splitlines()[0] == title, expr
        path = tmp_path / "t.svg"
        assert main(["layout", expr, "--svg", str(path)]) == 0
        capsys.readouterr()
        root = ET.parse(path).getroot()
        ns = {"s": "http://www.w3.org/2000/svg"}
        assert root.find("s:title", ns).text == title
        assert title in [t.text for t in root.findall("s:text", ns)]
        assert parse_layout(title) == parse_layout(expr)


def test_bad_expressions(tmp_path, capsys):
    for expr in ["(2,(2,2):(4,(2,1))", "(4,6,8):(2,3,5) o 6:3", "(2,2,2):(1,2,4)", "(n,4):(1,n)", "Sw<3,3,2>"]:
        assert main(["layout", expr]) == 1, expr
        err = capsys.readouterr().err
        assert err.startswith("kernc: error: layout '"), err
    assert main(["layout", "(4,6,8):(2,3,5) o 6:3"]) == 1
    err = capsys.readouterr().err
    assert "(4,6,8):(2,3,5)" in err and "6:3" in err and "not admissible" in err
    path = tmp_path / "x.svg"
    assert main(["layout", "(2,2,2):(1,2,4)", "--svg", str(path)]) == 1
    assert not path.exists()
    capsys.readouterr()


def test_parse_round_trip_of_printed_text():
    L = parse_layout("Sw<2,1,2> o 4 o (4,4):(1,4)")
    assert parse_layout(str(L)) == L
