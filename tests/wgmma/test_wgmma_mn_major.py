"""kern-wgmma-contractions' MN-major staging of an operand whose read's lanes run along its rows
(the gemms' ``b[k, j]``, both of conv2d_wgrad_f16's): on the CPU interpreter bitwise the K-major
build (``wgmma_mn_major=False``), its staging stores free of the K-major build's 4-way bank
conflicts (measured: gemm 130x100x70 3072 -> 0; conv2d_wgrad_f16 (2,5,7,7,33,3,2) 3072 -> 0), the
op's layoutB ``row`` (``imm-trans-b`` 1 in the PTX), and ptxas sm_90a with 0 spills."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.backend import toolkit
from tensor_core_helpers import compiled_sm90a, copy_inputs, gemm_dtype, gemm_inputs, wgrad_inputs

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")


@pytest.mark.parametrize("name", ["gemm_f16", "gemm_bf16"])
@pytest.mark.parametrize("M, K, N", [(130, 100, 70), (17, 70, 33)])
def test_gemm_mn_major_equals_k_major_with_fewer_conflicts(name, M, K, N):
    on, off = compiled_sm90a(name), compiled_sm90a(name, wgmma_mn_major=False)
    assert "B[<f16>, <one>, <row>]" in on._compilation.gpu_ir().replace("bf16", "f16")
    assert "B[<f16>, <one>, <col>]" in off._compilation.gpu_ir().replace("bf16", "f16")
    a, b = gemm_inputs(M, K, N, gemm_dtype(name))
    c_on, c_off = (np.full((M, N), np.nan, np.float32) for _ in range(2))
    s_on = getattr(on, name)(a, b, c_on).stats
    s_off = getattr(off, name)(a, b, c_off).stats
    np.testing.assert_array_equal(c_on, c_off)
    assert s_on.shared_bank_conflicts == 0 and s_on.shared_requests == s_off.shared_requests
    if (M, K, N) == (130, 100, 70):
        assert s_off.shared_bank_conflicts == 3072


def test_conv2d_wgrad_mn_major_equals_k_major_with_fewer_conflicts():
    on, off = compiled_sm90a("conv2d_wgrad_f16"), compiled_sm90a("conv2d_wgrad_f16", wgmma_mn_major=False)
    inputs = wgrad_inputs(2, 5, 7, 7, 33, 3, 2, (1, 2), (1, 1), (2, 1))
    a_on, a_off = copy_inputs(inputs), copy_inputs(inputs)
    s_on = on.conv2d_wgrad_f16(**a_on).stats
    s_off = off.conv2d_wgrad_f16(**a_off).stats
    np.testing.assert_array_equal(a_on["gw"], a_off["gw"])
    assert (s_on.shared_bank_conflicts, s_off.shared_bank_conflicts) == (0, 3072)


@needs_ptxas
@pytest.mark.parametrize("name", ["gemm_f16", "conv2d_wgrad_f16"])
def test_mn_major_ptx_assembles_without_spills(name):
    ptx = compiled_sm90a(name)._compilation.ptx(32)
    # imm-trans-a: 0 for the gemm's a (k-contiguous, K-major), 1 for wgrad's (MN-major); imm-trans-b 1
    assert (", 0,  1;" if name == "gemm_f16" else ", 1,  1;") in ptx
    result = toolkit.run_ptxas(ptx, arch="sm_90a")
    assert result.ok, result.log
    assert result.spills[name] == (0, 0), (result.registers[name], result.spills[name])
    print(name, "registers", result.registers[name])
