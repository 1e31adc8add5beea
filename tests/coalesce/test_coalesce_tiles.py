"""kern-coalesce-views with several elements per thread: a TI x 32 tile, K = TI / (B/32) sub-rows.

A block of ``B`` threads covers ``Rb = B/32`` tile rows per pass; the tile has ``TI = min(32, 4*Rb)``
rows (``B`` = 64, 128, 256, 512, 1024: 8, 16, 32, 32, 32 rows), so each thread handles
``K = TI/Rb`` = 4, 4, 4, 2, 1 elements. Thread ``tid`` owns the items ``(bi*TI + tid/32 + k*Rb,
bj*32 + tid%32)``, ``k < K``, on the body's side, and the tile elements ``(tid % TI, tid/TI + k*CJ)``
(``CJ = B/TI`` columns per pass) on the transposed side. The tile rows are ``S = 32 + 32/TI``
elements apart (33, 34, 36), so both shared-memory accesses are free of bank conflicts.

The expected memory traffic is derived here from that description (:func:`_model`), independently
of the interpreter, and compared with the interpreter's counters exactly; results must equal numpy.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest

from kernc.api import Module
from kernc.backend import binding, cpu
from kernc.compiler import Compilation, CompileOptions
from conftest import EXAMPLES, ROOT

#: these tests are about the staged kernel itself, at every shape (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("always_staged")

BLOCKS = [64, 128, 256, 512, 1024]
#: partial tiles in both directions, one-row and one-column problems, a tiny one, and full tiles
SHAPES = [(33, 70), (1, 1000), (1000, 1), (5, 3), (64, 64)]

KERNELS = """
layout rowmaj(R, C) = (R, C):(C, 1);
layout nchw(N, C, H, W) = (N, C, H, W):(C * H * W, H * W, W, 1);
layout nhwc(N, H, W, C) = (N, H, W, C):(H * W * C, W * C, C, 1);
@block({B})
kernel transpose(a: f32[R, C] view as rowmaj(R, C), b: f32[C, R] view as rowmaj(C, R))
        over (i, j) in (R, C) {{
    b[j, i] = a[i, j];
}}
@block({B})
kernel affine(a: f32[R, C] view as rowmaj(R, C), b: f32[C, R] view as rowmaj(C, R), s: f32)
        over (i, j) in (R, C) {{
    b[j, i] = a[i, j] * s + 1.0;
}}
@block({B})
kernel tload(a: f32[C, R] view as rowmaj(C, R), b: f32[R, C] view as rowmaj(R, C), s: f32)
        over (i, j) in (R, C) {{
    b[i, j] = a[j, i] * s + 1.0;
}}
@block({B})
kernel both(a: f32[C, R] view as rowmaj(C, R), c: f32[R, C] view as rowmaj(R, C),
            b: f32[C, R] view as rowmaj(C, R), s: f32)
        over (i, j) in (R, C) {{
    b[j, i] = a[j, i] * s + c[i, j];
}}
@block({B})
kernel to_nhwc(x: f32[N, C, H, W] view as nchw(N, C, H, W), y: f32[N, H, W, C] view as nhwc(N, H, W, C))
        over (n, c, h, w) in (N, C, H, W) {{
    y[n, h, w, c] = x[n, c, h, w];
}}
"""


@pytest.fixture(scope="module")
def mods():
    """One compiled module per block size, shared by every case."""
    cache: dict = {}

    def get(B: int) -> Module:
        if B not in cache:
            cache[B] = Module(Compilation(KERNELS.format(B=B), "t.kern", CompileOptions(), use_cache=False))
        return cache[B]

    return get


def _tile(B: int):
    rb = B // 32
    ti = min(32, 4 * rb)
    return rb, ti, ti // rb, 32 + 32 // ti, B // ti  # Rb, TI, K, S, CJ


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _requests(R, C, B, transposed: bool, address) -> tuple[int, int]:
    """(warp requests, 32-byte sectors) of one global access of an R x C problem under the design:
    ``transposed`` -- the staged side (lane l of warp w is tile element ((32w + l) % TI,
    (32w + l) / TI + k*CJ)); otherwise the body's side (item (w + k*Rb, l)). ``address(i, j)`` is
    the element offset; only in-range lanes access memory; f32 elements."""
    rb, ti, k_, _, cj = _tile(B)
    requests = sectors = 0
    for bi in range(_cdiv(R, ti)):
        for bj in range(_cdiv(C, 32)):
            for k in range(k_):
                for w in range(B // 32):
                    lanes = [32 * w + lane for lane in range(32)]
                    if transposed:
                        items = [(bi * ti + t % ti, bj * 32 + t // ti + k * cj) for t in lanes]
                    else:
                        items = [(bi * ti + w + k * rb, bj * 32 + t % 32) for t in lanes]
                    seg = {address(i, j) * 4 // 32 for i, j in items if i < R and j < C}
                    requests += bool(seg)
                    sectors += len(seg)
    return requests, sectors


def _model(R, C, B, staged_load: bool, staged_store: bool, store_address, load_address) -> dict:
    """The interpreter's counters for a one-load one-store kernel as the design predicts them.

    Shared memory: each staged access writes its tile unconditionally (TI/Rb = K passes of the
    block's B/32 warps: TI warp requests per tile) and reads it back: a staged store's reads are
    unconditional too (TI per tile: the guard only protects the global store), a staged load's
    reads sit in the body's guard (one request per warp with an in-range item)."""
    _, ti, _, _, _ = _tile(B)
    tiles = _cdiv(R, ti) * _cdiv(C, 32)
    lr, ls = _requests(R, C, B, staged_load, load_address)
    sr, ss = _requests(R, C, B, staged_store, store_address)
    shared = 0
    if staged_store:
        shared += 2 * tiles * ti
    if staged_load:
        shared += tiles * ti + _requests(R, C, B, False, lambda i, j: 0)[0]
    return dict(global_load_requests=lr, global_load_sectors=ls, global_store_requests=sr,
                global_store_sectors=ss, shared_requests=shared, shared_bank_conflicts=0)


def _stats(st) -> dict:
    return {k: getattr(st, k) for k in ("global_load_requests", "global_load_sectors", "global_store_requests",
                                        "global_store_sectors", "shared_requests", "shared_bank_conflicts")}


@pytest.mark.parametrize("B", BLOCKS)
def test_tile_shape_in_ir(mods, B):
    """The workgroup tile is TI x S f32 and the signature records the TI x 32 tiles."""
    _, ti, _, s, _ = _tile(B)
    mod = mods(B)
    assert f"memref<{ti * s}xf32, #gpu.address_space<workgroup>>" in mod.ir("gpu")
    assert mod._compilation.signatures["transpose"].tiles == [["R", ti], ["C", 32]]
    assert mod._compilation.signatures["to_nhwc"].tiles == [["C", ti], ["W", 32]]


@pytest.mark.parametrize("B", BLOCKS)
@pytest.mark.parametrize("shape", SHAPES)
def test_staged_store(mods, B, shape):
    R, C = shape
    mod = mods(B)
    a = np.random.default_rng(R * C + B).standard_normal((R, C)).astype(np.float32)
    b = np.zeros((C, R), np.float32)
    res = mod.transpose(a, b)
    np.testing.assert_array_equal(b, a.T)
    _, ti, _, _, _ = _tile(B)
    assert res.grid == _cdiv(R, ti) * _cdiv(C, 32)  # one block per tile
    assert _stats(res.stats) == _model(R, C, B, False, True, lambda i, j: j * R + i, lambda i, j: i * C + j)
    b2 = np.zeros((C, R), np.float32)
    mod.affine(a, b2, np.float32(0.75))
    np.testing.assert_array_equal(b2, a.T * np.float32(0.75) + np.float32(1.0))


@pytest.mark.parametrize("B", BLOCKS)
@pytest.mark.parametrize("shape", SHAPES)
def test_staged_load(mods, B, shape):
    R, C = shape
    mod = mods(B)
    a = np.random.default_rng(R + C + B).standard_normal((C, R)).astype(np.float32)
    b = np.zeros((R, C), np.float32)
    res = mod.tload(a, b, np.float32(2.5))
    np.testing.assert_array_equal(b, a.T * np.float32(2.5) + np.float32(1.0))
    assert _stats(res.stats) == _model(R, C, B, True, False, lambda i, j: i * C + j, lambda i, j: j * R + i)


@pytest.mark.parametrize("B", BLOCKS)
@pytest.mark.parametrize("shape", SHAPES)
def test_staged_load_and_store_in_one_kernel(mods, B, shape):
    """b[j, i] = a[j, i] * s + c[i, j]: a and b staged (both through the tile's transposed side),
    c read directly on the body's side."""
    R, C = shape
    rng = np.random.default_rng(B)
    a = rng.standard_normal((C, R)).astype(np.float32)
    c = rng.standard_normal((R, C)).astype(np.float32)
    b = np.zeros((C, R), np.float32)
    st = mods(B).both(a, c, b, np.float32(-1.5)).stats
    np.testing.assert_array_equal(b, a * np.float32(-1.5) + c.T)
    _, ti, _, _, _ = _tile(B)
    tiles = _cdiv(R, ti) * _cdiv(C, 32)
    ar, asec = _requests(R, C, B, True, lambda i, j: j * R + i)
    cr, csec = _requests(R, C, B, False, lambda i, j: i * C + j)
    assert (st.global_load_requests, st.global_load_sectors) == (ar + cr, asec + csec)
    assert (st.global_store_requests, st.global_store_sectors) == (ar, asec)  # b: a's pattern
    # a's tile: TI unconditional writes per tile, reads in the guard; b's tile: 2 TI per tile
    assert st.shared_requests == 3 * tiles * ti + cr
    assert st.shared_bank_conflicts == 0


@pytest.mark.parametrize("B", BLOCKS)
def test_full_tiles_at_the_ideal(mods, B):
    """On full tiles (64 x 64) every request is a full warp at 4 sectors (128 bytes, f32): 4096/32
    = 128 requests per side; shared: 2 * TI requests per tile (64*64 / (32*TI) tiles) = 256."""
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    st = mods(B).transpose(a, np.zeros((64, 64), np.float32)).stats
    assert st.global_load_requests == st.global_store_requests == 128
    assert st.global_load_sectors == st.global_store_sectors == 4 * 128
    assert st.shared_requests == 256 and st.shared_bank_conflicts == 0


@pytest.mark.parametrize("B", BLOCKS)
@pytest.mark.parametrize("shape", [(2, 33, 3, 40), (1, 64, 2, 32), (3, 5, 7, 9), (1, 1, 1, 1)])
def test_permute_with_a_batch(mods, B, shape):
    """NCHW -> NHWC: (c, w) tiles, batch (n, h); grid = N*H * ceil(C/TI) * ceil(W/32)."""
    N, C, H, W = shape
    x = np.random.default_rng(B).standard_normal(shape).astype(np.float32)
    y = np.zeros((N, H, W, C), np.float32)
    res = mods(B).to_nhwc(x, y)
    np.testing.assert_array_equal(y, x.transpose(0, 2, 3, 1))
    _, ti, _, _, _ = _tile(B)
    assert res.grid == N * H * _cdiv(C, ti) * _cdiv(W, 32)
    st = res.stats
    assert st.shared_bank_conflicts == 0
    if C % ti == 0 and W % 32 == 0:  # full tiles: every request a full warp at 4 sectors
        assert st.global_load_sectors == 4 * st.global_load_requests == 4 * (N * C * H * W // 32)
        assert st.global_store_sectors == 4 * st.global_store_requests == 4 * (N * C * H * W // 32)


def test_bench_permute_file():
    """The benchmark's permute (default block 256: 32 x 33 tile, 4 elements per thread)."""
    import kernc

    mod = kernc.compile(open(os.path.join(ROOT, "bench", "kern", "permute.kern"), encoding="utf-8").read())
    x = np.random.default_rng(3).standard_normal((2, 64, 3, 64)).astype(np.float32)
    y = np.zeros((2, 3, 64, 64), np.float32)
    res = mod.nchw_to_nhwc(x, y)
    np.testing.assert_array_equal(y, x.transpose(0, 2, 3, 1))
    assert res.grid == 2 * 3 * 2 * 2  # batch N*H = 6, a 2 x 2 plane of 32 x 32 tiles
    st = res.stats
    assert st.global_store_sectors == 4 * st.global_store_requests == 4 * (2 * 64 * 3 * 64 // 32)
    assert st.shared_bank_conflicts == 0


def test_grid_is_the_tile_count_and_others_keep_ceil_p_over_b():
    src = """
@block(128)
kernel copy(a: f32[R, C] view, b: f32[R, C] view) over (i, j) in (R, C) { b[i, j] = a[i, j]; }
kernel scale(a: f32, x: f32[n] read, y: f32[n] write) over n { y = a * x; }
"""
    mod = Module(Compilation(src, "g.kern", CompileOptions(), use_cache=False))
    assert mod._compilation.signatures["copy"].tiles is None  # nothing to stage
    a = np.ones((33, 70), np.float32)
    assert mod.copy(a, np.zeros_like(a)).grid == _cdiv(33 * 70, 128)
    assert mod.scale(np.float32(2), np.ones(1000, np.float32), np.ones(1000, np.float32)).grid == _cdiv(1000, 256)
    # staged, B = 128: 16 x 32 tiles: ceil(33/16) * ceil(70/32) = 9 blocks (ceil(2310/128) = 19)
    tr = Module(Compilation(KERNELS.format(B=128), "t.kern", CompileOptions(), use_cache=False))
    assert tr.transpose(a, np.zeros((70, 33), np.float32)).grid == 9
    # empty problems launch nothing
    assert tr.transpose(np.zeros((0, 70), np.float32), np.zeros((70, 0), np.float32)).grid == 0


@pytest.mark.parametrize("grid", [1, 2, 5])
def test_any_grid_is_correct(mods, grid):
    """The kernel loops over its tiles (blk, blk + grid, ...): fewer blocks than tiles still cover
    every tile (33 x 70 at B = 256: 6 tiles)."""
    mod = mods(256)
    kernel = mod.transpose
    a = np.random.default_rng(grid).standard_normal((33, 70)).astype(np.float32)
    b = np.zeros((70, 33), np.float32)
    bound = binding.bind(kernel.signature, (a, b), {}, cpu.is_host_array, "cpu")
    assert bound.grid == 6
    st = cpu.launch(mod._interpreter(), dataclasses.replace(bound, grid=grid))
    np.testing.assert_array_equal(b, a.T)
    assert st.blocks == grid and st.shared_bank_conflicts == 0


def test_ptx_issues_the_k_loads_before_the_tile_writes_and_the_barrier():
    """examples/transpose.kern (B = 256, K = 4): the 4 global loads of a (one per guard) come before
    the first shared store and the barrier, so they are in flight together."""
    comp = Compilation(open(os.path.join(EXAMPLES, "transpose.kern"), encoding="utf-8").read(),
                       "transpose.kern", use_cache=False)
    body = comp.ptx().split(".entry transpose")[1]
    lines = [ln.strip() for ln in body.splitlines()]
    stores = [n for n, ln in enumerate(lines) if ln.startswith("st.shared")]
    loads = [n for n, ln in enumerate(lines) if ln.startswith("ld.global")]
    assert len(loads) == 4 and len(stores) == 4 and max(loads) < min(stores)
    assert stores == list(range(stores[0], stores[0] + 4))  # the 4 tile writes, together
    assert lines[stores[-1] + 1].startswith("bar.sync")  # then the tile's barrier
    assert sum(ln.startswith("st.global") for ln in lines) == 4
