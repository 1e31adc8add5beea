"""The LLVM dialect's type classes without its generated op classes (see the package docstring)."""

import importlib

from kernc.support.mlir import DISTRIBUTION

globals().update(
    (k, v) for k, v in vars(importlib.import_module(DISTRIBUTION + "._mlir_libs._mlirDialectsLLVM")).items()
    if not k.startswith("__")
)
