"""Triton version of ``examples/conv2d_dgrad.kern``: the data gradient of a 2-D convolution,
``dx[n, ih, iw, c] = sum over (r, s, k) of dy[n, oh, ow, k] * w[k, r, s, c]`` where
``oh*sh = ih + ph - r*dh`` and ``ow*sw = iw + pw - s*dw`` (terms with no such output inside
``dy`` are 0; dx NHWC, dy NHWK, w KRSC).

The same direct algorithm as kernc: one input element per thread (one program per 256, 8 warps),
the terms summed in the order ``r``, ``s``, ``k`` with runtime loop bounds, a term outside ``dy``
read as 0 and still added (see ``bench/triton/conv2d_fwd.py`` for why not ``tl.dot``).
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 256
NUM_WARPS = 8


@triton.jit
def conv2d_dgrad(dy_ptr, w_ptr, dx_ptr, sh, sw, ph, pw, dh, dw, N, H, W, C, K, R, S, OH, OW,
                 BLOCK: tl.constexpr):
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = t < N * H * W * C
    c = t % C  # t = ((n*H + ih)*W + iw)*C + c: dx[n, ih, iw, c] is dx[t]
    q = t // C
    iw = q % W
    q = q // W
    ih = q % H
    n = q // H
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(R):
        th = ih + ph - r * dh
        oh = th // sh
        okh = (th >= 0) & (th % sh == 0) & (oh < OH)
        for s in range(S):
            tw = iw + pw - s * dw
            ow = tw // sw
            inside = mask & okh & (tw >= 0) & (tw % sw == 0) & (ow < OW)
            for k in range(K):
                g = tl.load(dy_ptr + ((n * OH + oh) * OW + ow) * K + k, mask=inside, other=0.0)
                wv = tl.load(w_ptr + ((k * R + r) * S + s) * C + c, mask=mask, other=0.0)
                acc += g * wv
    tl.store(dx_ptr + t, acc, mask=mask)


KERNEL = conv2d_dgrad
SIGNATURE = {"dy_ptr": "*fp32", "w_ptr": "*fp32", "dx_ptr": "*fp32",
             **dict.fromkeys(["sh", "sw", "ph", "pw", "dh", "dw", "N", "H", "W", "C", "K", "R", "S", "OH", "OW"],
                             "i32"),
             "BLOCK": "constexpr"}
CONSTEXPRS = {"BLOCK": BLOCK}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` on ``examples/conv2d_dgrad.py``'s inputs (see ``bench/triton/saxpy.py``)."""
    N, H, W, C = inputs["dx"].shape
    K, R, S, _ = inputs["w"].shape
    _, OH, OW, _ = inputs["dy"].shape
    kernel[(triton.cdiv(N * H * W * C, BLOCK),)](
        tensor(inputs["dy"]), tensor(inputs["w"]), tensor(inputs["dx"]),
        *(int(inputs[p]) for p in ("sh", "sw", "ph", "pw", "dh", "dw")), N, H, W, C, K, R, S, OH, OW,
        BLOCK=BLOCK, num_warps=NUM_WARPS)
