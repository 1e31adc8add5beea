"""Solve a BAL bundle-adjustment problem with kernc's derivative kernels and Levenberg-Marquardt.

    python examples/bundle_adjustment/run.py                     # the shipped synthetic.bal, CPU
    python examples/bundle_adjustment/run.py --device cuda --scipy
    python examples/bundle_adjustment/run.py --ops numpy         # the numpy model instead of kernc

Prints each iteration's cost and the final RMS reprojection error; with ``--scipy`` also solves with
``scipy.optimize.least_squares`` from the same start and prints the relative difference of the final
costs. Exits 1 when the difference is above ``1e-3`` (with ``--scipy``) or the solver diverged.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bal  # noqa: E402
from solver import NumpyOps, levenberg_marquardt  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--file", default=os.path.join(HERE, "synthetic.bal"), help="a BAL text file")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--ops", choices=["kernc", "numpy"], default="kernc",
                    help="where J v and J^T r come from (default: kernc.jvp/kernc.grad of reprojection.kern)")
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--scipy", action="store_true", help="compare with scipy.optimize.least_squares")
    ns = ap.parse_args(argv)

    try:
        problem = bal.read_bal(ns.file)
    except (OSError, bal.BALError) as err:
        ap.error(str(err))
    if ns.device == "cuda":
        try:
            import cupy

            cupy.cuda.runtime.getDeviceCount()
        except Exception as err:  # noqa: BLE001 (no CuPy, no driver, no device)
            ap.error(f"no usable CUDA device ({type(err).__name__}); use --device cpu")
    C, Np, M = problem.sizes
    print(f"{os.path.basename(ns.file)}: {C} cameras, {Np} points, {M} observations")
    if ns.ops == "numpy":
        ops = NumpyOps(problem.cam_idx, problem.pt_idx, problem.observed)
    else:
        from kernels import KerncOps

        ops = KerncOps(problem, device=ns.device)
    t0 = time.perf_counter()
    out = levenberg_marquardt(
        ops, (problem.cameras, problem.points), problem.cam_idx, problem.pt_idx,
        max_iterations=ns.iterations,
        callback=lambda i, s: print(f"  iteration {i + 1:2d}: cost {s.cost:.10g}  lambda {s.lam:.3g}  "
                                    f"{s.cg_iterations} CG  {'accepted' if s.accepted else 'rejected'}"))
    dt = time.perf_counter() - t0
    start_rms = (2.0 * out.initial_cost / (2 * M)) ** 0.5 if M else 0.0
    per = f", {1e3 * dt / len(out.history):.1f} ms per iteration" if out.history else ""
    launches = f", {ops.launches} kernel launches" if hasattr(ops, "launches") else ""
    print(f"cost {out.initial_cost:.6g} -> {out.cost:.10g}, RMS reprojection error {start_rms:.4f} -> "
          f"{out.rms:.4f} px, {len(out.history)} iteration{'' if len(out.history) == 1 else 's'}{per}{launches}")
    ok = out.cost <= out.initial_cost
    if ns.scipy:
        from scipy_reference import solve_with_scipy

        _, _, cost = solve_with_scipy(problem.cameras, problem.points, problem.cam_idx, problem.pt_idx,
                                      problem.observed)
        rel = abs(out.cost - cost) / cost
        print(f"scipy.optimize.least_squares: cost {cost:.10g}; relative difference {rel:.2e}")
        ok &= rel <= 1e-3
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
