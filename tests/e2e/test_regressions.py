"""Regression tests for defects found by trying kernc as a new user (each failed before its fix)."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

import kernc
from conftest import EXAMPLES, compiled_example, gpu_available
from kernc import CompileError, KerncLaunchError
from kernc.cli import main

SAXPY = os.path.join(EXAMPLES, "saxpy.kern")
SAXPY_TEXT = open(SAXPY).read()


@pytest.mark.parametrize("arch,version", [("sm_80", "8.0"), ("sm_90a", "8.0"), ("sm_100", "8.6"), ("sm_120", "8.7")])
def test_newer_archs_get_a_matching_ptx_version(arch, version):
    """sm_100 used to abort the whole process (LLVM fatal error: PTX 8.0 cannot target sm_100)."""
    ptx = kernc.compile(SAXPY_TEXT, arch=arch).ptx
    assert f".version {version}" in ptx and f".target {arch}" in ptx


@pytest.mark.parametrize("arch", ["sm_200", "sm_5", "gfx90a", "sm_90b"])
def test_unknown_arch_is_rejected_up_front(arch, capsys):
    with pytest.raises(ValueError, match="unknown GPU architecture"):
        kernc.compile(SAXPY_TEXT, arch=arch)
    with pytest.raises(SystemExit) as usage:  # argparse's usage error, as for any bad option value
        main(["compile", SAXPY, "--arch", arch])
    assert usage.value.code == 2
    assert "unknown GPU architecture" in capsys.readouterr().err


def test_bad_opt_level_is_a_value_error():
    with pytest.raises(ValueError, match="opt_level"):
        kernc.compile(SAXPY_TEXT, opt_level=7)


@pytest.mark.parametrize("text", ["", "   \n\n", "// only a comment\n", "layout r = (4):(1);\n"])
def test_file_without_kernels_is_a_user_error(tmp_path, text, capsys):
    with pytest.raises(CompileError, match="defines no kernel"):
        kernc.compile(text)
    src = tmp_path / "empty.kern"
    src.write_text(text)
    assert main(["compile", str(src)]) == 1
    assert f"{src}:1:1: error: {src} defines no kernel" in capsys.readouterr().err


def test_very_long_expression_is_compiled_or_reported():
    """500 chained additions used to escape as a raw RecursionError."""
    text = "kernel k(y: f32[n] write) over n { y = " + " + ".join(["1.0"] * 500) + "; }"
    try:
        mod = kernc.compile(text)
    except CompileError as err:
        assert "nested too deeply" in str(err)
    else:
        y = np.zeros(3, np.float32)
        mod.k(y)
        assert np.all(y == 500)


def test_opt_with_unknown_pass_is_a_user_error(tmp_path, capsys):
    kern = tmp_path / "k.mlir"
    assert main(["compile", SAXPY, "--emit", "kern", "-o", str(kern)]) == 0
    assert main(["opt", str(kern), "--passes", "bogus"]) == 1
    assert "unknown pass or bad pipeline 'bogus'" in capsys.readouterr().err


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_cuda_device_without_gpu_is_a_launch_error(tmp_path, capsys):
    mod = compiled_example("saxpy")
    with pytest.raises(KerncLaunchError, match="no usable CUDA device"):
        mod.saxpy(1.0, np.ones(2, np.float32), np.ones(2, np.float32), device="cuda")
    np.save(tmp_path / "x.npy", np.ones(2, np.float32))
    assert main(["run", SAXPY, "--device", "cuda", "--input", "a=1", "--input", f"x=@{tmp_path / 'x.npy'}",
                 "--output-dir", str(tmp_path)]) == 1
    assert "no usable CUDA device" in capsys.readouterr().err


def test_output_files_follow_umask_and_keep_existing_mode(tmp_path):
    out = tmp_path / "new.ptx"
    old = os.umask(0o022)
    try:
        assert main(["compile", SAXPY, "-o", str(out)]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    kept = tmp_path / "kept.ptx"
    kept.write_text("x")
    kept.chmod(0o640)
    assert main(["compile", SAXPY, "-o", str(kept)]) == 0
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and ".entry saxpy" in kept.read_text()


def test_write_errors_name_the_users_path(tmp_path, capsys):
    assert main(["compile", SAXPY, "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert str(tmp_path) in err and ".kernc-" not in err
    assert main(["compile", SAXPY, "-o", str(tmp_path / "missing" / "x.ptx")]) == 1
    err = capsys.readouterr().err
    assert "missing/x.ptx" in err and ".kernc-" not in err


def test_stats_json_dash_is_stdout(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.ones(40, np.float32))
    assert main(["run", SAXPY, "--input", "a=1", "--input", f"x=@{tmp_path / 'x.npy'}",
                 "--output-dir", str(tmp_path), "--stats-json", "-"]) == 0
    out = capsys.readouterr().out
    assert '"global_load_requests": 4' in out
    assert not (tmp_path / "-").exists() and not os.path.exists("-")


def test_non_utf8_source_is_a_located_error(tmp_path, capsys):
    src = tmp_path / "latin1.kern"
    src.write_bytes(b"// caf\xe9\nkernel k() over n {}\n")
    assert main(["compile", str(src)]) == 1
    assert f"{src}:1:7: error: the file is not UTF-8 text (byte 0xe9)" in capsys.readouterr().err
    with pytest.raises(CompileError):
        kernc.compile_file(src)


def test_launch_messages():
    mod = compiled_example("saxpy")
    x, y = np.ones(4, np.float32), np.ones(4, np.float32)
    with pytest.raises(KerncLaunchError, match="got multiple values for argument 'a'"):
        mod.saxpy(2.0, x, y, a=3.0)
    with pytest.raises(KerncLaunchError, match="non-native byte order"):
        mod.saxpy(2.0, x.astype(">f4"), y)
    with pytest.raises(KerncLaunchError, match="argument 'a': 1e\\+300 is out of range for f32"):
        mod.saxpy(1e300, x, y)
    mod.saxpy(float("inf"), x, np.zeros(4, np.float32))  # an infinite value is passed through


def test_duplicate_indices_in_add_indexed_are_reported_on_cpu():
    """add indexed(I) is a plain read-modify-write: duplicate targets used to lose updates silently."""
    mod = kernc.compile(
        "kernel sc(v: f32[n] read, dst: u32[n] read, out: f32[m] add indexed(dst)) over n { out += v; }"
    )
    out = np.zeros(4, np.float32)
    with pytest.raises(kernc.KerncRuntimeError, match=r"data race on .*'out'.*threads 0 and 1.*index 2.*atomic"):
        mod.sc(np.ones(3, np.float32), np.array([2, 2, 1], np.uint32), out)
    out = np.zeros(4, np.float32)
    mod.sc(np.ones(3, np.float32), np.array([2, 0, 1], np.uint32), out)
    assert np.array_equal(out, [1, 1, 1, 0])


def test_signed_shift_right_by_width_or_more_fills_with_the_sign():
    """PTX shr.s32 clamps the shift amount at 32; the interpreter used to give 0."""
    mod = kernc.compile("kernel sh(x: i32[n] read, s: u32[n] read, y: i32[n] write) over n { y = x >> i32(s); }")
    x = np.array([-8, -8, 8, -8, 1 << 30], np.int32)
    s = np.array([3, 32, 40, 31, 33], np.uint32)
    y = np.zeros(5, np.int32)
    mod.sh(x, s, y)
    assert list(y) == [-1, -1, 0, -1, 0]


@pytest.mark.parametrize("body,line", [
    ("y = " + "a + (" * 600 + "a" + ")" * 600 + ";", 3),   # deep in the parser's AST builder
    ("let q = a;\n    y = " + " + ".join(["a"] * 400) + ";", 4),  # a long flat chain: deep in the checker
    ("y = " + "sqrt(" * 300 + "a" + ")" * 300 + ";", 3),      # deep in lark itself: the deepest bracket
    ("y = " + "-" * 600 + "a;", 3),                             # a prefix chain
])
def test_too_deep_expressions_are_located_compile_errors(tmp_path, body, line):
    """A 600-deep parenthesised expression escaped as lark's VisitError (exit 3 in the CLI), and the
    nesting error of a long chain pointed at 1:1."""
    text = "kernel k(a: f32, y: f32[n] write) over n {\n    let p = a;\n    " + body + "\n}\n"
    with pytest.raises(CompileError) as err:
        kernc.compile(text, filename="deep.kern")
    d = err.value.diagnostics[0]
    assert "nested too deeply" in d.message and d.location.line == line, str(err.value)
    src = tmp_path / "deep.kern"
    src.write_text(text)
    assert main(["compile", str(src), "-o", str(tmp_path / "o.ptx")]) == 1
    assert not (tmp_path / "o.ptx").exists()


def test_option_flags_must_be_bools():
    """kernc.compile(src, fmad="false") used to contract (any truthy value counted)."""
    from kernc.compiler import Compilation, CompileOptions

    src = open(SAXPY).read()
    for bad in ("false", 1, None):
        with pytest.raises(ValueError, match="fmad must be True or False"):
            kernc.compile(src, fmad=bad)
        with pytest.raises(ValueError, match="coalesce must be True or False"):
            Compilation(src, "saxpy.kern", CompileOptions(coalesce=bad))
    assert "math.fma" in kernc.compile(src, fmad=np.bool_(True)).ir("gpu")


def test_a_huge_python_int_scalar_is_a_launch_error():
    """10**400 for an f32 scalar escaped as a raw OverflowError."""
    mod = compiled_example("saxpy")
    x, y = np.ones(4, np.float32), np.ones(4, np.float32)
    for bad in (10**400, -(10**400)):
        with pytest.raises(KerncLaunchError, match="argument 'a': an integer of 401 digits is out of range for f32"):
            mod.saxpy(bad, x, y)
    assert y.tolist() == [1.0] * 4


def test_long_else_if_ladder_is_a_located_error_not_an_ice(tmp_path):
    """400 `else if` branches passed the checker and crashed lowering (exit 3, RecursionError)."""
    body = " else ".join(f"if a > {i}.0 {{ s = {i}.0; }}" for i in range(400))
    text = f"kernel k(a: f32[n] read, o: f32[n] write) over n {{\n    let s = 0.0;\n    {body}\n    o = s;\n}}\n"
    with pytest.raises(CompileError) as err:
        kernc.compile(text, filename="ladder.kern")
    d = err.value.diagnostics[0]
    assert "nested too deeply" in d.message and d.location.line == 3
    src = tmp_path / "ladder.kern"
    src.write_text(text)
    assert main(["compile", str(src), "-o", str(tmp_path / "o.ptx")]) == 1


@pytest.mark.parametrize("ty, a, b", [
    ("u64", 2**63 - 2, 2**63 + 1), ("u64", 2**63 - 1, 2**63 + 1), ("u64", 2**64 - 3, 2**64 - 1),
    ("u64", 7, 3), ("u32", 2**31 - 2, 2**31 + 1), ("u32", 2**32 - 6, 5), ("u16", 2**15 - 1, 2**15 + 2),
    ("u8", 126, 130), ("u8", 250, 5), ("i64", -3, 2), ("i32", 5, -5), ("i64", 2**40, 2**40 + 3),
    ("i64", -2**63, -2**63 + 2), ("i64", 2**63 - 3, 2**63 - 1), ("i64", 2**31 - 1, 2**31 + 2),
])
def test_loops_over_unsigned_bounds_across_the_sign_bit(ty, a, b):
    """``for k in a..b`` with u64 bounds on either side of 2^63 ran no iteration (scf.for compares
    its bounds as signed); unsigned and 64-bit loops now run over their trip count from 0 (which
    also keeps 64-bit bounds beyond 2^31 whole in the GPU code's 32-bit index). k takes a..b-1."""
    m = kernc.compile(f"kernel k(a: {ty}, b: {ty}, c: i32[n] write, s: u64[n] write) over n {{\n"
                      f"    let t = 0; let h = 0u64;\n"
                      f"    for k in a..b {{ t += 1; h = h * 31u64 + u64(k); }}\n"
                      f"    c = t; s = h;\n}}\n")
    c, s = np.zeros(1, np.int32), np.zeros(1, np.uint64)
    dt = np.dtype({"u": "uint", "i": "int"}[ty[0]] + ty[1:])
    m.k(dt.type(a), dt.type(b), c, s)
    want_h = 0
    for k in range(a, b):
        want_h = (want_h * 31 + (k % 2**64)) % 2**64
    assert c.tolist() == [max(b - a, 0)] and s.tolist() == [want_h]


@pytest.mark.parametrize("value", [1.0 + 2**-8 + 2**-30, -(1.0 + 2**-8 + 2**-30), 3.0000001, 2**-133 * 1.5])
def test_bf16_scalar_arguments_are_rounded_once(value):
    """A Python float for a bf16 scalar went through float32 (ml_dtypes): a value just above a
    bf16 midpoint rounded to the midpoint, then to even. The in-kernel cast bf16(f64) was right."""
    m = kernc.compile("kernel k(f: bf16, d: f64, o: f32[n, 2] write) over n { o = [f32(f), f32(bf16(d))]; }")
    for arg in (value, np.float64(value)):
        o = np.zeros((1, 2), np.float32)
        m.k(arg, value, o)
        assert o[0, 0] == o[0, 1], (arg, o)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_min_max_of_signed_zeros_do_not_depend_on_operand_order(dtype):
    """numpy's fmin/fmax return their first zero, and their scalar and array paths differ: min(0.0,
    -0.0) was -0.0 in one order and +0.0 in the other, and differed between a uniform operand and
    per-lane ones. The interpreter now orders -0.0 < +0.0 (NaN operands still ignored)."""
    m = kernc.compile(f"kernel k(a: {dtype}, b: {dtype}, x: {dtype}[n] read, y: {dtype}[n] read, "
                      f"lo: {dtype}[n, 4] write, hi: {dtype}[n, 4] write) over n {{\n"
                      f"    lo = [min(a, b), min(b, a), min(x, y), min(y, x)];\n"
                      f"    hi = [max(a, b), max(b, a), max(x, y), max(y, x)];\n}}\n")
    nd = np.float32 if dtype == "f32" else np.float64
    for a, b in ((0.0, -0.0), (-0.0, 0.0)):
        lo, hi = np.ones((2, 4), nd), np.ones((2, 4), nd)
        m.k(nd(a), nd(b), np.full(2, a, nd), np.full(2, b, nd), lo, hi)
        assert (lo == 0).all() and np.signbit(lo).all() and (hi == 0).all() and not np.signbit(hi).any()
    lo, hi = np.ones((1, 4), nd), np.ones((1, 4), nd)
    m.k(nd(np.nan), nd(2.0), np.array([np.nan], nd), np.array([2.0], nd), lo, hi)
    assert lo.tolist() == [[2.0] * 4] and hi.tolist() == [[2.0] * 4]


@pytest.mark.parametrize("body, expected_sign", [
    ("o -= 0.0;", False),            # a write output's value starts at 0: 0 - (+0) = +0
    ("o = 0.0; o -= 0.0;", False),   # 0.0 - 0.0 = +0.0
    ("o = -0.0; o -= 0.0;", True),   # -0.0 - 0.0 = -0.0
])
def test_minus_assign_on_a_write_output_keeps_the_sign_of_zero(body, expected_sign):
    """Found by a fuzzing trial: `o -= x` on a `write` output was lowered as `-x` (right for an
    `add` output, whose pending value is added to the element: e + (-x) == e - x), so a write
    output stored -0.0 where 0.0 - 0.0 is +0.0."""
    m = kernc.compile(f"kernel k(o: f32[n] write) over n {{ {body} }}")
    o = np.full(3, 5.0, np.float32)
    m.k(o)
    assert o.tolist() == [0.0] * 3 and np.signbit(o).tolist() == [expected_sign] * 3


ADD_UNASSIGNED = """
kernel seq(a: f32[n] add, c: i32[n] read) over n { if c > 0 { return; } a += 1.0; }
kernel strd(a: f32[m] add strided(1, 2), c: i32[n] read) over n { if c == 0 { a += 1.0; } }
kernel idx(a: f32[m] add indexed(I), I: u32[n] read, c: i32[n] read) over n { if c > 0 { return; } a += 1.0; }
kernel atom(a: f32[m] add atomic(I), I: u32[n] read, c: i32[n] read) over n { if c == 0 { a += 1.0; } }
kernel vec(a: f32[n, 4] add, c: i32[n] read) over n { if c == 0 { a += [1.0, 2.0, 3.0, 4.0]; } }
"""


@pytest.fixture(scope="module")
def add_unassigned():
    return kernc.compile(ADD_UNASSIGNED)


@pytest.mark.parametrize("kernel", ["seq", "strd", "idx", "atom", "vec"])
def test_an_add_output_a_thread_does_not_assign_is_left_alone(add_unassigned, kernel):
    """A thread that returned (or took a branch) before assigning an ``add`` output still added its
    pending 0 to the element: a -0.0 became +0.0 (and each such thread cost a read-modify-write or
    an atomic). It now skips the add, as a ``write`` output skips its store (found by a fuzzing
    trial). Threads 0 and 2 add; 1 and 3 do not."""
    c = np.array([0, 1, 0, 1], np.int32)
    I = np.array([0, 1, 2, 3], np.uint32)
    a = np.full(9 if kernel == "strd" else (4, 4) if kernel == "vec" else 4, -0.0, np.float32)
    args = {"seq": (a, c), "vec": (a, c), "strd": (a, c), "idx": (a, I, c), "atom": (a, I, c)}[kernel]
    getattr(add_unassigned, kernel)(*args)
    touched = {"strd": [1, 5]}.get(kernel, [0, 2])  # strided(1, 2): thread t adds to a[1 + 2t]
    want = np.full(a.shape, -0.0, np.float32)
    want[touched] = [1.0, 2.0, 3.0, 4.0] if kernel == "vec" else 1.0
    assert np.array_equal(a, want) and np.array_equal(np.signbit(a), np.signbit(want)), a
    # the add sits behind the thread's "assigned" flag in the kern IR
    kern_ir = add_unassigned._compilation.kern_ir()
    body = kern_ir[kern_ir.index(f"func.func @{kernel}("):]
    body = body[:body.index("\n  }\n")]
    assert "scf.if" in body[body.rindex("kern.add") - 400:body.rindex("kern.add")]


def test_collective_add_outputs_still_count_every_thread():
    """``add sum`` and ``add shared_sum`` are collective (every thread takes part); a thread that
    assigns nothing adds 0 there, and the results are unchanged."""
    mod = kernc.compile("""
kernel s(o: f32[1] add sum, x: f32[n] read) over n { if x > 0.0 { o += x; } }
kernel h(o: f32[m] add shared_sum(I), I: u32[n] read, x: f32[n] read) over n { if x > 0.0 { o += x; } }
""")
    x = np.array([1.0, -2.0, 3.0, -4.0, 5.0] * 20, np.float32)
    o = np.zeros(1, np.float32)
    mod.s(o, x)
    assert o[0] == 180.0
    I = (np.arange(100) % 3).astype(np.uint32)
    h = np.zeros(3, np.float32)
    mod.h(h, I, x)
    assert np.array_equal(h, np.array([sum(v for v, i in zip(x, I) if i == k and v > 0) for k in range(3)], np.float32))
