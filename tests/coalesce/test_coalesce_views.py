"""kern-coalesce-views: transposed view accesses of 2-D problems staged through a padded tile.

Results must equal numpy exactly (full and partial tiles, several block sizes); the interpreter's
traffic counters show coalesced global accesses (4 sectors per full-warp f32 request) and
conflict-free shared accesses, against 32 sectors per request on the strided side without the pass.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions
from conftest import EXAMPLES

#: these tests are about the staged kernel itself, at every shape (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("always_staged")

TRANSPOSE = """
layout rowmaj(R, C) = (R, C):(C, 1);
@block({B})
kernel transpose(a: f32[R, C] view as rowmaj(R, C), b: f32[C, R] view as rowmaj(C, R))
        over (i, j) in (R, C) {{
    b[j, i] = a[i, j];
}}
"""

# the mirror image: the load is the strided side (a is C x R, read at (j, i))
TRANSPOSE_LOAD = """
layout rowmaj(R, C) = (R, C):(C, 1);
@block({B})
kernel tload(a: f32[C, R] view as rowmaj(C, R), b: f32[R, C] view as rowmaj(R, C), s: f32)
        over (i, j) in (R, C) {{
    b[i, j] = a[j, i] * s + 1.0;
}}
"""


def _module(src: str, coalesce: bool = True, remarks: bool = False) -> Module:
    return Module(Compilation(src, "t.kern", CompileOptions(coalesce=coalesce, remarks=remarks),
                              use_cache=False))


def _block_source(src: str, B: int) -> str:
    return src.format(B=B)


@pytest.mark.parametrize("B", [32, 64, 256, 1024])
@pytest.mark.parametrize("shape", [(96, 64), (64, 256), (37, 53), (1, 1), (5, 200)])
@pytest.mark.parametrize("coalesce", [True, False])
def test_transpose_results(B, shape, coalesce):
    R, C = shape
    mod = _module(_block_source(TRANSPOSE, B), coalesce)
    a = np.random.default_rng(R * C + B).standard_normal((R, C)).astype(np.float32)
    b = np.zeros((C, R), np.float32)
    mod.transpose(a, b)
    np.testing.assert_array_equal(b, a.T)


@pytest.mark.parametrize("B", [32, 256, 1024])
@pytest.mark.parametrize("shape", [(96, 64), (37, 53)])
@pytest.mark.parametrize("coalesce", [True, False])
def test_transposed_load_results(B, shape, coalesce):
    R, C = shape
    mod = _module(_block_source(TRANSPOSE_LOAD, B), coalesce)
    a = np.random.default_rng(7).standard_normal((C, R)).astype(np.float32)
    b = np.zeros((R, C), np.float32)
    mod.tload(a, b, np.float32(2.5))
    np.testing.assert_array_equal(b, a.T * np.float32(2.5) + np.float32(1.0))


@pytest.mark.parametrize("B", [256, 1024])
@pytest.mark.parametrize("shape", [(96, 64), (64, 256), (128, 128)])
def test_stats_coalesced_and_conflict_free(B, shape):
    R, C = shape
    a = np.arange(R * C, dtype=np.float32).reshape(R, C)
    fast = _module(_block_source(TRANSPOSE, B)).transpose(a, np.zeros((C, R), np.float32)).stats
    slow = _module(_block_source(TRANSPOSE, B), False).transpose(a, np.zeros((C, R), np.float32)).stats
    # staged: both sides at 4 sectors per (full-warp, f32) request, no bank conflicts
    assert fast.global_load_sectors == 4 * fast.global_load_requests
    assert fast.global_store_sectors == 4 * fast.global_store_requests
    assert fast.shared_requests > 0 and fast.shared_bank_conflicts == 0
    assert fast.global_load_requests == fast.global_store_requests == R * C // 32
    # naive: the loads are coalesced, the stores hit one sector per lane
    assert slow.global_load_sectors == 4 * slow.global_load_requests
    assert slow.global_store_sectors == 32 * slow.global_store_requests
    assert slow.shared_requests == 0


def test_stats_transposed_load():
    R, C = 64, 96
    mod = _module(_block_source(TRANSPOSE_LOAD, 256))
    st = mod.tload(np.ones((C, R), np.float32), np.zeros((R, C), np.float32), np.float32(1)).stats
    assert st.global_load_sectors == 4 * st.global_load_requests
    assert st.global_store_sectors == 4 * st.global_store_requests
    assert st.shared_bank_conflicts == 0
    naive = _module(_block_source(TRANSPOSE_LOAD, 256), False)
    st = naive.tload(np.ones((C, R), np.float32), np.zeros((R, C), np.float32), np.float32(1)).stats
    assert st.global_load_sectors == 32 * st.global_load_requests


def test_grid_and_tile_loop():
    """The launch has one block per tile (a 256-thread block moves a 32x32 tile, 4 elements per
    thread); the kernel still loops over its tiles (grid-stride), so any grid is correct."""
    mod = _module(_block_source(TRANSPOSE, 256))
    a = np.arange(37 * 53, dtype=np.float32).reshape(37, 53)
    b = np.zeros((53, 37), np.float32)
    res = mod.transpose(a, b)
    assert res.grid == 4  # the tile grid ceil(37/32) x ceil(53/32); ceil(1961 / 256) would be 8
    np.testing.assert_array_equal(b, a.T)
    sig = mod._compilation.signatures["transpose"]
    assert sig.tiles == [["R", 32], ["C", 32]]
    assert "scf.for" in mod.ir("gpu") and "gpu.grid_dim" in mod.ir("gpu")
    naive = _module(_block_source(TRANSPOSE, 256), False)
    assert naive._compilation.signatures["transpose"].tiles is None


# TI = min(32, 4 * B/32) rows of 32 columns, row stride S = 32 + 32/TI (one padding column for 32 rows)
@pytest.mark.parametrize("B, tile", [(64, "8x36"), (128, "16x34"), (256, "32x33"), (512, "32x33"), (1024, "32x33")])
def test_tile_padding_in_ir(B, tile):
    ti, s = map(int, tile.split("x"))
    gpu = _module(_block_source(TRANSPOSE, B)).ir("gpu")
    assert f"memref<{ti * s}xf32, #gpu.address_space<workgroup>>" in gpu
    assert "gpu.barrier" in gpu
    assert "workgroup" not in _module(_block_source(TRANSPOSE, B), False).ir("gpu")


def test_remarks(capfd):
    _module(_block_source(TRANSPOSE, 1024), remarks=True)
    err = capfd.readouterr().err.splitlines()
    assert "t.kern:6:15: remark: not staging 'a': the fastest thread coordinate 'j' has stride 1 in a's layout (already coalesced)" in err
    assert ("t.kern:6:13: remark: staging 'b' through a 32x33 workgroup tile, 1 element per thread: the fastest "
            "thread coordinate 'j' has "
            "stride R in b's layout, 'i' has stride 1") in err
    _module(_block_source(TRANSPOSE, 32), remarks=True)
    err = capfd.readouterr().err
    assert "not staging 'b': a block of 32 threads is too small for a tile" in err


@pytest.mark.parametrize("body, reason", [
    ("let q = block_id;\n    b[j, i] = a[i, j];",
     "not staging 'b': the kernel reads block_id(), which staging would change"),
    ("b[j, i] = a[i, j] + w;",
     "not staging 'b': the kernel uses the thread id beyond the problem coordinates (thread_id(), or an "
     "accessor such as a sequential buffer's)"),
    ("if i == 3 { return; }\n    b[j, i] = a[i, j];",
     "not staging 'b': the access is conditional (inside an 'if', a loop, or after a 'return')"),
])
def test_remarks_name_why_a_kernel_is_not_staged(capfd, body, reason):
    """A new user read "uses the thread id for more than its coordinates" for a block_id() read and
    for a sequential buffer, and "the access is conditional" for a store after an early return."""
    src = ("kernel k(a: f32[R, C] view, b: f32[C, R] view, w: f32[n] read) over (i, j) in (R, C) {\n"
           f"    {body}\n}}\n")
    _module(src, remarks=True)
    assert reason in capfd.readouterr().err


def test_remarks_once_per_access_of_the_source(capfd):
    """An unrolled loop repeats its view accesses: a 3x3 stencil printed the same remark 9 times."""
    src = ("kernel blur(a: f32[R, C] view, b: f32[R, C] view) over (i, j) in (R, C) {\n"
           "    let s = 0.0;\n"
           "    for di in 0..3 {\n"
           "        for dj in 0..3 {\n"
           "            s += a.checked(i + index(di) - 1, j + index(dj) - 1);\n"
           "        }\n"
           "    }\n"
           "    b[i, j] = s;\n"
           "}\n")
    _module(src, remarks=True)
    err = capfd.readouterr().err.splitlines()
    remarks = [line for line in err if "remark" in line]
    assert remarks and len(remarks) == len(set(remarks)), remarks
    assert sum("'a'" in line for line in remarks) == 1


def test_no_remarks_without_option(capfd):
    _module(_block_source(TRANSPOSE, 256))
    assert "remark" not in capfd.readouterr().err


def test_cli_no_coalesce_and_remarks(tmp_path, capsys):
    from kernc.cli import main

    src = tmp_path / "tr.kern"
    src.write_text(_block_source(TRANSPOSE, 256))
    assert main(["compile", str(src), "--emit", "gpu", "--remarks"]) == 0
    out = capsys.readouterr()
    assert "workgroup" in out.out and "remark: staging 'b' through a 32x33 workgroup tile, 4 elements per thread" in out.err
    assert main(["compile", str(src), "--emit", "gpu", "--no-coalesce"]) == 0
    out = capsys.readouterr()
    assert "workgroup" not in out.out and "remark" not in out.err
    # the cache keeps the two variants apart
    assert main(["compile", str(src), "--emit", "gpu"]) == 0
    assert "workgroup" in capsys.readouterr().out


@pytest.mark.parametrize("src, kernel, why", [
    ("kernel k(a: f32[R, C] view, b: f32[R, C] view) over (i, j) in (R, C) { b[i, j] = a[i, j]; }",
     "k", "stride 1"),
    ("kernel k(a: f32[R, C] view, b: f32[C, R + 1] view) over (i, j) in (R, C) { b[j, i + 1] = a[i, j]; }",
     "k", "not staging 'b': its coordinates are not the thread coordinates (i, j) in some order"),
])
def test_declined(src, kernel, why, capfd):
    mod = _module(src, remarks=True)
    assert why in capfd.readouterr().err
    assert "workgroup" not in mod.ir("gpu")


@pytest.mark.parametrize("B", [256, 1024])
def test_ptxas_accepts(B):
    from kernc.backend import toolkit

    if toolkit.ptxas_path() is None:
        pytest.skip("ptxas not found")
    comp = Compilation(_block_source(TRANSPOSE, B), "t.kern", use_cache=False)
    result = toolkit.run_ptxas(comp.ptx(), arch="sm_90")
    assert result.ok, result.log
    assert result.spills["transpose"] == (0, 0)


def test_public_api_turns_staging_off():
    """``kernc.compile(..., coalesce=False)`` (the API had no way to say ``--no-coalesce``): the naive
    transpose has no workgroup tile, stores one sector per lane, and computes the same values."""
    import kernc

    src = open(os.path.join(EXAMPLES, "transpose.kern"), encoding="utf-8").read()
    a = np.arange(64 * 96, dtype=np.float32).reshape(64, 96)
    stats = {}
    for coalesce in (True, False):
        mod = kernc.compile(src, coalesce=coalesce)
        assert ("workgroup" in mod.ir("gpu")) is coalesce
        b = np.zeros((96, 64), np.float32)
        stats[coalesce] = mod.transpose(a, b).stats
        np.testing.assert_array_equal(b, a.T)
    assert stats[True].global_store_sectors * 8 == stats[False].global_store_sectors


def test_remarks_name_the_programs_own_coordinates(capfd):
    """The remarks called the fastest coordinate 'j' whatever the program named it."""
    src = ("layout rowmaj(R, C) = (R, C):(C, 1);\n"
           "kernel t(a: f32[R, C] view as rowmaj(R, C), b: f32[C, R] view as rowmaj(C, R))\n"
           "        over (row, col) in (R, C) {\n"
           "    b[col, row] = a[row, col];\n"
           "}\n")
    _module(src, remarks=True)
    err = capfd.readouterr().err
    assert "not staging 'a': the fastest thread coordinate 'col' has stride 1" in err, err
    assert ("staging 'b' through a 32x33 workgroup tile, 4 elements per thread: the fastest thread "
            "coordinate 'col' has stride R") in err
    assert "'j'" not in err


N_D = """
layout nchw(N, C, H, W) = (N, C, H, W):(C * H * W, H * W, W, 1);
layout nhwc(N, H, W, C) = (N, H, W, C):(H * W * C, W * C, C, 1);
layout cm(R, C) = (R, C):(1, R);
kernel to_nhwc(x: f32[N, C, H, W] view as nchw(N, C, H, W), y: f32[N, H, W, C] view as nhwc(N, H, W, C))
        over (n, c, h, w) in (N, C, H, W) {
    y[n, h, w, c] = x[n, c, h, w];
}
kernel to_nchw(x: f32[N, H, W, C] view as nhwc(N, H, W, C), y: f32[N, C, H, W] view as nchw(N, C, H, W))
        over (n, c, h, w) in (N, C, H, W) {
    y[n, c, h, w] = 2.0 * x[n, h, w, c];
}
kernel colmajor(a: f32[R, C] view as cm(R, C), b: f32[R, C] view) over (i, j) in (R, C) {
    b[i, j] = a[i, j];
}
"""


@pytest.fixture(scope="module")
def n_d():
    return _module(N_D)


@pytest.mark.parametrize("shape", [(2, 64, 4, 32), (3, 5, 7, 9), (1, 33, 2, 40), (1, 1, 1, 1)])
def test_nchw_nhwc_permutes_are_staged_over_their_channel_and_width(n_d, shape):
    """The NCHW <-> NHWC permute of the issue: a 4-D problem whose fastest thread coordinate w has
    stride C on the NHWC side is staged as a batch (n, h) of (c, w) tiles: both sides coalesced."""
    N, C, H, W = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    y = np.zeros((N, H, W, C), np.float32)
    st = n_d.to_nhwc(x, y).stats
    np.testing.assert_array_equal(y, x.transpose(0, 2, 3, 1))
    back = np.zeros(shape, np.float32)
    st2 = n_d.to_nchw(y, back).stats
    np.testing.assert_array_equal(back, 2.0 * x)
    if shape == (2, 64, 4, 32):  # full tiles: the ideal 4 sectors per request on both sides
        for s in (st, st2):
            assert s.global_load_sectors == 4 * s.global_load_requests
            assert s.global_store_sectors == 4 * s.global_store_requests
            assert s.shared_bank_conflicts == 0


def test_n_d_staging_is_in_the_ir_and_off_without_coalesce(n_d):
    gpu = n_d.ir("gpu")
    assert gpu.count("#gpu.address_space<workgroup>>") >= 3  # to_nhwc, to_nchw, colmajor
    assert "workgroup" not in _module(N_D, coalesce=False).ir("gpu")


def test_a_column_major_read_at_i_j_is_staged(n_d, capfd):
    """(i, j) on a column-major view is a transpose too (it used to be declined)."""
    a = np.arange(40 * 70, dtype=np.float32).reshape(40, 70)
    storage = np.ascontiguousarray(a.T)  # (R, C):(1, R): element (i, j) at j*R + i, shape (C, R)
    b = np.zeros((40, 70), np.float32)
    st = n_d.colmajor(storage, b).stats
    np.testing.assert_array_equal(b, a)
    assert st.global_load_sectors < 8 * st.global_load_requests


def test_tiles_divide_only_as_often_as_their_grid_needs(n_d):
    """A 2-D problem has one batch element: its tile index is split by the tile columns alone (an
    extra division by the tile count crept into the N-D generalisation: +18 SASS on transpose);
    the 4-D permute also splits its batch (n, h)."""
    two_d = _module(_block_source(TRANSPOSE, 256)).ir("gpu")
    assert two_d.count("arith.divui") + two_d.count("arith.divsi") == 1
    fn = n_d.ir("gpu").split("gpu.func @to_nchw")[0]  # to_nhwc only
    assert fn.count("arith.divui") + fn.count("arith.divsi") == 3
