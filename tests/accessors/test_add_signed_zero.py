"""Signed zeros of ``add`` outputs (issue 18, item 6): an ``add`` output the thread does not change
keeps its bits, and a pending update starts as the identity of the addition, ``-0.0``.

With ``x = 0.0`` and ``y = -0.0``, ``y -= x;`` gives ``y + (-0.0 - 0.0) = -0.0``; before the fix,
``if x != 0.0 { y -= 1.0; } y -= x;`` (the branch not taken) gave ``+0.0`` (the pending value started
at ``+0.0``, so it became ``+0.0 - 0.0 = +0.0``), and the components of a vector ``add`` output
that the thread never touches turned ``-0.0`` into ``+0.0``; so did the sums of the block-wide
accessors (``sum``, ``block_sum``, ``shared_sum``, ``pair``), whose padding and missing neighbours
added ``+0.0``.

Expectations are written out (IEEE 754 6.3: ``x + y`` of two zeros is ``-0.0`` only when both are
``-0.0``; ``-0.0`` is the identity of addition), compared bitwise; the same kernels run on a GPU
(marked ``gpu``) must give the same bits.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernc

NZ = -0.0
_MODULES: dict = {}


def compiled(src: str):
    if src not in _MODULES:
        _MODULES[src] = kernc.compile(src)
    return _MODULES[src]


def bits(a) -> np.ndarray:
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_bits(got, want, what=""):
    got, want = np.asarray(got), np.asarray(want, dtype=np.asarray(got).dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    bad = np.argwhere(bits(got) != bits(want))
    if bad.size:
        k = tuple(bad[0])
        raise AssertionError(f"{what}: {bad.shape[0]} entries differ in their bits; first at {k}: "
                             f"got {got[k]!r}, want {want[k]!r}")


# ---- the issue's reproduction -------------------------------------------------------------------

ISSUE = """
kernel plain(x: f32[n] read, y: f32[n] add) over n { y -= x; }
kernel untaken(x: f32[n] read, y: f32[n] add) over n { if x != 0.0 { y -= 1.0; } y -= x; }
kernel vector(x: f32[n] read, y: f32[n, 3] add) over n { y[0] += x; }
"""


def test_issue_untaken_branch_keeps_negative_zero():
    mod = compiled(ISSUE)
    for name in ("plain", "untaken"):
        x = np.zeros(4, np.float32)
        y = np.full(4, NZ, np.float32)
        getattr(mod, name)(x, y)
        assert_bits(y, np.full(4, NZ, np.float32), name)


@pytest.mark.parametrize("name", ["plain", "untaken"])
def test_issue_kernels_against_the_rule(name):
    """Every sign of zero for ``x`` and ``y``, and a taken branch: ``y + pending`` with ``pending``
    starting at ``-0.0`` (``-0.0 - 1.0 - x`` where the branch is taken)."""
    mod = compiled(ISSUE)
    xs = np.array([0.0, NZ, 0.0, NZ, 1.0, 1.0, NZ, 0.0], np.float32)
    y0 = np.array([NZ, NZ, 0.0, 0.0, NZ, 1.0, np.inf, -np.inf], np.float32)
    y = y0.copy()
    getattr(mod, name)(xs, y)
    want = []
    for x, old in zip(xs, y0):
        pending = np.float32(NZ)
        if name == "untaken" and x != 0:
            pending = pending - np.float32(1.0)
        pending = pending - x
        want.append(old + pending)
    assert_bits(y, np.array(want, np.float32), name)


def test_issue_vector_components_the_thread_does_not_touch_keep_their_bits():
    mod = compiled(ISSUE)
    x = np.array([0.0, NZ, 1.0], np.float32)
    y = np.full((3, 3), NZ, np.float32)
    y[2, 2] = np.inf
    mod.vector(x, y)
    want = np.full((3, 3), NZ, np.float32)
    want[:, 0] = [0.0, NZ, 1.0]  # -0.0 + x
    want[2, 2] = np.inf
    assert_bits(y, want)


def test_assigned_positive_zero_is_not_the_identity():
    """``y = 0.0; y -= x;`` is ``+0.0 - x`` (``+0.0`` for ``x = +0.0``), and the element gets
    ``y + (+0.0)``: the ``-x`` shortcut of ``y -= x`` only holds for the identity ``-0.0`` (before
    the fix any zero constant took it, leaving ``-0.0``)."""
    src = """
    kernel pz(x: f32[n] read, y: f32[n] add) over n { y = 0.0; y -= x; }
    kernel nz(x: f32[n] read, y: f32[n] add) over n { y = -0.0; y -= x; }
    kernel pzi(x: i32[n] read, y: i32[n] add) over n { y = 0; y -= x; }
    """
    mod = compiled(src)
    xs = np.array([0.0, NZ, 1.0], np.float32)
    for name, start in (("pz", np.float32(0.0)), ("nz", np.float32(NZ))):
        y = np.full(3, NZ, np.float32)
        getattr(mod, name)(xs, y)
        assert_bits(y, np.array([np.float32(NZ) + (start - x) for x in xs], np.float32), name)
    yi = np.array([5, -7, 0], np.int32)
    mod.pzi(np.array([1, 2, -3], np.int32), yi)
    assert yi.tolist() == [4, -9, 3]


# ---- every accessor: a component or a thread that adds nothing -----------------------------------

B = 32
P = 45  # two blocks, the second one partly past P
K = 3
#: accessor -> (declaration of y, element of thread t, elements of y for a problem of size P)
ACCESSORS = {
    "sequential": ("y: f32[n, 3] add", lambda t: [t], lambda P: P),
    "soa": ("y: f32[n, 3] add as soa", lambda t: [t], lambda P: P),
    "strided": ("y: f32[m, 3] add strided(1, 2)", lambda t: [1 + 2 * t], lambda P: 2 * P + 1),
    "indexed": ("y: f32[m, 3] add indexed(j)", lambda t: [(7 * t) % P], lambda P: P),
    "atomic": ("y: f32[m, 3] add atomic(i)", lambda t: [t % 4], lambda P: 4),
    "shared_sum": ("y: f32[m, 3] add shared_sum(i)", lambda t: [t % 4], lambda P: 4),
    "det_shared_sum": ("y: f32[m, 3] add shared_sum(i)", lambda t: [t % 4], lambda P: 4),
    "sum": ("y: f32[1, 3] add sum", lambda t: [0], lambda P: 1),
    "det_sum": ("y: f32[1, 3] add sum", lambda t: [0], lambda P: 1),
    "block_sum": ("y: f32[nb, 3] add block_sum", lambda t: [t // B], lambda P: -(-P // B)),
    "pair": ("y: f32[n1, 3] add pair", lambda t: [t, t + 1], lambda P: P + 1),
}


def accessor_src(acc: str) -> str:
    decl = ACCESSORS[acc][0]
    attrs = "@deterministic " if acc.startswith("det_") else ""
    if acc == "pair":
        body = "if x != 0.0 { y.first[1] -= x; } y.second[0] += x;"
    else:
        body = "if x != 0.0 { y[1] -= x; } y[0] += x;"
    return (f"@block({B}) {attrs}kernel k(x: f32[n] read, i: u32[n] read, j: u32[n] read, {decl}) "
            f"over n {{ {body} }}\n")


def expected(acc: str, x: np.ndarray, y0: np.ndarray) -> np.ndarray:
    """``y0`` plus every thread's pending values, component by component: starting at ``-0.0``,
    ``y[1] -= x`` where ``x != 0``, ``y[0] += x``, component 2 never touched. Every value is 0 or +-1,
    so the sums are exact in any order, and a sum of zeros is -0.0 exactly when every term is."""
    y = y0.astype(np.float64)
    P = x.shape[0]
    for t in range(P):
        pending = np.array([NZ, NZ, NZ])
        if x[t] != 0:
            pending[1] = pending[1] - x[t]
        pending[0] = pending[0] + x[t]
        targets = ACCESSORS[acc][1](t)
        if acc == "pair":  # first (component 1 updated) to t, second (component 0) to t + 1
            first, second = np.array([NZ, pending[1], NZ]), np.array([pending[0], NZ, NZ])
            y[t] = y[t] + first
            y[t + 1] = y[t + 1] + second
            continue
        e = targets[0]
        y[e] = y[e] + pending
    return y.astype(np.float32)


@pytest.mark.parametrize("acc", list(ACCESSORS))
def test_untouched_components_and_threads_keep_their_bits(acc):
    mod = compiled(accessor_src(acc))
    rng = np.random.default_rng(18)
    x = np.array([0.0, NZ, 1.0, -1.0], np.float32)[rng.integers(0, 4, P)]
    x[: B] = rng.choice(np.array([0.0, NZ], np.float32), B)  # block 0: no thread adds a nonzero
    i = (np.arange(P) % 4).astype(np.uint32)
    j = ((7 * np.arange(P)) % P).astype(np.uint32)
    M = ACCESSORS[acc][2](P)
    shape = (K, M) if acc == "soa" else (M, K)
    y0 = np.full(shape, NZ, np.float32)
    y0.reshape(-1)[4::5] = np.inf  # other values the identity must keep
    y0.reshape(-1)[5::7] = 0.0
    y = y0.copy()
    mod.k(x, i, j, y)
    as_aos = (lambda a: a.T) if acc == "soa" else (lambda a: a)
    want = expected(acc, x, as_aos(y0))
    assert_bits(as_aos(y), want, acc)
    # the reason this test exists: somewhere an untouched -0.0 must have survived
    assert np.signbit(want[:, 2]).any()


def test_no_thread_changes_the_output():
    """All threads skip the update (``x == 0`` everywhere): every element keeps its bits, for each
    accessor, with threads past ``P`` in the last block."""
    for acc in ACCESSORS:
        mod = compiled(accessor_src(acc).replace("y[0] += x;", "").replace("y.second[0] += x;", ""))
        x = np.zeros(P, np.float32)
        x[::3] = NZ
        i = (np.arange(P) % 4).astype(np.uint32)
        j = ((7 * np.arange(P)) % P).astype(np.uint32)
        M = ACCESSORS[acc][2](P)
        y0 = np.full((K, M) if acc == "soa" else (M, K), NZ, np.float32)
        y = y0.copy()
        mod.k(x, i, j, y)
        assert_bits(y, y0, acc)


@pytest.mark.parametrize("decl, dtype", [
    ("y: f16[n, 2] add", np.float16),
    ("y: f64[n, 2] add", np.float64),
    ("y: f32[n, 2] add compute f64", np.float32),
    ("y: f16[m, 2] add atomic(i)", np.float16),
    ("y: f64[1, 2] add sum", np.float64),
])
def test_other_float_types(decl, dtype):
    xt = "f64" if dtype is np.float64 else "f32"
    mod = compiled(f"kernel k(x: {xt}[n] read, i: u32[n] read, {decl}) over n {{ if x != 0.0 {{ y[1] += x; }} }}")
    n = 3
    x = np.array([0.0, NZ, 0.0], np.float64 if dtype is np.float64 else np.float32)
    rows = 1 if "sum" in decl else n
    y = np.full((rows, 2), NZ, dtype)
    mod.k(x, np.zeros(n, np.uint32), y)
    assert_bits(y, np.full((rows, 2), NZ, dtype), decl)


def test_untouched_component_issues_no_atomic():
    """A per-thread ``add`` of the identity is left out: ``y[0] += x`` on an ``f32[m, 3] add
    atomic(i)`` issues one atomic per thread, not three."""
    mod = compiled(accessor_src("atomic").replace("if x != 0.0 { y[1] -= x; } ", ""))
    P_ = 64
    y = np.zeros((4, 3), np.float32)
    res = mod.k(np.ones(P_, np.float32), np.zeros(P_, np.uint32), np.zeros(P_, np.uint32), y)
    assert y[0].tolist() == [64.0, 0.0, 0.0]
    assert res.stats.global_atomics == P_


# ---- the same kernels on a GPU ----------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("acc", list(ACCESSORS))
def test_gpu_keeps_the_bits_as_the_cpu_does(acc):
    import cupy as cp

    mod = compiled(accessor_src(acc))
    rng = np.random.default_rng(19)
    x = np.array([0.0, NZ, 1.0, -1.0], np.float32)[rng.integers(0, 4, P)]
    x[: B] = 0.0
    i = (np.arange(P) % 4).astype(np.uint32)
    j = ((7 * np.arange(P)) % P).astype(np.uint32)
    M = ACCESSORS[acc][2](P)
    y0 = np.full((K, M) if acc == "soa" else (M, K), NZ, np.float32)
    y = cp.asarray(y0)
    res = mod.k(cp.asarray(x), cp.asarray(i), cp.asarray(j), y)
    assert res.device == "cuda"
    as_aos = (lambda a: a.T) if acc == "soa" else (lambda a: a)
    assert_bits(as_aos(y.get()), expected(acc, x, as_aos(y0)), acc)
