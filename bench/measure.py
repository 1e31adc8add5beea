"""The CPU-side measurements: compile latency, code quality (registers, spills, SASS) and memory
traffic on the CPU interpreter. Each function returns plain JSON-ready dicts; ratios are formed in
``runner``."""

from __future__ import annotations

import importlib.util
import itertools
import os
import statistics
import subprocess
import sys
import time

from . import tools

#: Blocks of warm compiles alternating between kernc and a peer compiler (``compile_latency``).
WARM_ROUNDS = 4

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


def python_startup_ms(reps: int) -> float:
    """Median time of ``python -c pass`` (the floor under every CLI number), in ms."""
    return 1e3 * median_seconds(lambda: tools.run_checked([sys.executable, "-c", "pass"]), reps)


def compile_latency(kern_path: str, cu_path: str | None, arch: str, reps: int, sub_reps: int, workdir: str,
                    cache_dir: str, first_run_tree: str | None = None, warm_peer=None) -> dict:
    """Compile-latency medians (ms) of one ``.kern`` file to PTX, and of its CUDA C++ equivalent:

    - ``inprocess_warm_ms``: ``Compilation(..., use_cache=False).ptx()`` in this (warm) process;
    - ``inprocess_warm_llvm_share``: the median over those compiles of the fraction of each spent in
      LLVM's backend (``gpu-module-to-binary``, the ``ptx`` stage of ``Compilation.timings``: LLVM's
      ``O3`` pipeline and NVPTX code generation), a floor under the warm time that kernc's own passes
      do not control;
    - ``inprocess_cache_hit_ms``: ``kernc.compile(...).ptx`` answered by the in-memory cache;
    - ``cli_cold_ms``: ``python -m kernc compile FILE -o OUT`` with ``KERNC_ALWAYS_COMPILE=1`` (no
      compile cache; byte-compiled modules exist, as after any first run);
    - ``cli_cache_hit_ms``: the same command with a warm disk cache (``KERNC_CACHE_DIR``);
    - ``cli_first_run_ms``: the same command as a first run (``None`` without ``first_run_tree``): kernc
      imported from ``first_run_tree`` (:func:`first_run_tree`: a copy of its modules without
      ``.pyc`` files) by ``python -B`` (which writes none), with a ``KERNC_CACHE_DIR`` that does
      not exist yet (kernc creates it, as on a first use); the installed dependencies keep their
      ``.pyc`` files, as pip writes them;
    - ``nvcc_ptx_ms``: ``nvcc -ptx -O3 -arch=ARCH CU -o OUT`` (``None`` without nvcc or ``cu_path``;
      nvcc's PTX is kept as ``nvcc_ptx_path``).

    ``warm_peer`` (e.g. ``bench.triton_peer.WarmCompiles``), when given, is the peer compiler whose
    warm compiles are measured alongside: the ``reps`` warm compiles are split into
    :data:`WARM_ROUNDS` blocks, each after one untimed compile, and after each block
    ``warm_peer(k)`` runs a block of the peer's (one untimed compile and ``k`` timed ones), so that
    a change of load on the machine weighs on both alike while each compiler stays warm (one compile
    after another's is measured 1.3-1.8x slower for kernc's saxpy, Triton's hardly changes).
    The subprocess commands run interleaved (CLI cold, CLI hit, CLI first run, nvcc, CLI cold, ...)
    after one untimed round, so that load on the machine affects the ratios as little as possible.
    """
    import kernc
    from kernc.compiler import Compilation, CompileOptions

    text = open(kern_path, encoding="utf-8").read()
    opts = CompileOptions(arch=arch)
    runs = []  # (wall seconds, seconds in LLVM's backend) of each timed compile
    reps = max(1, reps)
    rounds = min(WARM_ROUNDS, reps) if warm_peer is not None else 1
    for block in (reps // rounds + (r < reps % rounds) for r in range(rounds)):
        for i in range(block + 1):  # the first compile of a block warms up
            t0 = time.perf_counter()
            comp = Compilation(text, kern_path, opts, use_cache=False)
            comp.ptx()
            wall = time.perf_counter() - t0
            if i:
                runs.append((wall, sum(run.seconds for run in comp.timings if run.stage == "ptx")))
        if warm_peer is not None:
            warm_peer(block)
    warm = statistics.median(wall for wall, _ in runs)
    llvm_share = statistics.median(llvm / wall for wall, llvm in runs)
    kernc.compile(text, filename=kern_path, arch=arch).ptx  # fill the cache
    hit = median_seconds(lambda: kernc.compile(text, filename=kern_path, arch=arch).ptx, max(reps, 20) * 5)

    stem = os.path.splitext(os.path.basename(kern_path))[0]
    out = os.path.join(workdir, stem + ".kernc.cli.ptx")
    cmd = [sys.executable, "-m", "kernc", "compile", kern_path, "--arch", arch, "-o", out]
    # The CLI runs as in a default Python installation, which byte-compiles modules once (pip does
    # it at install time; PYTHONDONTWRITEBYTECODE would recompile every changed module in every
    # process). The untimed first round writes the .pyc files (kernc's parser tables are shipped
    # in the package); KERNC_ALWAYS_COMPILE=1 then makes every timed run compile.
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env_cold = dict(base_env, KERNC_CACHE_DIR=cache_dir, KERNC_ALWAYS_COMPILE="1")
    env_hit = dict(base_env, KERNC_CACHE_DIR=cache_dir)
    env_hit.pop("KERNC_ALWAYS_COMPILE", None)
    commands = {
        "cli_cold": lambda: tools.run_checked(cmd, env_cold, workdir),
        "cli_cache_hit": lambda: tools.run_checked(cmd, env_hit, workdir),
    }
    if first_run_tree:
        first_runs = itertools.count()
        first_cmd = [sys.executable, "-B", *cmd[1:]]

        def first_run():
            fresh = os.path.join(workdir, f"{stem}.first-run-cache-{next(first_runs)}")  # does not exist yet
            tools.run_checked(first_cmd, first_run_env(base_env, first_run_tree, fresh), workdir)

        commands["cli_first_run"] = first_run
    nvcc = tools.find("nvcc")
    nvcc_out = None
    if nvcc and cu_path and os.path.exists(cu_path):
        nvcc_out = os.path.join(workdir, stem + ".nvcc.ptx")
        nvcc_cmd = [nvcc, "-ptx", "-O3", f"-arch={arch}", cu_path, "-o", nvcc_out]
        commands["nvcc_ptx"] = lambda: tools.run_checked(nvcc_cmd, cwd=workdir)
    times: dict = {k: [] for k in commands}
    for rnd in range(max(1, sub_reps) + 1):
        for k, fn in commands.items():
            t0 = time.perf_counter()
            fn()
            if rnd:  # round 0 warms up (and fills the disk cache for the CLI hit)
                times[k].append(time.perf_counter() - t0)
    result = {
        "inprocess_warm_ms": 1e3 * warm,
        "inprocess_warm_llvm_share": llvm_share,
        "inprocess_cache_hit_ms": 1e3 * hit,
        **{f"{k}_ms": 1e3 * statistics.median(v) for k, v in times.items()},
    }
    result.setdefault("nvcc_ptx_ms", None)
    result.setdefault("cli_first_run_ms", None)
    result["nvcc_ptx_path"] = nvcc_out
    return result


#: kernc's subpackages that an editable install maps from folders outside ``kernc/`` (pyproject's
#: ``package-dir``); :func:`first_run_tree` copies each into its place under ``kernc/``.
KERNC_SUBPACKAGES = ("support", "frontend", "dialect", "passes", "backend", "bench")


def first_run_tree(dest: str) -> str:
    """Copy kernc's modules and data files, as imported in this process (an installed or an
    editable kernc), into ``DEST/kernc`` without any ``__pycache__`` folder; returns ``dest``, the
    folder to put first on ``PYTHONPATH``. ``RuntimeError`` when a run with it does not import
    kernc from the copy (:func:`check_first_run_tree`)."""
    import importlib
    import shutil

    import kernc

    root = os.path.join(dest, "kernc")
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    home = os.path.realpath(kernc.__path__[0])
    shutil.copytree(home, root, ignore=skip)
    for sub in KERNC_SUBPACKAGES:
        folder = os.path.realpath(importlib.import_module(f"kernc.{sub}").__path__[0])
        if os.path.dirname(folder) != home:  # mapped from elsewhere (an editable install)
            shutil.copytree(folder, os.path.join(root, sub), ignore=skip, dirs_exist_ok=True)
    check_first_run_tree(dest)
    return dest


def first_run_env(base_env: dict, tree: str, cache_dir: str) -> dict:
    """The environment of a first run of kernc from ``tree`` with the cache folder ``cache_dir``."""
    env = dict(base_env, KERNC_CACHE_DIR=cache_dir, PYTHONDONTWRITEBYTECODE="1")
    env.pop("KERNC_ALWAYS_COMPILE", None)
    env["PYTHONPATH"] = os.pathsep.join([tree, *filter(None, [base_env.get("PYTHONPATH")])])
    return env


def check_first_run_tree(tree: str) -> None:
    """``RuntimeError`` unless ``python -B`` with :func:`first_run_env` imports kernc and its
    subpackages from ``tree`` and finds no ``.pyc`` file of kernc's there."""
    mods = ["kernc", *(f"kernc.{sub}" for sub in KERNC_SUBPACKAGES)]
    script = ("import importlib, os, sys; "
              f"print('\\n'.join(os.path.realpath(importlib.import_module(m).__file__) for m in {mods!r}))")
    env = first_run_env(dict(os.environ), tree, os.path.join(tree, "unused-cache"))
    proc = subprocess.run([sys.executable, "-B", "-c", script], env=env, cwd=tree, capture_output=True, text=True,
                          timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"kernc does not import from {tree}: {proc.stderr.strip()[:2000]}")
    where = os.path.realpath(tree) + os.sep
    stray = [p for p in proc.stdout.split("\n") if p and not p.startswith(where)]
    if stray:
        raise RuntimeError(f"a run from {tree} imports {stray[0]} from elsewhere")
    pyc = [os.path.join(d, f) for d, _, fs in os.walk(tree) for f in fs if f.endswith(".pyc")]
    if pyc:
        raise RuntimeError(f"a run from {tree} wrote {pyc[0]}")


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


def code_quality(kernc_ptx: str, nvcc_ptx_path: str | None, arch: str, workdir: str, stem: str,
                 triton_ptx_path: str | None = None) -> dict:
    """Registers, spill bytes (``ptxas -v``) and SASS instruction counts of kernc's PTX and, when
    given, of nvcc's and Triton's PTX for the same kernels, all assembled by the same ``ptxas``
    (``-arch=ARCH``; Triton's PTX for the ``.target`` it names, ``sm_90a`` for ``sm_90``):
    ``{"kernc": {kernel: {...}}, "nvcc": {kernel: {...}} | None, "triton": {kernel: {...}} | None}``."""
    kpath = os.path.join(workdir, f"{stem}.kernc.ptx")
    with open(kpath, "w", encoding="utf-8") as f:
        f.write(kernc_ptx)
    out = {"kernc": _quality_of(kpath, os.path.join(workdir, f"{stem}.kernc.cubin"), arch), "nvcc": None,
           "triton": None}
    if nvcc_ptx_path:
        out["nvcc"] = _quality_of(nvcc_ptx_path, os.path.join(workdir, f"{stem}.nvcc.cubin"), arch)
    if triton_ptx_path:
        from .triton_peer import ptx_target

        with open(triton_ptx_path, encoding="utf-8") as f:
            target = ptx_target(f.read())
        out["triton"] = _quality_of(triton_ptx_path, os.path.join(workdir, f"{stem}.triton.cubin"), target)
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
    return {"kernel": kernel.name, "problem_size": problem_size, **traffic_row(stats)}


def traffic_row(stats: dict) -> dict:
    """The interpreter counters ``stats`` (``RunStats.to_dict()``) with, for loads and stores,
    ``<kind>_sectors_per_request`` and ``<kind>_ratio_to_ideal`` (``None`` without requests)."""
    out = dict(stats)
    for kind in ("load", "store"):
        req, sec = stats[f"global_{kind}_requests"], stats[f"global_{kind}_sectors"]
        per = sec / req if req else None
        out[f"{kind}_sectors_per_request"] = per
        out[f"{kind}_ratio_to_ideal"] = per / IDEAL_SECTORS_PER_REQUEST if per is not None else None
    return out


#: Threads per block of ``bench/kern/accessors.kern`` (its ``@block(256)``), as ``bench.gpu.BLOCK``
#: (the per-block shuffles of the index patterns).
ACCESSOR_BLOCK = 256

#: The rows of the per-accessor table, in order: kernel of ``bench/kern/accessors.kern`` -> (the
#: accessor of ``x``, a comment: the ideal and what the row should show). Loads and stores are the
#: whole kernel's (e.g. ``idx`` and ``v`` are read sequentially: 4 sectors per request each).
ACCESSOR_ROWS = {
    "read_sequential": ("read sequential", "x[t]: one request per warp at the ideal 4 sectors, loads and stores "
                        "(y[t] is write sequential: the store column of every read row)"),
    "read_strided": ("read strided(0, 2)", "x[2t]: a warp spans 64 elements = 8 sectors per x request, 2x the "
                     "ideal (half of every sector unused); the y stores at 4"),
    "read_indexed": ("read indexed(idx)", "x[idx[t]]: one x load per thread; each warp fetches the sectors of its "
                     "block's ~32 nearby elements in random order, and every warp of the block again; the idx "
                     "loads at 4"),
    "read_shared": ("read shared(idx)", "each block loads each distinct x element it needs once (ascending, "
                    "coalesced), threads read their copy from shared memory: fewer x sectors than read indexed "
                    "on the same idx; the table costs more: every thread loads target[t] and unique[b*B + tid] "
                    "(8 bytes, where indexed loads idx[t], 4), both at once, so that x waits for one table load, "
                    "not two (on an H200 that is 1.24x faster than waiting for target, then unique)"),
    "read_unique": ("read unique", "x[0] for every thread: one 1-sector load per block (below the ideal 4: one "
                    "element), handed to the block through shared memory"),
    "read_pair": ("read pair", "(x[t], x[t+1]): each element loaded once at 4 sectors per request plus one "
                  "block-edge load per block (1 sector); the neighbour's element comes through shared memory"),
    "write_indexed": ("write indexed(perm)", "x[perm[t]] = v[t], perm a random permutation: about one sector per "
                      "lane, up to 32 per store request (8x the ideal); no atomics"),
    "add_atomic": ("add atomic(idx)", "one global atomic per thread (P); no stores"),
    "add_shared_sum": ("add shared_sum(idx)", "one global atomic per distinct index per block (P/8 here: the 8 "
                       "threads of each index are in one block) instead of one per thread; the loads of atomic "
                       "(v, and the packed perm table where atomic loads idx) plus the unique[] entry of each "
                       "sorted position's run, loaded by every thread (ascending, one sector per warp); the permutation into sorted order goes through shared memory (its bank "
                       "conflicts)"),
    "add_sum": ("add sum", "one atomic per block (warp shuffles, one partial per warp in shared memory); no stores"),
    "write_block_sum": ("write block_sum", "one 1-sector store per block; no atomics"),
    "add_pair": ("add pair", "x[t] += f[t], x[t+1] += s[t]: the block's elements read and stored once, coalesced "
                 "(4 sectors per request; neighbours combined through shared memory); atomics only at block "
                 "edges: 2 per block minus 1"),
}

#: How the inputs of the per-accessor table are built (``accessor_traffic``; JSON ``index_patterns``).
ACCESSOR_INPUTS = {
    "idx of read indexed/shared": "bench.gpu.gather_data: sorted random indices into m = P/8 elements (each "
                                  "used 8 times on average), shuffled within each block of 256 threads",
    "idx of add atomic/shared_sum": "bench.gpu.scatter_data: t // 8 (each of m = P/8 elements gets exactly 8 "
                                    "values, all from one block), shuffled within each block of 256 threads",
    "perm of write indexed": "a random permutation of [0, P)",
    "strided": "off = 0, s = 2, m = 2P",
    "sizes": "unique: m = 1; pair: m = P + 1; block_sum: one element per block; sum: one element",
}


def _accessor_cases(P: int, seed: int) -> dict:
    """Per kernel of :data:`ACCESSOR_ROWS`: ``(args, want, expected_atomics)``; ``want`` maps each
    output argument to ``(float64 expectation, scale)``, ``scale`` ``None`` for an exact result (a
    copy) or the sum of the absolute values of the terms of each element (a sum in any order)."""
    import numpy as np

    from . import gpu

    f32, B = np.float32, ACCESSOR_BLOCK
    rng = np.random.default_rng(seed)
    nb = -(-P // B)
    g = gpu.gather_data(np, P, seed)
    sc = gpu.scatter_data(np, P, seed)
    vals, vals2 = sc["v"], rng.permutation(sc["v"])  # ±U[0.25, 1]: no term vanishes in a sum
    nan = lambda k: np.full(k, np.nan, f32)  # noqa: E731 - anything not written fails the check
    seq, wide, pair = (rng.standard_normal(k, dtype=f32) for k in (P, 2 * P, P + 1))
    perm = rng.permutation(P).astype(np.uint32)
    t = np.arange(P)
    block_want = np.bincount(t // B, weights=vals.astype(np.float64), minlength=nb)
    block_scale = np.bincount(t // B, weights=np.abs(vals.astype(np.float64)), minlength=nb)
    pair_want, pair_scale = np.ones(P + 1), np.ones(P + 1)
    np.add.at(pair_want, t, vals.astype(np.float64))
    np.add.at(pair_want, t + 1, vals2.astype(np.float64))
    np.add.at(pair_scale, t, np.abs(vals.astype(np.float64)))
    np.add.at(pair_scale, t + 1, np.abs(vals2.astype(np.float64)))
    written = np.zeros(P, np.float64)
    written[perm] = vals
    scatter_want = gpu.expected_scatter(sc)
    exact = lambda a: (np.asarray(a, np.float64), None)  # noqa: E731
    return {
        "read_sequential": (dict(x=seq, y=nan(P)), {"y": exact(seq)}, 0),
        "read_strided": (dict(x=wide, off=0, s=2, y=nan(P)), {"y": exact(wide[0::2])}, 0),
        "read_indexed": (dict(x=g["x"], idx=g["idx"], y=nan(P)), {"y": exact(gpu.expected_gather(g))}, 0),
        "read_shared": (dict(x=g["x"], idx=g["idx"], y=nan(P)), {"y": exact(gpu.expected_gather(g))}, 0),
        "read_unique": (dict(x=np.array([3.5], f32), y=nan(P)), {"y": exact(np.full(P, 3.5))}, 0),
        "read_pair": (dict(x=pair, y=nan(P)), {"y": exact(pair[:-1] + pair[1:])}, 0),  # one f32 add: exact
        "write_indexed": (dict(v=vals, x=nan(P), idx=perm), {"x": exact(written)}, 0),
        "add_atomic": (dict(v=vals, x=sc["y0"].copy(), idx=sc["idx"]), {"x": scatter_want}, P),
        "add_shared_sum": (dict(v=vals, x=sc["y0"].copy(), idx=sc["idx"]), {"x": scatter_want},
                           sum(np.unique(sc["idx"][b:b + B]).size for b in range(0, P, B))),
        "add_sum": (dict(v=vals, x=np.ones(1, f32)),
                    {"x": (1.0 + vals.astype(np.float64).sum(keepdims=True),
                           1.0 + np.abs(vals.astype(np.float64)).sum(keepdims=True))}, nb),
        "write_block_sum": (dict(v=vals, x=nan(nb)), {"x": (block_want, block_scale)}, 0),
        "add_pair": (dict(f=vals, s=vals2, x=np.ones(P + 1, f32)), {"x": (pair_want, pair_scale)}, 2 * nb - 1),
    }


def _check_output(name: str, got, want, scale) -> None:
    """``AssertionError`` unless ``got`` (f32) is ``want`` exactly (``scale is None``) or within the
    rounding of an f32 sum in any order (``bench.gpu.SCATTER_RTOL * scale`` plus half an ulp)."""
    import numpy as np

    from .gpu import SCATTER_RTOL

    got = np.asarray(got)
    assert got.dtype == np.float32 and got.shape == want.shape, (name, got.dtype, got.shape, want.shape)
    if scale is None:
        ok = got == want.astype(np.float32)
    else:
        ok = np.abs(got.astype(np.float64) - want) <= SCATTER_RTOL * scale + np.abs(want) * np.finfo(np.float32).eps
    if not ok.all():
        k = int(np.argmin(ok))
        raise AssertionError(f"{name}: wrong result at {k}: got {got[k]!r}, want {want[k]!r}")


def accessor_traffic(kern_path: str, problem_size: int, seed: int = 0, kernels=None) -> dict:
    """The CPU interpreter's memory traffic of one call of each kernel of ``bench/kern/accessors.kern``
    (one kernel per accessor, :data:`ACCESSOR_ROWS`; ``kernels``: only these) on ``problem_size``
    threads. Each result is checked against numpy first (a row with a wrong result holds ``error``).

    Returns ``{"source", "problem_size", "block", "dtype", "inputs", "ideal_sectors_per_request",
    "rows": {kernel: row}}``; a row holds the accessor, the comment of :data:`ACCESSOR_ROWS`, the
    counters with sectors per request and their ratio to the ideal (:func:`traffic_row`),
    ``atomics_per_thread`` and ``expected_atomics`` (the accessor's contract on these inputs, e.g.
    one per distinct index per block for ``shared_sum``)."""
    import kernc

    if problem_size < 1:
        raise ValueError(f"accessor_traffic: problem_size must be >= 1, got {problem_size}")
    mod = kernc.compile_file(kern_path)
    cases = _accessor_cases(problem_size, seed)
    rows = {}
    for name, (label, comment) in ACCESSOR_ROWS.items():
        if kernels is not None and name not in kernels:
            continue
        args, want, expected_atomics = cases[name]
        row = {"accessor": label, "kernel": name, "comment": comment}
        try:
            stats = getattr(mod, name)(**args).stats.to_dict()
            for out, (w, scale) in want.items():
                _check_output(name, args[out], w, scale)
            row.update(traffic_row(stats))
            row["atomics_per_thread"] = stats["global_atomics"] / problem_size
            row["expected_atomics"] = int(expected_atomics)
        except Exception as err:  # noqa: BLE001 - one broken accessor must not stop the table
            row["error"] = f"{type(err).__name__}: {(str(err).strip() or type(err).__name__).splitlines()[0][:300]}"
        rows[name] = row
    return {"source": os.path.relpath(kern_path, os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
            "problem_size": problem_size, "block": ACCESSOR_BLOCK, "dtype": "f32", "inputs": dict(ACCESSOR_INPUTS),
            "ideal_sectors_per_request": IDEAL_SECTORS_PER_REQUEST, "rows": rows}


#: Element widths (f32 components) and index patterns of :func:`shared_choice_traffic`.
SHARED_CHOICE_WIDTHS = (1, 3, 9)
SHARED_CHOICE_PATTERNS = {
    "random": "uniform over m = P/8 elements",
    "sorted": "the random indices sorted (8 uses each, neighbours together)",
    "clustered": "sorted, then shuffled within each block of 256 threads",
    "one_per_block": "one distinct index per block (b * 7)",
}


def _shared_choice_indices(pattern: str, P: int, rng):
    import numpy as np

    B = ACCESSOR_BLOCK
    if pattern == "one_per_block":
        return (np.arange(P) // B * 7).astype(np.uint32)
    I = rng.integers(0, max(P // 8, 1), P).astype(np.uint32)
    if pattern != "random":
        I.sort()
    if pattern == "clustered":
        for b in range(0, P, B):
            I[b:b + B] = rng.permutation(I[b:b + B])
    return I


def shared_choice_traffic(problem_size: int, seed: int = 0) -> dict:
    """``shared(I)`` (as the launcher runs it: staged, or as ``indexed`` where staging cannot pay,
    ``launch_policy.shared_pays``) against ``indexed(I)`` on the same indices, CPU-interpreter
    global-load counters: one row per element width (4, 12, 36 bytes: f32 with 1, 3, 9
    components) and index pattern (:data:`SHARED_CHOICE_PATTERNS`), at ``problem_size`` and at
    ``problem_size + 77`` (not a multiple of a warp). Results are checked bitwise against indexed
    (a row with a difference holds ``error``). Returns ``{"block", "patterns", "rows": [{"bytes",
    "pattern", "P", "shared_staged", "shared_sectors", "shared_requests", "indexed_sectors",
    "indexed_requests", "sector_ratio"}]}``."""
    import numpy as np

    import kernc

    B = ACCESSOR_BLOCK
    rows = []
    for K in SHARED_CHOICE_WIDTHS:
        xt, yt = ("f32[m]", "f32[n]") if K == 1 else (f"f32[m, {K}]", f"f32[n, {K}]")
        mods = {a: kernc.compile(f"@block({B})\nkernel k(x: {xt} read {a}(i), i: u32[n] read, y: {yt} write) "
                                 f"over n {{\n    y = x;\n}}\n") for a in ("indexed", "shared")}
        for pattern in SHARED_CHOICE_PATTERNS:
            for P in (problem_size, problem_size + 77):
                rng = np.random.default_rng([seed, K, P, len(pattern)])
                I = _shared_choice_indices(pattern, P, rng)
                x = rng.standard_normal((int(I.max()) + 1, K) if K > 1 else int(I.max()) + 1).astype(np.float32)
                row = {"bytes": 4 * K, "pattern": pattern, "P": P}
                out = {}
                for a, mod in mods.items():
                    y = np.full((P, K) if K > 1 else P, np.nan, np.float32)
                    res = mod.k(x, I, y)
                    out[a] = y
                    row[f"{a}_sectors"] = res.stats.global_load_sectors
                    row[f"{a}_requests"] = res.stats.global_load_requests
                    if a == "shared":
                        row["shared_staged"] = res.shared
                if out["shared"].tobytes() != out["indexed"].tobytes():
                    row["error"] = "shared(I) and indexed(I) results differ"
                row["sector_ratio"] = row["shared_sectors"] / max(row["indexed_sectors"], 1)
                rows.append(row)
    return {"block": B, "patterns": dict(SHARED_CHOICE_PATTERNS), "rows": rows}


#: Problem shapes of :func:`view_traffic` (full run, ``--quick``).
VIEW_SHAPES = {
    "transpose": {"full": (64, 64), "quick": (32, 32)},
    "permute_nchw_nhwc": {"full": (2, 32, 2, 32), "quick": (1, 32, 1, 32)},
}
VIEW_COMMENTS = {
    "transpose": "b[j, i] = a[i, j], row-major R x C, one thread per (i, j), j fastest: without the pass the "
                 "loads are coalesced (4 sectors per request) and each warp's 32 stores go to 32 rows of b "
                 "(32 sectors per request, 8x the ideal); with kern-coalesce-views both sides are staged "
                 "through a padded 32x33 workgroup tile (4 elements per thread, one block per tile): 4 sectors "
                 "per request on both sides, 0 bank conflicts",
    "permute_nchw_nhwc": "y[n, h, w, c] = x[n, c, h, w] (NCHW -> NHWC), w fastest: without the pass each "
                         "warp's stores are C elements apart (32 sectors per request); with it the problem "
                         "is staged as a batch over (n, h) of (c, w) tiles: 4 sectors per request on both "
                         "sides, 0 bank conflicts",
}


def view_traffic(examples_dir: str, kern_dir: str, quick: bool = False) -> dict:
    """Memory traffic of the transposed-view jobs compiled with and without ``kern-coalesce-views``
    (``kernc.compile(..., coalesce=False)``): ``examples/transpose.kern`` and the 4-D NCHW -> NHWC
    permute of ``bench/kern/permute.kern``, each on :data:`VIEW_SHAPES` and checked against numpy.

    Returns ``{job: {"source", "kernel", "shape", "problem_size", "comment", "variants":
    {"coalesced": row, "naive": row}, "store_sectors_ratio_naive_to_coalesced",
    "sectors_ratio_naive_to_coalesced"}}`` (rows as :func:`traffic_row`; a job that fails holds
    ``error``)."""
    import numpy as np

    import kernc

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    size = "quick" if quick else "full"
    jobs = {
        "transpose": (os.path.join(examples_dir, "transpose.kern"), "transpose", "a", "b", (1, 0)),
        "permute_nchw_nhwc": (os.path.join(kern_dir, "permute.kern"), "nchw_to_nhwc", "x", "y", (0, 2, 3, 1)),
    }
    out = {}
    for job, (path, kname, src, dst, axes) in jobs.items():
        shape = VIEW_SHAPES[job][size]
        entry = {"source": os.path.relpath(path, root), "kernel": kname, "shape": list(shape),
                 "problem_size": int(np.prod(shape)), "comment": VIEW_COMMENTS[job]}
        try:
            a = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
            want = np.ascontiguousarray(a.transpose(axes))
            variants = {}
            for variant, coalesce in (("coalesced", True), ("naive", False)):
                kernel = getattr(kernc.compile_file(path, coalesce=coalesce), kname)
                b = np.full(want.shape, np.nan, np.float32)
                stats = kernel(**{src: a, dst: b}).stats.to_dict()
                if not np.array_equal(b, want):
                    raise AssertionError(f"{job} ({variant}): wrong result")
                variants[variant] = {"coalesce": coalesce, **traffic_row(stats)}
            entry["variants"] = variants
            c, n = variants["coalesced"], variants["naive"]
            entry["store_sectors_ratio_naive_to_coalesced"] = (
                n["global_store_sectors"] / c["global_store_sectors"] if c["global_store_sectors"] else None)
            total = lambda r: r["global_load_sectors"] + r["global_store_sectors"]  # noqa: E731
            entry["sectors_ratio_naive_to_coalesced"] = total(n) / total(c) if total(c) else None
        except Exception as err:  # noqa: BLE001
            entry["error"] = f"{type(err).__name__}: {(str(err).strip() or type(err).__name__).splitlines()[0][:300]}"
        out[job] = entry
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


#: The problem sizes ``(M, K, N)`` of the contraction-tiling gemm rows (full run; ``--quick``); the
#: first is the target's (``gemm``), the others are rows ``gemm_<M>`` (1024^3 is left out: about 45 s
#: of interpreter time for its two variants).
CONTRACTION_SHAPES = {"full": ((256, 256, 256), (512, 512, 512)), "quick": ((64, 64, 64),)}
#: The convolution examples of the contraction rows: (output, the GEMM reduction length from the
#: inputs), at ``P`` = 2^16 items (``--quick``: 2^12), as ``make_inputs`` shapes them.
CONTRACTION_CONVS = {
    "conv2d_fwd": ("y", lambda i: i["w"].shape[1] * i["w"].shape[2] * i["w"].shape[3]),     # R*S*C
    "conv2d_wgrad": ("gw", lambda i: i["dy"].shape[0]),                                      # N*OH*OW
    "conv2d_dgrad": ("dx", lambda i: i["w"].shape[0] * i["w"].shape[1] * i["w"].shape[2]),   # K*R*S
}


def classic_tiled_sectors_per_output(K: int, tile: int, elem_bytes: int = 4) -> float:
    """Global-load sectors per output of the classic shared-memory tiled GEMM (square ``tile x
    tile`` blocks, one output per thread, CUDA C++ Programming Guide "Shared Memory"): each block
    loads a ``tile x tile`` tile of ``a`` and of ``b`` per ``tile`` of ``K``, ``2 * tile^2 *
    elem_bytes / 32`` sectors per ``tile^2`` outputs per step: ``2 * K * elem_bytes / (32 * tile)``
    (2.0 for a 32x32 tile at ``K = 256``, f32)."""
    return 2 * K * elem_bytes / (32 * tile)


def contraction_traffic(examples_dir: str, quick: bool = False, arch: str = "sm_90") -> dict:
    """``examples/gemm.kern`` at :data:`CONTRACTION_SHAPES` and the convolution examples of
    :data:`CONTRACTION_CONVS`, compiled with and without ``kern-tile-contractions``
    (``kernc.compile(..., tile=False)``) on f32 inputs: the CPU interpreter's counters (global-load
    sectors per output, shared requests and bank conflicts), the two results compared bit for bit,
    and ptxas's registers and spill bytes of each PTX for ``arch`` (``None`` without ptxas). Returns
    ``{job: {"shape", "variants": {"tiled": row, "untiled": row}, "bitwise_equal",
    "plain_loads_registers", "plain_loads_spill_bytes" (the tiled build with ``async_copy=False``),
    "sectors_ratio_untiled_to_tiled", "classic_32x32_sectors_per_output",
    "classic_64x64_sectors_per_output"}}`` (jobs ``gemm``, ``gemm_512``, ``conv2d_fwd``, ...; the
    classic model with the GEMM's reduction length); a job that fails holds ``error``."""
    import numpy as np

    out = {}
    for n, (M, K, N) in enumerate(CONTRACTION_SHAPES["quick" if quick else "full"]):
        rng = np.random.default_rng(0)
        inputs = {"a": rng.standard_normal((M, K)).astype(np.float32),
                  "b": rng.standard_normal((K, N)).astype(np.float32), "c": np.full((M, N), np.nan, np.float32)}
        want = inputs["a"].astype(np.float64) @ inputs["b"].astype(np.float64)
        out["gemm" if n == 0 else f"gemm_{M}"] = _contraction_job(
            examples_dir, "gemm", inputs, "c", K, [M, K, N], arch,
            lambda got, want=want: np.allclose(got, want, rtol=1e-4, atol=1e-4))
    P = 1 << (12 if quick else 16)
    for name, (result, reduction) in CONTRACTION_CONVS.items():
        try:
            ex = _example_module(examples_dir, name)
            inputs = ex.make_inputs(P, np.random.default_rng(0))
            want = ex.reference({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()})[result]
        except Exception as err:  # noqa: BLE001
            out[name] = {"source": f"examples/{name}.kern", "error": f"{type(err).__name__}: {err}"[:300]}
            continue
        out[name] = _contraction_job(examples_dir, name, inputs, result, reduction(inputs),
                                     [f"P=2^{P.bit_length() - 1}: {'x'.join(map(str, inputs[result].shape))}"], arch,
                                     lambda got, want=want: np.array_equal(got, want))
    return out


def _example_module(examples_dir: str, name: str):
    """The numpy reference module ``examples/<name>.py`` (bench/interp.py imports this module)."""
    spec = importlib.util.spec_from_file_location(f"bench_example_{name}", os.path.join(examples_dir, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _contraction_job(examples_dir: str, name: str, inputs: dict, result: str, K: int, shape: list,
                     arch: str, correct) -> dict:
    """One job of :func:`contraction_traffic`: kernel ``name`` of ``examples/<name>.kern`` run tiled
    and untiled on copies of ``inputs``; ``result`` its output, ``K`` the GEMM reduction length (the
    classic model's), ``correct(tiled output)`` the reference check."""
    import numpy as np

    import kernc
    from kernc.backend.toolkit import ptxas_path, run_ptxas

    entry: dict = {"source": f"examples/{name}.kern", "kernel": name, "shape": shape, "dtype": "f32"}
    try:
        variants, outs = {}, {}
        for variant, tile in (("tiled", True), ("untiled", False)):
            mod = kernc.compile_file(os.path.join(examples_dir, f"{name}.kern"), arch=arch, tile=tile)
            args = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
            stats = getattr(mod, name)(**args).stats.to_dict()
            outs[variant] = args[result]
            variants[variant] = _variant_row(mod, name, variant, stats, args[result].size, arch, tile=tile)
        if not correct(outs["tiled"]):
            raise AssertionError(f"{name} (tiled): wrong result")
        entry["variants"] = variants
        entry["bitwise_equal"] = bool(np.array_equal(outs["tiled"].view(np.int32), outs["untiled"].view(np.int32)))
        # the tiled build stages with cp.async on sm_80 and later: ptxas's count for the same tiles
        # staged with plain loads (async_copy=False; the same CPU counters, tests/tile)
        entry["plain_loads_registers"] = entry["plain_loads_spill_bytes"] = None
        if ptxas_path():
            mod = kernc.compile_file(os.path.join(examples_dir, f"{name}.kern"), arch=arch, async_copy=False)
            got = run_ptxas(mod.ptx, arch)
            entry["plain_loads_registers"] = got.registers.get(name)
            entry["plain_loads_spill_bytes"] = sum(got.spills.get(name, (0, 0)))
        t, u = variants["tiled"]["load_sectors_per_output"], variants["untiled"]["load_sectors_per_output"]
        entry["sectors_ratio_untiled_to_tiled"] = u / t if t else None
        entry["classic_32x32_sectors_per_output"] = classic_tiled_sectors_per_output(K, 32)
        entry["classic_64x64_sectors_per_output"] = classic_tiled_sectors_per_output(K, 64)
    except Exception as err:  # noqa: BLE001
        entry["error"] = f"{type(err).__name__}: {(str(err).strip() or type(err).__name__).splitlines()[0][:300]}"
    return entry


#: The tensor-core gemm jobs of :func:`tensor_core_traffic`: example -> (its operands, its sums). i8
#: sums are exact (the two builds bitwise equal); gemm_tf32's ``@tf32`` asks for TF32 operands,
#: so its tensor-core build computes another function than the CUDA-core one (plain f32).
TENSOR_CORE_JOBS = {"gemm_f16": "f16 (f32 sums)", "gemm_i8": "i8 (i32 sums)", "gemm_tf32": "f32 as TF32 (f32 sums)"}
#: The tensor-core convolution examples of the tensor-core rows: (output, the GEMM reduction length
#: from the inputs, as :data:`CONTRACTION_CONVS`), at ``P`` = 2^16 items (``--quick``: 2^12).
TENSOR_CORE_CONVS = {"conv2d_fwd_f16": ("y", CONTRACTION_CONVS["conv2d_fwd"][1]),
                     "conv2d_wgrad_f16": ("gw", CONTRACTION_CONVS["conv2d_wgrad"][1])}
#: The builds of a tensor-core row: variant -> ``kernc.compile`` options (``untiled``: the
#: convolutions' naive kernel, ``--no-tile --no-tensor-cores``).
TENSOR_CORE_BUILDS = {"tensor_cores": {}, "cuda_cores": {"tensor_cores": False},
                      "untiled": {"tensor_cores": False, "tile": False}}


def _variant_row(mod, name: str, variant: str, stats: dict, outputs: int, arch: str, **options) -> dict:
    """The row of one build of a contraction job: its ``options``, the CPU counters of ``stats``
    (:func:`traffic_row`), global-load sectors per output and ptxas's registers and spill bytes of
    kernel ``name`` in ``mod``'s PTX for ``arch`` (``None`` without ptxas); ``RuntimeError`` when
    ptxas rejects it."""
    from kernc.backend.toolkit import ptxas_path, run_ptxas

    row = {**options, **traffic_row(stats), "load_sectors_per_output": stats["global_load_sectors"] / max(outputs, 1),
           "registers": None, "spill_stores_bytes": None, "spill_loads_bytes": None}
    if ptxas_path():
        got = run_ptxas(mod.ptx, arch)
        if not got.ok:
            raise RuntimeError(f"ptxas rejected the {variant} PTX: {got.log.strip()[:200]}")
        row["registers"] = got.registers.get(name)
        row["spill_stores_bytes"], row["spill_loads_bytes"] = got.spills.get(name, (None, None))
    return row


def tensor_core_traffic(examples_dir: str, quick: bool = False, arch: str = "sm_90") -> dict:
    """The :data:`TENSOR_CORE_JOBS` gemms (``gemm_f16``, ``gemm_i8``, ``gemm_tf32``) at the first
    :data:`CONTRACTION_SHAPES` shape and the convolutions of :data:`TENSOR_CORE_CONVS` (their
    ``make_inputs``), each on tensor cores (``kern-mma-contractions``) and on CUDA cores
    (``kernc.compile(..., tensor_cores=False)``: ``kern-tile-contractions``), the convolutions also
    untiled (``tile=False`` too): the CPU interpreter's counters (global-load sectors per output,
    shared requests and bank conflicts: the staging stores, the CUDA-core loads and the
    ``ldmatrix`` phases), ptxas's registers and spill bytes of each PTX for ``arch`` (``sm_80``
    when ``arch`` has no tensor cores; ``None`` without ptxas), whether each result is right --
    f16: within 1e-3 relative (scaled by sqrt(K)) of the f64 result; i8: equal to the exact
    product; tf32: the tensor-core result within that tolerance of the f64 product of the
    TF32-rounded operands (``examples/gemm_tf32.py``), the CUDA-core one of the unrounded operands
    -- and whether they are all bitwise equal. No GPU time is measured for gemm_i8 / gemm_tf32
    (``gpu``: "not measured"). Returns ``{job: {"shape", "arch", "variants": {"tensor_cores": row,
    "cuda_cores": row, ...}, "within_f64", "bitwise_equal"}}`` (jobs ``gemm_f16``, ``gemm_i8``,
    ``gemm_tf32``, ``conv2d_fwd_f16``, ``conv2d_wgrad_f16``); a job that fails holds ``error``."""
    import numpy as np

    from kernc.passes.targets import MMA_MIN_SM as MIN_SM
    from kernc.passes.targets import sm_number

    tc_arch = arch if sm_number(arch) >= MIN_SM else "sm_80"
    M, K, N = CONTRACTION_SHAPES["quick" if quick else "full"][0]  # (the first gemm shape)
    out = {}
    for name, dtype in TENSOR_CORE_JOBS.items():
        if not os.path.exists(os.path.join(examples_dir, f"{name}.kern")):
            continue
        rng = np.random.default_rng(0)
        if name == "gemm_i8":
            a = rng.integers(-128, 128, (M, K)).astype(np.int8)
            b = rng.integers(-128, 128, (K, N)).astype(np.int8)
            c0 = np.full((M, N), -1, np.int32)
        else:
            dt = np.float16 if name == "gemm_f16" else np.float32
            a = rng.standard_normal((M, K)).astype(dt)
            b = rng.standard_normal((K, N)).astype(dt)
            c0 = np.full((M, N), np.nan, np.float32)
        rounded = None
        if name == "gemm_tf32":
            try:
                rounded = _example_module(examples_dir, name).round_tf32
            except Exception as err:  # noqa: BLE001
                out[name] = {"source": f"examples/{name}.kern", "error": f"{type(err).__name__}: {err}"[:300]}
                continue

        def f64(i, variant, rounded=rounded):  # the tensor-core tf32 build multiplies the rounded operands
            x, y = i["a"], i["b"]
            if rounded is not None and variant == "tensor_cores":
                x, y = rounded(x), rounded(y)
            return np.asarray(x, np.float64) @ np.asarray(y, np.float64)
        out[name] = _tensor_core_job(
            examples_dir, name, {"a": a, "b": b, "c": c0}, "c", K, [M, K, N], tc_arch, f64,
            ("tensor_cores", "cuda_cores"), dtype, exact=name == "gemm_i8")
        if name != "gemm_f16":
            out[name]["gpu"] = "not measured"
    P = 1 << (12 if quick else 16)
    for name, (result, reduction) in TENSOR_CORE_CONVS.items():
        try:
            ex = _example_module(examples_dir, name)
            inputs = ex.make_inputs(P, np.random.default_rng(0))
        except Exception as err:  # noqa: BLE001
            out[name] = {"source": f"examples/{name}.kern", "error": f"{type(err).__name__}: {err}"[:300]}
            continue
        out[name] = _tensor_core_job(
            examples_dir, name, inputs, result, reduction(inputs),
            [f"P=2^{P.bit_length() - 1}: {'x'.join(map(str, inputs[result].shape))}"], tc_arch,
            lambda i, variant, ex=ex, result=result: ex.reference_f64(i)[result], tuple(TENSOR_CORE_BUILDS))
    return out


def _tensor_core_job(examples_dir: str, name: str, inputs: dict, result: str, K: int, shape: list, arch: str,
                     f64, builds: tuple, dtype: str = "f16 (f32 sums)", exact: bool = False) -> dict:
    """One job of :func:`tensor_core_traffic`: kernel ``name`` of ``examples/<name>.kern`` built as
    each of ``builds`` (keys of :data:`TENSOR_CORE_BUILDS`) and run on copies of ``inputs``;
    ``result`` its output, ``K`` the reduction length, ``f64(inputs, variant)`` the float64 result
    that build computes (of the inputs' magnitudes: the bound's scale); ``exact``: each result must
    equal it (integer sums), else be within 1e-3*sqrt(K) relative."""
    import math

    import numpy as np

    import kernc

    entry: dict = {"source": f"examples/{name}.kern", "kernel": name, "shape": shape,
                   "dtype": dtype, "arch": arch}
    try:
        variants, outs, within = {}, {}, {}
        for variant in builds:
            want = f64(inputs, variant)
            opts = TENSOR_CORE_BUILDS[variant]
            mod = kernc.compile_file(os.path.join(examples_dir, f"{name}.kern"), arch=arch, **opts)
            if variant == "tensor_cores" and "mma.sync" not in mod.ptx:
                raise AssertionError(f"{name} was not compiled for tensor cores")
            args = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
            stats = getattr(mod, name)(**args).stats.to_dict()
            outs[variant] = args[result]
            if exact:
                within[variant] = bool(np.array_equal(args[result], want.astype(np.int64)))
            else:
                scale = f64({k: (np.abs(v) if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}, variant)
                bound = 1e-3 * math.sqrt(K) * scale / max(K, 1)
                within[variant] = bool(np.all(np.abs(args[result] - want) <= bound))
            variants[variant] = _variant_row(mod, name, variant, stats, args[result].size, arch,
                                             tensor_cores=opts.get("tensor_cores", True))
        if not within["tensor_cores"]:
            raise AssertionError(f"{name} (tensor cores): wrong result")
        entry["variants"] = variants
        entry["within_f64"] = within
        entry["bitwise_equal"] = all(bool(np.array_equal(outs["tensor_cores"].view(np.int32), o.view(np.int32)))
                                     for o in outs.values())
    except Exception as err:  # noqa: BLE001
        entry["error"] = f"{type(err).__name__}: {(str(err).strip() or type(err).__name__).splitlines()[0][:300]}"
    return entry
