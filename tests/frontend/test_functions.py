"""User functions (issue 22, item 1): ``fn name(params) -> T { ... }`` over scalars and vectors,
inlined at each call, run on the CPU interpreter against numpy; early returns (inside ``if`` and
loops, static and runtime bounds); nested calls, a function used twice, names that shadow the
kernel's. The errors are in ``test_function_errors.py``."""

from __future__ import annotations

import numpy as np
import pytest

import kernc

from frontend_helpers import compile_text

SRC = """
fn dot(a: f32[3], b: f32[3]) -> f32 { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

fn cross(a: f32[3], b: f32[3]) -> f32[3] {
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
}

// Rodrigues' rotation of p by the angle-axis vector aa (first order near aa = 0)
fn rotate(aa: f32[3], p: f32[3]) -> f32[3] {
    let th2 = dot(aa, aa);
    if th2 < 1e-12 {
        return p + cross(aa, p);
    }
    let th = sqrt(th2);
    let w = aa / th;
    let c = cos(th);
    return p * c + cross(w, p) * sin(th) + w * (dot(w, p) * (1.0 - c));
}

fn sq(x: f32) -> f32 { return x * x; }

fn sgn(x: f32) -> f32 {
    if x < 0.0 { return -1.0; } else if x == 0.0 { return 0.0; }
    return 1.0;
}

// the first component above th (-1 if none): a return inside an unrolled loop
fn first_above(v: f32[4], th: f32) -> i32 {
    for k in 0..4 {
        if v[k] > th { return k; }
    }
    return -1;
}

// x^n, stopping early once it passes cap: a return inside an scf.for (runtime bound)
fn capped_pow(x: f32, n: i32, cap: f32) -> f32 {
    let r = 1.0;
    for k in 0..n {
        if r > cap { return cap; }
        r *= x;
    }
    return r;
}

fn hypot64(a: f64, b: f64) -> f64 { return sqrt(a * a + b * b); }
fn clamp_u(x: u32, hi: u32) -> u32 { return select(x > hi, hi, x); }
fn is_pos(v: f32[2]) -> bool { return v[0] > 0.0 && v[1] > 0.0; }

kernel rot(aa: f32[n, 3] read, p: f32[n, 3] read, q: f32[n, 3] read, y: f32[n, 3] write,
           d: f32[n] write) over n {
    y = rotate(aa, p) + rotate(aa, q);      // one function used twice
    d = dot(rotate(aa, p), q);
}

kernel scal(x: f32[n] read, y: f32[n] write, s: f32[n] write) over n {
    y = sq(sq(x)) + sq(2);                  // nested calls, a literal argument
    s = sgn(x) * sq(x);
}

kernel loops(v: f32[n, 4] read, th: f32, m: i32, k: i32[n] write, pw: f32[n] write) over n {
    k = first_above(v, th);
    pw = capped_pow(v[0], m, 100.0);
}

// names of the kernel reused inside the functions (a parameter 'x', a local 'th2'): each body has
// its own scope
kernel shadow(x: f32[n, 3] read, p: f32[n] read, out: f32[n] write) over n {
    let th2 = sq(p);
    let w = [p, th2, 1.0];
    out = dot(x, w) + th2 + sq(dot(w, w));
}

kernel mixed(a: f64[n] read, b: f64[n] read, u: u32[n] read, h: f64[n] write, c: u32[n] write,
             pos: u8[n] write) over n {
    h = hypot64(a, b);
    c = clamp_u(u, 10u32);
    if is_pos([f32(a), f32(b)]) { pos = 1u8; }
}

// a call after the kernel's own early return, and in a branch
kernel early(x: f32[n] read, y: f32[n] add) over n {
    if x > 3.0 { return; }
    if x < 0.0 { y += sgn(x); } else { y += sq(x); }
}
"""


@pytest.fixture(scope="module")
def mod():
    return kernc.compile(SRC, filename="functions.kern")


RNG = np.random.default_rng(22)


def _rotate(aa, p):
    th2 = (aa * aa).sum(1, keepdims=True)
    th = np.sqrt(th2)
    w = aa / np.where(th > 0, th, 1)
    c = np.cos(th)
    full = p * c + np.cross(w, p) * np.sin(th) + w * ((w * p).sum(1, keepdims=True) * (1 - c))
    return np.where(th2 < 1e-12, p + np.cross(aa, p), full)


def test_vector_functions_rotate(mod):
    n = 70
    aa = RNG.standard_normal((n, 3)).astype(np.float32)
    aa[:6] *= 1e-7  # the first-order branch (an early return)
    p = RNG.standard_normal((n, 3)).astype(np.float32)
    q = RNG.standard_normal((n, 3)).astype(np.float32)
    y = np.zeros((n, 3), np.float32)
    d = np.zeros(n, np.float32)
    mod.rot(aa, p, q, y, d)
    a64, p64, q64 = (x.astype(np.float64) for x in (aa, p, q))
    np.testing.assert_allclose(y, _rotate(a64, p64) + _rotate(a64, q64), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d, (_rotate(a64, p64) * q64).sum(1), rtol=1e-5, atol=1e-5)
    # a rotation keeps lengths: not a coincidence of the reference
    r = np.zeros((n, 3), np.float32)
    mod.rot(aa, p, np.zeros_like(q), r, d)
    np.testing.assert_allclose(np.linalg.norm(r, axis=1), np.linalg.norm(p, axis=1), rtol=1e-5)


def test_scalar_and_nested_functions(mod):
    x = np.array([-2.0, -0.5, 0.0, 0.5, 1.5, 3.0, -0.0], np.float32)
    y, s = np.zeros_like(x), np.zeros_like(x)
    mod.scal(x, y, s)
    np.testing.assert_array_equal(y, x ** 4 + 4)
    np.testing.assert_array_equal(s, np.sign(x) * x * x)


def test_returns_inside_loops(mod):
    v = np.array([[0, 1, 5, 9], [7, 0, 0, 0], [0, 0, 0, 0], [1, 2, 3, 4.5], [2, 0, 0, 0],
                  [-3, 9, 9, 9]], np.float32)
    k, pw = np.zeros(len(v), np.int32), np.zeros(len(v), np.float32)
    mod.loops(v, 4.0, 5, k, pw)
    np.testing.assert_array_equal(k, [2, 0, -1, 3, -1, 1])
    # capped_pow: r = x^j until r > cap after some step j (then cap), else x^m
    def ref(x, m, cap):
        r = np.float32(1.0)
        for _ in range(m):
            if r > cap:
                return cap
            r = np.float32(r * x)
        return r
    np.testing.assert_array_equal(pw, [ref(x, 5, 100.0) for x in v[:, 0]])
    mod.loops(v, 4.0, 0, k, pw)  # a loop of no iteration: the final return
    np.testing.assert_array_equal(pw, np.ones(len(v), np.float32))


def test_shadowed_names(mod):
    n = 9
    x = RNG.standard_normal((n, 3)).astype(np.float32)
    p = RNG.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    mod.shadow(x, p, out)
    th2 = p * p
    w = np.stack([p, th2, np.ones_like(p)], 1)
    np.testing.assert_allclose(out, (x * w).sum(1) + th2 + (w * w).sum(1) ** 2, rtol=1e-6)


def test_f64_integer_and_bool_functions(mod):
    a = np.array([3.0, -1.0, 0.5, 2.0])
    b = np.array([4.0, 2.0, -0.25, 1e-3])
    u = np.array([3, 10, 11, 4000000000], np.uint32)
    h, c, pos = np.zeros(4), np.zeros(4, np.uint32), np.zeros(4, np.uint8)
    mod.mixed(a, b, u, h, c, pos)
    np.testing.assert_array_equal(h, np.sqrt(a * a + b * b))
    np.testing.assert_array_equal(c, [3, 10, 10, 10])
    np.testing.assert_array_equal(pos, [1, 0, 0, 1])


def test_call_after_a_kernel_return(mod):
    x = np.array([-2.0, 0.5, 2.0, 4.0], np.float32)
    y = np.full(4, 10.0, np.float32)
    mod.early(x, y)
    np.testing.assert_array_equal(y, [9.0, 10.25, 14.0, 10.0])


def test_kern_ir_has_no_call(mod):
    """Every call is inlined: the kern IR (and the gpu IR) holds one function per kernel and no
    call, and the ops of a function's body carry the function's lines."""
    for stage in ("kern", "gpu"):
        text = mod.ir(stage)
        assert "call" not in text.replace("kern.signature", ""), stage
    assert mod.ir("kern").count("func.func") == 6
    _, module = compile_text(SRC, "functions.kern")
    text = module.operation.get_asm(enable_debug_info=True)
    line = SRC.splitlines().index("fn sq(x: f32) -> f32 { return x * x; }") + 1
    aliases = {ln.split(" = ")[0] for ln in text.splitlines()
               if ln.startswith("#loc") and f'("functions.kern":{line}:' in ln}
    muls = [ln for ln in text.splitlines() if "arith.mulf" in ln and ln.rsplit("loc(", 1)[-1][:-1] in aliases]
    assert len(muls) == 4 + 1 + 2  # the calls of sq: 4 in scal, 1 in early, 2 in shadow
