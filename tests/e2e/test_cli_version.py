"""``kernc --version``: kernc's, the MLIR build's, ptxas's and (with a driver) the CUDA driver's
versions (``kernc/versions.py``)."""

from __future__ import annotations

import ctypes
import importlib.metadata
import subprocess
import sys


from kernc import __version__, versions
from kernc.backend.toolkit import ptxas_path


def test_version_lines():
    proc = subprocess.run([sys.executable, "-m", "kernc", "--version"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"kernc {__version__}"
    assert lines[1] == f"MLIR: numba-cuda-mlir {importlib.metadata.version('numba-cuda-mlir')}"
    assert lines[2].startswith("ptxas: ")
    if ptxas_path():
        assert ptxas_path() in lines[2] and lines[2][7].isdigit()  # "ptxas: 13.5 (V13.5.37), PATH"
    assert len(lines) == (4 if versions.driver_version() else 3)


def test_driver_version_from_cuDriverGetVersion(monkeypatch):
    class FakeCuda:
        @staticmethod
        def cuDriverGetVersion(ptr):
            ctypes.cast(ptr, ctypes.POINTER(ctypes.c_int))[0] = 12040
            return 0

    monkeypatch.setattr(versions.ctypes, "CDLL", lambda name: FakeCuda())
    assert versions.driver_version() == "12.4"
    assert versions.version_text().splitlines()[-1] == "CUDA driver: 12.4"


def test_no_driver_no_driver_line(monkeypatch):
    def missing(name):
        raise OSError("libcuda.so.1: cannot open shared object file")

    monkeypatch.setattr(versions.ctypes, "CDLL", missing)
    assert versions.driver_version() is None
    assert not any(line.startswith("CUDA driver") for line in versions.version_text().splitlines())


def test_missing_ptxas_is_said(monkeypatch):
    monkeypatch.setattr("kernc.backend.toolkit.ptxas_path", lambda: None)
    assert "ptxas: not found" in versions.version_text()
