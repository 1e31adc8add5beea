"""The GPU launch path without a GPU (a fake CuPy, ``fake_driver.py``): the argument packer's
``kernelParams`` hold every value with the parameter's exact bytes, and ``Kernel.__call__``'s
prepared fast path launches exactly what a full binding launches, falls back to the full binding
whenever anything that binding decides could differ, and never for kernels it cannot repeat.
The same semantics run on a GPU in ``tests/gpu/test_cuda.py``."""

from __future__ import annotations

import re
import struct

import ml_dtypes
import numpy as np
import pytest

import fake_driver
import kernc
from kernc.backend import binding, cuda
from kernc.support.errors import KerncLaunchError

FakeArray = fake_driver.FakeArray


def _arr(values, dtype=np.float32):
    # 64-byte aligned host data, so that the 16-byte aligned PTX is the one picked
    a = np.asarray(values, dtype)
    buf = np.empty(a.nbytes + 64, np.uint8)
    start = -buf.ctypes.data % 64
    out = buf[start:start + a.nbytes].view(dtype).reshape(a.shape)
    out[...] = a
    return FakeArray(out)


def _ptr(a) -> bytes:
    return struct.pack("<Q", a.data.ptr)


@pytest.fixture
def fake(monkeypatch):
    """A fake CuPy whose launches decode each kernel's parameters with the kernel's packer, and a
    counter of full bindings."""
    packers = {}
    real_launch = cuda.ArgPacker.launch

    def recording_launch(self, function_ptr, *rest):
        packers[function_ptr] = self
        return real_launch(self, function_ptr, *rest)

    monkeypatch.setattr(cuda.ArgPacker, "launch", recording_launch)
    f = fake_driver.install(monkeypatch, lambda fptr: packers[fptr].param_sizes)
    f.binds = []
    real_bind = binding.bind

    def counting_bind(*args, **kwargs):
        f.binds.append(args[0].name)
        return real_bind(*args, **kwargs)

    monkeypatch.setattr(binding, "bind", counting_bind)
    return f


_SAXPY = "kernel saxpy(a: f32, x: f32[n] read, y: f32[n] add) over n { y += a * x; }"


def test_repeated_calls_skip_binding_and_pack_each_calls_values(fake):
    k = kernc.compile(_SAXPY).saxpy
    x, y = _arr(np.arange(300)), _arr(np.zeros(300))
    first = k(2.5, x, y)
    assert fake.binds == ["saxpy"] and first.device == "cuda" and (first.grid, first.block) == (2, 256)
    x2, y2 = _arr(np.ones(300)), _arr(np.ones(300))
    again = k(np.float32(-1.25), x2, y2)  # other arrays of the same kind, another scalar
    assert fake.binds == ["saxpy"]  # not bound again
    assert again == first and again is not first and again.sizes is not first.sizes
    (f1, g1, b1, s1, p1), (f2, g2, b2, s2, p2) = fake.launches
    assert (f1, g1, b1, s1) == (f2, g2, b2, s2) == (f1, 2, 256, 77)
    assert p1 == [np.float32(2.5).tobytes(), _ptr(x), _ptr(y), np.int32(300).tobytes()]
    assert p2 == [np.float32(-1.25).tobytes(), _ptr(x2), _ptr(y2), np.int32(300).tobytes()]
    k(3, x, y)  # a Python int for f32: binding's conversion, per call
    assert fake.launches[-1][4][0] == np.float32(3).tobytes() and fake.binds == ["saxpy"]


@pytest.mark.parametrize("change, binds", [
    (lambda x, y: (2.0, _arr(np.ones(301)), _arr(np.ones(301))), 2),         # another n: new grid
    (lambda x, y: (2.0, FakeArray(x.host[1:]), FakeArray(y.host[1:])), 2),   # 4-byte aligned data
    (lambda x, y: (2.0, _arr(np.ones(300), np.float64), y), 2),              # dtype: binding's error
    (lambda x, y: (2.0, _arr(np.ones((300, 1))), y), 2),                     # rank: binding's error
    (lambda x, y: (2.0, FakeArray(np.ones(600, np.float32)[::2]), y), 2),    # strided: binding's error
    (lambda x, y: (2.0, np.ones(300, np.float32), y), 1),                    # numpy and CUDA mixed
    (lambda x, y: (2.0, x), 2),                                              # an argument missing
    (lambda x, y: (2.0, x, y, 4), 2),                                        # one too many
])
def test_anything_binding_decides_differently_goes_through_binding(fake, change, binds):
    k = kernc.compile(_SAXPY).saxpy
    x, y = _arr(np.arange(300)), _arr(np.zeros(300))
    k(2.0, x, y)
    args = change(x, y)
    try:
        result = k(*args)
    except KerncLaunchError:
        result = None
    assert len(fake.binds) == binds
    if result is not None:  # it launched: with what a full binding gives
        assert fake.launches[-1][4][1] == _ptr(args[1]) and fake.launches[-1][1] == result.grid
        assert result.sizes == {"n": args[1].shape[0]}


def test_misaligned_data_runs_the_unaligned_ptx_and_back(fake):
    k = kernc.compile(_SAXPY).saxpy
    x, y = _arr(np.arange(301)), _arr(np.zeros(301))
    k(2.0, x, y)
    aligned_fn = fake.launches[-1][0]
    k(2.0, FakeArray(x.host[1:]), FakeArray(y.host[1:]))
    assert fake.launches[-1][0] != aligned_fn and len(fake.loads) == 2  # the other PTX variant
    k(2.0, FakeArray(x.host[1:]), FakeArray(y.host[1:]))
    assert len(fake.binds) == 2  # prepared for the unaligned variant now
    k(2.0, FakeArray(x.host[:300]), FakeArray(y.host[:300]))
    assert len(fake.binds) == 2 and fake.launches[-1][0] != aligned_fn  # any data suits unaligned PTX


def test_bad_scalars_raise_binding_errors_on_the_fast_path(fake):
    k = kernc.compile(_SAXPY).saxpy
    x, y = _arr(np.arange(300)), _arr(np.zeros(300))
    k(2.0, x, y)
    n = len(fake.launches)
    with pytest.raises(KerncLaunchError, match="argument 'a': expected a number"):
        k("2", x, y)
    with pytest.raises(KerncLaunchError, match=re.escape("argument 'a': 1e+300 is out of range for f32")):
        k(1e300, x, y)
    assert len(fake.launches) == n  # nothing launched


def test_index_scalars_keep_their_ptx_variant(fake):
    src = """kernel k(s: f32[m] read strided(off, st), off: index, st: index, y: f32[n] write) over n {
        y = s; }"""
    k = kernc.compile(src).k
    s, y = _arr(np.arange(64)), _arr(np.zeros(8))
    k(s, 1, 2, y)
    assert k._prepared._int_scalars[0][1] == 0  # prepared for the PTX that assumes >= 0
    k(s, 3, 1, y)
    assert len(fake.binds) == 1 and fake.launches[-1][4][1:3] == [np.int32(3).tobytes(), np.int32(1).tobytes()]
    k(s, 63, -7, y)  # a negative index scalar: the PTX that does not assume >= 0
    assert len(fake.binds) == 2 and k._prepared._int_scalars[0][1] < 0
    k(s, 2, 3, y)  # the general PTX takes any values: no new binding
    assert len(fake.binds) == 2 and fake.launches[-1][4][1:3] == [np.int32(2).tobytes(), np.int32(3).tobytes()]
    k(s, 2**40, 0, y)  # beyond int32: 64-bit index arithmetic
    assert len(fake.binds) == 3 and fake.launches[-1][4][1] == np.int64(2**40).tobytes()
    for bad in (True, 2.0, np.bool_(True)):
        with pytest.raises(KerncLaunchError, match="argument 'off'"):
            k(s, bad, 1, y)


def test_index_scalars_whose_products_leave_int32_are_bound_again(fake):
    """A 32-bit prepared launch took ``st = 2**31 - 1`` (it fits int32) and ran the 32-bit PTX,
    where ``off + t*st`` wraps: such a call binds again and gets 64-bit index arithmetic."""
    src = """kernel k(s: f32[m] read strided(off, st) default -1, off: index, st: index,
                      y: f32[n] write) over n { y = s; }"""
    k = kernc.compile(src).k
    s, y = _arr(np.arange(64)), _arr(np.zeros(8))
    k(s, 1, 2, y)
    assert len(fake.binds) == 1 and fake.launches[-1][4][1] == np.int32(1).tobytes()
    bound = k._prepared._int_scalars[0][2]
    assert bound == binding.index_products_bound(64, 256) == 46341  # 46341**2 >= 2**31 > 46340**2
    k(s, 1, bound - 1, y)  # the largest stride the 32-bit binding admits stays on the fast path
    assert len(fake.binds) == 1 and fake.launches[-1][4][2] == np.int32(bound - 1).tobytes()
    k(s, 5, 2**31 - 1, y)  # fits int32, but off + t*st does not: bound again, 64-bit
    assert len(fake.binds) == 2 and fake.launches[-1][4][1:3] == [np.int64(5).tobytes(),
                                                                 np.int64(2**31 - 1).tobytes()]
    k(s, 1, 2, y)  # the 64-bit PTX takes small values too: no new binding
    assert len(fake.binds) == 2 and fake.launches[-1][4][2] == np.int64(2).tobytes()


def test_a_problem_size_argument_is_bound_again_when_it_changes(fake):
    k = kernc.compile("kernel k(n: index, y: f32[m] write indexed(i), i: u32[m] read) over n { y = 1.0; }").k
    y, i = _arr(np.zeros(1000)), _arr(np.arange(1000), np.uint32)
    assert k(300, y, i).grid == 2
    assert k(300, y, i).grid == 2 and len(fake.binds) == 1
    assert k(700, y, i).grid == 3 and len(fake.binds) == 2
    assert fake.launches[-1][1] == 3 and fake.launches[-1][4][0] == np.int32(700).tobytes()


def test_zero_init_outputs_are_cleared_on_every_call(fake):
    k = kernc.compile("kernel k(x: f32[n] read, t: f32[1] write sum) over n { t = x; }").k
    x, t = _arr(np.ones(40)), _arr([5.0])
    k(x, t)
    t.host[0] = 7.0
    k(x, t)
    assert len(fake.binds) == 1 and t.host[0] == 0.0  # (the fake launch computes nothing)


@pytest.mark.parametrize("dtype, value", [
    ("bool", True), ("i8", -5), ("u8", 250), ("i16", -30000), ("u16", 65000), ("i32", -2**31),
    ("u32", 2**32 - 1), ("i64", -2**63), ("u64", 2**64 - 1), ("f16", 0.1), ("bf16", 0.1), ("f32", 0.1),
    ("f64", 0.1), ("f32", float("inf")), ("f64", -0.0),
    ("f32", np.array(0x7FA00001, np.uint32).view(np.float32)[()]),  # a signalling NaN's payload
    ("f16", np.array(0x7D01, np.uint16).view(np.float16)[()]),
    ("bf16", np.array(0x7F81, np.uint16).view(ml_dtypes.bfloat16)[()]),
])
def test_scalars_reach_the_kernel_with_their_exact_bytes(fake, dtype, value):
    k = kernc.compile(f"kernel k(s: {dtype}, y: f32[n] write) over n {{ y = 0.0; }}").k
    y = _arr(np.zeros(4))
    for _ in range(2):  # the full binding, then the prepared path
        k(value, y)
        want = np.asarray(binding._scalar(k.signature.params[0], value)).tobytes()
        assert fake.launches[-1][4][0] == want
    assert len(fake.binds) == 1


def test_kernels_that_cannot_be_repeated_are_bound_every_call(fake):
    checked = kernc.compile("@checked kernel k(x: f32[m] read indexed(i), i: u32[n] read, y: f32[n] write) "
                            "over n { y = x; }").k
    x, i, y = _arr(np.arange(10)), _arr(np.arange(10), np.uint32), _arr(np.zeros(10))
    with pytest.raises(Exception):
        checked(x, i, y)  # the @checked reduction runs on the (fake) device arrays
    shared = kernc.compile("kernel k(x: f32[m] read shared(i), i: u32[n] read, y: f32[n] write) over n { y = x; }")
    sig = shared.k.signature
    bound = binding.bind(sig, (np.arange(10, dtype=np.float32), np.arange(10, dtype=np.uint32),
                               np.zeros(10, np.float32)), {}, lambda a: isinstance(a, np.ndarray), "cpu")
    assert cuda.prepare(None, bound, cuda.ArgPacker(sig, 32), 0, True) is None  # tables of the values
    csig = checked.signature
    cbound = binding.bind(csig, (np.arange(10, dtype=np.float32), np.arange(10, dtype=np.uint32),
                                 np.zeros(10, np.float32)), {}, lambda a: isinstance(a, np.ndarray), "cpu")
    assert cuda.prepare(None, cbound, cuda.ArgPacker(csig, 32), 0, True) is None


def test_keyword_calls_and_another_device_bind_in_full(fake):
    k = kernc.compile(_SAXPY).saxpy
    x, y = _arr(np.arange(300)), _arr(np.zeros(300))
    k(2.0, x, y)
    k(2.0, x, y=y)
    assert len(fake.binds) == 2
    k(2.0, x, y)
    assert len(fake.binds) == 2  # the keyword call did not replace the prepared launch
    fake.device = 1
    k(2.0, x, y)
    assert len(fake.binds) == 3 and len(fake.loads) == 2  # the module loaded on device 1 too


def test_the_prepared_launch_keeps_no_array_alive(fake):
    import gc
    import weakref

    k = kernc.compile(_SAXPY).saxpy
    x, y = _arr(np.arange(300)), _arr(np.zeros(300))
    k(2.0, x, y)
    refs = [weakref.ref(x), weakref.ref(y)]
    del x, y
    gc.collect()
    assert [r() for r in refs] == [None, None]


def test_scratch_buffers_are_fresh_and_distinct_on_every_call(fake):
    """``@deterministic`` sums take two scratch arrays (partials, counter) zero-filled per call; the
    prepared path allocates them per call and keeps both alive until the launch is queued (a freed
    first one could come back as the second: one address for both)."""
    k = kernc.compile("@deterministic kernel k(x: f32[n] read, t: f32[1] write sum) over n { t = x; }").k
    x, t = _arr(np.ones(40)), _arr([0.0])
    for _ in range(3):
        k(x, t)
        params = fake.launches[-1][4]
        partials, counter = (struct.unpack("<Q", p)[0] for p in params[-2:])
        assert partials != counter and {partials, counter}.isdisjoint({x.data.ptr, t.data.ptr})
    assert len(fake.binds) == 1


def test_scalars_that_are_not_numbers_go_through_binding(fake):
    """A 0-d array for a scalar (host or CUDA) is bound in full, where a CUDA one is first viewed
    as a CuPy array (``Kernel.launch``); only Python and numpy numbers take the prepared path."""
    k = kernc.compile(_SAXPY).saxpy
    x, y = _arr(np.arange(300)), _arr(np.zeros(300))
    k(2.0, x, y)
    k(np.array(1.5, np.float32), x, y)
    assert len(fake.binds) == 2 and fake.launches[-1][4][0] == np.float32(1.5).tobytes()
    k(np.float32(0.5), x, y)
    assert len(fake.binds) == 2  # (the full binding prepared the launch again)


def test_the_prepared_launch_keeps_its_module_loaded(fake):
    """It launches a raw function pointer: the module that owns it stays referenced even when the
    module caches drop it (a module is unloaded when its CuPy object goes)."""
    import gc
    import weakref

    k = kernc.compile(_SAXPY).saxpy
    x, y = _arr(np.arange(300)), _arr(np.zeros(300))
    k(2.0, x, y)
    module = k._prepared._module
    assert module.function("saxpy").ptr == k._prepared.function_ptr
    ref = weakref.ref(module)
    del module
    k._module._cuda.clear()
    cuda._modules.clear()
    gc.collect()
    assert ref() is not None
    k(2.0, x, y)
    assert len(fake.binds) == 1


_TRANSPOSE = """layout rowmaj(R, C) = (R, C):(C, 1);
kernel t(a: f32[R, C] view as rowmaj(R, C), b: f32[C, R] view as rowmaj(C, R)) over (i, j) in (R, C) {
    b[j, i] = a[i, j];
}"""


def test_mostly_empty_tiles_launch_the_unstaged_kernel_and_stay_prepared(fake):
    """A transpose with an extent of 2 fills 1/16 of each staged 32 x 32 tile: the launch runs the
    kernel compiled without kern-coalesce-views (its own PTX: no workgroup tile; one thread per
    element), and a repeated call skips binding as any prepared call does. A square one next runs
    the staged kernel again."""
    k = kernc.compile(_TRANSPOSE).t
    a, b = _arr(np.zeros((2, 1000))), _arr(np.zeros((1000, 2)))
    first = k(a, b)
    assert first.grid == -(-2000 // 256) == fake.launches[-1][1] and first.staged is False
    assert len(fake.loads) == 1 and b".shared" not in fake.loads[0]
    assert fake.binds == ["t", "t"]  # the staged kernel's binding decides, the unstaged one's launches
    again = k(_arr(np.ones((2, 1000))), _arr(np.zeros((1000, 2))))
    assert fake.binds == ["t", "t"] and fake.launches[-1][:3] == fake.launches[0][:3] and again.staged is False
    square = k(_arr(np.zeros((64, 64))), _arr(np.zeros((64, 64))))
    assert square.grid == 4 and len(fake.loads) == 2 and b".shared" in fake.loads[1] and square.staged is True
    assert k(_arr(np.ones((64, 64))), _arr(np.zeros((64, 64)))).staged is True  # the prepared fast path


def test_other_integer_scalars_are_bounded_on_the_fast_path_too(fake):
    """An ``i32`` stride reaches index arithmetic through ``index(s)``: past the bound the call
    binds again (64-bit indices) instead of reusing the 32-bit launch."""
    src = """kernel k(s: f32[m] read strided(0, index(st)) default -1, st: i32, y: f32[n] write) over n {
        y = s; }"""
    k = kernc.compile(src).k
    s, y = _arr(np.arange(64)), _arr(np.zeros(8))
    k(s, 2, y)
    assert len(fake.binds) == 1 and k._prepared._bounded == [(1, -46340, 46341)]
    k(s, np.int32(46340), y)
    assert len(fake.binds) == 1
    k(s, 46341, y)
    assert len(fake.binds) == 2 and k._prepared._bounded == []  # 64-bit: no bound left


def test_scalars_that_never_become_indices_are_not_bounded(fake):
    k = kernc.compile("kernel h(seed: u32, y: u32[n] write) over n { y = u32(thread_id) * seed; }").h
    y = _arr(np.zeros(8), np.uint32)
    k(7, y)
    assert k._prepared._bounded == [] and fake.launches[-1][4][0] == np.uint32(7).tobytes()
    k(2**32 - 1, y)  # a large seed: the same 32-bit launch, no new binding
    assert len(fake.binds) == 1 and fake.launches[-1][4][0] == np.uint32(2**32 - 1).tobytes()
