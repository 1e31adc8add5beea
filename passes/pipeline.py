"""The compilation pipeline, as lists of passes per stage (read top to bottom).

::

    kern IR ──kern_to_gpu()──► gpu IR ──gpu_to_llvm(opts)──► NVVM/LLVM IR ──llvm_to_ptx()──► gpu.binary (PTX)

Stage names are the ``--emit`` values of ``kernc compile``: ``kern``, ``gpu``, ``llvm``, ``ptx``.
Pass spellings of the upstream stages are those of MLIR 23 (``shared/design/toolchain.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .bare_ptr_abi import BarePointerABI
from .base import Pass, UpstreamPass
from .lower_accessors import LowerAccessors
from .lower_layouts import LowerLayouts
from .lower_builtins import LowerBuiltins
from .outline_to_gpu import OutlineToGpu
from .relax_atomics import RelaxAtomics
from .verify import VerifyKern


@dataclass(frozen=True)
class TargetOptions:
    """Code generation options.

    ``arch``: the SM architecture, ``sm_XY`` (default ``sm_90``); ``index_bits``: width of ``index``
    in the generated code, 32 (default; valid while every buffer and problem size is < 2^31) or 64;
    ``opt_level``: LLVM ``O`` level 0..3; ``libdevice``: path of ``libdevice.10.bc`` to link for
    ``math`` functions (``None``: no linking, only valid for kernels without math calls);
    ``ptx_version``: the PTX ISA feature, e.g. ``"+ptx80"``.
    """

    arch: str = "sm_90"
    index_bits: int = 32
    opt_level: int = 3
    libdevice: str | None = None
    ptx_features: str = "+ptx80"


def kern_to_gpu() -> list[Pass]:
    """kern IR -> gpu IR: outlining, accessors, layouts, thread ids, cleanup."""
    return [
        VerifyKern(),
        OutlineToGpu(),
        LowerAccessors(),
        LowerLayouts(),
        LowerBuiltins(),
        UpstreamPass("canonicalize"),
        UpstreamPass("cse"),
    ]


def gpu_to_llvm(opts: TargetOptions) -> list[Pass]:
    """gpu IR -> NVVM (LLVM dialect) with the target attached."""
    link = f" l={opts.libdevice}" if opts.libdevice else ""
    return [
        BarePointerABI(opts.index_bits),
        UpstreamPass(
            "gpu.module(convert-scf-to-cf,"
            f"convert-gpu-to-nvvm{{index-bitwidth={opts.index_bits}}},"
            "reconcile-unrealized-casts)"
        ),
        RelaxAtomics(),
        UpstreamPass(
            f"nvvm-attach-target{{chip={opts.arch} features={opts.ptx_features} O={opts.opt_level}{link}}}"
        ),
    ]


def llvm_to_ptx() -> list[Pass]:
    """NVVM -> ``gpu.binary`` holding PTX text (LLVM's NVPTX backend, in process)."""
    return [UpstreamPass("gpu-module-to-binary{format=isa}")]


STAGES = ("kern", "gpu", "llvm", "ptx")
