"""``gpu-module-to-binary{format=isa}``: NVVM IR -> PTX through LLVM's NVPTX backend, in process,
with the code generation flags kernc wants.

``--nvptx-short-ptr``: 32-bit pointers for the ``shared``, ``const`` and ``local`` address spaces
(nvcc's default; the NVPTX backend's default is 64-bit). A workgroup tile is at most 228 KB, so a
64-bit shared address only costs a ``mul.wide`` + 64-bit add per access and two registers per live
pointer; with 32-bit ones, ptxas folds the component offsets of a staged row into the address
(``[r+1024]``). LLVM reads the flag when it builds the NVPTX target machine, so it is set once per
process before the first serialization (:func:`kernc.mlir.set_llvm_options`).

``--spec-exec-max-speculation-cost=4`` (LLVM's default: 7): the NVPTX backend's
``SpeculativeExecution`` pass hoists conditional code of up to that cost out of its branch so that
``SimplifyCFG`` can turn the branch into selects. A division with its operand (``max`` + ``div.rn``,
cost 5) was hoisted, undoing ``kern-select-to-branch``, which branches around a select's expensive
operand as nvcc does around C's ``c ? v / m : 1.0f``. At 4, on the examples, the benchmark kernels and
every lit test kernel, only examples/particles.kern changed (the division stays under its branch:
28 registers instead of 32), plus one stress kernel of tests/lit/accessors (2 more registers, 7
more SASS instructions of 812).
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.mlir import ir, set_llvm_options

from .base import UpstreamPass

#: LLVM flags of every PTX serialization (see the module docstring); process-wide, like llc's.
NVPTX_FLAGS = ("--nvptx-short-ptr", "--spec-exec-max-speculation-cost=4")


@dataclass
class SerializeToPTX(UpstreamPass):
    """``gpu-module-to-binary{format=isa}`` after setting :data:`NVPTX_FLAGS`."""

    pipeline: str = "gpu-module-to-binary{format=isa}"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        set_llvm_options(*NVPTX_FLAGS)
        super().apply(ctx, module)
