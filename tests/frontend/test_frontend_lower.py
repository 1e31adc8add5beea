"""Lowering tests: kern IR structure, signedness, signatures, locations, and semantics (the emitted
IR is run by the small reference evaluator in ``kern_eval.py`` and compared with numpy)."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.dialect.strided import StridedLayout
from kernc.support.mlir import ir, passmanager

from frontend_helpers import EXAMPLES, compile_text
from kern_eval import Evaluator

EXAMPLE_NAMES = ["saxpy", "gather_scatter", "particles", "edge_update", "laplacian_1d"]


def load_reference(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ir_text(src: str) -> str:
    _, m = compile_text(src)
    return str(m)


def signature(module, index: int = 0) -> KernelSignature:
    op = module.body.operations[index].operation
    return KernelSignature.from_json(ir.StringAttr(op.attributes[SIGNATURE_ATTR]).value)


def canonicalize(ctx, module):
    with ctx:
        passmanager.PassManager.parse("builtin.module(canonicalize)").run(module.operation)
    assert module.operation.verify()


def run(src: str, inputs: dict, name: str = "k", P=None):
    ctx, m = compile_text(src)
    with ctx:
        return Evaluator(m, name).run(inputs, P=P)


# ---- examples ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_examples_lower_verify_and_canonicalize(name):
    path = EXAMPLES / f"{name}.kern"
    ctx, m = compile_text(path.read_text(), str(path))
    assert m.operation.verify()
    text = str(m)
    assert f"func.func @{name}(" in text
    assert "vector<" not in text
    canonicalize(ctx, m)
    assert "kern.read" in str(m)


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
@pytest.mark.parametrize("P", [1, 5, 70])
def test_examples_match_numpy_reference(name, P):
    ref = load_reference(name)
    ctx, m = compile_text((EXAMPLES / f"{name}.kern").read_text())
    inputs = ref.make_inputs(P, np.random.default_rng(1000 + P))
    expected = ref.reference(inputs)
    with ctx:
        got = Evaluator(m, name).run(inputs)
    assert set(expected) == set(got)
    for k, want in expected.items():
        assert got[k].shape == want.shape
        np.testing.assert_allclose(got[k], want, rtol=2e-6, atol=1e-6, err_msg=k)


def test_saxpy_ir_and_signature():
    ctx, m = compile_text((EXAMPLES / "saxpy.kern").read_text(), "saxpy.kern")
    text = str(m)
    assert ("func.func @saxpy(%arg0: f32, %arg1: memref<?xf32>, %arg2: memref<?xf32>, %arg3: index)"
            in text)
    assert text.count('"kern.read"') == 1
    assert text.count('"kern.add"') == 1
    assert 'accessor = "sequential", layout = "(n):(1)"' in text
    sig = signature(m)
    assert sig.name == "saxpy" and sig.sizes == ["n"] and sig.problem_size == "n" and sig.block == 256
    a, x, y = sig.params
    assert (a.kind, a.dtype, a.access) == ("scalar", "f32", None)
    assert (x.kind, x.access, x.accessor, x.dims, x.layout, x.storage_shape) == (
        "buffer", "read", "sequential", ["n"], "(n):(1)", ["n"])
    assert (y.access, y.components) == ("add", 1)


def test_gather_scatter_signature_and_accessor_args():
    _, m = compile_text((EXAMPLES / "gather_scatter.kern").read_text())
    sig = signature(m)
    assert sig.sizes == ["m", "n", "k", "m2"]
    x = sig.param("x")
    assert (x.accessor, x.index_param) == ("indexed", "idx")
    assert sig.param("s").accessor == "strided"
    assert (sig.param("out").access, sig.param("out").index_param) == ("write", "dst")
    text = str(m)
    # strided read takes (off, st) = the two index scalar args, then the size k
    assert '"kern.read"(%arg2, %arg3, %arg4, %arg10) {accessor = "strided"' in text
    assert '"kern.read"(%arg0, %arg1, %arg8) {accessor = "indexed"' in text
    assert '"kern.write"(%arg5, %arg6, %arg11,' in text


def test_particles_soa_signature():
    _, m = compile_text((EXAMPLES / "particles.kern").read_text())
    sig = signature(m)
    pos = sig.param("pos")
    assert (pos.components, pos.dims, pos.layout, pos.storage_shape) == (3, ["n", 3], "(n,3):(1,n)", [3, "n"])
    assert StridedLayout.parse(pos.layout).symbols == ["n"]
    assert sig.block == 128
    assert sig.param("speed").storage_shape == ["n"]


# ---- layouts and signatures -------------------------------------------------------------------


def test_layout_forms_and_storage_shapes():
    src = ("layout rm(R, C) = (R, C):(C, 1);\nlayout st = (4, 2):(1, 4);\n"
           "@deterministic @checked\n"
           "kernel k(a: f32[n, 3] read, b: f32[n, 3] read as soa, c: f32[n, 3] read as rm(n, 3),\n"
           "         d: f32[n, 3] read as (n, 3):(1, n), e: f32[4, 2] read as st,\n"
           "         f: f32[n, 2] read as (n, 2):(2 * ld, 1), o: f32[n] write) over n {\n"
           "    o = a[0] + b[1] + c[2] + d[0] + e[1] + f[0];\n}\n")
    _, m = compile_text(src)
    sig = signature(m)
    got = {p.name: (p.layout, p.storage_shape) for p in sig.params}
    assert got["a"] == ("(n,3):(3,1)", ["n", 3])
    assert got["b"] == ("(n,3):(1,n)", [3, "n"])
    assert got["c"] == ("(n,3):(3,1)", ["n", 3])
    assert got["d"] == ("(n,3):(1,n)", [3, "n"])
    assert got["e"] == ("(4,2):(1,4)", [2, 4])
    assert got["f"][0] == "(n,2):(2*ld,1)"
    assert len(got["f"][1]) == 1  # not row-major: flat cosize
    assert sig.sizes == ["n", "ld"]
    assert sig.attributes == ["deterministic", "checked"]
    for p in sig.params:
        StridedLayout.parse(p.layout)


def test_scalar_problem_size_and_fresh_over_symbol():
    _, m = compile_text("kernel k(P: u32, o: f32[n] write) over P { o = f32(problem_size); }")
    sig = signature(m)
    assert sig.problem_size == "P" and sig.sizes == ["n"]
    assert "arith.index_castui %arg0 : i32 to index" in str(m)
    _, m2 = compile_text("kernel k(o: f32[n] write) over Q { o = 1.0; }")
    sig2 = signature(m2)
    assert sig2.sizes == ["n", "Q"] and sig2.problem_size == "Q"


def test_param_and_size_argument_types():
    _, m = compile_text("kernel k(a: bool, b: u8, c: i64, d: f16, e: bf16, f: f64, g: index, "
                        "x: u16[n] read, y: bf16[q] write) over n { y = e; }")
    assert ("func.func @k(%arg0: i1, %arg1: i8, %arg2: i64, %arg3: f16, %arg4: bf16, %arg5: f64, "
            "%arg6: index, %arg7: memref<?xi16>, %arg8: memref<?xbf16>, %arg9: index, %arg10: index)"
            in str(m))


def test_locations_are_source_positions():
    _, m = compile_text("kernel k(a: f32, x: f32[n] read, y: f32[n] write) over n {\n"
                        "    let t = a *\n        x;\n    y = t;\n}\n", "loc.kern")
    func = m.body.operations[0]
    ops = {op.operation.name: op.operation for op in func.regions[0].blocks[0].operations}
    assert str(ops["arith.mulf"].location) == 'loc("loc.kern":2:15)'
    assert str(ops["kern.read"].location) == 'loc("loc.kern":1:18)'
    assert str(ops["kern.write"].location) == 'loc("loc.kern":1:34)'


# ---- signedness reaches the IR ---------------------------------------------------------------


def ops_of(src_body: str, params: str) -> str:
    return ir_text(f"kernel k({params}, o: f32[n] write) over n {{\n{src_body}\n o = 0.0;\n}}")


@pytest.mark.parametrize("ty, present, absent", [
    ("u32",
     ["arith.divui", "arith.remui", "arith.cmpi ult", "arith.shrui", "arith.uitofp", "arith.extui"],
     ["arith.divsi", "arith.remsi", "arith.cmpi slt", "arith.shrsi", "arith.sitofp", "arith.extsi"]),
    ("i32",
     ["arith.divsi", "arith.remsi", "arith.cmpi slt", "arith.shrsi", "arith.sitofp", "arith.extsi"],
     ["arith.divui", "arith.remui", "arith.cmpi ult", "arith.shrui", "arith.uitofp", "arith.extui"]),
])
def test_signedness(ty, present, absent):
    text = ops_of("let q = p / r; let m = p % r; let c = p < r; let s = p >> r; "
                  "let f = f32(p); let w = i64(p);", f"p: {ty}, r: {ty}")
    for op in present:
        assert op in text, op
    for op in absent:
        assert op not in text, op


def test_float_to_int_casts_follow_destination_signedness():
    text = ops_of("let a = u32(x); let b = i32(x); let c = index(x);", "x: f32")
    assert "arith.fptoui %arg0 : f32 to i32" in text
    assert "arith.fptosi %arg0 : f32 to i32" in text
    assert "arith.fptosi %arg0 : f32 to i64" in text


def test_floor_division_ops():
    text = ops_of("let a = p // r; let b = p %% r; let c = q // s; let d = q %% s;",
                  "p: i32, r: i32, q: u32, s: u32")
    assert "arith.floordivsi" in text
    assert text.count("arith.remsi") == 1 and "arith.xori" in text
    assert text.count("arith.divui") == 1 and text.count("arith.remui") == 1


def test_min_max_abs_ops():
    text = ops_of("let a = min(x, y); let b = max(x, y); let c = min(p, r); let d = max(q, s);"
                  "let e = abs(x); let f = abs(p);", "x: f32, y: f32, p: i32, r: i32, q: u8, s: u8")
    for op in ("arith.minnumf", "arith.maxnumf", "arith.minsi", "arith.maxui", "math.absf"):
        assert op in text, op
    # integer abs is a compare-and-select (math.absi has no LLVM lowering for every width)
    assert "math.absi" not in text and "arith.cmpi slt" in text and "arith.subi" in text


def test_index_casts():
    text = ops_of("let a = index(p); let b = index(q); let c = u32(thread_id); let d = f32(thread_id);",
                  "p: i32, q: u32")
    assert "arith.index_cast %arg0 : i32 to index" in text
    assert "arith.index_castui %arg1 : i32 to index" in text
    assert "arith.index_cast %0 : index to i32" in text or "index to i32" in text
    assert "arith.sitofp" in text and "index to i64" in text


# ---- structure: reads, writes, flags ----------------------------------------------------------


def test_reads_are_hoisted_and_emitted_once():
    text = ir_text("kernel k(c: bool, x: f32[n] read, y: f32[n] write) over n {\n"
                   "  if c { y = x * x; } else { y = x + x; }\n}")
    assert text.count('"kern.read"') == 1
    assert text.index('"kern.read"') < text.index("scf.if")
    # y is assigned on every path: no flag, one unconditional write at top level
    assert text.count('"kern.write"') == 1
    assert "scf.if %arg0 -> (f32)" in text


def test_conditional_write_is_guarded_by_flag():
    text = ir_text("kernel k(c: bool, y: f32[n] write) over n { if c { y = 1.0; } }")
    assert "-> (f32, i1)" in text
    lines = [l.strip() for l in text.splitlines()]
    w = next(i for i, l in enumerate(lines) if l.startswith('"kern.write"'))
    assert lines[w - 1].startswith("scf.if %")
    _, m = compile_text("kernel k(c: bool, y: f32[n] write) over n { if c { y = 1.0; } }")
    out = run("kernel k(c: bool, y: f32[n] write) over n { if c { y = 1.0; } }",
              {"c": False, "y": np.full(3, 7.0, np.float32)})
    assert out["y"].tolist() == [7.0, 7.0, 7.0]


def test_unassigned_outputs_get_no_op():
    text = ir_text("kernel k(y: f32[n] write, z: f32[n] add) over n { }")
    assert '"kern.write"' not in text and '"kern.add"' not in text


# ---- semantics through the evaluator -----------------------------------------------------------


def test_early_return_semantics():
    src = ("kernel k(x: i32[n] read, y: i32[n] write, z: i32[n] add) over n {\n"
           "    z += 1;\n"
           "    if x < 0 { return; }\n"
           "    y = x * 2;\n"
           "    for i in 0..x {\n"
           "        if i == 3 { return; }\n"
           "        z += 10;\n"
           "    }\n"
           "    z += 100;\n"
           "}\n")
    x = np.array([-5, 0, 2, 3, 7], np.int32)
    out = run(src, {"x": x, "y": np.full(5, -1, np.int32), "z": np.zeros(5, np.int32)})
    assert out["y"].tolist() == [-1, 0, 4, 6, 14]
    assert out["z"].tolist() == [1, 101, 121, 131, 31]


def test_integer_division_semantics():
    src = ("kernel k(a: i32[n] read, b: i32[n] read, q: i32[n, 4] write) over n {\n"
           "    q = [a / b, a % b, a // b, a %% b];\n}\n")
    a = np.array([7, -7, 7, -7, 6, -6, 0], np.int32)
    b = np.array([2, 2, -2, -2, 3, -3, 5], np.int32)
    out = run(src, {"a": a, "b": b, "q": np.zeros((7, 4), np.int32)})["q"]
    assert out[:, 0].tolist() == [3, -3, -3, 3, 2, 2, 0]   # C truncation
    assert out[:, 1].tolist() == [1, -1, 1, -1, 0, 0, 0]
    assert out[:, 2].tolist() == (a // b).tolist()          # floor (Python semantics)
    assert out[:, 3].tolist() == (a % b).tolist()


def test_unsigned_semantics():
    src = ("kernel k(a: u32[n] read, o: u32[n, 3] write, f: f32[n] write) over n {\n"
           "    o = [a / 3, a >> 1, select(a > 5, 1, 0)];\n    f = f32(a);\n}\n")
    a = np.array([4294967295, 6, 5], np.uint32)
    out = run(src, {"a": a, "o": np.zeros((3, 3), np.uint32), "f": np.zeros(3, np.float32)})
    assert out["o"].tolist() == [[1431655765, 2147483647, 1], [2, 3, 1], [1, 2, 0]]
    assert out["f"].tolist() == [4294967296.0, 6.0, 5.0]


def test_mutable_lets_through_loops_and_branches_and_dynamic_components():
    src = ("kernel k(x: f32[n, 3] read, m: i32, o: f32[n, 3] write) over n {\n"
           "    let acc = 0.0;\n"
           "    let v = x;\n"
           "    for k in 0..3 {\n"
           "        acc += v[k];\n"
           "        if k == m { v[k] = -1.0; } else { v[k] *= 2.0; }\n"
           "    }\n"
           "    o = v + acc;\n}\n")
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    out = run(src, {"x": x, "m": 1, "o": np.zeros((2, 3), np.float32)})["o"]
    assert out.tolist() == [[8.0, 5.0, 12.0], [23.0, 14.0, 27.0]]


def test_builtins_and_literal_typing():
    src = ("@block(32)\nkernel k(o: u32[n, 4] write, f: f64[n] write) over n {\n"
           "    o = [u32(thread_id), u32(block_id), u32(lane_id), u32(problem_size)];\n"
           "    f = 1 + 0.5 * f64(thread_id);\n}\n")
    out = run(src, {"o": np.zeros((40, 4), np.uint32), "f": np.zeros(40)})
    t = np.arange(40)
    assert out["o"].tolist() == np.stack([t, t // 32, t % 32, np.full(40, 40)], 1).tolist()
    assert out["f"].tolist() == (1 + 0.5 * t).tolist()


def test_min_max_nan_semantics_and_vector_math():
    src = ("kernel k(x: f32[n] read, o: f32[n, 3] write) over n {\n"
           "    o = [min(x, 1.0), max(x, 1.0), fma(x, 2.0, 1.0)];\n}\n")
    x = np.array([np.nan, 0.5, 3.0], np.float32)
    out = run(src, {"x": x, "o": np.zeros((3, 3), np.float32)})["o"]
    assert out[:, 0].tolist() == [1.0, 0.5, 1.0]
    assert out[:, 1].tolist() == [1.0, 1.0, 3.0]
    assert out[1:, 2].tolist() == [2.0, 7.0]


def test_strided_negative_and_indexed_write():
    src = ("kernel k(x: f32[m] read strided(off, s), off: index, s: index,\n"
           "         d: i32[n] read, o: f32[q] write indexed(d)) over n { o = x; }\n")
    x = np.arange(10, dtype=np.float32)
    out = run(src, {"x": x, "off": 9, "s": -2, "d": np.array([4, 0, 2], np.int32),
                    "o": np.full(5, -1, np.float32)})
    assert out["o"].tolist() == [7.0, -1.0, 5.0, -1.0, 9.0]


def test_signature_json_is_what_the_attribute_holds():
    _, m = compile_text((EXAMPLES / "particles.kern").read_text())
    op = m.body.operations[0].operation
    data = json.loads(ir.StringAttr(op.attributes[SIGNATURE_ATTR]).value)
    assert data["name"] == "particles"
    assert [p["name"] for p in data["params"]] == [
        "pos", "vel", "dt", "vmax", "new_pos", "new_vel", "speed", "energy"]


def test_multiple_kernels_in_one_module():
    src = ("kernel a(x: f32[n] read, y: f32[n] write) over n { y = x; }\n"
           "kernel b(x: f32[n] read, y: f32[n] add) over n { y += x; }\n")
    ctx, m = compile_text(src)
    names = [ir.StringAttr(op.operation.attributes["sym_name"]).value for op in m.body.operations]
    assert names == ["a", "b"]
    canonicalize(ctx, m)


# ---- unrolling of short literal-bound loops ---------------------------------------------------

_LOOP_CASES = {
    # mutable lets, a loop variable compared and used as a component index, read and write
    "lets_and_components": (
        "kernel k(x: f32[n, 3] read, m: i32, o: f32[n, 3] write) over n {\n"
        "    let acc = 0.0;\n    let v = x;\n"
        "    for k in 0..3 {\n        acc += v[k];\n"
        "        if k == m { v[k] = -1.0; } else { v[k] *= 2.0; }\n    }\n"
        "    o = v + acc;\n}\n"),
    # components past the end: a read gives the last one, a write changes nothing
    "out_of_range_components": (
        "kernel k(x: f32[n, 3] read, m: i32, o: f32[n, 4] write) over n {\n"
        "    let acc = 0.0;\n    let v = x;\n"
        "    for k in 1..6 {\n        acc += v[k] * f32(k);\n        v[k] = f32(k + m);\n    }\n"
        "    o = [v[0], v[1], v[2], acc];\n}\n"),
    # a negative start: v[-2] and v[-1] read the last component
    "negative_start": (
        "kernel k(x: f32[n, 3] read, m: i32, o: f32[n] write) over n {\n"
        "    let acc = 0.0;\n"
        "    for k in -2..2 { acc = acc * 3.0 + x[k] + f32(k * m); }\n"
        "    o = acc;\n}\n"),
    # return inside the body: later iterations and statements are skipped
    "return_in_body": (
        "kernel k(x: f32[n, 3] read, m: i32, o: f32[n] write, c: i32[n] write) over n {\n"
        "    let acc = 0.0;\n    c = 0;\n"
        "    for k in 0..3 {\n        if x[k] < 0.0 { o = acc; c = k + m; return; }\n"
        "        acc += x[k];\n    }\n"
        "    o = acc * 10.0;\n    c = -1;\n}\n"),
    # nested loops, unsigned loop variables, an empty range
    "nested_unsigned_empty": (
        "kernel k(x: f32[n, 3] read, m: i32, o: f32[n, 3] write) over n {\n"
        "    let r = [0.0, 0.0, 0.0];\n"
        "    for i in 0u32..3u32 {\n        for j in 0u32..3u32 {\n"
        "            r[i] += x[j] * f32(i * 3u32 + j);\n        }\n    }\n"
        "    for e in 3..1 { r[0] = 99.0; }\n"
        "    o = r + f32(m);\n}\n"),
}

_LOOP_INPUTS = {
    "x": np.array([[1, 2, 3], [4, -5, 6], [-7, 8, 9], [0.5, 0.25, -2]], np.float32),
    "m": 1,
}


def _loop_run(src: str):
    ctx, m = compile_text(src)
    text = str(m)
    inputs = dict(_LOOP_INPUTS)
    sig = signature(m)
    for p in sig.params:
        if p.kind == "buffer" and p.access != "read":
            shape = (4,) if len(p.dims) == 1 else (4, int(p.dims[1]))
            inputs[p.name] = np.zeros(shape, np.float32 if p.dtype == "f32" else np.int32)
    with ctx:
        outs = Evaluator(m, "k").run(inputs)
    return text, outs


@pytest.mark.parametrize("case", sorted(_LOOP_CASES))
def test_short_literal_loops_are_unrolled_with_the_loop_semantics(case, monkeypatch):
    """A ``for`` with literal bounds and at most UNROLL_MAX_TRIPS iterations is lowered as copies of
    its body (no ``scf.for``); the results equal those of the same loop kept as an ``scf.for``."""
    lower = importlib.import_module("kernc.frontend.lower")
    src = _LOOP_CASES[case]
    unrolled_ir, unrolled = _loop_run(src)
    monkeypatch.setattr(lower, "UNROLL_MAX_TRIPS", 0)
    rolled_ir, rolled = _loop_run(src)
    assert "scf.for" not in unrolled_ir
    assert "scf.for" in rolled_ir
    assert unrolled.keys() == rolled.keys() and unrolled
    for name in unrolled:
        np.testing.assert_array_equal(unrolled[name], rolled[name], err_msg=name)


def test_unrolled_loop_values():
    """The unrolled loops compute what the language says (independently of the rolled lowering)."""
    x = _LOOP_INPUTS["x"]
    out = _loop_run(_LOOP_CASES["out_of_range_components"])[1]["o"]
    # acc = v1*1 + v2*2 + v2*3 + v2*4 + v2*5 (k >= 3 reads the last component); writes: v1 = 2, v2 = 3
    acc = x[:, 1] * 1 + x[:, 2] * 2 + 3 * 3 + 3 * 4 + 3 * 5
    np.testing.assert_array_equal(out, np.stack([x[:, 0], np.full(4, 2), np.full(4, 3), acc], 1))
    ret = _loop_run(_LOOP_CASES["return_in_body"])[1]
    assert ret["c"].tolist() == [-1, 2, 1, 3]
    np.testing.assert_array_equal(ret["o"], [60.0, 4.0, 0.0, 0.75])


@pytest.mark.parametrize("loop", ["for k in 0..9", "for k in 0..n0", "for k in 0..3"])
def test_long_or_dynamic_loops_stay_loops(loop):
    """Over UNROLL_MAX_TRIPS iterations, or bounds that are not literals: an ``scf.for``; a body
    over UNROLL_MAX_NODES nodes in all copies stays a loop too."""
    lower = importlib.import_module("kernc.frontend.lower")
    big = " + ".join(["x * f32(k)"] * (lower.UNROLL_MAX_NODES // 6))
    body = big if loop.endswith("0..3") else "x * f32(k)"
    src = (f"kernel k(x: f32[n] read, n0: i32, o: f32[n] write) over n {{\n"
           f"    let acc = 0.0;\n    {loop} {{ acc += {body}; }}\n    o = acc;\n}}\n")
    assert "scf.for" in ir_text(src)


def test_nested_short_loops_do_not_multiply_past_the_budget():
    """Each loop of a nest of short loops fits the budget alone; unrolled together their copies
    multiplied (8**6 bodies made a 10 MB PTX). Inner loops stay loops once the copies would pass
    UNROLL_MAX_NODES."""
    lower = importlib.import_module("kernc.frontend.lower")
    depth = 4
    src = ("kernel k(x: f32[n] read, y: f32[n] write) over n {\n    let s = 0.0;\n"
           + "".join(f"    for i{d} in 0..8 {{\n" for d in range(depth))
           + "        s += x * 0.5;\n" + "    }\n" * depth + "    y = s;\n}\n")
    text = ir_text(src)
    assert "scf.for" in text  # some of the loops stay loops
    assert text.count("arith.mulf") <= lower.UNROLL_MAX_NODES // 4  # the body is 4+ nodes
    x = np.array([1.0, -2.0, 4.0], np.float32)
    out = run(src, {"x": x, "y": np.zeros(3, np.float32)})["y"]
    np.testing.assert_array_equal(out, x * 0.5 * 8 ** depth)
