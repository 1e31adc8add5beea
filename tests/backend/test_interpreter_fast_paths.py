"""The interpreter's fast paths change nothing a kernel can observe: every shipped example and every
accessor kernel of the benchmark gives the same outputs, bit for bit, and the same traffic counters
with the fast paths (strided runs of lanes served by slices, workgroup accesses done once per block
pattern, dense gathers under a mask, memoised loop-invariant ops, pooled lane arrays, bounds guards
decided once per batch) as without them."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import kernc
from kernc.backend.interpreter import frame, memory, numeric, translate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
ACCESSORS = os.path.join(ROOT, "bench", "kern", "accessors.kern")
P = 3001  # not a multiple of a block: the last block's guard masks lanes off


def _example(name):
    spec = importlib.util.spec_from_file_location(f"fast_paths_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _slow(monkeypatch):
    monkeypatch.setattr(memory, "_lane_view", lambda *a: None)
    monkeypatch.setattr(memory, "_per_block", lambda *a: None)
    monkeypatch.setattr(memory, "_DENSE", 0)
    monkeypatch.setattr(numeric, "_bounded_compare", lambda *a: None)
    monkeypatch.setattr(translate, "_memo", lambda f, *a: f)
    monkeypatch.setattr(frame._Pool, "take", lambda self, dtype, n: np.empty(n, dtype))
    monkeypatch.setattr(frame._Pool, "give", lambda self, v: None)


def _run(path: str, kernel: str, inputs: dict):
    mod = kernc.compile_file(path)  # a new Module: a new interpreter, translated under the patches
    args = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    stats = getattr(mod, kernel)(**args).stats.to_dict()
    return {k: v for k, v in args.items() if isinstance(v, np.ndarray)}, stats


def _same(fast, slow):
    (fo, fs), (so, ss) = fast, slow
    assert fs == ss
    for k in fo:
        np.testing.assert_array_equal(fo[k].view(np.uint8), so[k].view(np.uint8), err_msg=k)


EXAMPLE_NAMES = sorted(f[:-5] for f in os.listdir(EXAMPLES) if f.endswith(".kern"))


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_examples_same_with_and_without_fast_paths(name, monkeypatch):
    inputs = _example(name).make_inputs(P, np.random.default_rng(1))
    path = os.path.join(EXAMPLES, f"{name}.kern")
    fast = _run(path, name, inputs)
    _slow(monkeypatch)
    _same(fast, _run(path, name, inputs))


def test_accessor_kernels_same_with_and_without_fast_paths(monkeypatch):
    from kernc.bench import measure

    cases = measure._accessor_cases(P, 2)
    fast = {name: _run(ACCESSORS, name, args) for name, (args, _, _) in cases.items()}
    _slow(monkeypatch)
    for name, (args, _, _) in cases.items():
        _same(fast[name], _run(ACCESSORS, name, args))


def test_the_fast_paths_are_taken(monkeypatch):
    """The comparison above is not vacuous: saxpy's accesses are strided runs (slices), a
    loop-invariant op of conv2d_fwd is memoised, and the staged transpose's workgroup tile is
    accessed once per block pattern."""
    views, memos, blocks = [], [], []
    lane_view, memo, per_block = memory._lane_view, translate._memo, memory._per_block

    def served(*a):
        run = lane_view(*a)
        views.append(run is not None)
        return run

    monkeypatch.setattr(memory, "_lane_view", served)
    monkeypatch.setattr(translate, "_memo", lambda *a: memos.append(1) or memo(*a))
    monkeypatch.setattr(memory, "_per_block", lambda *a: blocks.append(per_block(*a)) or blocks[-1])
    saxpy = _example("saxpy").make_inputs(4096, np.random.default_rng(0))  # (no partial block)
    _run(os.path.join(EXAMPLES, "saxpy.kern"), "saxpy", saxpy)
    _run(os.path.join(EXAMPLES, "conv2d_fwd.kern"), "conv2d_fwd",
         _example("conv2d_fwd").make_inputs(P, np.random.default_rng(0)))
    transpose = {"a": np.arange(64 * 96, dtype=np.float32).reshape(64, 96), "b": np.zeros((96, 64), np.float32)}
    _run(os.path.join(EXAMPLES, "transpose.kern"), "transpose", transpose)
    assert any(views) and memos and any(b is not None for b in blocks)
