"""``ruff check .`` is clean with the project's configuration (``[tool.ruff]`` in
``pyproject.toml``: pyflakes, pycodestyle's error classes and pylint's errors)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ruff() -> list:
    exe = shutil.which("ruff", path=os.path.dirname(sys.executable)) or shutil.which("ruff")
    if exe is None:
        pytest.fail("ruff is not installed (it comes with the test extra: pip install -e '.[test]')")
    return [exe]


def test_ruff_check_is_clean():
    r = subprocess.run([*_ruff(), "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_ruff_finds_what_it_is_configured_to_find(tmp_path):
    """The configuration is the one read (a file with an unused import and an undefined name fails)."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nprint(undefined_name)\n")
    r = subprocess.run([*_ruff(), "check", "--no-cache", "--config", os.path.join(ROOT, "pyproject.toml"), str(bad)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "F401" in r.stdout and "F821" in r.stdout, r.stdout
