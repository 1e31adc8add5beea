"""The accessor registry (``dialect/accessors.py``) and the ``shared_indices`` packing
(``dialect/shared_table.py``): the records agree with the kern verifiers, the frontend's checks and
the launcher's (which derive every accessor fact from them), the lowering's dispatch, the tables of
the registry's docstring, and the tables the launcher builds."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.dialect import accessors as A
from kernc.dialect import shared_table
from kernc.support.mlir import ir


def test_every_kind_is_in_one_place():
    assert [k.name for k in A.KINDS] == list(A.BY_NAME)
    assert len(set(A.BY_NAME)) == len(A.KINDS) == 17
    A._check_registry()
    for k in A.KINDS:
        assert A.kind(k.name) is k
        if k.default_form:
            assert A.kind(k.default_form).default and not k.default
    with pytest.raises(KeyError):
        A.kind("bogus")


#: The per-accessor tables the frontend and the launcher kept of their own before they derived
#: every fact from the registry (issue 19, phase two), and the modules that held them.
_OLD_TABLES = {
    "kernc.frontend.language": ("ACCESSORS", "ACCESS_PATTERNS", "INDEX_ACCESSORS", "BLOCK_WIDE_OUTPUTS",
                                "PER_THREAD_ADDS", "TABLE_FIELDS", "TABLE_ARGS", "PENDING_ACCESSORS",
                                "PENDING_LAYOUTS", "SUPPORTED_ACCESSORS"),
    "kernc.backend.binding": ("INDEXED_ACCESSORS",),
}


def _frontend_modules():
    import importlib
    import pkgutil

    import kernc.frontend

    return [importlib.import_module(f"kernc.frontend.{info.name}")
            for info in pkgutil.iter_modules(kernc.frontend.__path__)]


def test_no_layer_keeps_a_table_of_its_own():
    import importlib

    for module_name, names in _OLD_TABLES.items():
        module = importlib.import_module(module_name)
        assert [n for n in names if hasattr(module, n)] == [], module_name
    for module in _frontend_modules():
        assert [n for n in _OLD_TABLES["kernc.frontend.language"] if n in vars(module)] == [], module.__name__


def _program(kind: A.AccessorKind, mode: str) -> str:
    """A kernel with buffer ``x`` accessed through ``kind`` in ``mode`` (the language's spelling of
    the pattern, ``I`` its index buffer)."""
    args = ", ".join("0" if t is A.LanguageArg.INTEGER else "I" for _, t in kind.language_args)
    pattern = kind.name + (f"({args})" if args else "")
    body = {A.READ: "y = x.first;" if kind.pair else "y = x;",
            A.WRITE: "x = (1.0, 2.0);" if kind.pair else "x = 1.0;",
            A.ADD: "x += (1.0, 2.0);" if kind.pair else "x += 1.0;"}[mode]
    return f"kernel k(I: u32[n] read, x: f32[n] {mode} {pattern}, y: f32[n] write) over n {{ {body} }}\n"


@pytest.mark.parametrize("kind", A.LANGUAGE, ids=lambda k: k.name)
def test_the_checker_takes_each_pattern_in_its_record_s_modes(kind):
    """The checker accepts pattern ``kind`` in exactly the modes of its record, with the record's
    number of arguments; the kernel's hidden ``shared_indices`` tables are the record's ``tables``
    of ``I``."""
    from kernc import frontend
    from kernc.support.errors import CompileError

    for mode in A.OP_MODES:
        src = _program(kind, mode)
        if mode not in kind.modes:
            with pytest.raises(CompileError, match=f"accessor '{kind.name}' (needs|is only for)"):
                frontend.check(frontend.parse(src, "t.kern"))
            continue
        info = frontend.check(frontend.parse(src, "t.kern")).kernels[0].info
        x = next(s.buffer for s in info.params if s.name == "x")
        assert x.kind is kind and x.index_param == ("I" if kind.index_param else None)
        assert [(t.name, t.field) for t in info.tables] == [
            (shared_table.table_name("I", f), f) for f in kind.tables]
    if kind.language_args:
        with pytest.raises(CompileError, match=f"accessor '{kind.name}' takes {len(kind.language_args)} "):
            frontend.check(frontend.parse(_program(kind, kind.modes[0]).replace(f"{kind.name}(", f"{kind.name}(0, 0, "),
                                          "t.kern"))


def _sig_param(kind: A.AccessorKind, mode: str):
    from kernc.dialect.signature import Param

    return Param("x", "buffer", "f32", mode, kind.name, "I" if kind.index_param else None, ["n"],
                 layout="(n):(1)", storage_shape=["n"],
                 min_elements=kind.elements.min_elements("n"), zero_init=mode in kind.zero_init)


@pytest.mark.parametrize("kind", [k for k in A.KINDS if k is not A.VIEW], ids=lambda k: k.name)
def test_the_launcher_checks_follow_the_record(kind):
    """What the launcher checks of a buffer's element count is the record's ``elements``: ``P``
    elements (``sequential``), one per block (``block_sum``), ``min_elements`` (``pair``,
    ``unique``), and every ``I[t]`` in range (the index kinds)."""
    from kernc.backend import binding
    from kernc.dialect.signature import KernelSignature, Param
    from kernc.support.errors import KerncLaunchError

    index = Param("I", "buffer", "u32", "read", "sequential", None, ["n"], layout="(n):(1)", storage_shape=["n"])
    x = _sig_param(kind, kind.modes[0])
    sig = KernelSignature("k", [index, x], ["n"], "n")
    plan = binding.BindPlan(sig)
    assert (x in [p for p, _ in plan.per_item]) == (kind.elements is A.ElementCount.PROBLEM)
    assert (x in plan.checked_buffers) == (kind.elements in (A.ElementCount.BLOCKS, A.ElementCount.ONE,
                                                               A.ElementCount.PROBLEM_PLUS_ONE))
    flat = {"I": np.array([0, 5, 1], dtype=np.uint32), "x": np.zeros(4, np.float32)}
    if kind.elements is A.ElementCount.INDEX_VALUES:
        with pytest.raises(KerncLaunchError, match=r"argument 'I': entry 1 is 5, but 'x' .* has 3 elements"):
            binding._check_index_values(sig, sig.params, flat, {"n": 3}, 3)
    else:
        binding._check_index_values(sig, sig.params, flat, {"n": 3}, 3)


@pytest.mark.parametrize("kind", [k for k in A.KINDS if k is not A.VIEW], ids=lambda k: k.name)
def test_the_record_names_the_module_that_lowers_it(kind):
    """``AccessorKind.lowering`` is a module of ``passes/`` and ``kern-lower-accessors``
    dispatches on it: per-thread kinds to its ``lower``, block-wide reads to its ``stage`` and
    block-wide updates to its ``update``."""
    import pathlib

    import kernc.passes
    from kernc.passes import lower_accessors

    assert (pathlib.Path(kernc.passes.__file__).parent / f"{kind.lowering}.py").is_file()
    module = lower_accessors.lowering(kind)
    assert module.__name__ == f"kernc.passes.{kind.lowering}"
    wanted = {"lower"} if not kind.block_wide else (
        {"stage"} if A.READ in kind.modes else set()) | ({"update"} if {A.WRITE, A.ADD} & set(kind.modes) else set())
    assert wanted and all(callable(getattr(module, f, None)) for f in wanted), (kind.name, wanted)


def test_the_view_kind_is_lowered_by_the_view_lowering():
    from kernc.passes import lower_accessors

    assert A.VIEW.lowering == "lower_views"
    with pytest.raises(KeyError):
        lower_accessors.lowering(A.VIEW)


def _docstring_table(header: str) -> dict:
    """The rows of the registry docstring's table whose header line starts with ``header``: kind
    name -> its columns (split at two or more spaces)."""
    import re

    lines = A.__doc__.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(header))
    rows = {}
    for line in lines[at + 1:]:
        if not line.strip():
            break
        cols = re.split(r"\s{2,}", line.strip())
        rows[cols[0]] = cols[1:]
    return rows


def test_the_docstring_tables_are_the_records():
    """A newcomer reads the registry's docstring: its tables say what the records say."""
    kinds = _docstring_table("kind                  modes")
    assert list(kinds) == [k.name for k in A.KINDS]
    for k in A.KINDS:
        modes, _, _, block_wide, pair, default = kinds[k.name]
        assert modes.split() == list(k.modes), k.name
        assert (block_wide, pair, default) == tuple("yes" if f else "no" for f in (k.block_wide, k.pair, k.default))
    where = _docstring_table("kind                  lowered in")
    assert list(where) == [k.name for k in A.KINDS]
    for k in A.KINDS:
        lowering, elements, zero_fill, tables = where[k.name]
        assert lowering == k.lowering, k.name
        assert elements == ("-" if k.elements is A.ElementCount.NONE else k.elements.value), k.name
        assert zero_fill == (" ".join(k.zero_init) or "-"), k.name
        assert tables == (" ".join(k.tables) or "-"), k.name


@pytest.mark.parametrize("kind", A.LANGUAGE, ids=lambda k: k.name)
def test_signature_fields_follow_the_record(kind):
    """``min_elements``/``zero_init`` of a buffer's signature param, as the frontend writes them,
    are the record's ``elements`` and ``zero_init``."""
    from kernc.frontend.symbols import BufferInfo

    for mode in kind.modes:
        b = BufferInfo("x", None, ["n"], 1, mode, kind.name, [], None, None, [], None)
        extras = b.signature_extras("n")
        assert extras["min_elements"] == kind.elements.min_elements("n")
        assert extras["zero_init"] == (mode in kind.zero_init)
        assert b.is_pair == kind.pair


@pytest.mark.parametrize("name", ["strided_default", "pair_strided_default"])
def test_the_default_forms_spell_their_pattern(name):
    from kernc.frontend.symbols import BufferInfo

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
