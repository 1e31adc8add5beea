"""Triton as a peer of kernc in ``python -m bench``: its compile latency and its code, measured
without a GPU by compiling ``bench/triton/NAME.py`` ahead of time (``triton.compile`` of an
``ASTSource`` for a ``GPUTarget``).

Every function here needs Triton (``pip install 'kernc[bench]'``); :func:`version` says whether it
is installed without importing it.

What is compiled is what Triton's JIT compiles for typical arguments: every pointer 16-byte
aligned (the ``tt.divisibility = 16`` the JIT infers from a ``torch`` allocation), integer
arguments not specialised (as kernc compiles for any size), ``num_warps`` of the module, FMA
contraction as asked (``enable_fp_fusion``; Triton 3.9's default is on).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import statistics
import tempfile
import time


def version() -> str | None:
    """The installed Triton's version, or ``None`` when Triton is not installed."""
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        return None


def capability(arch: str) -> int:
    """The compute capability of a kernc ``--arch`` (``sm_90`` -> 90, ``sm_90a`` -> 90);
    ``ValueError`` for another spelling."""
    m = re.fullmatch(r"sm_(\d+)[af]?", arch)
    if not m:
        raise ValueError(f"cannot give Triton the target '{arch}' (expected sm_NN)")
    return int(m.group(1))


def source(name: str):
    """``(ASTSource, options)`` of the Triton version of example ``name`` (without ``enable_fp_fusion``)."""
    from triton.compiler import ASTSource

    from . import triton as versions

    mod = versions.load(name)
    kernel = mod.KERNEL
    attrs = {(i,): [["tt.divisibility", 16]] for i, arg in enumerate(kernel.arg_names)
             if str(mod.SIGNATURE[arg]).startswith("*")}
    return ASTSource(kernel, signature=dict(mod.SIGNATURE), constexprs=dict(mod.CONSTEXPRS), attrs=attrs), \
        {"num_warps": mod.NUM_WARPS}


class _Compiler:
    """Runs ``triton.compile`` with its disk cache out of the way: ``TRITON_ALWAYS_COMPILE`` (no
    cache lookups) and a fresh, empty ``TRITON_CACHE_DIR`` under ``workdir`` for every compile
    (Triton writes each stage's output there; it has no way to compile without writing them).
    Records the per-stage times of Triton's compilation listener (microseconds)."""

    def __init__(self, workdir: str):
        self.workdir = workdir
        self.stages: dict = {}

    def _listener(self, *, src, metadata, metadata_group, times, cache_hit):
        self.stages = dict(times.lowering_stages)
        self.stages["ir_initialization"] = times.ir_initialization
        self.stages["store_results"] = times.store_results
        self.cache_hit = cache_hit

    def __call__(self, name: str, arch: str, fp_fusion: bool):
        """Compile example ``name``: ``(CompiledKernel, wall seconds, seconds of the cubin stage)``."""
        import triton
        from triton.backends.compiler import GPUTarget

        src, options = source(name)
        options["enable_fp_fusion"] = fp_fusion
        target = GPUTarget("cuda", capability(arch), 32)
        knobs = triton.knobs
        saved = (knobs.compilation.listener, os.environ.get("TRITON_CACHE_DIR"),
                 os.environ.get("TRITON_ALWAYS_COMPILE"))
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cache-", dir=self.workdir)
        os.environ["TRITON_ALWAYS_COMPILE"] = "1"
        knobs.compilation.listener = self._listener
        self.stages, self.cache_hit = {}, None
        try:
            t0 = time.perf_counter()
            kernel = triton.compile(src, target=target, options=options)
            wall = time.perf_counter() - t0
        finally:
            knobs.compilation.listener = saved[0]
            for key, value in zip(("TRITON_CACHE_DIR", "TRITON_ALWAYS_COMPILE"), saved[1:]):
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        if self.cache_hit or "cubin" not in self.stages:
            raise RuntimeError(f"triton.compile of {name} was not a full compile (stages: {sorted(self.stages)})")
        return kernel, wall, self.stages["cubin"] * 1e-6


_initialized: set = set()


def initialize(workdir: str, arch: str) -> None:
    """Triton's untimed first compile in this process, of a kernel that is not among the measured
    ones (``bench/triton/_warmup.py``: imports, the MLIR context, LLVM's NVPTX target, the first
    ``ptxas`` run), once per target."""
    if arch not in _initialized:
        _Compiler(workdir)("_warmup", arch, True)
        _initialized.add(arch)


class WarmCompiles:
    """Triton's warm in-process compiles of example ``name``, measured as kernc's
    (``bench.measure.compile_latency``, which calls this object with a block size after each of its
    own blocks of warm compiles): each call runs one untimed compile, then ``timed`` compiles one
    after another, each a full compile (:class:`_Compiler`); :func:`initialize` must have run. A
    failed compile is kept and ends the measurement (:meth:`result` reports it)."""

    def __init__(self, name: str, arch: str, workdir: str, fp_fusion: bool = True):
        self.name, self.arch, self.fp_fusion = name, arch, fp_fusion
        self.compiler = _Compiler(workdir)
        self.runs: list = []  # (seconds to PTX, seconds of the whole compile)
        self.error: str | None = None

    def __call__(self, timed: int) -> None:
        for i in range(timed + 1):
            if self.error is not None:
                return
            try:
                _, wall, cubin = self.compiler(self.name, self.arch, self.fp_fusion)
            except Exception as err:  # noqa: BLE001 - reported by result(), kernc's numbers still count
                text = str(err).strip() or type(err).__name__
                self.error = f"{type(err).__name__}: {text.splitlines()[0][:300]}"
                return
            if i:
                self.runs.append((wall - cubin, wall))

    def result(self) -> dict:
        """``{"version", "warm_ms", "warm_cubin_ms", "compiles"}`` (medians in ms), or
        ``{"error"}``:

        - ``warm_ms``: to PTX (the ``ttir``, ``ttgir``, ``llir`` and ``ptx`` stages, the source's
          parse and the cache writes): the whole ``triton.compile`` less its ``cubin`` stage, the
          point where kernc and ``nvcc -ptx`` stop;
        - ``warm_cubin_ms``: the whole ``triton.compile``, its ``ptxas`` run included.
        """
        if self.error is not None:
            return {"error": self.error}
        if not self.runs:
            return {"error": "RuntimeError: no timed compile"}
        return {"version": version(),
                "warm_ms": 1e3 * statistics.median(p for p, _ in self.runs),
                "warm_cubin_ms": 1e3 * statistics.median(w for _, w in self.runs),
                "compiles": len(self.runs)}


def ptx(name: str, arch: str, fp_fusion: bool, workdir: str, stem: str) -> str:
    """Compile example ``name`` and write Triton's PTX to ``WORKDIR/STEM.triton.ptx``; its path."""
    kernel, _, _ = _Compiler(workdir)(name, arch, fp_fusion)
    path = os.path.join(workdir, f"{stem}.triton.ptx")
    with open(path, "w", encoding="utf-8") as f:
        f.write(kernel.asm["ptx"])
    return path


def ptx_target(ptx_text: str) -> str:
    """The ``.target`` of a PTX file (Triton writes ``sm_90a`` for capability 90); ``ValueError``
    without one."""
    m = re.search(r"^\s*\.target\s+(sm_\w+)", ptx_text, re.MULTILINE)
    if not m:
        raise ValueError("PTX without a .target directive")
    return m.group(1)
