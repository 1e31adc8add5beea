"""Triton version of ``examples/layernorm.kern`` (kernel ``layernorm``, the forward): per row ``r``
of ``x: f32[R, N]`` (row-major, contiguous), ``mean[r] = sum(x[r, :]) / N``, ``d = x[r, :] - mean[r]``,
``var = sum(d * d) / N`` (biased), ``rstd[r] = 1 / sqrt(var + eps)``, ``y[r, :] = d * rstd[r] * w + b``.

Written as Triton's layer-norm tutorial is, one program per row, run by 8 warps (kernc's block of
256 threads per row), the whole row in registers as one ``BLOCK``-wide vector (``BLOCK`` = the next
power of two of ``N``; the AOT compile of ``bench.triton_peer`` takes ``BLOCK = 4096``, the GPU
bench's row: see ``bench/triton/softmax.py``), masked loads with ``0`` and ``d`` zeroed past the
row so it adds nothing to ``var``. The operations and their rounding are the kernel's:
``tl.div_rn`` and ``tl.sqrt_rn`` (IEEE ``div.rn.f32`` and ``sqrt.rn.f32``, as kernc's ``/`` and
``sqrt``; Triton's ``/`` and ``tl.sqrt`` on f32 are approximate), ``(d * rstd) * w + b`` in that order.
Only the order of ``tl.sum``'s adds is Triton's own (a tree), so the results may differ from
kernc's CPU run in the last bits (``tests/bench/test_triton_equivalents.py``'s :data:`ULPS`).
The backward (``layernorm_bwd``) has no Triton version; the bench compiles the forward.
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 4096
NUM_WARPS = 8


@triton.jit
def layernorm(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, eps, N, BLOCK: tl.constexpr):
    r = tl.program_id(0)
    row = r.to(tl.int64) * N
    j = tl.arange(0, BLOCK)
    mask = j < N
    x = tl.load(x_ptr + row + j, mask=mask, other=0.0)
    m = tl.div_rn(tl.sum(x, axis=0), N.to(tl.float32))
    d = tl.where(mask, x - m, 0.0)
    var = tl.div_rn(tl.sum(d * d, axis=0), N.to(tl.float32))
    s = tl.div_rn(1.0, tl.sqrt_rn(var + eps))
    tl.store(mean_ptr + r, m)
    tl.store(rstd_ptr + r, s)
    w = tl.load(w_ptr + j, mask=mask, other=0.0)
    b = tl.load(b_ptr + j, mask=mask, other=0.0)
    tl.store(y_ptr + row + j, d * s * w + b, mask=mask)


KERNEL = layernorm
SIGNATURE = {"x_ptr": "*fp32", "w_ptr": "*fp32", "b_ptr": "*fp32", "y_ptr": "*fp32", "mean_ptr": "*fp32",
             "rstd_ptr": "*fp32", "eps": "fp32", "N": "i32", "BLOCK": "constexpr"}
CONSTEXPRS = {"BLOCK": BLOCK}


def launch(kernel, inputs: dict, tensor) -> None:
    """Run ``kernel`` on ``examples/layernorm.py``'s inputs (see ``bench/triton/saxpy.py``): one
    program per row, ``BLOCK`` the next power of two of the row length ``N``."""
    R, N = inputs["x"].shape
    if R * N == 0:
        return
    kernel[(R,)](tensor(inputs["x"]), tensor(inputs["w"]), tensor(inputs["b"]), tensor(inputs["y"]),
                 tensor(inputs["mean"]), tensor(inputs["rstd"]), float(inputs["eps"]), N,
                 BLOCK=triton.next_power_of_2(N), num_warps=NUM_WARPS)
