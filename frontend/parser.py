"""Parsing ``.kern`` text into the AST (:mod:`kernc.frontend.ast`).

The grammar is ``grammar.lark`` (Lark LALR(1), contextual lexer). Lark's exceptions never escape:
they become located :class:`kernc.errors.Diagnostic` s in a :class:`kernc.errors.CompileError`,
with readable messages (``expected ';' after 'x'``, ``unexpected character '$'``).
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from kernc.support.errors import CompileError, Diagnostic, SourceLocation

from . import ast as A
from . import parser_tables

_INT_SUFFIXES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "index")
_FLOAT_SUFFIXES = ("bf16", "f16", "f32", "f64")

# Human words for regex terminals in "expected ..." messages.
_TERMINAL_WORDS = {
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "ACCESS": "an access mode (read, write, add)",
    "ASSIGN": "'='",
    "CMPOP": "a comparison",
    "ADDOP": "'+' or '-'",
    "MULOP": "'*' or '/'",
    "SHIFTOP": "'<<' or '>>'",
    "UNOP": "an expression",
    "$END": "end of file",
}
# Structural tokens are preferred in messages over the long list of operators that could also
# continue an expression; the order here is the order in which they are listed.
_STRUCTURAL = [
    "';'", "')'", "']'", "'}'", "'{'", "','", "'='", "':'", "'..'", "'('",
    "a kernel, function or layout definition", "'kernel'", "'over'", "a statement", "an expression", "a name",
    "an access mode (read, write, add)", "an integer", "'as'",
]
_OPERATOR_TERMINALS = {
    "OROR", "ANDAND", "CMPOP", "BITOR", "BITXOR", "BITAND", "SHIFTOP", "ADDOP", "MULOP",
    "FLOORDIV", "DOT", "LSQB",
}

#: Binding strength of the binary operator terminals (higher binds tighter); see binary_chain.
_PRECEDENCE = {"OROR": 1, "ANDAND": 2, "CMPOP": 3, "BITOR": 4, "BITXOR": 5, "BITAND": 6,
               "SHIFTOP": 7, "ADDOP": 8, "MULOP": 9, "FLOORDIV": 9}

#: The file name and text being parsed, per thread (the AST builder runs inside Lark's parser).
_current = threading.local()


#: Where the running parser's tables came from: "shipped" (``grammar_tables.json``) or "built"
#: (from the grammar, in memory, when the shipped file does not match it); set by :func:`_parser`.
tables_origin = None


@lru_cache(maxsize=1)
def _parser() -> Lark:
    """The LALR parser, built once per process: from the tables shipped in the package
    (:mod:`kernc.frontend.parser_tables`, ~10 ms), or, when that file is missing, damaged or made
    for another grammar or Lark version, from the grammar itself (~120 ms). Nothing is read from or
    written to a cache folder."""
    global tables_origin
    # The AST is built by the parser itself (Lark's "inline" transformer, LALR only): no parse
    # tree, no second walk over it. Locations come from the tokens each rule keeps.
    grammar = parser_tables.grammar_text()
    parser = parser_tables.load(_ToAst(), grammar)
    tables_origin = "shipped"
    if parser is None:
        parser = Lark(grammar, transformer=_ToAst(), **parser_tables.OPTIONS)
        tables_origin = "built"
    return parser


def parse(text: str, filename: str = "<input>") -> A.Program:
    """Parse ``.kern`` source ``text`` into an :class:`ast.Program` (not yet type-checked).

    Raises :class:`kernc.errors.CompileError` with one located diagnostic on a syntax error.
    """
    parser = _parser()
    _current.filename, _current.source = filename, text
    try:
        items = parser.parse(text)
    except UnexpectedInput as e:
        raise CompileError(_syntax_diagnostic(e, text, filename, parser)) from None
    finally:
        _current.source = None
    return A.Program(SourceLocation(filename, 1, 1), items, filename, text)


# ---- syntax errors ----------------------------------------------------------------------------


def _describe_terminal(name: str, parser: Lark) -> str:
    if name in _TERMINAL_WORDS:
        return _TERMINAL_WORDS[name]
    try:
        pattern = parser.get_terminal(name).pattern
    except KeyError:
        return name.lower()
    if pattern.type == "str":
        return f"'{pattern.value}'"
    return name.lower()


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    if tok.type == "NAME":
        return f"name '{tok}'"
    if tok.type in ("INT", "FLOAT"):
        return f"number '{tok}'"
    return f"'{tok}'"


def _expected_words(expected, parser: Lark) -> list[str]:
    expected = set(expected)
    words: set[str] = set()
    if {"NAME", "INT", "FLOAT"} <= expected:
        words.add("an expression")
        expected -= {"NAME", "INT", "FLOAT", "UNOP", "LSQB", "LPAR", "TRUE", "FALSE"}
    if {"KERNEL", "LAYOUT", "AT"} <= expected:
        words.add("a kernel, function or layout definition")
        expected -= {"KERNEL", "LAYOUT", "AT", "FN"}
    if {"LET", "IF", "FOR"} <= expected:
        words.add("a statement")
        expected -= {"LET", "IF", "FOR", "RETURN", "NAME"}
    words |= {_describe_terminal(t, parser) for t in expected if t not in _OPERATOR_TERMINALS}
    structural = [w for w in _STRUCTURAL if w in words]
    if "';'" in structural:
        return ["';'"]
    if structural:
        return structural[:4]
    if words:
        return sorted(words)[:4]
    return ["an operator"] if expected else []


def _join_or(words: list[str]) -> str:
    if not words:
        return "something else"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _unterminated_comment(text: str, filename: str, error_pos: int):
    """A diagnostic at an unclosed ``/*`` at or before ``error_pos`` (the lexer then sees a stray
    ``/``), or None. A ``/*`` inside a ``//`` line comment does not count."""
    pos = 0
    while True:
        start = text.find("/*", pos)
        if start < 0 or start > error_pos:
            return None
        line_start = text.rfind("\n", 0, start) + 1
        end = text.find("*/", start + 2)
        if "//" not in text[line_start:start]:
            if end < 0:
                line = text.count("\n", 0, start) + 1
                return Diagnostic("unterminated comment: '/*' has no closing '*/'",
                                  SourceLocation(filename, line, start - line_start + 1), source=text)
            pos = end + 2
        else:
            pos = start + 2


def _token_before(parser: Lark, text: str, tok: Token):
    """The token before the offending ``tok`` (for "expected ';' after 'x'"; for the end of the
    file, the last token), or None. Only a syntax error needs it, so the text is parsed again up to
    ``tok`` instead of every parse remembering its tokens."""
    prev = None
    ip = parser.parse_interactive(text)
    at_end = tok.type == "$END"  # Lark's end token borrows the last token's position
    try:
        for t in ip.iter_parse():  # yields each token before feeding it
            if not at_end and t.start_pos is not None and tok.start_pos is not None \
                    and t.start_pos >= tok.start_pos:
                break
            prev = t
    except (UnexpectedInput, CompileError):
        pass
    return prev


def _accepts_before(parser: Lark, text: str) -> set:
    """The terminals the parser accepts where the lexer met a character no terminal matches.

    The contextual lexer's own list (``UnexpectedCharacters.allowed``) is that of the LALR state
    before the pending reductions, so after a kernel's closing brace it offered the '}' and names of
    an enclosing block; the text is parsed again up to the character (only on this error path) and
    the interactive parser's ``accepts()`` says what may really come next."""
    ip = parser.parse_interactive(text)
    try:
        for _ in ip.iter_parse():
            pass
    except UnexpectedCharacters:
        try:
            return set(ip.accepts())
        except (UnexpectedInput, CompileError):
            return set()
    except (UnexpectedInput, CompileError):
        pass
    return set()


#: Operators without a compound assignment (``x ^= v``): only ``+= -= *= /=`` exist.
_NO_COMPOUND = ("^", "|", "&", "%", "%%", "//", "<<", ">>")


def _syntax_hint(tok, text: str) -> str | None:
    """A hint for a syntax error that has a common cause: a compound assignment the language does
    not have (``x ^= v``), or ``over r in R`` for the one-coordinate form ``over (r) in (R)``."""
    end = tok.end_pos
    if tok.value in _NO_COMPOUND and end is not None and text[end:end + 1] == "=":
        return f"compound assignment exists for += -= *= /= only: write x = x {tok.value} (...)"
    if tok.value == "in" and tok.start_pos is not None \
            and re.search(r"\bover\s+[A-Za-z_]\w*\s*$", text[:tok.start_pos]):
        return ("one problem coordinate is 'over (r) in (R)'; 'over n' alone names the problem size "
                "(thread t handles element t)")
    return None


def _syntax_diagnostic(e: UnexpectedInput, text: str, filename: str, parser: Lark) -> Diagnostic:
    line, col = getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1
    at = getattr(e, "pos_in_stream", None)
    if at is None and isinstance(e, UnexpectedToken) and e.token.start_pos is not None:
        at = e.token.start_pos
    unterminated = _unterminated_comment(text, filename, len(text) if at is None else at)
    if unterminated is not None:
        return unterminated
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        if ch.isascii() and ch.isdigit():
            end = e.pos_in_stream
            while end < len(text) and (text[end].isalnum() or text[end] in "_."):
                end += 1
            word = text[e.pos_in_stream:end]
            msg = f"invalid number literal '{word}'"
            hint = "integer suffixes: i8..i64, u8..u64, index; float suffixes: f16, bf16, f32, f64"
            return Diagnostic(msg, SourceLocation(filename, line, col), source=text, hint=hint)
        if ch.isascii() and (ch.isalpha() or ch == "_"):
            end = e.pos_in_stream
            while end < len(text) and (text[end].isalnum() or text[end] == "_"):
                end += 1
            word = text[e.pos_in_stream:end]
            allowed = _expected_words(e.allowed or set(), parser)
            msg = f"unexpected name '{word}'" + (f", expected {_join_or(allowed)}" if allowed else "")
            return Diagnostic(msg, SourceLocation(filename, line, col), source=text)
        msg = f"unexpected character {ch!r}"
        allowed = _expected_words(_accepts_before(parser, text) or e.allowed or set(), parser)
        if allowed:
            msg += f", expected {_join_or(allowed)}"
        return Diagnostic(msg, SourceLocation(filename, line, col), source=text)
    if isinstance(e, UnexpectedToken):
        tok = e.token
        expected = e.expected
        if e.interactive_parser is not None:
            try:
                expected = e.interactive_parser.accepts() or expected
            except Exception:  # pragma: no cover - fall back to LALR's (merged) lookahead set
                pass
        words = _expected_words(expected, parser)
        wants_prev = tok.type == "$END" or bool(words and words[0] in ("';'", "')'", "']'"))
        prev = _token_before(parser, text, tok) if wants_prev else None
        if words and words[0] in ("';'", "')'", "']'") and prev is not None and tok.type != "$END" \
                and prev.end_line is not None and prev.end_line < tok.line:
            # A missing terminator: point just after the previous token, like clang does.
            loc = SourceLocation(filename, prev.end_line, prev.end_column)
            return Diagnostic(f"expected {_join_or(words)} after '{prev}'", loc, source=text)
        if tok.type == "$END":
            if prev is not None and prev.end_line is not None:
                loc = SourceLocation(filename, prev.end_line, prev.end_column)
            else:
                loc = SourceLocation(filename, line, col)
            return Diagnostic(f"unexpected end of file, expected {_join_or(words)}", loc, source=text)
        msg = f"unexpected {_describe_token(tok)}, expected {_join_or(words)}"
        return Diagnostic(msg, SourceLocation(filename, tok.line, tok.column), source=text,
                          hint=_syntax_hint(tok, text))
    if isinstance(e, UnexpectedEOF):
        words = _expected_words(e.expected, parser)
        lines = text.splitlines() or [""]
        loc = SourceLocation(filename, len(lines), len(lines[-1]) + 1)
        return Diagnostic(f"unexpected end of file, expected {_join_or(words)}", loc, source=text)
    return Diagnostic(f"syntax error: {e}", SourceLocation(filename, line, col), source=text)


# ---- tree -> AST ------------------------------------------------------------------------------


#: The longest number literal accepted: a literal this long says nothing a shorter one cannot (the
#: exact decimal of any f64 fits), and Python's int() refuses decimal strings over 4300 digits.
MAX_NUMBER_CHARS = 4000


def _clip(text: str, n: int = 40) -> str:
    return text if len(text) <= n else text[:n] + "..."


def _int_value(text: str) -> int:
    t = text.replace("_", "").lower()
    if t.startswith("0x"):
        return int(t[2:], 16)
    if t.startswith("0b"):
        return int(t[2:], 2)
    return int(t)


def _split_suffix(text: str, suffixes) -> tuple[str, str | None]:
    for s in sorted(suffixes, key=len, reverse=True):
        if text.endswith(s) and len(text) > len(s):
            body = text[: -len(s)]
            # `0x1f32` is the hex number 0x1f32, not 0x1 with an f32 suffix
            if body.lower().startswith("0x") and s.startswith(("f", "bf")):
                continue
            return body, s
    return text, None


class _ToAst:
    """The grammar rules' callbacks, run by Lark as it reduces each rule (``items``: the rule's kept
    tokens and its children's results). The file being parsed is this thread's ``_current``."""

    @property
    def filename(self) -> str:
        return _current.filename

    @property
    def source(self) -> str:
        return _current.source

    def _loc(self, x) -> SourceLocation:
        """Where token or node ``x`` starts."""
        if isinstance(x, A.Node):
            return x.loc
        return SourceLocation(self.filename, x.line, x.column)

    # -- top level
    def start(self, items):
        return list(items)

    def exprs(self, items):
        return list(items)

    def call_args(self, items):
        return [i for i in items if i is not None]

    decl_args = call_args  # (grammar.lark: call_args where no operator can follow)

    def layout_params(self, items):
        return [str(i) for i in items if i is not None]

    def layout_lit(self, items):
        lpar, shape, stride = items
        return A.LayoutLiteral(self._loc(lpar), shape, stride)

    def layout_def(self, items):
        name, params, expr = items
        d = A.LayoutDef(self._loc(name), str(name), params or [], expr=expr)
        if isinstance(expr, A.LayoutLiteral):
            d.shape, d.stride = expr.shape, expr.stride
        return d

    # -- layout expressions (only after `layout NAME =`)
    def layout_expr(self, items):
        pieces = [i for i in items if not (isinstance(i, Token) and i.type == "COMPOSE")]
        if len(pieces) == 1:
            return pieces[0]
        return A.LayoutCompose(pieces[0].loc, pieces)

    @staticmethod
    def _entries(x) -> list:
        return list(x.elems) if isinstance(x, A.TupleLit) else [x]

    def llit(self, items):
        shape, stride = items
        return A.LayoutLiteral(shape.paren_loc or shape.loc, self._entries(shape),
                               self._entries(stride))

    def lparen(self, items):
        lpar, inner = items
        inner.paren_loc = self._loc(lpar)  # the outermost pair is reduced last, so it wins
        return inner

    def lswizzle(self, items):
        tok, b, m, s_ = items
        return A.LayoutSwizzle(self._loc(tok), int(str(b)), int(str(m)), int(str(s_)))

    def lbinary(self, items):
        left, op, right = items
        return A.Binary(self._loc(op), str(op), left, right)

    def lint(self, items):
        return self.int_lit(items)

    def lname(self, items):
        return A.Name(self._loc(items[0]), str(items[0]))

    def lcall(self, items):
        name, *args = items
        return A.Call(self._loc(name), str(name), [a for a in args if a is not None])

    def ltuple(self, items):
        lpar, *elems = items
        return A.TupleLit(self._loc(lpar), elems)

    # -- functional layouts
    def name_tuple(self, items):
        return [(str(i), self._loc(i)) for i in items]

    def fn_domain(self, items):
        return items[0]

    def fn_return(self, items):
        return ("return", items[1], self._loc(items[0]))

    def fn_layout_def(self, items):
        name, params, coords, domain, _arrow, outs, *body = items
        ret = body[-1]
        lets = body[:-1]
        return A.FnLayoutDef(self._loc(name), str(name), params or [], [c for c, _ in coords],
                             domain, [o for o, _ in outs], lets, ret[1],
                             coord_locs=[l for _, l in coords])

    # -- functions
    def value_type(self, items):
        name, count = items
        return A.ValueType(self._loc(name), str(name), None if count is None else self.int_lit([count]))

    def fn_param(self, items):
        name, ty = items
        return A.FnParam(self._loc(name), str(name), ty)

    def fn_def(self, items):
        _fn, name, *params, _arrow, result, body = items
        return A.FnDef(self._loc(name), str(name), [p for p in params if p is not None], result, body)

    def attribute(self, items):
        name, args = items
        return A.Attribute(self._loc(name), str(name), args)

    def params(self, items):
        return [i for i in items if i is not None]

    def scalar_param(self, items):
        name, ty = items
        return A.ScalarParam(self._loc(name), str(name), str(ty), self._loc(ty))

    def pattern(self, items):
        name, args = items
        return A.Pattern(self._loc(name), str(name), args)

    def layout_name(self, items):
        name, args = items
        return A.LayoutName(self._loc(name), str(name), args)

    def layout_clause(self, items):
        return items[0]

    def default_clause(self, items):
        tok, value = items
        return ("default", value, self._loc(tok))

    def compute_clause(self, items):
        tok, name = items
        return ("compute", name, self._loc(tok))

    def buffer_param(self, items):
        name, elem, dims, access, *rest = items
        patterns = [r for r in rest if isinstance(r, A.Pattern)]
        clauses: dict = {}
        for r in rest:
            if isinstance(r, A.Pattern):
                continue
            if isinstance(r, (A.LayoutLiteral, A.LayoutName)):
                key, value, loc = "as", r, r.loc
            else:
                key, value, loc = r
            if key in clauses:
                raise CompileError(Diagnostic(
                    f"duplicate '{key}' clause on buffer '{name}'", loc, source=self.source,
                    notes=[Diagnostic("previous clause is here", clauses[key][1], severity="note",
                                      source=self.source)]))
            clauses[key] = (value, loc)
        layout = clauses.get("as", (None, None))[0]
        default = clauses.get("default", (None, None))[0]
        compute, compute_loc = clauses.get("compute", (None, None))
        param = A.BufferParam(self._loc(name), str(name), str(elem), dims, str(access), patterns,
                              layout, default, elem_loc=self._loc(elem), access_loc=self._loc(access))
        if compute is not None:
            param.compute = str(compute)
            param.compute_loc = self._loc(compute)
        return param

    def over_1d(self, items):
        return A.Over(self._loc(items[0]), [str(items[0])], None)

    def over_nd(self, items):
        names = [str(i) for i in items[:-1]]
        return A.Over(self._loc(items[0]), names, items[-1], [self._loc(i) for i in items[:-1]])

    def kernel(self, items):
        *attrs, name, params, over, body = items
        return A.Kernel(self._loc(name), str(name), attrs, params, over, body)

    # -- statements
    def block(self, items):
        lbrace, *stmts = items
        return A.Block(self._loc(lbrace), stmts)

    def let_stmt(self, items):
        name, ty, value = items
        return A.Let(self._loc(name), str(name), str(ty) if ty is not None else None, value,
                     type_loc=self._loc(ty) if ty is not None else None)

    def lvalue(self, items):
        name, member, *indices = items
        indices = [i for i in indices if i is not None]
        target = A.Name(self._loc(name), str(name))
        if member is not None:
            target = A.Member(self._loc(member), target, str(member))
        if len(indices) > 1:
            return A.MultiIndex(target.loc, target, indices)
        if indices:
            return A.Index(target.loc, target, indices[0])
        return target

    def method_lvalue(self, items):
        name, method, args = items
        base = A.Name(self._loc(name), str(name))
        return A.Method(self._loc(method), base, str(method), args)

    def assign_stmt(self, items):
        target, op, value = items
        return A.Assign(self._loc(op), target, str(op), value)

    def if_stmt(self, items):
        cond, then, orelse = items
        return A.If(cond.loc, cond, then, orelse)

    def for_stmt(self, items):
        var, start, stop, body = items
        return A.For(self._loc(var), str(var), start, stop, body)

    def return_stmt(self, items):
        tok, value = items
        return A.Return(self._loc(tok), value)

    # -- expressions
    def binary_chain(self, items):
        """``a OP b OP c ...`` (operands and operator tokens alternating) grouped by precedence
        (shunting-yard, E. W. Dijkstra, 1961): all operators are left-associative except the
        comparisons, which do not chain (``a < b < c`` is an error, as in the grammar before)."""
        out, ops = [items[0]], []
        chained = set()  # ids of comparison nodes built here (not parenthesised operands)

        def reduce():
            op = ops.pop()
            right, left = out.pop(), out.pop()
            if op.type == "CMPOP" and id(left) in chained:
                raise CompileError(Diagnostic(
                    f"comparisons do not chain: '{left.op}' then '{op}'", self._loc(op),
                    source=self.source, hint="combine them with '&&', e.g. (a < b) && (b < c)"))
            node = A.Binary(self._loc(op), str(op), left, right)
            if op.type == "CMPOP":
                chained.add(id(node))
            out.append(node)

        for op, operand in zip(items[1::2], items[2::2]):
            level = _PRECEDENCE[op.type]
            while ops and _PRECEDENCE[ops[-1].type] >= level:
                reduce()
            ops.append(op)
            out.append(operand)
        while ops:
            reduce()
        return out[0]

    def unary(self, items):
        # `- ! ~` prefixes, innermost (last) first: a chain of them is built without recursion
        *ops, operand = items
        for tok in reversed(ops):
            op = str(tok)
            if op == "-" and isinstance(operand, A.IntLit) and not operand.text.startswith("-"):
                operand = A.IntLit(self._loc(tok), -operand.value, operand.suffix, "-" + operand.text)
            elif op == "-" and isinstance(operand, A.FloatLit) and not operand.text.startswith("-"):
                operand = A.FloatLit(self._loc(tok), -operand.value, operand.suffix, "-" + operand.text)
            else:
                operand = A.Unary(self._loc(tok), op, operand)
        return operand

    def index(self, items):
        base, idx = items
        return A.Index(base.loc, base, idx)

    def slice(self, items):
        base, start, _colon, stop = items
        return A.Slice(base.loc, base, start, stop)

    def multi_index(self, items):
        base, *indices = items
        return A.MultiIndex(base.loc, base, [i for i in indices if i is not None])

    def method(self, items):
        base, name, args = items
        return A.Method(self._loc(name), base, str(name), args)

    def apply(self, items):
        name, args, coords = items
        return A.Apply(self._loc(name), str(name), args, coords)

    def member(self, items):
        base, name = items
        return A.Member(self._loc(name), base, str(name))

    def group_reduce(self, items):
        base, *coords, args = items
        op = base.id if isinstance(base, A.Name) else ""  # (the checker reports any other base)
        return A.GroupReduce(base.loc, op, [c for c in coords if c is not None], args)

    def call(self, items):
        name, args = items
        return A.Call(self._loc(name), str(name), args)

    def _number_error(self, tok, why: str):
        return CompileError(Diagnostic(f"invalid number literal '{_clip(str(tok))}': {why}",
                                       self._loc(tok), source=self.source))

    def int_lit(self, items):
        tok = items[0]
        if len(tok) > MAX_NUMBER_CHARS:
            raise self._number_error(tok, f"longer than {MAX_NUMBER_CHARS} characters")
        body, suffix = _split_suffix(str(tok), _INT_SUFFIXES + _FLOAT_SUFFIXES)
        try:
            value = _int_value(body)
        except ValueError:  # `0x_`, `0b__`: a prefix without digits
            raise self._number_error(tok, "no digits after its prefix") from None
        if suffix in _FLOAT_SUFFIXES:
            try:
                value = float(value)
            except OverflowError:  # the checker reports it as out of range for its type
                value = float("inf")
            return A.FloatLit(self._loc(tok), value, suffix, str(tok))
        return A.IntLit(self._loc(tok), value, suffix, str(tok))

    def float_lit(self, items):
        tok = items[0]
        if len(tok) > MAX_NUMBER_CHARS:
            raise self._number_error(tok, f"longer than {MAX_NUMBER_CHARS} characters")
        body, suffix = _split_suffix(str(tok), _FLOAT_SUFFIXES)
        return A.FloatLit(self._loc(tok), float(body.replace("_", "")), suffix, str(tok))

    def true_lit(self, items):
        return A.BoolLit(self._loc(items[0]), True)

    def false_lit(self, items):
        return A.BoolLit(self._loc(items[0]), False)

    def name(self, items):
        return A.Name(self._loc(items[0]), str(items[0]))

    def tuple(self, items):
        lpar, *elems = items
        return A.TupleLit(self._loc(lpar), [e for e in elems if e is not None])

    def vector(self, items):
        lsqb, *elems = items
        return A.VectorLit(self._loc(lsqb), [e for e in elems if e is not None])

