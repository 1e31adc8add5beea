"""What the command line reads agrees with the API and never hangs (issue 18, item 8).

- ``--input x=@FIFO`` blocked forever: array files must be regular files; a source may be a
  regular file, a FIFO or a pipe, or a terminal, never a device such as ``/dev/zero``.
- ``--size n=5 --size n=6`` silently took the last; it is an error, as a repeated ``--input`` is.
- ``--input a=1e999`` became ``inf`` and ran, where the API refuses ``1e39`` for f32: both now go
  through the launcher's rule (``backend/binding.py``, ``kernc.support.exact_numbers``): a decimal is rounded
  once to the type, an overflow is an error, ``inf``/``nan`` written as such are values.
- Digits of other scripts (``a=١٢``, ``int("١٢") == 12``) were taken by ``--input`` and the integer
  options and refused by ``--size``: refused everywhere a number is read from text.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from fractions import Fraction

import numpy as np
import pytest

import kernc
from conftest import EXAMPLES
from kernc.cli import main
from kernc.support.errors import KerncLaunchError

SAXPY = os.path.join(EXAMPLES, "saxpy.kern")  # y += a * x, a: f32
with open(SAXPY) as _f:
    SAXPY_TEXT = _f.read()


def _kernc(*args, timeout=120):
    """The console entry point in a subprocess with a timeout and 2 GiB of address space: the bugs
    here hang (a FIFO) or read forever (/dev/zero), which must fail the test, not the machine."""
    def limit():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    return subprocess.run([sys.executable, "-m", "kernc", *args], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit)


@pytest.fixture
def x_npy(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.array([0.0, 1.0, 2.0, 3.0], dtype=np.float32))
    return path


def _run(tmp_path, *inputs):
    return main(["run", SAXPY, *[a for i in inputs for a in ("--input", i)], "--output-dir", str(tmp_path / "out")])


# ---- files ------------------------------------------------------------------------------------

def test_an_input_array_from_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "x.npy"
    os.mkfifo(fifo)
    proc = _kernc("run", SAXPY, "--input", "a=1", "--input", f"x=@{fifo}", "--output-dir", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    assert f"--input x: cannot read '{fifo}': it is a FIFO (named pipe); kernc reads regular files only" in proc.stderr


def test_an_input_array_from_a_device_is_refused(tmp_path):
    proc = _kernc("run", SAXPY, "--input", "a=1", "--input", "x=@/dev/zero", "--output-dir", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    assert "--input x: cannot read '/dev/zero': it is a character device" in proc.stderr


@pytest.mark.parametrize("cmd", [["check"], ["compile", "--emit", "kern"], ["opt", "--passes", "canonicalize"]])
def test_a_source_that_never_ends_is_refused(cmd):
    proc = _kernc(*cmd[:1], "/dev/zero", *cmd[1:])
    assert proc.returncode == 1, proc.stderr
    assert "cannot read '/dev/zero': it is a character device; kernc reads regular files, pipes and terminals" \
        in proc.stderr


def test_a_source_from_a_fifo_is_still_read(tmp_path, capsys):
    """A FIFO source (``kernc check <(...)``) waits for its writer, as standard input does."""
    fifo = tmp_path / "src.kern"
    os.mkfifo(fifo)
    text = SAXPY_TEXT
    writer = threading.Thread(target=lambda: fifo.write_text(text), daemon=True)
    writer.start()
    proc = _kernc("check", str(fifo))
    writer.join(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{fifo}: ok\n"


def test_the_api_reads_sources_the_same_way():
    from kernc.api import read_source

    with pytest.raises(OSError, match="cannot read '/dev/zero': it is a character device"):
        read_source("/dev/zero")


# ---- repeated options ---------------------------------------------------------------------------

@pytest.mark.parametrize("sizes", [("n=4", "n=5"), ("n=4", "n=4")])
def test_a_size_given_twice_is_an_error(tmp_path, x_npy, capsys, sizes):
    args = ["run", SAXPY, "--input", "a=1", "--input", f"x=@{x_npy}", "--output-dir", str(tmp_path / "o")]
    for s in sizes:
        args += ["--size", s]
    assert main(args) == 1
    assert "--size n is given twice" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# ---- scalar values: one rule with the API ------------------------------------------------------

@pytest.mark.parametrize("text", ["1e999", "1e39", "-3.5e38", "340282356779733661637539395458142568448"])
def test_an_overflowing_scalar_is_an_error_in_the_cli_and_the_api(tmp_path, x_npy, capsys, text):
    assert _run(tmp_path, f"a={text}", f"x=@{x_npy}") == 1
    err = capsys.readouterr().err
    assert "argument 'a': " in err and "is out of range for f32" in err, err
    mod = kernc.compile(SAXPY_TEXT)
    x = np.load(x_npy)
    value = int(text) if text.isdigit() else float(text) if "999" not in text else Fraction(10) ** 999
    with pytest.raises(KerncLaunchError, match="is out of range for f32"):
        mod.saxpy(value, x, np.zeros_like(x))


def test_the_largest_f32_and_its_rounding_neighbourhood_are_accepted(tmp_path, x_npy, capsys):
    # 2**128 - 2**104 rounds to the largest f32 (just below the overflow threshold)
    assert _run(tmp_path, f"a={2**128 - 2**104 - 1}", f"x=@{x_npy}") == 0
    y = np.load(tmp_path / "out" / "y.npy")
    assert y[1] == np.finfo(np.float32).max


@pytest.mark.parametrize("text, want", [("inf", np.inf), ("-inf", -np.inf), ("Infinity", np.inf), ("nan", np.nan)])
def test_explicit_infinities_and_nan_are_values(tmp_path, x_npy, capsys, text, want):
    assert _run(tmp_path, f"a={text}", f"x=@{x_npy}") == 0, capsys.readouterr().err
    y = np.load(tmp_path / "out" / "y.npy")
    with np.errstate(invalid="ignore"):
        expect = np.float32(want) * np.load(x_npy)  # 0 * inf is nan
    assert np.array_equal(y, expect, equal_nan=True)


def test_a_decimal_is_rounded_once_to_the_parameter_type(tmp_path, capsys):
    """Just above the midpoint of 1 and the next f32: through a double (float(text)) it becomes
    the midpoint itself, which rounds to even (1.0); rounded once it is the next f32."""
    text = "1.00000005960464477539062500000001"
    assert np.float32(float(text)) == np.float32(1.0)  # the double rounding the CLI did
    x = tmp_path / "ones.npy"
    np.save(x, np.ones(2, dtype=np.float32))
    assert _run(tmp_path, f"a={text}", f"x=@{x}") == 0, capsys.readouterr().err
    assert np.load(tmp_path / "out" / "y.npy")[0] == np.float32(1 + 2 ** -23)
    # the API takes the same exact value as a Fraction
    mod = kernc.compile(SAXPY_TEXT)
    y = np.zeros(2, dtype=np.float32)
    mod.saxpy(Fraction(text), np.ones(2, dtype=np.float32), y)
    assert y[0] == np.float32(1 + 2 ** -23)


def test_a_decimal_for_an_integer_parameter_is_named_as_such(tmp_path, capsys):
    src = tmp_path / "k.kern"
    src.write_text("kernel k(c: i32, y: f32[n] write) over n { y = f32(c); }\n")
    assert main(["run", str(src), "--input", "c=1.5", "--size", "n=2", "--output-dir", str(tmp_path)]) == 1
    # (the command line reads integers by the --size rule: trial of issue 18, F05)
    assert "--input c: '1.5' is not an integer (i32)" in capsys.readouterr().err


# ---- ASCII digits only ------------------------------------------------------------------------

ARABIC_12 = "\u0661\u0662"  # '١٢': int() reads 12
DEVANAGARI_4 = "\u096a"     # '४'


@pytest.mark.parametrize("value", [ARABIC_12, "1" + ARABIC_12, "\u00b2", "1e" + ARABIC_12, "0x" + ARABIC_12])
def test_an_input_with_digits_of_another_script_is_refused(tmp_path, x_npy, capsys, value):
    assert _run(tmp_path, f"a={value}", f"x=@{x_npy}") == 1
    assert f"--input a: '{value}' is neither a number nor true/false (digits are ASCII 0-9;" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["run", SAXPY, "--size", f"n={ARABIC_12}"],
    ["compile", SAXPY, "--O", "\u0662"],
    ["compile", SAXPY, "--index-bits", "\u0666\u0664"],
    ["compile", SAXPY, "--tma", "--tma-stages", "\u0663"],  # (was taken as 3: argparse's type=int)
    ["run", SAXPY, "--tma-stages", "\u0663", "--size", "n=4"],
    ["layout", "4:1", "--elem-bytes", DEVANAGARI_4],
])
def test_options_with_digits_of_another_script_are_usage_errors(capsys, argv):
    with pytest.raises(SystemExit) as usage:
        main(argv)
    assert usage.value.code == 2
    err = capsys.readouterr().err
    assert "invalid int value: '" in err and "(digits are ASCII 0-9)" in err or "must be a non-negative integer" in err


@pytest.mark.parametrize("expr", [f"{ARABIC_12}:1", f"(4,{ARABIC_12}):(1,4)", "Sw<\u0969,3,3> o (8,64):(64,1)"])
def test_a_layout_with_digits_of_another_script_is_refused(capsys, expr):
    assert main(["layout", expr]) == 1
    assert "error" in capsys.readouterr().err


def test_text_number_parsers_take_ascii_digits_only():
    from kernc.dialect.strided import Poly
    from kernc.support.exact_numbers import parse_int, parse_number
    from kernc.passes.registry import parse_pipeline

    for bad in (ARABIC_12, "\u00b2", "1" + DEVANAGARI_4):
        with pytest.raises(ValueError):
            parse_int(bad)
        with pytest.raises(ValueError):
            parse_number(bad)
        with pytest.raises(ValueError):
            Poly.parse(bad)
    with pytest.raises(ValueError):
        parse_pipeline("kern-bare-ptr-abi{index-bits=\u0666\u0664}")
    assert parse_int("1_000") == 1000 and parse_int(" 0x1f ") == 31
    assert parse_number("0.1") == Fraction(1, 10) and parse_number("12") == 12
    assert parse_number("1e-99999999") == Fraction(1, 10 ** 1000)  # a stand-in, never 10**99999999


def test_bench_counts_take_ascii_digits_only():
    import argparse

    from kernc.bench.options import _positive_int

    assert _positive_int("12") == 12
    with pytest.raises(argparse.ArgumentTypeError):
        _positive_int(ARABIC_12)


def test_no_option_reads_a_number_with_python_int_or_float():
    """Python's int() and float() take digits of every script (int('\\u0663') == 3): each numeric
    option of every subcommand parses with kernc's ASCII-only readers instead (the class of the
    --tma-stages bug above)."""
    import argparse

    from kernc.cli_args import build_parser

    def actions(parser):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from actions(sub)
            else:
                yield action
    loose = [a.option_strings or a.dest for a in actions(build_parser()) if a.type in (int, float)]
    assert not loose, loose
