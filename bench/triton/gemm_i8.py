"""Triton version of ``examples/gemm_i8.kern``: ``c = a @ b`` of i8 matrices with i32 sums.

Written as a Triton user writes a GEMM: one program per ``BLOCK_M x BLOCK_N`` tile of ``c``
(128 x 128, 8 warps: kernc's tensor-core tile and block), ``tl.dot`` of int8 ``BLOCK_K = 32``
slices accumulating in int32 (integer tensor cores). Integer sums are exact, so the order of
``tl.dot``'s sum does not change the result.
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 32
NUM_WARPS = 8


@triton.jit
def gemm_i8(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    i = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    j = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + i[:, None] * K + k[None, :], mask=(i[:, None] < M) & (k[None, :] < K), other=0)
        b = tl.load(b_ptr + k[:, None] * N + j[None, :], mask=(k[:, None] < K) & (j[None, :] < N), other=0)
        acc = tl.dot(a, b, acc, out_dtype=tl.int32)
    tl.store(c_ptr + i[:, None] * N + j[None, :], acc, mask=(i[:, None] < M) & (j[None, :] < N))


KERNEL = gemm_i8
SIGNATURE = {"a_ptr": "*i8", "b_ptr": "*i8", "c_ptr": "*i32", "M": "i32", "N": "i32", "K": "i32",
             "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"}
CONSTEXPRS = {"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` on ``examples/gemm_i8.py``'s inputs (see ``bench/triton/saxpy.py``)."""
    M, K = inputs["a"].shape
    N = inputs["b"].shape[1]
    kernel[(triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))](
        tensor(inputs["a"]), tensor(inputs["b"]), tensor(inputs["c"]), M, N, K,
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=NUM_WARPS)
