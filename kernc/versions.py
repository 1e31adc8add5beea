"""What ``kernc --version`` prints: the versions of kernc, the MLIR build it compiles with, the
``ptxas`` it assembles with and, when a driver is installed, the CUDA driver's.

Cheap: nothing here imports MLIR or CuPy (the MLIR build is read from its distribution's metadata,
``ptxas`` is asked with ``--version``, the driver through ``cuDriverGetVersion`` of
``libcuda.so.1``), so ``kernc --version`` answers in about the time of a start.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import re
import subprocess

#: The distribution that ships the upstream MLIR Python bindings kernc imports (``support/mlir.py``).
MLIR_DISTRIBUTION = "numba-cuda-mlir"


def mlir_version() -> str | None:
    """``numba-cuda-mlir X.Y.Z``, or ``None`` when the distribution is not installed."""
    try:
        return f"{MLIR_DISTRIBUTION} {importlib.metadata.version(MLIR_DISTRIBUTION)}"
    except importlib.metadata.PackageNotFoundError:
        return None


def ptxas_version() -> str | None:
    """``ptxas`` 's release and path (``13.5 (V13.5.37), /path/ptxas``), or ``None`` without one."""
    from kernc.backend.toolkit import ptxas_path

    path = ptxas_path()
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return f"unknown version, {path}"
    m = re.search(r"release ([0-9.]+), (V[0-9.]+)", out)
    return f"{m.group(1)} ({m.group(2)}), {path}" if m else f"unknown version, {path}"


def driver_version() -> str | None:
    """The CUDA driver's version (``13.0``) from ``cuDriverGetVersion``, or ``None`` without a
    driver (no ``libcuda.so.1``) or when it fails."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    v = ctypes.c_int(0)
    try:
        if lib.cuDriverGetVersion(ctypes.byref(v)) != 0:
            return None
    except AttributeError:
        return None
    return f"{v.value // 1000}.{v.value % 1000 // 10}"


def version_text() -> str:
    """The lines of ``kernc --version``."""
    from kernc import __version__

    lines = [f"kernc {__version__}",
             f"MLIR: {mlir_version() or 'not installed (pip install ' + MLIR_DISTRIBUTION + ')'}",
             f"ptxas: {ptxas_version() or 'not found (pip install nvidia-cuda-nvcc, or set KERNC_PTXAS)'}"]
    driver = driver_version()
    if driver is not None:
        lines.append(f"CUDA driver: {driver}")
    return "\n".join(lines) + "\n"


__all__ = ["version_text", "mlir_version", "ptxas_version", "driver_version"]
