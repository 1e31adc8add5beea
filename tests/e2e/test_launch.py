"""Launch validation (both devices share ``backend/binding.py``) and size binding, on the CPU path."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import kernc
from conftest import compiled_example
from kernc import KerncLaunchError, KerncRuntimeError

f32 = np.float32


@pytest.fixture(scope="module")
def saxpy():
    return compiled_example("saxpy").saxpy


@pytest.fixture(scope="module")
def mod2():
    return kernc.compile(
        """
        kernel explicit(y: f32[m] write, c: i8, k: u16) over P {
            y = f32(c) + f32(k);
        }
        kernel soa(v: f32[n, 3] read as soa, w: f32[n, 3] write as aos) over n {
            w = v * 2.0;
        }
        kernel gather(x: f32[m] read indexed(idx), idx: u32[n] read, y: f32[n] write) over n {
            y = x;
        }
        """
    )


def test_ok(saxpy):
    x, y = np.ones(10, f32), np.zeros(10, f32)
    res = saxpy(f32(3), x, y)
    assert res.sizes == {"n": 10} and np.all(y == 3)


@pytest.mark.parametrize("make,message", [
    (lambda: (2.0, np.ones(10, np.float64), np.ones(10, f32)), "argument 'x': expected dtype float32 (f32), got float64"),
    (lambda: (2.0, np.ones(10, f32), np.ones(9, f32)), "argument 'y': size 'n' is 9 here but 10 from 'x'"),
    (lambda: (2.0, np.ones((10, 2), f32)[:, 0], np.ones(10, f32)), "argument 'x': the array is not C-contiguous"),
    (lambda: (2.0, np.ones((2, 5), f32), np.ones(10, f32)), "argument 'x': expected a 1-D array of shape (n)"),
    (lambda: (2.0, [1.0, 2.0], np.ones(2, f32)), "argument 'x': expected a numpy array, got list"),
    (lambda: ("2", np.ones(2, f32), np.ones(2, f32)), "argument 'a': expected a number"),
    (lambda: (2.0, np.ones(2, f32)), "missing argument 'y'"),
    (lambda: (2.0, np.ones(2, f32), np.ones(2, f32), 4), "takes 3 positional arguments"),
])
def test_bad_arguments(saxpy, make, message):
    with pytest.raises(KerncLaunchError) as info:
        saxpy(*make())
    assert message in str(info.value)


def test_unknown_keyword(saxpy):
    with pytest.raises(KerncLaunchError, match="has no parameter 'z'"):
        saxpy(2.0, np.ones(2, f32), np.ones(2, f32), z=1)


def test_explicit_problem_size_and_scalar_ranges(mod2):
    y = np.zeros(8, f32)
    mod2.explicit(y, -3, 40000, P=5)
    assert np.array_equal(y, np.array([39997] * 5 + [0] * 3, f32))
    with pytest.raises(KerncLaunchError, match="size 'P' is not bound"):
        mod2.explicit(y, 1, 1)
    with pytest.raises(KerncLaunchError, match="argument 'c': 200 is out of range for i8"):
        mod2.explicit(y, 200, 1, P=1)
    with pytest.raises(KerncLaunchError, match="argument 'k': -1 is out of range for u16"):
        mod2.explicit(y, 1, -1, P=1)
    with pytest.raises(KerncLaunchError, match="argument 'c': expected an integer"):
        mod2.explicit(y, 1.5, 1, P=1)


def test_out_of_bounds_problem_size_is_a_launch_error(mod2):
    """P = 5 threads writing a 4-element sequential output: refused at launch on both devices (it
    used to reach the CPU interpreter's out-of-bounds check, and a GPU unchecked)."""
    y = np.zeros(4, f32)
    with pytest.raises(KerncLaunchError, match="argument 'y': thread t writes element t, so the buffer "
                                               "needs at least P = 5 elements"):
        mod2.explicit(y, 1, 1, P=5)


def test_out_of_bounds_strided_access_is_caught_on_cpu():
    """A strided element outside the buffer is found by the CPU interpreter (the launch cannot
    know where ``off + t*s`` lands)."""
    mod = kernc.compile("kernel k(x: f32[m] read strided(off, s), off: index, s: index, "
                        "y: f32[n] write) over n { y = x; }")
    with pytest.raises(KerncRuntimeError, match="buffer 'x'.*thread 3.*index 9"):
        mod.k(np.zeros(8, f32), 3, 2, np.zeros(4, f32))


def test_soa_and_aos_storage_shapes(mod2):
    v = np.arange(12, dtype=f32).reshape(3, 4)       # soa: (3, n)
    w = np.zeros((4, 3), f32)                         # aos: (n, 3)
    mod2.soa(v, w)
    assert np.array_equal(w, 2 * v.T)
    with pytest.raises(KerncLaunchError, match=r"argument 'w': size 'n' is 3 here but 4"):
        mod2.soa(v, np.zeros((3, 3), f32))
    with pytest.raises(KerncLaunchError, match=r"argument 'v': dimension 0 must be 3, got 4"):
        mod2.soa(np.zeros((4, 4), f32), w)


def test_gather_with_bad_index_names_buffer_thread_and_index(mod2):
    x = np.arange(5, dtype=f32)
    idx = np.array([4, 0, 7, 1], np.uint32)
    y = np.zeros(4, f32)
    with pytest.raises(KerncLaunchError) as info:
        mod2.gather(x, idx, y)
    msg = str(info.value)
    assert "'idx'" in msg and "'x'" in msg and "entry 2 is 7" in msg
    idx[2] = 2
    mod2.gather(x, idx, y)
    assert np.array_equal(y, np.array([4, 0, 2, 1], f32))


def test_unsigned_index_above_2_31_is_not_negative(mod2):
    """I[t] is zero-extended: 0x80000000 is a huge index (out of bounds), not -2^31."""
    x = np.arange(5, dtype=f32)
    with pytest.raises(KerncLaunchError, match="entry 0 is 2147483648"):
        mod2.gather(x, np.array([2**31], np.uint32), np.zeros(1, f32))


def test_repr_and_missing_kernel(mod2):
    assert "explicit(y: f32[m] write, c: i8, k: u16) over P, block 256" in repr(mod2.explicit)
    with pytest.raises(AttributeError, match="no kernel named 'nope'"):
        mod2.nope


def test_index_values_are_checked_before_the_launch_on_cpu(mod2):
    """An index past the target's element count is a launch error naming the index param."""
    x = np.arange(5, dtype=f32)
    with pytest.raises(KerncLaunchError, match=r"argument 'idx': entry 2 is 9, but 'x' \(indexed\(idx\)\) has 5 elements"):
        mod2.gather(x, np.array([4, 0, 9, 1], np.uint32), np.zeros(4, f32))


_SPREAD = kernc.compile("kernel k(x: f32[n] read as (n):(2), y: f32[n] write) over n { y = x; }")


def test_non_compact_layout_storage_is_size_checked():
    """``as (n):(2)`` stores ``2n-1`` elements. That storage dim is the polynomial ``-1+2*n``, which
    binding could not parse (a ValueError escaped); an array that is too short is a launch error,
    an exact one runs."""
    y = np.zeros(4, np.float32)
    with pytest.raises(KerncLaunchError, match=r"argument 'x': layout \(n\):\(2\) needs 7 elements, "
                                               r"the array has 6"):
        _SPREAD.k(np.arange(6, dtype=np.float32), y)
    _SPREAD.k(np.arange(7, dtype=np.float32), y)
    assert y.tolist() == [0.0, 2.0, 4.0, 6.0]


@pytest.mark.parametrize("storage, layout, compact", [
    (["n"], "(n):(1)", True), ([3, "n"], "(n,3):(1,n)", True), (["n", 3], "(n,3):(3,1)", True),
    (["m", "n"], "(m,n):(n,1)", True), (["n", "m"], "(m,n):(n,1)", False),
    (["-1+2*n"], "(n):(2)", False), ([7], "(4):(2)", False), (["2*n"], "(2*n):(1)", True),
])
def test_only_compact_storage_skips_the_cosize_check(storage, layout, compact):
    """The launch skips the separate size check only where the checked dims imply it (compact
    storage, whose dims given as expressions are checked exactly)."""
    from kernc.backend.binding import _compact_storage
    from kernc.dialect.strided import StridedLayout

    assert _compact_storage(storage, StridedLayout.parse(layout)) is compact


_SCALAR_KERNELS = {dt: kernc.compile(f"kernel k(s: {dt}, y: f64[n] write) over n {{ y = f64(s); }}")
                   for dt in ("f16", "bf16", "f32", "f64")}


@pytest.mark.parametrize("dtype, value, expected", [
    # 2**60 + 2**36 + 1 is just above an f32 tie; through a double it became the tie (2**60)
    ("f32", 2**60 + 2**36 + 1, 2.0**60 + 2.0**37),
    ("f64", 2**60 + 2**36 + 1, float(2**60 + 2**36)),
    ("f16", 65519, 65504.0),
    ("bf16", 2**63, 2.0**63),  # was a TypeError from ml_dtypes
    ("bf16", np.uint64(2**64 - 1), 2.0**64),
    ("bf16", 257, 256.0), ("bf16", 259, 260.0), ("bf16", -(2**70) - 2**62 - 1, -(2.0**70) - 2.0**63),
])
def test_integer_scalars_round_once_to_float_params(dtype, value, expected):
    y = np.zeros(1)
    _SCALAR_KERNELS[dtype].k(value, y)
    assert y[0] == expected


@pytest.mark.parametrize("dtype, value, message", [
    ("f16", 65520, "argument 's': 65520 is out of range for f16"),
    ("f32", np.timedelta64(3), "argument 's': expected a number (f32), got timedelta64"),
    ("f64", np.datetime64("2026-01-01"), "argument 's': expected a number (f64), got datetime64"),
])
def test_float_scalar_errors(dtype, value, message):
    with pytest.raises(KerncLaunchError, match=re.escape(message)):
        _SCALAR_KERNELS[dtype].k(value, np.zeros(1))


def test_time_values_are_no_integers():
    m = kernc.compile("kernel k(s: i32, y: i32[n] write) over n { y = s; }")
    with pytest.raises(KerncLaunchError, match="expected a number"):
        m.k(np.timedelta64(3), np.zeros(1, np.int32))


@pytest.mark.parametrize("length, error", [
    (8, None), (9, "dimension 0 must be 2*n = 8, got 9"), (7, "dimension 0 must be 2*n = 8, got 7"),
])
def test_dims_given_as_expressions_are_checked_exactly(length, error):
    """``f32[2*n]`` declares ``2n`` elements: a longer array was accepted (only a >= check ran)."""
    m = kernc.compile("kernel k(x: f32[2*n] read, y: f32[n] write) over n { y = x; }")
    x, y = np.arange(length, dtype=np.float32), np.zeros(4, np.float32)
    if error is None:
        m.k(x, y)
        assert y.tolist() == [0.0, 1.0, 2.0, 3.0]
    else:
        with pytest.raises(KerncLaunchError, match=re.escape(f"argument 'x': {error}")):
            m.k(x, y)


@pytest.mark.parametrize("value", [np.float64(1.5), np.float32(1.5), 1.5])
def test_non_integer_scalar_message_names_the_value_alike(value):
    """np.float64 (a Python float subclass) was shown as ``float64 np.float64(1.5)``."""
    m = kernc.compile("kernel k(s: i32, y: i32[n] write) over n { y = s; }")
    with pytest.raises(KerncLaunchError, match=re.escape("argument 's': expected an integer (i32), got float 1.5")):
        m.k(value, np.zeros(1, np.int32))


@pytest.mark.parametrize("y_len, m, error", [
    (5, None, "argument 'y': thread t writes element t, so the buffer needs at least P = 10 elements "
              "(the problem size), it has 5"),
    (10, None, None), (12, None, None),
])
def test_sequential_buffers_shorter_than_the_problem_are_launch_errors(y_len, m, error):
    """``y: f32[m] write`` over ``n`` with ``m < n`` passed the checks; the CPU run then stopped with
    an out-of-bounds store (a GPU run would write past the buffer)."""
    mod = kernc.compile("kernel k(x: f32[n] read, y: f32[m] write) over n { y = x; }")
    x, y = np.arange(10, dtype=np.float32), np.zeros(y_len, np.float32)
    if error is None:
        mod.k(x, y)
        assert y[:10].tolist() == x.tolist() and not y[10:].any()
    else:
        with pytest.raises(KerncLaunchError, match=re.escape(error)):
            mod.k(x, y)


def test_problem_size_larger_than_a_sequential_read_is_a_launch_error():
    mod = kernc.compile("kernel k(x: f32[n] read, y: f32[n] write) over m { y = x; }")
    with pytest.raises(KerncLaunchError, match=re.escape("argument 'x': thread t reads element t, so the "
                                                         "buffer needs at least P = 20 elements")):
        mod.k(np.ones(10, np.float32), np.zeros(10, np.float32), m=20)
    mod.k(np.ones(10, np.float32), np.zeros(10, np.float32), m=0)  # nothing to run: fine


def test_an_argument_named_device_is_an_argument():
    """``Kernel.__call__`` took ``device=`` as its own option, so a kernel argument or size named
    ``device`` could not be passed by name (a numpy ValueError, or "unknown device '3'"). A kernel
    name now wins; :meth:`Kernel.launch` picks the device for such kernels."""
    mod = kernc.compile(
        "kernel k(device: f32[n] read, y: f32[n] write) over n { y = device * 2.0; }\n"
        "kernel s(device: index, y: f32[n] write) over n { y = f32(device); }\n"
    )
    x = np.arange(5, dtype=f32)
    y = np.zeros(5, f32)
    mod.k(device=x, y=y)
    assert y.tolist() == (2 * x).tolist()
    mod.s(device=3, y=y)
    assert y.tolist() == [3.0] * 5
    res = mod.s.launch((), {"device": 4, "y": y}, "cpu")
    assert res.device == "cpu" and y.tolist() == [4.0] * 5
    with pytest.raises(KerncLaunchError, match="unknown device 'gpu'"):
        mod.s.launch((), {"device": 4, "y": y}, "gpu")


def test_device_option_still_picks_the_device(saxpy):
    x, y = np.ones(4, f32), np.zeros(4, f32)
    assert saxpy(2.0, x, y, device="cpu").device == "cpu"
    with pytest.raises(KerncLaunchError, match="unknown device 'tpu'"):
        saxpy(2.0, x, y, device="tpu")


def test_kernels_by_name_even_when_an_attribute_has_the_name():
    """A kernel named ``ptx`` or ``ir`` compiled, but ``mod.ptx`` is the PTX text and ``mod.ir`` a
    method: there was no way to call it."""
    mod = kernc.compile("kernel ptx(x: f32[n] read, y: f32[n] write) over n { y = x + 1.0; }\n"
                        "kernel ir(y: f32[n] write) over n { y = 2.0; }\n")
    y = np.zeros(3, f32)
    mod["ptx"](np.ones(3, f32), y)
    assert y.tolist() == [2.0, 2.0, 2.0]
    mod["ir"](y)
    assert y.tolist() == [2.0, 2.0, 2.0] and isinstance(mod.ptx, str) and ".entry ptx" in mod.ptx
    with pytest.raises(KeyError, match=r"no kernel named 'nope' \(kernels: ptx, ir\)"):
        mod["nope"]


def test_source_must_be_text_and_a_byte_order_mark_is_dropped():
    with pytest.raises(TypeError, match="must be a str, got bytes .decode bytes first"):
        kernc.compile(b"kernel k(y: f32[n] write) over n { y = 1.0; }")
    with pytest.raises(TypeError, match="must be a str, got NoneType"):
        kernc.compile(None)
    mod = kernc.compile("\ufeffkernel k(y: f32[n] write) over n { y = 1.0; }")
    y = np.zeros(2, f32)
    mod.k(y)
    assert y.tolist() == [1.0, 1.0]


def test_filenames_and_paths_of_the_wrong_type():
    src = "kernel k(y: f32[n] write) over n { y = 1.0; }"
    for bad in (None, b"a.kern"):
        with pytest.raises(TypeError, match="filename must be a str"):
            kernc.compile(src, filename=bad)
    with pytest.raises(TypeError, match="path must be a str, bytes or os.PathLike, got int"):
        kernc.compile_file(0)  # was read as file descriptor 0 (stdin), then closed


def test_compile_file_takes_bytes_paths(tmp_path):
    path = tmp_path / "k.kern"
    path.write_text("kernel k(y: f32[n] write) over n { y = 1.0 }")
    with pytest.raises(kernc.CompileError) as info:
        kernc.compile_file(os.fsencode(path))
    assert str(info.value).startswith(f"{path}:1:")


def test_a_kernel_argument_named_self_can_be_passed_by_keyword():
    """Found by a trial: Kernel.__call__(self, *args, **kwargs) took `self=` as its own argument."""
    m = kernc.compile("kernel k(self: f32, y: f32[n] write) over n { y = self; }")
    y = np.zeros(3, np.float32)
    m.k(self=2.5, y=y)
    assert y.tolist() == [2.5, 2.5, 2.5]
