"""A size polynomial (:class:`~kernc.dialect.strided.Poly`) as ``index`` arithmetic: the one emitter
of the layout extents, strides and problem sizes that the frontend's lowering (``delinearize``
extents, ``problem_size``, functional layout arguments) and the passes (``kern-lower-layouts``,
``kern-lower-views``, ``kern-lower-accessors``, ``kern-lower-builtins``) put into the IR.
"""

from __future__ import annotations

from kernc.support.mlir import dialect, ir

from .strided import Poly

arith = dialect("arith")


def _index_constant(value: int) -> ir.Value:
    index = ir.IndexType.get()
    return arith.ConstantOp(index, ir.IntegerAttr.get(index, value)).result


def emit_poly(poly: Poly, env: dict) -> ir.Value:
    """``poly`` as ``arith`` ops on ``index`` at the current insertion point (in a context and
    location): each term ``c * s1 * s2 * ...`` as ``arith.muli`` of its symbols' values from
    ``env`` (size symbol name -> ``index`` ``ir.Value``) after the constant ``c`` (left out when
    ``c`` is 1 and the term has symbols), the terms summed left to right with ``arith.addi``; the
    constant 0 for the zero polynomial. ``KeyError`` for a symbol ``env`` lacks."""
    total = None
    for syms, coeff in poly.terms:
        term = _index_constant(coeff) if (coeff != 1 or not syms) else None
        for s in syms:
            term = env[s] if term is None else arith.MulIOp(term, env[s]).result
        total = term if total is None else arith.AddIOp(total, term).result
    return total if total is not None else _index_constant(0)
