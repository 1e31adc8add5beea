"""The ``kernc`` command line: exit codes, located diagnostics, outputs, atomic writes."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import EXAMPLES
from kernc.cli import main

SAXPY = os.path.join(EXAMPLES, "saxpy.kern")


def kernc(*args, cwd=None):
    """Run the real console entry point in a subprocess (what users run)."""
    return subprocess.run([sys.executable, "-m", "kernc", *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_compile_to_stdout_and_file(tmp_path, capsys):
    assert main(["compile", SAXPY]) == 0
    assert ".visible .entry saxpy(" in capsys.readouterr().out
    out = tmp_path / "saxpy.ptx"
    assert main(["compile", SAXPY, "-o", str(out), "--arch", "sm_80"]) == 0
    assert ".target sm_80" in out.read_text()


@pytest.mark.parametrize("stage,marker", [
    ("ast", "Kernel"), ("kern", '"kern.read"'), ("gpu", "gpu.func @saxpy"),
    ("llvm", "llvm.func @saxpy"), ("ptx", ".entry saxpy"),
])
def test_emit_stages(stage, marker, capsys):
    assert main(["compile", SAXPY, "--emit", stage]) == 0
    assert marker in capsys.readouterr().out


def test_syntax_error_is_located_and_no_output_written(tmp_path):
    src = tmp_path / "bad.kern"
    src.write_text("kernel k(x: f32[n] read, y: f32[n] write) over n {\n    y = x\n}\n")
    out = tmp_path / "bad.ptx"
    proc = kernc("compile", str(src), "-o", str(out))
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{src}:2:10: error: expected ';'")
    assert "    y = x\n" in proc.stderr and "\n         ^" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_type_error_is_located(tmp_path):
    src = tmp_path / "bad.kern"
    src.write_text("kernel k(a: i32, x: f32[n] read, y: f32[n] add) over n {\n    y += a * x;\n}\n")
    proc = kernc("compile", str(src))
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"{src}:2:12: error: cannot mix 'i32' and 'f32'")
    assert "Traceback" not in proc.stderr


def test_existing_output_survives_a_failed_compile(tmp_path, capsys):
    src = tmp_path / "bad.kern"
    src.write_text("kernel k(x: f32[n] read) over n { let y = x + 1; }\nkernel k2( {")
    out = tmp_path / "keep.ptx"
    out.write_text("previous contents")
    assert main(["compile", str(src), "-o", str(out)]) == 1
    assert out.read_text() == "previous contents"
    assert list(tmp_path.iterdir()) == [src, out] or sorted(tmp_path.iterdir()) == sorted([src, out])


def test_usage_error_exit_code():
    proc = kernc("compile")
    assert proc.returncode == 2


def test_check(capsys):
    assert main(["check", SAXPY]) == 0
    assert "ok" in capsys.readouterr().out


def test_run_writes_outputs_and_stats(tmp_path, capsys):
    x = np.arange(100, dtype=np.float32)
    y = np.ones(100, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    stats = tmp_path / "stats.json"
    rc = main(["run", SAXPY, "--kernel", "saxpy", "--device", "cpu", "--input", "a=0.5",
               "--input", f"x=@{tmp_path / 'x.npy'}", "--input", f"y=@{tmp_path / 'y.npy'}",
               "--output-dir", str(tmp_path / "out"), "--stats-json", str(stats)])
    assert rc == 0, capsys.readouterr().err
    got = np.load(tmp_path / "out" / "y.npy")
    assert np.array_equal(got, y + np.float32(0.5) * x)
    data = json.loads(stats.read_text())
    for key in ("global_load_requests", "global_load_sectors", "global_store_requests",
                "global_store_sectors", "global_atomics", "shared_requests", "shared_bank_conflicts"):
        assert key in data
    assert data["global_load_requests"] == 2 * 4  # two loads, 4 warps (100 threads -> 4 warps)
    assert data["staged"] is None  # saxpy stages nothing
    assert "ran saxpy on cpu: P=100" in capsys.readouterr().out


def test_run_allocates_missing_outputs(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.arange(5, dtype=np.float32))
    rc = main(["run", SAXPY, "--input", "a=2", "--input", f"x=@{tmp_path / 'x.npy'}",
               "--output-dir", str(tmp_path)])
    assert rc == 0
    assert np.array_equal(np.load(tmp_path / "y.npy"), 2 * np.arange(5, dtype=np.float32))


@pytest.mark.parametrize("args,message", [
    (["--input", "a=2"], "missing --input x"),
    (["--input", "a=2", "--input", "x=@/nonexistent.npy"], "cannot read"),
    (["--input", "b=2"], "has no parameter 'b'"),
    (["--input", "a=abc"], "neither a number"),
    (["--kernel", "nope"], "no kernel named 'nope'"),
    (["--input", "a=2", "--input", "a=3"], "--input a is given twice"),  # the second silently won
])
def test_run_bad_inputs(args, message, capsys):
    assert main(["run", SAXPY, *args]) == 1
    assert message in capsys.readouterr().err


def test_run_dtype_mismatch_names_parameter(tmp_path, capsys):
    np.save(tmp_path / "x.npy", np.arange(5, dtype=np.float64))
    assert main(["run", SAXPY, "--input", "a=2", "--input", f"x=@{tmp_path / 'x.npy'}"]) == 1
    err = capsys.readouterr().err
    assert "argument 'x'" in err and "float32" in err and "float64" in err


def test_opt_runs_kern_passes(tmp_path, capsys):
    assert main(["compile", SAXPY, "--emit", "kern", "-o", str(tmp_path / "k.mlir")]) == 0
    assert main(["opt", str(tmp_path / "k.mlir"), "--passes", "kern-lower-accessors,kern-lower-layouts,canonicalize"]) == 0
    out = capsys.readouterr().out
    assert "memref.load" in out and "kern.read" not in out


def test_opt_bad_pipeline(tmp_path, capsys):
    assert main(["compile", SAXPY, "--emit", "kern", "-o", str(tmp_path / "k.mlir")]) == 0
    assert main(["opt", str(tmp_path / "k.mlir"), "--passes", "kern-lower-accessors{"]) == 1
    assert "bad pass pipeline" in capsys.readouterr().err


def test_internal_error_exit_code_and_report(monkeypatch, tmp_path, capsys):
    import kernc.compiler as compiler

    def boom(*a, **k):
        raise RuntimeError("synthetic failure")

    monkeypatch.setenv("KERNC_ALWAYS_COMPILE", "1")  # a cache hit would never run the pipeline
    monkeypatch.setattr(compiler.pipeline, "kern_to_gpu", boom)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    assert main(["compile", SAXPY]) == 3
    err = capsys.readouterr().err
    assert "internal compiler error: synthetic failure" in err
    path = err.strip().split("written to ")[-1]
    assert os.path.exists(path) and "Traceback" in open(path).read()


def test_internal_error_report_names_pass_source_location_and_ir(monkeypatch, tmp_path, capsys):
    """A pass that leaves invalid IR is reported at the user's source line, with the failing pass,
    the pipeline and the IR before the pass in the report."""
    from kernc.support.mlir import ir
    from kernc.passes.lower_layouts import LowerLayouts

    def corrupt(self, ctx, module):
        from kernc.dialect import kern
        from kernc.passes.base import walk_ops

        op = walk_ops(module, {"arith.mulf"})[0]
        with ir.InsertionPoint(op), op.location:
            kern.layout_apply([], [], "(not a layout", [])

    monkeypatch.setenv("KERNC_ALWAYS_COMPILE", "1")
    monkeypatch.setattr(LowerLayouts, "apply", corrupt)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    assert main(["compile", SAXPY, "--verify-each"]) == 3
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith(f"{SAXPY}:3:") and "internal compiler error: pass 'kern-lower-layouts' failed" in first
    report = open(err.strip().split("written to ")[-1]).read()
    assert "failing pass: kern-lower-layouts" in report
    assert ("pipeline: kern-verify, kern-fold-layouts, kern-to-gpu, kern-map-groups, kern-lower-accessors, "
            "kern-lower-views, kern-lower-layouts") in report
    assert "// IR before the failing pass (kern-lower-layouts):" in report and "kern.layout_apply" in report


def test_run_builds_shared_indices_tables_itself(tmp_path, capsys):
    """Regression: `kernc run` asked for the hidden shared_indices tables (`--input src.unique=...`)."""
    src = tmp_path / "g.kern"
    src.write_text("kernel g(x: f32[m] read shared(i), i: u32[n] read, y: f32[n] write) over n { y = 2.0 * x; }\n")
    np.save(tmp_path / "x.npy", np.arange(5, dtype=np.float32))
    np.save(tmp_path / "i.npy", np.array([4, 4, 1, 0, 4], np.uint32))
    rc = main(["run", str(src), "--input", f"x=@{tmp_path / 'x.npy'}", "--input", f"i=@{tmp_path / 'i.npy'}",
               "--output-dir", str(tmp_path / "o")])
    assert rc == 0, capsys.readouterr().err
    assert np.array_equal(np.load(tmp_path / "o" / "y.npy"), [8, 8, 2, 0, 8])


def test_run_reports_the_shared_choice_and_always_shared_keeps_staging(tmp_path, capsys):
    """`kernc run` says whether shared(I) ran staged or as indexed(I) (summary line and
    --stats-json "shared"); with distinct indices (no reuse) it runs as indexed, unless
    --always-shared."""
    src = tmp_path / "g.kern"
    src.write_text("kernel g(x: f32[m] read shared(i), i: u32[n] read, y: f32[n] write) over n { y = x; }\n")
    np.save(tmp_path / "x.npy", np.arange(64, dtype=np.float32))
    np.save(tmp_path / "i.npy", np.arange(64, dtype=np.uint32)[::-1].copy())
    for extra, shared in (([], False), (["--always-shared"], True)):
        stats = tmp_path / "s.json"
        rc = main(["run", str(src), "--input", f"x=@{tmp_path / 'x.npy'}", "--input", f"i=@{tmp_path / 'i.npy'}",
                   "--output-dir", str(tmp_path / "o"), "--stats-json", str(stats), *extra])
        out = capsys.readouterr().out
        assert rc == 0
        assert np.array_equal(np.load(tmp_path / "o" / "y.npy"), np.arange(64)[::-1])
        assert json.loads(stats.read_text())["shared"] is shared
        assert ("ran as indexed(I)/atomic(I)" in out) is not shared
        assert ("staged through workgroup memory" in out) is shared


def test_run_reads_bf16_npy_files(tmp_path, capsys):
    """np.save writes bfloat16 arrays as raw 2-byte records: kernc run used to reject them, telling
    the user to call .astype(np.bfloat16), which numpy does not have."""
    import ml_dtypes

    src = tmp_path / "b.kern"
    src.write_text("kernel k(x: bf16[n] read, y: bf16[n] write) over n { y = x * 2.0; }\n")
    np.save(tmp_path / "x.npy", np.array([1.5, -3, 0.25], ml_dtypes.bfloat16))
    out = tmp_path / "out"
    assert main(["run", str(src), "--input", f"x=@{tmp_path / 'x.npy'}", "--output-dir", str(out)]) == 0
    y = np.load(out / "y.npy").view(ml_dtypes.bfloat16)
    assert y.astype(np.float32).tolist() == [3.0, -6.0, 0.5]
    np.save(tmp_path / "f.npy", np.array([1.5], np.float32))
    assert main(["run", str(src), "--input", f"x=@{tmp_path / 'f.npy'}", "--output-dir", str(out)]) == 1
    assert "astype(ml_dtypes.bfloat16)" in capsys.readouterr().err


def test_run_size_conflict_names_the_size_and_the_input(tmp_path, capsys):
    """--size n=3 against a 10-element --input x used to be blamed on the output 'y'."""
    np.save(tmp_path / "x.npy", np.ones(10, np.float32))
    args = ["run", os.path.join(EXAMPLES, "saxpy.kern"), "--input", "a=2", "--input", f"x=@{tmp_path / 'x.npy'}",
            "--size", "n=3", "--output-dir", str(tmp_path / "o")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "--size n=3 disagrees with --input x" in err and "n = 10" in err and "'y'" not in err


def test_check_agrees_with_compile_on_a_file_without_kernels(tmp_path, capsys):
    """`kernc check` said ok for a file `kernc compile` rejects."""
    src = tmp_path / "lib.kern"
    src.write_text("layout L = (4, 8):(8, 1);\n")
    assert main(["check", str(src)]) == 1
    assert main(["compile", str(src)]) == 1
    err = capsys.readouterr().err
    assert err.count("defines no kernel to compile") == 2


def test_stats_json_on_stdout_is_valid_json(tmp_path, capsys):
    """``--stats-json -``: stdout is the JSON alone (the summary line went to stdout before it)."""
    np.save(tmp_path / "x.npy", np.arange(40, dtype=np.float32))
    rc = main(["run", SAXPY, "--device", "cpu", "--input", "a=2", "--input", f"x=@{tmp_path / 'x.npy'}",
               "--output-dir", str(tmp_path / "out"), "--stats", "--stats-json", "-"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert json.loads(out)["global_load_requests"] == 2 * 2
    assert "ran saxpy on cpu: P=40" in err and "global_load_requests:" in err


@pytest.mark.parametrize("cmd", [["compile", "{src}", "-o", "{out}"],
                                 ["compile", "{src}", "--emit", "kern", "-o", "{out}"]])
@pytest.mark.parametrize("link", [False, True])
def test_output_that_is_the_input_is_refused_and_the_source_kept(tmp_path, capsys, cmd, link):
    """``kernc compile a.kern -o a.kern`` replaced the source with PTX (exit 0)."""
    src = tmp_path / "a.kern"
    text = open(SAXPY).read()
    src.write_text(text)
    out = src
    if link:
        out = tmp_path / "link.kern"
        out.symlink_to(src)
    rc = main([a.format(src=src, out=out) for a in cmd])
    assert rc == 1
    assert "is the input file" in capsys.readouterr().err
    assert src.read_text() == text


def test_opt_refuses_to_overwrite_its_input(tmp_path, capsys):
    ir = tmp_path / "m.mlir"
    ir.write_text("module {\n}\n")
    assert main(["opt", str(ir), "--passes", "canonicalize", "-o", str(ir)]) == 1
    assert "is the input file" in capsys.readouterr().err and ir.read_text() == "module {\n}\n"


def test_launch_errors_carry_the_kernc_error_prefix(capsys):
    """Launch and run-time errors have no source location; they were printed with no prefix at all,
    unlike every other CLI error (``kernc: error: ...``)."""
    rc = main(["run", SAXPY, "--device", "cpu", "--input", "a=2"])
    assert rc == 1
    assert capsys.readouterr().err.startswith("kernc: error: missing --input x")


def test_output_through_a_symlink_updates_its_target(tmp_path, capsys):
    """``-o link`` replaced the symlink itself with a regular file; it now writes the target,
    atomically, and the link stays."""
    target = tmp_path / "real.ptx"
    target.write_text("old\n")
    link = tmp_path / "link.ptx"
    link.symlink_to(target)
    assert main(["compile", SAXPY, "-o", str(link)]) == 0, capsys.readouterr().err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert ".entry saxpy" in target.read_text()


def test_output_to_a_fifo_is_written_into_not_replaced(tmp_path, capsys):
    """``-o`` renamed its temporary file over whatever the path was: a FIFO (or ``/dev/null``, as
    root) became a regular file. A path that is not a regular file is now written directly."""
    import stat
    import threading

    fifo = tmp_path / "out.ptx"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    assert main(["compile", SAXPY, "-o", str(fifo)]) == 0, capsys.readouterr().err
    reader.join(timeout=60)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got and ".entry saxpy" in got[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.ptx"]  # no temporary file left


def test_output_to_dev_stdout_through_a_pipe():
    """``-o /dev/stdout`` with stdout a pipe failed ('No such file or directory': the temporary
    file went next to the pipe's /proc path)."""
    proc = subprocess.run([sys.executable, "-m", "kernc", "compile", SAXPY, "-o", "/dev/stdout"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert ".entry saxpy" in proc.stdout


@pytest.mark.parametrize("argv, message", [
    (["compile", SAXPY, "--kernel", "nosuch"], "no kernel named 'nosuch' in " + SAXPY + " (it has: saxpy)"),
    (["layout", "(4,2):(x)"], "layout '(4,2):(x)'"),
    (["opt", SAXPY, "--passes", "nosuch{"], "bad pass pipeline"),
])
def test_unlocated_compile_errors_carry_the_kernc_error_prefix(argv, message, capsys):
    """Compile errors without a source location printed as a bare ``error: ...``; like every other
    unlocated CLI error they now read ``kernc: error: ...``."""
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("kernc: error: ") and message in err, err


def test_remarks_say_why_nothing_is_staged(tmp_path, capsys):
    """``--remarks`` printed nothing at all with ``--no-coalesce`` or for a 1-D kernel."""
    transpose = os.path.join(EXAMPLES, "transpose.kern")
    out = str(tmp_path / "t.ptx")
    assert main(["compile", transpose, "--remarks", "--no-coalesce", "-o", out]) == 0
    err = capsys.readouterr().err
    assert "kern-coalesce-views is off (--no-coalesce)" in err and "staging" not in err, err
    assert main(["compile", SAXPY, "--remarks", "-o", out]) == 0
    assert "nothing to stage: kern-coalesce-views stages the view accesses of N-D problems" in capsys.readouterr().err
    assert main(["compile", transpose, "--remarks", "-o", out]) == 0
    err = capsys.readouterr().err
    assert "staging 'b' through a 32x33 workgroup tile, 4 elements per thread" in err and "nothing to stage" not in err, err


def test_run_a_kernel_with_an_argument_named_device(tmp_path, capsys):
    """``kernc run --input device=...`` was an internal compiler error ('got multiple values for
    keyword argument device')."""
    src = tmp_path / "dev.kern"
    src.write_text("kernel k(device: f32[n] read, y: f32[n] write) over n { y = device * 2.0; }\n")
    np.save(tmp_path / "x.npy", np.arange(4, dtype=np.float32))
    rc = main(["run", str(src), "--kernel", "k", "--input", f"device=@{tmp_path / 'x.npy'}",
               "--output-dir", str(tmp_path / "out")])
    assert rc == 0, capsys.readouterr().err
    assert np.load(tmp_path / "out" / "y.npy").tolist() == [0.0, 2.0, 4.0, 6.0]


@pytest.mark.parametrize("edit, message", [
    (lambda t: 'module {\n  "kern.read"() : () -> ()\n}\n', "'kern.read' op requires attribute 'accessor'"),
    (lambda t: t.replace('accessor = "sequential"', "accessor = 5 : i32", 1),
     "'kern.read' op has an attribute of the wrong kind"),
    (lambda t: t.replace('kern.signature = "{', 'kern.signature = "{x', 1), "@saxpy has a bad kern.signature attribute"),
    (lambda t: t.replace('\\22params\\22:', '\\22parms\\22:', 1), "@saxpy has a bad kern.signature attribute"),
    (lambda t: t.replace('\\22block\\22:256', '\\22block\\22:0', 1), "'block' must be a power of two"),
    (lambda t: t.replace('\\22block\\22:256', '\\22block\\22:\\22x\\22', 1), "'block' must be a power of two"),
    (lambda t: t.replace('\\22block\\22:256', '\\22block\\22:100', 1), "'block' must be a power of two"),
    (lambda t: t.replace('\\22attributes\\22:[]', '\\22attributes\\22:3', 1), "'attributes' must be a list"),
    (lambda t: t.replace('\\22sizes\\22:[\\22n\\22]', '\\22sizes\\22:[]', 1), "'problem_size' 'n' names no size"),
    (lambda t: t.replace('\\22sizes\\22:[\\22n\\22]', '\\22sizes\\22:1.5', 1), "'sizes' must be a list"),
    (lambda t: t.replace('\\22problem_size\\22:\\22n\\22', '\\22problem_size\\22:\\22\\22', 1), "'problem_size'"),
    (lambda t: t.replace('\\22name\\22:\\22x\\22', '\\22name\\22:\\22n\\22', 1), "argument names repeat"),
    # found by a trial: an unhashable dtype or kind was a TypeError (exit 3)
    (lambda t: t.replace('\\22dtype\\22:\\22f32\\22', '\\22dtype\\22:[]', 1), "unknown dtype []"),
    (lambda t: t.replace('\\22kind\\22:\\22scalar\\22', '\\22kind\\22:{}', 1), "'kind' must be one of"),
])
def test_opt_on_malformed_kern_ir_is_a_user_error(tmp_path, capsys, edit, message):
    """Hand-edited IR given to ``kernc opt`` (an op without its attributes, an attribute of the
    wrong kind, a corrupt kern.signature) was an internal compiler error from a Python KeyError in
    the kern verifiers or a JSON error in a pass; it is a located user error (exit 1)."""
    assert main(["compile", SAXPY, "--emit", "kern", "-o", str(tmp_path / "k.mlir")]) == 0
    bad = tmp_path / "bad.mlir"
    bad.write_text(edit((tmp_path / "k.mlir").read_text()))
    rc = main(["opt", str(bad), "--passes", "kern-to-gpu", "-o", str(tmp_path / "out.mlir")])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert err.startswith("kernc: error: ") and message in err and "internal compiler error" not in err
    assert not (tmp_path / "out.mlir").exists()


def test_file_errors_name_the_file_without_errno_text(tmp_path, capsys):
    """OSErrors printed Python's '[Errno 2] No such file or directory: ...'."""
    assert main(["compile", str(tmp_path / "nope.kern")]) == 1
    assert capsys.readouterr().err == f"kernc: error: cannot read '{tmp_path / 'nope.kern'}': No such file or directory\n"
    assert main(["compile", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"kernc: error: cannot read '{tmp_path}': Is a directory\n"


@pytest.mark.parametrize("content, reason", [
    (b"kernel k() over n {}\n", "not a .npy file"),
    (b"", "the file is empty"),
    (None, "an array of Python objects"),
    (b"\x93NUMPY\x01\x00garbage", "a damaged .npy file"),
])
def test_run_input_that_is_not_an_npy_array(tmp_path, capsys, content, reason):
    path = tmp_path / "x.npy"
    if content is None:
        np.save(path, np.array([1, "a", None], dtype=object), allow_pickle=True)
    else:
        path.write_bytes(content)
    rc = main(["run", SAXPY, "--input", "a=2", "--input", f"x=@{path}", "--output-dir", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 1 and f"--input x: cannot read '{path}': {reason}" in err, err
    assert "allow_pickle" not in err and "Errno" not in err


def test_run_checks_its_output_paths_before_running(tmp_path, capsys):
    """A bad --stats-json folder failed after the .npy outputs were written; an --output-dir that is
    a file printed '[Errno 17] File exists'."""
    x = tmp_path / "x.npy"
    np.save(x, np.ones(4, np.float32))
    args = ["run", SAXPY, "--input", "a=2", "--input", f"x=@{x}", "--input", f"y=@{x}"]
    assert main([*args, "--output-dir", str(tmp_path / "o"), "--stats-json", str(tmp_path / "no" / "s.json")]) == 1
    assert "the folder" in capsys.readouterr().err and not (tmp_path / "o").exists()
    (tmp_path / "f").write_text("")
    assert main([*args, "--output-dir", str(tmp_path / "f")]) == 1
    assert capsys.readouterr().err == f"kernc: error: --output-dir '{tmp_path / 'f'}' exists and is not a folder\n"


@pytest.mark.parametrize("expr, first_line", [
    ("coalesce((2,4):(1,2))", "8:1"),
    ("blocked_product((2,2):(1,2), (3,4):(4,1))", "((2,3),(2,4)):((1,16),(2,4))"),
    ("composition((4,8):(8,1), (2,2):(1,2))", "(2,2):(8,16)"),
    ("(4,8):(8,1) o (2,2):(1,2)", "(2,2):(8,16)"),
])
def test_layout_accepts_algebra_expressions(capsys, expr, first_line):
    """``kernc layout`` took only literals ('coalesce((4,8):(8,1))': "expected ':' after the
    shape"); the language's layout algebra now evaluates there too."""
    assert main(["layout", expr]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.splitlines()[0] == first_line


@pytest.mark.parametrize("expr, message", [
    ("coalesce((4,8):(8,x))", "unknown name 'x'"),
    ("nosuch((4,8):(8,1))", "unknown layout or layout operation 'nosuch'"),
    ("(4,2):(x)", "are not congruent"),
])
def test_layout_expression_errors(capsys, expr, message):
    assert main(["layout", expr]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"kernc: error: layout '{expr}': ") and message in err and "__layout" not in err


def test_opt_on_a_signature_that_does_not_match_the_function(tmp_path, capsys):
    """A @deterministic shared_sum whose kern.signature lost a size symbol aborted the process
    (std::bad_alloc in the bindings: an argument looked up through the signature was not a memref);
    the signature is now checked against the function's arguments first."""
    src = tmp_path / "d.kern"
    src.write_text("@deterministic\nkernel k(v: f32[n] read, x: f32[m] add shared_sum(i), i: u32[n] read) over n "
                   "{ x += v; }\n")
    assert main(["compile", str(src), "--emit", "kern", "-o", str(tmp_path / "d.mlir")]) == 0
    text = (tmp_path / "d.mlir").read_text()
    bad = tmp_path / "e.mlir"
    bad.write_text(text.replace('\\22sizes\\22:[\\22n\\22,\\22m\\22]', '\\22sizes\\22:[\\22n\\22]', 1))
    assert bad.read_text() != text
    proc = subprocess.run([sys.executable, "-m", "kernc", "opt", str(bad), "--passes",
                           "kern-verify,kern-fold-layouts,kern-to-gpu,kern-lower-accessors"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "@k has a bad kern.signature attribute: the signature lists 8 arguments, the function has 9" in proc.stderr


def test_opt_accessor_outside_the_guard_is_a_located_error(tmp_path, capsys):
    """A block-wide read moved in front of the guard (hand-edited gpu-stage IR) was an internal
    compiler error in kern-lower-accessors (its output did not verify)."""
    src = tmp_path / "u.kern"
    src.write_text("kernel k(x: f32[m] read unique, y: f32[n] write) over n { y = x; }\n")
    assert main(["compile", str(src), "--emit", "kern", "-o", str(tmp_path / "u.mlir")]) == 0
    assert main(["opt", str(tmp_path / "u.mlir"), "--passes", "kern-to-gpu", "-o", str(tmp_path / "mid.mlir")]) == 0
    lines = (tmp_path / "mid.mlir").read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip().startswith("scf.if"))
    assert '"kern.read"' in lines[i + 1]
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    (tmp_path / "moved.mlir").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["opt", str(tmp_path / "moved.mlir"), "--passes", "kern-lower-accessors"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{tmp_path / 'moved.mlir'}:{i + 1}:") and "must be inside the kernel body" in err, err


def _npy_with_header(path, header: bytes):
    """A .npy file (format 1.0) of 8 float32 ones whose header text is ``header``."""
    body = np.ones(8, np.float32).tobytes()
    header = header.ljust(118) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + body)


@pytest.mark.parametrize("header, reason", [
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (8,", "a damaged .npy file"),
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (10**30,), }", "a damaged .npy file"),
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (-8,), }", "a damaged .npy file"),
    # 400 GB: numpy cannot allocate it (or, where memory is overcommitted, reads 8 of its elements)
    (b"{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }",
     "(its header declares an array too large|a damaged .npy file)"),
])
def test_run_input_with_a_damaged_npy_header(tmp_path, capsys, header, reason):
    """A header with a syntax error (tokenize.TokenError) or a huge shape (MemoryError) was an
    internal compiler error; numpy's wording for others named Python internals."""
    bad = tmp_path / "bad.npy"
    _npy_with_header(bad, header)
    rc = main(["run", SAXPY, "--input", "a=2", "--input", f"x=@{bad}", "--output-dir", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 1 and re.search(re.escape(f"--input x: cannot read '{bad}': ") + reason, err), err
    assert "internal compiler error" not in err and "<ast." not in err and not list(tmp_path.glob("o/*"))


def test_run_never_overwrites_its_inputs_or_outputs_with_stats(tmp_path, capsys):
    """--stats-json naming the source, an --input or an output file replaced it with JSON (exit 0);
    an output path that is a folder failed after the other outputs were written."""
    src = tmp_path / "two.kern"
    text = "kernel two(x: f32[n] read, a: f32[n] write, b: f32[n] write) over n { a = x * 2.0; b = x + 1.0; }\n"
    src.write_text(text)
    x = tmp_path / "x.npy"
    np.save(x, np.ones(4, np.float32))
    run = ["run", str(src), "--input", f"x=@{x}", "--output-dir", str(tmp_path / "o")]
    for target, message in ((src, "is an input of the run"), (x, "is an input of the run"),
                            (tmp_path / "o" / "a.npy", "is the output file")):
        (tmp_path / "o").mkdir(exist_ok=True)
        assert main([*run, "--stats-json", str(target)]) == 1
        assert message in capsys.readouterr().err
    assert src.read_text() == text and np.load(x).tolist() == [1.0] * 4 and not list((tmp_path / "o").iterdir())
    (tmp_path / "o" / "b.npy").mkdir()
    assert main(run) == 1
    assert "cannot write" in capsys.readouterr().err and not (tmp_path / "o" / "a.npy").exists()
    link = tmp_path / "sl"
    link.symlink_to(tmp_path / "nowhere" / "s.json")
    assert main([*run[:-1], str(tmp_path / "o2"), "--stats-json", str(link)]) == 1
    assert "does not exist" in capsys.readouterr().err and not (tmp_path / "o2").exists()


def test_output_write_is_refused_where_open_would_be(tmp_path, capsys, monkeypatch):
    """A rename replaced files open(path, 'w') may not write (read-only for the user) and symlink
    loops; both are now refused like open() would."""
    loop = tmp_path / "l4"
    loop.symlink_to(loop)
    assert main(["compile", SAXPY, "-o", str(loop)]) == 1
    assert "Too many levels of symbolic links" in capsys.readouterr().err and loop.is_symlink()
    ro = tmp_path / "ro.ptx"
    ro.write_text("keep\n")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, *a, **k: False if str(p) == str(ro) else real_access(p, mode, *a, **k))
    assert main(["compile", SAXPY, "-o", str(ro)]) == 1
    assert "Permission denied" in capsys.readouterr().err and ro.read_text() == "keep\n"


def test_layout_swizzle_errors_and_svg_to_stdout(capsys):
    assert main(["layout", "Sw<3,3,1> o (8,64):(64,1)"]) == 1
    assert "|S| must be at least B" in capsys.readouterr().err
    assert main(["layout", "4:1", "--svg", "-"]) == 0
    assert capsys.readouterr().out.startswith("<svg")


def test_opt_reads_a_fifo_once(tmp_path, capsys):
    """kernc opt read its input, then parsed the file again by name: a FIFO was empty the second
    time and an empty module came out with exit 0."""
    import threading

    assert main(["compile", SAXPY, "--emit", "gpu", "-o", str(tmp_path / "g.mlir")]) == 0
    text = (tmp_path / "g.mlir").read_text()
    fifo = tmp_path / "in.mlir"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text(text), daemon=True)
    writer.start()
    # in a subprocess with a timeout: the bug's second open of the FIFO blocks forever
    proc = subprocess.run([sys.executable, "-m", "kernc", "opt", str(fifo), "--passes", "canonicalize"],
                          capture_output=True, text=True, timeout=120)
    writer.join(timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "gpu.func @saxpy" in proc.stdout


def test_opt_accepts_every_signature_the_compiler_writes(tmp_path, capsys):
    """The signature check refused an integer scalar problem size (`over c` with c: i32) and the
    !llvm.ptr buffers after kern-bare-ptr-abi, both written by the compiler itself."""
    src = tmp_path / "c.kern"
    src.write_text("kernel k(c: i32, y: f32[m] write) over c { y = 1.0; }\n")
    assert main(["compile", str(src), "--emit", "kern", "-o", str(tmp_path / "k.mlir")]) == 0
    assert main(["opt", str(tmp_path / "k.mlir"), "--passes", "kern-to-gpu,kern-lower-accessors"]) == 0, \
        capsys.readouterr().err
    rc = main(["compile", SAXPY, "--emit", "llvm", "--print-ir-after-all", "-o", str(tmp_path / "l.mlir")])
    assert rc == 0
    dumps = capsys.readouterr().err.split("// -----// IR Dump After ")
    after_abi = next(d for d in dumps if d.startswith("kern-bare-ptr-abi"))
    (tmp_path / "abi.mlir").write_text(after_abi.split("\n", 1)[1])
    assert main(["opt", str(tmp_path / "abi.mlir"), "--passes", "kern-lower-fma"]) == 0, capsys.readouterr().err


def test_run_stats_json_inside_the_output_dir_it_creates(tmp_path, capsys):
    x = tmp_path / "x.npy"
    np.save(x, np.ones(4, np.float32))
    out = tmp_path / "out"
    assert main(["run", SAXPY, "--input", "a=2", "--input", f"x=@{x}", "--input", f"y=@{x}",
                 "--output-dir", str(out), "--stats-json", str(out / "stats.json")]) == 0, capsys.readouterr().err
    assert "global_load_requests" in json.loads((out / "stats.json").read_text()) and (out / "y.npy").exists()


def test_run_output_that_cannot_be_written_fails_before_the_run(tmp_path, capsys):
    src = tmp_path / "two.kern"
    src.write_text("kernel two(x: f32[n] read, a: f32[n] write, b: f32[n] write) over n { a = x; b = x; }\n")
    x = tmp_path / "x.npy"
    np.save(x, np.ones(4, np.float32))
    out = tmp_path / "o"
    out.mkdir()
    (out / "b.npy").symlink_to("b.npy")  # a symlink loop
    assert main(["run", str(src), "--input", f"x=@{x}", "--output-dir", str(out)]) == 1
    assert "Too many levels of symbolic links" in capsys.readouterr().err
    assert not (out / "a.npy").exists()


def test_output_to_dev_stdout_redirected_to_a_file_appends():
    """-o /dev/stdout with stdout a file (a shell's `>> f`) renamed a temporary file over it."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "f")
        with open(f, "w") as fh:
            fh.write("HEADER\n")
        with open(f, "a") as fh:
            proc = subprocess.run([sys.executable, "-m", "kernc", "compile", SAXPY, "-o", "/dev/stdout"],
                                  stdout=fh, stderr=subprocess.PIPE, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        text = open(f).read()
        assert text.startswith("HEADER\n") and ".entry saxpy" in text


def test_opt_reads_ir_with_a_byte_order_mark(tmp_path, capsys):
    assert main(["compile", SAXPY, "--emit", "gpu", "-o", str(tmp_path / "g.mlir")]) == 0
    bom = tmp_path / "bom.mlir"
    bom.write_bytes(b"\xef\xbb\xbf" + (tmp_path / "g.mlir").read_bytes())
    capsys.readouterr()
    assert main(["opt", str(bom), "--passes", "canonicalize"]) == 0, capsys.readouterr().err
    assert "gpu.func @saxpy" in capsys.readouterr().out


def test_run_no_coalesce_compares_the_naive_transpose(tmp_path, capsys):
    """``kernc run --no-coalesce`` runs the transpose without the staging pass: the same result,
    stores at 32 sectors per request instead of 4, no shared memory."""
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", np.zeros((64, 64), np.float32))
    runs = {}
    for flag in ([], ["--no-coalesce"]):
        out, stats = tmp_path / f"out{len(flag)}", tmp_path / f"stats{len(flag)}.json"
        rc = main(["run", os.path.join(EXAMPLES, "transpose.kern"), "--input", f"a=@{tmp_path / 'a.npy'}",
                   "--input", f"b=@{tmp_path / 'b.npy'}", "--output-dir", str(out), "--stats-json", str(stats),
                   *flag])
        assert rc == 0, capsys.readouterr().err
        assert np.array_equal(np.load(out / "b.npy"), a.T)
        runs[bool(flag)] = json.loads(stats.read_text())
    staged, naive = runs[False], runs[True]
    assert staged["global_store_sectors"] == 4 * staged["global_store_requests"] and staged["shared_requests"] > 0
    assert naive["global_store_sectors"] == 32 * naive["global_store_requests"] and naive["shared_requests"] == 0


def test_a_non_contiguous_input_is_not_told_about_results(tmp_path):
    """The contiguity error of a read-only buffer asks for a contiguous copy; only outputs add that
    results would go to the copy."""
    import kernc
    from kernc.support.errors import KerncLaunchError

    mod = kernc.compile("kernel k(x: f32[n] read, y: f32[n] write) over n { y = x; }")
    x, y = np.ones(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(KerncLaunchError) as err:
        mod.k(np.ones(16, np.float32)[::2], y)
    assert "argument 'x': the array is not C-contiguous" in str(err.value)
    assert "results" not in str(err.value)
    with pytest.raises(KerncLaunchError, match="so that results are written where you can see them"):
        mod.k(x, np.zeros(16, np.float32)[::2])


def test_time_passes_reports_every_step_of_a_real_compile(tmp_path, monkeypatch, capsys):
    """--time-passes bypasses the compile cache (a hit would time nothing), leaves the output as it
    is, and lists the start-up, the frontend and every pass of the pipeline in order under their
    stages, then the time no step accounts for and a total that is the sum of all rows above."""
    from kernc.passes import pipeline
    from kernc.compiler import CompileOptions

    monkeypatch.setenv("KERNC_CACHE_DIR", str(tmp_path / "cache"))
    plain, timed = tmp_path / "plain.ptx", tmp_path / "timed.ptx"
    assert main(["compile", SAXPY, "-o", str(plain)]) == 0  # fills the cache
    capsys.readouterr()
    assert main(["compile", SAXPY, "--time-passes", "-o", str(timed)]) == 0
    err = capsys.readouterr().err
    assert timed.read_text() == plain.read_text()
    rows = [line.split(None, 2) for line in err.splitlines()[3:]]  # after the title and the header
    labels = [label for _, _, label in rows]
    stages = [label for label in labels if label.startswith("stage ")]
    assert stages == ["stage startup", "stage kern", "stage gpu", "stage llvm (index 32)", "stage ptx (index 32)"]
    steps = [label for label in labels if not label.startswith(("stage ", "other", "total"))]
    target = CompileOptions().target(libdevice=None)
    assert steps == (["import kernc.compiler", "MLIR context", "parser tables", "parse", "check", "lower"]
                     # saxpy is 1-D: no staging, no tiling, no tensor cores, no view atomics
                     + [p.name for p in pipeline.kern_to_gpu(coalesce=False, tile=False, tensor_cores=False,
                                                             privatize=False)]
                     + [p.name for p in pipeline.gpu_to_llvm(target)] + [p.name for p in pipeline.llvm_to_ptx()])
    assert labels[-2:] == ["other (printing IR, copying modules, the compile cache)", "total"]
    ms = [float(r[0]) for r in rows]
    step_rows = [m for m, label in zip(ms, labels) if not label.startswith(("stage ", "total"))]
    assert abs(ms[-1] - sum(step_rows)) < 0.01 * len(step_rows)  # each row is rounded to 1 us
    assert ms[labels.index("gpu-module-to-binary{format=isa}")] > 0


def test_opt_time_passes_lists_the_passes_it_ran(tmp_path, capsys):
    assert main(["compile", SAXPY, "--emit", "gpu", "-o", str(tmp_path / "s.mlir")]) == 0
    capsys.readouterr()
    assert main(["opt", str(tmp_path / "s.mlir"), "--passes", "kern-bare-ptr-abi,canonicalize", "--time-passes",
                 "-o", str(tmp_path / "o.mlir")]) == 0
    labels = [line.split(None, 2)[2] for line in capsys.readouterr().err.splitlines()[3:]]
    assert labels == ["stage passes", "kern-bare-ptr-abi", "canonicalize", "total (sum of the steps)"]
    assert "llvm.ptr" in (tmp_path / "o.mlir").read_text()


def test_file_names_that_are_not_utf8(tmp_path, capsys):
    """Found by a trial: a .kern file whose name is not UTF-8 (its bad bytes reach Python as
    surrogate escapes) crashed with a traceback: MLIR's locations refuse such strings, and the crash
    report then failed to write the command line."""
    import os

    src = os.fsdecode(os.path.join(os.fsencode(str(tmp_path)), b"\xff\xfe.kern"))
    with open(src, "w") as f:
        f.write(open(SAXPY).read())
    out = tmp_path / "o.ptx"
    assert main(["compile", src, "-o", str(out)]) == 0, capsys.readouterr().err
    assert ".entry saxpy" in out.read_text()
    gpu = os.fsdecode(os.path.join(os.fsencode(str(tmp_path)), b"g\xff.mlir"))
    assert main(["compile", src, "--emit", "gpu", "-o", gpu]) == 0
    assert main(["opt", gpu, "--passes", "kern-bare-ptr-abi", "-o", str(tmp_path / "o.mlir")]) == 0
    bad = os.fsdecode(os.path.join(os.fsencode(str(tmp_path)), b"bad\xff.kern"))
    with open(bad, "w") as f:
        f.write("kernel k(x: f32[n] read) over n { let y = x + z; }\n")
    capsys.readouterr()
    assert main(["check", bad]) == 1 and main(["compile", bad]) == 1
    err = capsys.readouterr().err
    assert "bad\\xff.kern:1:47: error: unknown name 'z'" in err and "Traceback" not in err


@pytest.mark.parametrize("command", [["check", "-"], ["compile", "-"], ["opt", "-", "--passes", "canonicalize"]])
@pytest.mark.parametrize("data, where", [(b"\xff\xfe", "-:1:1"),
                                         (b"kernel k(x: f32[n] write) over n { x = 1.0; } // \xff\n", "-:1:50")])
def test_standard_input_that_is_not_utf8(monkeypatch, capsys, command, data, where):
    """Found by a trial: standard input was read as text, so bytes that are not UTF-8 became an
    'unexpected character' (or, in a comment, nothing at all), and `kernc opt -` an internal
    compiler error; a file with the same bytes gets 'not UTF-8 text' at the first bad byte."""
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape"))
    assert main(command) == 1
    assert f"{where}: error: the input is not UTF-8 text (byte 0xff)" in capsys.readouterr().err


def test_run_size_must_be_ascii_digits(tmp_path, capsys):
    """Found by a trial: '²'.isdigit() is True, so `--size n=²` passed the check and int() failed
    with Python's own wording. (The syntax is now checked with the options: a usage error.)"""
    with pytest.raises(SystemExit) as usage:
        main(["run", SAXPY, "--input", "a=1", "--size", "n=\u00b2", "--output-dir", str(tmp_path)])
    assert usage.value.code == 2
    assert "argument --size: 'n=\u00b2': the size must be a non-negative integer" in capsys.readouterr().err


def test_opt_with_an_upstream_pass_that_fails_on_the_input_is_a_user_error(tmp_path, capsys):
    """Found by a trial: `kernc opt F --passes gpu-module-to-binary` on IR without a target was an
    internal compiler error with a crash report (exit 3); like mlir-opt, it is the user's pipeline."""
    assert main(["compile", SAXPY, "--emit", "gpu", "-o", str(tmp_path / "g.mlir")]) == 0
    capsys.readouterr()
    assert main(["opt", str(tmp_path / "g.mlir"), "--passes", "gpu-module-to-binary"]) == 1
    err = capsys.readouterr().err
    assert "pass 'gpu-module-to-binary' failed" in err and "the module has no target attributes" in err
    assert "internal compiler error" not in err and "see current operation" not in err


def test_opt_with_a_kernc_pass_that_raises_an_internal_error_reports_it(tmp_path, capsys, monkeypatch):
    """Found writing tests/lit/passes/attach-target.mlir: a kernc pass that raises
    InternalCompilerError itself (kern-attach-target on a module that calls libdevice, without
    libdevice) made `kernc opt` crash on the error's missing pass_name (AttributeError), hiding its
    message."""
    src = tmp_path / "m.mlir"
    src.write_text("module attributes {gpu.container_module} {\n  gpu.module @kernels {\n"
                   "    llvm.func @__nv_expf(f32) -> f32\n  }\n}\n")
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # (the crash report goes there)
    assert main(["opt", str(src), "--passes", "kern-attach-target"]) == 3
    err = capsys.readouterr().err
    assert "calls libdevice math functions (__nv_expf)" in err and "pip install nvidia-nvvm" in err
    assert "pass_name" not in err
    (report,) = tmp_path.glob("kernc-crash-*.txt")
    assert "AttributeError" not in report.read_text()


def test_run_refuses_an_empty_output_dir_before_running(capsys, monkeypatch):
    import kernc.api

    ran = []
    real = kernc.api.Kernel.launch
    monkeypatch.setattr(kernc.api.Kernel, "launch", lambda *a, **k: ran.append(1) or real(*a, **k))
    assert main(["run", SAXPY, "--input", "a=1", "--size", "n=4", "--output-dir", ""]) == 1
    assert "--output-dir is empty" in capsys.readouterr().err and not ran


def test_opt_time_passes_with_an_empty_pipeline(tmp_path, capsys):
    assert main(["compile", SAXPY, "--emit", "gpu", "-o", str(tmp_path / "g.mlir")]) == 0
    capsys.readouterr()
    assert main(["opt", str(tmp_path / "g.mlir"), "--passes", "", "--time-passes", "-o", str(tmp_path / "o.mlir")]) == 0
    assert "no pass ran (the pipeline is empty)" in capsys.readouterr().err


def test_closed_standard_streams(tmp_path):
    """Found by a trial: started with stdout closed (`>&-`) the compile was an internal compiler
    error ('NoneType' has no attribute 'write'), and --time-passes with stderr closed too."""
    import subprocess

    kernc_cmd = f"{sys.executable} -m kernc"
    closed_out = subprocess.run(["sh", "-c", f"{kernc_cmd} compile {SAXPY} >&-"], capture_output=False,
                                stderr=subprocess.PIPE, text=True, timeout=300)
    assert closed_out.returncode == 1
    assert "kernc: error: standard output is closed; write the output with -o FILE" in closed_out.stderr
    out = tmp_path / "s.ptx"
    closed_err = subprocess.run(["sh", "-c", f"{kernc_cmd} compile {SAXPY} --time-passes -o {out} 2>&-"],
                                timeout=300)
    assert closed_err.returncode == 0 and ".entry saxpy" in out.read_text()
    # from a later trial: layout and run --stats printed to the closed stdout (an internal compiler
    # error, or counters silently lost), and so did the benchmark's table
    for cmd, message in (("layout '(4,4):(4,1)'", "standard output is closed; the layout is printed there"),
                         ("layout '(4,4):(4,1)' --svg -", "standard output is closed"),
                         (f"run {SAXPY} --input a=2 --size n=4 --stats --output-dir {tmp_path}",
                          "standard output is closed; write the counters with --stats-json FILE"),
                         (f"bench --quick --no-gpu --json {tmp_path / 'b.json'}", "standard output is closed")):
        res = subprocess.run(["sh", "-c", f"{kernc_cmd} {cmd} >&-"], stderr=subprocess.PIPE, text=True, timeout=300)
        assert res.returncode == 1 and message in res.stderr and "Traceback" not in res.stderr, (cmd, res.stderr)


@pytest.mark.parametrize("failing", [1, 2, 3])
def test_run_writes_all_outputs_or_none(tmp_path, capsys, monkeypatch, failing):
    """From a robustness trial: with the disk full on the second output, the first was already
    replaced, leaving a mix of new and old results. Now every output (and the --stats-json file) is
    written to a temporary file first and renamed only when all are complete. ``failing``: which
    file's write finds the disk full (a.npy, b.npy, the stats JSON)."""
    import errno

    src = tmp_path / "two.kern"
    src.write_text("kernel two(x: f32[n] read, a: f32[n] write, b: f32[n] write) over n {\n"
                   "    a = x;\n    b = x * 2.0;\n}\n")
    x = tmp_path / "x.npy"
    np.save(x, np.arange(4, dtype=np.float32))
    out = tmp_path / "out"
    out.mkdir()
    old = np.full(4, -1.0, np.float32)
    np.save(out / "a.npy", old)
    real_fdopen, calls = os.fdopen, []

    class Full:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(fd, *args, **kw):
        f = real_fdopen(fd, *args, **kw)
        calls.append(fd)
        return Full(f) if len(calls) == failing else f

    args = ["run", str(src), "--input", f"x=@{x}", "--output-dir", str(out), "--stats-json", str(out / "s.json")]
    monkeypatch.setattr(os, "fdopen", fdopen)
    rc = main(args)
    monkeypatch.setattr(os, "fdopen", real_fdopen)
    assert rc == 1 and len(calls) == failing
    assert "No space left on device" in capsys.readouterr().err
    assert np.array_equal(np.load(out / "a.npy"), old)  # untouched, not the new a = x
    assert sorted(p.name for p in out.iterdir()) == ["a.npy"]  # no b.npy, no JSON, no temporary file

    assert main(args) == 0
    assert json.loads((out / "s.json").read_text())["global_store_requests"] > 0
    assert np.array_equal(np.load(out / "a.npy"), np.arange(4, dtype=np.float32))
    assert np.array_equal(np.load(out / "b.npy"), 2 * np.arange(4, dtype=np.float32))


@pytest.mark.parametrize("args", [
    ["run", SAXPY, "--input", "a=2", "--input", "x=@x.npy", "--stats"],
    ["compile", SAXPY, "--emit", "gpu"],
    ["layout", "(64,64):(64,1)"],
])
def test_a_reader_that_left_ends_the_command_quietly(args, tmp_path):
    """``kernc run ... --stats | head -2`` printed ``kernc: error: Broken pipe`` (exit 1): a closed
    pipe is not an error to report to anyone; the outputs are written all the same."""
    np.save(tmp_path / "x.npy", np.arange(64, dtype=np.float32))
    proc = subprocess.Popen([sys.executable, "-m", "kernc", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # the only reader is gone before the first write
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1 and err == "", err
    if args[0] == "run":
        assert np.array_equal(np.load(tmp_path / "y.npy"), 2 * np.arange(64, dtype=np.float32))


def test_a_broken_pipe_in_process_is_quiet(tmp_path, capsys, monkeypatch):
    r, w = os.pipe()
    os.close(r)
    broken = os.fdopen(w, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", broken)
    assert main(["compile", SAXPY, "--emit", "gpu"]) == 1
    monkeypatch.undo()
    assert capsys.readouterr().err == ""


def test_emit_ast_shows_only_the_selected_kernels(tmp_path, capsys):
    """``--emit ast --kernel b`` printed every kernel's AST; the later stages had only ``b``."""
    src = tmp_path / "ab.kern"
    src.write_text("layout rm(M, N) = (M, N):(N, 1);\n"
                   "kernel a(x: f32[n] read, y: f32[n] write) over n { y = x; }\n"
                   "kernel b(x: f32[n] read, y: f32[n] write) over n { y = x + 1.0; }\n")
    assert main(["compile", str(src), "--emit", "ast", "--kernel", "b"]) == 0
    out = capsys.readouterr().out
    assert "Kernel [3:8] name='b'" in out and "name='a'" not in out and "LayoutDef [1:8] name='rm'" in out
    assert main(["compile", str(src), "--emit", "ast"]) == 0
    assert "name='a'" in capsys.readouterr().out


@pytest.mark.parametrize("out", [[], ["--svg", "-"], ["--svg", "/dev/stdout"]])
def test_a_reader_that_leaves_mid_output_is_reported_by_the_exit_code(tmp_path, out):
    """``kernc compile big.kern | head -1`` exited 0 with the output cut: Python's buffered write
    took the kernel's partial write for a whole one (also for ``-o /dev/stdout``). Standard output
    is now written to the end or the command ends quietly with exit 1, as when the reader left
    before the first write."""
    proc = subprocess.Popen([sys.executable, "-m", "kernc", "layout", "(256,256):(256,1)", *out], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.read(100)  # about 1 MB follows: more than a pipe holds
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert first.startswith(b"<svg" if out else b"(256,256):(256,1)"), first
    assert proc.wait(timeout=120) == 1 and err == "", err
    whole = subprocess.run([sys.executable, "-m", "kernc", "layout", "(256,256):(256,1)"], capture_output=True)
    assert whole.returncode == 0 and len(whole.stdout) == 1056286 and whole.stdout.endswith(b"+\n")


def test_a_non_blocking_standard_output_gets_the_whole_output(tmp_path):
    """A pipe another process set non-blocking (shared with kernc's standard output) made a large
    write fail part-way (BlockingIOError) or lose its end: kernc now waits until the pipe drains."""
    import time

    r, w = os.pipe()
    os.set_blocking(w, False)
    proc = subprocess.Popen([sys.executable, "-m", "kernc", "layout", "(256,256):(256,1)"], cwd=tmp_path,
                            stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    time.sleep(1.0)  # let the pipe fill before anything is read
    with os.fdopen(r, "rb") as f:
        data = f.read()
    assert proc.wait(timeout=120) == 0, proc.stderr.read().decode()
    assert len(data) == 1056286 and data.endswith(b"+\n")


@pytest.mark.parametrize("out", ["-", "/dev/stdout"])
def test_compile_output_to_a_reader_that_leaves_mid_output(tmp_path, out):
    """``kernc compile big.kern --emit gpu -o /dev/stdout`` exited 0 with the output cut (``-o -``
    was fixed first; the named standard stream went through another write)."""
    src = tmp_path / "big.kern"
    body = "\n".join(f"    y += sqrt(x + {i}.0) * exp(x * {i}.5);" for i in range(600))
    src.write_text(f"kernel big(x: f32[n] read, y: f32[n] write) over n {{\n{body}\n}}\n")
    proc = subprocess.Popen([sys.executable, "-m", "kernc", "compile", str(src), "--emit", "gpu", "-o", out],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.read(100).startswith(b"module")  # about 200 KB follow
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 1 and err == "", err


@pytest.mark.parametrize("cmd", [["check", "{src}"], ["compile", "{src}", "--emit", "ast"]])
def test_an_ascii_standard_output_escapes_what_it_cannot_encode(tmp_path, cmd):
    """Under an ASCII locale, ``kernc check ü.kern`` did its work, then failed on printing the name
    ('ascii' codec can't encode ...), exit 1."""
    src = tmp_path / "\u00fc.kern"
    src.write_text(open(SAXPY).read())
    env = dict(os.environ, LC_ALL="C", PYTHONIOENCODING="ascii")
    proc = subprocess.run([sys.executable, "-m", "kernc", *[a.format(src=src) for a in cmd]],
                          capture_output=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert b"\\xfc.kern" in proc.stdout


def test_run_saves_only_the_views_the_kernel_stores_to(tmp_path, capsys):
    """Regression (trial): ``kernc run`` saved every view as ``NAME.npy``, also the views gemm only
    reads: ``--input a=@x.npy`` overwrote an unrelated ``./a.npy``. Now ``c`` alone is written, and a
    read-only view left out is a missing input, not a zero output."""
    import numpy as np

    gemm = os.path.join(EXAMPLES, "gemm.kern")
    keep = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "a.npy", keep)
    x = np.arange(20, dtype=np.float32).reshape(4, 5) % 3
    y = np.ones((5, 3), np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    args = ["run", gemm, "--input", f"a=@{tmp_path / 'x.npy'}", "--input", f"b=@{tmp_path / 'y.npy'}",
            "--output-dir", str(tmp_path), "-q"]
    assert main(args) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), keep)
    assert not (tmp_path / "b.npy").exists()
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), x @ y)
    capsys.readouterr()
    assert main(["run", gemm, "--input", f"b=@{tmp_path / 'y.npy'}", "--size", "M=4", "--size", "K=5",
                 "--output-dir", str(tmp_path), "-q"]) == 1
    assert "missing --input a=" in capsys.readouterr().err
