"""What the multi-stage TMA tests share: gemm sources on 1 warpgroup (``@block(128)``: 64-row tiles,
so that 2 and 3 stages fit in 48 KiB), their gpu IR under options and ``kern-wgmma-contractions``
overrides (``block_n``), and a runner of that IR on the CPU interpreter with tensor maps over
row-padded copies of the operands (so that any K, not only multiples of 8, runs with TMA)."""

from __future__ import annotations

import functools

import numpy as np

GEMM = """@block(128)
kernel gemm(a: T[M, K] view, b: T[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for k in 0..K {
        acc += a[i, k] * b[k, j];
    }
    c[i, j] = acc;
}
"""

#: a transposed b: both operands k-contiguous, both loaded by K-major boxes (GEMM's b: MN-major boxes)
GEMM_NT = GEMM.replace("b: T[K, N]", "b: T[N, K]").replace("b[k, j]", "b[j, k]")

#: a loop from lo to the views' k extent K (empty for lo >= K, a chunk tail for lo % 64)
GEMM_FROM = GEMM_NT.replace("c: f32[M, N] view)", "c: f32[M, N] view, lo: index)").replace("0..K", "lo..K")

#: a loop that ends before the views' k extent K (hi < K): not a box of the views (no TMA)
GEMM_TO = GEMM_FROM.replace("lo: index", "hi: index").replace("lo..K", "0..hi")

SOURCES = {"nn": GEMM, "nt": GEMM_NT, "from": GEMM_FROM, "to": GEMM_TO}


def dtype_of(elem: str):
    import ml_dtypes

    return {"f16": np.float16, "bf16": ml_dtypes.bfloat16}[elem]


@functools.cache
def gpu_ir(kind: str, elem: str = "f16", block_n: int | None = None, remarks: bool = False, **options) -> str:
    """The gpu IR text of :data:`SOURCES` ``[kind]`` with operands of ``elem`` under
    ``CompileOptions(arch="sm_90a", **options)``, ``kern-wgmma-contractions``' ``block_n`` set to
    ``block_n`` if given (compiled once per arguments, no compile cache)."""
    return compilation(kind, elem, block_n, remarks, **options).gpu_ir()


def compilation(kind: str, elem: str = "f16", block_n: int | None = None, remarks: bool = False, **options):
    """The :class:`~kernc.compiler.Compilation` :func:`gpu_ir` reads (not cached)."""
    import pytest

    from kernc.compiler import Compilation, CompileOptions
    from tensor_core_helpers import narrow_block_n

    src = SOURCES[kind].replace("T[", f"{elem}[")
    with pytest.MonkeyPatch.context() as mp:
        if block_n is not None:
            narrow_block_n(mp, block_n)
        comp = Compilation(src, f"{kind}.kern", CompileOptions(arch="sm_90a", remarks=remarks, **options),
                           use_cache=False)
        comp.gpu_ir()
    return comp


def inputs(kind: str, M: int, K: int, N: int, elem: str = "f16", seed: int = 0):
    """Standard-normal ``a`` (M x K) and ``b`` (K x N, or N x K for the others) of ``elem``."""
    rng = np.random.default_rng(seed + 7 * M + 5 * K + N)
    dt = dtype_of(elem)
    a = rng.standard_normal((M, K)).astype(dt)
    b = rng.standard_normal((K, N) if kind == "nn" else (N, K)).astype(dt)
    return a, b


def _map(x, elem: str, rows: int):
    """A tensor map over ``x`` (R x K, k-contiguous) with its rows padded to 16 bytes (a copy): the
    box ``64 x rows``, the 128B swizzle, zeros out of bounds."""
    from kernc.backend.tensor_map import TensorMap

    R, K = x.shape
    kp = max(8, -(-K // 8) * 8)
    pad = np.zeros((R, kp), x.dtype)
    pad[:, :K] = x
    return TensorMap(elem, dims=(K, R), strides=(2 * kp,), box=(64, rows), swizzle=128, array=pad.reshape(-1))


def _mn_map(x, elem: str):
    """A tensor map over ``x`` (K x N, n-contiguous: the ``nn`` kind's b) with its rows padded to 16
    bytes (a copy): the box ``64 x 64`` (n x k) of an MN-major tile's 64-row block."""
    from kernc.backend.tensor_map import TensorMap

    K, N = x.shape
    np_ = max(8, -(-N // 8) * 8)
    pad = np.zeros((K, np_), x.dtype)
    pad[:, :N] = x
    return TensorMap(elem, dims=(N, K), strides=(2 * np_,), box=(64, 64), swizzle=128, array=pad.reshape(-1))


def run(text: str, kind: str, a, b, elem: str = "f16", grid: int = 1, bounds=(), tma_rows=(64, 128)):
    """Run gemm IR ``text`` on the interpreter (``grid`` blocks of 128 threads): ``c`` (M x N f32,
    NaN before). Its hidden tensor-map arguments (one per ``__tma_`` parameter, in order: a's with
    ``tma_rows[0]`` rows, b's with ``tma_rows[1]``, or, ``nn``, b's MN-major 64 x 64 boxes) map
    row-padded copies of ``a`` and ``b``.
    ``bounds``: the scalar arguments (``lo`` of ``from``, ``hi`` of ``to``). Raises what the interpreter raises."""
    from kernc.backend.interpreter import Interpreter
    from kernc.compiler import context
    from kernc.support.mlir import ir

    M, K = a.shape
    N = b.shape[1] if kind == "nn" else b.shape[0]
    maps = []
    with context():
        it = Interpreter(ir.Module.parse(text))
    n_maps = _count_map_args(text)
    if n_maps >= 1:
        maps.append(_map(a, elem, tma_rows[0]))
    if n_maps >= 2:  # (nn: b's MN-major boxes)
        maps.append(_mn_map(b, elem) if kind == "nn" else _map(b, elem, tma_rows[1]))
    c = np.full(M * N, np.nan, np.float32)
    it.run("gemm", grid, 128, [a.reshape(-1), b.reshape(-1), c, *bounds, M, K, N, *maps])
    return c.reshape(M, N)


def _count_map_args(text: str) -> int:
    """The ``!llvm.ptr`` (tensor map) arguments of the kernel ``gemm`` in ``text``."""
    head = text[text.index("gpu.func @gemm("):]
    head = head[:head.index(")")]
    return head.count("!llvm.ptr")
