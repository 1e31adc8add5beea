"""Running the hand-written CUDA C++ kernels of ``bench/cuda/`` on the CPU, to test them without a GPU.

``load(path)`` compiles a ``.cu`` file with g++ as C++20, with ``bench/cuda/emulate.h`` force-included
(it defines the CUDA keywords, the built-in variables, ``__syncthreads``, warp shuffles and
``atomicAdd``), into a shared library with one launcher per ``extern "C" __global__`` kernel;
``EmulatedModule.launch`` runs a grid: blocks one after another, the threads of a block concurrently
(one ``std::thread`` each). Arguments follow ``cuLaunchKernel``: numpy arrays are passed as pointers
to their data (updated in place), numpy scalars by value.

    mod = emulate.load("bench/cuda/saxpy.cu")
    mod.launch("saxpy", grid=4, block=256, args=(np.float32(2), x, y, np.uint32(x.size)))
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading

import numpy as np

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda", "emulate.h")
#: CUDA's limit on the threads of one block.
MAX_BLOCK_THREADS = 1024

_KERNEL = re.compile(
    r'extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+'
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?([A-Za-z_]\w*)\s*\("
)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


class EmulationError(RuntimeError):
    """A ``.cu`` file that does not compile (the message holds g++'s), an unknown kernel name,
    arguments that do not fit the kernel's parameters, or a launch the emulator could not run."""


@functools.lru_cache(maxsize=None)
def _compiler() -> str | None:
    gxx = shutil.which("g++")
    if gxx is None:
        return None
    try:
        version = subprocess.run([gxx, "-dumpversion"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    major = re.match(r"\d+", version.strip())
    # <barrier> and std::atomic_ref<float> arrived in g++ 11
    return gxx if major and int(major.group()) >= 11 else None


def available() -> bool:
    """True when a C++20 compiler is found (``g++`` 11 or newer on ``$PATH``)."""
    return _compiler() is not None


def kernel_names(source: str) -> list[str]:
    """The names of the ``extern "C" __global__`` kernels in CUDA C++ ``source``, in order
    (comments are ignored)."""
    return _KERNEL.findall(_COMMENT.sub(" ", source))


def _dims(value, what: str) -> tuple[int, int, int]:
    """``value`` (an int or 1 to 3 ints, each in ``1 .. 2^31 - 1``: CUDA's largest grid extent) as
    three dims; ``EmulationError`` for anything else (a float, 0, a value the C side would wrap)."""
    try:
        dims = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    except TypeError:
        dims = ()
    if not 1 <= len(dims) <= 3 or any(isinstance(d, bool) or not isinstance(d, (int, np.integer))
                                      or not 1 <= d <= 2**31 - 1 for d in dims):
        raise EmulationError(f"{what} must be a positive int or a tuple of 1 to 3 positive ints "
                             f"below 2^31, got {value!r}")
    return tuple(int(d) for d in dims) + (1,) * (3 - len(dims))


class EmulatedModule:
    """The kernels of one ``.cu`` file compiled for the CPU (made by :func:`load`).

    ``path``: the source file; ``kernels``: its kernel names. Launches of one module are serialised:
    ``__shared__`` arrays are static storage of the library, so two grids cannot run at once.
    """

    def __init__(self, path: str, library: str, kernels: list[str]):
        self.path = path
        self.kernels = tuple(kernels)
        self._lib = ctypes.CDLL(library)
        self._lock = threading.Lock()
        self._params = {}
        for name in self.kernels:
            describe = getattr(self._lib, f"emu_signature_{name}")
            describe.restype = ctypes.c_char_p
            # one entry per parameter: "p" a pointer, "f4"/"i4"/"i8"... a float/integer of that size
            self._params[name] = re.findall(r"p|[fi]\d+", describe().decode())
            fn = getattr(self._lib, f"emu_launch_{name}")
            fn.argtypes = [ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint),
                           ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
            fn.restype = ctypes.c_int

    def __repr__(self) -> str:
        return f"<EmulatedModule {self.path}: {', '.join(self.kernels)}>"

    def launch(self, kernel: str, grid, block, args) -> None:
        """Run ``kernel<<<grid, block>>>(*args)`` on the CPU and return when every thread is done.

        ``grid``, ``block``: a positive int or a tuple of up to 3 positive ints (``dim3``; a block has
        at most 1024 threads). ``args``, in kernel-parameter order: a C-contiguous numpy array (of any shape) for
        each pointer parameter, passed as a pointer to its data and modified in place; a numpy scalar
        (``np.float32``, ``np.uint32``, ``np.int32``, ``np.int64``, ...) for each value parameter, of
        the parameter's size (floating vs integer is checked, signedness is the caller's business, as
        with ``cuLaunchKernel``). Raises :class:`EmulationError` for an unknown kernel, a bad
        grid/block or arguments that do not fit the parameters.
        """
        if kernel not in self._params:
            raise EmulationError(f"{self.path}: no kernel '{kernel}' (it has: {', '.join(self.kernels)})")
        grid3, block3 = _dims(grid, "grid"), _dims(block, "block")
        if block3[0] * block3[1] * block3[2] > MAX_BLOCK_THREADS:
            raise EmulationError(f"block {block3} has more than {MAX_BLOCK_THREADS} threads")
        params = self._params[kernel]
        args = list(args)
        if len(args) != len(params):
            raise EmulationError(f"kernel '{kernel}' takes {len(params)} arguments, got {len(args)}")
        holders = []  # the memory argv points into, alive until the launch returns
        argv = (ctypes.c_void_p * len(args))()
        for i, (value, param) in enumerate(zip(args, params)):
            where = f"kernel '{kernel}', argument {i}"
            if isinstance(value, np.ndarray):
                if param != "p":
                    raise EmulationError(f"{where}: the parameter is a value ({_describe(param)}), got an array")
                if not value.flags.c_contiguous:
                    raise EmulationError(f"{where}: the array must be C-contiguous")
                holder = ctypes.c_void_p(value.ctypes.data)
            elif isinstance(value, np.generic):
                if param == "p":
                    raise EmulationError(f"{where}: the parameter is a pointer: pass a numpy array")
                if value.dtype.itemsize != int(param[1:]) or (value.dtype.kind == "f") != (param[0] == "f"):
                    raise EmulationError(f"{where}: the parameter is {_describe(param)}, got {value.dtype}")
                holder = ctypes.create_string_buffer(value.tobytes(), value.dtype.itemsize)
            else:
                raise EmulationError(f"{where}: pass a numpy array or a numpy scalar (np.float32(...), "
                                     f"np.uint32(...)), got {type(value).__name__}")
            holders.append(holder)
            argv[i] = ctypes.addressof(holder)
        err = ctypes.create_string_buffer(1024)
        with self._lock:
            rc = getattr(self._lib, f"emu_launch_{kernel}")((ctypes.c_uint * 3)(*grid3), (ctypes.c_uint * 3)(*block3),
                                                            argv, err, len(err))
        if rc != 0:
            raise EmulationError(f"kernel '{kernel}': {err.value.decode(errors='replace')}")


def _describe(param: str) -> str:
    return f"a {param[1:]}-byte {'floating-point' if param[0] == 'f' else 'integer'} value"


_cache: dict = {}
_cache_lock = threading.Lock()
_build_locks: dict = {}
_workdir: list = []


def _temp_dir() -> str:
    with _cache_lock:
        if not _workdir:
            _workdir.append(tempfile.mkdtemp(prefix="kernc-emulate-"))
            atexit.register(shutil.rmtree, _workdir[0], True)
        return tempfile.mkdtemp(dir=_workdir[0])


def load(cu_path: str) -> EmulatedModule:
    """The kernels of the CUDA C++ file ``cu_path``, compiled for the CPU: once per (file, modification
    time) per process, into a temporary folder (``g++ -std=c++20 -O1 -ffp-contract=off -shared -fPIC
    -pthread -include emulate.h``). Safe to call from several threads (files then compile in parallel). Raises
    :class:`EmulationError` without a compiler, for a file without ``extern "C" __global__`` kernels
    and with g++'s message when it does not compile; ``OSError`` when the file cannot be read."""
    gxx = _compiler()
    if gxx is None:
        raise EmulationError("running CUDA C++ on the CPU needs g++ 11 or newer (C++20) on $PATH")
    path = os.path.realpath(cu_path)
    key = (path, os.stat(path).st_mtime_ns)
    with _cache_lock:
        lock = _build_locks.setdefault(key, threading.Lock())
    with lock:
        if key not in _cache:
            _cache[key] = _build(gxx, path)
        return _cache[key]


def _build(gxx: str, path: str) -> EmulatedModule:
    with open(path, encoding="utf-8") as f:
        kernels = kernel_names(f.read())
    if not kernels:
        raise EmulationError(f'{path}: no extern "C" __global__ kernel found')
    out = _temp_dir()
    # The launchers go in a file of their own that includes the .cu, so that g++ reports errors in
    # the .cu at its real path and lines.
    lines = [f"#include {json.dumps(path)}"]
    for name in kernels:
        lines += [
            f'extern "C" int emu_launch_{name}(const unsigned* grid, const unsigned* block, void** args, char* err, '
            f"std::size_t errlen) {{ return emu::launch({name}, grid, block, args, err, errlen); }}",
            f'extern "C" const char* emu_signature_{name}() {{ return emu::signature({name}); }}',
        ]
    source = os.path.join(out, "launchers.cpp")
    with open(source, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    library = os.path.join(out, "kernels.so")
    # -ffp-contract=off: a*b + c rounds twice, as in kernc's default, numpy and nvcc --fmad=false (g++
    # would fuse it on targets whose baseline has FMA, such as aarch64)
    cmd = [gxx, "-std=c++20", "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-pthread", "-include", HEADER,
           source, "-o", library]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise EmulationError(f"g++ failed to compile {path}:\n{(proc.stderr + proc.stdout).strip()}")
    return EmulatedModule(path, library, kernels)
