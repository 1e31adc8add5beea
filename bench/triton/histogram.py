"""Triton version of ``examples/histogram.kern``: ``hist[data[t]] += 1`` for every ``t < n``.

One program per block of ``BLOCK = 256`` bytes run by 8 warps (kernc's default ``@block(256)``),
one ``tl.atomic_add`` on the global ``u32`` bin per byte (Triton does not privatize the bins in
workgroup memory as kernc's kern-privatize-atomics does). Counts are exact in any order.
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 256
NUM_WARPS = 8


@triton.jit
def histogram(data_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = t < n
    b = tl.load(data_ptr + t, mask=mask, other=0).to(tl.int32)
    tl.atomic_add(hist_ptr + b, tl.full([BLOCK], 1, tl.uint32), mask=mask)


KERNEL = histogram
SIGNATURE = {"data_ptr": "*u8", "hist_ptr": "*u32", "n": "i32", "BLOCK": "constexpr"}
CONSTEXPRS = {"BLOCK": BLOCK}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` on ``examples/histogram.py``'s inputs (see ``bench/triton/saxpy.py``)."""
    n = inputs["data"].size
    kernel[(max(1, triton.cdiv(n, BLOCK)),)](tensor(inputs["data"]), tensor(inputs["hist"]), n,
                                             BLOCK=BLOCK, num_warps=NUM_WARPS)
