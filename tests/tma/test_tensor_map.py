"""backend/tensor_map.py: the driver's documented limits checked before cuTensorMapEncodeTiled (a
stand-in driver records whether it was called), the arguments it receives, its failure as a
KerncLaunchError naming the parameter and cuGetErrorString's reason; a gpu-marked real encoding."""

from __future__ import annotations

import types

import pytest

from kernc.backend.tensor_map import MAP_BYTES, TensorMap, check, encode
from kernc.support.errors import KerncLaunchError
from tensor_core_helpers import sm90_cupy


def _enum(*names):
    return types.SimpleNamespace(**{n: n for n in names})


class _Driver:
    """cuda.bindings.driver's two functions and enums as far as encode uses them."""

    CUtensorMapDataType = _enum(*(f"CU_TENSOR_MAP_DATA_TYPE_{t}" for t in (
        "UINT8", "UINT16", "FLOAT16", "BFLOAT16", "UINT32", "INT32", "FLOAT32", "UINT64", "INT64", "FLOAT64")))
    CUtensorMapInterleave = _enum("CU_TENSOR_MAP_INTERLEAVE_NONE")
    CUtensorMapSwizzle = _enum(*(f"CU_TENSOR_MAP_SWIZZLE_{s}" for s in ("NONE", "32B", "64B", "128B")))
    CUtensorMapL2promotion = _enum("CU_TENSOR_MAP_L2_PROMOTION_L2_128B")
    CUtensorMapFloatOOBfill = _enum("CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA")

    cuuint64_t = type("cuuint64_t", (int,), {})
    cuuint32_t = type("cuuint32_t", (int,), {})

    def __init__(self, err=0):
        self.calls, self.err = [], err

    def cuTensorMapEncodeTiled(self, *args):
        self.calls.append(args)
        return self.err, bytes(range(MAP_BYTES))

    def cuGetErrorString(self, err):
        return 0, b"invalid argument"


GOOD = TensorMap("f16", dims=(200, 100), strides=(400,), box=(64, 64), swizzle=128)


def test_a_good_map_is_encoded_with_the_driver_arguments():
    d = _Driver()
    assert encode(GOOD, 0x10000, "a", "gemm", driver=d) == bytes(range(MAP_BYTES))
    (args,) = d.calls
    assert all(type(x) is _Driver.cuuint64_t for x in args[3] + args[4])
    assert all(type(x) is _Driver.cuuint32_t for x in args[5] + args[6])
    assert args[:7] == ("CU_TENSOR_MAP_DATA_TYPE_FLOAT16", 2, 0x10000, [200, 100], [400], [64, 64], [1, 1])
    assert args[7:] == ("CU_TENSOR_MAP_INTERLEAVE_NONE", "CU_TENSOR_MAP_SWIZZLE_128B",
                        "CU_TENSOR_MAP_L2_PROMOTION_L2_128B", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE")
    assert GOOD.box_bytes == 8192


BAD = [
    (dict(dims=(1, 2, 3, 4, 5, 6), strides=(16,) * 5, box=(8,) * 6), "rank 6 is not in 1..5"),
    (dict(strides=(402,)), "the byte stride of dimension 1 is 402 \\(the stride between rows; dimensions innermost first\\): it must be a positive multiple of 16"),
    (dict(strides=(1 << 40,)), "the byte stride of dimension 1 is 1099511627776 \\(the stride between rows; .* below 2\\^40"),
    (dict(box=(64, 257)), "box dimension 1 is 257, not in 1..256"),
    (dict(box=(64, 0)), "box dimension 1 is 0"),
    (dict(box=(128, 64)), "the inner box dimension is 256 bytes, more than the 128-byte swizzle span"),
    (dict(box=(12, 64), swizzle=0), "the inner box dimension is 24 bytes, not a multiple of 16"),
    (dict(element_strides=(1, 9)), "element stride 1 is 9, not in 1..8"),
    (dict(element_strides=(0, 1)), "element stride 0 is 0"),
    (dict(dims=(0, 100)), "dimension 0 has 0 elements"),
    (dict(dims=((1 << 32) + 1, 100)), "dimension 0 has 4294967297 elements, not in 1..2\\^32"),
    (dict(swizzle=96), "swizzle 96 is not 0, 32, 64 or 128"),
    (dict(dtype="i32", box=(16, 64), oob="nan"), "the NaN out-of-bounds fill needs a float type"),
    (dict(strides=(400, 16)), "strides has 2 entries, the rank 2 needs 1"),
]


@pytest.mark.parametrize("change, message", BAD)
def test_a_limit_broken_is_named_before_the_driver_is_called(change, message):
    d = _Driver()
    tm = TensorMap(**{**GOOD.__dict__, **change})
    with pytest.raises(KerncLaunchError, match="kernel 'gemm', tensor map parameter 'b': " + message):
        encode(tm, 0x10000, "b", "gemm", driver=d)
    assert d.calls == []


def test_a_misaligned_global_address():
    with pytest.raises(KerncLaunchError, match="tensor map parameter 'a': the global address 0x10008 is not "
                                               "16-byte aligned"):
        check(GOOD, 0x10008, "a", "gemm")


def test_a_driver_failure_names_the_parameter_and_the_reason():
    with pytest.raises(KerncLaunchError, match="kernel 'gemm', tensor map parameter 'a': cuTensorMapEncodeTiled "
                                               "failed: invalid argument"):
        encode(GOOD, 0x10000, "a", "gemm", driver=_Driver(err=1))


def test_the_real_bindings_take_the_arguments():
    """Regression: cuda.bindings' cuTensorMapEncodeTiled refuses Python ints for boxDim ("Cannot
    convert int to cuuint32_t"); with the wrappers the call gets as far as the driver (absent here:
    the library is not found, or on a machine with one, it encodes)."""
    driver = pytest.importorskip("cuda.bindings.driver")
    try:
        encode(GOOD, 0x10000, "a", "gemm", driver=driver)
    except TypeError as err:
        pytest.fail(f"the bindings refused the arguments: {err}")
    except KerncLaunchError:
        pass  # a driver that is there and refuses the (host) address: the arguments converted
    except Exception as err:  # noqa: BLE001 -- no driver library on this machine
        assert "driver" in str(err).lower() or "cuda" in str(err).lower(), err


@pytest.mark.gpu
def test_the_driver_encodes_a_map_of_a_device_array():
    cp = sm90_cupy()
    a = cp.zeros((100, 200), cp.float16)
    raw = encode(GOOD, a.data.ptr, "a", "gemm")
    assert len(raw) == MAP_BYTES and raw != bytes(MAP_BYTES)
