"""The bundle-adjustment example in ``python -m bench``: time per Levenberg-Marquardt iteration of
``examples/bundle_adjustment/`` (its ``synthetic.bal``: 48 cameras, 128 points, 6144 observations),
whose Jacobian products are ``kernc.jvp``/``kernc.grad`` kernels of one residual kernel, on the CPU
interpreter and, when a device is present, on CuPy (issue 22). No target: the row reports."""

from __future__ import annotations

import os
import sys
import time

#: LM iterations timed (the shipped problem converges in 5)
ITERATIONS = {True: 1, False: 5}


def _load(examples_dir: str):
    folder = os.path.join(examples_dir, "bundle_adjustment")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import bal
    import kernels
    import solver

    return bal.read_bal(os.path.join(folder, "synthetic.bal")), kernels, solver


def _time(examples_dir: str, device: str, iterations: int) -> dict:
    problem, kernels, solver = _load(examples_dir)
    t0 = time.perf_counter()
    ops = kernels.KerncOps(problem, device=device)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = solver.levenberg_marquardt(ops, (problem.cameras, problem.points), problem.cam_idx,
                                     problem.pt_idx, max_iterations=iterations)
    seconds = time.perf_counter() - t0
    n = len(out.history)
    return {"device": device, "iterations": n, "ms_per_iteration": 1e3 * seconds / max(1, n),
            "launches_per_iteration": ops.launches / max(1, n), "compile_s": compile_s,
            "final_rms_px": out.rms, "sizes": list(problem.sizes)}


def run(examples_dir: str, quick: bool, gpu: bool = True) -> dict:
    """``{"cpu": row, "gpu": row}``: each row ``{"device", "iterations", "ms_per_iteration",
    "launches_per_iteration", "compile_s", "final_rms_px", "sizes"}``, or ``{"error"}``; ``"gpu"``
    is ``{"available": False, "note"}`` without a usable device (or with ``gpu=False``)."""
    if not os.path.exists(os.path.join(examples_dir, "bundle_adjustment", "synthetic.bal")):
        return {}
    out: dict = {}
    try:
        out["cpu"] = _time(examples_dir, "cpu", ITERATIONS[quick])
    except Exception as err:  # noqa: BLE001
        out["cpu"] = {"error": f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"}
    from kernc.backend import cuda

    if not gpu or not cuda.available():
        out["gpu"] = {"available": False, "note": "no usable CUDA device: the GPU row is not measured"}
    else:
        try:
            out["gpu"] = _time(examples_dir, "cuda", ITERATIONS[quick])
        except Exception as err:  # noqa: BLE001
            out["gpu"] = {"error": f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"}
    return out


def render(results: dict) -> list[str]:
    """The lines of the bundle-adjustment section (none for results without it)."""
    sec = results.get("bundle_adjustment")
    if not sec:
        return []
    lines = ["", "Bundle adjustment (examples/bundle_adjustment: LM with kernc.grad/kernc.jvp products)"]
    for key in ("cpu", "gpu"):
        r = sec.get(key) or {}
        if "ms_per_iteration" in r:
            C, Np, M = r["sizes"]
            lines.append(f"  {r['device']}: {r['ms_per_iteration']:.1f} ms per LM iteration "
                         f"({r['launches_per_iteration']:.0f} launches each; {r['iterations']} iterations, "
                         f"RMS {r['final_rms_px']:.4f} px; {C} cameras, {Np} points, {M} observations; "
                         f"compile {r['compile_s']:.2f} s)")
        elif r:
            lines.append(f"  {key}: {r.get('note') or r.get('error')}")
    return lines
