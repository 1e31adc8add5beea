"""Command-line options of the benchmarks, shared by ``python -m bench`` and ``kernc bench``.

Kept free of heavy imports: ``kernc``'s CLI imports this module to build its ``bench`` subcommand.
"""

from __future__ import annotations

import argparse

from kernc.passes.targets import arch_option

DEFAULT_JSON = "bench-results.json"


def _positive_int(text: str) -> int:
    from kernc.support.exact_numbers import parse_int

    try:
        n = parse_int(text)  # ASCII digits only (int() takes '١٢')
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


def add_arguments(ap: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the benchmark options to ``ap`` and return it."""
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: 1 repetition of everything, one example (saxpy), small GPU sizes")
    ap.add_argument("--json", default=DEFAULT_JSON, metavar="FILE",
                    help=f"where to write the results as JSON ('-': standard output, the table then goes to "
                         f"standard error; default: {DEFAULT_JSON} in the current folder)")
    ap.add_argument("--example", action="append", default=None, metavar="NAME",
                    help="only this example of examples/ (repeatable; default: all, --quick: saxpy)")
    ap.add_argument("--reps", type=_positive_int, default=None, metavar="N",
                    help="repetitions per in-process timing (default 20; subprocess timings use N//4, at least 3)")
    ap.add_argument("--arch", default="sm_90", type=arch_option,
                    help="target of both compilers and of ptxas (default sm_90)")
    ap.add_argument("--examples-dir", default=None, metavar="DIR",
                    help="folder of the .kern examples (default: the repository's examples/)")
    ap.add_argument("--no-gpu", action="store_true", help="skip the GPU measurements even if a GPU is present")
    return ap


def build_parser(prog: str = "python -m bench") -> argparse.ArgumentParser:
    """A stand-alone parser for the benchmark options."""
    return add_arguments(argparse.ArgumentParser(
        prog=prog,
        description="kernc benchmarks: compile latency, code quality, memory traffic and (with a GPU) "
                    "bandwidth and launch overhead, each as a ratio against a reference measured in the same run",
    ))
