"""Triton version of ``examples/edge_update.kern``: for every edge ``e < E``, ``p = pos[src[e]]``
(a 3-vector), ``force[dst[e]] += w[e] * p`` (duplicate ``dst`` entries summed) and
``energy[0] += w[e] * |p|^2``. ``pos`` and ``force`` are ``(V, 4)`` arrays whose column 3 is
padding.

What a Triton user writes, not kernc's strategy: kernc stages the gather through shared memory
(``shared(src)``) and sums each block's contributions per distinct ``dst`` before one atomic each
(``shared_sum(dst)``), both driven by per-block tables its launcher builds; Triton has no such
accessors, so each edge loads its ``pos`` row (one 16-byte load, the padding column zeroed) and
adds its three components with relaxed atomics (the memory order of CUDA's ``atomicAdd``), and the
block's energy is reduced with ``tl.sum`` before one atomic per program. One program per 256
edges, 8 warps.
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 256
NUM_WARPS = 8


@triton.jit
def edge_update(pos_ptr, src_ptr, dst_ptr, w_ptr, force_ptr, energy_ptr, E, BLOCK: tl.constexpr):
    e = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = e < E
    src = tl.load(src_ptr + e, mask=mask, other=0)
    dst = tl.load(dst_ptr + e, mask=mask, other=0)
    w = tl.load(w_ptr + e, mask=mask, other=0.0)
    col = tl.arange(0, 4)
    xyz = col[None, :] < 3
    p = tl.load(pos_ptr + src[:, None] * 4 + col[None, :], mask=mask[:, None], other=0.0)
    p = tl.where(xyz, p, 0.0)
    tl.atomic_add(force_ptr + dst[:, None] * 4 + col[None, :], w[:, None] * p, mask=mask[:, None] & xyz,
                  sem="relaxed")
    tl.atomic_add(energy_ptr, tl.sum(w * tl.sum(p * p, axis=1), axis=0), sem="relaxed")


KERNEL = edge_update
SIGNATURE = {"pos_ptr": "*fp32", "src_ptr": "*u32", "dst_ptr": "*u32", "w_ptr": "*fp32", "force_ptr": "*fp32",
             "energy_ptr": "*fp32", "E": "i32", "BLOCK": "constexpr"}
CONSTEXPRS = {"BLOCK": BLOCK}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` on ``examples/edge_update.py``'s inputs (see ``bench/triton/saxpy.py``)."""
    E = inputs["src"].size
    kernel[(triton.cdiv(E, BLOCK),)](
        tensor(inputs["pos"]), tensor(inputs["src"]), tensor(inputs["dst"]), tensor(inputs["w"]),
        tensor(inputs["force"]), tensor(inputs["energy"]), E, BLOCK=BLOCK, num_warps=NUM_WARPS)
