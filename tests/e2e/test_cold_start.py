"""What a cold ``kernc compile`` process loads and writes (issue "Performance": CLI cold compile).

Structural checks, not timings: the compile path must not import numpy or the LLVM dialect's
generated op classes (~50 ms of a ~170 ms process together), ``KERNC_ALWAYS_COMPILE=1`` writes
nothing at all (the parser tables come from the package), and a process that keeps numpy out of
the bindings' import can still import and use numpy afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import EXAMPLES

SAXPY_FILE = os.path.join(EXAMPLES, "saxpy.kern")
PARTICLES_FILE = os.path.join(EXAMPLES, "particles.kern")


def _env(cache_dir, **extra):
    env = dict(os.environ, KERNC_CACHE_DIR=str(cache_dir), **extra)
    return env


def test_cli_compile_imports_neither_numpy_nor_the_llvm_op_classes(tmp_path):
    probe = (
        "import sys; from kernc.cli import main; rc = main(sys.argv[1:]); assert rc == 0, rc; "
        "bad = [m for m in ('numpy', 'numba_cuda_mlir._mlir.dialects._llvm_ops_gen', "
        "'mlir.dialects._llvm_ops_gen', 'xml.sax.saxutils', 'urllib.request', "
        "'kernc.dialect.layout_algebra') if m in sys.modules]; "  # only for layout algebra
        "assert not bad, f'a cold compile imported {bad}'; "
        "assert 'kernc.compiler' in sys.modules  # it did compile"
    )
    for src in (SAXPY_FILE, PARTICLES_FILE):  # particles: math, so libdevice calls and intrinsics
        out = tmp_path / "out.ptx"
        subprocess.run([sys.executable, "-c", probe, "compile", src, "-o", str(out)], check=True,
                       env=_env(tmp_path / "cache", KERNC_ALWAYS_COMPILE="1"), timeout=300)
        assert ".visible .entry" in out.read_text()


def test_cli_compile_of_a_layout_program_skips_the_svg_printer_imports(tmp_path):
    """A program with named layouts imports the layout algebra (the frontend folds with it:
    ``kernc.dialect.layout_algebra``, public as ``kernc.layout``); its SVG printer's html escaping
    is imported only by `kernc layout --svg`."""
    probe = ("import sys; from kernc.cli import main; assert main(sys.argv[1:]) == 0; "
             "assert 'kernc.dialect.layout_algebra' in sys.modules and 'html' not in sys.modules, "
             "sorted(sys.modules); "
             # an N-D kernel without a loop: the contraction passes are not even imported (issue 23)
             "assert 'kernc.passes.mma_contractions' not in sys.modules")
    subprocess.run([sys.executable, "-c", probe, "compile", os.path.join(EXAMPLES, "transpose.kern"), "-o",
                    str(tmp_path / "t.ptx")], check=True, env=_env(tmp_path / "cache", KERNC_ALWAYS_COMPILE="1"),
                   timeout=300)


def test_cli_compile_of_a_declined_contraction_skips_the_tensor_core_op_classes(tmp_path):
    """kern-mma-contractions runs on the f32 gemm and declines it: its nvgpu and vector op classes
    are imported only when it rewrites a contraction (support.mlir.lazy_dialect; cp.async, whose
    nvgpu ops kern-tile-contractions uses, is off here)."""
    probe = ("import sys; from kernc.cli import main; assert main(sys.argv[1:]) == 0; "
             "assert 'kernc.passes.mma_contractions' in sys.modules; "
             "bad = [m for m in sys.modules if m.rsplit('.', 1)[-1] in ('_nvgpu_ops_gen', '_vector_ops_gen')]; "
             "assert not bad, bad")
    subprocess.run([sys.executable, "-c", probe, "compile", os.path.join(EXAMPLES, "gemm.kern"), "--no-async-copy",
                    "-o", str(tmp_path / "g.ptx")], check=True,
                   env=_env(tmp_path / "cache", KERNC_ALWAYS_COMPILE="1"), timeout=300)


def test_always_compile_writes_nothing(tmp_path):
    """Not even the cache folder: the parser tables are shipped in the package (issue 18), where
    they were once kept in the cache folder even with ``KERNC_ALWAYS_COMPILE=1``."""
    cache_dir = tmp_path / "cache"
    outs = []
    for i in range(2):
        out = tmp_path / f"{i}.ptx"
        subprocess.run([sys.executable, "-m", "kernc", "compile", SAXPY_FILE, "-o", str(out)], check=True,
                       env=_env(cache_dir, KERNC_ALWAYS_COMPILE="1"), timeout=300)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    assert not cache_dir.exists()


def test_numpy_imports_normally_after_the_bindings_were_loaded_without_it(tmp_path):
    probe = (
        "import sys; import kernc.mlir; assert 'numpy' not in sys.modules; "
        "import numpy as np; assert np.arange(3).sum() == 3; "
        "import kernc; m = kernc.compile(open(sys.argv[1]).read(), filename='saxpy.kern'); "
        "x = np.arange(5, dtype=np.float32); y = np.ones(5, np.float32); m.saxpy(2.0, x, y); "
        "assert y.tolist() == [1.0, 3.0, 5.0, 7.0, 9.0], y"
    )
    subprocess.run([sys.executable, "-c", probe, SAXPY_FILE], check=True,
                   env=_env(tmp_path / "cache"), timeout=300)


def test_bindings_register_numpy_builders_only_when_numpy_came_first(tmp_path):
    # the one thing the bindings use numpy for: builders of dense ElementsAttr values (kernc builds none)
    probe = (
        "import sys\n"
        "if sys.argv[1] == 'first': import numpy\n"
        "from kernc.mlir import ir\n"
        "assert ir.AttrBuilder.contains('F64ElementsAttr') == (sys.argv[1] == 'first')\n"
    )
    for order in ("first", "never"):
        subprocess.run([sys.executable, "-c", probe, order], check=True, env=_env(tmp_path / "cache"),
                       timeout=300)


def test_the_console_entry_point_exits_quickly_with_everything_written(tmp_path):
    """``kernc`` and ``python -m kernc`` end with ``os._exit`` after flushing the standard streams
    (the interpreter's teardown of the MLIR bindings cost ~25 ms of a cold compile): what goes to
    a pipe is complete, files are written, and exit codes are kept (0, 1 for a bad program, 2 for
    a usage error)."""
    env = _env(tmp_path / "cache", KERNC_ALWAYS_COMPILE="1")
    out = tmp_path / "saxpy.ptx"

    def kernc(*args):
        return subprocess.run([sys.executable, "-m", "kernc", *args], capture_output=True, text=True,
                              env=env, timeout=300)

    assert kernc("compile", SAXPY_FILE, "-o", str(out)).returncode == 0
    piped = kernc("compile", SAXPY_FILE)
    assert piped.returncode == 0 and piped.stdout == out.read_text() and piped.stdout.rstrip().endswith("}")
    ir = kernc("compile", PARTICLES_FILE, "--emit", "gpu", "--time-passes")
    assert ir.returncode == 0 and ir.stdout.count("gpu.func @particles") == 1 and "total" in ir.stderr
    bad = tmp_path / "bad.kern"
    bad.write_text("kernel k(x: f32[n] read) over n { y = x; }\n")
    res = kernc("compile", str(bad))
    assert res.returncode == 1 and "error" in res.stderr and res.stdout == ""
    assert kernc("compile", SAXPY_FILE, "--arch", "sm_1").returncode == 2
    # the quick exit: no interpreter teardown (an atexit handler never runs), except for kernc bench
    probe = ("import atexit, sys; atexit.register(lambda: print('teardown')); "
             "from kernc.cli import console_main; sys.argv = ['kernc', *sys.argv[1:]]; console_main()")
    quick = subprocess.run([sys.executable, "-c", probe, "compile", SAXPY_FILE, "-o", str(out)],
                           capture_output=True, text=True, env=env, timeout=300)
    assert quick.returncode == 0 and "teardown" not in quick.stdout


def test_a_traced_or_profiled_cli_exits_normally(tmp_path):
    """Tracers and profilers (coverage, cProfile) write their results at exit: under one, the
    console entry point takes the normal exit, so an atexit handler still runs."""
    env = _env(tmp_path / "cache", KERNC_ALWAYS_COMPILE="1")
    probe = ("import atexit, sys; atexit.register(lambda: print('teardown')); sys.settrace(lambda *a: None); "
             "from kernc.cli import console_main; sys.argv = ['kernc', *sys.argv[1:]]; console_main()")
    res = subprocess.run([sys.executable, "-c", probe, "compile", SAXPY_FILE, "-o", str(tmp_path / "s.ptx")],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0 and "teardown" in res.stdout
    assert ".entry saxpy" in (tmp_path / "s.ptx").read_text()


def test_kernc_layout_is_an_attribute_of_a_plain_import():
    """README uses ``kernc.layout`` after ``import kernc``; it raised AttributeError until
    ``import kernc.layout``. Loaded on first use: neither it nor MLIR comes with ``import kernc``."""
    code = ("import sys, kernc; assert 'kernc.layout' not in sys.modules; "
            "L = kernc.layout.Layout.parse('(4,2):(2,1)'); print(L(3), 'kernc.api' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.split() == ["6", "False"], out.stderr


def test_a_tensor_core_compile_loads_the_dialects_it_builds(tmp_path):
    """The other side of the lazy nvgpu/vector import: an f16 gemm rewritten onto tensor cores
    imports them on first use and gets its mma.sync."""
    probe = ("import sys; from kernc.cli import main; assert main(sys.argv[1:]) == 0; "
             "assert any(m.endswith('._nvgpu_ops_gen') for m in sys.modules), sorted(sys.modules)")
    out = tmp_path / "g.ptx"
    subprocess.run([sys.executable, "-c", probe, "compile", os.path.join(EXAMPLES, "gemm_f16.kern"), "-o",
                    str(out)], check=True, env=_env(tmp_path / "cache", KERNC_ALWAYS_COMPILE="1"), timeout=300)
    assert "mma.sync.aligned.m16n8k16" in out.read_text()
