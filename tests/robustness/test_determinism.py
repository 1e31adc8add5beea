"""Determinism and safety.

- The same input gives byte-identical PTX, gpu IR and kern IR across runs and across processes (every
  example compiled in two fresh subprocesses with the cache off and different hash seeds).
- Output files are written atomically: a failure or interrupt while writing leaves an existing output
  untouched and no temporary file behind (``os.replace`` raising, the payload writer failing half way,
  a KeyboardInterrupt, a killed process).
- kernc never evaluates user text as Python: ``__import__('os').system('touch MARKER')`` in names,
  layout expressions, sizes, accessor arguments, attributes, defaults, ``--input``/``--size`` values of
  ``kernc run``, ``--passes`` of ``kernc opt``, ``kernc layout`` never creates the marker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import kernc
from conftest import EXAMPLES
from kernc.cli import main

SAXPY = os.path.join(EXAMPLES, "saxpy.kern")
EXAMPLE_FILES = sorted(os.path.join(EXAMPLES, f) for f in os.listdir(EXAMPLES) if f.endswith(".kern"))

# ---------------------------------------------------------------------------------------------------
# byte-identical output
DUMP = textwrap.dedent("""
    import json, sys
    import kernc
    out = {}
    for path in sys.argv[2:]:
        try:
            mod = kernc.compile_file(path)
            out[path] = {"ptx": mod.ptx, "ptx64": mod._compilation.ptx(64), "gpu": mod.ir("gpu"),
                         "kern": mod.ir("kern"), "sm80": kernc.compile_file(path, arch="sm_80").ptx}
        except kernc.KerncError as err:
            out[path] = {"error": f"{type(err).__name__}: {err}"}
    with open(sys.argv[1], "w") as f:
        json.dump(out, f)
""")


def _dump_in_subprocesses(tmp_path, files, seeds=("0", "4242")):
    procs = []
    for seed in seeds:
        out = tmp_path / f"dump-{seed}.json"
        env = dict(os.environ, KERNC_ALWAYS_COMPILE="1", PYTHONHASHSEED=seed)
        procs.append((out, subprocess.Popen([sys.executable, "-c", DUMP, str(out), *files], env=env,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    dumps = []
    for out, proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        dumps.append(json.loads(out.read_text()))
    return dumps


def test_examples_compile_byte_identically_across_processes(tmp_path):
    a, b = _dump_in_subprocesses(tmp_path, EXAMPLE_FILES)
    assert set(a) == set(EXAMPLE_FILES)
    compiled = [p for p in EXAMPLE_FILES if "error" not in a[p]]
    assert os.path.join(EXAMPLES, "saxpy.kern") in compiled and len(compiled) >= 5, a
    for path in EXAMPLE_FILES:
        for stage in a[path]:
            assert a[path][stage] == b[path][stage], f"{os.path.basename(path)}: {stage} differs between processes"


def test_same_text_compiles_identically_in_one_process(monkeypatch):
    """No state leaks between compilations in one process (the shared MLIR context, caches)."""
    monkeypatch.setenv("KERNC_ALWAYS_COMPILE", "1")
    texts = [open(p).read() for p in EXAMPLE_FILES]
    first = {}
    for path, text in zip(EXAMPLE_FILES, texts):
        try:
            mod = kernc.compile(text, filename=path)
            first[path] = (mod.ptx, mod.ir("gpu"), mod.ir("kern"))
        except kernc.KerncError:
            continue
    # compile them again in reverse order, interleaved with another arch
    for path, text in reversed(list(zip(EXAMPLE_FILES, texts))):
        if path not in first:
            continue
        kernc.compile(text, filename=path, arch="sm_80").ptx
        mod = kernc.compile(text, filename=path)
        assert (mod.ptx, mod.ir("gpu"), mod.ir("kern")) == first[path], path


def test_cli_output_is_byte_identical_between_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KERNC_ALWAYS_COMPILE", "1")
    for stage in ("ast", "kern", "gpu", "llvm", "ptx"):
        outs = []
        for i in range(2):
            out = tmp_path / f"{stage}{i}.txt"
            assert main(["compile", SAXPY, "--emit", stage, "-o", str(out)]) == 0
            outs.append(out.read_bytes())
        assert outs[0] == outs[1], stage


# ---------------------------------------------------------------------------------------------------
# atomic writes
def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".kernc-") or p.name.endswith(".tmp"))


@pytest.fixture
def out_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNC_ALWAYS_COMPILE", "1")
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


def test_failing_rename_keeps_the_old_output_and_removes_the_temporary(out_dir, monkeypatch, capsys):
    out = out_dir / "saxpy.ptx"
    out.write_text("previous contents")

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    assert main(["compile", SAXPY, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert str(out) in err and "No space left on device" in err and "Traceback" not in err
    assert out.read_text() == "previous contents"
    assert _leftovers(out_dir) == []


class _HalfWriter:
    """A file object that writes half of the first payload, then fails like a full disk (or an
    interrupt)."""

    def __init__(self, f, exc):
        self.f, self.exc = f, exc

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.f.close()

    def write(self, data):
        self.f.write(data[: len(data) // 2])
        self.f.flush()
        raise self.exc


@pytest.mark.parametrize("exc,code", [(OSError(28, "No space left on device"), 1), (KeyboardInterrupt(), 130)])
def test_failing_payload_write_keeps_the_old_output(out_dir, monkeypatch, capsys, exc, code):
    import kernc.cli as cli

    out = out_dir / "saxpy.ptx"
    out.write_text("previous contents")
    real_fdopen = os.fdopen
    monkeypatch.setattr(cli.os, "fdopen", lambda fd, *a, **k: _HalfWriter(real_fdopen(fd, *a, **k), exc))
    assert main(["compile", SAXPY, "-o", str(out)]) == code
    assert out.read_text() == "previous contents"
    assert _leftovers(out_dir) == []
    # a new output is not created half-written either
    new = out_dir / "new.ptx"
    assert main(["compile", SAXPY, "-o", str(new)]) == code
    assert not new.exists() and _leftovers(out_dir) == []
    capsys.readouterr()


def test_run_outputs_and_stats_are_written_atomically(out_dir, monkeypatch, capsys):
    np.save(out_dir / "x.npy", np.arange(8, dtype=np.float32))
    (out_dir / "y.npy").write_bytes(b"old y")
    (out_dir / "stats.json").write_text("old stats")
    calls = []
    real_replace = os.replace

    def flaky(src, dst):
        calls.append(dst)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", flaky)
    rc = main(["run", SAXPY, "--input", "a=2", "--input", f"x=@{out_dir / 'x.npy'}", "--output-dir", str(out_dir),
               "--stats-json", str(out_dir / "stats.json")])
    assert rc == 1 and calls
    assert (out_dir / "y.npy").read_bytes() == b"old y"
    assert (out_dir / "stats.json").read_text() == "old stats"
    assert _leftovers(out_dir) == []
    monkeypatch.setattr(os, "replace", real_replace)
    assert main(["run", SAXPY, "--input", "a=2", "--input", f"x=@{out_dir / 'x.npy'}",
                 "--output-dir", str(out_dir)]) == 0
    assert np.array_equal(np.load(out_dir / "y.npy"), 2 * np.arange(8, dtype=np.float32))
    capsys.readouterr()


def test_layout_svg_is_written_atomically(out_dir, monkeypatch, capsys):
    svg = out_dir / "l.svg"
    svg.write_text("old")
    monkeypatch.setattr(os, "replace", lambda s, d: (_ for _ in ()).throw(OSError(13, "Permission denied")))
    assert main(["layout", "(4,8):(8,1)", "--svg", str(svg)]) == 1
    assert svg.read_text() == "old" and _leftovers(out_dir) == []
    capsys.readouterr()


def test_failed_compile_leaves_existing_output(out_dir, capsys):
    src = out_dir / "bad.kern"
    src.write_text("kernel k(x: f32[n] read, y: f32[n] write) over n { y = x + ; }")
    out = out_dir / "bad.ptx"
    out.write_text("previous contents")
    assert main(["compile", str(src), "-o", str(out)]) == 1
    assert out.read_text() == "previous contents" and _leftovers(out_dir) == []
    capsys.readouterr()


def test_killed_process_never_leaves_a_partial_output(out_dir):
    """SIGKILL in the middle of the write (after half the payload reached the temporary file): the
    target keeps its old contents (a temporary may remain: nothing can clean up after SIGKILL)."""
    out = out_dir / "saxpy.ptx"
    out.write_text("previous contents")
    script = textwrap.dedent(f"""
        import os, signal, sys
        import kernc.cli as cli
        real = os.fdopen
        class Killer:
            def __init__(self, f): self.f = f
            def __enter__(self): return self
            def __exit__(self, *a): self.f.close()
            def write(self, data):
                self.f.write(data[: len(data) // 2]); self.f.flush()
                os.kill(os.getpid(), signal.SIGKILL)
        cli.os.fdopen = lambda fd, *a, **k: Killer(real(fd, *a, **k))
        sys.exit(cli.main(["compile", {SAXPY!r}, "-o", {str(out)!r}]))
    """)
    env = dict(os.environ, KERNC_ALWAYS_COMPILE="1")
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, timeout=300)
    assert proc.returncode == -9, proc.stderr
    assert out.read_text() == "previous contents"


def test_cache_write_failures_leave_no_temporaries(tmp_path, monkeypatch):
    from kernc.backend import cache

    folder = tmp_path / "cache"
    monkeypatch.setenv("KERNC_CACHE_DIR", str(folder))
    monkeypatch.delenv("KERNC_ALWAYS_COMPILE", raising=False)
    cache.clear_memory()

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    mod = kernc.compile(open(SAXPY).read() + "\n// cache-failure test\n")
    assert ".entry saxpy(" in mod.ptx                       # the compile itself is unaffected
    assert [p for p in folder.rglob("*") if p.is_file()] == []
    cache.clear_memory()


# ---------------------------------------------------------------------------------------------------
# user text is never evaluated as Python
def _payload(marker) -> str:
    return f"__import__('os').system('touch {marker}')"


SOURCE_POSITIONS = {
    "kernel_name": "kernel {P}(x: f32[n] read) over n {{ }}",
    "param_name": "kernel k({P}: f32[n] read) over n {{ }}",
    "type": "kernel k(x: {P}[n] read) over n {{ }}",
    "dims": "kernel k(x: f32[{P}] read) over n {{ }}",
    "over": "kernel k(x: f32[n] read) over {P} {{ }}",
    "layout_expr": "kernel k(x: f32[n, 3] read as ({P}, 3):(1, n)) over n {{ }}",
    "layout_def": "layout L = ({P}):(1);\nkernel k(x: f32[n] read as L) over n {{ }}",
    "accessor_args": "kernel k(x: f32[m] read strided({P}, 1)) over n {{ }}",
    "accessor_name": "kernel k(x: f32[m] read {P}) over n {{ }}",
    "default": "kernel k(x: f32[m] read strided(0, 1) default {P}, y: f32[n] write) over n {{ y = x; }}",
    "attribute": "@block({P}) kernel k(x: f32[n] read) over n {{ }}",
    "attribute_name": "@{P} kernel k(x: f32[n] read) over n {{ }}",
    "body_expr": "kernel k(x: f32[n] read, y: f32[n] write) over n {{ y = {P}; }}",
    "body_call": "kernel k(x: f32[n] read, y: f32[n] write) over n {{ y = eval(\"{P}\"); }}",
    "loop_bound": "kernel k(x: f32[n] read) over n {{ for i in 0..{P} {{ }} }}",
    "comment": "// {P}\nkernel k(x: f32[n] read, y: f32[n] write) over n {{ y = x; /* {P} */ }}",
    "string": "kernel k(x: f32[n] read) over n {{ let s = \"{P}\"; }}",
}


@pytest.mark.parametrize("position", sorted(SOURCE_POSITIONS))
def test_source_text_is_never_executed(tmp_path, capsys, position, monkeypatch):
    monkeypatch.setenv("KERNC_ALWAYS_COMPILE", "1")
    marker = tmp_path / "pwned"
    src = tmp_path / "evil.kern"
    src.write_text(SOURCE_POSITIONS[position].format(P=_payload(marker)))
    for cmd in (["check", str(src)], ["compile", str(src), "-o", str(tmp_path / "o.ptx")],
                ["compile", str(src), "--emit", "ast"],
                ["run", str(src), "--input", f"x=@{tmp_path / 'none.npy'}", "--output-dir", str(tmp_path)]):
        rc = main(cmd)
        assert rc in (0, 1), (cmd, rc, capsys.readouterr().err)
        assert not marker.exists(), f"{position}: {cmd[0]} executed the payload"
    with pytest.raises(kernc.KerncError) if position != "comment" else _nothing():
        kernc.compile(src.read_text())
    assert not marker.exists()
    capsys.readouterr()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_command_line_values_are_never_executed(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("KERNC_ALWAYS_COMPILE", "1")
    marker = tmp_path / "pwned"
    p = _payload(marker)
    np.save(tmp_path / "x.npy", np.ones(4, np.float32))
    x = f"x=@{tmp_path / 'x.npy'}"
    kern_ir = tmp_path / "k.mlir"
    assert main(["compile", SAXPY, "--emit", "kern", "-o", str(kern_ir)]) == 0
    commands = [
        ["run", SAXPY, "--input", f"a={p}", "--input", x, "--output-dir", str(tmp_path)],
        ["run", SAXPY, "--input", f"{p}=1", "--input", x, "--output-dir", str(tmp_path)],
        ["run", SAXPY, "--input", "a=1", "--input", f"x=@{p}", "--output-dir", str(tmp_path)],
        ["run", SAXPY, "--input", "a=1", "--input", x, "--size", f"n={p}", "--output-dir", str(tmp_path)],
        ["run", SAXPY, "--input", "a=1", "--input", x, "--size", f"{p}=4", "--output-dir", str(tmp_path)],
        ["run", SAXPY, "--kernel", p, "--input", "a=1", "--input", x, "--output-dir", str(tmp_path)],
        ["run", SAXPY, "--device", "cpu", "--arch", p, "--input", "a=1", "--input", x],
        ["compile", SAXPY, "--kernel", p],
        ["compile", SAXPY, "--arch", p],
        ["opt", str(kern_ir), "--passes", p],
        ["opt", str(kern_ir), "--passes", f"kern-lower-accessors{{{p}}}"],
        ["opt", str(kern_ir), "--passes", f"builtin.module({p})"],
        ["layout", p],
        ["layout", f"({p}):(1)"],
    ]
    for cmd in commands:
        try:
            rc = main(cmd)
        except SystemExit as e:  # argparse usage errors
            rc = e.code
        assert rc in (1, 2), (cmd, rc, capsys.readouterr())
        assert not marker.exists(), f"{cmd} executed the payload"
    capsys.readouterr()


def test_python_api_arguments_are_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    mod = kernc.compile("kernel k(a: f32, n2: i32, y: f32[n] write) over n { y = a + f32(n2); }")
    y = np.zeros(2, np.float32)
    for args, kwargs in [((_payload(marker), 1, y), {}), ((1.0, _payload(marker), y), {}),
                         ((1.0, 1, y), {"n": _payload(marker)}), ((1.0, 1, y), {_payload(marker): 1})]:
        with pytest.raises(kernc.KerncLaunchError):
            mod.k(*args, **kwargs)
    with pytest.raises(ValueError):
        kernc.compile("kernel k(y: f32[n] write) over n { y = 1.0; }", arch=_payload(marker))
    assert not marker.exists()
