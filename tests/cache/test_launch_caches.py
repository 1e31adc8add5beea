"""The launch path's caches, checked without a GPU: the per-(kernel, index width) argument packer
gives exactly the arguments the per-call conversion gave, loaded CUDA modules are shared per PTX and
device, and ``cuda.launch`` uses the packer it is handed."""

from __future__ import annotations

import os
import struct
import sys
import types

import numpy as np
import pytest

import fake_driver
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


def _sizes_of(packer):
    return lambda function_ptr: packer.param_sizes


def test_modules_are_loaded_once_per_ptx_and_device(monkeypatch):
    fake = fake_driver.install(monkeypatch, lambda f: ())
    a = cuda.load_module("// ptx A")
    assert cuda.load_module("// ptx A") is a and fake.loads == [b"// ptx A"]
    b = cuda.load_module("// ptx B")
    assert b is not a and len(fake.loads) == 2
    fake.device = 1
    assert cuda.load_module("// ptx A") is not a  # another device, another load
    assert a.function("k") is a.function("k")
    monkeypatch.setattr(cuda, "MODULE_CACHE_SIZE", 2)
    cuda.load_module("// ptx C")
    assert len(cuda._modules) == 2  # least recently used dropped


def test_launch_uses_the_packer_and_skips_empty_grids(monkeypatch):
    mod = compiled_example("saxpy")
    sig = mod.saxpy.signature
    packer = cuda.ArgPacker(sig, 32)
    fake = fake_driver.install(monkeypatch, _sizes_of(packer))
    x, y = fake_driver.FakeArray(np.ones(300, np.float32)), fake_driver.FakeArray(np.zeros(300, np.float32))
    bound = binding.bind(sig, (2.0, x, y), {}, lambda v: isinstance(v, fake_driver.FakeArray), "cuda")
    module = cuda.load_module("// saxpy")
    cuda.launch(module, bound, packer)
    cuda.launch(module, bound)  # builds its own packer: same arguments
    assert len(fake.launches) == 2
    (fptr, grid, block, stream, params), second = fake.launches
    assert fptr == module.function("saxpy").ptr and (grid, block, stream) == (bound.grid, bound.block, 77)
    assert params == [np.float32(2.0).tobytes(), struct.pack("<Q", x.data.ptr), struct.pack("<Q", y.data.ptr),
                      np.int32(300).tobytes()]
    assert second[4] == params
    empty = binding.bind(sig, (2.0, x[:0], y[:0]), {}, lambda v: isinstance(v, fake_driver.FakeArray), "cuda")
    cuda.launch(module, empty, packer)
    assert len(fake.launches) == 2


@pytest.mark.parametrize("nbytes, optin", [(0, None), (40000, None), (49168, 49168), (232448, 232448)])
def test_a_launch_gives_the_signatures_dynamic_workgroup_memory(monkeypatch, nbytes, optin):
    """``cuLaunchKernel``'s ``sharedMemBytes`` is the signature's ``dynamic_shared_bytes``; past 48 KiB
    the function is opted in to it (``max_dynamic_shared_size_bytes``) once, when looked up; at or
    below 48 KiB (or 0) it is not."""
    import dataclasses

    sig = dataclasses.replace(compiled_example("saxpy").saxpy.signature, dynamic_shared_bytes=nbytes)
    packer = cuda.ArgPacker(sig, 32)
    assert packer.shared_bytes == nbytes
    fake = fake_driver.install(monkeypatch, _sizes_of(packer))
    x, y = fake_driver.FakeArray(np.ones(300, np.float32)), fake_driver.FakeArray(np.zeros(300, np.float32))
    bound = binding.bind(sig, (2.0, x, y), {}, lambda v: isinstance(v, fake_driver.FakeArray), "cuda")
    module = cuda.load_module("// saxpy")
    cuda.launch(module, bound, packer)
    cuda.launch(module, bound)
    assert fake.shared == [nbytes, nbytes]
    assert getattr(module.function("saxpy"), "max_dynamic_shared_size_bytes", None) == optin


def test_more_dynamic_workgroup_memory_than_the_device_opts_in_to_is_a_launch_error(monkeypatch):
    import dataclasses

    from kernc.support.errors import KerncLaunchError

    sig = dataclasses.replace(compiled_example("saxpy").saxpy.signature, dynamic_shared_bytes=166912)
    fake = fake_driver.install(monkeypatch, _sizes_of(cuda.ArgPacker(sig, 32)))
    fake.optin = 101376  # an sm_86 device running an sm_80 build
    x, y = fake_driver.FakeArray(np.ones(30, np.float32)), fake_driver.FakeArray(np.zeros(30, np.float32))
    bound = binding.bind(sig, (2.0, x, y), {}, lambda v: isinstance(v, fake_driver.FakeArray), "cuda")
    with pytest.raises(KerncLaunchError, match=r"kernel 'saxpy' needs 166912 bytes of dynamic workgroup memory, but "
                                               r"this device lets a block opt in to at most 101376"):
        cuda.launch(cuda.load_module("// saxpy"), bound)
    assert fake.launches == []


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
