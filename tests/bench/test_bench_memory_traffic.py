"""The memory-traffic sections of the benchmarks (``bench.measure.accessor_traffic`` and
``view_traffic``): one row per accessor of ``bench/kern/accessors.kern``, and the transpose and the
NCHW -> NHWC permute with and without ``kern-coalesce-views``.

The numbers are the CPU interpreter's counters, deterministic for the fixed seeds, so each row's
comment in the JSON (what the accessor or the pass should show) is asserted here: coalesced views
at the ideal 4 sectors per store request and the naive ones far above, ``shared_sum`` with one atomic
per distinct index per block against one per thread for ``atomic`` on the same data, and so on.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import EXAMPLES, ROOT
from kernc.bench import measure, runner

ACCESSORS = os.path.join(ROOT, "bench", "kern", "accessors.kern")
KERN_DIR = os.path.join(ROOT, "bench", "kern")
P = 1024  # the --quick size: 4 blocks of 256
NB = P // measure.ACCESSOR_BLOCK


@pytest.fixture(scope="module")
def acc():
    return measure.accessor_traffic(ACCESSORS, P)


@pytest.fixture(scope="module", params=[True, False], ids=["quick", "full"])
def views(request):
    return measure.view_traffic(EXAMPLES, KERN_DIR, quick=request.param)


def test_every_accessor_has_a_row_with_requests(acc):
    assert acc["problem_size"] == P and acc["block"] == 256 and acc["ideal_sectors_per_request"] == 4
    rows = acc["rows"]
    assert list(rows) == list(measure.ACCESSOR_ROWS)
    assert set(rows) >= {"read_sequential", "read_strided", "read_indexed", "read_shared", "read_unique",
                         "read_pair", "write_indexed", "add_atomic", "add_shared_sum", "add_sum",
                         "write_block_sum", "add_pair"}
    for name, r in rows.items():
        assert "error" not in r, r
        assert r["comment"] and r["accessor"]
        assert r["global_load_requests"] > 0 and r["global_load_sectors"] >= r["global_load_requests"], name
        assert r["load_sectors_per_request"] > 0
        assert r["load_ratio_to_ideal"] == pytest.approx(r["load_sectors_per_request"] / 4)
        # every kernel produces something: stores or atomics
        assert r["global_store_requests"] + r["global_atomics"] > 0, name
        assert r["global_atomics"] == r["expected_atomics"], (name, r["global_atomics"], r["expected_atomics"])
        assert r["atomics_per_thread"] == pytest.approx(r["global_atomics"] / P)


def test_sequential_and_strided_sectors(acc):
    rows = acc["rows"]
    seq = rows["read_sequential"]
    assert seq["load_sectors_per_request"] == 4.0 and seq["store_sectors_per_request"] == 4.0
    assert seq["global_load_requests"] == P // 32
    assert rows["read_strided"]["load_sectors_per_request"] == 8.0  # stride 2: twice the ideal
    # a random permutation scatters one lane per sector (almost): far above the ideal
    assert rows["write_indexed"]["store_sectors_per_request"] > 16
    assert rows["write_indexed"]["global_atomics"] == 0


def test_shared_sum_issues_fewer_atomics_than_atomic_on_the_same_data(acc):
    rows = acc["rows"]
    atomic, shared_sum = rows["add_atomic"], rows["add_shared_sum"]
    assert atomic["global_atomics"] == P  # one per thread
    # one per distinct index per block: every index has exactly 8 threads, all in one block
    assert shared_sum["global_atomics"] == P // 8
    assert shared_sum["global_atomics"] < atomic["global_atomics"]
    assert shared_sum["shared_requests"] > 0 and atomic["shared_requests"] == 0


def test_shared_loads_fewer_sectors_than_indexed_on_the_same_indices(acc):
    """Fewer x sectors: the table loads are exactly target[t] and unique[b*B + tid] by every thread
    (P / 8 sectors each, all blocks full) for shared, idx[t] (P / 8) for indexed."""
    indexed, shared = acc["rows"]["read_indexed"], acc["rows"]["read_shared"]
    assert shared["global_load_sectors"] - 2 * (P // 8) < indexed["global_load_sectors"] - P // 8
    assert shared["shared_requests"] > 0 and indexed["shared_requests"] == 0


def test_reductions_unique_and_pair(acc):
    rows = acc["rows"]
    assert rows["read_unique"]["global_load_requests"] == NB and rows["read_unique"]["global_load_sectors"] == NB
    assert rows["add_sum"]["global_atomics"] == NB and rows["add_sum"]["global_store_requests"] == 0
    bs = rows["write_block_sum"]
    assert bs["global_atomics"] == 0 and bs["global_store_requests"] == NB and bs["store_sectors_per_request"] == 1
    assert rows["add_pair"]["global_atomics"] == 2 * NB - 1
    assert rows["add_pair"]["store_sectors_per_request"] == 4.0
    # pair reads: each element once per warp plus one block-edge element per block
    pair = rows["read_pair"]
    assert pair["global_load_requests"] == P // 32 + NB
    assert pair["global_load_sectors"] == 4 * (P // 32) + NB
    assert pair["shared_bank_conflicts"] == 0


def test_only_some_accessors(acc):
    few = measure.accessor_traffic(ACCESSORS, P, kernels={"add_atomic", "add_shared_sum"})
    assert list(few["rows"]) == ["add_atomic", "add_shared_sum"]
    assert few["rows"]["add_atomic"]["global_atomics"] == acc["rows"]["add_atomic"]["global_atomics"]


def test_a_wrong_result_is_an_error_row(monkeypatch):
    """A kernel whose output differs from numpy gets ``error`` instead of numbers."""
    real = measure._accessor_cases

    def broken(P, seed):
        cases = real(P, seed)
        args, want, atomics = cases["read_sequential"]
        cases["read_sequential"] = (args, {"y": (want["y"][0] + 1.0, None)}, atomics)
        return cases

    monkeypatch.setattr(measure, "_accessor_cases", broken)
    res = measure.accessor_traffic(ACCESSORS, 64, kernels={"read_sequential", "read_unique"})
    assert "wrong result" in res["rows"]["read_sequential"]["error"]
    assert "error" not in res["rows"]["read_unique"]


def test_coalesced_views_at_the_ideal_and_naive_ones_far_above(views):
    assert set(views) == {"transpose", "permute_nchw_nhwc"}
    for job, e in views.items():
        assert "error" not in e, e
        assert e["problem_size"] == int(np.prod(e["shape"])) and e["comment"]
        c, n = e["variants"]["coalesced"], e["variants"]["naive"]
        assert c["coalesce"] is True and n["coalesce"] is False
        for v in (c, n):
            assert v["global_load_requests"] > 0 and v["global_store_requests"] > 0
            assert v["load_sectors_per_request"] == 4.0  # the reads are along rows on both variants
        assert c["store_sectors_per_request"] == 4.0, job
        assert c["store_ratio_to_ideal"] == 1.0
        assert n["store_sectors_per_request"] > 16, job
        assert c["shared_requests"] > 0 and c["shared_bank_conflicts"] == 0
        assert n["shared_requests"] == 0
        assert e["store_sectors_ratio_naive_to_coalesced"] == pytest.approx(
            n["global_store_sectors"] / c["global_store_sectors"])
        assert e["store_sectors_ratio_naive_to_coalesced"] > 4


def test_views_without_the_transpose_example(tmp_path):
    """An --examples-dir without transpose.kern: that job holds an error, the permute still runs."""
    res = measure.view_traffic(str(tmp_path), KERN_DIR, quick=True)
    assert "error" in res["transpose"]
    assert res["permute_nchw_nhwc"]["variants"]["naive"]["store_sectors_per_request"] > 16


def test_render_memory_sections(acc, views):
    from kernc.bench.runner import evaluate_targets, render

    res = {
        "meta": {"kernc_version": "0", "quick": True, "arch": "sm_90", "reps_inprocess": 1, "reps_subprocess": 1,
                 "nvcc": None, "ptxas": None, "sass_tool": None},
        "compile": {}, "code_quality": {}, "memory": {}, "launch": {}, "gpu": {"available": None, "note": "x"},
        "memory_views": views, "memory_accessors": acc,
    }
    res["targets"] = evaluate_targets(res)
    text = render(res)
    assert "Memory traffic with and without the coalescing pass" in text
    assert "Memory traffic per accessor" in text
    assert "32.00 (8x)" in text  # the naive stores
    for r in acc["rows"].values():
        assert r["accessor"] in text
    assert "add shared_sum(idx)" in text and f"{P // 8} ({P // 8})" in text

    res["memory_views"] = {"transpose": {"shape": [2, 2], "error": "CompileError: boom"}}
    res["memory_accessors"] = {"error": "OSError: gone"}
    text = render(res)
    assert "error: CompileError: boom" in text and "error: OSError: gone" in text


def test_accessor_kernels_file_is_the_one_the_runner_uses():
    assert os.path.samefile(runner.ACCESSORS_KERN, ACCESSORS)
    assert os.path.isdir(runner.KERN_DIR) and os.path.exists(os.path.join(runner.KERN_DIR, "permute.kern"))


def test_shared_vs_indexed_rows_meet_their_targets():
    """``bench.measure.shared_choice_traffic``: every width and pattern has a row, results equal
    indexed's, and both targets (shared <= indexed in sectors and requests everywhere; <= 0.4x
    sectors on 36-byte clustered) pass; the rows render."""
    sv = measure.shared_choice_traffic(256)
    assert len(sv["rows"]) == len(measure.SHARED_CHOICE_WIDTHS) * len(measure.SHARED_CHOICE_PATTERNS) * 2
    assert not any("error" in r for r in sv["rows"])
    targets = {t["target"]: t for t in runner._shared_targets(sv)}
    assert targets["shared_le_indexed"]["status"] == "PASS" and targets["shared_le_indexed"]["measured"] <= 1
    assert targets["shared_clustered_36"]["status"] == "PASS"
    text = "\n".join(runner._render_shared_vs_indexed(sv))
    assert "36 B" in text and "clustered" in text and "staged" in text
