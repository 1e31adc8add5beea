"""kernc's packages import one way: ``kernc.support`` (errors, the MLIR shim, private folders, exact
numbers, input and output files, the version) imports nothing else of kernc; the layers (dialect,
frontend, passes, backend) import ``kernc.support`` and each other, never the package root (the
API, the CLI, the driver, and the root's public names ``kernc.errors``, ``kernc.mlir`` and
``kernc.layout``: the layers fold layouts with :mod:`kernc.dialect.layout_algebra` itself); the
benchmark runner does not import the CLI that runs it; and no module of kernc imports one that
imports it back, directly or through others. Imports inside functions count."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAYERS = ("dialect", "frontend", "passes", "backend")


def _kernc_imports(path: pathlib.Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every absolute import of a ``kernc`` module in the file; ``from kernc
    import x`` is ``kernc.x`` (a submodule or a name of the package root)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "kernc"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "kernc":
                found += [(node.lineno, f"kernc.{a.name}") for a in node.names]
            elif node.module.startswith("kernc."):
                found.append((node.lineno, node.module))
    return found


def _sources(folder: str) -> list[pathlib.Path]:
    files = sorted((ROOT / folder).rglob("*.py"))
    assert files, folder
    return files


def test_support_imports_nothing_else_of_kernc():
    bad = [f"{p.relative_to(ROOT)}:{line}: {m}" for p in _sources("support")
           for line, m in _kernc_imports(p) if not m.startswith("kernc.support")]
    assert bad == []


def test_no_layer_imports_the_package_root():
    allowed = ("kernc.support", *(f"kernc.{layer}" for layer in LAYERS))
    bad = [f"{p.relative_to(ROOT)}:{line}: {m}" for layer in LAYERS for p in _sources(layer)
           for line, m in _kernc_imports(p) if not m.startswith(allowed)]
    assert bad == []


def test_the_bench_runner_does_not_import_the_cli():
    names = [m for p in _sources("bench") for _, m in _kernc_imports(p)]
    assert names and not [m for m in names if m.startswith(("kernc.cli", "kernc.api"))]


def test_the_public_names_are_the_support_modules():
    """``kernc.errors`` and ``kernc.mlir`` are the modules of ``kernc.support`` themselves, so a
    patched attribute or an ``isinstance`` check sees one module whichever name was imported."""
    import kernc
    import kernc.errors
    import kernc.mlir
    from kernc.support import errors, mlir

    assert kernc.errors is errors and kernc.mlir is mlir
    assert kernc.KerncLaunchError is errors.KerncLaunchError and kernc.CompileError is errors.CompileError
    from kernc.errors import Diagnostic

    assert Diagnostic is errors.Diagnostic


#: The installed packages and the folders that hold them (``pyproject.toml``'s ``package-dir``).
PACKAGES = {"kernc": "kernc", "kernc.frontend": "frontend", "kernc.dialect": "dialect",
            "kernc.passes": "passes", "kernc.backend": "backend", "kernc.bench": "bench",
            "kernc.support": "support"}


def _modules() -> dict[str, pathlib.Path]:
    """Every module of kernc by its dotted name (a package by its own name, from ``__init__.py``)."""
    modules = {}
    for package, folder in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def _import_graph() -> dict[str, set[str]]:
    """module -> the kernc modules it imports (at the top or inside functions): ``import a.b`` is
    ``a.b``; ``from a import b`` is ``a.b`` where that is a module, else ``a``; relative imports
    are resolved against the module's package."""
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                target = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
                if target not in modules:
                    continue
                found = {f"{target}.{a.name}" for a in node.names} & modules.keys()
                deps |= found
                if len(found) < len(node.names):
                    deps.add(target)
        deps.discard(name)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    """No kernc module imports itself through others, imports inside functions included (a lazy
    import for a cheap cold start is fine; one that closes a circle is not)."""
    graph = _import_graph()
    assert len(graph) > 100 and "kernc.dialect.accessors" in graph["kernc.frontend.accessor_clauses"]
    assert _cycles(graph) == []
