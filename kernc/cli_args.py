"""The options of every ``kernc`` subcommand (:func:`build_parser`), apart from what they do
(:mod:`kernc.cli`).

Imported on every start of the command line, so it imports only what checking the options needs:
``argparse``, the arch names (:mod:`kernc.passes.targets`), the ASCII integer rule
(:mod:`kernc.support.exact_numbers`) and the benchmark's options (``bench/options.py``).
"""

from __future__ import annotations

import argparse

from kernc.passes.targets import arch_option
from kernc.support.exact_numbers import ascii_int_option, parse_int


def _size_option(text: str) -> tuple[str, int]:
    """argparse ``type=`` of ``kernc run --size SYM=INT``: ``(SYM, INT)`` with ``INT >= 0``, read
    by the integer rule of every integer ``--input`` (:func:`~kernc.support.exact_numbers.parse_int`:
    ``007``, ``0x10``, ``1_000``, ``+5``; not ``1e1``), spaces around the name and the value ignored."""
    sym, eq, val = text.partition("=")
    if not eq or not sym.strip():
        raise argparse.ArgumentTypeError(f"'{text}' is not SYM=INT")
    try:
        n = parse_int(val)
    except ValueError:
        n = -1
    if n < 0:
        why = "" if val.isascii() else " (digits are ASCII 0-9)"
        raise argparse.ArgumentTypeError(f"'{text}': the size must be a non-negative integer{why}")
    return sym.strip(), n


def _input_option(text: str) -> str:
    """argparse ``type=`` of ``kernc run --input``: ``NAME=VALUE`` or ``NAME=@file.npy``."""
    if "=" not in text or not text.partition("=")[0].strip():
        raise argparse.ArgumentTypeError(f"'{text}' is not NAME=VALUE or NAME=@file.npy")
    return text


class _StoreOnce(argparse.Action):
    """``store`` for an option given at most once: a second ``-o`` (``--kernel``, ``--output-dir``,
    ...) is a usage error naming the option, as a repeated ``--size n=`` or ``--input a=`` is an
    error, rather than the last one silently winning. (Repeatable options use ``append``.)"""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault("_options_given", set())
        if self.option_strings and self.dest in given:
            parser.error(f"argument {'/'.join(self.option_strings)}: given twice (it takes one value)")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose single-valued options (``action="store"``, the default) refuse a
    second occurrence (:class:`_StoreOnce`); the subcommands' parsers are made by it too."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)


_FMAD_HELP = ("contract a*b+c into fused multiply-adds (nvcc's --fmad=true; rounded once on the GPU "
              "and the CPU interpreter alike; default: off, results equal numpy's a*b+c)")


class _VersionAction(argparse.Action):
    """``--version``: kernc's, the MLIR build's, ptxas's and the CUDA driver's versions
    (:mod:`kernc.versions`, looked up only when asked)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        import sys

        from kernc.versions import version_text

        parser._print_message(version_text(), sys.stdout)  # as argparse's own "version" action does
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The ``argparse`` parser of every subcommand (usage errors exit with code 2); the parsed
    namespace names the subcommand in ``command`` (``kernc.cli.COMMANDS`` runs it)."""
    ap = _Parser(prog="kernc", description="kernc: a GPU kernel compiler for .kern files")
    ap.add_argument("--version", action=_VersionAction,
                    help="print the versions of kernc, the MLIR build, ptxas and the CUDA driver")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)

    c = sub.add_parser("compile", help="compile a .kern file and print or write one stage")
    c.add_argument("file")
    c.add_argument("-o", "--output", default=None, help="output file ('-' or none: stdout)")
    c.add_argument("--emit", choices=["ast", "kern", "gpu", "llvm", "ptx"], default="ptx")
    c.add_argument("--arch", default="sm_90", type=arch_option, help="target GPU (default sm_90)")
    c.add_argument("--kernel", action="append", help="only this kernel (repeatable)")
    c.add_argument("--print-ir-after-all", action="store_true", help="print the IR after every pass to stderr")
    c.add_argument("--verify-each", action="store_true", help="run the MLIR verifier after every pass")
    c.add_argument("--time-passes", action="store_true",
                   help="print the wall time of the frontend steps and of every pass, grouped by stage, to "
                        "stderr (bypasses the compile cache)")
    c.add_argument("--O", type=ascii_int_option, choices=[0, 1, 2, 3], default=3, help="LLVM optimisation level")
    c.add_argument("--index-bits", type=ascii_int_option, choices=[32, 64], default=32,
                   help="width of index arithmetic in the generated code (32 needs all sizes < 2^31)")
    # kern-coalesce-views
    c.add_argument("--no-coalesce", action="store_true",
                   help="do not stage transposed view accesses through a workgroup tile")
    # kern-tile-contractions
    c.add_argument("--no-tile", action="store_true",
                   help="do not tile contraction loops on CUDA cores (block tiles through workgroup memory, "
                        "several items per thread); tensor cores are not turned off (f16/bf16/i8/@tf32 "
                        "contractions still run as mma.sync/wgmma in tiles of their own: use "
                        "--no-tensor-cores)")
    c.add_argument("--no-async-copy", action="store_true",
                   help="stage the tiles of tiled contractions with plain loads, not cp.async (sm_80 and "
                        "later)")
    # kern-mma-contractions
    c.add_argument("--no-tensor-cores", action="store_true",
                   help="do not run f16/bf16/i8 (and @tf32 f32) contractions on tensor cores (mma.sync, "
                        "sm_80 and later); they are tiled on CUDA cores instead (this overrides a "
                        "kernel's @tensor_cores)")
    # kern-wgmma-contractions
    c.add_argument("--no-wgmma", action="store_true",
                   help="do not run f16/bf16/i8/u8 contractions as warpgroup wgmma on sm_90a (they "
                        "take mma.sync instead)")
    c.add_argument("--tma", action="store_true",
                   help="load the wgmma operand tiles that are boxes of their views with the tensor "
                        "memory accelerator (cp.async.bulk.tensor on an mbarrier; sm_90a)")
    c.add_argument("--tma-stages", type=ascii_int_option, default=2, choices=range(1, 9), metavar="{1..8}",
                   help="with --tma: pipeline stages of the TMA copies (buffers, each with its mbarrier; "
                        "default 2; fewer, with a remark, where they do not fit in the arch's workgroup memory)")
    c.add_argument("--no-wgmma-mn-major", action="store_true",
                   help="stage every wgmma operand tile K-major (default: an operand whose read runs along "
                        "its rows, such as a gemm's b[k, j], is staged MN-major, without bank conflicts)")
    # kern-dynamic-workgroup-memory
    c.add_argument("--no-dynamic-shared-memory", action="store_true",
                   help="keep every kernel within 48 KiB of static workgroup memory (default: a kernel "
                        "that needs more takes dynamic workgroup memory, up to the arch's opt-in maximum, "
                        "227 KiB on sm_90; fewer TMA stages and smaller tiles without it)")
    # kern-privatize-atomics
    c.add_argument("--no-privatize", action="store_true",
                   help="do not give small atomically updated views a per-block copy in workgroup memory")
    # kern-map-groups
    c.add_argument("--no-group-registers", action="store_true",
                   help="reductions across items: re-read in every phase instead of keeping values in "
                        "registers")
    c.add_argument("--remarks", action="store_true",
                   help="explain optimisation decisions (view access staging, contraction tiling, tensor "
                        "cores, privatized atomics) on stderr")
    c.add_argument("--fmad", action="store_true", help=_FMAD_HELP)
    c.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the IR or PTX on standard output: auto (a terminal, unless NO_COLOR is "
                        "set), always or never (default auto)")

    k = sub.add_parser("check", help="parse and check a .kern file")
    k.add_argument("file")

    o = sub.add_parser("opt", help="run named passes on MLIR text (like mlir-opt)")
    o.add_argument("file")
    o.add_argument("--passes", required=True, help="e.g. 'kern-lower-accessors,kern-lower-layouts,canonicalize'")
    o.add_argument("-o", "--output", default=None)
    o.add_argument("--print-ir-after-all", action="store_true")
    o.add_argument("--time-passes", action="store_true", help="print the wall time of every pass to stderr")

    r = sub.add_parser("run", help="run one kernel on the CPU interpreter or a CUDA GPU")
    r.add_argument("file")
    r.add_argument("--kernel", default=None)
    r.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    r.add_argument("--input", action="append", default=[], type=_input_option, metavar="NAME=@file.npy|NAME=VALUE")
    r.add_argument("--size", action="append", default=[], type=_size_option, metavar="SYM=INT")
    r.add_argument("--output-dir", default=".", help="where NAME.npy outputs go (default: the current folder)")
    r.add_argument("--arch", default="sm_90", type=arch_option,
                   help="target GPU (default sm_90): the PTX of --device cuda, and what the CPU interpreter "
                        "runs too (the gpu IR built for that arch: tensor cores from sm_80, wgmma on "
                        "sm_90a, cp.async staging from sm_80)")
    r.add_argument("--fmad", action="store_true", help=_FMAD_HELP)
    r.add_argument("--no-coalesce", action="store_true",
                   help="do not stage transposed view accesses through a workgroup tile (compare --stats)")
    r.add_argument("--no-tile", action="store_true",
                   help="do not tile contraction loops on CUDA cores (compare --stats); tensor-core "
                        "contractions still run on tensor cores (use --no-tensor-cores)")
    r.add_argument("--no-async-copy", action="store_true",
                   help="stage the tiles of tiled contractions with plain loads, not cp.async (compare --stats)")
    r.add_argument("--no-tensor-cores", action="store_true",
                   help="do not run f16/bf16/i8 (and @tf32 f32) contractions on tensor cores (mma.sync; "
                        "compare --stats)")
    r.add_argument("--no-wgmma", action="store_true",
                   help="do not run f16/bf16/i8/u8 contractions as warpgroup wgmma on sm_90a (compare --stats)")
    r.add_argument("--tma", action="store_true",
                   help="load the wgmma operand tiles by the tensor memory accelerator (sm_90a)")
    r.add_argument("--tma-stages", type=ascii_int_option, default=2, choices=range(1, 9), metavar="{1..8}",
                   help="with --tma: pipeline stages of the TMA copies (default 2)")
    r.add_argument("--no-wgmma-mn-major", action="store_true",
                   help="stage every wgmma operand tile K-major (compare --stats' bank conflicts)")
    r.add_argument("--no-dynamic-shared-memory", action="store_true",
                   help="keep every kernel within 48 KiB of static workgroup memory (compare --stats)")
    r.add_argument("--no-privatize", action="store_true",
                   help="do not give small atomically updated views a per-block copy in workgroup memory "
                        "(compare --stats)")
    r.add_argument("--no-group-registers", action="store_true",
                   help="reductions across items: re-read in every phase instead of keeping values in "
                        "registers (compare --stats)")
    r.add_argument("--always-shared", action="store_true",
                   help="always stage shared(I)/shared_sum(I) through workgroup memory (default: run them as "
                        "indexed(I)/atomic(I) where staging would not pay on the indices; compare --stats)")
    r.add_argument("--stats", action="store_true",
                   help="print the interpreter's memory-traffic counters (the summary line says which build "
                        "ran: staged, tiled, on tensor cores)")
    r.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar (one is shown on a terminal for CPU runs longer than about 2 s) and no "
                        "'ran ...' summary line (errors, and the counters --stats asks for, still print)")
    r.add_argument("--stats-json", default=None, metavar="FILE", help="write the counters as JSON ('-': stdout), with \"staged\": true (the "
                   "kernel staged view accesses), false (a staged kernel ran without staging for "
                   "these extents) or null (nothing to stage, or an empty launch), and \"shared\": true "
                   "(shared(I)/shared_sum(I) staged), false (run as indexed(I)/atomic(I)) or null, "
                   "\"tiled\": true (the contraction ran tiled on CUDA cores), false (the untiled build ran) "
                   "or null, and \"tensor_cores\": \"mma.sync\" or \"wgmma\" (the contraction ran on "
                   "tensor cores) or null, and \"tma\": true (tiles loaded by TMA), false (the tma=False build "
                   "ran: a tensor map could not take these arguments; \"no_tma\" says why) or null")

    for mode, what in (("grad", "reverse mode: K_grad adds dL/dx to x_bar"),
                       ("jvp", "forward mode: K_jvp gives y_dot = J x_dot")):
        d = sub.add_parser(mode, help=f"print the .kern source of a kernel's derivative ({what})")
        d.add_argument("file")
        d.add_argument("--kernel", required=True, help="the kernel to differentiate")
        d.add_argument("--wrt", default=None, metavar="X,A",
                       help="the parameters to differentiate with respect to (default: the kernel's "
                            "@tunable roles, else every float parameter it reads)")
        d.add_argument("-o", "--output", default=None, help="output file ('-' or none: stdout)")
        d.add_argument("--emit", choices=["source", "kern", "gpu", "ptx"], default="source",
                       help="the .kern source (default) or that stage of the derivative kernel")
        d.add_argument("--arch", default="sm_90", type=arch_option, help="target GPU (default sm_90)")
        d.add_argument("--remarks", action="store_true",
                       help="explain on stderr how each loop is reversed (recomputation or O(n))")

    lay = sub.add_parser("layout", help="print a CuTe-style layout as a grid of offsets (or an SVG)")
    lay.add_argument("expr", help="e.g. '(4,8):(8,1)', 'Sw<3,3,3> o (8,64):(64,1)', '(6,2):(8,2) o (4,3):(3,1)'")
    form = lay.add_mutually_exclusive_group()
    form.add_argument("--text", action="store_true", help="print a text grid (the default)")
    form.add_argument("--svg", metavar="FILE", default=None, help="write an SVG grid to FILE (- for standard output)")
    lay.add_argument("--banks", action="store_true", help="also show shared-memory banks (32 x 4 bytes)")
    lay.add_argument("--elem-bytes", type=ascii_int_option, choices=(1, 2, 4, 8, 16), default=4, metavar="N",
                     help="element size in bytes for --banks: 1, 2, 4, 8 or 16 (default 4)")

    try:  # the benchmarks ship as kernc.bench (the repository's bench/ folder)
        from kernc.bench.options import add_arguments as add_bench_arguments
    except ImportError:  # pragma: no cover - an install without bench/
        add_bench_arguments = None
    if add_bench_arguments is not None:
        b = sub.add_parser("bench", help="run the benchmarks (compile latency, code quality, memory traffic, GPU)")
        add_bench_arguments(b)
    return ap


__all__ = ["build_parser"]
