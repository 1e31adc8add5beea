"""``kern-wgmma-contractions``' TMA pipeline (``tma_stages``, ``kernc compile --tma-stages``): S tile
buffers of each TMA'd operand, each with its own mbarrier and parity, the copy of chunk c+S-1 issued
after chunk c's first barrier. On the CPU interpreter, bit for bit the one-stage TMA build and the
per-thread staging build (any M, N, K, loops that start past 0 or are empty, one block running several
tiles: the parities across tiles); the pass's IR with a barrier or a wait deleted (or a wait_group 1,
or a wrong parity) is a reported race; stages over 48 KiB are dynamic workgroup memory
(``kern-dynamic-workgroup-memory``), and with it off (``dynamic_shared_memory=False``) they fall back
to what fits in 48 KiB with a remark; ptxas takes them without spills. Kernels on 1 warpgroup (``@block(128)``, 64-row tiles) so that two
and three stages fit; both operands TMA'd (a transposed b) at ``block_n = 64``."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import kernc
from kernc.backend import cache, toolkit
from kernc.compiler import Compilation, CompileOptions
from kernc.passes.wgmma_contractions import WgmmaConfig, tma_bytes, tma_stages
from kernc.support.errors import KerncRuntimeError
from conftest import EXAMPLES
from tensor_core_helpers import sm90_cupy
from tma_stage_helpers import compilation, gpu_ir, inputs, run

# M, N, K from {1, 63, 65, 130, 200}: K < 64, K % 64 != 0, K % 8 != 0 (the maps' rows padded), 1..4 chunks;
# one block of 128 threads runs every tile (up to 4 x 2), so the parities carry across tiles
SHAPES = [(1, 1, 1), (63, 65, 130), (130, 200, 63), (200, 130, 1), (65, 63, 200)]

#: (kind, block_n): a by a K-major box and b (n-contiguous) by two MN-major 64x64 boxes; both by
#: K-major boxes (b transposed) at block_n 64
CASES = [("nn", None), ("nt", 64)]


def _rows(block_n):
    return 64, 128 if block_n is None else block_n


@pytest.mark.parametrize("kind, block_n", CASES)
@pytest.mark.parametrize("M, K, N", SHAPES)
def test_stages_are_bitwise_one_stage_and_the_staged_build(kind, block_n, M, K, N):
    ref = gpu_ir(kind, block_n=block_n)
    a, b = inputs(kind, M, K, N)
    want = run(ref, kind, a, b)
    assert not np.isnan(want).any()
    for S in (1, 2, 3):
        text = gpu_ir(kind, block_n=block_n, tma=True, tma_stages=S)
        got = run(text, kind, a, b, tma_rows=_rows(block_n))
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=f"{S} stages")


@pytest.mark.parametrize("kind, block_n", CASES)
def test_the_builds_have_the_stages_asked_for(kind, block_n):
    """S mbarriers and S tiles per TMA'd operand, S-1 prologue issues and one in the loop, each a's
    box and b's (nn: two 64-row MN-major boxes at block_n 128; 24 KiB a stage: 2 stages are 49168
    bytes, dynamic workgroup memory, 1 with it off. nt: 16 KiB a stage, 3 stages are 49176 bytes, 2
    with it off)."""
    bn = 128 if block_n is None else block_n
    copies = 3 if kind == "nn" else 2
    for asked, dynamic in ((1, True), (2, True), (3, True), (3, False)):
        text = gpu_ir(kind, block_n=block_n, tma=True, tma_stages=asked, dynamic_shared_memory=dynamic)
        S = asked if dynamic else min(asked, 1 if kind == "nn" else 2)
        assert ("gpu.dynamic_shared_memory" in text) == (tma_bytes(WgmmaConfig(1, bn), {0, 1}, S) > 49152)
        assert f"memref<{S}xi64, #gpu.address_space<workgroup>>" in text
        assert text.count("nvvm.mbarrier.init") == S
        assert text.count("nvvm.cp.async.bulk.tensor.shared.cluster.global") == S * copies  # (S-1) + 1 issues
        assert f"memref<{S * 64 * 64}xf16, #gpu.address_space<workgroup>>" in text  # a: S tiles of 64x64
        assert f"memref<{S * bn * 64}xf16, #gpu.address_space<workgroup>>" in text


@pytest.mark.parametrize("M, K, N", [(63, 130, 65), (1, 200, 130)])
def test_bf16_stages_are_bitwise_the_staged_build(M, K, N):
    ref = gpu_ir("nn", "bf16")
    a, b = inputs("nn", M, K, N, "bf16")
    want = run(ref, "nn", a, b, "bf16")
    for S in (2, 3):
        got = run(gpu_ir("nn", "bf16", tma=True, tma_stages=S), "nn", a, b, "bf16")
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=f"{S} stages")


@pytest.mark.parametrize("lo", [5, 70, 130, 131, 400, 0])
def test_loops_that_start_past_0_or_are_empty(lo):
    """``for k in lo..K`` at K = 130: chunks from lo (the prologue's copies guarded by the chunks there
    are: none when lo >= K, the span's max(K - lo, 0) keeping lo > K from a huge unsigned count)."""
    a, b = inputs("from", 65, 130, 63)
    want = run(gpu_ir("from", block_n=64), "from", a, b, bounds=(lo,))
    if lo >= 130:
        np.testing.assert_array_equal(want, np.zeros_like(want))
    for S in (1, 2, 3):
        text = gpu_ir("from", block_n=64, tma=True, tma_stages=S)
        assert text.count("nvvm.cp.async.bulk.tensor.shared.cluster.global") == 2 * S  # (3: 49176 bytes, dynamic)
        got = run(text, "from", a, b, bounds=(lo,), tma_rows=(64, 64))
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32), err_msg=f"{S} stages")


def test_a_negative_start_reads_the_same_zeros_in_every_stage_count():
    """``lo < 0``: the boxes' k < 0 is out of the map, zeros (the staged build reads out of a's bounds,
    an error of the program): the stages give the one-stage result."""
    a, b = inputs("from", 65, 130, 63)
    one = run(gpu_ir("from", block_n=64, tma=True, tma_stages=1), "from", a, b, bounds=(-70,), tma_rows=(64, 64))
    for S in (2, 3):
        got = run(gpu_ir("from", block_n=64, tma=True, tma_stages=S), "from", a, b, bounds=(-70,), tma_rows=(64, 64))
        np.testing.assert_array_equal(got.view(np.uint32), one.view(np.uint32))
    np.testing.assert_array_equal(one[:, :], run(gpu_ir("from", block_n=64, tma=True, tma_stages=1), "from",
                                                 a, b, bounds=(0,), tma_rows=(64, 64)))


def test_a_loop_that_ends_before_the_views_edge_is_not_loaded_by_tma(capsys):
    """Regression: ``for k in 0..hi`` (hi < K) with both operands by TMA summed the boxes' elements
    past hi (both tiles real there; a stored tile is 0 at k >= hi). Such a loop keeps the stores, with
    a remark, and equals the build without TMA."""
    comp = compilation("to", block_n=64, remarks=True, tma=True)
    err = capsys.readouterr().err
    a, b = inputs("to", 65, 130, 63)
    got = run(comp.gpu_ir(), "to", a, b, bounds=(70,), tma_rows=(64, 64))
    want = a[:, :70].astype(np.float64) @ b[:, :70].astype(np.float64).T
    assert np.allclose(got, want, rtol=1e-3, atol=1e-3 * np.sqrt(70))
    np.testing.assert_array_equal(got, run(gpu_ir("to", block_n=64), "to", a, b, bounds=(70,)))
    assert "nvvm.cp.async.bulk" not in comp.gpu_ir()
    assert "'a' of 'gemm' not loaded by TMA: its loop does not end at the view's k extent K" in err


# ---- the pass's IR with a barrier or a wait deleted: reported races (both operands TMA'd, 2 stages)

@pytest.fixture(scope="module")
def nt2():
    return gpu_ir("nt", block_n=64, tma=True, tma_stages=2)


def _run_nt(text):
    a, b = inputs("nt", 65, 200, 70)
    return run(text, "nt", a, b, tma_rows=(64, 64))


def _chunk_barrier(text: str) -> int:
    """The line of the chunk loop's ``gpu.barrier`` (the first after the second ``scf.for``)."""
    lines = text.split("\n")
    loops = [i for i, line in enumerate(lines) if "scf.for" in line]
    return next(i for i in range(loops[1], len(lines)) if "gpu.barrier" in lines[i])


def test_the_pass_ir_runs(nt2):
    ref = gpu_ir("nt", block_n=64)
    a, b = inputs("nt", 65, 200, 70)
    np.testing.assert_array_equal(_run_nt(nt2).view(np.uint32), run(ref, "nt", a, b).view(np.uint32))


def test_without_the_chunk_barrier_the_next_copy_overwrites_a_tile_wgmma_read(nt2):
    lines = nt2.split("\n")
    del lines[_chunk_barrier(nt2)]
    with pytest.raises(KerncRuntimeError, match=r"data race on workgroup buffer 'workgroup\d' .* loaded index "
                                                r"\d+ and the cp\.async\.bulk\.tensor at .* overwrites it with no "
                                                r"gpu\.barrier between them"):
        _run_nt("\n".join(lines))


def test_without_the_mbarrier_waits_wgmma_reads_copies_in_flight(nt2):
    text = "\n".join(line for line in nt2.split("\n") if "nvvm.mbarrier.try_wait.parity" not in line)
    with pytest.raises(KerncRuntimeError, match="whose mbarrier phase the thread has not waited for"):
        _run_nt(text)


def test_a_wait_for_parity_0_only_races_at_a_stages_second_use(nt2):
    """Parity 0 at every chunk: right for each stage's first use (chunks 0, 1), wrong at chunk 2
    (stage 0's second phase): it returns at once, before the copy landed."""
    wait = re.compile(r"(nvvm\.mbarrier\.try_wait\.parity %\w+, )(%\w+)(, )")
    assert len(wait.findall(nt2)) == 1
    text = wait.sub(lambda m: m.group(1) + "%c0_i32" + m.group(3), nt2)
    assert "%c0_i32 = arith.constant 0 : i32" in nt2
    a, b = inputs("nt", 60, 128, 50)  # one tile of 2 chunks: every wait is a first use
    run(text, "nt", a, b, tma_rows=(64, 64))
    with pytest.raises(KerncRuntimeError, match="whose mbarrier phase the thread has not waited for"):
        _run_nt(text)  # 4 chunks


def test_without_wgmma_wait_group_the_accumulators_are_read_pending(nt2):
    text = nt2.replace("nvvm.wgmma.wait.group.sync.aligned 0", "")
    with pytest.raises(KerncRuntimeError, match="reads the accumulators of the wgmma.mma_async .* before a "
                                                "wgmma.wait_group retired it"):
        _run_nt(text)


def test_a_wait_group_1_lets_the_copy_overwrite_a_pending_wgmmas_tile(nt2):
    """wait_group 1 leaves chunk c-1's wgmma pending at chunk c, whose copy (chunk c+1's, 2 stages)
    goes to the tile it reads."""
    text = nt2.replace("nvvm.wgmma.wait.group.sync.aligned 0", "nvvm.wgmma.wait.group.sync.aligned 1")
    with pytest.raises(KerncRuntimeError, match="pending wgmma"):
        _run_nt(text)


# ---- the stage count: what fits in 48 KiB, the remarks, the option

def test_the_bytes_of_the_stages():
    two = WgmmaConfig(2, 128)  # gemm_f16: 128x128 tiles, a by TMA
    assert tma_bytes(two, {0}, 1) == 32768 + 8
    assert tma_bytes(two, {0}, 2) == 49152 + 16
    assert tma_stages(two, {0}, 2)[0] == 1
    one = WgmmaConfig(1, 128)  # @block(128): 64x128 tiles
    assert [tma_bytes(one, {0}, S) for S in (1, 2, 3, 4)] == [24584, 32784, 40984, 49184]
    assert tma_stages(one, {0}, 8)[0] == 3
    assert tma_stages(one, {0, 1}, 2)[0] == 1  # both by TMA: 24 KiB a stage
    assert tma_stages(WgmmaConfig(1, 64), {0, 1}, 3)[0] == 2  # both by TMA at block_n 64: 16 KiB a stage
    assert tma_stages(one, {0}, 3) == (3, None)


@pytest.fixture(scope="module")
def example_builds():
    """gemm_f16 (128x128 tiles, a by TMA) on sm_90a: the default build (2 stages), tma_stages=1 and
    dynamic_shared_memory=False, through ``kernc.compile`` (the CPU launcher gives the signature's
    dynamic bytes)."""
    text = open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read()
    return {k: kernc.compile(text, filename="gemm_f16.kern", arch="sm_90a", tma=True, **kw)
            for k, kw in (("two", {}), ("one", {"tma_stages": 1}), ("off", {"dynamic_shared_memory": False}))}


def test_the_example_gets_two_stages_of_dynamic_workgroup_memory(example_builds, capsys):
    """gemm_f16's 2 stages of a's 16 KiB tile and b's 16 KiB (both by TMA) and the 2 mbarriers are
    over 48 KiB: one gpu.dynamic_shared_memory carved by memref.view (1024-byte aligned offsets), its
    65552 bytes in the signature, with remarks."""
    two = example_builds["two"]
    ir_two = two._compilation.gpu_ir()
    assert ir_two.count("nvvm.mbarrier.init") == 2
    assert ir_two.count("gpu.dynamic_shared_memory") == 1 and ir_two.count("memref.view") == 3
    assert "workgroup(" not in ir_two  # no attributions left
    assert two.gemm_f16.signature.dynamic_shared_bytes == 65552
    assert example_builds["one"].gemm_f16.signature.dynamic_shared_bytes == 0
    text = open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read()
    Compilation(text, "t.kern", CompileOptions(arch="sm_90a", tma=True, remarks=True), use_cache=False).gpu_ir()
    err = capsys.readouterr().err
    assert ("into one of 2 128B-swizzled tiles (stages)" in err
            and "2 TMA stages use 65552 bytes of dynamic workgroup memory" in err)
    assert ("t.kern:9:8: remark: kernel 'gemm_f16' uses 65552 bytes of dynamic workgroup memory (over the 48 KiB "
            "static limit; the launch opts in, up to 232448 bytes on sm_90a): its 3 workgroup buffers are "
            "memref.view of one gpu.dynamic_shared_memory buffer at byte offsets 0, 32768, 65536") in err


@pytest.mark.parametrize("M, K, N", [(1, 8, 8), (130, 200, 72), (64, 136, 136)])
def test_the_examples_two_stages_are_bitwise_one_stage(example_builds, M, K, N):
    """On the CPU interpreter (dynamic workgroup memory, its race and bounds checks): the 2-stage
    build bit for bit the 1-stage one and the build with dynamic workgroup memory off."""
    rng = np.random.default_rng(M + K + N)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    got = {k: np.full((M, N), np.nan, np.float32) for k in example_builds}
    for k, mod in example_builds.items():
        mod.gemm_f16(a, b, got[k])
    assert not np.isnan(got["two"]).any()
    for k in ("one", "off"):
        np.testing.assert_array_equal(got["two"].view(np.uint32), got[k].view(np.uint32), err_msg=k)


def test_with_dynamic_workgroup_memory_off_the_example_falls_back_to_one_stage(capsys):
    """``dynamic_shared_memory=False`` (``--no-dynamic-shared-memory``): 2 stages need 65552 bytes,
    over the 48 KiB of static memory: one stage with a remark, the same IR as tma_stages=1."""
    text = open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read()
    off = Compilation(text, "t.kern", CompileOptions(arch="sm_90a", tma=True, remarks=True,
                                                      dynamic_shared_memory=False), use_cache=False).gpu_ir()
    err = capsys.readouterr().err
    assert ("'a' of 'gemm_f16' loaded by the tensor memory accelerator: per chunk one cp.async.bulk.tensor.2d of "
            "the box 64x128") in err
    assert ("2 stages need 65552 bytes of workgroup memory, more than the 49152 bytes (48 KiB) of static "
            "workgroup memory a block may use: 1 stage (32776 bytes) built") in err
    assert "dynamic workgroup memory" not in err and "gpu.dynamic_shared_memory" not in off
    one = Compilation(text, "t.kern", CompileOptions(arch="sm_90a", tma=True, tma_stages=1), use_cache=False).gpu_ir()
    assert off == one


def test_the_remark_says_how_many_stages_and_why_not_more(capsys):
    compilation("nn", remarks=True, tma=True, tma_stages=3)
    err = capsys.readouterr().err
    assert re.search(r"nn\.kern:5:\d+: remark: 'a' of 'gemm' loaded by the tensor memory accelerator: per chunk "
                     r"one cp\.async\.bulk\.tensor\.2d of the box 64x64 \(k x rows, out-of-bounds elements zero\) "
                     r"into one of 3 128B-swizzled tiles \(stages\), each completed on its own mbarrier \(expect_tx "
                     r"8192 bytes\), the copy of chunk c\+2 issued after chunk c's first barrier, before its wgmma "
                     r"\(the first 2 before the chunk loop\)", err)
    assert "stages need" not in err
    compilation("nn", remarks=True, tma=True, tma_stages=5, dynamic_shared_memory=False)
    assert ("5 stages need 122920 bytes of workgroup memory, more than the 49152 bytes (48 KiB) of static "
            "workgroup memory a block may use: 1 stage (24584 bytes) built") in capsys.readouterr().err
    text = compilation("nn", remarks=True, tma=True, tma_stages=5).gpu_ir()  # 122920 bytes: dynamic memory
    assert text.count("nvvm.mbarrier.init") == 5 and "gpu.dynamic_shared_memory" in text
    assert "5 TMA stages use 122920 bytes of dynamic workgroup memory" in capsys.readouterr().err


@pytest.mark.parametrize("bad", [0, 9, 2.0, True, "2"])
def test_tma_stages_must_be_an_integer_from_1_to_8(bad):
    with pytest.raises(ValueError, match="tma_stages must be an integer from 1 to 8"):
        kernc.compile("kernel k(x: f32[n] read, y: f32[n] write) over n { y = x; }", tma_stages=bad)


def test_the_cache_key_includes_the_stages():
    assert cache.option_includes(tma=True, tma_stages=3) != cache.option_includes(tma=True)
    assert cache.option_includes(tma=True, tma_stages=2) == cache.option_includes(tma=True)


def test_the_cli_takes_tma_stages(tmp_path, capsys):
    from kernc.cli import main

    src = tmp_path / "g.kern"
    src.write_text(open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read().replace(
        "kernel gemm_f16", "@block(128)\nkernel gemm_f16"))
    assert main(["compile", "--arch", "sm_90a", "--tma", "--tma-stages", "3", "--emit", "gpu", str(src)]) == 0
    out = capsys.readouterr().out
    assert out.count("nvvm.mbarrier.init") == 3
    assert main(["compile", "--arch", "sm_90a", "--tma", "--tma-stages", "1", "--emit", "gpu", str(src)]) == 0
    assert capsys.readouterr().out.count("nvvm.mbarrier.init") == 1


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
@pytest.mark.parametrize("kind, block_n, stages, smem", [
    ("nn", None, 1, 24584), ("nt", 64, 1, 16392), ("nt", 64, 2, 32784), ("nt", 64, 3, 0)])
def test_ptxas_takes_the_stages_without_spills(kind, block_n, stages, smem):
    ptx = compilation(kind, block_n=block_n, tma=True, tma_stages=stages).ptx()
    res = toolkit.run_ptxas(ptx, "sm_90a")
    assert res.ok, res.log
    assert res.spills["gemm"] == (0, 0)
    assert f"{smem} bytes smem" in res.log or not smem  # tma_bytes: the tiles and the mbarriers (0: dynamic)
    print(kind, block_n, stages, "stages:", res.registers["gemm"], "registers,", smem, "bytes of workgroup memory")


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
def test_ptxas_takes_the_examples_dynamic_workgroup_memory_without_spills(example_builds):
    """The 2-stage gemm_f16 PTX (an ``.extern .shared .align 1024`` array, no static ``.shared``)."""
    ptx = example_builds["two"]._compilation.ptx()
    assert re.search(r"\.extern \.shared \.align 1024 \.b8 \w+\[\]", ptx), ptx[:2000]
    res = toolkit.run_ptxas(ptx, "sm_90a")
    assert res.ok, res.log
    assert res.spills["gemm_f16"] == (0, 0)
    print("gemm_f16 2 TMA stages:", res.registers["gemm_f16"], "registers")


@pytest.mark.parametrize("elem", ["f16", "bf16"])
def test_a_launch_binds_the_map_of_the_staged_tiles(elem):
    """Through ``kernc.compile`` (the launcher encodes the maps from the signature: a's box is one
    stage's 64x64, b's the 64x64 of each MN-major 64-row block): 2 stages bitwise the build without
    TMA, several tiles per block's grid."""
    from tma_stage_helpers import GEMM, dtype_of

    src = GEMM.replace("T[", f"{elem}[")
    mod = kernc.compile(src, filename="g.kern", arch="sm_90a", tma=True, tma_stages=2)
    assert [p.tensor_map["box"] for p in mod._compilation.signatures["gemm"].extra] == [[64, 64], [64, 64]]
    assert mod._compilation.signatures["gemm"].extra[1].tensor_map["major"] == "mn"
    assert "memref<2xi64, #gpu.address_space<workgroup>>" in mod._compilation.gpu_ir()
    ref = kernc.compile(src, filename="g.kern", arch="sm_90a")
    rng = np.random.default_rng(5)
    a = rng.standard_normal((130, 200)).astype(dtype_of(elem))
    b = rng.standard_normal((200, 72)).astype(dtype_of(elem))
    c, want = np.full((130, 72), np.nan, np.float32), np.full((130, 72), np.nan, np.float32)
    from kernc.backend import binding, cpu

    assert binding.bind(mod.gemm.signature, (a, b, c), {}, cpu.is_host_array, "cpu").no_tma is None  # TMA runs
    mod.gemm(a, b, c)
    ref.gemm(a, b, want)
    np.testing.assert_array_equal(c.view(np.uint32), want.view(np.uint32))


@pytest.mark.gpu
@pytest.mark.parametrize("stages", [2, 3])
def test_on_a_gpu_the_stages_are_bitwise_the_staged_build(stages):
    """On an sm_90 device: the driver-encoded map, the copies of the next chunks in flight during a
    chunk's wgmma, the same bits as the build without TMA (a wait or a barrier the GPU needed and
    the interpreter did not would show here). Not run here: no GPU."""
    cp = sm90_cupy()
    from tma_stage_helpers import GEMM

    src = GEMM.replace("T[", "f16[")
    rng = np.random.default_rng(7)
    a = cp.asarray(rng.standard_normal((1000, 1032)).astype(np.float16))
    b = cp.asarray(rng.standard_normal((1032, 700)).astype(np.float16))
    c1, c2 = cp.full((1000, 700), np.nan, cp.float32), cp.full((1000, 700), np.nan, cp.float32)
    kernc.compile(src, filename="g.kern", arch="sm_90a", tma=True, tma_stages=stages).gemm(a, b, c1)
    kernc.compile(src, filename="g.kern", arch="sm_90a").gemm(a, b, c2)
    np.testing.assert_array_equal(cp.asnumpy(c1).view(np.uint32), cp.asnumpy(c2).view(np.uint32))


@pytest.mark.gpu
def test_on_a_gpu_the_examples_dynamic_workgroup_memory_is_bitwise_one_stage():
    """On an sm_90 device: gemm_f16's 2 stages in 49168 bytes of dynamic workgroup memory (the launch
    opts in past 48 KiB and passes sharedMemBytes) give the bits of the 1-stage build, whose 32776
    bytes are static. Not run here: no GPU."""
    cp = sm90_cupy()
    text = open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read()
    rng = np.random.default_rng(11)
    a = cp.asarray(rng.standard_normal((1000, 1032)).astype(np.float16))
    b = cp.asarray(rng.standard_normal((1032, 700)).astype(np.float16))
    c1, c2 = cp.full((1000, 700), np.nan, cp.float32), cp.full((1000, 700), np.nan, cp.float32)
    two = kernc.compile(text, filename="gemm_f16.kern", arch="sm_90a", tma=True)
    assert two.gemm_f16.signature.dynamic_shared_bytes == 65552
    two.gemm_f16(a, b, c1)
    kernc.compile(text, filename="gemm_f16.kern", arch="sm_90a", tma=True, tma_stages=1).gemm_f16(a, b, c2)
    np.testing.assert_array_equal(cp.asnumpy(c1).view(np.uint32), cp.asnumpy(c2).view(np.uint32))
