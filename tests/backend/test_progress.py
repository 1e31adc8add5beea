"""The progress bar of long CPU-interpreter runs (``backend/progress.py``): fed by the
interpreter's per-batch callback, shown only on a terminal after two seconds, never under pytest,
in a pipe or with ``progress=False`` / ``kernc run --quiet``."""

from __future__ import annotations

import io

import numpy as np
import pytest

from conftest import compiled_example
from kernc.backend.interpreter import launch as interp
from kernc.backend import progress


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_the_interpreter_reports_each_batch(monkeypatch):
    monkeypatch.setattr(interp, "MAX_LANES_PER_BATCH", 512)  # 2 blocks of 256 per batch
    mod = compiled_example("saxpy")
    calls = []
    kernel = mod.saxpy
    n = 256 * 5
    x, y = np.ones(n, np.float32), np.ones(n, np.float32)
    from kernc.backend import binding, cpu

    bound = binding.bind(kernel.signature, (2.0, x, y), {}, cpu.is_host_array, "cpu")
    cpu.launch(mod._interpreter(), bound, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(2, 5), (4, 5), (5, 5)]
    assert np.all(y == 3.0)


def test_bar_appears_only_after_the_delay():
    now = [0.0]
    out = Tty()
    bar = progress.ProgressBar("saxpy", stream=out, delay=2.0, clock=lambda: now[0])
    now[0] = 1.0
    bar(10, 100)
    assert bar.bar is None and out.getvalue() == ""  # a short run shows nothing
    now[0] = 2.5
    bar(40, 100)
    assert bar.bar is not None and bar.bar.n == 40
    bar(100, 100)
    assert bar.bar.n == 100
    bar.close()
    assert "saxpy" in out.getvalue() and "block" in out.getvalue()


def test_a_run_that_ends_before_the_delay_never_shows_one():
    now = [0.0]
    bar = progress.ProgressBar("k", stream=Tty(), delay=2.0, clock=lambda: now[0])
    now[0] = 5.0
    bar(100, 100)  # the last batch: nothing left to show
    assert bar.bar is None


def test_never_in_pipes_tests_or_when_off(monkeypatch):
    assert progress.progress_bar("k") is None  # under pytest
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    assert progress.wanted(Tty()) is True
    assert progress.wanted(io.StringIO()) is False  # a pipe or a file
    monkeypatch.setattr(progress.sys, "stderr", Tty())
    assert isinstance(progress.progress_bar("k"), progress.ProgressBar)
    assert progress.progress_bar("k", enabled=False) is None


@pytest.mark.parametrize("flag", [False, None])
def test_launch_passes_the_choice(monkeypatch, flag):
    seen = []
    monkeypatch.setattr("kernc.api.progress_bar", lambda desc, enabled: seen.append((desc, enabled)))
    mod = compiled_example("saxpy")
    mod.saxpy.launch((2.0, np.ones(4, np.float32), np.ones(4, np.float32)), {}, "cpu", progress=flag)
    assert seen == [("saxpy", flag)]
