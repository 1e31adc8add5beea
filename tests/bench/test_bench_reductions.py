"""``bench/reductions.py``: the issue-21 rows of ``python -m bench`` (softmax and layernorm at
64x4096 f32 on the CPU interpreter's counters, and the GPU's share of the HBM peak)."""

from __future__ import annotations

from conftest import EXAMPLES
from kernc.bench import reductions, runner


def test_rows_meet_the_counter_targets_and_render():
    results = {"memory_reductions": reductions.measure(EXAMPLES, quick=True)}
    rows = results["memory_reductions"]
    assert set(rows) == {"softmax", "layernorm"} and not any("error" in r for r in rows.values())
    assert rows["softmax"]["shape"] == [64, 4096]
    status = {t["target"]: t["status"] for t in reductions.targets(results)}
    assert status == {"softmax_sectors": "PASS", "softmax_bytes": "PASS", "layernorm_sectors": "PASS",
                      "layernorm_bytes": "PASS", "softmax_hbm": "n/a", "layernorm_hbm": "n/a"}
    text = "\n".join(reductions.render(results))
    assert "softmax: 8192 load requests, 4.00 sectors per request (target <= 4.5 PASS)" in text
    assert "1.00x the input's" in text


def test_gpu_share_of_the_peak_is_a_target_at_full_size():
    gpu = {"softmax_bandwidth": {"rows": 4096, "variants": {"kernc": {"pct_of_peak": 90.0}}},
           "layernorm_bandwidth": {"rows": 1024, "variants": {"kernc": {"pct_of_peak": 90.0}}}}
    by = {t["target"]: t for t in reductions.targets({"gpu": gpu})}
    assert by["softmax_hbm"]["status"] == "PASS" and abs(by["softmax_hbm"]["measured"] - 100 / 90) < 1e-12
    assert by["layernorm_hbm"]["status"] == "n/a"  # (not the target's 4096x4096)
    gpu["softmax_bandwidth"]["variants"]["kernc"]["pct_of_peak"] = 80.0
    assert {t["target"]: t for t in reductions.targets({"gpu": gpu})}["softmax_hbm"]["status"] == "FAIL"
    assert all(t in [e["target"] for e in runner.evaluate_targets(
        {"compile": {}, "code_quality": {}, "gpu": gpu})] for t in reductions.TARGETS)
