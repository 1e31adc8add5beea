"""Checking the accessor clauses of buffer parameters (``docs/design/accessors.md``): the accessor
patterns each access mode allows (:data:`~kernc.frontend.language.ACCESS_PATTERNS`), their
arguments (``strided(off, s)``, the index buffer ``I`` of ``indexed``/``shared``/``shared_sum``/
``atomic``), ``default v`` and ``@deterministic``.
"""

from __future__ import annotations

from typing import Optional

from kernc.dialect.strided import Poly

from . import ast as A
from . import types as T
from .diagnostics import did_you_mean
from .expressions import literal_fraction
from .language import ACCESS_PATTERNS, ACCESSORS, BLOCK_WIDE_OUTPUTS, INDEX_ACCESSORS, PER_THREAD_ADDS
from .names import CheckerBase
from .symbols import BufferInfo, Symbol


class AccessorChecks(CheckerBase):
    """Accessor clauses; uses ``expr`` and ``retype`` of the checker's expressions."""

    def check_accessor(self, sym: Symbol, by_name: dict, size_syms: dict,
                       problem: Optional[str] = None) -> None:
        """Check ``sym``'s accessor patterns and ``default`` clause against its access mode; set
        ``accessor``, ``accessor_args``, ``default_value`` and ``index_param`` of its buffer."""
        p: A.BufferParam = sym.node
        b = sym.buffer
        pats = p.patterns
        names = ", ".join(ACCESSORS)
        for pat in pats:
            if pat.name not in ACCESSORS:
                self.error(f"unknown accessor '{pat.name}'"
                           + did_you_mean(pat.name, list(ACCESSORS) + ["compute", "default"]),
                           pat.loc, hint=f"accessors: {names}")
                return
        if len(pats) > 2 or (len(pats) == 2 and (pats[0].name, pats[1].name) != ("pair", "strided")):
            self.error("only 'pair strided(off, s) default v' combines two accessor patterns",
                       pats[1].loc if pats[0].name == "pair" or len(pats) > 2 else pats[0].loc,
                       hint="one accessor per buffer, e.g. `read shared(I)`")
            return
        for pat in pats:
            want = ACCESSORS[pat.name]
            args = pat.args or []
            if len(args) != want or (want == 0 and pat.args is not None):
                if want == 0:
                    self.error(f"accessor '{pat.name}' takes no arguments", pat.loc)
                else:
                    self.error(f"accessor '{pat.name}' takes {want} argument{'s' if want > 1 else ''}, "
                               f"got {len(args)}", pat.loc,
                               hint="strided(off, s)" if pat.name == "strided" else f"{pat.name}(I)")
                return
        kind = pats[0].name if pats else "sequential"
        strided = pats[-1] if pats and pats[-1].name == "strided" else None
        mode = p.access
        if kind not in ACCESS_PATTERNS[mode]:
            self.access_mode_error(kind, mode, pats[0], p)
            return
        if kind == "pair" and strided is not None and mode != "read":
            self.error(f"'pair strided(off, s) default v' is only for 'read' buffers, not '{mode}'",
                       pats[0].loc, hint="pair outputs are `write pair` or `add pair`")
            return
        if p.default is not None:
            if mode != "read":
                self.error(f"'default' values are only for 'read' buffers, not '{mode}'",
                           p.default.loc, hint="for checked out-of-range writes, declare the buffer as a "
                                                "'view' and use x.checked(...)")
                return
            if strided is None:
                self.error("'default v' needs a strided read: `strided(off, s) default v` or "
                           "`pair strided(off, s) default v`", p.default.loc,
                           hint=f"'{kind}' reads are always in bounds" if kind != "sequential" else
                           "a sequential read is `strided(0, 1)`: write `strided(0, 1) default v`")
                return
        elif kind == "pair" and strided is not None:
            self.error("'pair strided(off, s)' needs a default value for the items out of range",
                       pats[1].loc, hint="e.g. `pair strided(-1, 1) default 0`")
            return
        if strided is not None:
            if not self.strided_args(strided, by_name, size_syms, b):
                return
        if p.default is not None:
            value = self.default_value(p.default, b)
            if value is None:
                return
            b.default_value = value
        if kind in INDEX_ACCESSORS:
            if not self.index_param(sym, pats[0], by_name, problem):
                return
        if kind == "pair" and strided is not None:
            b.accessor = "pair_strided_default"
        elif strided is not None and p.default is not None:
            b.accessor = "strided_default"
        else:
            b.accessor = kind

    def access_mode_error(self, kind: str, mode: str, pat: A.Pattern, p: A.BufferParam) -> None:
        """Report accessor ``kind`` (pattern ``pat`` of ``p``) used with an access ``mode`` it does
        not support."""
        loc = pat.loc
        if kind in ("shared_sum", "atomic"):
            idx = pat.args[0].id if pat.args and isinstance(pat.args[0], A.Name) else "I"
            if mode == "write":
                hint = (f"duplicate indices are summed into the buffer: declare `{p.name}: "
                        f"{p.elem_name}[...] add {kind}({idx})`, or use `write indexed({idx})` when "
                        f"the indices are unique")
            else:
                hint = f"to gather use shared({idx}) or indexed({idx})"
            self.error(f"accessor '{kind}' needs 'add' access, not '{mode}'", loc, hint=hint)
        elif kind in ("shared", "unique"):
            hint = ("to scatter use indexed(I); to add with duplicate indices use shared_sum(I) or "
                    "atomic(I)") if kind == "shared" else "to add every thread's value into one " \
                "element use 'add sum'"
            self.error(f"accessor '{kind}' is only for 'read' buffers, not '{mode}'", loc, hint=hint)
        else:
            self.error(f"accessor '{kind}' is only for 'write' or 'add' buffers, not '{mode}'", loc,
                       hint="to read one element in every thread use 'unique'")

    def strided_args(self, pat: A.Pattern, by_name: dict, size_syms: dict, b: BufferInfo) -> bool:
        """Check the ``(off, s)`` of ``strided`` (integers over scalar params and size symbols)."""
        args = pat.args or []
        scope = {n: s for n, s in by_name.items() if s.kind == "scalar"}
        scope.update(size_syms)
        saved = self.scopes
        self.scopes = [scope]
        self.in_accessor = True
        ok = True
        for a in args:
            t = self.expr(a)
            if t is None:
                ok = False
                continue
            if T.is_literal(t):
                self.retype(a, T.INDEX)
                t = a.ty
            if not isinstance(t, T.ScalarType) or not t.is_int:
                self.error(f"strided arguments must be integers, got '{t}'", a.loc)
                ok = False
        self.in_accessor = False
        self.scopes = saved
        if ok:
            b.accessor_args = list(args)
        return ok

    def default_value(self, e: A.Expr, b: BufferInfo):
        """The exact value of a ``default v`` literal in ``b``'s compute type (None after an error).

        Floats are rounded once from the literal's decimal text (:func:`types.exact_float`)."""
        ct = b.compute_elem
        neg = False
        lit = e
        while isinstance(lit, A.Unary) and lit.op == "-":
            neg = not neg
            lit = lit.operand
        if not isinstance(lit, (A.IntLit, A.FloatLit)):
            self.error("the default value must be a number literal", e.loc,
                       hint="e.g. `default -1` or `default 0.5`")
            return None
        if lit.suffix is not None and lit.suffix not in (ct.name, b.elem.name):
            self.error(f"the default value {lit.text} has type '{lit.suffix}', but '{b.name}' "
                       f"computes in '{ct}'", e.loc, hint="drop the suffix")
            return None
        if isinstance(lit, A.FloatLit) and not ct.is_float:
            self.error(f"a float literal cannot be the default of a '{ct}' buffer", e.loc)
            return None
        fr = literal_fraction(lit)
        if neg:
            fr = -fr
        e.ty = ct
        if ct.is_int:
            lo, hi = T.int_range(ct)
            if not lo <= fr <= hi:
                self.error(f"default value {fr} is out of range for '{ct}' ({lo}..{hi})", e.loc)
                return None
            return int(fr)
        value = T.exact_float(fr, ct)
        if value is None:
            self.error(f"default value {lit.text} is out of range for '{ct}'", e.loc)
            return None
        if value == 0 and (lit.text.startswith("-") != neg):
            value = -0.0
        return value

    def index_param(self, sym: Symbol, pat: A.Pattern, by_name: dict, problem: Optional[str]) -> bool:
        """Check the index buffer ``I`` of ``indexed/shared/shared_sum/atomic(I)``; set
        ``index_param``. ``I`` must be a sequential 1-D u32/i32 ``read`` buffer with one entry per
        item (its dim is the problem size symbol)."""
        p: A.BufferParam = sym.node
        a = (pat.args or [None])[0]
        what = f"{pat.name}(I)"
        if not isinstance(a, A.Name):
            self.error(f"{what} takes the name of an index buffer parameter", a.loc if a else pat.loc)
            return False
        target = by_name.get(a.id)
        if target is None:
            self.error(f"unknown index buffer '{a.id}'" + did_you_mean(a.id, by_name), a.loc)
            return False
        if target.kind != "buffer":
            self.error(f"the index of {pat.name}({a.id}) must be a buffer parameter, "
                       f"'{a.id}' is a scalar", a.loc,
                       hint=f"declare it `{a.id}: u32[n] read`")
            return False
        tb = target.buffer
        if tb is None:
            return False
        if target is sym:
            self.error(f"buffer '{p.name}' cannot index itself", a.loc)
            return False
        problems = []
        if tb.access != "read":
            problems.append("read")
        if tb.components != 1:
            problems.append("1-D")
        if tb.elem.name not in ("u32", "i32"):
            problems.append("u32 or i32")
        pats = target.node.patterns
        if (pats and pats[0].name != "sequential") or target.node.default is not None \
                or str(tb.layout) != f"({tb.dims[0]}):(1)":
            problems.append("sequential")
        if problems:
            self.error(f"the index buffer '{a.id}' of {pat.name}({a.id}) must be a 1-D u32 or i32 "
                       f"buffer read sequentially", a.loc,
                       note=(f"'{a.id}' is declared here", target.loc),
                       hint=f"declare it as `{a.id}: u32[{problem or 'n'}] read`")
            return False
        info = self.info
        if problem is not None and info is not None and problem in info.size_symbols \
                and tb.dims[0] != Poly.sym(problem):
            self.error(f"the index buffer '{a.id}' of {pat.name}({a.id}) must have one entry per "
                       f"item: its dim must be the problem size '{problem}', not '{tb.dims[0]}'",
                       a.loc, note=(f"'{a.id}' is declared here", target.loc),
                       hint=f"declare it as `{a.id}: u32[{problem}] read`")
            return False
        sym.buffer.index_param = a.id
        return True

    def deterministic_ok(self, params: list, attribute) -> None:
        """``@deterministic`` makes ``sum``/``shared_sum`` reproducible; a float buffer that is
        still added to with atomics in an order that varies from run to run (``add atomic(I)``, and
        ``add pair``, whose block-edge elements take two atomics onto their old value) would not be.
        Integer adds are exact in any order, ``write pair``'s two adds start from zero, and
        ``block_sum`` uses no atomics: those stay allowed."""
        for sym in params:
            b = sym.buffer
            if sym.kind != "buffer" or b is None or b.access != "add" or not b.compute_elem.is_float:
                continue
            if b.accessor == "atomic":
                self.error(f"@deterministic cannot make '{sym.name}' reproducible: 'add atomic' adds "
                           "floats with one atomic per thread, in an order that varies from run to run",
                           b.loc, note=("the attribute is here", attribute.loc),
                           hint=f"use 'add shared_sum({b.index_param})', which @deterministic makes "
                                "bitwise reproducible")
            elif b.accessor == "pair":
                self.error(f"@deterministic cannot make '{sym.name}' reproducible: 'add pair' adds "
                           "two floats with atomics onto each block-edge element, in either order",
                           b.loc, note=("the attribute is here", attribute.loc),
                           hint="drop @deterministic, or write the pairs to a 'write pair' buffer "
                                "(its two adds start from zero) and add that")


def guarded_output(b) -> bool:
    """Whether output buffer ``b``'s final op may sit behind an "assigned" flag (when the output is
    not assigned on every path): every ``write`` but the block-wide ones, and the per-thread
    ``add`` accessors. An unassigned thread then leaves the element as it was, like a store that
    never happened in C; adding its pending 0 instead turned a -0.0 element into +0.0 and cost a
    read-modify-write (or an atomic) per such thread (found by a fuzzing trial)."""
    if b.access == "write":
        return b.accessor not in BLOCK_WIDE_OUTPUTS
    return b.access == "add" and b.accessor in PER_THREAD_ADDS
