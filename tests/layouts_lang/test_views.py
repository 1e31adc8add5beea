"""`view` params and N-D problems, end to end on the CPU interpreter (language.md sections 1-3)."""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from helpers import launch
from kernc.support.errors import CompileError, KerncRuntimeError

NDIM = """
kernel coords3(y: i64[A, B, C] view, t: i64[A, B, C] view, p: i64[1] view) over (i, j, k) in (A, B, C) {
    y[i, j, k] = i64(i * 10000 + j * 100 + k);
    t[i, j, k] = i64(thread_id);
    if thread_id == 0 { p[0] = i64(problem_size); }
}
kernel static2(y: i32[4, 8] view) over (i, j) in (4, 8) {
    y[i, j] = i32(i * 8 + j);
}
kernel one(y: f32[n] view, x: f32[n] view) over (i) in (n) {
    y[i] = 2.0 * x[i];
}
"""


@pytest.fixture(scope="module")
def nd():
    return kernc.compile(NDIM)


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 5), (3, 1, 70), (5, 7, 33), (0, 4, 4)])
def test_nd_coordinates_last_fastest(nd, shape):
    A, B, C = shape
    y = np.full(shape, -1, np.int64)
    t = np.full(shape, -1, np.int64)
    p = np.zeros(1, np.int64)
    res = launch(nd, "coords3", y, t, p)
    i, j, k = np.indices(shape)
    assert res.problem_size == A * B * C
    assert np.array_equal(y, i * 10000 + j * 100 + k)
    # consecutive threads get consecutive k (the last coordinate), so a warp walks a row
    assert np.array_equal(t.reshape(-1), np.arange(A * B * C))
    if A * B * C:
        assert p[0] == A * B * C


def test_static_extents_and_1d_form(nd):
    y = np.zeros((4, 8), np.int32)
    assert launch(nd, "static2", y).problem_size == 32
    assert np.array_equal(y, np.arange(32, dtype=np.int32).reshape(4, 8))
    x = np.arange(300, dtype=np.float32)
    z = np.zeros(300, np.float32)
    assert launch(nd, "one", z, x).problem_size == 300
    assert np.array_equal(z, 2 * x)
    assert nd.one.signature.problem_size == "n"          # 1-D: a plain size symbol, as `over n`
    assert nd.coords3.signature.problem_size == "A*B*C"  # N-D: the product of the extents


LAYOUTS = """
layout nhwc(N, H, W, C) = (N, H, W, C):(H * W * C, W * C, C, 1);
layout colmaj(R, C) = (R, C):(1, R);
kernel layouts(a: f32[R, C] view as colmaj(R, C), b: f32[R, C] view as soa, c: f32[4, 2] view as (4, 2):(1, 4),
               d: f32[N, H, W, Q] view as nhwc(N, H, W, Q), e: f32[R, C] view,
               out: f32[R, C, 4] view) over (i, j) in (R, C) {
    out[i, j, 0] = a[i, j];
    out[i, j, 1] = b[i, j];
    out[i, j, 2] = c[i % 4, j % 2];
    out[i, j, 3] = d[i % N, j % H, (i + j) % W, 1] + e[i, j];
}
"""


def test_view_layouts_named_literal_static_and_products():
    mod = kernc.compile(LAYOUTS)
    sig = {p.name: p for p in mod.layouts.signature.params}
    assert sig["a"].layout == "(R,C):(1,R)" and sig["a"].storage_shape == ["C", "R"]
    assert sig["c"].layout == "(4,2):(1,4)" and sig["c"].storage_shape == [2, 4]
    assert sig["d"].layout == "(N,H,W,Q):(H*Q*W,Q*W,Q,1)"
    assert sig["e"].layout == "(R,C):(C,1)"  # a view without `as` is row-major
    rng = np.random.default_rng(0)
    R, C = 5, 6
    A = rng.standard_normal((R, C)).astype(np.float32)
    B = rng.standard_normal((R, C)).astype(np.float32)
    Cm = rng.standard_normal((4, 2)).astype(np.float32)
    D = rng.standard_normal((2, 3, 4, 3)).astype(np.float32)
    E = rng.standard_normal((R, C)).astype(np.float32)
    out = np.zeros((R, C, 4), np.float32)
    launch(mod, "layouts", np.ascontiguousarray(A.T), np.ascontiguousarray(B.T),
           np.ascontiguousarray(Cm.T), D, E, out)
    i, j = np.indices((R, C))
    assert np.array_equal(out[..., 0], A)
    assert np.array_equal(out[..., 1], B)
    assert np.array_equal(out[..., 2], Cm[i % 4, j % 2])
    assert np.array_equal(out[..., 3], D[i % 2, j % 3, (i + j) % 4, 1] + E)


CHECKED = """
kernel checked(x: f32[R, C] view default -7.5, y: f32[M, N] view, ok: u8[M, N] view,
               w: f32[R, C] view, d: index) over (i, j) in (M, N) {
    let r = i - d;
    let c = j - d;
    y[i, j] = x.checked(r, c);
    ok[i, j] = select(x.in_bounds(r, c), 1u8, 0u8);
    w.checked(r, c) = f32(i * 100 + j);
}
kernel zero_default(x: f16[n] view, y: f32[m] view) over (i) in (m) {
    y[i] = x.checked(i - 2) + 0.5;
    y[i] += x.checked(i);
}
kernel unchecked(x: f32[n] view, y: f32[m] view) over (i) in (m) {
    y[i] = x[i];
}
"""


@pytest.fixture(scope="module")
def chk():
    return kernc.compile(CHECKED)


@pytest.mark.parametrize("d", [0, 2, -3])
def test_checked_reads_writes_and_in_bounds(chk, d):
    R, C, M, N = 4, 5, 9, 7
    x = np.arange(R * C, dtype=np.float32).reshape(R, C)
    y = np.zeros((M, N), np.float32)
    ok = np.zeros((M, N), np.uint8)
    w = np.full((R, C), np.nan, np.float32)
    launch(chk, "checked", x, y, ok, w, d)
    i, j = np.indices((M, N))
    r, c = i - d, j - d
    inside = (r >= 0) & (r < R) & (c >= 0) & (c < C)   # per dimension: (0, C) is not (1, 0)
    assert np.array_equal(ok, inside.astype(np.uint8))
    want = np.where(inside, x[np.clip(r, 0, R - 1), np.clip(c, 0, C - 1)], np.float32(-7.5))
    assert np.array_equal(y, want)
    ww = np.full((R, C), np.nan, np.float32)
    ww[r[inside], c[inside]] = (i * 100 + j)[inside]
    np.testing.assert_array_equal(w, ww)               # out-of-bounds writes are dropped


def test_checked_default_zero_and_compute_type(chk):
    x = np.array([1.5, -2.0, 3.25], np.float16)
    y = np.zeros(6, np.float32)
    launch(chk, "zero_default", x, y)
    xs = np.concatenate([x.astype(np.float32), np.zeros(5, np.float32)])
    want = np.array([0.5 + (xs[k - 2] if k >= 2 else 0) + xs[k] for k in range(6)], np.float32)
    assert np.array_equal(y, want)


def test_unchecked_out_of_bounds_faults_on_the_cpu(chk):
    y = np.zeros(5, np.float32)
    launch(chk, "unchecked", np.ones(5, np.float32), y)
    assert np.array_equal(y, np.ones(5, np.float32))
    with pytest.raises(KerncRuntimeError, match="x"):
        launch(chk, "unchecked", np.ones(3, np.float32), np.zeros(5, np.float32))


def test_view_update_operators_and_loops():
    mod = kernc.compile("""
kernel rowsum(x: f32[M, N] view, s: f32[M] view, z: f32[M] view) over (i) in (M) {
    s[i] = 0.0;
    for k in 0..N { s[i] += x[i, k]; }
    z[i] = 1.0;
    z[i] *= 3.0;
    z[i] -= 0.5;
}
""")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    s = np.zeros(3, np.float32)
    z = np.zeros(3, np.float32)
    launch(mod, "rowsum", x, s, z)
    assert np.array_equal(s, x.sum(axis=1)) and np.array_equal(z, np.full(3, 2.5, np.float32))


@pytest.mark.parametrize("src, message", [
    ("kernel k(x: f32[n, m] view) over n { x[1] = 1.0; }", "view 'x' has 2 dims, but 1 coordinate is given"),
    ("kernel k(x: f32[n] view) over n { let z = x; }", "'x' is a view: access its elements by coordinates"),
    ("kernel k(x: f32[n] view) over n { for k in 0i32..3i32 { x[k] = 1.0; } }",
     "a coordinate must be an 'index', got 'i32'"),
    ("kernel k(x: f32[n] view) over n { x.in_bounds(1) = 1.0; }", "cannot assign to 'x.in_bounds(...)'"),
    ("kernel k(x: f32[n] view) over n { let q = x.at(1); }", "view 'x' has no method '.at'"),
    ("kernel k(x: f32[n] read, y: f32[n] write) over n { y = x.checked(1); }",
     "'.checked(...)' is a method of 'view' buffers"),
    ("kernel k(x: f32[n] read, y: f32[n] write) over n { y = x[1, 2]; }", "'x' is not a view"),
    ("kernel k(x: f32[n] view indexed(I), I: u32[n] read) over n { }", "a 'view' buffer takes no accessor pattern"),
    ("kernel k(x: f32[n] view, q: index) over (i) in (q) { }", "extents of 'over' must be size symbols"),
    ("kernel k(x: f32[M, N] view) over (i, j) in (M, N) { j = 1; }", "cannot assign to the coordinate 'j'"),
    ("kernel k(x: f32[n] view, y: f32[n] view) over (i, i) in (n, n) { }", "redeclares a name"),
    ("kernel k(x: f32[n] view) over n { x[0] /= 2.0; }", "operator '/=' cannot update view 'x'"),
    ("kernel k(x: f32[n, 3] view as caspar) over n { }", "layout 'caspar' is for accessor buffers"),
    ("kernel k(x: f32[a,b,c,d,e,f,g,h,i] view) over a { }", "at most 8 are supported"),
])
def test_view_errors_are_located(src, message):
    with pytest.raises(CompileError) as info:
        kernc.compile(src)
    d = info.value.diagnostics[0]
    assert message in d.message, d.format()
    assert d.location is not None and d.location.line == 1 and d.location.column > 1
