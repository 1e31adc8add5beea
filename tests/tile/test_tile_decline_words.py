"""Regression (new-user trial): a loop body kern-tile-contractions cannot tile was named by its IR
op (``the loop's body holds 'kern.view_store'``, ``'scf.if'``, ``'kern.in_bounds'``), with no word
on how to write it so it tiles. The remark now says it in the source's terms, with the fix, and
the suggested form tiles."""

from __future__ import annotations

import pytest

from kernc.compiler import Compilation, CompileOptions

HEAD = "kernel g(a: f32[M, K] view, b: f32[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {\n"
CASES = {
    "store": (HEAD + "    let acc = 0.0;\n    for k in 0..K { acc += a[i, k] * b[k, j]; c[i, j] = acc; }\n}",
              "holds a store to a view: only arithmetic and view reads are tiled; sum into a `let` and "
              "store it after the loop"),
    "store_before": (HEAD + "    c[i, j] = 0.0;\n    let acc = 0.0;\n    for k in 0..K { acc += a[i, k] * b[k, j]; }\n"
                            "    c[i, j] = acc;\n}",
                     "the code before its loop does more than arithmetic and view reads (it holds a store to "
                     "a view: a store, a branch or a call is not cloned per item)"),
    "if": (HEAD + "    let acc = 0.0;\n    for k in 0..K { if a[i, k] > 0.0 { acc += a[i, k] * b[k, j]; } }\n"
                  "    c[i, j] = acc;\n}",
           "holds an `if`: only arithmetic and view reads are tiled; sum a `select(c, x, 0.0)` instead"),
    "default": (HEAD.replace("a: f32[M, K] view,", "a: f32[M, K] view default d,").replace(
        "c: f32[M, N] view)", "c: f32[M, N] view, d: f32)")
                + "    let acc = 0.0;\n    for k in 0..K { acc += a.checked(i, k - 1) * b[k, j]; }\n"
                  "    c[i, j] = acc;\n}",
                "holds a checked read whose default is not a literal: only arithmetic and view reads are "
                "tiled; a literal default tiles"),
    "select": (HEAD + "    let acc = 0.0;\n    for k in 0..K { acc += select(a[i, k] > 0.0, a[i, k] * b[k, j], 0.0); }\n"
                      "    c[i, j] = acc;\n}", "tiling 'g' as "),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_decline_says_it_in_source_terms(case, capsys):
    src, words = CASES[case]
    Compilation(src, "w.kern", CompileOptions(remarks=True), use_cache=False).gpu_ir()
    err = capsys.readouterr().err
    assert words in err, err
    assert "'kern." not in err and "'scf." not in err


def test_a_1d_contraction_is_said_not_to_tile(capsys):
    """Regression (new-user trial): a gemv (``over (i) in (M)`` with a loop) got no tiling remark."""
    src = """kernel gemv(a: f32[M, K] view, x: f32[K] view, y: f32[M] view) over (i) in (M) {
    let acc = 0.0;
    for k in 0..K { acc += a[i, k] * x[k]; }
    y[i] = acc;
}"""
    Compilation(src, "v.kern", CompileOptions(remarks=True), use_cache=False).gpu_ir()
    assert "v.kern: remark: no loop is tiled: kern-tile-contractions (and the tensor cores) take the " \
           "loops of N-D problems" in capsys.readouterr().err
    Compilation(src.replace("for k in 0..K { acc += a[i, k] * x[k]; }", "acc = a[i, 0];"), "w.kern",
                CompileOptions(remarks=True), use_cache=False).gpu_ir()
    assert "no loop is tiled" not in capsys.readouterr().err


def test_a_tile_too_thin_for_the_micro_tile_says_why():
    """Regression (new-user trial): ``@tile(4096, 4, 1)`` said only "cannot give 256 threads 8x8 items
    each", with a hint of a size range the tile (16384 items) is in."""
    from kernc.errors import CompileError

    src = "@tile(4096, 4, 1)\n" + CASES["select"][0]
    with pytest.raises(CompileError) as err:
        Compilation(src, "t.kern", CompileOptions(), use_cache=False).gpu_ir()
    assert ("a 4096x4 tile cannot give 256 threads 8x8 items each (its 64 items per thread are laid out "
            "8x8, which needs at least 8 rows and 8 columns; a tile closer to square fits)") in str(err.value)
