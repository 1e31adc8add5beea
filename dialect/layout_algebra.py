"""CuTe-style layout algebra in pure Python (no MLIR): hierarchical layouts, swizzles, im2col.

Public entry point: :mod:`kernc.layout` (a re-export of this module). Design: ``docs/design/layouts.md``.

Notation (CuTe's)
-----------------
A layout ``S:D`` pairs a hierarchical *shape* (an int or a nested tuple of ints) with a congruent
*stride*, e.g. ``(4,(2,3)):(2,(1,8))``. A rank-1 layout with an integral shape prints ``4:1``; a
1-tuple prints ``(4):(1)``. An integer index ``i`` is split colexicographically over the flattened
shape (first mode fastest) and ``L(i) = sum_k c_k * d_k``. The very last mode is not wrapped, so
``L(i)`` is defined for every integer (``i >= size(L)`` continues along the last mode); composition
relies on this extension (``1000:1 o (128,8):(1,128)`` reads 24 elements past the end, which a
kernel must predicate).

Operations and their sources
----------------------------
- ``coalesce``, ``composition``, ``complement``, ``logical_divide``/``zipped_divide``/
  ``tiled_divide``/``flat_divide``, ``logical_product``/``zipped_product``/``tiled_product``/
  ``flat_product``/``blocked_product``/``raked_product``, ``right_inverse``, ``left_inverse``: the
  CuTe documentation (``media/docs/cpp/cute/01_layout.md``, ``02_layout_algebra.md``) and J. Shah,
  "A note on the algebra of CuTe layouts" (Colfax Research), which gives the admissibility
  conditions used here.
- ``Swizzle<B,M,S>``: CuTe's ``swizzle.hpp`` definition (``x ^ ((x & yyy_mask) >> S)``, a left
  shift for negative ``S``).

Trust
-----
The C++ reference silently returns wrong layouts for some inadmissible compositions (NVIDIA/cutlass
issues #2955, #3177). Here a composition never returns a wrong layout:

1. each leaf ``n:r`` of ``B`` is composed with the (coalesced, flattened) ``A`` by the
   stride-division / shape-modulo construction of the CuTe docs, with explicit checks; a case the
   construction cannot express raises :class:`LayoutError`;
2. the leaves are combined (left distributivity). That is only valid when the leaves' images never
   carry between the mixed-radix digits of ``A``; the *no-carry* condition (the sum over leaves of
   the largest digit each leaf uses in every non-last mode of ``A`` stays below that mode's size) is
   a proof that it is;
3. the result is verified: ``R(i) == A(B(i))`` for every ``i < size(B)`` when
   ``size(B) <= VERIFY_EXHAUSTIVE_LIMIT`` and ``size(B)`` times the number of modes evaluated per
   index stays within ``VERIFY_WORK_LIMIT`` (vectorised with numpy; 4096 indices at most in Python
   integers when the values may leave int64); above that, the no-carry proof is required and a
   deterministic sample of at most ``_SAMPLES + 2 * _EDGE_SAMPLES`` indices is checked as well. So
   one verification evaluates a bounded number of points, whatever the layouts.

Failures raise :class:`LayoutError` whose message names both layouts in CuTe notation.

Limits
------
Every static layout has ``size``, offset span (``1 + sum (s_k - 1) |d_k|``, the cosize for
non-negative strides) and entries of magnitude at most ``MAX_LAYOUT_SIZE`` (``2**48``: the 48-bit
virtual address space of current GPUs and CPUs, so no layout of real memory comes near it), at most
``MAX_LAYOUT_MODES`` flattened modes and a nesting depth of at most ``MAX_LAYOUT_DEPTH``; a swizzle
``Sw<B,M,S>`` has ``B + M + |S| <= MAX_SWIZZLE_BITS`` (48: its bit masks stay below
``MAX_LAYOUT_SIZE``). Building a layout past a limit -- a literal or the result of any operation --
raises :class:`LayoutLimitError` (a :class:`LayoutError`). With these bounds every operation costs a
bounded amount of work (a repeated ``blocked_product(b, b)`` squares the size each time and is
refused after a few steps, instead of doubling its modes and its verification time forever).

Symbolic sizes
--------------
A shape or stride entry may be a string naming size symbols (``"n"``, ``"H*W"``, parsed with
:class:`kernc.dialect.strided.Poly`). Such layouts print, parse, and evaluate with an ``env``
(``L(i, env={"n": 8})``, ``L.bind(env)``); the algebra needs static layouts and raises
``LayoutError("... needs static shapes ...")`` otherwise.

Functional layouts
------------------
:class:`FunctionalLayout` is the interface of ``layouts.md`` section 1 (``shape``, ``to_source``,
``to_source_checked``, ``in_bounds``); :class:`Layout`, :class:`ComposedLayout`, :class:`Im2col`
and :func:`chain` results implement it.

Modules
-------
This module is the public surface (re-exported by :mod:`kernc.layout`); the algebra lives in
``layout_errors`` (errors, limits), ``layout_tuples`` (integer tuples), ``layout_eval`` (bounded
evaluation: the verifications and their work limits), ``layout_type`` (:class:`Layout`,
:class:`FunctionalLayout`, :func:`chain`), ``layout_swizzle`` (:class:`Swizzle`,
:class:`ComposedLayout`), ``layout_compose`` (coalesce, composition, complement, inverses),
``layout_tiling`` (divides, products), ``layout_parse`` (CuTe notation) and ``layout_im2col``
(convolution views), each importing only those before it.
"""

from __future__ import annotations

from .layout_compose import coalesce, complement, composition, left_inverse, right_inverse
from .layout_errors import (MAX_LAYOUT_DEPTH, MAX_LAYOUT_MODES, MAX_LAYOUT_SIZE, MAX_SWIZZLE_BITS, LayoutError,
                            LayoutLimitError)
from .layout_eval import VERIFY_EXHAUSTIVE_LIMIT, VERIFY_WORK_LIMIT
from .layout_im2col import Im2col, Im2colDgrad, OutputGradMatrix, im2col, im2col_dgrad, output_grad
from .layout_parse import _split_compose, parse_layout  # noqa: F401  (_split_compose: dialect/kern.py)
from .layout_swizzle import ComposedLayout, Swizzle
from .layout_tiling import (blocked_product, flat_divide, flat_product, logical_divide, logical_product,
                            raked_product, tiled_divide, tiled_product, zipped_divide, zipped_product)
from .layout_type import ChainLayout, FunctionalLayout, Layout, chain, make_layout

__all__ = [
    "LayoutError",
    "LayoutLimitError",
    "FunctionalLayout",
    "Layout",
    "Swizzle",
    "ComposedLayout",
    "ChainLayout",
    "Im2col",
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
    "VERIFY_EXHAUSTIVE_LIMIT",
    "VERIFY_WORK_LIMIT",
    "MAX_LAYOUT_SIZE",
    "MAX_LAYOUT_MODES",
    "MAX_LAYOUT_DEPTH",
    "MAX_SWIZZLE_BITS",
]
