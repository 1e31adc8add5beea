"""Pass names -> passes, and the textual pipeline parser of ``kernc opt --passes``.

The kernc passes are those of the pipeline's stage lists (``passes/pipeline.py``: one list feeds
both), each built from its name and ``{key=value}`` options, which are the pass's dataclass fields
spelt with dashes (``kern-bare-ptr-abi{index-bits=64}``; ``Pass.from_options``); an option not
given keeps the pipeline's default. Upstream MLIR cannot name a Python pass inside a pipeline
string, so ``kernc opt`` splits the user's pipeline at top-level commas itself: each element that
names a kernc pass (``kern-*``) becomes that pass; anything else (``canonicalize``, ``cse``,
``gpu.module(convert-gpu-to-nvvm{index-bitwidth=32})``, ...) is handed to upstream MLIR unchanged.
"""

from __future__ import annotations

from . import pipeline
from .base import Pass, UpstreamPass
from .convert_gpu_to_nvvm import ConvertGpuToNVVM
from .gpu_module_to_binary import SerializeToPTX

#: Every kernc pass by name, in pipeline order (``kernc opt`` imports them all).
KERN_PASSES: dict[str, type[Pass]] = {
    cls.name: cls
    for cls in (ref.cls for ref in (*pipeline.KERN_TO_GPU, *pipeline.GPU_TO_LLVM, *pipeline.LLVM_TO_PTX))
    if not issubclass(cls, UpstreamPass)
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
            passes.append(KERN_PASSES[name].from_options(opts))
        else:
            _check_upstream(item)
            # (the workgroup globals it makes are named so that no kernel name collides; the PTX
            # serialization sets kernc's NVPTX flags first, so opt's PTX is the compiler's)
            if "convert-gpu-to-nvvm" in item:
                passes.append(ConvertGpuToNVVM(item))
            elif name == "gpu-module-to-binary":
                passes.append(SerializeToPTX(item))
            else:
                passes.append(UpstreamPass(item))
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
