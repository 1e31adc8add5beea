"""Issue 21's atomics on a CUDA GPU, against the CPU interpreter running the same kernels: view
atomics of every type and kind (native and compare-and-swap), the privatized histogram and its
``--no-privatize`` build, and the max/min reduction accessors (NaN, signed zeros). Marked ``gpu``:
skipped cleanly without a device; the CPU semantics are tested in ``tests/e2e/test_view_atomic_types.py``,
``tests/e2e/test_histogram.py``, ``tests/passes/test_privatize_atomics.py`` and
``tests/accessors/test_max_min_accessors.py``."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import kernc

pytestmark = pytest.mark.gpu
HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name):
    path = os.path.join(HERE, "..", *name.split("/")) + ".py"
    spec = importlib.util.spec_from_file_location(name.replace("/", "_"), path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _bits(a):
    a = np.asarray(a)
    return a.view(f"u{a.itemsize}")


def test_view_atomics_of_every_type_match_the_interpreter():
    import cupy as cp

    types = _load("e2e/test_view_atomic_types")
    p = types.program()
    for t, kind in types.CASES:
        rng = np.random.default_rng(types.CASES.index((t, kind)))
        h, key, v = types._inputs(t, kind, 5000, rng)
        if t in types.FLOATS and kind == "add":  # sums exact in any order: at most 200 ones
            ones = np.zeros(v.size, np.float32)
            ones[rng.choice(v.size, 200, replace=False)] = 1.0
            v = ones.astype(v.dtype)
            h = np.zeros_like(h)
        cpu = h.copy()
        getattr(p, f"{kind}_{t}")(v, key, cpu)
        dev = cp.asarray(h)
        getattr(p, f"{kind}_{t}")(cp.asarray(v), cp.asarray(key), dev)
        got = dev.get()
        if t in types.FLOATS:
            nan = np.isnan(cpu.astype(np.float32))
            assert np.array_equal(nan, np.isnan(got.astype(np.float32))), (t, kind)
            cpu, got = cpu[~nan], got[~nan]
        np.testing.assert_array_equal(_bits(got), _bits(cpu), err_msg=f"{kind} {t}")


@pytest.mark.parametrize("privatize", [True, False])
def test_histogram_matches_bincount(privatize):
    import cupy as cp

    path = os.path.join(HERE, "..", "..", "examples", "histogram.kern")
    mod = kernc.compile_file(path, privatize=privatize)
    for data in (np.full(1 << 20, 9, np.uint8), np.random.default_rng(0).integers(0, 256, 1_000_003).astype(np.uint8)):
        hist = cp.zeros(256, cp.uint32)
        mod.histogram(cp.asarray(data), hist)
        np.testing.assert_array_equal(hist.get(), np.bincount(data, minlength=256))


def test_max_min_accessors_match_the_interpreter():
    import cupy as cp

    mm = _load("accessors/test_max_min_accessors")
    p = mm.program()
    for t in mm.TYPES:
        for r in ("max", "min"):
            rng = np.random.default_rng([mm.TYPES.index(t), r == "max"])
            v = mm._values(t, 100_001, rng)
            cpu = np.zeros(1, v.dtype)
            getattr(p, f"{r}_{t}")(v, cpu)
            dev = cp.zeros(1, v.dtype)
            getattr(p, f"{r}_{t}")(cp.asarray(v), dev)
            np.testing.assert_array_equal(_bits(dev.get()), _bits(cpu), err_msg=f"{r} {t}")
