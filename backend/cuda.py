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


def check_same_device(bound: BoundLaunch) -> None:
    """Every array of ``bound`` must live on the current CUDA device; ``KerncLaunchError`` names the
    first that does not."""
    current = cupy().cuda.runtime.getDevice()
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
        if name not in self._functions:
            self._functions[name] = self._module.get_function(name)
        return self._functions[name]


def launch(module: CudaModule, bound: BoundLaunch) -> None:
    """Launch ``bound`` (grid x block threads) from ``module``; nothing is launched when ``P == 0``
    (``zero_init`` outputs are still zero-filled)."""
    for name in bound.zero_init:
        bound.arrays[name].fill(0)
    if bound.grid == 0:
        return
    itype = np.int32 if bound.index_bits == 32 else np.int64
    sig = bound.signature
    packed = []
    names = sig.arg_names
    for name, value in zip(names, bound.args):
        is_index = name in sig.sizes or sig.param(name).dtype == "index"
        packed.append(itype(value) if is_index else value)
    fn = module.function(sig.name)
    fn((bound.grid,), (bound.block,), tuple(packed))
