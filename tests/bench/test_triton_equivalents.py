"""The Triton versions of the examples (``bench/triton/``, the peer of ``python -m bench``'s
compile and code-quality tables) compute what the examples compute, and compile ahead of time for
sm_90 without a GPU.

Each runs under Triton's interpreter (``TRITON_INTERPRET=1``: numpy on the CPU; it takes
``torch`` tensors, here sharing the memory of the example's numpy arrays) on ``make_inputs`` of
``examples/NAME.py`` and must match the example's numpy reference (``tests/e2e/test_examples.py``'s
tolerances) and kernc's own CPU run of the same inputs bit for bit (the interpreter contracts no
FMA, as kernc's default does not, and the examples' values make the order of atomics irrelevant),
but for the reductions across items (softmax, layernorm: :data:`ULPS`).
Skipped without Triton (``pip install 'kernc[bench]'``), the interpreter tests also without torch
(a CPU build: ``pip install torch --index-url https://download.pytorch.org/whl/cpu``).
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import EXAMPLES, ROOT, compiled_example, example_reference

pytest.importorskip("triton", reason="Triton is not installed (pip install 'kernc[bench]')")

from kernc.bench import tools, triton_peer  # noqa: E402
from kernc.bench import triton as versions  # noqa: E402

TRITON_DIR = os.path.join(ROOT, "bench", "triton")
NAMES = versions.examples()
#: Partial blocks everywhere; 999 and 1000 shape the 2-D and 4-D examples differently (see
#: tests/bench/test_cuda_equivalents.py), 1 is a single thread, 257 one past a block.
SIZES = [1, 257, 999, 1000]
RTOL, ATOL = 2e-6, 1e-7
#: Versions that match kernc's CPU run within ``ULPS[name](N)`` ulps instead of bit for bit: their
#: ``tl.sum`` adds a row of ``N`` in Triton's tree order, not the kernel's, and a float32 sum of
#: ``N`` terms in either order is within about ``log2(N) / 2`` ulps of the exact one (one rounding
#: per level of a balanced tree). softmax: ``y = e / s`` inherits the relative error of ``s``, in
#: ulps of each element (measured: 3 at N = 37 and 40, 8 at N = 512, for a bound of 6 and 9).
#: layernorm: ``mean``'s error shifts ``d = x - mean`` absolutely, so ``y``, ``mean`` and ``rstd``
#: are compared in ulps of the largest magnitude of each output (measured: at most 2 up to N = 512,
#: for a bound of 4 to 5). Tight enough that ``eps`` doubled (``rstd`` moves by
#: ``eps / (2 var)``, about 10 ulps here), the row mean left in (``y`` without ``- mean``) or the
#: softmax taken down the columns fail (:func:`test_a_wrong_reduction_result_is_caught`).
ULPS = {"softmax": lambda N: int(np.ceil(np.log2(max(N, 2)))),
        "layernorm": lambda N: 1 + int(np.ceil(np.log2(max(N, 2)))) // 2}


def _ulps_off(name: str, got: np.ndarray, kernc: np.ndarray) -> float:
    """The largest distance of ``got`` from ``kernc`` in ulps (f32) of the scale :data:`ULPS` says."""
    if not kernc.size:
        return 0.0
    scale = np.abs(kernc) if name == "softmax" else np.abs(kernc).max()
    return float((np.abs(got.astype(np.float64) - kernc) / np.spacing(np.float32(scale))).max())


def _agrees_with_kernc(name: str, N: int, got: np.ndarray, kernc: np.ndarray) -> bool:
    if name in ULPS:
        return got.dtype == kernc.dtype and got.shape == kernc.shape and _ulps_off(name, got, kernc) <= ULPS[name](N)
    return np.array_equal(got, kernc, equal_nan=True)


def _copy(inputs: dict) -> dict:
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}


def test_every_example_has_a_triton_version_or_a_reason():
    examples = {f[:-5] for f in os.listdir(EXAMPLES) if f.endswith(".kern")}
    missing = sorted(examples - set(NAMES) - set(versions.NOT_COMPARABLE))
    assert not missing, f"examples without a Triton version in bench/triton/ or a reason in NOT_COMPARABLE: {missing}"
    stale = sorted((set(NAMES) | set(versions.NOT_COMPARABLE)) - examples)
    assert not stale, f"bench/triton/ versions of no example: {stale}"
    assert "saxpy" in NAMES and "_warmup" not in NAMES


def _inputs(name: str, P: int) -> dict:
    return example_reference(name).make_inputs(P, np.random.default_rng(P))


@pytest.fixture(scope="module")
def interpreted(tmp_path_factory):
    """``(name, case) -> arguments after the run`` of every Triton version on every size of
    :data:`SIZES` (case ``P``), of saxpy with ``a`` one ulp off (case ``wrong``) and of layernorm
    with ``eps`` doubled (case ``wrong_eps``), run under
    Triton's interpreter in one process (``tests/bench/triton_interpret.py``)."""
    pytest.importorskip("torch", reason="Triton's interpreter takes torch tensors; torch is not installed")
    folder = tmp_path_factory.mktemp("triton-interpret")
    cases = {(name, str(P)): _inputs(name, P) for name in NAMES for P in SIZES}
    wrong = _inputs("saxpy", 1000)
    wrong["a"] = np.nextafter(np.float32(wrong["a"]), np.float32(np.inf))
    cases["saxpy", "wrong"] = wrong
    wrong_eps = _inputs("layernorm", 1000)
    wrong_eps["eps"] = np.float32(2 * wrong_eps["eps"])
    cases["layernorm", "wrong_eps"] = wrong_eps
    for (name, case), inputs in cases.items():
        np.savez(folder / f"{name}.{case}.in.npz", **inputs)
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "triton_interpret.py"),
                           str(folder)], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    out = {}
    for name, case in cases:
        with np.load(folder / f"{name}.{case}.out.npz", allow_pickle=False) as data:
            out[name, case] = {k: (v if v.ndim else v[()]) for k, v in data.items()}
    return out


@pytest.mark.parametrize("P", SIZES)
@pytest.mark.parametrize("name", NAMES)
def test_triton_version_matches_reference_and_kernc(interpreted, name, P):
    ref = example_reference(name)
    inputs = _inputs(name, P)
    expected = ref.reference(_copy(inputs))
    by_triton = interpreted[name, str(P)]
    by_kernc = _copy(inputs)
    getattr(compiled_example(name), name)(**by_kernc)
    assert expected, "the reference must name at least one output"
    for out, want in expected.items():
        if P > 1:  # (one edge of edge_update may weigh 0)
            assert not np.array_equal(want, inputs[out], equal_nan=True), f"{name}.{out}: the output must change"
        got = by_triton[out]
        assert got.dtype == want.dtype and got.shape == want.shape, out
        tol = getattr(ref, "TOLERANCE", {"rtol": RTOL, "atol": ATOL}) if name in ULPS else {"rtol": RTOL, "atol": ATOL}
        np.testing.assert_allclose(got, want, **tol, err_msg=f"bench/triton/{name}.py {out} P={P}")
        N = inputs["x"].shape[1] if name in ULPS else 0
        assert _agrees_with_kernc(name, N, got, by_kernc[out]), \
            f"bench/triton/{name}.py {out} P={P} vs kernc" + (f": {_ulps_off(name, got, by_kernc[out])} ulps" if N else "")
    for arg, value in inputs.items():  # the inputs are left as they were
        if arg not in expected and isinstance(value, np.ndarray):
            assert np.array_equal(by_triton[arg], value, equal_nan=True), f"{name}: input {arg} changed"


def test_a_wrong_triton_result_is_caught(interpreted):
    """The comparison can fail: saxpy run with ``a`` one ulp off differs from the reference."""
    want = example_reference("saxpy").reference(_inputs("saxpy", 1000))["y"]
    assert not np.array_equal(interpreted["saxpy", "wrong"]["y"], want)
    assert np.array_equal(interpreted["saxpy", "1000"]["y"], want)


def test_a_wrong_reduction_result_is_caught(interpreted):
    """The ulp check of softmax and layernorm (:data:`ULPS`) can fail: layernorm run with ``eps``
    doubled, layernorm without the mean subtracted and softmax down the columns (on kernc's own
    result, to isolate the mutation) do, where the right Triton results pass."""
    ln = _inputs("layernorm", 1000)
    R, N = ln["x"].shape
    kernc = _copy(ln)
    compiled_example("layernorm").layernorm(**kernc)
    for out in ("y", "mean", "rstd"):
        assert _agrees_with_kernc("layernorm", N, interpreted["layernorm", "1000"][out], kernc[out]), out
    assert _agrees_with_kernc("layernorm", N, interpreted["layernorm", "wrong_eps"]["mean"], kernc["mean"])
    for out in ("y", "rstd"):  # eps enters rstd and so y
        assert not _agrees_with_kernc("layernorm", N, interpreted["layernorm", "wrong_eps"][out], kernc[out]), out
    no_mean = (ln["x"] * kernc["rstd"][:, None] * ln["w"] + ln["b"]).astype(np.float32)
    assert not _agrees_with_kernc("layernorm", N, no_mean, kernc["y"])

    sm = _inputs("softmax", 1000)
    kernc = _copy(sm)
    compiled_example("softmax").softmax(**kernc)
    N = sm["x"].shape[1]
    assert _agrees_with_kernc("softmax", N, interpreted["softmax", "1000"]["y"], kernc["y"])
    e = np.exp(sm["x"] - sm["x"].max(axis=0, keepdims=True))
    columns = (e / e.sum(axis=0, keepdims=True)).astype(np.float32)
    assert not _agrees_with_kernc("softmax", N, columns, kernc["y"])
    one_ulp = np.nextafter(kernc["y"], np.float32(np.inf))  # (a few ulps pass, by design)
    assert _agrees_with_kernc("softmax", N, one_ulp, kernc["y"])
    assert not _agrees_with_kernc("softmax", N, kernc["y"] * np.float32(1 + 2e-6), kernc["y"])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("triton-aot"))
    triton_peer.initialize(path, "sm_90")
    return path


@pytest.mark.parametrize("name", NAMES)
def test_triton_version_compiles_for_sm_90_without_a_gpu(workdir, name):
    """``triton.compile`` for ``GPUTarget('cuda', 90, 32)`` without a device: one kernel named as
    the example's, for sm_90a, without FMAs when ``enable_fp_fusion`` is off (kernc's default), that
    this machine's ptxas accepts."""
    from kernc.backend import toolkit

    text = open(triton_peer.ptx(name, "sm_90", False, workdir, name), encoding="utf-8").read()
    assert f".visible .entry {name}(" in text and triton_peer.ptx_target(text) == "sm_90a"
    assert "fma.rn.f32" not in text
    if tools.ptxas() is None:
        pytest.skip("no ptxas to assemble Triton's PTX")
    res = toolkit.run_ptxas(text, arch="sm_90a")
    assert res.ok, res.log
    assert res.registers[name] > 0


def test_fp_fusion_contracts_saxpy(workdir):
    """With ``enable_fp_fusion`` (kernc ``--fmad``'s counterpart) saxpy's ``y + a * x`` is one FMA."""
    fused = open(triton_peer.ptx("saxpy", "sm_90", True, workdir, "saxpy.fused"), encoding="utf-8").read()
    plain = open(triton_peer.ptx("saxpy", "sm_90", False, workdir, "saxpy.plain"), encoding="utf-8").read()
    assert "fma.rn.f32" in fused and "mul.rn.f32" not in fused
    assert "fma.rn.f32" not in plain and "mul.rn.f32" in plain and "add.rn.f32" in plain


def test_warm_compiles_measure_full_compiles(workdir):
    """Every compile is a full one (no cache hit: the cubin stage ran); the first of each block is
    untimed."""
    saved = {k: os.environ.get(k) for k in ("TRITON_CACHE_DIR", "TRITON_ALWAYS_COMPILE")}
    peer = triton_peer.WarmCompiles("saxpy", "sm_90", workdir)
    peer(1)
    peer(2)
    res = peer.result()
    assert res["compiles"] == 3 and res["version"] == triton_peer.version()
    assert 0 < res["warm_ms"] < res["warm_cubin_ms"]
    assert peer.compiler.cache_hit is False and {"ttir", "ttgir", "llir", "ptx", "cubin"} <= set(peer.compiler.stages)
    assert {k: os.environ.get(k) for k in saved} == saved  # the environment is restored


def test_a_failed_triton_compile_is_reported(workdir):
    broken = triton_peer.WarmCompiles("no_such_example", "sm_90", workdir)
    broken(3)  # stops after the first failure
    broken(1)
    assert broken.result() == {"error": f"KeyError: \"no Triton version of example 'no_such_example' in {TRITON_DIR}\""}
    none_timed = triton_peer.WarmCompiles("saxpy", "sm_90", workdir)
    none_timed(0)
    assert none_timed.result() == {"error": "RuntimeError: no timed compile"}


@pytest.mark.parametrize("arch, cc", [("sm_90", 90), ("sm_90a", 90), ("sm_80", 80), ("sm_100a", 100)])
def test_capability(arch, cc):
    assert triton_peer.capability(arch) == cc


def test_capability_rejects_other_spellings():
    with pytest.raises(ValueError, match="expected sm_NN"):
        triton_peer.capability("compute_90")


def test_ptx_target():
    assert triton_peer.ptx_target("//\n.version 9.4\n.target sm_90a\n.address_size 64\n") == "sm_90a"
    with pytest.raises(ValueError, match="without a .target"):
        triton_peer.ptx_target(".version 9.4\n")
