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
    assert res["schema"] == 3 and res["meta"]["quick"] is True
    assert set(res) >= {"meta", "compile", "code_quality", "memory", "launch", "gpu", "targets"}
    assert list(res["compile"]) == ["saxpy"]
    # host launch preparation without a GPU: saxpy's 4 kernel arguments bound and packed
    assert res["launch"]["kernel_args"] == 4 and _positive(res["launch"]["bind_and_pack_us"])
    assert "Host launch preparation on the CPU" in stdout

    row = res["compile"]["saxpy"]
    assert "error" not in row, row
    for key in ("inprocess_warm_ms", "inprocess_cache_hit_ms", "cli_cold_ms", "cli_first_run_ms", "cli_cache_hit_ms"):
        assert _positive(row[key]), (key, row)
    assert "first_run" not in res, res.get("first_run")  # the copy without .pyc files was made and used
    # the share of the warm compile spent in LLVM's backend (a part of each compile)
    assert 0 < row["inprocess_warm_llvm_share"] < 1
    assert "of which LLVM backend" in stdout
    assert set(row["ratios_to_nvcc"]) == {"inprocess_warm", "inprocess_cache_hit", "cli_cold", "cli_first_run",
                                          "cli_cache_hit"}
    if res["meta"]["nvcc"]:
        assert _positive(row["nvcc_ptx_ms"])
        assert all(_positive(v) for v in row["ratios_to_nvcc"].values())
    else:
        assert row["nvcc_ptx_ms"] is None

    _check_triton_columns(res, stdout)

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
                                                    "cli_first_run", "cli_cache_hit", "registers", "sass_instructions",
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


def _check_triton_columns(res, stdout):
    """Triton's compile and code next to kernc's when Triton is installed; n/a (and the warm target
    n/a) when it is not."""
    row, by_name = res["compile"]["saxpy"], {t["target"]: t for t in res["targets"]}
    assert "Triton warm (with ptxas)" in stdout
    if res["meta"]["triton_version"]:
        t = row["triton"]
        assert "error" not in t and t["version"] == res["meta"]["triton_version"], t
        assert _positive(t["warm_ms"]) and t["warm_cubin_ms"] > t["warm_ms"]  # ptxas is a part of the whole
        assert row["ratios_to_triton"]["inprocess_warm"] == pytest.approx(row["inprocess_warm_ms"] / t["warm_ms"])
        assert by_name["inprocess_warm"]["status"] in {"PASS", "FAIL"}
        assert by_name["inprocess_warm"]["measured"] == row["ratios_to_triton"]["inprocess_warm"]
        for q in res["code_quality"]["saxpy"].values():
            k = q["kernels"]["saxpy"]
            assert _positive(k["triton"]["registers"]) and _positive(k["ratios_to_triton"]["registers"])
            if res["meta"]["sass_tool"]:
                assert _positive(k["triton"]["sass_instructions"])
    else:
        assert row["triton"] == {"note": "Triton is not installed (pip install 'kernc[bench]')"}
        assert row["ratios_to_triton"]["inprocess_warm"] is None and by_name["inprocess_warm"]["status"] == "n/a"
        assert all(q["kernels"]["saxpy"]["triton"] is None for q in res["code_quality"]["saxpy"].values())
        assert "Triton not installed (Triton columns n/a; pip install 'kernc[bench]')" in stdout


def test_quick_run_without_triton(quick_results, tmp_path):
    """With Triton installed, the quick run again with Triton hidden (its import refused, its
    distribution not found): it still succeeds, and the Triton columns and the warm-compile target
    say n/a. (Without Triton, ``quick_results`` is that run.)"""
    res, _ = quick_results
    if not res["meta"]["triton_version"]:
        pytest.skip("Triton is not installed: test_quick_run_writes_expected_json ran without it")
    out = tmp_path / "r.json"
    script = (
        "import importlib.abc, importlib.metadata, sys\n"
        "class NoTriton(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'triton' or name.startswith('triton.'):\n"
        "            raise ImportError('triton is hidden by the test')\n"
        "sys.meta_path.insert(0, NoTriton())\n"
        "real = importlib.metadata.version\n"
        "def version(name):\n"
        "    if name == 'triton':\n"
        "        raise importlib.metadata.PackageNotFoundError(name)\n"
        "    return real(name)\n"
        "importlib.metadata.version = version\n"
        "from kernc.bench.runner import main\n"
        "sys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", script, "--quick", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    hidden = json.loads(out.read_text())
    assert hidden["meta"]["triton_version"] is None
    _check_triton_columns(hidden, proc.stdout)


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
    # kern-tile-contractions: gemm 64^3 (--quick) tiled against tile=False, bitwise the same
    gemm = res["memory_contractions"]["gemm"]
    assert "error" not in gemm, gemm
    assert gemm["shape"] == [64, 64, 64] and gemm["bitwise_equal"] is True
    tiled, untiled = gemm["variants"]["tiled"], gemm["variants"]["untiled"]
    assert tiled["load_sectors_per_output"] == 0.25  # K / 256: one 64x16 + 16x64 tile pair per chunk
    assert untiled["load_sectors_per_output"] == 10.0
    assert tiled["shared_bank_conflicts"] == 0 and tiled["shared_requests"] > 0
    assert "Contraction tiling (kern-tile-contractions" in stdout
    for job in ("conv2d_fwd", "conv2d_wgrad", "conv2d_dgrad"):  # the convolution examples, tiled
        conv = res["memory_contractions"][job]
        assert "error" not in conv, conv
        assert conv["bitwise_equal"] is True and conv["sectors_ratio_untiled_to_tiled"] > 4
        assert conv["variants"]["tiled"]["shared_bank_conflicts"] == 0


def test_quick_run_has_the_tensor_core_rows(quick_results):
    """kern-mma-contractions: gemm_f16 64^3 (--quick) on tensor cores and on CUDA cores, both within
    the f64 tolerance and bitwise equal on the CPU; one 128x128 tile loads a and b once (64x64 f16
    each, 2 sectors per warp request: 512 sectors for 4096 outputs); 0 spills where ptxas runs."""
    res, stdout = quick_results
    tc = res["memory_tensor_cores"]["gemm_f16"]
    assert "error" not in tc, tc
    assert tc["shape"] == [64, 64, 64] and tc["bitwise_equal"] is True
    assert tc["within_f64"] == {"tensor_cores": True, "cuda_cores": True}
    row = tc["variants"]["tensor_cores"]
    assert row["load_sectors_per_output"] == 0.125 and row["blocks"] == 1
    assert row["shared_bank_conflicts"] == 0
    target = next(t for t in res["targets"] if t["target"] == "gemm_f16_tc_spills")
    if row["registers"] is not None:
        assert row["spill_stores_bytes"] == row["spill_loads_bytes"] == 0 and target["status"] == "PASS"
    assert "Tensor cores (kern-mma-contractions" in stdout
    for name in ("conv2d_fwd_f16", "conv2d_wgrad_f16"):  # the f16 convolutions, P = 2^12
        cv = res["memory_tensor_cores"][name]
        assert "error" not in cv, cv
        assert cv["bitwise_equal"] is True and set(cv["within_f64"]) == {"tensor_cores", "cuda_cores", "untiled"}
        assert all(cv["within_f64"].values())
        tc, untiled = cv["variants"]["tensor_cores"], cv["variants"]["untiled"]
        assert tc["shared_bank_conflicts"] == 0 and untiled["shared_requests"] == 0
        assert untiled["load_sectors_per_output"] > 4 * tc["load_sectors_per_output"]
        gpu_target = next(t for t in res["targets"] if t["target"] == f"{name}_vs_cublas")
        assert gpu_target["status"] == "n/a" or res["gpu"].get("available")
    if not res["gpu"].get("available"):
        assert "against the cuBLAS time of their im2col GEMMs: not measured (no GPU)" in stdout


def test_quick_run_has_the_i8_and_tf32_tensor_core_rows(quick_results):
    """gemm_i8 (exact: the builds bitwise equal, both the exact product) and gemm_tf32 (@tf32: the
    tensor-core build within the tolerance of the rounded operands' product, not bitwise the plain
    f32 CUDA-core one) at 64^3; no GPU time for them. Their staging stores of b (n-major tiles, lanes
    along n) conflict 4-way: 3 per request, 16 requests per warp and chunk, 8 warps, 2 chunks."""
    res, stdout = quick_results
    for job, equal in (("gemm_i8", True), ("gemm_tf32", False)):
        tc = res["memory_tensor_cores"][job]
        assert "error" not in tc, tc
        assert tc["bitwise_equal"] is equal and tc["gpu"] == "not measured"
        assert tc["within_f64"] == {"tensor_cores": True, "cuda_cores": True}
        row = tc["variants"]["tensor_cores"]
        assert row["blocks"] == 1 and row["shared_bank_conflicts"] == 3 * 16 * 8 * 2
        target = next(t for t in res["targets"] if t["target"] == f"{job}_tc_spills")
        if row["registers"] is not None:
            assert row["spill_stores_bytes"] == row["spill_loads_bytes"] == 0 and target["status"] == "PASS"
    assert "gemm_i8 (sm_90, i8 (i32 sums)): equal to the exact product" in stdout


def test_first_run_tree_is_kernc_without_pyc_files(tmp_path):
    """The CLI first run imports kernc from a copy without ``.pyc`` files (``python -B`` writes
    none), data files included; a folder without kernc is refused, not timed."""
    from kernc.bench import measure

    tree = measure.first_run_tree(str(tmp_path / "tree"))
    root = os.path.join(tree, "kernc")
    for part in ("__init__.py", "cli.py", "frontend/grammar_tables.json", "passes/__init__.py",
                 "bench/cuda/saxpy.cu", "lazy_dialects"):
        assert os.path.exists(os.path.join(root, part)), part
    found = [d for d, dirs, files in os.walk(tree) if "__pycache__" in dirs or any(f.endswith(".pyc") for f in files)]
    assert not found, found
    out = tmp_path / "saxpy.ptx"
    env = measure.first_run_env(dict(os.environ), tree, str(tmp_path / "new-cache"))
    proc = subprocess.run([sys.executable, "-B", "-m", "kernc", "compile", os.path.join(ROOT, "examples", "saxpy.kern"),
                           "-o", str(out)], env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert ".visible .entry saxpy(" in out.read_text() and (tmp_path / "new-cache").is_dir()
    assert not [d for d, dirs, _ in os.walk(tree) if "__pycache__" in dirs]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RuntimeError, match="imports .* from elsewhere"):
        measure.check_first_run_tree(str(empty))


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
    """The table renders every section, including GPU numbers this machine may not produce, and
    results without the Triton and first-run fields (schema 2: those targets n/a)."""
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
            # schema 3: Triton's warm compile next to kernc's, the CLI first run
            "particles": {"nvcc_ptx_ms": 400.0, "inprocess_warm_ms": 30.0, "inprocess_cache_hit_ms": 0.05,
                          "cli_cold_ms": 300.0, "cli_first_run_ms": 360.0, "cli_cache_hit_ms": 45.0,
                          "triton": {"version": "3.9.0", "warm_ms": 100.0, "warm_cubin_ms": 150.0, "compiles": 3},
                          "ratios_to_nvcc": {"inprocess_warm": 0.075, "inprocess_cache_hit": 0.000125,
                                             "cli_cold": 0.75, "cli_first_run": 0.9, "cli_cache_hit": 0.1125},
                          "ratios_to_triton": {"inprocess_warm": 0.3, "inprocess_warm_to_cubin": 0.2}},
            "gather_scatter": {"nvcc_ptx_ms": 400.0, "inprocess_warm_ms": 20.0,
                               "triton": {"error": "CompilationError: at 3:4: boom"},
                               "ratios_to_nvcc": {"inprocess_warm": 0.05},
                               "ratios_to_triton": {"inprocess_warm": None}},
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
            "particles": {"fmad": {"triton": {"error": "CompilationError: at 3:4: boom"}, "kernels": {"particles": {
                "kernc": {"registers": 20, "spill_stores_bytes": 0, "spill_loads_bytes": 0, "sass_instructions": 90},
                "nvcc": {"registers": 22, "spill_stores_bytes": 0, "spill_loads_bytes": 0, "sass_instructions": 95},
                "triton": None, "ratios": {"registers": 20 / 22, "sass_instructions": 90 / 95},
                "ratios_to_triton": {"registers": None, "sass_instructions": None}}}},
                "no_fmad": {"kernels": {"particles": {
                    "kernc": {"registers": 20, "spill_stores_bytes": 0, "spill_loads_bytes": 0,
                              "sass_instructions": 90},
                    "nvcc": {"registers": 22, "spill_stores_bytes": 0, "spill_loads_bytes": 0,
                             "sass_instructions": 95},
                    "triton": {"registers": 25, "spill_stores_bytes": 4, "spill_loads_bytes": 8,
                               "sass_instructions": 120},
                    "ratios": {"registers": 20 / 22, "sass_instructions": 90 / 95},
                    "ratios_to_triton": {"registers": 0.8, "sass_instructions": 0.75}}}}},
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
                                    "ratio_api_to_reference": 6.0},
                "gemm_f32_tiled": {"arch": "sm_90", "sizes": {
                    4096: {"n": 4096, "kernc_ms": 2.5, "cupy_ms": 2.0, "kernc_gflops": 54975.6,
                           "cupy_gflops": 68719.5, "ratio_kernc_to_cupy": 0.8},
                    1000: {"error": "RuntimeError: off"}}}},
    }
    res["targets"] = evaluate_targets(res)
    text = render(res)
    assert "gemm f32 4096^3 (tiled): kernc 54976 GFLOP/s, cupy.matmul f32 (TF32 off) 68720 GFLOP/s" in text
    assert "gemm f32 1000^3 against cupy.matmul: error: RuntimeError: off" in text
    assert "FAIL CLI cold <= 0.8 x nvcc -ptx: saxpy" in text
    assert "error: CompileError: boom" in text and "n/a (no numpy reference)" in text
    assert "4000 GB/s (83.3% of peak)" in text and "kernc API 30.0 us" in text
    assert "FAIL SASS instructions <= 1.1 x nvcc's: saxpy (kernc / nvcc --fmad=false)" in text
    statuses = {(t["target"], t["example"], t.get("pair")): t["status"] for t in res["targets"]}
    assert statuses[("inprocess_warm", "saxpy", None)] == "n/a"  # no Triton in these results
    assert statuses[("cli_first_run", "saxpy", None)] == "n/a" and statuses[("cli_cold", "saxpy", None)] == "FAIL"
    # 30 ms against Triton's 100 ms: 0.3x > 0.25x; the CLI first run 0.9x > 0.8x, CLI cold 0.75x
    assert statuses[("inprocess_warm", "particles", None)] == "FAIL"
    assert statuses[("cli_first_run", "particles", None)] == "FAIL" and statuses[("cli_cold", "particles", None)] == "PASS"
    assert "FAIL warm in-process compile <= 0.25 x Triton's (to PTX): particles measured 0.3 x Triton (to PTX)" in text
    assert "100 ms (150 ms)" in text and "30 ms (0.3x Triton FAIL; 0.075x nvcc)" in text
    assert "error: CompilationError: at 3:4: boom" in text  # gather_scatter's Triton compile
    assert "particles (kernc --fmad / nvcc): Triton: error: CompilationError: at 3:4: boom" in text
    assert "20 / 22 / 25 (0.909x PASS; 0.8x)" in text and "0+0 / 0+0 / 4+8" in text
    assert "90 / 95 / 120 (0.947x PASS; 0.75x)" in text and "20 / 22 / n/a (0.909x PASS; n/a)" in text
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


def test_conv_f16_gpu_rows_and_targets():
    """The tensor-core convolutions' GPU rows: the time against the cuBLAS time of the im2col GEMM
    is a target at the full size only (PASS at >= 60% of its speed, FAIL below), n/a without a GPU;
    the spill target sums both kernels' spill bytes; the table prints each row or its error."""
    from kernc.bench import gpu
    from kernc.bench.runner import _render_conv_f16_gpu, evaluate_targets

    def targets(convs, tc=None):
        res = {"compile": {}, "code_quality": {}, "gpu": {"conv_f16_tensor_cores": convs},
               "memory_tensor_cores": tc or {}}
        return {t["target"]: t for t in evaluate_targets(res)}

    full = list(gpu.FULL_SIZES["conv_f16"])
    row = {"shape": full, "gemm": [4, 5, 6], "arch": "sm_90", "tensor_cores": True, "kernc_ms": 1.5,
           "cublas_ms": 1.0, "kernc_gflops": 1.0, "cublas_gflops": 1.5, "ratio_kernc_to_cublas": 1 / 1.5}
    slow = dict(row, kernc_ms=2.0)
    by = targets({"conv2d_fwd_f16": row, "conv2d_wgrad_f16": slow})
    assert by["conv2d_fwd_f16_vs_cublas"]["status"] == "PASS" and by["conv2d_fwd_f16_vs_cublas"]["measured"] == 1.5
    assert by["conv2d_wgrad_f16_vs_cublas"]["status"] == "FAIL"
    by = targets({"conv2d_fwd_f16": dict(row, shape=[1, 2, 3, 4, 5])})  # the --quick size: no target
    assert by["conv2d_fwd_f16_vs_cublas"]["status"] == "n/a" and by["conv2d_wgrad_f16_vs_cublas"]["status"] == "n/a"
    assert by["conv_f16_tc_spills"]["status"] == "n/a"
    tc = {name: {"variants": {"tensor_cores": {"spill_stores_bytes": 0, "spill_loads_bytes": s}}}
          for name, s in (("conv2d_fwd_f16", 0), ("conv2d_wgrad_f16", 8))}
    assert targets({}, tc)["conv_f16_tc_spills"]["measured"] == 8
    text = "\n".join(_render_conv_f16_gpu({"conv_f16_tensor_cores": {"conv2d_fwd_f16": row,
                                                                      "conv2d_wgrad_f16": {"error": "boom"}},
                                             "conv_f32_tiled": {"conv2d_fwd": {"error": "off"}}}))
    assert "conv2d_fwd_f16 NxHxWxCxK" in text and "im2col GEMM 4x5x6 in cuBLAS" in text
    assert "conv2d_wgrad_f16 against its im2col GEMM (cupy.matmul f16): error: boom" in text
    assert "conv2d_fwd against its im2col GEMM (cupy.matmul f32, TF32 off): error: off" in text
