"""Differential testing: the CPU interpreter against an independent reference evaluation.

Random valid element-wise kernels over ``f32 f64 i32 u32`` buffers and scalars (``robust_gen`` with
``diff=True``: lets, assignments, ``if``/``else``, ``for`` loops with literal bounds, ``return``,
arithmetic / division / remainder / bitwise / shift / comparison / logical operators, casts,
``min max abs floor ceil sqrt select``, ``thread_id``/``problem_size``) are compiled and called with
numpy arrays (the CPU interpreter runs the gpu IR), and every output is compared with
``robust_gen.evaluate`` -- plain Python over the generated expression objects, not kernc's IR -- which
spells out C semantics for ``/`` ``%``, floor semantics for ``//`` ``%%``, wrap-around, signedness,
float ops in the declared precision and fmin/fmax NaN rules.

Integers must be equal; floats equal as values (NaN == NaN; +0.0 == -0.0), no tolerance -- the
generated programs avoid the ulp-inexact math functions (only sqrt, which IEEE rounds exactly).
Inputs mix random values with the edge cases (0, -0.0, +-inf, NaN, denormals, INT_MIN/INT_MAX ...).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernc
import robust_gen as G

SCALE = int(os.environ.get("ROBUST_FUZZ_SCALE", "1"))
DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "u32": np.uint32}
SPECIAL = {
    "f32": [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 3.0e38, -3.4e38, 1e-45, 1e-39, 65504.0, 0.1],
    "f64": [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e308, -1.7e308, 5e-324, 1e-310, 0.1],
    "i32": [0, 1, -1, 2, -2, 2**31 - 1, -2**31, 7, -7, 65536, -65536],
    "u32": [0, 1, 2, 2**32 - 1, 2**31, 2**31 - 1, 7, 65536],
}


@pytest.fixture(scope="module", autouse=True)
def _compile_every_time():
    saved = os.environ.get("KERNC_ALWAYS_COMPILE")
    os.environ["KERNC_ALWAYS_COMPILE"] = "1"
    yield
    if saved is None:
        os.environ.pop("KERNC_ALWAYS_COMPILE", None)
    else:
        os.environ["KERNC_ALWAYS_COMPILE"] = saved


def make_values(ty: str, n: int, rng: np.random.Generator) -> np.ndarray:
    dt = DTYPES[ty]
    if ty in ("f32", "f64"):
        a = (rng.standard_normal(n) * rng.choice([1.0, 100.0, 1e6])).astype(dt)
    elif ty == "i32":
        a = np.where(rng.random(n) < 0.5, rng.integers(-20, 20, n),
                     rng.integers(-2**31, 2**31, n, dtype=np.int64)).astype(dt)
    else:
        a = np.where(rng.random(n) < 0.5, rng.integers(0, 40, n),
                     rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.int64)).astype(dt)
    mask = rng.random(n) < 0.25
    special = np.array(SPECIAL[ty], dtype=np.float64 if ty[0] == "f" else np.int64)
    a[mask] = special[rng.integers(0, len(special), int(mask.sum()))].astype(dt)
    return a


def same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    if got.dtype.kind == "f":
        return (got == want) | (np.isnan(got) & np.isnan(want))
    return got == want


def run_and_compare(prog: G.Program, seed: int, n: int) -> None:
    text = prog.render()
    mod = kernc.compile(text, filename="diff.kern")
    rng = np.random.default_rng(seed)
    inputs, outputs = {}, {}
    for p in prog.params:
        if p.kind == "scalar":
            inputs[p.name] = make_values(p.ty, 1, rng)[0]
        elif p.access == "read":
            inputs[p.name] = make_values(p.ty, n, rng)
        else:
            outputs[p.name] = make_values(p.ty, n, rng)
    want, open_ = G.evaluate(prog, inputs, outputs, n)
    got = {k: v.copy() for k, v in outputs.items()}
    mod.k(**inputs, **got)
    for name in outputs:
        ok = same(got[name], want[name]) | open_
        if not ok.all():
            t = int(np.argmin(ok))
            values = {k: (v[t] if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
            raise AssertionError(
                f"output '{name}' differs at t={t} (n={n}): interpreter {got[name][t]!r}, reference "
                f"{want[name][t]!r}; inputs {values}, initial {name}={outputs[name][t]!r}\n{text}")


@st.composite
def _drawn(draw):
    return G.Gen(G.HypRng(draw), diff=True, max_depth=3).program()


def diff_programs():
    """Half drawn choice by choice (small, shrinkable), half from a seeded ``random.Random`` (bigger)."""
    return st.one_of(_drawn(), st.integers(0, 2**32 - 1).map(
        lambda seed: G.Gen(G.PyRng(seed), diff=True, max_depth=4, max_stmts=8).program()))


@settings(max_examples=250 * SCALE, deadline=None, derandomize=SCALE == 1,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(diff_programs(), st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 7, 32, 33, 70, 257]))
def test_interpreter_matches_reference(prog, seed, n):
    run_and_compare(prog, seed, n)


def test_reference_evaluator_spot_checks():
    """The reference itself, on hand-computed values (so a wrong reference cannot hide a bug)."""
    i32, u32, f32 = "i32", "u32", "f32"
    assert G.eval_bin("/", -7, 2, i32) == -3 and G.eval_bin("%", -7, 2, i32) == -1
    assert G.eval_bin("//", -7, 2, i32) == -4 and G.eval_bin("%%", -7, 2, i32) == 1
    assert G.eval_bin("%", 7, -2, i32) == 1 and G.eval_bin("%%", 7, -2, i32) == -1
    assert G.eval_bin("+", 2**31 - 1, 1, i32) == -2**31
    assert G.eval_bin("-", 0, 1, u32) == 2**32 - 1
    assert G.eval_bin("<", 2**31, 1, u32) is False and G.eval_bin(">>", 2**31, 31, u32) == 1
    assert G.eval_bin(">>", -2**31, 31, i32) == -1
    assert G.eval_bin("<<", 1, 31, i32) == -2**31
    assert G.eval_bin("%%", np.float32(-1), np.float32(3), f32) == 2
    assert G.eval_bin("//", np.float32(-1), np.float32(3), f32) == -1
    assert G.eval_bin("!=", np.float32("nan"), np.float32("nan"), f32) is True
    assert G.convert(np.float32(-2.7), f32, i32) == -2 and G.convert(-1, i32, u32) == 2**32 - 1
    assert G.convert(2**24 + 1, i32, f32) == np.float32(2**24)
    third = G.eval_bin("/", np.float32(1), np.float32(3), f32)
    assert isinstance(third, np.float32) and third == np.float32(1) / np.float32(3)


# -- edge cases chosen by hand, through the same reference ------------------------------------------

@pytest.mark.parametrize("ty", ["i32", "u32"])
@pytest.mark.parametrize("ops", [("/", "%"), ("//", "%%")])
def test_division_and_remainder_of_every_sign_combination(ty, ops):
    x = np.array([7, -7, 7, -7, 0, 1, -2**31, 2**31 - 1, 6, -6], np.int64)
    d = np.array([2, 2, -2, -2, 3, -1, 3, -3, 3, 3], np.int64)
    if ty == "u32":
        x, d = x % 2**32, d % 2**32
    dt = DTYPES[ty]
    mod = kernc.compile(f"kernel k(x: {ty}[n] read, d: {ty}[n] read, y: {ty}[n] write, z: {ty}[n] write) "
                        f"over n {{ y = x {ops[0]} d; z = x {ops[1]} d; }}")
    y, z = np.zeros(len(x), dt), np.zeros(len(x), dt)
    mod.k(x.astype(dt), d.astype(dt), y, z)
    want_y = [G.eval_bin(ops[0], int(a), int(b), ty) for a, b in zip(x, d)]
    want_z = [G.eval_bin(ops[1], int(a), int(b), ty) for a, b in zip(x, d)]
    assert y.astype(np.int64).tolist() == want_y
    assert z.astype(np.int64).tolist() == want_z


@pytest.mark.parametrize("expr", ["1.0 / -0.0", "1.0 / (-0.0f32)", "1.0 / (x * -0.0)"])
def test_negated_zero_literal_is_negative_zero(expr):
    mod = kernc.compile(f"kernel k(x: f32[n] read, y: f32[n] write) over n {{ y = {expr}; }}")
    y = np.zeros(1, np.float32)
    mod.k(np.zeros(1, np.float32), y)
    assert y[0] == -np.inf


def test_abs_of_unsigned_is_the_identity():
    mod = kernc.compile("kernel k(x: u32[n] read, y: u32[n] write) over n { y = abs(x); }")
    x = np.array([4000000000, 2**31, 5], np.uint32)
    y = np.zeros(3, np.uint32)
    mod.k(x, y)
    assert y.tolist() == x.tolist()
