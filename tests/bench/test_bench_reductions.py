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


def test_gemm_f32_against_cublas_targets():
    """The f32 gemm rows (issue 20): at least 80% of cuBLAS SGEMM's speed at 4096, never under 50% at
    any size >= 512 (a size under 512 does not count), and a size that failed fails the target."""
    def row(kernc_ms, cupy_ms):
        return {"kernc_ms": kernc_ms, "cupy_ms": cupy_ms, "kernc_gflops": 1.0, "cupy_gflops": 1.0,
                "ratio_kernc_to_cupy": cupy_ms / kernc_ms}

    sizes = {256: row(9.0, 1.0), 512: row(1.9, 1.0), 4096: row(1.2, 1.0)}
    res = {"compile": {}, "code_quality": {}, "gpu": {"gemm_f32_tiled": {"arch": "sm_90", "sizes": sizes}}}
    by = {t["target"]: t for t in runner.evaluate_targets(res)}
    assert by["gemm_f32_vs_cublas"]["status"] == "PASS" and by["gemm_f32_vs_cublas"]["measured"] == 1.2
    assert by["gemm_f32_min_vs_cublas"]["status"] == "PASS" and by["gemm_f32_min_vs_cublas"]["measured"] == 1.9
    sizes[4096] = row(1.3, 1.0)
    sizes[1000] = row(2.1, 1.0)
    by = {t["target"]: t for t in runner.evaluate_targets(res)}
    assert by["gemm_f32_vs_cublas"]["status"] == "FAIL" and by["gemm_f32_min_vs_cublas"]["status"] == "FAIL"
    sizes[1000] = {"error": "RuntimeError: off"}
    sizes[4096] = row(1.0, 1.0)
    by = {t["target"]: t for t in runner.evaluate_targets(res)}
    assert by["gemm_f32_vs_cublas"]["status"] == "PASS" and by["gemm_f32_min_vs_cublas"]["status"] == "FAIL"
    assert by["gemm_f32_vs_cublas"]["status"] == "PASS"
    assert runner.evaluate_targets({"compile": {}, "code_quality": {}, "gpu": {}})  # no GPU: n/a rows
    none = {t["target"]: t for t in runner.evaluate_targets({"compile": {}, "code_quality": {}, "gpu": {}})}
    assert none["gemm_f32_vs_cublas"]["status"] == "n/a" and none["gemm_f32_min_vs_cublas"]["status"] == "n/a"
