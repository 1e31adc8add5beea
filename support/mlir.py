"""The one place kernc imports the upstream MLIR Python bindings from (``kernc.support.mlir``).

kernc needs ``ir``, ``passmanager``, ``rewrite`` and the upstream ``dialects`` of an MLIR build that
has the LLVM NVPTX backend compiled in (so ``gpu-module-to-binary{format=isa}`` emits PTX in-process).
An upstream ``mlir`` package is used when one is importable; otherwise the bindings bundled in the
``numba-cuda-mlir`` wheel (``numba_cuda_mlir._mlir``, MLIR 23) are loaded *without* running that
package's ``__init__`` (which would import numba and the CUDA runtime): a stub package module is placed
in ``sys.modules`` and the bundled shared libraries are preloaded with ``RTLD_LOCAL | RTLD_DEEPBIND``
first, as the package's own ``__init__`` does (see ``docs/design/toolchain.md``), but with lazy
symbol binding. Two more things keep a cold ``kernc compile`` fast: numpy stays out of the ``ir``
import (:func:`_import_ir`) and the LLVM dialect's op classes are not loaded (:mod:`kernc.lazy_dialects`).

Nothing else in kernc names the distribution: every other module does
``from kernc.support.mlir import ir, passmanager, ...`` (``kernc.mlir`` is the same module, under
the name it had before it moved here).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types


def _load_numba_cuda_mlir():
    spec = importlib.util.find_spec("numba_cuda_mlir")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "kernc needs the MLIR Python bindings: install 'numba-cuda-mlir==0.6.0' "
            "(or an upstream 'mlir' package with the NVPTX backend)"
        )
    pkg_dir = list(spec.submodule_search_locations)[0]
    if "numba_cuda_mlir" not in sys.modules:
        stub = types.ModuleType("numba_cuda_mlir")
        stub.__path__ = [pkg_dir]
        stub.__file__ = os.path.join(pkg_dir, "__init__.py")
        stub.__package__ = "numba_cuda_mlir"
        # a spec without a loader (nothing may run the real __init__), so that find_spec still
        # answers for the package once the stub is in sys.modules (the compile cache's key names the
        # MLIR build through it)
        stub.__spec__ = importlib.machinery.ModuleSpec("numba_cuda_mlir", None, origin=stub.__file__,
                                                       is_package=True)
        stub.__spec__.submodule_search_locations = [pkg_dir]
        sys.modules["numba_cuda_mlir"] = stub
        handles = []
        if sys.platform.startswith("linux"):
            import ctypes

            # RTLD_LAZY: symbols bind on first call; binding all ~100k up front (RTLD_NOW) costs
            # ~10 ms of every cold start and buys nothing (the libraries come from one build)
            mode = os.RTLD_LAZY | os.RTLD_LOCAL | getattr(os, "RTLD_DEEPBIND", 0)
            libs = os.path.join(pkg_dir, "_mlir", "_mlir_libs")
            for name in (
                "libMLIRPythonCAPI.so",
                "libMLIRPythonSupport-numba_cuda_mlir.so",
                "libMLIRToLLVM70.so",
                "libMLIRModernToNVVM.so",
            ):
                path = os.path.join(libs, name)
                if os.path.exists(path):
                    handles.append(ctypes.CDLL(path, mode=mode))
        stub._mlir_deepbind_handles = handles  # keep the handles alive
    return importlib.import_module("numba_cuda_mlir._mlir"), "numba_cuda_mlir._mlir"


def _load():
    try:
        if os.environ.get("KERNC_MLIR") != "numba-cuda-mlir":
            import mlir.ir  # noqa: F401  an upstream build, if one is installed

            return importlib.import_module("mlir"), "mlir"
    except ImportError:
        pass
    return _load_numba_cuda_mlir()


def _import_ir(name: str):
    """Import the bindings' ``ir`` module. Its only use of numpy is an optional ``try: import numpy``
    that registers builders for dense ``F64/I32/I64/IndexElementsAttr`` attributes, which kernc never
    builds; importing numpy costs ~35 ms, a tenth of a cold ``kernc compile``. So when numpy is not
    loaded yet and no other thread could be importing it, ``import numpy`` is made to fail for the
    duration of this one import (``sys.modules[name] = None`` is the documented way to do that)."""
    import threading

    if "numpy" in sys.modules or threading.active_count() > 1:
        return importlib.import_module(name)
    sys.modules["numpy"] = None
    try:
        return importlib.import_module(name)
    finally:
        if sys.modules.get("numpy", 0) is None:
            del sys.modules["numpy"]


_root, DISTRIBUTION = _load()
ir = _import_ir(DISTRIBUTION + ".ir")
passmanager = importlib.import_module(DISTRIBUTION + ".passmanager")
rewrite = importlib.import_module(DISTRIBUTION + ".rewrite")


def _prefer_lazy_dialects() -> None:
    """Put :mod:`kernc.lazy_dialects` first in the bindings' dialect module search (see there).

    Only its name is given here: the bindings import its modules when they first meet a dialect,
    by then from a compiler that has the dialect loaded. It stays in the package root, above this
    module, because its ``kern`` module imports :mod:`kernc.dialect.kern`."""
    try:
        g = importlib.import_module(DISTRIBUTION + "._mlir_libs._mlir").globals
        if "kernc.lazy_dialects" not in g.dialect_search_modules:
            g.dialect_search_modules = ["kernc.lazy_dialects", *g.dialect_search_modules]
    except (ImportError, AttributeError):  # bindings without a settable search list: all still works
        pass


_prefer_lazy_dialects()


_LLVM_OPTIONS: set = set()


def set_llvm_options(*options: str) -> bool:
    """Pass ``options`` (LLVM ``cl::opt`` flags such as ``--nvptx-short-ptr``) to the LLVM inside the
    bindings, once per process each; ``True`` if they are set (now or before), ``False`` if the
    bindings' C API library does not export ``LLVMParseCommandLineOptions`` (the flags then keep
    their defaults). The flags are process-wide, like ``llc``'s. Only name flags the linked LLVM
    defines: LLVM ends the process on an unknown one."""
    todo = [o for o in options if o not in _LLVM_OPTIONS]
    if not todo:
        return True
    import ctypes

    libs = os.path.dirname(importlib.import_module(DISTRIBUTION + "._mlir_libs").__file__)
    path = os.path.join(libs, "libMLIRPythonCAPI.so")
    try:
        # the library is already loaded (RTLD_LOCAL): this returns its handle, not a second copy
        parse = ctypes.CDLL(path).LLVMParseCommandLineOptions
    except (OSError, AttributeError):
        return False
    argv = [b"kernc", *(o.encode() for o in todo)]
    parse(len(argv), (ctypes.c_char_p * len(argv))(*argv), None)
    _LLVM_OPTIONS.update(todo)
    return True


def dialect(name: str):
    """Import and return the upstream dialect module ``dialects.<name>`` (e.g. ``"arith"``)."""
    return importlib.import_module(f"{DISTRIBUTION}.dialects.{name}")


class LazyDialect:
    """A dialect module imported on first attribute use (``lazy_dialect("vector").BroadcastOp``):
    for a pass that needs a dialect's Python op classes only when it rewrites something. Importing
    ``nvgpu`` and ``vector`` costs ~10 ms of a cold ``kernc compile`` (their generated op modules),
    and ``kern-mma-contractions`` declines most kernels it sees (every one without an f16/bf16
    contraction)."""

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attr: str):
        if attr.startswith("_"):  # (copy/pickle probes, and the two fields before __init__ sets them)
            raise AttributeError(attr)
        if self._module is None:
            self._module = dialect(self._name)
        return getattr(self._module, attr)


def lazy_dialect(name: str) -> LazyDialect:
    """The upstream dialect module ``dialects.<name>``, imported when first used (:class:`LazyDialect`)."""
    return LazyDialect(name)


__all__ = ["ir", "passmanager", "rewrite", "dialect", "lazy_dialect", "set_llvm_options", "DISTRIBUTION"]
