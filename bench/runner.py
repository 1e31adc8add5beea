"""``python -m bench`` / ``kernc bench``: run every measurement, print one table, write JSON.

Every number is printed next to its reference measured in the same run (``nvcc -ptx`` of the
hand-written CUDA C++ kernel in ``bench/cuda/``, Triton's compile of the Triton version in
``bench/triton/``, nvcc's and Triton's code assembled by the same ptxas, the ideal sector count,
the CUDA C++ kernel on the GPU) as a ratio, and the issue's targets are marked PASS/FAIL (never
asserted: a benchmark reports, it does not fail).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import tempfile
import time

from . import bundle_adjustment, histogram, interp, measure, reductions, tools
from .options import build_parser

HERE = os.path.dirname(os.path.abspath(__file__))
CUDA_DIR = os.path.join(HERE, "cuda")
#: kernc kernels of the benchmark itself: one per accessor, the NCHW -> NHWC permute (memory traffic).
KERN_DIR = os.path.join(HERE, "kern")
ACCESSORS_KERN = os.path.join(KERN_DIR, "accessors.kern")
#: 2: code_quality[example] holds one entry per CODE_QUALITY_PAIRS; 3: Triton (compile[example]
#: ["triton"], ratios_to_triton, code quality kernels' "triton") and the CLI first run
SCHEMA = 3

#: The issue's targets: (id, text, limit). The warm compile is a ratio to Triton's warm compile
#: to PTX, the other compile ones to nvcc -ptx except the cache hit.
TARGETS = {
    "inprocess_warm": ("warm in-process compile <= 0.25 x Triton's (to PTX)", 0.25),
    "inprocess_cache_hit": ("in-process cache hit <= 2 ms", 2.0),
    "cli_cold": ("CLI cold <= 0.8 x nvcc -ptx", 0.8),
    "cli_first_run": ("CLI first run (fresh cache folder, no .pyc files) <= 0.8 x nvcc -ptx", 0.8),
    "cli_cache_hit": ("CLI cache hit <= 1/3 x nvcc -ptx", 1 / 3),
    "registers": ("registers <= nvcc's", 1.0),
    "sass_instructions": ("SASS instructions <= 1.1 x nvcc's", 1.1),
    "transpose_sectors": ("transpose (coalesced): load and store sectors per request <= the ideal 4", 4.0),
    "transpose_bank_conflicts": ("transpose (coalesced): 0 bank conflicts", 0),
    "launch_overhead": ("host launch overhead (kernc API, 4 arguments) <= 10 us", 10.0),
    "gemm_sectors_per_output": ("gemm 256^3 f32 (tiled): global-load sectors per output <= 1.25", 1.25),
    "gemm_bank_conflicts": ("gemm (tiled): 0 bank conflicts", 0),
    "gemm_spills": ("gemm (tiled): 0 spill bytes (ptxas)", 0),
    "gemm_f16_tc_spills": ("gemm_f16 (tensor cores): 0 spill bytes (ptxas)", 0),
    "gemm_i8_tc_spills": ("gemm_i8 (tensor cores, m16n8k32 .s8): 0 spill bytes (ptxas)", 0),
    "gemm_tf32_tc_spills": ("gemm_tf32 (tensor cores, @tf32 m16n8k8): 0 spill bytes (ptxas)", 0),
    # measured: kernc's time / cupy.matmul's on the GPU at 8192^3 (>= 70% of cuBLAS HGEMM's speed)
    "gemm_f16_vs_cublas": ("gemm_f16 8192^3 (tensor cores): time <= 1/0.7 x cupy.matmul f16", 1 / 0.7),
    # measured: kernc's time / cupy.matmul's (cuBLAS SGEMM, TF32 off) on the GPU (issue 20)
    "gemm_f32_vs_cublas": ("gemm f32 4096^3 (tiled): time <= 1/0.8 x cupy.matmul f32", 1 / 0.8),
    "gemm_f32_min_vs_cublas": ("gemm f32 (tiled), every size >= 512: time <= 1/0.5 x cupy.matmul f32", 1 / 0.5),
    # measured: kernc's time / cupy.matmul's of the im2col GEMM on the GPU (>= 60% of its speed)
    "conv2d_fwd_f16_vs_cublas": ("conv2d_fwd_f16 (tensor cores): time <= 1/0.6 x its im2col GEMM in cuBLAS", 1 / 0.6),
    "conv2d_wgrad_f16_vs_cublas": ("conv2d_wgrad_f16 (tensor cores): time <= 1/0.6 x its im2col GEMM in cuBLAS",
                                   1 / 0.6),
    "conv_f16_tc_spills": ("conv2d_fwd_f16/conv2d_wgrad_f16 (tensor cores): 0 spill bytes (ptxas)", 0),
    "conv2d_fwd_vs_cublas": ("conv2d_fwd f32 (tiled): time <= 1/0.6 x its im2col GEMM in cuBLAS", 1 / 0.6),
    # measured: tiled / --no-tile global-load sectors (the "at least 10x fewer")
    "conv2d_fwd_sectors": ("conv2d_fwd (tiled): global-load sectors <= 1/10 of --no-tile's, bitwise equal", 0.1),
    # measured: the largest shared/indexed ratio over every width, pattern and size (limit 1)
    "shared_le_indexed": ("shared <= indexed sectors and requests everywhere", 1.0),
    "shared_clustered_36": ("shared <= 0.4x indexed sectors on 36-byte clustered", 0.4),
}
COMPILE_COLUMNS = ("inprocess_warm", "inprocess_cache_hit", "cli_cold", "cli_first_run", "cli_cache_hit")
#: Code quality compares builds with the same floating-point semantics: kernc --fmad against nvcc's
#: default (--fmad=true: both contract a*b+c into FMAs) and Triton's enable_fp_fusion=True, kernc's
#: default against nvcc --fmad=false and enable_fp_fusion=False.
#: name -> (kernc fmad option, extra nvcc flags, label); Triton's enable_fp_fusion is the fmad option
CODE_QUALITY_PAIRS = {
    "fmad": (True, (), "kernc --fmad / nvcc"),
    "no_fmad": (False, ("--fmad=false",), "kernc / nvcc --fmad=false"),
}


def _examples_dir(ns) -> str:
    if ns.examples_dir:
        return os.path.abspath(ns.examples_dir)
    for cand in (os.path.join(os.path.dirname(HERE), "examples"), os.path.join(os.getcwd(), "examples")):
        if os.path.isdir(cand):
            return cand
    return os.path.join(os.getcwd(), "examples")


def _ratio(a, b):
    return a / b if a is not None and b else None


def _status(value, limit):
    if value is None:
        return "n/a"
    return "PASS" if value <= limit else "FAIL"


def _err(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return f"{type(err).__name__}: {text.splitlines()[0][:300]}"


# -- the measurements --------------------------------------------------------------------------------
def collect(ns) -> dict:
    """Run all measurements for the options ``ns`` and return the results dict (see README)."""
    quick = ns.quick
    reps = 1 if quick else (ns.reps or 20)
    sub_reps = 1 if quick else max(3, reps // 4)
    examples_dir = _examples_dir(ns)
    available = _available(examples_dir)
    names = ns.example or (["saxpy"] if quick else available)

    import kernc
    from kernc.backend import cache

    from . import triton_peer

    nvcc = tools.find("nvcc")
    sass_name, sass_path = tools.sass_tool()
    triton_version = triton_peer.version()
    results: dict = {
        "schema": SCHEMA,
        "meta": {
            "kernc_version": kernc.__version__,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "arch": ns.arch,
            "quick": quick,
            "reps_inprocess": reps,
            "reps_subprocess": sub_reps,
            "examples_dir": examples_dir,
            "nvcc": nvcc,
            "nvcc_version": tools.version(nvcc),
            "ptxas": tools.ptxas(),
            "ptxas_version": tools.version(tools.ptxas()),
            "sass_tool": sass_path,
            "triton_version": triton_version,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "cpu_count": os.cpu_count(),
            "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            "python_dont_write_bytecode": bool(os.environ.get("PYTHONDONTWRITEBYTECODE")),
        },
        "compile": {}, "code_quality": {}, "memory": {}, "memory_views": {}, "memory_accessors": {},
        "memory_contractions": {},
        "launch": {}, "gpu": {}, "targets": [],
    }
    saved = {k: os.environ.get(k) for k in ("KERNC_CACHE_DIR", "KERNC_ALWAYS_COMPILE", "KERNC_VERIFY_EACH")}
    workdir = tempfile.mkdtemp(prefix="kernc-bench-")
    cache_dir = os.path.join(workdir, "cache")
    os.environ["KERNC_CACHE_DIR"] = cache_dir  # never the user's cache; a fresh one per run
    os.environ.pop("KERNC_ALWAYS_COMPILE", None)
    os.environ.pop("KERNC_VERIFY_EACH", None)  # measure the default pipeline (the test suite sets it)
    cache.reset()
    try:
        results["meta"]["python_startup_ms"] = measure.python_startup_ms(sub_reps)
        first_run_tree = _first_run_tree(results, workdir)
        triton_names = _triton_setup(results, names, ns.arch, workdir)
        nvcc_ptx_paths: dict = {}
        for name in names:
            kern = os.path.join(examples_dir, f"{name}.kern")
            cu = os.path.join(CUDA_DIR, f"{name}.cu")
            row: dict = {"cuda_reference": os.path.relpath(cu, os.path.dirname(HERE)) if os.path.exists(cu) else None}
            row["nvcc_ptx_ms"] = None
            # Triton's warm compiles run in blocks alternating with kernc's, so that load on the
            # machine weighs on both alike
            peer = triton_peer.WarmCompiles(name, ns.arch, workdir) if name in triton_names else None
            try:
                row.update(measure.compile_latency(kern, cu if os.path.exists(cu) else None, ns.arch, reps,
                                                   sub_reps, workdir, cache_dir, first_run_tree, warm_peer=peer))
                nvcc_ptx = row.pop("nvcc_ptx_path", None)
                if nvcc_ptx:
                    nvcc_ptx_paths[name] = nvcc_ptx
            except Exception as err:  # noqa: BLE001 - one broken example must not stop the run
                row["error"] = _err(err)
            row["triton"] = peer.result() if peer else _triton_absent(results, name)
            row["ratios_to_nvcc"] = {c: _ratio(row.get(f"{c}_ms"), row.get("nvcc_ptx_ms")) for c in COMPILE_COLUMNS}
            row["ratios_to_triton"] = {"inprocess_warm": _ratio(row.get("inprocess_warm_ms"),
                                                                row["triton"].get("warm_ms")),
                                       "inprocess_warm_to_cubin": _ratio(row.get("inprocess_warm_ms"),
                                                                         row["triton"].get("warm_cubin_ms"))}
            results["compile"][name] = row

            pairs = results["code_quality"][name] = {}
            for pair, (fmad, flags, _label) in CODE_QUALITY_PAIRS.items():
                triton_ptx = None
                if name in triton_names:
                    try:
                        triton_ptx = triton_peer.ptx(name, ns.arch, fmad, workdir, f"{name}.{pair}")
                    except Exception as err:  # noqa: BLE001 - kernc's and nvcc's numbers still count
                        pairs[pair] = {"triton": {"error": _err(err)}}
                try:
                    nvcc_ptx = (tools.nvcc_ptx(cu, ns.arch, workdir, f"{name}.{pair}", flags) if flags
                                else nvcc_ptx_paths.get(name))  # nvcc's default: the compile-latency PTX
                    pairs.setdefault(pair, {})["kernels"] = _code_quality(kern, fmad, nvcc_ptx, ns.arch, workdir,
                                                                          f"{name}.{pair}", triton_ptx)
                except Exception as err:  # noqa: BLE001
                    pairs.setdefault(pair, {})["error"] = _err(err)

            try:
                results["memory"][name] = measure.memory_traffic(examples_dir, name, 1024 if quick else 4096)
            except Exception as err:  # noqa: BLE001
                results["memory"][name] = {"error": _err(err)}

        # transpose and the NCHW -> NHWC permute with and without kern-coalesce-views, then one row
        # per accessor (bench/kern/accessors.kern): CPU-interpreter counters, cheap at these sizes
        try:
            results["memory_views"] = measure.view_traffic(examples_dir, KERN_DIR, quick)
        except Exception as err:  # noqa: BLE001
            results["memory_views"] = {"error": _err(err)}
        try:
            results["memory_accessors"] = measure.accessor_traffic(ACCESSORS_KERN, 1024 if quick else 4096)
        except Exception as err:  # noqa: BLE001
            results["memory_accessors"] = {"error": _err(err)}
        if "error" not in results["memory_accessors"]:  # shared(I) as the launcher runs it against indexed(I)
            try:
                results["memory_accessors"]["shared_vs_indexed"] = measure.shared_choice_traffic(
                    1024 if quick else 4096)
            except Exception as err:  # noqa: BLE001
                results["memory_accessors"]["shared_vs_indexed"] = {"error": _err(err)}
        results["interpreter"] = interp.run(examples_dir, quick)  # CPU interpreter speed (bench/interp.py)
        if os.path.exists(os.path.join(examples_dir, "histogram.kern")):  # bench/histogram.py
            try:
                results["histogram"] = histogram.traffic(examples_dir)
                if not ns.no_gpu:
                    results["histogram"]["gpu"] = histogram.gpu_run(examples_dir, CUDA_DIR, quick, max(3, sub_reps))
            except Exception as err:  # noqa: BLE001
                results["histogram"] = {"error": _err(err)}
        results["memory_reductions"] = reductions.measure(examples_dir, quick)  # issue 21 (bench/reductions.py)
        # time per LM iteration of examples/bundle_adjustment (CPU; CuPy when a device is present)
        results["bundle_adjustment"] = bundle_adjustment.run(examples_dir, quick, gpu=not ns.no_gpu)
        # gemm with and without kern-tile-contractions: CPU-interpreter counters and ptxas -v
        if os.path.exists(os.path.join(examples_dir, "gemm.kern")):
            results["memory_contractions"] = measure.contraction_traffic(examples_dir, quick, ns.arch)
        # gemm_f16 on tensor cores and on CUDA cores: CPU-interpreter counters and ptxas -v
        if os.path.exists(os.path.join(examples_dir, "gemm_f16.kern")):
            results["memory_tensor_cores"] = measure.tensor_core_traffic(examples_dir, quick, ns.arch)

        if os.path.exists(os.path.join(examples_dir, "saxpy.kern")):
            try:
                results["launch"] = measure.launch_preparation(examples_dir, sub_reps, 200 if quick else 2000)
            except Exception as err:  # noqa: BLE001
                results["launch"] = {"error": _err(err)}

        if ns.no_gpu:
            results["gpu"] = {"available": None, "note": "--no-gpu was given"}
        else:
            from . import gpu

            results["gpu"] = gpu.run(examples_dir, CUDA_DIR, nvcc_ptx_paths.get("saxpy"), quick, max(3, sub_reps))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        cache.reset()
        shutil.rmtree(workdir, ignore_errors=True)
    results["targets"] = evaluate_targets(results)
    return results


def _first_run_tree(results: dict, workdir: str) -> str | None:
    """The copy of kernc without ``.pyc`` files that the CLI first runs import
    (``measure.first_run_tree``), or ``None`` with ``results["first_run"]["error"]`` saying why."""
    try:
        return measure.first_run_tree(os.path.join(workdir, "first-run"))
    except Exception as err:  # noqa: BLE001 - the other columns are still measured
        results["first_run"] = {"error": _err(err)}
        return None


def _triton_setup(results: dict, names, arch: str, workdir: str) -> set:
    """The examples of ``names`` whose Triton version is compiled, after Triton's one untimed
    first compile (``triton_peer.initialize``); empty without Triton, or with
    ``results["triton_setup"]["error"]`` when the first compile fails."""
    from . import triton as versions
    from . import triton_peer

    if not results["meta"]["triton_version"]:
        return set()
    try:
        triton_peer.initialize(workdir, arch)
    except Exception as err:  # noqa: BLE001
        results["triton_setup"] = {"error": _err(err)}
        return set()
    return set(names) & set(versions.examples())


def _triton_absent(results: dict, name: str) -> dict:
    """The ``triton`` entry of an example whose Triton version is not compiled: why not."""
    from . import triton as versions

    if not results["meta"]["triton_version"]:
        return {"note": "Triton is not installed (pip install 'kernc[bench]')"}
    if name in versions.NOT_COMPARABLE:
        return {"note": f"no Triton version: {versions.NOT_COMPARABLE[name]}"}
    if name not in versions.examples():
        return {"note": f"no Triton version in bench/triton/{name}.py"}
    return {"note": "Triton's first compile failed (triton_setup)"}


def _code_quality(kern: str, fmad: bool, nvcc_ptx: str | None, arch: str, workdir: str, stem: str,
                  triton_ptx: str | None = None) -> dict:
    """Per kernel: kernc's (``fmad``), nvcc's and Triton's registers, spills and SASS counts, and
    the ratios of kernc's to nvcc's (``ratios``, the targets) and to Triton's (``ratios_to_triton``).

    kernc's side is the PTX its launcher runs for the example's inputs: every example passes
    ``index`` scalars ``>= 0``, so that is the variant specialised for them
    (``Compilation.ptx(nonneg_scalars=True)``; the same PTX for kernels without ``index`` scalars)."""
    from kernc.compiler import Compilation, CompileOptions

    ptx = Compilation(open(kern, encoding="utf-8").read(), kern,
                      CompileOptions(arch=arch, fmad=fmad)).ptx(nonneg_scalars=True)
    q = measure.code_quality(ptx, nvcc_ptx, arch, workdir, stem, triton_ptx)
    kernels = {}
    for kname, mine in q["kernc"].items():
        theirs = (q["nvcc"] or {}).get(kname)
        peer = (q["triton"] or {}).get(kname)
        kernels[kname] = {
            "kernc": mine, "nvcc": theirs, "triton": peer,
            "ratios": {m: _ratio(mine.get(m), (theirs or {}).get(m)) for m in ("registers", "sass_instructions")},
            "ratios_to_triton": {m: _ratio(mine.get(m), (peer or {}).get(m)) for m in ("registers", "sass_instructions")},
        }
    return kernels


def evaluate_targets(results: dict) -> list[dict]:
    """One entry per (target, example[, kernel, pair]): the measured value, the limit and PASS/FAIL/n/a
    (``pair``: the code-quality comparison, a key of :data:`CODE_QUALITY_PAIRS`)."""
    out = []
    for name, row in results["compile"].items():
        for col in COMPILE_COLUMNS:
            text, limit = TARGETS[col]
            if col == "inprocess_cache_hit":
                value, unit = row.get("inprocess_cache_hit_ms"), "ms"
            elif col == "inprocess_warm":
                value, unit = (row.get("ratios_to_triton") or {}).get(col), "x Triton (to PTX)"
            else:
                value, unit = row["ratios_to_nvcc"].get(col), "x nvcc -ptx"
            out.append({"target": col, "text": text, "example": name, "kernel": None, "measured": value,
                        "unit": unit, "limit": limit, "status": _status(value, limit)})
    for name, pairs in results["code_quality"].items():
        for pair, q in pairs.items():
            for kname, k in q.get("kernels", {}).items():
                for m in ("registers", "sass_instructions"):
                    text, limit = TARGETS[m]
                    value = k["ratios"].get(m)
                    out.append({"target": m, "text": text, "example": name, "kernel": kname, "pair": pair,
                                "measured": value, "unit": "x nvcc", "limit": limit,
                                "status": _status(value, limit)})
    coalesced = (results.get("memory_views") or {}).get("transpose", {}).get("variants", {}).get("coalesced", {})
    sectors = [coalesced.get(f"{side}_sectors_per_request") for side in ("load", "store")]
    for target, value, unit in (
        ("transpose_sectors", max(sectors) if None not in sectors else None, "sectors per request"),
        ("transpose_bank_conflicts", coalesced.get("shared_bank_conflicts"), "conflicts"),
        ("launch_overhead", ((results.get("gpu") or {}).get("launch_overhead") or {}).get("kernc_api_us"), "us"),
    ):
        text, limit = TARGETS[target]
        out.append({"target": target, "text": text, "example": "transpose" if "transpose" in target else "saxpy",
                    "kernel": None, "measured": value, "unit": unit, "limit": limit,
                    "status": _status(value, limit)})
    gemm = (results.get("memory_contractions") or {}).get("gemm") or {}
    tiled = (gemm.get("variants") or {}).get("tiled") or {}
    full = gemm.get("shape") == list(measure.CONTRACTION_SHAPES["full"][0])  # (the target's size)
    spills = (None if tiled.get("spill_stores_bytes") is None
              else tiled["spill_stores_bytes"] + tiled["spill_loads_bytes"])
    for target, value, unit in (
        ("gemm_sectors_per_output", tiled.get("load_sectors_per_output") if full else None, "sectors per output"),
        ("gemm_bank_conflicts", tiled.get("shared_bank_conflicts"), "conflicts"),
        ("gemm_spills", spills, "bytes"),
    ):
        text, limit = TARGETS[target]
        out.append({"target": target, "text": text, "example": "gemm", "kernel": None, "measured": value,
                    "unit": unit, "limit": limit, "status": _status(value, limit)})
    tc = ((results.get("memory_tensor_cores") or {}).get("gemm_f16") or {}).get("variants") or {}
    tc = tc.get("tensor_cores") or {}
    tc_spills = (None if tc.get("spill_stores_bytes") is None
                 else tc["spill_stores_bytes"] + tc["spill_loads_bytes"])
    gm = (results.get("gpu") or {}).get("gemm_f16_tensor_cores") or {}
    slower = gm["kernc_ms"] / gm["cupy_ms"] if gm.get("n") == 8192 and gm.get("cupy_ms") else None
    for target, value, unit in (("gemm_f16_tc_spills", tc_spills, "bytes"),
                                ("gemm_f16_vs_cublas", slower, "x cupy.matmul's time")):
        text, limit = TARGETS[target]
        out.append({"target": target, "text": text, "example": "gemm_f16", "kernel": None,
                    "measured": value, "unit": unit, "limit": limit, "status": _status(value, limit)})
    rows = (((results.get("gpu") or {}).get("gemm_f32_tiled") or {}).get("sizes") or {})
    slow = {int(n): r["kernc_ms"] / r["cupy_ms"] for n, r in rows.items() if r.get("cupy_ms")}
    worst = max((v for n, v in slow.items() if n >= 512), default=None)
    if any("error" in r for r in rows.values()):
        worst = float("inf")  # a size that failed (a wrong result) fails the target
    for target, value in (("gemm_f32_vs_cublas", slow.get(4096)), ("gemm_f32_min_vs_cublas", worst)):
        text, limit = TARGETS[target]
        out.append({"target": target, "text": text, "example": "gemm", "kernel": None,
                    "measured": value, "unit": "x cupy.matmul's time", "limit": limit,
                    "status": _status(value, limit)})
    for job in ("gemm_i8", "gemm_tf32"):  # (no GPU time measured for these)
        row = (((results.get("memory_tensor_cores") or {}).get(job) or {}).get("variants") or {}).get("tensor_cores") or {}
        value = (None if row.get("spill_stores_bytes") is None
                 else row["spill_stores_bytes"] + row["spill_loads_bytes"])
        text, limit = TARGETS[f"{job}_tc_spills"]
        out.append({"target": f"{job}_tc_spills", "text": text, "example": job, "kernel": None,
                    "measured": value, "unit": "bytes", "limit": limit, "status": _status(value, limit)})
    out += _conv_f16_targets(results)
    conv = (results.get("memory_contractions") or {}).get("conv2d_fwd") or {}
    ratio = conv.get("sectors_ratio_untiled_to_tiled")
    value = None if not ratio else (1 / ratio if conv.get("bitwise_equal") else float("inf"))
    text, limit = TARGETS["conv2d_fwd_sectors"]
    out.append({"target": "conv2d_fwd_sectors", "text": text, "example": "conv2d_fwd", "kernel": None,
                "measured": value, "unit": "tiled / untiled sectors", "limit": limit, "status": _status(value, limit)})
    out += _shared_targets(((results.get("memory_accessors") or {}).get("shared_vs_indexed")) or {})
    return out + interp.targets(results) + histogram.targets(results) + reductions.targets(results)


def _conv_f16_targets(results: dict) -> list[dict]:
    """The convolutions' targets: the time of each tensor-core one and of the f32 conv2d_fwd (issue
    20) against the cuBLAS time of its im2col GEMM (``n/a`` without a GPU, or at the ``--quick``
    size), and the spill bytes of the tensor-core ones."""
    from .gpu import CONV_F16, FULL_SIZES

    out = []
    gpu = results.get("gpu") or {}
    convs = dict(gpu.get("conv_f16_tensor_cores") or {})
    convs["conv2d_fwd"] = (gpu.get("conv_f32_tiled") or {}).get("conv2d_fwd")  # (issue 20's target)
    for name in (*CONV_F16, "conv2d_fwd"):
        row = convs.get(name) or {}
        full = row.get("shape") == list(FULL_SIZES["conv_f16"])
        value = row["kernc_ms"] / row["cublas_ms"] if full and row.get("cublas_ms") else None
        text, limit = TARGETS[f"{name}_vs_cublas"]
        out.append({"target": f"{name}_vs_cublas", "text": text, "example": name, "kernel": None,
                    "measured": value, "unit": "x the im2col GEMM's time", "limit": limit,
                    "status": _status(value, limit)})
    tc = results.get("memory_tensor_cores") or {}
    rows = [((tc.get(name) or {}).get("variants") or {}).get("tensor_cores") or {} for name in CONV_F16]
    spills = None if any(r.get("spill_stores_bytes") is None for r in rows) else sum(
        r["spill_stores_bytes"] + r["spill_loads_bytes"] for r in rows)
    text, limit = TARGETS["conv_f16_tc_spills"]
    out.append({"target": "conv_f16_tc_spills", "text": text, "example": "conv2d_fwd_f16", "kernel": None,
                "measured": spills, "unit": "bytes", "limit": limit, "status": _status(spills, limit)})
    return out


def _shared_targets(sv: dict) -> list[dict]:
    """The two ``shared(I)`` against ``indexed(I)`` targets of ``bench.measure.shared_choice_traffic``:
    the largest ratio of shared's to indexed's sectors or requests over every row (a row whose
    results differ counts as failing), and the largest sector ratio on 36-byte clustered rows."""
    rows = [r for r in sv.get("rows", [])]
    worst = clustered = None
    if rows:
        worst = max(float("inf") if "error" in r else
                    max(r["shared_sectors"] / max(r["indexed_sectors"], 1),
                        r["shared_requests"] / max(r["indexed_requests"], 1)) for r in rows)
        c36 = [r["sector_ratio"] for r in rows if r["bytes"] == 36 and r["pattern"] == "clustered"]
        clustered = max(c36) if c36 else None
    out = []
    for target, value, unit in (("shared_le_indexed", worst, "x indexed (worst of sectors, requests)"),
                                ("shared_clustered_36", clustered, "x indexed sectors")):
        text, limit = TARGETS[target]
        out.append({"target": target, "text": text, "example": "shared_vs_indexed", "kernel": None,
                    "measured": value, "unit": unit, "limit": limit, "status": _status(value, limit)})
    return out


# -- the table ---------------------------------------------------------------------------------------
def _ms(v) -> str:
    if v is None:
        return "n/a"
    return f"{v:.3g} ms" if v < 100 else f"{v:.0f} ms"


def _x(v) -> str:
    if v is None:
        return "n/a"
    return f"{v:.3g}x"


def _table(headers, rows) -> str:
    rows = [list(r) + [""] * (len(headers) - len(r)) for r in rows]
    widths = [max([len(str(h))] + [len(str(r[i])) for r in rows]) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def render(results: dict) -> str:
    """The human-readable report of a results dict."""
    meta = results["meta"]
    parts = [
        f"kernc {meta['kernc_version']} benchmarks ({'quick' if meta['quick'] else 'full'}; arch {meta['arch']}; "
        f"medians of {meta['reps_inprocess']} in-process / {meta['reps_subprocess']} subprocess runs)",
        f"nvcc: {meta['nvcc'] or 'not found (nvcc columns n/a)'}  ptxas: {meta['ptxas'] or 'not found'}  "
        f"SASS: {meta['sass_tool'] or 'no cuobjdump/nvdisasm (pip install kernc[bench])'}  "
        f"python startup: {_ms(meta.get('python_startup_ms'))}",
        f"machine: {meta.get('cpu_count')} CPUs, load average {meta.get('load_average_1min') or 0:.2f} at the start"
        + ("; PYTHONDONTWRITEBYTECODE is set here but not for the CLI runs (they use .pyc files, as an"
           " installed kernc does)" if meta.get("python_dont_write_bytecode") else ""),
        "",
        "Compile latency to PTX: median time (ratio to Triton's warm compile to PTX of bench/triton/NAME.py "
        "for the warm compile, to nvcc -ptx -O3 of the CUDA C++ equivalent for the others; target)",
    ]
    status = {(t["target"], t["example"], t["kernel"], t.get("pair")): t["status"] for t in results["targets"]}
    rows = []
    for name, row in results["compile"].items():
        if "error" in row and "inprocess_warm_ms" not in row:
            rows.append([name, _ms(row.get("nvcc_ptx_ms")), _triton_cell(row.get("triton")),
                         f"error: {row['error']}", "", "", ""])
            continue
        cells = [name, _ms(row.get("nvcc_ptx_ms")), _triton_cell(row.get("triton"))]
        for col in COMPILE_COLUMNS:
            st = status.get((col, name, None, None), "n/a")
            if col == "inprocess_warm":
                cells.append(f"{_ms(row.get(f'{col}_ms'))} ({_x((row.get('ratios_to_triton') or {}).get(col))} "
                             f"Triton {st}; {_x(row['ratios_to_nvcc'].get(col))} nvcc)")
            else:
                cells.append(f"{_ms(row.get(f'{col}_ms'))} ({_x(row['ratios_to_nvcc'].get(col))} {st})")
            if col == "inprocess_warm":
                share, warm = row.get("inprocess_warm_llvm_share"), row.get("inprocess_warm_ms")
                llvm = share * warm if share is not None and warm is not None else None
                cells.append(f"{100 * share:.0f}% = {_ms(llvm)} ({_x(_ratio(llvm, row.get('nvcc_ptx_ms')))})"
                             if llvm is not None else "n/a")
        rows.append(cells)
    parts.append(_table(["example", "nvcc -ptx", "Triton warm (with ptxas)", "in-process warm",
                         "of which LLVM backend", "in-process cache hit", "CLI cold", "CLI first run", "CLI cache hit"],
                        rows))
    parts.append("targets: warm <= 0.25x Triton's; cache hit <= 2 ms; CLI cold and CLI first run <= 0.8x, CLI cache "
                 "hit <= 0.333x nvcc -ptx")
    if meta.get("triton_version"):
        parts.append(f"Triton {meta['triton_version']}: triton.compile of an ASTSource for GPUTarget('cuda', CC, 32), "
                     "no disk cache (TRITON_ALWAYS_COMPILE, a fresh TRITON_CACHE_DIR each), after one untimed first "
                     "compile of another kernel; warm = to PTX (the whole compile less its ptxas stage, where kernc "
                     "and nvcc -ptx stop), with ptxas = the whole compile")
    else:
        parts.append("Triton not installed (Triton columns n/a; pip install 'kernc[bench]')")
    parts.append("CLI first run: kernc from a copy without .pyc files, python -B, a KERNC_CACHE_DIR that does "
                 "not exist yet; CLI cold: .pyc files present, KERNC_ALWAYS_COMPILE=1")
    if (results.get("first_run") or {}).get("error"):
        parts.append(f"CLI first run not measured: error: {results['first_run']['error']}")
    if (results.get("triton_setup") or {}).get("error"):
        parts.append(f"Triton not measured: error: {results['triton_setup']['error']}")
    parts.append("of which LLVM backend: the median share of each warm compile spent in gpu-module-to-binary "
                 "(LLVM's O3 pipeline and NVPTX code generation, in process; the stage 'ptx' of kernc compile "
                 "--time-passes), a floor under the warm time")

    notes: list[str] = []
    parts += ["", "Code quality (ptxas -v and SASS of the PTX files, same ptxas; kernc / nvcc / Triton (kernc / nvcc "
                  "ratio; target; kernc / Triton ratio)), compared at equal FMA contraction (Triton's "
                  "enable_fp_fusion as kernc's --fmad); kernc's PTX is the variant launched when every index "
                  "scalar argument is >= 0, as in the examples; Triton's PTX is assembled for the target it "
                  "names (sm_90a for sm_90)"]
    rows = []
    for name, pairs in results["code_quality"].items():
        for pair, q in pairs.items():
            label = CODE_QUALITY_PAIRS[pair][2] if pair in CODE_QUALITY_PAIRS else pair
            if "error" in q:
                rows.append([name, "", label, f"error: {q['error']}", "", ""])
                continue
            if (q.get("triton") or {}).get("error"):
                notes.append(f"  {name} ({label}): Triton: error: {q['triton']['error']}")
            for kname, k in q.get("kernels", {}).items():
                mine, theirs, peer = k["kernc"], k["nvcc"] or {}, k.get("triton") or {}
                to_peer = k.get("ratios_to_triton") or {}
                reg_st = status.get(("registers", name, kname, pair), "n/a")
                sass_st = status.get(("sass_instructions", name, kname, pair), "n/a")
                spills = lambda e: f"{e['spill_stores_bytes']}+{e['spill_loads_bytes']}" if e else "n/a"  # noqa: E731
                rows.append([
                    name, kname, label,
                    f"{mine['registers']} / {theirs.get('registers', 'n/a')} / {peer.get('registers', 'n/a')} "
                    f"({_x(k['ratios']['registers'])} {reg_st}; {_x(to_peer.get('registers'))})",
                    f"{spills(mine)} / {spills(theirs)} / {spills(peer)}",
                    f"{mine.get('sass_instructions', 'n/a')} / {theirs.get('sass_instructions', 'n/a')} / "
                    f"{peer.get('sass_instructions', 'n/a')} "
                    f"({_x(k['ratios']['sass_instructions'])} {sass_st}; {_x(to_peer.get('sass_instructions'))})",
                ])
    parts.append(_table(["example", "kernel", "compared", "registers", "spill bytes st+ld", "SASS instructions"],
                        rows))
    parts += notes

    parts += ["", "Memory traffic on the CPU interpreter: sectors per warp request (ratio to the ideal 4 = "
                  "32 consecutive 4-byte elements)"]
    rows = []
    for name, m in results["memory"].items():
        if m is None:
            rows.append([name, "n/a (no numpy reference)", "", "", ""])
        elif "error" in m:
            rows.append([name, f"error: {m['error']}", "", "", ""])
        else:
            def cell(kind):
                per = m[f"{kind}_sectors_per_request"]
                return "n/a" if per is None else f"{per:.2f} ({_x(m[f'{kind}_ratio_to_ideal'])})"
            rows.append([name, m["problem_size"], f"{m['global_load_requests']}", cell("load"),
                         f"{m['global_store_requests']}", cell("store"), m["global_atomics"],
                         m.get("shared_bank_conflicts", "n/a")])
    parts.append(_table(["example", "P", "load req", "load sectors/req", "store req", "store sectors/req",
                         "atomics", "bank conflicts"], rows))
    parts += _render_memory_views(results.get("memory_views"))
    parts += _render_memory_accessors(results.get("memory_accessors"))
    parts += _render_memory_contractions(results.get("memory_contractions"))
    parts += _render_tensor_cores(results.get("memory_tensor_cores"))
    parts += interp.render(results)
    parts += histogram.render(results)
    parts += reductions.render(results)
    parts += bundle_adjustment.render(results)

    lp = results.get("launch")
    if lp:
        parts += ["", "Host launch preparation on the CPU (no driver call)"]
        if "error" in lp:
            parts.append(f"  error: {lp['error']}")
        else:
            parts.append(f"  {lp['kernel']} ({lp['kernel_args']} kernel arguments): binding + packing "
                         f"{lp['bind_and_pack_us']:.1f} us per call; the 10 us launch-overhead target "
                         "includes the driver call and is checked with a GPU (below)")

    g = results["gpu"]
    parts += ["", "GPU"]
    if not g.get("available"):
        parts.append(f"  skipped: {g.get('note', 'no GPU')}")
        parts.append("  conv2d_fwd_f16, conv2d_wgrad_f16 (tensor cores) against the cuBLAS time of their im2col "
                     "GEMMs: not measured (no GPU)")
    else:
        parts.append(f"  {g.get('name')} (peak {g.get('peak_bandwidth_gbs') or 0:.0f} GB/s from "
                     f"{g.get('memory_clock_khz')} kHz x {g.get('bus_width_bits')} bit x 2); reference built with "
                     f"{g.get('reference_built_with', '?')}")
        bw = g.get("saxpy_bandwidth")
        if bw:
            pk = lambda v: "n/a" if v is None else f"{v:.1f}% of peak"  # noqa: E731
            parts.append(f"  saxpy n={bw['n']}: kernc {bw['kernc_gbs']:.0f} GB/s ({pk(bw['kernc_pct_of_peak'])}), "
                         f"CUDA C++ {bw['reference_gbs']:.0f} GB/s ({pk(bw['reference_pct_of_peak'])}); "
                         f"ratio {_x(bw['ratio_kernc_to_reference'])}")
        parts += _render_bandwidth(g)
        gm = g.get("gemm_f16_tensor_cores")
        if gm and "error" in gm:
            parts.append(f"  gemm_f16 against cupy.matmul: error: {gm['error']}")
        elif gm:
            parts.append(f"  gemm_f16 {gm['n']}^3 ({gm['arch']}, tensor cores: {gm['tensor_cores']}): kernc "
                         f"{gm['kernc_gflops']:.0f} GFLOP/s, cupy.matmul f16 {gm['cupy_gflops']:.0f} GFLOP/s; "
                         f"ratio {_x(gm['ratio_kernc_to_cupy'])}")
        gf = (g.get("gemm_f32_tiled") or {}).get("sizes") or {}
        for n, r in gf.items():
            if "error" in r:
                parts.append(f"  gemm f32 {n}^3 against cupy.matmul: error: {r['error']}")
            else:
                parts.append(f"  gemm f32 {n}^3 (tiled): kernc {r['kernc_gflops']:.0f} GFLOP/s, cupy.matmul f32 "
                             f"(TF32 off) {r['cupy_gflops']:.0f} GFLOP/s; ratio {_x(r['ratio_kernc_to_cupy'])}")
        parts += _render_conv_f16_gpu(g)
        lo = g.get("launch_overhead")
        if lo:
            parts.append(f"  host launch overhead per call (n={lo['n']}): kernc API {lo['kernc_api_us']:.1f} us, "
                         f"kernc kernel raw {lo['kernc_raw_us']:.1f} us, CUDA C++ raw (CuPy) "
                         f"{lo['reference_raw_us']:.1f} us; ratio API/raw {_x(lo['ratio_api_to_reference'])}")
        if "error" in g:
            parts.append(f"  error: {g['error']}")

    counts = {s: sum(1 for t in results["targets"] if t["status"] == s) for s in ("PASS", "FAIL", "n/a")}
    parts += ["", f"Targets: {counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['n/a']} n/a"]
    for t in results["targets"]:
        if t["status"] == "FAIL":
            where = t["example"] + (f"/{t['kernel']}" if t["kernel"] and t["kernel"] != t["example"] else "")
            if t.get("pair") in CODE_QUALITY_PAIRS:
                where += f" ({CODE_QUALITY_PAIRS[t['pair']][2]})"
            val = f"{t['measured']:.3g} {t['unit']}"
            parts.append(f"  FAIL {t['text']}: {where} measured {val}")
    return "\n".join(parts) + "\n"


def _triton_cell(t) -> str:
    """The compile table's Triton cell: warm to PTX (whole compile with ptxas), a note or an error."""
    if not t:
        return "n/a"
    if "error" in t:
        return f"error: {t['error']}"
    if t.get("warm_ms") is None:
        return "n/a"
    return f"{_ms(t['warm_ms'])} ({_ms(t.get('warm_cubin_ms'))})"


def _sectors_cell(m: dict, kind: str) -> str:
    """``sectors/request (ratio to the ideal x)`` of a :func:`bench.measure.traffic_row`, or n/a."""
    per = m.get(f"{kind}_sectors_per_request")
    return "n/a" if per is None else f"{per:.2f} ({_x(m.get(f'{kind}_ratio_to_ideal'))})"


def _render_memory_views(views) -> list[str]:
    """The table of transpose and permute with and without ``kern-coalesce-views`` (nothing when the
    results hold none: an older results file)."""
    if not views:
        return []
    lines = ["", "Memory traffic with and without the coalescing pass (kern-coalesce-views; naive = "
                 "kernc.compile(src, coalesce=False)): sectors per warp request (ratio to the ideal 4)"]
    if "error" in views:
        return lines + [f"  error: {views['error']}"]
    rows, notes = [], []
    for job, e in views.items():
        shape = "x".join(str(d) for d in e.get("shape", ()))
        if "error" in e:
            rows.append([job, shape, f"error: {e['error']}"])
            continue
        for i, (variant, m) in enumerate(e["variants"].items()):
            rows.append([job if i == 0 else "", shape if i == 0 else "", variant, m["global_load_requests"],
                         _sectors_cell(m, "load"), m["global_store_requests"], _sectors_cell(m, "store"),
                         m["shared_requests"], m["shared_bank_conflicts"]])
        notes.append(f"  {job} ({e['source']}): naive / coalesced store sectors "
                     f"{_x(e.get('store_sectors_ratio_naive_to_coalesced'))}, all sectors "
                     f"{_x(e.get('sectors_ratio_naive_to_coalesced'))}")
    lines.append(_table(["job", "shape", "variant", "load req", "load sectors/req", "store req",
                         "store sectors/req", "shared req", "bank conflicts"], rows))
    return lines + notes


def _render_memory_accessors(acc) -> list[str]:
    """The per-accessor table of ``bench/kern/accessors.kern`` and each row's comment (nothing when
    the results hold none)."""
    if not acc:
        return []
    if "error" in acc:
        return ["", "Memory traffic per accessor", f"  error: {acc['error']}"]
    lines = ["", f"Memory traffic per accessor ({acc['source']}: {acc['dtype']}, P = {acc['problem_size']}, "
                 f"block {acc['block']}; whole-kernel counters, sectors per request (ratio to the ideal "
                 f"{acc['ideal_sectors_per_request']}); atomics (expected))"]
    rows, notes = [], []
    for name, r in acc["rows"].items():
        if "error" in r:
            rows.append([r["accessor"], f"error: {r['error']}"])
            continue
        rows.append([r["accessor"], r["global_load_requests"], r["global_load_sectors"], _sectors_cell(r, "load"),
                     r["global_store_requests"], _sectors_cell(r, "store"),
                     f"{r['global_atomics']} ({r['expected_atomics']})", r["shared_requests"],
                     r["shared_bank_conflicts"]])
        notes.append(f"  {r['accessor']}: {r['comment']}")
    lines.append(_table(["accessor", "load req", "load sectors", "load sectors/req", "store req",
                         "store sectors/req", "atomics (expected)", "shared req", "bank conflicts"], rows))
    lines += ["  inputs:", *(f"    {k}: {v}" for k, v in acc["inputs"].items()), "  what each row should show:"]
    return lines + ["  " + n for n in notes] + _render_shared_vs_indexed(acc.get("shared_vs_indexed"))


def _render_shared_vs_indexed(sv) -> list[str]:
    """The rows of ``bench.measure.shared_choice_traffic`` (nothing when absent)."""
    if not sv:
        return []
    head = ["", "shared(I) as the launcher runs it against indexed(I) (global loads; targets: shared <= indexed "
                "sectors and requests everywhere, <= 0.4x sectors on 36-byte clustered)"]
    if "error" in sv:
        return head + [f"  error: {sv['error']}"]
    rows = [[f"{r['bytes']} B", r["pattern"], r["P"],
             "error" if "error" in r else ("staged" if r["shared_staged"] else "as indexed"),
             f"{r['shared_sectors']} / {r['shared_requests']}", f"{r['indexed_sectors']} / {r['indexed_requests']}",
             f"{r['sector_ratio']:.2f}"] for r in sv["rows"]]
    return head + [_table(["element", "indices", "P", "shared ran", "shared sectors / req",
                           "indexed sectors / req", "sectors ratio"], rows)] + [
        "  indices:", *(f"    {k}: {v}" for k, v in sv["patterns"].items())]


def _variant_rows(job: str, e: dict) -> list[list]:
    """The table rows of one contraction job (one per build variant, or its error): the job and its
    shape, the variant, load sectors per output and per request, shared requests, bank conflicts,
    registers and spill bytes."""
    shape = "x".join(str(d) for d in e.get("shape", ()))
    if "error" in e:
        return [[job, shape, f"error: {e['error']}"]]
    rows = []
    for i, (variant, m) in enumerate(e["variants"].items()):
        spill = "n/a" if m["spill_stores_bytes"] is None else f"{m['spill_stores_bytes']}+{m['spill_loads_bytes']}"
        rows.append([job if i == 0 else "", shape if i == 0 else "", variant,
                     f"{m['load_sectors_per_output']:.3g}", _sectors_cell(m, "load"), m["shared_requests"],
                     m["shared_bank_conflicts"], m["registers"] if m["registers"] is not None else "n/a", spill])
    return rows


def _render_memory_contractions(con) -> list[str]:
    """The gemm rows with and without ``kern-tile-contractions`` (nothing when the results hold
    none: an older results file, or no examples/gemm.kern)."""
    if not con:
        return []
    lines = ["", "Contraction tiling (kern-tile-contractions; untiled = kernc.compile(src, tile=False)): "
                 "CPU-interpreter global-load sectors per output, ptxas -v registers and spill bytes"]
    rows, notes = [], []
    for job, e in con.items():
        rows += _variant_rows(job, e)
        if "error" in e:
            continue
        notes.append(f"  {job}: untiled / tiled sectors {_x(e.get('sectors_ratio_untiled_to_tiled'))}; the "
                     f"classic tiled kernel (one output per thread{', of the im2col GEMM' if 'conv' in job else ''}) "
                     f"would load "
                     f"{e['classic_32x32_sectors_per_output']:.3g} (32x32 tiles) or "
                     f"{e['classic_64x64_sectors_per_output']:.3g} (64x64) per output; results bitwise equal: "
                     f"{e['bitwise_equal']}"
                     + (f"; tiled with plain loads instead of cp.async (--no-async-copy): "
                        f"{e['plain_loads_registers']} registers, {e['plain_loads_spill_bytes']} spill bytes"
                        if e.get("plain_loads_registers") is not None else ""))
    lines.append(_table(["job", "M x K x N (conv: P, output shape)", "variant", "load sectors/output", "load sectors/req", "shared req",
                         "bank conflicts", "registers", "spill bytes st+ld"], rows))
    return lines + notes


def _render_tensor_cores(tc) -> list[str]:
    """The tensor-core jobs' rows (gemms, convolutions) on tensor cores and on CUDA cores (nothing when
    the results hold none)."""
    if not tc:
        return []
    lines = ["", "Tensor cores (kern-mma-contractions; cuda_cores = kernc.compile(src, tensor_cores=False), "
                 "untiled = also tile=False): CPU-interpreter global-load sectors per output, ptxas -v registers "
                 "and spill bytes"]
    rows, notes = [], []
    for job, e in tc.items():
        rows += _variant_rows(job, e)
        if "error" in e:
            continue
        right = "equal to the exact product" if job == "gemm_i8" else "within 1e-3*sqrt(K) of f64"
        notes.append(f"  {job} ({e.get('arch')}, {e.get('dtype')}): {right}: {e['within_f64']}; results bitwise "
                     f"equal on the CPU: {e['bitwise_equal']}" + (f"; GPU: {e['gpu']}" if e.get("gpu") else ""))
    lines.append(_table(["job", "M x K x N (conv: P, output shape)", "variant", "load sectors/output",
                         "load sectors/req", "shared req", "bank conflicts", "registers", "spill bytes st+ld"], rows))
    return lines + notes


def _render_conv_f16_gpu(g: dict) -> list[str]:
    """The GPU lines of the tensor-core convolutions against the cuBLAS time of their im2col GEMMs
    and the f32 ones (``bench.gpu._conv``; nothing when the results hold none)."""
    lines = []
    rows = {**{n: (c, "f16") for n, c in (g.get("conv_f16_tensor_cores") or {}).items()},
            **{n: (c, "f32, TF32 off") for n, c in (g.get("conv_f32_tiled") or {}).items()}}
    for name, (c, dtype) in rows.items():
        if "error" in c:
            lines.append(f"  {name} against its im2col GEMM (cupy.matmul {dtype}): error: {c['error']}")
            continue
        m, k, n = c["gemm"]
        lines.append(f"  {name} NxHxWxCxK {'x'.join(map(str, c['shape']))}, 3x3 filter ({c['arch']}, tensor cores: "
                     f"{c['tensor_cores']}): kernc {c['kernc_gflops']:.0f} GFLOP/s, its im2col GEMM {m}x{k}x{n} in "
                     f"cuBLAS {c['cublas_gflops']:.0f} GFLOP/s; ratio {_x(c['ratio_kernc_to_cublas'])}")
    return lines


def _render_bandwidth(g: dict) -> list[str]:
    """Lines of the GPU section for the bandwidth comparisons of ``bench.gpu`` (gather, scatter,
    transpose): one table row per variant, then each comparison's ratios; nothing when the results
    hold none (an older results file, or the run stopped before them)."""
    from .gpu import COMPARISONS

    found = [(name, g[f"{name}_bandwidth"]) for name in COMPARISONS if f"{name}_bandwidth" in g]
    if not found:
        return []
    lines = ["  Effective bandwidth (the bytes each job must move at minimum / median device time; "
             "every variant of a job is charged the same bytes):"]
    rows, notes = [], []
    for name, c in found:
        if "error" in c:  # a failed comparison (wrong results included): its message, no numbers
            notes.append(f"    {name}: error: {c['error']}")
            continue
        size = f"{c['rows']}x{c['cols']}" if "rows" in c else f"n={c['n']}"
        variants = c.get("variants", {})
        for i, v in enumerate(variants.values()):
            pct = "n/a" if v.get("pct_of_peak") is None else f"{v['pct_of_peak']:.1f}%"
            rows.append([name if i == 0 else "", size if i == 0 else "", v["label"], f"{v['gbs']:.0f}",
                         pct, f"{v['ms'] * 1e3:.1f}"])
        ratios = []
        for pair, r in c.get("ratios", {}).items():
            a, b = pair.split("/", 1)
            ratios.append(f"{variants.get(a, {}).get('label', a)} / {variants.get(b, {}).get('label', b)} {_x(r)}")
        notes.append(f"    {name} (GB/s ratios): {'; '.join(ratios)}")
        if c.get("shared_indices_ms") is not None:
            notes.append(f"      shared_indices table build: {c['shared_indices_ms'] * 1e3:.0f} us "
                         "(once per index array; not in the times above)")
        if c.get("index_pattern"):
            notes.append(f"      idx: {c['index_pattern']}; {c.get('distinct')} distinct of {c.get('m')}")
        notes.append(f"      bytes: {c['bytes_counted']}")
    if rows:
        lines += ["    " + ln for ln in _table(["job", "size", "variant", "GB/s", "% of peak", "us"], rows).splitlines()]
    return lines + notes


def _available(examples_dir: str) -> list[str]:
    """The examples (``NAME.kern``) of ``examples_dir``, sorted."""
    return sorted(f[:-5] for f in os.listdir(examples_dir) if f.endswith(".kern"))


def _usage(message: str):
    """A bad option value: ``message`` on stderr and exit status 2, as argparse does."""
    sys.stderr.write(f"bench: error: {message}\n")
    return SystemExit(2)


def check_options(ns) -> None:
    """Reject what would only fail after the whole run: an unknown ``--examples-dir`` or
    ``--example`` and a ``--json`` file whose folder does not exist or is not writable (usage
    errors: exit 2), and a closed standard output (exit 1). (``--arch`` is checked by its option
    type, ``passes.targets.arch_option``.)"""
    if ns.examples_dir and not os.path.isdir(ns.examples_dir):
        raise _usage(f"--examples-dir {ns.examples_dir}: no such folder")
    examples_dir = _examples_dir(ns)
    if not os.path.isdir(examples_dir):  # (an installed kernc run outside the repository)
        raise _usage(f"no examples folder at {examples_dir}; name one with --examples-dir DIR")
    available = _available(examples_dir)
    unknown = [n for n in ns.example or (["saxpy"] if ns.quick else available) if n not in available]
    if unknown or not available:
        have = f"it has {', '.join(available)}" if available else "it has no .kern file"
        raise _usage(f"no example '{unknown[0] if unknown else '*.kern'}' in {examples_dir} ({have})")
    if sys.stdout is None:  # started with stdout closed (`>&-`): the table (or JSON) goes there
        raise SystemExit("bench: standard output is closed; the table is printed there")
    if ns.json == "-":  # the JSON on standard output (the table then goes to standard error)
        return
    folder = os.path.dirname(os.path.abspath(ns.json))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise _usage(f"--json {ns.json}: the folder {folder} does not exist or is not writable")
    if os.path.isdir(ns.json):  # found by a trial: refused only after the whole run, its results lost
        raise _usage(f"--json {ns.json} is a folder; name a file in it")


def failures(results: dict) -> list[str]:
    """Every measurement of ``results`` that failed, as ``"path.to.row: error"`` lines in the order
    of the results. A failed measurement holds an ``"error"`` entry (see :func:`collect`); a target
    that is not met is not a failure."""
    out: list[str] = []

    def visit(node, path):
        if isinstance(node, dict):
            err = node.get("error")
            if err:
                out.append(f"{'.'.join(path) or 'results'}: {err}")
            for k, v in node.items():
                if k != "error":
                    visit(v, path + [str(k)])

    visit(results, [])
    return out


def run(ns) -> int:
    """Run the benchmarks for parsed options ``ns``: print the table and write ``ns.json`` (first,
    so that a closed pipe on the table loses nothing); ``--json -`` prints the JSON on standard
    output and the table on standard error.

    Returns 0, or 1 when a measurement failed (an example that does not compile, a wrong result):
    the table and the JSON still hold everything measured, and stderr lists the failures."""
    check_options(ns)
    results = collect(ns)
    text = json.dumps(results, indent=2, sort_keys=True) + "\n"
    if ns.json == "-":
        sys.stderr.write(render(results))
        sys.stdout.write(text)
    else:
        from kernc.support.output_files import write_atomically

        write_atomically(ns.json, text)
        sys.stdout.write(render(results))
        print(f"wrote {ns.json}")
    failed = failures(results)
    if failed:
        sys.stderr.write(f"bench: {len(failed)} measurement(s) failed:\n" + "".join(f"  {f}\n" for f in failed))
        return 1
    return 0


def main(argv=None) -> int:
    """Entry point of ``python -m bench``. A reader that closes the pipe early (``| head``) ends
    the run quietly with status 1 (the JSON is written before the table)."""
    ns = build_parser().parse_args(argv)
    try:
        return run(ns)
    except BrokenPipeError:
        from kernc.support.output_files import quiet_stdout

        quiet_stdout()
        return 1
