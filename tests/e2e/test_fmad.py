"""``--fmad`` (``CompileOptions.fmad``, ``kernc.compile(..., fmad=True)``): ``a*b + c`` contracted
into ``math.fma`` at the IR level, so the CPU interpreter and the GPU compute the same single-rounding
fused result; off by default (results equal numpy's separately rounded ``a*b + c``)."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import kernc
from conftest import EXAMPLE_NAMES, EXAMPLES, example_reference
from exact_float import fma_reference
from kernc.backend import cache, toolkit
from kernc.cli import main
from kernc.compiler import Compilation, CompileOptions

SAXPY_FILE = os.path.join(EXAMPLES, "saxpy.kern")
SAXPY = open(SAXPY_FILE).read()
F32 = np.float32


def saxpy_inputs(n: int = 2000):
    """Random inputs plus leading elements where the fused and the unfused results differ:
    a*x = (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 is an f32 midpoint (unfused: rounds to even, down);
    + y = 2^-40 the fused result rounds up."""
    rng = np.random.default_rng(99)
    a = F32(1 + 2.0 ** -12)
    x = rng.standard_normal(n).astype(F32)
    y = (rng.standard_normal(n) * rng.choice([1e-6, 1.0, 1e3], n)).astype(F32)
    x[:3] = [1 + 2.0 ** -12, -(1 + 2.0 ** -12), 1 + 2.0 ** -12]
    y[:3] = [2.0 ** -40, -(2.0 ** -40), -(2.0 ** -40)]
    return a, x, y


def test_saxpy_fmad_on_the_cpu_is_the_correctly_rounded_fma():
    mod = kernc.compile_file(SAXPY_FILE, fmad=True)
    a, x, y = saxpy_inputs()
    y0 = y.copy()
    mod.saxpy(a, x, y)
    want = np.array([fma_reference(a, xi, yi, F32) for xi, yi in zip(x, y0)], F32)
    np.testing.assert_array_equal(y, want)
    unfused = y0 + a * x
    assert y[0] == F32(1 + 2.0 ** -11 + 2.0 ** -23) and unfused[0] == F32(1 + 2.0 ** -11)
    assert (y != unfused).sum() >= 3


def test_saxpy_default_is_unfused_numpy():
    mod = kernc.compile_file(SAXPY_FILE)
    a, x, y = saxpy_inputs()
    want = y + a * x
    mod.saxpy(a, x, y)
    np.testing.assert_array_equal(y, want)
    assert "math.fma" not in mod.ir("gpu")


def test_saxpy_fmad_ptx():
    fused, plain = kernc.compile(SAXPY, fmad=True), kernc.compile(SAXPY)
    assert "math.fma" in fused.ir("gpu") and "arith.mulf" not in fused.ir("gpu")
    assert re.search(r"\bfma\.rn\.f32\b", fused.ptx) and "mul.rn.f32" not in fused.ptx
    assert "add.rn.f32" not in fused.ptx
    assert "mul.rn.f32" in plain.ptx and "fma.rn" not in plain.ptx


def test_fma_does_not_link_libdevice():
    """math.fma lowers to llvm.intr.fma (kern-libdevice-to-intrinsics), not a libdevice call."""
    comp = Compilation(SAXPY, "saxpy.kern", CompileOptions(fmad=True))
    assert "link = [" not in comp.ir("llvm") and "__nv_" not in comp.ir("llvm")
    explicit = Compilation("kernel k(a: f64, x: f64[n] read, y: f64[n] write) over n { y = fma(a, x, x); }")
    assert "link = [" not in explicit.ir("llvm") and "fma.rn.f64" in explicit.ptx()
    other = Compilation("kernel k(x: f32[n] read, y: f32[n] write) over n { y = fma(x, x, exp(x)); }")
    llvm = other.ir("llvm")  # other math still links it; the fma itself is the intrinsic
    assert "link = [" in llvm and "llvm.call @__nv_expf" in llvm and "__nv_fmaf" not in llvm


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not installed")
@pytest.mark.parametrize("src", [
    SAXPY,
    "kernel k(a: f16, d: f64, x: f16[n] read, y: f16[n] write, z: f64[n] write) over n "
    "{ let b: f16 = a * a + a; y = f32(b) + x; z = d * d - 1.0; }",
])
def test_fmad_ptx_assembles(src):
    result = toolkit.run_ptxas(kernc.compile(src, fmad=True).ptx, "sm_90")
    assert result.ok, result.log


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_examples_with_fmad_match_numpy(name):
    """Contraction changes only the rounding: every example still matches its numpy reference."""
    mod = kernc.compile_file(os.path.join(EXAMPLES, f"{name}.kern"), fmad=True)
    ref = example_reference(name)
    inputs = ref.make_inputs(1000, np.random.default_rng(7))
    expected = ref.reference({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()})
    getattr(mod, name)(**inputs)
    for out, want in expected.items():
        np.testing.assert_allclose(inputs[out], want, rtol=1e-5, atol=1e-6, err_msg=f"{name}.{out}")


def test_f16_contraction_rounds_once_on_the_cpu():
    """An f16 a*b + c under --fmad is the correctly rounded f16 fma (the GPU: one fma.rn.f16)."""
    src = "kernel k(a: f16, b: f16, c: f16, y: f16[n] write) over n { let r: f16 = a * b + c; y = f32(r); }"
    mod = kernc.compile(src, fmad=True)
    assert "math.fma" in mod.ir("gpu") and "fma.rn.f16" in mod.ptx
    # a*b = 2 + 2^-10 is an f16 midpoint: unfused it ties to even (2); + 2^-24 the fused result is above
    a, b, c = np.float16(1.5), np.float16(1.333984375), np.float16(2.0 ** -24)
    y = np.zeros(1, np.float16)
    mod.k(a, b, c, y)
    assert y[0] == fma_reference(a, b, c, np.float16) == np.float16(2 + 2.0 ** -9)
    plain = np.zeros(1, np.float16)
    kernc.compile(src).k(a, b, c, plain)
    assert plain[0] == np.float16(2)


# -- the compile cache -------------------------------------------------------------------------------
@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KERNC_ALWAYS_COMPILE", raising=False)
    cache.reset()
    yield
    cache.reset()


def test_fmad_has_its_own_cache_entries(private_cache):
    plain = Compilation(SAXPY, "saxpy.kern", CompileOptions())
    fused = Compilation(SAXPY, "saxpy.kern", CompileOptions(fmad=True))
    assert not plain.from_cache and not fused.from_cache
    assert plain.cache_key != fused.cache_key
    assert "fma.rn.f32" in fused.ptx() and "fma.rn" not in plain.ptx()
    again_plain = Compilation(SAXPY, "saxpy.kern", CompileOptions())
    again_fused = Compilation(SAXPY, "saxpy.kern", CompileOptions(fmad=True))
    assert again_plain.from_cache and again_fused.from_cache
    assert "fma.rn" not in again_plain.ptx() and "fma.rn.f32" in again_fused.ptx()
    # the CLI's fast path (no MLIR) looks up the entry of its own option
    kw = dict(arch="sm_90", opt_level=3, index_bits=32)
    assert "fma.rn.f32" in cache.lookup_ptx(SAXPY, "saxpy.kern", fmad=True, **kw)
    assert "fma.rn" not in cache.lookup_ptx(SAXPY, "saxpy.kern", **kw)


def test_cli_compile_and_run_fmad(private_cache, tmp_path, capsys):
    for _ in range(2):  # the second round is answered from the cache (fast path for PTX)
        assert main(["compile", SAXPY_FILE]) == 0
        assert "fma.rn" not in capsys.readouterr().out
        assert main(["compile", SAXPY_FILE, "--fmad"]) == 0
        assert "fma.rn.f32" in capsys.readouterr().out
    a, x, y = saxpy_inputs(64)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    rc = main(["run", SAXPY_FILE, "--fmad", "--input", f"a={float(a)!r}", "--input", f"x=@{tmp_path / 'x.npy'}",
               "--input", f"y=@{tmp_path / 'y.npy'}", "--output-dir", str(tmp_path / "out")])
    assert rc == 0, capsys.readouterr().err
    got = np.load(tmp_path / "out" / "y.npy")
    np.testing.assert_array_equal(got, [fma_reference(a, xi, yi, F32) for xi, yi in zip(x, y)])


def test_subtracting_a_product_from_an_add_output_contracts():
    """`o -= a*b` on an `add` output lowered as `o + (0 - a*b)`: never contracted under --fmad (and
    the 0 - x lost a -0.0, see the next test)."""
    src = "kernel k(a: f32[n] read, b: f32[n] read, o: f32[n] add) over n { o -= a * b; }"
    mod = kernc.compile(src, fmad=True)
    assert "math.fma" in mod.ir("gpu") and re.search(r"\bfma\.rn\.f32\b", mod.ptx)
    rng = np.random.default_rng(7)
    a, b, o0 = (rng.standard_normal(4096).astype(np.float32) for _ in range(3))
    o = o0.copy()
    mod.k(a, b, o)
    expected = np.array([fma_reference(-x, y, z, np.float32) for x, y, z in zip(a, b, o0)], np.float32)
    np.testing.assert_array_equal(o, expected)
    assert np.any(o != o0 - a * b)  # the fused result differs from mul-then-sub somewhere


@pytest.mark.parametrize("fmad", [False, True])
def test_signed_zeros_of_compound_assignments(fmad):
    # IEEE: -0 - (+0) = -0; 0.0 + (-0.0) = +0
    sub = kernc.compile("kernel k(x: f32[n] read, o: f32[n] add) over n { o -= x; }", fmad=fmad)
    o = np.array([-0.0], np.float32)
    sub.k(np.array([0.0], np.float32), o)
    assert np.signbit(o[0])
    let = kernc.compile("kernel k(x: f32[n] read, o: f32[n] write) over n { let s = 0.0; s += x; o = s; }",
                        fmad=fmad)
    o = np.array([1.0], np.float32)
    let.k(np.array([-0.0], np.float32), o)
    assert o[0] == 0 and not np.signbit(o[0])
