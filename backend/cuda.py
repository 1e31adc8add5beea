"""Loading PTX into the CUDA driver and launching kernels through CuPy.

CuPy is imported lazily (``import kernc`` never loads the CUDA runtime). Arrays may be CuPy arrays,
any object with ``__cuda_array_interface__`` (Numba, PyTorch CUDA tensors, ...) or a DLPack CUDA
tensor; they are viewed, never copied, so kernels update them in place. Scalars go to the driver as
numpy scalars of the exact PTX parameter type (CuPy would pass a Python int as int64 and a float as
float64); ``index`` arguments and size symbols go as int32 or int64 to match the index bitwidth the
PTX was generated with.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections import OrderedDict

import numpy as np

from kernc.errors import KerncLaunchError

from .binding import BoundLaunch


@functools.lru_cache(maxsize=1)
def cupy():
    """The ``cupy`` module, or ``KerncLaunchError`` if it cannot be imported."""
    try:
        import cupy as cp
    except Exception as err:  # pragma: no cover - depends on the environment
        raise KerncLaunchError(f"running on the GPU needs CuPy (pip install cupy-cuda13x): {err}") from err
    return cp


def available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        cp = cupy()
        return bool(cp.cuda.is_available())
    except Exception:
        return False


def is_cuda_array(x) -> bool:
    """Whether ``x`` is an array in CUDA device memory that kernc can launch on."""
    cp = sys.modules.get("cupy")  # CuPy arrays first: their __cuda_array_interface__ is built per access
    if cp is not None and isinstance(x, getattr(cp, "ndarray", ())):
        return True
    if hasattr(x, "__cuda_array_interface__"):
        return True
    dev = getattr(x, "__dlpack_device__", None)
    if dev is not None:
        try:
            return int(dev()[0]) in (2, 3, 13)  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged
        except Exception:
            return False
    return False


def as_cupy(x):
    """View a CUDA array as a CuPy array without copying."""
    cp = cupy()
    if isinstance(x, cp.ndarray):
        return x
    if hasattr(x, "__cuda_array_interface__"):
        return cp.asarray(x)
    return cp.from_dlpack(x)


def all_aligned(bound: BoundLaunch, align: int) -> bool:
    """Whether every device buffer of the launch starts at a multiple of ``align`` bytes (then the
    PTX that assumes it -- and may use 16-byte vector accesses -- is safe to launch)."""
    cp = cupy()
    return all(int(a.data.ptr) % align == 0 for a in bound.args if isinstance(a, cp.ndarray))


def check_same_device(bound: BoundLaunch, current: int) -> None:
    """Every array of ``bound`` must live on the current CUDA device (``current``: its id);
    ``KerncLaunchError`` names the first that does not."""
    for name, a in bound.arrays.items():
        dev = getattr(getattr(a, "device", None), "id", current)
        if dev != current:
            raise KerncLaunchError(
                f"argument '{name}': the array is on CUDA device {dev}, but the current device is {current}"
            )


class CudaModule:
    """A PTX module loaded into the current CUDA context; ``function(name)`` returns a kernel."""

    def __init__(self, ptx: str):
        cp = cupy()
        self._module = cp.cuda.function.Module()
        self._module.load(ptx.encode())
        self._functions: dict = {}

    def function(self, name: str):
        """The CuPy kernel function ``name`` of this module (looked up once)."""
        fn = self._functions.get(name)
        if fn is None:
            fn = self._functions[name] = self._module.get_function(name)
        return fn


#: Loaded modules shared by every kernc Module of the process, keyed by (PTX text, device).
MODULE_CACHE_SIZE = 64
_modules: OrderedDict = OrderedDict()
_modules_lock = threading.Lock()


def load_module(ptx: str) -> CudaModule:
    """The :class:`CudaModule` of ``ptx`` on the current device, loaded once per process (the
    ``MODULE_CACHE_SIZE`` most recently used stay loaded; callers keep their own reference)."""
    key = (ptx, cupy().cuda.runtime.getDevice())
    with _modules_lock:
        mod = _modules.get(key)
        if mod is not None:
            _modules.move_to_end(key)
            return mod
    mod = CudaModule(ptx)
    with _modules_lock:
        mod = _modules.setdefault(key, mod)
        _modules.move_to_end(key)
        while len(_modules) > MODULE_CACHE_SIZE:
            _modules.popitem(last=False)
    return mod


class ArgPacker:
    """The launch-argument conversion of one kernel signature at one index width, worked out once.

    Calling it on a :class:`BoundLaunch`'s ``args`` (ABI order) returns the tuple CuPy passes to the
    driver: ``index`` params and size symbols become ``int32``/``int64`` (the PTX's index width),
    everything else (buffer views, scalars that binding already made exact numpy scalars) is passed
    as is."""

    __slots__ = ("index_bits", "index_positions", "_itype")

    def __init__(self, signature, index_bits: int):
        self.index_bits = index_bits
        self._itype = np.int32 if index_bits == 32 else np.int64
        sizes = set(signature.sizes)
        self.index_positions = tuple(
            i for i, name in enumerate(signature.arg_names)
            if name in sizes or signature.param(name).dtype == "index"
        )

    def __call__(self, args) -> tuple:
        if not self.index_positions:
            return tuple(args)
        packed = list(args)
        itype, n = self._itype, len(packed)
        for i in self.index_positions:
            if i < n:
                packed[i] = itype(packed[i])
        return tuple(packed)


def launch(module: CudaModule, bound: BoundLaunch, packer: ArgPacker | None = None) -> None:
    """Launch ``bound`` (grid x block threads) from ``module``; nothing is launched when ``P == 0``
    (``zero_init`` outputs are still zero-filled). ``packer``: the kernel's :class:`ArgPacker` for
    ``bound.index_bits`` (built here when not given)."""
    for name in bound.zero_init:
        bound.arrays[name].fill(0)
    if bound.grid == 0:
        return
    if packer is None or packer.index_bits != bound.index_bits:
        packer = ArgPacker(bound.signature, bound.index_bits)
    fn = module.function(bound.signature.name)
    fn((bound.grid,), (bound.block,), packer(bound.args))
