"""The hand-written CUDA C++ kernels of ``bench/cuda/`` (what ``python -m bench`` compares kernc with)
compute what the examples compute.

Each runs on the CPU through ``bench.emulate``, launched exactly as kernc launches its own kernel:
kernc's binding gives the arguments in ABI order (flat views of the arrays, the ``shared_indices``
tables, 32-bit sizes) and the grid, so a ``.cu`` whose parameters drift from kernc's ABI fails here.
The results must match the example's numpy reference (with ``tests/e2e/test_examples.py``'s
tolerances) and kernc's own CPU run of the same inputs bit for bit (same operations in the same
order; the examples' values make the atomics' order irrelevant).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from conftest import EXAMPLES, ROOT, compiled_example, example_reference
from kernc.backend import binding, cuda
from kernc.bench import emulate, histogram

CUDA_DIR = os.path.join(ROOT, "bench", "cuda")
EQUIVALENTS = sorted(f[:-3] for f in os.listdir(CUDA_DIR) if f.endswith(".cu"))
CASES = [name for name in EQUIVALENTS if os.path.exists(os.path.join(EXAMPLES, f"{name}.py"))]
#: Not multiples of any block size, so every launch ends in a partial block; the 2-D and 4-D examples
#: factor P exactly (1000 = 25 x 40 = 5*5*5*8, 999 = 27 x 37 = 37*3*3*3), and im2col_gather shapes odd
#: and even P differently (a zero tail of columns, or rows past the image).
SIZES = [1000, 999]
RTOL, ATOL = 2e-6, 1e-7  # tests/e2e/test_examples.py's


@pytest.fixture(scope="module")
def modules():
    """Every equivalent that has a reference, compiled for the CPU once (in parallel)."""
    if not emulate.available():
        pytest.skip("no C++20 compiler (g++ 11 or newer) to run the CUDA C++ equivalents on the CPU")
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(zip(CASES, pool.map(lambda name: emulate.load(os.path.join(CUDA_DIR, f"{name}.cu")), CASES)))


def _copy(inputs: dict) -> dict:
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}


def _mismatch(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str | None:
    """``None`` when ``got`` has ``want``'s shape and dtype and every element is close to it
    (``np.isclose``; NaN only matches NaN), else what differs: how many elements and the first one."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}"
    bad = ~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    if not bad.any():
        return None
    first = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"{int(bad.sum())} of {bad.size} elements differ, first at {first}: got {got[first]!r}, want {want[first]!r}"


def _run_emulated(module: emulate.EmulatedModule, name: str, args: dict) -> None:
    """Launch the equivalent of example ``name`` on ``args`` (updated in place) as kernc would launch
    its kernel: the arguments and grid of kernc's binding, index arguments and sizes as int32."""
    sig = getattr(compiled_example(name), name).signature
    bound = binding.bind(sig, (), args, lambda v: isinstance(v, np.ndarray), "cpu")
    assert bound.index_bits == 32, "the .cu files index with 32-bit integers"
    for out in bound.zero_init:
        bound.arrays[out].fill(0)
    abi_args = cuda.ArgPacker(sig, bound.index_bits)(bound.args)
    # as cudaMalloc memory is (edge_update loads 16-byte float4 rows)
    assert all(a.ctypes.data % 16 == 0 for a in abi_args if isinstance(a, np.ndarray))
    module.launch(name, bound.grid, bound.block, abi_args)


def test_every_example_has_a_cuda_equivalent():
    examples = {f[:-5] for f in os.listdir(EXAMPLES) if f.endswith(".kern")}
    missing = sorted(examples - set(EQUIVALENTS))
    assert not missing, f"examples without a CUDA C++ equivalent in bench/cuda/: {missing}"
    # (the histogram row's reference, bench/histogram.py, is a timing reference of no example)
    stale = sorted(set(EQUIVALENTS) - examples - {histogram.CUDA_REFERENCE[:-3]})
    assert not stale, f"bench/cuda/ equivalents of no example: {stale}"
    assert "saxpy" in CASES  # the equivalents were found (the parametrized tests are not empty by accident)


@pytest.mark.parametrize("P", SIZES)
@pytest.mark.parametrize("name", CASES)
def test_equivalent_matches_reference_and_kernc(modules, name, P):
    ref = example_reference(name)
    inputs = ref.make_inputs(P, np.random.default_rng(0))
    expected = ref.reference(_copy(inputs))
    emulated = _copy(inputs)
    _run_emulated(modules[name], name, emulated)
    by_kernc = _copy(inputs)
    getattr(compiled_example(name), name)(**by_kernc)
    assert expected, "the reference must name at least one output"
    for out, want in expected.items():
        assert not np.array_equal(want, inputs[out], equal_nan=True), f"{name}.{out}: the output must change"
        tol = getattr(ref, "TOLERANCE", {"rtol": RTOL, "atol": ATOL})  # (reductions: another order)
        problem = _mismatch(emulated[out], want, tol["rtol"], tol["atol"])
        assert problem is None, f"{name}.cu, {out} (P={P}) vs the numpy reference: {problem}"
        # (an example calling exp: numpy's on the interpreter, libm's expf in the emulation, a few
        # ulps apart; the reference module says so with EXACT_VS_CUDA = False)
        exact = getattr(ref, "EXACT_VS_CUDA", True)
        problem = _mismatch(emulated[out], by_kernc[out], *((0.0, 0.0) if exact else (tol["rtol"], tol["atol"])))
        assert problem is None, f"{name}.cu, {out} (P={P}) vs kernc on the CPU: {problem}"


def test_mismatch_reports_a_perturbed_element(modules):
    """The comparison can fail: one element off by 5e-6 relative (over RTOL), or one left unwritten
    (NaN, the initial contents of conv2d_fwd's y), is reported at its index."""
    ref = example_reference("conv2d_fwd")
    inputs = ref.make_inputs(1000, np.random.default_rng(0))
    want = ref.reference(_copy(inputs))["y"]
    _run_emulated(modules["conv2d_fwd"], "conv2d_fwd", inputs)
    got = inputs["y"]
    assert _mismatch(got, want, RTOL, ATOL) is None
    index = (3, 1, 4, 1)
    assert abs(float(got[index])) > 0.1  # so that the relative error, not ATOL, decides
    for wrong in (got[index] * np.float32(1 + 5e-6), np.float32(np.nan)):
        bad = got.copy()
        bad[index] = wrong
        problem = _mismatch(bad, want, RTOL, ATOL)
        assert problem is not None and problem.startswith(f"1 of {got.size} elements differ, first at {index}")
    assert _mismatch(got.astype(np.float64), want, RTOL, ATOL) is not None


def test_launch_errors_are_clear(modules):
    saxpy = modules["saxpy"]
    x = np.ones(300, np.float32)
    args = [np.float32(2.0), x, x.copy(), np.uint32(x.size)]
    with pytest.raises(emulate.EmulationError, match=r"no kernel 'saxpy2' \(it has: saxpy\)"):
        saxpy.launch("saxpy2", 2, 256, args)
    with pytest.raises(emulate.EmulationError, match="takes 4 arguments, got 3"):
        saxpy.launch("saxpy", 2, 256, args[:3])
    with pytest.raises(emulate.EmulationError, match="argument 0: the parameter is a 4-byte floating-point value"):
        saxpy.launch("saxpy", 2, 256, [np.float64(2.0), *args[1:]])
    with pytest.raises(emulate.EmulationError, match="argument 1: the parameter is a pointer"):
        saxpy.launch("saxpy", 2, 256, [args[0], np.float32(1.0), *args[2:]])
    # a float or a grid the C side would wrap to 0 (it ran nothing, silently)
    for grid in (4.0, 2**32, (2, 0), ()):
        with pytest.raises(emulate.EmulationError, match="grid must be a positive int"):
            saxpy.launch("saxpy", grid, 256, args)
    saxpy.launch("saxpy", 2, 256, args)  # and a good launch still works
    assert np.array_equal(args[2], np.full(300, 3.0, np.float32))


def test_compile_error_carries_gxx_message(modules, tmp_path):
    cu = tmp_path / "broken.cu"
    cu.write_text('extern "C" __global__ void broken(float* x) { x[threadIdx.x] = undeclared_value; }\n')
    with pytest.raises(emulate.EmulationError, match=r"(?s)g\+\+ failed to compile .*broken\.cu.*undeclared_value"):
        emulate.load(str(cu))


@pytest.mark.parametrize("n,grid", [(1, 1), (1003, 1), (1003, 3), (5 * 4096 + 7, 2), (1 << 16, 7)])
def test_histogram256_reference_counts_every_byte_with_any_grid(n, grid):
    """``bench/cuda/histogram256.cu`` (the GPU row's reference) on the emulator: the counts of
    ``np.bincount`` added onto the start, for sizes that are no multiple of 4 and any grid."""
    if not emulate.available():
        pytest.skip("no C++20 compiler (g++ 11 or newer) to run the CUDA C++ equivalents on the CPU")
    mod = emulate.load(os.path.join(CUDA_DIR, histogram.CUDA_REFERENCE))
    data = np.empty(n, np.uint8)
    data[:] = np.random.default_rng(n).integers(0, 256, n)
    assert data.ctypes.data % 4 == 0
    hist = np.arange(256, dtype=np.uint32)
    mod.launch("histogram256", grid, 256, [data, hist, np.uint32(n)])
    np.testing.assert_array_equal(hist, np.arange(256) + np.bincount(data, minlength=256))
