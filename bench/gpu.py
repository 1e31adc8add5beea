"""GPU measurements (skipped with a note when ``kernc.backend.cuda.available()`` is False):

- achieved DRAM bandwidth of kernc's ``saxpy`` (12 bytes per element: read x, read y, write y) next to
  the hand-written CUDA C++ ``bench/cuda/saxpy.cu`` (nvcc's PTX, or NVRTC through
  ``cupy.RawModule`` when nvcc is missing), both launched the same raw way through CuPy, and as a
  percentage of the device's peak (memory clock x bus width x 2, from the device attributes);
- host launch overhead per call on a small problem: kernc's ``mod.saxpy(a, x, y)`` (argument
  binding, packing, launch), kernc's kernel launched raw, and the CUDA C++ kernel launched raw.
"""

from __future__ import annotations

import os
import statistics
import time

#: CUDA runtime attribute numbers (``cudaDeviceAttr``): memory clock in kHz, bus width in bits.
_ATTR_MEMORY_CLOCK_KHZ = 36
_ATTR_BUS_WIDTH_BITS = 37


def _device_info(cp) -> dict:
    dev = cp.cuda.runtime.getDevice()
    props = cp.cuda.runtime.getDeviceProperties(dev)
    name = props.get("name", b"?")
    name = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
    clock = props.get("memoryClockRate")
    width = props.get("memoryBusWidth")
    try:
        if not clock:
            clock = cp.cuda.runtime.deviceGetAttribute(_ATTR_MEMORY_CLOCK_KHZ, dev)
        if not width:
            width = cp.cuda.runtime.deviceGetAttribute(_ATTR_BUS_WIDTH_BITS, dev)
    except Exception:  # noqa: BLE001 - an older/newer runtime without the attribute
        pass
    peak = 2.0 * clock * 1e3 * (width / 8) / 1e9 if clock and width else None
    return {"device": dev, "name": name, "memory_clock_khz": clock, "bus_width_bits": width,
            "peak_bandwidth_gbs": peak, "sm_count": props.get("multiProcessorCount")}


def _reference_function(cp, cu_path: str, nvcc_ptx_path: str | None):
    """The CUDA C++ saxpy as a CuPy function, and how it was built."""
    if nvcc_ptx_path and os.path.exists(nvcc_ptx_path):
        try:
            module = cp.cuda.function.Module()
            with open(nvcc_ptx_path, "rb") as f:
                module.load(f.read())
            return module.get_function("saxpy"), "nvcc -ptx -O3", module
        except Exception:  # noqa: BLE001 - e.g. a driver older than nvcc's PTX ISA: try NVRTC
            pass
    with open(cu_path, encoding="utf-8") as f:
        source = f.read()
    module = cp.RawModule(code=source)
    return module.get_function("saxpy"), "NVRTC (cupy.RawModule)", module


def _time_device(cp, launch, reps: int, inner: int) -> float:
    """Median device time of one ``launch()`` in ms (``inner`` launches between two events)."""
    launch()
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(max(1, reps)):
        start.record()
        for _ in range(inner):
            launch()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / inner)
    return statistics.median(times)


def _time_host(cp, call, count: int, reps: int) -> float:
    """Median host time of one ``call()`` in microseconds (``count`` calls per sample)."""
    call()
    cp.cuda.Device().synchronize()
    samples = []
    for _ in range(max(1, reps)):
        t0 = time.perf_counter()
        for _ in range(count):
            call()
        samples.append((time.perf_counter() - t0) / count * 1e6)
        cp.cuda.Device().synchronize()
    return statistics.median(samples)


def run(examples_dir: str, cu_dir: str, nvcc_ptx_path: str | None, quick: bool, reps: int,
        bandwidth_n: int | None = None) -> dict:
    """All GPU measurements as a dict; ``{"available": False, "note": ...}`` without a GPU, and an
    ``"error"`` entry (instead of an exception) when a measurement fails. ``bandwidth_n``: elements
    of the bandwidth run (default 2^26, ``quick`` 2^22)."""
    from kernc.backend import cuda

    if not cuda.available():
        return {"available": False,
                "note": "no usable CUDA device (kernc.backend.cuda.available() is False): "
                        "GPU bandwidth and launch overhead not measured"}
    out: dict = {"available": True}
    try:
        import numpy as np

        import kernc

        cp = cuda.cupy()
        out.update(_device_info(cp))
        mod = kernc.compile_file(os.path.join(examples_dir, "saxpy.kern"))
        a = np.float32(1.25)
        ref_fn, ref_how, _keep = _reference_function(cp, os.path.join(cu_dir, "saxpy.cu"), nvcc_ptx_path)
        out["reference_built_with"] = ref_how
        sig = mod.saxpy.signature

        def kernc_raw(xa, ya):
            """kernc's saxpy bound and packed once, then launched straight through CuPy."""
            import inspect

            from kernc.backend import binding

            extra = {"zeros": cp.zeros} if "zeros" in inspect.signature(binding.bind).parameters else {}
            bound = binding.bind(sig, (a, xa, ya), {}, lambda v: isinstance(v, cp.ndarray), "cuda", **extra)
            fn = cuda.load_module(mod._compilation.ptx(bound.index_bits)).function(sig.name)
            args = cuda.ArgPacker(sig, bound.index_bits)(bound.args)
            return lambda: fn((bound.grid,), (bound.block,), args)

        # -- bandwidth ---------------------------------------------------------------------------
        n = bandwidth_n or 1 << (22 if quick else 26)
        grid = (n + 255) // 256  # the CUDA C++ reference: 256 threads per block
        rng = np.random.default_rng(0)
        x = cp.asarray(rng.standard_normal(n, dtype=np.float32))
        y0 = cp.asarray(rng.standard_normal(n, dtype=np.float32))
        expected = y0 + a * x
        for label, launch in (
            ("kernc_api", lambda y: mod.saxpy(a, x, y)),
            ("kernc_raw", lambda y: kernc_raw(x, y)()),
            ("reference", lambda y: ref_fn((grid,), (256,), (a, x, y, np.uint32(n)))),
        ):
            y = y0.copy()
            launch(y)
            cp.cuda.Device().synchronize()
            if not bool(cp.allclose(y, expected, rtol=1e-5, atol=1e-5)):
                raise RuntimeError(f"saxpy result of {label} differs from y + a*x")
        y = y0.copy()
        inner = 3 if quick else 20
        t_kernc = _time_device(cp, kernc_raw(x, y), reps, inner)
        t_ref = _time_device(cp, lambda: ref_fn((grid,), (256,), (a, x, y, np.uint32(n))), reps, inner)
        moved = 12.0 * n
        bw_k, bw_r = moved / (t_kernc * 1e-3) / 1e9, moved / (t_ref * 1e-3) / 1e9
        peak = out.get("peak_bandwidth_gbs")
        out["saxpy_bandwidth"] = {
            "n": n, "bytes_per_launch": moved,
            "kernc_ms": t_kernc, "reference_ms": t_ref,
            "kernc_gbs": bw_k, "reference_gbs": bw_r,
            "kernc_pct_of_peak": 100.0 * bw_k / peak if peak else None,
            "reference_pct_of_peak": 100.0 * bw_r / peak if peak else None,
            "ratio_kernc_to_reference": bw_k / bw_r,
        }

        # -- host launch overhead -----------------------------------------------------------------
        small = 1024
        xs = cp.ones(small, dtype=cp.float32)
        ys = cp.zeros(small, dtype=cp.float32)
        sgrid = (small + 255) // 256
        count = 50 if quick else 2000
        api = _time_host(cp, lambda: mod.saxpy(a, xs, ys), count, reps)
        raw_k = _time_host(cp, kernc_raw(xs, ys), count, reps)
        raw_r = _time_host(cp, lambda: ref_fn((sgrid,), (256,), (a, xs, ys, np.uint32(small))), count, reps)
        out["launch_overhead"] = {
            "n": small, "calls_per_sample": count,
            "kernc_api_us": api, "kernc_raw_us": raw_k, "reference_raw_us": raw_r,
            "ratio_api_to_reference": api / raw_r,
        }
    except Exception as err:  # noqa: BLE001 - report, do not crash the whole benchmark
        out["error"] = f"{type(err).__name__}: {err}"
    return out
