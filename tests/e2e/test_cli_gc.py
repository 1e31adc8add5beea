"""The one-shot CLI commands run without Python's cyclic garbage collector (``kernc.cli.collects_cycles``):
about 100 collections of a cold ``kernc compile`` found a few hundred cyclic objects (issue 23)."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import EXAMPLES

from kernc.cli import collects_cycles

_SCRIPT = """
import gc, os, sys
from kernc import cli
real_exit = os._exit
def report(code):
    sys.stdout.write(f"gc enabled: {gc.isenabled()}\\n"); sys.stdout.flush()
    real_exit(code)
os._exit = report  # (console_main's quick exit, reporting first)
sys.argv = ["kernc", *sys.argv[1:]]
cli.console_main()
"""


def test_which_commands_keep_the_collector():
    assert not collects_cycles(["compile", "x.kern"]) and not collects_cycles(["check", "x.kern"])
    assert not collects_cycles(["opt", "x.mlir"]) and not collects_cycles(["grad", "x.kern"])
    # long runs make cycles as they go: the CPU interpreter, the benchmarks
    assert collects_cycles(["run", "x.kern"]) and collects_cycles(["bench"]) and collects_cycles([])


def test_a_compile_runs_with_the_collector_off_and_writes_its_output(tmp_path):
    out = tmp_path / "saxpy.ptx"
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, "compile", os.path.join(EXAMPLES, "saxpy.kern"),
                           "-o", str(out)], env=dict(os.environ, KERNC_ALWAYS_COMPILE="1"),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "gc enabled: False"
    assert ".visible .entry saxpy" in out.read_text()
