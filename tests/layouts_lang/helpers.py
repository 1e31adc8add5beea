"""Helpers of the layouts-in-the-language tests (a plain module: tests/conftest.py owns that name).

:func:`launch` calls a compiled kernel on the CPU interpreter. N-D problems (``over (i, j) in (M,
N)``) record ``P`` in the signature as a polynomial over size symbols (``"M*N"``); until
``backend/binding.py`` evaluates such a problem size itself, :func:`launch` binds the arguments with
an extra size symbol standing in for ``P`` and then sets ``P`` and the grid from the polynomial
(exactly what the binding will do), so these tests exercise the compiler either way.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

import kernc
from kernc.dialect.signature import KernelSignature, Param
from kernc.dialect.strided import Poly

_SUPPORTED = None


def binding_supports_nd() -> bool:
    """Whether ``backend.binding.bind`` evaluates a polynomial problem size (``"M*N"``)."""
    global _SUPPORTED
    if _SUPPORTED is None:
        from kernc.backend import binding

        sig = KernelSignature("probe", [Param("x", "buffer", "f32", access="view", accessor="view",
                                              dims=["M", "N"], layout="(M,N):(N,1)",
                                              storage_shape=["M", "N"])], ["M", "N"], "M*N")
        try:
            bound = binding.bind(sig, (np.zeros((2, 3), np.float32),), {},
                                 lambda a: isinstance(a, np.ndarray), "cpu")
            _SUPPORTED = bound.problem_size == 6
        except Exception:
            _SUPPORTED = False
    return _SUPPORTED


def launch(mod, name: str, *args, **kwargs):
    """``mod.<name>(*args, **kwargs)`` on the CPU interpreter (see the module docstring)."""
    kernel = getattr(mod, name)
    sig = kernel.signature
    if sig.problem_size in sig.arg_names or binding_supports_nd():
        return kernel(*args, **kwargs)
    from kernc.api import LaunchResult
    from kernc.backend import binding, cpu

    stand_in = dataclasses.replace(sig, problem_size="__P", sizes=list(sig.sizes) + ["__P"])
    bound = binding.bind(stand_in, args, {**kwargs, "__P": 0}, cpu.is_host_array, "cpu")
    extra = len(sig.extra)
    del bound.args[len(bound.args) - extra - 1]
    bound.sizes.pop("__P")
    problem = Poly.parse(sig.problem_size).evaluate(bound.sizes)
    bound.signature = sig
    bound.problem_size = problem
    bound.grid = math.ceil(problem / sig.block) if problem else 0
    stats = cpu.launch(mod._interpreter(), bound)
    return LaunchResult("cpu", problem, bound.grid, bound.block, dict(bound.sizes), stats)


def compile_text(text: str):
    return kernc.compile(text)
