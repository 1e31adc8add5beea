"""``dialect/access.py``: the typed views the passes read kern ops through."""

from __future__ import annotations

import pytest

from kernc.compiler import Compilation, CompileOptions, context
from kernc.dialect import accessors as A
from kernc.dialect.access import Access, Coordinates, Delinearize, ViewAccess
from kernc.support.mlir import ir
from kernc.passes.base import walk_ops

SRC = """
kernel k(x: f32[n, 3] read indexed(I), I: u32[m] read, s: f32[n] read strided(o, 2) default -1.5,
         p: f32[m] read pair, q: f32[m] read shared(J), J: u32[m] read, o: index,
         y: f32[m, 3] write, z: f32[n] add shared_sum(J), w: f32[1] add sum) over m {
    y = x + p.first + p.second + s + q;
    z = x[0];
    w = s;
}
"""


@pytest.fixture(scope="module")
def kern_module():
    text = Compilation(SRC, "k.kern", CompileOptions()).kern_ir()
    with context():
        yield ir.Module.parse(text)


def _accesses(module) -> dict:
    out = {}
    for op in walk_ops(module, {"kern.read", "kern.write", "kern.add"}):
        acc = Access.from_op(op)
        out[(acc.mode, acc.kind.name)] = acc
    return out


def test_accessor_ops_decode_to_their_records(kern_module):
    acc = _accesses(kern_module)
    assert set(acc) == {("read", "indexed"), ("read", "strided_default"), ("read", "pair"),
                        ("read", "shared"), ("write", "sequential"), ("add", "shared_sum"),
                        ("add", "sum")}
    x = acc["read", "indexed"]
    assert x.kind is A.INDEXED and x.is_read and x.components == 3 and len(x.values) == 3
    assert x.index_param == x.args[0] and x.layout_text == "(n,3):(3,1)" and x.syms == ["n"]
    assert str(x.compute) == "f32" and x.default is None and len(x.sizes) == 1
    s = acc["read", "strided_default"]
    off, step = s.offset_stride
    assert s.args == [off, step] and s.index_param is None
    assert ir.FloatAttr(s.default).value == -1.5 and s.default.type == s.compute
    p = acc["read", "pair"]
    assert p.kind.pair and len(p.values) == 2 and p.components == 1
    assert p.element(0) == [p.values[0]] and p.element(1) == [p.values[1]]
    q = acc["read", "shared"]
    assert q.table("unique") == q.args[0] and q.table("target") == q.args[1] and q.index_param is None
    with pytest.raises(KeyError):
        q.table("perm")
    z = acc["add", "shared_sum"]
    assert z.table("perm") == z.args[1] and not z.is_read and len(z.values) == 1
    with pytest.raises(ValueError):
        _ = z.offset_stride
    assert acc["add", "sum"].kind is A.SUM and acc["write", "sequential"].components == 3


VIEWS = """
layout rowmaj(R, C) = (R, C):(C, 1);
kernel t(a: f32[R, C] view as rowmaj(R, C), b: f32[C, R] view as rowmaj(C, R)) over (i, j) in (R, C) {
    if a.in_bounds(i - 1, j) { b[j, i] = a.checked(i - 1, j); }
}
"""


def test_view_ops_decode():
    text = Compilation(VIEWS, "t.kern", CompileOptions()).kern_ir()
    with context():
        module = ir.Module.parse(text)
        (load,) = [ViewAccess.from_op(op) for op in walk_ops(module, {"kern.view_load"})]
        (store,) = [ViewAccess.from_op(op) for op in walk_ops(module, {"kern.view_store"})]
        (delin,) = [Delinearize.from_op(op) for op in walk_ops(module, {"kern.delinearize"})]
        bounds = [Coordinates.from_op(op) for op in walk_ops(module, {"kern.in_bounds"})]
        assert not load.is_store and load.checked and ir.FloatAttr(load.default).value == 0.0
        assert load.value == load.op.results[0] and str(load.layout) == "(R,C):(C,1)"
        assert load.swizzle is None and len(load.coords) == 2 and load.syms == ["R", "C"]
        assert store.is_store and not store.checked and store.mask is None
        assert store.value == store.op.operands[ViewAccess.value_operand(store.op)]
        assert store.coords[0] == store.op.operands[ViewAccess.coord_operand(0)]
        assert delin.coord_names == ["i", "j"] and len(delin.extents) == 2 and len(delin.coords) == 2
        assert all(len(c.coords) == 2 and len(c.sizes) == 2 for c in bounds) and bounds
    with pytest.raises(KeyError):
        with context():
            module = ir.Module.parse(text)
            ViewAccess.from_op(walk_ops(module, {"kern.delinearize"})[0])
