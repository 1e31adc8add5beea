"""The CPU interpreter's TMA model (backend/interpreter/tma.py) on hand-written gpu IR: a 64x64 f16 box
copied by cp.async.bulk.tensor with the 128B swizzle lands where wgmma's swizzle says, out-of-bounds
elements zero (odd extents), and the races are reported: the wait removed, the wrong parity, expect_tx
bytes that do not match, a tensor map the driver would refuse."""

from __future__ import annotations

import re

import numpy as np
import pytest

from kernc.backend import toolkit
from kernc.backend.interpreter import Interpreter
from kernc.backend.tensor_map import TensorMap
from kernc.compiler import context, extract_ptx
from kernc.passes.convert_gpu_to_nvvm import compiler_pipeline
from kernc.passes.gpu_module_to_binary import SerializeToPTX
from kernc.passes.wgmma_contractions import swizzled_index
from kernc.support.errors import KerncLaunchError, KerncRuntimeError
from kernc.support.mlir import ir, passmanager

KERNEL = r'''
module attributes {gpu.container_module} {
gpu.module @m {
  gpu.func @k(%tm: !llvm.ptr, %out: memref<?xf16>, %x0: i32, %y0: i32) workgroup(%t: memref<4096xf16, #gpu.address_space<workgroup>>, %bar: memref<2xi64, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %p = memref.extract_aligned_pointer_as_index %bar : memref<2xi64, #gpu.address_space<workgroup>> -> index
    %pi = arith.index_cast %p : index to i32
    %bp = llvm.inttoptr %pi : i32 to !llvm.ptr<3>
    %q = memref.extract_aligned_pointer_as_index %t : memref<4096xf16, #gpu.address_space<workgroup>> -> index
    %qi = arith.index_cast %q : index to i32
    %tp = llvm.inttoptr %qi : i32 to !llvm.ptr<3>
    %one = arith.constant 1 : i32
    %tid = gpu.thread_id x
    %z = arith.cmpi eq, %tid, %c0 : index
    nvvm.mbarrier.init %bp, %one, predicate = %z : !llvm.ptr<3>, i32, i1
    nvvm.fence.mbarrier.init
    gpu.barrier
    %bytes = arith.constant BYTES : i32
    nvvm.mbarrier.arrive.expect_tx %bp, %bytes, predicate = %z : !llvm.ptr<3>, i32, i1
    nvvm.cp.async.bulk.tensor.shared.cluster.global %tp, %tm, %bp, box[%x0, %y0] predicate = %z : !llvm.ptr<3>, !llvm.ptr
    %ph = arith.constant PARITY : i32
    %ticks = arith.constant 10000000 : i32
    WAIT
    scf.for %r = %c0 to %c32 step %c1 {
      %e0 = arith.muli %r, %c128 : index
      %e = arith.addi %e0, %tid : index
      %v = memref.load %t[%e] : memref<4096xf16, #gpu.address_space<workgroup>>
      memref.store %v, %out[%e] : memref<?xf16>
    }
    gpu.return
  }
}
}
'''
WAIT = "nvvm.mbarrier.try_wait.parity %bp, %ph, %ticks : !llvm.ptr<3>, i32, i32"


def _run(M, K, x0, y0, *, wait=WAIT, parity=0, nbytes=8192, box=(64, 64), pad=0):
    text = KERNEL.replace("WAIT", wait).replace("PARITY", str(parity)).replace("BYTES", str(nbytes))
    with context():
        it = Interpreter(ir.Module.parse(text))
    rng = np.random.default_rng(M * 31 + K)
    ld = K + pad  # the row's elements in memory (a padded row: its byte stride a multiple of 16)
    a = rng.standard_normal((M, ld)).astype(np.float16)
    tm = TensorMap("f16", dims=(K, M), strides=(2 * ld,), box=box, swizzle=128, array=a.reshape(-1))
    out = np.full(4096, np.nan, np.float16)
    it.run("k", 1, 128, [tm, out, x0, y0], arg_names=["tm", "out", "x0", "y0"])
    return a[:, :K], out


def _expected(a, x0, y0):
    want = np.zeros(4096, np.float16)
    M, K = a.shape
    for r in range(64):
        for k in range(64):
            i, j = y0 + r, x0 + k
            if 0 <= i < M and 0 <= j < K:
                want[swizzled_index(r, k)] = a[i, j]
    return want


@pytest.mark.parametrize("M, K, x0, y0, pad", [(64, 64, 0, 0, 0), (100, 200, 64, 64, 0),
                                              (37, 51, 0, 0, 5), (130, 72, 64, 128, 0)])
def test_a_box_lands_swizzled_with_zeros_outside(M, K, x0, y0, pad):
    a, out = _run(M, K, x0, y0, pad=pad)
    np.testing.assert_array_equal(out.view(np.uint16), _expected(a, x0, y0).view(np.uint16))


def test_a_read_without_the_wait_is_a_race():
    with pytest.raises(KerncRuntimeError, match=r"a read of workgroup buffer 'workgroup0' \(at loc\(.*\)\) by "
                                                r"thread 0: the element was written by the cp\.async\.bulk\.tensor at"):
        _run(64, 64, 0, 0, wait="")


def test_a_wait_with_the_wrong_parity_returns_at_once_and_the_read_races():
    with pytest.raises(KerncRuntimeError, match="whose mbarrier phase the thread has not waited for"):
        _run(64, 64, 0, 0, parity=1)


@pytest.mark.parametrize("nbytes", [4096, 8194])
def test_expect_tx_bytes_that_do_not_match_wait_forever(nbytes):
    with pytest.raises(KerncRuntimeError, match=r"mbarrier\.try_wait\.parity \(at loc\(.*\)\) waits forever "
                                                r"in block 0: .*transaction count of -?\d+ bytes"):
        _run(64, 64, 0, 0, nbytes=nbytes)


def test_a_map_the_driver_refuses_is_a_launch_error_naming_the_parameter():
    with pytest.raises(KerncLaunchError, match="tensor map parameter 'tm': the byte stride of dimension 1 is 102"):
        _run(37, 51, 0, 0, pad=0)
    with pytest.raises(KerncLaunchError, match="tensor map parameter 'tm': the inner box dimension is 256 bytes, "
                                               "more than the 128-byte swizzle span"):
        _run(64, 128, 0, 0, box=(128, 32))


PIPELINE = r'''
module attributes {gpu.container_module} {
gpu.module @m {
  gpu.func @p(%tm: !llvm.ptr, %out: memref<?xf16>, %chunks: index) workgroup(%t: memref<8192xf16, #gpu.address_space<workgroup>>, %bar: memref<2xi64, #gpu.address_space<workgroup>>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %c4096 = arith.constant 4096 : index
    %p = memref.extract_aligned_pointer_as_index %bar : memref<2xi64, #gpu.address_space<workgroup>> -> index
    %q = memref.extract_aligned_pointer_as_index %t : memref<8192xf16, #gpu.address_space<workgroup>> -> index
    %one = arith.constant 1 : i32
    %bytes = arith.constant 8192 : i32
    %y0 = arith.constant 0 : i32
    %ticks = arith.constant 10000000 : i32
    %tid = gpu.thread_id x
    %z = arith.cmpi eq, %tid, %c0 : index
    %b0i = arith.index_cast %p : index to i32
    %b0 = llvm.inttoptr %b0i : i32 to !llvm.ptr<3>
    %p8 = arith.addi %p, %c8 : index
    %b1i = arith.index_cast %p8 : index to i32
    %b1 = llvm.inttoptr %b1i : i32 to !llvm.ptr<3>
    nvvm.mbarrier.init %b0, %one, predicate = %z : !llvm.ptr<3>, i32, i1
    nvvm.mbarrier.init %b1, %one, predicate = %z : !llvm.ptr<3>, i32, i1
    nvvm.fence.mbarrier.init
    gpu.barrier
    %t0i = arith.index_cast %q : index to i32
    %t0 = llvm.inttoptr %t0i : i32 to !llvm.ptr<3>
    nvvm.mbarrier.arrive.expect_tx %b0, %bytes, predicate = %z : !llvm.ptr<3>, i32, i1
    nvvm.cp.async.bulk.tensor.shared.cluster.global %t0, %tm, %b0, box[%y0, %y0] predicate = %z : !llvm.ptr<3>, !llvm.ptr
    scf.for %c = %c0 to %chunks step %c1 {
      %n = arith.addi %c, %c1 : index
      %more = arith.cmpi ult, %n, %chunks : index
      %issue = arith.andi %more, %z : i1
      // chunk c+1's copy into the other stage before chunk c is read
      %ns = arith.remui %n, %c2 : index
      %nbyte = arith.muli %ns, %c8192 : index
      %nt = arith.addi %q, %nbyte : index
      %nti = arith.index_cast %nt : index to i32
      %ntp = llvm.inttoptr %nti : i32 to !llvm.ptr<3>
      %nb8 = arith.muli %ns, %c8 : index
      %nbar = arith.addi %p, %nb8 : index
      %nbari = arith.index_cast %nbar : index to i32
      %nbarp = llvm.inttoptr %nbari : i32 to !llvm.ptr<3>
      %x = arith.muli %n, %c64 : index
      %xi = arith.index_cast %x : index to i32
      nvvm.mbarrier.arrive.expect_tx %nbarp, %bytes, predicate = %issue : !llvm.ptr<3>, i32, i1
      nvvm.cp.async.bulk.tensor.shared.cluster.global %ntp, %tm, %nbarp, box[%xi, %y0] predicate = %issue : !llvm.ptr<3>, !llvm.ptr
      // wait for chunk c: stage c % 2, parity (c / 2) % 2
      %s = arith.remui %c, %c2 : index
      %h = arith.divui %c, %c2 : index
      %par = arith.remui %h, %c2 : index
      %PARITY_EXPR
      %s8 = arith.muli %s, %c8 : index
      %sbar = arith.addi %p, %s8 : index
      %sbari = arith.index_cast %sbar : index to i32
      %sbarp = llvm.inttoptr %sbari : i32 to !llvm.ptr<3>
      nvvm.mbarrier.try_wait.parity %sbarp, %pari, %ticks : !llvm.ptr<3>, i32, i32
      %so = arith.muli %s, %c4096 : index
      %oo = arith.muli %c, %c4096 : index
      scf.for %r = %c0 to %c32 step %c1 {
        %e0 = arith.muli %r, %c128 : index
        %e = arith.addi %e0, %tid : index
        %se = arith.addi %e, %so : index
        %v = memref.load %t[%se] : memref<8192xf16, #gpu.address_space<workgroup>>
        %oe = arith.addi %e, %oo : index
        memref.store %v, %out[%oe] : memref<?xf16>
      }
      END_BARRIER
    }
    gpu.return
  }
}
}
'''.replace("%c4096 = arith.constant 4096 : index", "%c4096 = arith.constant 4096 : index\n    %c8 = arith.constant 8 : index\n"
            "    %c64 = arith.constant 64 : index\n    %c8192 = arith.constant 8192 : index")
RIGHT_PARITY = "%pari = arith.index_cast %par : index to i32"


def _pipeline(chunks, *, parity=RIGHT_PARITY, end_barrier="gpu.barrier"):
    text = PIPELINE.replace("%PARITY_EXPR", parity).replace("END_BARRIER", end_barrier)
    with context():
        it = Interpreter(ir.Module.parse(text))
    M, K = 50, 64 * chunks - 9  # odd extents: the last chunk and the rows past 50 are zero-filled
    ld = -(-K // 8) * 8 + 8  # the row's elements in memory: a byte stride of a multiple of 16
    a = np.random.default_rng(chunks).standard_normal((M, ld)).astype(np.float16)
    tm = TensorMap("f16", dims=(K, M), strides=(2 * ld,), box=(64, 64), swizzle=128, array=a.reshape(-1))
    out = np.full(4096 * chunks, np.nan, np.float16)
    it.run("p", 1, 128, [tm, out, chunks], arg_names=["tm", "out", "chunks"])
    return a[:, :K], out


def test_two_stages_in_flight_each_barrier_reused_with_its_phase_parity():
    a, out = _pipeline(5)
    for c in range(5):
        np.testing.assert_array_equal(out[4096 * c:4096 * (c + 1)].view(np.uint16),
                                      _expected(a, 64 * c, 0).view(np.uint16))


def test_a_pipeline_waiting_with_a_stale_parity_races():
    # parity c % 2 instead of (c / 2) % 2: chunk 1 waits on stage 1's phase 0 with parity 1 (returns at once)
    with pytest.raises(KerncRuntimeError, match="whose mbarrier phase the thread has not waited for"):
        _pipeline(4, parity="%pari = arith.index_cast %s : index to i32")


def test_a_copy_into_a_stage_other_threads_still_read_is_a_race():
    # without the barrier at the end of a chunk, chunk c+2's copy may overwrite stage c % 2 being read
    with pytest.raises(KerncRuntimeError, match=r"thread \d+ loaded index \d+ and the cp\.async\.bulk\.tensor at "
                                                r"loc\(.*\) overwrites it with no gpu\.barrier"):
        _pipeline(4, end_barrier="")


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
def test_the_ops_the_model_takes_lower_to_ptx_that_ptxas_accepts_for_sm_90a():
    """The same IR through kernc's upstream pipeline (convert-gpu-to-nvvm, convert-nvvm-to-llvm) to PTX:
    the tensor map an ordinary 64-bit pointer parameter (a map in global memory), ptxas without spills."""
    text = PIPELINE.replace("%PARITY_EXPR", RIGHT_PARITY).replace("END_BARRIER", "gpu.barrier").replace(
        "gpu.module @m {", 'gpu.module @m [#nvvm.target<chip = "sm_90a", features = "+ptx80">] {')
    with context():
        m = ir.Module.parse(text)
        passmanager.PassManager.parse("builtin.module(" + compiler_pipeline() + ")").run(m.operation)
        SerializeToPTX().apply(m.context, m)
        ptx = extract_ptx(m)
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert "mbarrier.try_wait.parity.shared.b64" in ptx and "mbarrier.arrive.expect_tx.shared.b64" in ptx
    assert re.search(r"\.param \.u64 \.ptr .*p_param_0", ptx)
    res = toolkit.run_ptxas(ptx, "sm_90a")
    assert res.ok, res.log
    assert res.spills["p"] == (0, 0)
    print("registers", res.registers["p"])
