"""Runs the lit + FileCheck suite (``tests/lit``) as part of pytest, so one command runs both."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_lit_suite():
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from lit.main import main; sys.exit(main())", "-sv", ROOT],
        capture_output=True, text=True, timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-8000:]
    passed = re.search(r"Passed\s*:\s*(\d+)", out)
    assert passed and int(passed.group(1)) >= 2, out[-2000:]


def _lit_name(cls) -> str:
    """The name a pass's lit test has: ``kern-lower-views`` -> ``lower-views``; an upstream
    wrapper (no ``name`` of its own) is named after its module, ``convert-gpu-to-nvvm`` (the rule
    of the docs site, ``docs/_ext/kernc_docs.py``, which shows the file on the pass's page)."""
    name = cls.__dict__.get("name")
    if isinstance(name, str) and name:
        return name.removeprefix("kern-")
    return cls.__module__.rsplit(".", 1)[-1].replace("_", "-")


def test_every_pass_of_the_pipeline_has_a_lit_test_named_after_it():
    """One FileCheck file per pass (GUIDE.md): ``tests/lit/passes/NAME.mlir`` (or ``.kern``) for
    every pass of ``passes/pipeline.py``'s lists, whose RUN lines run the pass with
    ``kernc opt --passes``; a new pass without one fails here."""
    from kernc.passes import pipeline

    lit_dir = os.path.join(ROOT, "tests", "lit", "passes")
    missing, not_run = [], []
    for cls in (ref.cls for ref in (*pipeline.KERN_TO_GPU, *pipeline.GPU_TO_LLVM, *pipeline.LLVM_TO_PTX)):
        stem = _lit_name(cls)
        files = [f"{stem}{ext}" for ext in (".mlir", ".kern") if os.path.isfile(os.path.join(lit_dir, stem + ext))]
        if not files:
            missing.append(f"{cls.__name__}: tests/lit/passes/{stem}.mlir")
            continue
        # the pass as `kernc opt` names it: its own name, or the upstream pass it wraps
        spelled = cls.__dict__.get("name") or stem
        with open(os.path.join(lit_dir, files[0]), encoding="utf-8") as f:
            runs = [ln for ln in f if "RUN:" in ln]
        if not any(re.search(rf"--passes[= ]'?[^|]*\b{re.escape(spelled)}\b", ln) for ln in runs):
            not_run.append(f"{files[0]} runs no 'kernc opt --passes' with {spelled}")
    assert not missing, "passes without a lit test of their own: " + ", ".join(missing)
    assert not not_run, "; ".join(not_run)
