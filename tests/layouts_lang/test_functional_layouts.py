"""Functional layouts, chains, the built-in im2col and index division semantics, on the CPU."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import kernc
from helpers import launch
from kernc.support.errors import CompileError
from kernc.layout import im2col as im2col_layout

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from im2col_gather import im2col_matrix  # noqa: E402

IM2COL = """
layout nhwc(N, H, W, C) = (N, H, W, C):(H * W * C, W * C, C, 1);
kernel gather(x: f32[N, H, W, C] view as nhwc(N, H, W, C), out: f32[M, K] view,
              R: index, S: index, OH: index, OW: index,
              sh: index, sw: index, ph: index, pw: index, dh: index, dw: index)
        over (m, k) in (M, K) {
    out[m, k] = x.checked(im2col(H, W, C, R, S, OH, OW, sh, sw, ph, pw, dh, dw)(m, k));
}
"""


@pytest.fixture(scope="module")
def gather():
    return kernc.compile(IM2COL)


# (N, H, W, C), (R, S), stride, padding, dilation
CASES = [
    ((1, 5, 5, 1), (3, 3), (2, 2), (1, 1), (1, 1)),   # layouts.md section 3, the worked example
    ((2, 4, 6, 3), (3, 3), (1, 1), (0, 0), (1, 1)),   # no padding
    ((1, 6, 7, 2), (3, 2), (2, 1), (1, 2), (1, 1)),   # OW != W, asymmetric padding
    ((2, 7, 5, 2), (2, 3), (1, 2), (2, 0), (2, 1)),   # dilation
    ((1, 9, 8, 1), (3, 3), (3, 2), (1, 1), (2, 2)),
    ((3, 3, 3, 4), (1, 1), (1, 1), (0, 0), (1, 1)),   # 1x1 filter: a reshape
]


@pytest.mark.parametrize("shape, rs, stride, pad, dil", CASES)
def test_im2col_gather_matches_numpy(gather, shape, rs, stride, pad, dil):
    N, H, W, C = shape
    R, S = rs
    L = im2col_layout(N, H, W, C, R, S, stride=stride, padding=pad, dilation=dil)
    M, K = L.shape
    rng = np.random.default_rng(sum(shape))
    x = (rng.integers(1, 100, size=shape)).astype(np.float32)   # no zeros: padding is visible
    out = np.full((M + 3, K + 2), np.nan, np.float32)            # rows/columns past the matrix
    launch(gather, "gather", x, out, R, S, L.OH, L.OW, *stride, *pad, *dil)
    want = np.zeros_like(out)
    want[:M, :K] = im2col_matrix(x, R, S, L.OH, L.OW, stride, pad, dil)
    np.testing.assert_array_equal(out, want)
    # the same through kernc.layout's functional im2col, including which entries are padding
    for m in range(M):
        for k in range(K):
            src, ok = L.to_source_checked((m, k))
            assert out[m, k] == (x[src] if ok else 0)
    if pad != (0, 0):
        assert (out[:M, :K] == 0).any()          # padded positions read 0
    assert (out[M:, :] == 0).all() and (out[:, K:] == 0).all()


def test_layouts_md_worked_example(gather):
    x = np.arange(1, 26, dtype=np.float32).reshape(1, 5, 5, 1)
    out = np.zeros((9, 9), np.float32)
    launch(gather, "gather", x, out, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1)
    assert out[0].tolist() == [0, 0, 0, 0, 1, 2, 0, 6, 7]
    assert out[4, 0] == 7  # (m=4, k=0) reads input offset 6


FN = """
layout rowmaj(R, C) = (R, C):(C, 1);
layout win(o) : (a) in (8) -> (b) { return (a + o); }
layout shift2(o) : (i, j) -> (r, c) { return (i + o, j - o); }
layout grid = (4, 8):(8, 1) o shift2(1);
layout tile = (4, 8):(8, 1);
layout tiles(T) = (T, 4):(1, T);
kernel windowed(x: f32[n] view, y: f32[m] view) over (i) in (m) {
    y[i] = x.checked(win(2)(i));
}
kernel chained(x: f32[32] view, y: f32[6, 10] view, z: f32[6, 10] view) over (i, j) in (6, 10) {
    y[i, j] = x.checked(grid(i, j));
    z[i, j] = x.checked(tile(shift2(1)(i, j)));
}
kernel linear(x: f32[32] view, y: f32[40] view, z: f32[40] view) over (i) in (40) {
    y[i] = x.checked(tile(i));
    z[i] = x.checked(tiles(8)(i));
}
kernel strided_apply(x: f32[n] view, y: f32[R, C] view) over (i, j) in (R, C) {
    y[i, j] = x.checked(rowmaj(R, C)(j, i));
}
"""


@pytest.fixture(scope="module")
def fn():
    return kernc.compile(FN)


def test_functional_layout_domain(fn):
    x = np.arange(12, dtype=np.float32) + 1
    y = np.full(15, np.nan, np.float32)
    launch(fn, "windowed", x, y)
    want = [x[i + 2] if i < 8 and i + 2 < 12 else 0 for i in range(15)]   # both layers checked
    assert y.tolist() == want


def test_chains_by_composition_and_by_application(fn):
    x = np.arange(32, dtype=np.float32) + 1
    y = np.full((6, 10), np.nan, np.float32)
    z = np.full((6, 10), np.nan, np.float32)
    launch(fn, "chained", x, y, z)
    i, j = np.indices((6, 10))
    r, c = i + 1, j - 1
    inside = (r >= 0) & (r < 4) & (c >= 0) & (c < 8)
    want = np.where(inside, x[np.clip(r * 8 + c, 0, 31)], 0)
    assert np.array_equal(y, want) and np.array_equal(z, want)


def test_strided_layout_on_a_linear_index(fn):
    x = np.arange(32, dtype=np.float32) + 1
    y = np.full(40, np.nan, np.float32)
    z = np.full(40, np.nan, np.float32)
    launch(fn, "linear", x, y, z)
    # CuTe L(i): split colexicographically (first mode fastest), in bounds iff 0 <= i < size
    tile = [(i % 4) * 8 + (i // 4) for i in range(32)]
    assert y.tolist() == [x[tile[i]] if i < 32 else 0 for i in range(40)]
    assert z.tolist() == [x[(i % 8) + (i // 8) * 8] if i < 32 else 0 for i in range(40)]


def test_strided_layout_applied_with_size_arguments(fn):
    x = np.arange(20, dtype=np.float32)
    y = np.zeros((4, 5), np.float32)
    launch(fn, "strided_apply", x, y)
    i, j = np.indices((4, 5))
    inside = j < 4   # rowmaj(R, C) applied to (j, i): j must be < R
    assert np.array_equal(y, np.where(inside, x[np.clip(j * 5 + i, 0, 19)], 0))


DIV = """
kernel divs(y: i64[n, 8] view, off: index, scale: index, d: index) over (i) in (n) {
    let v = index(i) * scale + off;
    y[i, 0] = i64(v / d);
    y[i, 1] = i64(v % d);
    y[i, 2] = i64(v // d);
    y[i, 3] = i64(v %% d);
    for r in 0..1 {
        y[i, 4] = i64(v / d);
        y[i, 5] = i64(v % d);
        y[i, 6] = i64(v // 8) + i64(v %% 8) * 1000;
        y[i, 7] = i64(v / 8) + i64(v % 8) * 1000;
    }
}
"""


def _trunc(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


@pytest.mark.parametrize("off, scale, d", [
    (-40, 1, 7), (-40, 1, 8), (-5, 3, 1), (0, 1, 3), (-300, 7, 641),
    (2**32 - 20, 1, 3),              # dividends crossing 2^32: the exact division takes over
    (5, 2**31 - 1, 2**31 - 1), (9, 1 << 20, 2**32 - 1), (-20, 1, -3),
])
def test_index_division_semantics(off, scale, d):
    """`/` `%` truncate, `//` `%%` floor -- whatever the lowering (shifts for powers of two, magic
    multipliers for a runtime divisor in a loop, the plain division where neither applies)."""
    mod = kernc.compile(DIV)
    n = 40
    y = np.zeros((n, 8), np.int64)
    launch(mod, "divs", y, off, scale, d)
    for i in range(n):
        v = i * scale + off
        tq = _trunc(v, d)
        assert y[i].tolist() == [tq, v - tq * d, v // d, v % d, tq, v - tq * d,
                                 v // 8 + (v % 8) * 1000,
                                 _trunc(v, 8) + (v - _trunc(v, 8) * 8) * 1000], (i, v)


@pytest.mark.parametrize("src, message", [
    ("layout f(A) : (m) -> (a, b) { return (m, A, 3); }\nkernel k(x: f32[n] view) over n { }",
     "layout 'f' returns 3 coordinates but declares 2"),
    ("layout f(A) : (m) -> (a) { return (m + q); }\nkernel k(x: f32[n] view) over n { }",
     "unknown name 'q'"),
    ("layout f(A) : (m) -> (a) { return (f32(m)); }\nkernel k(x: f32[n] view) over n { }",
     "a result coordinate of layout 'f' must be an 'index'"),
    ("layout f(A) : (m) -> (a) { return (m); }\nkernel k(x: f32[n] view) over n { x[f(1, 2)(0)] = 1.0; }",
     "layout 'f' takes 1 argument, got 2"),
    ("layout f(A) : (m) -> (a, b) { return (m, m); }\nkernel k(x: f32[n] view) over n { x[f(1)(0)] = 1.0; }",
     "view 'x' has 1 dim, but 2 coordinates are given"),
    ("layout f(A) : (m) -> (a) { return (m); }\nkernel k(x: f32[n] view) over n { let z = f(1)(2); }",
     "applying layout 'f' gives a coordinate"),
    ("layout f(A) : (m) -> (a) { return (m); }\nkernel k(x: f32[n] view as f(n)) over n { }",
     "'f' is a functional layout; it cannot be a storage layout"),
    ("kernel k(x: f32[n] view) over n { x[g(1)(0)] = 1.0; }", "unknown layout 'g'"),
    ("kernel k(x: f32[n] view) over n { x.checked(im2col(1, 2)(0, 0)) = 1.0; }",
     "layout 'im2col' takes 13 arguments, got 2"),
    ("kernel k(x: f32[n] view, a: i32) over n { x.checked(im2col(a,1,1,1,1,1,1,1,1,1,1,1,1)(0, 0)) = 1.0; }",
     "an argument of layout 'im2col' must be an 'index', got 'i32'"),
    ("layout t = (4, 8):(8, 1);\nkernel k(x: f32[n] view) over n { x[t(1, 2, 3)] = 1.0; }",
     "layout 't' is applied to 3 coordinates"),
    ("layout f(A) : (m) in (A, A) -> (a) { return (m); }\nkernel k(x: f32[n] view) over n { }",
     "the domain of layout 'f' has 2 extents for 1 coordinates"),
])
def test_functional_layout_errors(src, message):
    with pytest.raises(CompileError) as info:
        kernc.compile(src)
    assert any(message in d.message for d in info.value.diagnostics), info.value
    assert all(d.location is not None for d in info.value.diagnostics)


def test_user_im2col_takes_precedence_over_the_builtin():
    src = """
layout im2col(H) : (m, k) -> (a, b) { return (m + H, k); }
kernel k(x: f32[R, C] view, y: f32[R, C] view) over (i, j) in (R, C) {
    y[i, j] = x.checked(im2col(1)(i, j));
}
"""
    mod = kernc.compile(src)
    x = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    y = np.zeros((3, 4), np.float32)
    launch(mod, "k", x, y)
    assert np.array_equal(y, np.concatenate([x[1:], np.zeros((1, 4), np.float32)]))


def test_the_builtin_im2col_is_parsed_once_per_process(monkeypatch):
    """Every compile that used ``im2col`` parsed and checked the built-in's source again (half a
    millisecond of a ~10 ms warm compile); the checked definition is now shared, and programs that
    use it, or define their own ``im2col``, keep compiling to the same results."""
    from kernc.frontend import parser

    src = ("kernel k(x: f32[N, H, W, C] view, y: f32[M, K] view) over (m, k) in (M, K) {\n"
           "    y[m, k] = x.checked(im2col(H, W, C, 3, 3, H, W, 1, 1, 1, 1, 1, 1)(m, k));\n}\n")
    from kernc.compiler import Compilation

    def compile_without_cache():
        return Compilation(src, "t.kern", use_cache=False).kern_ir()

    compile_without_cache()
    calls = []
    real = parser.parse
    monkeypatch.setattr(parser, "parse", lambda text, *a, **k: (calls.append(text), real(text, *a, **k))[1])
    first = compile_without_cache()
    second = compile_without_cache()
    assert first == second and "kern.view_load" in first
    from kernc.frontend.layouts import IM2COL_SOURCE

    assert IM2COL_SOURCE not in calls


@pytest.mark.parametrize("expr, tiler", [
    ("zipped_divide((8,8):(1,8), (2,4))", (2, 4)),
    ("logical_divide((8,8):(1,8), (2,4))", (2, 4)),
    ("tiled_divide((8,8):(1,8), (2,4))", (2, 4)),
    ("flat_divide((8,8):(1,8), (2,4))", (2, 4)),
    ("composition((8,8):(1,8), (2,4))", (2, 4)),
    ("logical_divide((8,8):(1,8), (3:3, (2,4):(1,8)))", "mixed"),
])
def test_a_tuple_tiler_means_what_it_means_in_cute(expr, tiler):
    """The second argument of composition and the divides, written as a tuple, is a CuTe tiler
    (by mode), as in kernc.layout's Python API: the language took ``(2,4)`` as the one compact
    layout ``(2,4):(1,2)`` there and gave another tiling than Python and CuTe."""
    import kernc.layout as KL
    from kernc import frontend

    value = frontend.check(frontend.parse(f"layout L = {expr};", "t.kern")).items[0].value
    A = KL.Layout.parse("(8,8):(1,8)")
    if tiler == "mixed":
        tiler = (KL.Layout.parse("3:3"), KL.Layout.parse("(2,4):(1,8)"))
    want = getattr(KL, expr.split("(")[0])(A, tiler)
    assert value.size() == want.size()
    assert [value(i) for i in range(value.size())] == [want(i) for i in range(want.size())]


def test_a_tuple_right_of_o_is_a_tiler_and_single_modes_stay_modes(capsys):
    """`A o (2, 4)` meant the compact layout while `composition(A, (2, 4))` was by mode; and a
    single-mode entry `2:1` of a tiler nested as the tuple `(2)`."""
    import kernc.layout as KL
    from kernc import frontend
    from kernc.cli import main

    A = KL.Layout.parse("(8,8):(1,8)")
    value = frontend.check(frontend.parse("layout L = (8,8):(1,8) o (2,4);", "t.kern")).items[0].value
    assert str(value) == str(KL.composition(A, (2, 4))) == "(2,4):(1,8)"
    mixed = frontend.check(frontend.parse("layout L = zipped_divide((8,8):(1,8), (2:1, 4));", "t.kern")).items[0].value
    assert str(mixed) == str(KL.zipped_divide(A, (2, 4))) == "((2,4),(4,2)):((1,8),(2,32))"
    assert main(["layout", "(8,8):(1,8) o (2,4)"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "(2,4):(1,8)"
