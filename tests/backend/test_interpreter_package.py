"""The shape of the interpreter package (backend/interpreter/): small modules, imports pointing one
way (none back up to the frontend or the passes, no cycle, imports inside functions included), one
handler per op name, and the public names importable from the package as before the split."""

from __future__ import annotations

import ast
import os

import kernc.backend.interpreter as pkg
from kernc.backend.interpreter import translate

PKG_DIR = os.path.dirname(pkg.__file__)
MODULES = sorted(f[:-3] for f in os.listdir(PKG_DIR) if f.endswith(".py"))
#: what the interpreter may import outside its package (besides the standard library and numpy)
#: (kernc.backend.tensor_map: the TensorMap description a tensor-map argument is, a leaf module)
ALLOWED = ("kernc.support.errors", "kernc.support.mlir", "kernc.backend.exact_fma", "kernc.backend.stats_table",
           "kernc.dialect.signature", "kernc.backend.tensor_map", "ml_dtypes")


def test_tensor_map_is_a_leaf():
    """What the interpreter may import of the host side imports nothing of kernc but the errors."""
    path = os.path.join(os.path.dirname(PKG_DIR), "tensor_map.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
    assert {m for m in mods if m and m.startswith("kernc")} == {"kernc.support.errors"}


def _imports(name: str):
    """(sibling modules, other kernc modules) that module ``name`` imports, at any depth."""
    tree = ast.parse(open(os.path.join(PKG_DIR, f"{name}.py"), encoding="utf-8").read())
    siblings, outside = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                if node.module:
                    siblings.add(node.module.split(".")[0])
                else:
                    siblings.update(a.name for a in node.names)
            elif node.level == 0 and node.module:  # `from kernc.backend import exact_fma` names the module
                outside.update(f"{node.module}.{a.name}" if node.module == "kernc.backend" else node.module
                               for a in node.names)
        elif isinstance(node, ast.Import):
            outside.update(a.name for a in node.names)
    return siblings - {"__init__"}, outside


def test_modules_are_small():
    for name in MODULES:
        with open(os.path.join(PKG_DIR, f"{name}.py"), encoding="utf-8") as f:
            assert sum(1 for _ in f) <= 800, name


def test_imports_point_down_and_form_no_cycle():
    graph = {}
    for name in MODULES:
        siblings, outside = _imports(name)
        graph[name] = siblings
        for mod in outside:
            if mod.startswith("kernc"):
                assert mod in ALLOWED, f"{name} imports {mod}"
        if name != "__init__":
            assert "__init__" not in siblings
    state: dict = {}

    def visit(n, path):
        if state.get(n) == "done":
            return
        assert state.get(n) != "open", "import cycle: " + " -> ".join(path + [n])
        state[n] = "open"
        for m in graph.get(n, ()):
            visit(m, path + [n])
        state[n] = "done"

    for n in graph:
        visit(n, [])


def test_every_handler_is_registered_once_beside_its_semantics():
    names = set(translate.HANDLERS)
    for op in ("arith.addi", "arith.cmpf", "arith.index_cast", "memref.load", "memref.atomic_rmw", "gpu.shuffle",
               "gpu.barrier", "scf.for", "scf.while", "vector.load", "math.fma"):
        assert op in names, op
    by_module = {}
    for op, fn in translate.HANDLERS.items():
        by_module.setdefault(fn.__module__.rsplit(".", 1)[-1], set()).add(op.split(".")[0])
    assert by_module["control"] == {"scf"}
    assert by_module["memory"] == {"memref"}
    assert "scf" not in by_module["numeric"] and "memref" not in by_module["numeric"]


def test_the_public_names():
    from kernc.backend.interpreter import (  # noqa: F401
        MAX_LANES_PER_BATCH,
        WARP_SIZE,
        Interpreter,
        InterpreterUnsupportedError,
        RunStats,
    )

    assert set(pkg.__all__) >= {"Interpreter", "RunStats", "InterpreterUnsupportedError", "MAX_LANES_PER_BATCH",
                                "WARP_SIZE"}
    assert issubclass(InterpreterUnsupportedError, NotImplementedError)
