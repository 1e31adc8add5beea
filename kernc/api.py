"""The Python API: compile ``.kern`` source, read every stage's IR, call kernels.

>>> import kernc, numpy as np
>>> mod = kernc.compile(open("examples/saxpy.kern").read())
>>> x = np.arange(4, dtype=np.float32); y = np.ones(4, dtype=np.float32)
>>> mod.saxpy(2.0, x, y)            # numpy arrays -> CPU interpreter; CuPy arrays -> GPU
>>> y
array([1., 3., 5., 7.], dtype=float32)

Output buffers (``write``/``add``) are updated in place. Size symbols are bound from argument shapes;
one that no shape binds is passed by keyword (``mod.k(..., n=100)``).
"""

from __future__ import annotations

import dataclasses
import os
import threading
from dataclasses import dataclass, field

import numpy as np

from kernc import display
from kernc.backend import binding, cpu, cuda
from kernc.backend.progress import progress_bar
from kernc.backend.variant import Variant
from kernc.compiler import Compilation, CompileOptions
from kernc.support.errors import KerncLaunchError


@dataclass
class LaunchResult:
    """What a kernel call returns: the ``device`` it ran on (``"cpu"`` or ``"cuda"``), the bound
    ``sizes``, the ``problem_size``, ``grid``/``block`` and, on the CPU, the interpreter's memory
    ``stats`` (``RunStats``: global load/store requests and 32-byte sectors, atomics, shared-memory
    requests and bank conflicts; ``None`` on the GPU and for a call with ``stats=False``).
    ``staged``, for a kernel whose view accesses kern-coalesce-views staged through workgroup
    tiles: ``True`` when that kernel ran, ``False`` when the launch ran the kernel compiled without
    the pass instead (its tiles would have been mostly empty: ``launch_policy.staging_pays``);
    ``None`` for other kernels and empty problems. ``shared``, for a kernel with ``shared(I)`` or
    ``shared_sum(I)`` accesses: ``True`` when they ran staged through workgroup memory, ``False``
    when the launch ran them as ``indexed(I)``/``atomic(I)`` instead (staging could not pay on
    these indices: ``launch_policy.shared_pays``); ``None`` for other kernels and empty problems.
    ``tiled``, for a kernel kern-tile-contractions tiled: ``True`` when the tiled kernel ran,
    ``False`` when the launch ran the untiled build (a problem smaller than one block tile:
    ``launch_policy.run_tiled``); ``None`` for other kernels and empty problems.
    ``tensor_cores``: ``"mma.sync"`` or ``"wgmma"`` when the build that ran takes its contraction
    on tensor cores (kern-mma-contractions / kern-wgmma-contractions; such a kernel tiles of its own
    and its ``tiled`` is ``None`` unless kern-tile-contractions tiled it); ``None`` when it ran on
    CUDA cores, for kernels without a contraction and for empty problems.
    ``tma``, for a kernel compiled with ``tma=True`` that loads tiles by the tensor memory
    accelerator: ``True`` when that build ran, ``False`` when the launch ran the ``tma=False`` build
    instead because a tensor map could not take these arguments; ``no_tma`` is then the reason (e.g.
    a row byte stride that is no multiple of 16), ``None`` otherwise. ``tma`` is ``None`` for other
    kernels and empty problems."""

    device: str
    problem_size: int
    grid: int
    block: int
    sizes: dict = field(default_factory=dict)
    stats: object = None
    staged: bool | None = None
    shared: bool | None = None
    tiled: bool | None = None
    tensor_cores: str | None = None
    tma: bool | None = None
    no_tma: str | None = None

    def __repr__(self) -> str:  # kernc/display.py
        return display.launch_repr(self)


def _without_tma(result: LaunchResult, why: str) -> LaunchResult:
    """``result`` of the ``tma=False`` build a launch ran instead (``BoundLaunch.no_tma``: ``why``)."""
    return dataclasses.replace(result, tma=False if result.grid else None, no_tma=why)


class Kernel:
    """One kernel of a :class:`Module`; call it with the kernel's arguments.

    Raises :class:`~kernc.errors.KerncLaunchError` for bad arguments (the message names the
    parameter) and :class:`~kernc.errors.KerncRuntimeError` for faults found on the CPU interpreter
    (e.g. an out-of-bounds index).
    """

    def __init__(self, module: "Module", name: str):
        self._module = module
        self.name = name
        self.signature = module._compilation.signatures[name]
        self._packers: dict = {}  # index_bits -> cuda.ArgPacker, built on the first GPU launch
        self._prepared = None  # the last GPU call's cuda.PreparedLaunch (repeated calls skip binding)
        self._prepared_staged = None  # LaunchResult.staged of the launch _prepared repeats
        self._bind_plan = binding.BindPlan(self.signature)  # what every launch's binding reuses
        self._arg_names = frozenset(self.signature.arg_names)
        # LaunchResult.staged of its own runs: kern-coalesce-views staged view accesses (the tiles of
        # tiled contractions and privatized atomics are no staging of view accesses)
        self._staged = True if self.signature.tiles and self.signature.staged else None
        # LaunchResult.shared of its own runs: False for the build that lowers them as indexed/atomic
        self._shared = module._compilation.options.shared if self.signature.shared_accesses else None
        self._prepared_shared = None  # LaunchResult.shared of the launch _prepared repeats
        # LaunchResult.tiled / .tensor_cores of its own runs (this build: kern-tile-contractions tiled
        # it; kern-mma/wgmma-contractions put it on tensor cores)
        self._tiled = True if self.signature.contraction else None
        self._tensor_cores = module._compilation.tensor_core_kernels().get(name)
        # LaunchResult.tma of its own runs: True for a kernel whose build takes tensor maps
        self._tma = True if any(p.kind == "tensor_map" for p in self.signature.extra) else None

    def _packer(self, index_bits: int):
        packer = self._packers.get(index_bits)
        if packer is None:
            packer = self._packers[index_bits] = cuda.ArgPacker(self.signature, index_bits)
        return packer

    def __repr__(self) -> str:  # its signature as declared, its block (kernc/display.py)
        return display.kernel_repr(self)

    def _device_of(self, args, kwargs) -> str:
        devices = set()
        for p, a in list(zip(self.signature.params, args)) + [
            (p, kwargs[p.name]) for p in self.signature.params if p.name in kwargs
        ]:
            if p.kind != "buffer":
                continue
            if cpu.is_host_array(a):
                devices.add("cpu")
            elif cuda.is_cuda_array(a):
                devices.add("cuda")
        if len(devices) > 1:
            raise KerncLaunchError(f"kernel '{self.name}': arrays are on different devices (numpy and CUDA)")
        return devices.pop() if devices else "cpu"

    def __call__(self, /, *args, **kwargs) -> LaunchResult:  # (a kernel argument may be named `self`)
        """Launch with the kernel's arguments, positionally or by name. ``device="cpu"|"cuda"``
        picks the device (default: that of the arrays, numpy -> ``cpu``, CuPy -> ``cuda``), unless
        the kernel has an argument or size named ``device``: then ``device=`` is that argument, and
        :meth:`launch` picks the device. ``stats=False`` (likewise, unless the kernel has an
        argument named ``stats``) skips the CPU interpreter's traffic counters (faster; the
        result's ``stats`` is then ``None``)."""
        if not kwargs:
            prepared = self._prepared
            if prepared is not None and prepared(args):  # a repeated GPU call: bound as the last one
                return LaunchResult("cuda", prepared.problem_size, prepared.grid, prepared.block,
                                    dict(prepared.sizes), None, self._prepared_staged, self._prepared_shared,
                                    self._tiled if prepared.grid else None,
                                    self._tensor_cores if prepared.grid else None,
                                    self._tma if prepared.grid else None)
            return self.launch(args, {}, None)
        device = kwargs.pop("device") if "device" in kwargs and "device" not in self._arg_names else None
        stats = kwargs.pop("stats") if "stats" in kwargs and "stats" not in self._arg_names else True
        return self.launch(args, kwargs, device, stats=stats)

    def launch(self, args: tuple = (), kwargs: dict | None = None, device: str | None = None,
               progress: bool | None = None, *, stats: bool = True) -> LaunchResult:
        """Launch with positional ``args`` and named ``kwargs`` (every name is a kernel argument or
        size) on ``device`` (``"cpu"``, ``"cuda"``, or ``None``: that of the arrays). ``stats``: on
        the CPU, count the memory traffic (``RunStats``, the default) or not (``False``: faster,
        ``LaunchResult.stats`` is ``None``); the GPU never counts. ``progress``: on the CPU
        interpreter, a progress bar on standard error for a run longer than about two seconds
        (``None``, the default: only on a terminal, never in a pipe or under pytest; ``False``:
        never; ``backend/progress.py``). Raises :class:`~kernc.errors.KerncLaunchError` for bad
        arguments, an unknown device or a ``stats`` that is not a bool."""
        if not isinstance(stats, (bool, np.bool_)):
            raise KerncLaunchError(f"kernel '{self.name}': stats must be True or False, got {stats!r}")
        kwargs = dict(kwargs or {})
        positional_only = not kwargs
        device = device or self._device_of(args, kwargs)
        if device == "cpu":
            bound = binding.bind(self.signature, args, kwargs, cpu.is_host_array, "cpu", plan=self._bind_plan,
                                 choose_shared=self._module._choose_shared, choose_tile=self._module._choose_tile)
            if bound.no_tma:  # a tensor map the driver would refuse: the build without TMA
                return _without_tma(self._module._untma_module().kernels[self.name].launch(
                    args, kwargs, device, progress, stats=stats), bound.no_tma)
            if not bound.variant.tiled:
                return dataclasses.replace(self._untiled().launch(args, kwargs, device, progress, stats=stats),
                                           tiled=False)
            if not bound.variant.shared:
                return self._unshared().launch(args, kwargs, device, progress, stats=stats)
            if not bound.variant.staged:
                return dataclasses.replace(self._unstaged().launch(args, kwargs, device, progress, stats=stats),
                                           staged=False, shared=self._shared)
            bar = progress_bar(self.name, progress)
            try:
                counters = cpu.launch(self._module._interpreter(), bound, stats=bool(stats), progress=bar)
            finally:
                if bar is not None:
                    bar.close()
        elif device == "cuda":
            if not cuda.available():
                raise KerncLaunchError(
                    f"kernel '{self.name}': no usable CUDA device (CuPy sees no GPU or no driver); "
                    f"pass numpy arrays to run on the CPU interpreter"
                )
            args = tuple(cuda.as_cupy(a) if cuda.is_cuda_array(a) else a for a in args)
            kwargs = {k: (cuda.as_cupy(v) if cuda.is_cuda_array(v) else v) for k, v in kwargs.items()}
            cp = cuda.cupy()
            bound = binding.bind(self.signature, args, kwargs, lambda x: isinstance(x, cp.ndarray), "cuda",
                                 zeros=cp.zeros, plan=self._bind_plan, choose_shared=self._module._choose_shared,
                                 choose_tile=self._module._choose_tile)
            if bound.no_tma:  # (not prepared: the next call binds and chooses again)
                return _without_tma(self._module._untma_module().kernels[self.name].launch(args, kwargs, device),
                                    bound.no_tma)
            if not bound.variant.tiled:  # (not prepared: the next call binds and chooses again)
                return dataclasses.replace(self._untiled().launch(args, kwargs, device), tiled=False)
            if not bound.variant.shared:
                unshared = self._unshared()
                result = unshared.launch(args, kwargs, device)
                if positional_only:  # calls that bind as this one did make the same choice
                    self._prepared, self._prepared_staged = unshared._prepared, unshared._prepared_staged
                    self._prepared_shared = False
                return result
            if not bound.variant.staged:
                unstaged = self._unstaged()
                result = unstaged.launch(args, kwargs, device)
                if positional_only:  # calls that bind as this one did make the same choice
                    self._prepared, self._prepared_staged = unstaged._prepared, False
                    self._prepared_shared = self._shared
                return dataclasses.replace(result, staged=False, shared=self._shared)
            current = cp.cuda.runtime.getDevice()
            cuda.check_same_device(bound, current)
            variant = cuda.launch_variant(bound)
            module = self._module._cuda_module_of(variant, current)
            packer = self._packer(variant.index_bits)
            cuda.launch(module, bound, packer)
            if positional_only and bound.arrays:  # what __call__'s fast path can repeat
                self._prepared = cuda.prepare(module, bound, packer, current, variant)
                self._prepared_staged, self._prepared_shared = self._staged, self._shared
            counters = None
        else:
            raise KerncLaunchError(f"unknown device '{device}' (expected 'cpu' or 'cuda')")
        return LaunchResult(device, bound.problem_size, bound.grid, bound.block, dict(bound.sizes), counters,
                            self._staged if bound.grid else None,  # (no block ran for an empty problem)
                            self._shared if bound.grid else None,
                            self._tiled if bound.grid else None,
                            self._tensor_cores if bound.grid else None,
                            self._tma if bound.grid else None)

    def _unstaged(self) -> "Kernel":
        """This kernel compiled without kern-coalesce-views, which a launch runs instead when the
        staged kernel's tiles would be mostly empty and the unstaged accesses nearly coalesced
        (``launch_policy.staging_pays``: e.g. a transpose with an extent of a few elements)."""
        return self._module._unstaged_module().kernels[self.name]

    def _untiled(self) -> "Kernel":
        """This kernel compiled with ``tile=False``, which a launch runs instead when the problem is
        smaller than one block tile (``launch_policy.run_tiled``)."""
        return self._module._untiled_module().kernels[self.name]

    def _unshared(self) -> "Kernel":
        """This kernel compiled with ``shared(I)``/``shared_sum(I)`` lowered as ``indexed(I)``/
        ``atomic(I)`` (``CompileOptions.shared=False``), which a launch runs instead where staging
        cannot pay (``launch_policy.shared_pays``: e.g. indices with little reuse per block)."""
        return self._module._unshared_module().kernels[self.name]


class Module:
    """A compiled ``.kern`` program: ``.ptx``, ``.ir(stage)``, and one :class:`Kernel` per kernel
    as an attribute (``mod.saxpy``) and by name (``mod["saxpy"]``, for a kernel whose name is also
    an attribute, such as ``ptx``)."""

    def __init__(self, compilation: Compilation, choose_shared: bool = True, choose_tile: bool = True):
        self._compilation = compilation
        # launches may run a tiled contraction's untiled build for a small problem
        self._choose_tile = bool(choose_tile) and compilation.options.tile
        self._untiled_mod = None
        self._untma_mod = None  # the tma=False build (Compilation.untma), for launches TMA cannot take
        # launches may run shared(I)/shared_sum(I) as indexed/atomic where staging cannot pay
        self._choose_shared = bool(choose_shared) and compilation.options.shared
        self._interp = None
        self._cuda: dict = {}
        self._unstaged_mod = None  # the Module compiled without kern-coalesce-views, on first need
        self._unshared_mod = None  # the Module with shared(I) lowered as indexed(I), on first need
        self._lock = threading.Lock()
        self.kernels = {name: Kernel(self, name) for name in compilation.signatures}

    def __getattr__(self, name: str) -> Kernel:
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"no kernel named '{name}' (kernels: {', '.join(kernels) or 'none'})")

    def __getitem__(self, name: str) -> Kernel:
        """The kernel called ``name``, also when an attribute of the module has that name (a kernel
        ``ptx`` or ``ir`` is ``mod["ptx"]``); ``KeyError`` listing the kernels if there is none."""
        if name in self.kernels:
            return self.kernels[name]
        raise KeyError(f"no kernel named '{name}' (kernels: {', '.join(self.kernels) or 'none'})")

    def __dir__(self):
        return list(super().__dir__()) + list(self.kernels)

    def __repr__(self) -> str:  # its file, target and kernels (kernc/display.py)
        return display.module_repr(self)

    def _repr_html_(self) -> str:  # Jupyter
        return display.module_html(self)

    @property
    def ptx(self) -> str:
        """PTX of all kernels (32-bit index arithmetic, the ``arch`` given at compile time)."""
        return self._compilation.ptx()

    def ir(self, stage: str) -> str:
        """Text of a stage: ``"ast"``, ``"kern"``, ``"gpu"``, ``"llvm"`` or ``"ptx"``."""
        return self._compilation.ir(stage)

    def _interpreter(self):
        if self._interp is None:
            from kernc.backend.interpreter import Interpreter

            self._interp = Interpreter(self._compilation.gpu_ir(debug_info=True))
        return self._interp

    def _unstaged_module(self) -> "Module":
        """The same program compiled with the same options but ``coalesce=False``
        (``Compilation.unstaged``: built on first use, from the compile cache when it has it)."""
        with self._lock:
            if self._unstaged_mod is None:
                self._unstaged_mod = Module(self._compilation.unstaged())
            return self._unstaged_mod

    def _untma_module(self) -> "Module":
        """The same program compiled with the same options but ``tma=False`` (``Compilation.untma``)."""
        with self._lock:
            if self._untma_mod is None:
                self._untma_mod = Module(self._compilation.untma(), choose_shared=self._choose_shared,
                                         choose_tile=self._choose_tile)
            return self._untma_mod

    def _untiled_module(self) -> "Module":
        """The same program compiled with the same options but ``tile=False``
        (``Compilation.untiled``: built on first use, from the compile cache when it has it)."""
        with self._lock:
            if self._untiled_mod is None:
                self._untiled_mod = Module(self._compilation.untiled(), choose_shared=self._choose_shared,
                                           choose_tile=False)
            return self._untiled_mod

    def _unshared_module(self) -> "Module":
        """The same program compiled with the same options but ``shared=False``
        (``Compilation.unshared``: built on first use, from the compile cache when it has it)."""
        with self._lock:
            if self._unshared_mod is None:
                self._unshared_mod = Module(self._compilation.unshared(), choose_shared=False)
            return self._unshared_mod

    def _cuda_module_of(self, variant: Variant, device: int) -> cuda.CudaModule:
        """The PTX of ``variant`` loaded on CUDA device ``device``, once per module."""
        key = (variant, device)
        if key not in self._cuda:
            self._cuda[key] = cuda.load_module(self._compilation.ptx(variant=variant))
        return self._cuda[key]

    def _cuda_module(self, index_bits: int, aligned: bool, device: int, nonneg_scalars: bool = False):
        """:meth:`_cuda_module_of` with the variant given as its fields (the form before
        :class:`Variant`)."""
        return self._cuda_module_of(Variant(index_bits, aligned, nonneg_scalars), device)


def compile(text: str, *, filename: str = "<string>", arch: str = "sm_90", opt_level: int = 3,
            fmad: bool = False, coalesce: bool = True, tile: bool = True, choose_shared: bool = True,
            tensor_cores: bool = True, privatize: bool = True, group_registers: bool = True,
            wgmma: bool = True, async_copy: bool = True, tma: bool = False, tma_stages: int = 2,
            dynamic_shared_memory: bool = True, wgmma_mn_major: bool = True) -> Module:
    """Compile ``.kern`` source text into a :class:`Module`.

    The source is parsed, checked and lowered to the gpu IR at once (so every error in the program is
    reported here, as :class:`~kernc.errors.CompileError` with ``file:line:col`` diagnostics); PTX for
    ``arch`` (``"sm_90"`` default; ``sm_50`` .. ``sm_121a``) at LLVM ``opt_level`` 0..3 is generated on
    first use (``mod.ptx`` or the first GPU launch). ``ValueError`` for a bad ``arch``/``opt_level``.
    ``fmad=True`` contracts ``a*b + c`` into fused multiply-adds (nvcc's ``--fmad=true``), rounded
    once on the GPU and on the CPU interpreter alike (default off: results equal numpy's ``a*b + c``).
    ``coalesce=False`` turns off the staging of transposed view accesses through a workgroup tile
    (``kern-coalesce-views``; ``kernc compile --no-coalesce``), e.g. to measure a naive transpose.
    ``tile=False`` turns off the CUDA-core tiling of contraction loops (``kern-tile-contractions``;
    ``kernc compile --no-tile``): each item then runs its own loop, as written -- tensor cores are
    not turned off: f16/bf16/i8/``@tf32`` contractions still run as ``mma.sync``/``wgmma`` in tiles
    of their own (add ``tensor_cores=False`` for the untiled reference); it overrides ``@tile``.
    ``tensor_cores=False`` (it overrides a kernel's ``@tensor_cores``)
    keeps f16/bf16/i8/``@tf32`` contractions off the tensor cores (``kern-mma-contractions`` and
    ``kern-wgmma-contractions``, ``sm_80`` and later: ``mma.sync`` fed by ``ldmatrix``, ``wgmma`` on
    ``sm_90a``; ``kernc compile --no-tensor-cores``); they are then
    tiled on CUDA cores, their sums in the loop's order. ``privatize=False`` turns
    off the per-block workgroup copies of small atomically updated views (``kern-privatize-atomics``;
    ``kernc compile --no-privatize``): one global atomic per update. ``choose_shared=False``
    always runs ``shared(I)``/``shared_sum(I)`` staged (default: a launch runs them as
    ``indexed(I)``/``atomic(I)`` where staging cannot pay on its indices,
    ``launch_policy.shared_pays``, reported as ``LaunchResult.shared``; ``kernc run
    --always-shared``). ``group_registers=False`` makes every phase of a kernel with reductions
    across items re-read what it needs (``kern-map-groups``; ``kernc compile --no-group-registers``;
    the same results, bit for bit) instead of keeping values in registers. ``wgmma=False`` keeps
    those contractions off Hopper's warpgroup ``wgmma`` on ``sm_90a`` (``kern-wgmma-contractions``;
    ``kernc compile --no-wgmma``): they then take ``mma.sync``. ``async_copy=False`` stages the
    tiles of tiled contractions with plain loads and stores instead of ``cp.async`` on ``sm_80`` and
    later (``kernc compile --no-async-copy``; the same results, bit for bit). ``tma=True`` loads the
    ``wgmma`` operand tiles that are boxes of their views with the tensor memory accelerator
    (``kernc compile --tma``; opt-in; a launch whose row byte strides are no multiple of 16 runs
    the ``tma=False`` build); ``tma_stages`` (1..8, default 2; ``kernc compile --tma-stages``) is the
    depth of their copies' pipeline (fewer, with a remark, where the stages do not fit).
    ``dynamic_shared_memory=False`` (``kernc compile --no-dynamic-shared-memory``) keeps every kernel
    within 48 KiB of static workgroup memory (default: a kernel that needs more takes dynamic
    workgroup memory, up to ``arch``'s opt-in maximum, 227 KiB on ``sm_90``/``sm_90a``; the GPU
    launch opts in, and fails with ``KerncLaunchError`` on a device that allows less).
    ``wgmma_mn_major=False`` (``kernc compile --no-wgmma-mn-major``) stages every ``wgmma`` operand
    tile K-major (default: an operand whose read runs along its rows, a gemm's ``b[k, j]``, is
    staged MN-major and read transposed, its stores free of bank conflicts; the same results).

    Each kernel is an attribute of the module: ``mod.saxpy(a, x, y)`` binds arguments by position or
    name, size symbols no argument shape binds by keyword (``n=1000``), runs on the CPU interpreter
    for numpy arrays or on the GPU for CUDA arrays, updates ``write``/``add`` buffers in place, and
    returns a :class:`LaunchResult`.
    """
    if not isinstance(choose_shared, (bool, np.bool_)):
        raise ValueError(f"choose_shared must be True or False, got {choose_shared!r}")
    return Module(Compilation(text, filename, CompileOptions(arch=arch, opt_level=opt_level, fmad=fmad,
                                                             coalesce=coalesce, tile=tile,
                                                             tensor_cores=tensor_cores, privatize=privatize,
                                                             group_registers=group_registers,
                                                             wgmma=wgmma, async_copy=async_copy, tma=tma,
                                                             tma_stages=tma_stages,
                                                             dynamic_shared_memory=dynamic_shared_memory,
                                                             wgmma_mn_major=wgmma_mn_major)),
                  choose_shared=choose_shared)


def grad(text: str, *, kernel: str, wrt=None, filename: str = "<string>", **options) -> Module:
    """Compile ``text`` with the reverse-mode derivative of ``kernel`` appended: the module has
    ``kernel`` and ``kernel + "_grad"`` (``docs/derivatives.md``). ``wrt``: the parameter names
    (a sequence or ``"x,a"``) to differentiate with respect to, default the kernel's ``@tunable``
    roles, else every float parameter it reads. ``options`` are :func:`compile`'s. Raises
    ``CompileError`` (located) for a bad request: ``wrt`` naming an unknown, integer or output
    parameter, an accessor with no dual. The source of the new kernel is ``derivative_source``."""
    return compile(derivative_source(text, kernel, wrt, "grad", filename), filename=filename, **options)


def jvp(text: str, *, kernel: str, wrt=None, filename: str = "<string>", **options) -> Module:
    """As :func:`grad`, with the forward-mode derivative ``kernel + "_jvp"`` (Jacobian-vector
    products: ``x_dot`` tangents in, ``y_dot`` = J x_dot out)."""
    return compile(derivative_source(text, kernel, wrt, "jvp", filename), filename=filename, **options)


def derivative_source(text: str, kernel: str, wrt=None, mode: str = "grad", filename: str = "<string>") -> str:
    """The ``.kern`` source of :func:`grad` (``mode="grad"``) or :func:`jvp` (``"jvp"``): ``text``
    with the derivative kernel appended (what ``kernc grad`` prints)."""
    from kernc.frontend.derivative import derivative_source as source

    return source(text, filename, kernel, wrt, mode)[0]


def compile_file(path: str | os.PathLike, *, arch: str = "sm_90", opt_level: int = 3,
                 fmad: bool = False, coalesce: bool = True, tile: bool = True,
                 choose_shared: bool = True, tensor_cores: bool = True, privatize: bool = True,
                 group_registers: bool = True, wgmma: bool = True, async_copy: bool = True,
                 tma: bool = False, tma_stages: int = 2, dynamic_shared_memory: bool = True,
                 wgmma_mn_major: bool = True) -> Module:
    """Compile the ``.kern`` file at ``path`` (a ``str``, ``bytes`` or ``os.PathLike`` path; see
    :func:`compile`); ``OSError`` if unreadable, ``TypeError`` if ``path`` is not a path (an int
    would be read as a file descriptor)."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"path must be a str, bytes or os.PathLike, got {type(path).__name__}")
    path = os.fsdecode(os.fspath(path))
    return compile(read_source(path), filename=path, arch=arch, opt_level=opt_level, fmad=fmad,
                   coalesce=coalesce, tile=tile, choose_shared=choose_shared, tensor_cores=tensor_cores,
                   privatize=privatize, group_registers=group_registers, wgmma=wgmma,
                   async_copy=async_copy, tma=tma, tma_stages=tma_stages,
                   dynamic_shared_memory=dynamic_shared_memory, wgmma_mn_major=wgmma_mn_major)


def read_source(path) -> str:
    """Read a ``.kern`` file as UTF-8; ``OSError`` if unreadable or not a file, a pipe or a
    terminal (a device such as ``/dev/zero`` would never end: :mod:`kernc.support.input_files`),
    ``CompileError`` if not UTF-8."""
    from kernc.support.input_files import read_stream_or_file

    try:
        data = read_stream_or_file(path)
    except OSError as err:
        if err.errno is None:  # refused by kernc: name the file
            raise OSError(f"cannot read '{os.fspath(path)}': {err}") from None
        raise
    return decode_source(data, str(path))


def decode_source(data: bytes, path: str) -> str:
    """``data`` (the bytes of ``.kern`` file ``path``, or of standard input) as text: UTF-8, a
    leading byte order mark dropped; ``CompileError`` at the first byte that is not UTF-8, shown
    like every other diagnostic: its line (each bad sequence as U+FFFD) and a caret under it."""
    import codecs

    from kernc.support.errors import CompileError, Diagnostic, SourceLocation

    # The byte order mark is dropped here rather than by the "utf-8-sig" codec (same text), whose
    # error positions count from after the mark: the message named the wrong byte.
    body = data[len(codecs.BOM_UTF8):] if data.startswith(codecs.BOM_UTF8) else data
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as err:
        bad = err.start
        line_start = body.rfind(b"\n", 0, bad) + 1
        line = body.count(b"\n", 0, bad) + 1
        # The column counts characters, as the lexer's do (a tab is one, a multi-byte character
        # one, the byte order mark none); everything before the first bad byte is valid UTF-8.
        col = len(body[line_start:bad].decode("utf-8")) + 1
        raise CompileError(Diagnostic(
            f"the {'input' if path == '-' else 'file'} is not UTF-8 text (byte 0x{body[bad]:02x})",
            SourceLocation(path, line, col), source=body.decode("utf-8", errors="replace")
        )) from None
