"""Triton version of ``examples/conv2d_fwd.kern``: the forward 2-D convolution
``y[n, oh, ow, k] = sum over (r, s, c) of x[n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c] * w[k, r, s, c]``
(x NHWC, w KRSC, y NHWK, zero padding).

The same direct algorithm as kernc and ``bench/cuda/conv2d_fwd.cu``: one output element per
thread (one program per 256, 8 warps), the taps summed in the order ``r``, ``s``, ``c`` with
runtime loop bounds, a tap in the padding read as 0 and still added. (A Triton user after speed
would write an implicit GEMM with ``tl.dot``: tensor cores, TF32 inputs and another summation
order, which is not the computation the example defines.)
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 256
NUM_WARPS = 8


@triton.jit
def conv2d_fwd(x_ptr, w_ptr, y_ptr, sh, sw, ph, pw, dh, dw, N, H, W, C, K, R, S, OH, OW, BLOCK: tl.constexpr):
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = t < N * OH * OW * K
    k = t % K  # t = ((n*OH + oh)*OW + ow)*K + k: y[n, oh, ow, k] is y[t]
    q = t // K
    ow = q % OW
    q = q // OW
    oh = q % OH
    n = q // OH
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(R):
        h = oh * sh + r * dh - ph
        for s in range(S):
            iw = ow * sw + s * dw - pw
            inside = mask & (h >= 0) & (h < H) & (iw >= 0) & (iw < W)
            for c in range(C):
                xv = tl.load(x_ptr + ((n * H + h) * W + iw) * C + c, mask=inside, other=0.0)
                wv = tl.load(w_ptr + ((k * R + r) * S + s) * C + c, mask=mask, other=0.0)
                acc += xv * wv
    tl.store(y_ptr + t, acc, mask=mask)


KERNEL = conv2d_fwd
SIGNATURE = {"x_ptr": "*fp32", "w_ptr": "*fp32", "y_ptr": "*fp32",
             **dict.fromkeys(["sh", "sw", "ph", "pw", "dh", "dw", "N", "H", "W", "C", "K", "R", "S", "OH", "OW"],
                             "i32"),
             "BLOCK": "constexpr"}
CONSTEXPRS = {"BLOCK": BLOCK}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` on ``examples/conv2d_fwd.py``'s inputs (see ``bench/triton/saxpy.py``)."""
    N, H, W, C = inputs["x"].shape
    K, R, S, _ = inputs["w"].shape
    _, OH, OW, _ = inputs["y"].shape
    kernel[(triton.cdiv(N * OH * OW * K, BLOCK),)](
        tensor(inputs["x"]), tensor(inputs["w"]), tensor(inputs["y"]),
        *(int(inputs[p]) for p in ("sh", "sw", "ph", "pw", "dh", "dw")), N, H, W, C, K, R, S, OH, OW,
        BLOCK=BLOCK, num_warps=NUM_WARPS)
