"""Which build a launch ran: ``LaunchResult.tiled`` and ``LaunchResult.tensor_cores``, and ``kernc
run --stats`` / ``--stats-json`` saying so."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import kernc
from conftest import EXAMPLES

GEMM_F16 = open(os.path.join(EXAMPLES, "gemm_f16.kern")).read()
GEMM_F16_FILE = os.path.join(EXAMPLES, "gemm_f16.kern")


@pytest.fixture(scope="module")
def f16_builds():
    return {arch: kernc.compile(GEMM_F16, arch=arch, filename="g.kern") for arch in ("sm_75", "sm_80", "sm_90a")}


def _run(mod, m=16, n=16, k=16):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float32)
    got = mod.gemm_f16(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    return got


def test_tensor_cores_are_reported(f16_builds):
    assert _run(f16_builds["sm_80"]).tensor_cores == "mma.sync"
    assert _run(f16_builds["sm_90a"]).tensor_cores == "wgmma"
    got = _run(f16_builds["sm_75"], 64, 64, 16)  # (no mma.sync: tiled on CUDA cores)
    assert got.tensor_cores is None and got.tiled is True
    assert _run(kernc.compile(GEMM_F16, arch="sm_80", tensor_cores=False), 64, 64, 16).tensor_cores is None


def test_run_stats_and_json_say_which_build_ran(tmp_path, capsys):
    from kernc.cli import main

    rng = np.random.default_rng(1)
    np.save(tmp_path / "a.npy", rng.standard_normal((16, 16)).astype(np.float16))
    np.save(tmp_path / "b.npy", rng.standard_normal((16, 16)).astype(np.float16))
    js = tmp_path / "s.json"
    argv = ["run", GEMM_F16_FILE, "--arch", "sm_80", "--input", f"a=@{tmp_path / 'a.npy'}",
            "--input", f"b=@{tmp_path / 'b.npy'}", "--size", "M=16", "--size", "N=16",
            "--output-dir", str(tmp_path), "--stats", "--stats-json", str(js)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "; contraction on tensor cores (mma.sync)" in out, out
    data = json.loads(js.read_text())
    assert data["tensor_cores"] == "mma.sync" and "tiled" in data and data["tiled"] is None
