"""The CPU-interpreter section of ``python -m bench`` (bench/interp.py): its measurements check
their results and produce ratios; its targets and table follow them."""

from __future__ import annotations

import os

import pytest

from conftest import ROOT
from kernc.bench import interp

EXAMPLES = os.path.join(ROOT, "examples")


def test_measurements_at_small_sizes():
    s = interp._saxpy(EXAMPLES, 1, n=4096)
    g = interp._shared_gather(1, n=4096)
    t = interp._shared_indices(1, n=1 << 16)
    for row in (s, g):
        assert row["kernc_ms"] > 0 and row["kernc_no_stats_ms"] > 0 and row["reference_ms"] > 0
        assert row["ratio"] == row["kernc_ms"] / row["reference_ms"]
    assert g["prebuilt_table_ms"] > 0
    # the table and the input: 4 + 3 * 4 bytes per index, plus the counts
    assert t["arrays_mib"] * 2**20 == (1 << 16) * 16 + (1 << 16) // 256 * 4
    assert 0 < t["peak_to_arrays"] < 3 and t["ratio"] > 0


def test_a_wrong_result_is_an_error_row(monkeypatch):
    import kernc

    real = kernc.compile
    monkeypatch.setattr(kernc, "compile", lambda src, **kw: real(src.replace("2.0 * x", "x"), **kw))
    with pytest.raises(AssertionError, match="shared.I. gather: the result differs from x.i. . 2"):
        interp._shared_gather(1, n=4096)

    def boom(*a):
        raise AssertionError("saxpy: the result differs from y + a * x")

    for job in ("_transpose", "_shared_gather", "_conv2d", "_shared_indices", "_collectives"):
        monkeypatch.setattr(interp, job, lambda *a: {})
    monkeypatch.setattr(interp, "_saxpy", boom)
    out = interp.run(EXAMPLES, quick=True)
    assert out["saxpy"] == {"error": "AssertionError: saxpy: the result differs from y + a * x"}
    assert out["transpose"] == {} and out["reps"] == 1


def _results(**rows):
    return {"interpreter": {"reps": 5, **rows}}


def test_targets_and_table():
    row = {"label": "saxpy", "size": "2^20", "reference": "y += a * x", "kernc_ms": 8.0, "kernc_no_stats_ms": 6.0,
           "reference_ms": 1.0, "ratio": 8.0, "ratio_no_stats": 6.0}
    slow = dict(row, ratio=40.0, kernc_ms=40.0)
    res = _results(saxpy=row, shared_gather=slow, transpose={"error": "RuntimeError: boom"},
                   shared_indices={"label": "shared_indices(idx, 256)", "size": "2^22", "reference": "np.sort(idx)",
                                   "kernc_ms": 90.0, "reference_ms": 30.0, "ratio": 3.0, "peak_mib": 50.0,
                                   "arrays_mib": 64.0, "peak_to_arrays": 50 / 64, "peak_to_input": 50 / 16})
    res["targets"] = interp.targets(res)
    status = {t["target"]: t["status"] for t in res["targets"]}
    assert status == {"interp_transpose": "n/a", "interp_shared_gather": "FAIL", "interp_saxpy": "PASS",
                      "shared_indices_time": "PASS", "shared_indices_memory": "PASS"}
    text = "\n".join(interp.render(res))
    assert "transpose: error: RuntimeError: boom" in text
    assert "ratio 8.0x / 6.0x; target <= 10x PASS" in text and "ratio 40.0x / 6.0x; target <= 30x FAIL" in text
    assert "peak 50 MiB = 0.78x the index array and tables" in text
    assert interp.targets({}) == [] and interp.render({}) == []  # results from before this section


def test_runner_lists_the_section():
    from kernc.bench import runner

    res = {"meta": {"kernc_version": "0", "quick": True, "arch": "sm_90", "reps_inprocess": 1,
                    "reps_subprocess": 1, "nvcc": None, "ptxas": None, "sass_tool": None},
           "compile": {}, "code_quality": {}, "memory": {}, "gpu": {"available": None},
           **_results(saxpy={"label": "saxpy", "size": "2^20", "reference": "y += a * x", "kernc_ms": 30.0,
                             "kernc_no_stats_ms": 6.0, "reference_ms": 1.0, "ratio": 30.0, "ratio_no_stats": 6.0})}
    res["targets"] = runner.evaluate_targets(res)
    text = runner.render(res)
    assert "CPU interpreter speed" in text
    assert "FAIL CPU interpreter: saxpy 2^20 <= 10x y += a * x: saxpy measured 30 x numpy" in text
