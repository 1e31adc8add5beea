"""kern-tile-contractions: naive contraction loops tiled through workgroup memory.

The tiled kernel's results must be bitwise those of the same program compiled with ``tile=False``
(and of a numpy loop that sums in the kernel's order) at odd sizes -- partial block tiles, partial
k-chunks, empty loops --, for f32 and i32, batched, and through a transposed layout; the
interpreter's counters show the reuse (global sectors per output) and conflict-free workgroup
accesses. Declined contractions compile untiled, with a remark saying why; ``@tile`` configurations
that cannot fit are located errors naming the limit.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import kernc
from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions
from kernc.dialect.mapping import ItemMapping
from kernc.errors import CompileError
from conftest import EXAMPLES, example_reference

GEMM = open(os.path.join(EXAMPLES, "gemm.kern")).read()

GEMM_I32 = """
kernel gemm(a: i32[M, K] view, b: i32[K, N] view, c: i32[M, N] view) over (i, j) in (M, N) {
    let acc = 0i32;
    for k in 0..K { acc += a[i, k] * b[k, j]; }
    c[i, j] = acc;
}
"""

# batched, a stored column-major (its unit stride along i: loaded along i), an epilogue
BATCHED = """
layout colmaj(M, K) = (M, K):(1, M);
kernel bgemm(a: f32[M, K] view as colmaj(M, K), b: f32[Z, K, N] view, c: f32[Z, M, N] view, s: f32)
        over (z, i, j) in (Z, M, N) {
    let acc = 0.0;
    for k in 0..K { acc += a[i, k] * b[z, k, j]; }
    c[z, i, j] = acc * s + 1.0;
}
"""


def _module(src: str, tile: bool = True, remarks: bool = False) -> Module:
    # (choose_tile=False: every launch runs the tiled kernel, also those smaller than one block tile)
    return Module(Compilation(src, "t.kern", CompileOptions(tile=tile, remarks=remarks), use_cache=False),
                  choose_tile=False)


@pytest.fixture(scope="module")
def gemm_pair():
    return _module(GEMM), _module(GEMM, tile=False)


@pytest.fixture(scope="module")
def i32_pair():
    return _module(GEMM_I32), _module(GEMM_I32, tile=False)


@pytest.fixture(scope="module")
def batched_pair():
    return _module(BATCHED), _module(BATCHED, tile=False)


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.int32) if x.dtype == np.float32 else x


def _run(mod, a, b, M, N, dtype, **kw):
    c = np.full((M, N), 7, dtype)
    result = mod.gemm(a, b, c, **kw)
    return c, result


@pytest.mark.parametrize("shape", [(1, 1, 1), (33, 17, 65), (64, 64, 64)])
def test_gemm_matches_numpy_reference(gemm_pair, shape):
    M, K, N = shape
    rng = np.random.default_rng(M * 1000 + K)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c, _ = _run(gemm_pair[0], a, b, M, N, np.float32)
    want = example_reference("gemm").gemm(a, b)  # k ascending in float32: bit for bit
    np.testing.assert_array_equal(_bits(c), _bits(want))
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", [(1, 1, 1), (33, 17, 65), (64, 64, 64), (65, 16, 63), (7, 0, 9),
                                   (130, 33, 3)])
def test_tiled_gemm_bitwise_equals_untiled(gemm_pair, i32_pair, shape):
    M, K, N = shape
    rng = np.random.default_rng(M + 7 * K + 31 * N)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    a[0, :] = -0.0  # signed zeros and infinities stay as the untiled kernel makes them
    if K > 1:
        b[1, 0] = np.inf
    tiled, _ = _run(gemm_pair[0], a, b, M, N, np.float32)
    untiled, _ = _run(gemm_pair[1], a, b, M, N, np.float32)
    np.testing.assert_array_equal(_bits(tiled), _bits(untiled))
    ai = rng.integers(-2**31, 2**31, (M, K), dtype=np.int64).astype(np.int32)  # wrapping products
    bi = rng.integers(-2**31, 2**31, (K, N), dtype=np.int64).astype(np.int32)
    ti, _ = _run(i32_pair[0], ai, bi, M, N, np.int32)
    ui, _ = _run(i32_pair[1], ai, bi, M, N, np.int32)
    np.testing.assert_array_equal(ti, ui)


@pytest.mark.parametrize("shape", [(2, 33, 17, 65), (3, 1, 5, 70)])
def test_batched_transposed_gemm_bitwise_equals_untiled(batched_pair, shape):
    Z, M, K, N = shape
    rng = np.random.default_rng(Z + M)
    logical = rng.standard_normal((M, K)).astype(np.float32)
    a = np.ascontiguousarray(logical.T)  # colmaj(M, K): stored as a (K, M) array
    b = rng.standard_normal((Z, K, N)).astype(np.float32)
    outs = []
    for mod in batched_pair:
        c = np.zeros((Z, M, N), np.float32)
        mod.bgemm(a, b, c, np.float32(0.5))
        outs.append(c)
    np.testing.assert_array_equal(_bits(outs[0]), _bits(outs[1]))
    want = np.einsum("ik,zkj->zij", logical.astype(np.float64), b) * 0.5 + 1.0
    np.testing.assert_allclose(outs[0], want, rtol=1e-4, atol=1e-4)


def test_traffic_shows_the_reuse(gemm_pair):
    """128x128x64: each a and b element is loaded once per block tile (64 items share it): the
    global sectors per output drop from 2*K/8 + ... to K/256*... and every shared access is
    conflict-free (the padded a tile, the strided micro-tiles)."""
    n, K = 128, 64
    rng = np.random.default_rng(3)
    a = rng.standard_normal((n, K)).astype(np.float32)
    b = rng.standard_normal((K, n)).astype(np.float32)
    _, rt = _run(gemm_pair[0], a, b, n, n, np.float32)
    _, ru = _run(gemm_pair[1], a, b, n, n, np.float32)
    st, su = rt.stats, ru.stats
    # tiled: per block tile and chunk of 16, a 64x16 and a 16x64 f32 tile, 128 sectors each
    assert st.global_load_sectors == (n // 64) ** 2 * (K // 16) * 256
    assert st.global_load_sectors / n ** 2 == 0.25
    assert su.global_load_sectors / n ** 2 >= 10 * st.global_load_sectors / n ** 2
    assert st.shared_requests > 0 and st.shared_bank_conflicts == 0
    assert st.global_store_sectors == su.global_store_sectors  # the outputs are stored coalesced


def test_mapping_and_launch(gemm_pair):
    sig = gemm_pair[0]._compilation.signatures["gemm"]
    assert sig.tiles == [["M", 64], ["N", 64]]
    m = ItemMapping.from_json(str(gemm_pair[0].ir("gpu")).split('kern.mapping = "')[1].split('"')[0]
                              .replace("\\22", '"'))
    assert (m.tile, m.values, m.block) == ((64, 64), 16, 256)
    # thread 17 (tx 1, ty 1): items (1 + 16u, 1 + 16v)
    assert {m.tile_position(17, k) for k in range(16)} == {(1 + 16 * u, 1 + 16 * v) for u in range(4) for v in range(4)}
    _, r = _run(gemm_pair[0], np.zeros((65, 3), np.float32), np.zeros((3, 129), np.float32), 65, 129,
                np.float32)
    assert r.grid == 2 * 3
    assert gemm_pair[1]._compilation.signatures["gemm"].tiles is None


def _remarks(src: str, capsys, **kw) -> str:
    _module(src, remarks=True, **kw)
    return capsys.readouterr().err


def test_remark_says_what_it_did(capsys):
    err = _remarks(GEMM, capsys)
    assert ("t.kern:10:9: remark: tiling 'gemm' as 64x64x16 per block, 4x4 items per thread, a and b "
            "staged: ") in err
    assert "each element of a and b loaded from global memory serves 64 items" in err
    err = _remarks(GEMM, capsys, tile=False)
    assert "contractions are not tiled on CUDA cores: kern-tile-contractions is off (--no-tile)" in err
    assert "tiling 'gemm'" not in err


DECLINED = {
    # both item coordinates: nothing shared
    "own": ("kernel k(a: f32[M, N] view, c: f32[M, N] view, n: index) over (i, j) in (M, N) {\n"
            "    let acc = 0.0;\n    for k in 0..n { acc += a[i, j] * f32(k); }\n    c[i, j] = acc;\n}\n",
            "reads 'a' at an element of its own for every item"),
    "gather": ("kernel k(a: f32[M, K] view, x: i32[K] view, c: f32[M, N] view) over (i, j) in (M, N) {\n"
               "    let acc = 0.0;\n    for k in 0..K { acc += a[i, index(x[k])]; }\n    c[i, j] = acc;\n}\n",
               "depends on values it loaded or accumulates"),
    "two loops": ("kernel k(a: f32[M, K] view, c: f32[M, N] view) over (i, j) in (M, N) {\n"
                  "    let acc = 0.0;\n    for k in 0..K { acc += a[i, k]; }\n"
                  "    for k in 0..K { acc += a[j % M, k]; }\n    c[i, j] = acc;\n}\n",
                  "more than one loop"),
    "writes": ("kernel k(a: f32[M, N] view, c: f32[M, N] view) over (i, j) in (M, N) {\n"
               "    let acc = 0.0;\n    for k in 0..N { acc += a[i, k]; }\n    a[i, j] = acc;\n}\n",
               "also writes 'a'"),
}


@pytest.mark.parametrize("case", sorted(DECLINED))
def test_declined_contractions_compile_untiled_with_a_remark(case, capsys):
    src, why = DECLINED[case]
    err = _remarks(src, capsys)
    assert "remark: not tiling 'k': " in err and why in err, err
    mod = _module(src)
    assert mod._compilation.signatures["k"].tiles is None
    assert "workgroup" not in str(mod.ir("gpu"))


def _tile_src(config: str) -> str:
    return f"@tile({config})\n" + GEMM.split("\n", 7)[7]


def test_tile_attribute_chooses_the_configuration(capsys):
    mod = _module(_tile_src("32, 128, 8"), remarks=True)
    assert "tiling 'gemm' as 32x128x8 per block, 4x4 items per thread" in capsys.readouterr().err
    assert mod._compilation.signatures["gemm"].tiles == [["M", 32], ["N", 128]]
    rng = np.random.default_rng(5)
    a = rng.standard_normal((40, 19)).astype(np.float32)
    b = rng.standard_normal((19, 130)).astype(np.float32)
    c, _ = _run(mod, a, b, 40, 130, np.float32)
    np.testing.assert_array_equal(_bits(c), _bits(example_reference("gemm").gemm(a, b)))


@pytest.mark.parametrize("config, message, col", [
    ("48, 64, 16", "a tile extent must be a power of two, got 48", 7),
    ("128, 128, 64", "need 131584 bytes of workgroup memory, more than the 49152 bytes (48 KiB)", 2),
    ("64, 64, 64", "need 66048 bytes of workgroup memory", 2),  # (33024 single-buffered: the two halves)
    ("256, 256, 16", "256 items per thread (256x256 over 256 threads) is more than the 64", 2),
    ("8, 16, 16", "a 8x16 tile is not a multiple of the block of 256 threads", 2),
])
def test_tile_that_cannot_fit_is_a_located_error(config, message, col):
    with pytest.raises(CompileError) as err:
        kernc.compile(_tile_src(config), filename="t.kern")
    d = err.value.diagnostics[0] if hasattr(err.value, "diagnostics") else err.value.diagnostic
    assert message in str(err.value)
    assert (d.location.line, d.location.column) == (1, col), str(err.value)


POLYBENCH_GEMM = """
kernel pgemm(a: f32[M, K] view, b: f32[K, N] view, c: f32[M, N] view, alpha: f32, beta: f32)
        over (i, j) in (M, N) {
    let acc = 0.0;
    for k in 0..K { acc += alpha * a[i, k] * b[k, j]; }
    c[i, j] = beta * c[i, j] + acc;
}
"""


def test_polybench_gemm_reads_c_in_the_epilogue():
    """PolyBench's gemm (C = alpha*A*B + beta*C): a scalar in the loop's body, the output read
    after the loop (per item, under its guard): tiled, and bitwise the untiled result."""
    tiled, untiled = _module(POLYBENCH_GEMM), _module(POLYBENCH_GEMM, tile=False)
    assert tiled._compilation.signatures["pgemm"].tiles == [["M", 64], ["N", 64]]
    rng = np.random.default_rng(11)
    M, K, N = 33, 17, 65
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    outs = []
    for mod in (tiled, untiled):
        c = c0.copy()
        mod.pgemm(a, b, c, np.float32(1.5), np.float32(0.25))
        outs.append(c)
    np.testing.assert_array_equal(_bits(outs[0]), _bits(outs[1]))
