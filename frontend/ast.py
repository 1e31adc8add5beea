"""The abstract syntax tree of a ``.kern`` file.

Every node is a dataclass whose first field ``loc`` is the :class:`kernc.errors.SourceLocation` of
the construct (1-based line/column). Nodes compare by identity (``eq=False``) so they can key dicts.

The checker (:mod:`kernc.frontend.check`) annotates nodes in place:

- every expression gets ``ty`` (a :mod:`kernc.frontend.types` type);
- :class:`Name`, :class:`Let`, :class:`For` and :class:`Assign` get ``sym`` (the resolved
  :class:`kernc.frontend.symbols.Symbol`);
- every :class:`Kernel` gets ``info`` (a :class:`kernc.frontend.symbols.KernelInfo`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Optional

from kernc.support.errors import SourceLocation

Loc = SourceLocation


@dataclass(eq=False)
class Node:
    """Base of all AST nodes."""

    loc: Loc


# ---- expressions ------------------------------------------------------------------------------


@dataclass(eq=False)
class Expr(Node):
    """Base of expressions; ``ty`` is set by the checker."""

    ty = None  # plain class attribute (not a dataclass field): set per instance by the checker
    #: where the outermost parentheses around this expression open, if it is written in some (set
    #: by the parser for layout expressions: a layout literal ``(4):(1)`` starts at its ``(``)
    paren_loc = None


@dataclass(eq=False)
class IntLit(Expr):
    """An integer literal; ``suffix`` is a type name (``"u32"``, ``"f64"``) or ``None``."""

    value: int
    suffix: Optional[str] = None
    text: str = ""


@dataclass(eq=False)
class FloatLit(Expr):
    """A float literal (``value`` parsed from ``text``); ``suffix`` is a float type name or ``None``."""

    value: float
    suffix: Optional[str] = None
    text: str = ""


@dataclass(eq=False)
class BoolLit(Expr):
    """``true`` or ``false``."""

    value: bool


@dataclass(eq=False)
class Name(Expr):
    """A use of a name: local, parameter, size symbol or builtin value (``thread_id``)."""

    id: str
    sym = None


@dataclass(eq=False)
class Unary(Expr):
    """``op operand`` with ``op`` in ``- ! ~``."""

    op: str
    operand: Expr


@dataclass(eq=False)
class Binary(Expr):
    """``left op right``; ``loc`` is the operator's position."""

    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Call(Expr):
    """``func(args...)``: a builtin math function, a cast (``f32(x)``) or a call of a function
    (:class:`FnDef`; the checker sets ``fn`` to its name)."""

    func: str
    args: list
    fn = None


@dataclass(eq=False)
class VectorLit(Expr):
    """``[a, b, c]``."""

    elems: list


@dataclass(eq=False)
class Index(Expr):
    """``base[index]``: one component of a vector."""

    base: Expr
    index: Expr


@dataclass(eq=False)
class Slice(Expr):
    """``base[start:stop]`` with literal bounds (``None`` = from the start / to the end)."""

    base: Expr
    start: Optional[Expr]
    stop: Optional[Expr]


@dataclass(eq=False)
class Member(Expr):
    """``base.name``: ``u.first`` / ``u.second`` of a ``pair`` read (each a scalar or K-vector); as
    an assignment target, ``out.first`` / ``out.second`` of a ``pair`` output."""

    base: Expr
    name: str


@dataclass(eq=False)
class MultiIndex(Expr):
    """``x[i, j, ...]``: a coordinate access of a ``view`` buffer (read, or the target of a write)."""

    base: Expr
    indices: list


@dataclass(eq=False)
class Method(Expr):
    """``x.checked(i, j)`` / ``x.in_bounds(i, j)`` of a ``view`` buffer (also as a write target)."""

    base: Expr
    name: str
    args: list


@dataclass(eq=False)
class Apply(Expr):
    """``name(args)(coords...)``: a layout ``name(args)`` applied to a coordinate. The value is a
    coordinate tuple, valid only as the coordinate of a view access or of another application."""

    func: str
    args: list
    coords: list


@dataclass(eq=False)
class GroupReduce(Expr):
    """``op[c1, c2, ...](operand)``: the reduction ``op`` (``sum``, ``max``, ``min``, ``and``,
    ``or``, ``all``, ``any``; ``""`` when the parsed base was not a name) of the one expression of
    ``args`` over the items that share every problem coordinate but ``coords`` (expressions that
    must be names of the kernel's coordinates); every item of the group sees the result
    (``docs/language.md``, reductions across items). The checker sets ``axes`` (the positions of
    ``coords`` in ``over``)."""

    op: str
    coords: list
    args: list
    axes = None


@dataclass(eq=False)
class TupleLit(Expr):
    """``(a, b)``: only valid as the value assigned to a ``pair`` output (``out = (first, second)``)."""

    elems: list


# ---- statements -------------------------------------------------------------------------------


@dataclass(eq=False)
class Stmt(Node):
    """Base of statements."""


@dataclass(eq=False)
class Block(Node):
    """``{ stmts }``: a scope."""

    stmts: list


@dataclass(eq=False)
class Let(Stmt):
    """``let name[: type] = value;`` -- declares a mutable local variable."""

    name: str
    type_name: Optional[str]
    value: Expr
    type_loc: Optional[Loc] = None
    sym = None


@dataclass(eq=False)
class Assign(Stmt):
    """``target op value;`` with ``op`` in ``= += -= *= /=``.

    ``target`` is a Name (``x``), a Member (``out.first``) or an Index of either (``x[k]``,
    ``out.second[k]``). ``value`` may be a :class:`TupleLit` for a ``pair`` output.
    """

    target: Expr
    op: str
    value: Expr
    sym = None
    #: for an atomic view update (``x.atomic(c) += v``): the ``kern.view_atomic`` kind
    #: (``add``, ``mins``, ``minu``, ``maxs``, ``maxu``); None otherwise
    atomic = None


@dataclass(eq=False)
class If(Stmt):
    """``if cond then [else orelse]``; ``orelse`` is a Block, a nested If (``else if``) or None."""

    cond: Expr
    then: Block
    orelse: Optional[Any] = None


@dataclass(eq=False)
class For(Stmt):
    """``for var in start..stop body`` (``stop`` exclusive, step 1)."""

    var: str
    start: Expr
    stop: Expr
    body: Block
    sym = None


@dataclass(eq=False)
class Return(Stmt):
    """``return;`` in a kernel: the thread does nothing more (outputs assigned before stay
    assigned). ``return value;`` in a function (:class:`FnDef`): its result; the checker sets
    ``fn`` to the function's name."""

    value: Optional[Expr] = None
    fn = None


# ---- declarations -----------------------------------------------------------------------------


@dataclass(eq=False)
class Attribute(Node):
    """``@name`` or ``@name(args)`` before a kernel."""

    name: str
    args: Optional[list] = None


@dataclass(eq=False)
class ScalarParam(Node):
    """``name: T`` -- a scalar passed by value."""

    name: str
    type_name: str
    type_loc: Optional[Loc] = None


@dataclass(eq=False)
class Pattern(Node):
    """An accessor pattern after the access mode: ``strided(off, s)``, ``indexed(I)``, ..."""

    name: str
    args: Optional[list] = None


@dataclass(eq=False)
class LayoutLiteral(Node):
    """``(shape...):(stride...)`` with entries that are int/size-symbol sums and products."""

    shape: list
    stride: list


@dataclass(eq=False)
class LayoutSwizzle(Node):
    """``swizzle<B, M, S>`` inside a layout expression (CuTe ``Sw<B,M,S>``)."""

    bits: int
    base: int
    shift: int


@dataclass(eq=False)
class LayoutCompose(Node):
    """``A o B o C`` inside a layout expression: ``A(B(C(c)))`` (folded right to left)."""

    pieces: list


@dataclass(eq=False)
class LayoutName(Node):
    """``soa``, ``aos`` or the name of a ``layout`` definition, with optional size arguments."""

    name: str
    args: Optional[list] = None


@dataclass(eq=False)
class BufferParam(Node):
    """``name: T[dims] ACCESS [PATTERN...] [as LAYOUT] [default V] [compute T]``.

    The three clauses after the patterns may come in any order (each at most once). ``compute`` is
    the type name of the ``compute`` clause (``"f64"``), located at ``compute_loc``.
    """

    name: str
    elem_name: str
    dims: list
    access: str
    patterns: list = field(default_factory=list)
    layout: Optional[Any] = None
    default: Optional[Expr] = None
    elem_loc: Optional[Loc] = None
    access_loc: Optional[Loc] = None
    compute: Optional[str] = None
    compute_loc: Optional[Loc] = None


@dataclass(eq=False)
class Over(Node):
    """``over P`` (``names == [P]``, ``extents is None``) or ``over (i, j) in (M, N)``;
    ``name_locs``: where each name is (for messages about one coordinate)."""

    names: list
    extents: Optional[list] = None
    name_locs: Optional[list] = None


@dataclass(eq=False)
class Kernel(Node):
    """A kernel definition."""

    name: str
    attributes: list
    params: list
    over: Over
    body: Block
    info = None


@dataclass(eq=False)
class LayoutDef(Node):
    """``layout name[(params)] = LAYOUT-EXPRESSION;``.

    ``expr`` is a :class:`LayoutLiteral` (then ``shape``/``stride`` repeat its entries), a
    :class:`LayoutSwizzle`, a :class:`LayoutCompose`, a :class:`Call` (a layout reference
    ``rowmaj(R, C)`` or an algebra operation ``coalesce(L)``, its args layout expressions), a
    :class:`Name` (a reference without args) or a :class:`TupleLit`/number (a bare shape).
    """

    name: str
    params: list
    shape: Optional[list] = None
    stride: Optional[list] = None
    expr: Optional[Any] = None


@dataclass(eq=False)
class FnLayoutDef(Node):
    """``layout name(params) : (coords) [in (extents)] -> (outs) { let ...; return (...); }``.

    A functional layout, inlined at each application ``name(args)(coords)``. ``domain`` is the
    optional list of extents (``Name('_')`` = no upper bound) that makes the layer checked;
    ``lets`` are the body's :class:`Let` statements and ``result`` the returned expression (a
    :class:`TupleLit` for several coordinates).
    """

    name: str
    params: list
    coords: list
    domain: Optional[list]
    outs: list
    lets: list
    result: Any
    builtin: bool = False
    coord_locs: Optional[list] = None


@dataclass(eq=False)
class ValueType(Node):
    """The type of a function parameter or result: ``f32`` (``count`` None) or ``f32[3]`` (a
    vector; ``count`` the :class:`IntLit` of its components); ``ty`` is set by the checker."""

    name: str
    count: Optional[Expr] = None
    ty = None


@dataclass(eq=False)
class FnParam(Node):
    """``name: T`` or ``name: T[K]`` of a function: a value (read-only in the body)."""

    name: str
    type: ValueType
    sym = None


@dataclass(eq=False)
class FnDef(Node):
    """``fn name(params) -> T { body }``: a function of values, inlined at each call
    (``frontend/functions.py``). The checker sets ``nested_return`` (a ``return`` inside an
    ``if``/``for``)."""

    name: str
    params: list
    result: ValueType
    body: Block
    nested_return = False


@dataclass(eq=False)
class Program(Node):
    """A whole file: ``items`` are Kernel, LayoutDef, FnLayoutDef and FnDef nodes in source order."""

    items: list
    filename: str = "<input>"
    source: str = ""

    @property
    def kernels(self) -> list:
        return [i for i in self.items if isinstance(i, Kernel)]

    @property
    def layouts(self) -> list:
        return [i for i in self.items if isinstance(i, LayoutDef)]

    @property
    def functions(self) -> list:
        return [i for i in self.items if isinstance(i, FnDef)]

    @property
    def fn_layouts(self) -> list:
        return [i for i in self.items if isinstance(i, FnLayoutDef)]


# ---- dumping ----------------------------------------------------------------------------------


def dump_ast(node: Any) -> str:
    """A deterministic, indented text rendering of ``node`` (for ``kernc compile --emit ast``).

    One line per node: ``ClassName [line:col] field=value ...``, then its child nodes indented by two
    spaces under the field that holds them. Types annotated by the checker appear as ``: type``.
    """
    out: list[str] = []
    _dump(node, 0, out, None)
    return "\n".join(out) + "\n"


def iter_nodes(node: Node):
    """Every AST node of ``node`` (itself included), in no particular order. Iterative, so a deeply
    nested tree costs no recursion."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        for f in fields(n):
            v = getattr(n, f.name)
            if isinstance(v, Node):
                stack.append(v)
            elif isinstance(v, list):
                stack.extend(x for x in v if isinstance(x, Node))


def count_nodes(node: Node, limit: int) -> int:
    """The number of AST nodes in ``node`` (itself included), counting stops past ``limit`` (the
    result is then ``limit + 1``)."""
    count = 0
    for _ in iter_nodes(node):
        count += 1
        if count > limit:
            return limit + 1
    return count


def _scalar_repr(v: Any) -> str:
    if isinstance(v, str):
        return repr(v)
    return str(v)


def _is_node_value(v: Any) -> bool:
    if isinstance(v, Node):
        return True
    return isinstance(v, list) and any(isinstance(x, Node) for x in v)


def _dump(node: Any, depth: int, out: list, label: Optional[str]) -> None:
    pad = "  " * depth
    prefix = f"{label}: " if label else ""
    if not isinstance(node, Node):
        out.append(f"{pad}{prefix}{_scalar_repr(node)}")
        return
    parts = [type(node).__name__, f"[{node.loc.line}:{node.loc.column}]"]
    children = []
    for f in fields(node):
        if f.name in ("loc", "source") or f.name.endswith(("_loc", "_locs")):
            continue
        v = getattr(node, f.name)
        if _is_node_value(v):
            children.append((f.name, v))
        elif isinstance(v, list):
            parts.append(f"{f.name}=[{', '.join(_scalar_repr(x) for x in v)}]")
        elif v is not None:
            parts.append(f"{f.name}={_scalar_repr(v)}")
    ty = getattr(node, "ty", None)
    if ty is not None:
        parts.append(f": {ty}")
    out.append(pad + prefix + " ".join(parts))
    for name, v in children:
        if isinstance(v, list):
            out.append(f"{pad}  {name}:")
            for x in v:
                _dump(x, depth + 2, out, None)
        else:
            _dump(v, depth + 1, out, name)
