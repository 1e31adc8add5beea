"""``kern-dedup-attributes``: keep one of each attribute name on ``llvm.func`` ops.

``convert-gpu-to-nvvm`` (MLIR 23) copies a kernel's ``gpu.kernel`` unit attribute to the new
``llvm.func`` and then adds it once more, so the function carries the key twice. MLIR itself does
not mind, but the printed IR no longer parses (``duplicate key 'gpu.kernel' in dictionary
attribute``), which breaks ``kernc compile --emit llvm`` followed by ``kernc opt`` on that file.
Runs right after the conversion; the first value of each name is kept (duplicates are unit
attributes, so all values are equal).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import ir

from .base import Pass, functions


@dataclass
class DedupAttributes(Pass):
    """Remove repeated attribute names from every ``llvm.func``."""

    name = "kern-dedup-attributes"
    summary = "drop the duplicate gpu.kernel attribute convert-gpu-to-nvvm leaves on llvm.func"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn in functions(module, {"llvm.func"}):
            attrs = fn.attributes
            names = [attrs[i].name for i in range(len(attrs))]
            for name in {n for n in names if names.count(n) > 1}:
                value = attrs[name]
                while name in attrs:
                    del attrs[name]
                attrs[name] = value
