"""edge_update-like kernels on the CPU interpreter, bit for bit: a ``shared(src)`` gather, an
``add shared_sum(dst)`` scatter whose runs of one index span several warps (up to a whole block of
1024), and ``sum`` / ``block_sum`` outputs, plain and ``@deterministic``.

- Data on a grid of multiples of 1/4 makes every partial sum exact: the results must equal numpy's
  exactly (as ``test_many_block_wide_accessors_in_one_kernel`` and ``examples/edge_update.py``).
- Random (normal) data: the results must equal, bit for bit, a numpy model of the order in which
  kernc reduces -- the warp's segmented ``shuffle up`` scan over the block's sorted order, a run's
  partial sums of earlier warps added nearest warp first, warp butterflies, warp partials reduced by
  warp 0, and the atomics / plain updates applied in block order (the interpreter serialises
  atomics in lane order). Changes to how ``passes/lower_accessors.py`` emits these reductions must
  keep the results bit-identical; a deliberate change of the order has to change the model too.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernc

import accessor_cases as ac

WARP = 32
F32 = np.float32

#: ``force += f`` (shared_sum), ``energy += e`` (sum), block sums; the values each thread adds are
#: also written out (``g``, ``ge``) so the model starts from the kernel's own products.
EDGE = """{det}@block({B})
kernel edge(pos: f32[V, 3] read shared(src) as caspar, src: u32[E] read, dst: u32[E] read,
            w: f32[E] read, force: f32[V, 3] add shared_sum(dst) as caspar, energy: f32[1] add sum,
            bs: f32[nb, 2] write block_sum, pb: f32[nb] add block_sum,
            g: f32[E, 3] write, ge: f32[E] write) over E {{
    let p = pos;
    let f = w * p;
    let e = w * (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
    force += f;
    energy += e;
    bs = [e, f[0]];
    pb += f[1];
    g = f;
    ge = e;
}}
"""

BLOCKS = (32, 128, 1024)
PATTERNS = ("runs", "one", "random", "shuffled_runs")
_MODS: dict = {}


def edge_module(B: int, det: bool):
    key = (B, det)
    if key not in _MODS:
        src = EDGE.format(B=B, det="@deterministic " if det else "")
        # (always staged: the model is that of the staged shared_sum's order, not atomic's)
        _MODS[key] = ac.poison_uninitialized(kernc.compile(src, filename=f"edge_B{B}_{det}.kern",
                                                           choose_shared=False))
    return _MODS[key]


def sizes(B: int) -> list[int]:
    return [1, 33, B - 1, B + 1, 3 * B + 7]


def make_inputs(P: int, pattern: str, rng, exact: bool) -> dict:
    V = max(P // 40, 1) + 2
    if exact:
        pos = (rng.integers(-4, 5, (V, 4)) / 4).astype(F32)
        w = (rng.integers(-4, 5, P) / 4).astype(F32)
        force = (rng.integers(-8, 9, (V, 4)) / 4).astype(F32)
        energy = np.array([0.5], F32)
    else:
        pos = rng.standard_normal((V, 4)).astype(F32)
        w = rng.standard_normal(P).astype(F32)
        force = rng.standard_normal((V, 4)).astype(F32)
        energy = rng.standard_normal(1).astype(F32)
    pos[:, 3] = 7.0      # padding: never read
    force[:, 3] = -3.0   # padding: never written
    if pattern == "runs":            # few distinct values, sorted: long runs across warps
        dst = np.sort(rng.integers(0, max(V // 4, 1), P))
    elif pattern == "one":           # one run covering every block
        dst = np.full(P, V // 2)
    elif pattern == "random":
        dst = rng.integers(0, V, P)
    else:                            # few distinct values in random order
        dst = rng.integers(0, 3, P)
    return {"pos": pos, "src": rng.integers(0, V, P).astype(np.uint32), "dst": dst.astype(np.uint32),
            "w": w, "force": force, "energy": energy}


def run(mod, inp: dict, B: int) -> dict:
    P = inp["w"].shape[0]
    nb = -(-P // B)
    out = {k: np.array(v, copy=True) for k, v in inp.items()}
    out["bs"] = np.full((nb, 2), 77.0, F32)
    out["pb"] = np.arange(nb, dtype=F32) + F32(0.25)
    out["g"] = np.full((P, 3), 77.0, F32)
    out["ge"] = np.full(P, 77.0, F32)
    # Caspar's host arrays are (4, V): the same memory as the (V, 4) rows the references index
    mod.edge(out["pos"].reshape(4, -1), out["src"], out["dst"], out["w"], out["force"].reshape(4, -1),
             out["energy"], out["bs"],
             out["pb"], out["g"], out["ge"])
    return out


# ---- the order model ------------------------------------------------------------------------------


def _warp_scan(v: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Segmented inclusive scan of one warp (``v``: (32, K) float32) over runs of equal ``keys``:
    ``shuffle up`` by 1, 2, 4, 8, 16, a lane adds the lane ``d`` below when it has the same key."""
    for d in (1, 2, 4, 8, 16):
        same = np.zeros(WARP, bool)
        same[d:] = keys[d:] == keys[:-d]
        up = np.zeros_like(v)
        up[d:] = v[:-d]
        v = np.where(same[:, None], v + up, v)
    return v


def _shared_sum_block(vals: np.ndarray, idx: np.ndarray, B: int) -> list:
    """``(index, totals)`` of one block's run ends, in thread order."""
    n, K = vals.shape
    order = np.argsort(idx, kind="stable")           # the ``perm`` table
    uniq = np.unique(idx)
    keys = np.full(B, len(uniq), np.int64)
    keys[:n] = np.searchsorted(uniq, idx)[order]
    v = np.zeros((B, K), F32)
    v[:n] = vals[order]
    w = np.concatenate([_warp_scan(v[i:i + WARP], keys[i:i + WARP]) for i in range(0, B, WARP)])
    parts, last_keys = w[WARP - 1::WARP], keys[WARP - 1::WARP]
    out = []
    for j in range(n):
        if j + 1 < n and keys[j + 1] == keys[j]:
            continue
        total, warp, k = w[j].copy(), j // WARP, 1
        while k <= warp and last_keys[warp - k] == keys[j]:   # earlier warps of the run, nearest first
            total = total + parts[warp - k]
            k += 1
        out.append((int(uniq[keys[j]]), total))
    return out


def _butterfly(v: np.ndarray) -> np.ndarray:
    """``v`` (32, K): xor-shuffle butterfly; every lane ends with the same sum (lane 0's returned)."""
    lanes = np.arange(WARP)
    for off in (16, 8, 4, 2, 1):
        v = v + v[lanes ^ off]
    return v[0]


def _block_total(vals: np.ndarray, B: int) -> np.ndarray:
    """Block reduction of ``vals`` ((n <= B, K) float32; missing threads add 0)."""
    v = np.zeros((B, vals.shape[1]), F32)
    v[:vals.shape[0]] = vals
    nw = B // WARP
    p = np.zeros((WARP, vals.shape[1]), F32)
    p[:nw] = [_butterfly(v[i:i + WARP]) for i in range(0, B, WARP)]
    return _butterfly(p)


def model(inp: dict, g: np.ndarray, ge: np.ndarray, B: int, det: bool) -> dict:
    """The outputs kernc's reduction order gives from the per-thread values ``g`` and ``ge``."""
    P = g.shape[0]
    nb = -(-P // B)
    force = np.array(inp["force"], copy=True)
    energy = np.array(inp["energy"], copy=True)
    bs = np.zeros((nb, 2), F32)
    pb = np.arange(nb, dtype=F32) + F32(0.25)
    f0, f1 = g[:, 0:1], g[:, 1:2]
    run_totals: dict = {}            # index -> [block totals in block order] (deterministic)
    block_energy = []
    for b in range(nb):
        s = slice(b * B, min(P, (b + 1) * B))
        for u, total in _shared_sum_block(g[s], inp["dst"][s], B):
            if det:
                run_totals.setdefault(u, []).append(total)
            else:
                force[u, :3] = force[u, :3] + total
        e = _block_total(ge[s, None], B)
        block_energy.append(e)
        if not det:
            energy = energy + e
        bs[b] = _block_total(np.concatenate([ge[s, None], f0[s]], axis=1), B)
        pb[b] = pb[b] + _block_total(f1[s], B)[0]
    if det:
        for u, totals in run_totals.items():
            acc = np.zeros(3, F32)
            for t in totals:
                acc = acc + t
            force[u, :3] = force[u, :3] + acc
        if nb:
            # the last block: thread i adds the partials of blocks i, i + B, ... then reduces
            per_thread = np.zeros((B, 1), F32)
            for q, e in enumerate(block_energy):
                per_thread[q % B] = per_thread[q % B] + e
            energy = energy + _block_total(per_thread, B)
    return {"force": force, "energy": energy, "bs": bs, "pb": pb}


def _bits_equal(got, want, what):
    got, want = np.asarray(got, F32), np.asarray(want, F32)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    bad = np.argwhere(got.view(np.uint32) != want.view(np.uint32))
    if bad.size:
        k = tuple(bad[0])
        raise AssertionError(f"{what}: {bad.shape[0]} entries differ in their bits; first at {k}: "
                             f"got {got[k]!r}, want {want[k]!r}")


# ---- tests --------------------------------------------------------------------------------------


def _cases():
    return [pytest.param(B, P, pattern, id=f"B{B}-P{P}-{pattern}")
            for B in BLOCKS for P in sizes(B) for pattern in PATTERNS]


@pytest.mark.parametrize("det", [False, True], ids=["atomic", "deterministic"])
@pytest.mark.parametrize("B,P,pattern", _cases())
def test_edge_sums_follow_the_reduction_order_bitwise(B, P, pattern, det):
    """Random data: every output equals the order model bit for bit (two seeds)."""
    mod = edge_module(B, det)
    for seed in (0, 1):
        rng = np.random.default_rng([seed, B, P, PATTERNS.index(pattern)])
        inp = make_inputs(P, pattern, rng, exact=False)
        out = run(mod, inp, B)
        p = inp["pos"][inp["src"], :3]
        assert np.array_equal(out["g"], inp["w"][:, None] * p)     # the products themselves
        want = model(inp, out["g"], out["ge"], B, det)
        what = f"B={B} P={P} {pattern} seed={seed} det={det}"
        for name in ("force", "energy", "bs", "pb"):
            _bits_equal(out[name], want[name], f"{what} {name}")
        # and the model is a sum: close to the float64 one
        ref = np.zeros((inp["force"].shape[0], 3))
        np.add.at(ref, inp["dst"], out["g"].astype(np.float64))
        scale = np.zeros_like(ref)
        np.add.at(scale, inp["dst"], np.abs(out["g"].astype(np.float64)))
        ac.check_sum(out["force"][:, :3], inp["force"][:, :3] + ref, np.abs(inp["force"][:, :3]) + scale,
                     "f32", f"{what} force")


@pytest.mark.parametrize("det", [False, True], ids=["atomic", "deterministic"])
@pytest.mark.parametrize("B,P,pattern", _cases())
def test_edge_sums_equal_numpy_on_exact_data(B, P, pattern, det):
    """Multiples of 1/4: every partial sum is exact, so the results equal numpy's exactly."""
    mod = edge_module(B, det)
    rng = np.random.default_rng([7, B, P, PATTERNS.index(pattern)])
    inp = make_inputs(P, pattern, rng, exact=True)
    out = run(mod, inp, B)
    p = inp["pos"][inp["src"], :3].astype(np.float64)
    w = inp["w"].astype(np.float64)
    f = w[:, None] * p
    e = w * (p ** 2).sum(axis=1)
    force = inp["force"].astype(np.float64)
    np.add.at(force[:, :3], inp["dst"], f)
    blk = np.arange(P) // B
    nb = -(-P // B)
    bs = np.zeros((nb, 2))
    np.add.at(bs, blk, np.stack([e, f[:, 0]], axis=1))
    pb = np.arange(nb) + 0.25
    np.add.at(pb, blk, f[:, 1])
    ac.check_exact(out["force"], force.astype(F32), "force")
    ac.check_exact(out["energy"], (inp["energy"].astype(np.float64) + e.sum()).astype(F32), "energy")
    ac.check_exact(out["bs"], bs.astype(F32), "bs")
    ac.check_exact(out["pb"], pb.astype(F32), "pb")


@pytest.mark.parametrize("P", [1, 255, 256, 257, 4099])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_edge_update_example_equals_its_reference(P, seed):
    """``examples/edge_update.kern`` (B = 256) on its own exact inputs, with duplicate-heavy and
    sorted (runs over several warps) destinations."""
    import importlib.util
    import os

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    spec = importlib.util.spec_from_file_location("edge_update_ref", os.path.join(root, "examples", "edge_update.py"))
    ref_mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref_mod)
    key = ("example", 256)
    if key not in _MODS:
        _MODS[key] = ac.poison_uninitialized(kernc.compile_file(os.path.join(root, "examples", "edge_update.kern"),
                                                                choose_shared=False))
    mod = _MODS[key]
    rng = np.random.default_rng(seed)
    for sort in (False, True):
        inp = ref_mod.make_inputs(P, rng)
        if sort:
            inp["dst"] = np.sort(inp["dst"])
        want = ref_mod.reference(inp)
        args = {k: np.array(v, copy=True) for k, v in inp.items()}
        mod.edge_update(**args)
        ac.check_exact(args["force"], want["force"], f"P={P} sorted={sort} force")
        ac.check_exact(args["energy"], want["energy"], f"P={P} sorted={sort} energy")
