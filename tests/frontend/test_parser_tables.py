"""The parser tables shipped in the package (``kernc.frontend.parser_tables``, issue 18 item 1):
they match the grammar, the parser uses them, a damaged or foreign file falls back to building the
tables from the grammar, and nothing in the file can run code."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import subprocess
import sys

import pytest

from kernc.support.errors import CompileError
from kernc.frontend import dump_ast, parse, parser, parser_tables

from frontend_helpers import EXAMPLES

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: Programs whose AST (or syntax error) both parsers must agree on: every example and benchmark
#: kernel, and inputs that stop the parser in different states.
BAD = [
    "kernel k(x: f32[n] read) over n { y = x }",
    "kernel k(x: f32[n] read) over n { y = x +; }",
    "kernel k(x f32[n] read) over n { }",
    "kernel k(x: f32[n] read) over n { y ^= x; }",
    "layout L = (4, 2):(1, ;",
    "kernel k() over r in R { }",
    "kernel k(a: f32) over n { let v = [1.0, 2.0; }",
    "/* never closed",
    "kernel k(a: f32) over n { if a < 1.0 { } else }",
    "$",
    "kernel",
]


def _outcome(text: str):
    try:
        return "ok", dump_ast(parse(text, "t.kern"))
    except CompileError as err:
        return "error", str(err)


def _corpus():
    files = sorted(EXAMPLES.glob("*.kern")) + sorted((ROOT / "bench" / "kern").glob("*.kern"))
    assert len(files) >= 10
    return [f.read_text() for f in files] + ["", "// only a comment\n"] + BAD


@pytest.fixture
def fresh_parser():
    """Build the parser again in this process (and once more afterwards, from the real tables)."""
    parser._parser.cache_clear()
    yield
    parser._parser.cache_clear()


def test_the_shipped_tables_match_the_grammar():
    """Fails when grammar.lark (or the Lark version) changed without regenerating the tables:
    run ``python -m kernc.frontend.parser_tables``. Regeneration is reproducible (canonical state
    numbers), so this compares bytes."""
    with open(parser_tables.TABLES, "rb") as f:
        shipped = f.read()
    assert shipped == parser_tables.build(), "run: python -m kernc.frontend.parser_tables"


def test_regeneration_gives_the_same_bytes_whatever_the_hash_seed():
    """Lark numbers states in a set's order (objects hashed by identity, so not even a fixed
    PYTHONHASHSEED repeats it); the file's numbering is canonical."""
    code = "import sys; from kernc.frontend import parser_tables as t; sys.stdout.buffer.write(t.build())"
    outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, timeout=120,
                           env=dict(os.environ, PYTHONHASHSEED=seed)).stdout for seed in ("1", "2")]
    assert outs[0] == outs[1] == pathlib.Path(parser_tables.TABLES).read_bytes()


def test_check_mode_of_the_regenerator(tmp_path, monkeypatch):
    assert parser_tables.main(["--check"]) == 0
    stale = tmp_path / "tables.json"
    stale.write_bytes(b"{}\n{}\n")
    monkeypatch.setattr(parser_tables, "TABLES", str(stale))
    assert parser_tables.main(["--check"]) == 1
    assert parser_tables.main([]) == 0 and stale.read_bytes() == parser_tables.build()
    assert parser_tables.main(["--check"]) == 0


def test_a_new_process_uses_the_shipped_tables_and_writes_nothing(tmp_path):
    """No table build (~120 ms) on a first run, and no file in the cache folder (which the parser
    used to keep a pickle in)."""
    cache = tmp_path / "cache"
    code = ("from kernc.frontend import parser; parser.parse('kernel k(x: f32[n] read, y: f32[n] write) "
            "over n { y = x; }'); print(parser.tables_origin)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120,
                         env=dict(os.environ, KERNC_CACHE_DIR=str(cache)))
    assert out.stdout.strip() == "shipped"
    assert not cache.exists()


def test_shipped_and_built_parsers_agree(monkeypatch):
    """The same ASTs and the same syntax errors (their expected-token lists come from the tables)."""
    from lark import Lark

    shipped = parser_tables.load(parser._ToAst())
    assert shipped is not None
    built = Lark(parser_tables.grammar_text(), transformer=parser._ToAst(), **parser_tables.OPTIONS)
    results = []
    for which in (shipped, built):
        monkeypatch.setattr(parser, "_parser", lambda which=which: which)
        results.append([_outcome(text) for text in _corpus()])
    assert results[0] == results[1]
    assert [kind for kind, _ in results[0]].count("error") == len(BAD)


def _damaged(path: pathlib.Path, how: str):
    good = pathlib.Path(parser_tables.TABLES).read_bytes()
    head, tables = good.split(b"\n")[:2]
    header = json.loads(head)

    def with_header(**change):
        return json.dumps(dict(header, **change)).encode() + b"\n" + tables + b"\n"

    if how == "missing":
        return
    if how == "folder":
        path.mkdir()
        return
    data = {
        "empty": b"",
        "truncated": good[: len(good) // 2],
        "garbage": os.urandom(len(good)),
        "one-line": head + b"\n",
        "flipped-table-byte": good[:-40] + bytes([good[-40] ^ 1]) + good[-39:],
        "other-lark": with_header(lark="0.0.1"),
        "other-grammar": with_header(grammar_sha256="0" * 64),
        "other-options": with_header(options={"parser": "earley"}),
        "other-format": with_header(format=99),
        "header-not-an-object": b"[]\n" + tables + b"\n",
        "trailing-bytes": good + b"x",
        "too-large": good + b" " * parser_tables.MAX_BYTES,
    }[how]
    path.write_bytes(data)


@pytest.mark.parametrize("how", ["missing", "folder", "empty", "truncated", "garbage", "one-line",
                                 "flipped-table-byte", "other-lark", "other-grammar", "other-options",
                                 "other-format", "header-not-an-object", "trailing-bytes", "too-large"])
def test_damaged_or_foreign_tables_are_built_from_the_grammar(tmp_path, monkeypatch, fresh_parser, how):
    bad = tmp_path / "grammar_tables.json"
    _damaged(bad, how)
    assert parser_tables.load(parser._ToAst(), path=str(bad)) is None
    monkeypatch.setattr(parser_tables, "TABLES", str(bad))
    prog = parse((EXAMPLES / "saxpy.kern").read_text(), "saxpy.kern")
    assert parser.tables_origin == "built" and [k.name for k in prog.kernels] == ["saxpy"]
    with pytest.raises(CompileError, match="expected"):
        parse("kernel k(x: f32[n] read) over n { y = x }", "bad.kern")


def test_a_checksummed_file_naming_other_classes_runs_nothing(tmp_path, monkeypatch, fresh_parser):
    """Even a file with a valid header and checksum can only name the classes Lark's deserializer
    allows (TerminalDef, Rule, ...): a '__type__' naming anything else fails, and JSON itself has no
    way to call code. Tables built from that fall back to the grammar."""
    marker = tmp_path / "ran"
    evil_tables = json.dumps({"data": {"__type__": "system", "args": [f"touch {marker}"]},
                              "memo": {"__type__": "eval"}}).encode()
    header = dict(parser_tables.header_for(parser_tables.grammar_text()),
                  tables_sha256=hashlib.sha256(evil_tables).hexdigest())
    evil = tmp_path / "evil.json"
    evil.write_bytes(json.dumps(header).encode() + b"\n" + evil_tables + b"\n")
    assert parser_tables.load(parser._ToAst(), path=str(evil)) is None
    monkeypatch.setattr(parser_tables, "TABLES", str(evil))
    assert [k.name for k in parse((EXAMPLES / "saxpy.kern").read_text()).kernels] == ["saxpy"]
    assert parser.tables_origin == "built" and not marker.exists()


def test_the_tables_are_package_data():
    """An installed kernc (not only this checkout) carries the file."""
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    line = next(ln for ln in section.splitlines() if ln.startswith('"kernc.frontend"'))
    assert "grammar_tables.json" in line or "*.json" in line
