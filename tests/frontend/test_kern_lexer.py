"""The Pygments lexer of ``.kern`` (``kernc/kern_lexer.py``) and the TextMate grammar generated
from the same word groups (``kernc/textmate.py``, checked in as ``editors/kern.tmLanguage.json``)."""

from __future__ import annotations

import glob
import json
import os
import re

import pytest

pygments = pytest.importorskip("pygments")
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename  # noqa: E402
from pygments.token import Comment, Error, Keyword, Name, Number, Operator  # noqa: E402

from kernc import kern_lexer, textmate  # noqa: E402
from kernc.dialect import accessors  # noqa: E402
from kernc.frontend import language  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCES = sorted(glob.glob(os.path.join(ROOT, "examples", "*.kern"))
                 + glob.glob(os.path.join(ROOT, "bench", "kern", "*.kern")))


def _tokens(text):
    return [(t, v) for t, v in kern_lexer.KernLexer().get_tokens(text) if v.strip()]


def test_sources_found():
    names = {os.path.basename(p) for p in SOURCES}
    assert {"saxpy.kern", "transpose.kern", "accessors.kern", "permute.kern"} <= names


@pytest.mark.parametrize("path", SOURCES, ids=os.path.basename)
def test_every_example_lexes_without_error_tokens(path):
    text = open(path, encoding="utf-8").read()
    tokens = list(kern_lexer.KernLexer().get_tokens(text))
    bad = [(str(t), v) for t, v in tokens if t in Error]
    assert bad == []
    assert "".join(v for _, v in tokens).rstrip("\n") == text.rstrip("\n")  # nothing lost


def test_registered_as_kern():
    assert get_lexer_by_name("kern").__class__ is kern_lexer.KernLexer
    assert get_lexer_for_filename("x.kern").__class__ is kern_lexer.KernLexer


def test_words_come_from_the_language_tables():
    groups = kern_lexer.WORD_GROUPS
    assert set(language.KEYWORDS) <= set(groups["keyword"]) | set(groups["constant"])
    assert {k.name for k in accessors.LANGUAGE} == set(groups["accessor"])  # the registry's patterns
    assert {"shared", "block_sum", "pair"} <= set(groups["accessor"])
    assert set(language.BUILTIN_FUNCS) == set(groups["builtin_function"])
    assert set(language.ALGEBRA) <= set(groups["layout"])
    toks = _tokens("kernel k(x: f32[n] read shared(I), y: f32[n] write sum) over n { y = exp(x); }")
    assert (Keyword, "kernel") in toks and (Name.Function, "k") in toks
    assert (Keyword.Type, "f32") in toks and (Keyword.Pseudo, "read") in toks
    assert (Name.Builtin.Pseudo, "shared") in toks and (Name.Builtin.Pseudo, "sum") in toks
    assert (Name.Builtin, "exp") in toks


def test_every_word_of_the_grammar_is_coloured():
    """A word the grammar spells as a literal (``"kernel"``, ``DEFAULT: "default"``) is in a group,
    so a new keyword cannot be left uncoloured."""
    grammar = open(os.path.join(ROOT, "frontend", "grammar.lark"), encoding="utf-8").read()
    grammar = re.sub(r"//[^\n]*", "", grammar)
    literals = set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', grammar))
    literals |= {w for alt in re.findall(r"/\(([a-z|]+)\)", grammar) for w in alt.split("|")}  # ACCESS
    literals |= set(re.findall(r"/([a-z]+)\\s\*<", grammar))  # SWIZZLE
    coloured = {w for ws in kern_lexer.WORD_GROUPS.values() for w in ws} | {"o"}
    assert {"kernel", "default", "compute", "read", "view", "swizzle"} <= literals
    assert literals - coloured == set()


def test_floor_division_after_an_operand_comment_elsewhere():
    toks = _tokens("let a = b // 2; // note\nlet c = f(a) //3;\n// line\nx[1] // 4")
    ops = [v for t, v in toks if t in Operator]
    comments = [v for t, v in toks if t in Comment]
    assert ops.count("//") == 3
    assert comments == ["// note", "// line"]
    assert (Number.Integer, "2") in toks


def test_textmate_grammar_is_up_to_date():
    path = os.path.join(ROOT, textmate.GRAMMAR_PATH)
    with open(path, encoding="utf-8") as f:
        assert f.read() == textmate.grammar_text(), "regenerate it: python -m kernc.textmate"


def test_textmate_patterns_match_what_the_lexer_colours():
    patterns = json.loads(textmate.grammar_text())["patterns"]
    by_name = {p["name"]: re.compile(p["match"]) for p in patterns if "match" in p and "name" in p}
    assert by_name["storage.type.kern"].fullmatch("bf16")
    assert by_name["support.type.accessor.kern"].fullmatch("shared_sum")
    assert not by_name["support.type.accessor.kern"].fullmatch("shared_summer")
    assert by_name["constant.numeric.float.kern"].match("1.5e3f32")
    assert by_name["keyword.operator.arithmetic.kern"].search("a // 2")
    assert not by_name["keyword.operator.arithmetic.kern"].search("; // note")
