"""kernc's exception types and source diagnostics (``kernc.support.errors``, public as ``kernc.errors``).

A leaf module (it imports nothing from kernc), so every stage -- frontend, dialect, passes, backend --
raises the same types without reaching upstream.

- :class:`Diagnostic` is one located message, printed as ``file:line:col: error: message`` followed by
  the source line and a caret under the column (the format of clang and MLIR); a line longer than
  :data:`MAX_SHOWN_COLUMNS` is shown as a window around the caret (:func:`source_window`).
- :class:`CompileError` carries one or more diagnostics; the CLI prints them and exits with code 1.
- :class:`KerncLaunchError` is a bad kernel launch (wrong dtype, shape, argument count, ...); it names
  the parameter.
- :class:`KerncRuntimeError` is a fault found while a kernel runs on the CPU interpreter (an
  out-of-bounds access names the buffer, the thread and the index).
- :class:`InternalCompilerError` is a bug in kernc itself; the CLI exits with code 3.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


#: The widest source line a diagnostic shows whole. A longer one (a generated file, a minified
#: expression) is shown as a window of this many characters around the caret, ``...`` marking each
#: end that was cut, as clang does; the diagnostic stays a few lines whatever the line's length.
MAX_SHOWN_COLUMNS = 120

_ELLIPSIS = "..."
#: Control characters (C0 but tab and newline, DEL, C1) and the bidirectional-text controls (which
#: reorder what a terminal shows, "Trojan Source"): shown as spaces in a source line, so that a lone
#: carriage return or an escape sequence in the file cannot garble the terminal; one column each.
#: In a file name they are shown escaped (``\x1b``).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: A name, number or other token this long in a message or hint is cut (an 800 KB identifier made
#: "unknown name '...'" 800 KB long); the source window already bounds the line itself.
MAX_SHOWN_TOKEN = 160
_LONG_TOKEN = re.compile(r"[^\s'\"`]{%d,}" % (MAX_SHOWN_TOKEN + 1))


def _shorten_tokens(text: str) -> str:
    """``text`` with every token over :data:`MAX_SHOWN_TOKEN` characters cut to its first 100 and
    last 30 characters around a count of the rest (two long names that differ at their end still
    look different)."""
    return _LONG_TOKEN.sub(
        lambda m: f"{m.group()[:100]}...({len(m.group()) - 130} more characters)...{m.group()[-30:]}", text)


_CONTROL_OR_LINE_END = re.compile("[\n\t]|" + _CONTROL.pattern)


def _escape_controls(text: str) -> str:
    """``text`` (a file name) with its control characters, tabs and newlines written as escapes
    (``\x1b``, ``\n``, ``\u202e``): the location line stays one line."""
    return _CONTROL_OR_LINE_END.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def source_window(text: str, column: int, width: int = MAX_SHOWN_COLUMNS) -> tuple[str, int]:
    """The part of source line ``text`` to show for a caret at 1-based ``column``, and the caret's
    1-based column in it: ``(text, column)`` itself when ``text`` is at most ``width`` characters,
    else a window of ``width`` characters with ``...`` in place of each cut end and the caret about
    in its middle (at the line's start or end the window is the line's head or tail instead).

    Columns count characters (code points) as the lexer does, so ``text`` is expected with its tabs
    already shown as one space each. A column past the end of the line is taken as just past it."""
    if len(text) <= width:
        return text, column
    dots = len(_ELLIPSIS)
    width = max(width, 2 * dots + 1)
    caret = min(max(column - 1, 0), len(text))  # 0-based; len(text) is just past the last character
    middle = width - 2 * dots  # the text shown between two "..."
    start = caret - middle // 2
    if start <= dots:  # near the start: the head of the line, cut at its end only
        return text[: width - dots] + _ELLIPSIS, caret + 1
    if start + middle >= len(text) - dots:  # near the end: the tail of the line
        start = len(text) - (width - dots)
        return _ELLIPSIS + text[start:], dots + caret - start + 1
    return _ELLIPSIS + text[start: start + middle] + _ELLIPSIS, dots + caret - start + 1


@dataclass(frozen=True)
class SourceLocation:
    """A 1-based ``line``/``column`` position in the file ``filename``."""

    filename: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.column}"


@dataclass
class Diagnostic:
    """One message about the user's source.

    ``severity`` is ``"error"``, ``"warning"`` or ``"note"``; ``source`` is the full text of the file
    (used to print the offending line and a caret); ``notes`` are attached follow-up diagnostics
    (e.g. "declared here"); ``hint`` is printed as ``hint: ...`` after the caret line.
    """

    message: str
    location: SourceLocation | None = None
    severity: str = "error"
    source: str | None = None
    notes: list["Diagnostic"] = field(default_factory=list)
    hint: str | None = None

    def format(self) -> str:
        """Render as ``file:line:col: severity: message``, source line, caret, hint and notes."""
        head = f"{self.severity}: {_shorten_tokens(self.message)}"
        lines = [f"{_escape_controls(str(self.location))}: {head}" if self.location else head]
        if self.location and self.source is not None:
            # only "\n" ends a line, as for the lexer (str.splitlines also breaks at \f, \v, \r, ...);
            # the split stops at the diagnostic's line (a large file is not cut into all its lines)
            line_no = self.location.line
            src_lines = self.source.split("\n", line_no) if line_no >= 1 else []
            if 1 <= line_no <= len(src_lines):
                # a tab is one column for the lexer, so it is shown as one space
                text = src_lines[line_no - 1].rstrip("\r").expandtabs(1)
                column = min(max(self.location.column, 1), len(text) + 1)
                text, column = source_window(text, column)
                lines.append(_CONTROL.sub(" ", text))
                lines.append(" " * (column - 1) + "^")
        if self.hint:
            lines.append(f"hint: {_shorten_tokens(self.hint)}")
        for note in self.notes:
            lines.append(note.format())
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


class KerncError(Exception):
    """Base class of every error kernc raises on purpose."""


class CompileError(KerncError):
    """The user's program is wrong: one or more :class:`Diagnostic` s, all errors found in one run."""

    def __init__(self, diagnostics: "list[Diagnostic] | Diagnostic"):
        if isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics = list(diagnostics)
        super().__init__("\n".join(d.format() for d in self.diagnostics))


class KerncLaunchError(KerncError, ValueError):
    """A kernel was launched with bad arguments; the message names the parameter at fault."""


class KerncRuntimeError(KerncError, RuntimeError):
    """A fault detected while a kernel ran (e.g. an out-of-bounds access on the CPU interpreter)."""


class InternalCompilerError(KerncError):
    """A bug in kernc, not in the user's program (exit code 3 from the CLI)."""
