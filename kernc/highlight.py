"""Colour for ``kernc compile --emit`` output on a terminal (``--color auto|always|never``).

The IR stages (``kern``, ``gpu``, ``llvm``: MLIR text) are highlighted with the ``mlir`` lexer of
the ``mlir-pygments`` package, PTX with Pygments' own ``ptx`` lexer; the AST dump stays plain.
``auto`` (the default) colours only output written to standard output when that is a terminal
whose ``TERM`` is not ``dumb`` and ``NO_COLOR`` is not set (https://no-color.org); ``always``
colours whatever the terminal (a command-line flag overrides ``NO_COLOR``), ``never`` never. An
output file (``-o FILE``) is never coloured. Pygments is imported only when colour is on, so a
``kernc compile`` answered from the compile cache stays as quick as before.
"""

from __future__ import annotations

import os
import sys

#: The Pygments lexer of each ``--emit`` stage (stages not listed are never coloured).
STAGE_LEXERS = {"kern": "mlir", "gpu": "mlir", "llvm": "mlir", "ptx": "ptx"}
COLOR_CHOICES = ("auto", "always", "never")


def use_color(mode: str, output: str | None, stream=None, environ=None) -> bool:
    """Whether output for ``-o output`` (``None``/``-``: standard output) is coloured under
    ``--color mode``."""
    if mode == "never" or output not in (None, "-"):
        return False
    if mode == "always":
        return True
    environ = os.environ if environ is None else environ
    if environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def colorize(text: str, stage: str, environ=None) -> str:
    """``text`` of ``stage`` with ANSI colours (256 colours when ``TERM`` says so), or unchanged
    for a stage without a lexer or when Pygments or the lexer is not installed."""
    name = STAGE_LEXERS.get(stage)
    if name is None:
        return text
    try:
        from pygments import highlight
        from pygments.formatters import Terminal256Formatter, TerminalFormatter
        from pygments.lexers import get_lexer_by_name
        from pygments.util import ClassNotFound
    except ImportError:
        return text
    try:
        lexer = get_lexer_by_name(name)
    except ClassNotFound:  # mlir-pygments not installed
        return text
    environ = os.environ if environ is None else environ
    formatter = Terminal256Formatter() if "256" in environ.get("TERM", "") else TerminalFormatter()
    return highlight(text, lexer, formatter)


def for_output(text: str, stage: str, mode: str, output: str | None) -> str:
    """``text`` as ``kernc compile`` writes it: coloured when :func:`use_color` says so."""
    return colorize(text, stage) if use_color(mode, output) else text


__all__ = ["use_color", "colorize", "for_output", "STAGE_LEXERS", "COLOR_CHOICES"]
