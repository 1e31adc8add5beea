"""A small grammar-based generator of VALID ``.kern`` programs, and an independent evaluator.

Shared by ``test_fuzz_frontend.py`` (valid and mutated programs) and ``test_differential.py``
(CPU interpreter vs. this module's per-element reference evaluation). A plain module, not a conftest.

The generator builds a typed program tree (:class:`Program` of statements over expression nodes),
renders it as ``.kern`` text (:meth:`Program.render`) and -- for the differential configuration,
element-wise kernels over ``f32 f64 i32 u32`` sequential buffers and scalars -- evaluates it one
element at a time in plain Python (:func:`evaluate`), with the language's semantics written out here
independently of kernc's IR:

- integers wrap around on overflow (two's complement); ``/`` and ``%`` truncate (C), ``//`` and
  ``%%`` floor; ``>>`` is arithmetic on signed and logical on unsigned types; comparisons, ``min``,
  ``max`` and division respect signedness;
- float arithmetic is done in the declared precision (numpy ``float32``/``float64`` scalars);
  ``%`` is C ``fmod``, ``//`` is ``floor(a / b)``, ``%%`` is ``fmod`` moved into the divisor's sign;
  ``min``/``max`` are ``fmin``/``fmax`` (a NaN operand yields the other one); ``!=`` is unordered;
- int -> float rounds to nearest, float -> int truncates (the generator clamps operands into range
  first, so no undefined conversion is generated), float -> float rounds to nearest.

Undefined behaviour is never generated: integer divisors are made non-zero and never ``-1`` for
signed types (``(d & -4) | 2`` or ``d | 1`` or a safe literal), shift amounts are masked below the
width, float -> int conversions are clamped into the target's range.

Choices come from a ``rng`` object with ``choice(seq)``, ``randint(a, b)`` and ``chance(p)``:
:class:`HypRng` draws them from hypothesis (shrinkable), :class:`PyRng` from ``random.Random``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

# ---------------------------------------------------------------------------------------------
# types
INT_TYPES = {
    "i8": (8, True), "i16": (16, True), "i32": (32, True), "i64": (64, True),
    "u8": (8, False), "u16": (16, False), "u32": (32, False), "u64": (64, False),
    "index": (64, True),
}
FLOAT_TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": None}
DIFF_TYPES = ("f32", "f64", "i32", "u32")
ALL_SCALAR_TYPES = ("bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
                    "f16", "bf16", "f32", "f64", "index")


def is_int(ty: str) -> bool:
    return ty in INT_TYPES


def is_float(ty: str) -> bool:
    return ty in FLOAT_TYPES


def wrap(v: int, ty: str) -> int:
    """``v`` reduced to the two's-complement range of integer type ``ty``."""
    bits, signed = INT_TYPES[ty]
    v &= (1 << bits) - 1
    if signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def compute_type(storage: str) -> str:
    """The type the body sees for a buffer of ``storage`` (f16/bf16 are computed in f32)."""
    return "f32" if storage in ("f16", "bf16") else storage


def np_float(ty: str):
    return {"f32": np.float32, "f64": np.float64, "f16": np.float16}[ty]


# ---------------------------------------------------------------------------------------------
# expressions
# Rust-like precedence of the language (higher binds tighter)
PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3, "|": 4, "^": 5,
        "&": 6, "<<": 7, ">>": 7, "+": 8, "-": 8, "*": 9, "/": 9, "%": 9, "//": 9, "%%": 9}
CMP_OPS = ("==", "!=", "<", "<=", ">", ">=")
ARITH_OPS = ("+", "-", "*")
DIV_OPS = ("/", "%", "//", "%%")
BIT_OPS = ("&", "|", "^")
SHIFT_OPS = ("<<", ">>")
ATOM_PREC = 100
#: BUG workaround (see test_fuzz_frontend.test_call_followed_by_eq_parses): `abs(x) == 1` does not
#: parse (the `==` after a call's `)` is lexed as `=`); the left operand of `==` is parenthesised.
WORKAROUND_CALL_EQ = False
#: BUG workaround (see test_differential.test_negated_zero_literal_is_negative_zero): `-0.0` is
#: compiled as +0.0, so negated zero float literals are not generated.
WORKAROUND_NEG_ZERO_LIT = False
#: BUG workaround (see test_fuzz_frontend.test_abs_of_integers_other_than_i32_lowers_to_ptx):
#: `abs` of i8/i16/i64/u8/u16/u64 values is an internal compiler error at PTX time (math.absi is
#: left for the LLVM translation), so integer `abs` is only generated on i32.
WORKAROUND_ABS_INT = False
#: BUG workaround (see test_differential.test_abs_of_unsigned_is_the_identity): `abs` of a u32 value
#: >= 2^31 gives its two's-complement negation (math.absi treats it as signed).
WORKAROUND_ABS_UNSIGNED = False


class Expr:
    ty: str

    def prec(self) -> int:
        return ATOM_PREC

    def render(self, full: bool) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass
class Var(Expr):
    name: str
    ty: str

    def render(self, full):
        return self.name


@dataclass
class Builtin(Expr):
    """``thread_id`` / ``problem_size`` (both ``index``)."""

    name: str
    ty: str = "index"

    def render(self, full):
        return self.name


@dataclass
class Lit(Expr):
    text: str          # decimal text of the magnitude (no sign)
    neg: bool
    ty: str
    suffix: bool = True

    def render(self, full):
        if self.ty == "bool":
            return self.text
        s = self.text + (self.ty if self.suffix else "")
        return f"(-{s})" if self.neg else s

    def value(self):
        if self.ty == "bool":
            return self.text == "true"
        if is_int(self.ty):
            v = int(self.text.replace("_", ""), 0)
            return wrap(-v if self.neg else v, self.ty)
        v = np_float(self.ty)(self.text)
        return -v if self.neg else v


@dataclass
class Un(Expr):
    op: str
    a: Expr
    ty: str

    def prec(self):
        return 10

    def render(self, full):
        inner = self.a.render(full)
        if full or self.a.prec() < ATOM_PREC or isinstance(self.a, Lit):
            inner = f"({inner})"
        return f"{self.op}{inner}"


@dataclass
class Bin(Expr):
    op: str
    a: Expr
    b: Expr
    ty: str

    def prec(self):
        return PREC[self.op]

    def render(self, full):
        p = self.prec()
        left, right = self.a.render(full), self.b.render(full)
        if self.op == "==" and WORKAROUND_CALL_EQ:
            left = f"({left})"
        if full:
            return f"({left} {self.op} {right})"
        # comparisons do not chain: parenthesise comparison operands; left-assoc otherwise
        if self.a.prec() < p or (p == 3 and self.a.prec() == 3):
            left = f"({left})"
        if self.b.prec() <= p:
            right = f"({right})"
        return f"{left} {self.op} {right}"


@dataclass
class Cast(Expr):
    ty: str
    a: Expr

    def render(self, full):
        return f"{self.ty}({self.a.render(full)})"


@dataclass
class Call(Expr):
    fn: str
    args: list
    ty: str

    def render(self, full):
        return f"{self.fn}({', '.join(a.render(full) for a in self.args)})"


@dataclass
class Comp(Expr):
    """``v[k]`` of a vector value (fuzz only: not evaluated)."""

    a: Expr
    k: int
    ty: str

    def render(self, full):
        return f"{self.a.render(full)}[{self.k}]"


# ---------------------------------------------------------------------------------------------
# statements
@dataclass
class Let:
    name: str
    ty: str
    e: Expr
    annotate: bool


@dataclass
class Assign:
    name: str
    op: str
    e: Expr
    output: bool = False
    comp: int | None = None  # y[k] = e on a vector output (fuzz only)


@dataclass
class If:
    cond: Expr
    then: list
    other: list | None


@dataclass
class For:
    var: str
    lo: int
    hi: int
    body: list


@dataclass
class Return:
    pass


@dataclass
class Param:
    name: str
    ty: str                  # storage / scalar type
    kind: str                # "scalar" | "buffer"
    access: str = ""         # read | write | add
    dims: str = "n"          # dims text of a buffer
    comps: int = 1
    accessor: str = ""       # text after the access mode ('' = sequential)
    layout: str = ""         # ' as soa' ...
    compute: str = ""        # ' compute f32'
    vty: str = ""            # the type the body sees

    def render(self) -> str:
        if self.kind == "scalar":
            return f"{self.name}: {self.ty}"
        dims = self.dims if self.comps == 1 else f"{self.dims}, {self.comps}"
        return f"{self.name}: {self.ty}[{dims}] {self.access}{self.accessor}{self.layout}{self.compute}"


@dataclass
class Program:
    name: str
    params: list
    body: list
    block: int | None = None
    full_parens: bool = False
    kernel_over: str = "n"

    def render(self) -> str:
        out = []
        attr = f"@block({self.block}) " if self.block else ""
        out.append(f"{attr}kernel {self.name}({', '.join(p.render() for p in self.params)}) "
                   f"over {self.kernel_over} {{")
        self._stmts(self.body, 1, out)
        out.append("}")
        return "\n".join(out) + "\n"

    def _stmts(self, stmts, depth, out):
        ind = "    " * depth
        f = self.full_parens
        for s in stmts:
            if isinstance(s, Let):
                ann = f": {s.ty}" if s.annotate else ""
                out.append(f"{ind}let {s.name}{ann} = {s.e.render(f)};")
            elif isinstance(s, Assign):
                comp = f"[{s.comp}]" if s.comp is not None else ""
                out.append(f"{ind}{s.name}{comp} {s.op} {s.e.render(f)};")
            elif isinstance(s, If):
                out.append(f"{ind}if {s.cond.render(f)} {{")
                self._stmts(s.then, depth + 1, out)
                if s.other is not None:
                    out.append(f"{ind}}} else {{")
                    self._stmts(s.other, depth + 1, out)
                out.append(f"{ind}}}")
            elif isinstance(s, For):
                lo = f"({s.lo})" if s.lo < 0 else str(s.lo)
                hi = f"({s.hi})" if s.hi < 0 else str(s.hi)
                out.append(f"{ind}for {s.var} in {lo}..{hi} {{")
                self._stmts(s.body, depth + 1, out)
                out.append(f"{ind}}}")
            elif isinstance(s, Return):
                out.append(f"{ind}return;")

    def outputs(self):
        return [p for p in self.params if p.kind == "buffer" and p.access in ("write", "add")]


# ---------------------------------------------------------------------------------------------
# random sources
class PyRng:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def choice(self, seq):
        return self.r.choice(list(seq))

    def randint(self, a, b):
        return self.r.randint(a, b)

    def chance(self, p):
        return self.r.random() < p


class HypRng:
    """Choices drawn from hypothesis (``draw`` of ``st.composite`` or ``data.draw``)."""

    def __init__(self, draw):
        from hypothesis import strategies as st

        self.draw, self.st = draw, st

    def choice(self, seq):
        return self.draw(self.st.sampled_from(list(seq)))

    def randint(self, a, b):
        return self.draw(self.st.integers(a, b))

    def chance(self, p):
        # hypothesis shrinks towards False: a simpler program
        return self.draw(self.st.integers(0, 999)) < int(p * 1000)


# ---------------------------------------------------------------------------------------------
# generator
INT_LITS = {
    "i8": ["0", "1", "2", "7", "100", "127"], "u8": ["0", "1", "3", "200", "255"],
    "i16": ["0", "1", "5", "300", "32767"], "u16": ["0", "1", "9", "40000", "65535"],
    "i32": ["0", "1", "2", "3", "7", "16", "255", "1000", "65536", "0x7fff_ffff", "2147483647", "0b1011"],
    "u32": ["0", "1", "2", "5", "31", "255", "4096", "0xFFFF_FFFF", "2147483648", "4000000000"],
    "i64": ["0", "1", "3", "5000000000", "9223372036854775807"],
    "u64": ["0", "1", "3", "18446744073709551615"],
    "index": ["0", "1", "2", "64"],
}
FLOAT_LITS = {
    "f32": ["0.0", "1.0", "0.5", "1.5", "2.0", "3.25", "0.1", "1e3", "1e-3", "65504.0", "3.0e38",
            "1.0e-40", "7", "10", "0"],
    "f64": ["0.0", "1.0", "0.5", "1.5", "2.0", "0.1", "1e300", "1e-310", "123.456", "3", "0"],
    "f16": ["0.0", "1.0", "0.5", "2.0", "3"],
    "bf16": ["0.0", "1.0", "0.5", "2.0", "3"],
}
SAFE_DIVISORS = {"signed": ["1", "2", "3", "4", "7", "8", "16", "1000"], "unsigned":
                 ["1", "2", "3", "4", "7", "8", "16", "1000", "4294967295"]}
# float -> int clamps (exactly representable in f32/f16/bf16 where used)
CLAMP = {"i32": ("2000000000.0", "2000000000.0"), "u32": (None, "4000000000.0"),
         "i8": ("100.0", "100.0"), "u8": (None, "200.0"), "i16": ("30000.0", "30000.0"),
         "u16": (None, "60000.0"), "i64": ("2000000000.0", "2000000000.0"),
         "u64": (None, "4000000000.0"), "index": ("1000.0", "1000.0")}
SMALL_CLAMP = {"i8": ("100.0", "100.0"), "u8": (None, "200.0"), "i16": ("1000.0", "1000.0"),
               "u16": (None, "1000.0"), "i32": ("1000.0", "1000.0"), "u32": (None, "1000.0"),
               "i64": ("1000.0", "1000.0"), "u64": (None, "1000.0"), "index": ("1000.0", "1000.0")}


@dataclass
class Scope:
    vars: list = field(default_factory=list)   # (name, ty, mutable)

    def of(self, ty):
        return [v for v in self.vars if v[1] == ty]


class Gen:
    """Random valid programs. ``diff=True``: the differential subset (evaluable by :func:`evaluate`)."""

    def __init__(self, rng, diff: bool = False, max_depth: int = 3, max_stmts: int = 6):
        self.rng = rng
        self.diff = diff
        self.max_depth = max_depth
        self.max_stmts = max_stmts
        self.counter = 0
        self.types = DIFF_TYPES if diff else ("f32", "f64", "i32", "u32", "i64", "u8", "i16", "f16", "bf16", "u64")

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    # -- literals --------------------------------------------------------------------------------
    def lit(self, ty):
        r = self.rng
        if ty == "bool":
            return Lit(r.choice(["true", "false"]), False, "bool")
        if is_int(ty):
            text = r.choice(INT_LITS[ty])
            signed = INT_TYPES[ty][1]
            neg = signed and ty != "index" and r.chance(0.3) and text != "0"
            return Lit(text, neg, ty)
        text = r.choice(FLOAT_LITS[ty])
        neg = r.chance(0.3)
        if WORKAROUND_NEG_ZERO_LIT and float(text) == 0.0:
            neg = False
        return Lit(text, neg, ty)

    def leaf(self, ty, scope):
        r = self.rng
        cands = scope.of(ty)
        roll = r.randint(0, 9)
        if cands and roll < 6:
            name, t, _ = r.choice(cands)
            return Var(name, t)
        if ty in ("i32", "u32", "f32", "f64") and roll == 6:
            b = Builtin(r.choice(["thread_id", "problem_size"]))
            return Cast(ty, b)
        return self.lit(ty)

    # -- expressions -----------------------------------------------------------------------------
    def expr(self, ty, scope, depth):
        r = self.rng
        if depth <= 0 or r.chance(0.25):
            return self.leaf(ty, scope)
        d = depth - 1
        if ty == "bool":
            k = r.randint(0, 5)
            if k <= 2:
                t = r.choice(self.types)
                return self.mk_bin(r.choice(CMP_OPS), self.expr(t, scope, d), self.expr(t, scope, d), "bool")
            if k == 3:
                return self.mk_bin(r.choice(("&&", "||", "==", "!=", "&", "|", "^")),
                                   self.expr("bool", scope, d), self.expr("bool", scope, d), "bool")
            if k == 4:
                return Un("!", self.expr("bool", scope, d), "bool")
            t = r.choice(self.types)
            return Cast("bool", self.expr(t, scope, d))
        k = r.randint(0, 11)
        if k <= 3:
            return self.mk_bin(r.choice(ARITH_OPS), self.expr(ty, scope, d), self.expr(ty, scope, d), ty)
        if k == 4:
            return self.division(ty, scope, d)
        if k == 5:
            a = self.expr(ty, scope, d)
            if isinstance(a, Lit) and is_int(ty) and not INT_TYPES[ty][1]:
                return a  # `-(5u32)` is rejected as an out-of-range literal -5u32
            if WORKAROUND_NEG_ZERO_LIT and isinstance(a, Lit) and is_float(ty) and float(a.text) == 0.0:
                return a
            return Un("-", a, ty)
        if k == 6:
            return self.cast_to(ty, scope, d)
        if k == 7:
            return self.mk_call(r.choice(("min", "max")), [self.expr(ty, scope, d), self.expr(ty, scope, d)], ty)
        if k == 8:
            return self.mk_call("select", [self.expr("bool", scope, d), self.expr(ty, scope, d),
                                           self.expr(ty, scope, d)], ty)
        if k == 9:
            if is_float(ty):
                fns = ("abs", "floor", "ceil", "sqrt")
                return Call(r.choice(fns), [self.expr(ty, scope, d)], ty)
            if ty == "i32" or not (WORKAROUND_ABS_INT or (WORKAROUND_ABS_UNSIGNED and not INT_TYPES[ty][1])):
                return Call("abs", [self.expr(ty, scope, d)], ty)
            return Un("~", self.expr(ty, scope, d), ty)
        if is_int(ty):
            if k == 10:
                return self.mk_bin(r.choice(BIT_OPS), self.expr(ty, scope, d), self.expr(ty, scope, d), ty)
            # shift: amount masked below the width
            bits = INT_TYPES[ty][0]
            amount = self.mk_bin("&", self.expr(ty, scope, d), Lit(str(bits - 1), False, ty), ty)
            return self.mk_bin(r.choice(SHIFT_OPS), self.expr(ty, scope, d), amount, ty)
        return self.mk_bin(r.choice(ARITH_OPS), self.expr(ty, scope, d), self.expr(ty, scope, d), ty)

    def mk_bin(self, op, a, b, ty):
        # an unsuffixed literal adapts to the other operand's type
        for x, y in ((a, b), (b, a)):
            if isinstance(x, Lit) and not isinstance(y, Lit) and x.ty != "bool" and self.rng.chance(0.5):
                x.suffix = False
        return Bin(op, a, b, ty)

    def mk_call(self, fn, args, ty):
        vals = args[1:] if fn == "select" else args
        if any(not isinstance(v, Lit) for v in vals):
            for v in vals:
                if isinstance(v, Lit) and self.rng.chance(0.5):
                    v.suffix = False
        return Call(fn, args, ty)

    def division(self, ty, scope, d):
        r = self.rng
        op = r.choice(DIV_OPS)
        a = self.expr(ty, scope, d)
        if is_float(ty):
            return self.mk_bin(op, a, self.expr(ty, scope, d), ty)
        signed = INT_TYPES[ty][1]
        if r.chance(0.4):
            text = r.choice(SAFE_DIVISORS["signed" if signed else "unsigned"])
            if ty in ("i8", "u8", "i16", "u16"):
                text = r.choice(["1", "2", "3", "7"])
            b = Lit(text, signed and r.chance(0.4) and text != "1", ty)
            if r.chance(0.5):
                b.suffix = False
        elif signed:
            # never 0 and never -1 (INT_MIN / -1 overflows): ... -6, -2, 2, 6, 10 ...
            b = self.mk_bin("|", self.mk_bin("&", self.expr(ty, scope, d), Lit("4", True, ty, False), ty),
                            Lit("2", False, ty, False), ty)
        else:
            b = self.mk_bin("|", self.expr(ty, scope, d), Lit("1", False, ty, False), ty)
        return Bin(op, a, b, ty)

    def cast_to(self, ty, scope, d):
        r = self.rng
        frm = r.choice(self.types + ("bool",))
        inner = self.expr(frm, scope, d)
        if is_float(frm) and is_int(ty):
            table = CLAMP if frm in ("f32", "f64") else SMALL_CLAMP
            lo, hi = table[ty]
            lo_lit = Lit(lo, True, frm, False) if lo else Lit("0.0", False, frm, False)
            inner = Call("min", [Call("max", [inner, lo_lit], frm), Lit(hi, False, frm, False)], frm)
        return Cast(ty, inner)

    # -- statements ------------------------------------------------------------------------------
    def block(self, scope, outputs, depth, n, top=False, in_loop=False):
        r = self.rng
        scope = Scope(list(scope.vars))
        out = []
        for _ in range(n):
            k = r.randint(0, 9)
            if k <= 2 or not scope.vars:
                ty = r.choice(self.types + ("bool",))
                name = self.fresh("v")
                e = self.expr(ty, scope, self.max_depth)
                annotate = r.chance(0.3)
                if isinstance(e, Lit) and not annotate:
                    e.suffix = True
                if isinstance(e, Lit) and annotate and e.ty != "bool" and r.chance(0.5):
                    e.suffix = False
                out.append(Let(name, ty, e, annotate))
                scope.vars.append((name, ty, True))
            elif k <= 4:
                muts = [v for v in scope.vars if v[2]]
                if not muts:
                    continue
                name, ty, _ = r.choice(muts)
                ops = ["="] if ty == "bool" else ["=", "+=", "-=", "*="] + (["/="] if is_float(ty) else [])
                out.append(Assign(name, r.choice(ops), self.expr(ty, scope, self.max_depth - 1)))
            elif k == 5 and depth > 0:
                then = self.block(scope, outputs, depth - 1, r.randint(0, 3), in_loop=in_loop)
                other = self.block(scope, outputs, depth - 1, r.randint(0, 2), in_loop=in_loop) if r.chance(0.5) else None
                if r.chance(0.1):
                    then.append(Return())
                out.append(If(self.expr("bool", scope, 2), then, other))
            elif k == 6 and depth > 0 and not in_loop:
                var = self.fresh("k")
                lo = r.randint(-2, 2)
                hi = lo + r.randint(-1, 4)
                inner = Scope(list(scope.vars) + [(var, "i32", False)])
                out.append(For(var, lo, hi, self.block(inner, outputs, depth - 1, r.randint(1, 3), in_loop=True)))
            elif outputs:
                p = r.choice(outputs)
                out.append(self.out_assign(p, scope))
        if top:
            for p in outputs:
                if r.chance(0.8):
                    out.append(self.out_assign(p, scope, final=True))
        return out

    def out_assign(self, p, scope, final=False):
        r = self.rng
        ops = ["=", "+=", "-="]
        op = "=" if final and r.chance(0.6) else r.choice(ops)
        if p.comps > 1:
            if r.chance(0.5):
                return Assign(p.name, op, self.expr(p.vty, scope, self.max_depth), output=True,
                              comp=r.randint(0, p.comps - 1))
            comps = [self.expr(p.vty, scope, self.max_depth - 1) for _ in range(p.comps)]
            return Assign(p.name, op, VecLit(comps, p.vty), output=True)
        return Assign(p.name, op, self.expr(p.vty, scope, self.max_depth), output=True)

    # -- kernels ---------------------------------------------------------------------------------
    def program(self) -> Program:
        r = self.rng
        params = []
        scope = Scope()
        n_in = r.randint(1, 3)
        for i in range(n_in):
            ty = r.choice(self.types)
            if self.diff or r.chance(0.6):
                params.append(Param(f"x{i}", ty, "buffer", "read", vty=compute_type(ty)))
            else:
                params.append(self.fancy_read(i, ty, params))
        for i in range(r.randint(0, 2)):
            ty = r.choice(self.types if self.diff else ALL_SCALAR_TYPES)
            params.append(Param(f"s{i}", ty, "scalar", vty=ty))
        for i in range(r.randint(1, 2)):
            ty = r.choice(self.types)
            access = r.choice(("write", "add"))
            if self.diff or r.chance(0.6):
                params.append(Param(f"y{i}", ty, "buffer", access, vty=compute_type(ty)))
            else:
                params.append(self.fancy_out(i, ty, access, params))
        for p in params:
            if (p.kind == "scalar" or p.access == "read") and p.comps == 1:
                scope.vars.append((p.name, p.vty, False))
        # a vector read is used through its components (one let each)
        vec_reads = [p for p in params if p.kind == "buffer" and p.access == "read" and p.comps > 1]
        outputs = [p for p in params if p.kind == "buffer" and p.access in ("write", "add")]
        body = []
        for p in vec_reads:
            for k in range(p.comps):
                name = self.fresh("c")
                body.append(Let(name, p.vty, Comp(Var(p.name, p.vty), k, p.vty), False))
                scope.vars.append((name, p.vty, True))
        body += self.block(scope, outputs, 2, r.randint(1, self.max_stmts), top=True)
        block = None if r.chance(0.7) else r.choice([32, 64, 128, 256, 512, 1024])
        return Program("k", params, body, block, full_parens=r.chance(0.3))

    def _index_param(self, params, signed=None):
        for p in params:
            if p.name.startswith("I"):
                return p.name
        name = f"I{len(params)}"
        ty = self.rng.choice(("u32", "i32"))
        params.append(Param(name, ty, "buffer", "read", vty=ty))
        return name

    def _strided(self, params):
        r = self.rng
        names = [p.name for p in params if p.kind == "scalar" and p.ty in ("index", "i32", "u32", "i64")]
        if not names or r.chance(0.5):
            name = f"o{len(params)}"
            params.append(Param(name, r.choice(("index", "i32", "u32")), "scalar", vty="index"))
            names.append(name)
        off = r.choice(names + ["0", "1", "n", "2 * n"])
        s = r.choice(names + ["1", "2", "(-1)", "3"])
        return f" strided({off}, {s})"

    def fancy_read(self, i, ty, params):
        r = self.rng
        name = f"x{i}"
        storage = r.choice(("f16", "bf16")) if ty in ("f16", "bf16") else ty
        vty = "f32" if storage in ("f16", "bf16") else ty
        compute = ""
        if storage in ("f16", "bf16") and r.chance(0.3):
            vty = r.choice(("f32", "f64"))
            compute = f" compute {vty}"
        kind = r.randint(0, 5)
        comps, layout, accessor, dims = 1, "", "", "n"
        if kind == 0:
            accessor, dims = self._strided(params), "m"
        elif kind == 1:
            accessor, dims = f" indexed({self._index_param(params)})", "m"
        elif kind == 2:
            accessor, dims = f" shared({self._index_param(params)})", "m"
        elif kind == 3:
            accessor = " unique"
        elif kind == 4:
            comps = r.choice((2, 3, 4))
            layout = r.choice(("", " as soa", " as aos", f" as (n, {comps}):(1, n)"))
        else:
            comps = 3
            layout = " as soa"
            accessor = r.choice(("", f" indexed({self._index_param(params)})"))
            dims = "n" if not accessor else "m"
        return Param(name, storage, "buffer", "read", dims, comps, accessor, layout, compute, vty)

    def fancy_out(self, i, ty, access, params):
        r = self.rng
        name = f"y{i}"
        storage = ty
        vty = "f32" if storage in ("f16", "bf16") else ty
        kind = r.randint(0, 5)
        accessor, dims, comps, layout = "", "n", 1, ""
        if kind == 0:
            accessor, dims = self._strided(params), "m"
        elif kind == 1:
            accessor, dims = f" indexed({self._index_param(params)})", "m"
        elif kind == 2 and access == "add":
            accessor, dims = r.choice((f" atomic({self._index_param(params)})",
                                      f" shared_sum({self._index_param(params)})")), "m"
        elif kind == 3:
            accessor, dims = r.choice(((" sum", "1"), (" block_sum", "m")))
        elif kind == 4:
            comps = r.choice((2, 3))
            layout = r.choice(("", " as soa"))
        return Param(name, storage, "buffer", access, dims, comps, accessor, layout, "", vty)


@dataclass
class VecLit(Expr):
    items: list
    ty: str

    def render(self, full):
        return "[" + ", ".join(i.render(full) for i in self.items) + "]"


# ---------------------------------------------------------------------------------------------
# the reference evaluator (differential subset)
class _Returned(Exception):
    pass


class Indeterminate(Exception):
    """The language leaves this element's result open (e.g. the sign of ``max(-0.0, +0.0)``)."""


def _zero(ty):
    return np_float(ty)(0) if is_float(ty) else (False if ty == "bool" else 0)


def eval_expr(e: Expr, env: dict):
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, Builtin):
        return env["$" + e.name]
    if isinstance(e, Lit):
        return e.value()
    if isinstance(e, Un):
        a = eval_expr(e.a, env)
        if e.op == "!":
            return not a
        if e.op == "~":
            return wrap(~a, e.ty)
        return wrap(-a, e.ty) if is_int(e.ty) else -a
    if isinstance(e, Bin):
        return eval_bin(e.op, eval_expr(e.a, env), eval_expr(e.b, env), e.a.ty)
    if isinstance(e, Cast):
        return convert(eval_expr(e.a, env), e.a.ty, e.ty)
    if isinstance(e, Call):
        args = [eval_expr(a, env) for a in e.args]
        if e.fn == "select":
            return args[1] if args[0] else args[2]
        if e.fn in ("min", "max"):
            if is_float(e.ty):
                a, b = args
                if a == 0 and b == 0 and np.signbit(a) != np.signbit(b):
                    raise Indeterminate("min/max of +0.0 and -0.0 may return either")
                return (np.fmin if e.fn == "min" else np.fmax)(a, b)
            return min(args) if e.fn == "min" else max(args)
        if e.fn == "abs":
            if is_int(e.ty):
                return wrap(abs(args[0]), e.ty)  # unsigned values are non-negative: the identity
            return np.abs(args[0])
        return {"sqrt": np.sqrt, "floor": np.floor, "ceil": np.ceil}[e.fn](args[0])
    raise TypeError(f"cannot evaluate {e!r}")


def _cdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def eval_bin(op, a, b, ty):
    """``a op b`` with operands of type ``ty``."""
    if op in CMP_OPS:
        r = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
        return bool(r)
    if ty == "bool":
        return {"&&": a and b, "||": a or b, "&": a and b, "|": a or b, "^": a != b}[op]
    if is_int(ty):
        if op == "+":
            v = a + b
        elif op == "-":
            v = a - b
        elif op == "*":
            v = a * b
        elif op == "/":
            v = _cdiv(a, b)
        elif op == "%":
            v = a - _cdiv(a, b) * b
        elif op == "//":
            v = a // b
        elif op == "%%":
            v = a % b
        elif op == "&":
            v = a & b
        elif op == "|":
            v = a | b
        elif op == "^":
            v = a ^ b
        elif op == "<<":
            v = a << b
        elif op == ">>":
            v = a >> b   # python ints: arithmetic for negative (signed), logical for unsigned values
        else:  # pragma: no cover
            raise ValueError(op)
        return wrap(v, ty)
    t = np_float(ty)
    a, b = t(a), t(b)
    if op == "+":
        return t(a + b)
    if op == "-":
        return t(a - b)
    if op == "*":
        return t(a * b)
    if op == "/":
        return t(a / b)
    if op == "%":
        return t(np.fmod(a, b))
    if op == "//":
        return t(np.floor(a / b))
    if op == "%%":
        r = t(np.fmod(a, b))
        fix = (r != 0) and ((r < 0) != (b < 0))
        return t(r + b) if fix else r
    raise ValueError(op)  # pragma: no cover


def convert(v, frm, to):
    if frm == to:
        return v
    if to == "bool":
        return bool(v != 0)
    if frm == "bool":
        return np_float(to)(1 if v else 0) if is_float(to) else int(v)
    if is_int(frm) and is_int(to):
        return wrap(v, to)
    if is_int(frm):
        return np_float(to)(v)
    if is_int(to):
        return wrap(int(np.trunc(v)), to)
    return np_float(to)(v)


def exec_block(stmts, env, pending, assigned, out_types):
    for s in stmts:
        if isinstance(s, Let):
            env[s.name] = eval_expr(s.e, env)
        elif isinstance(s, Assign):
            v = eval_expr(s.e, env)
            if s.output:
                ty = out_types[s.name]
                cur = pending[s.name]
                assigned[s.name] = True
            else:
                cur = env[s.name]
                ty = _var_types[s.name]
            if s.op == "=":
                new = v
            else:
                new = eval_bin(s.op[0], cur, v, ty)
            if s.output:
                pending[s.name] = new
            else:
                env[s.name] = new
        elif isinstance(s, If):
            inner = dict(env)
            if eval_expr(s.cond, env):
                exec_block(s.then, inner, pending, assigned, out_types)
            elif s.other is not None:
                exec_block(s.other, inner, pending, assigned, out_types)
            for k in env:
                env[k] = inner[k]
        elif isinstance(s, For):
            for k in range(s.lo, s.hi):
                inner = dict(env)
                inner[s.var] = k
                exec_block(s.body, inner, pending, assigned, out_types)
                for name in env:
                    env[name] = inner[name]
        elif isinstance(s, Return):
            raise _Returned()


_var_types: dict = {}


def _collect_types(stmts):
    for s in stmts:
        if isinstance(s, Let):
            _var_types[s.name] = s.ty
        elif isinstance(s, If):
            _collect_types(s.then)
            _collect_types(s.other or [])
        elif isinstance(s, For):
            _var_types[s.var] = "i32"
            _collect_types(s.body)


def evaluate(prog: Program, inputs: dict, outputs: dict, n: int) -> dict:
    """The expected output arrays of ``prog`` (differential subset) for ``inputs`` (name -> numpy
    array of length ``n`` or scalar) and the initial ``outputs`` (name -> array; not modified), and
    a mask of the elements whose result the language leaves open (not to be compared)."""
    _var_types.clear()
    _collect_types(prog.body)
    out_types = {p.name: p.ty for p in prog.outputs()}
    access = {p.name: p.access for p in prog.outputs()}
    result = {k: v.copy() for k, v in outputs.items()}
    indeterminate = np.zeros(n, bool)
    with np.errstate(all="ignore"):
        for t in range(n):
            env = {"$thread_id": t, "$problem_size": n}
            for p in prog.params:
                if p.kind == "scalar":
                    v = inputs[p.name]
                    env[p.name] = np_float(p.ty)(v) if is_float(p.ty) else int(v)
                elif p.access == "read":
                    v = inputs[p.name][t]
                    env[p.name] = np_float(p.ty)(v) if is_float(p.ty) else int(v)
            pending = {name: _zero(ty) for name, ty in out_types.items()}
            assigned = {name: False for name in out_types}
            try:
                exec_block(prog.body, env, pending, assigned, out_types)
            except _Returned:
                pass
            except Indeterminate:
                indeterminate[t] = True
                continue
            for name, ty in out_types.items():
                arr = result[name]
                if access[name] == "add":
                    arr[t] = eval_bin("+", arr[t].item() if is_int(ty) else arr[t], pending[name], ty)
                elif assigned[name]:
                    arr[t] = pending[name]
    return result, indeterminate
