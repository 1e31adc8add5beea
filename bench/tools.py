"""Finding and running the NVIDIA tools the benchmarks compare against: ``nvcc``, ``ptxas`` and a SASS
disassembler (``cuobjdump`` or ``nvdisasm``). Every tool is optional; a missing one is ``None`` and the
columns that need it are skipped."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess


def _wheel_bins() -> list[str]:
    spec = importlib.util.find_spec("nvidia")
    roots = list(spec.submodule_search_locations) if spec and spec.submodule_search_locations else []
    out = []
    for root in roots:
        for sub in ("cu13/bin", "cu12/bin", "cuda_nvcc/bin", "cuda_cuobjdump/bin", "cuda_nvdisasm/bin"):
            out.append(os.path.join(root, sub))
    return out


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


@functools.lru_cache(maxsize=None)
def find(tool: str) -> str | None:
    """Path of ``tool`` (``nvcc``, ``cuobjdump``, ``nvdisasm``): ``$PATH`` first, then
    ``/usr/local/cuda/bin``, then the ``nvidia-*`` wheels; ``None`` if none is found."""
    found = shutil.which(tool)
    if found:
        return found
    for folder in ["/usr/local/cuda/bin", *_wheel_bins()]:
        path = os.path.join(folder, tool)
        if _executable(path):
            return path
    return None


def ptxas() -> str | None:
    """The ``ptxas`` kernc itself uses (``kernc.backend.toolkit.ptxas_path``)."""
    from kernc.backend import toolkit

    return toolkit.ptxas_path()


@functools.lru_cache(maxsize=None)
def version(path: str | None) -> str | None:
    """The last line of ``path --version`` that names a release (``None`` if it cannot be run)."""
    if not path:
        return None
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [ln.strip() for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "release" in ln or re.search(r"V\d+\.\d+", ln):
            return ln
    return lines[-1] if lines else None


def sass_tool() -> tuple[str, str] | tuple[None, None]:
    """``(name, path)`` of the disassembler to count SASS with: ``cuobjdump`` preferred, else
    ``nvdisasm``; ``(None, None)`` when neither is installed (pip install 'kernc[bench]')."""
    for name in ("cuobjdump", "nvdisasm"):
        path = find(name)
        if path:
            return name, path
    return None, None


def assemble(ptx_path: str, cubin_path: str, arch: str) -> None:
    """``ptxas -arch=ARCH PTX -o CUBIN``; ``RuntimeError`` with ptxas' log when it fails."""
    exe = ptxas()
    if exe is None:
        raise FileNotFoundError("ptxas not found (pip install nvidia-cuda-nvcc)")
    proc = subprocess.run([exe, f"-arch={arch}", ptx_path, "-o", cubin_path], capture_output=True, text=True,
                          timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"ptxas failed on {ptx_path}: {(proc.stderr + proc.stdout).strip()[:2000]}")


_INSTR = re.compile(r"^\s*/\*[0-9a-fA-F]{4,}\*/\s+([^;]*?)\s*;")
_CUOBJDUMP_FN = re.compile(r"^\s*Function\s*:\s*(\S+)")
_SECTION = re.compile(r"^\s*\.section\s+([^\s,]+)")


def parse_sass(text: str, tool: str) -> dict[str, dict]:
    """Per-function SASS counts from ``cuobjdump -sass`` or ``nvdisasm`` output:
    ``{"instructions": n, "nops": k}`` where ``instructions`` counts every instruction but ``NOP``
    (alignment padding); the trailing ``EXIT``/``BRA`` self-loop is counted on both sides alike."""
    counts: dict[str, dict] = {}
    current = None
    for line in text.splitlines():
        if tool == "cuobjdump":
            m = _CUOBJDUMP_FN.match(line)
            name = m.group(1) if m else None
        else:  # nvdisasm: one ".section .text.NAME" per kernel; other sections hold data
            m = _SECTION.match(line)
            name = m.group(1)[len(".text."):] if m and m.group(1).startswith(".text.") else None
        if m:
            current = name
            if current is not None:
                counts.setdefault(current, {"instructions": 0, "nops": 0})
            continue
        m = _INSTR.match(line)
        if m and current is not None:
            op = m.group(1).split()
            if op and op[0].startswith("@"):
                op = op[1:]  # predicate guard
            if not op or op[0].startswith("."):
                continue  # data directives
            if op[0] == "NOP":
                counts[current]["nops"] += 1
            else:
                counts[current]["instructions"] += 1
    return counts


def sass_counts(cubin_path: str) -> dict[str, dict] | None:
    """SASS instruction counts per kernel of a cubin, or ``None`` without a disassembler."""
    name, path = sass_tool()
    if path is None:
        return None
    cmd = [path, "-sass", cubin_path] if name == "cuobjdump" else [path, cubin_path]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed on {cubin_path}: {(proc.stderr + proc.stdout).strip()[:2000]}")
    return parse_sass(proc.stdout, name)


def run_checked(cmd, env=None, cwd=None) -> None:
    """Run ``cmd`` (output discarded, 10 minutes at most); ``RuntimeError`` with the start of its
    stderr when it exits non-zero."""
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd[:4]))} ... exited {proc.returncode}: {proc.stderr.strip()[:2000]}")


def nvcc_ptx(cu_path: str | None, arch: str, workdir: str, stem: str, flags=()) -> str | None:
    """``nvcc -ptx -O3 -arch=ARCH FLAGS CU`` (e.g. ``--fmad=false``) into ``WORKDIR/STEM.nvcc.ptx``;
    its path, or ``None`` without nvcc or ``cu_path``."""
    nvcc = find("nvcc")
    if not (nvcc and cu_path and os.path.exists(cu_path)):
        return None
    out = os.path.join(workdir, f"{stem}.nvcc.ptx")
    run_checked([nvcc, "-ptx", "-O3", f"-arch={arch}", *flags, cu_path, "-o", out], cwd=workdir)
    return out
