"""The compilation pipeline, as lists of passes per stage (read top to bottom).

::

    kern IR ──kern_to_gpu()──► gpu IR ──gpu_to_llvm(opts)──► NVVM/LLVM IR ──llvm_to_ptx()──► gpu.binary (PTX)

Stage names are the ``--emit`` values of ``kernc compile``: ``kern``, ``gpu``, ``llvm``, ``ptx``.
Pass spellings of the upstream stages are those of MLIR 23 (``docs/design/toolchain.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .attach_target import AttachTarget
from .bare_ptr_abi import BarePointerABI
from .coalesce_views import CoalesceViews  # kern-coalesce-views (issue "Performance", item 1)
from .dedup_attributes import DedupAttributes
from .base import Pass, UpstreamPass
from .contract_fma import ContractFMA
from .fold_divisions import FoldDivisions
from .fold_layouts import FoldLayouts
from .gpu_to_nvvm import ConvertGpuToNVVM
from .fold_range_checks import FoldRangeChecks
from .lower_accessors import LowerAccessors
from .lower_divisions import LowerDivisions
from .lower_layouts import LowerLayouts
from .lower_views import LowerViews
from .libdevice_intrinsics import LibdeviceToIntrinsics
from .lower_builtins import LowerBuiltins
from .lower_fma import LowerFMA
from .outline_to_gpu import OutlineToGpu
from .reduce_iv_divisions import ReduceIVDivisions
from .select_to_branch import SelectToBranch
from .serialize import SerializeToPTX
from .specialize_scalars import SpecializeNonnegScalars
from .relax_atomics import RelaxAtomics
from .verify import VerifyKern
from .targets import ptx_features


@dataclass(frozen=True)
class TargetOptions:
    """Code generation options.

    ``arch``: the SM architecture, ``sm_XY`` (default ``sm_90``); ``index_bits``: width of ``index``
    in the generated code, 32 (default; valid while every buffer and problem size is < 2^31) or 64;
    ``opt_level``: LLVM ``O`` level 0..3; ``libdevice``: path of ``libdevice.10.bc``, linked when the
    module still calls libdevice functions after ``kern-libdevice-to-intrinsics`` (``None``: not
    available, an error for such modules);
    the PTX ISA version follows from ``arch`` (``targets.PTX_VERSION``); ``align``: the byte alignment
    every buffer argument is assumed to have (16: ``cudaMalloc``/CuPy allocations are 256-byte
    aligned; the launcher checks it and uses ``align=0`` PTX for misaligned arrays);
    ``nonneg_scalars``: the variant for launches whose ``index`` scalar arguments are all ``>= 0``
    (``kern-specialize-nonneg-scalars``; the launcher checks the values).
    """

    arch: str = "sm_90"
    index_bits: int = 32
    opt_level: int = 3
    libdevice: str | None = None
    align: int = 16
    nonneg_scalars: bool = False


def kern_to_gpu(coalesce: bool = True, remarks=None, fmad: bool = False) -> list[Pass]:
    """kern IR -> gpu IR: layout folding, outlining, accessors, views, layouts, divisions, thread
    ids, cleanup. ``coalesce``: run ``kern-coalesce-views`` (staging of transposed view accesses);
    ``remarks``: a callable that receives its one-line explanations; ``fmad``: contract
    ``a*b + c`` into ``math.fma`` (``kern-contract-fma``, ``kernc compile --fmad``)."""
    return [
        VerifyKern(),
        FoldLayouts(),
        OutlineToGpu(),
        LowerAccessors(),
        *([CoalesceViews(remarks)] if coalesce else []),  # kern-coalesce-views
        LowerViews(),
        LowerLayouts(),
        FoldDivisions(),
        ReduceIVDivisions(),
        FoldRangeChecks(),
        LowerDivisions(),
        LowerBuiltins(),
        *([ContractFMA()] if fmad else []),  # kern-contract-fma
        UpstreamPass("canonicalize"),
        UpstreamPass("cse"),
    ]


def gpu_to_llvm(opts: TargetOptions) -> list[Pass]:
    """gpu IR -> NVVM (LLVM dialect) with the target attached."""
    return [
        *([SpecializeNonnegScalars()] if opts.nonneg_scalars else []),
        BarePointerABI(opts.index_bits, opts.align),
        LowerFMA(),
        SelectToBranch(),
        ConvertGpuToNVVM(  # (workgroup globals named so that no kernel name collides)
            "gpu.module(convert-scf-to-cf,"
            f"convert-gpu-to-nvvm{{index-bitwidth={opts.index_bits}}},"
            "reconcile-unrealized-casts)"
        ),
        DedupAttributes(),
        RelaxAtomics(),
        LibdeviceToIntrinsics(),
        AttachTarget(opts.arch, ptx_features(opts.arch), opts.opt_level, opts.libdevice),
    ]


def llvm_to_ptx() -> list[Pass]:
    """NVVM -> ``gpu.binary`` holding PTX text (LLVM's NVPTX backend, in process)."""
    return [SerializeToPTX()]


STAGES = ("kern", "gpu", "llvm", "ptx")
