"""The full accessor family in the frontend (contract: ``docs/accessor-lowering.md``).

Parsing of the new syntax, the exact kern IR form of every accessor (names, ``args``, operand
segments, compute vs storage types, hidden table params), signature fields, located diagnostics,
and semantics through the reference evaluator of ``kern_eval.py`` (which models each accessor per
``docs/design/accessors.md``, including the ``shared_indices`` table encoding).
"""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np

import kernc
import pytest

from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.passes.base import walk_ops
from kernc.support.errors import CompileError, InternalCompilerError
from kernc.frontend import ast as A
from kernc.frontend import check, compile_to_kern, lower, parse
from kernc.frontend import types as T
from kernc.support.mlir import ir, passmanager

from frontend_helpers import EXAMPLES, compile_text, error_lines
from kern_eval import Evaluator, shared_indices


def lowered(src: str):
    """(context, module) of ``src``, lowered without the dialect-support check so the IR of
    ``default`` reads can be inspected; the module is still verified whenever the loaded kern dialect
    can verify it (see :func:`test_default_reads_and_the_dialect`)."""
    ctx = ir.Context()
    prog = check(parse(src, "t.kern"))
    m = lower(prog, ctx, verify=False)
    assert m.operation.verify()
    return ctx, m


def signature(module, index: int = 0) -> KernelSignature:
    op = module.body.operations[index].operation
    return KernelSignature.from_json(ir.StringAttr(op.attributes[SIGNATURE_ATTR]).value)


def kern_ops(module, name: str | None = None) -> list:
    """The kern.read/write/add ops of the first kernel, in order (optionally of one kind)."""
    out = []

    def walk(op):
        for region in op.regions:
            for block in region.blocks:
                for o in block.operations:
                    o = o.operation
                    if o.name in ("kern.read", "kern.write", "kern.add") and (name is None or o.name == name):
                        out.append(o)
                    walk(o)

    walk(module.body.operations[0].operation)
    return out


def accessor(op) -> str:
    return ir.StringAttr(op.attributes["accessor"]).value


def segments(op) -> list:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))


def values_of(op) -> list:
    """Result (read) or value (write/add) types of an accessor op, as strings."""
    if op.name == "kern.read":
        return [str(r.type) for r in op.results]
    seg = segments(op)
    return [str(v.type) for v in list(op.operands)[sum(seg[:3]):]]


def arg_types(op) -> list:
    seg = segments(op)
    return [str(v.type) for v in list(op.operands)[1:1 + seg[1]]]


def run(src: str, inputs: dict, name: str = "k", P=None):
    ctx, m = lowered(src)
    with ctx:
        return Evaluator(m, name).run(inputs, P=P)


# ---- parsing --------------------------------------------------------------------------------------


def test_parse_clauses_in_any_order_and_pair_syntax():
    prog = parse("kernel k(x: f32[m] read pair strided(o, s) default -1 compute f64 as (m):(1),\n"
                 "         y: f16[m, 3] read as soa compute f32, o: index, s: index,\n"
                 "         out: f32[m] add pair) over n {\n"
                 "    out = (x.first, x.second,);\n"
                 "    out.first[0] += 1.0;\n"
                 "    out.second -= y[0];\n"
                 "}\n")
    x, y, _, _, out = prog.kernels[0].params
    assert [p.name for p in x.patterns] == ["pair", "strided"]
    assert isinstance(x.default, A.IntLit) and x.default.value == -1
    assert x.compute == "f64" and (x.compute_loc.line, x.compute_loc.column) == (1, 63)
    assert isinstance(x.layout, A.LayoutLiteral)
    assert (y.compute, y.layout.name) == ("f32", "soa")
    s1, s2, s3 = prog.kernels[0].body.stmts
    assert isinstance(s1.value, A.TupleLit) and len(s1.value.elems) == 2
    assert all(isinstance(e, A.Member) for e in s1.value.elems)
    assert isinstance(s2.target, A.Index) and isinstance(s2.target.base, A.Member)
    assert s2.target.base.name == "first"
    assert isinstance(s3.target, A.Member) and s3.target.name == "second" and s3.op == "-="


def test_compute_stays_usable_as_a_name():
    _, m = lowered("kernel k(compute: f32, y: f32[n] write) over n {\n"
                        "    let c = (compute);\n    y = c;\n}\n")
    assert m.operation.verify()


@pytest.mark.parametrize("src, where, message", [
    ("kernel k(x: f32[m, 3] read as soa as aos) over n { }", "t.kern:1:38: error: ",
     "duplicate 'as' clause on buffer 'x'"),
    ("kernel k(x: f32[m] read strided(0, 1) default 1 compute f64 default 2) over n { }",
     "t.kern:1:61: error: ", "duplicate 'default' clause on buffer 'x'"),
    ("kernel k(x: f32[m] read compute f64 compute f64) over n { }", "t.kern:1:37: error: ",
     "duplicate 'compute' clause"),
])
def test_duplicate_clauses(src, where, message):
    (line,) = error_lines(src)
    assert line.startswith(where) and message in line, line


# ---- kern IR of each accessor ----------------------------------------------------------------


def test_strided_default_read_ir():
    _, m = lowered("kernel k(x: f32[m] read strided(o, 2) default -1, o: i32, y: f32[n] write) "
                        "over n { y = x; }")
    (rd,) = kern_ops(m, "kern.read")
    assert accessor(rd) == "strided_default"
    assert segments(rd) == [1, 2, 1]
    assert arg_types(rd) == ["index", "index"]
    assert values_of(rd) == ["f32"]
    assert str(rd.attributes["default"]) == "-1.000000e+00 : f32"
    assert signature(m).param("x").accessor == "strided_default"


def test_pair_read_has_2k_results_first_then_second():
    _, m = lowered("kernel k(u: f32[m, 3] read pair as soa, y: f32[n, 3] write) over n {\n"
                        "    y = u.second - u.first;\n}\n")
    (rd,) = kern_ops(m, "kern.read")
    assert accessor(rd) == "pair" and segments(rd) == [1, 0, 1]
    assert values_of(rd) == ["f32"] * 6
    assert ir.StringAttr(rd.attributes["layout"]).value == "(m,3):(1,m)"
    text = str(m)
    assert "arith.subf %0#3, %0#0" in text and "arith.subf %0#5, %0#2" in text
    sig = signature(m)
    assert (sig.param("u").accessor, sig.param("u").min_elements) == ("pair", "n+1")


def test_pair_strided_default_read_ir():
    _, m = lowered("kernel k(u: f64[m] read pair strided(-1, 1) default 0.5, y: f64[n] write) "
                        "over n { y = u.first * u.second; }")
    (rd,) = kern_ops(m, "kern.read")
    assert accessor(rd) == "pair_strided_default" and segments(rd) == [1, 2, 1]
    assert arg_types(rd) == ["index", "index"] and values_of(rd) == ["f64", "f64"]
    assert str(rd.attributes["default"]) == "5.000000e-01 : f64"
    assert signature(m).param("u").min_elements is None


def test_unique_read_ir():
    _, m = lowered("kernel k(c: f32[q, 2] read unique, y: f32[n, 2] write) over n { y = c; }")
    (rd,) = kern_ops(m, "kern.read")
    assert accessor(rd) == "unique" and segments(rd) == [1, 0, 1] and values_of(rd) == ["f32", "f32"]
    assert signature(m).param("c").min_elements == "1"


SHARED_SRC = ("kernel k(pos: f32[V, 3] read shared(src) as soa, src: u32[E] read, dst: i32[E] read,\n"
              "         force: f32[V, 3] add shared_sum(dst), acc: f32[V] add shared_sum(src),\n"
              "         hits: f32[V] add atomic(dst)) over E {\n"
              "    force += pos;\n    acc += 1.0;\n    hits += pos[0];\n}\n")


def test_shared_and_shared_sum_take_hidden_tables():
    _, m = lowered(SHARED_SRC)
    sig = signature(m)
    names = [p.name for p in sig.params]
    assert names == ["pos", "src", "dst", "force", "acc", "hits",
                     "src.unique", "src.target", "src.perm", "src.count",
                     "dst.unique", "dst.target", "dst.perm", "dst.count"]
    assert sig.sizes == ["V", "E"]
    for p in sig.params[6:]:
        assert (p.kind, p.dtype, p.storage_shape) == ("table", "u32", [])
    assert [(p.table_of, p.table_field) for p in sig.params[6:10]] == [
        ("src", f) for f in ("unique", "target", "perm", "count")]
    func = m.body.operations[0].operation
    args = list(func.regions[0].blocks[0].arguments)
    assert [str(a.type) for a in args[6:14]] == ["memref<?xi32>"] * 8
    assert [str(a.type) for a in args[14:]] == ["index", "index"]
    rd, force, acc, hits = kern_ops(m)
    # shared: (unique, target) of src; shared_sum: (unique, perm)
    assert accessor(rd) == "shared" and segments(rd) == [1, 2, 1]
    assert [rd.operands[i] for i in (1, 2)] == [args[6], args[7]]
    assert accessor(force) == "shared_sum" and segments(force) == [1, 2, 1, 3]
    assert list(force.operands)[1:3] == [args[10], args[12]]
    assert accessor(acc) == "shared_sum" and list(acc.operands)[1:3] == [args[6], args[8]]
    assert accessor(hits) == "atomic" and segments(hits) == [1, 1, 1, 1]
    assert hits.operands[1] == args[2]
    assert (sig.param("pos").index_param, sig.param("force").index_param,
            sig.param("hits").index_param) == ("src", "dst", "dst")
    assert sig.arg_names == names + ["V", "E"]


def test_sum_and_block_sum_ir():
    _, m = lowered("kernel k(x: f32[n] read, s: f32[1] add sum, w: f64[1, 2] write sum,\n"
                        "         b: f32[nb, 2] write block_sum, c: f32[nb] add block_sum) over n {\n"
                        "    s += x; w = [f64(x), 1.0]; b = [x, x]; c += 2.0 * x;\n}\n")
    ops = kern_ops(m)
    got = [(o.name, accessor(o), segments(o), values_of(o)) for o in ops[1:]]
    assert got == [
        ("kern.add", "sum", [1, 0, 0, 1], ["f32"]),
        ("kern.write", "sum", [1, 0, 0, 2], ["f64", "f64"]),
        ("kern.write", "block_sum", [1, 0, 1, 2], ["f32", "f32"]),
        ("kern.add", "block_sum", [1, 0, 1, 1], ["f32"]),
    ]
    sig = signature(m)
    assert [sig.param(n).zero_init for n in "swbc"] == [False, True, False, False]
    assert sig.param("w").layout == "(1,2):(2,1)"


def test_pair_writes_take_2k_values_and_tuple_forms():
    src = ("kernel k(x: f32[n, 2] read, a: f32[m, 2] add pair as soa, w: f32[m] write pair) over n {\n"
           "    a = (x, 2.0 * x);\n"
           "    a.second[1] += 1.0;\n"
           "    w.first = x[0];\n"
           "    w.second -= x[1];\n}\n")
    _, m = lowered(src)
    _, add, write = kern_ops(m)
    assert (accessor(add), segments(add), values_of(add)) == ("pair", [1, 0, 1, 4], ["f32"] * 4)
    assert (accessor(write), segments(write), values_of(write)) == ("pair", [1, 0, 1, 2], ["f32"] * 2)
    sig = signature(m)
    assert (sig.param("a").min_elements, sig.param("a").zero_init) == ("n+1", False)
    assert (sig.param("w").min_elements, sig.param("w").zero_init) == ("n+1", True)


@pytest.mark.parametrize("decl", ["f32[1] write sum", "f32[nb] write block_sum", "f32[m] write pair"])
def test_block_wide_writes_are_never_behind_an_assigned_flag(decl):
    pair = "pair" in decl
    value = "(1.0, 2.0)" if pair else "1.0"
    src = (f"kernel k(c: bool, y: {decl}, z: f32[n] write) over n {{\n"
           f"    if c {{ y = {value}; z = 1.0; }}\n}}\n")
    _, m = lowered(src)
    func = m.body.operations[0].operation
    top = [o.operation.name for o in func.regions[0].blocks[0].operations]
    # y's write sits at top level; z (sequential) keeps its flag and scf.if
    assert top[-3:] == ["kern.write", "scf.if", "func.return"]
    # the if yields y's pending value(s), z's and z's flag only
    assert ("-> (f32, f32, f32, i1)" if pair else "-> (f32, f32, i1)") in str(m)
    (flagged,) = [o for o in kern_ops(m) if o.operands[0] != func.regions[0].blocks[0].arguments[1]]
    assert flagged.parent.name == "scf.if"


@pytest.mark.parametrize("decl, n", [("f32[1] write sum", 1), ("f32[nb] write block_sum", 1),
                                     ("f32[m, 2] write pair", 4)])
def test_unassigned_block_wide_writes_still_write_zeros(decl, n):
    _, m = lowered(f"kernel k(y: {decl}, s: f32[1] add sum) over n {{ }}")
    (w,) = kern_ops(m)
    assert w.name == "kern.write" and len(values_of(w)) == n
    assert all(v.owner.name == "arith.constant" for v in list(w.operands)[-n:])


# ---- compute vs storage types -----------------------------------------------------------------


def test_f16_and_bf16_storage_compute_in_f32():
    _, m = lowered("kernel k(x: f16[n] read, h: bf16[n, 2] read, y: f16[n] write, "
                        "z: bf16[n] add) over n {\n    y = x * 2.0;\n    z += h[0] + h[1];\n}\n")
    text = str(m)
    assert "func.func @k(%arg0: memref<?xf16>, %arg1: memref<?xbf16>, %arg2: memref<?xf16>, " \
           "%arg3: memref<?xbf16>" in text
    x, h, y, z = kern_ops(m)
    assert values_of(x) == ["f32"] and values_of(h) == ["f32", "f32"]
    assert values_of(y) == ["f32"] and values_of(z) == ["f32"]
    sig = signature(m)
    assert [p.compute for p in sig.params] == [None] * 4
    assert [p.dtype for p in sig.params] == ["f16", "bf16", "f16", "bf16"]


def test_compute_f64_clause():
    _, m = lowered("kernel k(x: f32[n] read compute f64, h: f16[n] read strided(0, 1) default 0.1 "
                        "compute f64, e: f32[1] add sum compute f64) over n { e += x * h; }")
    x, h, e = kern_ops(m)
    assert values_of(x) == ["f64"] and values_of(h) == ["f64"] and values_of(e) == ["f64"]
    assert arg_types(h) == ["index", "index"] and str(h.attributes["default"]).endswith(": f64")
    assert [str(o.operands[0].type) for o in (x, h, e)] == ["memref<?xf32>", "memref<?xf16>",
                                                          "memref<?xf32>"]
    assert ir.FloatAttr(h.attributes["default"]).value == 0.1
    sig = signature(m)
    assert [p.compute for p in sig.params] == ["f64", "f64", "f64"]


def test_outputs_accept_values_of_their_storage_type():
    """Assigning a storage-typed value to an output widens it exactly to the compute type."""
    _, m = lowered("kernel k(a: bf16, b: f32, y: bf16[n] write, s: f32[1] add sum compute f64) "
                        "over n { y = a; s += b; }")
    text = str(m)
    assert "arith.extf %arg0 : bf16 to f32" in text and "arith.extf %arg1 : f32 to f64" in text


def test_compute_type_semantics_through_the_evaluator():
    src = ("kernel k(x: f16[n] read, y: f16[n] write, z: f32[n] write) over n {\n"
           "    y = x * 3.0;\n    z = x / 3.0;\n}\n")
    x = np.array([1.0, 0.1, 65504.0, -2.5], np.float16)
    out = run(src, {"x": x, "y": np.zeros(4, np.float16), "z": np.zeros(4, np.float32)})
    # computed in f32, rounded once to f16 on the write (65504*3 overflows f16 -> inf)
    with np.errstate(over="ignore"):
        want_y = (x.astype(np.float32) * np.float32(3)).astype(np.float16)
    assert np.array_equal(out["y"], want_y)
    assert np.array_equal(out["z"], x.astype(np.float32) / np.float32(3))


# ---- exact defaults ---------------------------------------------------------------------------


def _default_constant(src: str) -> float:
    _, m = lowered(src)
    (rd,) = kern_ops(m, "kern.read")
    return ir.FloatAttr(rd.attributes["default"]).value


@pytest.mark.parametrize("text, ty, want", [
    ("0.1", "f32", float(np.float32("0.1"))),
    ("0.1", "f64", 0.1),
    ("-1", "f32", -1.0),
    ("-0.0", "f32", -0.0),
    ("1e-45", "f32", float(np.float32(1e-45))),
    ("16777217", "f32", 16777216.0),
    ("3.4028235e38", "f32", float(np.finfo(np.float32).max)),
    ("0.333333333333333333", "f64", float(Fraction("0.333333333333333333"))),
    # just above the f32 halfway point 1 + 2**-24, but rounded to it as a double first:
    # a double rounding would give 1.0; rounding once gives 1 + 2**-23
    ("1.000000059604644776257986737988403547205962240695953369140625", "f32", 1 + 2 ** -23),
])
def test_default_values_are_rounded_once_from_the_literal(text, ty, want):
    got = _default_constant(f"kernel k(x: {ty}[m] read strided(-1, 1) default {text}, y: {ty}[n] write) "
                            f"over n {{ y = x; }}")
    assert got == want and np.signbit(got) == np.signbit(want)


@pytest.mark.parametrize("text, ty, want", [("-0.0", "f32", -0.0), ("-0.0", "f64", -0.0), ("0.0", "f32", 0.0),
                                           ("-2.5", "f32", -2.5)])
def test_checked_view_defaults_are_exact_too(text, ty, want):
    """A view's ``default -0.0`` became +0.0 on ``kern.view_load`` (``value or 0`` drops a negative
    zero) while strided defaults kept the sign; the value is now kept whatever it is, and a
    checked read out of bounds returns it with its sign."""
    src = (f"kernel k(x: {ty}[m] view default {text}, y: {ty}[n] write) over n "
           f"{{ y = x.checked(index(5)); }}")
    _, m = lowered(src)
    (ld,) = [op for op in walk_ops(m, {"kern.view_load"})]
    got = ir.FloatAttr(ld.attributes["default"]).value
    assert got == want and np.signbit(got) == np.signbit(want)
    dt = np.float32 if ty == "f32" else np.float64
    y = np.full(3, 7.0, dt)
    kernc.compile(src).k(np.ones(1, dt), y)
    assert y.tolist() == [want] * 3 and np.signbit(y).tolist() == [np.signbit(want)] * 3


def test_exact_float_helper_matches_numpy_on_ordinary_literals():
    rng = random.Random(5)
    for _ in range(2000):
        text = f"{rng.uniform(-1e4, 1e4):.{rng.randint(1, 12)}g}"
        assert T.exact_float(Fraction(text), T.F32) == float(np.float32(text)), text
        assert T.exact_float(Fraction(text), T.F64) == float(text), text
    assert T.exact_float(Fraction(10) ** 39, T.F32) is None
    assert T.exact_float(Fraction(65520), T.F16) is None and T.exact_float(65519, T.F16) == 65504.0


def test_default_reads_verify_and_carry_the_value_as_an_attribute():
    """The default value is the typed ``default`` attribute (an IRDL variadic group needs one type for
    all its operands, so it cannot ride among the ``index`` args)."""
    src = "kernel k(x: f32[m] read strided(-1, 2) default -1, y: f32[n] write) over n { y = x; }"
    _, m = compile_text(src)
    assert m.operation.verify()
    (rd,) = kern_ops(m, "kern.read")
    assert str(rd.attributes["default"]) == "-1.000000e+00 : f32"


def test_integer_default():
    _, m = lowered("kernel k(x: i16[m] read strided(-1, 1) default -7, y: i16[n] write) over n { y = x; }")
    (rd,) = kern_ops(m, "kern.read")
    assert arg_types(rd) == ["index", "index"]
    assert str(rd.attributes["default"]) == "-7 : i16"


# ---- layouts with every accessor ---------------------------------------------------------------


def test_caspar_layout():
    _, m = lowered("kernel k(p: f32[V, 3] read shared(i) as caspar, i: u32[n] read,\n"
                        "         q: f64[V, 2] read unique as caspar, h: f16[V, 8] add shared_sum(i) as caspar,\n"
                        "         r: f32[V, 4] read as caspar) over n { h += p[0] + f32(q[1]) + r[3]; }")
    sig = signature(m)
    got = {p.name: (p.layout, p.storage_shape) for p in sig.params if p.kind == "buffer"}
    # one chunk: (V, K):(d, 1), Caspar's host array (caspar_size(K), V)
    assert got["p"] == ("(V,3):(4,1)", [4, "V"])
    assert got["q"] == ("(V,2):(2,1)", [2, "V"])
    assert got["h"] == ("(V,8):(8,1)", [8, "V"])
    assert got["r"] == ("(V,4):(4,1)", [4, "V"])


@pytest.mark.parametrize("decl, body", [
    ("x: f32[m, 3] read shared(i) as soa", "y = x[0];"),
    ("x: f32[m, 3] read pair as aos", "y = x.first[2] + x.second[0];"),
    ("x: f32[m, 2] read pair strided(o, 2) default 1 as (m, 2):(1, m)", "y = x.second[1];"),
    ("x: f32[m, 3] read strided(o, 1) default 0 as caspar", "y = x[1];"),
    ("x: f32[m, 2] read unique as rm(m, 2)", "y = x[1];"),
    ("x: f32[m, 3] add shared_sum(i) as soa", "x += 1.0; y = 0.0;"),
    ("x: f32[m, 3] add atomic(i) as caspar", "x[2] += 1.0; y = 0.0;"),
    ("x: f32[m, 2] write block_sum as soa", "x = [1.0, 2.0]; y = 0.0;"),
    ("x: f32[2, 3] add sum as (2, 3):(1, 2)", "x += 1.0; y = 0.0;"),
    ("x: f32[m, 3] write pair as caspar", "x.second = [1.0, 2.0, 3.0]; y = 0.0;"),
])
def test_layouts_work_with_every_accessor(decl, body):
    src = (f"layout rm(R, C) = (R, C):(C, 1);\n"
           f"kernel k({decl}, i: u32[n] read, o: index, y: f32[n] write) over n {{ {body} }}")
    ctx, m = lowered(src)
    with ctx:
        passmanager.PassManager.parse("builtin.module(canonicalize)").run(m.operation)


# ---- semantics (checking values of accessors.md) ----------------------------------------------


def test_shared_sum_checking_values():
    src = "kernel k(x: f32[m] add shared_sum(i), i: u32[n] read, y: f32[n] read) over n { x += y; }"
    out = run(src, {"x": np.array([100] + [0] * 9, np.float32), "i": np.array([5, 3, 5, 9, 3, 3], np.uint32),
                    "y": np.array([1, 2, 3, 4, 5, 6], np.float32)})
    assert out["x"].tolist() == [100, 0, 0, 13, 0, 4, 0, 0, 0, 4]
    src_atomic = src.replace("shared_sum", "atomic")
    out = run(src_atomic, {"x": np.array([100] + [0] * 9, np.float32),
                           "i": np.array([5, 3, 5, 9, 3, 3], np.uint32),
                           "y": np.array([1, 2, 3, 4, 5, 6], np.float32)})
    assert out["x"].tolist() == [100, 0, 0, 13, 0, 4, 0, 0, 0, 4]


def test_strided_default_checking_values():
    src = "kernel k(x: f32[m] read strided(-1, 2) default -1, y: f32[n] write) over n { y = x; }"
    out = run(src, {"x": np.array([10, 11, 12, 13, 14], np.float32), "y": np.zeros(4, np.float32)})
    assert out["y"].tolist() == [-1, 11, 13, -1]


def test_pair_write_checking_values():
    src = ("kernel k(f: f32[n] read, s: f32[n] read, x: f32[m] {mode} pair) over n {{ x = (f, s); }}")
    ins = {"f": np.array([1, 2, 3], np.float32), "s": np.array([10, 20, 30], np.float32)}
    out = run(src.format(mode="write"), {**ins, "x": np.full(5, 7, np.float32)})
    assert out["x"].tolist() == [1, 12, 23, 30, 0]
    out = run(src.format(mode="add"), {**ins, "x": np.full(5, 100, np.float32)})
    assert out["x"].tolist() == [101, 112, 123, 130, 100]


def test_write_sum_checking_value():
    src = "@block(1024)\nkernel k(o: f32[1] write sum) over n { o = f32(thread_id); }"
    out = run(src, {"o": np.array([5], np.float32)}, P=2049)
    assert out["o"].tolist() == [2098176]


def test_pair_strided_default_neighbours():
    src = ("kernel k(x: f32[m] read pair strided(-1, 1) default 0.5, y: f32[n, 2] write) over n {\n"
           "    y = [x.first, x.second];\n}\n")
    out = run(src, {"x": np.array([10, 11, 12], np.float32), "y": np.zeros((4, 2), np.float32)})
    assert out["y"].tolist() == [[0.5, 10], [10, 11], [11, 12], [12, 0.5]]


def test_unique_shared_and_block_sum_semantics():
    src = ("@block(32)\n"
           "kernel k(c: f32[q] read unique, x: f32[m, 2] read shared(i), i: u32[n] read,\n"
           "         b: f32[nb] write block_sum, y: f32[n, 2] write) over n {\n"
           "    y = x * c;\n    if thread_id % 2 == 0 { b = x[0]; }\n}\n")
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 7, 70).astype(np.uint32)
    x = rng.integers(-8, 8, (7, 2)).astype(np.float32)
    out = run(src, {"c": np.array([2, 99], np.float32), "x": x, "i": idx,
                    "b": np.full(4, 5, np.float32), "y": np.zeros((70, 2), np.float32)})
    assert np.array_equal(out["y"], 2 * x[idx])
    g = x[idx, 0] * (np.arange(70) % 2 == 0)
    assert out["b"].tolist() == [g[0:32].sum(), g[32:64].sum(), g[64:].sum(), 5]


def test_shared_indices_tables_encoding():
    idx = np.array([5, 3, 5, 9, 3, 3, 1, 1, 0], np.uint32)
    t = shared_indices(idx, 9, 4)
    assert t["count"].tolist() == [3, 2, 1]
    assert t["unique"][:3].tolist() == [3, 5, 9] and t["unique"][4:6].tolist() == [1, 3]
    assert t["unique"][8] == 0
    # target: rank | count << 16
    assert t["target"][:9].tolist() == [1 | 3 << 16, 0 | 3 << 16, 1 | 3 << 16, 2 | 3 << 16,
                                         1 | 2 << 16, 1 | 2 << 16, 0 | 2 << 16, 0 | 2 << 16, 0 | 1 << 16]
    # perm: thread | rank << 16 of each entry in sorted order (block 0 sorted: 3 5 5 9 from threads
    # 1 0 2 3, ranks 0 1 1 2; block 1: 1 1 3 3 from threads 2 3 0 1, ranks 0 0 1 1)
    assert t["perm"][:8].tolist() == [1, 0 | 1 << 16, 2 | 1 << 16, 3 | 2 << 16, 2, 3, 0 | 1 << 16, 1 | 1 << 16]


# ---- located diagnostics -----------------------------------------------------------------------


KERNEL_ERRORS = [
    ("kernel k(x: f32[n] read shraed(i), i: u32[n] read) over n { }", "1:25",
     "unknown accessor 'shraed'; did you mean 'shared'?"),
    ("kernel k(x: f32[n] add shared_sums(i), i: u32[n] read) over n { }", "1:24",
     "unknown accessor 'shared_sums'; did you mean 'shared_sum'?"),
    ("kernel k(x: f32[n] read pari) over n { }", "1:25", "did you mean 'pair'?"),
    ("kernel k(x: f32[m] read compte f64) over n { }", "1:25",
     "unknown accessor 'compte'; did you mean 'compute'?"),
    ("kernel k(x: f32[n] write shared_sum(i), i: u32[n] read) over n { }", "1:26",
     "accessor 'shared_sum' needs 'add' access, not 'write'"),
    ("kernel k(x: f32[n] read atomic(i), i: u32[n] read) over n { }", "1:25",
     "accessor 'atomic' needs 'add' access, not 'read'"),
    ("kernel k(x: f32[n] add shared(i), i: u32[n] read) over n { }", "1:24",
     "accessor 'shared' is only for 'read' buffers, not 'add'"),
    ("kernel k(x: f32[n] write unique) over n { }", "1:26",
     "accessor 'unique' is only for 'read' buffers, not 'write'"),
    ("kernel k(x: f32[1] read sum) over n { }", "1:25",
     "accessor 'sum' is only for 'write' or 'add' buffers, not 'read'"),
    ("kernel k(x: f32[m] read block_sum) over n { }", "1:25",
     "accessor 'block_sum' is only for 'write' or 'add' buffers"),
    ("kernel k(x: f32[m] write pair strided(-1, 1) default 0) over n { }", "1:26",
     "'pair strided(off, s) default v' is only for 'read' buffers, not 'write'"),
    ("kernel k(x: f32[m] write strided(0, 1) default 0.0) over n { }", "1:48",
     "'default' values are only for 'read' buffers, not 'write'"),
    ("kernel k(x: f32[m] read pair strided(-1, 1)) over n { }", "1:30",
     "'pair strided(off, s)' needs a default value"),
    ("kernel k(x: f32[m] read unique default 1.0) over n { }", "1:40",
     "'default v' needs a strided read"),
    ("kernel k(x: f32[m] read pair sum) over n { }", "1:30",
     "only 'pair strided(off, s) default v' combines two accessor patterns"),
    ("kernel k(x: f32[m] read unique(i), i: u32[n] read) over n { }", "1:25",
     "accessor 'unique' takes no arguments"),
    ("kernel k(x: f32[m] read shared(i), i: f32[n] read) over n { }", "1:32",
     "the index buffer 'i' of shared(i) must be a 1-D u8/u16/u32/i8/i16/i32 buffer read sequentially"),
    ("kernel k(x: f32[m] read shared(i), i: u32[q] read) over n { }", "1:32",
     "the index buffer 'i' of shared(i) must have one entry per item: its dim must be the problem "
     "size 'n', not 'q'"),
    ("kernel k(x: f32[m] add atomic(a), a: u32) over n { }", "1:31",
     "the index of atomic(a) must be a buffer parameter, 'a' is a scalar"),
    ("kernel k(x: f32[m] add shared_sum(i), i: u32[n] read strided(0, 1)) over n { }", "1:35",
     "must be a 1-D u8/u16/u32/i8/i16/i32 buffer read sequentially"),
    ("kernel k(x: f32[m] read shared(i), i: u32[n] add) over n { }", "1:32",
     "must be a 1-D u8/u16/u32/i8/i16/i32 buffer read sequentially"),
    ("kernel k(x: f32[m] read shared(j), i: u32[n] read) over n { }", "1:32",
     "unknown index buffer 'j'"),
    ("kernel k(x: f16[m] read compute f16) over n { }", "1:33",
     "the compute type must be f32 or f64, got 'f16'"),
    ("kernel k(x: f64[m] read compute f32) over n { }", "1:33",
     "compute type 'f32' is narrower than the storage type 'f64' of 'x'"),
    ("kernel k(x: u32[m] read compute f64) over n { }", "1:33",
     "'compute f64' needs a float buffer; 'u32' values are computed as stored"),
    ("kernel k(x: i32[m] add sum compute f16) over n { }", "1:36",
     "'compute f16' needs a float buffer"),
    ("kernel k(x: f32[m] read compute f23) over n { }", "1:33",
     "unknown compute type 'f23'; did you mean 'f32'?"),
    ("kernel k(x: i32[m] read strided(-1, 1) default 1.5) over n { }", "1:48",
     "a float literal cannot be the default of a 'i32' buffer"),
    ("kernel k(x: f32[m] read strided(-1, 1) default 1e39) over n { }", "1:48",
     "default value 1e39 is out of range for 'f32'"),
    ("kernel k(x: f32[m] read strided(-1, 1) default 2.0 * o, o: f32) over n { }", "1:52",
     "the default value must be a number literal or a scalar parameter"),
    ("kernel k(x: f32[m] read strided(-1, 1) default o, o: f64) over n { }", "1:48",
     "the default 'o' is 'f64', but 'x' computes in 'f32'"),
    ("kernel k(x: f32[m] read strided(-1, 1) default 1.0f64) over n { }", "1:48",
     "the default value 1.0f64 has type 'f64', but 'x' computes in 'f32'"),
    ("kernel k(x: u8[m] read strided(-1, 1) default 256) over n { }", "1:47",
     "default value 256 is out of range for 'u8' (0..255)"),
    ("kernel k(x: f32[m] read as caspar) over n { }", "1:28",
     "layout 'caspar' is for multi-component elements"),
    ("layout caspar = (4):(1);\nkernel k(x: f32[n] read) over n { }", "1:8",
     "'caspar' is a builtin layout and cannot be redefined"),
]


@pytest.mark.parametrize("src, where, message", KERNEL_ERRORS)
def test_accessor_declaration_errors(src, where, message):
    lines = error_lines(src)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"t.kern:{where}: error: "), lines[0]
    assert message in lines[0], lines[0]


BODY_HEAD = ("kernel k(x: f32[n] read, y: f32[n] write, u: f32[m] read pair, o: f32[m] add pair, "
             "i: u32[n] read) over n {\n")

BODY_ERRORS = [
    ("let z = u;", "2:13", "'u' is read 'pair': use 'u.first' or 'u.second'"),
    ("let z = u.frist;", "2:15", "pair read 'u' has no member '.frist'; did you mean 'first'?"),
    ("let z = x.second;", "2:15", "'.second' needs a buffer read with 'pair'; 'x' is read 'sequential'"),
    ("let z = o.first;", "2:13", "cannot read output 'o' (declared 'add')"),
    ("y = (x, x);", "2:9",
     "a tuple can only be assigned to a pair output; 'y' is declared 'write sequential'"),
    ("o = x;", "2:9", "pair output 'o' takes a tuple: `o = (first, second);`"),
    ("o = (x, x, x);", "2:9", "pair output 'o' takes a tuple of 2 values (first, second), got 3"),
    ("y.first = 1.0;", "2:7",
     "'.first' can only be assigned on a pair output; 'y' is declared 'write sequential'"),
    ("let z = (x, 1.0);", "2:13", "a tuple (a, b) can only be the value assigned to a pair output"),
    ("o.third = 1.0;", "2:7", "pair output 'o' has no member '.third'"),
    ("o.first = (x, x);", "2:15", "a tuple is assigned to the whole pair output"),
    ("o[0] = (x, x);", "2:5", "index a component of pair output 'o' through 'o.first[k]'"),
    ("let q = 1.0; q.first = 2.0;", "2:20", "'.first' can only be assigned on a pair output; 'q' is a variable"),
    ("o = (x, i);", "2:13", "type mismatch in assignment to 'o': expected 'f32', got 'u32'"),
    ("o *= (x, x);", "2:7", "operator '*=' cannot update output 'o'"),
    ("o.second[0] = 1.0;", "2:7", "cannot index 'o' of scalar type 'f32'"),
]


@pytest.mark.parametrize("stmt, where, message", BODY_ERRORS)
def test_pair_body_errors(stmt, where, message):
    lines = error_lines(BODY_HEAD + "    " + stmt + "\n}\n")
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"t.kern:{where}: error: "), lines[0]
    assert message in lines[0], lines[0]


def test_accessor_errors_carry_hints_and_notes():
    with pytest.raises(CompileError) as info:
        compile_text("kernel k(x: f32[m] write shared_sum(dst), dst: u32[n] read) over n { }")
    (d,) = info.value.diagnostics
    assert d.hint == ("duplicate indices are summed into the buffer: declare `x: f32[...] add "
                      "shared_sum(dst)`, or use `write indexed(dst)` when the indices are unique")
    with pytest.raises(CompileError) as info:
        compile_text("kernel k(x: f32[m] read shared(i), i: u32[q] read) over n { }")
    (d,) = info.value.diagnostics
    assert d.hint == "declare it as `i: u32[n] read`"
    assert d.notes and d.notes[0].severity == "note" and d.notes[0].location.column == 36


# ---- examples and robustness -------------------------------------------------------------------


def test_edge_update_example_ir():
    _, m = lowered((EXAMPLES / "edge_update.kern").read_text())
    sig = signature(m)
    assert [p.kind for p in sig.params] == ["buffer"] * 6 + ["table"] * 8
    assert sig.param("pos").storage_shape == [4, "V"] and sig.param("force").layout == "(V,3):(4,1)"
    assert [accessor(o) for o in kern_ops(m)] == ["shared", "sequential", "shared_sum", "sum"]


def test_laplacian_example_ir():
    _, m = lowered((EXAMPLES / "laplacian_1d.kern").read_text())
    rd_u, rd_k, out = kern_ops(m)
    assert (accessor(rd_u), values_of(rd_u)) == ("pair", ["f32", "f32"])
    assert (out.name, accessor(out), segments(out)) == ("kern.add", "pair", [1, 0, 1, 2])
    assert signature(m).param("out").min_elements == "n+1"


def test_mutated_accessor_examples_only_raise_compile_errors():
    """Random edits of the new examples never crash the frontend (no other exception escapes)."""
    sources = [(EXAMPLES / f"{n}.kern").read_text() for n in ("edge_update", "laplacian_1d")]
    pieces = [" pair", " shared(src)", " shared_sum(dst)", " atomic(dst)", " unique", " sum",
              " block_sum", " default -1", " default 0.1", " compute f64", " compute f16",
              " strided(-1, 1)", " as caspar", " as soa", ".first", ".second", "(a, b)", ", 1.0",
              " write", " add", " read", "=", "+=", "[0]", ";", ")", "(", "f16", "u32"]
    rng = random.Random(99)
    ctx = ir.Context()
    outcomes = {"ok": 0, "error": 0}
    for _ in range(300):
        s = rng.choice(sources)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(s))
            if rng.random() < 0.4:
                s = s[:i] + s[i + rng.randint(1, 6):]
            else:
                s = s[:i] + rng.choice(pieces) + s[i:]
        try:
            module = compile_to_kern(s, "fuzz.kern", ctx)
            assert module.operation.verify()
            outcomes["ok"] += 1
        except CompileError as e:
            assert all(d.location is not None and d.location.filename == "fuzz.kern"
                       for d in e.diagnostics)
            outcomes["error"] += 1
        except InternalCompilerError as e:  # pragma: no cover - the failure being tested for
            raise AssertionError(f"internal error on:\n{s}") from e
    assert outcomes["ok"] > 10 and outcomes["error"] > 100


@pytest.mark.parametrize("dtype, value", [("u64", 2**64 - 1), ("u64", 2**63), ("i64", -2**63), ("u32", 2**32 - 1),
                                          ("u8", 255), ("i8", -128)])
def test_integer_defaults_at_the_limits_of_their_type(dtype, value):
    """A u64 default of 2^63 or more was an internal compiler error (std::bad_cast: MLIR's
    IntegerAttr takes a signed 64-bit value); integer defaults are stored as their bit pattern."""
    nd = np.dtype({"u64": np.uint64, "i64": np.int64, "u32": np.uint32, "u8": np.uint8, "i8": np.int8}[dtype])
    view = kernc.compile(f"kernel k(x: {dtype}[m] view default {value}, y: {dtype}[n] write) over n "
                         f"{{ y = x.checked(index(7)); }}")
    y = np.zeros(3, nd)
    view.k(np.zeros(1, nd), y)
    assert y.tolist() == [value] * 3
    strided = kernc.compile(f"kernel k(x: {dtype}[n] read strided(0, 2) default {value}, y: {dtype}[n] write) "
                            f"over n {{ y = x; }}")
    y = np.zeros(4, nd)
    strided.k(np.arange(4).astype(nd), y, n=4)
    assert y.tolist() == [0, 2, value, value]
    assert ".entry k" in view.ptx and ".entry k" in strided.ptx
