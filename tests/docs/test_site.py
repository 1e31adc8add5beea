"""The documentation site (``docs/``) builds with warnings as errors, and its generated pages hold
what they are made from: the CLI reference from the argument parser, a page per pass with its lit
test, the examples gallery with a checked CPU run, layout pictures drawn by ``kernc layout --svg``.

Needs the ``docs`` extra (``pip install -e '.[docs]'``; the ``test`` extra includes it): skipped
only when Sphinx, MyST or mlir-pygments is not installed. One build (~20 s) serves every case.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("sphinx", reason="the docs extra is not installed")
pytest.importorskip("myst_parser", reason="the docs extra is not installed")
pytest.importorskip("mlir_pygments", reason="the docs extra is not installed")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.docs


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(out / ".doctrees"), "docs", str(out / "html")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out / "html"


def _page(site, rel):
    return (site / rel).read_text(encoding="utf-8")


def _text(site, rel):
    """The page's text without tags (highlighted code is split into spans)."""
    import html

    return html.unescape(re.sub(r"<[^>]+>", "", _page(site, rel)))


def test_the_main_pages_exist(site):
    for rel in ("index.html", "getting-started.html", "language.html", "guides/accessors.html",
                "guides/layouts.html", "api.html", "performance.html", "_generated/cli.html",
                "_generated/passes/index.html", "_generated/examples/index.html"):
        assert (site / rel).is_file(), rel


def test_getting_started_shows_the_readme_commands(site):
    html = _text(site, "getting-started.html")
    assert "examples/run.py saxpy" in html and "python -m pytest -q" in html


def test_kern_blocks_are_highlighted(site):
    html = _page(site, "language.html")
    assert 'class="highlight-kern' in html
    assert '<span class="k">kernel</span>' in html  # the lexer's Keyword token


def test_cli_reference_comes_from_the_parser(site):
    from kernc.cli_args import build_parser

    html = _page(site, "_generated/cli.html")
    for name in ("compile", "check", "opt", "run", "layout"):
        assert f"kernc {name}" in html
    help_text = next(a.help for a in build_parser()._subparsers._group_actions[0].choices["run"]._actions
                     if "--output-dir" in a.option_strings)
    assert help_text.split("(")[0].strip() in html


def test_one_page_per_pass_in_pipeline_order(site):
    from kernc.passes import pipeline

    index = _page(site, "_generated/passes/index.html")
    names = [c.name for c in pipeline.KERN_TO_GPU]
    positions = [index.index(f'href="{n}.html"') for n in names]
    assert positions == sorted(positions)
    page = _page(site, "_generated/passes/kern-lower-accessors.html")
    assert "tests/lit/passes/lower-accessors.mlir" in page and "FileCheck" in page
    assert "kern.read" in page  # the pass's docstring



def test_every_pass_page_shows_the_pass_s_own_lit_test(site):
    """Each pass's page includes the lit file named after it (tests/test_lit.py checks that the
    file exists): the docs extension finds it by the same name."""
    from kernc.passes import pipeline

    for cls in (ref.cls for ref in (*pipeline.KERN_TO_GPU, *pipeline.GPU_TO_LLVM, *pipeline.LLVM_TO_PTX)):
        name = cls.__dict__.get("name") or cls.__module__.rsplit(".", 1)[-1].replace("_", "-")
        text = _text(site, f"_generated/passes/{name}.html")
        assert "no lit test of its own" not in text, name
        assert re.search(rf"tests/lit/passes/{re.escape(name.removeprefix('kern-'))}\.(mlir|kern)", text), name
        assert "RUN:" in text and "FileCheck" in text, name

def test_gallery_runs_every_example_on_the_interpreter(site):
    examples = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".kern"))
    assert "saxpy" in examples
    for name in examples:
        html = _page(site, f"_generated/examples/{name}.html")
        assert "global_load_sectors" in html and "matched the reference" in html, name


def test_layout_pictures_are_drawn_at_build_time(site):
    html = _page(site, "guides/layouts.html")
    assert html.count("<svg") >= 6
    assert "<title>(4,8):(8,1)</title>" in html
    assert html.count("<svg") == _text(site, "guides/layouts.html").count(" --svg FILE")
    assert _page(site, "guides/accessors.html").count("<svg") >= 4
