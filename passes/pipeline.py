"""The compilation pipeline, as lists of passes per stage (read top to bottom).

::

    kern IR ──kern_to_gpu()──► gpu IR ──gpu_to_llvm(opts)──► NVVM/LLVM IR ──llvm_to_ptx()──► gpu.binary (PTX)

Stage names are the ``--emit`` values of ``kernc compile``: ``kern``, ``gpu``, ``llvm``, ``ptx``.
Pass spellings of the upstream stages are those of MLIR 23 (``docs/design/toolchain.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import holds
from .base import Pass, PassRef, UpstreamPass

#: The passes of each stage, in the order they run. The stage functions below build them (leaving
#: out the optional ones that are off), and ``kernc opt`` names every kernc pass of these lists
#: (``passes/registry.py``): one list for both, so a new pass is added once, here. Each is named
#: by its pass name and class (its module is named after the pass, :class:`PassRef`); a pass with
#: a check of ``passes/holds.py`` is imported and run only on a module that holds something for it
#: (most kernels have no contraction, reduction across items or atomic update: a first run then
#: compiles none of those modules' source).
KERN_TO_GPU: tuple[PassRef, ...] = (
    PassRef("kern-verify", "VerifyKern"),
    PassRef("kern-fold-layouts", "FoldLayouts"),
    PassRef("kern-to-gpu", "OutlineToGpu"),
    # reductions across items (issue 21): a warp or block per group
    PassRef("kern-map-groups", "MapGroups", holds.group_reductions),
    PassRef("kern-lower-accessors", "LowerAccessors"),
    # optional: tensor_cores and wgmma (kernc compile --no-wgmma); sm_90a only
    PassRef("kern-wgmma-contractions", "WgmmaContractions", holds.contraction_loops),
    # optional: tensor_cores=True (kernc compile --no-tensor-cores turns it off)
    PassRef("kern-mma-contractions", "MmaContractions", holds.contraction_loops),
    # optional: tile=True (kernc compile --no-tile turns it off)
    PassRef("kern-tile-contractions", "TileContractions", holds.contraction_loops),
    # optional: coalesce=True (kernc compile --no-coalesce turns it off)
    PassRef("kern-coalesce-views", "CoalesceViews", holds.nd_view_accesses),
    # optional: privatize=True (kernc compile --no-privatize turns it off)
    PassRef("kern-privatize-atomics", "PrivatizeAtomics", holds.view_atomics),
    PassRef("kern-lower-views", "LowerViews"),
    PassRef("kern-lower-layouts", "LowerLayouts"),
    PassRef("kern-fold-divisions", "FoldDivisions", holds.divisions),
    PassRef("kern-reduce-iv-divisions", "ReduceIVDivisions", holds.divisions),
    PassRef("kern-fold-range-checks", "FoldRangeChecks"),
    PassRef("kern-lower-divisions", "LowerDivisions", holds.divisions),
    PassRef("kern-lower-builtins", "LowerBuiltins"),
    PassRef("kern-contract-fma", "ContractFMA"),          # optional: fmad=True (kernc compile --fmad)
    # workgroup memory over 48 KiB as views of one dynamic buffer (--no-dynamic-shared-memory: 48 KiB
    # of static memory at most); after every pass that adds workgroup buffers
    PassRef("kern-dynamic-workgroup-memory", "DynamicWorkgroupMemory", holds.workgroup_attributions),
)
#: After these kernc passes, ``kern_to_gpu`` runs the upstream cleanups.
KERN_TO_GPU_CLEANUP = ("canonicalize", "cse")
#: Run right after kern-tile-contractions when it is scheduled (see kern_to_gpu).
TILE_CLEANUP = "cse"
GPU_TO_LLVM: tuple[PassRef, ...] = (
    # optional: the PTX variant for index scalars >= 0
    PassRef("kern-specialize-nonneg-scalars", "SpecializeNonnegScalars"),
    PassRef("kern-bare-ptr-abi", "BarePointerABI"),
    PassRef("kern-lower-fma", "LowerFMA"),
    # u8 tensor-core contractions: nvgpu's mma.sync has the .s8 form only
    PassRef("kern-lower-unsigned-mma", "LowerUnsignedMma", holds.unsigned_mma),
    PassRef("kern-select-to-branch", "SelectToBranch", holds.selects),
    # upstream convert-gpu-to-nvvm, workgroup globals renamed around it
    PassRef("convert-gpu-to-nvvm", "ConvertGpuToNVVM"),
    PassRef("kern-dedup-attributes", "DedupAttributes"),
    PassRef("kern-relax-atomics", "RelaxAtomics"),
    PassRef("kern-libdevice-to-intrinsics", "LibdeviceToIntrinsics"),
    PassRef("kern-attach-target", "AttachTarget"),
)
LLVM_TO_PTX: tuple[PassRef, ...] = (PassRef("gpu-module-to-binary", "SerializeToPTX"),)


def _build(stage: tuple, options: dict, off: set) -> list[Pass]:
    """The passes of ``stage`` but those named in ``off``, each built with its ``options`` (pass
    name -> a dict of field values; the others keep their defaults; :meth:`PassRef.build`)."""
    return [ref.build(options.get(ref.name, {})) for ref in stage if ref.name not in off]


def _ref(stage: tuple, name: str) -> PassRef:
    """The :class:`PassRef` named ``name`` in ``stage``."""
    return next(ref for ref in stage if ref.name == name)


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
                async_copy: bool = True, tma: bool = False, tma_stages: int = 2,
                rolled_staging: bool = False, dynamic_shared_memory: bool = True,
                wgmma_mn_major: bool = True) -> list[Pass]:
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
    loads of eligible tiles (``--tma``), in ``tma_stages`` pipeline stages (``--tma-stages``);
    ``wgmma_mn_major``: its MN-major staging of rows-contiguous operands (``--no-wgmma-mn-major``);
    ``rolled_staging``: ``kern-mma-contractions`` stages in a loop
    over the rounds of slots (the build of the 64-bit ``index`` variant); ``dynamic_shared_memory``:
    workgroup memory over 48 KiB, up to ``arch``'s opt-in maximum, as dynamic workgroup memory
    (``kern-dynamic-workgroup-memory``; ``kern-wgmma-contractions`` sizes its TMA stages by it;
    ``kernc compile --no-dynamic-shared-memory``: 48 KiB at most, as static memory)."""
    off = {name for name, on in (("kern-coalesce-views", coalesce), ("kern-contract-fma", fmad),
                                 ("kern-tile-contractions", tile), ("kern-mma-contractions", tensor_cores),
                                 ("kern-wgmma-contractions", tensor_cores and wgmma),
                                 ("kern-privatize-atomics", privatize)) if not on}
    groups = {"remarks": remarks} if group_registers else {"remarks": remarks, "registers": 0}
    passes = _build(KERN_TO_GPU, {
        "kern-coalesce-views": {"remarks": remarks},
        "kern-tile-contractions": {"remarks": remarks, "arch": arch, "async_copy": async_copy},
        "kern-mma-contractions": {"remarks": remarks, "arch": arch, "tile_attr": tile,
                                  "rolled_staging": rolled_staging},
        "kern-wgmma-contractions": {"remarks": remarks, "arch": arch, "tma": tma, "tma_stages": tma_stages,
                                    "mn_major": wgmma_mn_major, "tile_attr": tile, "dynamic_shared_memory": dynamic_shared_memory},
        "kern-dynamic-workgroup-memory": {"remarks": remarks, "arch": arch, "dynamic": dynamic_shared_memory},
        "kern-privatize-atomics": {"remarks": remarks},
        "kern-lower-accessors": {"stage_shared": shared},
        "kern-map-groups": groups,
    }, off)
    if tile:
        # A tiled contraction repeats index arithmetic across its micro-tile's items and its
        # staging (conv2d_fwd: 627 ops out of the pass, 446 after this cse); merged before the
        # passes after it (kern-lower-divisions expands each division into ~30 ops), they have
        # less to do and LLVM less to clean up. (When the staging was unrolled per slot the cse
        # took conv2d_fwd's 282 divisions to 154: docs/compile-time.md)
        at = next(i for i, p in enumerate(passes) if p.name == "kern-tile-contractions") + 1
        passes.insert(at, UpstreamPass(TILE_CLEANUP))
        if fmad:
            # ... but a product the items of a row share (a[i, k] * s) would be merged into one with
            # several uses, which kern-contract-fma leaves unfused: contracted first, per item, as
            # in the untiled kernel (tiled and untiled stay bitwise equal under --fmad)
            passes.insert(at, _ref(KERN_TO_GPU, "kern-contract-fma").build({}))
    return passes + [UpstreamPass(p) for p in KERN_TO_GPU_CLEANUP]


def gpu_to_llvm(opts: TargetOptions) -> list[Pass]:
    """gpu IR -> NVVM (LLVM dialect) with the target attached (:data:`GPU_TO_LLVM`)."""
    from .convert_gpu_to_nvvm import compiler_pipeline

    return _build(GPU_TO_LLVM, {
        "kern-bare-ptr-abi": {"index_bits": opts.index_bits, "align": opts.align},
        "convert-gpu-to-nvvm": {"pipeline": compiler_pipeline(opts.index_bits)},
        "kern-attach-target": {"chip": opts.arch, "opt_level": opts.opt_level, "libdevice": opts.libdevice},
    }, set() if opts.nonneg_scalars else {"kern-specialize-nonneg-scalars"})


def llvm_to_ptx() -> list[Pass]:
    """NVVM -> ``gpu.binary`` holding PTX text (LLVM's NVPTX backend, in process)."""
    return _build(LLVM_TO_PTX, {}, set())


STAGES = ("kern", "gpu", "llvm", "ptx")
