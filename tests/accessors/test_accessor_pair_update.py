"""``pair`` updates whose two values negate each other (the graph Laplacian ``out = (-d, d)``), on the
CPU interpreter: results are bitwise those of the semantics, special values included.

``kern-lower-accessors`` lets a value that is ``-w`` of another value ``w`` of a ``pair`` update skip
its private slot and negates ``w`` after the guard (``_block_update``), and it reads the neighbour
of a ``pair`` read inside the guard (``_merge_into_guard``). The same ``negf``/``addf`` run on the
same values, so the results must not change by a bit. Covered: pair and ``pair strided(off, s)
default v`` reads, ``add pair`` and ``write pair``, ``(-d, d)`` and ``(d, -d)``, scalars and
3-vectors (aos, soa), chains of negations, sizes from 1 to several blocks (block edges, ``P`` a
multiple of ``B``), and signed zeros, infinities and NaNs in the data.

Expectations: ``out[j] = old + (-d_j + d_{j-1})`` (IEEE float32 operations in this order, numpy)
for an element a single thread updates; the elements shared by two blocks (``j = b*B``) get two
atomics, checked against both orders. Element ``P`` gets ``d_{P-1}`` alone. Bitwise, except that a
NaN result only has to be a NaN (payloads: see ``check``)."""

from __future__ import annotations

import numpy as np
import pytest

import kernc

import accessor_cases as ac

BLOCKS = (32, 256)
_MODULES: dict = {}


def compiled(src: str):
    """Compile once per session; fresh workgroup/private memory is poison (NaN) on the CPU."""
    if src not in _MODULES:
        _MODULES[src] = ac.poison_uninitialized(kernc.compile(src))
    return _MODULES[src]


def sizes(B: int) -> list[int]:
    return [1, 2, 31, 32, 33, B - 1, B, B + 1, 2 * B, 3 * B + 7]


def lap_src(B: int, mode: str, *, order: str = "neg_first", read: str = "pair", K: int = 1,
            layout: str = "") -> str:
    E = (lambda dim: f"f32[{dim}]") if K == 1 else (lambda dim: f"f32[{dim}, {K}]")
    lay = f" as {layout}" if layout else ""
    if read == "pair":
        u = f"u: {E('n1')} read pair{lay}"
    else:  # (u[t-1], u[t]) with the default 0.5 at both ends
        u = f"u: {E('m')} read pair strided(off, s) default 0.5{lay}, off: i32, s: i32"
    value = "(-d, d)" if order == "neg_first" else "(d, -d)"
    return (f"@block({B})\n"
            f"kernel k({u}, k: f32[n] read, out: {E('n1')} {mode} pair{lay}) over n {{\n"
            f"    let d = k * (u.second - u.first);\n"
            f"    out = {value};\n"
            f"}}\n")


def to_storage(a: np.ndarray, layout: str) -> np.ndarray:
    """The array a kernel takes: ``(count,)`` or ``(count, K)`` (aos), ``(K, count)`` for soa."""
    return np.ascontiguousarray(a.T) if layout == "soa" else a.copy()


def from_storage(a: np.ndarray, layout: str) -> np.ndarray:
    return np.ascontiguousarray(a.T) if layout == "soa" else a


def bits(a) -> np.ndarray:
    return np.asarray(a, np.float32).view(np.uint32)


def expected(old: np.ndarray, first: np.ndarray, second: np.ndarray, B: int, write: bool = False):
    """``(want, alternative)``: the f32 results of ``out[j] (+)= first_j + second_{j-1}`` as the
    lowering orders them (per element: ``old + (first_j + prev)`` -- ``write``: ``first_j + prev``
    -- with ``prev = second_{j-1}``, or the identity ``-0`` for a block's first thread, whose
    neighbour is missing (``first_j + (-0) == first_j`` bitwise); block edges ``j = b*B``
    and element ``P`` by atomics), ``alternative`` with the two atomics of each block edge the other
    way round. ``old``: the buffer before the launch (``write pair``: the launcher's -0.0, the identity of a float sum); arrays
    of shape ``(P + 1, ...)``/``(P, ...)``, float32."""
    P = first.shape[0]
    want = old.copy()
    alt = old.copy()
    with np.errstate(invalid="ignore", over="ignore"):
        for t in range(P):
            tid = t % B
            prev = second[t - 1] if tid > 0 else np.full_like(first[t], -0.0)
            total = first[t] + prev
            if tid == 0 and t > 0:  # atomics at the block edge: this one and the previous block's
                want[t] = (old[t] + total) + second[t - 1]
                alt[t] = (old[t] + second[t - 1]) + total
            else:
                want[t] = total if write else old[t] + total
                alt[t] = want[t]
        want[P] = old[P] + second[P - 1]
        alt[P] = want[P]
    return want, alt


def check(got, want, alt, what=""):
    """Bitwise equal to ``want`` or ``alt``; a NaN only needs to be a NaN (numpy's NaN propagation
    differs between its scalar and array loops, so the payload the model predicts is not the one
    numpy computes in the interpreter)."""
    g, w, a = bits(got), bits(want), bits(alt)
    ok = (g == w) | (g == a) | (np.isnan(got) & np.isnan(want))
    if not ok.all():
        k = tuple(np.argwhere(~ok)[0])
        raise AssertionError(f"{what}: at {k}: got {got[k]!r} ({g[k]:#010x}), "
                             f"want {want[k]!r} ({w[k]:#010x}) or {alt[k]!r} ({a[k]:#010x})")


def dyadic(rng, shape) -> np.ndarray:
    """Small multiples of 1/8: every sum and product of the test is exact in float32."""
    return (rng.integers(-16, 17, shape) / 8).astype(np.float32)


def specials(rng, shape) -> np.ndarray:
    """Signed zeros, infinities, NaNs (one with a payload) and a few finite values."""
    pool = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan], np.float32)
    out = pool[rng.integers(0, pool.size, shape)]
    payload = np.array([0x7FC01234], np.uint32).view(np.float32)[0]
    out.reshape(-1)[:: 7] = payload
    return out


def run_lap(B, P, mode, order, read, K, layout, data, rng):
    mod = compiled(lap_src(B, mode, order=order, read=read, K=K, layout=layout))
    shape = (lambda c: (c,)) if K == 1 else (lambda c: (c, K))
    k = data(rng, (P,))
    if read == "pair":
        u = data(rng, shape(P + 1))
        first_u, second_u = u[:P], u[1:P + 1]
        args = [to_storage(u, layout)]
    else:
        m = P + 1
        u = data(rng, shape(m))
        pad = np.full(shape(1), 0.5, np.float32)
        ext = np.concatenate([pad, u, pad])          # ext[j + 1] = Xd(j)
        first_u, second_u = ext[0:P], ext[1:P + 1]    # Xd(t - 1), Xd(t)
        args = [to_storage(u, layout), -1, 1]
    with np.errstate(invalid="ignore", over="ignore"):
        d = (k if K == 1 else k[:, None]) * (second_u - first_u)
        neg = -d
    first, second = (neg, d) if order == "neg_first" else (d, neg)
    old = data(rng, shape(P + 1)) if mode == "add" else np.full(shape(P + 1), -0.0, np.float32)
    out = to_storage(old, layout)
    mod.k(*args, k, out)
    got = from_storage(out, layout)
    want, alt = expected(old, first, second, B, write=mode == "write")
    check(got, want, alt, f"{mode} pair {order} {read} K={K}{layout} B={B} P={P}")


@pytest.mark.parametrize("B", BLOCKS)
@pytest.mark.parametrize("mode", ["add", "write"])
@pytest.mark.parametrize("order", ["neg_first", "neg_second"])
@pytest.mark.parametrize("read", ["pair", "pair_strided_default"])
def test_laplacian_pair_exact(B, mode, order, read):
    rng = np.random.default_rng(B + len(mode) + len(order) + len(read))
    for P in sizes(B):
        run_lap(B, P, mode, order, read, 1, "", dyadic, rng)


@pytest.mark.parametrize("B", BLOCKS)
@pytest.mark.parametrize("mode", ["add", "write"])
@pytest.mark.parametrize("order", ["neg_first", "neg_second"])
def test_laplacian_pair_special_values_bitwise(B, mode, order):
    """Signed zeros decide the sign of zero results (``-(+0) = -0``, whereas ``0 - (+0) = +0``),
    infinities give NaNs, NaN payloads and signs pass through ``negf`` and ``addf`` unchanged."""
    rng = np.random.default_rng(7 * B + len(mode) + len(order))
    for P in sizes(B):
        run_lap(B, P, mode, order, "pair", 1, "", specials, rng)


@pytest.mark.parametrize("layout", ["aos", "soa"])
@pytest.mark.parametrize("read", ["pair", "pair_strided_default"])
@pytest.mark.parametrize("data", [dyadic, specials], ids=["dyadic", "specials"])
def test_laplacian_pair_vectors(layout, read, data):
    B = 32
    rng = np.random.default_rng(len(layout) + len(read))
    for P in (1, B - 1, B, 2 * B + 5):
        run_lap(B, P, "add", "neg_first", read, 3, layout, data, rng)


@pytest.mark.parametrize("B", BLOCKS)
def test_negation_chain(B):
    """``first = [-c, c]`` with ``c = -e`` and ``second = [e, -e]``: ``-c`` and ``-e`` are negations of
    values that cross the guard, ``c`` is one too but also the source of ``-c``: only sources keep
    a slot."""
    mod = compiled(f"@block({B})\n"
                   f"kernel k(e: f32[n] read, out: f32[n1, 2] add pair) over n {{\n"
                   f"    let c = -e;\n"
                   f"    out = ([-c, c], [e, -e]);\n"
                   f"}}\n")
    rng = np.random.default_rng(B)
    for P in sizes(B):
        e = specials(rng, (P,))
        old = specials(rng, (P + 1, 2))
        out = old.copy()
        mod.k(e, out)
        c = -e
        first = np.stack([-c, c], axis=1)
        second = np.stack([e, -e], axis=1)
        want, alt = expected(old, first, second, B)
        check(out, want, alt, f"chain B={B} P={P}")


def test_checking_values_unchanged():
    """accessors.md's pair-write checking values with a negated first value."""
    mod = compiled("kernel k(f: f32[n] read, x: f32[m] add pair) over n { x = (-f, f); }")
    x = np.full(5, 100, np.float32)
    mod.k(np.array([1, 2, 3], np.float32), x)
    assert x.tolist() == [99, 99, 99, 103, 100]


@pytest.mark.parametrize("B", BLOCKS)
def test_two_pair_reads_share_workgroup_memory(B):
    """Two ``pair`` reads of one element type stage through the same workgroup buffer: only the
    second one's last step may open the guard; the first one's reads its neighbours before the
    second staging overwrites the buffer."""
    mod = compiled(f"@block({B})\n"
                   f"kernel k(a: f32[n1] read pair, b: f32[n1] read pair, out: f32[n1] add pair) over n {{\n"
                   f"    let d = (a.second - a.first) * (b.second + b.first);\n"
                   f"    out = (-d, d);\n"
                   f"}}\n")
    rng = np.random.default_rng(B)
    for P in sizes(B):
        a, b = dyadic(rng, (P + 1,)), dyadic(rng, (P + 1,))
        old = dyadic(rng, (P + 1,))
        out = old.copy()
        mod.k(a, b, out, n=P)
        d = (a[1:] - a[:-1]) * (b[1:] + b[:-1])
        want, alt = expected(old, -d, d, B)
        check(out, want, alt, f"two pair reads B={B} P={P}")
