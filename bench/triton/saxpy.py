"""Triton version of ``examples/saxpy.kern``: ``y[t] += a * x[t]`` for every ``t < n``.

One program per block of ``BLOCK = 256`` elements run by 8 warps (one element per thread, as
kernc's default ``@block(256)`` and ``bench/cuda/saxpy.cu``); ``n`` is an ``i32`` (Triton's index
width; kernc's is 32 bits too).
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 256
NUM_WARPS = 8


@triton.jit
def saxpy(a, x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = t < n
    x = tl.load(x_ptr + t, mask=mask)
    y = tl.load(y_ptr + t, mask=mask)
    tl.store(y_ptr + t, y + a * x, mask=mask)


KERNEL = saxpy
SIGNATURE = {"a": "fp32", "x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
CONSTEXPRS = {"BLOCK": BLOCK}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` (:data:`KERNEL`, compiled or interpreted) on the arguments of
    ``examples/saxpy.py``'s ``make_inputs`` (numpy, updated in place through ``tensor``, a function
    that wraps a numpy array in a tensor sharing its memory, e.g. ``torch.from_numpy``)."""
    n = inputs["x"].size
    kernel[(triton.cdiv(n, BLOCK),)](float(inputs["a"]), tensor(inputs["x"]), tensor(inputs["y"]), n,
                                     BLOCK=BLOCK, num_warps=NUM_WARPS)
