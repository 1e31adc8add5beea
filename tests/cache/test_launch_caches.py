"""The launch path's caches, checked without a GPU: the per-(kernel, index width) argument packer
gives exactly the arguments the per-call conversion gave, loaded CUDA modules are shared per PTX and
device, and ``cuda.launch`` uses the packer it is handed."""

from __future__ import annotations

import os
import sys
import types

import numpy as np
import pytest

from conftest import EXAMPLES, compiled_example, example_reference
import kernc
from kernc.backend import binding, cpu, cuda


def _per_call_packing(bound, index_bits):
    """The conversion ``cuda.launch`` used to do on every call (the reference)."""
    itype = np.int32 if index_bits == 32 else np.int64
    sig = bound.signature
    return tuple(itype(v) if (n in sig.sizes or sig.param(n).dtype == "index") else v
                 for n, v in zip(sig.arg_names, bound.args))


@pytest.mark.parametrize("name", ["saxpy", "gather_scatter", "particles", "edge_update", "laplacian_1d"])
@pytest.mark.parametrize("bits", [32, 64])
def test_packer_matches_per_call_conversion(name, bits):
    if not os.path.exists(os.path.join(EXAMPLES, f"{name}.py")):
        pytest.skip("no numpy reference")
    mod = compiled_example(name)
    kernel = mod.kernels[name]
    inputs = example_reference(name).make_inputs(300, np.random.default_rng(1))
    bound = binding.bind(kernel.signature, (), inputs, cpu.is_host_array, "cpu")
    packer = cuda.ArgPacker(kernel.signature, bits)
    got, want = packer(bound.args), _per_call_packing(bound, bits)
    assert len(got) == len(want) == len(bound.args)
    for g, w in zip(got, want):
        assert type(g) is type(w)
        if isinstance(w, np.ndarray):
            assert g is w  # buffers are passed through, never copied
        else:
            assert g == w
    assert packer.index_bits == bits
    # the Kernel keeps one packer per index width
    assert kernel._packer(bits) is kernel._packer(bits)


def test_index_positions_name_index_params_and_sizes():
    mod = compiled_example("gather_scatter")
    sig = mod.gather_scatter.signature
    names = sig.arg_names
    packer = cuda.ArgPacker(sig, 32)
    assert {names[i] for i in packer.index_positions} == {"off", "st", *sig.sizes}


class _FakeFunction:
    def __init__(self, name, calls):
        self.name, self.calls = name, calls

    def __call__(self, grid, block, args):
        self.calls.append((self.name, grid, block, args))


def _fake_cupy(loads, calls, device=0):
    class Module:
        def load(self, data):
            loads.append(data)

        def get_function(self, name):
            return _FakeFunction(name, calls)

    runtime = types.SimpleNamespace(getDevice=lambda: device)
    return types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=runtime,
                                                            function=types.SimpleNamespace(Module=Module)))


def test_modules_are_loaded_once_per_ptx_and_device(monkeypatch):
    loads, calls = [], []
    monkeypatch.setattr(cuda, "cupy", lambda: _fake_cupy(loads, calls))
    monkeypatch.setattr(cuda, "_modules", type(cuda._modules)())
    a = cuda.load_module("// ptx A")
    assert cuda.load_module("// ptx A") is a and loads == [b"// ptx A"]
    b = cuda.load_module("// ptx B")
    assert b is not a and len(loads) == 2
    monkeypatch.setattr(cuda, "cupy", lambda: _fake_cupy(loads, calls, device=1))
    assert cuda.load_module("// ptx A") is not a  # another device, another load
    assert a.function("k") is a.function("k")
    monkeypatch.setattr(cuda, "MODULE_CACHE_SIZE", 2)
    cuda.load_module("// ptx C")
    assert len(cuda._modules) == 2  # least recently used dropped


def test_launch_uses_the_packer_and_skips_empty_grids(monkeypatch):
    loads, calls = [], []
    monkeypatch.setattr(cuda, "cupy", lambda: _fake_cupy(loads, calls))
    monkeypatch.setattr(cuda, "_modules", type(cuda._modules)())
    mod = compiled_example("saxpy")
    sig = mod.saxpy.signature
    x, y = np.ones(300, np.float32), np.zeros(300, np.float32)
    bound = binding.bind(sig, (2.0, x, y), {}, cpu.is_host_array, "cpu")
    module = cuda.load_module("// saxpy")
    packer = cuda.ArgPacker(sig, bound.index_bits)
    cuda.launch(module, bound, packer)
    cuda.launch(module, bound)  # builds its own packer: same arguments
    assert len(calls) == 2
    (name, grid, block, args), second = calls
    assert name == "saxpy" and grid == (bound.grid,) and block == (bound.block,)
    assert np.shares_memory(args[1], x) and np.shares_memory(args[2], y)  # views, not copies
    assert type(args[3]) is np.int32 and args[3] == 300
    assert [type(v) for v in args] == [type(v) for v in second[3]]
    empty = binding.bind(sig, (2.0, x[:0], y[:0]), {}, cpu.is_host_array, "cpu")
    cuda.launch(module, empty, packer)
    assert len(calls) == 2


@pytest.mark.parametrize("value, dtype_name", [
    (np.float32(2.5), "f32"), (np.array(0x7FA00001, np.uint32).view(np.float32)[()], "f32"),
    (np.float64(-0.0), "f64"), (np.int32(-7), "i32"), (np.uint8(255), "u8"), (np.bool_(True), "bool"),
])
def test_exactly_typed_scalars_pass_through_binding_bit_for_bit(value, dtype_name):
    """A scalar that already has the parameter's numpy type is passed as is (no round trip through
    a Python number, which would also quiet a signalling NaN payload); other values still convert."""
    sig = kernc.compile(f"kernel k(s: {dtype_name}, y: f32[n] write) over n {{ y = 0.0; }}").k.signature
    y = np.zeros(4, np.float32)
    out = binding.bind(sig, (value, y), {}, cpu.is_host_array, "cuda").args[0]
    assert type(out) is type(value)
    assert np.asarray(out).tobytes() == np.asarray(value).tobytes()
    converted = binding.bind(sig, (value.item(), y), {}, cpu.is_host_array, "cuda").args[0]
    assert type(converted) is type(value) and converted == value or np.isnan(value)


def test_cupy_arrays_are_recognised_without_building_their_interface(monkeypatch):
    """A CuPy array is a CUDA array by its type: ``__cuda_array_interface__`` (a dict CuPy builds
    on every access) is only consulted for other objects."""
    built = []

    class FakeCupyArray:
        @property
        def __cuda_array_interface__(self):
            built.append(1)
            return {}

    class Foreign(FakeCupyArray):
        pass

    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(ndarray=FakeCupyArray))
    assert cuda.is_cuda_array(FakeCupyArray()) and built == []
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(ndarray=()))
    assert cuda.is_cuda_array(Foreign()) and built == [1]  # any __cuda_array_interface__ object
    assert not cuda.is_cuda_array(np.zeros(2)) and not cuda.is_cuda_array(1.0)
