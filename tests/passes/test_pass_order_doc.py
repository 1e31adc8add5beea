"""``docs/design/architecture.md`` lists the passes of ``passes/pipeline.py`` in the order they run
(its "Pass order" section), so that the design notes show today's pipeline."""

from __future__ import annotations

import pathlib
import re

from kernc.passes import pipeline
from kernc.passes.base import UpstreamPass
from kernc.passes.tile_contractions import TileContractions

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "design" / "architecture.md"


def _doc_name(cls) -> str:
    """How the doc names a pass of the stage lists: a kernc pass by its ``name``, a wrapper of an
    upstream pass by its module (``convert_gpu_to_nvvm.py``: ``convert-gpu-to-nvvm``)."""
    if issubclass(cls, UpstreamPass):
        return cls.__module__.rpartition(".")[2].replace("_", "-")
    return cls.name


def _documented() -> dict[str, list[str]]:
    """Stage list name -> the pass names of its bullet in the doc's "Pass order" section (the
    backticked names after the colon, in order, ``(optional)`` notes left out)."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("### Pass order", 1)[1].split("\n#", 1)[0]
    stages = {}
    for item in re.split(r"\n- ", section)[1:]:
        head, _, rest = item.partition("):")
        stage = re.search(r"\(`([A-Z_]+)`", head).group(1)
        stages[stage] = re.findall(r"`([^`]+)`", rest)
    return stages


def test_the_architecture_doc_lists_the_pipeline_in_order():
    documented = _documented()
    assert list(documented) == ["KERN_TO_GPU", "GPU_TO_LLVM", "LLVM_TO_PTX"]
    kern_to_gpu = []
    for c in (ref.cls for ref in pipeline.KERN_TO_GPU):
        kern_to_gpu.append(_doc_name(c))
        if c is TileContractions:  # its cleanup, scheduled with it
            kern_to_gpu.append(pipeline.TILE_CLEANUP)
    assert documented["KERN_TO_GPU"] == kern_to_gpu + list(pipeline.KERN_TO_GPU_CLEANUP)
    assert documented["GPU_TO_LLVM"] == [_doc_name(ref.cls) for ref in pipeline.GPU_TO_LLVM]
    assert documented["LLVM_TO_PTX"] == [_doc_name(ref.cls) for ref in pipeline.LLVM_TO_PTX]
