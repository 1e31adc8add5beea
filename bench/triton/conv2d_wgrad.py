"""Triton version of ``examples/conv2d_wgrad.kern``: the weight gradient of a 2-D convolution,
``gw[k, r, s, c] = sum over m = (n, oh, ow) < M of dy[m, k] * x[n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c]``
(x NHWC, dy its NHWK storage as ``M x K``, gw KRSC, zero padding; ``n >= N`` reads 0).

The same direct algorithm as kernc and ``bench/cuda/conv2d_wgrad.cu``: one filter element per
thread (one program per 256, 8 warps), the pixels ``m`` summed in order by a runtime loop whose
``(n, oh, ow)`` are scalars shared by the program. (An implicit GEMM with ``tl.dot`` would change
the summation order and use TF32; see ``bench/triton/conv2d_fwd.py``.)
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 256
NUM_WARPS = 8


@triton.jit
def conv2d_wgrad(x_ptr, dy_ptr, gw_ptr, OH, OW, sh, sw, ph, pw, dh, dw, N, H, W, C, K, M, R, S,
                 BLOCK: tl.constexpr):
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = t < K * R * S * C
    c = t % C  # t = ((k*R + r)*S + s)*C + c: gw[k, r, s, c] is gw[t]
    q = t // C
    s = q % S
    q = q // S
    r = q % R
    k = q // R
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for m in range(M):
        n = m // (OH * OW)
        oh = m // OW % OH
        ow = m % OW
        h = oh * sh + r * dh - ph
        iw = ow * sw + s * dw - pw
        # n < N compared as a block: Triton 3.9's interpreter types a scalar comparison as i32,
        # which tl.load rejects once it is broadcast into a mask (the compiled kernel is the same)
        inside = mask & (tl.full([BLOCK], n, tl.int32) < N) & (h >= 0) & (h < H) & (iw >= 0) & (iw < W)
        xv = tl.load(x_ptr + ((n * H + h) * W + iw) * C + c, mask=inside, other=0.0)
        acc += tl.load(dy_ptr + m * K + k, mask=mask, other=0.0) * xv
    tl.store(gw_ptr + t, acc, mask=mask)


KERNEL = conv2d_wgrad
SIGNATURE = {"x_ptr": "*fp32", "dy_ptr": "*fp32", "gw_ptr": "*fp32",
             **dict.fromkeys(["OH", "OW", "sh", "sw", "ph", "pw", "dh", "dw", "N", "H", "W", "C", "K", "M", "R",
                              "S"], "i32"),
             "BLOCK": "constexpr"}
CONSTEXPRS = {"BLOCK": BLOCK}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` on ``examples/conv2d_wgrad.py``'s inputs (see ``bench/triton/saxpy.py``)."""
    N, H, W, C = inputs["x"].shape
    K, R, S, _ = inputs["gw"].shape
    M = inputs["dy"].shape[0]
    kernel[(triton.cdiv(K * R * S * C, BLOCK),)](
        tensor(inputs["x"]), tensor(inputs["dy"]), tensor(inputs["gw"]), int(inputs["OH"]), int(inputs["OW"]),
        *(int(inputs[p]) for p in ("sh", "sw", "ph", "pw", "dh", "dw")), N, H, W, C, K, M, R, S,
        BLOCK=BLOCK, num_warps=NUM_WARPS)
