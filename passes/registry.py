"""Pass names -> passes, and the textual pipeline parser of ``kernc opt --passes``.

Upstream MLIR cannot name a Python pass inside a pipeline string, so ``kernc opt`` splits the user's
pipeline at top-level commas itself: each element that names a kernc pass (``kern-*``) becomes that
pass, built with its ``{key=value}`` options; anything else (``canonicalize``, ``cse``,
``gpu.module(convert-gpu-to-nvvm{index-bitwidth=32})``, ...) is handed to upstream MLIR unchanged.
"""

from __future__ import annotations

from kernc.support.exact_numbers import parse_int


from .bare_ptr_abi import BarePointerABI
from .coalesce_views import CoalesceViews  # kern-coalesce-views
from .base import Pass, UpstreamPass
from .gpu_to_nvvm import ConvertGpuToNVVM
from .contract_fma import ContractFMA
from .dedup_attributes import DedupAttributes
from .fold_divisions import FoldDivisions
from .fold_layouts import FoldLayouts
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
from .relax_atomics import RelaxAtomics
from .specialize_scalars import SpecializeNonnegScalars
from .verify import VerifyKern

KERN_PASSES = {
    VerifyKern.name: lambda: VerifyKern(),
    CoalesceViews.name: lambda: CoalesceViews(),  # kern-coalesce-views
    LowerAccessors.name: lambda: LowerAccessors(),
    LowerLayouts.name: lambda: LowerLayouts(),
    LowerViews.name: lambda: LowerViews(),
    FoldDivisions.name: lambda: FoldDivisions(),
    ReduceIVDivisions.name: lambda: ReduceIVDivisions(),
    FoldRangeChecks.name: lambda: FoldRangeChecks(),
    SpecializeNonnegScalars.name: lambda: SpecializeNonnegScalars(),
    LowerDivisions.name: lambda **o: LowerDivisions(o.get("magic", "auto")),
    FoldLayouts.name: lambda: FoldLayouts(),
    OutlineToGpu.name: lambda: OutlineToGpu(),
    LowerBuiltins.name: lambda: LowerBuiltins(),
    RelaxAtomics.name: lambda: RelaxAtomics(),
    LibdeviceToIntrinsics.name: lambda: LibdeviceToIntrinsics(),
    ContractFMA.name: lambda: ContractFMA(),
    DedupAttributes.name: lambda: DedupAttributes(),
    LowerFMA.name: lambda: LowerFMA(),
    SelectToBranch.name: lambda: SelectToBranch(),
    BarePointerABI.name: lambda **o: BarePointerABI(parse_int(o.get("index-bits", "64"))),  # ASCII digits
}


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` at ``sep`` outside ``()``/``{}``; ``ValueError`` on unbalanced brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "({":
            depth += 1
        elif ch in ")}":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced brackets in pipeline '{text}'")
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ValueError(f"unbalanced brackets in pipeline '{text}'")
    parts.append("".join(cur).strip())
    return [p for p in parts if p]


def parse_pipeline(text: str) -> list[Pass]:
    """Parse ``'p1,p2{opt=v},gpu.module(...)'`` into passes; ``ValueError`` on a malformed pipeline
    or a bad option of a kernc pass."""
    passes: list[Pass] = []
    for item in split_top_level(text):
        name, _, rest = item.partition("{")
        name = name.strip()
        if name in KERN_PASSES:
            opts = {}
            if rest:
                if not rest.endswith("}"):
                    raise ValueError(f"malformed options in '{item}'")
                for kv in rest[:-1].split():
                    key, eq, value = kv.partition("=")
                    if not eq:
                        raise ValueError(f"option '{kv}' of '{name}' is not key=value")
                    opts[key] = value
            try:
                passes.append(KERN_PASSES[name](**opts))
            except TypeError as err:
                raise ValueError(f"pass '{name}' takes no such options: {sorted(opts)}") from err
        else:
            _check_upstream(item)
            # (the workgroup globals it makes are named so that no kernel name collides)
            passes.append(ConvertGpuToNVVM(item) if "convert-gpu-to-nvvm" in item else UpstreamPass(item))
    return passes


def _check_upstream(item: str) -> None:
    """``ValueError`` unless upstream MLIR knows the pass (pipeline) ``item``."""
    from kernc.support.mlir import ir, passmanager

    ctx = ir.Context()
    try:
        passmanager.PassManager.parse(f"builtin.module({item})", context=ctx)
    except Exception as err:  # MLIRError / ValueError from the pipeline parser
        known = ", ".join(sorted(KERN_PASSES))
        raise ValueError(f"unknown pass or bad pipeline '{item}' (kernc passes: {known}; or an upstream MLIR pass): {err}") from None
