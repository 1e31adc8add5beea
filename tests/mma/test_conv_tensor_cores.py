"""``kern-mma-contractions`` on the convolutions: ``examples/conv2d_fwd_f16.kern`` (a loop nest over
``(r, s, c)``, side ``i`` the flattened ``(n, oh, ow)``, the input through the checked im2col view)
and ``examples/conv2d_wgrad_f16.kern`` (side ``j`` the flattened ``(r, s, c)``, the K x M
output-gradient view staged along k into rows of m: ``ldmatrix.trans`` for A) on the CPU
interpreter's ``mma.sync`` against numpy (f64 within 1e-3 relative scaled by sqrt(K), and the
interpreter's documented f32 order bit for bit), odd extents in every coordinate, the fallbacks and
their remarks, ``--no-tensor-cores``, and the PTX through ``ptxas``.

Before the loop nests were taken, compiling ``conv2d_fwd_f16`` was an internal compiler error in
``kern-mma-contractions`` (its match read the nest's outer body as the innermost one)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kernc
from kernc.backend import toolkit
from conftest import EXAMPLES, compiled_example, example_reference
from tensor_core_helpers import (FWD, WGRAD, check_fwd, check_wgrad, copy_inputs, fwd_inputs, wgrad_inputs,
                                 within_f64)

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")


@pytest.mark.parametrize("shape", FWD, ids=lambda s: "x".join(map(str, s[:7])))
def test_conv2d_fwd_on_tensor_cores_matches_numpy(shape):
    mod = compiled_example("conv2d_fwd_f16")
    assert mod._compilation.signatures["conv2d_fwd_f16"].tiles == [["N*OH*OW", 128], ["K", 128]]
    inputs = fwd_inputs(*shape)
    N, OH, OW, K = inputs["y"].shape
    result = mod.conv2d_fwd_f16(**copy_inputs(inputs))
    assert result.grid == -(-(N * OH * OW) // 128) * -(-K // 128)  # one block per 128x128 tile
    check_fwd(mod, inputs)


@pytest.mark.parametrize("shape", WGRAD, ids=lambda s: "x".join(map(str, s[:7])))
def test_conv2d_wgrad_on_tensor_cores_matches_numpy(shape):
    mod = compiled_example("conv2d_wgrad_f16")
    assert mod._compilation.signatures["conv2d_wgrad_f16"].tiles == [["K", 128], ["C*R*S", 128]]
    inputs = wgrad_inputs(*shape)
    K, R, S, C = inputs["gw"].shape
    result = mod.conv2d_wgrad_f16(**copy_inputs(inputs))
    assert result.grid == -(-K // 128) * -(-(R * S * C) // 128)
    check_wgrad(mod, inputs)


def _remarks(text, capsys, **kw):
    from kernc.compiler import Compilation, CompileOptions

    Compilation(text, "t.kern", CompileOptions(remarks=True, **kw), use_cache=False)
    return capsys.readouterr().err


def _source(name):
    return open(os.path.join(EXAMPLES, f"{name}.kern"), encoding="utf-8").read()


def test_remarks_say_tensor_cores_and_how_each_view_is_staged(capsys):
    err = _remarks(_source("conv2d_fwd_f16"), capsys)
    assert ("'conv2d_fwd_f16' on tensor cores: 128x128 block tiles in chunks of 32 of k" in err
            and "x of '(n, oh, ow)': 128x32, k contiguous, ldmatrix.x4;" in err
            and "w of 'k': 128x32, k contiguous, ldmatrix.x2)" in err
            and "its nest of 3 loops runs as one k, innermost fastest" in err), err
    assert "tiling 'conv2d_fwd_f16'" not in err  # (kern-tile-contractions has nothing left to tile)
    err = _remarks(_source("conv2d_wgrad_f16"), capsys)
    assert ("'conv2d_wgrad_f16' on tensor cores" in err
            and "dy of 'k': 32x128, 'k' contiguous, ldmatrix.x4.trans;" in err
            and "x of '(r, s, c)': 32x128, '(r, s, c)' contiguous, ldmatrix.x2.trans)" in err), err


@needs_ptxas
@pytest.mark.parametrize("name, a, b", [("conv2d_fwd_f16", "x4", "x2"), ("conv2d_wgrad_f16", "x4.trans", "x2.trans")])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])  # (sm_90a: wgmma, tests/wgmma/test_wgmma_convolutions.py)
def test_ptx_has_mma_and_ldmatrix_and_assembles_without_spills(name, a, b, arch):
    ptx = kernc.compile_file(os.path.join(EXAMPLES, f"{name}.kern"), arch=arch).ptx
    assert ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 32  # 4x4 fragments, 2 k16 steps
    assert ptx.count(f"ldmatrix.sync.aligned.m8n8.{a}.shared.b16") == 8
    assert ptx.count(f"ldmatrix.sync.aligned.m8n8.{b}.shared.b16") == 8
    assert ptx.count("ldmatrix") == 16
    result = toolkit.run_ptxas(ptx, arch=arch)
    assert result.ok, result.log
    assert result.spills[name] == (0, 0), result.log
    assert result.registers[name] <= 255


def test_staging_and_ldmatrix_are_bank_conflict_free_in_both_orientations():
    """fwd stages both reads k contiguous (w's rows of k read by plain ldmatrix.x2), wgrad both
    rows of their tile coordinate (dy's by ldmatrix.x4.trans): the warps' stores and the ldmatrix
    phases hit distinct banks either way."""
    fwd = compiled_example("conv2d_fwd_f16").conv2d_fwd_f16(
        **fwd_inputs(2, 7, 9, 5, 19, 3, 2, (2, 1), (1, 0), (1, 2))).stats
    wgrad = compiled_example("conv2d_wgrad_f16").conv2d_wgrad_f16(
        **wgrad_inputs(2, 5, 7, 7, 33, 3, 2, (1, 2), (1, 1), (2, 1))).stats
    for stats in (fwd, wgrad):
        assert stats.shared_requests > 0 and stats.shared_bank_conflicts == 0


@pytest.mark.parametrize("name", ["conv2d_fwd_f16", "conv2d_wgrad_f16"])
def test_cuda_cores_and_untiled_give_the_same_sums(name):
    """On the CPU every build sums in the kernel's order: tensor cores, --no-tensor-cores (the
    CUDA-core tiles) and --no-tile --no-tensor-cores agree bit for bit."""
    ref = example_reference(name)
    inputs = ref.make_inputs(4097, np.random.default_rng(5))
    out = next(iter(ref.reference(copy_inputs(inputs))))
    path = os.path.join(EXAMPLES, f"{name}.kern")
    got = []
    for mod in (compiled_example(name), kernc.compile_file(path, tensor_cores=False),
                kernc.compile_file(path, tensor_cores=False, tile=False)):
        args = copy_inputs(inputs)
        getattr(mod, name)(**args)
        got.append(args[out])
    assert "nvgpu" not in kernc.compile_file(path, tensor_cores=False)._compilation.gpu_ir()
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_array_equal(got[0], got[2])


def test_f32_convolution_stays_on_cuda_cores_with_a_remark(capsys):
    err = _remarks(_source("conv2d_fwd"), capsys)
    assert "not using tensor cores for 'conv2d_fwd': its operands are f32" in err
    assert "tiling 'conv2d_fwd' as 64x64x16" in err


def test_another_nest_body_falls_back_with_a_remark(capsys):
    """A nest whose body is not 'acc += a * b' (here each product halved) keeps the CUDA-core tiles,
    says why, and is right: half the convolution (exact in binary)."""
    text = _source("conv2d_fwd_f16").replace("* w[k, r, s, c];", "* w[k, r, s, c] * 0.5;")
    assert text != _source("conv2d_fwd_f16")
    err = _remarks(text, capsys)
    assert "not using tensor cores for 'conv2d_fwd_f16': its loop body is not 'acc += a * b'" in err
    assert "tiling 'conv2d_fwd_f16' as 64x64x16" in err
    mod = kernc.compile(text)
    inputs = fwd_inputs(2, 7, 9, 5, 19, 3, 2, (2, 1), (1, 0), (1, 2))
    args = copy_inputs(inputs)
    mod.conv2d_fwd_f16(**args)
    want = example_reference("conv2d_fwd_f16").reference(copy_inputs(inputs))["y"]
    np.testing.assert_array_equal(args["y"], want * np.float32(0.5))


def test_sm_75_convolution_stays_on_cuda_cores(capsys):
    err = _remarks(_source("conv2d_wgrad_f16"), capsys, arch="sm_75")
    assert "sm_75 has no mma.sync m16n8k16" in err
    assert "tiling 'conv2d_wgrad_f16' as 64x64x16" in err


@pytest.mark.gpu
@pytest.mark.parametrize("shape", FWD[:2], ids=lambda s: "x".join(map(str, s[:7])))
def test_conv2d_fwd_on_gpu_tensor_cores_matches_numpy(shape):
    """The same semantics on a GPU's tensor cores (CPU: test_conv2d_fwd_on_tensor_cores_matches_numpy):
    within 1e-3 relative (scaled by sqrt(K)) of the f64 convolution."""
    import cupy as cp

    ref = example_reference("conv2d_fwd_f16")
    mod = compiled_example("conv2d_fwd_f16")
    assert "mma.sync.aligned.m16n8k16" in mod.ptx
    inputs = fwd_inputs(*shape)
    args = {k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    assert mod.conv2d_fwd_f16(**args).device == "cuda"
    cp.cuda.runtime.deviceSynchronize()
    OH, OW, stride, pad, dil = ref._geometry(inputs)
    want = ref.conv2d_f64(inputs["x"], inputs["w"], OH, OW, stride, pad, dil)
    scale = ref.conv2d_f64(np.abs(inputs["x"]), np.abs(inputs["w"]), OH, OW, stride, pad, dil)
    within_f64(args["y"].get(), want, scale, int(np.prod(inputs["w"].shape[1:])))


@pytest.mark.gpu
@pytest.mark.parametrize("shape", WGRAD[:2], ids=lambda s: "x".join(map(str, s[:7])))
def test_conv2d_wgrad_on_gpu_tensor_cores_matches_numpy(shape):
    """GPU twin of test_conv2d_wgrad_on_tensor_cores_matches_numpy (within the f64 bound)."""
    import cupy as cp

    ref = example_reference("conv2d_wgrad_f16")
    mod = compiled_example("conv2d_wgrad_f16")
    inputs = wgrad_inputs(*shape)
    args = {k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    assert mod.conv2d_wgrad_f16(**args).device == "cuda"
    cp.cuda.runtime.deviceSynchronize()
    geo = ref._geometry(inputs)
    want = ref.wgrad_f64(inputs["x"], inputs["dy"], *geo)
    scale = ref.wgrad_f64(np.abs(inputs["x"]), np.abs(inputs["dy"]), *geo)
    within_f64(args["gw"].get(), want, scale, inputs["dy"].shape[0])
