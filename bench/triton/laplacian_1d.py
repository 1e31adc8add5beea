"""Triton version of ``examples/laplacian_1d.kern``: with ``d[t] = k[t] * (u[t+1] - u[t])`` for
every edge ``t < n``, ``out[t] -= d[t]`` and ``out[t+1] += d[t]``.

kernc runs one thread per edge and exchanges neighbours through shared memory (``pair``); Triton
has no exchange between the lanes of a block other than whole-tile operations, so a Triton user
writes the stencil per node instead: node ``j <= n`` computes the ``d`` of both its edges from
shifted loads (``d[j-1]`` where ``j >= 1``, ``d[j]`` where ``j < n``) and updates ``out[j]`` with
one load and one store, no atomics. The result is the same sum (``out[j] + (d[j-1] - d[j])``);
the example's values are exact in float32 in any order. One program per 256 nodes, 8 warps.
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 256
NUM_WARPS = 8


@triton.jit
def laplacian_1d(u_ptr, k_ptr, out_ptr, n, BLOCK: tl.constexpr):
    j = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    node = j <= n
    left = node & (j > 0)  # edge j - 1 ends at node j
    right = j < n  # edge j starts at node j
    u = tl.load(u_ptr + j, mask=node, other=0.0)
    d_left = tl.load(k_ptr + j - 1, mask=left, other=0.0) * (u - tl.load(u_ptr + j - 1, mask=left, other=0.0))
    d_right = tl.load(k_ptr + j, mask=right, other=0.0) * (tl.load(u_ptr + j + 1, mask=right, other=0.0) - u)
    out = tl.load(out_ptr + j, mask=node)
    tl.store(out_ptr + j, out + (d_left - d_right), mask=node)


KERNEL = laplacian_1d
SIGNATURE = {"u_ptr": "*fp32", "k_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
CONSTEXPRS = {"BLOCK": BLOCK}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` on ``examples/laplacian_1d.py``'s inputs (see ``bench/triton/saxpy.py``)."""
    n = inputs["k"].size
    kernel[(triton.cdiv(n + 1, BLOCK),)](tensor(inputs["u"]), tensor(inputs["k"]), tensor(inputs["out"]), n,
                                         BLOCK=BLOCK, num_warps=NUM_WARPS)
