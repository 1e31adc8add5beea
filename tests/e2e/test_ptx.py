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
    assert sorted(entries) == sorted(mod.kernels) and name in entries  # (layernorm: and layernorm_bwd)
    sig = mod.kernels[name].signature
    params = re.findall(r"\.param (\.\w+)(?: \.ptr \.global)?",
                        ptx.split(f".entry {name}(", 1)[1].split(")", 1)[0])
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
    # (the 64-bit build of the mma.sync kernels is their rolled staging's, Compilation.wide_index:
    # the unrolled one spilled 404 bytes in conv2d_fwd_f16, 68/188 in conv2d_wgrad_f16)
    assert result.spills[name] == (0, 0), (result.registers[name], result.spills[name])


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
    """Compilation.timings: one entry per stage run, in order, with the frontend's steps and every
    pass that ran; each PTX variant adds its own llvm/ptx runs (llvm_ir() and ptx() lower to LLVM
    once each), a result held in memory adds none."""
    from kernc.compiler import Compilation, CompileOptions, format_timings
    from kernc.passes import pipeline

    src = "kernel k(x: f32[n] read, y: f32[n] write) over n { y = 2.0 * x; }\n"
    comp = Compilation(src, "k.kern", use_cache=False)
    assert [(r.stage, r.variant) for r in comp.timings] == [("kern", ""), ("gpu", "")]
    assert [name for name, _ in comp.timings[0].steps] == ["parse", "check", "lower"]
    assert [name for name, _ in comp.timings[1].steps] == [p.name for p in pipeline.kern_to_gpu(
        coalesce=False, tile=False, tensor_cores=False, privatize=False)]  # 1-D: none of them
    comp.llvm_ir()
    comp.ptx()
    comp.ptx()  # the same variant: answered from memory
    comp.ptx(index_bits=64, aligned=False)
    assert [(r.stage, r.variant) for r in comp.timings[2:]] == [
        ("llvm", "index 32"), ("llvm", "index 32"), ("ptx", "index 32"),
        ("llvm", "index 64, unaligned"), ("ptx", "index 64, unaligned")]
    target = CompileOptions().target(libdevice=None)
    assert [name for name, _ in comp.timings[2].steps] == [p.name for p in pipeline.gpu_to_llvm(target)]
    assert all(t >= 0 for r in comp.timings for _, t in r.steps)

    # the table: a subtotal row per run (a stage run twice is listed twice), its steps under it
    lines = format_timings(comp.timings).splitlines()
    subtotals = [line.split(None, 2)[2] for line in lines[2:] if "stage " in line]
    assert subtotals == ["stage kern", "stage gpu", "stage llvm (index 32)", "stage llvm (index 32)",
                         "stage ptx (index 32)", "stage llvm (index 64, unaligned)", "stage ptx (index 64, unaligned)"]
    rows = [line.split(None, 2) for line in lines[2:]]
    assert rows[-1][2] == "total (sum of the steps)"
    assert abs(float(rows[-1][0]) - 1e3 * sum(r.seconds for r in comp.timings)) < 0.01


def test_format_timings_with_the_wall_time_and_without_steps():
    """With the compile's wall time, the time no step accounts for is an 'other' row and the total is
    the wall time; timings without steps (the compile cache answered) say so instead of a table."""
    from kernc.compiler import StageTiming, format_timings

    runs = [StageTiming("kern", "", [("parse", 0.001), ("check", 0.002)]),
            StageTiming("ptx", "index 32", [("gpu-module-to-binary{format=isa}", 0.004)])]
    rows = [line.split(None, 2) for line in format_timings(runs, wall=0.010).splitlines()[2:]]
    assert [(float(ms), label) for ms, _, label in rows] == [
        (3.0, "stage kern"), (1.0, "parse"), (2.0, "check"),
        (4.0, "stage ptx (index 32)"), (4.0, "gpu-module-to-binary{format=isa}"),
        (3.0, "other (printing IR, copying modules, the compile cache)"), (10.0, "total")]
    assert [float(pct) for _, pct, _ in rows] == [30.0, 10.0, 20.0, 40.0, 40.0, 30.0, 100.0]
    assert format_timings([]) == format_timings([StageTiming("gpu", "", [])]) == \
        "no step ran (a compilation answered by the compile cache runs none)"


def test_format_timings_of_steps_that_took_no_measurable_time():
    """Found by a trial: steps of 0 s divided by a zero total."""
    from kernc.compiler import StageTiming, format_timings

    rows = [line.split(None, 2) for line in format_timings([StageTiming("x", "", [("a", 0.0)])]).splitlines()[2:]]
    assert [(float(ms), float(pct)) for ms, pct, _ in rows] == [(0.0, 0.0)] * 3
