"""A seeded generator of small ``.kern`` kernels over every accessor, builtin and control-flow
form, for checking their derivatives against finite differences (``test_corpus.py``).

``program(seed)`` gives ``(source, kernel name, wrt, args, sizes)``: one kernel with a scalar
``a``, one or two inputs read through random accessors, one or two outputs updated through random
accessors, and a random body of ``let`` s, mutations, ``if``/``else``, ``select``, ``min``/``max``,
static and runtime ``for`` loops, every math builtin, casts and calls of two functions (one with an
early ``return``). Arguments of ``log``/``sqrt``/``rsqrt`` and divisors are kept away from 0, so
every kernel is smooth at its random inputs except on sets of measure zero (the jumps of
``floor``/``ceil``/``%``, the kinks of ``abs``/``min``/``max`` and the branches).
"""

from __future__ import annotations

import random

import numpy as np

N, V = 4, 3

FUNCTIONS = """
fn bend(u: f64, v: f64) -> f64 {
    let q = u * v;
    if q > 0.25 { return sin(q) + u; }
    return q * q - v;
}
fn spin(p: f64[3], s: f64) -> f64[3] {
    let r = p * s;
    return [r[1] - r[2], r[2] * 0.5, cos(r[0])];
}
"""


class _Gen:
    def __init__(self, seed: int):
        self.r = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.params: list = []
        self.args: dict = {}
        self.sizes: dict = {}
        self.scalars: list = []   # float scalar values in scope
        self.vectors: list = []   # f64[3] values in scope
        self.wrt: list = []
        self.index = False
        self.count = 0

    def fresh(self, base: str) -> str:
        self.count += 1
        return f"{base}{self.count}"

    def uniform(self, shape):
        return self.np.uniform(-1.0, 1.0, shape)

    def need_index(self):
        if not self.index:
            self.index = True
            self.params.append("I: u32[n] read")
            self.args["I"] = self.np.integers(0, V, N).astype(np.uint32)

    # ---- inputs ------------------------------------------------------------------------------

    def add_input(self, name: str) -> None:
        kind = self.r.choice(["seq", "seq3", "strided", "indexed", "shared", "caspar", "unique", "pair", "view"])
        self.wrt.append(name)
        if kind == "seq":
            self.params.append(f"{name}: f64[n] read")
            self.args[name] = self.uniform(N)
            self.scalars.append(name)
        elif kind == "seq3":
            self.params.append(f"{name}: f64[n, 3] read")
            self.args[name] = self.uniform((N, 3))
            self.vectors.append(name)
        elif kind == "strided":
            self.params.append(f"{name}: f64[S{name}] read strided(1, 2)")
            self.args[name] = self.uniform(2 * N + 1)
            self.sizes["n"] = N
            self.scalars.append(name)
        elif kind in ("indexed", "shared", "caspar"):
            self.need_index()
            pat = "indexed(I)" if kind == "indexed" else "shared(I)"
            lay = " as caspar" if kind == "caspar" else ""
            self.params.append(f"{name}: f64[V{name}, 3] read {pat}{lay}")
            self.args[name] = self.uniform((4, V) if kind == "caspar" else (V, 3))
            self.vectors.append(name)
        elif kind == "unique":
            self.params.append(f"{name}: f64[1] read unique")
            self.args[name] = self.uniform(1)
            self.scalars.append(name)
        elif kind == "pair":
            self.params.append(f"{name}: f64[n1{name}] read pair")
            self.args[name] = self.uniform(N + 1)
            self.sizes["n"] = N
            self.scalars += [f"{name}.first", f"{name}.second"]
        else:  # a view, read checked (the neighbour past the end gives 0) and unchecked
            self.params.append(f"{name}: f64[M{name}] view")
            self.args[name] = self.uniform(N + 1)
            self.sizes["n"] = N
            t = self.fresh("r")
            self.body.append(f"let {t} = {name}[thread_id] + 0.5 * {name}.checked(thread_id + 2);")
            self.scalars.append(t)

    # ---- expressions -------------------------------------------------------------------------

    def leaf(self) -> str:
        pick = self.r.random()
        if pick < 0.15:
            return self.r.choice(["0.5", "1.25", "-0.75"])
        if pick < 0.4 and self.vectors:
            return f"{self.r.choice(self.vectors)}[{self.r.randrange(3)}]"
        return self.r.choice(self.scalars)

    def expr(self, depth: int) -> str:
        if depth <= 0 or self.r.random() < 0.25:
            return self.leaf()
        e = lambda: self.expr(depth - 1)  # noqa: E731
        form = self.r.randrange(17)
        if form < 4:
            return f"({e()} {self.r.choice(['+', '-', '*', '*'])} {e()})"
        if form == 4:
            d = e()
            return f"({e()} / (1.5 + {d} * {d}))"
        if form == 5:
            f = self.r.choice(["exp", "sin", "cos", "tanh", "abs", "floor", "ceil"])
            return f"exp(tanh({e()}))" if f == "exp" else f"{f}({e()})"  # (bounded: no huge values)
        if form == 6:
            d = e()
            return f"sqrt(1.0 + {d} * {d})"
        if form == 7:
            return f"log(2.0 + sin({e()}))"
        if form == 8:
            return f"rsqrt(1.5 + cos({e()}))"
        if form == 9:
            return f"{self.r.choice(['min', 'max'])}({e()}, {e()})"
        if form == 10:
            return f"fma({e()}, {e()}, {e()})"
        if form == 11:
            return f"select({e()} > {e()}, {e()}, {e()})"
        if form == 12:
            d = e()
            return f"({e()} {self.r.choice(['%', '%%'])} (0.75 + {d} * {d}))"
        if form == 13:
            return f"(f64(i32({e()} * 3.0)) + f64(f64({e()})))"
        if form == 14:
            return f"bend({e()}, {e()})"
        if form == 15 and self.vectors:
            return f"spin({self.r.choice(self.vectors)}, {e()})[{self.r.randrange(3)}]"
        return f"-{self.leaf()}"

    # ---- statements --------------------------------------------------------------------------

    def statement(self) -> None:
        b = self.body
        form = self.r.randrange(8)
        if form == 0 or len(self.scalars) < 3:
            s = self.fresh("s")
            b.append(f"let {s}: f64 = {self.expr(2)};")
            self.scalars.append(s)
        elif form == 1:
            w = self.fresh("w")
            base = self.r.choice(self.vectors) if self.vectors else f"[{self.expr(1)}, {self.expr(1)}, 0.5]"
            b.append(f"let {w} = {base} * {self.expr(1)};")
            self.vectors.append(w)
        elif form == 2:
            s = self.mutable_scalar()
            op = self.r.choice(["+=", "-=", "*=", "="])
            b.append(f"{s} {op} {self.expr(2)};")
        elif form == 3:
            w = self.mutable_vector()
            if w is None:
                return
            b.append(f"{w}[{self.r.randrange(3)}] {self.r.choice(['+=', '-=', '='])} {self.expr(1)};")
        elif form == 4:
            s = self.mutable_scalar()
            b.append(f"if {self.expr(1)} > {self.expr(1)} {{ {s} = {self.expr(2)}; }} "
                     f"else {{ {s} -= {self.expr(1)}; }}")
        elif form == 5:
            s = self.mutable_scalar()
            b.append(f"for j in 0..3 {{ {s} += {self.expr(1)} * f64(j); }}")
        elif form == 6:
            s = self.mutable_scalar()
            if "m: index" not in self.params:
                self.params.append("m: index")
                self.args["m"] = 2
            k = self.fresh("k")
            b.append(f"for {k} in 0..m {{ let q{k}: f64 = {self.expr(1)}; {s} = {s} * 0.75 + q{k} * sin({s}); }}")
        else:
            s = self.mutable_scalar()
            b.append(f"{s} = select({self.expr(1)} < 0.0, {self.expr(1)}, {s}) + min({s}, {self.expr(1)});")

    def mutable_scalar(self) -> str:
        mine = [s for s in self.scalars if s.startswith("s")]
        if not mine:
            s = self.fresh("s")
            self.body.append(f"let {s}: f64 = {self.expr(1)};")
            self.scalars.append(s)
            return s
        return self.r.choice(mine)

    def mutable_vector(self):
        mine = [w for w in self.vectors if w.startswith("w")]
        return self.r.choice(mine) if mine else None

    # ---- outputs -----------------------------------------------------------------------------

    def add_output(self, name: str) -> None:
        kind = self.r.choice(["write", "add2", "strided", "atomic", "shared_sum", "sum", "pair", "view",
                              "view_atomic"])
        # each output value also takes a value of the body, so it depends on the inputs
        e = lambda: f"{self.expr(2)} + 0.5 * {self.r.choice(self.scalars)}"  # noqa: E731
        b = self.body
        if kind == "write":
            self.params.append(f"{name}: f64[n] write")
            self.args[name] = np.zeros(N)
            b.append(f"{name} = {e()};")
        elif kind == "add2":
            self.params.append(f"{name}: f64[n, 2] add")
            self.args[name] = np.zeros((N, 2))
            b.append(f"{name} += [{e()}, {e()}];")
            b.append(f"{name}[1] -= {e()};")
        elif kind == "strided":
            self.params.append(f"{name}: f64[S{name}] write strided(0, 2)")
            self.args[name] = np.zeros(2 * N)
            self.sizes["n"] = N
            b.append(f"{name} = {e()};")
        elif kind in ("atomic", "shared_sum"):
            self.need_index()
            pat = "atomic(I)" if kind == "atomic" else "shared_sum(I)"
            self.params.append(f"{name}: f64[V{name}, 2] add {pat}")
            self.args[name] = np.zeros((V, 2))
            b.append(f"{name} += [{e()}, {e()}];")
        elif kind == "sum":
            self.params.append(f"{name}: f64[1] add sum")
            self.args[name] = np.zeros(1)
            b.append(f"{name} += {e()};")
        elif kind == "pair":
            self.params.append(f"{name}: f64[n1{name}] add pair")
            self.args[name] = np.zeros(N + 1)
            self.sizes["n"] = N
            b.append(f"{name} = ({e()}, {e()});")
        elif kind == "view":
            self.params.append(f"{name}: f64[M{name}] view")
            self.args[name] = np.zeros(N)
            self.sizes["n"] = N
            b.append(f"{name}[thread_id] = {e()};")
        else:
            self.need_index()
            self.params.append(f"{name}: f64[B{name}] view")
            self.args[name] = np.zeros(V)
            b.append(f"{name}.atomic(index(I)) += {e()};")

    def build(self, name: str):
        self.body: list = []
        self.params.append("a: f64")
        self.args["a"] = 0.6
        self.wrt.append("a")
        self.scalars.append("a")
        for i in range(self.r.choice([1, 2])):
            self.add_input(f"x{i}")
        for _ in range(self.r.randrange(3, 7)):
            self.statement()
        for i in range(self.r.choice([1, 2])):
            self.add_output(f"y{i}")
        params = ",\n    ".join(self.params)
        body = "\n    ".join(self.body)
        source = f"{FUNCTIONS}\nkernel {name}(\n    {params},\n) over n {{\n    {body}\n}}\n"
        sizes = dict(self.sizes)
        if "n" not in sizes and not any(p.endswith("read") and "[n" in p for p in self.params):
            sizes["n"] = N
        return source, name, self.wrt, self.args, sizes


def program(seed: int):
    """``(source, kernel, wrt, args, sizes)`` of generated kernel number ``seed``."""
    return _Gen(seed).build(f"gen{seed}")
