"""The kern dialect: builders, verifiers, loading into many contexts."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import kernc
from kernc.dialect import kern
from kernc.support.mlir import ir


def test_load_into_fresh_contexts_repeatedly():
    """Regression: loading remembered contexts by id(), which Python reuses after a context dies
    (a dead context's slot is reused at once: a few rounds reach it)."""
    for _ in range(4):
        ctx = ir.Context()
        kern.load(ctx)
        assert ctx.is_registered_operation("kern.read")
        del ctx
        gc.collect()


def test_builders_keep_empty_syms():
    """Regression: the ext builder dropped an empty ``syms`` array (a fully static layout)."""
    ctx = ir.Context()
    kern.load(ctx)
    with ctx, ir.Location.unknown():
        f32 = ir.F32Type.get()
        mt = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()], f32)
        module = ir.Module.create()
        from kernc.support.mlir import dialect

        func = dialect("func")
        with ir.InsertionPoint(module.body):
            fn = func.FuncOp("k", ir.FunctionType.get([mt], []))
            block = fn.add_entry_block()
            with ir.InsertionPoint(block):
                r = kern.read(block.arguments[0], [], [], "sequential", "(4,2):(1,4)", [], [f32, f32])
                kern.write("add", block.arguments[0], [], [], list(r.results), "sequential", "(4,2):(1,4)", [])
                func.ReturnOp([])
        assert module.operation.verify()
        text = str(module)
        assert 'syms = []' in text and text.count('"kern.') == 2


def test_static_layout_kernel_end_to_end():
    mod = kernc.compile(
        "layout tile = (4,2):(1,4);\n"
        "kernel k(x: f32[4, 2] read as tile, y: f32[4, 2] write as tile) over P { y = x * 2.0; }\n"
    )
    assert mod.k.signature.sizes == ["P"]
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    y = np.zeros_like(x)
    mod.k(x, y, P=4)
    assert np.array_equal(y, 2 * x)
    assert ".entry k(" in mod.ptx


@pytest.mark.parametrize("text,message", [
    ('"kern.read"(%x, %n) {accessor = "bogus", layout = "(n):(1)", syms = ["n"], operandSegmentSizes = array<i32: 1, 0, 1>} : (memref<?xf32>, index) -> f32',
     "unknown accessor 'bogus'"),
    ('"kern.read"(%x, %n) {accessor = "sequential", layout = "(n):(1)", syms = ["m"], operandSegmentSizes = array<i32: 1, 0, 1>} : (memref<?xf32>, index) -> f32',
     "names size symbols ['n']"),
    ('"kern.read"(%x, %n) {accessor = "sequential", layout = "(n):(1)", syms = ["n"], operandSegmentSizes = array<i32: 1, 0, 1>} : (memref<?xf32>, index) -> i32',
     "element type"),
    ('"kern.read"(%x, %n) {accessor = "strided", layout = "(n):(1)", syms = ["n"], operandSegmentSizes = array<i32: 1, 0, 1>} : (memref<?xf32>, index) -> f32',
     "takes 2 args"),
    ('"kern.read"(%x, %n) {accessor = "sequential", layout = "(n:(1)", syms = ["n"], operandSegmentSizes = array<i32: 1, 0, 1>} : (memref<?xf32>, index) -> f32',
     "bad layout"),
])
def test_verifier_messages(text, message):
    from kernc.compiler import context, mlir_error_text

    src = f"func.func @f(%x: memref<?xf32>, %n: index) {{\n  %v = {text}\n  return\n}}"
    with context():
        with pytest.raises(ir.MLIRError) as info:
            ir.Module.parse(src)
    assert message in mlir_error_text(info.value)


@pytest.mark.parametrize("text,message", [
    ('"kern.group_reduce"(%f) {kind = "addi", axes = [1]} : (f32) -> f32', "'addi' needs an integer value"),
    ('"kern.group_reduce"(%i) {kind = "maximumf", axes = [1]} : (i32) -> i32', "'maximumf' needs a float value"),
    ('"kern.group_reduce"(%f) {kind = "mul", axes = [1]} : (f32) -> f32', "kind must be one of"),
    ('"kern.group_reduce"(%f) {kind = "addf", axes = [1, 0]} : (f32) -> f32', "distinct coordinate positions"),
    ('"kern.group_reduce"(%f) {kind = "addf", axes = []} : (f32) -> f32', "distinct coordinate positions"),
    ('"kern.group_reduce"(%f) {kind = "addf", axes = [1]} : (f32) -> f64', "the result must have the value's type"),
    ('"kern.group_reduce"(%h) {kind = "addf", axes = [1]} : (f16) -> f16', "must be f32, f64 or an integer"),
    ('"kern.group_reduce"(%f) {kind = "addf"} : (f32) -> f32', "requires attribute 'axes'"),
])
def test_group_reduce_verifier(text, message):
    from kernc.compiler import context, mlir_error_text

    src = (f"func.func @f(%f: f32, %i: i32, %h: f16) {{\n  %v = {text}\n  return\n}}")
    with context():
        with pytest.raises(ir.MLIRError) as info:
            ir.Module.parse(src)
    assert message in mlir_error_text(info.value)


def test_group_reduce_verifies():
    from kernc.compiler import context

    src = ('func.func @f(%f: f32, %b: i1) {\n  %v = "kern.group_reduce"(%f) {kind = "maximumf", axes = [0, 2]}'
           ' : (f32) -> f32\n  %w = "kern.group_reduce"(%b) {kind = "andi", axes = [1]} : (i1) -> i1\n  return\n}')
    with context():
        assert "kern.group_reduce" in str(ir.Module.parse(src))
