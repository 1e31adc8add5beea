"""``kern-select-to-branch`` (passes/select_to_branch.py): a select's expensive operand is computed
under a branch on the GPU path. The operands are pure, so the branch version computes exactly what
the select does; these tests run both forms on the CPU interpreter (and, with a GPU, the PTX against
the interpreter) on inputs that reach every special case: zeros of both signs, infinities, NaN,
subnormals, negative square roots, exp overflow."""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.backend.interpreter import Interpreter
from kernc.compiler import CompileOptions, Compilation, context, run_passes
from kernc.support.mlir import ir
from passes.select_to_branch import SelectToBranch

SRC = """
kernel k(x: f32[n] read, y: f32[n] read, i: i32[n] read, j: i32[n] read, vmax: f32,
         a: f32[n] write, b: f32[n] write, c: f32[n] write, d: i32[n] write, e: f64[n] write) over n {
    let s = sqrt(x * x + y * y);
    a = x * select(s > vmax, vmax / max(s, 1e-30), 1.0);     // the clamp of examples/particles.kern
    b = select(x < y, sqrt(x - 1.0), exp(y) / x);            // both sides expensive
    c = select(x >= 0.0, x * 2.0 + y, 0.25);                 // cheap: stays a select
    d = select(j != 0, i / select(j != 0, j, 1), i % 7);     // integer division, nested select
    e = select(x > 0.0, log(f64(x)) / f64(y), -1.0);         // f64
}
"""


def _inputs(n: int = 3000):
    rng = np.random.default_rng(11)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-38, 3.0, -3.0, 1e30, 89.0, 100.0],
                       np.float32)
    x = np.concatenate([special, rng.standard_normal(n) * 10]).astype(np.float32)
    y = np.concatenate([special[::-1], rng.standard_normal(n) * 10]).astype(np.float32)
    x, y = np.tile(x, 2)[:len(x) + 13], np.concatenate([y, special])  # every special against every other
    m = min(len(x), len(y))
    x, y = x[:m], y[:m]
    i = rng.integers(-1000, 1000, m).astype(np.int32)
    j = rng.integers(-5, 5, m).astype(np.int32)
    return {"x": x, "y": y, "i": i, "j": j, "vmax": np.float32(2.5)}


def _outputs(m: int):
    return {"a": np.zeros(m, np.float32), "b": np.zeros(m, np.float32), "c": np.zeros(m, np.float32),
            "d": np.zeros(m, np.int32), "e": np.zeros(m, np.float64)}


@pytest.fixture(scope="module")
def gpu_ir():
    """The kernel's gpu IR (selects) and the same IR after kern-select-to-branch (branches)."""
    comp = Compilation(SRC, "select.kern", CompileOptions(), use_cache=False)
    text = comp.gpu_ir(debug_info=True)
    with context(), ir.Location.unknown():
        branched = ir.Module.parse(text)
        run_passes(branched, [SelectToBranch()])
        return text, str(branched)


def test_the_pass_branches_only_the_expensive_selects(gpu_ir):
    selects, branched = gpu_ir
    body = branched.split("gpu.func")[1]
    # a's clamp, b (both sides), d's division (with the inner select of its divisor) and e's f64 log
    # move under branches; c's select and d's inner one (now inside d's branch) stay selects
    assert selects.count("arith.select") == 6
    assert body.count("arith.select") == 2
    assert body.count("scf.if") - selects.split("gpu.func")[1].count("scf.if") == 4
    assert "math.sqrt" in body and "arith.divsi" in body


def test_branches_compute_what_the_selects_compute(gpu_ir):
    """The interpreter runs both forms: every output bitwise equal (NaN payloads included)."""
    selects, branched = gpu_ir
    args = _inputs()
    m = len(args["x"])
    results = []
    for text in (selects, branched):
        with context():
            it = Interpreter(ir.Module.parse(text))
        outs = _outputs(m)
        values = {**args, **outs, "n": m}
        it.run("k", -(-m // 256), 256, [values[name] for name in it.arg_names("k")])
        results.append(outs)
    for name in results[0]:
        np.testing.assert_array_equal(results[0][name].view(np.uint8), results[1][name].view(np.uint8),
                                      err_msg=name)
    # and the values are the kernel's meaning (numpy), not merely equal to each other
    x, y = args["x"], args["y"]
    with np.errstate(all="ignore"):
        s = np.sqrt(x * x + y * y)
        want_a = x * np.where(s > args["vmax"], args["vmax"] / np.maximum(s, np.float32(1e-30)), np.float32(1))
    np.testing.assert_array_equal(results[1]["a"], want_a.astype(np.float32))


@pytest.mark.gpu
def test_gpu_branches_agree_with_the_cpu_bitwise():
    """The PTX (with the branches) against the interpreter (the gpu IR with selects)."""
    import cupy as cp

    mod = kernc.compile(SRC)
    args = _inputs()
    m = len(args["x"])
    cpu, gpu = _outputs(m), {k: cp.asarray(v) for k, v in _outputs(m).items()}
    mod.k(**args, **cpu)
    mod.k(**{k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in args.items()}, **gpu)
    assert "div.rn.f32" in mod.ptx
    for name in cpu:
        got = gpu[name].get()
        if got.dtype.kind == "f":  # NaN payloads may differ between the devices; positions may not
            assert np.array_equal(np.isnan(got), np.isnan(cpu[name])), name
            got, want = np.nan_to_num(got, nan=0.0), np.nan_to_num(cpu[name], nan=0.0)
        else:
            want = cpu[name]
        if name in ("b", "e"):  # exp/log: libdevice on the GPU, numpy on the CPU (a few ulps)
            np.testing.assert_allclose(got, want, rtol=2e-6, err_msg=name)
        else:
            np.testing.assert_array_equal(got, want, err_msg=name)
