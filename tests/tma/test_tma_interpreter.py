"""The CPU interpreter's TMA model (backend/interpreter/tma.py) on hand-written gpu IR: a 64x64 f16 box
copied by cp.async.bulk.tensor with the 128B swizzle lands where wgmma's swizzle says, out-of-bounds
elements zero (odd extents), and the races are reported: the wait removed, the wrong parity, expect_tx
bytes that do not match, a tensor map the driver would refuse."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.backend.interpreter import Interpreter
from kernc.backend.tensor_map import TensorMap
from kernc.compiler import context
from kernc.passes.wgmma_contractions import swizzled_index
from kernc.support.errors import KerncLaunchError, KerncRuntimeError
from kernc.support.mlir import ir

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
