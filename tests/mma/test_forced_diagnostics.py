"""The diagnostics of ``@tensor_cores`` and ``@tile``: errors located at the attribute with the
source line and a caret, a hint that fits the cause, ``tensor_cores=False`` / ``tile=False``
overriding the attributes, and the remark of an ``@tile`` with nothing to tile."""

from __future__ import annotations

import os

import pytest

from conftest import EXAMPLES
from kernc.compiler import Compilation, CompileOptions
from kernc.support.errors import CompileError

GEMM_F16 = open(os.path.join(EXAMPLES, "gemm_f16.kern")).read()
GEMM_F32 = open(os.path.join(EXAMPLES, "gemm.kern")).read()
BODY_F16 = GEMM_F16[GEMM_F16.index("kernel gemm_f16"):]
BODY_F32 = GEMM_F32[GEMM_F32.index("kernel gemm"):]
ONE_D = "kernel s(x: f16[n] read, y: f32[n] write) over n { y = f32(x); }"
TRANSPOSE = "kernel t(a: f32[R, C] view, b: f32[C, R] view) over (i, j) in (R, C) {\n    b[j, i] = a[i, j];\n}\n"


def _error(text, **kw):
    with pytest.raises(CompileError) as err:
        Compilation(text, "k.kern", CompileOptions(**kw), use_cache=False)
    return str(err.value)


@pytest.mark.parametrize("text, kw, why, hint", [
    ("@tensor_cores\n" + BODY_F16, {"arch": "sm_75"},
     "sm_75 has no mma.sync m16n8k16 for f16 operands (sm_80 and later)", "compile with --arch sm_80 or later"),
    ("@tensor_cores @block(512)\n" + BODY_F16, {}, "its block of 512 threads", "use @block(256) or less"),
    ("@tensor_cores @tile(64, 64, 32)\n" + BODY_F16, {}, "asks for a CUDA-core tile with @tile", "remove @tile"),
    ("@tensor_cores\n" + BODY_F32, {}, "its operands are f32", "add @tf32"),
    ("@tensor_cores\n" + BODY_F32, {"arch": "sm_75"}, "its operands are f32", "add @tf32"),
    ("@tensor_cores\n" + TRANSPOSE, {}, "it has no contraction loop", "write the loop as 'acc += a[i, k] * b[k, j]'"),
    ("@tensor_cores\n" + ONE_D, {}, "it is over one size", "remove @tensor_cores"),
])
def test_tensor_cores_errors_are_located_with_the_line_a_caret_and_a_hint_that_fits(text, kw, why, hint):
    msg = _error(text, **kw)
    lines = msg.split("\n")
    assert lines[0].startswith("k.kern:1:2: error: @tensor_cores of kernel"), msg
    assert why in lines[0] and "tiled on CUDA cores" not in msg, msg
    assert lines[1] == text.split("\n")[0] and lines[2] == " ^", msg  # the source line and the caret
    assert lines[3].startswith("hint: " + hint), msg


def test_tile_errors_after_parsing_show_the_source_line_and_caret():
    """kern-tile-contractions' @tile errors (workgroup memory) came as 'file:1:2: error:' alone."""
    text = "@tile(128, 128, 64)\n" + BODY_F32
    msg = _error(text)
    assert msg.split("\n")[:3] == [msg.split("\n")[0], "@tile(128, 128, 64)", " ^"], msg
    assert "workgroup memory" in msg.split("\n")[0]


def test_cli_prints_the_source_line_of_a_pass_error(tmp_path, capsys, monkeypatch):
    from kernc.cli import main

    monkeypatch.setenv("KERNC_ALWAYS_COMPILE", "1")
    f = tmp_path / "b.kern"
    f.write_text("@tensor_cores @block(512)\n" + BODY_F16)
    assert main(["compile", str(f), "-o", str(tmp_path / "o.ptx")]) == 1
    err = capsys.readouterr().err
    assert f"{f}:1:2: error: @tensor_cores" in err and "\n@tensor_cores @block(512)\n ^\n" in err, err


def test_no_tensor_cores_overrides_tensor_cores_on_a_1d_kernel():
    assert "kernel 's'" in _error("@tensor_cores\n" + ONE_D)
    comp = Compilation("@tensor_cores\n" + ONE_D, "k.kern", CompileOptions(tensor_cores=False), use_cache=False)
    assert set(comp.signatures) == {"s"}


def test_tile_on_a_1d_kernel_is_a_located_error_unless_no_tile():
    msg = _error("@tile(64, 64, 16)\n" + ONE_D)
    assert msg.startswith("k.kern:1:2: error: @tile of kernel 's': there is nothing to tile: it is over one size"), msg
    assert "\nhint: remove @tile" in msg
    comp = Compilation("@tile(64, 64, 16)\n" + ONE_D, "k.kern", CompileOptions(tile=False), use_cache=False)
    assert set(comp.signatures) == {"s"}


def test_tile_on_an_nd_kernel_without_a_contraction_is_a_remark(capfd):
    comp = Compilation("@tile(64, 64, 16)\n" + TRANSPOSE, "t.kern", CompileOptions(remarks=True), use_cache=False)
    assert comp.signatures["t"].contraction is None or not comp.signatures["t"].contraction
    err = capfd.readouterr().err
    assert "t.kern:1:2: remark: @tile is ignored: kernel 't' has no contraction loop" in err, err
    # without --remarks: no output, and the kernel compiles
    Compilation("@tile(64, 64, 16)\n" + TRANSPOSE, "t.kern", CompileOptions(), use_cache=False)
    assert "@tile is ignored" not in capfd.readouterr().err


def test_one_located_remark_with_the_real_reason_on_sm_75(capfd):
    """An f32 gemm on sm_75: one remark at the loop giving the real reason (f32 without @tf32),
    not an unlocated one about sm_75 plus a located one listing f16/bf16 first."""
    Compilation(GEMM_F32, "g.kern", CompileOptions(arch="sm_75", remarks=True), use_cache=False)
    lines = [ln for ln in capfd.readouterr().err.splitlines() if "tensor cores" in ln]
    assert len(lines) == 1, lines
    assert lines[0].startswith("g.kern:") and "not using tensor cores for 'gemm': its operands are f32" in lines[0]
    assert "f16/bf16" not in lines[0]


def test_no_tile_says_tensor_cores_still_run(capfd):
    """--no-tile turns off CUDA-core tiling only: an f16 gemm still runs on tensor cores, and the
    remark said "contractions are not tiled"."""
    comp = Compilation(GEMM_F16, "g.kern", CompileOptions(arch="sm_80", tile=False, remarks=True), use_cache=False)
    assert "nvgpu.mma.sync" in comp.gpu_ir()
    err = capfd.readouterr().err
    assert ("g.kern: remark: contractions are not tiled on CUDA cores: kern-tile-contractions is off (--no-tile); "
            "tensor cores are not: the f16/bf16/i8/@tf32 ones still run as mma.sync in tiles of their own "
            "(--no-tensor-cores turns that off)") in err, err
    Compilation(GEMM_F32, "g.kern", CompileOptions(arch="sm_75", tile=False, remarks=True), use_cache=False)
    err = capfd.readouterr().err
    assert "(--no-tile)\n" in err and "tensor cores are not" not in err, err


def test_a_tile_serving_one_item_says_item():
    from kernc.passes import tile_contractions

    assert "serves {n} item{'s' if n != 1 else ''}" in open(tile_contractions.__file__).read()
