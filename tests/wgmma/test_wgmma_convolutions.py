"""kern-wgmma-contractions on the f16 convolutions (``sm_90a``): a loop nest collapsed into one
``k`` (conv2d_fwd_f16's ``(r, s, c)``) and flattened sides (conv2d_fwd_f16's rows ``(n, oh, ow)``,
conv2d_wgrad_f16's columns ``(r, s, c)``), each side's flattened index split back into its
coordinates in the staging and the epilogue, as kern-mma-contractions does.

Before, the pass built one loop over the last two coordinates only, and the convolutions stayed on
mma.sync on ``sm_90a`` (a remark said so). On the CPU interpreter the wgmma results are within
1e-3 x sqrt(K) of f64 and bit for bit the interpreter's documented order ((r, s, c) ascending from 0
in f32, exact products) -- the same sums as the mma.sync build of ``sm_90``.
"""

from __future__ import annotations

import os

import pytest

import kernc
from kernc.backend import toolkit
from kernc.compiler import Compilation, CompileOptions
from conftest import EXAMPLES
from tensor_core_helpers import FWD, WGRAD, check_fwd, check_wgrad, copy_inputs, fwd_inputs, wgrad_inputs

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
_modules: dict = {}


def _sm90a(name: str):
    if name not in _modules:
        _modules[name] = kernc.compile_file(os.path.join(EXAMPLES, f"{name}.kern"), arch="sm_90a")
    return _modules[name]


@pytest.mark.parametrize("shape", FWD, ids=lambda s: "x".join(map(str, s[:7])))
def test_conv2d_fwd_f16_on_wgmma_matches_numpy(shape):
    mod = _sm90a("conv2d_fwd_f16")
    assert mod._compilation.tensor_core_kernels() == {"conv2d_fwd_f16": "wgmma"}
    assert mod._compilation.signatures["conv2d_fwd_f16"].tiles == [["N*OH*OW", 128], ["K", 128]]
    inputs = fwd_inputs(*shape)
    N, OH, OW, K = inputs["y"].shape
    result = mod.conv2d_fwd_f16(**copy_inputs(inputs))
    assert result.tensor_cores == "wgmma"
    assert result.grid == -(-(N * OH * OW) // 128) * -(-K // 128)
    check_fwd(mod, inputs)


@pytest.mark.parametrize("shape", WGRAD, ids=lambda s: "x".join(map(str, s[:7])))
def test_conv2d_wgrad_f16_on_wgmma_matches_numpy(shape):
    mod = _sm90a("conv2d_wgrad_f16")
    assert mod._compilation.tensor_core_kernels() == {"conv2d_wgrad_f16": "wgmma"}
    assert mod._compilation.signatures["conv2d_wgrad_f16"].tiles == [["K", 128], ["C*R*S", 128]]
    check_wgrad(mod, wgrad_inputs(*shape))


def test_remark_says_wgmma_for_the_convolutions(capsys):
    for name in ("conv2d_fwd_f16", "conv2d_wgrad_f16"):
        text = open(os.path.join(EXAMPLES, f"{name}.kern"), encoding="utf-8").read()
        comp = Compilation(text, "t.kern", CompileOptions(remarks=True, arch="sm_90a"), use_cache=False)
        gpu_ir, err = comp.gpu_ir(), capsys.readouterr().err
        assert gpu_ir.count("nvvm.wgmma.mma_async") == 4 and "nvgpu.mma.sync" not in gpu_ir
        assert f"remark: '{name}' on sm_90a warpgroup tensor cores: 128x128 block tiles" in err
        assert "not using wgmma" not in err


def test_tma_takes_both_convolutions(capsys):
    """Under --tma conv2d_fwd_f16's x comes by im2col-mode copies and its w by 2-d boxes over the
    flattened (r, s, c); conv2d_wgrad_f16's dy (k-contiguous: its rows) by MN-major boxes and its x
    by im2col-mode copies into its MN-major tile (tests/tma/test_conv2d_tma.py): no per-thread
    stores in either."""
    for name, maps, declined in (("conv2d_fwd_f16", ["__tma_x", "__tma_w"], 0),
                                 ("conv2d_wgrad_f16", ["__tma_dy", "__tma_x"], 0)):
        text = open(os.path.join(EXAMPLES, f"{name}.kern"), encoding="utf-8").read()
        comp = Compilation(text, "t.kern", CompileOptions(remarks=True, arch="sm_90a", tma=True), use_cache=False)
        err = capsys.readouterr().err
        assert comp.tensor_core_kernels() == {name: "wgmma"}
        assert [p.name for p in comp.signatures[name].extra if p.kind == "tensor_map"] == maps
        assert err.count("not loaded by TMA") == declined, err


@needs_ptxas
@pytest.mark.parametrize("index_bits", [32, 64])
@pytest.mark.parametrize("name", ["conv2d_fwd_f16", "conv2d_wgrad_f16"])
def test_wgmma_convolutions_assemble_without_spills(name, index_bits):
    result = toolkit.run_ptxas(_sm90a(name)._compilation.ptx(index_bits), arch="sm_90a")
    assert result.ok, result.log
    assert result.spills[name] == (0, 0), (result.registers[name], result.spills[name])
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in _sm90a(name)._compilation.ptx(index_bits)
