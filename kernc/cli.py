"""The ``kernc`` command line (contract in ``docs/design/architecture.md``): what each subcommand
does (:data:`COMMANDS`); their options are :mod:`kernc.cli_args`, and every output is written through
:mod:`kernc.support.output_files` (files all or none, atomically; standard output completely).

Exit codes: 0 ok; 1 user error (a diagnostic is printed); 2 usage error; 3 internal compiler error
(a one-line summary, and the full report written to a file whose path is printed).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import tempfile
import time

from kernc.cli_args import build_parser
from kernc.support.output_files import (
    quiet_stdout,
    require_stdout,
    writable_problem,
    write_all_atomically,
    write_atomically,
    write_stdout,
)

EXIT_OK, EXIT_USER, EXIT_USAGE, EXIT_ICE = 0, 1, 2, 3


def _emit(text: str, out: str | None) -> None:
    if out in (None, "-"):
        write_stdout(text if text.endswith("\n") else text + "\n", "write the output with -o FILE")
    else:
        write_atomically(out, text)


def _refuse_overwriting_input(ns) -> None:
    """``ValueError`` when ``-o`` names the input file itself (``kernc compile a.kern -o a.kern``
    would replace the source with PTX): checked before any work, so nothing is lost."""
    out = getattr(ns, "output", None)
    if out in (None, "-") or ns.file == "-":
        return
    try:
        same = os.path.samefile(out, ns.file)
    except OSError:  # the output does not exist yet (or the input cannot be read: reported later)
        return
    if same:
        raise ValueError(f"the output file '{out}' is the input file; choose another -o")


def _read_source(path: str) -> str:
    if path == "-":  # the same bytes give the same text or error as a file would
        from kernc.support.input_files import MAX_SOURCE_BYTES, read_limited

        try:  # (at most the size limit and one byte: /dev/zero on stdin ends at once)
            if hasattr(sys.stdin, "buffer"):
                data = read_limited(sys.stdin.buffer)
            else:
                data = sys.stdin.read(MAX_SOURCE_BYTES + 1).encode()
                if len(data) > MAX_SOURCE_BYTES:
                    read_limited(__import__("io").BytesIO(data))  # (raises the limit's error)
        except OSError as err:
            raise OSError(f"cannot read standard input: {err.strerror or err}") from None
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError:
            from kernc.api import decode_source

            return decode_source(data, "-")
    from kernc.support.input_files import read_stream_or_file

    try:  # a regular file, a FIFO/pipe or a terminal; not /dev/zero (it would never end)
        data = read_stream_or_file(path)
    except OSError as err:
        raise OSError(f"cannot read '{path}': {err.strerror or err}") from None
    # The common case (a UTF-8 file) without importing kernc.api, which loads MLIR: a `kernc compile`
    # served from the compile cache never imports the compiler. Anything else goes through
    # kernc.api.read_source for its diagnostic.
    try:
        return data.decode("utf-8-sig")  # -sig: without a byte order mark, as the compiler sees it
    except UnicodeDecodeError:
        pass
    from kernc.api import read_source

    return read_source(path)


def _ir_printer(name: str, text: str) -> None:
    sys.stderr.write(f"// -----// IR Dump After {name} //----- //\n{text}\n")


def cmd_compile(ns) -> int:
    """``kernc compile``: print or write one stage; a cache hit for PTX skips MLIR entirely."""
    _refuse_overwriting_input(ns)
    text = _read_source(ns.file)
    kernels = tuple(ns.kernel) if ns.kernel else None
    # --print-ir-after-all, --verify-each and --time-passes want the passes to run: no cache for them
    time_passes = getattr(ns, "time_passes", False)
    use_cache = not (ns.print_ir_after_all or getattr(ns, "verify_each", False) or time_passes)
    # kern-coalesce-views: --no-coalesce/--remarks skip the PTX fast path (other IR / want the pass)
    coalesce, remarks = not getattr(ns, "no_coalesce", False), getattr(ns, "remarks", False)
    fmad = getattr(ns, "fmad", False)
    tile = not getattr(ns, "no_tile", False)  # kern-tile-contractions: other IR, no fast path
    tensor_cores = not getattr(ns, "no_tensor_cores", False)  # kern-mma-contractions: the same
    privatize = not getattr(ns, "no_privatize", False)  # kern-privatize-atomics: the same
    group_registers = not getattr(ns, "no_group_registers", False)  # kern-map-groups: the same
    wgmma = not getattr(ns, "no_wgmma", False)  # kern-wgmma-contractions: the same
    async_copy = not getattr(ns, "no_async_copy", False)  # kern-tile-contractions' cp.async: the same
    tma = getattr(ns, "tma", False)  # kern-wgmma-contractions' TMA loads: the same
    tma_stages = getattr(ns, "tma_stages", 2)
    wgmma_mn_major = not getattr(ns, "no_wgmma_mn_major", False)  # kern-wgmma-contractions: the same
    dynamic_shared_memory = not getattr(ns, "no_dynamic_shared_memory", False)  # kern-dynamic-workgroup-memory
    if (ns.emit == "ptx" and use_cache and coalesce and tile and tensor_cores and privatize and group_registers
            and wgmma and async_copy and not tma and not remarks and dynamic_shared_memory and wgmma_mn_major):
        from kernc.backend import cache

        ptx = cache.lookup_ptx(text, ns.file, arch=ns.arch, opt_level=ns.O, index_bits=ns.index_bits,
                               kernels=kernels, fmad=fmad)
        if ptx is not None:  # a cache hit: MLIR is never imported
            _emit(_colored(ptx, ns), ns.output)
            return EXIT_OK
    t_start = time.perf_counter()
    from kernc.compiler import Compilation, CompileOptions

    startup = _startup_timings(t_start) if time_passes else []
    t_compile = time.perf_counter()
    opts = CompileOptions(arch=ns.arch, opt_level=ns.O, index_bits=ns.index_bits, kernels=kernels,
                          verify_each=ns.verify_each or os.environ.get("KERNC_VERIFY_EACH") == "1",
                          coalesce=coalesce, remarks=remarks, fmad=fmad, tile=tile,
                          tensor_cores=tensor_cores, privatize=privatize, group_registers=group_registers,
                          wgmma=wgmma, async_copy=async_copy, tma=tma, tma_stages=tma_stages,
                          dynamic_shared_memory=dynamic_shared_memory, wgmma_mn_major=wgmma_mn_major)
    comp = Compilation(text, ns.file, opts, _ir_printer if ns.print_ir_after_all else None, use_cache=use_cache)
    result = comp.ir(ns.emit)
    wall = time.perf_counter() - t_compile
    _emit(_colored(result, ns), ns.output)
    if time_passes:
        from kernc.compiler import format_timings

        _stderr().write(
            f"{ns.file}: wall time of each step (--time-passes). In a new process, a step's first run also "
            "includes set-up that 'startup' does not list (LLVM's NVPTX backend, modules imported on "
            "first use).\n" + format_timings(startup + comp.timings, wall + sum(r.seconds for r in startup))
            + "\n")
    return EXIT_OK


def _colored(text: str, ns) -> str:
    """``--emit`` output, coloured on a terminal (``--color``, ``NO_COLOR``: :mod:`kernc.highlight`)."""
    from kernc.highlight import for_output

    return for_output(text, ns.emit, getattr(ns, "color", "never"), ns.output)


def _startup_timings(t_import: float) -> list:
    """``--time-passes``: the one-time set-up of a compile, done here up front and timed, so that its
    cost is not charged to the first step that needs it: importing the compiler (since
    ``t_import``), creating the MLIR context, loading the parser tables."""
    from kernc.compiler import StageTiming, context
    from kernc.frontend import parser

    t0 = time.perf_counter()
    context()
    t1 = time.perf_counter()
    parser._parser()
    t2 = time.perf_counter()
    return [StageTiming("startup", "", [("import kernc.compiler", t0 - t_import), ("MLIR context", t1 - t0),
                                        ("parser tables", t2 - t1)])]


def cmd_check(ns) -> int:
    """``kernc check``: parse and check only (exit 1 with diagnostics on errors)."""
    from kernc import frontend

    from kernc.support.errors import CompileError, Diagnostic, SourceLocation

    text = _read_source(ns.file)
    try:
        program = frontend.check(frontend.parse(text, ns.file))
    except RecursionError as err:
        raise frontend.nesting_error(err, ns.file, text) from None
    if not program.kernels:  # what `kernc compile` would say
        raise CompileError(Diagnostic(f"{ns.file} defines no kernel to compile",
                                      SourceLocation(ns.file, 1, 1), source=text))
    print(f"{ns.file}: ok".encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"))
    return EXIT_OK


def cmd_derivative(ns) -> int:
    """``kernc grad`` / ``kernc jvp``: the program with the derivative kernel of ``--kernel``
    appended, as ``.kern`` source (``--emit kern``/``gpu``/``ptx``: that stage of it), printed or
    written atomically to ``-o``."""
    _refuse_overwriting_input(ns)
    from kernc.frontend.derivative import derivative_source

    text = _read_source(ns.file)
    remark = (lambda line: _stderr().write(line + "\n")) if ns.remarks else None
    source, name = derivative_source(text, ns.file, ns.kernel, ns.wrt, ns.command, remark)
    if ns.emit == "source":
        _emit(source, ns.output)
        return EXIT_OK
    from kernc.compiler import Compilation, CompileOptions

    comp = Compilation(source, ns.file, CompileOptions(arch=ns.arch, kernels=(name,)), None)
    _emit(comp.ir(ns.emit), ns.output)
    return EXIT_OK


def cmd_opt(ns) -> int:
    """``kernc opt``: parse MLIR text, run the named kernc/upstream passes, print the result."""
    from kernc.compiler import context, mlir_error_text, run_passes
    from kernc.support.errors import CompileError, Diagnostic
    from kernc.support.mlir import ir
    from kernc.support.errors import InternalCompilerError
    from kernc.frontend.lower import mlir_filename
    from kernc.passes.base import UpstreamPass
    from kernc.passes.registry import parse_pipeline

    _refuse_overwriting_input(ns)
    text = _read_source(ns.file)
    try:
        passes = parse_pipeline(ns.passes)
    except ValueError as err:
        raise CompileError(Diagnostic(f"bad pass pipeline: {err}"))
    ctx = context()
    with ctx:
        try:  # a regular file is parsed from the file itself, so that locations name it (not "-");
            # anything else (stdin, a pipe) from the text already read, as it cannot be read twice
            regular = (ns.file != "-" and os.path.isfile(ns.file) and text.isascii() and not _has_bom(ns.file)
                       and mlir_filename(ns.file) == ns.file)  # (MLIR cannot hold a non-UTF-8 name)
            module = ir.Module.parseFile(ns.file) if regular else ir.Module.parse(text)
        except ir.MLIRError as err:
            raise CompileError(Diagnostic(f"{ns.file}: cannot parse IR: {mlir_error_text(err)}"))
        _check_signatures(module, ns.file)
    run = None
    if getattr(ns, "time_passes", False):
        from kernc.compiler import StageTiming

        run = StageTiming("passes", "", [])
    try:
        run_passes(module, passes, (lambda n, m: _ir_printer(n, str(m))) if ns.print_ir_after_all else None,
                   record=(lambda name, seconds: run.steps.append((name, seconds))) if run else None)
    except InternalCompilerError as err:
        # an upstream pass the user named that fails on the user's IR is what mlir-opt reports as an
        # error (a gpu-module-to-binary without a target attached, say), not a kernc bug
        # (a kernc pass may raise the error itself: it then names no pass)
        if any(p.name == getattr(err, "pass_name", None) and isinstance(p, UpstreamPass) for p in passes):
            lines = str(err).splitlines()  # without MLIR's dump of the whole op ("see current operation")
            cut = next((i for i, line in enumerate(lines) if "see current operation" in line), len(lines))
            raise CompileError(Diagnostic(f"{ns.file}: " + "\n".join(lines[:cut]))) from None
        raise
    with ctx:
        _emit(str(module), ns.output)
    if run is not None:
        from kernc.compiler import format_timings

        table = format_timings([run]) if run.steps else "no pass ran (the pipeline is empty)"
        _stderr().write(f"{ns.file}: wall time of each pass (--time-passes)\n{table}\n")
    return EXIT_OK


def _has_bom(path: str) -> bool:
    """Whether the file starts with a UTF-8 byte order mark (which MLIR's parser does not skip)."""
    with open(path, "rb") as f:
        return f.read(3) == b"\xef\xbb\xbf"


def _check_signatures(module, filename: str) -> None:
    """``CompileError`` if a function's ``kern.signature`` attribute (the launch contract the passes
    read) is not a valid signature: IR given to ``kernc opt`` may be hand-edited."""
    from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
    from kernc.support.errors import CompileError, Diagnostic
    from kernc.support.mlir import ir
    from kernc.passes.base import walk_ops

    for fn in walk_ops(module, {"func.func", "gpu.func"}):
        if SIGNATURE_ATTR not in fn.attributes:
            continue
        name = ir.StringAttr(fn.attributes["sym_name"]).value
        try:
            sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
            inputs = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value).inputs
            # after kern-bare-ptr-abi a buffer is an !llvm.ptr, still a buffer of the signature
            kinds = ["memref" if isinstance(t, ir.MemRefType) or str(t).startswith("!llvm.ptr") else
                     "index" if isinstance(t, ir.IndexType) else "scalar" for t in inputs]
            problem = sig.problem(kinds)
        except ValueError as err:
            problem = str(err)
        if problem:
            raise CompileError(Diagnostic(f"{filename}: @{name} has a bad {SIGNATURE_ATTR} attribute: {problem}"))


def _os_error_text(err: OSError) -> str:
    """An ``OSError`` as one line naming the file: ``cannot use 'PATH': REASON`` (Python's own
    ``[Errno 2] No such file or directory: 'PATH'`` is for programmers); an error kernc worded
    itself (no errno) is kept as it is."""
    if err.errno is None or err.strerror is None:
        return str(err)
    if err.filename is None:
        return err.strerror
    return f"cannot use '{err.filename}': {err.strerror}"


def _parse_scalar(text: str, dtype: str | None = None):
    """The value of ``--input NAME=TEXT`` for a scalar of type ``dtype``: for an integer type
    (``index``, ``iN``, ``uN``) an integer by the rule ``--size`` reads (:func:`kernc.support.
    exact_numbers.parse_int`: ``007``, ``0x10``, ``1_000``, ``+5``; a decimal such as ``1e1`` is
    refused); otherwise ``true``/``false``, an int, the exact :class:`~fractions.Fraction` of a
    decimal, or ``inf``/``-inf``/``nan`` spelled so (:func:`kernc.support.exact_numbers.parse_number`:
    ASCII digits only); a zero written with a minus sign (``-0``, ``-0.0``, ``-0e0``) is ``-0.0`` for
    a float type, as the API's ``f=-0.0``. The launcher rounds it to the parameter's type by the API's own rule
    (``backend/binding.py``): a decimal once, exactly, and one that overflows the type (``1e999``,
    ``1e39`` for f32) is an error, as ``1e39`` is from Python."""
    from kernc.support.exact_numbers import parse_int, parse_number

    low = text.strip().lower()
    if dtype is not None and (dtype == "index" or dtype[:1] in ("i", "u")):
        try:
            return parse_int(text)
        except ValueError:
            why = "" if text.isascii() else "; digits are ASCII 0-9"
            raise ValueError(f"'{text}' is not an integer ({dtype}{why})") from None
    if low in ("true", "false"):
        return low == "true"
    try:
        value = parse_number(text)
    except ValueError:
        why = "" if text.isascii() else "digits are ASCII 0-9; "
        raise ValueError(f"'{text}' is neither a number nor true/false ({why}use NAME=@file.npy "
                         f"for arrays)") from None
    if value == 0 and low.startswith("-") and dtype is not None and dtype.startswith(("f", "bf")):
        return -0.0  # (a Fraction or int has no signed zero; -0.0 is what the API's f=-0.0 passes)
    return value


def _load_npy(name: str, path: str):
    """The array of ``--input NAME=@PATH``: a regular ``.npy`` file (a FIFO blocked the run
    forever, and a device would never end: :mod:`kernc.support.input_files`), read once, without pickles.
    ``KerncLaunchError`` naming the option and the file for every way it can be wrong."""
    import numpy as np

    from kernc.support.errors import KerncLaunchError
    from kernc.support.input_files import open_for_reading

    try:
        f = open_for_reading(path)
    except OSError as err:
        raise KerncLaunchError(f"--input {name}: cannot read '{path}': {err.strerror or err}") from None
    with f:
        try:
            loaded = np.load(f, allow_pickle=False)
        except OSError as err:
            raise KerncLaunchError(f"--input {name}: cannot read '{path}': {err.strerror or err}") from None
        except MemoryError:
            raise KerncLaunchError(f"--input {name}: cannot read '{path}': its header declares an "
                                   "array too large for this machine's memory") from None
        except Exception as err:  # noqa: BLE001 - numpy's many ways to reject a file
            f.seek(0)
            magic = f.read(6)
            if not magic:
                reason = "the file is empty"
            elif magic != b"\x93NUMPY":  # the .npy format's magic string
                reason = "not a .npy file"
            elif "allow_pickle" in str(err):
                reason = "an array of Python objects (only numeric arrays can be passed)"
            else:  # a bad header or a short body (numpy's own wording names Python internals)
                reason = "a damaged .npy file (its header or its length is wrong)"
            raise KerncLaunchError(f"--input {name}: cannot read '{path}': {reason}; "
                                   "save one array with np.save") from None
        if not isinstance(loaded, np.ndarray):
            if hasattr(loaded, "close"):
                loaded.close()
            raise KerncLaunchError(
                f"--input {name}: '{path}' is not a .npy array (an .npz archive?); save one array with np.save")
    return loaded


def _check_run_outputs(ns) -> None:
    """``OSError`` before anything runs when ``--output-dir`` is not a folder (nor can become one)
    or the folder of ``--stats-json`` does not exist: a run must not write some outputs and then
    fail on the last one."""
    out = ns.output_dir
    if not out:  # found by a trial: '' was refused only after the kernel had run
        raise OSError("--output-dir is empty; name a folder ('.' for the current one)")
    if os.path.lexists(out) and not os.path.isdir(out):
        raise OSError(f"--output-dir '{out}' exists and is not a folder")
    stats_json = getattr(ns, "stats_json", None)
    if ns.stats or stats_json == "-":  # counters asked for on standard output
        require_stdout("write the counters with --stats-json FILE")
    if stats_json and stats_json != "-":
        folder = os.path.dirname(os.path.realpath(stats_json))  # a symlink's target's folder
        if not os.path.isdir(folder) and folder != os.path.realpath(out):  # (the run creates DIR)
            raise OSError(f"--stats-json '{stats_json}': the folder '{folder}' does not exist")
        if os.path.isdir(stats_json):
            raise OSError(f"--stats-json '{stats_json}' is a folder")
        inputs = [ns.file] + [item.partition("=")[2][1:] for item in ns.input if item.partition("=")[2].startswith("@")]
        for path in inputs:
            if os.path.exists(path) and os.path.exists(stats_json) and os.path.samefile(path, stats_json):
                raise OSError(f"--stats-json '{stats_json}' is an input of the run ('{path}'); choose another file")


def _check_output_files(ns, names) -> list[str]:
    """The paths ``DIR/NAME.npy`` of the outputs ``names``; ``OSError`` before the run when one
    could not be written (:func:`writable_problem`), or when ``--stats-json`` names one of them
    (it would replace the output)."""
    paths = [os.path.join(ns.output_dir, f"{name}.npy") for name in names]
    stats_json = getattr(ns, "stats_json", None)
    stats_real = os.path.realpath(stats_json) if stats_json and stats_json != "-" else None
    for path in paths:
        problem = writable_problem(path, created_folder=ns.output_dir)
        if problem is not None:
            raise OSError(f"cannot write '{path}': {problem}")
        if stats_real is not None and os.path.realpath(path) == stats_real:
            raise OSError(f"--stats-json '{stats_json}' is the output file '{path}'; choose another file")
    return paths


def _allocate_output(name: str, shape: tuple, dtype) -> "np.ndarray":  # noqa: F821
    """The zero-filled array ``kernc run`` makes for an output that is not an ``--input``;
    ``KerncLaunchError`` when the sizes make it larger than this machine can allocate (numpy's
    ``MemoryError``, or its ``ValueError`` for a size beyond its own limits)."""
    import numpy as np

    from kernc.support.errors import KerncLaunchError

    try:
        return np.zeros(shape, dtype=dtype)
    except (MemoryError, ValueError):
        count = 1
        for n in shape:
            count *= int(n)
        raise KerncLaunchError(
            f"output '{name}' was not given, and an array of shape ({', '.join(map(str, shape))}) "
            f"of {dtype} ({count * dtype.itemsize} bytes) is more than this machine can allocate; "
            f"pass smaller --size values, or the array as --input {name}=@file.npy") from None


def cmd_run(ns) -> int:
    """``kernc run``: bind ``--input``/``--size`` values, run one kernel, write outputs as ``DIR/NAME.npy``."""
    import numpy as np

    import kernc
    from kernc.backend.dtypes import numpy_dtype
    from kernc.dialect.strided import Poly
    from kernc.support.errors import KerncLaunchError

    _check_run_outputs(ns)
    mod = kernc.compile(_read_source(ns.file), filename=ns.file, arch=ns.arch, fmad=ns.fmad,
                        coalesce=not ns.no_coalesce, tile=not ns.no_tile,
                        tensor_cores=not ns.no_tensor_cores, group_registers=not ns.no_group_registers,
                        choose_shared=not ns.always_shared, privatize=not ns.no_privatize,
                        wgmma=not ns.no_wgmma, async_copy=not ns.no_async_copy, tma=ns.tma,
                        tma_stages=ns.tma_stages, dynamic_shared_memory=not ns.no_dynamic_shared_memory,
                        wgmma_mn_major=not ns.no_wgmma_mn_major)
    names = list(mod.kernels)
    if ns.kernel is None:
        if len(names) != 1:
            raise KerncLaunchError(f"{ns.file} has {len(names)} kernels ({', '.join(names)}); choose one with --kernel")
        ns.kernel = names[0]
    if ns.kernel not in mod.kernels:
        raise KerncLaunchError(f"no kernel named '{ns.kernel}' in {ns.file} (kernels: {', '.join(names)})")
    kernel = mod.kernels[ns.kernel]
    sig = kernel.signature
    values: dict = {}
    for item in ns.input:
        name, _, val = item.partition("=")  # (the syntax was checked while parsing the options)
        name = name.strip()  # (as --size reads its name)
        try:
            p = sig.param(name)
        except KeyError:
            raise KerncLaunchError(f"kernel '{sig.name}' has no parameter '{name}'") from None
        if name in values:
            raise KerncLaunchError(f"--input {name} is given twice")
        if val.startswith("@"):
            loaded = _load_npy(name, val[1:])
            if p.kind == "buffer" and p.dtype == "bf16" and loaded.dtype.kind == "V" and loaded.dtype.itemsize == 2:
                loaded = loaded.view(numpy_dtype("bf16"))  # np.save writes bfloat16 as raw 2-byte records
            values[name] = loaded
        else:
            try:
                values[name] = _parse_scalar(val, p.dtype if p.kind == "scalar" else None)
            except ValueError as err:
                raise KerncLaunchError(f"--input {name}: {err}") from err
        if p.kind == "buffer" and not isinstance(values[name], np.ndarray):
            raise KerncLaunchError(f"--input {name}: '{name}' is a buffer; pass it as {name}=@file.npy")
    sizes: dict = {}
    for sym, n in ns.size:  # [(SYM, INT)], checked while parsing the options
        if sym in sizes:  # the second silently won, where a repeated --input is an error
            raise KerncLaunchError(f"--size {sym} is given twice")
        sizes[sym] = n
    for p in sig.params:
        a = values.get(p.name)
        if p.kind == "buffer" and isinstance(a, np.ndarray) and a.ndim != len(p.storage_shape):
            raise KerncLaunchError(
                f"argument '{p.name}' (--input {p.name}): expected a {len(p.storage_shape)}-D array of shape "
                f"({', '.join(map(str, p.storage_shape))}), got shape {a.shape}")
    # Bind symbols from given arrays so that missing outputs can be allocated (zeros).
    env = dict(sizes)
    for p in sig.params:
        a = values.get(p.name)
        if p.kind == "buffer" and isinstance(a, np.ndarray) and a.ndim == len(p.storage_shape):
            for dim, n in zip(p.storage_shape, a.shape):
                if isinstance(dim, str) and dim.isidentifier():
                    if dim in sizes and sizes[dim] != int(n):  # name the two sources, not an output
                        raise KerncLaunchError(
                            f"--size {dim}={sizes[dim]} disagrees with --input {p.name}, whose shape "
                            f"{a.shape} gives {dim} = {int(n)}")
                    env.setdefault(dim, int(n))
    stored = set(sig.written())  # (a view the kernel only reads is an input, never saved)
    for p in sig.params:
        if p.name in values or p.kind == "table":  # tables: the launcher builds them from I
            continue
        if p.name in stored:
            try:
                shape = tuple(Poly.parse(str(d)).evaluate(env) for d in p.storage_shape)
            except KeyError as err:
                raise KerncLaunchError(
                    f"output '{p.name}' was not given and size {err} is unknown; pass --size {err.args[0]}=N"
                ) from None
            values[p.name] = _allocate_output(p.name, shape, numpy_dtype(p.dtype))
        else:
            raise KerncLaunchError(f"missing --input {p.name}=...")
    kwargs = {s: v for s, v in sizes.items() if s in sig.sizes}
    extra = [s for s in sizes if s not in sig.sizes]
    if extra:
        raise KerncLaunchError(f"kernel '{sig.name}' has no size symbol '{extra[0]}'")
    outputs = [p.name for p in sig.params if p.name in stored]
    out_paths = _check_output_files(ns, outputs)
    try:
        if ns.device == "cuda":
            from kernc.backend import cuda

            if not cuda.available():
                raise KerncLaunchError("no usable CUDA device (CuPy sees no GPU or no driver); use --device cpu")
            cp = cuda.cupy()
            dev_values = {k: (cp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in values.items()}
            result = kernel.launch((), {**dev_values, **kwargs}, "cuda")
            values = {k: (cp.asnumpy(v) if isinstance(v, cp.ndarray) else v) for k, v in dev_values.items()}
        else:
            result = kernel.launch((), {**values, **kwargs}, "cpu", progress=False if ns.quiet else None)
    except MemoryError as err:  # (CuPy's OutOfMemoryError is one): the sizes asked for too much
        raise KerncLaunchError(
            f"kernel '{sig.name}' ran out of {'device ' if ns.device == 'cuda' else ''}memory for "
            f"these sizes ({', '.join(f'{k}={v}' for k, v in sorted(env.items())) or 'as given'}): "
            f"{err or 'no detail'}") from None
    os.makedirs(ns.output_dir, exist_ok=True)
    import io

    files = []
    for name, path in zip(outputs, out_paths):
        buf = io.BytesIO()
        np.save(buf, values[name], allow_pickle=False)
        files.append((path, buf.getvalue()))
    written = [path for path, _ in files]
    stats = result.stats.to_dict() if result.stats is not None and (ns.stats or ns.stats_json) else None
    # the JSON also says which kernel ran (LaunchResult.staged), as the summary line does: the
    # counters of a staged kernel's unstaged run are another kernel's
    stats_text = (json.dumps({**stats, "staged": result.staged, "shared": result.shared, "tiled": result.tiled,
                              "tensor_cores": result.tensor_cores, "tma": result.tma,
                              "no_tma": result.no_tma}, indent=2, sort_keys=True) + "\n"
                  if stats is not None and ns.stats_json else None)
    if stats_text is not None and ns.stats_json != "-":
        files.append((ns.stats_json, stats_text))
    # all files or none: a full disk on the last one leaves the earlier ones as they were
    write_all_atomically(files)
    # with --stats-json - the JSON owns stdout (it must parse); the human-readable lines go to stderr
    info = sys.stderr if ns.stats_json == "-" else sys.stdout
    staging = {True: "; view accesses staged through workgroup tiles",
               False: "; without view staging (the tiles would have been mostly empty for these extents)",
               None: ""}[result.staged]
    staging += {True: "; shared(I)/shared_sum(I) staged through workgroup memory",
                False: "; shared(I)/shared_sum(I) ran as indexed(I)/atomic(I) (staging would not pay on "
                       "these indices: too little reuse per block)",
                None: ""}[result.shared]
    staging += {True: "; contraction tiled on CUDA cores (kern-tile-contractions)",
                False: "; contraction untiled (a problem smaller than one block tile runs the untiled build)",
                None: ""}[result.tiled]
    if result.tensor_cores:
        staging += f"; contraction on tensor cores ({result.tensor_cores})"
    staging += {True: "; tiles loaded by TMA",
                False: f"; without TMA (the tma=False build ran: {result.no_tma})",
                None: "; --tma loaded no tile (the build has no TMA copy: `kernc compile --remarks` says why)"
                if getattr(ns, "tma", False) else ""}[result.tma]
    if not ns.quiet:  # (--quiet: errors, and the counters --stats asks for, only)
        print(
            f"ran {sig.name} on {result.device}: P={result.problem_size}, grid={result.grid}x{result.block}{staging}; "
            f"wrote {', '.join(written) or 'nothing'}", file=info
        )
    if stats is not None and ns.stats:
        for k, v in stats.items():
            print(f"  {k}: {v}", file=info)
    if stats_text is not None and ns.stats_json == "-":
        _emit(stats_text, "-")
    return EXIT_OK


def cmd_layout(ns) -> int:
    """``kernc layout EXPR``: print a layout as a grid of offsets (or write an SVG picture)."""
    from kernc.dialect.layout_algebra import LayoutError, parse_layout
    from kernc.dialect.layout_print import layout_to_svg, layout_to_text
    from kernc.support.errors import CompileError, Diagnostic

    try:
        # the language's algebra first (a tuple right of `o` is a tiler there, as in CuTe), then
        # the literal notation (Sw<B,M,S>, which the language spells swizzle<B,M,S>)
        try:
            layout = _algebra_layout(ns.expr)
        except LayoutError as err:
            try:
                layout = parse_layout(ns.expr)
            except LayoutError:
                raise err from None
        if layout is None:
            layout = parse_layout(ns.expr)
        if ns.svg:
            data = layout_to_svg(layout, banks=ns.banks, elem_bytes=ns.elem_bytes)
        else:
            data = layout_to_text(layout, banks=ns.banks, elem_bytes=ns.elem_bytes)
    except LayoutError as err:
        raise CompileError(Diagnostic(f"layout '{ns.expr}': {err}")) from None
    if ns.svg and ns.svg != "-":
        write_atomically(ns.svg, data)
        print(f"wrote {ns.svg}")
    else:
        write_stdout(data, "the layout is printed there (or write an SVG with --svg FILE)")
    return EXIT_OK


def _algebra_layout(expr: str):
    """The static layout a layout-algebra expression of the language evaluates to
    (``coalesce((4,8):(8,1))``, ``blocked_product(A, B)``, ``A o B``, ...), or ``None`` when ``expr``
    calls no algebra operation (the literal parser's error then stands). ``LayoutError`` with the
    frontend's message when the expression is wrong or not static."""
    import re

    from kernc.dialect.layout_algebra import LayoutError
    from kernc.support.errors import CompileError

    if "Sw<" in expr or (not re.search(r"[A-Za-z_]\w*\s*\(", expr) and " o " not in expr):
        return None  # the literal notation (Sw<B,M,S> is not the language's): its error stands
    from kernc import frontend

    try:
        program = frontend.check(frontend.parse(f"layout __layout = {expr};", "<layout>"))
    except CompileError as err:
        raise LayoutError("; ".join(d.message.replace(" in layout '__layout'", "").replace("'__layout'", "the layout")
                                    for d in err.diagnostics)) from None
    value = program.items[0].value
    if value is None or not hasattr(value, "shape"):
        raise LayoutError("not a static layout (every shape and stride must be a number)")
    return value


def cmd_bench(ns) -> int:
    """``kernc bench``: the benchmarks of ``bench/`` (same options as ``python -m bench``)."""
    from kernc.bench.runner import run

    return run(ns)


#: What each subcommand of :func:`kernc.cli_args.build_parser` runs.
COMMANDS = {"compile": cmd_compile, "check": cmd_check, "opt": cmd_opt, "run": cmd_run, "layout": cmd_layout,
            "bench": cmd_bench, "grad": cmd_derivative, "jvp": cmd_derivative}


def _report_ice(err: BaseException, argv) -> int:
    """Write the full crash report to a file, print a one-line summary and its path; exit code 3."""
    import traceback  # (only for a crash: with textwrap, 1-2 ms of every start served by the cache)

    fd, path = tempfile.mkstemp(prefix="kernc-crash-", suffix=".txt")
    with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:  # argv may hold undecodable bytes
        f.write(f"kernc internal compiler error\ncommand: kernc {' '.join(argv)}\n")
        if getattr(err, "pass_name", None):
            f.write(f"failing pass: {err.pass_name}\npipeline: {', '.join(err.pipeline)}\n")
        f.write("\n" + "".join(traceback.format_exception(err)))
        if getattr(err, "ir_before", None):
            f.write(f"\n// IR before the failing pass ({err.pass_name}):\n{err.ir_before}\n")
    summary = str(err).splitlines()[0] if str(err) else type(err).__name__
    where = f"{err.location}: " if getattr(err, "location", None) else ""
    print(f"{where}internal compiler error: {summary}", file=sys.stderr)
    print(f"kernc: this is a bug in kernc; the full report was written to {path}", file=sys.stderr)
    return EXIT_ICE


def _stderr():
    """``sys.stderr``, or a sink when the process was started with stderr closed (``2>&-``)."""
    return sys.stderr if sys.stderr is not None else open(os.devnull, "w")


def _error(text: str) -> None:
    """Print a message to stderr. A file name that is not UTF-8 (surrogate escapes from
    ``os.fsdecode``) shows its bad bytes as ``\\xNN``, whatever stderr's encoding and error handler."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if sys.stderr is not None:
        print(text, file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``kernc`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:  # a name or text the stream cannot encode (an ASCII locale) is escaped, not an error
        sys.stdout.reconfigure(errors="backslashreplace")
    except (AttributeError, ValueError, OSError):  # not a TextIOWrapper, or closed
        pass
    ns = build_parser().parse_args(argv)
    from kernc.support.errors import CompileError, InternalCompilerError, KerncError

    try:
        return COMMANDS[ns.command](ns)
    except InternalCompilerError as err:
        return _report_ice(err, argv)
    except CompileError as err:  # located diagnostics: `file:line:col: error: ...`
        located = any(d.location is not None for d in err.diagnostics)
        _error(str(err) if located else f"kernc: {err}")
        return EXIT_USER
    except BrokenPipeError:  # `kernc ... | head`: the reader is gone; nothing to report to it
        quiet_stdout()
        return EXIT_USER
    except OSError as err:  # a file: "cannot read 'x.kern': No such file or directory", not "[Errno 2] ..."
        _error(f"kernc: error: {_os_error_text(err)}")
        return EXIT_USER
    except (KerncError, ValueError) as err:  # no source location (launch, run time)
        _error(f"kernc: error: {err}")
        return EXIT_USER
    except KeyboardInterrupt:
        return 130
    except Exception as err:  # anything else is a kernc bug
        return _report_ice(err, argv)


#: The subcommands that do one bounded piece of work and end the process: their cyclic garbage is
#: left to the exit (:func:`console_main`).
ONE_SHOT_COMMANDS = frozenset({"compile", "check", "opt", "layout", "grad", "jvp"})


def collects_cycles(argv: list[str]) -> bool:
    """Whether the process of ``kernc ARGV`` keeps Python's cyclic garbage collector on: all but
    the :data:`ONE_SHOT_COMMANDS` (``run`` and ``bench`` can run long and make cycles as they go).

    A cold ``kernc compile`` of saxpy allocates enough objects (importing some 280 modules, the MLIR
    bindings' among them, and compiling) for about 100 collections, which found some 800 cyclic
    objects and took 19 ms of the run (34 ms for conv2d_fwd; ``gc.callbacks``, load average 4):
    memory freed only at an exit that comes a moment later (the peak RSS is the same, 156 MB).
    Objects without cycles are still freed at once (reference counting)."""
    return not (argv[:1] and argv[0] in ONE_SHOT_COMMANDS)


def console_main() -> None:
    """The ``kernc`` console script and ``python -m kernc``: :func:`main`, then a quick exit.

    A one-shot command runs with the cyclic garbage collector off (:func:`collects_cycles`).

    Finalizing the interpreter tears down the MLIR bindings (context, dialect registries, shared
    libraries): about 25 ms of a 200 ms cold ``kernc compile`` that has nothing left to do, every
    output file being complete (written atomically) by then. So once the standard streams are
    flushed the process ends with ``os._exit``. ``kernc bench`` (whose CPU emulator removes its
    work folder at exit), a process under a tracer or profiler (coverage, cProfile: they write
    their results at exit), a usage error and a stream that cannot be flushed (a closed pipe) take
    the normal exit."""
    argv = sys.argv[1:]
    if not collects_cycles(argv):
        gc.disable()
    code = main(argv)
    if argv[:1] == ["bench"] or sys.gettrace() is not None or sys.getprofile() is not None \
            or "coverage" in sys.modules:
        sys.exit(code)
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # (None: the process was started with that stream closed)
                stream.flush()
    except BrokenPipeError:  # `kernc ... | head` whose reader left before the last lines
        quiet_stdout()
        os._exit(code or EXIT_USER)
    except (OSError, ValueError):  # a closed stream: let Python's own exit report it
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    console_main()
