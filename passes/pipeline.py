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
from .base import Pass, UpstreamPass
from .coalesce_views import CoalesceViews
from .contract_fma import ContractFMA
from .convert_gpu_to_nvvm import ConvertGpuToNVVM, compiler_pipeline
from .dedup_attributes import DedupAttributes
from .fold_divisions import FoldDivisions
from .fold_layouts import FoldLayouts
from .fold_range_checks import FoldRangeChecks
from .gpu_module_to_binary import SerializeToPTX
from .libdevice_to_intrinsics import LibdeviceToIntrinsics
from .lower_accessors import LowerAccessors
from .lower_builtins import LowerBuiltins
from .lower_divisions import LowerDivisions
from .lower_fma import LowerFMA
from .lower_layouts import LowerLayouts
from .lower_views import LowerViews
from .map_groups import MapGroups
from .mma_contractions import MmaContractions
from .privatize_atomics import PrivatizeAtomics
from .reduce_iv_divisions import ReduceIVDivisions
from .relax_atomics import RelaxAtomics
from .select_to_branch import SelectToBranch
from .specialize_nonneg_scalars import SpecializeNonnegScalars
from .tile_contractions import TileContractions
from .to_gpu import OutlineToGpu
from .verify import VerifyKern
from .wgmma_contractions import WgmmaContractions

#: The passes of each stage, in the order they run. The stage functions below build them (leaving
#: out the optional ones that are off), and ``kernc opt`` names every kernc pass of these lists
#: (``passes/registry.py``): one list for both, so a new pass is added once, here.
KERN_TO_GPU: tuple[type[Pass], ...] = (
    VerifyKern,
    FoldLayouts,
    OutlineToGpu,
    MapGroups,                # reductions across items (issue 21): a warp or block per group
    LowerAccessors,
    WgmmaContractions,        # optional: tensor_cores and wgmma (kernc compile --no-wgmma); sm_90a only
    MmaContractions,          # optional: tensor_cores=True (kernc compile --no-tensor-cores turns it off)
    TileContractions,         # optional: tile=True (kernc compile --no-tile turns it off)
    CoalesceViews,            # optional: coalesce=True (kernc compile --no-coalesce turns it off)
    PrivatizeAtomics,         # optional: privatize=True (kernc compile --no-privatize turns it off)
    LowerViews,
    LowerLayouts,
    FoldDivisions,
    ReduceIVDivisions,
    FoldRangeChecks,
    LowerDivisions,
    LowerBuiltins,
    ContractFMA,              # optional: fmad=True (kernc compile --fmad)
)
#: After these kernc passes, ``kern_to_gpu`` runs the upstream cleanups.
KERN_TO_GPU_CLEANUP = ("canonicalize", "cse")
#: Run right after kern-tile-contractions when it is scheduled (see kern_to_gpu).
TILE_CLEANUP = "cse"
GPU_TO_LLVM: tuple[type[Pass], ...] = (
    SpecializeNonnegScalars,  # optional: the PTX variant for index scalars >= 0
    BarePointerABI,
    LowerFMA,
    SelectToBranch,
    ConvertGpuToNVVM,         # upstream convert-gpu-to-nvvm, workgroup globals renamed around it
    DedupAttributes,
    RelaxAtomics,
    LibdeviceToIntrinsics,
    AttachTarget,
)
LLVM_TO_PTX: tuple[type[Pass], ...] = (SerializeToPTX,)


def _build(stage: tuple, options: dict, off: set) -> list[Pass]:
    """The passes of ``stage`` but those in ``off``, each built with its ``options`` (a dict of
    field values; the others keep their defaults)."""
    return [cls(**options.get(cls, {})) for cls in stage if cls not in off]


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


def kern_to_gpu(coalesce: bool = True, remarks=None, fmad: bool = False, tile: bool = True,
                shared: bool = True, tensor_cores: bool = True, privatize: bool = True,
                group_registers: bool = True, arch: str = "sm_90", wgmma: bool = True,
                async_copy: bool = True, tma: bool = False, tma_stages: int = 2) -> list[Pass]:
    """kern IR -> gpu IR (:data:`KERN_TO_GPU`): layout folding, outlining, accessors, views,
    layouts, divisions, thread ids, cleanup. ``coalesce``: run ``kern-coalesce-views`` (staging of
    transposed view accesses); ``tile``: run ``kern-tile-contractions`` (block tiles of contraction
    loops through workgroup memory); ``remarks``: a callable that receives both passes' one-line
    explanations;
    ``fmad``: contract ``a*b + c`` into ``math.fma`` (``kern-contract-fma``, ``kernc compile
    --fmad``); ``shared``: stage ``shared(I)``/``shared_sum(I)`` through workgroup memory
    (``False``: lower them as ``indexed(I)``/``atomic(I)``, ``LowerAccessors.stage_shared``);
    ``tensor_cores``: run ``kern-mma-contractions`` (f16/bf16 contractions on the tensor cores of
    ``arch``, from ``sm_80``; ``kernc compile --no-tensor-cores`` turns it off); ``privatize``: run
    ``kern-privatize-atomics`` (per-block workgroup copies of small atomically updated views);
    ``group_registers``: keep the values of reductions across items in registers where they fit
    (``False``: ``MapGroups.registers = 0``, every phase re-reads); ``wgmma``: run
    ``kern-wgmma-contractions`` first (warpgroup ``wgmma`` on ``sm_90a``; off with ``tensor_cores``
    too; ``kernc compile --no-wgmma``); ``async_copy``: the tiles of
    ``kern-tile-contractions`` staged with ``cp.async`` on ``arch`` ``sm_80`` and later (``kernc
    compile --no-async-copy`` turns it off: plain loads); ``tma``: ``kern-wgmma-contractions``' TMA
    loads of eligible tiles (``--tma``), in ``tma_stages`` pipeline stages (``--tma-stages``)."""
    off = {cls for cls, on in ((CoalesceViews, coalesce), (ContractFMA, fmad), (TileContractions, tile),
                               (MmaContractions, tensor_cores), (WgmmaContractions, tensor_cores and wgmma),
                               (PrivatizeAtomics, privatize)) if not on}
    groups = {"remarks": remarks} if group_registers else {"remarks": remarks, "registers": 0}
    passes = _build(KERN_TO_GPU, {CoalesceViews: {"remarks": remarks}, TileContractions: {"remarks": remarks, "arch": arch,
                                                                      "async_copy": async_copy},
                                  MmaContractions: {"remarks": remarks, "arch": arch, "tile_attr": tile},
                                  WgmmaContractions: {"remarks": remarks, "arch": arch, "tma": tma, "tma_stages": tma_stages, "tile_attr": tile},
                                  PrivatizeAtomics: {"remarks": remarks},
                                  LowerAccessors: {"stage_shared": shared}, MapGroups: groups},
                    off)
    if tile:
        # A tiled contraction repeats index arithmetic across its micro-tile's items and its
        # staging (conv2d_fwd: 627 ops out of the pass, 446 after this cse); merged before the
        # passes after it (kern-lower-divisions expands each division into ~30 ops), they have
        # less to do and LLVM less to clean up. (When the staging was unrolled per slot the cse
        # took conv2d_fwd's 282 divisions to 154: docs/compile-time.md)
        at = next(i for i, p in enumerate(passes) if isinstance(p, TileContractions)) + 1
        passes.insert(at, UpstreamPass(TILE_CLEANUP))
        if fmad:
            # ... but a product the items of a row share (a[i, k] * s) would be merged into one with
            # several uses, which kern-contract-fma leaves unfused: contracted first, per item, as
            # in the untiled kernel (tiled and untiled stay bitwise equal under --fmad)
            passes.insert(at, ContractFMA())
    return passes + [UpstreamPass(p) for p in KERN_TO_GPU_CLEANUP]


def gpu_to_llvm(opts: TargetOptions) -> list[Pass]:
    """gpu IR -> NVVM (LLVM dialect) with the target attached (:data:`GPU_TO_LLVM`)."""
    return _build(GPU_TO_LLVM, {
        BarePointerABI: {"index_bits": opts.index_bits, "align": opts.align},
        ConvertGpuToNVVM: {"pipeline": compiler_pipeline(opts.index_bits)},
        AttachTarget: {"chip": opts.arch, "opt_level": opts.opt_level, "libdevice": opts.libdevice},
    }, set() if opts.nonneg_scalars else {SpecializeNonnegScalars})


def llvm_to_ptx() -> list[Pass]:
    """NVVM -> ``gpu.binary`` holding PTX text (LLVM's NVPTX backend, in process)."""
    return _build(LLVM_TO_PTX, {}, set())


STAGES = ("kern", "gpu", "llvm", "ptx")
