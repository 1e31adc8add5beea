"""The launch of a tiled kernel (kern-coalesce-views) at the limits of the grid and of 32-bit index
arithmetic. Its tile loop, ``for tile = blockIdx.x; tile < count; tile += gridDim.x``, takes any
grid, and binding launches one block per tile: with a tiny tiled plane (1 x 1 here: one tile per
batch element) there are P tiles.

- More tiles than CUDA's grid x allows is still a valid launch: the grid is capped, the blocks loop.
- The loop's last step computes about ``tiles + grid``; in 32-bit index arithmetic (a signed
  compare) that wrapped negative past 2^31 and the block ran one more trip, far out of bounds (seen
  on an H200 as cudaErrorIllegalAddress at P = 9 * 2^27). Such launches take 64-bit indices.

Only binding runs here (arrays of 2^30+ elements are strided views of 16 bytes)."""

import numpy as np
import pytest

import kernc
from kernc.backend import binding

SRC = """
layout nchw(N, C, H, W) = (N, C, H, W):(C * H * W, H * W, W, 1);
layout nhwc(N, H, W, C) = (N, H, W, C):(H * W * C, W * C, C, 1);
@block(64)
kernel to_nhwc(x: f32[N, C, H, W] view as nchw(N, C, H, W), y: f32[N, H, W, C] view as nhwc(N, H, W, C))
        over (n, c, h, w) in (N, C, H, W) {
    y[n, h, w, c] = x[n, c, h, w];
}
"""


@pytest.fixture(scope="module")
def sig():
    s = kernc.compile(SRC).to_nhwc.signature
    assert s.tiles is not None  # the staged (tiled) kernel
    return s


@pytest.fixture(autouse=True)
def _no_aliasing_check(monkeypatch):
    """The huge views claim gigabytes over 16 bytes each, so their address ranges overlap, which
    the launch refuses (binding.check_aliasing): not what these tests are about."""
    monkeypatch.setattr(binding, "check_aliasing", lambda *args: None)


def _huge(shape):
    base = np.zeros(4, np.float32)  # metadata only: binding never reads the data
    strides = tuple(int(np.prod(shape[i + 1:])) * 4 for i in range(len(shape)))
    return np.lib.stride_tricks.as_strided(base, shape, strides, writeable=False)


def _bind(sig, N):
    """(grid, index bits) of the launch, or the error's text. The views never reach a traceback:
    pytest would print them, reading gigabytes past their 16 bytes."""
    x, y = _huge((N, 1, 1, 1)), _huge((N, 1, 1, 1))
    try:
        bound = binding.bind(sig, (x, y), {}, lambda a: isinstance(a, np.ndarray), "cuda")
        return int(bound.grid), int(bound.index_bits)
    except Exception as err:  # noqa: BLE001 - reported as a value (see above)
        return str(err)
    finally:
        del x, y


@pytest.mark.parametrize("N, want_grid, want_bits", [
    (3 * 2**20, 3 * 2**20, 32),               # tiles + grid < 2^31: 32-bit
    (2**30 - 64, 2**30 - 64, 32),
    (2**30 + 2**29, 2**30 + 2**29, 64),       # tiles + grid >= 2^31: 64-bit
    (9 * 2**27, 9 * 2**27, 64),
    (2**31, binding.MAX_GRID_X, 64),          # more tiles than grid x: capped
])
def test_tile_grid_and_index_width(sig, N, want_grid, want_bits):
    got = _bind(sig, N)
    assert got == (want_grid, want_bits)
    grid, bits = got
    if bits == 32:
        assert (grid - 1) + grid <= 2**31 - 1  # the last block's second step does not wrap
