"""The Sphinx extension of kernc's documentation site: the pages made from the code at build time.

- ``docs/_generated/cli.md``: the CLI reference, read from the argument parser
  (:func:`kernc.cli_args.build_parser`);
- ``docs/_generated/passes/*.md``: one page per pass of ``passes/pipeline.py``'s stage lists, in
  pipeline order: its summary, options (the dataclass fields), docstrings (autodoc) and its lit
  test (the file of ``tests/lit/`` named after the pass, else those whose ``RUN:`` lines name it);
- ``docs/_generated/examples/*.md``: the examples gallery: each ``examples/NAME.kern``, its numpy
  reference ``examples/NAME.py`` and the output of ``kernc run --stats`` on the CPU interpreter
  for a small problem, checked against the reference (a mismatch fails the build);
- the ``kernc-layout`` directive: the picture ``kernc layout --svg`` draws of a layout expression,
  drawn while the page is read (not a checked-in image).

Generated files are rewritten only when their text changes (so an unchanged build reads nothing
again) and atomically (two builds at once never see half a file). ``docs/_generated/`` is in
``.gitignore``.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import inspect
import io
import os
import re
import shlex
import tempfile

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: The problem size of every gallery run (small: the build runs each example on the interpreter).
GALLERY_P = 512


def _write_if_changed(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _fence(text: str, language: str = "") -> str:
    """``text`` as a fenced code block whose fence no line of it can close."""
    ticks = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", text)), default=0))
    return f"{ticks}{language}\n{text.rstrip()}\n{ticks}\n"


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


# ---- the CLI reference --------------------------------------------------------------------------

def cli_page() -> str:
    """The CLI reference (Markdown), one section per subcommand, read from the parser."""
    import argparse

    from kernc.cli_args import build_parser

    ap = build_parser()
    sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    helps = {c.dest: c.help for c in sub._choices_actions}
    out = ["# Command line reference\n",
           "Generated from the argument parser (`kernc/cli_args.py`) when the site is built. "
           "Exit codes: 0 ok, 1 an error in the input, 2 a usage error, 3 an internal compiler "
           "error.\n",
           _fence(ap.format_usage().removeprefix("usage: "), "text")]
    for name, parser in sub.choices.items():
        out.append(f"\n## `kernc {name}`\n\n{helps.get(name, '')}\n")
        out.append(_fence(parser.format_usage().removeprefix("usage: "), "text"))
        rows = []
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            spelling = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}`"
            if action.choices and not isinstance(action, argparse._SubParsersAction):
                value = " \\| ".join(f"`{c}`" for c in action.choices)
            elif action.metavar:
                value = f"`{action.metavar}`"
            elif action.nargs == 0:
                value = ""
            else:
                value = f"`{action.dest.upper()}`" if action.option_strings else ""
            dflt = action.default
            dflt = "" if dflt in (None, False, [], argparse.SUPPRESS) or action.nargs == 0 else f"`{dflt}`"
            rows.append(f"| {spelling} | {value} | {dflt} | {_cell(action.help or '')} |")
        if rows:
            out.append("\n| option | value | default | meaning |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
    return "\n".join(out)


# ---- one page per pass --------------------------------------------------------------------------

def _pass_name(cls) -> str:
    name = cls.__dict__.get("name")
    if isinstance(name, str) and name:
        return name
    return cls.__module__.rsplit(".", 1)[-1].replace("_", "-")  # upstream wrappers: their module


def _pipeline_comments() -> dict[str, str]:
    """The comments of the entries of ``passes/pipeline.py``'s lists (``# optional: ...``), by class
    name: the comment beside an entry, else the comment lines just above it."""
    from kernc.passes import pipeline

    out, above = {}, []
    for line in inspect.getsource(pipeline).splitlines():
        m = re.match(r'\s+PassRef\("[^"]+", "([A-Za-z]+)"[^#]*(?:#\s*(.*))?$', line)
        if m:
            text = m.group(2) or " ".join(above)
            if text:
                out[m.group(1)] = text
            above = []
        else:
            c = re.match(r"\s+#\s*(.*)", line)
            above = above + [c.group(1)] if c else []
    return out


def lit_tests_of(name: str) -> tuple[list[str], list[str]]:
    """The lit tests of pass ``name``: ``(own, others)``, paths relative to the repository. A file
    is the pass's own when it is named after the pass (``kern-lower-views`` ->
    ``lower-views.*``) or when it runs ``kernc opt --passes`` with this pass alone; ``others``
    name the pass in a pipeline of several."""
    stem = name.removeprefix("kern-")
    own, others = [], []
    for path in sorted(glob.glob(os.path.join(REPO, "tests", "lit", "**", "*.*"), recursive=True)):
        if not path.endswith((".kern", ".mlir")):
            continue
        rel = os.path.relpath(path, REPO)
        with open(path, encoding="utf-8") as f:
            runs = [ln for ln in f if "RUN:" in ln]
        pipelines = [m.group(1) for ln in runs for m in re.finditer(r"--passes[= ]'?([^' |]+)", ln)]
        named = [p for p in pipelines if re.search(rf"(^|,){re.escape(name)}(\{{|,|$)", p)]
        if os.path.splitext(os.path.basename(path))[0] == stem or any(
                re.fullmatch(rf"{re.escape(name)}(\{{[^}}]*\}})?", p) for p in named):
            own.append(rel)
        elif named:
            others.append(rel)
    return own, others


def _lexes_cleanly(text: str, language: str) -> bool:
    from pygments.lexers import get_lexer_by_name
    from pygments.token import Error

    return not any(t in Error for t, _ in get_lexer_by_name(language).get_tokens(text))


def pass_pages() -> dict[str, str]:
    """``{file name: Markdown}``: ``index.md`` (the pipeline) and one page per pass."""
    from kernc.passes import pipeline
    from kernc.passes.base import Pass

    comments = _pipeline_comments()
    stages = (("kern IR -> gpu IR (`kern_to_gpu`)", pipeline.KERN_TO_GPU),
              ("gpu IR -> NVVM/LLVM IR (`gpu_to_llvm`)", pipeline.GPU_TO_LLVM),
              ("NVVM -> PTX (`llvm_to_ptx`)", pipeline.LLVM_TO_PTX))
    stages = tuple((stage, tuple(ref.cls for ref in refs), refs) for stage, refs in stages)
    pages, index = {}, ["# Passes\n",
                        "Every pass of the pipeline, in the order it runs (`passes/pipeline.py`: the "
                        "one list that both the compiler and `kernc opt --passes` read). Each page is "
                        "made from the pass's docstrings and its lit test when the site is built.\n"]
    toc = []
    for stage, classes, refs in stages:
        index.append(f"\n## {stage}\n\n| # | pass | what it does |\n|---|---|---|")
        if refs is pipeline.KERN_TO_GPU:
            after = ", ".join(f"`{p}`" for p in pipeline.KERN_TO_GPU_CLEANUP)
        for i, cls in enumerate(classes, 1):
            name = _pass_name(cls)
            summary = cls.__dict__.get("summary") or (inspect.getdoc(cls) or "").split("\n\n")[0]
            note = f" ({comments[cls.__name__]})" if cls.__name__ in comments else ""
            index.append(f"| {i} | [`{name}`]({name}.md) | {_cell(summary)}{_cell(note)} |")
            toc.append(name)
            pages[f"{name}.md"] = _pass_page(cls, name, summary, stage, note, Pass)
        if refs is pipeline.KERN_TO_GPU:
            index.append(f"\nThen the upstream cleanups {after}.")
    index.append("\n```{toctree}\n:hidden:\n\n" + "\n".join(toc) + "\n```\n")
    pages["index.md"] = "\n".join(index)
    return pages


def _pass_page(cls, name, summary, stage, note, Pass) -> str:
    out = [f"# `{name}`\n", f"{summary}{note}\n",
           f"Stage: {stage}. Class `{cls.__module__}.{cls.__name__}`; run it alone with "
           f"`kernc opt FILE.mlir --passes '{name}'`.\n"]
    if issubclass(cls, Pass):
        opts = cls.options()
        if opts:
            import dataclasses

            defaults = {f.name: f.default for f in dataclasses.fields(cls)}
            out.append("| option | type | default |\n|---|---|---|")
            for spelling, (field, typ) in opts.items():
                out.append(f"| `{spelling}` | `{typ.__name__}` | `{_cell(defaults.get(field))}` |")
            out.append("")
    out.append("## Description\n")
    out.append("```{eval-rst}\n"
               f".. automodule:: {cls.__module__}\n   :no-members:\n   :no-index:\n\n"
               f".. autoclass:: {cls.__module__}.{cls.__name__}\n   :no-members:\n   :no-index:\n```\n")
    own, others = lit_tests_of(name)
    out.append("## Lit test\n")
    if not own:
        out.append("This pass has no lit test of its own yet.\n")
    for rel in own:
        text = open(os.path.join(REPO, rel), encoding="utf-8").read()
        language = "kern" if rel.endswith(".kern") else "mlir"
        if not _lexes_cleanly(text, language):
            language = "text"
        out.append(f"`{rel}` (run by `lit` and `tests/test_lit.py`):\n")
        out.append(_fence(text, language))
    if others:
        out.append("Also in the pipelines of: " + ", ".join(f"`{r}`" for r in others) + ".\n")
    return "\n".join(out)


# ---- the examples gallery -----------------------------------------------------------------------

def _load_reference(path: str):
    spec = importlib.util.spec_from_file_location(f"kernc_gallery_{os.path.basename(path)[:-3]}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _scalar_text(value) -> str:
    """``--input NAME=VALUE`` text that ``kernc run`` reads back as exactly ``value``."""
    import numpy as np

    if isinstance(value, (bool, np.bool_)):
        return "1" if value else "0"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return repr(float(value))  # a float32 is a double exactly; its shortest repr rounds back to it


def run_example(name: str, P: int = GALLERY_P) -> dict:
    """Run ``examples/NAME.kern`` through ``kernc run --stats`` on the CPU interpreter with the
    inputs of ``examples/NAME.py``'s ``make_inputs(P, rng)`` (seed 0) and compare every output
    with its ``reference``; ``RuntimeError`` when ``kernc run`` fails or an output differs.
    Returns ``{"command", "output", "checks"}``."""
    import numpy as np

    from kernc import cli

    ref = _load_reference(os.path.join(REPO, "examples", f"{name}.py"))
    inputs = ref.make_inputs(P, np.random.default_rng(0))
    expected = ref.reference({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()})
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["run", f"examples/{name}.kern", "--stats", "--output-dir", "out"]
        with open(os.path.join(REPO, "examples", f"{name}.kern"), encoding="utf-8") as f:
            if len(re.findall(r"^\s*kernel\s", f.read(), re.M)) > 1:  # (layernorm: and its backward)
                argv += ["--kernel", name]
        for key, value in inputs.items():
            if isinstance(value, np.ndarray):
                np.save(os.path.join(tmp, f"{key}.npy"), value, allow_pickle=False)
                argv += ["--input", f"{key}=@{key}.npy"]
            else:
                argv += ["--input", f"{key}={_scalar_text(value)}"]
        os.makedirs(os.path.join(tmp, "examples"))
        os.symlink(os.path.join(REPO, "examples", f"{name}.kern"), os.path.join(tmp, "examples", f"{name}.kern"))
        buf, err = io.StringIO(), io.StringIO()
        cwd = os.getcwd()
        try:
            os.chdir(tmp)
            with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
                code = cli.main(argv)
            if code != 0:
                raise RuntimeError(f"kernc {' '.join(argv)} exited {code}: {err.getvalue()}")
            checks = []
            for key, want in expected.items():
                got = np.load(os.path.join("out", f"{key}.npy"), allow_pickle=False)
                tol = {"rtol": 1e-5, "atol": 1e-6, **getattr(ref, "TOLERANCE", {})}
                if not np.allclose(got, want, **tol, equal_nan=True):
                    raise RuntimeError(f"examples/{name}.kern: output '{key}' differs from its numpy reference")
                checks.append(key)
        finally:
            os.chdir(cwd)
    return {"command": "kernc " + shlex.join(argv), "output": buf.getvalue(), "checks": checks}


def example_names() -> list[str]:
    """The examples of the gallery: every ``examples/NAME.kern`` with an ``examples/NAME.py``."""
    return sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(REPO, "examples", "*.kern"))
                  if os.path.exists(p[:-5] + ".py"))


def example_pages() -> dict[str, str]:
    """``{file name: Markdown}``: ``index.md`` and one page per example."""
    names = example_names()
    index = ["# Examples\n",
             "Each example is a `.kern` program (`examples/`), a numpy reference beside it and the "
             f"output of `kernc run --stats` on the CPU interpreter for a problem of P = {GALLERY_P} "
             "items, run and compared with the reference when this site was built. Run one yourself "
             "with `python examples/run.py NAME` (`--P`, `--device cuda`).\n",
             "| example | what it shows |\n|---|---|"]
    pages = {}
    for name in names:
        kern = open(os.path.join(REPO, "examples", f"{name}.kern"), encoding="utf-8").read()
        py = open(os.path.join(REPO, "examples", f"{name}.py"), encoding="utf-8").read()
        first = next((ln.lstrip("/ ").strip() for ln in kern.splitlines() if ln.startswith("//")), "")
        index.append(f"| [`{name}`]({name}.md) | {_cell(first)} |")
        run = run_example(name)
        pages[f"{name}.md"] = "\n".join([
            f"# `{name}`\n",
            f"## The kernel: `examples/{name}.kern`\n", _fence(kern, "kern"),
            f"## The numpy reference: `examples/{name}.py`\n", _fence(py, "python"),
            "## A run on the CPU interpreter\n",
            f"Inputs from `make_inputs({GALLERY_P}, np.random.default_rng(0))` saved as `.npy` files; "
            f"the outputs ({', '.join(f'`{c}`' for c in run['checks'])}) matched the reference.\n",
            _fence("$ " + run["command"] + "\n" + run["output"], "text"),
        ])
    index.append("\n```{toctree}\n:hidden:\n\n" + "\n".join(names) + "\n```\n")
    pages["index.md"] = "\n".join(index)
    return pages


# ---- layout pictures ----------------------------------------------------------------------------

def layout_svg(expr: str, banks: bool = False, elem_bytes: int = 4) -> str:
    """The SVG ``kernc layout EXPR --svg FILE [--banks --elem-bytes N]`` writes (run in process)."""
    from kernc import cli

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "layout.svg")
        argv = ["layout", expr, "--svg", path] + (["--banks", "--elem-bytes", str(elem_bytes)] if banks else [])
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = cli.main(argv)
        if code != 0:
            raise ValueError(f"kernc layout '{expr}' failed: {err.getvalue().strip()}")
        with open(path, encoding="utf-8") as f:
            return f.read()


class LayoutDirective(SphinxDirective):
    """```` ```{kernc-layout} (4,8):(8,1) ```` (options ``:banks:``, ``:elem-bytes: N``): the
    picture of the layout, with the command that draws it."""

    required_arguments = 1
    final_argument_whitespace = True
    option_spec = {"banks": directives.flag, "elem-bytes": directives.positive_int}

    def run(self):
        expr = self.arguments[0].strip()
        banks = "banks" in self.options
        elem = self.options.get("elem-bytes", 4)
        try:
            svg = layout_svg(expr, banks, elem)
        except ValueError as err:
            raise self.error(str(err)) from None
        svg = re.sub(r"^<\?xml[^>]*>\s*", "", svg)
        command = f"kernc layout {shlex.quote(expr)} --svg FILE" + (f" --banks --elem-bytes {elem}" if banks else "")
        container = nodes.container(classes=["kernc-layout"])
        container += nodes.raw("", f'<div class="kernc-layout-picture">{svg}</div>', format="html")
        container += nodes.paragraph("", "", nodes.literal(command, command))
        return [container]


# ---- set-up -------------------------------------------------------------------------------------

def generate(app) -> None:
    """Write the generated pages under ``docs/_generated/`` (``builder-inited``)."""
    out = os.path.join(app.srcdir, "_generated")
    _write_if_changed(os.path.join(out, "cli.md"), cli_page())
    for sub, pages in (("passes", pass_pages()), ("examples", example_pages())):
        for fname, text in pages.items():
            _write_if_changed(os.path.join(out, sub, fname), text)
        # a page of a pass or example that no longer exists goes too
        for stale in set(os.listdir(os.path.join(out, sub))) - set(pages):
            if stale.endswith(".md"):
                os.remove(os.path.join(out, sub, stale))


def setup(app):
    from kernc.kern_lexer import KernLexer

    app.add_lexer("kern", KernLexer)
    app.add_directive("kernc-layout", LayoutDirective)
    app.connect("builder-inited", generate)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
