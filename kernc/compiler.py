"""The whole pipeline on one screen: ``.kern`` text -> AST -> kern IR -> gpu IR -> LLVM -> PTX.

::

    source ──frontend.parse/check──► AST ──frontend.lower──► kern IR
           ──passes.kern_to_gpu()──► gpu IR        (the CPU interpreter runs this)
           ──passes.gpu_to_llvm()──► NVVM/LLVM IR
           ──passes.llvm_to_ptx()──► PTX           (CuPy loads this; ptxas validates it)

:class:`Compilation` runs the stages on demand and keeps each stage's IR as text, so ``ir(stage)`` is
cheap and every stage can be re-entered from its text (``kernc opt``). All MLIR work shares one
``ir.Context`` per process (a new context costs ~9 ms).
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from kernc import frontend
from kernc.backend import cache, toolkit
from kernc.backend.variant import Variant
from kernc.dialect import kern
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.passes import pipeline, targets
from kernc.passes.base import Pass, functions, walk_ops
from kernc.support.errors import CompileError, Diagnostic, InternalCompilerError, KerncError, SourceLocation
from kernc.support.mlir import ir

STAGES = ("ast", "kern", "gpu", "llvm", "ptx")
_GPU_FIELDS = ("kern", "gpu", "signatures")

_CTX_LOCK = threading.RLock()
_CTX: ir.Context | None = None


def context() -> ir.Context:
    """The process-wide MLIR context with the kern dialect loaded."""
    global _CTX
    if _CTX is None:
        ctx = ir.Context()
        # The kern verifiers are Python callbacks: MLIR's parallel verifier would call them from
        # worker threads while this thread holds the GIL (a deadlock), so run single-threaded.
        ctx.enable_multithreading(False)
        kern.load(ctx)
        _CTX = ctx
    return _CTX


@dataclass(frozen=True)
class CompileOptions:
    """User-facing compile options (see ``passes.pipeline.TargetOptions`` for their meaning).

    ``kernels``: compile only these kernels (``None``: all). ``verify_each``: run the MLIR verifier
    after every pass (default: the ``KERNC_VERIFY_EACH=1`` environment variable; the test suite sets
    it), else once per stage. ``coalesce``: run ``kern-coalesce-views`` (stage transposed view
    accesses through a workgroup tile; ``kernc compile --no-coalesce`` turns it off); ``remarks``:
    print its one-line decisions to stderr (``--remarks``; the compile cache is bypassed). ``fmad``:
    contract ``a*b + c`` into a fused multiply-add (``kern-contract-fma``; ``kernc compile --fmad``,
    nvcc's ``--fmad=true``), rounded once on the GPU and on the CPU interpreter alike. ``tile``:
    run ``kern-tile-contractions`` (CUDA-core block tiles of contraction loops through workgroup
    memory; ``kernc compile --no-tile`` turns it off, and overrides ``@tile``; it leaves tensor cores
    on: those contractions tile of their own). ``tensor_cores``: run ``kern-mma-contractions``
    (f16/bf16/i8/``@tf32`` contractions on the tensor cores of ``arch``, ``sm_80`` and later; ``kernc
    compile --no-tensor-cores`` turns it off, and overrides ``@tensor_cores``). ``shared``: stage ``shared(I)`` reads and
    ``shared_sum(I)`` updates through workgroup memory (``False``: lower them as ``indexed(I)`` and
    ``atomic(I)``, the build a :class:`Variant` with ``shared=False`` names, which the launcher runs
    where staging cannot pay, ``launch_policy.shared_pays``). ``privatize``: run
    ``kern-privatize-atomics`` (per-block workgroup copies of small atomically updated views;
    ``kernc compile --no-privatize`` turns it off). ``wgmma``: run ``kern-wgmma-contractions`` first
    (those contractions as warpgroup ``wgmma`` on ``sm_90a``; ``kernc compile --no-wgmma`` turns it
    off, as ``tensor_cores=False`` does). ``async_copy``: stage the tiles of
    ``kern-tile-contractions`` with ``cp.async`` on ``sm_80`` and later (``kernc compile
    --no-async-copy`` turns it off: plain loads and stores).
    ``tma``: in the wgmma contractions, load the operand tiles that are boxes of their views with the
    tensor memory accelerator (``kernc compile --tma``; opt-in; a launch whose strides a tensor map
    cannot encode runs the ``tma=False`` build, :meth:`Compilation.untma`). ``tma_stages``: the
    TMA'd tiles' pipeline stages (1..8, default 2; ``kernc compile --tma-stages``; fewer where they do
    not fit in 48 KiB of workgroup memory, with a remark). ``wgmma_mn_major``: in the wgmma
    contractions, stage an operand whose read's lanes run along its rows (the gemms' ``b[k, j]``)
    MN-major, read by wgmma transposed, so its stores run along 128-byte rows (``kernc compile
    --no-wgmma-mn-major`` turns it off: K-major, 4-way bank conflicts). ``rolled_staging``:
    ``kern-mma-contractions`` stages its tiles in a loop over the rounds of slots, unrolled by 4,
    instead of holding every round's coordinates across the chunk loop: the build the 64-bit
    ``index`` PTX of a tensor-core kernel comes from (:meth:`Compilation.wide_index`; at 64 bits the
    held coordinates spill). ``dynamic_shared_memory``: a kernel whose workgroup memory exceeds
    48 KiB takes it as dynamic workgroup memory, up to ``arch``'s opt-in maximum (227 KiB on
    ``sm_90``/``sm_90a``; ``kern-dynamic-workgroup-memory``, the launch opts in); ``False`` (``kernc
    compile --no-dynamic-shared-memory``): 48 KiB of static memory at most, the passes sizing their
    tiles and TMA stages to it.
    """

    arch: str = "sm_90"
    opt_level: int = 3
    index_bits: int = 32
    kernels: tuple | None = None
    verify_each: bool = field(default_factory=lambda: os.environ.get("KERNC_VERIFY_EACH") == "1")
    coalesce: bool = True  # kern-coalesce-views
    remarks: bool = False  # kern-coalesce-views: its decisions on stderr
    fmad: bool = False  # kern-contract-fma
    tile: bool = True  # kern-tile-contractions
    tensor_cores: bool = True  # kern-mma-contractions (on sm_80 and later)
    wgmma: bool = True  # kern-wgmma-contractions (on sm_90a; needs tensor_cores)
    tma: bool = False  # kern-wgmma-contractions: eligible operand tiles loaded by TMA (opt-in)
    tma_stages: int = 2  # kern-wgmma-contractions: the TMA copies' pipeline stages
    wgmma_mn_major: bool = True  # kern-wgmma-contractions: rows-contiguous operands staged MN-major
    shared: bool = True  # kern-lower-accessors: stage shared(I)/shared_sum(I) (False: indexed/atomic)
    privatize: bool = True  # kern-privatize-atomics
    group_registers: bool = True  # kern-map-groups: keep values across reductions in registers
    async_copy: bool = True  # kern-tile-contractions: cp.async staging (on sm_80 and later)
    rolled_staging: bool = False  # kern-mma-contractions: staging rounds in a loop (64-bit index build)
    dynamic_shared_memory: bool = True  # kern-dynamic-workgroup-memory: over 48 KiB as dynamic memory

    def target(self, variant: Variant | None = None, libdevice: str | None = None) -> pipeline.TargetOptions:
        """These options as the passes' ``TargetOptions`` for the PTX of ``variant`` (default: the
        aligned general one at these options' ``index_bits``); ``libdevice``: the path to link."""
        if variant is None:
            variant = Variant(self.index_bits)
        return pipeline.TargetOptions(
            arch=self.arch,
            index_bits=variant.index_bits,
            opt_level=self.opt_level,
            libdevice=libdevice,
            align=variant.align,
            nonneg_scalars=variant.nonneg_scalars,
        )


def validate_arch(arch: str) -> str:
    """Return ``arch`` if kernc can target it (``passes.targets.PTX_VERSION``); ``ValueError`` else."""
    targets.ptx_features(arch)
    return arch


def _np_bool_types() -> tuple:
    """numpy's bool scalar type when numpy is loaded (never imported for this)."""
    np = sys.modules.get("numpy")
    return (np.bool_,) if np is not None else ()


def _is_int(value) -> bool:
    """A Python or numpy integer, not a bool."""
    np = sys.modules.get("numpy")
    return (isinstance(value, int) or (np is not None and isinstance(value, np.integer))) \
        and not isinstance(value, (bool, _np_bool_types()))


def validate_options(opts: "CompileOptions") -> None:
    """``ValueError`` for an unknown arch, an ``opt_level`` outside 0..3, ``index_bits`` not 32/64
    (integers only) or a flag (``fmad``, ``coalesce``, ``verify_each``, ``remarks``) that is not a
    bool; ``TypeError`` when ``opts`` is not a :class:`CompileOptions` or ``kernels`` is not a
    tuple of names (a plain string would be read as single letters)."""
    if not isinstance(opts, CompileOptions):
        raise TypeError(f"options must be a kernc.compiler.CompileOptions, got {type(opts).__name__}")
    validate_arch(opts.arch)
    # integers only: 3.0 == 3 and True == 1, but the pass pipeline spells the value out ("O=3.0")
    if not _is_int(opts.opt_level) or opts.opt_level not in (0, 1, 2, 3):
        raise ValueError(f"opt_level must be 0, 1, 2 or 3, got {opts.opt_level!r}")
    if not _is_int(opts.index_bits) or opts.index_bits not in (32, 64):
        raise ValueError(f"index_bits must be 32 or 64, got {opts.index_bits!r}")
    if opts.kernels is not None and (isinstance(opts.kernels, (str, bytes))
                                     or not all(isinstance(k, str) for k in opts.kernels)):
        raise TypeError(f"kernels must be a tuple of kernel names (e.g. ('saxpy',)) or None, "
                        f"got {opts.kernels!r}")
    for flag in ("fmad", "coalesce", "verify_each", "remarks", "tile", "shared", "tensor_cores", "privatize",
                 "group_registers", "wgmma", "async_copy", "tma", "rolled_staging", "wgmma_mn_major",
                 "dynamic_shared_memory"):
        value = getattr(opts, flag, False)
        if not isinstance(value, (bool, _np_bool_types())):
            raise ValueError(f"{flag} must be True or False, got {value!r}")
    if not _is_int(opts.tma_stages) or not 1 <= opts.tma_stages <= 8:
        raise ValueError(f"tma_stages must be an integer from 1 to 8, got {opts.tma_stages!r}")


def attribute_errors(program, options: "CompileOptions", source: str | None = None) -> None:
    """``CompileError`` (every one found, at the attribute) for a kernel attribute that the options
    leave in force but that cannot apply to its kernel: ``@tensor_cores`` (unless
    ``tensor_cores=False``, which overrides it) and ``@tile`` (unless ``tile=False``) on a kernel
    over one size, which has no contraction of an N-D problem to run on tensor cores or to tile.
    (An N-D kernel without a contraction loop: ``@tensor_cores`` is kern-mma-contractions' error,
    ``@tile`` a remark, :func:`_ignored_tile_remarks`.)"""
    diags = []
    for k in program.items:
        if not isinstance(k, frontend.ast.Kernel) or k.over.extents is not None:
            continue
        if options.kernels is not None and k.name not in options.kernels:
            continue
        for a in k.attributes:
            if a.name == "tensor_cores" and options.tensor_cores:
                diags.append(Diagnostic(
                    f"@tensor_cores of kernel '{k.name}': cannot run on tensor cores: it is over one size; "
                    "tensor cores run a contraction of an N-D problem, e.g. over (i, j) in (M, N) with a loop "
                    "'acc += a[i, k] * b[k, j]'", a.loc, source=source,
                    hint="remove @tensor_cores (or compile with --no-tensor-cores)"))
            elif a.name == "tile" and options.tile:
                diags.append(Diagnostic(
                    f"@tile of kernel '{k.name}': there is nothing to tile: it is over one size; "
                    "kern-tile-contractions tiles a contraction of an N-D problem, e.g. over (i, j) in "
                    "(M, N) with a loop 'acc += a[i, k] * b[k, j]'", a.loc, source=source,
                    hint="remove @tile (or compile with --no-tile)"))
    if diags:
        raise CompileError(diags)


def _with_source(err: CompileError, filename: str, source: str) -> CompileError:
    """``err`` with ``source`` attached to each of its diagnostics (and their notes) located in
    ``filename`` that has none, so that it prints the source line and a caret as the frontend's
    errors do (a pass knows the location, not the text); its message is made again."""
    def fill(d: Diagnostic) -> None:
        if d.source is None and d.location is not None and d.location.filename == filename:
            d.source = source
        for n in d.notes:
            fill(n)

    for d in err.diagnostics:
        fill(d)
    err.args = ("\n".join(d.format() for d in err.diagnostics),)
    return err


class _SourceOrder:
    """The ``--remarks`` lines of one compile, written in source order: the lines without a line
    number (``file: remark: ...``, about the whole file) first, then by ``file:line:col``; lines at
    one place keep the order the passes made them in (the pipeline's order)."""

    _AT = re.compile(r"^.*?:(\d+):(\d+): remark: ")

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def flush(self, out) -> None:
        def key(line):
            m = self._AT.match(line)
            return (1, int(m.group(1)), int(m.group(2))) if m else (0, 0, 0)

        for line in sorted(self.lines, key=key):
            out.write(line + "\n")
        self.lines.clear()


def _tma_loads_nothing(comp: "Compilation", module, filename: str, remark: Callable[[str], None]) -> None:
    """Under ``--tma``: the remark of a compile whose gpu IR ``module`` runs no contraction on
    wgmma, the only tiles the tensor memory accelerator feeds -- why (kern-wgmma-contractions off,
    or no such contraction here)."""
    if comp.uses_wgmma and walk_ops(module, {"nvvm.wgmma.mma_async"}):
        return
    o = comp.options
    if comp.uses_wgmma:
        remark(f"{filename}: remark: --tma loads no tile: the tensor memory accelerator feeds the tiles of "
               "contractions on wgmma, and no kernel here has one")
        return
    why = ("--no-tensor-cores" if not o.tensor_cores else "--no-wgmma" if not o.wgmma else
           f"{o.arch} has no wgmma: compile with --arch sm_90a")
    remark(f"{filename}: remark: --tma loads no tile: the tensor memory accelerator feeds "
           f"kern-wgmma-contractions' tiles only (sm_90a), and it is off ({why})")


def _ignored_tile_remarks(signatures: dict, remark: Callable[[str], None]) -> None:
    """The remark at ``@tile`` of each N-D kernel kern-tile-contractions tiled nothing in (no
    contraction loop: a transpose, an element-wise kernel): the attribute is ignored."""
    for name, sig in signatures.items():
        if sig.tile_config is not None and not sig.contraction:
            file, line, col = sig.tile_config["at"]
            remark(f"{file}:{line}:{col}: remark: @tile is ignored: kernel '{name}' has no contraction loop "
                   "for kern-tile-contractions to tile (a loop 'acc += a[i, k] * b[k, j]' over (i, j))")


def run_passes(
    module: ir.Module,
    passes: list[Pass],
    after_pass: Callable[[str, ir.Module], None] | None = None,
    verify_each: bool = True,
    record: Callable[[str, float], None] | None = None,
) -> None:
    """Run ``passes`` in order on ``module``, calling ``after_pass`` after each.

    With ``verify_each`` the MLIR verifier runs after every pass (else once at the end).
    ``record(pass name, seconds)`` is called after each pass with its wall time, which includes the
    verification that follows it (without ``verify_each``, the last pass carries the whole stage's
    verification) and not ``after_pass``. Raises
    :class:`InternalCompilerError` when a pass fails or leaves IR that does not verify (the frontend
    has already rejected bad programs, so this is a kernc bug); the error carries the failing pass,
    the pipeline, the IR before the failing pass and the user-source location of the first MLIR
    diagnostic, for the crash report.
    """
    ctx = context()
    names = [p.name for p in passes]
    # The crash report shows the IR before the failing pass. Passes are deterministic, so instead of
    # copying the module before every pass (more than some passes cost), one copy of the input is
    # kept and the passes before the failing one are run on it again when one fails.
    start = module.operation.clone()
    try:
        for i, p in enumerate(passes):
            try:
                t0 = time.perf_counter()
                with ctx, ir.Location.unknown():
                    p.apply(ctx, module)
                    if verify_each or i == len(passes) - 1:
                        module.operation.verify()
                if record is not None:
                    record(p.name, time.perf_counter() - t0)
            except KerncError:
                raise
            except Exception as err:  # MLIRError and friends
                ice = InternalCompilerError(f"pass '{p.name}' failed: {mlir_error_text(err)}")
                ice.pass_name = p.name
                ice.pipeline = names
                ice.ir_before = _ir_before(ctx, start, passes[:i])
                ice.location = _first_location(err)
                raise ice from err
            if after_pass is not None:
                after_pass(p.name, module)
    finally:
        start.erase()


def _ir_before(ctx: ir.Context, start, passes: list[Pass]) -> str:
    """The IR that ``passes`` make of a copy of ``start`` (for a crash report; never raises)."""
    copy = start.clone()
    try:
        with ctx, ir.Location.unknown():
            for p in passes:
                p.apply(ctx, copy)
        return copy.get_asm(enable_debug_info=True)
    except Exception as err:  # noqa: BLE001 - a report of a crash must not crash
        return (f"// (the passes before it could not be run again: {err!r}; the stage's input:)\n"
                + start.get_asm(enable_debug_info=True))
    finally:
        copy.erase()


_LOC = re.compile(r'loc\("([^"]+)":(\d+):(\d+)')


def _first_location(err: Exception):
    """The ``SourceLocation`` of the first diagnostic of an MLIR error that points at a file."""
    for d in getattr(err, "error_diagnostics", []) or []:
        m = _LOC.search(str(d.location))
        if m:
            return SourceLocation(m.group(1), int(m.group(2)), int(m.group(3)))
    return None


def mlir_error_text(err: Exception) -> str:
    """The message of an ``ir.MLIRError`` with each attached diagnostic (location: message)."""
    lines = [str(err).splitlines()[0] if str(err) else type(err).__name__]
    for d in getattr(err, "error_diagnostics", []) or []:
        lines.append(f"  {d.location}: {d.message}")
        for n in getattr(d, "notes", []) or []:
            lines.append(f"    note: {n.location}: {n.message}")
    return "\n".join(lines)


def _text(module: ir.Module, debug_info: bool = False) -> str:
    return module.operation.get_asm(enable_debug_info=debug_info)


class Compilation:
    """One ``.kern`` source taken through the pipeline.

    Raises :class:`~kernc.errors.CompileError` from the constructor when the source is wrong
    (syntax, names, types, accessors), with every diagnostic found, and ``TypeError`` when ``text``
    is not a ``str``. A leading byte order mark is dropped.

    The compile cache (``kernc.backend.cache``) is consulted first: on a hit the kern and gpu IR and
    the signatures come from it (the frontend and kern passes do not run; :attr:`program` is parsed
    on first use), and the PTX of each :class:`~kernc.backend.variant.Variant` is cached too.
    ``use_cache=False`` or an ``after_pass`` hook (which wants to see the passes run) bypasses it.
    """

    def __init__(
        self,
        text: str,
        filename: str = "<string>",
        options: CompileOptions | None = None,
        after_pass: Callable[[str, str], None] | None = None,
        use_cache: bool = True,
    ):
        if not isinstance(text, str):
            hint = " (decode bytes first, e.g. data.decode('utf-8'))" if isinstance(text, (bytes, bytearray)) else ""
            raise TypeError(f"the .kern source must be a str, got {type(text).__name__}{hint}")
        if text.startswith("\ufeff"):  # a UTF-8 byte order mark, as some editors write: not source
            text = text[1:]
        if not isinstance(filename, str):
            raise TypeError(f"filename must be a str, got {type(filename).__name__}")
        self.source = text
        self.filename = filename
        self.options = options or CompileOptions()
        validate_options(self.options)
        self._after_pass = after_pass
        #: One :class:`StageTiming` per stage run so far, in order: ``kern`` (the frontend's
        #: ``parse``, ``check``, ``lower``), ``gpu``, then ``llvm`` and ``ptx`` once per PTX variant
        #: built; stages answered by the compile cache add none. ``kernc compile --time-passes``
        #: prints it (:func:`format_timings`).
        self.timings: list[StageTiming] = []
        self._lock = threading.RLock()
        self._ptx: dict[Variant, str] = {}
        self._llvm: dict[Variant, str] = {}
        self._unstaged: Compilation | None = None  # built by unstaged() on first use
        self._unshared: Compilation | None = None  # built by unshared() on first use
        self._untiled: Compilation | None = None  # built by untiled() on first use
        self._untma: Compilation | None = None  # built by untma() on first use
        self._wide: Compilation | None = None  # built by wide_index() on first use
        self._program = None
        # the kern / gpu IR: kept as modules after a compile, as text from the cache (see _stage_text)
        self._modules: dict[str, object] = {}  # stage -> module (after a compile)
        self._texts: dict[str, str] = {}  # stage -> IR text with locations (printed on demand)
        #: the ``gpu`` cache key of this compilation (``None``: the cache is not used)
        self.cache_key = None
        #: whether the gpu IR came from the compile cache
        self.from_cache = False
        if use_cache and after_pass is None and cache.enabled() and not self.options.remarks:
            # every option that can change the gpu IR or the errors of a compile, as given (not what
            # it amounts to on this arch: @tensor_cores fails on sm_75 unless --no-tensor-cores)
            extra = cache.option_includes(arch=self.options.arch, coalesce=self.options.coalesce,
                                          fmad=self.options.fmad, tile=self.options.tile,
                                          shared=self.options.shared, tensor_cores=bool(self.options.tensor_cores),
                                          privatize=self.options.privatize,
                                          group_registers=self.options.group_registers,
                                          wgmma=bool(self.options.wgmma), async_copy=bool(self.options.async_copy),
                                          tma=bool(self.options.tma),
                                          tma_stages=int(self.options.tma_stages) if self.options.tma else 2,
                                          wgmma_mn_major=bool(self.options.wgmma_mn_major),
                                          rolled_staging=bool(self.options.rolled_staging),
                                          dynamic_shared_memory=bool(self.options.dynamic_shared_memory))
            self.cache_key = cache.front_key(text, filename, self.options.kernels, includes=extra)
            if self._load_cached(cache.get("gpu", self.cache_key, require=_GPU_FIELDS)):
                return
        try:
            t0 = time.perf_counter()
            tree = frontend.parse(text, filename)
            t1 = time.perf_counter()
            self._program = frontend.check(tree)
            attribute_errors(self._program, self.options, text)
            t2 = time.perf_counter()
            with _CTX_LOCK:
                ctx = context()
                with ctx, ir.Location.unknown():
                    # not verified here: kern-verify, the first pass of kern_to_gpu, does it
                    module = frontend.lower(self._program, ctx, verify=False)
            self.timings.append(StageTiming("kern", "", [("parse", t1 - t0), ("check", t2 - t1),
                                                         ("lower", time.perf_counter() - t2)]))
        except RecursionError as err:
            raise frontend.nesting_error(err, filename, text) from None
        with _CTX_LOCK, context(), ir.Location.unknown():
            if self.options.kernels is not None:
                self._select(module, self.options.kernels)
            self._notify("frontend", module)
            self._modules["kern"] = module.operation.clone()
            # kern-coalesce-views: scheduled only for N-D problems (a module without kern.delinearize
            # has nothing to stage, and its pipeline stays as before); off with coalesce=False
            kw = {}
            n_d = bool(walk_ops(module, {"kern.delinearize"}))
            if not self.options.coalesce or not n_d:
                kw["coalesce"] = False
            if not self.options.tile or not n_d:  # kern-tile-contractions: the same
                kw["tile"] = False
            if not self.options.tensor_cores or not n_d:  # kern-mma-contractions: the same
                kw["tensor_cores"] = False
            else:  # (before sm_80 too: it changes nothing there, but a kernel's @tensor_cores is an error)
                kw["wgmma"] = bool(self.options.wgmma)
                kw["tma"] = bool(self.options.tma)
                kw["tma_stages"] = int(self.options.tma_stages)
                kw["wgmma_mn_major"] = bool(self.options.wgmma_mn_major)
            kw["arch"] = self.options.arch  # (tensor cores, cp.async: from sm_80)
            kw["async_copy"] = bool(self.options.async_copy)  # (the pass checks arch: its remark says why not)
            if self.options.rolled_staging:
                kw["rolled_staging"] = True
            if self.options.remarks:
                from kernc.passes.targets import WGMMA_ARCHS

                kw["remarks"] = remarks = _SourceOrder()  # (the passes emit in pass order)
                if not self.options.coalesce:  # say why there is no decision to read
                    kw["remarks"](f"{filename}: remark: view accesses are not staged: kern-coalesce-views "
                                  "is off (--no-coalesce)")
                if self.options.tile and n_d and not self.options.tensor_cores:
                    # (on an arch without mma.sync the pass runs: it says so at each contraction)
                    kw["remarks"](f"{filename}: remark: contractions are not run on tensor cores: "
                                  "kern-mma-contractions is off (--no-tensor-cores)")
                if n_d and self.uses_tensor_cores and not self.options.wgmma and self.options.arch in WGMMA_ARCHS:
                    kw["remarks"](f"{filename}: remark: contractions are not run as warpgroup wgmma: "
                                  "kern-wgmma-contractions is off (--no-wgmma); they take mma.sync")
                if not self.options.tma and self.options.tma_stages != 2:
                    kw["remarks"](f"{filename}: remark: --tma-stages {self.options.tma_stages} changes "
                                  "nothing without --tma (the stages are those of TMA-loaded tiles)")
                if not self.options.tile and n_d:
                    kw["remarks"](f"{filename}: remark: contractions are not tiled on CUDA cores: "
                                  "kern-tile-contractions is off (--no-tile)"
                                  + ("; tensor cores are not: the f16/bf16/i8/@tf32 ones still run as mma.sync"
                                     + ("/wgmma" if self.uses_wgmma else "") + " in tiles of their own "
                                     "(--no-tensor-cores turns that off)" if self.uses_tensor_cores else ""))
                elif not n_d:
                    kw["remarks"](f"{filename}: remark: nothing to stage: kern-coalesce-views stages the "
                                  "view accesses of N-D problems (over (i, j) in (M, N)), and no kernel "
                                  "here has one")
                    if self.options.tile and walk_ops(module, {"scf.for"}):  # (a loop: a gemv, say)
                        kw["remarks"](f"{filename}: remark: no loop is tiled: kern-tile-contractions (and "
                                      "the tensor cores) take the loops of N-D problems, whose rows and "
                                      "columns of items share the loop's reads (over (i, j) in (M, N)); "
                                      "no kernel here has one")
            if not self.options.privatize or not walk_ops(module, {"kern.view_atomic"}):
                kw["privatize"] = False  # (scheduled only where there are view atomics)
                if self.options.remarks and not self.options.privatize:
                    kw["remarks"](f"{filename}: remark: atomic updates are not privatized: "
                                  "kern-privatize-atomics is off (--no-privatize)")
            if self.options.fmad:
                kw["fmad"] = True
            if not self.options.shared:
                kw["shared"] = False
            if not self.options.group_registers:
                kw["group_registers"] = False
            if not self.options.dynamic_shared_memory:
                kw["dynamic_shared_memory"] = False
            try:
                run_passes(module, pipeline.kern_to_gpu(**kw), self._hook(), self.options.verify_each,
                           self._timer("gpu", ""))
                self._modules["gpu"] = module
                self.signatures = self._signatures(module)
                if self.options.remarks and self.options.tile and n_d:
                    _ignored_tile_remarks(self.signatures, kw["remarks"])
                if self.options.remarks and self.options.tma:
                    _tma_loads_nothing(self, module, filename, kw["remarks"])
            except CompileError as err:  # a pass's error (@tile, @tensor_cores): with its source line
                raise _with_source(err, filename, text) from None
            finally:  # (the remarks made before an error, then the error)
                if self.options.remarks:
                    remarks.flush(sys.stderr)
        if not self.signatures:
            raise CompileError(Diagnostic(f"{filename} defines no kernel to compile",
                                          SourceLocation(filename, 1, 1), source=text))
        if self.cache_key is not None:
            cache.put("gpu", self.cache_key, {
                "kern": self._stage_text("kern"),
                "gpu": self._stage_text("gpu"),
                "signatures": [sig.to_json() for sig in self.signatures.values()],
            })

    # -- the compile cache --------------------------------------------------------------------
    @property
    def uses_tensor_cores(self) -> bool:
        """Whether ``kern-mma-contractions`` runs: ``tensor_cores`` is on and ``arch`` has
        ``mma.sync`` m16n8k16 (``sm_80`` and later; the gpu IR then depends on that, not on
        the exact arch, and its cache key says so)."""
        return bool(self.options.tensor_cores) and targets.sm_number(self.options.arch) >= targets.MMA_MIN_SM

    @property
    def uses_wgmma(self) -> bool:
        """Whether ``kern-wgmma-contractions`` can change the gpu IR: tensor cores and ``wgmma`` on,
        an ``sm_90a`` target (elsewhere it only explains, under ``--remarks``)."""
        from kernc.passes.targets import WGMMA_ARCHS

        return self.uses_tensor_cores and bool(self.options.wgmma) and self.options.arch in WGMMA_ARCHS

    @property
    def uses_async_copy(self) -> bool:
        """Whether ``kern-tile-contractions`` stages with ``cp.async``: ``async_copy`` is on and
        ``arch`` has it (``sm_80`` and later; the gpu IR depends on that, not on the exact arch)."""
        return bool(self.options.async_copy) and targets.sm_number(self.options.arch) >= targets.ASYNC_COPY_SM

    def _load_cached(self, entry: dict | None) -> bool:
        """Take the kern/gpu IR and signatures from a cache entry; False if it is unusable."""
        if entry is None:
            return False
        try:
            sigs = {}
            for text in entry["signatures"]:
                sig = KernelSignature.from_json(text)
                sigs[sig.name] = sig
            kern_text, gpu_text = entry["kern"], entry["gpu"]
            if not (sigs and isinstance(kern_text, str) and isinstance(gpu_text, str)):
                return False
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
            return False
        self._texts.update(kern=kern_text, gpu=gpu_text)
        self.signatures = sigs
        self.from_cache = True
        return True

    def _ptx_cache_key(self, index_bits: int | None = None, aligned: bool | None = None,
                       nonneg_scalars: bool | None = None, *, variant: Variant | None = None) -> str | None:
        """The compile cache's key of the PTX of a variant (named as :meth:`ptx` takes it: the key
        :meth:`ptx` stores it under, that of :meth:`unstaged` for ``staged=False``), or ``None``
        when the cache is not used."""
        builder, variant = self._builder(self._variant(index_bits, aligned, nonneg_scalars, variant))
        if builder is not self:
            return builder._ptx_cache_key(variant=variant)
        if self.cache_key is None:
            return None
        return cache.ptx_key(self.cache_key, self.options.arch, self.options.opt_level, variant)

    def tensor_core_kernels(self) -> dict[str, str]:
        """The kernels whose contraction runs on tensor cores in this build: name -> ``"wgmma"``
        (``nvvm.wgmma.mma_async``, sm_90a) or ``"mma.sync"`` (``nvgpu.mma.sync``); read from the gpu
        IR once (it also holds when the IR came from the compile cache)."""
        with self._lock:
            if getattr(self, "_tensor_core_kernels", None) is None:
                found = {}
                with _CTX_LOCK, context():
                    module = self._modules.get("gpu") or ir.Module.parse(self._texts["gpu"])
                    for fn in functions(module, {"gpu.func"}):
                        names = {op.name for op in walk_ops(fn, {"nvvm.wgmma.mma_async", "nvgpu.mma.sync"})}
                        if names:
                            found[ir.StringAttr(fn.attributes["sym_name"]).value] = (
                                "wgmma" if "nvvm.wgmma.mma_async" in names else "mma.sync")
                self._tensor_core_kernels = found
            return self._tensor_core_kernels

    @property
    def program(self):
        """The checked AST (parsed on first use when the IR came from the cache)."""
        if self._program is None:
            self._program = frontend.check(frontend.parse(self.source, self.filename))
        return self._program

    # -- stages -------------------------------------------------------------------------------
    def _timer(self, stage: str, variant: str) -> Callable[[str, float], None]:
        """A new :class:`StageTiming` in :attr:`timings` and the ``record`` that fills it."""
        run = StageTiming(stage, variant, [])
        self.timings.append(run)
        return lambda name, seconds: run.steps.append((name, seconds))

    def _hook(self):
        if self._after_pass is None:
            return None
        return lambda name, module: self._notify(name, module)

    def _notify(self, name: str, module: ir.Module) -> None:
        if self._after_pass is not None:
            self._after_pass(name, _text(module))

    def _select(self, module: ir.Module, names) -> None:
        found, have = set(), []
        for fn in functions(module, {"func.func"}):
            name = ir.StringAttr(fn.attributes["sym_name"]).value
            have.append(name)
            if name in names:
                found.add(name)
            else:
                fn.erase()
        missing = [n for n in names if n not in found]
        if missing:
            raise CompileError(Diagnostic(f"no kernel named '{missing[0]}' in {self.filename} "
                                          f"(it has: {', '.join(have) or 'none'})"))

    def _signatures(self, module: ir.Module) -> dict[str, KernelSignature]:
        sigs = {}
        for fn in functions(module, {"gpu.func"}):
            if SIGNATURE_ATTR in fn.attributes:
                sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
                sigs[sig.name] = sig
        return sigs

    def _stage_text(self, stage: str) -> str:
        """The ``kern`` or ``gpu`` IR text with locations, printed from the kept module on first use
        (a clone costs a twentieth of printing). The kern module is then dropped; the gpu one stays
        for :meth:`_gpu_copy`."""
        with self._lock:
            if stage not in self._texts:
                with _CTX_LOCK, context():
                    self._texts[stage] = _text(self._modules[stage], debug_info=True)
                if stage == "kern":
                    del self._modules["kern"]
            return self._texts[stage]

    def _gpu_copy(self):
        """A module of the gpu IR to lower further: a clone of the kept one, else parsed from text."""
        if "gpu" in self._modules:
            return self._modules["gpu"].operation.clone()
        return ir.Module.parse(self._texts["gpu"])

    def ast(self) -> str:
        """The checked AST as an indented tree (``--emit ast``): with ``CompileOptions.kernels``,
        only those kernels (and every layout definition), as the later stages have."""
        program = self.program
        if self.options.kernels is not None:
            items = [i for i in program.items
                     if not isinstance(i, frontend.ast.Kernel) or i.name in self.options.kernels]
            program = dataclasses.replace(program, items=items)
        return frontend.dump_ast(program)

    def kern_ir(self, debug_info: bool = False) -> str:
        """The kern IR (after the frontend), optionally with source locations."""
        return self._reprint(self._stage_text("kern"), debug_info)

    def gpu_ir(self, debug_info: bool = False) -> str:
        """The gpu IR the CPU interpreter executes, optionally with source locations."""
        return self._reprint(self._stage_text("gpu"), debug_info)

    def _reprint(self, text: str, debug_info: bool) -> str:
        if debug_info:
            return text
        with _CTX_LOCK, context():
            return _text(ir.Module.parse(text))

    # -- variants -----------------------------------------------------------------------------
    def _variant(self, index_bits: int | None, aligned: bool | None, nonneg_scalars: bool | None,
                 variant: Variant | None) -> Variant:
        """The :class:`Variant` that :meth:`ptx`'s arguments name: ``variant`` itself, or one made
        of the other three (``index_bits`` defaults to the options', ``aligned`` to ``True``,
        ``nonneg_scalars`` to ``False``). ``TypeError`` when both forms are given or ``variant`` is
        not a :class:`Variant`; ``ValueError`` for an ``index_bits`` other than 32 or 64."""
        if variant is None:
            return Variant(index_bits or self.options.index_bits, True if aligned is None else bool(aligned),
                           bool(nonneg_scalars))
        if not isinstance(variant, Variant):
            raise TypeError(f"variant must be a kernc.backend.variant.Variant, got {type(variant).__name__}")
        if (index_bits, aligned, nonneg_scalars) != (None, None, None):
            raise TypeError("give the variant either as variant=Variant(...) or as index_bits/aligned/"
                            "nonneg_scalars, not both")
        return variant

    def _other_build(self, slot: str, **changes) -> "Compilation":
        """The program compiled with these options but ``changes`` (and no remarks), kept in the
        attribute ``slot`` (made on first use, from the compile cache when it has it): the builds of
        :meth:`unstaged`, :meth:`unshared`, :meth:`untiled`, :meth:`untma`, :meth:`wide_index`."""
        with self._lock:
            if getattr(self, slot) is None:
                options = dataclasses.replace(self.options, remarks=False, **changes)
                setattr(self, slot, Compilation(self.source, self.filename, options))
            return getattr(self, slot)

    def unstaged(self) -> "Compilation":
        """This program compiled with the same options but without kern-coalesce-views
        (``coalesce=False``: the build a :class:`Variant` with ``staged=False`` names), made on first
        use (from the compile cache when it has it); this compilation itself when it stages nothing
        (``coalesce`` off, or no kernel mapped to tiles)."""
        if not self.options.coalesce or not any(sig.tiles for sig in self.signatures.values()):
            return self
        return self._other_build("_unstaged", coalesce=False)

    def unshared(self) -> "Compilation":
        """This program compiled with the same options but ``shared=False`` (``shared(I)`` as
        ``indexed(I)``, ``shared_sum(I)`` as ``atomic(I)``: the build a :class:`Variant` with
        ``shared=False`` names), made on first use (from the compile cache when it has it); this
        compilation itself when it has no ``shared``/``shared_sum`` access or ``shared`` is off."""
        if not self.options.shared or not any(sig.shared_accesses for sig in self.signatures.values()):
            return self
        return self._other_build("_unshared", shared=False)

    def untiled(self) -> "Compilation":
        """This program compiled with the same options but ``tile=False`` (the build a
        :class:`Variant` with ``tiled=False`` names: each item its own loop), made on first use
        (from the compile cache when it has it); this compilation itself when kern-tile-contractions
        tiled nothing (``tile`` off, or no contraction)."""
        if not self.options.tile or not any(sig.contraction for sig in self.signatures.values()):
            return self
        return self._other_build("_untiled", tile=False)

    def untma(self) -> "Compilation":
        """This program compiled with the same options but ``tma=False``: the build a launch runs
        when a tensor map of the TMA build cannot encode its arguments (``BoundLaunch.no_tma``: a
        row byte stride that is no multiple of 16, a misaligned base); this compilation itself when
        it loads nothing by TMA."""
        if not self.options.tma or not any(p.kind == "tensor_map" for sig in self.signatures.values()
                                           for p in sig.extra):
            return self
        return self._other_build("_untma", tma=False)

    def wide_index(self) -> "Compilation":
        """This program compiled with the same options but ``rolled_staging=True``: the build whose
        PTX a 64-bit ``index`` variant is (:meth:`_builder`) when ``kern-mma-contractions`` put a
        kernel on ``mma.sync``, made on first use (from the compile cache when it has it). Its gpu IR
        stages the same elements in the same order (bitwise the same results); at 64 bits the
        unrolled staging's held coordinates spill (conv2d_fwd_f16 on sm_90: 404 bytes at 255
        registers; rolled: 230 registers, 0 spills). This compilation itself when no kernel is on
        ``mma.sync`` or ``rolled_staging`` is already on."""
        if self.options.rolled_staging or "mma.sync" not in self.tensor_core_kernels().values():
            return self
        return self._other_build("_wide", rolled_staging=True)

    def _builder(self, variant: Variant) -> tuple["Compilation", Variant]:
        """The compilation that builds ``variant`` (:meth:`unstaged` for ``staged=False``,
        :meth:`unshared` for ``shared=False``) and the variant as that compilation keys it
        (``staged=True``, ``shared=True``: its own kernels, as compiled), the 64-bit ``index`` one
        from :meth:`wide_index`."""
        builder = self
        if not variant.tiled:
            builder, variant = builder.untiled(), dataclasses.replace(variant, tiled=True)
        if not variant.shared:
            builder, variant = builder.unshared(), dataclasses.replace(variant, shared=True)
        if not variant.staged:
            builder, variant = builder.unstaged(), dataclasses.replace(variant, staged=True)
        if variant.index_bits == 64:
            builder = builder.wide_index()
        return builder, variant

    def _lower_to_llvm(self, variant: Variant) -> ir.Module:
        # kern-attach-target links libdevice only if calls remain after kern-libdevice-to-intrinsics
        libdevice = toolkit.libdevice_path()
        module = self._gpu_copy()
        run_passes(module, pipeline.gpu_to_llvm(self.options.target(variant, libdevice)), self._hook(),
                   self.options.verify_each, self._timer("llvm", variant.name))
        return module

    def llvm_ir(self, index_bits: int | None = None, aligned: bool | None = None,
                nonneg_scalars: bool | None = None, *, variant: Variant | None = None) -> str:
        """The NVVM/LLVM-dialect IR with the target attached (see :meth:`ptx` for the arguments)."""
        builder, variant = self._builder(self._variant(index_bits, aligned, nonneg_scalars, variant))
        if builder is not self:
            return builder.llvm_ir(variant=variant)
        with self._lock:
            if variant not in self._llvm:
                with _CTX_LOCK, context():
                    self._llvm[variant] = _text(self._lower_to_llvm(variant))
            return self._llvm[variant]

    def ptx(self, index_bits: int | None = None, aligned: bool | None = None, nonneg_scalars: bool | None = None,
            *, variant: Variant | None = None) -> str:
        """PTX text of every kernel for one :class:`~kernc.backend.variant.Variant` of the program:
        ``variant=Variant(...)``, or the same given as ``index_bits`` (``index`` lowered to 32 or
        64 bits; default: the options'), ``aligned`` and ``nonneg_scalars``.

        ``aligned`` (default ``True``): the PTX may assume every buffer address is a multiple of 16
        bytes (and use 16-byte vector accesses); launch it only with such buffers (the launcher
        checks). ``nonneg_scalars`` (default ``False``): the PTX may assume every ``index`` scalar
        argument is ``>= 0`` (``kern-specialize-nonneg-scalars``); launch it only with such
        arguments (the launcher checks: ``BoundLaunch.nonneg_scalars``). ``Variant.staged=False``:
        the PTX of the program compiled without kern-coalesce-views (:meth:`unstaged`). Each
        variant is built once and kept (and in the compile cache). ``TypeError`` when a variant is
        given both ways, ``ValueError`` for an ``index_bits`` other than 32 or 64."""
        builder, variant = self._builder(self._variant(index_bits, aligned, nonneg_scalars, variant))
        if builder is not self:
            return builder.ptx(variant=variant)
        with self._lock:
            if variant not in self._ptx:
                key = self._ptx_cache_key(variant=variant)
                hit = cache.get("ptx", key, require=("ptx",)) if key else None
                if hit is not None and isinstance(hit["ptx"], str):
                    self._ptx[variant] = hit["ptx"]
                    return self._ptx[variant]
                with _CTX_LOCK, context():
                    module = self._lower_to_llvm(variant)
                    run_passes(module, pipeline.llvm_to_ptx(), self._hook(), self.options.verify_each,
                               self._timer("ptx", variant.name))
                    self._ptx[variant] = extract_ptx(module)
                try:
                    self._check_tile_registers(self._ptx[variant])
                except CompileError as err:
                    del self._ptx[variant]  # (not kept: every use of it reports the error)
                    raise _with_source(err, self.filename, self.source) from None
                if key:
                    cache.put("ptx", key, {"ptx": self._ptx[variant]})
            return self._ptx[variant]

    def _check_tile_registers(self, ptx: str) -> None:
        """A kernel whose ``@tile`` configuration needs more registers per thread than ptxas can
        give it: a ``CompileError`` at the attribute. The limit is ptxas's, ``min(255, 65536 /
        block)`` registers per thread (CUDA C++ Programming Guide, "Compute Capabilities": 64K
        32-bit registers per SM, at most 255 per thread); ptxas reports it as spills at that count
        (``ptxas -v``). Only ``@tile`` kernels are checked, and only where ptxas is found (the
        default configurations are chosen to fit: 16 items per thread)."""
        forced = {name: sig for name, sig in self.signatures.items()
                  if sig.tile_config is not None and sig.contraction}
        if not forced or toolkit.ptxas_path() is None:
            return
        got = toolkit.run_ptxas(ptx, self.options.arch)
        for name, sig in forced.items():
            spill = got.spills.get(name, (0, 0))
            if not spill[0] and not spill[1]:
                continue
            regs = got.registers.get(name, 0)
            limit = min(255, 65536 // sig.block)
            bm, bn, bk = sig.tile_config["tile"]
            raise CompileError(Diagnostic(
                f"@tile({bm}, {bn}, {bk}) of kernel '{name}': its {bm * bn // sig.block} items per thread do "
                f"not fit in registers on {self.options.arch}: ptxas -v allocates {regs} registers "
                f"(a thread of a {sig.block}-thread block may use up to {limit}) and spills "
                f"{spill[0]} bytes of stores, {spill[1]} of loads",
                SourceLocation(*sig.tile_config["at"]),
                hint="use a smaller tile (fewer items per thread) or a smaller @block"))

    def ir(self, stage: str, index_bits: int | None = None, *, variant: Variant | None = None) -> str:
        """The program at ``stage`` (one of :data:`STAGES`) as text, the ``llvm`` and ``ptx`` stages of
        one variant (see :meth:`ptx`); ``ValueError`` for a bad stage."""
        if stage == "ast":
            return self.ast()
        if stage == "kern":
            return self.kern_ir()
        if stage == "gpu":
            return self.gpu_ir()
        if stage == "llvm":
            return self.llvm_ir(index_bits, variant=variant)
        if stage == "ptx":
            return self.ptx(index_bits, variant=variant)
        raise ValueError(f"unknown stage '{stage}' (expected one of {', '.join(STAGES)})")


@dataclass
class StageTiming:
    """Wall time of one run of one stage of a :class:`Compilation`.

    ``stage``: ``kern`` (the frontend: ``parse``, ``check``, ``lower``), ``gpu``, ``llvm`` or
    ``ptx`` (the stage the steps produce, as ``--emit`` names it); ``variant``: the PTX variant an
    ``llvm``/``ptx`` run builds (e.g. ``"index 64, unaligned"``), ``""`` for the others; ``steps``:
    ``(step name, seconds)`` in the order they ran (pass names as ``--print-ir-after-all`` shows them).
    """

    stage: str
    variant: str
    steps: list

    @property
    def seconds(self) -> float:
        """The sum of the steps' times."""
        return sum(t for _, t in self.steps)


def format_timings(timings: list[StageTiming], wall: float | None = None) -> str:
    """``timings`` (:attr:`Compilation.timings`, optionally after other :class:`StageTiming`) as a
    table: a subtotal row per stage run, its steps under it, in ms and % of the total, as
    ``kernc compile --time-passes`` prints it. ``wall``: the seconds the whole compile took; the part
    no step accounts for (printing IR, copying modules, the compile cache) is then an ``other`` row
    and the total is ``wall``, else the total is the sum of the steps."""
    if not any(run.steps for run in timings):
        return "no step ran (a compilation answered by the compile cache runs none)"
    steps_total = sum(run.seconds for run in timings)
    total = max(wall, steps_total) if wall is not None else steps_total
    rows = []  # (seconds, label)
    for run in timings:
        rows.append((run.seconds, f"stage {run.stage}" + (f" ({run.variant})" if run.variant else "")))
        rows += [(t, f"  {name}") for name, t in run.steps]
    if wall is not None:
        rows.append((total - steps_total, "other (printing IR, copying modules, the compile cache)"))
    rows.append((total, "total" if wall is not None else "total (sum of the steps)"))
    width = max(len(label) for _, label in rows)
    lines = [f"{'ms':>9}  {'%':>5}  step", f"{'-' * 9}  {'-' * 5}  {'-' * width}"]
    lines += [f"{1e3 * t:9.3f}  {100 * t / total if total else 0.0:5.1f}  {label}" for t, label in rows]
    return "\n".join(lines)


def extract_ptx(module: ir.Module) -> str:
    """The PTX text of the first ``#gpu.object`` of the module's ``gpu.binary``."""
    from kernc.support.mlir import dialect

    gpu = dialect("gpu")
    for op in walk_ops(module, {"gpu.binary"}):
        objects = ir.ArrayAttr(op.attributes["objects"])
        data = gpu.ObjectAttr(objects[0]).object
        return data.decode() if isinstance(data, bytes) else str(data)
    raise InternalCompilerError("no gpu.binary produced")


__all__ = ["Compilation", "CompileOptions", "STAGES", "StageTiming", "context", "run_passes", "extract_ptx",
           "format_timings"]
