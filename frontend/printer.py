"""Printing AST nodes back as ``.kern`` source text (for the derivative kernels of
:mod:`kernc.frontend.derivative`, which are built as source and compiled as any program is).

The text parses back to the same tree: every binary or unary operand that is itself an operator
expression is parenthesised (``(a + b) * c``, ``-(-x)``), so no precedence rule is relied on.
Literals keep their source spelling (``1.0f64``, ``0x1F``). Only what kernels and their parameters
hold is printed: expressions, statements, parameters and kernel headers (layout and function
definitions are kept as the user wrote them).
"""

from __future__ import annotations

from . import ast as A


def expr(e) -> str:
    """The source text of expression ``e`` (an :class:`ast.Expr`)."""
    if isinstance(e, A.IntLit):
        return e.text or str(e.value)
    if isinstance(e, A.FloatLit):
        return e.text or repr(e.value)
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, A.Name):
        return e.id
    if isinstance(e, A.Unary):
        return f"{e.op}{operand(e.operand)}"
    if isinstance(e, A.Binary):
        return f"{operand(e.left)} {e.op} {operand(e.right)}"
    if isinstance(e, A.Call):
        return f"{e.func}({', '.join(expr(a) for a in e.args)})"
    if isinstance(e, A.VectorLit):
        return f"[{', '.join(expr(a) for a in e.elems)}]"
    if isinstance(e, A.TupleLit):
        return f"({', '.join(expr(a) for a in e.elems)})"
    if isinstance(e, A.Index):
        return f"{operand(e.base)}[{expr(e.index)}]"
    if isinstance(e, A.Slice):
        lo = expr(e.start) if e.start is not None else ""
        hi = expr(e.stop) if e.stop is not None else ""
        return f"{operand(e.base)}[{lo}:{hi}]"
    if isinstance(e, A.Member):
        return f"{operand(e.base)}.{e.name}"
    if isinstance(e, A.MultiIndex):
        return f"{operand(e.base)}[{', '.join(expr(a) for a in e.indices)}]"
    if isinstance(e, A.Method):
        return f"{operand(e.base)}.{e.name}({', '.join(expr(a) for a in e.args)})"
    if isinstance(e, A.Apply):
        return f"{e.func}({', '.join(expr(a) for a in e.args)})({', '.join(expr(a) for a in e.coords)})"
    raise TypeError(f"cannot print {type(e).__name__}")


def operand(e) -> str:
    """``e`` as an operand of an operator or a postfix: parenthesised when it is an operator
    expression (or a negative literal, so ``-1.0`` stays one operand of ``x - (-1.0)``)."""
    text = expr(e)
    if isinstance(e, (A.Binary, A.Unary)) or text.startswith("-"):
        return f"({text})"
    return text


def param(p) -> str:
    """A kernel parameter as declared: ``a: f32`` or ``x: f32[n, 3] read shared(I) as caspar``."""
    if isinstance(p, A.ScalarParam):
        return f"{p.name}: {p.type_name}"
    return buffer_param(p.name, p.elem_name, p.dims, p.access, p.patterns, p.layout, p.default, p.compute)


def buffer_param(name, elem, dims, access, patterns, layout=None, default=None, compute=None) -> str:
    """A buffer parameter from its parts (``patterns``: :class:`ast.Pattern` nodes or their text)."""
    text = f"{name}: {elem}[{', '.join(expr(d) for d in dims)}] {access}"
    for pat in patterns:
        text += " " + (pat if isinstance(pat, str) else pattern(pat))
    if layout is not None:
        text += " as " + layout_clause(layout)
    if default is not None:
        text += " default " + expr(default)
    if compute is not None:
        text += " compute " + compute
    return text


def pattern(p: A.Pattern) -> str:
    if p.args is None:
        return p.name
    return f"{p.name}({', '.join(expr(a) for a in p.args)})"


def layout_clause(layout) -> str:
    """The layout after ``as``: a name (``caspar``, ``rowmaj(R, C)``) or a literal ``(..):(..)``."""
    if isinstance(layout, A.LayoutName):
        if layout.args is None:
            return layout.name
        return f"{layout.name}({', '.join(expr(a) for a in layout.args)})"
    if isinstance(layout, A.LayoutLiteral):
        return (f"({', '.join(expr(s) for s in layout.shape)},):"
                f"({', '.join(expr(s) for s in layout.stride)},)")
    raise TypeError(f"cannot print the layout {type(layout).__name__}")


def attribute(a: A.Attribute) -> str:
    if a.args is None:
        return f"@{a.name}"
    return f"@{a.name}({', '.join(expr(x) for x in a.args)})"


def over(o: A.Over) -> str:
    if o.extents is None:
        return f"over {o.names[0]}"
    return f"over ({', '.join(o.names)}) in ({', '.join(expr(e) for e in o.extents)})"


def kernel_header(name: str, attributes: list, params: list, over_clause: str) -> str:
    """``@attrs kernel NAME(\\n    p1,\\n    p2,\\n) over ... {`` (params already printed)."""
    lines = [a if isinstance(a, str) else attribute(a) for a in attributes]
    lines.append(f"kernel {name}(")
    lines.extend(f"    {p}," for p in params)
    lines.append(f") {over_clause} {{")
    return "\n".join(lines)


def indent(lines: list, depth: int = 1) -> list:
    pad = "    " * depth
    return [pad + line if line else line for line in lines]
