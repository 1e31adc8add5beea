"""Triton version of ``examples/softmax.kern``: ``y[r, :] = exp(x[r, :] - m) / sum(exp(x[r, :] - m))``
with ``m = max(x[r, :])``, for every row ``r`` of ``x: f32[R, N]`` (row-major, contiguous).

Written as Triton's fused-softmax tutorial: one program per row, run by 8 warps (kernc's block
of 256 threads per row, kern-map-groups), the whole row in registers as one ``BLOCK``-wide vector
(``BLOCK`` = the next power of two of ``N``, so every ``N`` is its own compile, as Triton's JIT
specialises; the AOT compile of ``bench.triton_peer`` takes ``BLOCK = 4096``, the GPU bench's row
and kernc's largest register-resident row: 16 values per thread), masked loads with ``-inf``
(neutral for ``tl.max``; ``exp(-inf) = 0`` for ``tl.sum``). The division is ``tl.div_rn`` (IEEE
``div.rn.f32``, as kernc's ``/``; Triton's ``/`` on f32 is the approximate ``div.full.f32``).

``tl.sum`` adds the row in its own tree order, not kernc's, so ``s`` (and ``y``) may differ from
kernc's CPU run in the last bits (``tests/bench/test_triton_equivalents.py``'s :data:`ULPS`);
``tl.max`` is exact in any order.
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 4096
NUM_WARPS = 8


@triton.jit
def softmax(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) * N
    j = tl.arange(0, BLOCK)
    mask = j < N
    x = tl.load(x_ptr + row + j, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    s = tl.sum(e, axis=0)
    tl.store(y_ptr + row + j, tl.div_rn(e, s), mask=mask)


KERNEL = softmax
SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "N": "i32", "BLOCK": "constexpr"}
CONSTEXPRS = {"BLOCK": BLOCK}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` on ``examples/softmax.py``'s inputs (see ``bench/triton/saxpy.py``): one
    program per row, ``BLOCK`` the next power of two of the row length ``N``."""
    R, N = inputs["x"].shape
    if R * N == 0:
        return
    kernel[(R,)](tensor(inputs["x"]), tensor(inputs["y"]), N, BLOCK=triton.next_power_of_2(N),
                 num_warps=NUM_WARPS)
