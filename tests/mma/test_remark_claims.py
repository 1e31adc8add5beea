"""What the tensor-core remark claims about bank conflicts holds on the CPU interpreter's counters
for every orientation of the operands (k contiguous, or along the tile coordinate through a
column-major layout: ldmatrix with and without .trans)."""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.compiler import Compilation, CompileOptions

LAYOUT = "layout colmaj(R, C) = (R, C):(1, R);\n"
BODY = """kernel gt(a: f16[M, K] view{A}, b: f16[K, N] view{B}, c: f32[M, N] view) over (i, j) in (M, N) {{
    let acc = 0.0;
    for k in 0..K {{ acc += a[i, k] * b[k, j]; }}
    c[i, j] = acc;
}}
"""
CASES = {"row_row": ("", ""), "row_col": ("", " as colmaj(K, N)"), "col_row": (" as colmaj(M, K)", "")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_no_bank_conflict_claim_holds(case, capsys):
    A, B = CASES[case]
    src = LAYOUT + BODY.format(A=A, B=B)
    Compilation(src, "t.kern", CompileOptions(remarks=True, arch="sm_80"), use_cache=False)
    err = capsys.readouterr().err
    assert "'gt' on tensor cores" in err, err
    mod = kernc.compile(src, arch="sm_80")
    n = 128  # (square: the storage shapes of the column-major operands are the same)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((n, n)).astype(np.float16), rng.standard_normal((n, n)).astype(np.float16)
    c = np.zeros((n, n), np.float32)
    result = mod.gt(a, b, c)
    la = a.T if A else a
    lb = b.T if B else b
    np.testing.assert_allclose(c, la.astype(np.float64) @ lb.astype(np.float64), rtol=1e-4, atol=1e-3)
    if "(no bank conflict)" in err or "ldmatrix without bank conflicts" in err:
        assert result.stats.shared_bank_conflicts == 0, (case, result.stats.shared_bank_conflicts)
    else:
        assert "conflict" in err and result.stats.shared_bank_conflicts > 0
