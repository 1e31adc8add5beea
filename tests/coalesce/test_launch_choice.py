"""The launch-time choice between a kernel staged by kern-coalesce-views and the same kernel
compiled without it (``binding.tile_fill``, ``binding.MIN_TILE_FILL``).

A staged kernel launches one block per tile of its tile plane; with an extent far below the tile's
(a 4096 x 2 transpose, an NHWC permute of 2 channels) most of every tile is empty, and on an H200
such a launch ran up to 10x slower than the unstaged kernel (see ``MIN_TILE_FILL``). The CPU
interpreter runs the same choice, so its results and traffic counters show which kernel ran."""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.backend import binding

SRC = """
layout rowmaj(R, C) = (R, C):(C, 1);
layout nchw(N, C, H, W) = (N, C, H, W):(C * H * W, H * W, W, 1);
layout nhwc(N, H, W, C) = (N, H, W, C):(H * W * C, W * C, C, 1);
kernel transpose(a: f32[R, C] view as rowmaj(R, C), b: f32[C, R] view as rowmaj(C, R))
        over (i, j) in (R, C) {
    b[j, i] = a[i, j];
}
kernel to_nhwc(x: f32[N, C, H, W] view as nchw(N, C, H, W), y: f32[N, H, W, C] view as nhwc(N, H, W, C))
        over (n, c, h, w) in (N, C, H, W) {
    y[n, h, w, c] = x[n, c, h, w];
}
"""


@pytest.fixture(scope="module")
def mods():
    return kernc.compile(SRC), kernc.compile(SRC, coalesce=False)


def test_tile_fill():
    sig = kernc.compile(SRC)._compilation.signatures["transpose"]
    assert sig.tiles == [["R", 32], ["C", 32]]
    assert binding.tile_fill(sig, {"R": 4096, "C": 1}) == 1 / 32
    assert binding.tile_fill(sig, {"R": 64, "C": 64}) == 1.0
    assert binding.tile_fill(sig, {"R": 33, "C": 33}) == 33 * 33 / (64 * 64)
    assert binding.tile_fill(sig, {"R": 7, "C": 0}) is None
    plain = kernc.compile(SRC, coalesce=False)._compilation.signatures["transpose"]
    assert binding.tile_fill(plain, {"R": 4096, "C": 1}) is None


#: (R, C): the fill of the 32 x 32 tiles is R*C / (ceil32(R) * ceil32(C)); staged from 0.2 on
SHAPES = [(4096, 1), (1, 4096), (1024, 4), (4, 1024), (512, 6), (6, 512), (512, 7), (7, 512),
          (256, 8), (64, 64), (33, 33), (5, 3), (40, 40)]


@pytest.mark.parametrize("R, C", SHAPES)
def test_transpose_runs_the_kernel_that_fills_its_blocks(mods, R, C):
    staged_mod, plain_mod = mods
    a = np.random.default_rng(R * C).standard_normal((R, C)).astype(np.float32)
    b = np.full((C, R), np.nan, np.float32)
    res = staged_mod.transpose(a, b)
    np.testing.assert_array_equal(b, a.T)
    fill = R * C / (-(-R // 32) * 32 * -(-C // 32) * 32)
    staged = fill >= 0.2
    assert (res.stats.shared_requests > 0) == staged
    if staged:
        assert res.grid == -(-R // 32) * -(-C // 32)  # one block per tile
    else:  # exactly what the kernel compiled without the pass does
        b2 = np.full((C, R), np.nan, np.float32)
        want = plain_mod.transpose(a, b2)
        assert res.grid == want.grid == -(-R * C // 256)
        assert res.stats == want.stats


def test_skinny_transposes_move_fewer_sectors_than_their_staged_kernel(mods):
    """The choice's point on the CPU's counters: a 4096 x 1 transpose (a copy) runs 4096 threads at
    4 sectors per request, where the staged kernel runs 32 x 32 tiles of 32 elements each."""
    staged_mod, _ = mods
    a = np.arange(4096, dtype=np.float32).reshape(4096, 1)
    st = staged_mod.transpose(a, np.zeros((1, 4096), np.float32)).stats
    assert st.threads == 4096 and st.global_store_sectors == 4 * st.global_store_requests == 512


@pytest.mark.parametrize("shape, staged", [((2, 2, 8, 64), False), ((1, 32, 4, 64), True), ((3, 5, 7, 9), False)])
def test_permute_with_few_channels_runs_unstaged(mods, shape, staged):
    N, C, H, W = shape
    x = np.random.default_rng(C).standard_normal(shape).astype(np.float32)
    y = np.zeros((N, H, W, C), np.float32)
    res = mods[0].to_nhwc(x, y)
    np.testing.assert_array_equal(y, x.transpose(0, 2, 3, 1))
    assert (res.stats.shared_requests > 0) == staged


def test_forced_staging_still_runs_every_shape(mods, always_staged):
    """With ``MIN_TILE_FILL`` at 0 (the staged kernel's own tests) a skinny launch stays staged."""
    a = np.arange(4096, dtype=np.float32).reshape(4096, 1)
    b = np.zeros((1, 4096), np.float32)
    res = mods[0].transpose(a, b)
    assert np.array_equal(b, a.T) and res.grid == 128 and res.stats.shared_requests > 0


@pytest.mark.gpu
@pytest.mark.parametrize("R, C", [(1 << 16, 1), (2, 1 << 15), (1000, 6), (7, 999), (256, 256), (33, 70)])
def test_choice_on_gpu(mods, R, C):
    """The same choice and results on a GPU (the grid tells which kernel ran)."""
    import cupy as cp

    a = np.random.default_rng(R + C).standard_normal((R, C)).astype(np.float32)
    b = cp.full((C, R), np.nan, np.float32)
    res = mods[0].transpose(cp.asarray(a), b)
    assert np.array_equal(b.get(), a.T)
    fill = R * C / (-(-R // 32) * 32 * -(-C // 32) * 32)
    assert res.grid == (-(-R // 32) * -(-C // 32) if fill >= 0.2 else -(-R * C // 256))
