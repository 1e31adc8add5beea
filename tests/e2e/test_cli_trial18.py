"""CLI findings of the trial of issue 18 (F05-F09): one rule for integers, sources of bounded size,
repeated options, output files through other users' symlinks, stale temporaries of killed runs."""

from __future__ import annotations

import io
import os
import types

import numpy as np
import pytest

from kernc.cli import main
from kernc.support import input_files


# ---- F07: a source is at most MAX_SOURCE_BYTES ------------------------------------------------

@pytest.mark.parametrize("command", [["check", "-"], ["compile", "-", "-o", os.devnull]])
def test_dev_zero_on_stdin_ends_with_a_user_error_naming_the_limit(monkeypatch, capsys, command):
    """``kernc check - < /dev/zero`` read forever (and, out of memory, was an internal error)."""
    with open("/dev/zero", "rb") as zero:
        monkeypatch.setattr("sys.stdin", types.SimpleNamespace(buffer=zero))
        assert main(command) == 1
    err = capsys.readouterr().err
    assert "standard input" in err and "16 MiB" in err and "Traceback" not in err


def test_a_huge_source_file_is_refused_from_its_size(tmp_path, capsys):
    big = tmp_path / "big.kern"
    with open(big, "wb") as f:  # sparse: 6 GB of nothing
        f.truncate(6 * 2**30)
    assert main(["check", str(big)]) == 1
    assert "16 MiB" in capsys.readouterr().err


def test_read_limited_reads_one_byte_past_the_limit():
    class Counting(io.BytesIO):
        taken = 0

        def read(self, n=-1):
            data = super().read(n)
            Counting.taken += len(data)
            return data

    assert input_files.read_limited(io.BytesIO(b"x" * 10), 10) == b"x" * 10
    with pytest.raises(OSError, match="10 bytes"):
        input_files.read_limited(Counting(b"x" * 1000), 10)
    assert Counting.taken == 11
