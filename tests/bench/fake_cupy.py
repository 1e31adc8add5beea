"""A numpy stand-in for the parts of CuPy that ``bench.gpu`` uses (shared by the bench tests that
drive its GPU section without a GPU): events read the host clock, the device reports a made-up
name and memory (1 GHz x 512-bit bus: 64 GB/s peak), and the caller supplies the module classes
that run the kernels."""

from __future__ import annotations

import time
import types

import numpy as np


def fake_cupy(module_cls, raw_module_cls) -> types.SimpleNamespace:
    """A ``cupy`` stand-in whose ``cuda.function.Module`` is ``module_cls`` (loads PTX) and whose
    ``RawModule`` is ``raw_module_cls`` (NVRTC sources); arrays are numpy arrays."""

    class Event:
        def record(self):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

    runtime = types.SimpleNamespace(
        getDevice=lambda: 0,
        getDeviceProperties=lambda dev: {"name": b"Fake GPU", "multiProcessorCount": 1},
        deviceGetAttribute=lambda attr, dev: {36: 1_000_000, 37: 512}[attr],
    )
    cuda_ns = types.SimpleNamespace(
        runtime=runtime, function=types.SimpleNamespace(Module=module_cls), Event=Event,
        Device=lambda: types.SimpleNamespace(synchronize=lambda: None, compute_capability="90"),
        get_elapsed_time=lambda s, e: max((e.t - s.t) * 1e3, 1e-6),
    )
    return types.SimpleNamespace(
        cuda=cuda_ns, ndarray=np.ndarray, asarray=np.asarray, allclose=np.allclose, zeros=np.zeros,
        ones=np.ones, float32=np.float32, float16=np.float16, float64=np.float64, matmul=np.matmul, abs=np.abs,
        RawModule=raw_module_cls,
    )
