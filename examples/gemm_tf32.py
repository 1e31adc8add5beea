"""NumPy reference of ``examples/gemm_tf32.kern`` (kernel ``gemm_tf32``): ``c = a @ b`` of f32
inputs rounded to TF32, f32 sums.

:func:`round_tf32` is ``cvt.rna.tf32.f32`` (PTX ISA 9.7.9.21: to nearest, ties away from zero, 10
mantissa bits kept; a NaN the quiet NaN ``0x7fc00000``), as ``kern-mma-contractions`` rounds the
staged operands. :func:`gemm_f32_sums` of the rounded operands sums ``k`` ascending in float32 (each
product of two 11-bit significands exact): the CPU interpreter's ``mma.sync`` order, so on the CPU
the kernel matches it bit for bit. A GPU's tensor cores add in an order of their own: compare with
:func:`gemm_f64` of the rounded operands within a tolerance (1e-3 relative, scaled by ``sqrt(K)``).
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_f16 import GPU_TOLERANCE, gemm_f32_sums, gemm_f64  # noqa: E402, F401
from gemm_f16 import make_inputs as _make_inputs  # noqa: E402


def round_tf32(x: np.ndarray) -> np.ndarray:
    """``float32`` ``x`` rounded to TF32 (still stored as float32): ``(bits + 0x1000) & ~0x1fff``."""
    x = np.asarray(x, np.float32)
    bits = (x.view(np.uint32).astype(np.uint64) + 0x1000) & 0xFFFFE000
    out = bits.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), np.uint32(0x7FC00000).view(np.float32), out)


def make_inputs(P: int, rng: np.random.Generator) -> dict:
    return _make_inputs(P, rng, np.float32)


def reference(inputs: dict) -> dict:
    return {"c": gemm_f32_sums(round_tf32(inputs["a"]), round_tf32(inputs["b"]))}
