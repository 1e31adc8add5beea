"""``bench/histogram.py``: the histogram rows of ``python -m bench`` on the CPU counters (the issue's
target: 2^20 equal bytes exact with at most n/16 global atomics), their target entry and text, and
the GPU row's note without a device."""

from __future__ import annotations

import functools

import pytest

from conftest import EXAMPLES
from kernc.backend import cuda
from kernc.bench import histogram


@functools.cache
def measured():
    return histogram.traffic(EXAMPLES)


def test_counters_meet_the_target_and_beat_no_privatize():
    sec = measured()
    rows = {(r["pattern"], r["privatize"]): r for r in sec["rows"]}
    n = histogram.CPU_N
    assert sec["n"] == n and all(r["exact"] for r in rows.values())
    assert rows["equal", True]["global_atomics"] == n // 4096  # one bin per block of 4096 items
    assert rows["random", True]["global_atomics"] <= n // 16
    assert rows["equal", False]["global_atomics"] == rows["random", False]["global_atomics"] == n
    (t,) = histogram.targets({"histogram": sec})
    assert t["status"] == "PASS" and t["measured"] == 1 / 4096


def test_a_wrong_histogram_fails_the_target():
    sec = measured()
    bad = {"n": sec["n"], "rows": [dict(r, exact=False) for r in sec["rows"]]}
    assert histogram.targets({"histogram": bad})[0]["status"] == "FAIL"
    assert histogram.targets({})[0]["status"] == "n/a"


def test_render_names_both_builds_and_the_gpu_note():
    sec = dict(measured(), gpu={"available": False, "note": "no usable CUDA device: not measured"})
    results = {"histogram": sec, "targets": histogram.targets({"histogram": sec})}
    text = "\n".join(histogram.render(results))
    assert "1048576 equal bytes, privatized: 256 global atomics = 0.0002441 per item" in text
    assert "1048576 equal bytes, --no-privatize: 1048576 global atomics = 1 per item" in text
    assert "exact: PASS" in text and "GPU: no usable CUDA device" in text


@pytest.mark.skipif(cuda.available(), reason="a GPU is present: the row is measured (tests/gpu)")
def test_gpu_row_skips_without_a_device():
    g = histogram.gpu_run(EXAMPLES, "bench/cuda", True, 1)
    assert g["available"] is False and "no usable CUDA device" in g["note"]


@pytest.mark.gpu
def test_gpu_row_on_a_device():
    import os

    from conftest import ROOT

    g = histogram.gpu_run(EXAMPLES, os.path.join(ROOT, "bench", "cuda"), True, 3)
    assert "error" not in g, g
    assert all(v["ms"] > 0 for v in g["variants"].values())
