"""A Pygments lexer for ``.kern`` source, registered as ``kern`` (entry point ``pygments.lexers``).

The words it colours come from the frontend's language tables (:mod:`kernc.frontend.language`,
the scalar types of :mod:`kernc.frontend.types`, the access modes of
:mod:`kernc.dialect.accessors`), so a keyword, builtin or accessor added to the language is
highlighted without touching this file; :data:`WORD_GROUPS` is also what the TextMate grammar for
editors is generated from (:mod:`kernc.textmate`). The only words spelt here are the few that only
the grammar spells (``frontend/grammar.lark``: the clause words ``default``/``compute``, the
``swizzle<...>`` terminal and the built-in ``im2col`` layout); ``tests/frontend/test_kern_lexer.py``
checks that every word of the grammar is in a group.

Lexing follows the grammar's rule for ``//`` (``frontend/grammar.lark``, "Notes on lexing"): after
an operand (a name, a number, ``)`` or ``]``) it is floor division, anywhere else it starts a line
comment.

    >>> from pygments import highlight
    >>> from pygments.formatters import HtmlFormatter
    >>> html = highlight(open("examples/saxpy.kern").read(), KernLexer(), HtmlFormatter())
"""

from __future__ import annotations

import re

from pygments.lexer import RegexLexer, bygroups, default, words
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    Whitespace,
)

from kernc.dialect.accessors import ADD, READ, VIEW_MODE, WRITE
from kernc.dialect import accessors
from kernc.frontend import language
from kernc.frontend.types import SCALARS

#: Words only the grammar spells (``frontend/grammar.lark``): the buffer clause words and the
#: ``swizzle<B, M, S>`` terminal, and the built-in functional layout (``frontend/layouts.py``).
CLAUSE_WORDS = ("default", "compute")
BUILTIN_FUNCTIONAL_LAYOUTS = ("swizzle", "im2col")

#: The coloured word groups: ``{group: words}``. Every group becomes one Pygments token type
#: (:data:`GROUP_TOKENS`) and one TextMate scope (:mod:`kernc.textmate`).
WORD_GROUPS: dict[str, tuple[str, ...]] = {
    "keyword": tuple(w for w in language.KEYWORDS if w not in ("true", "false")),
    "constant": tuple(w for w in language.KEYWORDS if w in ("true", "false")),
    # the access modes and clause words are keywords only right after a buffer's dims; elsewhere
    # they are names (``let add = 1;``), so they are coloured as pseudo-keywords
    "access": (READ, WRITE, ADD, VIEW_MODE, *CLAUSE_WORDS),
    "type": tuple(SCALARS),
    "accessor": tuple(k.name for k in accessors.LANGUAGE),
    "attribute": tuple(language.KERNEL_ATTRIBUTES),
    "builtin_value": tuple(language.BUILTIN_VALUES),
    "builtin_function": tuple(language.BUILTIN_FUNCS),
    "layout": (*language.BUILTIN_LAYOUTS, *language.ALGEBRA, *BUILTIN_FUNCTIONAL_LAYOUTS),
    "member": (*language.PAIR_MEMBERS, *language.VIEW_METHODS),
}

#: The Pygments token of each word group.
GROUP_TOKENS = {
    "keyword": Keyword,
    "constant": Keyword.Constant,
    "access": Keyword.Pseudo,
    "type": Keyword.Type,
    "accessor": Name.Builtin.Pseudo,
    "attribute": Name.Decorator,
    "builtin_value": Name.Builtin,
    "builtin_function": Name.Builtin,
    "layout": Name.Builtin,
    "member": Name.Attribute,
}

#: Number literals, as the grammar's ``INT`` and ``FLOAT`` terminals (digits with ``_``, an optional
#: type suffix).
INT_SUFFIX = r"(?:i8|i16|i32|i64|u8|u16|u32|u64|index|f16|bf16|f32|f64)?"
FLOAT_RE = r"(?:[0-9][0-9_]*\.[0-9][0-9_]*(?:[eE][+-]?[0-9]+)?|[0-9][0-9_]*[eE][+-]?[0-9]+)(?:f16|bf16|f32|f64)?\b"
HEX_RE = r"0[xX][0-9a-fA-F_]+" + INT_SUFFIX + r"\b"
BIN_RE = r"0[bB][01_]+" + INT_SUFFIX + r"\b"
INT_RE = r"[0-9][0-9_]*" + INT_SUFFIX + r"\b"
#: Operators, longest first (``frontend/grammar.lark``).
OPERATORS = ("..", "->", "&&", "||", "==", "!=", "<=", ">=", "<<", ">>", "+=", "-=", "*=", "/=", "%%",
             "//", "+", "-", "*", "/", "%", "<", ">", "=", "!", "~", "&", "|", "^")
PUNCTUATION = "()[]{},;:."
NAME_RE = r"[A-Za-z_][A-Za-z0-9_]*"


def _word_rules():
    """The rules colouring the words of :data:`WORD_GROUPS` (the members only after a ``.``)."""
    rules = []
    for group, token in GROUP_TOKENS.items():
        if group in ("member", "attribute"):
            continue
        after = "operand" if group in ("constant", "builtin_value") else None
        rules.append((words(WORD_GROUPS[group], suffix=r"\b"), token, after) if after
                     else (words(WORD_GROUPS[group], suffix=r"\b"), token))
    return rules


class KernLexer(RegexLexer):
    """Pygments lexer of the ``.kern`` language (``pygmentize -l kern FILE.kern``)."""

    name = "kern"
    aliases = ["kern"]
    filenames = ["*.kern"]
    mimetypes = ["text/x-kern"]
    url = "https://github.com/kernc/kernc"
    flags = re.MULTILINE

    tokens = {
        # where an operand may start: `//` here is a comment
        "root": [
            (r"\s+", Whitespace),
            (r"//[^\n]*", Comment.Single),
            (r"/\*(?:.|\n)*?\*/", Comment.Multiline),
            (r"(@)(" + NAME_RE + r")", bygroups(Name.Decorator, Name.Decorator)),
            (r"(kernel|layout|fn)(\s+)(" + NAME_RE + r")", bygroups(Keyword, Whitespace, Name.Function)),
            (r"(swizzle)(\s*)(<)", bygroups(Name.Builtin, Whitespace, Operator)),
            # `A o B`: composition (a keyword only inside layout expressions)
            (r"o(?=\s+[A-Za-z_(])", Operator.Word),
            (r"(\.)(" + NAME_RE + r")", bygroups(Punctuation, Name.Attribute), "operand"),
            *_word_rules(),
            (FLOAT_RE, Number.Float, "operand"),
            (HEX_RE, Number.Hex, "operand"),
            (BIN_RE, Number.Bin, "operand"),
            (INT_RE, Number.Integer, "operand"),
            (NAME_RE, Name, "operand"),
            (r"[)\]]", Punctuation, "operand"),
            (words(OPERATORS), Operator),
            (r"[" + re.escape(PUNCTUATION) + r"]", Punctuation),
        ],
        # right after an operand: `//` is floor division (the grammar's FLOORDIV outranks COMMENT)
        # (on the same line: a `//` that starts a line is a comment)
        "operand": [
            (r"[ \t]+", Whitespace),
            (r"//(?!=)", Operator, "#pop"),
            default("#pop"),
        ],
    }


__all__ = ["KernLexer", "WORD_GROUPS", "GROUP_TOKENS"]
