"""The bundle-adjustment rows of ``python -m bench`` (bench/bundle_adjustment.py) on the CPU."""

from __future__ import annotations

import os

from bench import bundle_adjustment

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def test_cpu_row_and_render():
    out = bundle_adjustment.run(EXAMPLES, quick=True, gpu=False)
    cpu = out["cpu"]
    assert cpu["device"] == "cpu" and cpu["iterations"] == 1, cpu
    assert cpu["ms_per_iteration"] > 0 and cpu["launches_per_iteration"] >= 14  # residual, 12 jvp, grad, CG
    assert cpu["sizes"] == [48, 128, 6144]
    assert cpu["final_rms_px"] < 1.1  # one iteration from 11.7 px already reaches ~0.99
    assert out["gpu"] == {"available": False, "note": "no usable CUDA device: the GPU row is not measured"}
    lines = bundle_adjustment.render({"bundle_adjustment": out})
    assert "ms per LM iteration" in lines[2] and lines[3].startswith("  gpu: no usable CUDA device")


def test_missing_example_gives_no_section(tmp_path):
    assert bundle_adjustment.run(str(tmp_path), quick=True) == {}
    assert bundle_adjustment.render({}) == []
