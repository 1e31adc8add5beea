"""Locating the CUDA pieces kernc uses from wheels: ``libdevice.10.bc`` and ``ptxas``.

- libdevice (NVIDIA's bitcode math library, ``__nv_expf`` ...) ships in the ``nvidia-nvvm`` wheel
  (``nvidia/cu13/nvvm/libdevice/libdevice.10.bc``); ``KERNC_LIBDEVICE`` overrides the path.
- ``ptxas`` ships in the ``nvidia-cuda-nvcc`` wheel (``nvidia/cu13/bin/ptxas``); ``KERNC_PTXAS``
  overrides it, else the wheel's, else the first ``ptxas`` on ``PATH``.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
from dataclasses import dataclass


def _nvidia_roots() -> list[str]:
    spec = importlib.util.find_spec("nvidia")
    return list(spec.submodule_search_locations) if spec and spec.submodule_search_locations else []


@functools.lru_cache(maxsize=None)
def libdevice_path() -> str | None:
    """Path of ``libdevice.10.bc`` or ``None`` if not installed."""
    env = os.environ.get("KERNC_LIBDEVICE")
    if env:
        return env if os.path.isfile(env) else None
    for root in _nvidia_roots():
        for sub in ("cu13/nvvm/libdevice", "cuda_nvcc/nvvm/libdevice", "nvvm/libdevice"):
            path = os.path.join(root, sub, "libdevice.10.bc")
            if os.path.isfile(path):
                return path
    return None


@functools.lru_cache(maxsize=None)
def ptxas_path() -> str | None:
    """Path of a ``ptxas`` executable, or ``None``."""
    env = os.environ.get("KERNC_PTXAS")
    if env:
        return env if os.path.isfile(env) else None
    for root in _nvidia_roots():
        for sub in ("cu13/bin/ptxas", "cuda_nvcc/bin/ptxas"):
            path = os.path.join(root, sub)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return shutil.which("ptxas")


@dataclass
class PtxasResult:
    """Outcome of assembling PTX: ``ok``, the tool's ``log`` (stderr+stdout), and per-kernel
    ``registers``/``spill_stores``/``spill_loads`` parsed from ``ptxas -v``."""

    ok: bool
    log: str
    registers: dict
    spills: dict


def run_ptxas(ptx: str, arch: str = "sm_90", verbose: bool = True) -> PtxasResult:
    """Assemble ``ptx`` with ``ptxas -arch=ARCH [-v]`` into a temporary cubin.

    Raises ``FileNotFoundError`` if no ptxas is found.
    """
    import re
    import tempfile

    exe = ptxas_path()
    if exe is None:
        raise FileNotFoundError("ptxas not found (pip install nvidia-cuda-nvcc, or set KERNC_PTXAS)")
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        cmd = [exe, f"-arch={arch}", src, "-o", os.path.join(tmp, "k.cubin")]
        if verbose:
            cmd.insert(1, "-v")
        import subprocess  # (only here: a compile that runs no ptxas does without its import)

        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    log = proc.stderr + proc.stdout
    registers, spills, current = {}, {}, None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = m.group(1)
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            registers[current] = int(m.group(1))
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and current:
            spills[current] = (int(m.group(1)), int(m.group(2)))
    return PtxasResult(proc.returncode == 0, log, registers, spills)
