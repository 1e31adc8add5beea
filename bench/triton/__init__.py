"""Triton versions of kernc's examples, the peer of ``python -m bench``'s compile-latency and
code-quality tables (compiled ahead of time by ``bench.triton_peer``; no GPU needed).

One module per example, ``bench/triton/NAME.py``, named as ``examples/NAME.kern`` and computing
what it computes (checked against ``examples/NAME.py`` under Triton's interpreter by
``tests/bench/test_triton_equivalents.py``). Each module defines:

- ``KERNEL``: the ``@triton.jit`` kernel, written as a Triton user writes it (``tl.load`` and
  ``tl.store`` with masks, a ``BLOCK`` constexpr), with the threads per program of kernc's kernel
  (``NUM_WARPS``);
- ``SIGNATURE`` and ``CONSTEXPRS``: the argument types and constants for
  ``triton.compiler.ASTSource``;
- ``launch(kernel, inputs, tensor)``: runs the kernel on the arguments of ``make_inputs`` of
  ``examples/NAME.py``.

Importing this package does not import Triton; the example modules do.
"""

from __future__ import annotations

import importlib
import os

HERE = os.path.dirname(os.path.abspath(__file__))

#: Examples without a Triton version, and why (where the strategy differs from kernc's, the
#: module's docstring says how).
NOT_COMPARABLE: dict[str, str] = {
    "gemm": ("a Triton GEMM is written with tl.dot, whose reduction order (and, by default, TF32 "
             "inputs) is not the kernel's k-ascending sum; the hand-written tiled CUDA C++ gemm is "
             "the reference"),
    "gemm_f16": ("Triton's tl.dot on tensor cores sums in its own order, not the kernel's (and the CPU "
                 "interpreter's) k-ascending f32 sum; on a GPU the bench compares gemm_f16 with cuBLAS "
                 "(cupy.matmul f16)"),
    "gemm_bf16": "as gemm_f16: tl.dot's order is not the k-ascending sum; cuBLAS is the GPU reference",
    "conv2d_fwd_f16": ("as gemm_f16: a Triton implicit GEMM sums with tl.dot in its own order; on a GPU the bench "
                       "compares it with the cuBLAS time of its im2col GEMM (cupy.matmul f16)"),
    "conv2d_wgrad_f16": "as conv2d_fwd_f16: the cuBLAS time of its im2col GEMM is the GPU reference",
    "gemm_tf32": ("as gemm_f16: tl.dot with TF32 inputs sums in its own order, not the kernel's k-ascending "
                  "f32 sum of the TF32-rounded operands; cuBLAS (TF32) is the GPU reference"),
}


def examples() -> list[str]:
    """The examples with a Triton version (``bench/triton/NAME.py``), sorted."""
    return sorted(f[:-3] for f in os.listdir(HERE) if f.endswith(".py") and not f.startswith("_"))


def load(name: str):
    """The module ``bench/triton/NAME.py`` (imports Triton); ``_warmup`` is the kernel of Triton's
    untimed first compile. ``KeyError`` for an example without one."""
    if name not in examples() and name != "_warmup":
        raise KeyError(f"no Triton version of example '{name}' in {HERE}")
    return importlib.import_module(f"{__name__}.{name}")
