"""``stats=False`` on a kernel call: the CPU interpreter skips its traffic counters, the results
are the same and ``result.stats`` is ``None``; a kernel argument named ``stats`` is still that
argument."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kernc
from kernc.support.errors import KerncLaunchError

SAXPY = "kernel saxpy(a: f32, x: f32[n] read, y: f32[n] add) over n { y += a * x; }"


def test_stats_false_gives_the_same_results_without_counters():
    mod = kernc.compile(SAXPY)
    x = np.arange(1000, dtype=np.float32)
    y1, y2 = np.ones(1000, np.float32), np.ones(1000, np.float32)
    on = mod.saxpy(2.0, x, y1)
    off = mod.saxpy(2.0, x, y2, stats=False)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(y1, 1 + 2 * x)
    assert off.stats is None and off.device == "cpu" and off.problem_size == 1000
    assert on.stats.global_load_requests == 2 * 32 and on.stats.global_store_requests == 32  # 1000 / 32 warps
    assert mod.saxpy(2.0, x, y1, stats=True).stats == on.stats
    assert mod.saxpy.launch((2.0, x, y1), {}, stats=False).stats is None


def test_stats_false_on_an_empty_problem():
    mod = kernc.compile(SAXPY)
    assert mod.saxpy(1.0, np.zeros(0, np.float32), np.zeros(0, np.float32), stats=False).stats is None
    assert mod.saxpy(1.0, np.zeros(0, np.float32), np.zeros(0, np.float32)).stats.threads == 0


def test_stats_must_be_a_bool():
    mod = kernc.compile(SAXPY)
    with pytest.raises(KerncLaunchError, match="stats must be True or False"):
        mod.saxpy(1.0, np.zeros(4, np.float32), np.zeros(4, np.float32), stats="no")


def test_an_argument_named_stats_is_the_argument():
    mod = kernc.compile("kernel k(stats: f32[n] read, y: f32[n] write) over n { y = stats; }")
    s = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    res = mod.k(y=y, stats=s)
    np.testing.assert_array_equal(y, s)
    assert res.stats is not None  # counted: `stats=` was the kernel's argument


def test_the_unstaged_fallback_passes_stats_on():
    """A transpose whose tiles would be mostly empty runs the kernel compiled without staging; the
    choice of counters goes with it."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    mod = kernc.compile_file(os.path.join(root, "examples", "transpose.kern"))
    a = np.arange(3 * 500, dtype=np.float32).reshape(3, 500)
    b = np.zeros((500, 3), np.float32)
    res = mod.transpose(a, b, stats=False)
    np.testing.assert_array_equal(b, a.T)
    assert res.staged is False and res.stats is None
