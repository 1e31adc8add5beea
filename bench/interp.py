"""CPU-interpreter speed and memory for ``python -m bench``: each target as a ratio to a numpy
reference timed in the same process, interleaved with the kernel (one reference run, one kernel run,
repeated; medians), so a loaded machine slows both alike.

Targets (issue 23): a 1024^2 transpose at most 15x ``np.copyto(b, a.T)``; a 2^20 ``shared(I)``
gather at most 30x ``x[i] * 2``; saxpy of 2^20 at most 10x ``y += a * x``; ``shared_indices`` of 2^22
indices at most 10x ``np.sort`` of them, with a peak of traced memory at most 3x the arrays (the
index array and the four tables). Kernel times are with the traffic counters (the default); the
times with ``stats=False`` are shown beside them. Every result is checked against numpy first.
"""

from __future__ import annotations

import os
import statistics
import time
import tracemalloc

import numpy as np

from kernc.dialect import shared_table

#: target id -> (text, limit)
TARGETS = {
    "interp_transpose": ("CPU interpreter: transpose 1024^2 <= 15x np.copyto(b, a.T)", 15.0),
    "interp_shared_gather": ("CPU interpreter: shared(I) gather 2^20 <= 30x x[i] * 2", 30.0),
    "interp_saxpy": ("CPU interpreter: saxpy 2^20 <= 10x y += a * x", 10.0),
    "shared_indices_time": ("shared_indices of 2^22 indices <= 10x np.sort", 10.0),
    "shared_indices_memory": ("shared_indices of 2^22 indices: peak memory <= 3x the arrays", 3.0),
}
_ROW_OF = {"interp_transpose": "transpose", "interp_shared_gather": "shared_gather", "interp_saxpy": "saxpy"}

#: the shared(I) gather: 256 threads per block, like the GPU benchmark's gathers (bench/gpu.py)
GATHER_SRC = """@block(256)
kernel gather2(x: f32[m] read shared(idx), idx: u32[n] read, y: f32[n] write) over n {
    y = 2.0 * x;
}
"""


def _medians(kernel, reference, reps: int) -> tuple[float, float]:
    """Median seconds of ``kernel()`` and ``reference()``, run alternately ``reps`` times after one
    untimed run of each."""
    kernel()
    reference()
    tk, tr = [], []
    for _ in range(max(1, reps)):
        t0 = time.perf_counter()
        reference()
        tr.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        kernel()
        tk.append(time.perf_counter() - t0)
    return statistics.median(tk), statistics.median(tr)


def _row(label: str, size: str, reference: str, call, ref, check, reps: int) -> dict:
    """Times of ``call(stats)`` with and without the counters against ``ref()``; ``check()`` raises
    on a wrong result."""
    on, ref_s = _medians(lambda: call(True), ref, reps)
    check()
    off, ref_s2 = _medians(lambda: call(False), ref, reps)
    check()
    ref_s = min(ref_s, ref_s2)
    return {"label": label, "size": size, "reference": reference, "kernc_ms": on * 1e3,
            "kernc_no_stats_ms": off * 1e3, "reference_ms": ref_s * 1e3, "ratio": on / ref_s,
            "ratio_no_stats": off / ref_s}


def _example_module(examples_dir: str, name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"kernc_bench_{name}", os.path.join(examples_dir, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _transpose(examples_dir: str, reps: int) -> dict:
    import kernc

    mod = kernc.compile_file(os.path.join(examples_dir, "transpose.kern"))
    a = np.random.default_rng(0).standard_normal((1024, 1024), dtype=np.float32)
    b = np.empty((1024, 1024), np.float32)
    ref = np.empty_like(b)

    def check():
        if not np.array_equal(b, a.T):
            raise AssertionError("transpose: the result differs from a.T")

    row = _row("transpose (examples/transpose.kern, staged through workgroup tiles)", "1024x1024",
               "np.copyto(b, a.T)", lambda s: mod.transpose(a, b, stats=s), lambda: np.copyto(ref, a.T),
               check, reps)
    naive = kernc.compile_file(os.path.join(examples_dir, "transpose.kern"), coalesce=False)
    t, _ = _medians(lambda: naive.transpose(a, b), lambda: None, reps)
    check()
    row["naive_ms"] = t * 1e3  # compiled without kern-coalesce-views: every store a 32-sector request
    return row


def _gather_inputs(n: int, rng):
    """Sorted random indices, ~8 uses per element of x, shuffled within each block of 256 (the GPU
    benchmark's gather)."""
    m = max(1, n // 8)
    x = rng.standard_normal(m, dtype=np.float32)
    idx = np.sort(rng.integers(0, m, n, dtype=np.uint32))
    full = n // 256 * 256
    perm = np.argsort(rng.random((full // 256, 256)), axis=1)
    idx[:full] = idx[:full].reshape(-1, 256)[np.arange(full // 256)[:, None], perm].reshape(-1)
    return x, idx


def _shared_gather(reps: int, n: int = 1 << 20) -> dict:
    import kernc
    from kernc.backend.shared_indices import shared_indices

    mod = kernc.compile(GATHER_SRC)
    x, idx = _gather_inputs(n, np.random.default_rng(1))
    y = np.empty(n, np.float32)
    ref = np.empty(n, np.float32)
    two = np.float32(2)

    def check():
        if not np.array_equal(y, x[idx] * two):
            raise AssertionError("shared(I) gather: the result differs from x[i] * 2")

    row = _row("shared(I) gather, the launch building the table", "2^20, ~8 uses per x element",
               "x[i] * 2", lambda s: mod.gather2(x, idx, y, stats=s), lambda: np.multiply(x[idx], two, out=ref),
               check, reps)
    table = shared_indices(idx, 256)
    t, _ = _medians(lambda: mod.gather2(x, table, y), lambda: None, reps)
    check()
    row["prebuilt_table_ms"] = t * 1e3  # the kernel alone, given the table (SharedIndices) built once
    return row


def _saxpy(examples_dir: str, reps: int, n: int = 1 << 20) -> dict:
    import kernc

    mod = kernc.compile_file(os.path.join(examples_dir, "saxpy.kern"))
    rng = np.random.default_rng(2)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    ref = y.copy()
    a = np.float32(0.5)

    def reference():
        np.add(ref, a * x, out=ref)  # y += a * x

    def check():  # (y changes with every run: the result of one run from a copy is checked)
        y0 = y.copy()
        mod.saxpy(a, x, y)
        if not np.array_equal(y, y0 + a * x):
            raise AssertionError("saxpy: the result differs from y + a * x")

    check()
    return _row("saxpy (examples/saxpy.kern)", "2^20", "y += a * x", lambda s: mod.saxpy(a, x, y, stats=s),
                reference, check, reps)


def _conv2d(examples_dir: str, reps: int, P: int = 1 << 16) -> dict:
    import kernc

    ex = _example_module(examples_dir, "conv2d_fwd")
    mod = kernc.compile_file(os.path.join(examples_dir, "conv2d_fwd.kern"))
    inputs = ex.make_inputs(P, np.random.default_rng(3))
    want = ex.reference(inputs)["y"]

    def check():
        if not np.allclose(inputs["y"], want, rtol=1e-5, atol=1e-5):
            raise AssertionError("conv2d_fwd: the result differs from the numpy reference")

    return _row("conv2d_fwd (examples/conv2d_fwd.kern, 3x2 filter, 3 channels)", f"P = 2^{P.bit_length() - 1}",
                "examples/conv2d_fwd.py reference (numpy)", lambda s: mod.conv2d_fwd(**inputs, stats=s),
                lambda: ex.reference(inputs), check, reps)


def _shared_indices(reps: int, n: int = 1 << 22) -> dict:
    from kernc.backend.shared_indices import shared_indices

    idx = np.random.default_rng(4).integers(0, n, n, dtype=np.uint32)
    t, ref_s = _medians(lambda: shared_indices(idx, 256), lambda: np.sort(idx), reps)
    tracemalloc.start()
    try:
        table = shared_indices(idx, 256)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    arrays = idx.nbytes + sum(getattr(table, f).nbytes for f in shared_table.TABLES)
    return {"label": "shared_indices(idx, 256)", "size": "2^22 random indices", "reference": "np.sort(idx)",
            "kernc_ms": t * 1e3, "reference_ms": ref_s * 1e3, "ratio": t / ref_s, "peak_mib": peak / 2**20,
            "arrays_mib": arrays / 2**20, "peak_to_arrays": peak / arrays, "peak_to_input": peak / idx.nbytes}


def _collectives(reps: int, P: int = 1 << 18) -> dict:
    """Times of the reduction and shared kernels of bench/kern/accessors.kern (no reference: how long
    a user waits, per thread)."""
    import kernc

    from . import measure

    mod = kernc.compile_file(os.path.join(os.path.dirname(os.path.abspath(__file__)), "kern", "accessors.kern"))
    cases = measure._accessor_cases(P, 0)
    out = {}
    for name in ("add_sum", "write_block_sum", "add_shared_sum", "add_atomic", "read_shared", "read_pair"):
        args = cases[name][0]
        on, _ = _medians(lambda: getattr(mod, name)(**args), lambda: None, reps)
        off, _ = _medians(lambda: getattr(mod, name)(**args, stats=False), lambda: None, reps)
        out[name] = {"kernc_ms": on * 1e3, "kernc_no_stats_ms": off * 1e3, "ns_per_thread": on * 1e9 / P}
    return out


def run(examples_dir: str, quick: bool) -> dict:
    """Every measurement (``quick``: one timed repetition each); a failed one holds ``error``."""
    reps = 1 if quick else 5
    jobs = {
        "transpose": lambda: _transpose(examples_dir, reps),
        "shared_gather": lambda: _shared_gather(reps),
        "saxpy": lambda: _saxpy(examples_dir, reps),
        "conv2d_fwd": lambda: _conv2d(examples_dir, reps),
        "shared_indices": lambda: _shared_indices(reps),
        "collectives": lambda: _collectives(reps, 1 << 16 if quick else 1 << 18),
    }
    out: dict = {"reps": reps}
    for name, job in jobs.items():
        try:
            out[name] = job()
        except Exception as err:  # noqa: BLE001 - one broken measurement must not stop the others
            text = (str(err).strip() or type(err).__name__).splitlines()[0][:300]
            out[name] = {"error": f"{type(err).__name__}: {text}"}
    return out


def targets(results: dict) -> list[dict]:
    """The target entries (as ``bench.runner.evaluate_targets`` makes them) of ``results``; none for
    results without this section (an older results file)."""
    sec = results.get("interpreter")
    if not sec:
        return []
    out = []
    for target, (text, limit) in TARGETS.items():
        if target.startswith("shared_indices"):
            row, key, unit = sec.get("shared_indices") or {}, "ratio", "x np.sort"
            if target == "shared_indices_memory":
                key, unit = "peak_to_arrays", "x the arrays"
        else:
            row, key, unit = sec.get(_ROW_OF[target]) or {}, "ratio", "x numpy"
        value = row.get(key)
        out.append({"target": target, "text": text, "example": _ROW_OF.get(target, "shared_indices"),
                    "kernel": None, "measured": value, "unit": unit, "limit": limit,
                    "status": "n/a" if value is None else "PASS" if value <= limit else "FAIL"})
    return out


def render(results: dict) -> list[str]:
    """The lines of the CPU-interpreter section (none for results without it)."""
    sec = results.get("interpreter")
    if not sec:
        return []
    status = {t["target"]: t["status"] for t in results.get("targets", []) if t["target"] in TARGETS}
    lines = ["", f"CPU interpreter speed (medians of {sec.get('reps')} runs, each beside a run of its numpy "
                 "reference in this process; kernel with counters / with stats=False)"]

    def ms(v):
        return "n/a" if v is None else f"{v:.3g} ms" if v < 100 else f"{v:.0f} ms"

    for key, target in (("transpose", "interp_transpose"), ("shared_gather", "interp_shared_gather"),
                        ("saxpy", "interp_saxpy"), ("conv2d_fwd", None)):
        r = sec.get(key) or {}
        if "error" in r:
            lines.append(f"  {key}: error: {r['error']}")
            continue
        if not r:
            continue
        mark = f"; target <= {TARGETS[target][1]:g}x {status.get(target, 'n/a')}" if target else ""
        lines.append(f"  {r['label']}, {r['size']}: {ms(r['kernc_ms'])} / {ms(r['kernc_no_stats_ms'])}; "
                     f"{r['reference']} {ms(r['reference_ms'])}; ratio {r['ratio']:.1f}x / "
                     f"{r['ratio_no_stats']:.1f}x{mark}")
        if "naive_ms" in r:
            lines.append(f"    compiled without kern-coalesce-views (naive): {ms(r['naive_ms'])}")
        if "prebuilt_table_ms" in r:
            lines.append(f"    given the shared_indices table built once: {ms(r['prebuilt_table_ms'])}")
    r = sec.get("shared_indices") or {}
    if "error" in r:
        lines.append(f"  shared_indices: error: {r['error']}")
    elif r:
        lines.append(f"  {r['label']}, {r['size']}: {ms(r['kernc_ms'])}; {r['reference']} {ms(r['reference_ms'])}; "
                     f"ratio {r['ratio']:.1f}x (target <= 10x {status.get('shared_indices_time', 'n/a')}); "
                     f"peak {r['peak_mib']:.0f} MiB = {r['peak_to_arrays']:.2f}x the index array and tables "
                     f"({r['arrays_mib']:.0f} MiB; target <= 3x {status.get('shared_indices_memory', 'n/a')}), "
                     f"{r['peak_to_input']:.1f}x the index array")
    c = sec.get("collectives") or {}
    if "error" in c:
        lines.append(f"  collectives: error: {c['error']}")
    elif c:
        lines.append("  reductions and shared accessors (bench/kern/accessors.kern, 256 threads per block): "
                     + "; ".join(f"{k} {ms(v['kernc_ms'])} / {ms(v['kernc_no_stats_ms'])} "
                                 f"({v['ns_per_thread']:.0f} ns per thread)" for k, v in c.items()))
    return lines
