"""Triton version of ``examples/gather_scatter.kern``: for every ``t < n``,
``g = x[idx[t]]``, ``out[dst[t]] = 2 * g + s[off + t*st]`` and, where ``idx[t]`` is even,
``acc[off + t*st] += g`` (``st`` may be negative; ``dst`` entries are unique, so the scatter is a
plain store, and each ``t`` owns its ``acc`` element, so the update is a load and a store).

One program per block of 256 items, one per thread (8 warps), as ``bench/cuda/gather_scatter.cu``.
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 256
NUM_WARPS = 8


@triton.jit
def gather_scatter(x_ptr, idx_ptr, s_ptr, off, st, out_ptr, dst_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = t < n
    i = tl.load(idx_ptr + t, mask=mask, other=0)
    g = tl.load(x_ptr + i, mask=mask)
    j = off + t * st
    s = tl.load(s_ptr + j, mask=mask)
    d = tl.load(dst_ptr + t, mask=mask, other=0)
    tl.store(out_ptr + d, 2.0 * g + s, mask=mask)
    even = mask & (i % 2 == 0)
    acc = tl.load(acc_ptr + j, mask=even)
    tl.store(acc_ptr + j, acc + g, mask=even)


KERNEL = gather_scatter
SIGNATURE = {"x_ptr": "*fp32", "idx_ptr": "*u32", "s_ptr": "*fp32", "off": "i32", "st": "i32",
             "out_ptr": "*fp32", "dst_ptr": "*u32", "acc_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
CONSTEXPRS = {"BLOCK": BLOCK}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` on ``examples/gather_scatter.py``'s inputs (see ``bench/triton/saxpy.py``)."""
    n = inputs["idx"].size
    kernel[(triton.cdiv(n, BLOCK),)](
        tensor(inputs["x"]), tensor(inputs["idx"]), tensor(inputs["s"]), int(inputs["off"]), int(inputs["st"]),
        tensor(inputs["out"]), tensor(inputs["dst"]), tensor(inputs["acc"]), n, BLOCK=BLOCK, num_warps=NUM_WARPS)
