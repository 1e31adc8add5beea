"""``kernc.layout``: CuTe-style layout algebra in pure Python (no MLIR needed).

Check a layout before compiling with it::

    >>> from kernc.layout import Layout, composition, logical_divide
    >>> L = Layout.parse("(4,(2,3)):(2,(1,8))")
    >>> L(5), L.size(), L.cosize()
    (3, 24, 24)
    >>> print(composition(Layout.parse("(6,2):(8,2)"), Layout.parse("(4,3):(3,1)")))
    ((2,2),3):((24,2),8)
    >>> print(logical_divide(Layout(1000, 1), Layout(128, 1)))   # the last tile must be predicated
    (128,8):(1,128)

The implementation lives in :mod:`kernc.dialect.layout_algebra` (algebra, swizzles, im2col) and
:mod:`kernc.dialect.layout_print` (text/SVG pictures); see ``docs/design/layouts.md``.
"""

from kernc.dialect import layout_algebra as _algebra
from kernc.dialect.layout_algebra import *  # noqa: F401,F403  (the public names: _algebra.__all__)
from kernc.dialect.layout_print import bank_of, layout_to_svg, layout_to_text  # noqa: F401

__all__ = [*_algebra.__all__, "layout_to_text", "layout_to_svg", "bank_of"]  # noqa: PLE0604 (strings)
