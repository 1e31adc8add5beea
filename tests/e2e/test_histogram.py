"""``examples/histogram.kern`` beyond the generic example sizes (``test_examples.py``): equal bytes
(every update one bin: exact), the counters (one global atomic per item), and the PTX."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import compiled_example
from kernc.backend import toolkit


def test_signature():
    sig = compiled_example("histogram").kernels["histogram"].signature
    assert [(p.name, p.dtype, [str(d) for d in p.dims]) for p in sig.params] == [
        ("data", "u8", ["n"]), ("hist", "u32", ["256"])]


@pytest.mark.parametrize("byte", [0, 255])
def test_2_16_equal_bytes_are_counted_exactly(byte):
    n = 1 << 16
    data = np.full(n, byte, np.uint8)
    hist = np.zeros(256, np.uint32)
    result = compiled_example("histogram").histogram(data, hist)
    want = np.zeros(256, np.uint32)
    want[byte] = n
    np.testing.assert_array_equal(hist, want)
    assert result.stats.global_atomics == n


def test_all_byte_values():
    data = np.repeat(np.arange(256, dtype=np.uint8), np.arange(256))[::-1].copy()
    hist = np.zeros(256, np.uint32)
    compiled_example("histogram").histogram(data, hist)
    np.testing.assert_array_equal(hist, np.arange(256, dtype=np.uint32))


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
def test_ptx_is_one_device_scope_atomic_per_item():
    ptx = compiled_example("histogram").ptx
    assert "atom.relaxed.gpu.global.add.u32" in ptx or "red.relaxed.gpu.global.add.u32" in ptx
    assert ptx.count("ld.global.b8") == 1  # the byte is read once, no u32 index buffer
    assert ptx.count("atom.") + ptx.count("red.") == 1
    result = toolkit.run_ptxas(ptx, arch="sm_90")
    assert result.ok, result.log
