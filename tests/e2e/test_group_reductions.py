"""Reductions across items (``sum[j](e)``, ``max[j](e)``, ...; kern-map-groups) on the CPU
interpreter: values against numpy for every kind and the extents that hit each path (a warp
per group, a block with registers, a block looping over a large group), bitwise determinism and
independence from the number of groups, the once-per-group write, PTX accepted by ptxas, and the
located errors of bad input. The GPU launch (marked ``gpu``) checks the same values.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import kernc
from kernc.backend import toolkit
from kernc.errors import CompileError
from conftest import EXAMPLES, compiled_example, gpu_available

sys.path.insert(0, EXAMPLES)
import layernorm as ln_ref  # noqa: E402
import softmax as sm_ref  # noqa: E402

KINDS = """
kernel kinds(a: i32[R, N] view, u: u32[R, N] view, f: f32[R, N] view, h: f16[R, N] view,
             s: i32[R] view, mx: i32[R] view, mn: u32[R] view, fa: f32[R] view, fm: f32[R] view,
             hs: f16[R] view, bits_and: u32[R] view, bits_or: u32[R] view, every: i32[R] view,
             some: i32[R] view) over (r, j) in (R, N) {
    s[r] = sum[j](a[r, j]);
    mx[r] = max[j](a[r, j]);
    mn[r] = min[j](u[r, j]);
    fa[r] = sum[j](f[r, j]);
    fm[r] = min[j](f[r, j]);
    hs[r] = sum[j](f16(h[r, j]));
    bits_and[r] = and[j](u[r, j]);
    bits_or[r] = or[j](u[r, j]);
    every[r] = select(all[j](a[r, j] > -1000000), 1, 0);
    some[r] = select(any[j](a[r, j] == 7), 1, 0);
}
"""

# a group of constant extent 5 (a warp per group, several groups per block) and a reduction over
# two coordinates of a 3-D problem
SMALL = """
kernel small(x: f32[R, 5] view, y: f32[R, 5] view) over (r, j) in (R, 5) {
    y[r, j] = x[r, j] - max[j](x[r, j]);
}
kernel planes(x: f32[B, M, N] view, y: f32[B] view) over (k, i, j) in (B, M, N) {
    y[k] = sum[i, j](x[k, i, j]);
}
kernel cols(x: f32[R, N] view, y: f32[N] view) over (r, j) in (R, N) {
    y[j] = sum[r](x[r, j]);
}
kernel total(x: f32[R, N] view, y: f32[1] view, z: f32[R, N] view) over (r, j) in (R, N) {
    let s = sum[r, j](x[r, j]);
    y[0] = s;
    z[r, j] = x[r, j] / s;
}
"""


@pytest.fixture(scope="module")
def kinds():
    return kernc.compile(KINDS, filename="kinds.kern")


@pytest.fixture(scope="module")
def small():
    return kernc.compile(SMALL, filename="small.kern")


def _kinds_inputs(R, N, rng):
    a = rng.integers(-50, 50, (R, N)).astype(np.int32)
    a[:, 0] = 2**31 - 1 - R  # the integer sum wraps
    u = rng.integers(0, 2**32, (R, N), dtype=np.uint64).astype(np.uint32)
    f = rng.standard_normal((R, N)).astype(np.float32)
    h = rng.uniform(-1, 1, (R, N)).astype(np.float16)
    out = {k: np.zeros(R, t) for k, t in (("s", np.int32), ("mx", np.int32), ("mn", np.uint32),
                                          ("fa", np.float32), ("fm", np.float32), ("hs", np.float16),
                                          ("bits_and", np.uint32), ("bits_or", np.uint32),
                                          ("every", np.int32), ("some", np.int32))}
    return {"a": a, "u": u, "f": f, "h": h, **out}


@pytest.mark.parametrize("R,N", [(1, 1), (3, 3), (2, 33), (2, 257), (1, 1000), (2, 5000)])
def test_every_kind_matches_numpy(kinds, R, N):
    args = _kinds_inputs(R, N, np.random.default_rng(R * 7 + N))
    kinds.kinds(**args)
    a, u, f = args["a"], args["u"], args["f"]
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(args["s"], a.sum(axis=1, dtype=np.int32))  # wraps mod 2^32
    np.testing.assert_array_equal(args["mx"], a.max(axis=1))
    np.testing.assert_array_equal(args["mn"], u.min(axis=1))
    np.testing.assert_array_equal(args["bits_and"], np.bitwise_and.reduce(u, axis=1))
    np.testing.assert_array_equal(args["bits_or"], np.bitwise_or.reduce(u, axis=1))
    np.testing.assert_array_equal(args["every"], np.ones(R, np.int32))
    np.testing.assert_array_equal(args["some"], (a == 7).any(axis=1).astype(np.int32))
    np.testing.assert_allclose(args["fa"], f.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(args["fm"], f.min(axis=1))
    # f16 reduces in f32 and is rounded once
    want = args["h"].astype(np.float64).sum(axis=1)
    np.testing.assert_allclose(args["hs"].astype(np.float64), want, rtol=2e-3, atol=2e-3)


WIDE = """
kernel wide(a: f64[R, N] view, b: i64[R, N] view, h: bf16[R, N] view, k: u8[R, N] view,
            s: f64[R] view, m: i64[R] view, hm: bf16[R] view, km: u8[R] view) over (r, j) in (R, N) {
    s[r] = sum[j](a[r, j]);
    m[r] = max[j](b[r, j]);
    hm[r] = max[j](bf16(h[r, j]));
    km[r] = min[j](k[r, j]);
}
"""


def test_64_bit_bf16_and_8_bit_values():
    """f64 and i64 go through the shuffles as two 32-bit halves, bf16 reduces as f32, u8 widens
    to 32 bits for the exchange; the PTX assembles for sm_80 and sm_90."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    mod = kernc.compile(WIDE, filename="wide.kern")
    R, N = 3, 300
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((R, N)), rng.integers(-2**40, 2**40, (R, N))
    h = rng.standard_normal((R, N)).astype(ml_dtypes.bfloat16)
    k = rng.integers(0, 256, (R, N)).astype(np.uint8)
    out = {"s": np.zeros(R), "m": np.zeros(R, np.int64), "hm": np.zeros(R, ml_dtypes.bfloat16),
           "km": np.zeros(R, np.uint8)}
    mod.wide(a=a, b=b, h=h, k=k, **out)
    np.testing.assert_allclose(out["s"], a.sum(axis=1), rtol=1e-13)
    np.testing.assert_array_equal(out["m"], b.max(axis=1))
    np.testing.assert_array_equal(out["hm"], h.max(axis=1))
    np.testing.assert_array_equal(out["km"], k.min(axis=1))
    if toolkit.ptxas_path() is not None:
        for arch in ("sm_80", "sm_90"):
            ptx = kernc.compile(WIDE, filename="wide.kern", arch=arch).ptx
            result = toolkit.run_ptxas(ptx, arch=arch)
            assert result.ok, result.log[-2000:]


def test_float_max_min_propagate_nan(kinds):
    args = _kinds_inputs(2, 40, np.random.default_rng(5))
    args["f"][1, 17] = np.nan
    kinds.kinds(**args)
    assert np.isnan(args["fm"][1]) and not np.isnan(args["fm"][0])  # IEEE minimum: NaN propagates


def test_warp_per_group_and_several_coordinates(small):
    rng = np.random.default_rng(3)
    for R in (1, 7, 70):
        x = rng.standard_normal((R, 5)).astype(np.float32)
        y = np.zeros_like(x)
        res = small.small(x=x, y=y)
        np.testing.assert_array_equal(y, x - x.max(axis=1, keepdims=True))
        assert res.grid == -(-R // 8)  # 8 warps of 256 threads: 8 groups per block
    x = rng.standard_normal((3, 7, 50)).astype(np.float32)
    y = np.zeros(3, np.float32)
    small.planes(x=x, y=y)
    np.testing.assert_allclose(y, x.astype(np.float64).sum(axis=(1, 2)), rtol=1e-5, atol=1e-5)


def test_column_sums_and_a_sum_over_every_item(small, capsys, tmp_path):
    x = np.random.default_rng(4).standard_normal((300, 7)).astype(np.float32)
    y = np.zeros(7, np.float32)
    assert small.cols(x=x, y=y).grid == 7  # a group per column
    np.testing.assert_allclose(y, x.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-5)
    total, z = np.zeros(1, np.float32), np.zeros_like(x)
    assert small.total(x=x, y=total, z=z).grid == 1  # one group: every item
    np.testing.assert_allclose(total, [x.astype(np.float64).sum()], rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(z, x / total[0])
    from kernc import cli

    src = tmp_path / "cols.kern"
    src.write_text(SMALL, encoding="utf-8")
    assert cli.main(["compile", "--emit", "gpu", "--remarks", "-o", os.devnull, str(src)]) == 0
    assert "'j' is not reduced, so a warp's items are strided in memory" in capsys.readouterr().err


def test_a_row_of_a_million_items_runs_looped():
    mod = compiled_example("softmax")
    x = np.random.default_rng(6).standard_normal((1, 1 << 20)).astype(np.float32)
    y = np.zeros_like(x)
    mod.softmax(x=x, y=y)
    np.testing.assert_allclose(y, sm_ref.reference({"x": x})["y"], rtol=1e-4, atol=1e-12)


@pytest.mark.parametrize("N", [1, 3, 33, 257, 1000, 4096, 5000])
def test_softmax_bitwise_deterministic_and_independent_of_rows(N):
    mod = compiled_example("softmax")
    rng = np.random.default_rng(N)
    x = (4 * rng.standard_normal((5, N))).astype(np.float32)
    ys = []
    for _ in range(2):
        y = np.zeros_like(x)
        mod.softmax(x=x, y=y)
        ys.append(y)
    np.testing.assert_array_equal(ys[0].view(np.uint32), ys[1].view(np.uint32))
    one = np.zeros((1, N), np.float32)
    mod.softmax(x=x[3:4].copy(), y=one)  # row 3 alone: the same bits as among five rows
    np.testing.assert_array_equal(one[0].view(np.uint32), ys[0][3].view(np.uint32))
    want = sm_ref.reference({"x": x})["y"]
    np.testing.assert_allclose(ys[0], want, **sm_ref.TOLERANCE)


@pytest.mark.parametrize("R,N", [(1, 1), (1, 3), (4, 33), (3, 257), (2, 1000), (1, 5000)])
def test_layernorm_forward_and_backward(R, N):
    mod = compiled_example("layernorm")
    rng = np.random.default_rng(R * 1000 + N)
    inputs = ln_ref.make_inputs(0, rng)
    inputs.update(x=(1.5 + 2 * rng.standard_normal((R, N))).astype(np.float32),
                  w=rng.uniform(0.5, 1.5, N).astype(np.float32), b=rng.standard_normal(N).astype(np.float32),
                  y=np.zeros((R, N), np.float32), mean=np.zeros(R, np.float32), rstd=np.zeros(R, np.float32))
    want = ln_ref.reference(dict(inputs))
    mod.layernorm(**inputs)
    for k, v in want.items():
        np.testing.assert_allclose(inputs[k], v, **ln_ref.TOLERANCE, err_msg=k)
    first = {k: inputs[k].copy() for k in want}
    inputs["y"][:] = 0
    mod.layernorm(**inputs)
    for k in want:  # bitwise the same on a second run
        np.testing.assert_array_equal(inputs[k].view(np.uint32), first[k].view(np.uint32))
    bwd = ln_ref.backward_inputs(R, N, rng)
    expected = ln_ref.backward({k: v.copy() for k, v in bwd.items()})
    mod.layernorm_bwd(**bwd)
    for k, v in expected.items():
        np.testing.assert_allclose(bwd[k], v, rtol=1e-4, atol=2e-5, err_msg=k)


def test_counters_softmax_rows_read_once_coalesced():
    mod = compiled_example("softmax")
    x = np.random.default_rng(0).standard_normal((8, 4096)).astype(np.float32)
    st = mod.softmax(x=x, y=np.zeros_like(x)).stats
    assert st.global_load_sectors / st.global_load_requests == 4.0
    assert st.global_load_sectors * 32 == x.nbytes  # every element loaded once (registers)


def test_registers_off_rereads_with_the_same_bits():
    """group_registers=False (kernc compile --no-group-registers): every phase re-reads x (3 loads
    of each element for softmax's 3 phases), and the results are the same bits."""
    path = os.path.join(EXAMPLES, "softmax.kern")
    off = kernc.compile_file(path, group_registers=False)
    on = compiled_example("softmax")
    x = (4 * np.random.default_rng(2).standard_normal((3, 1000))).astype(np.float32)
    y_on, y_off = np.zeros_like(x), np.zeros_like(x)
    st_on = on.softmax(x=x, y=y_on).stats
    st_off = off.softmax(x=x, y=y_off).stats
    np.testing.assert_array_equal(y_on.view(np.uint32), y_off.view(np.uint32))
    assert st_on.global_load_sectors * 3 == st_off.global_load_sectors


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
@pytest.mark.parametrize("name", ["softmax", "layernorm"])
def test_ptxas_accepts_sm_90(name):
    ptx = compiled_example(name).ptx
    result = toolkit.run_ptxas(ptx, arch="sm_90")
    assert result.ok, result.log[-3000:]
    assert "shfl.sync.bfly.b32" in ptx and "bar.sync" in ptx
    assert all(v == (0, 0) for v in result.spills.values()), result.log[-2000:]  # registers fit


def test_remarks_explain_the_mapping(capsys):
    from kernc import cli

    path = os.path.join(EXAMPLES, "softmax.kern")
    assert cli.main(["compile", "--emit", "gpu", "--remarks", "-o", os.devnull, path]) == 0
    err = capsys.readouterr().err
    with open(path, encoding="utf-8") as f:
        line = next(n for n, text in enumerate(f, 1) if "let m = max[j]" in text)
    assert f"softmax.kern:{line}:13: remark: reducing over (j) with a block of 256 threads per group" in err
    assert "kept in registers" in err


# ---- bad input --------------------------------------------------------------------------------

_HEAD = "kernel k(x: f32[R, N] view, y: f32[R, N] view, m: f32[R] view) over (r, j) in (R, N) {\n"


@pytest.mark.parametrize("body,message", [
    ("y[r, j] = sum[q](x[r, j]);", "'q' is not a coordinate of kernel 'k'"),
    ("if x[r, j] > 0.0 { y[r, j] = sum[j](x[r, j]); }", "top-level statements"),
    ("y[r, j] = sum[j](x[r, j] - max[j](x[r, j]));", "nested reductions"),
    ("y[r, j] = sum[j](x[r, j]) + sum[r](x[r, j]);", "must reduce the same coordinates"),
    ("y[r, j] = f32(and[j](x[r, j]));", "needs a integer or bool value"),
    ("y[r, j] = select(all[j](1), 1.0, 0.0);", "needs a bool value"),
    ("y[r, j] = prod[j](x[r, j]);", "is not a reduction"),
    ("let q = j; m[r + q] = sum[j](x[r, j]);", "data race"),
    ("let s = sum[j](x[r, j]); m[r] += x[r, j] + s;", "data race"),
    ("let s = sum[j](x[r, j]); m[0] = s;", "data race"),
    ("if x[r, j] > 0.0 { return; } y[r, j] = sum[j](x[r, j]);", "after a `return`"),
    ("for c in 0..3 { y[r, j] = max[j](x[r, c]); }", "top-level statements"),
    ("y[r, j] = sum[j](index(j));", "numeric type other than 'index'"),
])
def test_bad_reductions_are_located_errors(body, message):
    with pytest.raises(CompileError) as err:
        kernc.compile(_HEAD + "    " + body + "\n}\n", filename="bad.kern")
    text = str(err.value)
    assert message in text, text
    assert "bad.kern:2:" in text, text


def test_reduction_in_a_1d_kernel_is_refused():
    with pytest.raises(CompileError) as err:
        kernc.compile("kernel k(x: f32[n] view, y: f32[n] view) over n {\n    y[thread_id] = "
                      "sum[n](x[thread_id]);\n}\n", filename="one.kern")
    assert "this kernel is 1-D" in str(err.value) and "one.kern:2:" in str(err.value)


def test_once_per_group_write_is_the_first_items():
    mod = kernc.compile(_HEAD + "    let s = sum[j](x[r, j]);\n    m[r] = x[r, j] + s;\n"
                                "    y[r, j] = s;\n}\n", filename="once.kern")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    m = np.zeros(3, np.float32)
    mod.k(x=x, y=np.zeros_like(x), m=m)
    np.testing.assert_array_equal(m, x[:, 0] + x.sum(axis=1))  # item j == 0 writes


@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("R,N", [(64, 4096), (3, 5000), (7, 33)])
def test_gpu_matches_the_interpreter(R, N):
    """The same gpu IR on the GPU: layernorm bitwise (add, mul, div and sqrt are correctly
    rounded on both); softmax within a few ulps (exp is libdevice's there, numpy's here), its
    reductions in the same order."""
    import cupy as cp

    rng = np.random.default_rng(R + N)
    sm = compiled_example("softmax")
    x = (4 * rng.standard_normal((R, N))).astype(np.float32)
    y = np.zeros_like(x)
    sm.softmax(x=x, y=y)
    gy = cp.zeros_like(cp.asarray(x))
    sm.softmax(x=cp.asarray(x), y=gy)
    np.testing.assert_allclose(gy.get(), y, rtol=1e-5, atol=1e-9)
    ln = compiled_example("layernorm")
    cpu = ln_ref.make_inputs(0, rng)
    cpu.update(x=x, w=rng.uniform(0.5, 1.5, N).astype(np.float32), b=rng.standard_normal(N).astype(np.float32),
               y=np.zeros_like(x), mean=np.zeros(R, np.float32), rstd=np.zeros(R, np.float32))
    dev = {k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in cpu.items()}
    ln.layernorm(**cpu)
    ln.layernorm(**dev)
    for k in ("y", "mean", "rstd"):
        np.testing.assert_array_equal(dev[k].get().view(np.uint32), cpu[k].view(np.uint32), err_msg=k)


def test_launch_grid_runs_a_block_per_groups_of_the_signature():
    from kernc.backend import launch_policy

    sig = compiled_example("layernorm").layernorm.signature  # w, b kept across 4 groups per block
    assert sig.groups == {"extents": ["N"], "per_block": 4}
    assert launch_policy.launch_grid(sig, 10 * 7, {"R": 10, "N": 7}) == (3, 10 + 3 * 3)
    assert launch_policy.launch_grid(sig, 0, {"R": 0, "N": 7})[0] == 0
    x = np.ones((10, 7), np.float32)
    args = dict(x=x, w=np.ones(7, np.float32), b=np.zeros(7, np.float32), y=np.zeros_like(x),
                mean=np.zeros(10, np.float32), rstd=np.zeros(10, np.float32), eps=np.float32(1.0))
    assert compiled_example("layernorm").layernorm(**args).grid == 3
    np.testing.assert_array_equal(args["mean"], np.ones(10, np.float32))
    np.testing.assert_array_equal(args["y"], np.zeros_like(x))


def test_reduction_in_a_function_is_refused():
    src = ("fn rowsum(v: f32) -> f32 {\n    return sum[j](v);\n}\n"
           "kernel k(x: f32[R, N] view, y: f32[R, N] view) over (r, j) in (R, N) {\n"
           "    y[r, j] = rowsum(x[r, j]);\n}\n")
    with pytest.raises(CompileError) as err:
        kernc.compile(src, filename="fn.kern")
    assert "cannot stand in a function" in str(err.value) and "fn.kern:2:12" in str(err.value)


MIX = """
kernel mix(x: f32[R, N] view, y: f32[R, N] view, z: f32[R, N] view, c: f32[R] view) over (r, j) in (R, N) {
    let v = x[r, j];
    if v < 0.0 {
        v = -v;
        z[r, j] = 1.0;
    } else {
        z[r, j] = 2.0;
    }
    let acc = 0.0;
    for k in 0..3 {
        acc += v * f32(k);
    }
    let m = max[j](acc);
    let t = acc / m;
    if t > 0.5 {
        t = t * 2.0;
    }
    let s = sum[j](t);
    c[r] = s;
    y[r, j] = t / s + v;
}
"""


def test_control_flow_around_and_between_reductions():
    """An `if` that both writes and computes before a reduction (its values in the phases, its
    write in the last one), a loop, an `if` between reductions; registers on and off, bitwise
    alike."""
    runs = []
    for registers in (True, False):
        mod = kernc.compile(MIX, filename="mix.kern", group_registers=registers)
        results = []
        for R, N in [(3, 7), (2, 300), (2, 5000)]:
            x = np.random.default_rng(R + N).standard_normal((R, N)).astype(np.float32)
            out = {"y": np.zeros_like(x), "z": np.zeros_like(x), "c": np.zeros(R, np.float32)}
            mod.mix(x=x, **out)
            v = np.abs(x)
            acc = v * 0 + v * 1 + v * 2
            t = acc / acc.max(axis=1, keepdims=True)
            t = np.where(t > 0.5, t * 2, t)
            s = t.sum(axis=1, keepdims=True)
            np.testing.assert_allclose(out["y"], t / s + v, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(out["c"], s[:, 0], rtol=1e-5)
            np.testing.assert_array_equal(out["z"], np.where(x < 0, 1, 2))
            results.append(out["y"])
        runs.append(results)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def test_reductions_in_a_top_level_condition_and_loop_bound():
    src = """
kernel k(x: f32[R, N] view, y: f32[R, N] view) over (r, j) in (R, N) {
    if sum[j](x[r, j]) > 0.0 {
        y[r, j] = 1.0;
    } else {
        y[r, j] = -1.0;
    }
    for k in 0..i32(max[j](x[r, j])) {
        y[r, j] += 10.0;
    }
}
"""
    mod = kernc.compile(src, filename="cond.kern")
    x = (2 * np.random.default_rng(1).standard_normal((6, 40))).astype(np.float32)
    y = np.zeros_like(x)
    mod.k(x=x, y=y)
    want = (np.where(x.sum(axis=1, keepdims=True) > 0, 1.0, -1.0)
            + 10 * np.maximum(0, x.max(axis=1, keepdims=True).astype(np.int32)))
    np.testing.assert_array_equal(y, np.broadcast_to(want, x.shape).astype(np.float32))

