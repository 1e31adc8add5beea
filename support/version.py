"""kernc's version (public as ``kernc.__version__``), here at the bottom of the imports so that the
compile cache (``backend/cache.py``), which keys its entries on it, reads it without importing the
package root."""

from __future__ import annotations

#: The release (``pyproject.toml``'s ``version``).
__version__ = "0.1.0"
