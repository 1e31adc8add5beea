"""Every shipped example, end to end on the CPU interpreter, against its numpy reference.

The sizes cover empty, single-thread, warp and block boundaries and a multi-block tail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernc.backend import launch_policy
from kernc.dialect.strided import Poly
from conftest import EXAMPLE_NAMES, compiled_example, example_reference

SIZES = [0, 1, 31, 32, 33, 255, 256, 257, 1000, 4097]


def test_examples_found():
    assert {"saxpy", "gather_scatter", "particles"} <= set(EXAMPLE_NAMES)


def _copy(inputs):
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}


@pytest.mark.parametrize("P", SIZES)
@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_example_matches_numpy(name, P):
    mod = compiled_example(name)
    ref = example_reference(name)
    inputs = ref.make_inputs(P, np.random.default_rng(1234 + P))
    expected = ref.reference(_copy(inputs))
    args = _copy(inputs)
    result = getattr(mod, name)(**args)
    assert result.device == "cpu"
    assert result.problem_size == P
    sig = mod._compilation.signatures[name]
    tiles = sig.tiles
    if tiles and P and result.tiled is not False and launch_policy.staging_pays(sig, result.sizes):
        # kern-coalesce-views, kern-tile-contractions: one block per tile of the tiled extents (transpose:
        # R x C; a contraction's smaller problems run its untiled build, launch_policy.run_tiled)
        ext = [Poly.parse(e).evaluate(result.sizes) for e, _ in tiles]  # (a flattened side: N*OH*OW)
        plane = math.prod(ext)
        want = P // plane * math.prod(-(-e // t) for e, (_, t) in zip(ext, tiles)) if plane else 0
        assert result.grid == want
    elif sig.groups:  # kern-map-groups: a block (or warp) per group of a reduction across items
        n = math.prod(result.sizes[e] for e in sig.groups["extents"])
        assert result.grid == -(-(P // n if n else 0) // sig.groups["per_block"])
    else:
        assert result.grid == -(-P // result.block)
    assert expected, "the reference must name at least one output"
    for out, want in expected.items():
        got = args[out]
        assert got.dtype == want.dtype and got.shape == want.shape, out
        tol = getattr(ref, "TOLERANCE", {"rtol": 2e-6, "atol": 1e-7})  # (reductions: another order)
        np.testing.assert_allclose(got, want, **tol, err_msg=f"{name}.{out} P={P}")


def test_saxpy_bit_exact_and_in_place():
    mod = compiled_example("saxpy")
    x = np.linspace(-3, 3, 777, dtype=np.float32)
    y = np.full(777, 0.5, np.float32)
    y_id = id(y)
    mod.saxpy(np.float32(1.25), x, y)
    assert id(y) == y_id
    assert np.array_equal(y, np.float32(0.5) + np.float32(1.25) * x)


def test_zero_size_launch_touches_nothing():
    mod = compiled_example("saxpy")
    x = np.zeros(0, np.float32)
    y = np.zeros(0, np.float32)
    result = mod.saxpy(2.0, x, y)
    assert result.grid == 0 and result.stats.threads == 0


def test_interpreter_traffic_of_saxpy():
    """saxpy reads x and y and writes y once per thread: 32 consecutive f32 = 4 sectors a request."""
    mod = compiled_example("saxpy")
    x = np.ones(1024, np.float32)
    y = np.ones(1024, np.float32)
    stats = mod.saxpy(1.0, x, y).stats
    assert stats.global_load_requests == 2 * 1024 // 32
    assert stats.global_load_sectors == 4 * stats.global_load_requests
    assert stats.global_store_requests == 1024 // 32
    assert stats.global_store_sectors == 4 * stats.global_store_requests
    assert stats.global_atomics == 0
