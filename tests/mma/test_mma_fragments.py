"""The CPU interpreter's ``nvgpu.ldmatrix`` / ``nvgpu.mma.sync``: each lane's registers against the
PTX ISA's fragment tables, written out here entry by entry (PTX ISA 9.7.14.5.8, "Matrix Fragments
for mma.m16n8k16 with floating point type"; 9.7.9.25, "ldmatrix"), not computed by the code
under test."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.backend.interpreter import Interpreter, nvgpu
from kernc.compiler import context
from kernc.support.errors import KerncRuntimeError
from kernc.support.mlir import ir

# (lane, register) -> (row, col), read off the ISA's figures: groupID = lane >> 2,
# threadID_in_group = lane % 4.
A_TABLE = {  # A 16x16 .row: a0,a1 row g, a2,a3 row g+8, a4..a7 the same rows 8 columns right
    (0, 0): (0, 0), (0, 1): (0, 1), (0, 2): (8, 0), (0, 3): (8, 1),
    (0, 4): (0, 8), (0, 5): (0, 9), (0, 6): (8, 8), (0, 7): (8, 9),
    (5, 0): (1, 2), (5, 1): (1, 3), (5, 2): (9, 2), (5, 4): (1, 10), (5, 7): (9, 11),
    (31, 0): (7, 6), (31, 3): (15, 7), (31, 5): (7, 15), (31, 7): (15, 15),
}
B_TABLE = {  # B 16x8 .col: b0,b1 rows 2t, 2t+1 of column g; b2,b3 rows 8 below
    (0, 0): (0, 0), (0, 1): (1, 0), (0, 2): (8, 0), (0, 3): (9, 0),
    (6, 0): (4, 1), (6, 1): (5, 1), (6, 3): (13, 1),
    (31, 0): (6, 7), (31, 2): (14, 7), (31, 3): (15, 7),
}
C_TABLE = {  # C/D 16x8: c0,c1 row g columns 2t, 2t+1; c2,c3 row g+8
    (0, 0): (0, 0), (0, 1): (0, 1), (0, 2): (8, 0), (0, 3): (8, 1),
    (13, 0): (3, 2), (13, 1): (3, 3), (13, 3): (11, 3),
    (31, 0): (7, 6), (31, 3): (15, 7),
}


@pytest.mark.parametrize("table, position", [(A_TABLE, nvgpu.a_position), (B_TABLE, nvgpu.b_position),
                                             (C_TABLE, nvgpu.c_position)])
def test_fragment_positions_are_the_isa_tables(table, position):
    for (lane, reg), want in table.items():
        row, col = position(reg)
        assert (int(row[lane]), int(col[lane])) == want, (lane, reg)


G = "#gpu.address_space<global>"
W = "#gpu.address_space<workgroup>"


def _kernel(divergent: bool = False) -> str:
    """32 threads: a and b (16x16 f16, row-major) into workgroup memory, A = ldmatrix.x4 of a
    (lane l: row l % 16, column 8*(l/16)), B = ldmatrix.x2.trans of b's first 8 columns (lane l:
    row l % 16), D = mma.sync(A, B, 0.5); every lane stores its registers: ra[8l + i] = a_i,
    rb[4l + i] = b_i, rd[4l + i] = d_i."""
    stores = []
    for name, frag, n, ty, vty in (("ra", "fa", 8, "f16", "vector<4x2xf16>"), ("rb", "fb", 4, "f16", "vector<2x2xf16>"),
                                   ("rd", "fd", 4, "f32", "vector<2x2xf32>")):
        for i in range(n):
            stores.append(f"""
      %{name}{i} = vector.extract %{frag}[{i >> 1}, {i & 1}] : {ty} from {vty}
      %{name}i{i} = arith.addi %{name}base, %c{i} : index
      memref.store %{name}{i}, %{name}[%{name}i{i}] : memref<?x{ty}, {G}>""")
    mma = """%fd = nvgpu.mma.sync(%fa, %fb, %acc) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>"""
    if divergent:  # lanes 16..31 skip the mma (and store no D)
        mma = f"""%low = arith.cmpi ult, %t, %c16 : index
      scf.if %low {{
        %fx = nvgpu.mma.sync(%fa, %fb, %acc) {{mmaShape = [16, 8, 16]}} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
        %x = vector.extract %fx[0, 0] : f32 from vector<2x2xf32>
        memref.store %x, %rd[%t] : memref<?xf32, {G}>
      }}
      %fd = arith.constant dense<0.0> : vector<2x2xf32>"""
    consts = "\n".join(f"      %c{v} = arith.constant {v} : index" for v in range(17))
    return f"""
module attributes {{gpu.container_module}} {{
  gpu.module @kernels {{
    gpu.func @frag(%a: memref<?xf16, {G}>, %b: memref<?xf16, {G}>, %ra: memref<?xf16, {G}>,
                   %rb: memref<?xf16, {G}>, %rd: memref<?xf32, {G}>)
        workgroup(%sa : memref<256xf16, {W}>, %sb : memref<256xf16, {W}>)
        kernel attributes {{known_block_size = array<i32: 32, 1, 1>}} {{
      %t = gpu.thread_id x
{consts}
      %t8 = arith.muli %t, %c8 : index
      scf.for %r = %c0 to %c8 step %c1 {{
        %e = arith.addi %t8, %r : index
        %va = memref.load %a[%e] : memref<?xf16, {G}>
        memref.store %va, %sa[%e] : memref<256xf16, {W}>
        %vb = memref.load %b[%e] : memref<?xf16, {G}>
        memref.store %vb, %sb[%e] : memref<256xf16, {W}>
      }}
      gpu.barrier
      %l16 = arith.remui %t, %c16 : index
      %hi = arith.divui %t, %c16 : index
      %row = arith.muli %l16, %c16 : index
      %col = arith.muli %hi, %c8 : index
      %addr = arith.addi %row, %col : index
      %fa = nvgpu.ldmatrix %sa[%addr] {{numTiles = 4 : i32, transpose = false}} : memref<256xf16, {W}> -> vector<4x2xf16>
      %fb = nvgpu.ldmatrix %sb[%row] {{numTiles = 2 : i32, transpose = true}} : memref<256xf16, {W}> -> vector<2x2xf16>
      %acc = arith.constant dense<0.5> : vector<2x2xf32>
      {mma}
      %rabase = arith.muli %t, %c8 : index
      %rbbase = arith.muli %t, %c4 : index
      %rdbase = arith.muli %t, %c4 : index
      {"".join(stores)}
      gpu.return
    }}
  }}
}}"""


def _run(divergent: bool = False, a=None, b=None):
    with context():
        module = ir.Module.parse(_kernel(divergent))
        it = Interpreter(module)
    idx = np.arange(256, dtype=np.float16)  # element (r, c) holds r*16 + c: exact in f16
    a = idx.copy() if a is None else a
    b = (idx + 1000).astype(np.float16) if b is None else b
    ra, rb, rd = np.zeros(256, np.float16), np.zeros(128, np.float16), np.zeros(128, np.float32)
    it.run("frag", 1, 32, [a, b, ra, rb, rd])
    return a, b, ra.reshape(32, 8), rb.reshape(32, 4), rd.reshape(32, 4)


def test_ldmatrix_registers_lane_by_lane():
    """ldmatrix.x4 of a row-major 16x16 tile is the A fragment; ldmatrix.x2.trans of a row-major
    16x8 (k x n) tile the B fragment: each listed lane's register holds the element (row, col)
    of the table (the value r*16 + c)."""
    _, _, ra, rb, _ = _run()
    for (lane, reg), (r, c) in A_TABLE.items():
        assert ra[lane, reg] == r * 16 + c, (lane, reg)
    for (lane, reg), (r, c) in B_TABLE.items():
        assert rb[lane, reg] == 1000 + r * 16 + c, (lane, reg)


def test_mma_sync_registers_lane_by_lane():
    """D = A @ B + 0.5 (16x16 @ 16x8, f16 inputs, f32 sums): each listed lane's d_i is D at the
    table's (row, col); every lane agrees with an f64 product (the sums are exact here: small
    integers)."""
    rng = np.random.default_rng(5)
    a = rng.integers(-8, 8, 256).astype(np.float16)
    b = rng.integers(-8, 8, 256).astype(np.float16)
    _, _, _, _, rd = _run(a=a, b=b)
    A = a.reshape(16, 16).astype(np.float64)
    B = b.reshape(16, 16)[:, :8].astype(np.float64)
    D = A @ B + 0.5
    for (lane, reg), (r, c) in C_TABLE.items():
        assert rd[lane, reg] == D[r, c], (lane, reg)
    got = np.zeros((16, 8))
    for reg in range(4):
        row, col = nvgpu.c_position(reg)
        got[row, col] = rd[:, reg]
    np.testing.assert_array_equal(got, D)


def test_mma_sync_in_divergent_control_flow_is_an_error():
    with pytest.raises(KerncRuntimeError, match=r"nvgpu.mma.sync in divergent control flow.*lane 16"):
        _run(divergent=True)
