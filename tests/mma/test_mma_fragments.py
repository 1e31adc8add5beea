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


# ---- m16n8k32 (s8) and m16n8k8 (tf32): PTX ISA 9.7.14.5.10 and 9.7.14.5.7, read off the figures --
A_K32_TABLE = {  # A 16x32 s8: a0..a3 row g columns 4t..4t+3, a4..a7 row g+8, a8..a15 16 columns right
    (0, 0): (0, 0), (0, 3): (0, 3), (0, 4): (8, 0), (0, 7): (8, 3),
    (0, 8): (0, 16), (0, 11): (0, 19), (0, 12): (8, 16), (0, 15): (8, 19),
    (5, 0): (1, 4), (5, 3): (1, 7), (5, 4): (9, 4), (5, 9): (1, 21), (5, 15): (9, 23),
    (31, 0): (7, 12), (31, 7): (15, 15), (31, 8): (7, 28), (31, 15): (15, 31),
}
B_K32_TABLE = {  # B 32x8 s8: b0..b3 rows 4t..4t+3 of column g, b4..b7 16 rows below
    (0, 0): (0, 0), (0, 3): (3, 0), (0, 4): (16, 0), (0, 7): (19, 0),
    (6, 0): (8, 1), (6, 3): (11, 1), (6, 4): (24, 1),
    (31, 0): (12, 7), (31, 7): (31, 7),
}
A_K8_TABLE = {  # A 16x8 tf32: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
    (0, 0): (0, 0), (0, 1): (8, 0), (0, 2): (0, 4), (0, 3): (8, 4),
    (13, 0): (3, 1), (13, 1): (11, 1), (13, 2): (3, 5), (13, 3): (11, 5),
    (31, 0): (7, 3), (31, 3): (15, 7),
}
B_K8_TABLE = {  # B 8x8 tf32: b0 (t, g), b1 (t+4, g)
    (0, 0): (0, 0), (0, 1): (4, 0), (6, 0): (2, 1), (6, 1): (6, 1), (31, 0): (3, 7), (31, 1): (7, 7),
}


@pytest.mark.parametrize("table, position", [(A_K32_TABLE, nvgpu.a_position_k32), (B_K32_TABLE, nvgpu.b_position_k32),
                                             (A_K8_TABLE, nvgpu.a_position_k8), (B_K8_TABLE, nvgpu.b_position_k8)])
def test_k32_and_k8_fragment_positions_are_the_isa_tables(table, position):
    for (lane, reg), want in table.items():
        row, col = position(reg)
        assert (int(row[lane]), int(col[lane])) == want, (lane, reg)


# kind -> (element, bytes, k, accumulator, mma attribute)
KINDS = {"s8": ("i8", 1, 32, "i32", ""), "tf32": ("f32", 4, 8, "f32", ", tf32Enabled")}


def _kernel_kind(kind: str, acc: str) -> str:
    """32 threads: A (16 x k, row-major) and B stored n-major (8 x k: row n holds column n of the
    k x 8 matrix, its k contiguous) into workgroup memory; A = ldmatrix.x4 (lane l: row l % 16,
    16 bytes * (l / 16) into it), B = ldmatrix.x2 (lane l: row n = l % 8, 16 bytes * ((l % 16) / 8));
    D = mma.sync(A, B, acc); ra[R*l + i] = a_i, rb[R/2*l + i] = b_i, rd[4l + i] = d_i."""
    ty, size, k, cty, attr = KINDS[kind]
    per = 4 // size
    na, nb = 16 * k, 8 * k
    va, vb, vc = f"vector<4x{per}x{ty}>", f"vector<2x{per}x{ty}>", f"vector<2x2x{cty}>"
    stores = []
    for name, frag, n, cols, t, vty in (("ra", "fa", 4 * per, per, ty, va), ("rb", "fb", 2 * per, per, ty, vb),
                                        ("rd", "fd", 4, 2, cty, vc)):
        for i in range(n):
            stores.append(f"""
      %{name}{i} = vector.extract %{frag}[{i // cols}, {i % cols}] : {t} from {vty}
      %{name}i{i} = arith.addi %{name}base, %c{i} : index
      memref.store %{name}{i}, %{name}[%{name}i{i}] : memref<?x{t}, {G}>""")
    consts = "\n".join(f"      %c{v} = arith.constant {v} : index" for v in range(33))
    return f"""
module attributes {{gpu.container_module}} {{
  gpu.module @kernels {{
    gpu.func @frag(%a: memref<?x{ty}, {G}>, %b: memref<?x{ty}, {G}>, %ra: memref<?x{ty}, {G}>,
                   %rb: memref<?x{ty}, {G}>, %rd: memref<?x{cty}, {G}>)
        workgroup(%sa : memref<{na}x{ty}, {W}>, %sb : memref<{nb}x{ty}, {W}>)
        kernel attributes {{known_block_size = array<i32: 32, 1, 1>}} {{
      %t = gpu.thread_id x
{consts}
      %ea = arith.constant {na // 32} : index
      %eb = arith.constant {nb // 32} : index
      %ta = arith.muli %t, %ea : index
      %tb = arith.muli %t, %eb : index
      scf.for %r = %c0 to %ea step %c1 {{
        %e = arith.addi %ta, %r : index
        %v = memref.load %a[%e] : memref<?x{ty}, {G}>
        memref.store %v, %sa[%e] : memref<{na}x{ty}, {W}>
      }}
      scf.for %r = %c0 to %eb step %c1 {{
        %e = arith.addi %tb, %r : index
        %v = memref.load %b[%e] : memref<?x{ty}, {G}>
        memref.store %v, %sb[%e] : memref<{nb}x{ty}, {W}>
      }}
      gpu.barrier
      %row16 = arith.constant {16 // size} : index
      %kk = arith.constant {k} : index
      %l16 = arith.remui %t, %c16 : index
      %hi = arith.divui %t, %c16 : index
      %arow = arith.muli %l16, %kk : index
      %acol = arith.muli %hi, %row16 : index
      %aaddr = arith.addi %arow, %acol : index
      %l8 = arith.remui %t, %c8 : index
      %h8 = arith.divui %l16, %c8 : index
      %brow = arith.muli %l8, %kk : index
      %bcol = arith.muli %h8, %row16 : index
      %baddr = arith.addi %brow, %bcol : index
      %fa = nvgpu.ldmatrix %sa[%aaddr] {{numTiles = 4 : i32, transpose = false}} : memref<{na}x{ty}, {W}> -> {va}
      %fb = nvgpu.ldmatrix %sb[%baddr] {{numTiles = 2 : i32, transpose = false}} : memref<{nb}x{ty}, {W}> -> {vb}
      %acc = arith.constant dense<{acc}> : {vc}
      %fd = nvgpu.mma.sync(%fa, %fb, %acc) {{mmaShape = [16, 8, {k}]{attr}}} : ({va}, {vb}, {vc}) -> {vc}
      %rabase = arith.muli %t, %c{4 * per} : index
      %rbbase = arith.muli %t, %c{2 * per} : index
      %rdbase = arith.muli %t, %c4 : index
      {"".join(stores)}
      gpu.return
    }}
  }}
}}"""


_KIND_MODULES: dict = {}


def _run_kind(kind: str, a, b_nmajor, acc=None):
    """Run :func:`_kernel_kind` (interpreters shared per kind and accumulator); returns each lane's
    registers ``(ra [32, 4*per], rb [32, 2*per], rd [32, 4])``."""
    acc = acc if acc is not None else ("0" if kind == "s8" else "0.0")
    key = (kind, acc)
    if key not in _KIND_MODULES:
        with context():
            _KIND_MODULES[key] = Interpreter(ir.Module.parse(_kernel_kind(kind, acc)))
    ty, size, k, cty, _ = KINDS[kind]
    dt, ct = (np.int8, np.int32) if kind == "s8" else (np.float32, np.float32)
    per = 4 // size
    ra, rb, rd = np.zeros(32 * 4 * per, dt), np.zeros(32 * 2 * per, dt), np.zeros(128, ct)
    _KIND_MODULES[key].run("frag", 1, 32, [np.ascontiguousarray(a, dt).reshape(-1),
                                            np.ascontiguousarray(b_nmajor, dt).reshape(-1), ra, rb, rd])
    return ra.reshape(32, -1), rb.reshape(32, -1), rd.reshape(32, 4)


@pytest.mark.parametrize("kind, a_table, b_table", [("s8", A_K32_TABLE, B_K32_TABLE), ("tf32", A_K8_TABLE, B_K8_TABLE)])
def test_ldmatrix_of_8_and_32_bit_elements_lane_by_lane(kind, a_table, b_table):
    """ldmatrix.x4 of a row-major 16 x k tile is the A fragment and ldmatrix.x2 of the n-major
    B tile the B fragment, for i8 (k = 32) and f32 (k = 8) elements: run with each element holding
    its row, then its column (i8 cannot hold r*32 + c), each listed register is the table's."""
    k = KINDS[kind][2]
    rows = np.repeat(np.arange(16), k).reshape(16, k)
    cols = np.tile(np.arange(k), 16).reshape(16, k)
    bk = np.repeat(np.arange(k), 8).reshape(k, 8)  # B (k x 8) element (r, c) holds r, then c
    bn = np.tile(np.arange(8), k).reshape(k, 8)
    ra_r, rb_r, _ = _run_kind(kind, rows, bk.T)
    ra_c, rb_c, _ = _run_kind(kind, cols, bn.T)
    for (lane, reg), (r, c) in a_table.items():
        assert (ra_r[lane, reg], ra_c[lane, reg]) == (r, c), (lane, reg)
    for (lane, reg), (r, c) in b_table.items():
        assert (rb_r[lane, reg], rb_c[lane, reg]) == (r, c), (lane, reg)


def _gather_d(rd):
    D = np.zeros((16, 8), rd.dtype)
    for reg in range(4):
        row, col = nvgpu.c_position(reg)
        D[row, col] = rd[:, reg]
    return D


def test_mma_sync_m16n8k32_s8_is_exact_lane_by_lane():
    """D = A @ B + 7 of signed i8 16x32 @ 32x8 (i32 sums): the listed lanes' d_i at the table's
    positions, and every lane equal to the exact product (the extreme values -128 and 127 too)."""
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, (16, 32))
    b = rng.integers(-128, 128, (32, 8))
    a[0, :], b[:, 0] = -128, -128  # the largest products
    _, _, rd = _run_kind("s8", a, b.T, acc="7")
    D = a.astype(np.int64) @ b + 7
    for (lane, reg), (r, c) in C_TABLE.items():
        assert rd[lane, reg] == D[r, c], (lane, reg)
    np.testing.assert_array_equal(_gather_d(rd), D)


def test_mma_sync_m16n8k32_saturates_as_satfinite():
    """MLIR lowers integer mma.sync with .satfinite: c + sum past 2**31 - 1 clamps, not wraps."""
    a = np.full((16, 32), 127)
    b = np.full((32, 8), 127)
    b[:, 1] = -127
    _, _, rd = _run_kind("s8", a, b.T, acc="2147483000")
    D = _gather_d(rd)
    assert (D[:, 0] == 2**31 - 1).all()  # 2147483000 + 32*127*127 clamps
    assert (D[:, 1] == 2147483000 - 32 * 127 * 127).all()


def test_mma_sync_m16n8k8_tf32_reads_19_bits_and_sums_k_ascending():
    """D = A @ B + 0.5 of 16x8 @ 8x8 tf32: the low 13 bits of each operand are not read, each
    product is exact and the sums run k ascending in f32: bitwise that reference."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal((8, 8)).astype(np.float32)
    _, _, rd = _run_kind("tf32", a, b.T, acc="0.5")

    def hi19(x):
        return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)
    A, B = hi19(a), hi19(b)
    assert not np.array_equal(A, a)  # the test's operands do have low bits
    want = np.full((16, 8), 0.5, np.float32)
    for k in range(8):
        want = want + A[:, k:k + 1] * B[k]
    got = _gather_d(rd)
    for (lane, reg), (r, c) in C_TABLE.items():
        assert rd[lane, reg] == want[r, c], (lane, reg)
    np.testing.assert_array_equal(got, want)
