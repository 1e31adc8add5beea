"""Triton version of ``examples/transpose.kern``: ``b[j, i] = a[i, j]`` for the row-major
``R x C`` matrix ``a`` (``b`` is ``C x R``, row-major).

The Triton idiom: one program per 32 x 32 tile, loaded from ``a`` along its rows and stored
transposed (``tl.trans``) along the rows of ``b``; Triton's layout conversion moves the tile
through shared memory, as kernc's coalescing pass and ``bench/cuda/transpose.cu`` do. 8 warps: 256
threads, 4 elements each (the CUDA C++ equivalent's shape).
"""

from __future__ import annotations

import triton
import triton.language as tl

TILE = 32
NUM_WARPS = 8


@triton.jit
def transpose(a_ptr, b_ptr, R, C, TILE: tl.constexpr):
    i = tl.program_id(0) * TILE + tl.arange(0, TILE)
    j = tl.program_id(1) * TILE + tl.arange(0, TILE)
    mask = (i[:, None] < R) & (j[None, :] < C)
    tile = tl.load(a_ptr + i[:, None] * C + j[None, :], mask=mask)
    tl.store(b_ptr + j[:, None] * R + i[None, :], tl.trans(tile), mask=tl.trans(mask))


KERNEL = transpose
SIGNATURE = {"a_ptr": "*fp32", "b_ptr": "*fp32", "R": "i32", "C": "i32", "TILE": "constexpr"}
CONSTEXPRS = {"TILE": TILE}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` on ``examples/transpose.py``'s inputs (see ``bench/triton/saxpy.py``)."""
    R, C = inputs["a"].shape
    kernel[(triton.cdiv(R, TILE), triton.cdiv(C, TILE))](tensor(inputs["a"]), tensor(inputs["b"]), R, C,
                                                         TILE=TILE, num_warps=NUM_WARPS)
