"""``kernc compile --color auto|always|never`` (``kernc/highlight.py``: the mlir-pygments lexer for
IR, Pygments' PTX lexer) and ``kernc run --quiet`` (no progress bar)."""

from __future__ import annotations

import io
import os
import re

import pytest

from kernc import highlight
from kernc.cli import main

pytest.importorskip("mlir_pygments")
SAXPY = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "saxpy.kern")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


class Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("stage", ["kern", "gpu", "ptx"])
def test_always_colours_and_only_adds_escapes(capsys, stage):
    assert main(["compile", SAXPY, "--emit", stage, "--color", "never"]) == 0
    plain = capsys.readouterr().out
    assert main(["compile", SAXPY, "--emit", stage, "--color", "always"]) == 0
    colored = capsys.readouterr().out
    assert "\x1b[" not in plain and "\x1b[" in colored
    assert ANSI.sub("", colored).rstrip("\n") == plain.rstrip("\n")


def test_auto_is_plain_in_a_pipe_and_in_files(capsys, tmp_path):
    assert main(["compile", SAXPY, "--emit", "gpu"]) == 0  # captured: not a terminal
    assert "\x1b[" not in capsys.readouterr().out
    out = tmp_path / "saxpy.mlir"
    assert main(["compile", SAXPY, "--emit", "gpu", "--color", "always", "-o", str(out)]) == 0
    assert "\x1b[" not in out.read_text()


def test_no_color_and_dumb_terminals():
    tty = Tty()
    assert highlight.use_color("auto", None, tty, {}) is True
    assert highlight.use_color("auto", "-", tty, {"NO_COLOR": "1"}) is False
    assert highlight.use_color("auto", None, tty, {"TERM": "dumb"}) is False
    assert highlight.use_color("always", None, io.StringIO(), {"NO_COLOR": "1"}) is True  # the flag wins
    assert highlight.use_color("never", None, tty, {}) is False
    assert highlight.use_color("always", "out.ptx", tty, {}) is False
    assert highlight.colorize("Program\n", "ast") == "Program\n"  # the AST dump stays plain


def test_run_quiet_turns_the_bar_off(monkeypatch, tmp_path):
    import numpy as np

    seen = []
    monkeypatch.setattr("kernc.api.progress_bar", lambda desc, enabled: seen.append(enabled))
    np.save(tmp_path / "x.npy", np.ones(4, np.float32))
    np.save(tmp_path / "y.npy", np.ones(4, np.float32))
    common = ["run", SAXPY, "--input", "a=2", "--input", f"x=@{tmp_path / 'x.npy'}",
              "--input", f"y=@{tmp_path / 'y.npy'}", "--output-dir", str(tmp_path)]
    assert main(common + ["--quiet"]) == 0
    assert main(common) == 0
    assert seen == [False, None]
