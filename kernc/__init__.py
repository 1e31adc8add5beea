"""kernc: a GPU kernel compiler toolchain.

``.kern`` source -> AST -> ``kern`` MLIR dialect -> ``gpu`` IR -> PTX, launched through CuPy on NVIDIA
GPUs or executed by kernc's CPU reference interpreter. See ``kernc.compile`` / ``kernc.compile_file``.
"""

from __future__ import annotations

from kernc.support.errors import (  # noqa: E402
    CompileError,
    Diagnostic,
    InternalCompilerError,
    KerncError,
    KerncLaunchError,
    KerncRuntimeError,
)
from kernc.support.version import __version__  # noqa: E402


def __getattr__(name):
    # The API pulls in MLIR; load it on first use so `import kernc` stays cheap.
    if name in ("compile", "compile_file", "grad", "jvp", "derivative_source", "Module", "Kernel", "LaunchResult"):
        from kernc import api

        return getattr(api, name)
    # `kernc.layout.Layout(...)` and `kernc.caspar.to_caspar(x)` (no MLIR needed), `kernc.errors.Diagnostic`
    # and `kernc.mlir.ir` after a plain `import kernc` (the last two are the modules of kernc.support
    # under their public names)
    if name in ("layout", "errors", "mlir", "caspar"):
        import importlib

        return importlib.import_module(f"kernc.{name}")
    raise AttributeError(f"module 'kernc' has no attribute '{name}'")


__all__ = [
    "compile",
    "compile_file",
    "grad",
    "jvp",
    "derivative_source",
    "Module",
    "Kernel",
    "LaunchResult",
    "CompileError",
    "Diagnostic",
    "InternalCompilerError",
    "KerncError",
    "KerncLaunchError",
    "KerncRuntimeError",
    "__version__",
]
