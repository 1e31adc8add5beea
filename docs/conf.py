# Sphinx configuration of kernc's documentation site.
#
# Build:  pip install -e '.[docs]' && python -m sphinx -W -b html docs OUT
# (tests/docs/test_site.py builds it the same way). The pages are MyST Markdown; the CLI reference,
# one page per pass and the examples gallery are generated at build time into docs/_generated/
# (not checked in), and layout pictures are drawn by `kernc layout --svg` while the page is read
# (docs/_ext/kernc_docs.py).
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))

project = "kernc"
author = "the kernc developers"
copyright = "the kernc developers"

from kernc import __version__  # noqa: E402

version = release = __version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "kernc_docs",
]
source_suffix = {".md": "markdown"}
master_doc = root_doc = "index"
exclude_patterns = ["_build", "OUT", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
highlight_language = "text"
pygments_style = "friendly"

autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the docstrings say the types (shapes, dtypes, units)
autodoc_default_options = {"members": True, "show-inheritance": False}

html_theme = "alabaster"
html_title = f"kernc {release}"
html_theme_options = {
    "description": "A GPU kernel compiler: .kern -> MLIR -> PTX, and a CPU reference interpreter",
    "fixed_sidebar": True,
    "page_width": "1180px",
    "sidebar_width": "250px",
    "body_max_width": "auto",
}
html_static_path = ["_static"]
html_css_files = ["kernc.css"]
