"""GPU measurements (skipped with a note when ``kernc.backend.cuda.available()`` is False):

- achieved DRAM bandwidth of kernc's ``saxpy`` (12 bytes per element: read x, read y, write y) next to
  the hand-written CUDA C++ ``bench/cuda/saxpy.cu`` (nvcc's PTX, or NVRTC through
  ``cupy.RawModule`` when nvcc is missing), both launched the same raw way through CuPy, and as a
  percentage of the device's peak (memory clock x bus width x 2, from the device attributes);
- the same for three access patterns, each kernc variant next to the CUDA C++ a CUDA programmer
  writes for the job (``bench/cuda/bandwidth/``), with the variant/variant ratio the accessor or
  option is meant to win:

  - gather ``out[t] = x[idx[t]]``: kernc ``read indexed(idx)`` and ``read shared(idx)``
    (``bench/kern/gather.kern``) against a plain ``x[idx[t]]``;
  - scatter-add ``y[idx[t]] += v[t]`` with duplicate indices: kernc ``add atomic(idx)`` and
    ``add shared_sum(idx)`` (``bench/kern/scatter.kern``) against one ``atomicAdd`` per thread;
  - transpose of a row-major matrix: ``examples/transpose.kern`` compiled with kernc's view staging
    (the default) and without it (``coalesce=False``) against a naive and the classic tiled
    (32 x 33 ``__shared__`` tile) CUDA transpose;
  - skinny transposes (``R x 8`` and ``8 x C``): ``examples/transpose.kern`` called through kernc's
    API, which picks the staged or the unstaged kernel per launch, next to each launched raw;

- softmax and layernorm forward (``examples/softmax.kern``, ``examples/layernorm.kern``, 4096 x 4096
  f32; reductions across items, issue 21) next to the CUDA C++ ``bench/cuda/softmax.cu`` and
  ``layernorm.cu`` (a block per row), as a percentage of the peak (target: at least 85%);

- host launch overhead per call on a small problem: kernc's ``mod.saxpy(a, x, y)`` (argument
  binding, packing, launch), kernc's kernel launched raw, and the CUDA C++ kernel launched raw.

Every result is checked against numpy before it is timed. The input builders (``gather_data``,
``scatter_data``, ``transpose_data``) and the checks (``check_gather``, ``check_scatter``,
``check_transpose``) take numpy or CuPy arrays, so the tests run the same inputs and checks on the
CPU interpreter (``tests/bench/test_gpu_bandwidth_kernels.py``).

Bandwidth is *effective* bandwidth: the bytes the job must move at minimum (each comparison's
``bytes_counted`` says which) divided by the median device time of one launch. Every variant of a
comparison is charged the same bytes, so GB/s ratios are time ratios; a variant that moves more
(kernc's ``shared_indices`` table, a naive transpose's partial sectors) shows up as lower GB/s.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

#: CUDA runtime attribute numbers (``cudaDeviceAttr``): memory clock in kHz, bus width in bits.
_ATTR_MEMORY_CLOCK_KHZ = 36
_ATTR_BUS_WIDTH_BITS = 37

HERE = os.path.dirname(os.path.abspath(__file__))
#: kernc kernels of the bandwidth comparisons (the transpose is ``examples/transpose.kern``).
KERN_DIR = os.path.join(HERE, "kern")
#: Threads per block of the 1-D kernels on both sides: kernc's default ``@block(256)`` and the
#: ``__launch_bounds__(256)`` of the CUDA C++ references; ``shared_indices`` tables are per block of it.
BLOCK = 256
#: The bandwidth comparisons, in the order they are run and printed (``run`` returns each as
#: ``"<name>_bandwidth"``).
COMPARISONS = ("gather", "scatter", "transpose", "transpose_tall", "transpose_wide", "softmax", "layernorm")
#: The comparisons with a CUDA C++ reference, ``bench/cuda/bandwidth/<name>.cu``.
REFERENCES = ("gather", "scatter", "transpose")
#: Problem sizes: elements of the gather/scatter, (rows, columns) of the transposes. The tall and
#: wide (skinny) ones show the launch-time choice between the staged and the unstaged kernel
#: (``launch_policy.staging_pays``): R x 8 runs unstaged, 8 x C staged.
FULL_SIZES = {"gather": 1 << 24, "scatter": 1 << 24, "transpose": (4096, 4096),
              "transpose_tall": (1 << 21, 8), "transpose_wide": (8, 1 << 21), "gemm_f16": 8192,
              "softmax": (4096, 4096), "layernorm": (4096, 4096)}
QUICK_SIZES = {"gather": 1 << 20, "scatter": 1 << 20, "transpose": (1024, 1024),
               "transpose_tall": (1 << 16, 8), "transpose_wide": (8, 1 << 16), "gemm_f16": 2048,
               "softmax": (1024, 4096), "layernorm": (1024, 4096)}
#: The f16 convolutions on tensor cores (``conv_f16``): ``(N, H, W, C, K)`` of a 3x3 filter, stride 1,
#: padding 1 (an H x W output), against the cuBLAS time of the im2col GEMM.
FULL_SIZES["conv_f16"] = (32, 56, 56, 64, 128)
QUICK_SIZES["conv_f16"] = (2, 14, 14, 32, 64)
#: The tensor-core convolution examples of :func:`_conv` (``out["conv_f16_tensor_cores"]``) and the
#: f32 ones (``kern-tile-contractions``, ``out["conv_f32_tiled"]``; issue 20: conv2d_fwd at least
#: 60% of its im2col GEMM in cuBLAS).
CONV_F16 = ("conv2d_fwd_f16", "conv2d_wgrad_f16")
CONV_F32 = ("conv2d_fwd", "conv2d_wgrad")
#: Relative tolerance of the scatter-add check (f32 sums in an unspecified order; see check_scatter).
SCATTER_RTOL = 4e-6


# -- inputs and numpy expectations -------------------------------------------------------------------
def _host(a):
    """``a`` as a numpy array (CuPy arrays are copied to the host)."""
    import numpy as np

    return a.get() if hasattr(a, "get") and not isinstance(a, np.ndarray) else np.asarray(a)


def _shuffle_within_blocks(rng, a, block: int):
    """``a`` with the entries of every run of ``block`` consecutive entries (and of the last, partial
    one) permuted at random: what thread sees which entry changes, which block does not."""
    import numpy as np

    out = a.copy()
    full = a.size - a.size % block
    if full:
        perm = np.argsort(rng.random((full // block, block)), axis=1)
        out[:full] = np.take_along_axis(a[:full].reshape(-1, block), perm, axis=1).ravel()
    if a.size > full:
        out[full:] = rng.permutation(a[full:])
    return out


def gather_data(xp, n: int, seed: int = 0, repeats: int = 8) -> dict:
    """Inputs of the gather comparison ``out[t] = x[idx[t]]``, ``t < n``, as arrays of ``xp`` (numpy
    or CuPy; generated with numpy's RNG, so both get the same values).

    Returns ``{"x": f32[m], "idx": u32[n], "out": f32[n]}`` with ``m = max(1, n // repeats)``;
    ``out`` is NaN-filled (so an element no thread writes fails the check). The index pattern is the
    one ``shared(idx)`` is made for, a mesh or particle code's: ``idx`` is sorted random indices
    (each ``x`` element used ``repeats`` times on average; sorted as particles sorted by cell are),
    then shuffled within each block of :data:`BLOCK` threads (items of one cell come in any order).
    A block then needs only ~``BLOCK / repeats`` distinct, nearby elements, which ``shared`` loads
    once each, ascending and coalesced, while ``indexed`` issues one load per thread and each warp's
    32 loads land in random order over the block's range."""
    import numpy as np

    if n < 1:
        raise ValueError(f"gather_data: n must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    m = max(1, n // repeats)
    x = rng.standard_normal(m, dtype=np.float32)
    idx = _shuffle_within_blocks(rng, np.sort(rng.integers(0, m, n, dtype=np.uint32)), BLOCK)
    out = np.full(n, np.nan, np.float32)
    return {"x": xp.asarray(x), "idx": xp.asarray(idx), "out": xp.asarray(out)}


def expected_gather(data: dict):
    """numpy ``x[idx]`` (``f32[n]``) for the arrays of :func:`gather_data`."""
    return _host(data["x"])[_host(data["idx"])]


def check_gather(got, data: dict, what: str = "gather") -> None:
    """``AssertionError`` unless ``got`` (``f32[n]``, numpy or CuPy) equals :func:`expected_gather`
    bit for bit (a gather copies values: no rounding is allowed)."""
    _check_exact(_host(got), expected_gather(data), what)


def gather_bytes(data: dict) -> int:
    """Bytes a gather must move at minimum: read ``idx`` (4n), write ``out`` (4n) and read each
    distinct ``x`` element once (4 bytes each)."""
    return 8 * int(data["idx"].size) + 4 * distinct_indices(data["idx"])


def scatter_data(xp, n: int, seed: int = 0, repeats: int = 8) -> dict:
    """Inputs of the scatter-add comparison ``y[idx[t]] += v[t]``, ``t < n``, as arrays of ``xp``.

    Returns ``{"v": f32[n], "idx": u32[n], "y0": f32[m], "y": f32[m]}`` with ``m = ceil(n /
    repeats)``; ``y`` is the buffer the kernels update (a copy of ``y0``, which stays untouched).
    ``idx = t // repeats``, shuffled within each block of :data:`BLOCK` threads: every target gets
    exactly ``repeats`` values, all from threads of one block but not from neighbouring lanes (as
    the nodes of a mesh collect their elements' contributions). That is the case ``shared_sum`` is
    made for (one atomic per distinct index per block instead of one per thread) and where plain
    atomics collide. Values are ``±U[0.25, 1]``: no term is small enough to vanish in the tolerance
    of :func:`check_scatter`."""
    import numpy as np

    if n < 1:
        raise ValueError(f"scatter_data: n must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    m = -(-n // repeats)
    idx = _shuffle_within_blocks(rng, (np.arange(n) // repeats).astype(np.uint32), BLOCK)
    sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    v = (sign * rng.uniform(0.25, 1.0, n)).astype(np.float32)
    y0 = rng.standard_normal(m, dtype=np.float32)
    return {"v": xp.asarray(v), "idx": xp.asarray(idx), "y0": xp.asarray(y0), "y": xp.asarray(y0.copy())}


def expected_scatter(data: dict):
    """``(want, scale)``, both ``f64[m]``: ``y0 + Σ_{idx[t]=u} v[t]`` summed in float64, and the sum
    of the absolute values of those terms (the scale of the rounding error of an f32 sum)."""
    import numpy as np

    y0 = _host(data["y0"]).astype(np.float64)
    v = _host(data["v"]).astype(np.float64)
    idx = _host(data["idx"])
    want = y0 + np.bincount(idx, weights=v, minlength=y0.size)
    scale = np.abs(y0) + np.bincount(idx, weights=np.abs(v), minlength=y0.size)
    return want, scale


def check_scatter(got, data: dict, what: str = "scatter") -> None:
    """``AssertionError`` unless ``got`` (``f32[m]``) is within ``SCATTER_RTOL * scale`` (plus half an
    f32 ulp of the result) of the float64 sum of :func:`expected_scatter`: atomics add in any order,
    so the f32 result is not bitwise reproducible, but a missing or doubled term (>= 0.25) is far
    outside the tolerance."""
    import numpy as np

    got = _host(got)
    want, scale = expected_scatter(data)
    assert got.shape == want.shape and got.dtype == np.float32, (what, got.shape, got.dtype)
    err = np.abs(got.astype(np.float64) - want)
    tol = SCATTER_RTOL * scale + np.abs(want) * np.finfo(np.float32).eps
    bad = ~(err <= tol)  # NaN counts as bad
    if bad.any():
        k = int(np.argmax(bad))
        raise AssertionError(f"{what}: {int(bad.sum())} wrong elements; first y[{k}] = {got[k]!r}, "
                             f"want {want[k]!r} (tolerance {tol[k]:.3g})")


def scatter_bytes(data: dict) -> int:
    """Bytes a scatter-add must move at minimum: read ``idx`` and ``v`` (4n each), and read and
    write back each distinct target element of ``y`` once (8 bytes each)."""
    return 8 * int(data["idx"].size) + 8 * distinct_indices(data["idx"])


def transpose_data(xp, shape, seed: int = 0) -> dict:
    """Inputs of the transpose comparison as arrays of ``xp``: ``{"a": f32[R, C], "b": f32[C, R]}``,
    both row-major, for ``shape = (R, C)`` (an int ``N`` means ``(N, N)``); ``b`` is NaN-filled."""
    import numpy as np

    rows, cols = (shape, shape) if isinstance(shape, int) else tuple(shape)
    if rows < 1 or cols < 1:
        raise ValueError(f"transpose_data: shape must be positive, got {shape!r}")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((rows, cols), dtype=np.float32)
    return {"a": xp.asarray(a), "b": xp.asarray(np.full((cols, rows), np.nan, np.float32))}


def expected_transpose(data: dict):
    """numpy ``a.T`` as a contiguous ``f32[C, R]``."""
    import numpy as np

    return np.ascontiguousarray(_host(data["a"]).T)


def check_transpose(got, data: dict, what: str = "transpose") -> None:
    """``AssertionError`` unless ``got`` (``f32[C, R]``) equals ``a.T`` bit for bit."""
    _check_exact(_host(got), expected_transpose(data), what)


def transpose_bytes(data: dict) -> int:
    """Bytes a transpose must move at minimum: read ``a`` and write ``b`` once (4 bytes per element each)."""
    return 8 * int(data["a"].size)


def distinct_indices(idx) -> int:
    """How many distinct values the index array ``idx`` (``u32[n]``, numpy or CuPy) holds."""
    import numpy as np

    return int(np.count_nonzero(np.bincount(_host(idx)))) if idx.size else 0


def _check_exact(got, want, what: str) -> None:
    import numpy as np

    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, got.dtype, want.shape)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    if not same.all():
        k = tuple(int(i) for i in np.argwhere(~same)[0])
        raise AssertionError(f"{what}: {int((~same).sum())} wrong elements; first at {k}: got {got[k]!r}, "
                             f"want {want[k]!r}")


# -- device, modules and timing ----------------------------------------------------------------------
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


def compile_kern(path: str, arch: str = "sm_90", coalesce: bool = True):
    """The ``.kern`` file at ``path`` as a :class:`kernc.api.Module` for ``arch``, compiled with or
    without kernc's view staging (``coalesce``, ``kernc compile --no-coalesce``). ``CompileError``
    for a bad program, ``OSError`` for an unreadable file."""
    import kernc

    return kernc.compile_file(path, arch=arch, coalesce=coalesce)


def _device_arch(cp) -> str:
    """``sm_XY`` of the current device when kernc can target it, else ``sm_90`` (kernc's default)."""
    try:
        from kernc.compiler import validate_arch

        return validate_arch(f"sm_{cp.cuda.Device().compute_capability}")
    except Exception:  # noqa: BLE001 - no such attribute, or an arch kernc does not know
        return "sm_90"


def _reference_module(cp, cu_path: str, nvcc_ptx_path: str | None = None, arch: str | None = None,
                      workdir: str | None = None):
    """The CUDA C++ file ``cu_path`` loaded into the current context: ``(module, how)``, where
    ``module.get_function(name)`` gives any of its ``extern "C"`` kernels and ``how`` says how it was
    built. Uses ``nvcc_ptx_path`` when given, else ``nvcc -ptx -O3 -arch=ARCH`` into ``workdir`` when
    nvcc is installed (and ``arch`` and ``workdir`` are given); falls back to NVRTC
    (``cupy.RawModule``) when there is no PTX or the driver refuses it (e.g. nvcc newer than the
    driver). ``OSError`` if ``cu_path`` cannot be read; CuPy's compile error if NVRTC fails too."""
    if not nvcc_ptx_path and arch and workdir:
        try:
            from . import tools

            stem = os.path.splitext(os.path.basename(cu_path))[0]
            nvcc_ptx_path = tools.nvcc_ptx(cu_path, arch, workdir, f"bandwidth.{stem}")
        except Exception:  # noqa: BLE001 - nvcc failed (e.g. an arch it does not know): try NVRTC
            nvcc_ptx_path = None
    if nvcc_ptx_path and os.path.exists(nvcc_ptx_path):
        try:
            module = cp.cuda.function.Module()
            with open(nvcc_ptx_path, "rb") as f:
                module.load(f.read())
            return module, "nvcc -ptx -O3"
        except Exception:  # noqa: BLE001 - e.g. a driver older than nvcc's PTX ISA: try NVRTC
            pass
    with open(cu_path, encoding="utf-8") as f:
        source = f.read()
    # -I: a reference may include a header beside it (gemm_f16.cu's gemm_mma.cuh, gemm_mma_tiles.cuh)
    return (cp.RawModule(code=source, options=(f"-I{os.path.dirname(os.path.abspath(cu_path))}",)),
            "NVRTC (cupy.RawModule)")


def _reference_function(cp, cu_path: str, nvcc_ptx_path: str | None, name: str = "saxpy",
                        arch: str | None = None, workdir: str | None = None):
    """Kernel ``name`` of the CUDA C++ file ``cu_path`` as a CuPy function: ``(function, how, module)``
    (keep ``module`` alive while the function is used); see :func:`_reference_module` for the
    other arguments and the errors."""
    module, how = _reference_module(cp, cu_path, nvcc_ptx_path, arch, workdir)
    return module.get_function(name), how, module


def _kernc_raw(cp, kernel, args: tuple):
    """kernc ``kernel`` (a :class:`kernc.api.Kernel`) bound to the CuPy arrays and scalars ``args``
    and packed once, returned as a ``launch()`` that calls the driver straight through CuPy -- what
    ``kernel(*args)`` launches, without its per-call host work. Tables that ``shared(I)`` and
    ``shared_sum(I)`` need are built here, once, from the raw index array (not timed: they are built
    once per index array and reused)."""
    import inspect

    from kernc.backend import binding, cuda

    sig = kernel.signature
    extra = {"zeros": cp.zeros} if "zeros" in inspect.signature(binding.bind).parameters else {}
    bound = binding.bind(sig, args, {}, lambda v: isinstance(v, cp.ndarray), "cuda", **extra)
    # The PTX that assumes 16-byte aligned buffers (the default), as kernc's own launcher picks for
    # CuPy's allocations (256-byte aligned).
    fn = cuda.load_module(kernel._module._compilation.ptx(bound.index_bits)).function(sig.name)
    packed = cuda.ArgPacker(sig, bound.index_bits)(bound.args)
    grid, block = bound.grid, bound.block
    return lambda: fn((grid,), (block,), packed)


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


# -- the bandwidth comparisons -----------------------------------------------------------------------
class _Bench:
    """What every comparison of one run shares: CuPy, the target, the timing parameters, the folders
    and the compiled modules (each ``.kern``/``.cu`` built once per run)."""

    def __init__(self, cp, cu_dir: str, examples_dir: str, workdir: str, peak, reps: int, inner: int):
        self.cp, self.peak, self.reps, self.inner = cp, peak, reps, inner
        self.cu_dir = os.path.join(cu_dir, "bandwidth")
        self.examples_dir, self.workdir = examples_dir, workdir
        self.arch = _device_arch(cp)
        self._kern: dict = {}

    def reference(self, cu_name: str):
        """``(module, how)`` of ``bench/cuda/bandwidth/CU_NAME``."""
        return _reference_module(self.cp, os.path.join(self.cu_dir, cu_name), None, self.arch, self.workdir)

    def kernc(self, path: str, coalesce: bool = True):
        """The kernc Module of ``path`` for this device's arch (see :func:`compile_kern`)."""
        key = (path, coalesce)
        if key not in self._kern:
            self._kern[key] = compile_kern(path, self.arch, coalesce)
        return self._kern[key]

    def measure(self, variants: dict, reset, check, moved: int) -> dict:
        """Verify, then time every variant. ``variants``: ``{key: (label, launch)}``; ``reset()``
        restores the output before a verification launch and ``check(key)`` raises when the output
        is wrong. Returns ``{key: {"label", "ms", "gbs", "pct_of_peak"}}`` for ``moved`` bytes per
        launch. All variants are verified before any is timed, so a wrong one wastes no time."""
        cp = self.cp
        for key, (_label, launch) in variants.items():
            reset()
            launch()
            cp.cuda.Device().synchronize()
            check(key)
        rows = {}
        for key, (label, launch) in variants.items():
            ms = _time_device(cp, launch, self.reps, self.inner)
            gbs = moved / (ms * 1e-3) / 1e9
            rows[key] = {"label": label, "ms": ms, "gbs": gbs,
                         "pct_of_peak": 100.0 * gbs / self.peak if self.peak else None}
        return rows


def _ratios(rows: dict, pairs) -> dict:
    """``{"a/b": GB/s of a / GB/s of b}`` (> 1: ``a`` is faster) for each ``(a, b)`` of ``pairs``."""
    return {f"{a}/{b}": rows[a]["gbs"] / rows[b]["gbs"] for a, b in pairs}


def _gather(b: _Bench, n: int) -> dict:
    import numpy as np

    cp = b.cp
    ref_module, how = b.reference("gather.cu")
    ref = ref_module.get_function("gather")
    mod = b.kernc(os.path.join(KERN_DIR, "gather.kern"))
    d = gather_data(cp, n)
    x, idx, out = d["x"], d["idx"], d["out"]
    grid = (n + BLOCK - 1) // BLOCK
    variants = {
        "kernc_indexed": ("kernc indexed(idx)", _kernc_raw(cp, mod.gather_indexed, (x, idx, out))),
        "kernc_shared": ("kernc shared(idx)", _kernc_raw(cp, mod.gather_shared, (x, idx, out))),
        "reference": ("CUDA C++ x[idx[t]]", lambda: ref((grid,), (BLOCK,), (x, idx, out, np.uint32(n)))),
    }
    moved = gather_bytes(d)
    rows = b.measure(variants, lambda: out.fill(np.nan), lambda key: check_gather(out, d, f"gather {key}"), moved)
    return {
        "n": n, "m": int(x.size), "distinct": distinct_indices(idx), "bytes_per_launch": moved,
        "bytes_counted": "idx (4n) + out (4n) + each distinct x element once (4 bytes)",
        "index_pattern": "sorted random, ~8 uses per x element, shuffled within each block of 256",
        "reference_built_with": how, "variants": rows,
        "shared_indices_ms": _table_ms(b, idx),
        "ratios": _ratios(rows, [("kernc_indexed", "reference"), ("kernc_shared", "reference"),
                                 ("kernc_shared", "kernc_indexed")]),
    }


def _scatter(b: _Bench, n: int) -> dict:
    import numpy as np

    cp = b.cp
    ref_module, how = b.reference("scatter.cu")
    ref = ref_module.get_function("scatter_add")
    mod = b.kernc(os.path.join(KERN_DIR, "scatter.kern"))
    d = scatter_data(cp, n)
    v, idx, y0, y = d["v"], d["idx"], d["y0"], d["y"]
    grid = (n + BLOCK - 1) // BLOCK
    variants = {
        "kernc_atomic": ("kernc atomic(idx)", _kernc_raw(cp, mod.scatter_atomic, (v, y, idx))),
        "kernc_shared_sum": ("kernc shared_sum(idx)", _kernc_raw(cp, mod.scatter_shared_sum, (v, y, idx))),
        "reference": ("CUDA C++ atomicAdd", lambda: ref((grid,), (BLOCK,), (v, y, idx, np.uint32(n)))),
    }

    def reset():
        y[...] = y0

    moved = scatter_bytes(d)
    # Timed launches keep adding into y (the values do not matter for the time).
    rows = b.measure(variants, reset, lambda key: check_scatter(y, d, f"scatter {key}"), moved)
    return {
        "n": n, "m": int(y.size), "distinct": distinct_indices(idx), "bytes_per_launch": moved,
        "bytes_counted": "idx (4n) + v (4n) + read and write of each distinct y element once (8 bytes)",
        "index_pattern": "t // 8 shuffled within each block of 256 (8 adds per target, one block each)",
        "reference_built_with": how, "variants": rows,
        "shared_indices_ms": _table_ms(b, idx),
        "ratios": _ratios(rows, [("kernc_atomic", "reference"), ("kernc_shared_sum", "reference"),
                                 ("kernc_shared_sum", "kernc_atomic")]),
    }


def _transpose(b: _Bench, shape) -> dict:
    import numpy as np

    cp = b.cp
    ref_module, how = b.reference("transpose.cu")
    naive, tiled = ref_module.get_function("transpose_naive"), ref_module.get_function("transpose_tiled")
    path = os.path.join(b.examples_dir, "transpose.kern")
    coalesced, plain = b.kernc(path), b.kernc(path, coalesce=False)
    d = transpose_data(cp, shape)
    a, out = d["a"], d["b"]
    rows_, cols = (int(s) for s in a.shape)
    sizes = (np.uint32(rows_), np.uint32(cols))
    # The references' launch shapes (bench/cuda/bandwidth/transpose.cu): (32, 8)-thread blocks, one
    # element per thread (naive) or one 32 x 32 tile per block (tiled).
    naive_grid = ((cols + 31) // 32, (rows_ + 7) // 8)
    tiled_grid = ((cols + 31) // 32, (rows_ + 31) // 32)
    variants = {
        "kernc_coalesced": ("kernc (view staging)", _kernc_raw(cp, coalesced.transpose, (a, out))),
        "kernc_naive": ("kernc --no-coalesce", _kernc_raw(cp, plain.transpose, (a, out))),
        "reference_tiled": ("CUDA C++ tiled 32x33", lambda: tiled(tiled_grid, (32, 8), (a, out, *sizes))),
        "reference_naive": ("CUDA C++ naive", lambda: naive(naive_grid, (32, 8), (a, out, *sizes))),
    }
    moved = transpose_bytes(d)
    rows = b.measure(variants, lambda: out.fill(np.nan), lambda key: check_transpose(out, d, f"transpose {key}"),
                     moved)
    return {
        "rows": rows_, "cols": cols, "bytes_per_launch": moved,
        "bytes_counted": "read a and write b once (4 + 4 bytes per element)",
        "reference_built_with": how, "variants": rows,
        "ratios": _ratios(rows, [("kernc_coalesced", "reference_tiled"), ("kernc_naive", "reference_naive"),
                                 ("kernc_coalesced", "kernc_naive"), ("reference_tiled", "reference_naive")]),
    }


def _transpose_choice(b: _Bench, shape) -> dict:
    """A skinny transpose launched through kernc's API, which picks the staged or the unstaged
    kernel per launch (``launch_policy.staging_pays``), next to each of the two launched raw."""
    import numpy as np

    from kernc.backend import launch_policy

    cp = b.cp
    path = os.path.join(b.examples_dir, "transpose.kern")
    staged, plain = b.kernc(path), b.kernc(path, coalesce=False)
    d = transpose_data(cp, shape)
    a, out = d["a"], d["b"]
    rows_, cols = (int(s) for s in a.shape)
    picks = launch_policy.staging_pays(staged.transpose.signature, {"R": rows_, "C": cols})
    variants = {
        "kernc_choice": (f"kernc (picks {'staged' if picks else 'unstaged'})", lambda: staged.transpose(a, out)),
        "kernc_staged": ("kernc staged", _kernc_raw(cp, staged.transpose, (a, out))),
        "kernc_unstaged": ("kernc --no-coalesce", _kernc_raw(cp, plain.transpose, (a, out))),
    }
    rows = b.measure(variants, lambda: out.fill(np.nan), lambda key: check_transpose(out, d, f"transpose {key}"),
                     transpose_bytes(d))
    return {
        "rows": rows_, "cols": cols, "bytes_per_launch": transpose_bytes(d),
        "bytes_counted": "read a and write b once (4 + 4 bytes per element)",
        "chosen": "staged" if picks else "unstaged", "variants": rows,
        "ratios": _ratios(rows, [("kernc_choice", "kernc_staged"), ("kernc_choice", "kernc_unstaged")]),
    }


def _table_ms(b: _Bench, idx):
    """Device time in ms of building ``shared_indices(idx, BLOCK)`` on the GPU (what a launch with a
    new index array pays before ``shared``/``shared_sum`` kernels; not part of their times), or
    ``None`` if it cannot be measured."""
    try:
        from kernc.backend.shared_indices import shared_indices

        return _time_device(b.cp, lambda: shared_indices(idx, BLOCK), b.reps, 1)
    except Exception:  # noqa: BLE001 - informative only
        return None


# -- reductions across items (issue 21): softmax and layernorm forward -----------------------------
def reduction_data(xp, name: str, shape, seed: int = 0) -> dict:
    """The arguments of ``examples/NAME.kern`` (``softmax`` or ``layernorm``) for ``shape = (R,
    N)`` as ``xp`` arrays (numpy or CuPy), in the kernel's parameter order."""
    import numpy as np

    rng = np.random.default_rng(seed)
    R, N = shape
    f = np.float32
    x = xp.asarray((4 * rng.standard_normal((R, N))).astype(f))
    if name == "softmax":
        return {"x": x, "y": xp.zeros((R, N), dtype=f)}
    return {"x": x, "w": xp.asarray(rng.uniform(0.5, 1.5, N).astype(f)), "b": xp.asarray(rng.standard_normal(N).astype(f)),
            "y": xp.zeros((R, N), dtype=f), "mean": xp.zeros(R, dtype=f), "rstd": xp.zeros(R, dtype=f),
            "eps": f(1e-5)}


def expected_reduction(name: str, data: dict) -> dict:
    """The numpy (float64) expectation of the outputs of :func:`reduction_data`'s kernel."""
    import numpy as np

    x = _host(data["x"]).astype(np.float64)
    if name == "softmax":
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return {"y": e / e.sum(axis=1, keepdims=True)}
    mean = x.mean(axis=1)
    rstd = 1 / np.sqrt(((x - mean[:, None]) ** 2).mean(axis=1) + float(data["eps"]))
    y = (x - mean[:, None]) * rstd[:, None] * _host(data["w"]) + _host(data["b"])
    return {"y": y, "mean": mean, "rstd": rstd}


def check_reduction(name: str, data: dict, want: dict, what: str) -> None:
    """``AssertionError`` naming ``what`` when an output differs from ``want`` (float32 sums in
    another order than numpy's: ``rtol`` 1e-4)."""
    import numpy as np

    for key, w in want.items():
        got = _host(data[key])
        bad = ~np.isclose(got, w, rtol=1e-4, atol=1e-5)
        if bad.any():
            raise AssertionError(f"{what}: {int(bad.sum())} wrong elements of {key}")


def reduction_bytes(name: str, shape) -> int:
    """The bytes the job must move: x read and y written once (4 + 4 per element), and for
    layernorm w and b read once (8 per column) and mean, rstd written (8 per row)."""
    R, N = shape
    return 8 * R * N + (8 * N + 8 * R if name == "layernorm" else 0)


def _reduction(b: _Bench, shape, name: str) -> dict:
    import numpy as np

    cp = b.cp
    R, N = (int(v) for v in shape)
    mod = b.kernc(os.path.join(b.examples_dir, f"{name}.kern"))
    ref_module, how = _reference_module(cp, os.path.join(os.path.dirname(b.cu_dir), f"{name}.cu"), None,
                                        b.arch, b.workdir)
    ref = ref_module.get_function(name)
    d = reduction_data(cp, name, (R, N))
    want = expected_reduction(name, d)
    args = tuple(d.values())
    sizes = (np.uint32(R), np.uint32(N))
    # The reference: one block of 256 threads per row (it loops over rows past the grid)
    grid = min(R, 1 << 16) or 1
    variants = {
        "kernc": ("kernc (kern-map-groups)", _kernc_raw(cp, getattr(mod, name), args)),
        "reference": ("CUDA C++ block per row", lambda: ref((grid,), (256,), (*args, *sizes))),
    }
    moved = reduction_bytes(name, (R, N))
    rows = b.measure(variants, lambda: d["y"].fill(np.nan),
                     lambda key: check_reduction(name, d, want, f"{name} {key}"), moved)
    return {"rows": R, "cols": N, "bytes_per_launch": moved,
            "bytes_counted": "x read and y written once" + (", w and b read once, mean and rstd written"
                                                            if name == "layernorm" else ""),
            "reference_built_with": how, "variants": rows, "ratios": _ratios(rows, [("kernc", "reference")])}


_COMPARE = {"gather": _gather, "scatter": _scatter, "transpose": _transpose,
            "transpose_tall": _transpose_choice, "transpose_wide": _transpose_choice,
            "softmax": lambda b, shape: _reduction(b, shape, "softmax"),
            "layernorm": lambda b, shape: _reduction(b, shape, "layernorm")}


# -- all GPU measurements ----------------------------------------------------------------------------
#: The sizes ``n`` of the f32 gemm rows (``n x n x n``; issue 20: 1024^2 to 8192^2 and odd sizes,
#: the target at 4096 and never under 50% of cuBLAS at any size >= 512).
GEMM_F32_SIZES = {"full": (512, 1000, 1024, 2048, 2049, 4096, 8192), "quick": (512, 1000)}


def _gemm_f32(b: _Bench, n: int, mod) -> dict:
    """``examples/gemm.kern`` (``kern-tile-contractions``, ``mod`` compiled once by the caller)
    against ``cupy.matmul`` of the same f32 matrices, ``n x n x n``: cuBLAS SGEMM with TF32 off
    (CuPy only lets cuBLAS use TF32 when ``CUPY_TF32=1`` is set; ``RuntimeError`` then, since the
    comparison would be against 10-bit mantissas). Median device ms and GFLOP/s (``2 n^3`` flops) of
    each and their ratio (> 1: kernc faster). kernc's result is checked first against the f64
    product, within the classic bound ``gamma_n = n u / (1 - n u)`` times ``|a| @ |b|`` (Higham,
    "Accuracy and Stability of Numerical Algorithms", 3.5; ``u = 2^-24``); ``RuntimeError`` when
    it is off."""
    import numpy as np

    if os.environ.get("CUPY_TF32", "0") not in ("", "0"):
        raise RuntimeError("CUPY_TF32 is set: cupy.matmul would run on TF32 tensor cores; unset it")
    cp = b.cp
    rng = np.random.default_rng(n)
    a = cp.asarray(rng.standard_normal((n, n), dtype=np.float32))
    bb = cp.asarray(rng.standard_normal((n, n), dtype=np.float32))
    c = cp.zeros((n, n), dtype=cp.float32)
    launch = _kernc_raw(cp, mod.gemm, (a, bb, c))
    launch()
    cp.cuda.Device().synchronize()
    u = 2.0 ** -24
    gamma = n * u / (1 - n * u)
    bound = gamma * cp.matmul(cp.abs(a).astype(cp.float64), cp.abs(bb).astype(cp.float64))
    err = cp.abs(c.astype(cp.float64) - cp.matmul(a.astype(cp.float64), bb.astype(cp.float64)))
    if not bool((err <= bound).all()):
        raise RuntimeError(f"gemm {n}^3: kernc's result is off the f64 product by more than gamma_n |a||b|")
    bound = err = None
    inner = max(1, b.inner // (4 if n <= 2048 else 20))
    t_k = _time_device(cp, launch, b.reps, inner)
    t_r = _time_device(cp, lambda: cp.matmul(a, bb), b.reps, inner)
    flops = 2.0 * n ** 3
    return {"n": n, "kernc_ms": t_k, "cupy_ms": t_r, "kernc_gflops": flops / (t_k * 1e-3) / 1e9,
            "cupy_gflops": flops / (t_r * 1e-3) / 1e9, "ratio_kernc_to_cupy": t_r / t_k}


def _gemm_f32_rows(b: _Bench, sizes) -> dict:
    """:func:`_gemm_f32` at each of ``sizes``: ``{"sizes": {n: row or {"error"}}, "arch"}``."""
    mod = b.kernc(os.path.join(b.examples_dir, "gemm.kern"))
    rows = {}
    for n in sizes:
        try:
            rows[n] = _gemm_f32(b, n, mod)
        except Exception as err:  # noqa: BLE001 - one size failing must not hide the others
            rows[n] = {"error": f"{type(err).__name__}: {err}"}
        finally:
            if hasattr(b.cp, "get_default_memory_pool"):
                b.cp.get_default_memory_pool().free_all_blocks()
    return {"arch": b.arch, "sizes": rows}


def _gemm_f16(b: _Bench, n: int) -> dict:
    """``examples/gemm_f16.kern`` (tensor cores where the device has them) against
    ``cupy.matmul`` of the same f16 matrices (cuBLAS HGEMM, f32 accumulation), ``n x n x n``:
    median device ms and GFLOP/s (``2 n^3`` flops) of each, and their ratio (> 1: kernc faster).
    kernc's result is checked against ``cupy.matmul`` in f32 first (1e-3 relative, scaled by
    ``sqrt(n)``); ``RuntimeError`` when it is off."""
    import math

    import numpy as np

    cp = b.cp
    mod = b.kernc(os.path.join(b.examples_dir, "gemm_f16.kern"))
    rng = np.random.default_rng(0)
    a = cp.asarray(rng.standard_normal((n, n)).astype(np.float16))
    bb = cp.asarray(rng.standard_normal((n, n)).astype(np.float16))
    c = cp.zeros((n, n), dtype=cp.float32)
    launch = _kernc_raw(cp, mod.gemm_f16, (a, bb, c))
    launch()
    cp.cuda.Device().synchronize()
    want = cp.matmul(a.astype(cp.float32), bb.astype(cp.float32))
    if not bool(cp.allclose(c, want, rtol=1e-3 * math.sqrt(n), atol=1e-3 * math.sqrt(n))):
        raise RuntimeError("gemm_f16: kernc's result differs from cupy.matmul")
    want = None
    t_k = _time_device(cp, launch, b.reps, max(1, b.inner // 4))
    t_r = _time_device(cp, lambda: cp.matmul(a, bb), b.reps, max(1, b.inner // 4))
    flops = 2.0 * n ** 3
    return {"n": n, "arch": b.arch, "tensor_cores": "mma.sync" in mod.ptx or "wgmma.mma_async" in mod.ptx,
            "wgmma": "wgmma.mma_async" in mod.ptx,
            "kernc_ms": t_k, "cupy_ms": t_r, "kernc_gflops": flops / (t_k * 1e-3) / 1e9,
            "cupy_gflops": flops / (t_r * 1e-3) / 1e9, "ratio_kernc_to_cupy": t_r / t_k}


def _im2col(cp, x, R: int, S: int):
    """The ``(N*H*W, R*S*C)`` im2col matrix of NHWC ``x`` for an ``R x S`` filter, stride 1,
    padding ``(R//2, S//2)``: row ``(n, oh, ow)``, column ``(r, s, c)`` (the examples' order)."""
    N, H, W, C = x.shape
    xp = cp.pad(x, ((0, 0), (R // 2, R // 2), (S // 2, S // 2), (0, 0)))
    cols = cp.stack([xp[:, r:r + H, s:s + W, :] for r in range(R) for s in range(S)], axis=3)
    return cols.reshape(N * H * W, R * S * C)


def _conv(b: _Bench, name: str, shape) -> dict:
    """``examples/<name>.kern`` (``conv2d_fwd_f16`` or ``conv2d_wgrad_f16``, tensor cores where the
    device has them; ``conv2d_fwd`` or ``conv2d_wgrad`` in f32, CUDA cores) on ``shape = (N, H, W, C, K)`` with a 3x3 filter, stride 1, padding 1, against
    ``cupy.matmul`` of its im2col GEMM on the same type (cuBLAS, f32 accumulation, TF32 off; the im2col matrix built
    beforehand, not timed): fwd ``(N*H*W x 9C) @ (9C x K)``, wgrad ``(K x N*H*W) @ (N*H*W x 9C)``.
    Median device ms and GFLOP/s (``2 m n k``) of each and their ratio (> 1: kernc faster); kernc's
    result is checked against the f32 GEMM first (1e-3 relative, scaled by ``sqrt(k)``;
    ``RuntimeError`` when it is off)."""
    import math

    import numpy as np

    cp = b.cp
    dt = np.float16 if name.endswith("_f16") else np.float32
    N, H, W, C, K = (int(v) for v in shape)
    R = S = 3
    mod = b.kernc(os.path.join(b.examples_dir, f"{name}.kern"))
    rng = np.random.default_rng(0)
    x = cp.asarray(rng.standard_normal((N, H, W, C)).astype(dt))
    cols = _im2col(cp, x, R, S)
    geo = (1, 1, 1, 1, 1, 1)  # sh, sw, ph, pw, dh, dw
    if name.startswith("conv2d_fwd"):
        w = cp.asarray(rng.standard_normal((K, R, S, C)).astype(dt))
        out = cp.zeros((N, H, W, K), dtype=cp.float32)
        args, lhs, rhs = (x, w, out, *geo), cols, w.reshape(K, R * S * C).T  # ((r, s, c) x k)
    else:
        dy = cp.asarray(rng.standard_normal((N * H * W, K)).astype(dt))
        out = cp.zeros((K, R, S, C), dtype=cp.float32)
        args, lhs, rhs = (x, dy, out, H, W, *geo), dy.T, cols
    (m, k), n = lhs.shape, rhs.shape[1]
    launch = _kernc_raw(cp, getattr(mod, name), args)
    launch()
    cp.cuda.Device().synchronize()
    want = cp.matmul(lhs.astype(cp.float32), rhs.astype(cp.float32)).reshape(m * n)
    if not bool(cp.allclose(out.reshape(m * n), want, rtol=1e-3 * math.sqrt(k), atol=1e-3 * math.sqrt(k))):
        raise RuntimeError(f"{name}: kernc's result differs from the im2col GEMM")
    want = None
    t_k = _time_device(cp, launch, b.reps, max(1, b.inner // 4))
    t_r = _time_device(cp, lambda: cp.matmul(lhs, rhs), b.reps, max(1, b.inner // 4))
    flops = 2.0 * m * n * k
    return {"shape": [N, H, W, C, K], "gemm": [m, k, n], "arch": b.arch, "tensor_cores": "mma.sync" in mod.ptx,
            "kernc_ms": t_k, "cublas_ms": t_r, "kernc_gflops": flops / (t_k * 1e-3) / 1e9,
            "cublas_gflops": flops / (t_r * 1e-3) / 1e9, "ratio_kernc_to_cublas": t_r / t_k}


def run(examples_dir: str, cu_dir: str, nvcc_ptx_path: str | None, quick: bool, reps: int,
        bandwidth_n: int | None = None, sizes: dict | None = None) -> dict:
    """All GPU measurements as a dict; ``{"available": False, "note": ...}`` without a GPU, and an
    ``"error"`` entry (instead of an exception) when a measurement fails. ``bandwidth_n``: elements
    of the saxpy bandwidth run (default 2^26, ``quick`` 2^22). ``sizes``: problem sizes of the
    bandwidth comparisons overriding :data:`FULL_SIZES` / :data:`QUICK_SIZES` (``{"gather": n,
    "scatter": n, "transpose": (R, C), "gemm_f16": n, "gemm_f32": (n, ...), "conv_f16": (N, H, W, C, K)}``,
    any subset); ``out["gemm_f16_tensor_cores"]`` is :func:`_gemm_f16`'s row (or its ``error``),
    ``out["gemm_f32_tiled"]`` :func:`_gemm_f32_rows`' (:data:`GEMM_F32_SIZES` by default),
    ``out["conv_f16_tensor_cores"]`` ``{name: row}`` of :func:`_conv` for :data:`CONV_F16`,
    ``out["conv_f32_tiled"]`` the same for :data:`CONV_F32`.

    Each comparison of :data:`COMPARISONS` is ``out["<name>_bandwidth"]``: its sizes, the bytes
    counted per launch (``bytes_per_launch``, ``bytes_counted``), ``variants`` (``{key: {"label",
    "ms", "gbs", "pct_of_peak"}}``, ms: median device time of one launch), ``ratios`` (``{"a/b":
    GB/s of a / GB/s of b}``) and ``reference_built_with``; or ``{"error": ...}`` when that
    comparison failed (wrong results included), without stopping the others."""
    from kernc.backend import cuda

    if not cuda.available():
        return {"available": False,
                "note": "no usable CUDA device (kernc.backend.cuda.available() is False): "
                        "GPU bandwidth and launch overhead not measured"}
    out: dict = {"available": True}
    try:
        import numpy as np

        cp = cuda.cupy()
        out.update(_device_info(cp))
        mod = compile_kern(os.path.join(examples_dir, "saxpy.kern"))  # = kernc.compile_file's defaults
        a = np.float32(1.25)
        ref_fn, ref_how, _keep = _reference_function(cp, os.path.join(cu_dir, "saxpy.cu"), nvcc_ptx_path)
        out["reference_built_with"] = ref_how

        def kernc_raw(xa, ya):
            """kernc's saxpy bound and packed once, then launched straight through CuPy."""
            return _kernc_raw(cp, mod.saxpy, (a, xa, ya))

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
        x = y = y0 = expected = None  # free the saxpy arrays before the comparisons allocate theirs

        # -- gather / scatter / transpose ---------------------------------------------------------
        chosen = dict(QUICK_SIZES if quick else FULL_SIZES, **(sizes or {}))
        with tempfile.TemporaryDirectory(prefix="kernc-bench-gpu-") as workdir:
            bench = _Bench(cp, cu_dir, examples_dir, workdir, peak, reps, inner)
            out["bandwidth_arch"] = bench.arch
            for name in COMPARISONS:
                try:
                    out[f"{name}_bandwidth"] = _COMPARE[name](bench, chosen[name])
                except Exception as err:  # noqa: BLE001 - one failed comparison must not stop the others
                    out[f"{name}_bandwidth"] = {"error": f"{type(err).__name__}: {err}"}
                finally:  # each comparison's arrays are garbage now: give their memory back
                    if hasattr(cp, "get_default_memory_pool"):
                        cp.get_default_memory_pool().free_all_blocks()
            # kern-tile-contractions: gemm f32 against cuBLAS SGEMM (TF32 off)
            out["gemm_f32_tiled"] = _gemm_f32_rows(bench, sizes.get("gemm_f32") if sizes and "gemm_f32" in sizes
                                                   else GEMM_F32_SIZES["quick" if quick else "full"])
            try:  # kern-mma-contractions: gemm_f16 against cuBLAS HGEMM
                out["gemm_f16_tensor_cores"] = _gemm_f16(bench, chosen["gemm_f16"])
            except Exception as err:  # noqa: BLE001
                out["gemm_f16_tensor_cores"] = {"error": f"{type(err).__name__}: {err}"}
            for key, names in (("conv_f16_tensor_cores", CONV_F16), ("conv_f32_tiled", CONV_F32)):
                convs = out[key] = {}
                for name in names:  # the convolutions against the cuBLAS time of their im2col GEMM
                    try:
                        convs[name] = _conv(bench, name, chosen["conv_f16"])
                    except Exception as err:  # noqa: BLE001
                        convs[name] = {"error": f"{type(err).__name__}: {err}"}

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
