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
