"""Accessor semantics beyond the matrix, on the CPU interpreter: the checking values of
``docs/design/accessors.md``, zero-initialisation at ``P == 0``, exact defaults, strided offsets and
steps (negative, zero), index patterns, conditional contributions and early ``return``, and kernels
combining several block-wide accessors (workgroup memory shared between them)."""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.support.errors import CompileError, KerncRuntimeError

import accessor_cases as ac

BLOCKS = (32, 256, 1024)
_SRC: dict = {}


def compiled(src: str):
    """Compile once per session, with poisoned fresh workgroup/private memory on the CPU."""
    if src not in _SRC:
        _SRC[src] = ac.poison_uninitialized(kernc.compile(src))
    return _SRC[src]


# ---- the checking values of accessors.md (all exact in float32) ------------------------------


@pytest.mark.parametrize("B", BLOCKS)
@pytest.mark.parametrize("how", ["shared_sum", "atomic"])
def test_checking_value_shared_sum(how, B):
    mod = compiled(f"@block({B})\nkernel k(x: f32[m] add {how}(i), i: u32[n] read, y: f32[n] read) over n {{ x += y; }}")
    x = np.array([100, 0, 0, 0, 0, 0, 0, 0, 0, 0], np.float32)
    mod.k(x, np.array([5, 3, 5, 9, 3, 3], np.uint32), np.array([1, 2, 3, 4, 5, 6], np.float32))
    assert x.tolist() == [100, 0, 0, 13, 0, 4, 0, 0, 0, 4]


@pytest.mark.parametrize("B", BLOCKS)
def test_checking_value_strided_default(B):
    mod = compiled(f"@block({B})\nkernel k(x: f32[m] read strided(-1, 2) default -1, y: f32[n] write) over n {{ y = x; }}")
    y = np.full(4, 77, np.float32)
    mod.k(np.array([10, 11, 12, 13, 14], np.float32), y)
    assert y.tolist() == [-1, 11, 13, -1]


@pytest.mark.parametrize("B", BLOCKS)
def test_checking_value_pair_writes(B):
    src = f"@block({B})\nkernel k(f: f32[n] read, s: f32[n] read, x: f32[m] {{mode}} pair) over n {{{{ x = (f, s); }}}}"
    f = np.array([1, 2, 3], np.float32)
    s = np.array([10, 20, 30], np.float32)
    x = np.full(5, 7, np.float32)
    compiled(src.format(mode="write")).k(f, s, x)
    assert x.tolist() == [1, 12, 23, 30, 0]
    x = np.full(5, 100, np.float32)
    compiled(src.format(mode="add")).k(f, s, x)
    assert x.tolist() == [101, 112, 123, 130, 100]


@pytest.mark.parametrize("B", BLOCKS)
def test_checking_value_write_sum(B):
    mod = compiled(f"@block({B})\nkernel k(o: f32[1] write sum) over n {{ o = f32(thread_id); }}")
    o = np.array([5], np.float32)
    mod.k(o, n=2049)
    assert o.tolist() == [2098176]


@pytest.mark.parametrize("B", BLOCKS)
def test_pair_writes_across_block_edges(B):
    """The write pair checking value at a size that spans blocks: element j gets first_j + second_{j-1}
    with block edges added by atomics."""
    mod = compiled(f"@block({B})\nkernel k(f: f32[n] read, s: f32[n] read, x: f32[m] write pair) over n {{ x = (f, s); }}")
    P = 2 * B + 3
    f = np.arange(1, P + 1, dtype=np.float32)
    s = 1000 * np.arange(1, P + 1, dtype=np.float32)
    x = np.full(P + 4, 7, np.float32)
    mod.k(f, s, x)
    want = np.zeros(P + 4, np.float32)
    want[:P] += f
    want[1:P + 1] += s
    assert x.tolist() == want.tolist()


# ---- zero initialisation, also when P == 0 ---------------------------------------------------


@pytest.mark.parametrize("K", [1, 3])
def test_write_sum_and_write_pair_zero_initialise_at_P0(K):
    E = "f32[{}]" if K == 1 else "f32[{}, %d]" % K
    mod = compiled(
        f"kernel k(v: {E.format('n')} read, o: {E.format('1')} write sum, f: {E.format('n')} read,\n"
        f"         x: {E.format('m')} write pair) over n {{ o = v; x = (f, v); }}")
    def shape(c):
        return (c,) if K == 1 else (c, K)
    o = np.full(shape(1), 7, np.float32)
    x = np.full(shape(6), 7, np.float32)
    res = mod.k(np.zeros(shape(0), np.float32), o, np.zeros(shape(0), np.float32), x)
    assert res.problem_size == 0 and res.grid == 0
    assert (o == 0).all() and (x == 0).all()


def test_add_sum_block_sum_and_add_pair_leave_outputs_alone_at_P0():
    mod = compiled("kernel k(v: f32[n] read, o: f32[1] add sum, b: f32[nb] write block_sum, c: f32[nc] add block_sum,\n"
                   "         x: f32[m] add pair) over n { o = v; b = v; c = v; x = (v, v); }")
    o, b, c, x = (np.full(3 if i else 1, 7, np.float32) for i in range(4))
    mod.k(np.zeros(0, np.float32), o, b, c, x)
    assert o.tolist() == [7] and b.tolist() == [7] * 3 and c.tolist() == [7] * 3 and x.tolist() == [7] * 3


# ---- defaults are exact --------------------------------------------------------------------

# 1 + 2^-24 + 1e-25: rounded once to f32 it is 1 + 2^-23; rounded to f64 first it is the tie 1 + 2^-24,
# which rounds to even (1.0) in f32 -- a double rounding would give 1.0.
ABOVE_TIE = "1.0000000596046447753906251"


@pytest.mark.parametrize("dtype,text,want", [
    ("f32", "0.1", np.float32("0.1")),
    ("f32", ABOVE_TIE, np.float32(1 + 2 ** -23)),
    ("f32", "-16777217", np.float32(-16777216)),
    ("f32", "1e-45", np.float32(1.401298464324817e-45)),
    ("f64", "0.1234567891", np.float64("0.1234567891")),
    ("f64", "0.1", np.float64("0.1")),
    ("f64", "-2.5e-310", np.float64("-2.5e-310")),
    ("f16", "0.1", np.float16(np.float32("0.1"))),   # computed in f32, stored rounded to f16
])
def test_default_value_is_exact(dtype, text, want):
    mod = compiled(f"kernel k(x: {dtype}[m] read strided(off, 1) default {text}, off: i32, y: {dtype}[n] write) over n {{ y = x; }}")
    x = np.arange(1, 4).astype(ac.np_dtype(dtype))
    y = np.zeros(6, ac.np_dtype(dtype))
    mod.k(x, -2, y)
    got = y.tolist()
    assert got[2:5] == x.tolist()
    assert y[0] == want and y[1] == want and y[5] == want
    assert y[0].tobytes() == np.asarray(want, ac.np_dtype(dtype)).tobytes()


def test_pair_strided_default_neighbours():
    """``off=-1, s=1`` gives ``(X[t-1], X[t])`` with ``v`` at both ends (accessors.md)."""
    mod = kernc.compile("kernel k(x: f32[m] read pair strided(off, s) default 0.5, off: i32, s: i32,\n"
                        "         y: f32[n, 2] write) over n {\n    y = [x.first, x.second];\n}\n")
    y = np.zeros((4, 2), np.float32)
    mod.k(np.array([10, 11, 12], np.float32), -1, 1, y)
    assert y.tolist() == [[0.5, 10], [10, 11], [11, 12], [12, 0.5]]


# ---- strided: forward, backward and zero steps ------------------------------------------------


def _strided_cases():
    out = []
    for acc in ("strided", "strided_default", "write_strided", "add_strided", "pair_strided_default"):
        for variant in range(4):
            if acc in ("write_strided", "add_strided") and variant == 3:
                continue  # zero step would be a race (every thread updates one element)
            for B, K, lay in ((32, 1, None), (256, 3, "soa"), (1024, 2, "aos")):
                out.append(pytest.param(acc, variant, B, K, lay, marks=ac.known_bug_marks(acc),
                                        id=f"{acc}-v{variant}-B{B}-K{K}{lay or ''}"))
    return out


@pytest.mark.parametrize("acc,variant,B,K,layout", _strided_cases())
def test_strided_offsets_and_steps(acc, variant, B, K, layout):
    for P in (1, 33, B + 1, 3 * B + 7):
        ac.run_case(acc, B, K, "f32", layout, None, P, variant=variant)


# ---- index patterns ---------------------------------------------------------------------------

GATHER_PATTERNS = ("dup", "perm", "sorted", "rsorted", "equal", "max", "clustered")
SCATTER_PATTERNS = ("perm", "sorted_distinct", "rsorted_distinct", "max_distinct")


def _pattern_cases():
    out = []
    for acc in ("indexed", "shared", "shared_sum", "atomic", "write_indexed", "add_indexed"):
        pats = SCATTER_PATTERNS if acc in ac.DISTINCT_INDEX else GATHER_PATTERNS
        for pat in pats:
            for B, K, lay, dtype in ((32, 1, None, "f32"), (256, 3, "soa", "f32"), (1024, 7, "aos", "f32"),
                                     (256, 2, "aos", "f16"), (32, 4, "soa", "f64")):
                out.append(pytest.param(acc, pat, B, K, lay, dtype, id=f"{acc}-{pat}-B{B}-K{K}{lay or ''}-{dtype}"))
    return out


@pytest.mark.parametrize("acc,pattern,B,K,layout,dtype", _pattern_cases())
def test_index_patterns(acc, pattern, B, K, layout, dtype):
    for P in (1, B - 1, B + 1, 3 * B + 7):
        ac.run_case(acc, B, K, dtype, layout, None, P, pattern=pattern)


def test_max_index_reaches_last_element():
    """The largest index M-1 of a big buffer is an ordinary value for every index accessor."""
    M = (1 << 17) + 3
    I = np.array([M - 1, 0, M - 1, M - 2, M - 1], np.uint32)
    x = np.arange(M, dtype=np.float32)
    for acc in ("indexed", "shared"):
        mod = compiled(f"@block(32)\nkernel k(x: f32[m] read {acc}(i), i: u32[n] read, y: f32[n] write) over n {{ y = x; }}")
        y = np.zeros(5, np.float32)
        mod.k(x, I, y)
        assert y.tolist() == [M - 1, 0, M - 1, M - 2, M - 1]
    for acc in ("shared_sum", "atomic"):
        mod = compiled(f"@block(32)\nkernel k(x: f32[m] add {acc}(i), i: u32[n] read, y: f32[n] read) over n {{ x += y; }}")
        acc_x = np.zeros(M, np.float32)
        mod.k(acc_x, I, np.array([1, 2, 4, 8, 16], np.float32))
        assert acc_x[M - 1] == 21 and acc_x[M - 2] == 8 and acc_x[0] == 2 and acc_x.sum() == 31


@pytest.mark.parametrize("acc", ["indexed", "shared", "shared_sum", "atomic"])
def test_i32_index_buffers(acc):
    read = acc in ("indexed", "shared")
    decl = f"x: f32[m, 3] read {acc}(i) as soa" if read else f"x: f32[m, 3] add {acc}(i) as soa"
    body = "y = x;" if read else "x += y;"
    ymode = "write" if read else "read"
    mod = compiled(f"@block(64)\nkernel k({decl}, i: i32[n] read, y: f32[n, 3] {ymode}) over n {{ {body} }}")
    rng = np.random.default_rng(5)
    P, M = 200, 37
    I = rng.integers(0, M, P).astype(np.int32)
    if read:
        X = rng.normal(size=(M, 3)).astype(np.float32)
        y = np.zeros((P, 3), np.float32)
        mod.k(np.ascontiguousarray(X.T), I, y)
        assert np.array_equal(y, X[I])
    else:
        y = rng.integers(-4, 5, (P, 3)).astype(np.float32)
        x = np.zeros((3, M), np.float32)
        mod.k(x, I, y)
        want = np.zeros((M, 3))
        np.add.at(want, I, y.astype(np.float64))
        assert np.array_equal(x.T, want.astype(np.float32))


def test_duplicate_indices_in_write_indexed_are_reported_on_the_cpu():
    """``write indexed(I)`` needs distinct indices; the interpreter reports a duplicate as a data race
    (the remedy is ``atomic(I)`` / ``shared_sum(I)``)."""
    mod = compiled("kernel k(v: f32[n] read, x: f32[m] write indexed(i), i: u32[n] read) over n { x = v; }")
    with pytest.raises(KerncRuntimeError, match="data race"):
        mod.k(np.ones(4, np.float32), np.zeros(8, np.float32), np.array([1, 2, 1, 3], np.uint32))


# ---- contributions of threads that assign nothing, early return -----------------------------


@pytest.mark.parametrize("B", [32, 256])
def test_block_wide_updates_with_conditional_and_returning_threads(B):
    """Threads that skip an assignment (or ``return`` before it) contribute 0 to block-wide updates,
    and the block's cooperative steps still run (every thread reaches every barrier)."""
    mod = compiled(
        f"@block({B})\nkernel k(v: f32[n] read, i: u32[n] read, x: f32[m] add shared_sum(i),\n"
        f"         o: f32[1] write sum, b: f32[nb] write block_sum, p: f32[q] write pair, a: f32[m] add atomic(i)) over n {{\n"
        f"    if thread_id % 5 == 3 {{ return; }}\n"
        f"    if thread_id % 2 == 0 {{ x += v; o = v; p.first = v; }} else {{ b = v; p.second = 2.0 * v; }}\n"
        f"    a += v;\n"
        f"}}\n")
    rng = np.random.default_rng(11)
    P = 3 * B + 7
    t = np.arange(P)
    v = rng.integers(-8, 9, P).astype(np.float32)
    I = rng.integers(0, 13, P).astype(np.uint32)
    nb = -(-P // B)
    x = np.zeros(13, np.float32)
    a = np.zeros(13, np.float32)
    o = np.full(1, 7, np.float32)
    b = np.full(nb, 7, np.float32)
    p = np.full(P + 1, 7, np.float32)
    mod.k(v, I, x, o, b, p, a)
    live = t % 5 != 3
    even = live & (t % 2 == 0)
    odd = live & (t % 2 == 1)
    wx = np.zeros(13)
    np.add.at(wx, I[even], v[even])
    wa = np.zeros(13)
    np.add.at(wa, I[live], v[live])
    wb = np.zeros(nb)
    np.add.at(wb, t[odd] // B, v[odd])
    wp = np.zeros(P + 1)
    wp[:P] += np.where(even, v, 0)
    wp[1:] += np.where(odd, 2 * v, 0)
    assert x.tolist() == wx.tolist()
    assert a.tolist() == wa.tolist()
    assert o.tolist() == [v[even].sum()]
    assert b.tolist() == wb.tolist()
    assert p.tolist() == wp.tolist()


# ---- several block-wide accessors in one kernel -----------------------------------------------


@pytest.mark.parametrize("B", BLOCKS)
def test_many_block_wide_accessors_in_one_kernel(B):
    """shared + unique + pair reads, shared_sum on the same index, sum, block_sum and pair writes,
    f32/f64/f16 buffers (one workgroup buffer per element type, reused with barriers in between)."""
    mod = compiled(
        f"@block({B})\n"
        f"kernel k(pos: f32[V, 3] read shared(src) as soa, src: u32[n] read, dst: u32[n] read,\n"
        f"         c: f64[q, 2] read unique, u: f16[n1] read pair, w: f32[n] read,\n"
        f"         force: f32[V, 3] add shared_sum(dst), back: f64[V] add shared_sum(src),\n"
        f"         e: f64[1] add sum, bs: f32[nb, 2] write block_sum as soa, lap: f32[n1] add pair,\n"
        f"         g: f32[n, 3] write) over n {{\n"
        f"    let p = pos;\n"
        f"    let d = u.second - u.first;\n"
        f"    force += w * p;\n"
        f"    back += c[0] * f64(w);\n"
        f"    e += c[1] * f64(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);\n"
        f"    bs = [d, w];\n"
        f"    lap = (-d, d);\n"
        f"    g = p + [d, d, d];\n"
        f"}}\n")
    rng = np.random.default_rng(B)
    V, P = 50, 3 * B + 7
    nb = -(-P // B)
    pos = rng.integers(-8, 9, (V, 3)).astype(np.float32) / 4
    src = rng.integers(0, V, P).astype(np.uint32)
    dst = np.sort(rng.integers(0, V, P)).astype(np.uint32)
    c = np.array([[0.5, 2.0], [9.0, 9.0]])
    u = (rng.integers(-8, 9, P + 3) / 8).astype(np.float16)
    w = rng.integers(-4, 5, P).astype(np.float32) / 2
    force = np.zeros((V, 3), np.float32)
    back = np.full(V, 1.0)
    e = np.array([3.0])
    bs = np.full((2, nb), 7, np.float32)
    lap = np.ones(P + 3, np.float32)
    g = np.zeros((P, 3), np.float32)
    mod.k(np.ascontiguousarray(pos.T), src, dst, c, u, w, force, back, e, bs, lap, g)
    p = pos[src].astype(np.float64)
    u64 = u.astype(np.float64)
    d = u64[1:P + 1] - u64[:P]
    wf = np.zeros((V, 3))
    np.add.at(wf, dst, w[:, None] * p)
    assert np.array_equal(force, wf.astype(np.float32))
    wb = np.full(V, 1.0)
    np.add.at(wb, src, 0.5 * w.astype(np.float64))
    assert np.array_equal(back, wb)
    assert e[0] == 3.0 + 2.0 * (p ** 2).sum()
    t = np.arange(P)
    wbs = np.zeros((nb, 2))
    np.add.at(wbs, t // B, np.stack([d, w], axis=1))
    assert np.array_equal(bs.T, wbs.astype(np.float32))
    wl = np.ones(P + 3)
    wl[:P] -= d
    wl[1:P + 1] += d
    assert np.array_equal(lap, wl.astype(np.float32))
    assert np.array_equal(g, (p + d[:, None]).astype(np.float32))


@pytest.mark.parametrize("B", [32, 1024])
def test_two_index_params_two_tables(B):
    """Two different index buffers, each with shared() reads and a shared_sum: two sets of tables."""
    mod = compiled(
        f"@block({B})\nkernel k(a: f32[m, 2] read shared(i), b: f32[m] read shared(j), i: u32[n] read, j: u32[n] read,\n"
        f"         sa: f32[m] add shared_sum(j), sb: f32[m, 2] add shared_sum(i), y: f32[n, 3] write) over n {{\n"
        f"    y = [a[0], a[1], b];\n    sa += a[0] + b;\n    sb += [b, a[1]];\n}}\n")
    rng = np.random.default_rng(2)
    P, M = 2 * B + 5, 40
    a = rng.integers(-8, 8, (M, 2)).astype(np.float32)
    bb = rng.integers(-8, 8, M).astype(np.float32)
    i = rng.integers(0, M, P).astype(np.uint32)
    j = (M - 1 - rng.integers(0, 5, P)).astype(np.uint32)
    sa = np.zeros(M, np.float32)
    sb = np.zeros((M, 2), np.float32)
    y = np.zeros((P, 3), np.float32)
    mod.k(a, bb, i, j, sa, sb, y)
    assert np.array_equal(y, np.stack([a[i, 0], a[i, 1], bb[j]], axis=1))
    wsa = np.zeros(M)
    np.add.at(wsa, j, a[i, 0].astype(np.float64) + bb[j])
    wsb = np.zeros((M, 2))
    np.add.at(wsb, i, np.stack([bb[j], a[i, 1]], axis=1).astype(np.float64))
    assert np.array_equal(sa, wsa.astype(np.float32))
    assert np.array_equal(sb, wsb.astype(np.float32))


@pytest.mark.parametrize("B", [32, 256])
def test_compute_f64_accumulates_in_f64(B):
    """``f32`` storage with ``compute f64``: the block sum is formed in f64 and rounded once, so
    terms far below an f32 ulp of the total are not lost (they are with f32 compute)."""
    src = f"@block({B})\nkernel k(v: f32[n] read{{c}}, o: f32[nb] write block_sum{{c}}) over n {{{{ o = v; }}}}"
    v = np.full(B, 2.0 ** -24, np.float32)
    v[0] = 1.0
    o = np.zeros(1, np.float32)
    compiled(src.format(c=" compute f64")).k(v, o)
    assert o[0] == np.float32(1.0 + (B - 1) * 2.0 ** -24)
    assert o[0] > 1.0


# ---- 16-byte vector paths and their scalar fallback ---------------------------------------------

VECTOR_SHAPES = [(4, "f32"), (2, "f64"), (8, "f16")]   # aos elements of exactly 16 bytes


def _vector_cases():
    out = []
    for acc in ("sequential", "strided", "indexed", "write_sequential", "add_sequential", "write_strided",
                "add_strided", "write_indexed", "add_indexed", "shared", "pair", "shared_sum", "write_pair",
                "add_sum"):
        for K, dtype in VECTOR_SHAPES:
            for misalign in (False, True):
                out.append(pytest.param(acc, K, dtype, misalign,
                                        id=f"{acc}-K{K}-{dtype}-{'misaligned' if misalign else 'aligned'}"))
    return out


@pytest.mark.parametrize("acc,K,dtype,misalign", _vector_cases())
def test_16_byte_elements_aligned_and_misaligned(acc, K, dtype, misalign):
    """16-byte aos elements take one vector access when the buffer is 16-byte aligned and scalar
    accesses otherwise; the results are the same either way."""
    for B, P, variant in ((32, 33, 0), (256, 3 * 256 + 7, 1)):
        ac.run_case(acc, B, K, dtype, "aos", None, P, variant=variant, misalign=misalign)


# ---- integer elements ---------------------------------------------------------------------------

INT_KERNELS = {
    "shared": ("x: {T}[m, 2] read shared(i) as soa, i: u32[n] read, y: {T}[n, 2] write", "y = x;"),
    "pair": ("x: {T}[m] read pair, y: {T}[n] write", "y = x.second - x.first;"),
    "unique": ("x: {T}[m] read unique, y: {T}[n] write", "y = x;"),
    "strided_default": ("x: {T}[m] read strided(-1, 1) default 3, y: {T}[n] write", "y = x;"),
    "shared_sum": ("v: {T}[n] read, x: {T}[m] add shared_sum(i), i: u32[n] read", "x += v;"),
    "atomic": ("v: {T}[n] read, x: {T}[m] add atomic(i), i: u32[n] read", "x += v;"),
    "write_sum": ("v: {T}[n] read, x: {T}[1] write sum", "x = v;"),
    "add_block_sum": ("v: {T}[n] read, x: {T}[nb] add block_sum", "x += v;"),
    "write_pair": ("v: {T}[n] read, x: {T}[m] write pair", "x = (v, v);"),
}
INT_TYPES = {"i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64, "i16": np.int16,
             "u8": np.uint8, "i8": np.int8}
NARROW_INT_SUMS = {"shared_sum", "write_sum", "add_block_sum"}


def _int_src(acc, T, B=64):
    decl, body = INT_KERNELS[acc]
    return f"@block({B})\nkernel k({decl.format(T=T)}) over n {{ {body} }}"


@pytest.mark.parametrize("T", list(INT_TYPES))
@pytest.mark.parametrize("acc", list(INT_KERNELS))
def test_integer_elements_on_the_cpu(acc, T):
    """Integer storage works with every accessor; sums wrap modulo 2**bits like the GPU's integer adds."""
    mod = compiled(_int_src(acc, T))
    dt = np.dtype(INT_TYPES[T])
    wrap = lambda a: np.asarray(a, np.int64).astype(dt)  # noqa: E731  (C casts wrap modulo 2**bits)
    rng = np.random.default_rng(len(T) * 7 + len(acc))
    P = 3 * 64 + 7
    I = rng.integers(0, 10, P).astype(np.uint32)
    v = rng.integers(0, 100, P).astype(dt)
    t = np.arange(P)
    if acc == "shared":
        X = rng.integers(0, 100, (2, 10)).astype(dt)
        y = np.zeros((P, 2), dt)
        mod.k(X, I, y)
        assert np.array_equal(y, X.T[I])
    elif acc == "pair":
        X = rng.integers(0, 100, P + 1).astype(dt)
        y = np.zeros(P, dt)
        mod.k(X, y)
        assert np.array_equal(y, wrap(X[1:].astype(np.int64) - X[:-1]))
    elif acc == "unique":
        X = rng.integers(0, 100, 3).astype(dt)
        y = np.zeros(P, dt)
        mod.k(X, y)
        assert (y == X[0]).all()
    elif acc == "strided_default":
        X = rng.integers(0, 100, P - 5).astype(dt)
        y = np.zeros(P, dt)
        mod.k(X, y)
        j = t - 1
        assert np.array_equal(y, np.where((j >= 0) & (j < P - 5), X[np.clip(j, 0, P - 6)], 3).astype(dt))
    elif acc in ("shared_sum", "atomic"):
        x = rng.integers(0, 100, 10).astype(dt)
        want = x.astype(np.int64)
        np.add.at(want, I, v.astype(np.int64))
        mod.k(v, x, I)
        assert np.array_equal(x, wrap(want))
    elif acc == "write_sum":
        x = np.full(1, 7, dt)
        mod.k(v, x)
        assert np.array_equal(x, wrap([v.astype(np.int64).sum()]))
    elif acc == "add_block_sum":
        x = np.ones(4, dt)
        mod.k(v, x)
        want = np.ones(4, np.int64)
        np.add.at(want, t // 64, v.astype(np.int64))
        assert np.array_equal(x, wrap(want))
    else:
        x = np.full(P + 1, 7, dt)
        mod.k(v, x)
        want = np.zeros(P + 1, np.int64)
        want[:P] += v.astype(np.int64)
        want[1:] += v.astype(np.int64)
        assert np.array_equal(x, wrap(want))


def _int_ptx_cases():
    out = []
    for acc in INT_KERNELS:
        for T in INT_TYPES:
            marks = []
            out.append(pytest.param(acc, T, marks=marks, id=f"{acc}-{T}"))
    return out


@pytest.mark.parametrize("acc,T", _int_ptx_cases())
def test_integer_elements_compile_to_ptx(acc, T):
    from kernc.backend import toolkit

    ptx = compiled(_int_src(acc, T)).ptx
    assert ".entry k(" in ptx
    if toolkit.ptxas_path() is not None:
        result = toolkit.run_ptxas(ptx, arch="sm_90")
        assert result.ok, result.log[-2000:]


# ---- shared-memory budget ---------------------------------------------------------------------


def test_shared_memory_over_the_limit_is_a_clean_compile_error():
    src = ("@block(1024)\n"
           "kernel big(a: f64[m, 2] read shared(i), b: f32[m, 4] read shared(i), c: i32[m, 4] read shared(i),\n"
           "           i: u32[n] read, s: f32[m] add shared_sum(i), y: f32[n] write) over n {\n"
           "    y = f32(a[0]) + b[0] + f32(c[0]);\n    s += b[1];\n}\n")
    with pytest.raises(CompileError) as err:
        kernc.compile(src)
    msg = str(err.value)
    assert "53248 bytes of shared memory" in msg and "49152" in msg and "smaller @block" in msg
    kernc.compile(src.replace("@block(1024)", "@block(512)"))   # half the staging: fits


def test_shared_memory_limit_error_is_located():
    src = ("@block(1024)\n"
           "kernel big(a: f64[m, 2] read shared(i), b: f32[m, 4] read shared(i), c: i32[m, 4] read shared(i),\n"
           "           i: u32[n] read, s: f32[m] add shared_sum(i), y: f32[n] write) over n {\n"
           "    y = f32(a[0]) + b[0] + f32(c[0]);\n    s += b[1];\n}\n")
    with pytest.raises(CompileError) as err:
        kernc.compile(src, filename="big.kern")
    loc = err.value.diagnostics[0].location
    assert loc is not None and loc.filename == "big.kern" and loc.line == 2


@pytest.mark.parametrize("misalign", [False, True])
def test_conditional_per_thread_writes_leave_other_elements_alone(misalign):
    """``write`` outputs assigned on some paths only: threads that assign nothing store nothing
    (also through the 16-byte vector path and its scalar fallback)."""
    mod = compiled("@block(32)\nkernel k(v: f32[n, 4] read, i: u32[n] read, a: f32[m, 4] write indexed(i),\n"
                   "         b: f32[n, 4] write, c: f32[n, 4] add, d: f32[q, 4] write strided(1, 2)) over n {\n"
                   "    if thread_id % 3 == 0 { a = v; b = v; c += v; d = v; }\n}\n")
    P = 70
    rng = np.random.default_rng(0)
    v = rng.normal(size=(P, 4)).astype(np.float32)
    I = rng.permutation(100)[:P].astype(np.uint32)
    arrays = [np.full((100, 4), 7, np.float32), np.full((P, 4), 7, np.float32), np.ones((P, 4), np.float32),
              np.full((2 * P + 1, 4), 7, np.float32)]
    if misalign:
        arrays = [ac.misaligned_copy(a) for a in arrays]
        v = ac.misaligned_copy(v)
    a, b, c, d = arrays
    mod.k(v, I, a, b, c, d)
    t = np.arange(P)
    sel = t % 3 == 0
    wa = np.full((100, 4), 7, np.float32)
    wa[I[sel]] = v[sel]
    wb = np.full((P, 4), 7, np.float32)
    wb[sel] = v[sel]
    wc = np.ones((P, 4), np.float32)
    wc[sel] += v[sel]
    wd = np.full((2 * P + 1, 4), 7, np.float32)
    wd[1 + 2 * t[sel]] = v[sel]
    assert np.array_equal(a, wa) and np.array_equal(b, wb) and np.array_equal(c, wc) and np.array_equal(d, wd)


@pytest.mark.parametrize("B", [32, 256])
def test_sums_of_constant_components(B):
    """Components that are constants (0 or not) in block-wide updates: every component's sum is
    formed from initialised values only (the CPU runs with poisoned fresh shared memory; Caspar
    could add uninitialised shared memory for symbolically-zero components)."""
    mod = compiled(
        f"@block({B})\nkernel k(v: f32[n] read, i: u32[n] read, s: f32[1, 3] write sum, b: f32[nb, 3] write block_sum,\n"
        f"         ss: f32[m, 3] add shared_sum(i), p: f32[q, 3] write pair) over n {{\n"
        f"    s = [v, 0.0, 1.0];\n    b = [0.0, v, 2.0];\n    ss += [0.0, 0.0, v];\n"
        f"    p = ([v, 0.0, 0.0], [0.0, 0.0, 1.0]);\n}}\n")
    P = 3 * B + 7
    nb = -(-P // B)
    rng = np.random.default_rng(B)
    v = rng.integers(-8, 9, P).astype(np.float32)
    I = rng.integers(0, 5, P).astype(np.uint32)
    s = np.full((1, 3), 7, np.float32)
    b = np.full((nb, 3), 7, np.float32)
    ss = np.ones((5, 3), np.float32)
    p = np.full((P + 1, 3), 7, np.float32)
    mod.k(v, I, s, b, ss, p)
    assert s.tolist() == [[v.sum(), 0, P]]
    t = np.arange(P)
    wb = np.zeros((nb, 3))
    np.add.at(wb, t // B, np.stack([0 * v, v, 2 + 0 * v], axis=1))
    assert b.tolist() == wb.tolist()
    wss = np.ones((5, 3))
    np.add.at(wss[:, 2], I, v)
    assert ss.tolist() == wss.tolist()
    wp = np.zeros((P + 1, 3))
    wp[:P, 0] = v
    wp[1:, 2] = 1
    assert p.tolist() == wp.tolist()
