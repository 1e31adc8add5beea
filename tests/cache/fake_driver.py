"""A stand-in for the parts of CuPy kernc's launcher uses, so that the launch path (binding, the
argument packer's ``kernelParams``, the prepared fast path) is tested without a GPU.

``FakeCupy`` has an ``ndarray`` type wrapping a numpy array (its ``data.ptr`` is the numpy data's
host address, so that tests can compare pointers), ``cuda.runtime.getDevice``, a current stream,
``cuda.function.Module`` and a ``cuda.driver.launchKernel`` that decodes the ``kernelParams`` array
it is given, right away (the packer's slots are rewritten by the next launch), into ``launches``
(its ``sharedMemBytes`` into ``shared``); ``cuda.runtime.getDeviceAttribute`` answers the opt-in
maximum of workgroup memory (``optin``, bytes; 232448, an H100's, unless a test sets it).
"""

from __future__ import annotations

import ctypes
import types

import numpy as np


class _Memory:
    def __init__(self, array: np.ndarray, device_id: int):
        self.ptr = int(array.__array_interface__["data"][0])
        self.device_id = device_id


class FakeArray:
    """A 'CUDA' array: numpy data with CuPy's attribute names."""

    device_id = 0

    def __init__(self, host: np.ndarray, device_id: int | None = None):
        self.host = host
        if device_id is not None:
            self.device_id = device_id

    shape = property(lambda self: self.host.shape)
    strides = property(lambda self: self.host.strides)
    dtype = property(lambda self: self.host.dtype)
    ndim = property(lambda self: self.host.ndim)
    size = property(lambda self: self.host.size)
    flags = property(lambda self: self.host.flags)
    data = property(lambda self: _Memory(self.host, self.device_id))

    def reshape(self, *shape):
        return FakeArray(self.host.reshape(*shape), self.device_id)

    def __getitem__(self, key):
        return FakeArray(self.host[key], self.device_id)

    def fill(self, value):
        self.host.fill(value)


class FakeCupy(types.SimpleNamespace):
    """``cupy`` for :mod:`kernc.backend.cuda`: every launch lands in ``launches`` as
    ``(function_ptr, grid, block, stream, [bytes of each parameter])``."""

    def __init__(self, param_sizes, device: int = 0):
        """``param_sizes(function_ptr)``: the byte size of each parameter of that kernel."""
        launches, loads, shared_bytes = [], [], []
        functions: list = []  # every function of every module: its ptr is 1000 + its position

        def launch_kernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            assert (gy, gz, by, bz, extra) == (1, 1, 1, 1, 0)
            shared_bytes.append(shared)
            sizes = param_sizes(f)
            slots = (ctypes.c_uint64 * max(1, len(sizes))).from_address(params)
            launches.append((f, gx, bx, stream, [ctypes.string_at(slots[i], n) for i, n in enumerate(sizes)]))

        class Module:
            def load(self, data):
                loads.append(data)

            def get_function(self, name):
                functions.append(types.SimpleNamespace(name=name, ptr=1000 + len(functions)))
                return functions[-1]

        stream = types.SimpleNamespace(ptr=77)
        self.device = device
        self.optin = 232448

        def get_device_attribute(attr, dev):
            assert attr == 97 and dev == self.device  # cudaDevAttrMaxSharedMemoryPerBlockOptin
            return self.optin
        cuda = types.SimpleNamespace(
            runtime=types.SimpleNamespace(getDevice=lambda: self.device, getDeviceAttribute=get_device_attribute,
                                          cudaDevAttrMaxSharedMemoryPerBlockOptin=97),
            driver=types.SimpleNamespace(launchKernel=launch_kernel),
            function=types.SimpleNamespace(Module=Module),
            get_current_stream=lambda: stream,
            is_available=lambda: True,
        )
        super().__init__(ndarray=FakeArray, cuda=cuda, launches=launches, loads=loads, functions=functions,
                         shared=shared_bytes,
                         zeros=lambda n, dtype: FakeArray(np.zeros(n, dtype)))


def install(monkeypatch, param_sizes, device: int = 0) -> FakeCupy:
    """Make :mod:`kernc.backend.cuda` launch through a :class:`FakeCupy` (returned)."""
    from kernc.backend import cuda

    fake = FakeCupy(param_sizes, device)
    monkeypatch.setattr(cuda, "cupy", lambda: fake)
    monkeypatch.setattr(cuda, "_modules", type(cuda._modules)())
    monkeypatch.setattr(cuda, "_DRIVER", None)  # looked up again, from the fake
    monkeypatch.setattr(cuda, "available", lambda: True)
    monkeypatch.setattr(cuda, "is_cuda_array", lambda x: isinstance(x, FakeArray))
    monkeypatch.setattr(cuda, "as_cupy", lambda x: x)
    return fake
