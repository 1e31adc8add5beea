"""The histogram rows of ``python -m bench`` (issue 21): ``examples/histogram.kern`` with and without
``kern-privatize-atomics``.

- CPU counters (:func:`traffic`): global atomics per item of a 2^20-byte histogram, equal bytes (the
  issue's target: exact, at most n/16 global atomics) and uniform random bytes, each next to the
  same program compiled with ``privatize=False`` (one global atomic per item);
- GPU time (:func:`gpu_run`, skipped with a note without a device): kernc's histogram launched raw,
  the same compiled with ``privatize=False``, and the CUDA C++ reference ``bench/cuda/histogram256.cu``
  (the CUDA samples' scheme: per-block shared bins, one global atomic per non-zero bin per block),
  on the same bytes; every result is checked against ``np.bincount`` before it is timed.
"""

from __future__ import annotations

import os

import numpy as np

#: The CUDA C++ reference of the GPU row (``bench/cuda/``), and its kernel.
CUDA_REFERENCE = "histogram256.cu"
#: target id -> (text, limit in global atomics per item)
TARGETS = {"histogram_atomics": ("histogram of 2^20 equal bytes: exact, <= n/16 global atomics (CPU counters)",
                                 1 / 16)}
#: Bytes of the CPU row, and of the GPU row (full, quick).
CPU_N = 1 << 20
GPU_N = {False: 1 << 26, True: 1 << 22}


def _data(pattern: str, n: int) -> np.ndarray:
    if pattern == "equal":
        return np.full(n, 200, np.uint8)
    return np.random.default_rng(0).integers(0, 256, n).astype(np.uint8)


def traffic(examples_dir: str, n: int = CPU_N) -> dict:
    """``{"n", "rows": [{"pattern", "privatize", "global_atomics", "atomics_per_item",
    "shared_requests", "blocks", "exact"}]}`` of the CPU interpreter's counters."""
    import kernc

    path = os.path.join(examples_dir, "histogram.kern")
    rows = []
    for privatize in (True, False):
        mod = kernc.compile_file(path, privatize=privatize)
        for pattern in ("equal", "random"):
            data = _data(pattern, n)
            hist = np.zeros(256, np.uint32)
            st = mod.histogram(data, hist).stats
            rows.append({"pattern": pattern, "privatize": privatize, "global_atomics": st.global_atomics,
                         "atomics_per_item": st.global_atomics / n, "shared_requests": st.shared_requests,
                         "blocks": st.blocks,
                         "exact": bool(np.array_equal(hist, np.bincount(data, minlength=256)))})
    return {"n": n, "rows": rows}


def targets(results: dict) -> list[dict]:
    """The target entry of :data:`TARGETS` (a wrong histogram fails it)."""
    sec = results.get("histogram") or {}
    row = next((r for r in sec.get("rows", []) if r["pattern"] == "equal" and r["privatize"]), None)
    text, limit = TARGETS["histogram_atomics"]
    value = None
    if row is not None and sec.get("n") == CPU_N:
        value = row["atomics_per_item"] if row["exact"] else float("inf")
    return [{"target": "histogram_atomics", "text": text, "example": "histogram", "kernel": None,
             "measured": value, "unit": "global atomics per item", "limit": limit,
             "status": "n/a" if value is None else "PASS" if value <= limit else "FAIL"}]


def gpu_run(examples_dir: str, cu_dir: str, quick: bool, reps: int) -> dict:
    """GPU times of the three histograms on ``GPU_N[quick]`` random bytes: ``{"n", "variants":
    {key: {"label", "ms", "gbs"}}, "ratios"}``; ``{"available": False, "note"}`` without a device,
    ``{"error"}`` when a variant fails (a wrong histogram included)."""
    from kernc.backend import cuda

    if not cuda.available():
        return {"available": False, "note": "no usable CUDA device: the histogram GPU row is not measured"}
    try:
        import kernc

        from .gpu import _device_arch, _kernc_raw, _reference_module, _time_device

        cp = cuda.cupy()
        arch = _device_arch(cp)
        n = GPU_N[quick]
        data = cp.asarray(_data("random", n))
        hist = cp.zeros(256, dtype=cp.uint32)
        want = np.bincount(_data("random", n), minlength=256).astype(np.uint32)
        path = os.path.join(examples_dir, "histogram.kern")
        on = kernc.compile_file(path, arch=arch)
        off = kernc.compile_file(path, arch=arch, privatize=False)
        ref_module, how = _reference_module(cp, os.path.join(cu_dir, CUDA_REFERENCE))
        ref = ref_module.get_function("histogram256")
        sms = int(cp.cuda.runtime.getDeviceProperties(cp.cuda.runtime.getDevice())["multiProcessorCount"])
        grid = 8 * sms
        variants = {
            "kernc": ("kernc (privatized)", _kernc_raw(cp, on.histogram, (data, hist))),
            "kernc_no_privatize": ("kernc --no-privatize", _kernc_raw(cp, off.histogram, (data, hist))),
            "reference": (f"CUDA C++ histogram256 ({grid} blocks)",
                          lambda: ref((grid,), (256,), (data, hist, np.uint32(n)))),
        }
        inner = 3 if quick else 20
        rows = {}
        for key, (label, launch) in variants.items():
            hist.fill(0)
            launch()
            cp.cuda.Device().synchronize()
            if not np.array_equal(cp.asnumpy(hist), want):
                raise AssertionError(f"histogram {key}: the counts differ from np.bincount")
        for key, (label, launch) in variants.items():
            ms = _time_device(cp, launch, reps, inner)
            rows[key] = {"label": label, "ms": ms, "gbs": n / (ms * 1e-3) / 1e9}
        return {"available": True, "n": n, "reference_built_with": how, "variants": rows,
                "ratios": {"kernc/reference": rows["kernc"]["gbs"] / rows["reference"]["gbs"],
                           "kernc/kernc_no_privatize": rows["kernc"]["gbs"] / rows["kernc_no_privatize"]["gbs"]}}
    except Exception as err:  # noqa: BLE001 - report, do not stop the benchmark
        return {"error": f"{type(err).__name__}: {err}"}


def render(results: dict) -> list[str]:
    """The lines of the histogram section (none for results without it)."""
    sec = results.get("histogram")
    if not sec:
        return []
    lines = ["", "Histogram (examples/histogram.kern; CPU interpreter counters)"]
    if "error" in sec:
        return lines + [f"  error: {sec['error']}"]
    status = {t["target"]: t["status"] for t in results.get("targets", []) if t["target"] in TARGETS}
    for r in sec.get("rows", []):
        lines.append(f"  {sec['n']} {r['pattern']} bytes, {'privatized' if r['privatize'] else '--no-privatize'}: "
                     f"{r['global_atomics']} global atomics = {r['atomics_per_item']:.4g} per item "
                     f"({r['blocks']} blocks, {r['shared_requests']} shared requests), "
                     f"{'exact' if r['exact'] else 'WRONG'}")
    lines.append(f"  target: equal bytes <= 1/16 = 0.0625 global atomics per item, exact: "
                 f"{status.get('histogram_atomics', 'n/a')}")
    g = sec.get("gpu") or {}
    if g.get("variants"):
        lines.append(f"  GPU, {g['n']} random bytes: " + "; ".join(
            f"{v['label']} {v['ms'] * 1e3:.1f} us ({v['gbs']:.0f} GB/s)" for v in g["variants"].values())
            + "; ratios " + ", ".join(f"{k} {v:.2f}x" for k, v in g["ratios"].items()))
    elif g:
        lines.append(f"  GPU: {g.get('note') or g.get('error')}")
    return lines
