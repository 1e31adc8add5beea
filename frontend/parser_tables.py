"""kernc's LALR(1) parser tables, shipped in the package as JSON (``grammar_tables.json``).

Building the tables from ``grammar.lark`` costs ~120 ms, which every new process would pay. They
depend on kernc's grammar and the Lark version only, so they are built once, when the grammar
changes, and shipped beside it; nothing is read from or written to a cache folder (Lark's own
``cache=`` option stores a pickle there, which would run code planted by anyone who can swap the
file).

The file is produced by Lark's ``memo_serialize`` -- the machinery behind its standalone parser
generator -- and loaded back with ``Lark._load_from_dict`` (what a standalone parser calls). It is
two lines of JSON, which cannot run code:

1. a header: ``format`` (:data:`FORMAT`), the ``lark`` version, ``grammar_sha256`` (of the grammar
   text), the construction ``options`` (:data:`OPTIONS`) and ``tables_sha256`` (of line 2's bytes);
2. the tables: ``{"data": ..., "memo": ...}`` as Lark serializes them, with every dict whose keys are
   integers written as ``{"int-keys": [[key, value], ...]}`` (JSON keys are strings only).

:func:`load` returns ``None`` -- and :mod:`kernc.frontend.parser` builds the tables in memory from the
grammar -- when the file is missing, damaged, or made for another grammar, Lark version or set of
options; never an error. State and token numbers are made canonical (see :func:`_canonical_table`)
so that regenerating an unchanged grammar gives the same bytes: Lark numbers states in the order of
a set of objects hashed by identity, which differs from run to run.

Regenerate after editing the grammar or upgrading Lark (``tests/frontend/test_parser_tables.py``
fails until then)::

    python -m kernc.frontend.parser_tables          # rewrite grammar_tables.json
    python -m kernc.frontend.parser_tables --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GRAMMAR = os.path.join(HERE, "grammar.lark")
TABLES = os.path.join(HERE, "grammar_tables.json")
#: Bump when the layout of the file (not of Lark's data) changes.
FORMAT = 1
#: How :mod:`kernc.frontend.parser` constructs its ``Lark`` (plus its AST transformer).
OPTIONS = {"parser": "lalr", "lexer": "contextual", "maybe_placeholders": True}
#: The tables are ~130 kB; a larger file is not read (a guard against a bogus one).
MAX_BYTES = 8 * 1024 * 1024
_INT_KEYS = "int-keys"


def grammar_text() -> str:
    with open(GRAMMAR, encoding="utf-8") as f:
        return f.read()


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def header_for(grammar: str) -> dict:
    """The header fields a table file must carry to be used with ``grammar`` (all but
    ``tables_sha256``)."""
    import lark

    return {"format": FORMAT, "lark": lark.__version__, "grammar_sha256": _sha256(grammar.encode("utf-8")),
            "options": OPTIONS}


# -- writing ---------------------------------------------------------------------------------------
def _to_json(obj):
    """Lark's serialized data as JSON values: tuples become lists, int-keyed dicts tagged lists."""
    if isinstance(obj, dict):
        if obj and all(isinstance(k, int) and not isinstance(k, bool) for k in obj):
            return {_INT_KEYS: [[k, _to_json(v)] for k, v in obj.items()]}
        if not all(isinstance(k, str) for k in obj) or _INT_KEYS in obj:
            raise TypeError(f"cannot store a dict with keys {sorted(map(repr, obj))[:5]} as JSON")
        return {k: _to_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_to_json(v) for v in obj]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise TypeError(f"cannot store a {type(obj).__name__} as JSON")


def _canonical_table(table: dict) -> dict:
    """Lark's serialized ``IntParseTable`` (``tokens``: number -> symbol name, ``states``: number ->
    {token number: (0, target state) for a shift or goto | (1, rule) for a reduce}, ``start_states``
    and ``end_states``: start symbol -> state) renumbered canonically: tokens in name order, states
    in breadth-first order from the start states (sorted by name), each state's shifts taken in
    token-name order. The numbers are internal to the table, so the parser is the same."""
    names = table["tokens"]
    states = table["states"]
    order, seen = [], set()
    queue = [table["start_states"][s] for s in sorted(table["start_states"])]
    while queue:
        state = queue.pop(0)
        if state in seen:
            continue
        seen.add(state)
        order.append(state)
        for token, (action, arg) in sorted(states[state].items(), key=lambda item: names[item[0]]):
            if action == 0 and arg not in seen:
                queue.append(arg)
    if len(order) != len(states):
        raise ValueError(f"{len(states) - len(order)} parser states are unreachable: no canonical numbering")
    new_state = {old: new for new, old in enumerate(order)}
    token_names = sorted(set(names.values()))
    new_token = {old: token_names.index(name) for old, name in names.items()}
    return {
        "tokens": dict(enumerate(token_names)),
        "states": {new_state[old]: {new_token[t]: ((0, new_state[arg]) if action == 0 else (action, arg))
                                    for t, (action, arg) in sorted(states[old].items(),
                                                                   key=lambda item: names[item[0]])}
                   for old in order},
        "start_states": {s: new_state[v] for s, v in sorted(table["start_states"].items())},
        "end_states": {s: new_state[v] for s, v in sorted(table["end_states"].items())},
    }


def build(grammar: str | None = None) -> bytes:
    """The content of ``grammar_tables.json`` for ``grammar`` (default: ``grammar.lark``) with the
    installed Lark: the tables built from the grammar (~120 ms) and serialized (module docstring)."""
    from lark import Lark
    from lark.grammar import Rule
    from lark.lexer import TerminalDef

    grammar = grammar_text() if grammar is None else grammar
    parser = Lark(grammar, **OPTIONS)
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    data["options"] = {k: v for k, v in data["options"].items() if k != "transformer"}  # given at load
    data["parser"]["parser"] = _canonical_table(data["parser"]["parser"])
    tables = json.dumps(_to_json({"data": data, "memo": memo}), sort_keys=True,
                        separators=(",", ":")).encode("ascii")
    header = dict(header_for(grammar), tables_sha256=_sha256(tables))
    return json.dumps(header, sort_keys=True).encode("ascii") + b"\n" + tables + b"\n"


# -- reading ---------------------------------------------------------------------------------------
def _from_json(obj: dict):
    if len(obj) == 1 and _INT_KEYS in obj:
        return {k: v for k, v in obj[_INT_KEYS]}
    return obj


def load(transformer=None, grammar: str | None = None, path: str | None = None):
    """A ``Lark`` parser for ``grammar`` (default: ``grammar.lark``) with ``transformer``, from the
    shipped tables at ``path`` (default :data:`TABLES`); ``None`` when that file is missing, unreadable, damaged, larger than
    :data:`MAX_BYTES`, or made for another grammar, Lark version, options or file format. Never
    raises."""
    try:
        from lark import Lark

        grammar = grammar_text() if grammar is None else grammar
        with open(TABLES if path is None else path, "rb") as f:
            content = f.read(MAX_BYTES + 1)
        if len(content) > MAX_BYTES:
            return None
        head, sep, rest = content.partition(b"\n")
        tables, sep2, tail = rest.partition(b"\n")
        if not sep or not sep2 or tail:
            return None
        header = json.loads(head)
        if not isinstance(header, dict) or header.pop("tables_sha256", None) != _sha256(tables):
            return None
        if header != header_for(grammar):
            return None
        stored = json.loads(tables, object_hook=_from_json)
        return Lark._load_from_dict(stored["data"], stored["memo"], transformer=transformer)
    except Exception:  # noqa: BLE001 - damaged or foreign tables: the caller builds them instead
        return None


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m kernc.frontend.parser_tables",
                                 description="Regenerate (or --check) kernc's shipped parser tables.")
    ap.add_argument("--check", action="store_true", help="exit 1 if grammar_tables.json is out of date")
    ns = ap.parse_args(argv)
    content = build()
    try:
        with open(TABLES, "rb") as f:
            current = f.read()
    except OSError:
        current = None
    if ns.check:
        if current != content:
            print(f"{TABLES} is out of date: run python -m kernc.frontend.parser_tables", file=sys.stderr)
            return 1
        return 0
    if current != content:
        tmp = TABLES + ".tmp"
        with open(tmp, "wb") as f:
            f.write(content)
        os.replace(tmp, TABLES)
        print(f"wrote {TABLES} ({len(content)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
