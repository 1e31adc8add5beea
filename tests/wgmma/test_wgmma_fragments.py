"""The CPU interpreter's ``nvvm.wgmma.mma_async`` against the PTX ISA's formulas: descriptor fields
(9.7.15.5.1), the K-major canonical layouts of each swizzle mode, the m64nN D fragment (9.7.15, "Register Fragments"),
lane by lane, on a hand-written 128-thread kernel (one warpgroup, one m64n8k16 or m64n16k16)."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.backend.interpreter import Interpreter, wgmma
from kernc.compiler import context
from kernc.passes import wgmma_contractions as wc
from kernc.support.errors import KerncRuntimeError
from kernc.support.mlir import ir

G = "#gpu.address_space<global>"
W = "#gpu.address_space<workgroup>"
SIZE = 4096  # f16 elements of each workgroup tile (8 KiB)


def _isa_byte(mode: int, r: int, k: int, sbo: int, lbo: int) -> int:
    """Byte offset (from a pattern-aligned start) of element (r, k) of a K-major f16 operand, as the
    ISA's canonical layouts give it: core matrices of 8 rows x 16 bytes without swizzle; rows of
    T = 128/64/32 bytes with the 16-byte units of row r%8 permuted by XOR with (r%8) >> (log2(128/T))."""
    if mode == 0:
        return (r // 8) * sbo + (r % 8) * 16 + (k // 8) * lbo + 2 * (k % 8)
    T = wgmma.SWIZZLE_BYTES[mode]
    unit = (k // 8) ^ ((r % 8) // (128 // T))  # the swizzled 16-byte unit within the T-byte row
    return (r // 8) * sbo + (r % 8) * T + 16 * unit + 2 * (k % 8)


def _isa_byte_mn(mode: int, r: int, k: int, sbo: int, lbo: int) -> int:
    """Byte offset of element (r, k) of an MN-major f16 operand per the ISA (9.7.15.5.1.2: the
    MN-major swizzle atoms are T/16 x 8 units of 16 bytes, i.e. rows of T bytes = T/2 elements of
    M/N, one per k; LBO from one T/2 elements of M/N to the next, SBO from one 8 k to the next;
    interleaved: 8x8 core matrices, SBO along M/N, LBO along k); the 16-byte unit of row k%8 permuted
    by XOR with (k%8) >> log2(128/T)."""
    if mode == 0:
        return (r // 8) * sbo + 2 * (r % 8) + 16 * (k % 8) + (k // 8) * lbo
    T = wgmma.SWIZZLE_BYTES[mode]
    e = T // 2  # elements of M/N in a T-byte row
    unit = ((r % e) // 8) ^ ((k % 8) // (128 // T))
    return (r // e) * lbo + (k // 8) * sbo + (k % 8) * T + 16 * unit + 2 * (r % 8)


def test_descriptor_fields_round_trip():
    d = wc.descriptor(0x12340, 16, 1024, wc.SWIZZLE_128B)
    assert wgmma.decode(d) == {"start": 0x12340, "lbo": 16, "sbo": 1024, "base_offset": 0, "swizzle": 1}
    assert d >> 62 == 1 and (d >> 32) & 0x3FFF == 64 and (d >> 16) & 0x3FFF == 1 and d & 0x3FFF == 0x1234
    assert wgmma.decode(wc.descriptor(0x40000 + 0x100, 128, 256, 0)) == {  # addresses wrap at 256 KiB
        "start": 0x100, "lbo": 128, "sbo": 256, "base_offset": 0, "swizzle": 0}


@pytest.mark.parametrize("mode, sbo, lbo", [(0, 256, 128), (1, 1024, 16), (2, 512, 16), (3, 256, 16)])
def test_operand_addresses_are_the_canonical_layouts(mode, sbo, lbo):
    start = 2048  # pattern-aligned
    got = wgmma.operand_addresses(wc.descriptor(start, lbo, sbo, mode), 64)
    want = np.array([[start + _isa_byte(mode, r, k, sbo, lbo) for k in range(16)] for r in range(64)])
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) == got.size  # a bijection onto the tile's bytes


@pytest.mark.parametrize("mode, sbo, lbo", [(0, 128, 2048), (1, 1024, 8192), (2, 512, 1024), (3, 256, 512)])
def test_mn_major_operand_addresses_are_the_canonical_layouts(mode, sbo, lbo):
    start = 8192
    got = wgmma.operand_addresses(wc.descriptor(start, lbo, sbo, mode), 128, mn_major=True)
    want = np.array([[start + _isa_byte_mn(mode, r, k, sbo, lbo) for k in range(16)] for r in range(128)])
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(got)) == got.size
    # spot values of the 128B atom: (r, k) = (0, 1) one 128-byte row on, unit 0 XOR 1; (9, 0) unit 1
    # byte 2; (64, 0) the next atom of M/N at LBO; (0, 8) the next 8 k at SBO
    a = wgmma.operand_addresses(wc.descriptor(0, 8192, 1024, 1), 128, mn_major=True)
    assert (a[0, 1], a[9, 0], a[64, 0], a[0, 8], a[8, 1]) == (128 + 16, 16 + 2, 8192, 1024, 128)


def test_the_pass_stores_where_the_descriptor_reads():
    """kern-wgmma-contractions' staging index (swizzled_index) is the 128B layout the descriptor of
    k16 step s (start + 32*s) decodes to."""
    for s in range(4):
        addr = wgmma.operand_addresses(wc.descriptor(1024 + 32 * s, 16, 1024, 1), 64)
        idx = np.array([[wc.swizzled_index(r, 16 * s + k) for k in range(16)] for r in range(64)])
        np.testing.assert_array_equal(addr, 1024 + 2 * idx)


def test_d_fragment_is_the_isa_table():
    """d_i of thread 32w + 4g + t is (16w + g + 8*((i>>1)&1), 8*(i>>2) + 2t + (i&1)); spot values
    of the ISA's figure (m64nNk16 D, f32 accumulator)."""
    row, col = wgmma.d_position(0)
    assert (row[0], col[0]) == (0, 0) and (row[5], col[5]) == (1, 2) and (row[127], col[127]) == (55, 6)
    row, col = wgmma.d_position(3)
    assert (row[0], col[0]) == (8, 1)
    row, col = wgmma.d_position(6)
    assert (row[33], col[33]) == (16 + 0 + 8, 8 + 2 + 0)
    cells = {(int(r), int(c)) for i in range(8) for r, c in zip(*wgmma.d_position(i))}
    assert cells == {(r, c) for r in range(64) for c in range(16)}  # m64n16: each element once


def _kernel(n: int, wait: int | None = 0, fence: bool = True, proxy: bool = True, align: int = 1024,
            store_after: str = "", layouts: tuple[str, str] = ("row", "col")) -> str:
    """128 threads: copy a (SIZE f16) into workgroup tile sa and b into sb verbatim, then one
    m64nNk16 wgmma with descriptors (smem address >> 4) | hi_a / hi_b (kernel arguments) from a zero
    accumulator; thread t stores d_i at d[(n/2)*t + i]. ``store_after``: thread t then stores to
    sa[t] before the wait (``"barrier"``: after a gpu.barrier; ``"race"``: with none)."""
    nreg = n // 2
    st = "!llvm.struct<(" + ", ".join(["f32"] * nreg) + ")>"
    stores = "".join(f"""
      %v{i} = llvm.extractvalue %acc[{i}] : {st}
      %o{i} = arith.addi %obase, %c{i} : index
      memref.store %v{i}, %d[%o{i}] : memref<?xf32, {G}>""" for i in range(nreg))
    consts = "\n".join(f"      %c{v} = arith.constant {v} : index" for v in range(max(nreg, 2)))
    later = ("\n      gpu.barrier" if store_after == "barrier" else "") + f"""
      %one = arith.constant 1.0 : f16
      memref.store %one, %sa[%t] : memref<{SIZE}xf16, {W}>""" if store_after else ""
    return f"""
module attributes {{gpu.container_module}} {{
  gpu.module @kernels {{
    gpu.func @wg(%a: memref<?xf16, {G}>, %b: memref<?xf16, {G}>, %d: memref<?xf32, {G}>, %hia: i64, %hib: i64)
        workgroup(%sa : memref<{SIZE}xf16, {W}> {{llvm.align = {align} : i64}}, %sb : memref<{SIZE}xf16, {W}> {{llvm.align = {align} : i64}})
        kernel attributes {{known_block_size = array<i32: 128, 1, 1>}} {{
      %t = gpu.thread_id x
{consts}
      %c128 = arith.constant 128 : index
      %cn = arith.constant {SIZE} : index
      scf.for %e0 = %c0 to %cn step %c128 {{
        %e = arith.addi %e0, %t : index
        %va = memref.load %a[%e] : memref<?xf16, {G}>
        memref.store %va, %sa[%e] : memref<{SIZE}xf16, {W}>
        %vb = memref.load %b[%e] : memref<?xf16, {G}>
        memref.store %vb, %sb[%e] : memref<{SIZE}xf16, {W}>
      }}
      {"nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}" if proxy else ""}
      gpu.barrier
      %m = arith.constant 262143 : i64
      %four = arith.constant 4 : i64
      %pa = memref.extract_aligned_pointer_as_index %sa : memref<{SIZE}xf16, {W}> -> index
      %pa64 = arith.index_cast %pa : index to i64
      %pam = arith.andi %pa64, %m : i64
      %pas = arith.shrui %pam, %four : i64
      %da = arith.ori %pas, %hia : i64
      %pb = memref.extract_aligned_pointer_as_index %sb : memref<{SIZE}xf16, {W}> -> index
      %pb64 = arith.index_cast %pb : index to i64
      %pbm = arith.andi %pb64, %m : i64
      %pbs = arith.shrui %pbm, %four : i64
      %db = arith.ori %pbs, %hib : i64
      %z = llvm.mlir.zero : {st}
      {"nvvm.wgmma.fence.aligned" if fence else ""}
      %acc = nvvm.wgmma.mma_async %da, %db, %z, <m = 64, n = {n}, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <{layouts[0]}>], B[<f16>, <one>, <{layouts[1]}>] : {st} -> {st}
      nvvm.wgmma.commit.group.sync.aligned{later}
      {"" if wait is None else f"nvvm.wgmma.wait.group.sync.aligned {wait}"}
      %cnr = arith.constant {nreg} : index
      %obase = arith.muli %t, %cnr : index
      {stores}
      gpu.return
    }}
  }}
}}"""


def _run(n: int, mode: int, sbo: int, lbo: int, A, B, mn: tuple[bool, bool] = (False, False), **kw):
    """``mn``: A, B MN-major (``layoutA`` col, ``layoutB`` row), laid out by :func:`_isa_byte_mn`."""
    with context():
        it = Interpreter(ir.Module.parse(_kernel(n, layouts=("col" if mn[0] else "row", "row" if mn[1] else "col"),
                                                 **kw)))
    a, b = np.zeros(SIZE, np.float16), np.zeros(SIZE, np.float16)
    for buf, M, rows, m in ((a, A, 64, mn[0]), (b, B, n, mn[1])):
        for r in range(rows):
            for k in range(16):
                buf[(_isa_byte_mn if m else _isa_byte)(mode, r, k, sbo, lbo) // 2] = M[r, k]
    d = np.full(128 * n // 2, np.nan, np.float32)
    hi = np.array(wc.descriptor(0, lbo, sbo, mode), np.uint64).view(np.int64)[()]  # i64 bits
    it.run("wg", 1, 128, [a, b, d, hi, hi])
    return d.reshape(128, n // 2)


@pytest.mark.parametrize("n, mode, sbo, lbo", [(8, 1, 1024, 16), (16, 0, 256, 128), (16, 2, 512, 16),
                                               (8, 3, 256, 16)])
def test_wgmma_registers_lane_by_lane(n, mode, sbo, lbo):
    """D = A @ B^T (64x16 by n x16 K-major, small integers: exact) from tiles laid out by the ISA's
    formula for each swizzle mode; every thread's d_i is D at the ISA's D-fragment position."""
    rng = np.random.default_rng(n + mode)
    A = rng.integers(-8, 8, (64, 16)).astype(np.float16)
    B = rng.integers(-8, 8, (n, 16)).astype(np.float16)
    d = _run(n, mode, sbo, lbo, A, B)
    D = A.astype(np.float64) @ B.astype(np.float64).T
    L = np.arange(128)
    for i in range(n // 2):
        w, g, t = L // 32, (L % 32) // 4, L % 4
        row, col = 16 * w + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * t + (i & 1)
        np.testing.assert_array_equal(d[:, i], D[row, col])


@pytest.mark.parametrize("n, mode, sbo, lbo, mn", [(64, 1, 1024, 8192, (False, True)), (128, 1, 1024, 2048, (True, True)),
                                                   (16, 0, 128, 1024, (True, False))])
def test_wgmma_mn_major_operands_equal_numpy(n, mode, sbo, lbo, mn):
    """The same product with A and/or B MN-major (transposed layouts), tiles laid out by the ISA."""
    rng = np.random.default_rng(n)
    A = rng.integers(-8, 8, (64, 16)).astype(np.float16)
    B = rng.integers(-8, 8, (n, 16)).astype(np.float16)
    d = _run(n, mode, sbo, lbo, A, B, mn=mn)
    D = A.astype(np.float64) @ B.astype(np.float64).T
    for i in range(n // 2):
        row, col = wgmma.d_position(i)
        np.testing.assert_array_equal(d[:, i], D[row, col])


def _ab():
    rng = np.random.default_rng(1)
    return rng.integers(-8, 8, (64, 16)).astype(np.float16), rng.integers(-8, 8, (8, 16)).astype(np.float16)


def test_reading_accumulators_before_the_wait_is_reported():
    with pytest.raises(KerncRuntimeError, match=r"llvm\.extractvalue \(at .*\) reads the accumulators of the "
                                                r"wgmma\.mma_async at .* before a wgmma\.wait_group"):
        _run(8, 1, 1024, 16, *_ab(), wait=None)
    with pytest.raises(KerncRuntimeError, match="before a wgmma.wait_group"):
        _run(8, 1, 1024, 16, *_ab(), wait=1)  # one group committed, wait_group 1 leaves it pending


def test_overwriting_a_pending_wgmma_tile_is_reported():
    with pytest.raises(KerncRuntimeError, match=r"workgroup buffer 'sa'|overwritten before the wgmma\.wait_group"):
        _run(8, 1, 1024, 16, *_ab(), store_after="barrier")
    # with no barrier after the wgmma read, the store by another thread of the warpgroup is a race
    with pytest.raises(KerncRuntimeError, match=r"thread 127 loaded index 0 and thread 0 stores to it with no "
                                                r"gpu.barrier between them \(at .*; the load by thread 127 at "
                                                r"loc\(\"-\":\d+:\d+\)"):
        _run(8, 1, 1024, 16, *_ab(), store_after="race")


def test_missing_fences_and_alignment_are_reported():
    with pytest.raises(KerncRuntimeError, match="without a wgmma.fence"):
        _run(8, 1, 1024, 16, *_ab(), fence=False)
    with pytest.raises(KerncRuntimeError, match="fence.proxy.async"):
        _run(8, 1, 1024, 16, *_ab(), proxy=False)
    with pytest.raises(KerncRuntimeError, match="swizzle repeats every 1024 bytes"):
        _run(8, 1, 1024, 16, *_ab(), align=16)
    _run(8, 0, 256, 128, *_ab(), align=16)  # no swizzle: 16-byte alignment is enough
