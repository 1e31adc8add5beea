"""The PTX variant for launches whose ``index`` scalar arguments are all >= 0
(``kern-specialize-nonneg-scalars``): the launcher decides from the values, the variant divides
unsigned, the general PTX keeps signed divisions, and a negative argument gets the general one."""

from __future__ import annotations

import re
import types

import numpy as np
import pytest

from conftest import compiled_example, example_reference
import kernc
from kernc.backend import binding, cpu, cuda

IM2COL = "im2col_gather"


def _signed_divisions(ptx: str) -> int:
    return len(re.findall(r"\b(?:div|rem)\.s(?:32|64)\b", ptx))


def test_the_variant_divides_unsigned_and_the_general_ptx_stays_signed():
    comp = compiled_example(IM2COL)._compilation
    general, special = comp.ptx(), comp.ptx(nonneg_scalars=True)
    assert _signed_divisions(general) > 0  # m / OW with OW an index param of unknown sign
    assert _signed_divisions(special) == 0 and re.search(r"\b(?:div|rem)\.u32\b", special)
    # the gpu IR (what the CPU interpreter runs) is the general one
    assert "arith.divsi" in comp.gpu_ir()
    # a kernel without index scalars: the same PTX either way
    saxpy = compiled_example("saxpy")._compilation
    assert saxpy.ptx(nonneg_scalars=True) == saxpy.ptx()


def test_the_variant_has_its_own_cache_key():
    comp = compiled_example(IM2COL)._compilation
    if comp.cache_key is None:
        pytest.skip("compile cache disabled")
    assert comp._ptx_cache_key(32, True, True) != comp._ptx_cache_key(32, True, False)


@pytest.mark.parametrize("OH, OW, expected", [(4, 5, True), (0, 5, True), (4, -5, False), (-1, 3, False)])
def test_the_launcher_checks_the_values(OH, OW, expected):
    mod = compiled_example(IM2COL)
    inputs = example_reference(IM2COL).make_inputs(400, np.random.default_rng(0))
    inputs.update(OH=OH, OW=OW)
    bound = binding.bind(mod.im2col_gather.signature, (), inputs, cpu.is_host_array, "cpu")
    assert bound.nonneg_scalars is expected


def test_no_index_scalars_means_no_variant():
    mod = compiled_example("saxpy")
    x, y = np.ones(64, np.float32), np.zeros(64, np.float32)
    assert binding.bind(mod.saxpy.signature, (2.0, x, y), {}, cpu.is_host_array, "cpu").nonneg_scalars is False


def test_the_cuda_module_of_a_launch_is_the_variant_it_asks_for(monkeypatch):
    """``Module._cuda_module`` loads (and keeps) one module per variant, each from its own PTX."""
    loaded = []

    class FakeModule:
        def load(self, data):
            loaded.append(data.decode())

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDevice=lambda: 0),
        function=types.SimpleNamespace(Module=FakeModule)))
    monkeypatch.setattr(cuda, "cupy", lambda: fake)
    monkeypatch.setattr(cuda, "_modules", type(cuda._modules)())
    mod = kernc.compile(open(compiled_example(IM2COL)._compilation.filename, encoding="utf-8").read())
    general = mod._cuda_module(32, True, 0, False)
    special = mod._cuda_module(32, True, 0, True)
    assert special is not general and mod._cuda_module(32, True, 0, True) is special
    assert loaded == [mod._compilation.ptx(32, True, False), mod._compilation.ptx(32, True, True)]


@pytest.mark.gpu
@pytest.mark.parametrize("OH, OW", [(4, 5), (4, -5), (-2, 5)])
def test_gpu_results_equal_the_cpu_interpreter_for_any_sign(OH, OW):
    import cupy as cp

    mod = compiled_example(IM2COL)
    inputs = example_reference(IM2COL).make_inputs(400, np.random.default_rng(0))
    inputs.update(OH=OH, OW=OW)
    host = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    mod.im2col_gather(**host)
    dev = {k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    mod.im2col_gather(**dev)
    np.testing.assert_array_equal(cp.asnumpy(dev["out"]), host["out"])
