"""One list of passes for the pipeline and ``kernc opt``, options as dataclass fields, and each
pass in the module named after it."""

from __future__ import annotations

import os
import re

import pytest

from kernc.passes import holds, pipeline, registry
from kernc.passes.base import OnDemand, Pass, UpstreamPass

PASSES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "passes")
#: The modules of passes/ that hold no pass: the pass machinery and what several passes share.
SUPPORT = {"__init__", "base", "registry", "pipeline", "holds", "ir_builder", "llvm_ops", "index_facts",
           "targets", "workgroup"}


def _module_of(cls) -> str:
    """The module a pass must live in: ``kern-X-Y`` in ``x_y.py``; an upstream wrapper in the
    module named after the upstream pass it runs."""
    if issubclass(cls, UpstreamPass):
        pipeline_text = cls().pipeline
        name = re.search(r"(convert-gpu-to-nvvm|gpu-module-to-binary)", pipeline_text).group(1)
    else:
        assert cls.name.startswith("kern-"), cls.name
        name = cls.name[len("kern-"):]
    return name.replace("-", "_")


REFS = (*pipeline.KERN_TO_GPU, *pipeline.GPU_TO_LLVM, *pipeline.LLVM_TO_PTX)
ALL = tuple(ref.cls for ref in REFS)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_each_pass_lives_in_the_module_named_after_it(cls):
    assert cls.__module__ == f"kernc.passes.{_module_of(cls)}"


def test_every_module_of_passes_is_a_pass_a_part_of_one_or_support():
    pass_modules = {_module_of(cls) for cls in ALL}
    for f in sorted(os.listdir(PASSES_DIR)):
        if not f.endswith(".py"):
            continue
        name = f[:-3]
        owner = next((m for m in pass_modules if name.startswith(m + "_")), None)
        assert name in pass_modules or name in SUPPORT or owner is not None, f


def _kind(p) -> type:
    """The class of a built pass: an :class:`OnDemand` stands for its pass's."""
    return p.ref.cls if isinstance(p, OnDemand) else type(p)


def test_the_registry_is_the_pipeline_s_kernc_passes():
    from kernc.passes.contract_fma import ContractFMA
    from kernc.passes.tile_contractions import TileContractions

    assert list(registry.KERN_PASSES.values()) == [c for c in ALL if not issubclass(c, UpstreamPass)]
    opts = pipeline.TargetOptions(nonneg_scalars=True)
    built = (pipeline.kern_to_gpu(coalesce=True, fmad=True) + pipeline.gpu_to_llvm(opts)
             + pipeline.llvm_to_ptx())
    kinds = [_kind(p) for p in built if type(p) is not UpstreamPass]
    # under --fmad kern-contract-fma also runs right after kern-tile-contractions, before its cse
    at = kinds.index(TileContractions)
    assert kinds[at + 1] is ContractFMA and kinds.count(ContractFMA) == 2
    assert kinds[:at + 1] + kinds[at + 2:] == list(ALL)
    assert ContractFMA not in [_kind(p) for p in pipeline.kern_to_gpu()]
    assert [p.name for p in pipeline.kern_to_gpu()][-2:] == ["canonicalize", "cse"]
    off = pipeline.kern_to_gpu(coalesce=False)
    assert "kern-coalesce-views" not in [p.name for p in off] and "kern-contract-fma" not in [p.name for p in off]
    assert "kern-tile-contractions" in [p.name for p in off]
    assert "kern-tile-contractions" not in [p.name for p in pipeline.kern_to_gpu(tile=False)]


@pytest.mark.parametrize("ref", REFS, ids=lambda r: r.name)
def test_each_stage_entry_names_its_pass_without_importing_it(ref):
    """A stage list names a pass by name and class (``PassRef``), its module following from the
    name: the name is the pass's own (an upstream wrapper's: the upstream pass it runs)."""
    cls = ref.cls
    assert cls.__name__ == ref.cls_name and cls.__module__ == ref.module
    if issubclass(cls, UpstreamPass):
        assert ref.name in cls().pipeline
    else:
        assert ref.name == cls.name


def test_a_pass_with_a_check_is_built_when_applied_and_has_the_pipeline_s_options():
    """kern-tile-contractions has a check (``passes/holds.py``): the stage holds an ``OnDemand``
    with its options, whose pass is the one ``kernc opt`` builds with the same options."""
    (tile,) = [p for p in pipeline.kern_to_gpu(arch="sm_80") if p.name == "kern-tile-contractions"]
    assert isinstance(tile, OnDemand) and tile.ref.when is holds.contraction_loops
    assert tile.built() == tile.ref.cls(**tile.options) and tile.built().arch == "sm_80"
    (named,) = registry.parse_pipeline("kern-tile-contractions{arch=sm_80}")
    assert named.arch == tile.built().arch and named.block_m == tile.built().block_m


@pytest.mark.parametrize("cls", list(registry.KERN_PASSES.values()), ids=lambda c: c.name)
def test_kernc_opt_builds_each_pass_from_its_name_with_the_pipeline_defaults(cls):
    assert cls.constructible()
    (p,) = registry.parse_pipeline(cls.name)
    assert type(p) is cls and p == cls()



@pytest.mark.parametrize("cls", [c for c in ALL if issubclass(c, UpstreamPass)], ids=lambda c: c.__name__)
def test_kernc_opt_builds_each_upstream_wrapper_from_its_pipeline(cls):
    """Found writing tests/lit/passes/gpu-module-to-binary.mlir: `kernc opt --passes
    'gpu-module-to-binary{format=isa}'` ran the bare upstream pass, without kernc's NVPTX flags
    (64-bit shared pointers: its PTX was not the compiler's). Each wrapper of the pipeline is what
    `kernc opt` runs for the wrapper's upstream pipeline."""
    text = cls().pipeline
    (p,) = registry.parse_pipeline(text)
    assert type(p) is cls and p.pipeline == text

def test_the_option_defaults_are_the_pipeline_s():
    """kernc opt's kern-bare-ptr-abi was 64-bit while the compiler's is 32-bit by default."""
    target = pipeline.TargetOptions()
    (abi,) = [p for p in pipeline.gpu_to_llvm(target) if p.name == "kern-bare-ptr-abi"]
    (named,) = registry.parse_pipeline("kern-bare-ptr-abi")
    assert named.index_bits == abi.index_bits == target.index_bits == 32
    (lower,) = [p for p in pipeline.kern_to_gpu() if p.name == "kern-lower-divisions"]
    assert registry.parse_pipeline("kern-lower-divisions")[0] == lower.built()


def test_options_are_the_dataclass_fields():
    from kernc.passes.bare_ptr_abi import BarePointerABI
    from kernc.passes.coalesce_views import CoalesceViews
    from kernc.passes.fold_range_checks import FoldRangeChecks
    from kernc.passes.lower_divisions import LowerDivisions

    assert set(BarePointerABI.options()) == {"index-bits", "align"}
    assert set(LowerDivisions.options()) == {"magic"}
    assert set(FoldRangeChecks.options()) == {"scalars-nonneg"}
    assert CoalesceViews.options() == {}  # remarks: a callable, set by the pipeline only
    (p, q, r) = registry.parse_pipeline(
        "kern-bare-ptr-abi{index-bits=64 align=16},kern-fold-range-checks{scalars-nonneg=true},"
        "kern-lower-divisions{magic=never}")
    assert (p.index_bits, p.align, q.scalars_nonneg, r.magic) == (64, 16, True, "never")
    assert registry.parse_pipeline("kern-attach-target{chip=sm_80 opt-level=2}")[0].features == "+ptx80"


@pytest.mark.parametrize("text,message", [
    ("kern-bare-ptr-abi{index-bits=16}", "index_bits must be 32 or 64, got '16'"),
    ("kern-bare-ptr-abi{bits=32}", "takes no such options: ['bits']"),
    ("kern-lower-divisions{magic=sometimes}", "magic must be auto, always or never, got 'sometimes'"),
    ("kern-fold-range-checks{scalars-nonneg=maybe}", "is true or false"),
    ("kern-verify{x=1}", "(it takes none)"),
    ("kern-bare-ptr-abi{index-bits}", "is not key=value"),
    ("kern-attach-target{chip=sm_1}", "unknown GPU architecture"),
])
def test_bad_options_are_value_errors(text, message):
    with pytest.raises(ValueError) as info:
        registry.parse_pipeline(text)
    assert message in str(info.value)


def test_a_pass_is_a_dataclass():
    import dataclasses

    for cls in ALL:
        assert dataclasses.is_dataclass(cls) and issubclass(cls, Pass)


def test_an_option_set_on_an_on_demand_pass_is_an_error_not_lost():
    """Regression: setting ``block_n`` on the pipeline's OnDemand of kern-wgmma-contractions did
    nothing (the pass is built from its options): a test narrowing the tiles that way ran the
    default tiles. Now it is an AttributeError naming where the option goes."""
    import pytest

    from kernc.passes import pipeline

    p = next(p for p in pipeline.kern_to_gpu() if p.name == "kern-wgmma-contractions")
    with pytest.raises(AttributeError, match=r"set it on \.built\(\)"):
        p.block_n = 64
    p.built().block_n = 64
    assert p.built().block_n == 64
