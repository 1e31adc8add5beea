"""Internal compiler errors that were user errors (issue 18, item 4): constants beyond the index
range, kernel names that collide with names the toolchain generates, and ``kernc run`` sizes too
large to allocate. Each is a located frontend error (``kernc check`` fails with ``file:line:col``)
or a plain user error (exit 1), never an internal compiler error (exit 3)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernc
from kernc import CompileError
from kernc.backend import toolkit
from kernc.cli import main
from kernc.compiler import Compilation, CompileOptions

B63 = 2**63 - 1


@pytest.mark.parametrize("src, where, message", [
    # the three
    ("kernel k(y: f32[P] write) over (i, j) in (4294967296, 4294967296) { y = 1.0; }", "1:43",
     "the problem size (18446744073709551616) is beyond the index range"),
    (f"kernel k(x: f32[{B63}, 3] view, y: f32[n] write) over n {{ y = x.checked(thread_id, 2); }}", "1:10",
     f"the size of the layout ({B63},3):(3,1) of 'x' (27670116110564327421) is beyond the index range"),
    ("layout s = swizzle<64, 64, 64> o (8, 8):(8, 1);\n"
     "kernel k(x: f32[8, 8] view as s, y: f32[n] write) over n { y = x[0, 0]; }", "1:12",
     "swizzle<64, 64, 64> reaches bit 191"),
    # the class: every size, product and layout constant
    (f"kernel k(x: f32[M, N] view, y: f32[P] write) over (i, j) in ({B63}, 3) {{ y = x.checked(i, j); }}",
     "1:62", "the problem size (27670116110564327421) is beyond the index range"),
    ("kernel k(y: f32[P] write) over (i, j) in (M, 4294967296 * 4294967296) { y = 1.0; }", "1:57",
     "the extent entry (18446744073709551616) is beyond the index range"),
    ("kernel k(x: f32[18446744073709551616] read, y: f32[n] write) over n { y = x; }", "1:17",
     "dim entry 18446744073709551616 is beyond the index range"),
    (f"kernel k(x: f32[n, 3] read as (n, 3):(1, {B63}), y: f32[n] write) over n {{ y = x[0]; }}", "1:31",
     "the cosize of the layout"),
    (f"kernel k(x: f32[M, N] view as (M, N):({B63}, {B63}), y: f32[n] write) over n {{ y = x.checked(thread_id, 1); }}",
     "1:31", "the cosize of the layout"),
    ("layout s = swizzle<3, 60, 3> o (8, 8):(8, 1);\n"
     "kernel k(x: f32[8, 8] view as s, y: f32[n] write) over n { y = x[0, 0]; }", "1:12",
     "B + M + |S| must be at most 48"),
    ("layout L(R) = (R, 4294967296 * 4294967296):(1, R);", "1:30",
     "the layout entry (18446744073709551616) is beyond the index range"),
])
def test_constants_beyond_the_index_range_are_located_frontend_errors(tmp_path, capsys, src, where, message):
    """They passed ``kernc check`` and failed in kern-lower-builtins / kern-lower-layouts with
    ``std::bad_cast``, an internal compiler error."""
    with pytest.raises(CompileError) as err:
        kernc.compile(src, filename="big.kern")
    assert message in str(err.value)
    assert f"big.kern:{where}: error: " in str(err.value)
    path = tmp_path / "big.kern"
    path.write_text(src + "\n")
    assert main(["check", str(path)]) == 1
    assert f"big.kern:{where}: error: " in capsys.readouterr().err


def test_constants_at_the_index_range_still_compile():
    """The limit is int64's: 2^63 - 1 itself, sizes past int32 (64-bit launches) and a swizzle at
    MAX_SWIZZLE_BITS compile."""
    for src in (f"kernel k(x: f32[{B63}] view, y: f32[n] write) over n {{ y = x.checked(thread_id); }}",
                f"kernel k(y: f32[P] write) over (i, j) in ({B63}, 1) {{ y = 1.0; }}",
                "kernel k(x: f32[4294967296, 2] view, y: f32[n] write) over n { y = x.checked(thread_id, 1); }",
                "layout s = swizzle<3, 42, 3> o (8, 8):(8, 1);\n"  # B + M + |S| = MAX_SWIZZLE_BITS
                "kernel k(x: f32[8, 8] view as s, y: f32[n] write) over n { y = x[0, 0]; }"):
        comp = Compilation(src, "ok.kern", CompileOptions())
        comp.llvm_ir(index_bits=64)


STAGING = "kernel g(x: f32[M, N] view, y: f32[N, M] view) over (i, j) in (N, M) { y[i, j] = x[j, i]; }\n"


def test_a_kernel_named_like_a_workgroup_global_compiles():
    """``convert-gpu-to-nvvm`` names the workgroup tile of kernel ``g`` ``__wg_g_0``: a kernel of that
    name beside ``g`` failed with "redefinition of symbol". The globals are now ``__wg_g$_0``, a PTX
    name no kernel can have; ptxas accepts it and the launches still find both entries."""
    src = STAGING + "kernel __wg_g_0(y: f32[n] write) over n { y = 1.0; }\n"
    comp = Compilation(src, "wg.kern", CompileOptions())
    for bits in (32, 64):
        ptx = comp.ptx(index_bits=bits)
        assert re.search(r"\.shared .*__wg_g\$_0\[", ptx)
        assert ".visible .entry g(" in ptx and ".visible .entry __wg_g_0(" in ptx
    if toolkit.ptxas_path() is not None:
        result = toolkit.run_ptxas(comp.ptx(), "sm_90")
        assert result.ok, result
    mod = kernc.compile(src)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.zeros((3, 2), np.float32)
    mod.g(x, y)
    assert y.tolist() == x.T.tolist()
    z = np.zeros(3, np.float32)
    mod.__wg_g_0(z)
    assert z.tolist() == [1.0] * 3


def test_kernc_opt_names_workgroup_globals_the_same_way(tmp_path, capsys):
    """``kernc opt`` runs an upstream pipeline with convert-gpu-to-nvvm the way the compiler does."""
    src = STAGING + "kernel __wg_g_0(y: f32[n] write) over n { y = 1.0; }\n"
    gpu = tmp_path / "wg.mlir"
    gpu.write_text(Compilation(src, "wg.kern", CompileOptions()).gpu_ir())
    out = tmp_path / "wg.llvm.mlir"
    assert main(["opt", str(gpu), "--passes", "kern-bare-ptr-abi,gpu.module(convert-scf-to-cf,"
                 "convert-gpu-to-nvvm{index-bitwidth=32},reconcile-unrealized-casts)", "-o", str(out)]) == 0, \
        capsys.readouterr().err
    text = out.read_text()
    assert "llvm.mlir.global internal @__wg_g$_0()" in text or 'llvm.mlir.global internal @"__wg_g$_0"()' in text
    assert "llvm.func @g(" in text and "llvm.func @__wg_g_0(" in text


def test_a_kernel_named_like_a_ptx_parameter_of_another_is_a_located_error():
    """LLVM names the PTX parameters of entry ``g`` ``g_param_0``, ...; ptxas crashed (a
    segmentation fault, as the driver's JIT would) on an entry ``g_param_1`` after ``g``."""
    src = ("kernel g(x: f32[n] read, y: f32[n] write) over n { y = x; }\n"
           "kernel g_param_1(y: f32[n] write) over n { y = 1.0; }\n")
    with pytest.raises(CompileError) as err:
        kernc.compile(src, filename="p.kern")
    text = str(err.value)
    assert "p.kern:2:8: error: 'g_param_1' cannot name a kernel here: it is the PTX name of a parameter of kernel 'g'" in text
    assert "p.kern:1:8: note: kernel 'g' is defined here" in text
    kernc.compile("kernel h(y: f32[n] write) over n { y = 1.0; }\n"
                  "kernel g_param_1(y: f32[n] write) over n { y = 1.0; }\n")  # no kernel g: fine


@pytest.mark.parametrize("size", ["1000000000000", "100000000000000000000"])
def test_kernc_run_with_an_output_too_large_to_allocate_is_a_user_error(tmp_path, capsys, size):
    """``--size n=1000000000000`` for an output that is not an input reported numpy's MemoryError
    as an internal compiler error (exit 3); now exit 1 with the size it asked for, as the --input
    path does for a file too large."""
    path = tmp_path / "k.kern"
    path.write_text("kernel k(y: f32[n] write) over n { y = 1.0; }\n")
    code = main(["run", str(path), "--size", f"n={size}", "--output-dir", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "internal compiler error" not in err
    assert "more than this machine can allocate" in err or "blocks" in err, err
    assert not (tmp_path / "out").exists()
