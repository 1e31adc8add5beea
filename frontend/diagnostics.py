"""Diagnostics of the frontend: a located error with its hint and notes, and the "did you mean"
suggestion for a misspelt name.

Every message is a :class:`kernc.errors.Diagnostic` (``file:line:col: error: ...`` with the source
line, a ``hint:`` and ``note:`` lines).
"""

from __future__ import annotations

from typing import Optional

from kernc.support.errors import Diagnostic, SourceLocation


def did_you_mean(name: str, candidates) -> str:
    """``"; did you mean 'x'?"`` for the candidate closest to ``name`` (``difflib.get_close_matches``,
    similarity ratio at least 0.6), or ``""`` when none is that close. Appended to "unknown ..."
    messages; ``candidates`` is any iterable of names (duplicates are fine)."""
    import difflib  # (an error's suggestion: a program without errors does without its import)

    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def error_diagnostic(msg: str, loc: SourceLocation, source: str, hint: Optional[str] = None,
                     note: Optional[tuple] = None) -> Diagnostic:
    """The error ``msg`` at ``loc`` in the program text ``source``, with an optional ``hint`` and an
    optional ``note`` ``(message, location)`` (e.g. "previous definition is here")."""
    notes = []
    if note is not None:
        notes.append(Diagnostic(note[0], note[1], severity="note", source=source))
    return Diagnostic(msg, loc, source=source, hint=hint, notes=notes)


def note_diagnostic(msg: str, loc: SourceLocation, source: str) -> Diagnostic:
    """A note ``msg`` at ``loc`` (appended to an error's ``notes``)."""
    return Diagnostic(msg, loc, severity="note", source=source)
