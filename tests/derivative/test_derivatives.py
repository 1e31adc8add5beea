"""kernc.grad / kernc.jvp / ``kernc grad``: every accessor's dual, control flow, roles, the printed
source, bad requests and launches (CPU interpreter; the GPU test is marked ``gpu``)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import fd
import kernc
from kernc.errors import CompileError, KerncLaunchError

N = 5
R = np.random.default_rng(3)

CASES = {
    "strided": ("""kernel k(x: f64[S] read strided(1, 2), a: f64, y: f64[T] write strided(0, 2)) over n {
    y = x * x * a;
}""", ["x", "a"], dict(x=R.uniform(-1, 1, 2 * N + 1), a=0.3, y=np.zeros(2 * N)), dict(n=N)),
    "indexed_atomic": ("""kernel k(p: f64[V, 3] read indexed(I), I: u32[n] read, w: f64[n] read,
                                    f: f64[V, 3] add atomic(I)) over n {
    f += w * p * p[1];
}""", ["p", "w"], dict(p=R.uniform(-1, 1, (3, 3)), I=np.array([0, 2, 0, 1, 2], np.uint32),
                       w=R.uniform(-1, 1, N), f=np.zeros((3, 3))), {}),
    "shared_caspar": ("""kernel k(pos: f64[V, 3] read shared(src) as caspar, src: u32[n] read, dst: u32[n] read,
    w: f64[n] read, force: f64[V, 3] add shared_sum(dst) as caspar, energy: f64[1] add sum) over n {
    let p = pos;
    force += w * p;
    energy += w * (p[0]*p[0] + p[1]*p[1] + p[2]*p[2]);
}""", ["pos", "w"], dict(pos=R.uniform(-1, 1, (4, 3)), src=np.array([0, 1, 1, 2, 0], np.uint32),
                         dst=np.array([2, 2, 0, 1, 0], np.uint32), w=R.uniform(-1, 1, N),
                         force=np.zeros((4, 3)), energy=np.zeros(1)), {}),
    "unique_pair": ("""kernel k(u: f64[n1] read pair, c: f64[1] read unique, out: f64[n1] add pair) over n {
    let d = c * (u.second - u.first) * u.first;
    out = (-d, exp(d));
}""", ["u", "c"], dict(u=R.uniform(-1, 1, N + 1), c=np.array([0.6]), out=np.zeros(N + 1)), dict(n=N)),
    "views": ("""kernel k(x: f64[M] view, y: f64[M] view, h: f64[B] view, b: u32[M] read) over (i) in (M) {
    let v = x.checked(i - 1) + 2.0 * x[i] * x.checked(i + 1);
    y[i] = v * v;
    h.atomic(index(b)) += sin(v);
}""", ["x"], dict(x=R.uniform(-1, 1, N), y=np.zeros(N), h=np.zeros(3), b=np.array([0, 1, 1, 2, 0], np.uint32)), {}),
    "loops": ("""kernel k(x: f64[n, 3] read, m: index, z: f64[M] view, y: f64[n] write) over n {
    let acc: f64 = 1.0;
    let v = x;
    for j in 0..m {
        let q = z[j] * acc;
        acc = acc * cos(q) + v[1];
        v[0] *= 1.1;
        for r in 0..2 { acc += v[r] * q; }
    }
    if acc > 0.5 { y = tanh(acc) * v[0]; } else if acc > 0.0 { y = abs(acc); } else { y = min(acc, v[2]) - max(v[0], 0.1); }
}""", ["x", "z"], dict(x=R.uniform(-1, 1, (N, 3)), m=3, z=R.uniform(-1, 1, 4), y=np.zeros(N)), {}),
    "builtins": ("""kernel k(x: f64[n, 3] read, y: f64[n, 3] write, s: f64[n] add) over n {
    let a = x[0]; let b = x[1]; let c = x[2];
    let r = [exp(a), log(1.5 + b * b), sqrt(2.0 + c), rsqrt(1.2 + a * a), sin(b), cos(c), tanh(a),
             floor(b * 3.0), ceil(c)];
    let q = abs(a) + min(b, c) + max(a, c) + fma(a, b, c) + select(a > b, a * b, c / (2.0 + b))
            + a % (0.7 + b * b) + b %% (0.9 + c * c) + f64(i32(a * 4.0)) + a // 0.3;
    y = x * q - [r[0] + r[1], r[2] * r[3], r[4] - r[5] + r[6] + r[7] + r[8]];
    s -= q * q;
    s += r[0];
}""", ["x"], dict(x=R.uniform(-1, 1, (N, 3)), y=np.zeros((N, 3)), s=np.zeros(N)), {}),
    "functions": ("""fn rotate(aa: f64[3], p: f64[3]) -> f64[3] {
    let th2 = aa[0] * aa[0] + aa[1] * aa[1] + aa[2] * aa[2];
    if th2 < 1e-12 { return p; }
    let th = sqrt(th2);
    let w = aa / th;
    let d = w[0] * p[0] + w[1] * p[1] + w[2] * p[2];
    let c = [w[1] * p[2] - w[2] * p[1], w[2] * p[0] - w[0] * p[2], w[0] * p[1] - w[1] * p[0]];
    return p * cos(th) + c * sin(th) + w * (d * (1.0 - cos(th)));
}
kernel k(aa: f64[n, 3] read, p: f64[n, 3] read, y: f64[n, 3] write) over n {
    y = rotate(aa, p);
}""", ["aa", "p"], dict(aa=R.uniform(-1, 1, (N, 3)), p=R.uniform(-1, 1, (N, 3)), y=np.zeros((N, 3))), {}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_accessor_and_control_flow_duals_match_finite_differences(name):
    source, wrt, args, sizes = CASES[name]
    r = fd.check(source, "k", wrt, args, sizes)
    assert r["grad"] < 2e-5 and r["jvp"] < 2e-5 and r["dot"] < 1e-12
    assert any(np.abs(g).max() > 0 for g in r["grads"].values())


def test_grad_signature_and_duals():
    source = CASES["shared_caspar"][0]
    sig = kernc.grad(source, kernel="k", wrt="pos,w").k_grad.signature
    by = {p.name: p for p in sig.params}
    assert [p.name for p in sig.params if p.kind != "table"] == [
        "pos", "src", "dst", "w", "force", "energy", "force_bar", "energy_bar", "pos_bar", "w_bar"]
    assert (by["pos_bar"].access, by["pos_bar"].accessor, by["pos_bar"].storage_shape) == ("add", "shared_sum", [4, "V"])
    assert (by["force_bar"].access, by["force_bar"].accessor) == ("read", "shared")
    assert (by["energy_bar"].accessor, by["w_bar"].accessor) == ("unique", "sequential")
    sig = kernc.grad(CASES["indexed_atomic"][0], kernel="k", wrt=["p"]).k_grad.signature
    assert {p.name: p.accessor for p in sig.params}["p_bar"] == "atomic"
    assert {p.name: p.accessor for p in sig.params}["f_bar"] == "indexed"
    jsig = kernc.jvp(CASES["unique_pair"][0], kernel="k", wrt=["u", "c"]).k_jvp.signature
    assert {p.name: (p.access, p.accessor) for p in jsig.params}["out_dot"] == ("add", "pair")
    assert {p.name: (p.access, p.accessor) for p in jsig.params}["c_dot"] == ("read", "unique")


def test_scalar_gradient_is_a_one_element_sum_and_adds():
    mod = kernc.grad("kernel k(a: f64, x: f64[n] read, y: f64[n] write) over n { y = a * x * x; }", kernel="k",
                     wrt=["a"])
    x = np.arange(4.0)
    a_bar = np.array([10.0])
    mod.k_grad(2.0, x, np.zeros(4), np.ones(4), a_bar)
    assert a_bar.tolist() == [10.0 + float(np.sum(x * x))]


def test_roles_tunable_and_constant():
    src = """@tunable(x) @constant(c)
kernel k(a: f64, c: f64, x: f64[n] read, y: f64[n] write) over n { y = a * c * x; }"""
    sig = kernc.grad(src, kernel="k").k_grad.signature
    assert [p.name for p in sig.params][-2:] == ["y_bar", "x_bar"]
    with pytest.raises(CompileError, match="'c', which the kernel declares @constant"):
        kernc.grad(src, kernel="k", wrt=["c"])
    default = kernc.grad(src.replace("@tunable(x) ", ""), kernel="k").k_grad.signature
    assert [p.name for p in default.params][-3:] == ["y_bar", "a_bar", "x_bar"]  # every float read, not c
    with pytest.raises(CompileError, match="@tunable names 'q', which is not a parameter"):
        kernc.compile(src.replace("@tunable(x)", "@tunable(q)"))
    with pytest.raises(CompileError, match="both @tunable and @constant"):
        kernc.compile(src.replace("@tunable(x)", "@tunable(c)"))


@pytest.mark.parametrize("src, wrt, message", [
    ("kernel k(i: i32, x: f64[n] read, y: f64[n] write) over n { y = x * f64(i); }", ["i"],
     "'i', an integer parameter: integer values have no derivative"),
    ("kernel k(m: index, x: f64[n] read, y: f64[n] write) over n { y = x; }", ["m"], "'m', an index parameter"),
    ("kernel k(x: i32[n] read, y: f64[n] write) over n { y = f64(x); }", ["x"], "'x', an integer parameter"),
    ("kernel k(x: f64[n] read, y: f64[n] write) over n { y = x; }", ["y"], "'y', an output"),
    ("kernel k(x: f64[n] read, y: f64[n] write) over n { y = x; }", ["n"], "'n', which is not a parameter"),
    ("kernel k(x: f64[n] read, y: f64[n] write) over n { y = x; }", ["q"], "'q', which is not a parameter"),
    ("kernel k(x: f64[S] read strided(0, 2) default 0.0, y: f64[n] write) over n { y = x; }", ["x"],
     "'x' uses the accessor 'strided\\(off, s\\) default v', which has no dual"),
    ("kernel k(x: f64[n] read, y: f64[B] add block_sum) over n { y += x; }", ["x"],
     "'y' uses the accessor 'block_sum', which has no dual"),
    ("kernel k(x: f64[M] view, y: f64[M] view) over (i) in (M) { y[i] = x[i]; x[i] = 1.0; }", ["x"],
     "'x', a view the kernel writes"),
    ("kernel k(x: f64[n] read, y: f64[n] write) over n { if x > 0.0 { return; } y = x; }", ["x"],
     "'return;' has no derivative kernel yet"),
])
def test_bad_requests_are_located_errors_naming_the_parameter(src, wrt, message):
    with pytest.raises(CompileError, match=message) as err:
        kernc.grad(src, kernel="k", wrt=wrt)
    assert all(d.location is not None for d in err.value.diagnostics)


def test_unknown_kernel():
    with pytest.raises(CompileError, match="no kernel named 'q'.*kernels: k"):
        kernc.grad("kernel k(x: f64[n] read, y: f64[n] write) over n { y = x; }", kernel="q")


def test_seed_and_gradient_arrays_of_the_wrong_shape_or_dtype_name_the_parameter():
    mod = kernc.grad("kernel k(x: f64[n] read, y: f64[n] write) over n { y = x * x; }", kernel="k", wrt=["x"])
    x, y = np.ones(4), np.zeros(4)
    with pytest.raises(KerncLaunchError, match="y_bar"):
        mod.k_grad(x, y, np.ones(3), np.zeros(4))
    with pytest.raises(KerncLaunchError, match="x_bar"):
        mod.k_grad(x, y, np.ones(4), np.zeros(4, np.float32))
    with pytest.raises(KerncLaunchError, match="x_bar"):
        mod.k_grad(x, y, np.ones(4), np.zeros((4, 2)))


def test_non_finite_derivatives_follow_ieee():
    """sqrt at 0 has derivative +inf (a zero seed gives NaN); abs at 0 has 0; nothing raises."""
    mod = kernc.grad("kernel k(x: f64[n] read, y: f64[n] write, z: f64[n] write) over n { y = sqrt(x); z = abs(x); }",
                     kernel="k", wrt=["x"])
    x = np.array([0.0, 0.0, 4.0, -1.0])
    x_bar = np.zeros(4)
    with np.errstate(all="ignore"):
        mod.k_grad(x, np.zeros(4), np.zeros(4), np.array([1.0, 0.0, 1.0, 0.0]), np.zeros(4), x_bar)
    assert x_bar[0] == np.inf and np.isnan(x_bar[1]) and x_bar[2] == 0.25 and np.isnan(x_bar[3])
    x_bar = np.zeros(4)  # sqrt's 0 * inf and sqrt(-1) poison the sum, as IEEE 754 says
    with np.errstate(all="ignore"):
        mod.k_grad(x, np.zeros(4), np.zeros(4), np.zeros(4), np.ones(4), x_bar)
    assert np.isnan(x_bar[[0, 1, 3]]).all() and x_bar[2] == 1.0
    mod = kernc.grad("kernel k(x: f64[n] read, z: f64[n] write) over n { z = abs(x); }", kernel="k", wrt=["x"])
    x_bar = np.zeros(4)
    mod.k_grad(x, np.zeros(4), np.ones(4), x_bar)
    assert x_bar.tolist() == [0.0, 0.0, 1.0, -1.0]


def test_min_max_ties_go_to_the_first_operand():
    mod = kernc.grad("kernel k(a: f64[n] read, b: f64[n] read, y: f64[n] write) over n { y = min(a, b) + 2.0 * max(a, b); }",
                     kernel="k", wrt=["a", "b"])
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 5.0])
    a_bar, b_bar = np.zeros(3), np.zeros(3)
    mod.k_grad(a, b, np.zeros(3), np.ones(3), a_bar, b_bar)
    assert a_bar.tolist() == [3.0, 2.0, 1.0] and b_bar.tolist() == [0.0, 1.0, 2.0]


def test_f32_kernel_and_casts():
    src = "kernel k(x: f32[n] read, y: f64[n] write) over n { let w = f64(x) * 2.0; y = w * w + f64(sin(x)); }"
    mod = kernc.grad(src, kernel="k", wrt=["x"])
    x = np.array([0.5, -1.0, 2.0], np.float32)
    x_bar = np.zeros(3, np.float32)
    mod.k_grad(x, np.zeros(3), np.ones(3), x_bar)
    expect = 8.0 * x.astype(np.float64) + np.cos(x.astype(np.float64))
    np.testing.assert_allclose(x_bar, expect, rtol=1e-6)


def test_printed_source_is_readable_and_compiles_alone(tmp_path):
    source, wrt = CASES["loops"][0], ["x", "z"]
    text = kernc.derivative_source(source, "k", wrt, "grad")
    assert text.startswith(source.rstrip())
    assert "kernel k_grad(" in text and "x_bar: f64[n, 3] add," in text and "z_bar.atomic(" in text
    assert "y_bar: f64[n] read," in text
    kernc.compile(text)


def _cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "kernc", *args], capture_output=True, text=True, input=stdin)


def test_cli_grad_prints_writes_and_emits(tmp_path):
    src = tmp_path / "k.kern"
    src.write_text(CASES["unique_pair"][0])
    r = _cli("grad", str(src), "--kernel", "k", "--wrt", "u,c")
    assert r.returncode == 0 and "kernel k_grad(" in r.stdout and "u_bar: f64[n1] add pair," in r.stdout
    out = tmp_path / "g.kern"
    r = _cli("jvp", str(src), "--kernel", "k", "--wrt", "u", "-o", str(out))
    assert r.returncode == 0 and r.stdout == "" and "kernel k_jvp(" in out.read_text()
    r = _cli("grad", str(src), "--kernel", "k", "--emit", "ptx")
    assert r.returncode == 0 and ".entry k_grad" in r.stdout and ".entry k(" not in r.stdout
    r = _cli("grad", str(src), "--kernel", "k", "--wrt", "u,nope", "-o", str(tmp_path / "bad.kern"))
    assert r.returncode == 1 and "'nope', which is not a parameter" in r.stderr
    assert not (tmp_path / "bad.kern").exists()  # nothing half-written
    r = _cli("grad", str(src), "--kernel", "k", "-o", str(src))
    assert r.returncode == 1 and "is the input file" in r.stderr


@pytest.mark.gpu
def test_gradient_on_the_gpu_equals_the_cpu_interpreter():
    cp = pytest.importorskip("cupy")
    from kernc.backend import cuda

    if not cuda.available():
        pytest.skip("no CUDA device")
    source, wrt, args, sizes = CASES["shared_caspar"]
    mod = kernc.grad(source, kernel="k", wrt=wrt)
    seeds = {"force_bar": R.standard_normal((4, 3)), "energy_bar": R.standard_normal(1)}
    host = {**{k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}, **seeds,
            "pos_bar": np.zeros((4, 3)), "w_bar": np.zeros(N)}
    dev = {k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in host.items()}
    mod.k_grad(**host)
    mod.k_grad(**dev)
    for name in ("pos_bar", "w_bar"):
        np.testing.assert_allclose(cp.asnumpy(dev[name]), host[name], rtol=1e-12, atol=1e-12)


def test_shared_read_adjoint_issues_one_atomic_per_distinct_index_and_component_per_block():
    """The adjoint of a ``shared(I)`` read is ``shared_sum(I)``: with clustered indices, at most one
    global atomic per distinct index and component per block, against one per item and component
    for the ``atomic(I)`` adjoint of an ``indexed(I)`` read (what Warp's adjoints do)."""
    body = "over n { y = p[0] * p[1] + sin(p[2]); }"
    n, v = 512, 16
    index = np.sort(np.random.default_rng(0).integers(0, v, n)).astype(np.uint32)  # clustered
    p = np.random.default_rng(1).uniform(-1, 1, (v, 3))
    counts = {}
    for pattern in ("shared(I)", "indexed(I)"):
        src = f"kernel k(p: f64[V, 3] read {pattern}, I: u32[n] read, y: f64[n] write) {body}"
        mod = kernc.grad(src, kernel="k", wrt=["p"])
        p_bar = np.zeros((v, 3))
        result = mod.k_grad(p, index, np.zeros(n), np.ones(n), p_bar)
        counts[pattern] = (result.stats.global_atomics, p_bar, result.shared)
    distinct_per_block = sum(len(np.unique(index[b:b + 256])) for b in range(0, n, 256))
    atomics, shared_bar, staged = counts["shared(I)"]
    assert staged is True and atomics <= 3 * distinct_per_block
    assert counts["indexed(I)"][0] == 3 * n
    np.testing.assert_allclose(shared_bar, counts["indexed(I)"][1], rtol=1e-12)


@pytest.mark.parametrize("name", ["edge_update", "gather_scatter", "im2col_gather", "laplacian_1d", "saxpy",
                                  "transpose"])
def test_examples_in_f64_match_finite_differences(name):
    """The shipped examples (made f64), with their own inputs, differentiated in every float input."""
    import importlib.util
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / "examples"
    spec = importlib.util.spec_from_file_location(f"ex_{name}", root / f"{name}.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    source = (root / f"{name}.kern").read_text().replace("f32", "f64")
    sig = kernc.compile(source)[name].signature
    params = {p.name for p in sig.params}
    args, sizes = {}, {}
    for key, v in ref.make_inputs(6, np.random.default_rng(0)).items():
        if isinstance(v, np.ndarray) and v.dtype == np.float32:
            v = np.nan_to_num(v.astype(np.float64), nan=0.0)
        (args if key in params else sizes)[key] = float(v) if isinstance(v, np.floating) else v
    wrt = [p.name for p in sig.params if p.kind == "scalar" and p.dtype == "f64"
           or p.kind == "buffer" and p.dtype == "f64" and p.access == "read"
           or p.access == "view" and p.name in sig.reads and p.name not in sig.writes]
    r = fd.check(source, name, wrt, args, sizes)
    assert r["grad"] < 2e-5 and r["jvp"] < 2e-5 and r["dot"] < 1e-12


def test_nothing_to_differentiate():
    with pytest.raises(CompileError, match="nothing to differentiate"):
        kernc.grad("kernel k(x: u32[n] read, y: u32[n] write) over n { y = x; }", kernel="k")


def test_remarks_say_how_each_loop_is_reversed(tmp_path):
    src = tmp_path / "k.kern"
    src.write_text("""kernel k(x: f64[n, 3] read, y: f64[n] add) over n {
    let acc: f64 = 0.0;
    for j in 0..3 { acc += x[j] * acc; }
    for q in 0..3 { y += x[q]; }
    y += acc;
}""")
    r = _cli("grad", str(src), "--kernel", "k", "--remarks")
    assert r.returncode == 0
    lines = r.stderr.splitlines()
    assert lines[0].startswith(f"{src}:3:9: remark: k_grad: loop reversed by recomputation") and "'acc'" in lines[0]
    assert lines[1].startswith(f"{src}:4:9: remark: k_grad: loop reversed in O(n)")
    assert _cli("grad", str(src), "--kernel", "k").stderr == ""


@pytest.mark.parametrize("wrt, message", [
    (5, "wrt must be parameter names (a sequence of str or \"x,a\"), got int"),
    (("a", "a"), "wrt names 'a' more than once"),
    ("a,b,a", "wrt names 'a' more than once"),
    ("", "wrt names no parameter of kernel 'resid'"),
    (" , ", "wrt names no parameter of kernel 'resid'"),
])
def test_bad_wrt_requests_are_located_errors(wrt, message):
    # a new-user trial: an int raised a bare TypeError, a repeated name was silently accepted
    src = "kernel resid(a: f64, b: f64, x: f64[n] read, r: f64[n] write) over n { r = a * exp(b * x); }"
    with pytest.raises(kernc.CompileError) as e:
        kernc.derivative_source(src, kernel="resid", wrt=wrt)
    assert message in str(e.value)


# ---- from a breaker trial: the derivative text kept integer/bool operands unparenthesised ----------

PRECEDENCE = """
kernel k(x: f64[n] read, j: i32[n] read, y: f64[n] write) over n {
    y = x * f64((j + 1) % 3) + x * f64(j - (j - 2)) + x * f64(12 / (j * 2 + 1)) + x * f64(-(j - 1));
}
kernel c(x: f64[n] read, w: f64[n] read, y: f64[n] write) over n {
    let s = x;
    if (x > 1.0 || x < -1.0) && w > 0.0 { s = x * x; }
    y = s;
}
kernel v(x: f64[M, N] view, y: f64[M, N] view) over (i, j) in (M, N) {
    y[i, j] = x[(i + 1) % M, j] * x[(i + 1) % M, j];
}
"""


def test_integer_and_bool_operands_keep_their_parentheses():
    j = np.array([0, 1, 2, 3], np.int32)
    x = np.ones(4)
    want = ((j + 1) % 3) + 2 + 12 // (2 * j + 1) - (j - 1)
    g = kernc.grad(PRECEDENCE, kernel="k", wrt="x")
    xb = np.zeros(4)
    g.k_grad(x=x, j=j, y=np.zeros(4), y_bar=np.ones(4), x_bar=xb)
    np.testing.assert_array_equal(xb, want)
    jv = kernc.jvp(PRECEDENCE, kernel="k", wrt="x")
    yd = np.zeros(4)
    jv.k_jvp(x=x, j=j, y=np.zeros(4), x_dot=np.ones(4), y_dot=yd)
    np.testing.assert_array_equal(yd, want)
    assert "j + 1 % 3" not in kernc.derivative_source(PRECEDENCE, kernel="k", wrt="x")
    # (a || b) && c is not a || (b && c): x = 2, w = -1 takes the else path (derivative 1)
    xs, ws = np.array([2.0, 2.0, 0.5]), np.array([1.0, -1.0, 1.0])
    g = kernc.grad(PRECEDENCE, kernel="c", wrt="x")
    xb = np.zeros(3)
    g.c_grad(x=xs, w=ws, y=np.zeros(3), y_bar=np.ones(3), x_bar=xb)
    np.testing.assert_array_equal(xb, [4.0, 1.0, 1.0])
    # a view coordinate (i + 1) % M stays in bounds in the gradient kernel
    M, N = 3, 2
    xv = np.arange(1.0, 7.0).reshape(M, N)
    g = kernc.grad(PRECEDENCE, kernel="v", wrt="x")
    xb = np.zeros((M, N))
    g.v_grad(x=xv, y=np.zeros((M, N)), y_bar=np.ones((M, N)), x_bar=xb)
    np.testing.assert_allclose(xb, 2 * xv)


def test_jvp_refuses_what_grad_refuses():
    with pytest.raises(CompileError, match="accessor 'max', which has no dual"):
        kernc.jvp("kernel k(x: f64[n] read, o: f64[1] write max) over n { o = x * x; }", kernel="k")
    with pytest.raises(CompileError, match="'\\*=' on the view 'y' has no derivative kernel yet"):
        kernc.jvp("kernel k(x: f64[n] read, y: f64[n] view) over n { y[thread_id] = x; y[thread_id] *= x; }",
                  kernel="k", wrt="x")


def test_integer_outputs_are_not_refilled_by_the_derivative_kernels():
    src = ("kernel k(x: f64[n] read, c: i32[1] write sum, m: i32[1] write max, z: f64[n] write) over n "
           "{ c = 1; m = i32(thread_id); z = x * x; }")
    x = np.array([1.0, 2.0])
    c, m = np.array([2], np.int32), np.array([1], np.int32)
    g = kernc.grad(src, kernel="k", wrt="x")
    xb = np.zeros(2)
    g.k_grad(x=x, c=c, m=m, z=np.zeros(2), z_bar=np.ones(2), x_bar=xb)
    np.testing.assert_array_equal(xb, 2 * x)
    jv = kernc.jvp(src, kernel="k", wrt="x")
    zd = np.zeros(2)
    jv.k_jvp(x=x, c=c, m=m, z=np.zeros(2), x_dot=np.ones(2), z_dot=zd)
    np.testing.assert_array_equal(zd, 2 * x)
    assert c[0] == 2 and m[0] == 1


@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_unsupported_updates_are_located_in_the_users_source(mode):
    # new-user and breaker trials: these errors named lines of the prepared copy (line 5 of 3)
    src = "// a comment\n\nkernel k(x: f64[n] read, y: f64[n] view) over n {\n    y[thread_id] = x;\n    y[thread_id] *= x;\n}\n"
    with pytest.raises(CompileError) as e:
        getattr(kernc, mode)(src, kernel="k", wrt="x", filename="u.kern")
    assert "u.kern:5:18: error: '*=' on the view 'y' has no derivative kernel yet" in str(e.value)
    src = "kernel r(m: f32[R, C] view, out: f32[R] view) over (i, j) in (R, C) {\n    out.atomic_max(i) = m[i, j];\n}\n"
    with pytest.raises(CompileError) as e:
        getattr(kernc, mode)(src, kernel="r", filename="r.kern")
    assert "r.kern:2:23: error: the atomic min/max update of 'out' has no derivative" in str(e.value)
