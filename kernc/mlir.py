"""``kernc.mlir``: the former name of :mod:`kernc.support.mlir` (the one import of the upstream MLIR
Python bindings), the same module object.

The module lives in ``kernc.support`` so that every layer imports it downward; this name stays for
scripts written against it (``from kernc.mlir import ir``, ``kernc.mlir.set_llvm_options``). It is an
alias rather than a copy of the names so that the two can never disagree.
"""

import sys

from kernc.support import mlir

sys.modules[__name__] = mlir
