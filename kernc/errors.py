"""kernc's exception types and source diagnostics.

A leaf module (it imports nothing from kernc), so every stage -- frontend, dialect, passes, backend --
raises the same types without reaching upstream.

- :class:`Diagnostic` is one located message, printed as ``file:line:col: error: message`` followed by
  the source line and a caret under the column (the format of clang and MLIR).
- :class:`CompileError` carries one or more diagnostics; the CLI prints them and exits with code 1.
- :class:`KerncLaunchError` is a bad kernel launch (wrong dtype, shape, argument count, ...); it names
  the parameter.
- :class:`KerncRuntimeError` is a fault found while a kernel runs on the CPU interpreter (an
  out-of-bounds access names the buffer, the thread and the index).
- :class:`InternalCompilerError` is a bug in kernc itself; the CLI exits with code 3.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
        head = f"{self.severity}: {self.message}"
        lines = [f"{self.location}: {head}" if self.location else head]
        if self.location and self.source is not None:
            # only "\n" ends a line, as for the lexer (str.splitlines also breaks at \f, \v, \r, ...)
            src_lines = [ln.rstrip("\r") for ln in self.source.split("\n")]
            if 1 <= self.location.line <= len(src_lines):
                text = src_lines[self.location.line - 1].expandtabs(1)
                lines.append(text)
                lines.append(" " * max(self.location.column - 1, 0) + "^")
        if self.hint:
            lines.append(f"hint: {self.hint}")
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
