"""Known failure classes of GPU kernel compilers: one regression test each that a compiler getting it
wrong would fail.

- index arithmetic past 2^31 elements (the launcher switches to 64-bit index code);
- the grid dimension limit (more than 2^31 - 1 blocks);
- ``P = 0`` launches;
- non-power-of-two, tiny sizes and ``n % block != 0`` tails;
- signed vs unsigned compares and int <-> float conversions;
- C-truncating ``/`` and ``%`` with negative operands (also by constants, powers of two included);
- NaN in ``min``/``max``;
- barriers inside divergent control flow (every accessor kind's gpu IR, walked with ``kernc.mlir.ir``);
- f16/bf16 atomics (ptxas accepts the PTX; the CPU computes them right);
- a stale compile cache after changing an option;
- IR that does not verify between passes (``--verify-each``).

Tests marked ``xfail(strict=True, reason="BUG: ...")`` document defects found here; they turn into
failures (XPASS) once fixed, so the marker is removed with the fix.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernc
from kernc import CompileError, KerncLaunchError, KerncRuntimeError
from kernc.backend import binding, cache, cpu, toolkit
from kernc.backend.binding import index_products_overflow
from kernc.cli import main
from kernc.compiler import Compilation, CompileOptions, context
from kernc.support.mlir import ir

# ---------------------------------------------------------------------------------------------------
# index arithmetic past 2^31 elements
BIG = """
kernel big(a: f32) over n { let z = a * 2.0; }
kernel strided_big(x: f32[m] read strided(off, 1), off: index, y: f32[n] write) over n { y = x; }
"""


@pytest.fixture(scope="module")
def big():
    return kernc.compile(BIG, filename="big.kern")


def _bind(sig, args, kwargs):
    return binding.bind(sig, args, kwargs, cpu.is_host_array, "cpu")


@pytest.mark.parametrize("P,bits", [
    (0, 32), (1, 32), (1000, 32), (2**31 - 2**20, 32),
    (2**31 - 1, 64), (2**31, 64), (2**31 + 5, 64), (3 * 2**31, 64), (2**38, 64),
])
def test_launcher_picks_64_bit_indices_past_2_31_elements(big, P, bits):
    """No array is allocated: the only size is the keyword ``n``."""
    bound = _bind(big.big.signature, (1.0,), {"n": P})
    assert bound.problem_size == P and bound.index_bits == bits
    assert bound.grid == -(-P // 256)


def test_index_scalar_past_2_31_picks_64_bit_indices(big):
    sig = big.strided_big.signature
    x, y = np.zeros(4, np.float32), np.zeros(2, np.float32)
    assert _bind(sig, (x, 2, y), {}).index_bits == 32
    assert _bind(sig, (x, 2**31 + 3, y), {}).index_bits == 64
    assert _bind(sig, (x, -(2**31) - 1, y), {}).index_bits == 64
    with pytest.raises(KerncLaunchError, match="'off'.*out of range for index"):
        _bind(sig, (x, 2**63, y), {})


def test_index_scalar_times_a_coordinate_past_2_31_picks_64_bit_indices(big):
    """``strided(off, s)`` with ``s = 2**31 - 1``: each value fits int32 but ``off + t*s`` does not;
    the 32-bit PTX computed j mod 2**32 (thread 2 read x[3]) where the CPU reads the default."""
    mod = kernc.compile("kernel sd(X: f32[m] read strided(off, s) default -1, off: index, s: index, "
                        "o: f32[n] write) over n { o = X; }")
    sig = mod.sd.signature
    X, o = np.arange(10, dtype=np.float32), np.zeros(3, np.float32)
    assert _bind(sig, (X, 5, 2**31 - 1, o), {}).index_bits == 64
    assert _bind(sig, (X, 5, -(2**30), o), {}).index_bits == 64
    assert _bind(sig, (X, 5, 2, o), {}).index_bits == 32  # small strides stay 32-bit
    assert _bind(sig, (X, 2**15, 2**10, np.zeros(2**10 - 300, np.float32)), {}).index_bits == 32
    assert _bind(sig, (X, 2**20, 2**10, np.zeros(2**11, np.float32)), {}).index_bits == 64
    mod.sd(X, 5, 2**31 - 1, o)
    assert o.tolist() == [5.0, -1.0, -1.0]


@pytest.mark.parametrize("src, args, want", [
    # a literal stride: 42950 * 100000 wraps to 32704 in 32 bits, an in-bounds element
    ("kernel k(x: f32[m] read strided(0, 100000) default -1.0, y: f32[n] write) over n { y = x; }",
     lambda: (np.arange(40000, dtype=np.float32), np.zeros(42951, np.float32)), [0.0] + [-1.0] * 42950),
    # an i32 stride, converted with index(...)
    ("kernel k(x: f32[m] read strided(0, index(s)) default -1.0, s: i32, y: f32[n] write) over n { y = x; }",
     lambda: (np.arange(40000, dtype=np.float32), 100000, np.zeros(42951, np.float32)), [0.0] + [-1.0] * 42950),
    # an i64 row index past 2**32 (truncated to row 1 in 32 bits)
    ("kernel k(x: f32[M, N] view, y: f32[P] write, s: i64) over (p) in (P) { y = x.checked(index(s), p); }",
     lambda: (np.ones((4, 3), np.float32), np.zeros(3, np.float32), 2**32 + 1), [0.0, 0.0, 0.0]),
    # a product of two index scalars
    ("kernel k(y: f32[n] write, a: index, b: index) over n { y = f32(a * b); }",
     lambda: (np.zeros(4, np.float32), 50000, 50000), [2.5e9] * 4),
])
def test_integer_values_whose_products_leave_int32_get_64_bit_indices(src, args, want):
    """The launcher looked only at ``index`` scalars: a literal stride, an ``i32``/``i64`` scalar
    made an index and a product of two index scalars wrapped in the 32-bit PTX while the CPU
    computed in 64 bits (found by a trial; the GPU results were read from the PTX)."""
    mod = kernc.compile(src)
    kernel = getattr(mod, "k")
    a = args()
    assert _bind(kernel.signature, a, {}).index_bits == 64
    kernel(*a)
    out = [v for v in a if isinstance(v, np.ndarray)][-1] if "view" not in src else a[1]
    assert out.tolist() == want


def test_index_literal_max_is_recorded_and_small_literals_stay_32_bit():
    mod = kernc.compile("kernel k(x: f32[m] read strided(3, 2), y: f32[n] write, z: u32[n] write) over n "
                        "{ y = x; z = 2654435761u32; }")  # a big u32 constant is not index arithmetic
    sig = mod.k.signature
    assert sig.index_literal_max == 3
    assert _bind(sig, (np.zeros(64, np.float32), np.zeros(8, np.float32), np.zeros(8, np.uint32)), {}).index_bits == 32
    assert "index_literal_max" not in kernc.compile("kernel k(y: f32[n] write) over n { y = 1.0; }").k.signature.to_json()


def _entry_params(ptx: str, name: str) -> list[str]:
    m = re.search(r"\.entry " + name + r"\((.*?)\)", ptx, re.S)
    assert m, ptx
    return [p.strip() for p in m.group(1).split(",") if p.strip()]


@pytest.mark.parametrize("bits", [32, 64])
def test_ptx_index_width(bits):
    comp = Compilation("kernel k(x: f32[m] read strided(off, s), off: index, s: index, y: f32[n] write) "
                       "over n { y = x; }", "k.kern", CompileOptions(index_bits=bits))
    ptx = comp.ptx()
    params = _entry_params(ptx, "k")
    # x, off, s, y, then the sizes m and n; pointers are always 64-bit
    scalars = [params[1], params[2], params[4], params[5]]
    assert all(f".param .u{bits} " in p or f".param .s{bits} " in p for p in scalars), params
    other = 64 if bits == 32 else 32
    assert not any(f".param .u{other} " in p or f".param .s{other} " in p for p in scalars), params
    # the bounds guard t < n compares at the chosen width
    assert re.search(rf"setp\.\w+\.[us]{bits}\b", ptx), ptx


def test_api_module_compiles_64_bit_ptx_for_big_launches(big):
    comp = big._compilation
    assert ".param .u64 big_param_1" in comp.ptx(64) or ".param .s64 big_param_1" in comp.ptx(64)
    assert ".param .u32 big_param_1" in comp.ptx(32) or ".param .s32 big_param_1" in comp.ptx(32)


# ---------------------------------------------------------------------------------------------------
# the grid dimension limit
@pytest.mark.parametrize("block", [32, 1024])
def test_grid_limit(block):
    mod = kernc.compile(f"@block({block}) kernel g(a: f32) over n {{ let z = a; }}")
    sig = mod.g.signature
    limit = binding.MAX_GRID_X
    assert limit == 2**31 - 1
    ok = _bind(sig, (1.0,), {"n": limit * block})
    assert ok.grid == limit and ok.index_bits == 64
    with pytest.raises(KerncLaunchError, match=r"needs 2147483648 blocks.*more than the 2147483647"):
        _bind(sig, (1.0,), {"n": limit * block + 1})


# ---------------------------------------------------------------------------------------------------
# P = 0
def test_zero_sized_launch_runs_nothing_and_zero_initialises_write_sum():
    mod = kernc.compile("""
    kernel k(x: f32[n] read, I: u32[n] read, y: f32[m] write indexed(I), b: f32[m] add indexed(I),
             s: f32[1] write sum, a: f32[1] add sum, q: f32[1, 2] write sum) over n {
        y = x; b += x; s = x; a += x; q = [x, 1.0];
    }""")
    y, b = np.full(5, 7, np.float32), np.full(5, 7, np.float32)
    s, a, q = np.full(1, 3, np.float32), np.full(1, 3, np.float32), np.full((1, 2), 3, np.float32)
    res = mod.k(np.zeros(0, np.float32), np.zeros(0, np.uint32), y, b, s, a, q)
    assert res.problem_size == 0 and res.grid == 0
    assert res.stats.threads == 0 and res.stats.global_store_requests == 0 and res.stats.global_atomics == 0
    assert (y == 7).all() and (b == 7).all()          # untouched
    assert s[0] == 0 and (q == 0).all()               # `write sum` of nothing is 0
    assert a[0] == 3                                   # `add sum` of nothing adds 0


def test_zero_sized_launch_via_keyword_and_cli(tmp_path, capsys):
    mod = kernc.compile("kernel k(c: f32, y: f32[m] write) over n { y = c; }")
    y = np.full(4, 5, np.float32)
    res = mod.k(1.0, y, n=0)
    assert res.grid == 0 and (y == 5).all()
    src = tmp_path / "z.kern"
    src.write_text("kernel z(x: f32[n] read, y: f32[n] write, s: f32[1] write sum) over n { y = x; s = x; }")
    np.save(tmp_path / "x.npy", np.zeros(0, np.float32))
    assert main(["run", str(src), "--input", f"x=@{tmp_path / 'x.npy'}", "--output-dir", str(tmp_path)]) == 0
    assert np.load(tmp_path / "y.npy").shape == (0,) and np.load(tmp_path / "s.npy").tolist() == [0.0]
    assert "P=0" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------------
# non-power-of-two, tiny sizes, tails
TAIL = """
@block({B})
kernel t(x: f32[n] read, y: f32[m] write strided(0, 1), s: i32[1] add sum, c: u32[m2] add block_sum) over n {{
    y = x + 1.0;
    s += 1;
    c += 1u32;
}}
"""


@pytest.mark.parametrize("B", [32, 256, 1024])
@pytest.mark.parametrize("n", [1, 2, 3, 31, 33, 100, 255, 257, 1025, 2049])
def test_tails_touch_exactly_n_elements(B, n):
    mod = _tail_module(B)
    pad = 70
    x = np.arange(n, dtype=np.float32)
    y = np.full(n + pad, -5, np.float32)
    s = np.zeros(1, np.int32)
    blocks = -(-n // B)
    c = np.zeros(blocks + 3, np.uint32)
    res = mod.t(x, y, s, c)
    assert res.grid == blocks
    assert np.array_equal(y[:n], x + 1) and (y[n:] == -5).all()
    assert s[0] == n
    want = [B] * (blocks - 1) + [n - B * (blocks - 1)] + [0, 0, 0]
    assert c.tolist() == want


_tails: dict = {}


def _tail_module(B):
    if B not in _tails:
        _tails[B] = kernc.compile(TAIL.format(B=B))
    return _tails[B]


# ---------------------------------------------------------------------------------------------------
# signed vs unsigned compares, int <-> float conversions
CONV = """
kernel conv(a: i32[n] read, b: i32[n] read, f: f32[n] read,
            lt_s: u8[n] write, lt_u: u8[n] write, shr_s: i32[n] write, shr_u: u32[n] write,
            div_s: i32[n] write, div_u: u32[n] write, a_f: f32[n] write, a_uf: f32[n] write,
            a_d: f64[n] write, a_ud: f64[n] write, a_l: i64[n] write, a_ul: i64[n] write,
            f_i: i32[n] write, f_u: u32[n] write, mx_s: i32[n] write, mx_u: u32[n] write) over n {
    let u = u32(a);
    let v = u32(b);
    lt_s = u8(a < b);
    lt_u = u8(u < v);
    shr_s = a >> 4;
    shr_u = u >> 4u32;
    div_s = a / 2;
    div_u = u / 2u32;
    a_f = f32(a);
    a_uf = f32(u);
    a_d = f64(a);
    a_ud = f64(u);
    a_l = i64(a);
    a_ul = i64(u);
    f_i = i32(f);
    f_u = u32(abs(f));
    mx_s = max(a, b);
    mx_u = max(u, v);
}
"""


def test_signed_unsigned_and_conversions():
    mod = kernc.compile(CONV)
    a = np.array([-1, -2, 5, -2**31, 2**31 - 1, 16777217, -7], np.int32)
    b = np.array([1, 3, -5, 0, -1, 0, 7], np.int32)
    f = np.array([-2.7, 2.7, -0.5, 1e9, -1e9, 3.99, 16777217.0], np.float32)
    n = len(a)
    outs = {name: np.zeros(n, dt) for name, dt in [
        ("lt_s", np.uint8), ("lt_u", np.uint8), ("shr_s", np.int32), ("shr_u", np.uint32),
        ("div_s", np.int32), ("div_u", np.uint32), ("a_f", np.float32), ("a_uf", np.float32),
        ("a_d", np.float64), ("a_ud", np.float64), ("a_l", np.int64), ("a_ul", np.int64),
        ("f_i", np.int32), ("f_u", np.uint32), ("mx_s", np.int32), ("mx_u", np.uint32)]}
    mod.conv(a, b, f, **outs)
    u, v = a.view(np.uint32), b.view(np.uint32)
    assert outs["lt_s"].tolist() == (a < b).astype(np.uint8).tolist()
    assert outs["lt_u"].tolist() == (u < v).astype(np.uint8).tolist()
    assert outs["lt_s"][0] == 1 and outs["lt_u"][0] == 0  # -1 < 1, but 0xFFFFFFFF > 1
    assert outs["shr_s"].tolist() == (a >> 4).tolist() and outs["shr_s"][0] == -1
    assert outs["shr_u"].tolist() == (u >> 4).tolist() and outs["shr_u"][0] == 0x0FFFFFFF
    assert outs["div_s"].tolist() == [0, -1, 2, -2**30, 2**30 - 1, 8388608, -3]   # truncation
    assert outs["div_u"].tolist() == (u // 2).tolist()
    assert outs["a_f"].tolist() == a.astype(np.float32).tolist() and outs["a_f"][5] == 16777216.0
    assert outs["a_uf"].tolist() == u.astype(np.float32).tolist() and outs["a_uf"][0] == 4294967296.0
    assert outs["a_d"].tolist() == a.astype(np.float64).tolist()
    assert outs["a_ud"].tolist() == u.astype(np.float64).tolist() and outs["a_ud"][0] == 4294967295.0
    assert outs["a_l"].tolist() == a.tolist()                       # sign extension
    assert outs["a_ul"].tolist() == u.astype(np.int64).tolist()     # zero extension
    assert outs["f_i"].tolist() == [-2, 2, 0, 1000000000, -1000000000, 3, 16777216]  # truncation
    assert outs["f_u"].tolist() == [2, 2, 0, 1000000000, 1000000000, 3, 16777216]
    assert outs["mx_s"].tolist() == np.maximum(a, b).tolist()
    assert outs["mx_u"].tolist() == np.maximum(u, v).tolist()


def test_signedness_reaches_the_ir_and_ptx():
    mod = kernc.compile(CONV)
    gpu = mod.ir("gpu")
    for op in ("arith.cmpi slt", "arith.cmpi ult", "arith.shrsi", "arith.shrui", "arith.divui",
               "arith.sitofp", "arith.uitofp", "arith.extsi", "arith.extui", "arith.fptosi",
               "arith.fptoui", "arith.maxsi", "arith.maxui"):
        assert op in gpu, op
    ptx = mod.ptx
    for ins in ("setp.lt.s32", "setp.lt.u32", "shr.s32", "shr.u32", "cvt.rn.f32.s32", "cvt.rn.f32.u32",
                "cvt.rzi.s32.f32", "cvt.rzi.u32.f32", "max.s32", "max.u32"):
        assert ins in ptx, ins


# ---------------------------------------------------------------------------------------------------
# C-truncating / and % with negative operands
def test_truncating_division_and_remainder_by_values_and_constants():
    mod = kernc.compile("""
    kernel d(a: i32[n] read, b: i32[n] read, q: i32[n] write, r: i32[n] write, q4: i32[n] write,
             r4: i32[n] write, qm4: i32[n] write, rm4: i32[n] write, q3: i32[n] write, r3: i32[n] write,
             fq: i32[n] write, fr: i32[n] write, fq4: i32[n] write, fr4: i32[n] write) over n {
        q = a / b;  r = a % b;
        q4 = a / 4; r4 = a % 4;
        qm4 = a / -4; rm4 = a % -4;
        q3 = a / 3; r3 = a % 3;
        fq = a // b; fr = a %% b;
        fq4 = a // 4; fr4 = a %% 4;
    }""")
    a = np.array([7, -7, 7, -7, -1, -4, -5, 0, 2**31 - 1, -2**31 + 1], np.int32)
    b = np.array([2, 2, -2, -2, 4, 4, -3, -3, -7, 7], np.int32)
    names = ["q", "r", "q4", "r4", "qm4", "rm4", "q3", "r3", "fq", "fr", "fq4", "fr4"]
    outs = {k: np.zeros(len(a), np.int32) for k in names}
    mod.d(a, b, **outs)

    def cdiv(x, y):
        q = abs(x) // abs(y)
        return q if (x < 0) == (y < 0) else -q

    A, B = a.tolist(), b.tolist()
    assert outs["q"].tolist() == [cdiv(x, y) for x, y in zip(A, B)]
    assert outs["q"].tolist()[:4] == [3, -3, -3, 3]
    assert outs["r"].tolist() == [x - cdiv(x, y) * y for x, y in zip(A, B)]
    assert outs["r"].tolist()[:4] == [1, -1, 1, -1]
    assert outs["q4"].tolist() == [cdiv(x, 4) for x in A] and outs["q4"][1] == -1   # not -2 (a shift)
    assert outs["r4"].tolist() == [x - cdiv(x, 4) * 4 for x in A] and outs["r4"][1] == -3
    assert outs["qm4"].tolist() == [cdiv(x, -4) for x in A]
    assert outs["rm4"].tolist() == [x - cdiv(x, -4) * -4 for x in A]
    assert outs["q3"].tolist() == [cdiv(x, 3) for x in A]
    assert outs["r3"].tolist() == [x - cdiv(x, 3) * 3 for x in A]
    assert outs["fq"].tolist() == [x // y for x, y in zip(A, B)]
    assert outs["fr"].tolist() == [x % y for x, y in zip(A, B)]
    assert outs["fq4"].tolist() == [x // 4 for x in A] and outs["fr4"].tolist() == [x % 4 for x in A]


def test_constant_folded_division_truncates():
    mod = kernc.compile("kernel c(y: i32[n] write, z: i32[n] write, w: i32[n] write, v: i32[n] write) over n "
                        "{ y = -7 / 2; z = -7 % 2; w = 7 / -2; v = -7 // 2; }")
    out = [np.zeros(1, np.int32) for _ in range(4)]
    mod.c(*out)
    assert [int(o[0]) for o in out] == [-3, -1, -3, -4]


# ---------------------------------------------------------------------------------------------------
# NaN in min / max
@pytest.mark.parametrize("ty,dt", [("f32", np.float32), ("f64", np.float64)])
def test_min_max_ignore_a_single_nan(ty, dt):
    # `r = sqrt(a)` makes the kernel link libdevice (see test_float_min_max_rem_ptx_assembles_alone)
    mod = kernc.compile(f"kernel m(a: {ty}[n] read, b: {ty}[n] read, lo: {ty}[n] write, hi: {ty}[n] write, "
                        f"r: {ty}[n] write) over n {{ lo = min(a, b); hi = max(a, b); r = sqrt(a); }}")
    nan = np.nan
    a = np.array([nan, 1.0, nan, -np.inf, 2.0], dt)
    b = np.array([1.0, nan, nan, nan, 3.0], dt)
    lo, hi, r = np.zeros(5, dt), np.zeros(5, dt), np.zeros(5, dt)
    mod.m(a, b, lo, hi, r)
    np.testing.assert_array_equal(lo, [1.0, 1.0, nan, -np.inf, 2.0])
    np.testing.assert_array_equal(hi, [1.0, 1.0, nan, -np.inf, 3.0])
    assert "minnumf" in mod.ir("gpu") and "maxnumf" in mod.ir("gpu")
    # PTX min/max return the non-NaN operand (min.NaN / max.NaN would propagate it)
    ptx = mod.ptx
    assert re.search(rf"\bmin(\.ftz)?\.f{ty[1:]}\b", ptx) and re.search(rf"\bmax(\.ftz)?\.f{ty[1:]}\b", ptx)
    assert ".NaN" not in ptx


@pytest.mark.parametrize("expr", ["min(a, b)", "max(a, b)", "a % b", "a %% b"])
@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_float_min_max_rem_ptx_assembles_alone(ty, expr):
    _ptxas_or_skip()
    mod = kernc.compile(f"kernel m(a: {ty}[n] read, b: {ty}[n] read, y: {ty}[n] write) over n {{ y = {expr}; }}")
    result = toolkit.run_ptxas(mod.ptx, "sm_90")
    assert result.ok, result.log


# ---------------------------------------------------------------------------------------------------
# barriers never inside divergent control flow
ACCESSOR_KERNELS = {
    "sequential": "kernel k(x: f32[n] read sequential, y: f32[n] write, z: f32[n] add) over n { y = x; z += x; }",
    "strided": "kernel k(x: f32[m] read strided(off, s), off: index, s: index, y: f32[m] write strided(1, 2), "
               "z: f32[m] add strided(off, 1)) over n { y = x; z += x; }",
    "strided_default": "kernel k(x: f32[m] read strided(off, s) default 0.5, off: index, s: index, "
                       "y: f32[n] write) over n { y = x; }",
    "indexed": "kernel k(x: f32[m] read indexed(I), I: u32[n] read, y: f32[m] write indexed(I), "
               "z: f32[m] add indexed(I)) over n { y = x; z += x; }",
    "shared": "kernel k(x: f32[m, 3] read shared(I) as soa, I: u32[n] read, y: f32[n] write) over n "
              "{ y = x[0] + x[2]; }",
    "unique": "kernel k(x: f32[n] read unique, y: f32[n] write) over n { y = x; }",
    "pair": "kernel k(u: f32[n1] read pair, y: f32[n1] add pair, z: f32[n1] write pair) over n "
            "{ y = (u.first, u.second); z.first = u.second; }",
    "pair_strided_default": "kernel k(u: f32[m] read pair strided(0, 1) default 0.0, y: f32[n] write) over n "
                            "{ y = u.first + u.second; }",
    "shared_sum": "kernel k(v: f32[n] read, I: u32[n] read, y: f32[m, 3] add shared_sum(I) as soa) over n "
                  "{ y += [v, v, 1.0]; }",
    "atomic": "kernel k(v: f32[n] read, I: u32[n] read, y: f32[m] add atomic(I)) over n { y += v; }",
    "block_sum": "kernel k(v: f32[n] read, y: f32[m] write block_sum, z: f64[m] add block_sum) over n "
                 "{ y = v; z += f64(v); }",
    "sum": "kernel k(v: f32[n] read, y: f32[1] write sum, z: i32[1, 2] add sum) over n { y = v; z += [1, 2]; }",
    # block-wide accessors under data-dependent control flow and an early return in the body
    "sum_in_branches": "kernel k(v: f32[n] read, y: f32[1] add sum, w: f32[n] read shared(I), I: u32[n] read) "
                       "over n { if v > 0.0 { return; } for j in 0..3 { if w < f32(j) { y += v; } } }",
}
BLOCK_WIDE = {"shared", "unique", "pair", "pair_strided_default", "shared_sum", "block_sum", "sum",
              "sum_in_branches"}
GUARD = "kern.guard"


def _walk(op, ancestors, out):
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                child = child.operation
                out.append((child, ancestors))
                _walk(child, ancestors + [child], out)


def _barrier_report(text):
    """(barriers and shuffles with their ancestors' names, number of guards) of a gpu IR module."""
    with context():
        module = ir.Module.parse(text)
        ops: list = []
        _walk(module.operation, [], ops)
        guards = [op for op, _ in ops if op.name == "scf.if" and GUARD in op.attributes]
        sync = []
        for op, ancestors in ops:
            if op.name in ("gpu.barrier", "gpu.shuffle"):
                sync.append((op.name, [(a.name, GUARD in a.attributes) for a in ancestors]))
        return sync, len(guards)


@pytest.mark.parametrize("attr", ["", "@deterministic ", "@block(32) "])
@pytest.mark.parametrize("kind", sorted(ACCESSOR_KERNELS))
def test_barriers_are_outside_the_bounds_guard(kind, attr):
    if attr == "@deterministic " and kind in ("atomic", "pair"):  # float atomics it cannot order
        with pytest.raises(CompileError, match="@deterministic cannot make 'y' reproducible"):
            Compilation(attr + ACCESSOR_KERNELS[kind], f"{kind}.kern", CompileOptions(), use_cache=False)
        return
    comp = Compilation(attr + ACCESSOR_KERNELS[kind], f"{kind}.kern", CompileOptions(verify_each=True),
                       use_cache=False)
    sync, guards = _barrier_report(comp.gpu_ir())
    assert guards == 1, f"expected one bounds guard, found {guards}"
    for name, ancestors in sync:
        assert not any(is_guard for _, is_guard in ancestors), \
            f"{name} inside the bounds guard: {' > '.join(n for n, _ in ancestors)}"
        assert [n for n, _ in ancestors[:2]] == ["gpu.module", "gpu.func"], ancestors
    if kind in BLOCK_WIDE:
        assert any(name == "gpu.barrier" for name, _ in sync), "a block-wide accessor without a barrier"


# ---------------------------------------------------------------------------------------------------
# f16 / bf16 atomics
def _ptxas_or_skip():
    if toolkit.ptxas_path() is None:
        pytest.skip("ptxas not found (pip install nvidia-cuda-nvcc)")


@pytest.mark.parametrize("ty", ["f16", "bf16"])
def test_half_precision_atomics_assemble(ty):
    _ptxas_or_skip()
    mod = kernc.compile(f"kernel h(I: u32[n] read, v: {ty}[n] read, y: {ty}[m] add atomic(I), "
                        f"z: {ty}[m, 2] add atomic(I) as soa) over n {{ y += v; z += [v, 2.0 * v]; }}")
    ptx = mod.ptx
    assert "atom." in ptx
    result = toolkit.run_ptxas(ptx, "sm_90")
    assert result.ok, result.log


def test_f16_atomics_compute_right_on_the_cpu():
    mod = kernc.compile("kernel h(I: u32[n] read, v: f16[n] read, y: f16[m] add atomic(I)) over n { y += v; }")
    I = np.array([0, 1, 0, 2, 0, 2, 4], np.uint32)
    v = np.array([1, 2, 3, 4, 5, 0.5, -8], np.float16)
    y = np.array([10, 0, 0.25, 0, 0], np.float16)
    res = mod.h(I, v, y)
    assert y.tolist() == [19.0, 2.0, 4.75, 0.0, -8.0]
    assert res.stats.global_atomics == len(I)


def test_bf16_atomics_compute_right_on_the_cpu():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    mod = kernc.compile("kernel h(I: u32[n] read, v: bf16[n] read, y: bf16[m] add atomic(I)) over n { y += v; }")
    I = np.array([0, 1, 0, 2], np.uint32)
    v = np.array([1, 2, 3, 4], ml_dtypes.bfloat16)
    y = np.zeros(3, ml_dtypes.bfloat16)
    mod.h(I, v, y)
    assert y.astype(np.float32).tolist() == [4.0, 2.0, 4.0]


# ---------------------------------------------------------------------------------------------------
# a stale cache after changing an option
SAXPY = "kernel saxpy(a: f32, x: f32[n] read, y: f32[n] add) over n { y += a * x; }\n"


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNC_ALWAYS_COMPILE", raising=False)
    cache.clear_memory()
    yield tmp_path / "cache"
    cache.clear_memory()


def test_changing_arch_is_not_served_a_stale_ptx(private_cache):
    first = kernc.compile(SAXPY, arch="sm_80").ptx
    second = kernc.compile(SAXPY, arch="sm_90").ptx
    assert ".target sm_80" in first and ".target sm_90" in second
    assert any(private_cache.rglob("*")), "the disk cache was not used at all"
    cache.clear_memory()                                   # now from the disk cache
    assert ".target sm_80" in kernc.compile(SAXPY, arch="sm_80").ptx
    assert ".target sm_90" in kernc.compile(SAXPY, arch="sm_90").ptx


def test_changing_options_on_the_command_line_is_not_served_a_stale_ptx(private_cache, tmp_path, capsys):
    src = tmp_path / "s.kern"
    src.write_text(SAXPY)
    outs = {}
    for key, args in {"sm80": ["--arch", "sm_80"], "sm90": ["--arch", "sm_90"],
                      "b64": ["--index-bits", "64"], "O0": ["--O", "0"], "O3": ["--O", "3"],
                      "sm80again": ["--arch", "sm_80"]}.items():
        out = tmp_path / f"{key}.ptx"
        assert main(["compile", str(src), "-o", str(out), *args]) == 0, capsys.readouterr().err
        outs[key] = out.read_text()
    assert ".target sm_80" in outs["sm80"] and ".target sm_90" in outs["sm90"]
    assert outs["sm80again"] == outs["sm80"]
    assert ".param .u64 saxpy_param_3" in outs["b64"] and ".param .u32 saxpy_param_3" in outs["sm90"]
    assert outs["O0"] != outs["O3"]
    # editing the source must not be served the old PTX either
    src.write_text(SAXPY.replace("y += a * x", "y += a * x + 1.0"))
    assert main(["compile", str(src), "-o", str(tmp_path / "edited.ptx")]) == 0
    assert (tmp_path / "edited.ptx").read_text() != outs["sm90"]


def test_kernel_selection_is_part_of_the_cache_key(private_cache, tmp_path, capsys):
    src = tmp_path / "two.kern"
    src.write_text(SAXPY + "kernel other(y: f32[n] write) over n { y = 1.0; }\n")
    assert main(["compile", str(src), "--kernel", "saxpy"]) == 0
    only = capsys.readouterr().out
    assert main(["compile", str(src)]) == 0
    both = capsys.readouterr().out
    assert ".entry saxpy(" in only and ".entry other(" not in only
    assert ".entry saxpy(" in both and ".entry other(" in both


# ---------------------------------------------------------------------------------------------------
# IR that does not verify between passes
PAIR_STRIDED_DEFAULT = ("kernel k(u: f32[m] read pair strided(0, 1) default 0.0, y: f32[n] write) over n {\n"
                        "    y = u.first + u.second;\n}\n")


def test_pair_strided_default_verifies_after_every_pass():
    """Found here (fixed since): kern-lower-accessors left IR that did not verify ('operand #1 does
    not dominate this use') for a `pair strided(off, s) default v` read."""
    comp = Compilation(PAIR_STRIDED_DEFAULT, "p.kern", CompileOptions(verify_each=True), use_cache=False)
    assert "gpu.barrier" in comp.gpu_ir()


def test_cli_verify_each_runs_the_verifier(tmp_path, monkeypatch, capsys):
    """Found here (fixed since): `kernc compile --verify-each` only turned the cache off."""
    import kernc.compiler as compiler

    monkeypatch.setenv("KERNC_VERIFY_EACH", "0")
    seen = []
    real = compiler.run_passes

    def spy(module, passes, after_pass=None, verify_each=True, *rest):
        seen.append(verify_each)
        return real(module, passes, after_pass, verify_each, *rest)

    monkeypatch.setattr(compiler, "run_passes", spy)
    src = tmp_path / "s.kern"
    src.write_text(SAXPY)
    assert main(["compile", str(src), "--verify-each", "-o", str(tmp_path / "s.ptx")]) == 0
    assert seen and all(seen), seen


def test_block_wide_accessors_under_return_and_branches_compute_right():
    """The kernel of ``sum_in_branches`` (plus a block_sum) on the CPU: threads that return early or
    skip the update still reach the barriers and contribute nothing."""
    mod = kernc.compile("kernel k(v: f32[n] read, w: f32[m] read shared(I), I: u32[n] read, y: f32[1] add sum, "
                        "b: f32[nb] write block_sum) over n { if v > 0.0 { return; } "
                        "for j in 0..3 { if w < f32(j) { y += v; b += 1.0; } } }")
    rng = np.random.default_rng(0)
    n = 300
    v = rng.standard_normal(n).astype(np.float32)
    I = rng.integers(0, 50, n).astype(np.uint32)
    w = (2 * rng.standard_normal(50)).astype(np.float32)
    y, b = np.zeros(1, np.float32), np.full(3, 9, np.float32)
    mod.k(v, w, I, y, b)
    count = sum((w[I] < j).astype(np.int64) for j in range(3)) * (v <= 0)
    np.testing.assert_allclose(y[0], (v.astype(np.float64) * count).sum(), rtol=1e-5)
    assert b.tolist() == [count[:256].sum(), count[256:].sum(), 9]


def test_a_pass_that_leaves_invalid_ir_is_caught_without_verify_each(monkeypatch):
    """Found by a review: with the upstream pass managers' own verifier off, IR that a kernc pass
    broke (a 3-index load of a 1-D memref) went on through convert-gpu-to-nvvm, which lowered it to
    a load at a garbage offset, and the end-of-stage check passed: wrong PTX instead of an internal
    compiler error. Without verify_each (the default of a compile) the error must still come, at
    the first upstream pass after the bug."""
    from kernc.compiler import Compilation, CompileOptions
    from kernc.support.errors import InternalCompilerError
    from kernc.support.mlir import ir
    from kernc.passes import lower_fma
    from kernc.passes.base import walk_ops

    real = lower_fma.LowerFMA.apply

    def broken(self, ctx, module):
        real(self, ctx, module)
        load = walk_ops(module, {"memref.load"})[0]
        with ir.InsertionPoint(load):
            bad = ir.Operation.create("memref.load", results=[load.results[0].type],
                                      operands=[load.operands[0]] + [load.operands[1]] * 3)
        load.results[0].replace_all_uses_with(bad.results[0])
        load.erase()

    monkeypatch.setattr(lower_fma.LowerFMA, "apply", broken)
    comp = Compilation(SAXPY, "saxpy.kern", CompileOptions(verify_each=False), use_cache=False)
    with pytest.raises(InternalCompilerError, match="invalid number of indices") as err:
        comp.ptx()
    assert err.value.pass_name.startswith("gpu.module(convert-scf-to-cf")


@pytest.mark.parametrize("options, error, message", [
    (dict(opt_level=3.0), ValueError, "opt_level must be 0, 1, 2 or 3, got 3.0"),
    (dict(opt_level=True), ValueError, "opt_level must be 0, 1, 2 or 3, got True"),
    (dict(index_bits=32.0), ValueError, "index_bits must be 32 or 64, got 32.0"),
    (dict(kernels="saxpy"), TypeError, "kernels must be a tuple of kernel names"),
    (dict(kernels=(b"saxpy",)), TypeError, "kernels must be a tuple of kernel names"),
])
def test_compile_options_of_the_wrong_type_are_refused_up_front(options, error, message):
    """Found by a trial: 3.0 == 3 and True == 1 passed the option checks, then the pipeline spelled
    'O=3.0' and LLVM refused it (an internal compiler error at the first .ptx); a kernel name given
    as a plain string was taken letter by letter."""
    from kernc.compiler import Compilation, CompileOptions

    with pytest.raises(error, match=re.escape(message)):
        Compilation(SAXPY, "saxpy.kern", CompileOptions(**options))


def test_compilation_refuses_options_that_are_not_compile_options():
    from kernc.compiler import Compilation

    with pytest.raises(TypeError, match="options must be a kernc.compiler.CompileOptions, got dict"):
        Compilation(SAXPY, "saxpy.kern", {"arch": "sm_90"})


def test_only_scalars_that_reach_index_arithmetic_bound_the_index_width():
    """A big u32 seed or mask that never becomes an index keeps the 32-bit PTX; a scalar converted
    with index(...) -- directly, through a float, or through a local -- counts like an index one.
    The kern IR tells which scalar a local holds: one that only feeds a float does not count."""
    mod = kernc.compile("""
kernel hashk(seed: u32, mask: u32, y: u32[n] write) over n { y = (u32(thread_id) * seed) & mask; }
kernel viaf(x: f32[m] read strided(0, index(f)) default -1.0, f: f32, y: f32[n] write) over n { y = x; }
kernel vialocal(x: f32[m] view, y: f32[n] write, s: i32, u: u32) over n {
    let k = s * 2;
    y = x.checked(index(k)) + f32(u);
}
kernel viaview(x: f32[M, N] view, s: i32, y: f32[P] write) over (p) in (P) { y = x.checked(index(s), p); }
""")
    assert mod.hashk.signature.index_inputs == []
    assert mod.viaf.signature.index_inputs == ["f"]
    assert mod.vialocal.signature.index_inputs == ["s"]  # k holds s * 2, never u
    assert mod.viaview.signature.index_inputs == ["s"]
    y = np.zeros(64, np.uint32)
    assert _bind(mod.hashk.signature, (2654435761, 0xFFFFFFFF, y), {}).index_bits == 32
    x, out = np.arange(40000, dtype=np.float32), np.zeros(42951, np.float32)
    assert _bind(mod.viaf.signature, (x, np.float32(2.0), out), {}).index_bits == 32
    assert _bind(mod.viaf.signature, (x, np.float32(1e5), out), {}).index_bits == 64
    assert _bind(mod.viaf.signature, (x, np.float32("inf"), out), {}).index_bits == 64
    mod.viaf(x, np.float32(1e5), out)
    assert out[0] == 0.0 and (out[1:] == -1.0).all()
    small, small_out = np.zeros(8, np.float32), np.zeros(8, np.float32)  # (one array: refused)
    assert _bind(mod.vialocal.signature, (small, small_out, 1, 7), {}).index_bits == 32
    assert _bind(mod.vialocal.signature, (small, small_out, 1, 2**31), {}).index_bits == 32
    assert _bind(mod.vialocal.signature, (small, small_out, 2**30, 7), {}).index_bits == 64


@pytest.mark.parametrize("src, want_max", [
    ("kernel k(s: f32[m] read strided(0, 256 * 256) default -1.0, y: f32[n] write) over n { y = s; }", 65536),
    ("kernel k(s: f32[m] read strided(0, 1 << 16) default -1.0, y: f32[n] write) over n { y = s; }", 65536),
    ("kernel k(y: i64[n] write) over n { y = i64(thread_id + index(3000000000u32)); }", 3000000000),
    ("kernel k(y: i64[n] write) over n { y = i64(thread_id + index(i64(1) << 33)); }", 2**33),
    ("kernel k(y: i64[n] write) over n { let c: i32 = 70000; y = i64(thread_id * index(c)); }", 70000),
    ("layout g : (m) -> (a) { return (m * 100000); }\n"
     "kernel k(x: f32[M] view default -1.0, y: f32[n] write) over n { y = x.checked(g(thread_id)); }", 100000),
    # a big constant that never becomes an index does not count
    ("kernel k(y: u32[n] write, seed: u32) over n { y = seed & 4000000000u32; }", 0),
])
def test_constant_index_expressions_bound_the_index_width(src, want_max):
    """Only single index-typed literals counted: 256 * 256, 1 << 16, index(3000000000u32), a
    constant reaching index(...) through a local, a functional layout's constant wrapped in the
    32-bit PTX (found by a trial, read from the PTX)."""
    sig = kernc.compile(src).k.signature
    assert sig.index_literal_max == want_max
    assert index_products_overflow([sig.index_literal_max], 65537, 256) == (want_max > 2**31 // (65537 + 256))


def test_a_constant_stride_expression_past_int32_runs_64_bit():
    mod = kernc.compile("kernel k(s: f32[m] read strided(0, 256 * 256) default -1.0, y: f32[n] write) over n { y = s; }")
    s, y = np.arange(1, 11, dtype=np.float32), np.zeros(65537, np.float32)
    assert _bind(mod.k.signature, (s, y), {}).index_bits == 64
    mod.k(s, y)
    assert y[0] == 1.0 and y[65536] == -1.0  # the 32-bit PTX read s[0] for thread 65536


def test_the_cpu_interpreter_reports_index_values_a_32_bit_launch_would_wrap():
    """Index values that leave int32 wrapped silently in the 32-bit PTX while the CPU computed them
    exactly; the launcher now bounds them (a product of two coordinates, values made from buffer
    contents: their type's range) and runs such launches 64-bit, and the interpreter still stops
    a 32-bit run of them with a located error."""
    mod = kernc.compile("kernel sq(y: i64[n] write) over n { y = i64(thread_id * thread_id); }\n"
                        "kernel buf(u: u32[n] read, x: f32[N] view default -1.0, y: f32[n] write) over n "
                        "{ y = x.checked(index(u) * 2); }", filename="w.kern")
    y = np.zeros(50000, np.int64)
    assert binding.bind(mod.sq.signature, (y,), {}, cpu.is_host_array, "cpu").index_bits == 64
    mod.sq(y)
    assert y[49999] == 49999 ** 2
    small = np.zeros(1000, np.int64)
    assert binding.bind(mod.sq.signature, (small,), {}, cpu.is_host_array, "cpu").index_bits == 32
    mod.sq(small)  # 999**2 fits: no error
    assert small[999] == 999 * 999
    x = np.arange(8, dtype=np.float32)
    out = np.zeros(2, np.float32)
    mod.buf(np.array([1, 2], np.uint32), x, out)
    assert out.tolist() == [2.0, 4.0]
    mod.buf(np.array([1, 2**31 + 1], np.uint32), x, out)
    assert out.tolist() == [2.0, -1.0]
    # the interpreter itself stops a 32-bit run whose index values leave int32
    from kernc.backend.interpreter import Interpreter

    comp = mod._compilation
    with context():
        it = Interpreter(ir.Module.parse(comp.gpu_ir()))
    big = np.zeros(50000, np.int64)
    with pytest.raises(KerncRuntimeError, match=r"index arithmetic gives 2499900001, outside int32"):
        it.run("sq", -(-50000 // 256), 256, [big, 50000], index_bits=32)
    it.run("sq", -(-50000 // 256), 256, [big, 50000], index_bits=64)
    assert big[49999] == 49999 ** 2
