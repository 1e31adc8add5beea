"""A loop with literal bounds that is the whole body of a loop the frontend keeps (an inner level of
a loop nest, e.g. a convolution over RGB channels, ``for c in 0..3`` under ``for s in 0..S``) stays a
loop in a kernel over an N-D problem, so the nest stays perfect and is tiled.

Before, the frontend unrolled it (at most 8 trips): the nest's innermost body became three
``acc += ...`` statements, so kern-tile-contractions saw six staged reads (declined: 49920 bytes of
workgroup memory, more than 48 KiB) and kern-mma-contractions no ``(i, k)``/``(k, j)`` operand pair.
1-D kernels and literal loops that are not a nest's inner level are still unrolled.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from kernc.api import Module
from kernc.compiler import Compilation, CompileOptions
from conftest import EXAMPLES, compiled_example, example_reference


def _source(name: str, loop: str, literal: str) -> str:
    with open(os.path.join(EXAMPLES, f"{name}.kern"), encoding="utf-8") as f:
        text = f.read()
    assert loop in text
    return text.replace(loop, literal)


#: conv2d_fwd over 3 literal channels (r and s still runtime extents)
RGB_FWD = _source("conv2d_fwd", "for c in 0..C", "for c in 0..3")
#: conv2d_fwd with literal 3 channels and a literal 2-wide filter row
RGB_FWD_S2 = _source("conv2d_fwd", "for s in 0..S", "for s in 0..2").replace("for c in 0..C", "for c in 0..3")
RGB_FWD_F16 = _source("conv2d_fwd_f16", "for c in 0..C", "for c in 0..3")


def _module(src: str, **options) -> Module:
    return Module(Compilation(src, "t.kern", CompileOptions(**options), use_cache=False), choose_tile=False)


@pytest.fixture(scope="module")
def rgb():
    return {"tiled": _module(RGB_FWD), "untiled": _module(RGB_FWD, tile=False), "s2": _module(RGB_FWD_S2)}


def _run(mod, inputs):
    args = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()}
    mod.conv2d_fwd(**args)
    return args["y"]


@pytest.mark.parametrize("P", [3 * 5 * 7 * 11, 2 * 9 * 7 * 16])
def test_rgb_convolution_is_tiled_and_bitwise_the_runtime_channel_one(rgb, P):
    ref = example_reference("conv2d_fwd")
    inputs = ref.make_inputs(P, np.random.default_rng(P))  # (3 channels, a 3x2 filter)
    assert inputs["x"].shape[3] == 3 and inputs["w"].shape[1:] == (3, 2, 3)
    for key in ("tiled", "s2"):
        assert rgb[key]._compilation.signatures["conv2d_fwd"].tiles == [["N*OH*OW", 64], ["K", 64]], key
    want = ref.reference({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()})["y"]
    runtime_c = _run(compiled_example("conv2d_fwd"), inputs)
    for key in ("tiled", "untiled", "s2"):
        got = _run(rgb[key], inputs)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), key
        assert np.array_equal(got.view(np.uint32), runtime_c.view(np.uint32)), key


def test_rgb_convolution_remark_says_tiled(capsys):
    _module(RGB_FWD, remarks=True)
    err = capsys.readouterr().err
    assert "remark: tiling 'conv2d_fwd' as 64x64x16 per block" in err
    assert "workgroup memory, more than" not in err


def test_rgb_f16_convolution_runs_on_tensor_cores():
    comp = _module(RGB_FWD_F16)._compilation
    assert comp.tensor_core_kernels() == {"conv2d_fwd_f16": "mma.sync"}


def _kern_loops(src: str) -> int:
    return len(re.findall(r"\bscf\.for\b", _module(src)._compilation._stage_text("kern")))


def test_other_literal_loops_are_still_unrolled():
    # a 1-D kernel: the literal loop under a runtime loop is unrolled (one scf.for left)
    one_d = ("kernel f(a: f32[n, 3] read, q: index, out: f32[n] write) over n {\n"
             "    let s = 0.0;\n    for e in 0..q { for k in 0..3 { s += a[k] * f32(e); } }\n    out = s;\n}\n")
    assert _kern_loops(one_d) == 1
    # an N-D kernel whose literal loop is not a nest's only body: unrolled
    two_d = ("kernel g(a: f32[M, K] view, c: f32[M, N] view) over (i, j) in (M, N) {\n"
             "    let s = 0.0;\n    for k in 0..K { let t = a[i, k]; for d in 0..3 { s += t * f32(d); } }\n"
             "    c[i, j] = s;\n}\n")
    assert _kern_loops(two_d) == 1
    # the nest level stays a loop
    nest = ("kernel h(a: f32[M, K] view, c: f32[M, N] view) over (i, j) in (M, N) {\n"
            "    let s = 0.0;\n    for k in 0..K { for d in 0..3 { s += a[i, k] * f32(d); } }\n    c[i, j] = s;\n}\n")
    assert _kern_loops(nest) == 2
