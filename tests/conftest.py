"""Shared pytest fixtures: compiled examples (compiled once per session) and device detection."""

from __future__ import annotations

import importlib.util
import os

import pytest

# The verifier runs after every pass in the test suite (also in lit subprocesses).
os.environ.setdefault("KERNC_VERIFY_EACH", "1")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
EXAMPLE_NAMES = sorted(
    f[:-5] for f in os.listdir(EXAMPLES)
    if f.endswith(".kern") and os.path.exists(os.path.join(EXAMPLES, f[:-5] + ".py"))
)

_compiled: dict = {}


@pytest.fixture(scope="session", autouse=True)
def _private_compile_cache(tmp_path_factory):
    """Point the compile cache at a per-session temporary folder (also for CLI subprocesses), so
    the suite never reads or writes the user's real cache."""
    saved = os.environ.get("KERNC_CACHE_DIR")
    os.environ["KERNC_CACHE_DIR"] = str(tmp_path_factory.mktemp("kernc-cache"))
    yield
    if saved is None:
        os.environ.pop("KERNC_CACHE_DIR", None)
    else:
        os.environ["KERNC_CACHE_DIR"] = saved


@pytest.fixture
def always_staged(monkeypatch):
    """Launch the staged (tiled) kernel of kern-coalesce-views at every shape, for tests of the
    staged kernel itself: a launch whose tiles would be mostly empty otherwise runs the kernel
    compiled without the pass (``launch_policy.staging_pays``)."""
    from kernc.backend import launch_policy

    monkeypatch.setattr(launch_policy, "staging_pays", lambda sig, env: True)


def compiled_example(name: str):
    """The kernc Module of ``examples/NAME.kern``, compiled once per test session."""
    import kernc

    if name not in _compiled:
        _compiled[name] = kernc.compile_file(os.path.join(EXAMPLES, f"{name}.kern"))
    return _compiled[name]


def example_reference(name: str):
    """The numpy reference module ``examples/NAME.py``."""
    spec = importlib.util.spec_from_file_location(f"kernc_example_{name}", os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gpu_available() -> bool:
    try:
        from kernc.backend import cuda

        return cuda.available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU with CuPy (none found)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
