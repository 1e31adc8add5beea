"""The 64-bit ``index`` build of the ``mma.sync`` kernels (``Compilation.wide_index``: the program
compiled with ``rolled_staging=True``, its staging a loop over the rounds of slots unrolled by
``ROLLED_UNROLL``).

Before it, the 64-bit PTX of ``conv2d_fwd_f16`` spilled 388-404 bytes at 255 registers (sm_80 /
sm_90) and ``conv2d_wgrad_f16`` 68-192 bytes: the unrolled staging held every round's coordinates
(two registers each at 64 bits) across the chunk loop. The rolled build stages the same elements
in the same order: on the CPU interpreter its results are bitwise the unrolled build's.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from kernc.api import Module
from kernc.backend import toolkit
from kernc.compiler import Compilation, CompileOptions
from kernc.passes.mma_contractions import ROLLED_UNROLL
from conftest import EXAMPLES, compiled_example
from tensor_core_helpers import fwd_inputs, wgrad_inputs

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")

_rolled: dict = {}


def rolled(name: str) -> Module:
    """``examples/NAME.kern`` compiled with ``rolled_staging=True`` (once per session)."""
    if name not in _rolled:
        path = os.path.join(EXAMPLES, f"{name}.kern")
        with open(path, encoding="utf-8") as f:
            _rolled[name] = Module(Compilation(f.read(), path, CompileOptions(rolled_staging=True)))
    return _rolled[name]


def test_the_rolled_build_loops_over_the_rounds():
    gpu = rolled("conv2d_fwd_f16")._compilation.gpu_ir()
    assert f"#llvm.loop_unroll<count = {ROLLED_UNROLL} : i64>" in gpu
    assert gpu.count("loop_annotation = #loop_annotation") == 2  # a loop per operand's staging
    assert "#llvm.loop_unroll<count" not in compiled_example("conv2d_fwd_f16")._compilation.gpu_ir()


def test_64_bit_ptx_comes_from_the_rolled_build():
    comp = compiled_example("conv2d_fwd_f16")._compilation
    wide = comp.wide_index()
    assert wide is not comp and wide.options.rolled_staging
    assert comp.ptx(64) == wide.ptx(64)
    assert comp.ptx(32) != wide.ptx(32)  # the 32-bit build keeps the unrolled staging
    # a program with no kernel on mma.sync has no other build
    saxpy = compiled_example("saxpy")._compilation
    assert saxpy.wide_index() is saxpy


def _bitwise_rolled(name: str, inputs: dict, out: str) -> None:
    """``examples/NAME`` on ``inputs``, rolled and unrolled builds: output ``out`` bit for bit."""
    got, want = ({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()} for _ in range(2))
    getattr(rolled(name), name)(**got)
    getattr(compiled_example(name), name)(**want)
    assert not np.isnan(got[out]).any()
    assert np.array_equal(got[out].view(np.uint32), want[out].view(np.uint32))


@pytest.mark.parametrize("shape", [(2, 7, 9, 5, 19, 3, 2, (2, 1), (1, 0), (1, 2)),
                                   (1, 5, 6, 33, 9, 1, 1, (2, 3), (0, 0), (1, 1))])
def test_conv2d_fwd_f16_rolled_is_bitwise_unrolled(shape):
    _bitwise_rolled("conv2d_fwd_f16", fwd_inputs(*shape), "y")


def test_conv2d_wgrad_f16_rolled_is_bitwise_unrolled():
    _bitwise_rolled("conv2d_wgrad_f16", wgrad_inputs(2, 5, 7, 7, 33, 3, 2, (1, 2), (1, 1), (2, 1)), "gw")


def test_gemm_f16_rolled_is_bitwise_unrolled():
    # 200 x 72 x 130: a partial last tile on both sides, K no multiple of the chunk
    rng = np.random.default_rng(3)
    a = rng.standard_normal((200, 72)).astype(np.float16)
    b = rng.standard_normal((72, 130)).astype(np.float16)
    got, want = (np.full((200, 130), np.nan, np.float32) for _ in range(2))
    rolled("gemm_f16").gemm_f16(a, b, got)
    compiled_example("gemm_f16").gemm_f16(a, b, want)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", ["conv2d_fwd_f16", "conv2d_wgrad_f16"])
def test_64_bit_build_does_not_spill(name, arch):
    import kernc

    comp = kernc.compile_file(os.path.join(EXAMPLES, f"{name}.kern"), arch=arch)._compilation
    result = toolkit.run_ptxas(comp.ptx(64), arch=arch)
    assert result.ok, result.log
    assert result.spills[name] == (0, 0), (result.registers[name], result.spills[name])
