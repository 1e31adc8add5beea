"""``kern-wgmma-contractions`` with ``tma=True``: the gemm examples' ``a`` tiles (k-contiguous boxes of
their views) and ``b`` tiles (n-contiguous: two MN-major 64x64 boxes each) loaded by
``cp.async.bulk.tensor`` on an mbarrier, run on the CPU interpreter bit for bit
equal to the per-thread staging build (odd M and N: the zero fill of the box past the edges), the
races of the pass's own IR with its wait removed or made wrong, the launcher's check of the row
stride, the remarks, the cache key, and the PTX through ptxas."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import kernc
from kernc.backend import cache, toolkit
from kernc.backend.tensor_map import TensorMap
from kernc.compiler import Compilation, CompileOptions
from kernc.support.errors import KerncRuntimeError
from conftest import EXAMPLES
from tensor_core_helpers import (compiled_sm90a, copy_inputs, gemm_dtype, gemm_f16_gpu_ir, gemm_inputs, run_gemm_f16_ir,
                                sm90_cupy)

# K and N multiples of 8 (rows of 16-byte multiples: what a tensor map takes); M odd, N not a multiple
# of the tile, K past one chunk
SHAPES = [(1, 8, 8), (15, 72, 40), (130, 136, 104), (17, 64, 264), (300, 200, 264)]  # the last: 9 blocks


@pytest.mark.parametrize("name", ["gemm_f16", "gemm_bf16"])
@pytest.mark.parametrize("M, K, N", SHAPES)
def test_tma_build_is_bitwise_the_staged_build(name, M, K, N):
    mod = compiled_sm90a(name, tma=True)
    gpu_ir = mod._compilation.gpu_ir()
    # 2 stages (65552 bytes: dynamic workgroup memory): the prologue's copies and the loop's, a's one
    # box and b's two
    assert gpu_ir.count("nvvm.cp.async.bulk.tensor.shared.cluster.global") == 6
    assert "gpu.dynamic_shared_memory" in gpu_ir and "nvvm.fence.proxy" not in gpu_ir  # (no stores)
    assert [p.name for p in mod._compilation.signatures[name].extra] == ["__tma_a", "__tma_b"]
    a, b = gemm_inputs(M, K, N, gemm_dtype(name))
    c = np.full((M, N), np.nan, np.float32)
    mod_c = c.copy()
    ran = getattr(mod, name)(a, b, mod_c)
    assert (ran.tma, ran.no_tma) == (True, None) and "TMA loads" in repr(ran)
    plain = getattr(compiled_sm90a(name), name)(a, b, c)
    assert (plain.tma, plain.no_tma) == (None, None)  # (compiled without tma)
    np.testing.assert_array_equal(mod_c.view(np.uint32), c.view(np.uint32))


@pytest.mark.parametrize("M, K, N", [(5, 17, 6), (33, 100, 17), (1, 1, 1), (4, 9, 16)])
def test_a_row_stride_a_tensor_map_cannot_encode_runs_the_build_without_tma(M, K, N):
    """K % 8 != 0: a row of a is no multiple of 16 bytes (the first map's reason is given). The launch
    runs the tma=False build, the same bits; binding records why."""
    from kernc.backend import binding, cpu

    mod = compiled_sm90a("gemm_f16", tma=True)
    a, b = gemm_inputs(M, K, N, np.float16)
    c, ref = np.full((M, N), np.nan, np.float32), np.full((M, N), np.nan, np.float32)
    bound = binding.bind(mod.gemm_f16.signature, (a, b, c), {}, cpu.is_host_array, "cpu")
    assert bound.no_tma == (f"kernel 'gemm_f16', tensor map parameter '__tma_a': the byte stride of dimension 1 "
                            f"is {2 * K} (the stride between rows; dimensions innermost first): it must be a positive multiple of 16 below 2^40 (a row of {K} x 2 "
                            "bytes is no multiple of 16 bytes: its extent must be a multiple of 8)")
    ran = mod.gemm_f16(a, b, c)
    assert ran.tma is False and ran.no_tma == bound.no_tma  # LaunchResult says which build ran, and why
    assert f"without TMA ({bound.no_tma})" in repr(ran)
    compiled_sm90a("gemm_f16").gemm_f16(a, b, ref)
    np.testing.assert_array_equal(c.view(np.uint32), ref.view(np.uint32))
    assert mod._compilation.untma().options.tma is False


def _run_text(text: str, M: int, K: int, N: int):
    """gemm_f16's TMA build ``text`` on the interpreter: ``(a, b, c)``, a's and b's tensor maps the
    launcher's (K, N multiples of 8)."""
    def tensor_maps(a):
        b = gemm_inputs(M, K, N, np.float16)[1]
        return [TensorMap("f16", dims=(K, M), strides=(2 * K,), box=(64, 128), swizzle=128, array=a.reshape(-1)),
                TensorMap("f16", dims=(N, K), strides=(2 * N,), box=(64, 64), swizzle=128, array=b.reshape(-1))]
    return run_gemm_f16_ir(text, M, K, N, extra=tensor_maps)


WAIT = re.compile(r"nvvm\.mbarrier\.try_wait\.parity (%\w+), (%\w+), (%\w+)( : [^\n]*)")


@pytest.fixture(scope="module")
def text():
    return gemm_f16_gpu_ir(arch="sm_90a", tma=True)


def test_the_pass_ir_runs(text):
    assert len(WAIT.findall(text)) == 1
    a, b, c = _run_text(text, 20, 136, 24)
    ref = np.full((20, 24), np.nan, np.float32)
    compiled_sm90a("gemm_f16").gemm_f16(a, b, ref)
    np.testing.assert_array_equal(c.view(np.uint32), ref.view(np.uint32))


def test_without_the_wait_wgmma_reads_the_copy_in_flight(text):
    with pytest.raises(KerncRuntimeError, match=r"the A operand read of workgroup buffer 'dynamic@0' \(at "
                                                r"loc\(.*\)\) by thread 0: the element was written by the "
                                                r"cp\.async\.bulk\.tensor at"):
        _run_text(WAIT.sub("", text), 20, 136, 24)


def test_a_wait_with_the_wrong_parity_races(text):
    # parity 1 for chunk 0 returns at once (the phase before the first counts as complete)
    wrong = WAIT.sub(lambda m: f"nvvm.mbarrier.try_wait.parity {m.group(1)}, %c1_i32, {m.group(3)}{m.group(4)}", text)
    assert "%c1_i32 = arith.constant 1 : i32" in text
    with pytest.raises(KerncRuntimeError, match="whose mbarrier phase the thread has not waited for"):
        _run_text(wrong, 20, 136, 24)


def test_expect_tx_bytes_that_do_not_match_the_box_wait_forever(text):
    assert "%c32768_i32 = arith.constant 32768 : i32" in text  # (a's box and b's two)
    wrong = text.replace("%c32768_i32 = arith.constant 32768 : i32", "%c32768_i32 = arith.constant 16384 : i32")
    with pytest.raises(KerncRuntimeError, match=r"waits forever in block 0: .* transaction count of -16384 bytes"):
        _run_text(wrong, 20, 136, 24)


def test_remarks_say_how_each_operand_is_loaded_by_tma_and_why_not(capsys):
    text = open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read()
    Compilation(text, "t.kern", CompileOptions(arch="sm_90a", tma=True, remarks=True), use_cache=False).gpu_ir()
    err = capsys.readouterr().err
    assert re.search(r"t\.kern:\d+:\d+: remark: 'a' of 'gemm_f16' loaded by the tensor memory accelerator: per "
                     r"chunk one cp\.async\.bulk\.tensor\.2d of the box 64x128", err)
    assert ("'b' of 'gemm_f16' loaded by the tensor memory accelerator: per chunk one cp.async.bulk.tensor.2d per "
            "64-row block of the MN-major tile (2 boxes 64x64, rows x k") in err
    assert "at the chunk's start (both operands copied)" in err or "stages" in err
    Compilation(text, "t.kern", CompileOptions(arch="sm_90a", tma=True, remarks=True, wgmma_mn_major=False),
                use_cache=False).gpu_ir()
    assert ("'b' of 'gemm_f16' not loaded by TMA: its rows have stride 1 in its layout (K,N):(N,1) and MN-major "
            "tiles are off (--no-wgmma-mn-major)") in capsys.readouterr().err
    Compilation(text, "t.kern", CompileOptions(arch="sm_90a", remarks=True), use_cache=False).gpu_ir()
    assert "tensor memory accelerator" not in capsys.readouterr().err  # opt-in


def test_the_cache_key_includes_tma():
    assert cache.option_includes(wgmma=True, tma=True) != cache.option_includes(wgmma=True)
    assert cache.option_includes() == ()


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
@pytest.mark.parametrize("name", ["gemm_f16", "gemm_bf16"])
def test_ptxas_takes_the_tma_build_without_spills(name):
    ptx = compiled_sm90a(name, tma=True).ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert "mbarrier.try_wait.parity.shared.b64" in ptx
    res = toolkit.run_ptxas(ptx, "sm_90a")
    assert res.ok, res.log
    assert res.spills[name] == (0, 0)
    print(name, "registers", res.registers[name])


@pytest.mark.gpu
@pytest.mark.parametrize("M, K, N", [(130, 136, 104), (33, 100, 17)])
def test_on_a_gpu_the_tma_build_is_bitwise_the_staged_build(M, K, N):
    """The hidden maps encoded by the driver (cuTensorMapEncodeTiled) and passed in global memory (a's
    box, b's MN-major boxes); K = 100 (a 200-byte row) runs the build without TMA."""
    cp = sm90_cupy()
    a, b = gemm_inputs(M, K, N, np.float16)
    da, db = cp.asarray(a), cp.asarray(b)
    c1, c2 = cp.full((M, N), np.nan, cp.float32), cp.full((M, N), np.nan, cp.float32)
    compiled_sm90a("gemm_f16", tma=True).gemm_f16(da, db, c1)
    compiled_sm90a("gemm_f16").gemm_f16(da, db, c2)
    np.testing.assert_array_equal(cp.asnumpy(c1).view(np.uint32), cp.asnumpy(c2).view(np.uint32))


NT = """
kernel gemm_nt(a: f16[M, K] view, bt: f16[N, K] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for k in 0..K {
        acc += a[i, k] * bt[j, k];
    }
    c[i, j] = acc;
}
"""


@pytest.fixture(scope="module")
def nt():
    return (kernc.compile(NT, filename="nt.kern", arch="sm_90a", tma=True),
            kernc.compile(NT, filename="nt.kern", arch="sm_90a"))


@pytest.mark.parametrize("M, K, N", [(20, 72, 24), (130, 136, 129)])
def test_both_operands_by_tma_when_both_are_k_contiguous(nt, M, K, N):
    mod, ref = nt
    assert [p.name for p in mod._compilation.signatures["gemm_nt"].extra] == ["__tma_a", "__tma_bt"]
    gpu_ir = mod._compilation.gpu_ir()
    # 2 stages of both 16 KiB tiles (65552 bytes: dynamic workgroup memory), 2 copies each
    assert gpu_ir.count("nvvm.cp.async.bulk.tensor.shared.cluster.global") == 4
    assert "nvvm.fence.proxy" not in gpu_ir  # no generic-proxy stores to order before wgmma
    assert re.search(r"nvvm\.mbarrier\.arrive\.expect_tx %\w+, %c32768_i32", gpu_ir)  # both 16 KiB boxes
    rng = np.random.default_rng(M + K + N)
    a = rng.standard_normal((M, K)).astype(np.float16)
    bt = rng.standard_normal((N, K)).astype(np.float16)
    c, c2 = np.full((M, N), np.nan, np.float32), np.full((M, N), np.nan, np.float32)
    mod.gemm_nt(a, bt, c)
    ref.gemm_nt(a, bt, c2)
    np.testing.assert_array_equal(c.view(np.uint32), c2.view(np.uint32))
    want = a.astype(np.float64) @ bt.astype(np.float64).T
    assert np.allclose(c, want, rtol=1e-3, atol=1e-3 * np.sqrt(K))
    if toolkit.ptxas_path() is not None and M == 20:
        res = toolkit.run_ptxas(mod.ptx, "sm_90a")
        assert res.ok and res.spills["gemm_nt"] == (0, 0), res.log
        print("gemm_nt registers", res.registers["gemm_nt"])


def test_a_batched_contraction_keeps_the_stores_with_a_remark(capsys):
    src = """
kernel bgemm(a: f16[B, M, K] view, b: f16[B, K, N] view, c: f32[B, M, N] view) over (q, i, j) in (B, M, N) {
    let acc = 0.0;
    for k in 0..K {
        acc += a[q, i, k] * b[q, k, j];
    }
    c[q, i, j] = acc;
}
"""
    Compilation(src, "b.kern", CompileOptions(arch="sm_90a", tma=True, remarks=True), use_cache=False).gpu_ir()
    err = capsys.readouterr().err
    assert "remark: 'a' of 'bgemm' not loaded by TMA: the contraction is batched; its tile is staged by " \
           "per-thread stores" in err


def test_kernc_run_says_whether_the_tma_build_ran(tmp_path, capsys):
    """``kernc run --tma``'s summary line and ``--stats-json`` say which build ran (the TMA one, or the
    tma=False one and why); ``-q`` drops the summary line."""
    from kernc.cli import main

    gemm = os.path.join(EXAMPLES, "gemm_f16.kern")
    common = ["run", gemm, "--arch", "sm_90a", "--tma", "--output-dir", str(tmp_path)]
    for K, tma in ((16, True), (17, False)):
        a, b = gemm_inputs(5, K, 8, np.float16)
        np.save(tmp_path / "a.npy", a)
        np.save(tmp_path / "b.npy", b)
        inputs = ["--input", f"a=@{tmp_path / 'a.npy'}", "--input", f"b=@{tmp_path / 'b.npy'}"]
        assert main(common + inputs + ["--stats-json", str(tmp_path / "s.json")]) == 0
        out = capsys.readouterr().out
        if tma:
            assert "; tiles loaded by TMA;" in out
        else:
            assert ("; without TMA (the tma=False build ran: kernel 'gemm_f16', tensor map parameter '__tma_a': "
                    "the byte stride of dimension 1 is 34") in out
        import json
        stats = json.loads((tmp_path / "s.json").read_text())
        assert stats["tma"] is tma
        assert (stats["no_tma"] is None) if tma else stats["no_tma"].startswith(
            "kernel 'gemm_f16', tensor map parameter '__tma_a': the byte stride of dimension 1 is 34 (the stride "
            "between rows")
        np.testing.assert_allclose(np.load(tmp_path / "c.npy"), a.astype(np.float64) @ b.astype(np.float64),
                                   rtol=1e-3)
        assert main(common + inputs + ["-q"]) == 0
        assert capsys.readouterr().out == ""


@pytest.mark.parametrize("opts, says", [
    (dict(arch="sm_90", tma=True), "it is off (sm_90 has no wgmma: compile with --arch sm_90a)"),
    (dict(arch="sm_90a", tma=True, wgmma=False), "it is off (--no-wgmma)"),
    (dict(arch="sm_90a", tma=True, tensor_cores=False), "it is off (--no-tensor-cores)"),
    (dict(arch="sm_90a", tma_stages=3), "--tma-stages 3 changes nothing without --tma"),
])
def test_tma_options_that_change_nothing_say_so(opts, says, capsys):
    text = open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read()
    Compilation(text, "t.kern", CompileOptions(remarks=True, **opts), use_cache=False).gpu_ir()
    err = capsys.readouterr().err
    assert says in err
    assert "loaded by the tensor memory accelerator" not in err
    if opts.get("tma"):
        assert "t.kern: remark: --tma loads no tile: the tensor memory accelerator feeds kern-wgmma-contractions' " \
               "tiles only (sm_90a)" in err


def test_remarks_come_in_source_order(capsys):
    """kern-dynamic-workgroup-memory (after kern-wgmma-contractions in the pipeline) remarks at the
    kernel's line, above the contraction's: the lines come sorted by line and column, file-level
    remarks first."""
    text = open(os.path.join(EXAMPLES, "gemm_f16.kern"), encoding="utf-8").read()
    Compilation(text, "t.kern", CompileOptions(arch="sm_90a", tma=True, tma_stages=3, wgmma=True, remarks=True,
                                               coalesce=False), use_cache=False).gpu_ir()
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("t.kern: remark: view accesses are not staged")  # (no line: first)
    at = [tuple(map(int, m.groups())) for m in map(re.compile(r"t\.kern:(\d+):(\d+): remark").match, lines) if m]
    assert len(at) == len(lines) - 1 and len(at) >= 4
    assert at == sorted(at)
    assert any("dynamic workgroup memory" in ln for ln in lines[1:2])  # (the kernel's line, made last)


def test_tma_on_a_file_without_a_wgmma_contraction_says_it_loads_nothing(capsys):
    text = open(os.path.join(EXAMPLES, "softmax.kern"), encoding="utf-8").read()
    Compilation(text, "t.kern", CompileOptions(arch="sm_90a", tma=True, remarks=True), use_cache=False).gpu_ir()
    assert ("t.kern: remark: --tma loads no tile: the tensor memory accelerator feeds the tiles of contractions "
            "on wgmma, and no kernel here has one") in capsys.readouterr().err


def test_a_read_of_flattened_rows_says_why_no_box_takes_it(capsys):
    """Regression (trial): a convolution's read was "not loaded by TMA: the contraction is batched"; it
    is not batched, its tile's rows are flattened coordinates. A read of flattened rows that is no
    convolution's im2col view (the convolutions' are: test_conv2d_tma.py) says so."""
    src = """
kernel g3(a: f16[M, K] view, b: f16[K, P, Q] view, c: f32[M, P, Q] view) over (i, p, q) in (M, P, Q) {
    let acc = 0.0;
    for k in 0..K { acc += a[i, k] * b[k, p, q]; }
    c[i, p, q] = acc;
}"""
    Compilation(src, "t.kern", CompileOptions(arch="sm_90a", tma=True, remarks=True), use_cache=False).gpu_ir()
    err = capsys.readouterr().err
    assert ("'b' of 'g3' not loaded by TMA: its tile's rows are the flattened coordinates (p, q) and its k "
            "one loop: TMA's im2col mode loads a 2-d convolution's input" in err), err
    assert "batched" not in err


@pytest.mark.parametrize("shape", [(2, 5, 7, 7, 32, 3, 2, (1, 2), (1, 1), (2, 1)),
                                   (1, 3, 4, 16, 136, 3, 3, (1, 1), (1, 1), (1, 1))])
def test_the_weight_gradients_maps_fall_back_together(shape):
    """conv2d_wgrad_f16's dy (K x M, k-contiguous: the tile's rows) by 64x64 boxes into its MN-major
    tile (K = 32: one partial 64-row block, K = 136: three), bit for bit the staged build (C = 7 and
    16: its x, whose im2col copies need C a multiple of 64, makes the launch fall back)."""
    from tensor_core_helpers import wgrad_inputs

    mod = compiled_sm90a("conv2d_wgrad_f16", tma=True)
    sig = mod._compilation.signatures["conv2d_wgrad_f16"]
    assert [(p.name, p.tensor_map.get("major")) for p in sig.extra] == [("__tma_dy", "mn"), ("__tma_x", "mn")]
    inputs = wgrad_inputs(*shape)
    got, want = copy_inputs(inputs), copy_inputs(inputs)
    ran = mod.conv2d_wgrad_f16(**got)
    assert ran.tma is False and "'__tma_x': C = " in ran.no_tma
    compiled_sm90a("conv2d_wgrad_f16").conv2d_wgrad_f16(**want)
    assert not np.isnan(got["gw"]).any()
    np.testing.assert_array_equal(got["gw"].view(np.uint32), want["gw"].view(np.uint32))


def test_kernc_run_says_when_tma_loads_nothing(tmp_path, capsys):
    """Trial: ``kernc run --tma`` on sm_90 (no wgmma) said nothing of TMA; it says none was loaded."""
    from kernc.cli import main

    a, b = gemm_inputs(4, 16, 8, np.float16)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    assert main(["run", os.path.join(EXAMPLES, "gemm_f16.kern"), "--tma", "--output-dir", str(tmp_path),
                 "--input", f"a=@{tmp_path / 'a.npy'}", "--input", f"b=@{tmp_path / 'b.npy'}"]) == 0
    assert "; --tma loaded no tile (the build has no TMA copy: `kernc compile --remarks` says why)" in \
        capsys.readouterr().out
