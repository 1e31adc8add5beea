"""Compile a shipped example, run it, and compare with its numpy reference.

    python examples/run.py saxpy              # CPU interpreter, P = 1000
    python examples/run.py particles --P 4097 --device cuda

Each example ``NAME`` is ``examples/NAME.kern`` (kernel ``NAME``) plus ``examples/NAME.py`` with
``make_inputs(P, rng)`` and ``reference(inputs)``. Exits 0 when every output matches the reference
(``np.allclose`` with ``rtol=1e-5, atol=1e-6``), 1 otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def load_reference(name: str):
    """Import ``examples/NAME.py`` as a module."""
    spec = importlib.util.spec_from_file_location(f"kernc_example_{name}", os.path.join(HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    import kernc

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", help="example name, e.g. saxpy")
    ap.add_argument("--P", type=int, default=1000, help="problem size")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ns = ap.parse_args(argv)

    runnable = sorted(f[:-5] for f in os.listdir(HERE)
                      if f.endswith(".kern") and os.path.exists(os.path.join(HERE, f[:-5] + ".py")))
    if ns.name not in runnable:
        extra = " (examples/bundle_adjustment has its own run.py)" if ns.name == "bundle_adjustment" else ""
        ap.error(f"no example '{ns.name}'{extra}; runnable: {', '.join(runnable)}")
    if ns.device == "cuda":
        try:
            import cupy as cp

            cp.cuda.runtime.getDeviceCount()
        except Exception as err:  # noqa: BLE001 (no CuPy, no driver, no device)
            ap.error(f"no usable CUDA device ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); "
                     "use --device cpu")
    ref = load_reference(ns.name)
    mod = kernc.compile_file(os.path.join(HERE, f"{ns.name}.kern"))
    inputs = ref.make_inputs(ns.P, np.random.default_rng(ns.seed))
    expected = ref.reference({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()})
    args = dict(inputs)
    if ns.device == "cuda":
        import cupy as cp

        args = {k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    result = getattr(mod, ns.name)(**args)
    ok = True
    for name, want in expected.items():
        got = args[name].get() if ns.device == "cuda" else args[name]
        match = np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
        ok &= bool(match)
        err = float(np.max(np.abs(got.astype(np.float64) - want))) if got.size else 0.0
        print(f"{name}: {'matches' if match else 'DIFFERS FROM'} numpy (max abs error {err:.3g}); "
              f"first values {np.array2string(got.reshape(-1)[:4], precision=4)}")
    print(f"{ns.name} on {result.device}: P={result.problem_size}, {result.grid} block{'' if result.grid == 1 else 's'} of {result.block}: "
          f"{'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
