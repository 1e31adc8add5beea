"""The interpreter's own error class."""

from __future__ import annotations

from kernc.support.errors import KerncRuntimeError


class InterpreterUnsupportedError(KerncRuntimeError, NotImplementedError):
    """The IR uses an op, type or attribute the CPU interpreter does not implement."""
