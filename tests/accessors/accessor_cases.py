"""The accessor test matrix: ``.kern`` text generated from templates, kernels compiled once per
session, inputs, numpy references (float64, then cast to the storage dtype) and comparisons.

Semantics under test: ``docs/design/accessors.md``; the IR contract: ``docs/accessor-lowering.md``.

A *case* is ``(accessor, B, K, dtype, layout, compute)``; one kernel (named ``k``) per case is compiled
on first use and shared by every problem size ``P``, index pattern and device that uses it.

- ``accessor``: one of :data:`READS` or :data:`UPDATES` (names below, e.g. ``"shared"``,
  ``"write_pair"``);
- ``B``: the ``@block`` size; ``K``: components per element (``T[n]`` for 1, ``T[n, K]`` else);
- ``dtype``: storage dtype ``f16 | bf16 | f32 | f64``; ``compute``: ``None`` or ``"f64"`` (a
  ``compute f64`` clause on every float buffer of the kernel);
- ``layout``: ``None`` (the default, aos), ``"soa"`` or ``"aos"`` -- on the buffer under test only.
"""

from __future__ import annotations


import numpy as np
import pytest

#: Read accessors: the buffer under test is ``x`` (read), results go to ``y`` (or ``y1``/``y2`` for pair).
READS = ("sequential", "strided", "strided_default", "indexed", "shared", "unique", "pair",
         "pair_strided_default")
#: Update accessors: the buffer under test is ``x``; the thread's values come from ``v`` (pair: ``f``, ``s``).
UPDATES = ("write_sequential", "add_sequential", "write_strided", "add_strided", "write_indexed",
           "add_indexed", "shared_sum", "atomic", "write_block_sum", "add_block_sum", "write_sum",
           "add_sum", "write_pair", "add_pair")
ALL = READS + UPDATES
#: Accessors whose result is a sum whose order may differ from numpy's.
SUMS = {"shared_sum", "atomic", "write_block_sum", "add_block_sum", "write_sum", "add_sum",
        "write_pair", "add_pair"}
INDEXED = {"indexed", "shared", "write_indexed", "add_indexed", "shared_sum", "atomic"}
#: Index accessors whose indices must be distinct (plain scatters).
DISTINCT_INDEX = {"write_indexed", "add_indexed"}

DEFAULT_V = -1.5          # exact in every float dtype
PAIR_DEFAULT_V = 2.5
SENTINEL = 77.0           # initial value of outputs: anything not written stays at it

#: Relative tolerance of order-dependent sums, by storage dtype (see ``check_sum``).
SUM_RTOL = {"f16": 1e-3, "bf16": 8e-3, "f32": 4e-6, "f64": 1e-12}


def ps_full(B: int) -> list[int]:
    return sorted({0, 1, 31, 32, 33, B - 1, B, B + 1, 3 * B + 7})


def ps_reduced(B: int) -> list[int]:
    return [0, 1, B + 1, 3 * B + 7]


def has_ml_dtypes() -> bool:
    try:
        import ml_dtypes  # noqa: F401

        return True
    except ImportError:
        return False


def np_dtype(dtype: str) -> np.dtype:
    if dtype == "bf16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[dtype])


def skip_unless_dtype_runs(dtype: str) -> None:
    """bf16 values on the host need ``ml_dtypes``: skip (never fail) when it is missing."""
    if dtype == "bf16" and not has_ml_dtypes():
        pytest.skip("bf16 needs the 'ml_dtypes' package on the host (not installed)")


# ------------------------------------------------------------------------------------------------
# .kern text


def _elem(dtype: str, dim: str, K: int) -> str:
    return f"{dtype}[{dim}]" if K == 1 else f"{dtype}[{dim}, {K}]"


def kern_text(acc: str, B: int, K: int, dtype: str, layout: str | None = None,
              compute: str | None = None, name: str = "k") -> str:
    """The ``.kern`` source of one case (one kernel, named ``name``)."""
    assert acc in ALL, acc
    C = f" compute {compute}" if compute else ""
    L = f" as {layout}" if (layout and K > 1) else ""
    T = dtype

    def E(dim):
        return _elem(T, dim, K)

    head = f"@block({B})\nkernel {name}("
    if acc in READS:
        xdim = "n" if acc == "sequential" else "m"
        spec = {
            "sequential": "sequential",
            "strided": "strided(off, s)",
            "strided_default": f"strided(off, s) default {DEFAULT_V}",
            "indexed": "indexed(i)",
            "shared": "shared(i)",
            "unique": "unique",
            "pair": "pair",
            "pair_strided_default": f"pair strided(off, s) default {PAIR_DEFAULT_V}",
        }[acc]
        params = [f"x: {E(xdim)} read {spec}{L}{C}"]
        if "strided" in acc:
            params += ["off: i32", "s: i32"]
        if acc in ("indexed", "shared"):
            params += ["i: u32[n] read"]
        if acc.startswith("pair"):
            params += [f"y1: {E('n')} write{C}", f"y2: {E('n')} write{C}"]
            body = "y1 = x.first; y2 = x.second;"
        else:
            params += [f"y: {E('n')} write{C}"]
            body = "y = x;"
        return head + ", ".join(params) + f") over n {{\n    {body}\n}}\n"

    mode, _, kind = acc.partition("_") if acc not in ("shared_sum", "atomic") else ("add", "", acc)
    op = "=" if mode == "write" else "+="
    spec, xdim, extra = {
        "sequential": ("sequential", "n", []),
        "strided": ("strided(off, s)", "m", ["off: i32", "s: i32"]),
        "indexed": ("indexed(i)", "m", ["i: u32[n] read"]),
        "shared_sum": ("shared_sum(i)", "m", ["i: u32[n] read"]),
        "atomic": ("atomic(i)", "m", ["i: u32[n] read"]),
        "block_sum": ("block_sum", "nb", []),
        "sum": ("sum", "1", []),
        "pair": ("pair", "m", []),
    }[kind]
    x = f"x: {E(xdim)} {mode} {spec}{L}{C}"
    if kind == "pair":
        params = [f"f: {E('n')} read{C}", f"s: {E('n')} read{C}", x]
        body = f"x {op} (f, s);"
    else:
        params = [f"v: {E('n')} read{C}", x] + extra
        body = f"x {op} v;"
    return head + ", ".join(params) + f") over n {{\n    {body}\n}}\n"


_MODULES: dict = {}


def module(acc, B, K, dtype, layout=None, compute=None):
    """The compiled module of a case, compiled once per session (failures are cached too, so a
    broken case fails fast everywhere it is used). ``shared``/``shared_sum`` always run staged
    (``choose_shared=False``): the matrix tests the staging itself; the launcher's choice of the
    ``indexed``/``atomic`` form is tested in ``test_shared_choice.py``."""
    import kernc

    key = (acc, B, K, dtype, layout if K > 1 else None, compute)
    if key not in _MODULES:
        try:
            _MODULES[key] = poison_uninitialized(kernc.compile(
                kern_text(acc, B, K, dtype, layout, compute),
                filename=f"{acc}_B{B}_K{K}_{dtype}_{layout}_{compute}.kern", choose_shared=False))
        except Exception as err:  # noqa: BLE001 - re-raised on every use
            _MODULES[key] = err
    m = _MODULES[key]
    if isinstance(m, Exception):
        # re-raise without the deep compiler traceback and cause (cheap for pytest to report)
        raise m.with_traceback(None) from None
    return m


def poison_uninitialized(mod):
    """Make the module's CPU interpreter fill fresh workgroup and private memory with poison (NaN,
    ``0xA5`` bytes) instead of zeros, so a read of memory nobody wrote shows up in the results."""
    from kernc.backend.interpreter import Interpreter

    if getattr(mod, "_kernc_test_poison", False):
        return mod
    mod._interp = Interpreter(mod._compilation.gpu_ir(debug_info=True), uninitialized="poison")
    mod._kernc_test_poison = True
    return mod


# ------------------------------------------------------------------------------------------------
# storage <-> logical arrays


def caspar_width(logical_or_dtype) -> int:
    """Components per 16-byte chunk of Caspar's layout: ``16 / sizeof(T)``."""
    return 16 // np.dtype(getattr(logical_or_dtype, "dtype", logical_or_dtype)).itemsize


def caspar_offsets(K: int, M: int, dtype) -> tuple[int, np.ndarray]:
    """``(rows, offsets)``: Caspar's host array has ``rows`` rows (of ``M`` columns), and scalar ``s``
    of object ``i`` is at flat offset ``offsets[i, s] = R_k * M + i * d_k + e`` (chunk ``k = s // cs``,
    ``e = s % cs``, ``d_k`` the chunk's padded width, ``R_k`` its first row), as the shared design
    note ``caspar-layout.md`` states; ``rows = caspar_size(K)`` (more for halves' 8-wide chunks)."""
    cs = caspar_width(dtype)
    offsets = np.zeros((M, K), np.int64)
    row = 0
    for first in range(0, K, cs):
        c = min(cs, K - first)
        d = 1 << (c - 1).bit_length()  # caspar_size(c) for 1..4
        for e in range(c):
            offsets[:, first + e] = row * M + np.arange(M) * d + e
        row += d
    return max(K + 1 if K % 4 == 3 else K, row), offsets


def to_storage(logical: np.ndarray, K: int, layout: str | None) -> np.ndarray:
    """``logical`` has shape ``(count, K)``; the array a kernel takes for that buffer (``caspar``:
    ``(count, 16 / sizeof(T))`` with NaN padding lanes)."""
    if K == 1:
        return np.ascontiguousarray(logical[:, 0])
    if layout == "soa":
        return np.ascontiguousarray(logical.T)
    if layout == "caspar":
        rows, off = caspar_offsets(K, logical.shape[0], logical.dtype)
        out = np.full(rows * logical.shape[0], np.nan, logical.dtype)
        out[off] = logical
        return out.reshape(rows, logical.shape[0])
    return np.ascontiguousarray(logical)


def from_storage(arr: np.ndarray, K: int, layout: str | None) -> np.ndarray:
    if K == 1:
        return arr.reshape(-1, 1)
    if layout == "soa":
        return arr.T
    if layout == "caspar":
        return arr.reshape(-1)[caspar_offsets(K, arr.shape[1], arr.dtype)[1]]
    return arr


# ------------------------------------------------------------------------------------------------
# index patterns


def index_pattern(pattern: str, P: int, m: int, rng) -> np.ndarray:
    """``P`` uint32 indices into a buffer of ``m`` elements.

    ``dup``: duplicate-heavy (a small range); ``perm``: all distinct (needs ``m >= P``); ``sorted`` /
    ``rsorted``: random with duplicates, ascending / descending; ``sorted_distinct`` /
    ``rsorted_distinct``: distinct, ascending / descending; ``equal``: all the same value;
    ``max``: the largest index ``m - 1`` mixed with its neighbours and 0; ``max_distinct``:
    ``m-1, m-2, ...``; ``clustered``: runs of 8 equal values, ascending; ``hubs``: each group of
    64 threads draws from 12 elements scattered over the buffer (few distinct elements per block,
    many sectors per warp).
    """
    if P == 0:
        return np.zeros(0, np.uint32)
    if pattern == "dup":
        out = rng.integers(0, min(m, 7), P)
    elif pattern == "perm":
        out = rng.permutation(m)[:P]
    elif pattern == "sorted":
        out = np.sort(rng.integers(0, m, P))
    elif pattern == "rsorted":
        out = np.sort(rng.integers(0, m, P))[::-1]
    elif pattern == "sorted_distinct":
        out = np.sort(rng.permutation(m)[:P])
    elif pattern == "rsorted_distinct":
        out = np.sort(rng.permutation(m)[:P])[::-1]
    elif pattern == "equal":
        out = np.full(P, m // 2)
    elif pattern == "max":
        out = rng.choice([0, m - 3, m - 2, m - 1, m - 1], P)
    elif pattern == "max_distinct":
        out = m - 1 - np.arange(P)
    elif pattern == "clustered":
        out = np.minimum(np.arange(P) // 8, m - 1)
    elif pattern == "hubs":
        # every 64 consecutive threads draw from a pool of 12 elements scattered over the buffer
        pools = rng.integers(0, m, (-(-P // 64), 12))
        out = pools[np.arange(P) // 64, rng.integers(0, 12, P)]
    else:
        raise ValueError(pattern)
    return np.ascontiguousarray(out, dtype=np.uint32)


def index_capacity(pattern: str, P: int) -> int:
    """A buffer size ``m`` suited to a pattern."""
    if pattern in ("max", "max_distinct"):
        return P + (1 << 16) + 3
    if pattern in ("perm", "sorted_distinct", "rsorted_distinct"):
        return P + 5
    if pattern == "hubs":
        return 4 * P + 1000
    return max(P // 2, 1) + 3


# ------------------------------------------------------------------------------------------------
# data


def values(rng, shape, dtype: str, for_sum: bool) -> np.ndarray:
    """Random values exactly representable in ``dtype``.

    Gathers/copies: any values (normal). Sums: f32/f64 get ``±U[0.25, 1]`` (no value is tiny, so a
    missing or doubled term is far above the tolerance); f16/bf16 get small dyadic numbers (``k/8``,
    bf16 ``k/2``) so that every partial sum is exact in the f32 compute type and in the storage type.
    """
    dt = np_dtype(dtype)
    if not for_sum:
        return rng.normal(0.0, 3.0, shape).astype(dt)
    if dtype in ("f16", "bf16"):
        den = 8 if dtype == "f16" else 2
        return (rng.integers(-8, 9, shape) / den).astype(dt)
    sign = np.where(rng.random(shape) < 0.5, -1.0, 1.0)
    return (sign * rng.uniform(0.25, 1.0, shape)).astype(dt)


def check_exact(got, want, what=""):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    if not np.array_equal(got.view(np.uint8) if got.dtype.itemsize == 1 else got, want):
        bad = np.argwhere(got != want)
        first = tuple(bad[0]) if bad.size else ()
        raise AssertionError(
            f"{what}: {bad.shape[0]} mismatching entries; first at {first}: got {got[first]!r}, "
            f"want {want[first]!r}")


def check_sum(got, want64, scale64, dtype: str, what=""):
    """An order-dependent sum: ``|got - want| <= rtol * scale`` where ``want`` is the float64 sum and
    ``scale`` the float64 sum of the absolute values of its terms (f32/f64 data), or -- for the exact
    dyadic f16/bf16 data -- ``assert_allclose(got, cast(want), rtol, atol=rtol)``."""
    got = np.asarray(got)
    assert got.dtype == np_dtype(dtype), (what, got.dtype)
    assert got.shape == want64.shape, (what, got.shape, want64.shape)
    rtol = SUM_RTOL[dtype]
    if dtype in ("f16", "bf16"):
        np.testing.assert_allclose(got.astype(np.float64), want64.astype(np_dtype(dtype)).astype(np.float64),
                                   rtol=rtol, atol=rtol, err_msg=what)
        return
    err = np.abs(got.astype(np.float64) - want64)
    tol = rtol * scale64 + np.abs(want64) * np.finfo(np_dtype(dtype)).eps
    if not (err <= tol).all():
        k = tuple(np.argwhere(~(err <= tol))[0])
        raise AssertionError(f"{what}: at {k}: got {got[k]!r}, want {want64[k]!r} (tolerance {tol[k]:.3g})")


# ------------------------------------------------------------------------------------------------
# one run


def strided_params(acc: str, P: int, variant: int) -> tuple[int, int, int]:
    """``(off, s, m)`` for a strided accessor: in bounds for plain ``strided``; partly out of bounds
    (both ends) for the ``default`` forms. ``variant`` picks forward/backward/zero steps."""
    if acc in ("strided_default", "pair_strided_default"):
        off, s = [(-3, 2), (5, -1), (-1, 1), (2, 0)][variant % 4]
        m = max(P // 2, 1) + 2
        return off, s, m
    if acc in ("strided", "write_strided", "add_strided"):
        s = [2, -3, 1, 0][variant % 4]
        if s == 0 and acc != "strided":
            s = 1  # a zero step would make every thread update one element: a race
        if s > 0:
            off = 3
            m = off + s * max(P - 1, 0) + 1 + 2
        else:
            off = -s * max(P - 1, 0) + 1
            m = off + 1 + 2
        return off, s, m
    raise ValueError(acc)


def misaligned_copy(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``a`` whose address is one element past a 16-byte boundary (so the
    16-byte vector paths must fall back to scalar accesses)."""
    raw = np.empty(a.size + 16, a.dtype)
    off = (-(raw.ctypes.data % 16) // a.itemsize) % (16 // a.itemsize) + 1
    out = raw[off:off + a.size].reshape(a.shape)
    assert out.ctypes.data % 16 and out.flags.c_contiguous
    out[...] = a
    return out


def run_case(acc, B, K, dtype, layout=None, compute=None, P=0, *, pattern=None, variant=0,
             seed=0, device="cpu", table=False, misalign=False):
    """Compile (cached), build inputs, run on ``device`` and compare with numpy. Returns the
    ``LaunchResult``. ``table=True`` passes a precomputed ``shared_indices`` object for ``i``;
    ``misalign=True`` passes every float buffer at an address that is not 16-byte aligned (CPU)."""
    skip_unless_dtype_runs(dtype)
    mod = module(acc, B, K, dtype, layout, compute)
    rng = np.random.default_rng([seed, P, B, K, ALL.index(acc), len(dtype)])
    dt = np_dtype(dtype)
    f64 = np.float64
    lay = layout if K > 1 else None
    args: dict = {}
    outs: dict = {}         # name -> (expected float64 logical (count, K), kind, scale)
    what = f"{acc} B={B} K={K} {dtype} {lay} compute={compute} P={P} pattern={pattern}"

    def idx_field(m, default_pattern):
        pat = pattern or default_pattern
        ind = index_pattern(pat, P, m, rng)
        return ind

    mode = kind = None
    if acc in READS:
        if acc == "sequential":
            m = P
        elif acc in ("strided", "strided_default", "pair_strided_default"):
            off, s, m = strided_params(acc, P, variant)
            args["off"], args["s"] = off, s
        elif acc in ("indexed", "shared"):
            m = index_capacity(pattern or "dup", P)
        elif acc == "unique":
            m = 3
        else:  # pair
            m = P + 1 + 2
        X = values(rng, (m, K), dtype, False)
        args["x"] = to_storage(X, K, lay)
        X64 = X.astype(f64)
        t = np.arange(P)
        if acc == "sequential":
            ref = X64[t]
        elif acc == "strided":
            ref = X64[off + t * s]
        elif acc in ("strided_default", "pair_strided_default"):
            v = DEFAULT_V if acc == "strided_default" else PAIR_DEFAULT_V

            def xd(j):
                ok = (j >= 0) & (j < m)
                return np.where(ok[:, None], X64[np.clip(j, 0, max(m - 1, 0))], v) if m else np.full((j.size, K), v)

            ref = xd(off + t * s)
            ref2 = xd(off + (t + 1) * s)
        elif acc in ("indexed", "shared"):
            I = idx_field(m, "dup")
            args["i"] = I
            ref = X64[I.astype(np.int64)]
        elif acc == "unique":
            ref = np.repeat(X64[:1], P, axis=0)
        else:
            ref = X64[t]
            ref2 = X64[t + 1]
        if acc.startswith("pair"):
            for nm, r in (("y1", ref), ("y2", ref2)):
                args[nm] = np.full((P, K) if K > 1 else (P,), SENTINEL, dt)
                outs[nm] = (r, "exact", None, None)
        else:
            args["y"] = np.full((P, K) if K > 1 else (P,), SENTINEL, dt)
            outs["y"] = (ref, "exact", None, None)
    else:
        mode, _, kind = acc.partition("_") if acc not in ("shared_sum", "atomic") else ("add", "", acc)
        sumlike = acc in SUMS
        if kind == "pair":
            Fv = values(rng, (P, K), dtype, True)
            Sv = values(rng, (P, K), dtype, True)
            args["f"] = to_storage(Fv, K, None)
            args["s"] = to_storage(Sv, K, None)
        else:
            V = values(rng, (P, K), dtype, sumlike)
            args["v"] = to_storage(V, K, None)
            V64 = V.astype(f64)
        if kind == "sequential":
            m = P
        elif kind == "strided":
            off, s, m = strided_params(acc, P, variant)
            args["off"], args["s"] = off, s
        elif kind in ("indexed", "shared_sum", "atomic"):
            m = index_capacity(pattern or ("perm" if acc in DISTINCT_INDEX else "dup"), P)
        elif kind == "block_sum":
            m = -(-P // B) + 1
        elif kind == "sum":
            m = 1
        else:
            m = P + 1 + 2
        X0 = (values(rng, (m, K), dtype, True) if mode == "add" else np.full((m, K), SENTINEL)).astype(dt)
        args["x"] = to_storage(X0, K, lay)
        start = X0.astype(f64)
        if mode == "write" and kind in ("sum", "pair"):
            start = np.zeros((m, K))      # zero_init: the launcher zeroes the buffer first
        want = start.copy()
        scale = np.abs(start)
        t = np.arange(P)
        if kind in ("sequential", "strided", "indexed"):
            if kind == "sequential":
                e = t
            elif kind == "strided":
                e = off + t * s
            else:
                I = idx_field(m, "perm")
                args["i"] = I
                e = I.astype(np.int64)
            assert len(set(e.tolist())) == P
            want[e] = V64 if mode == "write" else want[e] + V64
            outs["x"] = (want, "exact", None, None)
        else:
            if kind in ("shared_sum", "atomic"):
                I = idx_field(m, "dup")
                args["i"] = I
                np.add.at(want, I.astype(np.int64), V64)
                np.add.at(scale, I.astype(np.int64), np.abs(V64))
            elif kind == "block_sum":
                blk = t // B
                if mode == "write":
                    want[: -(-P // B)] = 0.0
                    scale[: -(-P // B)] = 0.0
                np.add.at(want, blk, V64)
                np.add.at(scale, blk, np.abs(V64))
            elif kind == "sum":
                want[0] += V64.sum(axis=0)
                scale[0] += np.abs(V64).sum(axis=0)
            else:  # pair
                F64, S64 = Fv.astype(f64), Sv.astype(f64)
                want[t] += F64
                want[t + 1] += S64
                scale[t] += np.abs(F64)
                scale[t + 1] += np.abs(S64)
            outs["x"] = (want, "sum", scale, None)
    if misalign:
        for k, a in list(args.items()):
            if isinstance(a, np.ndarray) and a.dtype.kind == "f":
                args[k] = misaligned_copy(a)
    if device == "cuda":
        import cupy as cp

        from kernc.backend.shared_indices import shared_indices

        def to_dev(a):
            if not isinstance(a, np.ndarray):
                return a
            if misalign and a.dtype.kind == "f":
                raw = cp.empty(a.size + 1, a.dtype)
                d = raw[1:].reshape(a.shape)
                d[...] = cp.asarray(a)
                return d
            return cp.asarray(a)

        dev = {k: to_dev(a) for k, a in args.items()}
        if table and "i" in dev:
            dev["i"] = shared_indices(dev["i"], B)
        result = mod.k(**dev)
        cp.cuda.runtime.deviceSynchronize()
        got_arrays = {k: dev[k].get() for k in outs}
    else:
        if table and "i" in args:
            from kernc.backend.shared_indices import shared_indices

            args["i"] = shared_indices(args["i"], B)
        result = mod.k(**args)
        got_arrays = {k: args[k] for k in outs}
    assert result.problem_size == P
    assert result.grid == -(-P // B) and result.block == B
    for nm, (want, how, scale, _) in outs.items():
        if nm == "x" and lay == "caspar" and not (mode == "write" and kind in ("sum", "pair")):
            arr = got_arrays[nm]
            pad = np.ones(arr.size, bool)
            pad[caspar_offsets(K, arr.shape[1], arr.dtype)[1]] = False
            assert np.isnan(arr.reshape(-1)[pad].astype(np.float64)).all(), f"{what}: the padding lanes were written"
        got = from_storage(got_arrays[nm], K, lay if nm == "x" else None)
        if how == "exact":
            check_exact(got, want.astype(dt), f"{what}: {nm}")
        else:
            check_sum(got, want, scale, dtype, f"{what}: {nm}")
    return result


# ------------------------------------------------------------------------------------------------
# known bugs: strict xfails that flip to failures once fixed (the pair strided default dominance bug
# is fixed; its cases run normally now)

def known_bug_marks(acc: str) -> list:
    """Strict-xfail marks for accessors with a known open bug (none at present)."""
    return []
