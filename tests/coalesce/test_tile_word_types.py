"""Staged tiles of 1- and 2-byte elements are free of bank conflicts too: the tile holds them as
32-bit words (the row padding works in words; with one padding byte an i8 tile had 24 conflicts per
32x33 tile), and the values come back exactly. Staged stores and staged loads, every block size."""

import numpy as np
import pytest

import kernc

#: these tests are about the staged kernel itself, at every shape (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("always_staged")

DTYPES = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "f16": np.float16,
          "f32": np.float32}
_MODS: dict = {}


def _module(dt: str, B: int):
    key = (dt, B)
    if key not in _MODS:
        _MODS[key] = kernc.compile(
            f"@block({B})\n"
            f"kernel store_t(x: {dt}[A, C] view as (A, C):(C, 1), y: {dt}[C, A] view as (C, A):(A, 1))\n"
            f"        over (a, c) in (A, C) {{ y[c, a] = x[a, c]; }}\n"
            f"kernel load_t(x: {dt}[C, A] view as (C, A):(A, 1), y: {dt}[A, C] view as (A, C):(C, 1))\n"
            f"        over (a, c) in (A, C) {{ y[a, c] = x[c, a]; }}\n")
    return _MODS[key]


@pytest.mark.parametrize("B", [64, 256, 1024])
@pytest.mark.parametrize("dt", list(DTYPES))
def test_narrow_elements_are_staged_without_bank_conflicts(dt, B):
    mod = _module(dt, B)
    info = np.iinfo(DTYPES[dt]) if dt[0] in "iu" else None
    for A, C in [(64, 64), (33, 70)]:
        x = np.arange(A * C).reshape(A, C)
        x = (x % (int(info.max) + 1) + (int(info.min) if info.min < 0 else 0)).astype(DTYPES[dt]) if info \
            else (x / 7).astype(DTYPES[dt])
        y = np.zeros((C, A), x.dtype)
        st = mod.store_t(x, y).stats
        assert y.tobytes() == np.ascontiguousarray(x.T).tobytes()
        assert st.shared_requests > 0 and st.shared_bank_conflicts == 0, (A, C, st)
        back = np.zeros((A, C), x.dtype)
        st = mod.load_t(y, back).stats
        assert back.tobytes() == x.tobytes()
        assert st.shared_requests > 0 and st.shared_bank_conflicts == 0, (A, C, st)


@pytest.mark.gpu
@pytest.mark.parametrize("dt", ["i8", "u16", "f16"])
def test_narrow_elements_transpose_on_gpu(dt):
    """The same staged kernels on a GPU (widened tile values narrowed back exactly)."""
    import cupy as cp

    mod = _module(dt, 256)
    x = (np.arange(33 * 70) % 100).astype(DTYPES[dt]).reshape(33, 70)
    y = cp.zeros((70, 33), x.dtype)
    mod.store_t(cp.asarray(x), y)
    back = cp.zeros((33, 70), x.dtype)
    mod.load_t(y, back)
    assert y.get().tobytes() == np.ascontiguousarray(x.T).tobytes()
    assert back.get().tobytes() == x.tobytes()


_COMPUTE_F64 = """
kernel st(a: f32[R, C] view, b: f32[C, R] view compute f64) over (i, j) in (R, C) { b[j, i] = f64(a[i, j]) * 1.1 + 0.3; }
kernel ld(a: f32[C, R] view compute f64, b: f32[R, C] view) over (i, j) in (R, C) { b[i, j] = f32(a[j, i] * 1.1 + 0.3); }
kernel h(a: f16[R, C] view compute f64, b: f16[C, R] view compute f64) over (i, j) in (R, C) { b[j, i] = a[i, j] * 1.1; }
"""


def test_compute_f64_views_are_staged_in_their_storage_type():
    """A ``compute f64`` view over f32 (or f16) storage converts its values to or from the storage
    type anyway: the tile holds them there (an f64 tile doubled the shared memory and took two
    wavefronts per request, a bank conflict each), with results equal bit for bit."""
    staged, naive = kernc.compile(_COMPUTE_F64), kernc.compile(_COMPUTE_F64, coalesce=False)
    gpu_ir = staged.ir("gpu")
    assert "xf64, #gpu.address_space<workgroup>" not in gpu_ir and "xf32, #gpu.address_space<workgroup>" in gpu_ir
    a = np.arange(33 * 70, dtype=np.float32).reshape(33, 70) / 7
    cases = [("st", a, (70, 33), np.float32), ("ld", np.ascontiguousarray(a.T), (33, 70), np.float32),
             ("h", a.astype(np.float16), (70, 33), np.float16)]
    for name, x, shape, dt in cases:
        got, want = np.zeros(shape, dt), np.zeros(shape, dt)
        st = staged[name](x, got).stats
        naive[name](x, want)
        assert got.tobytes() == want.tobytes(), name
        assert st.shared_requests > 0 and st.shared_bank_conflicts == 0, (name, st)
