"""Regression (a CI crash): the contraction passes gave their "tiling ..." / "on tensor cores" remark
the location of the loop their rewrite had just erased (``plan.loop.location`` of a freed op): a
segmentation fault when the memory was reused (seen once, in an xdist worker). Each pass now takes
the location before it rewrites; checked here by failing any remark given an op after a rewrite."""

from __future__ import annotations

import pytest

from kernc.compiler import Compilation, CompileOptions
from kernc.passes import mma_contractions, tile_contractions, wgmma_contractions
from kernc.support.mlir import ir

SRC = """kernel g(a: T[M, K] view, b: T[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for k in 0..K { acc += a[i, k] * b[k, j]; }
    c[i, j] = acc;
}"""


@pytest.mark.parametrize("module, rewrite, dtype, opts", [
    (tile_contractions, "_Rewrite", "f32", {}),
    (mma_contractions, "_Rewrite", "f16", {"arch": "sm_80"}),
    (wgmma_contractions, "_WgmmaRewrite", "f16", {"arch": "sm_90a", "tma": True}),
])
def test_no_remark_reads_an_erased_op(module, rewrite, dtype, opts, monkeypatch, capsys):
    rewritten = []
    cls = getattr(module, rewrite)
    run = cls.run

    def tracked(self):
        run(self)
        rewritten.append(True)
    monkeypatch.setattr(cls, "run", tracked)
    emit = module.emit_remark

    def checked(remarks, at, text):
        assert not rewritten or isinstance(at, ir.Location), f"a remark at an op after the rewrite: {text}"
        emit(remarks, at, text)
    monkeypatch.setattr(module, "emit_remark", checked)
    Compilation(SRC.replace("T[", f"{dtype}["), "r.kern", CompileOptions(remarks=True, **opts),
                use_cache=False).gpu_ir()
    assert rewritten
    assert "r.kern:3:9: remark:" in capsys.readouterr().err
