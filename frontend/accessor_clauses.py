"""Checking the accessor clauses of buffer parameters (``docs/design/accessors.md``): the accessor
patterns each access mode allows, their arguments (``strided(off, s)``, the index buffer ``I`` of
``indexed``/``shared``/``shared_sum``/``atomic``), ``default v`` and ``@deterministic``. Every fact
about a pattern is its record in the accessor registry (``dialect/accessors.py``): its modes, its
language arguments, its ``default`` form, whether it is block-wide and what ``@deterministic``
does with it.
"""

from __future__ import annotations

from typing import Optional

from kernc.dialect import accessors
from kernc.dialect.accessors import ADD, READ, WRITE, Determinism
from kernc.dialect.strided import Poly

from . import ast as A
from . import types as T
from .diagnostics import did_you_mean
from .expressions import literal_fraction
from .names import CheckerBase
from .symbols import BufferInfo, Symbol

#: The accessor patterns of the language by name, in the order messages list them.
PATTERNS = {k.name: k for k in accessors.LANGUAGE}
#: The element types of an index buffer ``I`` (``indexed``/``shared``/``shared_sum``/``atomic``):
#: loaded and widened to ``index`` (``arith.index_castui``); a negative signed entry is a launch
#: error (the launcher's index check), as for ``i32``.
INDEX_TYPES = ("u8", "u16", "u32", "i8", "i16", "i32")


class AccessorChecks(CheckerBase):
    """Accessor clauses; uses ``expr`` and ``retype`` of the checker's expressions."""

    def check_accessor(self, sym: Symbol, by_name: dict, size_syms: dict,
                       problem: Optional[str] = None) -> None:
        """Check ``sym``'s accessor patterns and ``default`` clause against its access mode; set
        ``accessor``, ``accessor_args``, ``default_value`` and ``index_param`` of its buffer."""
        p: A.BufferParam = sym.node
        b = sym.buffer
        pats = p.patterns
        names = ", ".join(PATTERNS)
        for pat in pats:
            if pat.name not in PATTERNS:
                self.error(f"unknown accessor '{pat.name}'"
                           + did_you_mean(pat.name, list(PATTERNS) + ["compute", "default"]),
                           pat.loc, hint=f"accessors: {names}")
                return
        kinds = [PATTERNS[pat.name] for pat in pats]
        if len(pats) > 2 or (len(pats) == 2 and (kinds[0], kinds[1]) != (accessors.PAIR, accessors.STRIDED)):
            self.error("only 'pair strided(off, s) default v' combines two accessor patterns",
                       pats[1].loc if kinds[0] is accessors.PAIR or len(pats) > 2 else pats[0].loc,
                       hint="one accessor per buffer, e.g. `read shared(I)`")
            return
        for pat, k in zip(pats, kinds):
            want = len(k.language_args)
            args = pat.args or []
            if len(args) != want or (want == 0 and pat.args is not None):
                if want == 0:
                    self.error(f"accessor '{pat.name}' takes no arguments", pat.loc)
                else:
                    self.error(f"accessor '{pat.name}' takes {want} argument{'s' if want > 1 else ''}, "
                               f"got {len(args)}", pat.loc,
                               hint=k.spelling)
                return
        kind = kinds[0] if pats else accessors.SEQUENTIAL
        strided = pats[-1] if pats and kinds[-1] is accessors.STRIDED else None
        mode = p.access
        if mode not in kind.modes:
            self.access_mode_error(kind, mode, pats[0], p)
            return
        if kind is accessors.PAIR and strided is not None and mode != READ:
            self.error(f"'pair strided(off, s) default v' is only for 'read' buffers, not '{mode}'",
                       pats[0].loc, hint="pair outputs are `write pair` or `add pair`")
            return
        if p.default is not None:
            if mode != READ:
                self.error(f"'default' values are only for 'read' buffers, not '{mode}'",
                           p.default.loc, hint="for checked out-of-range writes, declare the buffer as a "
                                                "'view' and use x.checked(...)")
                return
            if strided is None:
                self.error("'default v' needs a strided read: `strided(off, s) default v` or "
                           "`pair strided(off, s) default v`", p.default.loc,
                           hint=f"'{kind.name}' reads are always in bounds" if kind is not accessors.SEQUENTIAL else
                           "a sequential read is `strided(0, 1)`: write `strided(0, 1) default v`")
                return
        elif kind is accessors.PAIR and strided is not None:
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
        if kind.index_param:
            if not self.index_param(sym, pats[0], by_name, problem):
                return
        # `strided(off, s) default v`, `pair strided(off, s) default v` (a pair needs its default)
        b.accessor = kind.default_form if strided is not None and p.default is not None else kind.name

    def access_mode_error(self, kind: accessors.AccessorKind, mode: str, pat: A.Pattern,
                          p: A.BufferParam) -> None:
        """Report accessor ``kind`` (pattern ``pat`` of ``p``) used with an access ``mode`` it does
        not support (not in ``kind.modes``)."""
        loc = pat.loc
        name = kind.name
        if kind.modes == (ADD,):  # shared_sum(I), atomic(I)
            idx = pat.args[0].id if pat.args and isinstance(pat.args[0], A.Name) else "I"
            if mode == WRITE:
                hint = (f"duplicate indices are summed into the buffer: declare `{p.name}: "
                        f"{p.elem_name}[...] add {name}({idx})`, or use `write indexed({idx})` when "
                        f"the indices are unique")
            else:
                hint = f"to gather use shared({idx}) or indexed({idx})"
            self.error(f"accessor '{name}' needs 'add' access, not '{mode}'", loc, hint=hint)
        elif kind.modes == (READ,):  # shared(I), unique
            hint = ("to scatter use indexed(I); to add with duplicate indices use shared_sum(I) or "
                    "atomic(I)") if kind.index_param else "to add every thread's value into one " \
                "element use 'add sum'"
            self.error(f"accessor '{name}' is only for 'read' buffers, not '{mode}'", loc, hint=hint)
        else:  # block_sum, sum (write add); max, min, block_max, block_min (write)
            allowed = " or ".join(f"'{m}'" for m in kind.modes)
            self.error(f"accessor '{name}' is only for {allowed} buffers, not '{mode}'", loc,
                       hint="to read one element in every thread use 'unique'" if mode == READ else
                       f"declare `{p.name}: {p.elem_name}[...] write {name}`")

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
        if isinstance(e, A.Name):
            return self.default_param(e, b)
        neg = False
        lit = e
        while isinstance(lit, A.Unary) and lit.op == "-":
            neg = not neg
            lit = lit.operand
        if not isinstance(lit, (A.IntLit, A.FloatLit)):
            self.error("the default value must be a number literal or a scalar parameter", e.loc,
                       hint="e.g. `default -1`, `default 0.5` or `default amb` (amb: a scalar parameter)")
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

    def default_param(self, e: A.Name, b: BufferInfo):
        """``default NAME``: the value of the scalar parameter ``NAME`` out of bounds (Rodinia
        hotspot's ambient temperature). It must have ``b``'s compute type exactly (no conversion
        hides a narrowing); records ``b.default_param`` and returns 0, the IR placeholder the
        lowering selects over (None after an error)."""
        ct = b.compute_elem
        sym = self.kernel_params.get(e.id)
        if sym is None or sym.kind != "scalar":
            what = (f"unknown name '{e.id}'" + did_you_mean(e.id, self.kernel_params) if sym is None
                    else f"'{e.id}' is a buffer")
            self.error(f"the default value must be a number literal or a scalar parameter ({what})",
                       e.loc)
            return None
        if sym.ty is None:
            return None  # its own declaration's error was reported
        if sym.ty != ct:
            self.error(f"the default '{e.id}' is '{sym.ty}', but '{b.name}' computes in '{ct}'",
                       e.loc, hint=f"declare '{e.id}: {ct}'")
            return None
        e.sym = sym
        e.ty = ct
        b.default_param = e.id
        return 0

    def index_param(self, sym: Symbol, pat: A.Pattern, by_name: dict, problem: Optional[str]) -> bool:
        """Check the index buffer ``I`` of ``indexed/shared/shared_sum/atomic(I)``; set
        ``index_param``. ``I`` must be a sequential 1-D ``read`` buffer of an integer type of at
        most 32 bits (:data:`INDEX_TYPES`, widened to ``index`` on load) with one entry per item
        (its dim is the problem size symbol)."""
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
        if tb.access != READ:
            problems.append("read")
        if tb.components != 1:
            problems.append("1-D")
        if tb.elem.name not in INDEX_TYPES:
            problems.append("an integer type of at most 32 bits")
        pats = target.node.patterns
        if (pats and pats[0].name != accessors.SEQUENTIAL.name) or target.node.default is not None \
                or str(tb.layout) != f"({tb.dims[0]}):(1)":
            problems.append(accessors.SEQUENTIAL.name)
        if problems:
            self.error(f"the index buffer '{a.id}' of {pat.name}({a.id}) must be a 1-D "
                       f"{'/'.join(INDEX_TYPES)} buffer read sequentially", a.loc,
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
            if sym.kind != "buffer" or b is None or b.access != ADD or not b.compute_elem.is_float \
                    or b.kind.deterministic is not Determinism.FLOAT_ADD_REFUSED:
                continue
            if b.kind.atomic:
                self.error(f"@deterministic cannot make '{sym.name}' reproducible: 'add atomic' adds "
                           "floats with one atomic per thread, in an order that varies from run to run",
                           b.loc, note=("the attribute is here", attribute.loc),
                           hint=f"use 'add shared_sum({b.index_param})', which @deterministic makes "
                                "bitwise reproducible")
            elif b.kind.pair:
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
    return b.access in (WRITE, ADD) and not b.kind.block_wide
