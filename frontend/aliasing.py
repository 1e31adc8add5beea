"""Which buffers a checked kernel reads and writes, and which of them may be one array (the launch's
aliasing check, ``backend/binding.py``).

A GPU runs its threads in no fixed order, so an array passed for a buffer the kernel reads and for
one it writes (or for two it writes) can make a thread read an element another thread already
wrote -- the CPU interpreter, which does every read of a step before any write, would disagree
silently. The launcher refuses memory shared by such buffers, except for the pairs recorded here:
one array passed for both buffers is safe when every item reads and writes *the same element* of
both, as numpy's ``out=`` allows for an elementwise ufunc (``np.add(x, y, out=x)``). Each thread
then touches only its own element through the pair, and its own read comes first (reads are
hoisted to the start of the body, writes happen at its end, view accesses in program order on both
devices). Provable from the declarations and the body:

- buffers with accessors: a ``read`` and a ``write``/``add`` of the same storage dtype, layout and
  storage shape, both ``sequential``; both ``strided``/``strided(off, s) default v`` with the same
  ``(off, s)`` expressions of scalar params and literals; or both ``indexed(I)`` with the same
  ``I`` (whose entries a scatter must keep distinct anyway);
- ``view`` buffers of the same dtype, layout and storage shape, one only read, where every load
  and store of either uses the same coordinate expressions, built only from the ``over``
  coordinates, scalar params, size symbols, builtins (``thread_id``, ...) and literals -- not from
  locals, loop variables or loaded values, whose values may differ between two uses -- and where
  those coordinates are *one element per item* (an injective function of the item): some
  coordinate is ``k * thread_id + c``, or for each ``over`` coordinate ``v`` some coordinate is
  ``k * v + c`` (``k`` a nonzero integer literal below 2^22 in magnitude, so that ``k * v`` cannot
  wrap modulo 2^64 onto another item's value; ``c`` free of item coordinates: scalars, sizes,
  literals, with ``+``, ``-`` and ``*`` by literals). ``x[0]``, ``x[thread_id / 2]``,
  ``x[i % 4, j]``, ``x[i + j]`` or ``x[i * s]`` let several items share an element: one item's
  store could reach another's load in any order, so such a pair is not in place;
- ``strided(off, s)`` pairs likewise need ``s`` a nonzero integer literal (``s = 0`` at launch
  would give every item the element ``off``).

In every case the (shared) layout must map distinct coordinates to distinct elements
(``StridedLayout.injective``): a stride 0 on a mode of extent > 1 or overlapping modes
(``(8, 2):(1, 4)``) let two items with distinct coordinates share an element; a symbolic layout
that is not provably injective (``(M, N):(ld, 1)``) is not in place either.

A kernel that writes the same element through two buffers is never safe in this sense (which write
lands last is an accident of the lowering), so two written buffers may never share memory. A read
buffer the body never uses is neither read nor written; ``x.in_bounds(...)`` reads no memory.
"""

from __future__ import annotations

from typing import Optional

from kernc.dialect import accessors
from kernc.dialect.accessors import Reach

from . import ast as A

#: kinds of names whose value is the same at every use within one thread
_FIXED_KINDS = ("scalar", "size", "coord", "builtin")


def _key(e) -> Optional[tuple]:
    """A structural key of the expression ``e``, equal for two expressions exactly when they are
    written alike over the same names, or ``None`` when ``e`` may have different values at two
    places of one thread (it reads a local, a loop variable or memory)."""
    if isinstance(e, A.IntLit):
        return ("int", e.value, str(e.ty))
    if isinstance(e, A.FloatLit):
        return ("float", e.text, e.value, str(e.ty))
    if isinstance(e, A.BoolLit):
        return ("bool", e.value)
    if isinstance(e, A.Name):
        sym = e.sym
        if sym is None or sym.kind not in _FIXED_KINDS:
            return None
        return ("name", id(sym), str(e.ty))
    if isinstance(e, A.Unary):
        inner = _key(e.operand)
        return None if inner is None else ("unary", e.op, inner)
    if isinstance(e, A.Binary):
        left, right = _key(e.left), _key(e.right)
        return None if left is None or right is None else ("binary", e.op, left, right, str(e.ty))
    if isinstance(e, A.Call) and getattr(e, "layers", None) is None and getattr(e, "view", None) is None:
        args = _keys(e.args)
        return None if args is None else ("call", e.func, args, str(e.ty))
    if isinstance(e, (A.Apply, A.Call)) and getattr(e, "layers", None) is not None:
        # a layout application: its size arguments are size names (a strided layout's arguments
        # are checked as sizes and carry no symbol) or index expressions (a functional layout's)
        args = []
        for a in (e.args if isinstance(e, A.Apply) else []):
            k = _key(a)
            if k is None and isinstance(a, A.Name) and a.sym is None:
                k = ("size-name", a.id)
            if k is None:
                return None
            args.append(k)
        inputs = _keys(e.inputs)
        return None if inputs is None else ("apply", e.func, tuple(args), inputs)
    return None


_ITEM_BUILTIN = "thread_id"

#: ``k * v + c`` is one element per item only for ``|k|`` below this: index arithmetic wraps
#: modulo 2^64, and two items ``v1 != v2`` (both below 2^41: at most 2^31 - 1 blocks of 1024
#: threads, the launcher's limit) give the same value exactly when ``k * (v1 - v2)`` is 0 modulo
#: 2^64, which ``0 < |k * (v1 - v2)| < 2^22 * 2^41`` excludes (``c`` is the same for both)
_MAX_COEFFICIENT = 2**22


def _linear(e) -> Optional[dict]:
    """The item coordinates of ``e`` with their coefficients (``{coord Symbol or "thread_id": k}``,
    ``k`` an int) when ``e`` is ``sum k_v * v + c`` with ``c`` free of item coordinates (scalars,
    size symbols and literals; ``+``, ``-``, ``*`` by an integer literal), else ``None``."""
    if isinstance(e, A.IntLit):
        return {}
    if isinstance(e, A.Name):
        sym = e.sym
        if sym is None:
            return None
        if sym.kind == "coord":
            return {id(sym): 1}
        if sym.kind == "builtin":
            return {_ITEM_BUILTIN: 1} if sym.name == _ITEM_BUILTIN else None
        return {} if sym.kind in ("scalar", "size") else None
    if isinstance(e, A.Unary) and e.op == "-":
        inner = _linear(e.operand)
        return None if inner is None else {v: -k for v, k in inner.items()}
    if isinstance(e, A.Binary) and e.op in ("+", "-"):
        left, right = _linear(e.left), _linear(e.right)
        if left is None or right is None:
            return None
        out = dict(left)
        for v, k in right.items():
            out[v] = out.get(v, 0) + (k if e.op == "+" else -k)
        return {v: k for v, k in out.items() if k}
    if isinstance(e, A.Binary) and e.op == "*":
        for lit, other in ((e.left, e.right), (e.right, e.left)):
            if isinstance(lit, A.IntLit):
                inner = _linear(other)
                if inner is None:
                    return None
                return {v: k * lit.value for v, k in inner.items() if k * lit.value}
        left, right = _linear(e.left), _linear(e.right)
        return {} if left == {} and right == {} else None  # (a product of item-free values)
    return None


def _one_element_per_item(coords, item_coords: list) -> bool:
    """Whether the coordinate expressions ``coords`` give each item its own element: some
    coordinate is ``k * thread_id + c`` (``k != 0``), or each ``over`` coordinate Symbol of
    ``item_coords`` has a coordinate ``k * v + c`` of its own."""
    forms = [_linear(c) for c in coords]
    singles = {next(iter(f)) for f in forms
               if f is not None and len(f) == 1 and abs(next(iter(f.values()))) < _MAX_COEFFICIENT}
    if _ITEM_BUILTIN in singles:
        return True
    return bool(item_coords) and all(id(v) in singles for v in item_coords)


def _keys(exprs) -> Optional[tuple]:
    keys = tuple(_key(x) for x in exprs)
    return None if any(k is None for k in keys) else keys


class _Accesses:
    """The view accesses of a kernel body: per view Symbol, the coordinate key of each load and
    store (``None`` for one not provably fixed)."""

    def __init__(self):
        self.loads: dict = {}
        self.stores: dict = {}
        self.coords: dict = {}  # key -> the coordinate expressions of one access with that key

    def add(self, table: dict, node) -> None:
        key = _keys(node.coords)
        table.setdefault(node.view, []).append(key)
        if key is not None:
            self.coords.setdefault(key, node.coords)

    def walk(self, node) -> None:
        if isinstance(node, A.Assign) and getattr(node.target, "view", None) is not None:
            target = node.target
            self.add(self.stores, target)
            if node.op != "=":
                self.add(self.loads, target)
            self.walk_coords(target)
            self.walk(node.value)
            return
        if isinstance(node, A.Expr) and getattr(node, "view", None) is not None:
            if not (isinstance(node, A.Method) and node.name == "in_bounds"):
                self.add(self.loads, node)
            self.walk_coords(node)
            return
        for child in _children(node):
            self.walk(child)

    def walk_coords(self, node) -> None:
        for c in node.coords:  # a coordinate may itself load from a view
            self.walk(c)


def _children(node):
    if isinstance(node, list):
        yield from node
        return
    if not isinstance(node, A.Node):
        return
    for name, value in vars(node).items():
        if name in ("loc", "ty", "sym", "view", "view_sym", "layers", "computed_as", "out_convert"):
            continue
        if isinstance(value, (A.Node, list)):
            yield value


def alias_facts(kernel: A.Kernel, info) -> tuple[list, list, list]:
    """``(reads, writes, in_place)`` of the checked ``kernel`` (``info``: its
    :class:`kernc.frontend.symbols.KernelInfo`): the names of the buffer params the kernel reads and
    of those it writes, in param order, and the ``[read, written]`` pairs of params that may be
    passed one array (every item reads and writes the same element of both; see the module)."""
    acc = _Accesses()
    acc.walk(kernel.body.stmts)
    used = set(info.used_reads)
    index_params = {p.buffer.index_param for p in info.params
                    if p.kind == "buffer" and p.buffer is not None and p.buffer.index_param}
    reads, writes = [], []
    for p in info.params:
        b = p.buffer
        if p.kind != "buffer" or b is None:
            continue
        if b.is_view:
            if p in acc.loads:
                reads.append(p)
            if p in acc.stores:
                writes.append(p)
        elif b.is_output:
            writes.append(p)
        elif p in used or p.name in index_params:
            reads.append(p)
    acc.item_coords = list(info.coords or [])
    in_place = []
    for r in reads:
        if r in writes:
            continue
        for w in writes:
            if _same_elements(r, w, acc):
                in_place.append([r.name, w.name])
    return [p.name for p in reads], [p.name for p in writes], in_place


def _same_storage(a, b) -> bool:
    return (a.elem.name == b.elem.name and a.layout_text == b.layout_text
            and [str(x) for x in a.storage_shape] == [str(x) for x in b.storage_shape]
            and a.components == b.components)


def _same_elements(r, w, acc: _Accesses) -> bool:
    """Whether every item reads and writes the same element of the read buffer ``r`` and the
    written buffer ``w`` (Symbols)."""
    rb, wb = r.buffer, w.buffer
    if not _same_storage(rb, wb):
        return False
    if not rb.layout.injective():  # (a swizzle on top permutes offsets: injective too)
        return False  # a stride 0, overlapping modes: distinct coordinates share an element
    if rb.is_view or wb.is_view:
        if not (rb.is_view and wb.is_view):
            return False
        keys = acc.loads.get(r, []) + acc.loads.get(w, []) + acc.stores.get(w, [])
        return (bool(keys) and keys[0] is not None and all(k == keys[0] for k in keys)
                and _one_element_per_item(acc.coords[keys[0]], acc.item_coords))
    rkind, wkind = rb.kind, wb.kind
    if rkind is accessors.SEQUENTIAL and wkind is accessors.SEQUENTIAL:
        return True
    if rkind.reach is Reach.STRIDED and wkind is accessors.STRIDED:  # strided(off, s) [default v]
        rk, wk = _keys(rb.accessor_args), _keys(wb.accessor_args)
        stride = rb.accessor_args[1] if len(rb.accessor_args) > 1 else None
        return (rk is not None and rk == wk and isinstance(stride, A.IntLit)
                and 0 < abs(stride.value) < _MAX_COEFFICIENT)
    if rkind is accessors.INDEXED and wkind is accessors.INDEXED:
        return rb.index_param == wb.index_param
    return False
