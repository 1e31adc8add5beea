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
     "B + M + |S| must be at most 63"),
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
    """The limit is int64's: 2^63 - 1 itself, and sizes past int32 (64-bit launches), compile."""
    for src in (f"kernel k(x: f32[{B63}] view, y: f32[n] write) over n {{ y = x.checked(thread_id); }}",
                f"kernel k(y: f32[P] write) over (i, j) in ({B63}, 1) {{ y = 1.0; }}",
                "kernel k(x: f32[4294967296, 2] view, y: f32[n] write) over n { y = x.checked(thread_id, 1); }",
                "layout s = swizzle<3, 57, 3> o (8, 8):(8, 1);\n"
                "kernel k(x: f32[8, 8] view as s, y: f32[n] write) over n { y = x[0, 0]; }"):
        comp = Compilation(src, "ok.kern", CompileOptions())
        comp.llvm_ir(index_bits=64)
