"""Reductions across items for ``python -m bench`` (issue 21): the CPU interpreter's traffic
counters of ``examples/softmax.kern`` and ``examples/layernorm.kern`` (forward) at 64 x 4096 f32,
against the targets: at most 4.5 global-load sectors per warp request (the ideal is 4: 32 lanes
reading 32 consecutive f32) and at most 2.1x the inputs' bytes loaded (``x``, and ``w``, ``b`` for
layernorm; 32 bytes per sector). Every result is checked against numpy first.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np

#: target id -> (text, limit)
TARGETS = {
    "softmax_sectors": ("softmax 64x4096 f32: load sectors per request <= 4.5", 4.5),
    "softmax_bytes": ("softmax 64x4096 f32: bytes loaded <= 2.1x the input's", 2.1),
    "layernorm_sectors": ("layernorm 64x4096 f32: load sectors per request <= 4.5", 4.5),
    "layernorm_bytes": ("layernorm 64x4096 f32: bytes loaded <= 2.1x the inputs'", 2.1),
    # the GPU's (bench/gpu.py): at least 85% of the HBM peak, as peak / achieved <= 1/0.85
    "softmax_hbm": ("softmax 4096x4096 f32 on the GPU: >= 85% of HBM peak (peak / achieved <= 1.18)", 1 / 0.85),
    "layernorm_hbm": ("layernorm 4096x4096 f32 on the GPU: >= 85% of HBM peak (peak / achieved <= 1.18)", 1 / 0.85),
}
SHAPE = (64, 4096)


def _reference(examples_dir: str, name: str):
    spec = importlib.util.spec_from_file_location(f"kernc_bench_{name}", os.path.join(examples_dir, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(examples_dir: str, quick: bool) -> dict:
    """``{name: {"shape", "load_requests", "load_sectors", "sectors_per_request", "input_bytes",
    "bytes_ratio"}}`` for softmax and layernorm (the full shape also when ``quick``: the targets'
    size, about a second each)."""
    import kernc

    out = {}
    R, N = SHAPE
    for name, inputs_of in (("softmax", ("x",)), ("layernorm", ("x", "w", "b"))):
        path = os.path.join(examples_dir, f"{name}.kern")
        if not os.path.exists(path):
            continue
        try:
            ref = _reference(examples_dir, name)
            mod = kernc.compile_file(path)
            inputs = ref.make_inputs(R * N, np.random.default_rng(0))
            # make_inputs factors P near its square root: the target's shape is 64 rows of 4096
            rng = np.random.default_rng(1)
            for k, v in list(inputs.items()):
                if isinstance(v, np.ndarray):
                    shape = SHAPE if v.ndim == 2 else (N,) if k in ("w", "b") else (R,)
                    inputs[k] = (rng.standard_normal(shape) if k in ("x", "w", "b") else np.zeros(shape)).astype(v.dtype)
            expected = ref.reference({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()})
            st = getattr(mod, name)(**inputs).stats
            for k, want in expected.items():
                np.testing.assert_allclose(inputs[k], want, **ref.TOLERANCE)
            in_bytes = sum(inputs[k].nbytes for k in inputs_of)
            out[name] = {"shape": list(SHAPE), "load_requests": st.global_load_requests,
                         "load_sectors": st.global_load_sectors,
                         "sectors_per_request": st.global_load_sectors / max(st.global_load_requests, 1),
                         "input_bytes": in_bytes, "bytes_ratio": st.global_load_sectors * 32 / in_bytes}
        except Exception as err:  # noqa: BLE001  (a failing row is reported, the others still run)
            out[name] = {"error": f"{type(err).__name__}: {err}"}
    return out


def _status(value, limit) -> str:
    return "n/a" if value is None else ("PASS" if value <= limit else "FAIL")


def targets(results: dict) -> list[dict]:
    """The target entries (as ``bench.runner.evaluate_targets`` makes them) of ``results``."""
    rows = results.get("memory_reductions") or {}
    out = []
    gpu = results.get("gpu") or {}
    for target, (text, limit) in TARGETS.items():
        name, what = target.split("_")
        if what == "hbm":
            kernc = ((gpu.get(f"{name}_bandwidth") or {}).get("variants") or {}).get("kernc") or {}
            pct = kernc.get("pct_of_peak")
            full = (gpu.get(f"{name}_bandwidth") or {}).get("rows") == 4096
            value, unit = (100.0 / pct if pct and full else None), "x peak / achieved"
        else:
            row = rows.get(name) or {}
            value = row.get("sectors_per_request" if what == "sectors" else "bytes_ratio")
            unit = "sectors per request" if what == "sectors" else "x the input bytes"
        out.append({"target": target, "text": text, "example": name, "kernel": None, "measured": value,
                    "unit": unit, "limit": limit, "status": _status(value, limit)})
    return out


def render(results: dict) -> list[str]:
    rows = results.get("memory_reductions") or {}
    if not rows:
        return []
    lines = ["", "Reductions across items on the CPU interpreter (64x4096 f32; issue 21 targets):"]
    for name, r in rows.items():
        if "error" in r:
            lines.append(f"  {name}: error {r['error']}")
            continue
        lines.append(f"  {name}: {r['load_requests']} load requests, {r['sectors_per_request']:.2f} sectors "
                     f"per request (target <= 4.5 {_status(r['sectors_per_request'], 4.5)}); "
                     f"{r['load_sectors'] * 32} bytes loaded = {r['bytes_ratio']:.2f}x the input's "
                     f"{r['input_bytes']} (target <= 2.1x {_status(r['bytes_ratio'], 2.1)})")
    return lines
