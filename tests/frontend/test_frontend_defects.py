"""Regression tests for the defects a new-user trial found in the frontend (issue "Layouts", item 7).
Each wrong input is a located error (``file:line:col``), never a hang, a crash or bad PTX."""

from __future__ import annotations

import time

import numpy as np
import pytest

import kernc
from kernc.support.errors import CompileError


def first_error(src: str):
    with pytest.raises(CompileError) as info:
        kernc.compile(src, filename="t.kern")
    d = info.value.diagnostics[0]
    return d, (d.location.line, d.location.column)


@pytest.mark.parametrize("name, message", [
    ("_", "'_' cannot name a kernel: a lone '_' is not a PTX identifier"),      # ptxas rejected it
    ("__nv_expf", "'__nv_expf' cannot name a kernel"),                         # crashed NVVM linking
    ("__nvvm_reflect", "cannot name a kernel"),
    ("kernel", "'kernel' is a keyword and cannot name a kernel"),              # was accepted
    ("let", "'let' is a keyword"),
    ("f32", "'f32' is a builtin name and cannot name a kernel"),
    ("WARP_SZ", "'WARP_SZ' cannot name a kernel: it is a predefined identifier of PTX"),  # ptxas rejected it
])
def test_kernel_names_are_valid_ptx_identifiers(name, message):
    d, loc = first_error(f"kernel {name}(x: f32[n] read, y: f32[n] write) over n {{ y = exp(x); }}")
    assert message in d.message and loc == (1, 8)


def test_keywords_are_not_parameter_names_but_access_words_are():
    d, loc = first_error("kernel k(in: f32, y: f32[n] write) over n { }")
    assert "'in' is a keyword" in d.message and loc == (1, 10)
    kernc.compile("kernel k(read: f32, compute: f32, y: f32[n] write) over n { y = read + compute; }")


def test_huge_component_count_is_a_quick_error():
    start = time.perf_counter()
    d, loc = first_error("kernel k(x: f32[n, 100000000] read, y: f32[n] write) over n { y = x[0]; }")
    assert time.perf_counter() - start < 5
    assert "at most 64 components, got 100000000" in d.message and loc == (1, 20)
    kernc.compile("kernel k(x: f32[n, 64] read, y: f32[n] write) over n { y = x[63]; }")


SMALL_CASTS = """
kernel casts(x: f32[n] read, a: i8[n] write, b: u8[n] write, c: i16[n] write, d: u16[n] write) over n {
    a = i8(x); b = u8(x); c = i16(x); d = u16(x);
}
"""


def test_float_to_small_int_casts_have_one_meaning():
    mod = kernc.compile(SMALL_CASTS)
    gpu = mod.ir("gpu")
    # convert to 32 bits (saturating, NaN -> 0: PTX cvt.rzi and the interpreter), then truncate
    assert "arith.fptosi" in gpu and "arith.fptoui" in gpu   # (cse shares the i8/i16 conversions)
    for line in gpu.splitlines():
        if "fptosi" in line or "fptoui" in line:
            assert line.rstrip().endswith("to i32"), line
    assert gpu.count("arith.trunci") >= 4
    x = np.array([300.7, -1.5, np.nan, 1e10, -1e10, 127.9, -129.2, 65535.9, 70000.2], np.float32)
    outs = [np.zeros(x.size, t) for t in (np.int8, np.uint8, np.int16, np.uint16)]
    mod.casts(x, *outs)

    def expect(v, signed, dtype):
        if np.isnan(v):
            return 0
        lo, hi = (-2**31, 2**31 - 1) if signed else (0, 2**32 - 1)
        i = int(min(max(np.trunc(v), lo), hi))   # saturate to 32 bits
        return np.array(i & 0xFFFFFFFF, np.uint32).astype(np.uint64).astype(dtype)  # keep low bits

    for out, signed, dtype in zip(outs, (True, False, True, False), (np.int8, np.uint8, np.int16, np.uint16)):
        assert out.tolist() == [int(expect(v, signed, dtype)) for v in x], dtype


@pytest.mark.parametrize("stmt, message, amount", [
    ("let z = b << 32;", "shift amount 32 is out of range for 'i32' (0..31)", "32"),
    ("let z = b >> -1;", "shift amount -1 is out of range for 'i32' (0..31)", "-1"),
    ("let z = 1 << 40;", "shift amount 40 is out of range for 'i32' (0..31)", "40"),
    ("let z: u8 = 1u8 << 8u8;", "shift amount 8 is out of range for 'u8' (0..7)", "8u8"),
])
def test_constant_shift_amounts_must_fit_the_width(stmt, message, amount):
    src = f"kernel k(x: f32[n] read, y: f32[n] write, b: i32) over n {{ {stmt} y = x; }}"
    d, loc = first_error(src)
    assert message in d.message and loc == (1, src.index(amount, src.index(stmt)) + 1)


def test_wide_shifts_are_fine():
    kernc.compile("kernel k(y: i64[n] write) over n { let z: i64 = 1 << 40; y = z << 63; }")


@pytest.mark.parametrize("stmt, message", [
    ("let z = 1e400;", "float literal 1e400 is out of range for 'f32'"),
    ("let z: f16 = 70000.0;", "float literal 70000.0 is out of range for 'f16'"),
    ("let z = 1e5f16;", "float literal 1e5f16 is out of range for 'f16'"),
    ("let z = f16(x) * 70000;", "integer literal 70000 is out of range for 'f16'"),
    ("let z = 2.0f64 * 1e309;", "float literal 1e309 is out of range for 'f64'"),
])
def test_float_literals_must_fit_their_type(stmt, message):
    d, loc = first_error(f"kernel k(x: f32[n] read, y: f32[n] write) over n {{ {stmt} y = x; }}")
    assert message in d.message and loc[0] == 1


def test_tiny_float_literals_round_to_zero_and_max_values_fit():
    kernc.compile("kernel k(y: f32[n] write) over n { let a: f16 = 65504.0; let b = 1e-50; y = b + f32(a); }")


def test_fma_of_int_literals_into_an_int_names_the_function():
    d, _ = first_error("kernel k(y: i32[n] write) over n { y = fma(1, 2, 3); }")
    assert "'fma(...)' gives a float, which cannot be 'i32'" in d.message
    assert "float literal" not in d.message


def test_unterminated_block_comment():
    d, loc = first_error("kernel k(x: f32[n] read) over n {\n    /* never closed\n}\n")
    assert "unterminated comment" in d.message and loc == (2, 5)
    d, loc = first_error("kernel k(x: f32[n] read) over n { } /* open")
    assert "unterminated comment" in d.message and loc == (1, 37)


def test_soa_and_aos_need_a_multi_component_buffer():
    d, loc = first_error("kernel k(x: f32[n] read as soa, y: f32[n] write) over n { y = x; }")
    assert "layout 'soa' is for multi-component buffers" in d.message and loc == (1, 28)
    d, _ = first_error("kernel k(x: f32[n] read as aos, y: f32[n] write) over n { y = x; }")
    assert "layout 'aos' is for multi-component buffers" in d.message


def test_float_loop_bounds_are_an_error():
    src = "kernel k(x: f32[n] read) over n { for k in 0.5..3.0 { } }"
    d, loc = first_error(src)
    assert "loop bounds must be integers" in d.message and loc == (1, src.index("k in") + 1)
    d, _ = first_error("kernel k(x: f32[n] read) over n { for k in 0..3.0 { } }")
    assert "loop bounds must be integers" in d.message
    d, _ = first_error("kernel k(x: f32[n, 3] read, y: f32[n] write) over n { y = x[1.5]; }")
    assert "a float literal cannot be 'i32'" in d.message


# An integer-literal expression with an integer operation where a float is expected: an internal
# compiler error ('<<' on f32) or float semantics (f32(7 / 2) was 3.5). It now computes as i32, as C.
@pytest.mark.parametrize("expr, want", [
    ("1 << 2", 4.0), ("1 >> 2", 0.0), ("1 & 3", 1.0), ("6 ^ 3", 5.0), ("~1", -2.0),
    ("select(true, 1 | 2, 0.5)", 3.0), ("x * (1 << 2)", 8.0), ("f32(1 << 2)", 4.0),
    ("f32(f64(1 << 3))", 8.0), ("f32(7 / 2)", 3.0), ("7 / 2", 3.0), ("-(7 / 2)", -3.0),
    ("f32(7 % 4 / 2)", 1.0), ("f32(-7 // 2)", -4.0), ("f32(-7 %% 2)", 1.0), ("max(7 / 2, 1.5)", 3.0),
    ("2.5 + (9 >> 1)", 6.5), ("[1 << 1, 2.5][0]", 2.0),
    ("0.5 * (1 + 2)", 1.5), ("x + 1", 3.0), ("f32(1 + 2) / 2.0", 1.5),  # no integer operation: float
])
def test_integer_literal_operations_keep_integer_meaning_in_float_context(expr, want):
    mod = kernc.compile(f"kernel k(x: f32[n] read, y: f32[n] write) over n {{ y = {expr}; }}")
    y = np.zeros(3, np.float32)
    mod.k(np.full(3, 2.0, np.float32), y)
    assert y.tolist() == [want] * 3
    assert ".entry k" in mod.ptx  # and it lowers to PTX


def test_integer_literal_operations_in_integer_context_are_unchanged():
    mod = kernc.compile("kernel k(x: u8[n] read, y: u8[n] write) over n { let z: u8 = 1 << 7; y = z | (3 & 6); }")
    y = np.zeros(2, np.uint8)
    mod.k(np.zeros(2, np.uint8), y)
    assert y.tolist() == [130, 130]
    d, loc = first_error("kernel k(x: f32[n] read, y: f32[n] write) over n { y = f32(1 << 40); }")
    assert "shift amount 40 is out of range for 'i32'" in d.message


@pytest.mark.parametrize("t, dt", [("f32", np.float32), ("f64", np.float64)])
def test_float_floored_remainder_is_numpy_mod_bitwise(t, dt):
    """``-3.0 %% 3.0`` was ``-0.0``: a zero result takes the divisor's sign, as numpy's ``mod``."""
    mod = kernc.compile(f"kernel k(a: {t}[n] read, b: {t}[n] read, y: {t}[n] write) over n {{ y = a %% b; }}")
    vals = np.array([-3.0, 3.0, -0.0, 0.0, 1.5, -1.5, 7.25, -7.25, 1e-40, np.inf, -np.inf, np.nan, 2.0, -2.0], dt)
    a, b = (v.ravel() for v in np.meshgrid(vals, vals))
    y = np.zeros_like(a)
    mod.k(a, b, y)
    with np.errstate(all="ignore"):
        want = np.mod(a, b)
    np.testing.assert_array_equal(np.signbit(y[~np.isnan(want)]), np.signbit(want[~np.isnan(want)]))
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("decl, body, message", [
    ("I: u32[n] read, y: f32[m] add atomic(I)", "y += x;", "'add atomic' adds floats with one atomic per thread"),
    ("I: u32[n] read, y: f64[m] add atomic(I)", "y += f64(x);", "'add atomic' adds floats"),
    ("y: f32[n1] add pair", "y = (x, x);", "'add pair' adds two floats with atomics"),
])
def test_deterministic_refuses_float_adds_it_cannot_order(decl, body, message):
    """``@deterministic`` was silently accepted on float ``add atomic(I)`` / ``add pair`` buffers,
    whose sums still depend on the order of their atomics."""
    d, loc = first_error(f"@deterministic\nkernel k(x: f32[n] read, {decl}) over n {{ {body} }}")
    assert message in d.message and "@deterministic cannot make 'y' reproducible" in d.message
    note = d.notes[0]
    assert note.message == "the attribute is here" and (note.location.line, note.location.column) == (1, 2)


@pytest.mark.parametrize("decl, body", [
    ("I: u32[n] read, y: i32[m] add atomic(I)", "y += i32(x);"),   # integer adds: any order, one result
    ("y: f32[n1] write pair", "y = (x, x);"),                      # two adds onto zero
    ("y: f32[m] write block_sum", "y = x;"),                        # no atomics
    ("I: u32[n] read, y: f32[m] add shared_sum(I)", "y += x;"),     # what @deterministic orders
    ("y: f32[1] add sum", "y += x;"),
])
def test_deterministic_accepts_what_is_reproducible(decl, body):
    kernc.compile(f"@deterministic\nkernel k(x: f32[n] read, {decl}) over n {{ {body} }}")


@pytest.mark.parametrize("cond, want", [
    ("7 / 2 < 3.5", True), ("3.0 == 7 / 2", True), ("1 << 2 > 2.5", True), ("7 < 3.5", False),
    ("7 + 2 < 3.5", False), ("abs(-7) < 7.5", True), ("x > 0.0 && 7 / 2 == 3.0", True), ("7 == 7", True),
    ("1 < 2", True), ("2.5 < 3.5", True), ("7 / 2 != 3.5", True),
])
def test_comparing_integer_and_float_literal_expressions(cond, want):
    """``7 < 3.5`` compared an i32 with an f32 (the int side was defaulted alone): 'kern IR does not
    verify', an internal compiler error. Both sides now compare in their common type, as in C."""
    mod = kernc.compile(f"kernel k(x: f32[n] read, y: f32[n] write) over n {{ y = select({cond}, 1.0, 0.0); }}")
    y = np.zeros(2, np.float32)
    mod.k(np.ones(2, np.float32), y)
    assert y.tolist() == [float(want)] * 2
    assert ".entry k" in mod.ptx


def test_comparing_vector_literals_of_mixed_kinds():
    mod = kernc.compile("kernel k(x: f32[n] read, y: f32[n, 2] write) over n { "
                        "y = select([1, 2] == [7 / 2, 2.0], [1.0, 1.0], [0.0, 0.0]); }")
    y = np.zeros((2, 2), np.float32)
    mod.k(np.ones(2, np.float32), y)
    assert y.tolist() == [[0.0, 1.0]] * 2


@pytest.mark.parametrize("src, message, hint", [
    ("kernel k(x: u32[n] read, y: u32[n] write) over n { let z = x; z ^= z >> 16; y = z; }",
     "unexpected '^', expected '='", "compound assignment exists for += -= *= /= only: write x = x ^ (...)"),
    ("kernel k(x: u32[n] read, y: u32[n] write) over n { let z = x; z <<= 1; y = z; }",
     "unexpected '<<'", "write x = x << (...)"),
    ("kernel k(x: f32[R] read, y: f32[R] write) over r in R { y = x; }",
     "unexpected 'in'", "one problem coordinate is 'over (r) in (R)'"),
])
def test_syntax_errors_with_a_common_cause_get_a_hint(src, message, hint):
    """``x ^= v`` and ``over r in R`` got a bare 'unexpected ...' with no way forward."""
    d, _ = first_error(src)
    assert message in d.message and hint in (d.hint or "")
