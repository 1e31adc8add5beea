"""Every example compiles to PTX that ``ptxas -arch=sm_90`` accepts (skipped without ptxas), with
one ``.entry`` per kernel taking plain global pointers."""

from __future__ import annotations

import re

import pytest

from conftest import EXAMPLE_NAMES, compiled_example
from kernc.backend import toolkit

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_ptx_shape(name):
    mod = compiled_example(name)
    ptx = mod.ptx
    assert ".target sm_90" in ptx
    entries = re.findall(r"\.visible \.entry (\w+)\(", ptx)
    assert entries == [name]
    sig = mod.kernels[name].signature
    params = re.findall(r"\.param (\.\w+)(?: \.ptr \.global)?", ptx.split(".entry", 1)[1].split(")", 1)[0])
    # one param per declared param plus one per size symbol: no memref descriptors
    assert len(params) == len(sig.params) + len(sig.sizes)


@needs_ptxas
@pytest.mark.parametrize("index_bits", [32, 64])
@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_ptxas_accepts(name, index_bits):
    mod = compiled_example(name)
    result = toolkit.run_ptxas(mod._compilation.ptx(index_bits), arch="sm_90")
    assert result.ok, result.log
    assert name in result.registers and result.registers[name] > 0
    assert result.spills[name] == (0, 0)


def test_arch_is_selectable():
    import kernc

    from conftest import EXAMPLES

    mod = kernc.compile_file(f"{EXAMPLES}/saxpy.kern", arch="sm_80")
    assert ".target sm_80" in mod.ptx
    with pytest.raises(ValueError, match="unknown GPU architecture"):
        kernc.compile_file(f"{EXAMPLES}/saxpy.kern", arch="gfx90a")


def test_64_bit_index_params():
    mod = compiled_example("saxpy")
    assert ".param .u32 saxpy_param_3" in mod._compilation.ptx(32)
    assert ".param .u64 saxpy_param_3" in mod._compilation.ptx(64)


def test_compilation_timings_cover_the_stages_it_ran():
    """Compilation.timings: the frontend's steps and every pass of each stage actually run, tagged
    with the stage; a second PTX variant adds its own llvm/ptx entries, a cache hit adds none."""
    from kernc.compiler import Compilation

    src = "kernel k(x: f32[n] read, y: f32[n] write) over n { y = 2.0 * x; }\n"
    comp = Compilation(src, "k.kern", use_cache=False)
    assert [s for s, _, _ in comp.timings[:3]] == ["kern"] * 3
    assert {s for s, _, _ in comp.timings} == {"kern", "gpu"}
    comp.ptx()
    n = len(comp.timings)
    assert [s for s, _, _ in comp.timings].count("ptx") == 1
    comp.ptx()  # the same variant: answered from memory
    assert len(comp.timings) == n
    comp.ptx(index_bits=64)
    assert [s for s, _, _ in comp.timings].count("ptx") == 2 and len(comp.timings) > n
    assert all(t >= 0 for _, _, t in comp.timings)
