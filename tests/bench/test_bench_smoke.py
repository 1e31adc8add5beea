"""Smoke tests of the benchmarks (``python -m bench --quick``): the run completes, the JSON has the
expected keys and positive numbers. Targets are reported by the bench, never asserted here."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

STATUSES = {"PASS", "FAIL", "n/a"}


@pytest.fixture(scope="module")
def quick_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "results.json"
    proc = subprocess.run([sys.executable, "-m", "bench", "--quick", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


def _positive(x):
    return isinstance(x, (int, float)) and x > 0


def test_quick_run_writes_expected_json(quick_results):
    res, stdout = quick_results
    assert res["schema"] == 2 and res["meta"]["quick"] is True
    assert set(res) >= {"meta", "compile", "code_quality", "memory", "launch", "gpu", "targets"}
    assert list(res["compile"]) == ["saxpy"]
    # host launch preparation without a GPU: saxpy's 4 kernel arguments bound and packed
    assert res["launch"]["kernel_args"] == 4 and _positive(res["launch"]["bind_and_pack_us"])
    assert "Host launch preparation on the CPU" in stdout

    row = res["compile"]["saxpy"]
    assert "error" not in row, row
    for key in ("inprocess_warm_ms", "inprocess_cache_hit_ms", "cli_cold_ms", "cli_cache_hit_ms"):
        assert _positive(row[key]), (key, row)
    # the share of the warm compile spent in LLVM's backend (a part of each compile)
    assert 0 < row["inprocess_warm_llvm_share"] < 1
    assert "of which LLVM backend" in stdout
    assert set(row["ratios_to_nvcc"]) == {"inprocess_warm", "inprocess_cache_hit", "cli_cold", "cli_cache_hit"}
    if res["meta"]["nvcc"]:
        assert _positive(row["nvcc_ptx_ms"])
        assert all(_positive(v) for v in row["ratios_to_nvcc"].values())
    else:
        assert row["nvcc_ptx_ms"] is None

    # code quality at equal FMA contraction: kernc --fmad vs nvcc, kernc vs nvcc --fmad=false
    assert set(res["code_quality"]["saxpy"]) == {"fmad", "no_fmad"}
    for pair, q in res["code_quality"]["saxpy"].items():
        assert "error" not in q, q
        k = q["kernels"]["saxpy"]
        assert _positive(k["kernc"]["registers"]) and k["kernc"]["spill_stores_bytes"] >= 0
        if res["meta"]["nvcc"]:
            assert _positive(k["nvcc"]["registers"]) and _positive(k["ratios"]["registers"])
        if res["meta"]["sass_tool"]:
            assert _positive(k["kernc"]["sass_instructions"])
            if res["meta"]["nvcc"]:
                assert _positive(k["nvcc"]["sass_instructions"])
    sass_targets = {t["pair"] for t in res["targets"] if t["target"] == "sass_instructions"}
    assert sass_targets == {"fmad", "no_fmad"}
    if res["meta"]["sass_tool"] and res["meta"]["nvcc"]:  # saxpy: FFMA on both sides, or FMUL+FADD on both
        fused, plain = (res["code_quality"]["saxpy"][p]["kernels"]["saxpy"] for p in ("fmad", "no_fmad"))
        assert fused["kernc"]["sass_instructions"] < plain["kernc"]["sass_instructions"]
        assert fused["nvcc"]["sass_instructions"] < plain["nvcc"]["sass_instructions"]

    m = res["memory"]["saxpy"]
    assert m["global_load_requests"] > 0 and m["global_store_requests"] > 0
    assert _positive(m["load_sectors_per_request"]) and _positive(m["load_ratio_to_ideal"])
    assert m["store_sectors_per_request"] == pytest.approx(4.0)  # y[t]: perfectly coalesced

    assert isinstance(res["gpu"], dict) and "available" in res["gpu"]
    if not res["gpu"]["available"]:
        assert res["gpu"]["note"]

    assert res["targets"] and {t["status"] for t in res["targets"]} <= STATUSES
    assert {t["target"] for t in res["targets"]} >= {"inprocess_warm", "inprocess_cache_hit", "cli_cold",
                                                    "cli_cache_hit", "registers", "sass_instructions",
                                                    "transpose_sectors", "transpose_bank_conflicts",
                                                    "launch_overhead"}
    by_name = {t["target"]: t for t in res["targets"]}
    assert by_name["transpose_sectors"]["measured"] == 4.0 and by_name["transpose_sectors"]["status"] == "PASS"
    assert by_name["transpose_bank_conflicts"]["measured"] == 0
    assert by_name["transpose_bank_conflicts"]["status"] == "PASS"
    if not res["gpu"]["available"]:  # measured with a GPU only
        assert by_name["launch_overhead"]["status"] == "n/a"
    assert "Compile latency" in stdout and "Code quality" in stdout and "Memory traffic" in stdout
    assert "kernc --fmad / nvcc" in stdout and "kernc / nvcc --fmad=false" in stdout
    assert "PASS" in stdout or "FAIL" in stdout


def test_quick_run_has_the_memory_traffic_sections(quick_results):
    """--quick keeps the per-accessor table (P = 1024) and the with/without-coalescing rows."""
    res, stdout = quick_results
    acc = res["memory_accessors"]
    assert acc["problem_size"] == 1024 and set(acc["rows"]) >= {"read_sequential", "read_shared", "add_atomic",
                                                               "add_shared_sum", "add_sum", "add_pair"}
    for row in acc["rows"].values():
        assert "error" not in row, row
        assert row["global_load_requests"] > 0 and row["comment"]
    assert acc["rows"]["add_shared_sum"]["global_atomics"] < acc["rows"]["add_atomic"]["global_atomics"]
    for job in ("transpose", "permute_nchw_nhwc"):
        v = res["memory_views"][job]["variants"]
        assert v["coalesced"]["store_sectors_per_request"] == 4.0
        assert v["naive"]["store_sectors_per_request"] > 16
    assert "Memory traffic per accessor" in stdout and "with and without the coalescing pass" in stdout


def test_kernc_bench_subcommand_has_the_same_options(capsys):
    from kernc.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["bench", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--quick", "--json", "--example", "--reps", "--no-gpu"):
        assert opt in out


def test_parse_sass_counts_per_function():
    from kernc.bench.tools import parse_sass

    text = """
        Function : saxpy
        /*0000*/                   LDC R1, c[0x0][0x28] ;              /* 0x00000a00ff017b82 */
        /*0010*/               @P0 EXIT ;                              /* 0x000000000000094d */
        /*0020*/                   FFMA R7, R2, UR6, R7 ;              /* 0x0000000602077c23 */
        /*0030*/                   NOP;                                /* 0x0000000000007918 */
        Function : other
        /*0000*/                   EXIT ;                              /* 0x000000000000794d */
    """
    assert parse_sass(text, "cuobjdump") == {"saxpy": {"instructions": 3, "nops": 1},
                                             "other": {"instructions": 1, "nops": 0}}
    nvdisasm = """
	.section	.text.saxpy,"ax",@progbits
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   NOP ;
	.section	.nv.info.saxpy,"",@"SHT_CUDA_INFO"
        /*0000*/ 	.byte	0x04, 0x11
    """
    assert parse_sass(nvdisasm, "nvdisasm") == {"saxpy": {"instructions": 1, "nops": 1}}


def test_render_with_gpu_results_and_errors():
    """The table renders every section, including GPU numbers this machine may not produce."""
    from kernc.bench.runner import evaluate_targets, render

    res = {
        "meta": {"kernc_version": "0", "quick": False, "arch": "sm_90", "reps_inprocess": 3,
                 "reps_subprocess": 3, "nvcc": "nvcc", "ptxas": "ptxas", "sass_tool": None,
                 "python_startup_ms": 20.0},
        "compile": {
            "saxpy": {"nvcc_ptx_ms": 300.0, "inprocess_warm_ms": 6.0, "inprocess_cache_hit_ms": 0.05,
                      "cli_cold_ms": 350.0, "cli_cache_hit_ms": 45.0,
                      "ratios_to_nvcc": {"inprocess_warm": 0.02, "inprocess_cache_hit": 0.0002,
                                         "cli_cold": 350 / 300, "cli_cache_hit": 0.15}},
            "broken": {"nvcc_ptx_ms": None, "error": "CompileError: boom",
                       "ratios_to_nvcc": dict.fromkeys(["inprocess_warm", "inprocess_cache_hit", "cli_cold",
                                                        "cli_cache_hit"])},
        },
        "code_quality": {
            "saxpy": {"fmad": {"kernels": {"saxpy": {
                "kernc": {"registers": 10, "spill_stores_bytes": 0, "spill_loads_bytes": 0},
                "nvcc": {"registers": 10, "spill_stores_bytes": 0, "spill_loads_bytes": 0},
                "ratios": {"registers": 1.0, "sass_instructions": None}}}},
                "no_fmad": {"kernels": {"saxpy": {
                    "kernc": {"registers": 10, "spill_stores_bytes": 0, "spill_loads_bytes": 0,
                              "sass_instructions": 25},
                    "nvcc": {"registers": 10, "spill_stores_bytes": 0, "spill_loads_bytes": 0,
                             "sass_instructions": 20},
                    "ratios": {"registers": 1.0, "sass_instructions": 1.25}}}}},
            "broken": {"fmad": {"error": "CompileError: boom"}},
        },
        "memory": {"saxpy": {"problem_size": 64, "global_load_requests": 4, "global_store_requests": 2,
                             "global_atomics": 0, "load_sectors_per_request": 4.0, "load_ratio_to_ideal": 1.0,
                             "store_sectors_per_request": None, "store_ratio_to_ideal": None},
                   "nopy": None, "broken": {"error": "x"}},
        "gpu": {"available": True, "name": "Some GPU", "peak_bandwidth_gbs": 4800.0, "memory_clock_khz": 1,
                "bus_width_bits": 2, "reference_built_with": "nvcc -ptx -O3",
                "saxpy_bandwidth": {"n": 1, "kernc_gbs": 4000.0, "reference_gbs": 4100.0,
                                    "kernc_pct_of_peak": 83.3, "reference_pct_of_peak": 85.4,
                                    "ratio_kernc_to_reference": 4000 / 4100},
                "launch_overhead": {"n": 1024, "kernc_api_us": 30.0, "kernc_raw_us": 6.0, "reference_raw_us": 5.0,
                                    "ratio_api_to_reference": 6.0}},
    }
    res["targets"] = evaluate_targets(res)
    text = render(res)
    assert "FAIL CLI cold <= 1 x nvcc -ptx: saxpy" in text
    assert "error: CompileError: boom" in text and "n/a (no numpy reference)" in text
    assert "4000 GB/s (83.3% of peak)" in text and "kernc API 30.0 us" in text
    assert "FAIL SASS instructions <= 1.1 x nvcc's: saxpy (kernc / nvcc --fmad=false)" in text
    statuses = {(t["target"], t["example"], t.get("pair")): t["status"] for t in res["targets"]}
    assert statuses[("inprocess_warm", "saxpy", None)] == "PASS" and statuses[("cli_cold", "saxpy", None)] == "FAIL"
    assert statuses[("sass_instructions", "saxpy", "fmad")] == "n/a"
    assert statuses[("sass_instructions", "saxpy", "no_fmad")] == "FAIL"
    assert statuses[("cli_cold", "broken", None)] == "n/a"
    assert statuses[("launch_overhead", "saxpy", None)] == "FAIL"  # 30 us > 10 us
    assert "FAIL host launch overhead (kernc API, 4 arguments) <= 10 us: saxpy measured 30 us" in text
    assert statuses[("transpose_sectors", "transpose", None)] == "n/a"  # no memory_views in these results


def test_gpu_section_skips_cleanly_without_a_device(monkeypatch):
    from kernc.backend import cuda
    from kernc.bench import gpu

    monkeypatch.setattr(cuda, "available", lambda: False)
    res = gpu.run(os.path.join(ROOT, "examples"), os.path.join(ROOT, "bench", "cuda"), None, True, 1)
    assert res["available"] is False and "not measured" in res["note"]


def test_cuda_references_exist_for_the_compared_examples():
    for name in ("saxpy", "gather_scatter", "particles"):
        path = os.path.join(ROOT, "bench", "cuda", f"{name}.cu")
        assert os.path.exists(path)
        assert f"{name}(" in open(path).read()


def _fake_cupy():
    """Just enough of CuPy, on numpy, to run the GPU section's code paths without a GPU: every
    kernel function is a numpy saxpy (``y[:n] += a * x[:n]``), events read the host clock."""
    from fake_cupy import fake_cupy

    def saxpy(grid, block, args):
        a, x, y, n = args[:4]
        y[: int(n)] += a * x[: int(n)]

    class Module:
        def load(self, data):
            assert data

        def get_function(self, name):
            assert name == "saxpy"
            return saxpy

    return fake_cupy(Module, lambda code: Module())


def test_gpu_section_code_paths_on_a_fake_device(monkeypatch, tmp_path):
    """Runs every line of the GPU measurements against a numpy stand-in for CuPy (this machine may
    have no GPU): the numbers are meaningless, the structure and the arithmetic are checked."""
    from kernc.backend import cuda
    from kernc.bench import gpu

    fake = _fake_cupy()
    monkeypatch.setattr(cuda, "available", lambda: True)
    monkeypatch.setattr(cuda, "cupy", lambda: fake)
    monkeypatch.setattr(cuda, "_modules", type(cuda._modules)())
    nvcc_ptx = tmp_path / "saxpy.ptx"
    nvcc_ptx.write_text("// stand-in for nvcc's PTX")
    res = gpu.run(os.path.join(ROOT, "examples"), os.path.join(ROOT, "bench", "cuda"), str(nvcc_ptx), True, 1,
                  bandwidth_n=4096)
    assert "error" not in res, res.get("error")
    assert res["name"] == "Fake GPU" and res["peak_bandwidth_gbs"] == pytest.approx(2 * 1e9 * 64 / 1e9)
    assert res["reference_built_with"] == "nvcc -ptx -O3"
    bw = res["saxpy_bandwidth"]
    assert bw["n"] == 4096 and bw["bytes_per_launch"] == 12 * 4096
    assert _positive(bw["kernc_gbs"]) and _positive(bw["reference_gbs"]) and _positive(bw["kernc_pct_of_peak"])
    lo = res["launch_overhead"]
    assert _positive(lo["kernc_api_us"]) and _positive(lo["kernc_raw_us"]) and _positive(lo["ratio_api_to_reference"])


@pytest.mark.parametrize("argv, message", [
    (["--reps", "0"], "expected a positive integer"),
    (["--quick", "--json", "/nonexistent-kernc-dir/x.json"], "does not exist or is not writable"),
    (["--quick", "--json", "/tmp"], "is a folder; name a file in it"),
    (["--quick", "--examples-dir", "/nonexistent-kernc-dir"], "no such folder"),
    (["--quick", "--arch", "sm_xx"], "unknown GPU architecture 'sm_xx'"),
])
def test_bad_options_fail_before_the_run(argv, message, capsys):
    """They failed only after the whole benchmark (a traceback writing the JSON, a raw
    FileNotFoundError), or not at all (an unknown arch filled the table with errors; --reps 0 ran
    20 repetitions)."""
    from kernc.bench.runner import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code != 0
    text = str(info.value.code) + capsys.readouterr().err
    assert message in text, text


def test_a_failed_measurement_makes_the_run_exit_1(monkeypatch, tmp_path, capsys):
    """From a robustness trial: an example that did not compile was an ``error`` row in the table and
    the JSON, and the run still exited 0. Everything measured is still printed and written."""
    from kernc.bench import runner

    broken = {"meta": {}, "compile": {"saxpy": {"inprocess_warm_ms": 3.0},
                                      "broken": {"error": "CompileError: broken.kern:1:1: error: x"}},
              "code_quality": {"broken": {"fmad": {"error": "CompileError: y"}}},
              "memory_views": {"transpose": {"variants": {}}}, "gpu": {"available": None}, "targets": []}
    monkeypatch.setattr(runner, "collect", lambda ns: broken)
    monkeypatch.setattr(runner, "render", lambda results: "the table\n")
    out = tmp_path / "r.json"
    assert runner.main(["--quick", "--json", str(out)]) == 1
    cap = capsys.readouterr()
    assert "the table" in cap.out and json.loads(out.read_text())["compile"]["saxpy"]["inprocess_warm_ms"] == 3.0
    assert "2 measurement(s) failed" in cap.err
    assert "compile.broken: CompileError: broken.kern:1:1: error: x" in cap.err
    assert "code_quality.broken.fmad: CompileError: y" in cap.err

    ok = {k: v for k, v in broken.items() if k not in ("compile", "code_quality")}
    monkeypatch.setattr(runner, "collect", lambda ns: ok)
    assert runner.main(["--quick", "--json", str(out)]) == 0
    assert "failed" not in capsys.readouterr().err


def test_json_dash_is_standard_output_and_the_table_goes_to_stderr(monkeypatch, tmp_path, capsys):
    """From a new-user trial: ``--json -`` wrote a file named '-' (everywhere else '-' is standard
    output)."""
    from kernc.bench import runner

    results = {"meta": {"x": 1}, "gpu": {"available": None}, "targets": []}
    monkeypatch.setattr(runner, "collect", lambda ns: results)
    monkeypatch.setattr(runner, "render", lambda res: "the table\n")
    monkeypatch.chdir(tmp_path)
    assert runner.main(["--quick", "--json", "-"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out) == results and "the table" in cap.err and not (tmp_path / "-").exists()


def test_a_reader_that_closes_the_pipe_early_ends_the_run_quietly(tmp_path):
    """From a new-user trial: ``python -m bench | head -1`` printed a BrokenPipeError traceback.
    The JSON is written before the table, so it is complete all the same."""
    import subprocess

    out = tmp_path / "r.json"
    script = ("import sys; from kernc.bench import runner; "
              "runner.collect = lambda ns: {'meta': {}, 'gpu': {'available': None}, 'targets': []}; "
              "runner.render = lambda res: 'x' * 2_000_000 + '\\n'; sys.exit(runner.main(sys.argv[1:]))")
    res = subprocess.run(f"{sys.executable} -c \"{script}\" --quick --json {out} | head -c 10",
                         shell=True, capture_output=True, text=True, timeout=300)
    assert res.stdout == "x" * 10 and "Traceback" not in res.stderr and "Error" not in res.stderr
    assert json.loads(out.read_text())["targets"] == []


@pytest.mark.parametrize("argv, message", [
    (["--quick", "--example", "nope"], "no example 'nope' in"),
    (["--quick", "--examples-dir", "{empty}"], "it has no .kern file"),
    (["--quick", "--examples-dir", "/nonexistent-kernc-dir"], "--examples-dir /nonexistent-kernc-dir: no such folder"),
    (["--quick", "--arch", "sm_1"], "unknown GPU architecture 'sm_1'"),
])
def test_bad_option_values_are_usage_errors(argv, message, tmp_path, capsys):
    """Exit 2 like every other bad option value (an unknown example or examples folder was exit 1;
    found by a new-user trial), before anything is measured."""
    from kernc.bench.runner import main

    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as info:
        main([a.format(empty=tmp_path / "empty") for a in argv] + ["--json", str(tmp_path / "r.json")])
    assert info.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()
