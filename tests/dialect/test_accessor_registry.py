"""The accessor registry (``dialect/accessors.py``) and the ``shared_indices`` packing
(``dialect/shared_table.py``): the records agree with the kern verifiers, with the tables the
frontend and the launcher still keep of their own (until they derive them from the registry), and
with the tables the launcher builds."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.dialect import accessors as A
from kernc.dialect import shared_table
from kernc.support.mlir import ir


def test_every_kind_is_in_one_place():
    assert [k.name for k in A.KINDS] == list(A.BY_NAME)
    assert len(set(A.BY_NAME)) == len(A.KINDS) == 13
    A._check_registry()
    for k in A.KINDS:
        assert A.kind(k.name) is k
        if k.default_form:
            assert A.kind(k.default_form).default and not k.default
    with pytest.raises(KeyError):
        A.kind("bogus")


def _frontend_table(name: str):
    """The frontend's table ``name``, from whichever of its modules defines it (the checker is
    being split into modules)."""
    import importlib
    import pkgutil

    import kernc.frontend

    for info in pkgutil.iter_modules(kernc.frontend.__path__):
        module = importlib.import_module(f"kernc.frontend.{info.name}")
        if name in vars(module):
            return vars(module)[name]
    pytest.skip(f"the frontend has no table {name} any more (it derives it from the registry)")


class _Check:
    def __getattr__(self, name):
        return _frontend_table(name)


def test_the_frontend_tables_are_the_registry_s():
    """What the frontend should derive from the registry (issue 19, phase two): each of its tables
    equals the registry's derivation today."""
    check = _Check()

    assert check.ACCESSORS == {k.name: len(k.language_args) for k in A.LANGUAGE}
    for mode in A.OP_MODES:
        assert set(check.ACCESS_PATTERNS[mode]) == {k.name for k in A.LANGUAGE if mode in k.modes}
    assert set(check.INDEX_ACCESSORS) == {k.name for k in A.LANGUAGE if k.index_param}
    assert set(check.BLOCK_WIDE_OUTPUTS) == {k.name for k in A.for_mode(A.WRITE) if k.block_wide}
    assert set(check.PER_THREAD_ADDS) == {k.name for k in A.for_mode(A.ADD) if not k.block_wide}
    assert check.TABLE_FIELDS == shared_table.TABLES
    assert check.TABLE_ARGS == {k.name: k.table_args for k in A.KINDS if k.table_args}


def test_the_launcher_tables_are_the_registry_s():
    from kernc.backend import binding, shared_indices

    assert set(binding.INDEXED_ACCESSORS) == {k.name for k in A.KINDS if k.elements is A.ElementCount.INDEX_VALUES}
    assert shared_indices.FIELDS == shared_table.TABLES


@pytest.mark.parametrize("kind", A.LANGUAGE, ids=lambda k: k.name)
def test_signature_fields_follow_the_record(kind):
    """``min_elements``/``zero_init`` of a buffer's signature param, as the frontend writes them,
    are the record's ``elements`` and ``zero_init``."""
    BufferInfo = _frontend_table("BufferInfo")
    for mode in kind.modes:
        b = BufferInfo("x", None, ["n"], 1, mode, kind.name, [], None, None, [], None)
        extras = b.signature_extras("n")
        assert extras["min_elements"] == kind.elements.min_elements("n")
        assert extras["zero_init"] == (mode in kind.zero_init)
        assert b.is_pair == kind.pair


@pytest.mark.parametrize("name", ["strided_default", "pair_strided_default"])
def test_the_default_forms_spell_their_pattern(name):
    BufferInfo = _frontend_table("BufferInfo")
    b = BufferInfo("x", None, ["n"], 1, "read", name, [], None, None, [], None)
    assert b.pattern_text == A.kind(name).spelling


def _verify(op_text: str) -> str | None:
    """The verifier's message for a function holding ``op_text`` (``None``: it verifies)."""
    from kernc.compiler import context, mlir_error_text

    src = ("func.func @f(%x: memref<?xf32>, %i: memref<?xi32>, %u: memref<?xi32>, %o: index, "
           f"%n: index, %v: f32) {{\n  {op_text}\n  return\n}}")
    with context():
        try:
            ir.Module.parse(src)
        except ir.MLIRError as err:
            return mlir_error_text(err)
    return None


_ARG_OPERANDS = {A.Operand.INDEX: ("%o", "index"), A.Operand.INDEX_BUFFER: ("%i", "memref<?xi32>"),
                 A.Operand.TABLE: ("%u", "memref<?xi32>")}


def _op(mode: str, kind: A.AccessorKind, default: str = "") -> str:
    args = [_ARG_OPERANDS[a.type] for a in kind.ir_args]
    values = 2 if kind.pair else 1
    operands = ["%x"] + [a for a, _ in args] + ["%n"]
    types = ["memref<?xf32>"] + [t for _, t in args] + ["index"]
    attrs = (f'accessor = "{kind.name}", layout = "(n):(1)", syms = ["n"]{default}, '
             f"operandSegmentSizes = array<i32: 1, {len(args)}, 1" + ("" if mode == "read" else f", {values}") + ">")
    if mode == "read":
        res = ", ".join(["f32"] * values)
        return f'%r:{values} = "kern.read"({", ".join(operands)}) {{{attrs}}} : ({", ".join(types)}) -> ({res})'
    return (f'"kern.{mode}"({", ".join(operands + ["%v"] * values)}) {{{attrs}}} : '
            f'({", ".join(types + ["f32"] * values)}) -> ()')


@pytest.mark.parametrize("kind", [k for k in A.KINDS if k is not A.VIEW], ids=lambda k: k.name)
def test_the_verifiers_take_each_kind_in_its_modes_only(kind):
    for mode in A.OP_MODES:
        default = ", default = 0.0 : f32" if kind.default else ""
        err = _verify(_op(mode, kind, default))
        if mode in kind.modes:
            assert err is None, (mode, err)
        else:
            assert f"unknown accessor '{kind.name}'" in err
    if kind.default:  # a *_default read without its value
        assert "needs a 'default' attribute" in _verify(_op("read", kind))


def test_the_view_kind_has_no_accessor_ops():
    assert "unknown accessor 'view'" in _verify(_op("read", A.VIEW))


def test_the_packing_is_the_launcher_s():
    """The tables ``backend/shared_indices.py`` builds decode with the packing helpers: ``target``
    is ``rank | count << 16``, ``perm`` is ``thread | rank << 16``."""
    from kernc.backend.shared_indices import shared_indices

    rng = np.random.default_rng(5)
    B = 64
    idx = rng.integers(0, 40, size=300).astype(np.uint32)
    t = shared_indices(idx, B)
    for blk in range(len(t.count)):
        lo, hi = blk * B, min((blk + 1) * B, len(idx))
        values = np.unique(idx[lo:hi])
        count = shared_table.high_half(t.target[lo:hi])
        rank = shared_table.low_half(t.target[lo:hi])
        assert (count == len(values)).all() and t.count[blk] == len(values)
        assert (values[rank] == idx[lo:hi]).all()
        thread = shared_table.low_half(t.perm[lo:hi])
        assert (shared_table.high_half(t.perm[lo:hi]) == rank[thread]).all()
        assert (shared_table.pack(rank, count) == t.target[lo:hi]).all()
    assert shared_table.LOW_MASK == 0xFFFF and shared_table.MAX_BLOCK >= 1024
    assert shared_table.table_name("I", shared_table.TARGET) == "I.target"


def test_a_signature_names_known_kinds_and_tables_only():
    """A hand-edited ``kern.signature`` (``kernc opt``) with an accessor or table the registry does
    not know is refused before a pass or the launcher relies on it."""
    from kernc.dialect.signature import KernelSignature, Param

    def sig(*params):
        return KernelSignature("k", list(params), ["n"], "n")

    ok = sig(Param("x", "buffer", "f32", "read", "shared", "I", ["n"], layout="(n):(1)", storage_shape=["n"]),
             Param("I", "buffer", "u32", "read", "sequential", None, ["n"], layout="(n):(1)", storage_shape=["n"]),
             *[Param(shared_table.table_name("I", f), "table", "u32", table_of="I", table_field=f)
               for f in shared_table.TABLES])
    assert ok.problem() is None
    bad = sig(Param("x", "buffer", "f32", "read", "bogus", None, ["n"]))
    assert "param 'x': unknown accessor 'bogus'" in bad.problem()
    table = sig(Param("I.what", "table", "u32", table_of="I", table_field="what"))
    assert "param 'I.what': unknown table 'what'" in table.problem()
