"""A compile imports the module of an optional pass only when the kernel holds something for it
(``passes/holds.py``, ``PassRef``/``OnDemand`` in ``passes/base.py``; issue 23: a first run
compiles the source of every module it imports), and skipping a pass so changes nothing."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES

#: The modules of the large optional rewrites, which a saxpy has nothing for.
ON_DEMAND = ("kernc.passes.tile_contractions", "kernc.passes.mma_contractions",
             "kernc.passes.wgmma_contractions", "kernc.passes.coalesce_views", "kernc.passes.map_groups",
             "kernc.passes.privatize_atomics", "kernc.passes.wgmma_contractions_im2col")
#: The accessor lowerings a saxpy (a read and an add, per thread) does without.
BLOCK_LOWERINGS = ("kernc.passes.lower_accessors_shared", "kernc.passes.lower_accessors_shared_sum",
                   "kernc.passes.lower_accessors_unique", "kernc.passes.lower_accessors_pair",
                   "kernc.passes.lower_accessors_sum", "kernc.passes.lower_accessors_block")

_SCRIPT = """
import json, sys
from kernc.cli import main
code = main(["compile", sys.argv[1], "--arch", sys.argv[2], "-o", sys.argv[3]])
print(json.dumps([code, sorted(m for m in sys.modules if m.startswith("kernc"))]))
"""


def _compiled_modules(tmp_path, example: str, arch: str = "sm_90") -> set[str]:
    """The kernc modules a fresh ``kernc compile`` of ``examples/EXAMPLE.kern`` has imported."""
    out = tmp_path / f"{example}.ptx"
    env = dict(os.environ, KERNC_ALWAYS_COMPILE="1")
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, os.path.join(EXAMPLES, f"{example}.kern"), arch, str(out)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    code, modules = json.loads(proc.stdout.strip().splitlines()[-1])
    assert code == 0 and ".entry" in out.read_text()
    return set(modules)


def test_a_saxpy_compile_imports_none_of_the_optional_rewrites(tmp_path):
    """Found measuring issue 23: the pipeline imported every pass module up front, 210 KB of
    source (the contraction passes, kern-coalesce-views, kern-map-groups, kern-privatize-atomics)
    that a first run compiled for a saxpy that runs none of them."""
    modules = _compiled_modules(tmp_path, "saxpy")
    assert "kernc.passes.lower_accessors_per_thread" in modules  # (it did lower its accessors)
    assert not modules & set(ON_DEMAND), sorted(modules & set(ON_DEMAND))
    assert not modules & set(BLOCK_LOWERINGS), sorted(modules & set(BLOCK_LOWERINGS))


def test_a_gemm_compile_imports_the_contraction_passes(tmp_path):
    modules = _compiled_modules(tmp_path, "gemm_f16", arch="sm_90a")
    assert {"kernc.passes.tile_contractions", "kernc.passes.mma_contractions",
            "kernc.passes.wgmma_contractions"} <= modules
    assert "kernc.passes.map_groups" not in modules  # (no reduction across items)


def test_a_reduction_across_items_imports_kern_map_groups(tmp_path):
    modules = _compiled_modules(tmp_path, "layernorm")
    assert "kernc.passes.map_groups" in modules


_EXAMPLES = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(EXAMPLES, "*.kern")))


@pytest.mark.parametrize("remarks", [False, True], ids=["plain", "remarks"])
@pytest.mark.parametrize("example", _EXAMPLES)
def test_a_pass_its_check_skips_would_have_changed_nothing(example, remarks, monkeypatch):
    """Every example compiled with each check watched: where a check of ``passes/holds.py`` says
    the module holds nothing for its pass, the pass run there anyway on a copy leaves the IR
    as it is, raises nothing and remarks nothing (so skipping it is the same compile)."""
    from kernc.compiler import Compilation, CompileOptions
    from kernc.passes.base import OnDemand

    skipped, wrong = [], []
    apply = OnDemand.apply

    def watched(self, ctx, module):
        if not self.ref.when(module, self.options or {}):
            said = []
            options = dict(self.options or {})
            if options.get("remarks") is not None:
                options["remarks"] = said.append
            copy = module.operation.clone()
            try:
                before = copy.get_asm(enable_debug_info=True)
                self.ref.cls(**options).apply(ctx, copy)
                after = copy.get_asm(enable_debug_info=True)
            finally:
                copy.erase()
            skipped.append(self.name)
            if after != before or said:
                wrong.append((self.name, said))
        apply(self, ctx, module)

    monkeypatch.setattr(OnDemand, "apply", watched)
    path = os.path.join(EXAMPLES, f"{example}.kern")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    arch = "sm_90a" if "f16" in example or "bf16" in example else "sm_90"
    comp = Compilation(text, path, CompileOptions(arch=arch, remarks=remarks), use_cache=False)
    comp.gpu_ir()
    assert not wrong, wrong
    if example == "saxpy":
        assert "kern-map-groups" in skipped  # (the check did run, and say no)


def test_the_division_check_looks_for_the_ops_the_division_passes_rewrite():
    from kernc.passes import holds, index_facts, lower_divisions

    assert holds.DIVISIONS == lower_divisions.DIV_OPS == index_facts.DIV | index_facts.REM
