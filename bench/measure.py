"""The CPU-side measurements: compile latency, code quality (registers, spills, SASS) and memory
traffic on the CPU interpreter. Each function returns plain JSON-ready dicts; ratios are formed in
``runner``."""

from __future__ import annotations

import importlib.util
import os
import statistics
import subprocess
import sys
import time

from . import tools

#: Ideal sectors per warp request: 32 lanes reading 32 consecutive 4-byte elements = 128 bytes.
IDEAL_SECTORS_PER_REQUEST = 4


def median_seconds(fn, reps: int, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` over ``reps`` runs after ``warmup`` untimed runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(max(1, reps)):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _run_checked(cmd, env=None, cwd=None) -> None:
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd[:4]))} ... exited {proc.returncode}: {proc.stderr.strip()[:2000]}")


def python_startup_ms(reps: int) -> float:
    """Median time of ``python -c pass`` (the floor under every CLI number), in ms."""
    return 1e3 * median_seconds(lambda: _run_checked([sys.executable, "-c", "pass"]), reps)


def compile_latency(kern_path: str, cu_path: str | None, arch: str, reps: int, sub_reps: int, workdir: str,
                    cache_dir: str) -> dict:
    """Compile-latency medians (ms) of one ``.kern`` file to PTX, and of its CUDA C++ equivalent:

    - ``inprocess_warm_ms``: ``Compilation(..., use_cache=False).ptx()`` in this (warm) process;
    - ``inprocess_cache_hit_ms``: ``kernc.compile(...).ptx`` answered by the in-memory cache;
    - ``cli_cold_ms``: ``python -m kernc compile FILE -o OUT`` with ``KERNC_ALWAYS_COMPILE=1`` (no
      compile cache; byte-compiled modules and parser tables exist, as after any first run);
    - ``cli_cache_hit_ms``: the same command with a warm disk cache (``KERNC_CACHE_DIR``);
    - ``nvcc_ptx_ms``: ``nvcc -ptx -O3 -arch=ARCH CU -o OUT`` (``None`` without nvcc or ``cu_path``;
      nvcc's PTX is kept as ``nvcc_ptx_path``).

    The three subprocess commands run interleaved (nvcc, CLI cold, CLI hit, nvcc, ...) after one
    untimed round, so that load on the machine affects the ratios as little as possible.
    """
    import kernc
    from kernc.compiler import Compilation, CompileOptions

    text = open(kern_path, encoding="utf-8").read()
    opts = CompileOptions(arch=arch)
    warm = median_seconds(lambda: Compilation(text, kern_path, opts, use_cache=False).ptx(), reps)
    kernc.compile(text, filename=kern_path, arch=arch).ptx  # fill the cache
    hit = median_seconds(lambda: kernc.compile(text, filename=kern_path, arch=arch).ptx, max(reps, 20) * 5)

    stem = os.path.splitext(os.path.basename(kern_path))[0]
    out = os.path.join(workdir, stem + ".kernc.cli.ptx")
    cmd = [sys.executable, "-m", "kernc", "compile", kern_path, "--arch", arch, "-o", out]
    # The CLI runs as in a default Python installation, which byte-compiles modules once (pip does
    # it at install time; PYTHONDONTWRITEBYTECODE would recompile every changed module in every
    # process). The untimed first round writes the .pyc files and kernc's parser tables, which
    # depend only on kernc itself; KERNC_ALWAYS_COMPILE=1 then makes every timed run compile.
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env_cold = dict(base_env, KERNC_CACHE_DIR=cache_dir, KERNC_ALWAYS_COMPILE="1")
    env_hit = dict(base_env, KERNC_CACHE_DIR=cache_dir)
    env_hit.pop("KERNC_ALWAYS_COMPILE", None)
    commands = {
        "cli_cold": lambda: _run_checked(cmd, env_cold, workdir),
        "cli_cache_hit": lambda: _run_checked(cmd, env_hit, workdir),
    }
    nvcc = tools.find("nvcc")
    nvcc_out = None
    if nvcc and cu_path and os.path.exists(cu_path):
        nvcc_out = os.path.join(workdir, stem + ".nvcc.ptx")
        nvcc_cmd = [nvcc, "-ptx", "-O3", f"-arch={arch}", cu_path, "-o", nvcc_out]
        commands["nvcc_ptx"] = lambda: _run_checked(nvcc_cmd, cwd=workdir)
    times: dict = {k: [] for k in commands}
    for rnd in range(max(1, sub_reps) + 1):
        for k, fn in commands.items():
            t0 = time.perf_counter()
            fn()
            if rnd:  # round 0 warms up (and fills the disk cache for the CLI hit)
                times[k].append(time.perf_counter() - t0)
    result = {
        "inprocess_warm_ms": 1e3 * warm,
        "inprocess_cache_hit_ms": 1e3 * hit,
        **{f"{k}_ms": 1e3 * statistics.median(v) for k, v in times.items()},
    }
    result.setdefault("nvcc_ptx_ms", None)
    result["nvcc_ptx_path"] = nvcc_out
    return result


def nvcc_ptx(cu_path: str | None, arch: str, workdir: str, stem: str, flags=()) -> str | None:
    """``nvcc -ptx -O3 -arch=ARCH FLAGS CU`` (e.g. ``--fmad=false``) into ``WORKDIR/STEM.nvcc.ptx``;
    its path, or ``None`` without nvcc or ``cu_path``."""
    nvcc = tools.find("nvcc")
    if not (nvcc and cu_path and os.path.exists(cu_path)):
        return None
    out = os.path.join(workdir, f"{stem}.nvcc.ptx")
    _run_checked([nvcc, "-ptx", "-O3", f"-arch={arch}", *flags, cu_path, "-o", out], cwd=workdir)
    return out


def _quality_of(ptx_path: str, cubin_path: str, arch: str) -> dict:
    from kernc.backend import toolkit

    with open(ptx_path, encoding="utf-8") as f:
        ptx = f.read()
    res = toolkit.run_ptxas(ptx, arch=arch)
    if not res.ok:
        raise RuntimeError(f"ptxas rejected {ptx_path}: {res.log.strip()[:2000]}")
    tools.assemble(ptx_path, cubin_path, arch)
    sass = tools.sass_counts(cubin_path)
    kernels = {}
    for name, regs in res.registers.items():
        stores, loads = res.spills.get(name, (0, 0))
        entry = {"registers": regs, "spill_stores_bytes": stores, "spill_loads_bytes": loads}
        if sass is not None and name in sass:
            entry["sass_instructions"] = sass[name]["instructions"]
        kernels[name] = entry
    return kernels


def code_quality(kernc_ptx: str, nvcc_ptx_path: str | None, arch: str, workdir: str, stem: str) -> dict:
    """Registers, spill bytes (``ptxas -v``) and SASS instruction counts of kernc's PTX and, when
    given, of nvcc's PTX for the same kernels, both assembled by the same ``ptxas -arch=ARCH``:
    ``{"kernc": {kernel: {...}}, "nvcc": {kernel: {...}} | None}``."""
    kpath = os.path.join(workdir, f"{stem}.kernc.ptx")
    with open(kpath, "w", encoding="utf-8") as f:
        f.write(kernc_ptx)
    out = {"kernc": _quality_of(kpath, os.path.join(workdir, f"{stem}.kernc.cubin"), arch), "nvcc": None}
    if nvcc_ptx_path:
        out["nvcc"] = _quality_of(nvcc_ptx_path, os.path.join(workdir, f"{stem}.nvcc.cubin"), arch)
    return out


def load_reference(examples_dir: str, name: str):
    """``examples/NAME.py`` (``make_inputs``/``reference``) as a module, or ``None``."""
    path = os.path.join(examples_dir, f"{name}.py")
    if not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location(f"kernc_bench_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def memory_traffic(examples_dir: str, name: str, problem_size: int) -> dict | None:
    """The CPU interpreter's global-memory counters for one call of kernel ``NAME`` of
    ``examples/NAME.kern`` on ``make_inputs(problem_size)``, with sectors per request for loads and
    stores and their ratio to the ideal (:data:`IDEAL_SECTORS_PER_REQUEST`). ``None`` for an
    example without a numpy reference module."""
    import numpy as np

    import kernc

    ref = load_reference(examples_dir, name)
    if ref is None or not hasattr(ref, "make_inputs"):
        return None
    mod = kernc.compile_file(os.path.join(examples_dir, f"{name}.kern"))
    inputs = ref.make_inputs(problem_size, np.random.default_rng(0))
    kernel = mod.kernels.get(name) or next(iter(mod.kernels.values()))
    stats = kernel(**inputs).stats.to_dict()
    out = {"kernel": kernel.name, "problem_size": problem_size, **stats}
    for kind in ("load", "store"):
        req, sec = stats[f"global_{kind}_requests"], stats[f"global_{kind}_sectors"]
        per = sec / req if req else None
        out[f"{kind}_sectors_per_request"] = per
        out[f"{kind}_ratio_to_ideal"] = per / IDEAL_SECTORS_PER_REQUEST if per is not None else None
    return out


def launch_preparation(examples_dir: str, reps: int, calls: int = 2000) -> dict:
    """Host-side launch preparation of ``saxpy`` (4 kernel arguments: ``a``, ``x``, ``y``, ``n``),
    measurable without a GPU: argument binding and validation (``backend.binding.bind``, as every
    launch does, with its ``BindPlan``) plus packing (``backend.cuda.ArgPacker``), both prepared once
    per kernel as :class:`kernc.api.Kernel` does, on numpy
    arrays of 1024 ``f32``. Returns the median over ``reps`` samples of the mean time per call in
    microseconds. The driver call that a GPU launch adds is measured by ``bench.gpu``."""
    import numpy as np

    import kernc
    from kernc.backend import binding, cpu
    from kernc.backend.cuda import ArgPacker

    sig = kernc.compile_file(os.path.join(examples_dir, "saxpy.kern")).saxpy.signature
    x, y, a = np.ones(1024, np.float32), np.zeros(1024, np.float32), np.float32(2.0)
    packer, plan = ArgPacker(sig, 32), binding.BindPlan(sig)  # both kept per kernel, as the API does

    def prepare():
        packer(binding.bind(sig, (a, x, y), {}, cpu.is_host_array, "cpu", plan=plan).args)

    for _ in range(max(1, calls // 10)):
        prepare()
    samples = []
    for _ in range(max(1, reps)):
        t0 = time.perf_counter()
        for _ in range(calls):
            prepare()
        samples.append((time.perf_counter() - t0) / calls)
    return {"kernel": "saxpy", "kernel_args": len(sig.arg_names), "calls_per_sample": calls,
            "bind_and_pack_us": 1e6 * statistics.median(samples)}
