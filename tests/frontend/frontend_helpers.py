"""Shared helpers of the frontend tests (a plain module, not a conftest: tests/conftest.py owns that name)."""

from __future__ import annotations

import pathlib

import pytest

from kernc.support.errors import CompileError
from kernc.frontend import compile_to_kern
from kernc.support.mlir import ir

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def compile_text(src: str, filename: str = "t.kern"):
    """(context, module) for ``src``."""
    ctx = ir.Context()
    return ctx, compile_to_kern(src, filename, ctx)


def error_lines(src: str, filename: str = "t.kern") -> list[str]:
    """The ``file:line:col: error: message`` lines of the diagnostics ``src`` produces."""
    with pytest.raises(CompileError) as info:
        compile_text(src, filename)
    return [d.format().splitlines()[0] for d in info.value.diagnostics]
