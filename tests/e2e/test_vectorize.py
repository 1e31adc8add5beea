"""16-byte vector accesses: used where the layout allows and alignment is proven, never otherwise."""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.backend import toolkit

SRC = """
kernel v(x: f32[n, 4] read as aos, y: f32[n, 4] write as aos, z: f32[n, 4] add as aos,
         p: f32[n, 3] read as caspar, q: f32[n] write, s: f32[n, 4] read as soa, w: f32[n, 4] write as soa) over n {
    y = x * 2.0;
    z += x;
    q = p[0] + p[1] + p[2];
    w = s;
}
"""


@pytest.fixture(scope="module")
def mod():
    return kernc.compile(SRC)


def _misaligned(shape):
    raw = np.zeros(int(np.prod(shape)) + 1, np.float32)
    a = raw[1:].reshape(shape)
    assert a.ctypes.data % 16
    return a


@pytest.mark.parametrize("P", [1, 31, 100])
def test_same_results_aligned_or_not_and_fewer_requests_when_aligned(mod, P):
    rng = np.random.default_rng(P)
    x = rng.standard_normal((P, 4)).astype(np.float32)
    p = rng.standard_normal((P, 4)).astype(np.float32)
    s = rng.standard_normal((4, P)).astype(np.float32)
    stats = {}
    for aligned in (True, False):
        xa = x.copy() if aligned else _misaligned((P, 4))
        xa[...] = x
        y, q, w = np.zeros((P, 4), np.float32), np.zeros(P, np.float32), np.zeros((4, P), np.float32)
        z = np.ones((P, 4), np.float32)
        stats[aligned] = mod.v(xa, y, z, p.reshape(4, P), q, s, w).stats  # Caspar's (4, P) host shape
        assert np.array_equal(y, 2 * x) and np.array_equal(z, 1 + x) and np.array_equal(w, s)
        np.testing.assert_allclose(q, p[:, 0] + p[:, 1] + p[:, 2], rtol=1e-6)
    warps = -(-P // 32)
    # x is read with one vector request per warp when aligned, four scalar requests otherwise
    assert stats[False].global_load_requests - stats[True].global_load_requests == 3 * warps


def test_vector_instructions_only_in_the_aligned_ptx(mod):
    aligned = mod._compilation.ptx(32, aligned=True)
    plain = mod._compilation.ptx(32, aligned=False)
    assert aligned.count("ld.global.v4.b32") >= 3 and "st.global.v4.b32" in aligned
    assert ".align 16" in aligned and ".align 16" not in plain
    # the soa buffers are never vectorised (their components are n elements apart)
    assert "ld.global.b32" in aligned


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
def test_ptxas_accepts_both_variants(mod):
    for aligned in (True, False):
        assert toolkit.run_ptxas(mod._compilation.ptx(32, aligned=aligned)).ok


def _aligned(n):
    raw = np.zeros(n + 4, np.float32)
    start = (-raw.ctypes.data % 16) // 4
    a = raw[start:start + n]
    assert a.ctypes.data % 16 == 0
    return a


PADDED = """
kernel per_thread(x: f32[n, 3] read as (n, 3):(4, 1), y: f32[n] write) over n {
    y = x[0] + x[1] + x[2];
}
kernel staged(x: f32[m, 3] read shared(I) as (m, 3):(4, 1), I: u32[n] read, y: f32[n] write) over n {
    y = x[0] + x[1] + x[2];
}
"""


@pytest.mark.parametrize("n", [1, 2, 33])
def test_padded_layout_reads_stay_inside_its_storage(n):
    """``(n,3):(4,1)`` keeps a padding lane per element but its storage ends with the last
    element's last component (cosize ``4n-1``): a 16-byte load of the last element read one
    element past the array (a CPU out-of-bounds error; on a GPU, past the buffer). Only storage
    that holds the padding (``caspar``: ``[4, n]``, Caspar's host shape) gets vector loads."""
    mod = kernc.compile(PADDED)
    assert "vector.load" not in mod.ir("gpu")
    x = _aligned(4 * n - 1)
    x[:] = np.arange(4 * n - 1, dtype=np.float32)
    y = np.zeros(n, np.float32)
    mod.per_thread(x, y)
    want = np.array([x[4 * t] + x[4 * t + 1] + x[4 * t + 2] for t in range(n)], np.float32)
    np.testing.assert_array_equal(y, want)
    idx = np.array([n - 1, 0, n - 1], np.uint32)
    y = np.zeros(3, np.float32)
    mod.staged(x, idx, y, m=n)
    np.testing.assert_array_equal(y, want[idx])
    caspar = kernc.compile(PADDED.replace("as (n, 3):(4, 1)", "as caspar").replace("as (m, 3):(4, 1)", "as caspar"))
    assert "vector.load" in caspar.ir("gpu")


FOLDED = """
kernel folded(xi: i32[n, 4] read as aos, ki: i32[n] read, a: i32[n, 4] write as aos,
              b: i32[n, 4] write as aos, c: i32[n, 4] write as aos, d: f32[n, 4] write as aos,
              h: f16[n, 8] write as aos, g: bf16[n, 8] write as aos) over n {
    a = (xi ^ xi) & ki;
    b = (xi - xi) + (ki + 100i32);
    c = [1i32, 2i32, 3i32, -4i32];
    d = [0.5, -2.0, 3.25, 1.0e30];
    h = f16([0.5, -2.0, 65504.0, 1.0e-7, 6.0e-8, -0.0, 3.0, 0.1]);
    g = bf16([0.5, -2.0, 3.0e38, 1.1, 1.0e30 * 1.0e30, -0.0, 3.0, 0.1]);
}
"""


def test_vector_stores_of_values_canonicalize_folded_run_on_the_cpu():
    """A stored vector that canonicalize folds (a constant, splat or not, of every element type; one
    scalar repeated, which becomes ``vector.broadcast``) runs on the CPU interpreter with numpy's
    values. These were `InterpreterUnsupportedError`s, found by a fuzzing trial."""
    import ml_dtypes

    mod = kernc.compile(FOLDED)
    gpu = mod._compilation.gpu_ir()
    # the forms this test is about are in the IR the interpreter runs
    assert "vector.broadcast" in gpu
    assert "arith.constant dense<0> : vector<4xi32>" in gpu
    assert gpu.count("arith.constant dense<[") >= 4
    n = 37
    ki = (np.arange(n, dtype=np.int32) * 7919) - 100
    xi = np.random.default_rng(0).integers(-9, 9, (n, 4)).astype(np.int32)
    out = dict(a=np.ones((n, 4), np.int32), b=np.ones((n, 4), np.int32), c=np.ones((n, 4), np.int32),
               d=np.ones((n, 4), np.float32), h=np.ones((n, 8), np.float16),
               g=np.ones((n, 8), ml_dtypes.bfloat16))
    mod.folded(xi=xi, ki=ki, **out)
    assert np.array_equal(out["a"], np.zeros((n, 4), np.int32))
    assert np.array_equal(out["b"], np.repeat((ki + 100)[:, None], 4, axis=1))
    assert np.array_equal(out["c"], np.tile(np.array([1, 2, 3, -4], np.int32), (n, 1)))
    assert np.array_equal(out["d"], np.tile(np.array([0.5, -2.0, 3.25, 1.0e30], np.float32), (n, 1)))
    want_h = np.array([0.5, -2.0, 65504.0, 1.0e-7, 6.0e-8, -0.0, 3.0, 0.1]).astype(np.float16)
    want_g = np.array([0.5, -2.0, 3.0e38, 1.1, np.inf, -0.0, 3.0, 0.1]).astype(ml_dtypes.bfloat16)
    for k, want in (("h", want_h), ("g", want_g)):
        got = out[k].view(np.uint16)
        assert np.array_equal(got, np.tile(want.view(np.uint16), (n, 1))), k


#: (dtype, components, vectors per element in the aligned PTX, the PTX load instruction)
WIDE = [
    ("f32", 8, 2, "ld.global.v4.b32"),   # 32 bytes: two 16-byte vectors
    ("f32", 12, 3, "ld.global.v4.b32"),
    ("f32", 2, 1, "ld.global.v2.b32"),   # 8 bytes: one 8-byte vector
    ("f32", 6, 3, "ld.global.v2.b32"),
    ("f16", 4, 1, "ld.global.v2.b32"),   # 8 bytes of f16 (LLVM packs pairs into b32)
    ("f64", 4, 2, "ld.global.v2.b64"),
    ("i32", 8, 2, "ld.global.v4.b32"),
]


@pytest.mark.parametrize("dtype,k,nvec,ld", WIDE)
def test_elements_of_several_or_half_vectors_are_vectorised(dtype, k, nvec, ld):
    """An element of 8 bytes, or of a multiple of 16 bytes, is read, written and added with 8- and
    16-byte vector accesses (``f32[n, 8]`` as two ``ld.global.v4``); only elements of exactly 16
    bytes were vectorised, the others issued one scalar access per component (found by a new-user
    trial). The results are the same aligned or not; aligned, each warp issues ``nvec`` requests per
    access instead of ``k``."""
    src = (f"kernel w(x: {dtype}[n, {k}] read, y: {dtype}[n, {k}] write, z: {dtype}[n, {k}] add) over n {{\n"
           f"    y = x;\n    z += x;\n}}")
    mod = kernc.compile(src)
    ptx = mod._compilation.ptx(32, aligned=True)
    assert ptx.count(ld) == 2 * nvec, ptx  # x, and z's read-modify-write
    assert ptx.count(ld.replace("ld.", "st.")) == 2 * nvec
    np_t = np.dtype({"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32}[dtype])
    P = 70
    x = (np.arange(P * k) % 61 - 30).astype(np_t).reshape(P, k)
    requests = {}
    for aligned in (True, False):
        xa = x.copy() if aligned else _misaligned_of(np_t, (P, k))
        xa[...] = x
        y = np.zeros((P, k), np_t) if aligned else _misaligned_of(np_t, (P, k))
        y[...] = 0
        z = np.ones((P, k), np_t)
        st = mod.w(xa, y, z).stats
        assert np.array_equal(y, x) and np.array_equal(z, x + np_t.type(1))
        requests[aligned] = st.global_load_requests
    warps = -(-P // 32)
    # misaligned, x is read per component (z stays aligned: its vector read-modify-write)
    assert requests[True] == 2 * nvec * warps and requests[False] == (k + nvec) * warps


def _misaligned_of(dt, shape):
    raw = np.zeros(int(np.prod(shape)) * dt.itemsize + 4, np.uint8)
    a = raw[4:].view(dt).reshape(shape)
    assert a.ctypes.data % 8
    return a


def _wide_kernel(dtype, k):
    return kernc.compile(f"kernel w(x: {dtype}[n, {k}] read, y: {dtype}[n, {k}] write, z: {dtype}[n, {k}] add) over n {{\n"
                         f"    y = x;\n    z += x;\n}}")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,k,nvec,ld", WIDE)
def test_several_or_half_vectors_on_gpu(dtype, k, nvec, ld):
    """The 8-byte and multi-vector element accesses on a GPU: the same results as numpy with
    aligned buffers (the vector path) and with buffers one element off a vector boundary (the
    run-time alignment test takes the scalar path), for every thread of several blocks."""
    import cupy as cp

    mod = _wide_kernel(dtype, k)
    np_t = np.dtype({"f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32}[dtype])
    for P in (1, 257, 4099):
        x = (np.arange(P * k) % 61 - 30).astype(np_t).reshape(P, k)
        for off in (0, 1):
            def dev(a):
                raw = cp.zeros(a.size + 1, np_t)
                d = raw[off:off + a.size].reshape(a.shape)
                d[...] = cp.asarray(a)
                return d
            xd, yd, zd = dev(x), dev(np.zeros_like(x)), dev(np.ones_like(x))
            assert (xd.data.ptr % 16 == 0) == (off == 0)  # one element off: no vector size divides it
            mod.w(xd, yd, zd)
            assert np.array_equal(yd.get(), x), (P, off)
            assert np.array_equal(zd.get(), x + np_t.type(1)), (P, off)


@pytest.mark.gpu
def test_folded_vector_constants_on_gpu():
    """The canonicalize-folded vector constants and broadcasts of :data:`FOLDED` store the same bits
    on a GPU as on the CPU interpreter."""
    import cupy as cp
    import ml_dtypes

    mod = kernc.compile(FOLDED)
    n = 300
    rng = np.random.default_rng(5)
    xi = rng.integers(-100, 100, (n, 4)).astype(np.int32)
    ki = rng.integers(-100, 100, n).astype(np.int32)
    shapes = dict(a=((n, 4), np.int32), b=((n, 4), np.int32), c=((n, 4), np.int32), d=((n, 4), np.float32),
                  h=((n, 8), np.float16), g=((n, 8), ml_dtypes.bfloat16))
    cpu = {k: np.ones(s, t) for k, (s, t) in shapes.items()}
    mod.folded(xi=xi, ki=ki, **cpu)
    gpu = {k: cp.asarray(np.ones(s, t)) for k, (s, t) in shapes.items()}  # CuPy 14 takes ml_dtypes' bfloat16
    mod.folded(xi=cp.asarray(xi), ki=cp.asarray(ki), **gpu)
    for k in shapes:
        assert np.array_equal(gpu[k].get().view(np.uint8), cpu[k].view(np.uint8)), k
