"""Which math reaches libdevice (``kern-libdevice-to-intrinsics`` + ``kern-attach-target``).

sqrt / min / max / abs / floor / ceil / fma become single PTX instructions through LLVM intrinsics and
link nothing; exp, rsqrt, ``%`` on floats still call libdevice, which is then linked (and only then
needed). Results on the CPU interpreter are checked against numpy for both groups.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernc
from kernc.backend import toolkit
from kernc.compiler import Compilation, CompileOptions
from kernc.support.errors import InternalCompilerError

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")

#: expression -> (PTX instruction it must become, numpy reference)
INTRINSIC = {
    "sqrt(a)": (r"sqrt\.rn", lambda a, b: np.sqrt(a)),
    "min(a, b)": (r"min", lambda a, b: np.fmin(a, b)),
    "max(a, b)": (r"max", lambda a, b: np.fmax(a, b)),
    "abs(a)": (r"abs", lambda a, b: np.abs(a)),
    "floor(a)": (r"cvt\.rmi", lambda a, b: np.floor(a)),
    "ceil(a)": (r"cvt\.rpi", lambda a, b: np.ceil(a)),
    "fma(a, b, a)": (r"fma\.rn", None),  # exactness of fma: tests/backend (interpreter)
}


def _kernel(ty: str, expr: str) -> str:
    return f"kernel k(a: {ty}[n] read, b: {ty}[n] read, y: {ty}[n] write) over n {{ y = {expr}; }}"


def _inputs(dt):
    a = np.array([-2.5, -0.0, 0.25, 1.5, 4.0, 9.0, np.nan, np.inf], dt)
    b = np.array([1.0, 0.0, -0.5, 2.5, np.nan, 3.0, 1.0, -np.inf], dt)
    return a, b


@pytest.mark.parametrize("ty,dt", [("f32", np.float32), ("f64", np.float64)])
@pytest.mark.parametrize("expr", sorted(INTRINSIC))
def test_intrinsic_math_links_no_libdevice(ty, dt, expr):
    comp = Compilation(_kernel(ty, expr), "k.kern", use_cache=False)
    llvm = comp.llvm_ir()
    assert "__nv_" not in llvm and "link = [" not in llvm, llvm
    instr, ref = INTRINSIC[expr]
    suffix = "f32" if ty == "f32" else "f64"
    assert re.search(rf"\b{instr}(\.ftz)?\.{suffix}\b", comp.ptx()), comp.ptx()
    if ref is not None:
        mod = kernc.compile(_kernel(ty, expr), filename="k.kern")
        a, b = _inputs(dt)
        y = np.zeros_like(a)
        with np.errstate(invalid="ignore"):
            mod.k(a, b, y)
            np.testing.assert_array_equal(y, ref(a, b).astype(dt))


@pytest.mark.parametrize("expr,fn", [("exp(a)", "__nv_expf"), ("a % b", "__nv_fmodf"), ("rsqrt(a)", "__nv_rsqrtf")])
def test_other_math_still_links_libdevice(expr, fn):
    if toolkit.libdevice_path() is None:
        pytest.skip("libdevice not found (pip install nvidia-nvvm)")
    comp = Compilation(_kernel("f32", expr), "k.kern", use_cache=False)
    llvm = comp.llvm_ir()
    assert f"llvm.call @{fn}" in llvm and "link = [" in llvm
    assert fn not in comp.ptx()  # linked and inlined, not an unresolved extern


@needs_ptxas
@pytest.mark.parametrize("expr", ["sqrt(a) + min(a, b) + abs(a) + floor(a) + fma(a, b, a)", "exp(a) + max(a, b)"])
def test_ptx_assembles(expr):
    result = toolkit.run_ptxas(Compilation(_kernel("f32", expr), "k.kern", use_cache=False).ptx(), "sm_90")
    assert result.ok, result.log


def test_without_libdevice_only_kernels_that_call_it_fail(monkeypatch):
    monkeypatch.setattr(toolkit, "libdevice_path", lambda: None)
    # before: every math kernel needed libdevice; now sqrt/min/... compile without it
    ptx = Compilation(_kernel("f32", "sqrt(a) + min(a, b)"), "k.kern", use_cache=False).ptx()
    assert "sqrt.rn.f32" in ptx
    with pytest.raises(InternalCompilerError) as err:
        Compilation(_kernel("f32", "exp(a)"), "k.kern", use_cache=False).ptx()
    assert "__nv_expf" in str(err.value) and "pip install nvidia-nvvm" in str(err.value)


def test_compile_options_do_not_change_the_decision():
    for opts in (CompileOptions(index_bits=64), CompileOptions(opt_level=0), CompileOptions(arch="sm_80")):
        llvm = Compilation(_kernel("f64", "sqrt(a) + max(a, b)"), "k.kern", opts, use_cache=False).llvm_ir()
        assert "__nv_" not in llvm and "link = [" not in llvm
