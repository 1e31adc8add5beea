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
:mod:`kernc.dialect.layout_print` (text/SVG pictures); see ``shared/design/layouts.md``.
"""

from kernc.dialect.layout_algebra import (  # noqa: F401
    VERIFY_EXHAUSTIVE_LIMIT,
    ChainLayout,
    ComposedLayout,
    FunctionalLayout,
    Im2col,
    Im2colDgrad,
    OutputGradMatrix,
    Layout,
    LayoutError,
    Swizzle,
    blocked_product,
    chain,
    coalesce,
    complement,
    composition,
    flat_divide,
    flat_product,
    im2col,
    im2col_dgrad,
    output_grad,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    parse_layout,
    raked_product,
    right_inverse,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)
from kernc.dialect.layout_print import bank_of, layout_to_svg, layout_to_text  # noqa: F401

__all__ = [
    "Layout",
    "Swizzle",
    "ComposedLayout",
    "FunctionalLayout",
    "ChainLayout",
    "Im2col",
    "LayoutError",
    "make_layout",
    "parse_layout",
    "coalesce",
    "composition",
    "complement",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "right_inverse",
    "left_inverse",
    "chain",
    "im2col",
    "im2col_dgrad",
    "output_grad",
    "Im2colDgrad",
    "OutputGradMatrix",
    "layout_to_text",
    "layout_to_svg",
    "bank_of",
    "VERIFY_EXHAUSTIVE_LIMIT",
]
