"""The kernels of the GPU bandwidth comparisons (``bench/gpu.py``), checked without a GPU.

- the kernc variants (``bench/kern/*.kern``, ``examples/transpose.kern`` with and without view
  staging) run on the CPU interpreter on small inputs from the same builders ``bench.gpu`` uses, and
  must pass the same checks ``bench.gpu`` applies before timing;
- the CUDA C++ references (``bench/cuda/bandwidth/*.cu``) run on the CPU through ``bench.emulate``
  (skipped when it is missing or has no C++20 compiler) against the same checks;
- ``bench.gpu.run`` runs end to end on a stand-in for CuPy whose "driver" runs kernc's PTX launches
  on the CPU interpreter and NVRTC sources on the emulator, so every line of the comparisons runs here;
- with a GPU (``@pytest.mark.gpu``), the quick benchmark itself.

Sizes are small and odd on purpose: a partial last block (n = 8 blocks + 37) and partial transpose
tiles (40 x 72) exercise the bounds checks of both sides.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from conftest import EXAMPLES, ROOT
from fake_cupy import fake_cupy
from kernc.bench import gpu

N = 8 * gpu.BLOCK + 37
SHAPE = (40, 72)
CU_DIR = os.path.join(ROOT, "bench", "cuda")
BANDWIDTH_CU = os.path.join(CU_DIR, "bandwidth")


# -- kernc variants on the CPU interpreter ----------------------------------------------------------
@pytest.fixture(scope="module")
def kern():
    """Every kernc module of the comparisons, compiled once for this module."""
    return {
        "gather": gpu.compile_kern(os.path.join(gpu.KERN_DIR, "gather.kern")),
        "scatter": gpu.compile_kern(os.path.join(gpu.KERN_DIR, "scatter.kern")),
        "transpose": gpu.compile_kern(os.path.join(EXAMPLES, "transpose.kern")),
        "transpose_naive": gpu.compile_kern(os.path.join(EXAMPLES, "transpose.kern"), coalesce=False),
    }


def _block_distinct(idx: np.ndarray, block: int) -> int:
    """Σ over blocks of the distinct indices of the block (one shared_sum atomic each)."""
    return sum(len(np.unique(idx[b:b + block])) for b in range(0, idx.size, block))


def test_gather_variants_match_numpy_on_the_cpu(kern):
    data = gpu.gather_data(np, N)
    stats = {}
    for name in ("gather_indexed", "gather_shared"):
        out = data["out"].copy()
        stats[name] = getattr(kern["gather"], name)(data["x"], data["idx"], out).stats
        gpu.check_gather(out, data, name)
    # the variants differ in their memory path only: shared(idx) stages x through workgroup memory
    assert stats["gather_indexed"].shared_requests == 0
    assert stats["gather_shared"].shared_requests > 0
    assert stats["gather_indexed"].global_atomics == stats["gather_shared"].global_atomics == 0


def test_scatter_variants_match_numpy_on_the_cpu(kern):
    data = gpu.scatter_data(np, N)
    atomics = {}
    for name in ("scatter_atomic", "scatter_shared_sum"):
        y = data["y0"].copy()
        atomics[name] = getattr(kern["scatter"], name)(data["v"], y, data["idx"]).stats.global_atomics
        gpu.check_scatter(y, data, name)
    # atomic(idx): one atomic per thread; shared_sum(idx): one per distinct index per block
    assert atomics["scatter_atomic"] == N
    assert atomics["scatter_shared_sum"] == _block_distinct(data["idx"], gpu.BLOCK) < N // 4


@pytest.mark.parametrize("variant", ["transpose", "transpose_naive"])
def test_transpose_variants_match_numpy_on_the_cpu(kern, variant):
    data = gpu.transpose_data(np, SHAPE)
    b = data["b"].copy()
    stats = kern[variant].transpose(data["a"], b).stats
    gpu.check_transpose(b, data, variant)
    if variant == "transpose":  # view staging: both sides coalesced, through a workgroup tile
        assert stats.shared_requests > 0
        assert stats.global_store_sectors / stats.global_store_requests <= 4.5
    else:  # the naive transpose: each warp store touches one sector per thread
        assert stats.shared_requests == 0
        assert stats.global_store_sectors / stats.global_store_requests > 16


# -- the builders and the checks ---------------------------------------------------------------------
def test_gather_indices_are_sorted_runs_shuffled_within_blocks():
    data = gpu.gather_data(np, N)
    x, idx, out = data["x"], data["idx"], data["out"]
    assert x.dtype == np.float32 and idx.dtype == np.uint32 and out.dtype == np.float32
    assert x.size == N // 8 and idx.size == out.size == N and np.isnan(out).all()
    assert int(idx.max()) < x.size
    ordered = np.sort(idx)
    for start in range(0, N, gpu.BLOCK):
        block = idx[start:start + gpu.BLOCK]
        # each block holds the next run of the sorted indices (locality), in shuffled order
        assert np.array_equal(np.sort(block), ordered[start:start + gpu.BLOCK])
    assert not np.array_equal(idx, ordered)
    assert gpu.distinct_indices(idx) == len(np.unique(idx))
    assert gpu.gather_bytes(data) == 8 * N + 4 * len(np.unique(idx))
    # the same seed gives the same data; another seed another
    assert np.array_equal(gpu.gather_data(np, N)["idx"], idx)
    assert not np.array_equal(gpu.gather_data(np, N, seed=1)["idx"], idx)


def test_scatter_targets_get_eight_values_from_one_block():
    data = gpu.scatter_data(np, N)
    idx = data["idx"]
    m = -(-N // 8)
    assert data["y0"].size == data["y"].size == m and data["v"].size == N
    assert np.array_equal(data["y"], data["y0"]) and data["y"] is not data["y0"]
    counts = np.bincount(idx, minlength=m)
    assert counts[:-1].tolist() == [8] * (m - 1) and 1 <= counts[-1] <= 8
    blocks = np.arange(N) // gpu.BLOCK
    first_block = np.full(m, -1)
    first_block[idx[::-1]] = blocks[::-1]
    assert np.array_equal(first_block[idx], blocks)  # every thread of a target is in one block
    assert not np.array_equal(idx, np.sort(idx))  # shuffled within the blocks
    assert np.abs(data["v"]).min() >= 0.25
    assert gpu.scatter_bytes(data) == 8 * N + 8 * m


def test_checks_reject_wrong_results():
    g = gpu.gather_data(np, N)
    good = g["x"][g["idx"]]
    gpu.check_gather(good, g)
    bad = good.copy()
    bad[N - 1] = np.nextafter(bad[N - 1], np.float32(np.inf))  # one ulp off, in the partial last block
    with pytest.raises(AssertionError, match="1 wrong"):
        gpu.check_gather(bad, g)
    with pytest.raises(AssertionError):
        gpu.check_gather(g["out"], g)  # nothing written: NaN

    s = gpu.scatter_data(np, N)
    want, _ = gpu.expected_scatter(s)
    gpu.check_scatter(want.astype(np.float32), s)
    missing = want.copy()
    missing[s["idx"][5]] -= s["v"][5]  # one term left out
    with pytest.raises(AssertionError, match="1 wrong"):
        gpu.check_scatter(missing.astype(np.float32), s)
    with pytest.raises(AssertionError):
        gpu.check_scatter(s["y0"], s)  # nothing added

    t = gpu.transpose_data(np, SHAPE)
    gpu.check_transpose(np.ascontiguousarray(t["a"].T), t)
    with pytest.raises(AssertionError):
        gpu.check_transpose(t["a"].reshape(SHAPE[1], SHAPE[0]).copy(), t)  # a reshape is no transpose
    assert gpu.transpose_bytes(t) == 8 * SHAPE[0] * SHAPE[1]


# -- the CUDA C++ references on the CPU emulator -----------------------------------------------------
def _emulate():
    """``bench.emulate`` when it can run here, else skip with the reason."""
    try:
        from kernc.bench import emulate
    except ImportError as err:
        pytest.skip(f"bench.emulate is not available ({err})")
    if not emulate.available():
        pytest.skip("bench.emulate.available() is False (no g++ 11+ for C++20)")
    return emulate


@pytest.fixture(scope="module")
def refs():
    """The bandwidth references compiled for the CPU emulator, once for this module."""
    emulate = _emulate()
    return {name: emulate.load(os.path.join(BANDWIDTH_CU, f"{name}.cu")) for name in gpu.REFERENCES}


def test_reference_gather_on_the_emulator(refs):
    data = gpu.gather_data(np, N)
    out = data["out"].copy()
    refs["gather"].launch("gather", -(-N // 256), 256, (data["x"], data["idx"], out, np.uint32(N)))
    gpu.check_gather(out, data, "gather.cu")


def test_reference_scatter_on_the_emulator(refs):
    data = gpu.scatter_data(np, N)
    y = data["y0"].copy()
    refs["scatter"].launch("scatter_add", -(-N // 256), 256, (data["v"], y, data["idx"], np.uint32(N)))
    gpu.check_scatter(y, data, "scatter.cu")


@pytest.mark.parametrize("kernel, rows_per_block", [("transpose_naive", 8), ("transpose_tiled", 32)])
def test_reference_transposes_on_the_emulator(refs, kernel, rows_per_block):
    data = gpu.transpose_data(np, SHAPE)
    b = data["b"].copy()
    R, C = SHAPE
    grid = (-(-C // 32), -(-R // rows_per_block))  # the launch shapes bench.gpu uses
    refs["transpose"].launch(kernel, grid, (32, 8), (data["a"], b, np.uint32(R), np.uint32(C)))
    gpu.check_transpose(b, data, kernel)


def test_references_compile_with_nvcc(tmp_path):
    from kernc.bench import tools

    if tools.find("nvcc") is None:
        pytest.skip("nvcc not found")
    for name in gpu.REFERENCES:
        ptx = tools.nvcc_ptx(os.path.join(BANDWIDTH_CU, f"{name}.cu"), "sm_90", str(tmp_path), name)
        text = open(ptx).read()
        assert ".visible .entry" in text
    assert "red.global.add.f32" in open(tmp_path / "scatter.nvcc.ptx").read() or \
        "atom.global.add.f32" in open(tmp_path / "scatter.nvcc.ptx").read()
    assert "bar.sync" in open(tmp_path / "transpose.nvcc.ptx").read()  # the tiled kernel's __syncthreads


# -- bench.gpu.run end to end on a stand-in device ---------------------------------------------------
def _fake_cupy(emulate, kernc_modules: dict):
    """Just enough of CuPy, on numpy, for ``bench.gpu.run``. Its driver runs kernc's PTX on the CPU
    interpreter (``kernc_modules``: PTX text -> kernc Module, the PTX kernc's launcher would load),
    refuses any other PTX (nvcc's: ``bench.gpu`` then falls back to NVRTC, as with a driver older than
    nvcc) and runs NVRTC sources of ``bench/cuda`` on ``emulate``. Launches check their grid covers
    the problem the way CuPy's driver call would not."""
    sources = {}
    for folder in (CU_DIR, BANDWIDTH_CU):
        for f in os.listdir(folder):
            if f.endswith(".cu"):
                with open(os.path.join(folder, f), encoding="utf-8") as fh:
                    sources[fh.read()] = os.path.join(folder, f)

    class Module:  # cupy.cuda.function.Module
        def load(self, data):
            text = data.decode() if isinstance(data, bytes) else data
            if text not in kernc_modules:
                raise RuntimeError("fake driver: unknown PTX (only kernc's runs here)")
            self.kernc = kernc_modules[text]

        def get_function(self, name):
            kernel = self.kernc.kernels[name]

            def run(grid, block, args):
                assert len(grid) == 1 and len(block) == 1 and block[0] == kernel.signature.block
                self.kernc._interpreter().run(name, int(grid[0]), int(block[0]), list(args),
                                              arg_names=kernel.signature.arg_names)
            return run

    class RawModule:  # cupy.RawModule: NVRTC -> the CPU emulator
        def __init__(self, code, *, options=()):  # cupy.RawModule's keywords
            assert all(isinstance(o, str) for o in options), options
            self.emulated = emulate.load(sources[code])

        def get_function(self, name):
            assert name in self.emulated.kernels, name
            return lambda grid, block, args: self.emulated.launch(name, grid, block, args)

    return fake_cupy(Module, RawModule)


def test_run_on_a_stand_in_device(monkeypatch):
    """Every comparison of ``bench.gpu.run`` runs on small sizes: kernc's raw launches (binding,
    shared_indices tables, packing) on the interpreter and the references with the grids and
    arguments ``run`` passes on the emulator, each verified by ``run`` itself (a wrong result would
    be an ``error`` entry). The times are meaningless; the structure and arithmetic are checked."""
    emulate = _emulate()
    from kernc.backend import cuda

    compiled = {}
    real_compile = gpu.compile_kern

    def compile_and_register(path, arch="sm_90", coalesce=True):
        mod = real_compile(path, arch, coalesce)
        compiled[mod._compilation.ptx(32)] = mod
        return mod

    monkeypatch.setattr(gpu, "compile_kern", compile_and_register)
    fake = _fake_cupy(emulate, compiled)
    monkeypatch.setattr(cuda, "available", lambda: True)
    monkeypatch.setattr(cuda, "cupy", lambda: fake)
    monkeypatch.setattr(cuda, "_modules", type(cuda._modules)())
    sizes = {"gather": N, "scatter": N, "transpose": SHAPE, "transpose_tall": (300, 8), "transpose_wide": (8, 300),
             "gemm_f16": 40, "gemm_f32": (40, 33), "softmax": (5, 300), "layernorm": (5, 300)}
    res = gpu.run(EXAMPLES, CU_DIR, None, True, 1, bandwidth_n=1024, sizes=sizes)

    assert "error" not in res, res.get("error")
    assert res["bandwidth_arch"] == "sm_90" and res["peak_bandwidth_gbs"] == pytest.approx(128.0)
    expect = {
        "gather": ({"kernc_indexed", "kernc_shared", "reference"},
                   {"kernc_indexed/reference", "kernc_shared/reference", "kernc_shared/kernc_indexed"}),
        "scatter": ({"kernc_atomic", "kernc_shared_sum", "reference"},
                    {"kernc_atomic/reference", "kernc_shared_sum/reference", "kernc_shared_sum/kernc_atomic"}),
        "transpose": ({"kernc_coalesced", "kernc_naive", "reference_tiled", "reference_naive"},
                      {"kernc_coalesced/reference_tiled", "kernc_naive/reference_naive",
                       "kernc_coalesced/kernc_naive", "reference_tiled/reference_naive"}),
        "transpose_tall": ({"kernc_choice", "kernc_staged", "kernc_unstaged"},
                           {"kernc_choice/kernc_staged", "kernc_choice/kernc_unstaged"}),
        "transpose_wide": ({"kernc_choice", "kernc_staged", "kernc_unstaged"},
                           {"kernc_choice/kernc_staged", "kernc_choice/kernc_unstaged"}),
        "softmax": ({"kernc", "reference"}, {"kernc/reference"}),
        "layernorm": ({"kernc", "reference"}, {"kernc/reference"}),
    }
    for name, (variants, ratios) in expect.items():
        c = res[f"{name}_bandwidth"]
        assert "error" not in c, (name, c.get("error"))
        if name in gpu.REFERENCES:  # (the skinny transposes are kernc's alone)
            assert c["reference_built_with"] == "NVRTC (cupy.RawModule)"  # the fake driver refuses nvcc's PTX
        assert set(c["variants"]) == variants and set(c["ratios"]) == ratios
        for key, v in c["variants"].items():
            assert v["ms"] > 0 and v["gbs"] == pytest.approx(c["bytes_per_launch"] / (v["ms"] * 1e6))
            assert v["pct_of_peak"] == pytest.approx(100 * v["gbs"] / 128.0) and v["label"]
        for key, r in c["ratios"].items():
            a, b = key.split("/")
            assert r == pytest.approx(c["variants"][a]["gbs"] / c["variants"][b]["gbs"])
    gm = res["gemm_f16_tensor_cores"]  # kern-mma-contractions' gemm against cupy.matmul (numpy here)
    assert "error" not in gm, gm.get("error")
    assert gm["n"] == 40 and gm["tensor_cores"] is True and gm["kernc_ms"] > 0
    assert gm["kernc_gflops"] == pytest.approx(2 * 40 ** 3 / (gm["kernc_ms"] * 1e6))
    assert gm["ratio_kernc_to_cupy"] == pytest.approx(gm["cupy_ms"] / gm["kernc_ms"])
    gf = res["gemm_f32_tiled"]  # kern-tile-contractions' gemm against cupy.matmul f32, two sizes
    assert set(gf["sizes"]) == {40, 33} and gf["arch"] == "sm_90"
    for n, r in gf["sizes"].items():
        assert "error" not in r, r.get("error")
        assert r["n"] == n and r["kernc_gflops"] == pytest.approx(2 * n ** 3 / (r["kernc_ms"] * 1e6))
        assert r["ratio_kernc_to_cupy"] == pytest.approx(r["cupy_ms"] / r["kernc_ms"])
    g, s, t = res["gather_bandwidth"], res["scatter_bandwidth"], res["transpose_bandwidth"]
    idx = gpu.gather_data(np, N)["idx"]
    assert g["n"] == N and g["distinct"] == len(np.unique(idx)) and g["bytes_per_launch"] == 8 * N + 4 * g["distinct"]
    assert s["bytes_per_launch"] == 8 * N + 8 * -(-N // 8) and s["distinct"] == s["m"] == -(-N // 8)
    assert (t["rows"], t["cols"]) == SHAPE and t["bytes_per_launch"] == 8 * SHAPE[0] * SHAPE[1]
    assert g["shared_indices_ms"] > 0 and s["shared_indices_ms"] > 0
    # R x 8 runs the unstaged kernel, 8 x C the staged one (launch_policy.staging_pays)
    assert res["transpose_tall_bandwidth"]["chosen"] == "unstaged" and res["transpose_wide_bandwidth"]["chosen"] == "staged"
    assert res["transpose_tall_bandwidth"]["variants"]["kernc_choice"]["label"] == "kernc (picks unstaged)"

    # the table prints every variant and ratio
    from kernc.bench.runner import _render_bandwidth

    text = "\n".join(_render_bandwidth(res))
    for c in (g, s, t):
        for v in c["variants"].values():
            assert v["label"] in text
    assert "kernc shared(idx) / kernc indexed(idx)" in text and "kernc shared_sum(idx) / kernc atomic(idx)" in text
    assert "kernc (view staging) / kernc --no-coalesce" in text and "CUDA C++ tiled 32x33 / CUDA C++ naive" in text


def test_a_failing_comparison_is_reported_not_raised():
    from kernc.bench.runner import _render_bandwidth

    res = {"gather_bandwidth": {"error": "AssertionError: gather kernc_shared: 3 wrong elements"}}
    text = "\n".join(_render_bandwidth(res))
    assert "gather" in text and "error: AssertionError: gather kernc_shared: 3 wrong elements" in text
    assert _render_bandwidth({"available": True}) == []


# -- on a GPU ------------------------------------------------------------------------------------------
@pytest.mark.gpu
def test_quick_gpu_run_measures_every_comparison():
    res = gpu.run(EXAMPLES, CU_DIR, None, True, 3)
    assert res["available"] is True and "error" not in res, res.get("error")
    assert res["saxpy_bandwidth"]["kernc_gbs"] > 0
    for name in gpu.COMPARISONS:
        c = res[f"{name}_bandwidth"]
        assert "error" not in c, (name, c["error"])
        assert c["variants"] and all(v["gbs"] > 0 and v["ms"] > 0 for v in c["variants"].values())
        assert c["ratios"] and all(r > 0 for r in c["ratios"].values())
