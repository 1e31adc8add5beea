"""Triton version of ``examples/im2col_gather.kern``: ``out`` (``M x K``, row-major) is the im2col
matrix of the NHWC input ``x`` for a 3x3 filter, stride 1, padding 1, dilation 1:
``out[m, k] = x[n, oh + r - 1, ow + s - 1, c]`` with ``m = (n, oh, ow)`` and ``k = (r, s, c)``
(last fastest), and 0 in the padding, where ``n >= N`` and where ``k >= 9*C``.

One program per ``8 x 32`` tile of ``out`` (8 warps, one element per thread, a warp per row
segment: coalesced stores); the row coordinates ``(n, oh, ow)`` are computed once per row and the
column coordinates ``(r, s, c)`` once per column of the tile, then broadcast.
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK_M = 8
BLOCK_K = 32
NUM_WARPS = 8


@triton.jit
def im2col_gather(x_ptr, out_ptr, OH, OW, N, H, W, C, M, K, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    k = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    n = m // (OH * OW)
    oh = m // OW % OH
    ow = m % OW
    r = k // (3 * C)
    s = k // C % 3
    c = k % C
    h = oh[:, None] + r[None, :] - 1
    w = ow[:, None] + s[None, :] - 1
    written = (m[:, None] < M) & (k[None, :] < K)
    inside = written & (n[:, None] < N) & (k[None, :] < 9 * C) & (h >= 0) & (h < H) & (w >= 0) & (w < W)
    v = tl.load(x_ptr + ((n[:, None] * H + h) * W + w) * C + c[None, :], mask=inside, other=0.0)
    tl.store(out_ptr + m[:, None] * K + k[None, :], v, mask=written)


KERNEL = im2col_gather
SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "OH": "i32", "OW": "i32", "N": "i32", "H": "i32", "W": "i32",
             "C": "i32", "M": "i32", "K": "i32", "BLOCK_M": "constexpr", "BLOCK_K": "constexpr"}
CONSTEXPRS = {"BLOCK_M": BLOCK_M, "BLOCK_K": BLOCK_K}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` on ``examples/im2col_gather.py``'s inputs (see ``bench/triton/saxpy.py``)."""
    N, H, W, C = inputs["x"].shape
    M, K = inputs["out"].shape
    kernel[(triton.cdiv(M, BLOCK_M), triton.cdiv(K, BLOCK_K))](
        tensor(inputs["x"]), tensor(inputs["out"]), int(inputs["OH"]), int(inputs["OW"]), N, H, W, C, M, K,
        BLOCK_M=BLOCK_M, BLOCK_K=BLOCK_K, num_warps=NUM_WARPS)
