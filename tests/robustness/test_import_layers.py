"""kernc's packages import one way: ``kernc.support`` (errors, the MLIR shim, private folders, exact
numbers, input and output files) imports nothing else of kernc; the layers (dialect, frontend,
passes, backend) import ``kernc.support`` and each other, never the package root (the API, the CLI,
the driver, and the root's public names ``kernc.errors`` and ``kernc.mlir``); the benchmark runner
does not import the CLI that runs it. Imports inside functions count.

One exception is listed, not hidden: the dialect, the frontend and kern-fold-layouts still fold
layouts with ``kernc.layout``, the root's public name of :mod:`kernc.dialect.layout_algebra` (which
``tests/e2e/test_cold_start.py`` names as the module a layout program loads)."""

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
    # `import kernc` alone (the compile cache reads kernc.__version__) names the package that is
    # always imported before any of its subpackages; kernc.layout: see the module docstring
    allowed = ("kernc.support", *(f"kernc.{layer}" for layer in LAYERS))
    bad = [f"{p.relative_to(ROOT)}:{line}: {m}" for layer in LAYERS for p in _sources(layer)
           for line, m in _kernc_imports(p) if m not in ("kernc", "kernc.layout") and not m.startswith(allowed)]
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
