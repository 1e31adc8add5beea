"""Derivatives of a generated corpus of kernels (``corpus.py``) against central differences, in f64
on the CPU interpreter: ``K_grad`` and ``K_jvp`` to 2e-5 relative (normwise per parameter), and the
dot-product test ``<y_bar, J x_dot> = <J^T y_bar, x_dot>`` to 1e-12."""

from __future__ import annotations

import os
import re

import pytest

import corpus
import fd

#: 32 kernels in the suite (KERNC_DERIVATIVE_CORPUS=200 checks more: all 200 pass, docs/derivatives.md)
SEEDS = range(int(os.environ.get("KERNC_DERIVATIVE_CORPUS", "32")))


@pytest.fixture(scope="module")
def results():
    out = {}
    for seed in SEEDS:
        source, kernel, wrt, args, sizes = corpus.program(seed)
        out[seed] = (source, fd.check(source, kernel, wrt, args, sizes, seed=seed))
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_kernel_matches_finite_differences(results, seed):
    source, r = results[seed]
    assert r["grad"] < 2e-5, source
    assert r["jvp"] < 2e-5, source
    assert r["dot"] < 1e-12, source


def test_corpus_covers_every_form(results):
    """Every accessor, builtin and control-flow form occurs in the corpus (else the corpus
    checks less than it says), and most kernels have derivatives that are not all zero."""
    text = "\n".join(src.split("kernel", 1)[1] for src, _ in results.values())
    forms = ["read strided", "indexed(I)", "shared(I)", "as caspar", "unique", "read pair", "view",
             "write strided", "atomic(I)", "shared_sum(I)", "add sum", "add pair", ".atomic(", ".checked(",
             "exp(", "log(", "sqrt(", "rsqrt(", "sin(", "cos(", "tanh(", "floor(", "ceil(", "abs(",
             "min(", "max(", "fma(", "select(", "i32(", " % ", " %% ", " / ", "if ", "else", "0..m",
             "0..3", "bend(", "spin(", "*=", "-=", "+="]
    missing = [f for f in forms if f not in text]
    assert not missing
    nonzero = sum(1 for _, r in results.values() if any(abs(g).max() > 0 for g in r["grads"].values()))
    assert nonzero >= 0.9 * len(results)
    assert re.search(r"\w+\[\d\] [-+]?= ", text)  # a vector component mutated
