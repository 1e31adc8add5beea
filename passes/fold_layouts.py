"""``kern-fold-layouts``: fold static layout algebra in the ``layout`` attributes of kern view ops.

The frontend already folds the layout algebra of ``.kern`` programs (``frontend/layouts.py``), so
on its output this pass changes nothing. It exists for kern IR written or transformed by hand
(``kernc opt``): a view op (``kern.view_load``, ``kern.view_store``, ``kern.in_bounds``) may carry
any static layout expression in CuTe notation with the algebra of ``kernc.layout``:

- ``A o B`` (composition, right to left; also ``∘``), ``Sw<B,M,S> o L`` / ``swizzle<B,M,S> o L``;
- calls ``coalesce(L)``, ``composition(A, B)``, ``complement(A, M)``, ``logical_divide(A, B)``,
  ``zipped_divide``, ``tiled_divide``, ``flat_divide``, the products, ``right_inverse(L)``,
  ``left_inverse(L)``.

The attribute is replaced by the folded, flattened layout (``(..):(..)``, or
``Sw<B,M,S> o (..):(..)``), the form the printed IR should show (the op verifiers and
``kern-lower-views`` fold such text on the fly too, see ``kern.parse_view_layout``). A composition
that is not admissible (``kernc.layout.LayoutError`` names both layouts) or a layout that cannot be
folded is a :class:`~kernc.errors.CompileError` located at the op (with the IR verifier on, such an
op is already rejected when the IR is parsed).
"""

from __future__ import annotations

from dataclasses import dataclass

import re

from kernc.dialect import kern
from kernc.support.errors import CompileError, Diagnostic, SourceLocation
from kernc.support.mlir import ir

from .base import Pass, walk_ops

FOLD_OPS = {"kern.view_load", "kern.view_store", "kern.view_atomic", "kern.in_bounds"}


def fold(text: str):
    """See :func:`kernc.dialect.kern.fold_layout`."""
    return kern.fold_layout(text)


def folded_text(text: str) -> str:
    """See :func:`kernc.dialect.kern.fold_view_layout`."""
    return kern.fold_view_layout(text)


def _source_location(loc) -> SourceLocation | None:
    m = re.search(r'loc\("([^"]*)":(\d+):(\d+)', str(loc))
    return SourceLocation(m.group(1), int(m.group(2)), int(m.group(3))) if m else None


@dataclass
class FoldLayouts(Pass):
    """Fold the static layout algebra of view ops' ``layout`` attributes."""

    name = "kern-fold-layouts"
    summary = "fold static layout algebra (kernc.layout) in the layout attributes of view ops"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for op in walk_ops(module, FOLD_OPS):
            text = ir.StringAttr(op.attributes["layout"]).value
            try:
                kern._parse_plain_view_layout(text)
                continue  # already plain strides (possibly over size symbols)
            except ValueError:
                pass
            # imported here, for the first layout with algebra left to fold: the frontend's output
            # has none, and the import costs a cold `kernc compile` ~2 ms
            from kernc.dialect import layout_algebra as KL

            try:
                new = folded_text(text)
            except (KL.LayoutError, ValueError, TypeError) as err:
                raise CompileError(Diagnostic(f"cannot fold layout '{text}': {err}",
                                              _source_location(op.location))) from None
            op.attributes["layout"] = ir.StringAttr.get(new)
