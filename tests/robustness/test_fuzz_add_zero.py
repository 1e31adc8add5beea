"""Property test: float ``add`` outputs keep the bits a numpy model gives them, signed zeros included
(issue 18, item 6, where ``if x != 0.0 { y -= 1.0; } y -= x;`` turned ``-0.0`` into ``+0.0``).

Hypothesis draws kernels with one to three float ``add`` outputs -- scalar and vector elements
(``K`` = 1..3, ``aos``/``soa``), every update accessor (``sequential``, ``strided``, ``indexed``,
``atomic``, ``shared_sum``, ``sum``, ``block_sum``, ``pair``), storage ``f16 bf16 f32 f64`` and
``compute f64``, ``@deterministic`` where allowed -- whose bodies update them (``=``, ``+=``, ``-=``
of whole elements, single components, pair sides and tuples) under ``if``/``else`` on per-thread
and uniform conditions (taken, untaken and mixed), in unrolled loops and in ``scf.for`` loops of a
runtime trip count (0 included: a loop that never runs), with ``return`` in branches. Inputs are
signed zeros and small dyadic values; outputs start at ``-0.0``, ``+0.0``, ``+-inf`` or small values.

The model (plain Python over the drawn statements, not kernc's IR) runs each thread with the
pending update of every output starting at ``-0.0`` (the identity of the addition), then adds each
thread's pending values to the elements its accessor names. Every value is a multiple of 1/4 far
below the precision of the types used, so every operation is exact: sums do not depend on their
order (and a sum of zeros is ``-0.0`` exactly when every term is), and the model computes in
float64 and rounds once to the storage type (``f16``/``bf16`` only with per-thread accessors, whose
element is updated once). The interpreter's results must match bitwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernc

SCALE = int(os.environ.get("ROBUST_FUZZ_SCALE", "1"))
NZ = -0.0

#: accessor -> (declaration text after the element type, per-thread (not a sum))
ACCESSORS = {
    "sequential": ("add", True),
    "strided": ("add strided(1, 2)", True),
    "indexed": ("add indexed(j)", True),
    "atomic": ("add atomic(i)", False),
    "shared_sum": ("add shared_sum(i)", False),
    "sum": ("add sum", False),
    "block_sum": ("add block_sum", False),
    "pair": ("add pair", False),
}
#: the values of the read buffers and the start values of the outputs
X_VALUES = np.array([0.0, NZ, 1.0, -1.0, 0.5, -0.5])
Y_VALUES = np.array([NZ, NZ, 0.0, 1.0, -2.0, np.inf, -np.inf])
ATOMIC_ELEMENTS = 3  # i[t] < 3: targets shared by several threads
CONDITIONS = ("x0 != 0.0", "x0 < x1", "x1 == 0.0", "x0 > 0.0", "r > 1", "r == 0", "x0 == x1")


@dataclass
class Out:
    name: str
    accessor: str
    K: int
    storage: str        # f16 | bf16 | f32 | f64
    compute_f64: bool   # `compute f64` on f32 storage
    soa: bool

    def decl(self) -> str:
        dim = {"sequential": "n", "sum": "1"}.get(self.accessor, f"m{self.name}")
        dims = dim if self.K == 1 else f"{dim}, {self.K}"
        text = f"{self.name}: {self.storage}[{dims}] {ACCESSORS[self.accessor][0]}"
        if self.soa:
            text += " as soa"
        if self.compute_f64:
            text += " compute f64"
        return text

    @property
    def width(self) -> int:
        return 2 * self.K if self.accessor == "pair" else self.K

    def elements(self, n: int, B: int) -> int:
        return {"sequential": n, "strided": 2 * n + 1, "indexed": n, "atomic": ATOMIC_ELEMENTS,
                "shared_sum": ATOMIC_ELEMENTS, "sum": 1, "block_sum": -(-n // B),
                "pair": n + 1}[self.accessor]


# ---- statements: rendering and the model ------------------------------------------------------

@dataclass
class Expr:
    text: str
    fn: object  # env -> float

    def __call__(self, env):
        return self.fn(env)


EXPRS = [
    Expr("x0", lambda e: e["x0"]), Expr("x1", lambda e: e["x1"]), Expr("-x0", lambda e: -e["x0"]),
    Expr("0.0", lambda e: 0.0), Expr("-0.0", lambda e: NZ), Expr("1.0", lambda e: 1.0),
    Expr("x0 * x1", lambda e: e["x0"] * e["x1"]), Expr("x0 - x1", lambda e: e["x0"] - e["x1"]),
    Expr("x0 + x1", lambda e: e["x0"] + e["x1"]),
]


def _cond(text):
    a, op, b = text.split()
    ops = {"!=": np.not_equal, "<": np.less, "==": np.equal, ">": np.greater}

    def value(s, env):
        return env[s] if s in env else float(s)

    return lambda env: bool(ops[op](value(a, env), value(b, env)))


@dataclass
class Update:
    out: Out
    op: str                 # = += -=
    side: str | None        # pair: "first" | "second" | None (both: a tuple)
    comp: object            # None (the whole element), an int, or a loop variable's name
    exprs: list             # one Expr per component updated (a tuple: first's, then second's)

    def render(self) -> str:
        o = self.out
        if o.accessor == "pair" and self.side is None:
            k = len(self.exprs) // 2
            parts = [self._vec(self.exprs[:k]), self._vec(self.exprs[k:])]
            return f"{o.name} {self.op} ({parts[0]}, {parts[1]});"
        target = o.name + (f".{self.side}" if self.side else "")
        if self.comp is not None:
            return f"{target}[{self.comp}] {self.op} {self.exprs[0].text};"
        return f"{target} {self.op} {self._vec(self.exprs)};"

    @staticmethod
    def _vec(exprs) -> str:
        return exprs[0].text if len(exprs) == 1 else "[" + ", ".join(e.text for e in exprs) + "]"

    def run(self, env, pending) -> None:
        o = self.out
        p = pending[o.name]
        if o.accessor == "pair" and self.side is None:
            slots = list(range(2 * o.K))
        else:
            base = o.K if self.side == "second" else 0
            if self.comp is None:
                slots = list(range(base, base + o.K))
            else:
                c = env[self.comp] if isinstance(self.comp, str) else self.comp
                if not 0 <= c < o.K:
                    return  # an out-of-range component changes nothing
                slots = [base + c]
        values = [e(env) for e in self.exprs]
        for s, v in zip(slots, values):
            p[s] = v if self.op == "=" else (p[s] + v if self.op == "+=" else p[s] - v)


@dataclass
class If:
    cond: str
    then: list
    orelse: list | None

    def render(self) -> str:
        text = f"if {self.cond} {{ {render(self.then)} }}"
        return text + (f" else {{ {render(self.orelse)} }}" if self.orelse is not None else "")

    def run(self, env, pending) -> None:
        run_block(self.then if _cond(self.cond)(env) else (self.orelse or []), env, pending)


@dataclass
class For:
    var: str
    stop: object  # an int literal (an unrolled loop) or "r" (scf.for)
    body: list

    def render(self) -> str:
        return f"for {self.var} in 0..{self.stop} {{ {render(self.body)} }}"

    def run(self, env, pending) -> None:
        for k in range(env["r"] if self.stop == "r" else self.stop):
            env[self.var] = k
            run_block(self.body, env, pending)
            if env["returned"]:
                break
        env.pop(self.var, None)


@dataclass
class Return:
    def render(self) -> str:
        return "return;"

    def run(self, env, pending) -> None:
        env["returned"] = True


def render(stmts) -> str:
    return " ".join(s.render() for s in stmts)


def run_block(stmts, env, pending) -> None:
    for s in stmts:
        if env["returned"]:
            return
        s.run(env, pending)


@dataclass
class Program:
    B: int
    ft: str
    deterministic: bool
    outs: list
    body: list = field(default_factory=list)

    def render(self) -> str:
        params = [f"x0: {self.ft}[n] read", f"x1: {self.ft}[n] read", "i: u32[n] read",
                  "j: u32[n] read", "r: i32"] + [o.decl() for o in self.outs]
        attrs = f"@block({self.B}) " + ("@deterministic " if self.deterministic else "")
        return f"{attrs}kernel k({', '.join(params)}) over n {{\n    {render(self.body)}\n}}\n"


# ---- drawing programs -------------------------------------------------------------------------

@st.composite
def programs(draw):
    ft = draw(st.sampled_from(["f32", "f64"]))
    outs = []
    for k in range(draw(st.integers(1, 3))):
        accessor = draw(st.sampled_from(sorted(ACCESSORS)))
        K = draw(st.integers(1, 3))
        per_thread = ACCESSORS[accessor][1]
        if ft == "f32":
            storage = draw(st.sampled_from(["f32", "f16", "bf16"] if per_thread else ["f32"]))
            compute_f64 = False
        else:
            storage = draw(st.sampled_from(["f64", "f32"]))
            compute_f64 = storage == "f32"
        soa = K > 1 and accessor == "sequential" and draw(st.booleans())
        outs.append(Out(f"y{k}", accessor, K, storage, compute_f64, soa))
    deterministic = (not any(o.accessor in ("atomic", "pair") for o in outs)
                     and any(o.accessor in ("sum", "shared_sum") for o in outs) and draw(st.booleans()))
    prog = Program(draw(st.sampled_from([32, 64])), ft, deterministic, outs)
    prog.body = draw_block(draw, prog, depth=0, loop_vars=[])
    return prog


def draw_update(draw, prog, loop_vars) -> Update:
    o = draw(st.sampled_from(prog.outs))
    op = draw(st.sampled_from(["=", "+=", "-=", "+=", "-="]))
    expr = st.sampled_from(EXPRS)
    side = draw(st.sampled_from(["first", "second", None])) if o.accessor == "pair" else None
    if o.accessor == "pair" and side is None:
        return Update(o, op, None, None, [draw(expr) for _ in range(2 * o.K)])
    # a loop variable may pass the last component (0..3 on K = 2, r = 3): that changes nothing
    comps = [None] + (list(range(o.K)) + loop_vars if o.K > 1 else [])
    comp = draw(st.sampled_from(comps))
    n = o.K if comp is None else 1
    return Update(o, op, side, comp, [draw(expr) for _ in range(n)])


def draw_block(draw, prog, depth, loop_vars) -> list:
    stmts = []
    for _ in range(draw(st.integers(1, 3 if depth else 4))):
        kind = draw(st.sampled_from(["update", "update", "if", "for", "return"] if depth < 2 else ["update", "return"]))
        if kind == "update" or (kind == "return" and depth == 0):
            stmts.append(draw_update(draw, prog, loop_vars))
        elif kind == "return":
            stmts.append(Return())
            break  # later statements of the block would be unreachable
        elif kind == "if":
            then = draw_block(draw, prog, depth + 1, loop_vars)
            orelse = draw_block(draw, prog, depth + 1, loop_vars) if draw(st.booleans()) else None
            stmts.append(If(draw(st.sampled_from(CONDITIONS)), then, orelse))
        else:
            var = f"k{depth}"
            stop = draw(st.sampled_from(["r", 2, 3]))
            stmts.append(For(var, stop, draw_block(draw, prog, depth + 1, loop_vars + [var])))
    return stmts


# ---- the model and the comparison -------------------------------------------------------------

def _dtype(name: str):
    if name == "bf16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[name])


def model(prog: Program, inputs: dict, y0: dict, n: int) -> dict:
    """Every output after the launch, as its storage dtype, in the aos shape ``(M, K)``."""
    acc = {o.name: y0[o.name].astype(np.float64) for o in prog.outs}
    for t in range(n):
        env = {"x0": float(inputs["x0"][t]), "x1": float(inputs["x1"][t]), "r": int(inputs["r"]),
               "returned": False}
        pending = {o.name: [NZ] * o.width for o in prog.outs}
        run_block(prog.body, env, pending)
        for o in prog.outs:
            p = np.array(pending[o.name], np.float64)
            if o.accessor == "pair":
                acc[o.name][t] += p[:o.K]
                acc[o.name][t + 1] += p[o.K:]
                continue
            e = {"sequential": lambda: t, "strided": lambda: 1 + 2 * t,
                 "indexed": lambda: int(inputs["j"][t]), "atomic": lambda: int(inputs["i"][t]),
                 "shared_sum": lambda: int(inputs["i"][t]), "sum": lambda: 0,
                 "block_sum": lambda: t // prog.B}[o.accessor]()
            acc[o.name][e] += p
    return {o.name: acc[o.name].astype(_dtype(o.storage)) for o in prog.outs}


def bits(a: np.ndarray) -> np.ndarray:
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def run_and_compare(prog: Program, n: int, seed: int) -> None:
    text = prog.render()
    mod = kernc.compile(text, filename="add_zero.kern")
    rng = np.random.default_rng(seed)
    ft = np.float32 if prog.ft == "f32" else np.float64
    inputs = {"x0": X_VALUES[rng.integers(0, X_VALUES.size, n)].astype(ft),
              "x1": X_VALUES[rng.integers(0, X_VALUES.size, n)].astype(ft),
              "i": rng.integers(0, ATOMIC_ELEMENTS, n).astype(np.uint32),
              "j": rng.permutation(n).astype(np.uint32),
              "r": np.int32(rng.integers(0, 4))}
    y0 = {}
    for o in prog.outs:
        M = o.elements(n, prog.B)
        y0[o.name] = Y_VALUES[rng.integers(0, Y_VALUES.size, (M, o.K))].astype(_dtype(o.storage))
    want = model(prog, inputs, y0, n)
    args = {}
    for o in prog.outs:
        a = y0[o.name].T if o.soa else y0[o.name]
        a = a.reshape(-1) if o.K == 1 else a
        args[o.name] = np.array(a, order="C", copy=True)
    mod.k(**inputs, **args)
    for o in prog.outs:
        got = args[o.name].reshape(-1, 1) if o.K == 1 else (args[o.name].T if o.soa else args[o.name])
        bad = np.argwhere(bits(np.ascontiguousarray(got)) != bits(want[o.name]))
        if bad.size:
            e, c = bad[0]
            raise AssertionError(
                f"output {o.name} ({o.decl()}), element {e} component {c} (n={n}, r={inputs['r']}): "
                f"got {got[e, c]!r}, model {want[o.name][e, c]!r}, start {y0[o.name][e, c]!r}\n{text}")


@pytest.fixture(scope="module", autouse=True)
def _compile_every_time():
    saved = os.environ.get("KERNC_ALWAYS_COMPILE")
    os.environ["KERNC_ALWAYS_COMPILE"] = "1"
    yield
    if saved is None:
        os.environ.pop("KERNC_ALWAYS_COMPILE", None)
    else:
        os.environ["KERNC_ALWAYS_COMPILE"] = saved


@settings(max_examples=120 * SCALE, deadline=None, derandomize=SCALE == 1,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(), st.sampled_from([1, 5, 33, 70]), st.integers(0, 2**32 - 1))
def test_add_outputs_match_the_model_bitwise(prog, n, seed):
    run_and_compare(prog, n, seed)


def test_the_issue_program_through_the_model():
    """The issue's kernel, written as the generator would draw it: the model must say -0.0 for
    ``x = 0.0``, ``y = -0.0`` (so a wrong model cannot hide the bug) and kernc must agree."""
    y = Out("y0", "sequential", 1, "f32", False, False)
    prog = Program(32, "f32", False, [y], [
        If("x0 != 0.0", [Update(y, "-=", None, None, [EXPRS[5]])], None),
        Update(y, "-=", None, None, [EXPRS[0]])])
    inputs = {"x0": np.zeros(3, np.float32), "x1": np.zeros(3, np.float32), "r": 0}
    want = model(prog, inputs, {"y0": np.full((3, 1), NZ, np.float32)}, 3)
    assert bits(want["y0"]).tolist() == [[0x80000000]] * 3
    for seed in range(3):
        run_and_compare(prog, 5, seed)
