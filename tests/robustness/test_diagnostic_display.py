"""The source line and caret under a diagnostic, for lines too long to print whole and for files
that are not UTF-8.

- A diagnostic on a very long line (a generated or minified file) printed the whole line: one error
  on an 800 KB line printed 800 KB. A line longer than 120 characters is now shown as a window of at
  most 120 characters around the caret, "..." marking each cut end, as clang does; shorter lines are
  shown as before.
- A file that is not UTF-8 got ``file:line:col: error: the file is not UTF-8 text (byte 0xNN)`` but
  no source line and caret; it now has both, like every other diagnostic: the line decoded with
  U+FFFD for the bad bytes and the caret under the first one, its column counted in characters as
  the lexer counts them (a tab or a multi-byte character is one column, the byte order mark none).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

import kernc
from diagnostic_display import MAX_SHOWN, caret_column, window_start
from kernc import CompileError
from kernc.cli import main
from kernc.support.errors import Diagnostic, SourceLocation

REPLACEMENT = "\ufffd"


def shown(d: Diagnostic) -> tuple[str, str, str]:
    """The head, source line and caret line of ``d``'s rendering."""
    out = d.format().split("\n")
    assert len(out) >= 3, f"no source line and caret: {d.format()!r}"
    return out[0], out[1], out[2]


def cli_errors(capsys, path) -> list[str]:
    """The lines ``kernc compile path`` writes to stderr (it must fail with exit code 1)."""
    assert main(["compile", str(path), "-o", os.devnull]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.rstrip("\n").split("\n")


# -- long lines ------------------------------------------------------------------------------------

LONG = "".join(f"w{i:05d} " for i in range(2000))  # 14,000 characters, every window distinct


@pytest.mark.parametrize("col", [1, 2, 30, 58, 61, 62, 63, 100, 121, 500, len(LONG) // 2, len(LONG) - 200,
                                 len(LONG) - 61, len(LONG) - 60, len(LONG) - 59, len(LONG) - 1, len(LONG),
                                 len(LONG) + 1])
def test_a_long_line_is_a_window_around_the_caret(col):
    d = Diagnostic("boom", SourceLocation("l.kern", 2, col), source="kernel\n" + LONG + "\n}\n")
    head, text, caret = shown(d)
    assert head == f"l.kern:2:{col}: error: boom"
    assert len(text) <= MAX_SHOWN and len(caret) <= MAX_SHOWN + 1
    start = window_start(text, caret, LONG, col)
    at = caret_column(caret)
    # the caret has context on both sides unless it is near an end of the line
    assert at - 1 >= min(col - 1, 50) and len(text) - at >= min(len(LONG) - col, 50)
    assert (start == 0) == (col <= 61)  # the head of the line while the caret is in its first half


def test_caret_at_the_start_middle_and_end_of_a_long_line():
    d = Diagnostic("boom", SourceLocation("l.kern", 1, 1), source=LONG)
    assert shown(d)[1:] == (LONG[:117] + "...", "^")
    mid = len(LONG) // 2  # the 0-based index of the character under the caret
    d = Diagnostic("boom", SourceLocation("l.kern", 1, mid + 1), source=LONG)
    assert shown(d)[1:] == ("..." + LONG[mid - 57: mid + 57] + "...", " " * 60 + "^")
    d = Diagnostic("boom", SourceLocation("l.kern", 1, len(LONG)), source=LONG)
    assert shown(d)[1:] == ("..." + LONG[-117:], " " * 119 + "^")
    d = Diagnostic("boom", SourceLocation("l.kern", 1, len(LONG) + 1), source=LONG)  # just past the end
    assert shown(d)[1:] == ("..." + LONG[-117:], " " * 120 + "^")


@pytest.mark.parametrize("line", ["", "x", "kernel k() over n { }", "y" * 119, "z" * 120, "\tlet x = 1;\t"])
def test_a_short_line_is_shown_whole(line):
    for col in sorted({1, len(line) // 2 + 1, max(len(line), 1), len(line) + 1}):
        d = Diagnostic("boom", SourceLocation("s.kern", 1, col), source=line + "\n")
        assert d.format() == f"s.kern:1:{col}: error: boom\n{line.expandtabs(1)}\n" + " " * (col - 1) + "^"


def test_tabs_and_multibyte_characters_in_a_long_line_are_one_column_each():
    line = "\t/* caf\u00e9 \u20ac \U0001F600 */" * 400 + "let x = @;"  # the error at the '@'
    col = line.index("@") + 1
    d = Diagnostic("boom", SourceLocation("t.kern", 1, col), source=line)
    _, text, caret = shown(d)
    window_start(text, caret, line.expandtabs(1), col)
    assert text[caret_column(caret) - 1] == "@" and "\t" not in text


def test_notes_on_long_lines_are_windows_too():
    note = Diagnostic("declared here", SourceLocation("n.kern", 1, 7000), severity="note", source=LONG)
    d = Diagnostic("boom", SourceLocation("n.kern", 1, 3), source=LONG, notes=[note], hint="a hint")
    out = d.format().split("\n")
    assert len(out) == 7 and out[3] == "hint: a hint" and out[4].startswith("n.kern:1:7000: note: ")
    window_start(out[1], out[2], LONG, 3)
    window_start(out[5], out[6], LONG, 7000)


def statements(count: int, at: int, bad: str) -> str:
    """A kernel whose body is ``count`` statements on one line, statement ``at`` being ``bad``."""
    body = " ".join(bad if i == at else f"let v{i} = a * {i}.0;" for i in range(count))
    return "kernel k(a: f32, y: f32[n] write) over n { " + body + " y = a; }\n"


@pytest.mark.parametrize("where", ["start", "middle", "end"])
def test_compile_errors_on_a_long_line(tmp_path, capsys, where):
    """Real errors (an unknown name, checked by the checker) at the start, middle and end of a line
    of some 40,000 characters, through the API and the command line."""
    count = 2000
    at = {"start": 0, "middle": count // 2, "end": count - 1}[where]
    text = statements(count, at, "let bad = nope;")
    line = text.split("\n")[0]
    col = line.index("nope") + 1
    with pytest.raises(CompileError) as info:
        kernc.compile(text, filename="long.kern")
    d = info.value.diagnostics[0]
    head, shown_line, caret = shown(d)
    assert head.startswith(f"long.kern:1:{col}: error: ") and "nope" in head
    start = window_start(shown_line, caret, line, col)
    assert shown_line[caret_column(caret) - 1:].startswith("nope")
    assert (start == 0) == (where == "start") and shown_line.endswith("...") == (where != "end")
    assert len(str(info.value)) < 1000
    src = tmp_path / "long.kern"
    src.write_text(text)
    err = cli_errors(capsys, src)
    assert err[0] == f"{src}:1:{col}: error: " + head.split(": error: ", 1)[1]
    assert err[1:3] == [shown_line, caret]
    assert sum(map(len, err)) < 1000


def test_the_reported_800_kb_line_prints_a_few_hundred_bytes(tmp_path):
    """The report: `y = x + x + ... ` (200,000 terms) on one line printed the whole 800 KB line
    under 'nested too deeply'. A shorter line (the same error; parsing 800 KB takes seconds in
    lark) through the real command line."""
    text = "kernel k(x: f32[n] read, y: f32[n] write) over n { y = x" + " + x" * 5000 + "; }\n"
    src = tmp_path / "h.kern"
    src.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "kernc", "compile", str(src), "-o", os.devnull],
                          capture_output=True, text=True, encoding="utf-8", timeout=120,
                          env={**os.environ, "KERNC_ALWAYS_COMPILE": "1"})
    assert proc.returncode == 1, proc.stderr[-2000:]
    err = proc.stderr.rstrip("\n").split("\n")
    assert len(proc.stderr) < 600 and len(err) == 3, proc.stderr[:2000]
    assert err[0] == f"{src}:1:54: error: the program is nested too deeply for kernc (a very long " \
                     "expression or deeply nested blocks); split it with 'let' bindings"
    assert err[1] == text[:117] + "..."
    assert err[2] == " " * 53 + "^"


# -- files that are not UTF-8 ----------------------------------------------------------------------

def test_the_reported_file_shows_its_line_and_a_caret(tmp_path, capsys):
    src = tmp_path / "u.kern"
    src.write_bytes(b"kernel k() over n { } // \xff\n")
    assert cli_errors(capsys, src) == [f"{src}:1:26: error: the file is not UTF-8 text (byte 0xff)",
                                       "kernel k() over n { } // " + REPLACEMENT,
                                       " " * 25 + "^"]


@pytest.mark.parametrize("data, line, col, byte, text", [
    # columns count characters: a tab and each multi-byte character are one column, as for the lexer
    (b"kernel k() over n {\n\t// caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 x\xff\xfey\n}\n", 2, 15, 0xff,
     "\t// caf\u00e9 \u20ac \U0001F600 x" + REPLACEMENT * 2 + "y"),
    # a sequence cut short at the end of the file is one U+FFFD
    (b"kernel k() over n { } // \xe2\x82", 1, 26, 0xe2, "kernel k() over n { } // " + REPLACEMENT),
    # a Latin-1 file
    (b"// caf\xe9\nkernel k() over n {}\n", 1, 7, 0xe9, "// caf" + REPLACEMENT),
    # a UTF-16 file (its byte order mark is the first bad byte)
    ("kernel".encode("utf-16"), 1, 1, 0xff, REPLACEMENT * 2 + "k\x00e\x00r\x00n\x00e\x00l\x00"),
    # a byte order mark is dropped, as when the file is UTF-8: it is no column (the message named
    # the byte at the wrong offset, one of the mark's own: 'byte 0xbf')
    (b"\xef\xbb\xbfab\xff\n", 1, 3, 0xff, "ab" + REPLACEMENT),
    # a line ending "\r\n": the "\r" is not shown
    (b"kernel k() over n {\r\n  // \x80\r\n}\r\n", 2, 6, 0x80, "  // " + REPLACEMENT),
], ids=["tab-and-multibyte", "cut-short-at-eof", "latin1", "utf16", "byte-order-mark", "crlf"])
def test_not_utf8_source_line_and_caret(tmp_path, capsys, data, line, col, byte, text):
    src = tmp_path / "bad.kern"
    src.write_bytes(data)
    head = f"{src}:{line}:{col}: error: the file is not UTF-8 text (byte 0x{byte:02x})"
    shown_text = text.expandtabs(1).replace("\x00", " ")  # control characters show as spaces
    assert cli_errors(capsys, src) == [head, shown_text, " " * (col - 1) + "^"]
    assert shown_text[col - 1] == REPLACEMENT
    # the Python API reports the same error the same way
    with pytest.raises(CompileError) as info:
        kernc.compile_file(src)
    (d,) = info.value.diagnostics
    assert d.format().split("\n") == [head, shown_text, " " * (col - 1) + "^"]
    assert d.source == data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace")


def test_not_utf8_standard_input_shows_its_line_and_a_caret(monkeypatch, capsys):
    data = b"kernel k(x: f32[n] write) over n { x = 1.0; } // \xc3\xa9\xff\n"
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape")
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["compile", "-", "-o", os.devnull]) == 1
    err = capsys.readouterr().err.rstrip("\n").split("\n")
    assert err == ["-:1:51: error: the input is not UTF-8 text (byte 0xff)",
                   "kernel k(x: f32[n] write) over n { x = 1.0; } // \u00e9" + REPLACEMENT,
                   " " * 50 + "^"]


def test_not_utf8_on_a_long_line_is_a_window(tmp_path, capsys):
    data = b"kernel k() over n { } // " + b"\xc3\xa9" * 5000 + b"\xff" + b"x" * 5000 + b"\n"
    src = tmp_path / "w.kern"
    src.write_bytes(data)
    err = cli_errors(capsys, src)
    col = 25 + 5000 + 1
    assert err[0] == f"{src}:1:{col}: error: the file is not UTF-8 text (byte 0xff)"
    line = data.decode("utf-8", "replace").rstrip("\n")
    window_start(err[1], err[2], line, col)
    assert err[1][caret_column(err[2]) - 1] == REPLACEMENT and len(err) == 3


def test_a_huge_name_is_cut_in_the_message_and_the_hint():
    """The source line was windowed, but "unknown name '<800 KB>'" (and a did-you-mean hint that
    repeats a long name) still printed the whole name."""
    name = "a" * 200_000
    with pytest.raises(CompileError) as info:
        kernc.compile(f"kernel k(x: f32[n] read, y: f32[n] write) over n {{ let {name} = x; y = {name}b; }}")
    text = str(info.value)
    assert len(text) < 1500, len(text)
    assert f"unknown name '{'a' * 100}...(199871 more characters)...{'a' * 29}b'" in text
    d = info.value.diagnostics[0]
    assert d.message.startswith(f"unknown name '{name}b'")  # the diagnostic keeps the whole name


@pytest.mark.parametrize("raw", ["\r", "\x1b[2J", "\x0c", "\x7f", "\x85"])
def test_control_characters_of_the_line_are_shown_as_spaces(raw):
    """A file with lone carriage returns (old Mac line ends) printed them raw, which garbled the
    terminal; an escape sequence could do worse. Each control character is one space (one column)."""
    src = f"kernel k(x: f32[n] read, y: f32[n] write) over n {{{raw} y = q; }}"
    with pytest.raises(CompileError) as info:
        kernc.compile(src, filename="c.kern")
    d = info.value.diagnostics[0]
    head, line, caret = shown(d)
    assert line == "".join(" " if ord(c) < 32 or 0x7f <= ord(c) <= 0x9f else c for c in src)
    assert caret.index("^") == d.location.column - 1
    # whitespace to the lexer (\r, \f): the error is the unknown name, the caret under it
    if raw in ("\r", "\x0c"):
        assert line[caret.index("^")] == "q"
    else:  # any other control character is an unexpected character, the caret under its space
        assert "unexpected character" in d.message and line[caret.index("^")] == " "


@pytest.mark.parametrize("mark", ["\u202e", "\u2066", "\u200f", "\u061c"])
def test_bidirectional_controls_of_the_line_are_shown_as_spaces(mark):
    """U+202E and friends reorder what a terminal shows ("Trojan Source"): shown as spaces."""
    src = f"kernel k(x: f32[n] read, y: f32[n] write) over n {{ y = x + {mark}1.0; }}"
    with pytest.raises(CompileError) as info:
        kernc.compile(src, filename="b.kern")
    head, line, caret = shown(info.value.diagnostics[0])
    assert line == src.replace(mark, " ") and caret.index("^") == src.index(mark)


def test_control_characters_of_a_file_name_are_escaped(tmp_path, capsys):
    """A file name with an escape sequence coloured the terminal; a newline split the location."""
    src = tmp_path / "esc\x1b[31mna\nme.kern"
    src.write_text("kernel k(x: f32[n] read, y: f32[n] write) over n { y = q; }")
    assert main(["check", str(src)]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[0].startswith(f"{tmp_path}/esc\\x1b[31mna\\nme.kern:1:56: error: unknown name 'q'")
    assert "\x1b" not in err


def test_two_long_names_that_differ_at_the_end_still_differ_when_cut():
    name = "a" * 300
    with pytest.raises(CompileError) as info:
        kernc.compile(f"kernel k(x: f32[n] read, y: f32[n] write) over n {{ let {name}a = x; y = {name}b; }}")
    text = str(info.value).splitlines()[0]
    assert "...(171 more characters)..." + "a" * 29 + "b'" in text
    assert "did you mean '" + "a" * 100 + "...(171 more characters)..." + "a" * 30 + "'" in text
