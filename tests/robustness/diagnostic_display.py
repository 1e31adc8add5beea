"""What a diagnostic's source line and caret must look like, checked independently of
``kernc.errors`` (shared by the fuzz tests and ``test_diagnostic_display``).

A line of at most :data:`MAX_SHOWN` characters is shown whole (tabs as one space, as the lexer counts
columns) with the caret under the column. A longer line is shown as a window of at most
:data:`MAX_SHOWN` characters of it, ``...`` in place of each end that was cut, and the caret under
the same character of the window as the column names in the line.
"""

from __future__ import annotations

import re

MAX_SHOWN = 120
DOTS = "..."
#: Shown as one space each: C0 controls but tab and newline, DEL, C1, and the bidirectional-text
#: controls U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069 (they could garble a terminal).
SHOWN_AS_SPACE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def caret_column(caret_line: str) -> int:
    """The 1-based column of the caret in ``caret_line`` (spaces then one ``^``)."""
    assert caret_line.rstrip(" ") == caret_line and caret_line.endswith("^"), repr(caret_line[-40:])
    assert set(caret_line[:-1]) <= {" "}, "the caret line holds something besides spaces and '^'"
    return len(caret_line)


def window_start(shown_line: str, caret_line: str, line: str, col: int) -> int:
    """Check that ``shown_line`` and ``caret_line`` show ``line`` (tabs already one space) with the
    caret at 1-based ``col``; return the index in ``line`` of the first character shown (0 when the
    whole line, or its head, is shown). Control characters of ``line`` are shown as spaces."""
    line = SHOWN_AS_SPACE.sub(" ", line)
    at = caret_column(caret_line)
    if len(line) <= MAX_SHOWN:
        assert shown_line == line, f"shows {shown_line!r}, the line is {line!r}"
        assert at == col, f"caret at {at}, the column is {col}"
        return 0
    assert len(shown_line) <= MAX_SHOWN, f"a window of {len(shown_line)} characters"
    assert at <= MAX_SHOWN + 1, f"the caret line is {at} characters wide"
    for lead in (0, len(DOTS)):
        for trail in (0, len(DOTS)):
            core = shown_line[lead: len(shown_line) - trail]
            start = (col - 1) - (at - 1 - lead)  # the window's first character in the line
            if start < 0 or line[start: start + len(core)] != core:
                continue
            cut_head, cut_tail = start > 0, start + len(core) < len(line)
            if (lead > 0) != cut_head or (trail > 0) != cut_tail:
                continue
            if shown_line[:lead] != DOTS[:lead] or shown_line[len(shown_line) - trail:] != DOTS[:trail]:
                continue
            assert lead <= at - 1 <= lead + len(core) - cut_tail, "the caret is not on the shown text"
            return start
    raise AssertionError(f"{shown_line!r} with the caret at {at} is not a window of the line at column {col}")
