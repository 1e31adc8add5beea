"""Atomic updates of view elements at computed coordinates (issue 21 item 3): ``x.atomic(c) += v``,
``x.atomic(c) -= v``, ``x.atomic_min(c) = v``, ``x.atomic_max(c) = v``.

Semantics on the CPU interpreter against numpy's unbuffered ``ufunc.at`` (which applies updates in
index order, the order the interpreter documents for float adds), the located errors for types the
GPU has no native atomic for, and the PTX for sm_90 (``atom``/``red`` on global memory, relaxed at
device scope) assembled with ptxas.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from frontend_helpers import error_lines
from kernc.backend import toolkit

ADD_TYPES = ("i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64")
MINMAX_TYPES = ("i32", "u32", "i64", "u64")
NP = {"i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64, "f16": np.float16,
      "f32": np.float32, "f64": np.float64}


def _np(name):
    if name == "bf16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return NP[name]


def _source() -> str:
    kernels = []
    for t in ADD_TYPES:
        kernels.append(f"""
kernel add_{t}(v: {t}[n] read, key: u32[n] read, h: {t}[m] view) over n {{
    h.atomic(index(key)) += v;
}}
kernel sub_{t}(v: {t}[n] read, key: u32[n] read, h: {t}[m] view) over n {{
    h.atomic(index(key)) -= v;
}}""")
    for t in MINMAX_TYPES:
        kernels.append(f"""
kernel min_{t}(v: {t}[n] read, key: u32[n] read, h: {t}[m] view) over n {{
    h.atomic_min(index(key)) = v;
}}
kernel max_{t}(v: {t}[n] read, key: u32[n] read, h: {t}[m] view) over n {{
    h.atomic_max(index(key)) = v;
}}""")
    kernels.append("""
// 2-D view, a coordinate made of data and an item coordinate, under a condition
kernel grid(v: i32[R, C] view, lab: u8[R, C] view, h: i32[R, 4] view) over (i, j) in (R, C) {
    if v[i, j] > 0 {
        h.atomic(i, index(lab[i, j]) % 4) += v[i, j];
    }
}
// coordinates outside the view are skipped (negative, and past the extent)
kernel skip(key: i64[n] read, h: u32[8] view) over n {
    h.atomic(index(key)) += 1u32;
}
""")
    return "\n".join(kernels)


@pytest.fixture(scope="module")
def mod():
    return kernc.compile(_source(), filename="atomics.kern")


def _values(t, n, rng):
    if t in ("f16", "bf16", "f32", "f64"):
        # small integers and halves: exact in every float type, so the sum is order-independent
        return (rng.integers(-8, 9, n) * 0.5).astype(_np(t))
    info = np.iinfo(_np(t))
    if t.startswith("u"):  # values past the signed range: min/max must compare unsigned
        return rng.integers(0, int(info.max), n, dtype=_np(t), endpoint=True)
    return rng.integers(int(info.min), int(info.max), n, dtype=_np(t), endpoint=True)


@pytest.mark.parametrize("t", ADD_TYPES)
@pytest.mark.parametrize("op", ["add", "sub"])
def test_add_matches_numpy(mod, t, op):
    rng = np.random.default_rng(1)
    n, m = 3000, 7  # many items per element: the updates collide in every warp
    v, key = _values(t, n, rng), rng.integers(0, m, n).astype(np.uint32)
    h = _values(t, m, rng)
    want = h.astype(np.float64 if t in ("f16", "bf16") else h.dtype).copy()
    if t in ("f16", "bf16"):  # in the storage type, one rounding per update, in item order
        want = h.copy()
        for k, x in zip(key, v):
            want[k] = (want[k] + x if op == "add" else want[k] - x)
    else:
        (np.add if op == "add" else np.subtract).at(want, key, v)
    getattr(mod, f"{op}_{t}")(v, key, h)
    np.testing.assert_array_equal(h.astype(np.float64) if t in ("f16", "bf16") else h,
                                  want.astype(np.float64) if t in ("f16", "bf16") else want)


@pytest.mark.parametrize("t", MINMAX_TYPES)
@pytest.mark.parametrize("op", ["min", "max"])
def test_min_max_match_numpy(mod, t, op):
    rng = np.random.default_rng(2)
    n, m = 2000, 5
    v, key = _values(t, n, rng), rng.integers(0, m, n).astype(np.uint32)
    h = _values(t, m, rng)
    want = h.copy()
    (np.minimum if op == "min" else np.maximum).at(want, key, v)
    getattr(mod, f"{op}_{t}")(v, key, h)
    np.testing.assert_array_equal(h, want)


def test_float_adds_apply_in_item_order(mod):
    """f32 adds are not associative: the interpreter applies one statement's updates in increasing
    item order (``np.add.at`` order), so the result is bitwise the sequential sum."""
    rng = np.random.default_rng(3)
    n = 5000
    v = (rng.standard_normal(n) * 10.0 ** rng.integers(-4, 5, n)).astype(np.float32)
    key = rng.integers(0, 3, n).astype(np.uint32)
    h = np.zeros(3, np.float32)
    want = h.copy()
    np.add.at(want, key, v)
    mod.add_f32(v, key, h)
    assert h.tobytes() == want.tobytes()


def test_2d_conditional(mod):
    rng = np.random.default_rng(4)
    R, C = 6, 70
    v = rng.integers(-5, 6, (R, C)).astype(np.int32)
    lab = rng.integers(0, 256, (R, C)).astype(np.uint8)
    h = np.zeros((R, 4), np.int32)
    want = np.zeros((R, 4), np.int32)
    for i in range(R):
        for j in range(C):
            if v[i, j] > 0:
                want[i, lab[i, j] % 4] += v[i, j]
    mod.grid(v, lab, h)
    np.testing.assert_array_equal(h, want)


def test_out_of_range_coordinates_are_skipped(mod):
    key = np.array([-1, 0, 7, 8, 3, -100, 1 << 20, 3], np.int64)
    h = np.zeros(8, np.uint32)
    mod.skip(key, h)
    np.testing.assert_array_equal(h, np.bincount([0, 7, 3, 3], minlength=8).astype(np.uint32))


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
def test_ptx_has_device_scope_atomics_and_assembles(mod):
    ptx = mod.ptx
    for t, suffix in (("i32", "u32"), ("u32", "u32"), ("i64", "u64"), ("u64", "u64"),
                      ("f16", "noftz.f16"), ("bf16", "noftz.bf16"), ("f32", "f32"), ("f64", "f64")):
        body = ptx.split(f".entry add_{t}(", 1)[1].split(".entry", 1)[0]
        assert f"atom.relaxed.gpu.global.add.{suffix}" in body or f"red.relaxed.gpu.global.add.{suffix}" in body, t
    for op in ("min", "max"):
        for t in MINMAX_TYPES:
            s = ("s" if t.startswith("i") else "u") + t[1:]
            body = ptx.split(f".entry {op}_{t}(", 1)[1].split(".entry", 1)[0]
            assert f"atom.relaxed.gpu.global.{op}.{s}" in body or f"red.relaxed.gpu.global.{op}.{s}" in body, (op, t)
    result = toolkit.run_ptxas(ptx, arch="sm_90")
    assert result.ok, result.log


@pytest.mark.parametrize("src, message", [
    ("kernel k(v: f32[n] read, h: f32[4] view) over n { h.atomic_or(0) = v; }",
     "an atomic or of 'h' (a 'f32' view) is not supported"),
    ("kernel k(v: f16[n] read, h: f16[4] view) over n { h.atomic_and(0) = v; }",
     "an atomic and of 'h' (a 'f16' view) is not supported"),
    ("kernel k(v: u32[n] read, h: u32[4] view) over n { h.atomic_or(0) += v; }",
     "operator '+=' cannot update 'h.atomic_or(...)'; it takes '='"),
    ("kernel k(v: u32[n] read, h: u32[4] view) over n { h.atomic(0) = v; }",
     "operator '=' cannot update 'h.atomic(...)'; it takes '+=' or '-='"),
    ("kernel k(v: u32[n] read, h: u32[4] view) over n { h.atomic_min(0) += v; }",
     "operator '+=' cannot update 'h.atomic_min(...)'; it takes '='"),
    ("kernel k(v: u32[n] read, h: u32[4] view, y: u32[n] write) over n { y = h.atomic(0); }",
     "'h.atomic(...)' is an update target, not a value"),
    ("kernel k(v: f32[n] read, h: f32[4] view compute f64) over n { h.atomic(0) += v; }",
     "an atomic update of 'h' runs in its storage type 'f32'"),
    ("kernel k(v: i32[n] read, h: u32[4] view) over n { h.atomic(0) += v; }",
     "type mismatch"),
    ("@deterministic kernel k(v: f32[n] read, h: f32[4] view) over n { h.atomic(0) += v; }",
     "@deterministic cannot make 'h' reproducible"),
    ("kernel k(v: u32[n] read, h: u32[4, 4] view) over n { h.atomic(0) += v; }",
     "view 'h' has 2 dims, but 1 coordinate is given"),
])
def test_bad_atomic_updates_are_located_errors(src, message):
    lines = error_lines(src)
    assert any(message in line for line in lines), lines
    assert all(line.startswith("t.kern:1:") for line in lines), lines
