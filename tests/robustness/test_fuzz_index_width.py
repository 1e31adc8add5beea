"""Fuzzing the index width: scalars of every integer type reaching ``index`` arithmetic by every
route, and constants at and past the index range (issue 18, items 2 and 4).

(a) A scalar ``s`` of each integer type (``i8`` ... ``u64``, ``index``; and ``f64`` through
    ``index(f)``) reaches an index through each route -- the ``(off, s)`` of a ``read``/``write``/
    ``add`` ``strided`` accessor (converted by lowering), an ``index(...)`` conversion, a local, a
    functional layout's argument, a ``for`` loop's bounds -- after an expression in its own type
    (``s``, ``s - 1``, ``s * 3``, ``i64(s)``, ``u32(s)``, which may wrap). Launched on the CPU with
    large values (past int32, past 2^32, at the type's limits), the launcher's choice of index
    width (``binding.bind``) must be 64 bits whenever an index value leaves int32 (and 32 bits for
    small values), and the outputs must equal a numpy/Python model of the program: never the
    interpreter's "outside int32" report of a 32-bit launch, which means the GPU would have wrapped.
(b) Constants at and past the index range (2^31, 2^32, 2^63 - 1, 2^63, 2^64 and products of them)
    in every place a program spells one -- dims, view dims, layout shapes and strides, ``over``
    extents, strided arguments, index literals, functional layouts, swizzles -- compile down to the
    LLVM IR of both widths or give located errors (``file:line:col``), never an internal error.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernc
from kernc import CompileError, KerncRuntimeError
from kernc.backend import binding, cpu
from kernc.compiler import Compilation, CompileOptions

SCALE = int(os.environ.get("ROBUST_FUZZ_SCALE", "1"))
FUZZ_SETTINGS = dict(deadline=None, derandomize=SCALE == 1, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])

INT_TYPES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "index")
M = 48  # elements of the buffers the index values address

# ---------------------------------------------------------------------------------------------------
# (a) scalars reaching index arithmetic


def type_range(ty: str) -> tuple[int, int]:
    bits = 64 if ty == "index" else int(ty[1:])
    if ty.startswith("u"):
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def wrap(v: int, ty: str) -> int:
    """``v`` in integer type ``ty`` (wrap-around, as the language's integers)."""
    lo, hi = type_range(ty)
    return (v - lo) % (hi - lo + 1) + lo


#: expression forms of ``s`` (in its type ``T``) and their type and value
FORMS = {
    "s": lambda ty, s: (ty, s),
    "s - 1": lambda ty, s: (ty, wrap(s - 1, ty)),
    "s * 3": lambda ty, s: (ty, wrap(s * 3, ty)),
    "i64(s)": lambda ty, s: ("i64", wrap(s, "i64")),
    "u32(s)": lambda ty, s: ("u32", wrap(s, "u32")),
}

#: the routes by which the expression E reaches an index: kernel text, and how the index value v
#: (E converted to index) and the thread t make each thread's address
ROUTES = {
    "read_off": ("kernel k(x: f32[m] read strided(E, 1) default -1.0, s: T, y: f32[n] write) over n { y = x; }",
                 lambda v, t: v + t),
    "read_stride": ("kernel k(x: f32[m] read strided(2, E) default -1.0, s: T, y: f32[n] write) over n { y = x; }",
                    lambda v, t: 2 + t * v),
    "write_off": ("kernel k(y: f32[m] write strided(E, 1), s: T) over n { y = f32(thread_id) + 1.0; }",
                  lambda v, t: v + t),
    "add_off": ("kernel k(y: f32[m] add strided(E, 1), s: T) over n { y += 1.0; }", lambda v, t: v + t),
    "view": ("kernel k(x: f32[M] view default -1.0, s: T, y: f32[n] write) over n { "
             "y = x.checked(index(E) + thread_id); }", lambda v, t: v + t),
    "local": ("kernel k(x: f32[M] view default -1.0, s: T, y: f32[n] write) over n { "
              "let w = E; y = x.checked(index(w) + thread_id); }", lambda v, t: v + t),
    "fn_layout": ("layout g(a) : (c) -> (r) { return (c + a); }\n"
                  "kernel k(x: f32[M] view default -1.0, s: T, y: f32[n] write) over n { "
                  "y = x.checked(g(index(E))(thread_id)); }", lambda v, t: v + t),
    "loop": ("kernel k(x: f32[M] view default -1.0, s: T, y: f32[n] write) over n { let acc = -2.0; "
             "for j in E..E + 1 { acc = x.checked(index(j) + thread_id); } y = acc; }", lambda v, t: v + t),
}
_MODULES: dict = {}


def module(text: str):
    mod = _MODULES.get(text)
    if mod is None:
        mod = _MODULES[text] = kernc.compile(text, filename="width.kern")
    return mod


def interesting_values(ty: str):
    lo, hi = type_range(ty)
    special = [v for v in (0, 1, 2, 3, -1, -2, 40, 2**31 - 1, 2**31, 2**31 + 3, -(2**31), -(2**31) - 5,
                           2**32 - 1, 2**32, 2**32 + 3, 2**40, -(2**40), 2**62, lo, hi, lo + 1, hi - 1)
               if lo <= v <= hi]
    return st.one_of(st.sampled_from(special), st.integers(max(lo, -40), min(hi, 40)), st.integers(lo, hi))


@st.composite
def launches(draw):
    ty = draw(st.sampled_from(INT_TYPES + ("f64",)))
    if ty == "f64":
        route, form = draw(st.sampled_from(["view", "local", "fn_layout"])), "s"
        s = draw(st.sampled_from([0, 3, 2**31, 2**31 - 1, -(2**31) - 1, 2**32 + 7, 2**40, -(2**40), 2**52]))
    else:
        route = draw(st.sampled_from(sorted(ROUTES)))
        form = draw(st.sampled_from(sorted(FORMS)))
        s = draw(interesting_values(ty))
    n = draw(st.integers(1, 12))
    return route, ty, form, s, n


def index_value(ety: str, e):
    """E converted to index: signed types sign-extend, unsigned ones zero-extend, f64 truncates."""
    return int(e) if ety != "f64" else int(np.trunc(e))


def judged_by_magnitude(form: str, ty: str) -> bool:
    """Whether the launcher can keep a small launch 32-bit: forms in which a value's size follows
    from the scalar's. A signed scalar made unsigned (u32(s)) or an unsigned subtraction (which
    may wrap around) count as their type's range: 64-bit whatever the value (u8's is small)."""
    if form in ("s", "s * 3", "i64(s)"):
        return True
    if form == "s - 1":
        return not ty.startswith("u") or ty == "u8"
    return form == "u32(s)" and ty.startswith("u")


@settings(max_examples=160 * SCALE, **FUZZ_SETTINGS)
@given(launches())
def test_scalars_reaching_index_arithmetic_pick_the_right_width_and_compute_right(launch):
    route, ty, form, s, n = launch
    template, address = ROUTES[route]
    text = template.replace("E", form).replace(": T", f": {ty}")
    mod = module(text)
    ety, e = ("f64", float(s)) if ty == "f64" else FORMS[form](ty, s)
    v = index_value(ety, e)
    addresses = [address(v, t) for t in range(n)]
    values = [v] + addresses + ([t * v for t in range(n)] if route == "read_stride" else [])
    needs64 = any(not -(2**31) <= x < 2**31 for x in values)
    scalar = np.float64(s) if ty == "f64" else s
    x = np.arange(1, M + 1, dtype=np.float32)
    if route in ("write_off", "add_off"):
        y = np.zeros(M, np.float32)
        args, kwargs = (y, scalar), {"n": n}
    else:
        y = np.zeros(n, np.float32)
        args, kwargs = (x, scalar, y), {}
    bits = binding.bind(mod.k.signature, args, kwargs, cpu.is_host_array, "cpu").index_bits
    if needs64:
        assert bits == 64, (text, s, values)
    elif max(abs(s), *map(abs, values)) < 1000 and (ty == "f64" or judged_by_magnitude(form, ty)):
        assert bits == 32, (text, s)
    in_range = all(0 <= a < M for a in addresses)
    if route in ("write_off", "add_off") and not in_range:
        with pytest.raises(KerncRuntimeError, match="out-of-bounds"):
            mod.k(*args, **kwargs)
        return
    mod.k(*args, **kwargs)  # ("index arithmetic gives ..., outside int32" would fail the test here)
    want = np.zeros(M if route in ("write_off", "add_off") else n, np.float32)
    for t, a in enumerate(addresses):
        if route == "write_off":
            want[a] = t + 1
        elif route == "add_off":
            want[a] += 1.0
        elif route == "loop" and not wrap_loop_runs(ety, e):
            want[t] = -2.0
        else:
            want[t] = x[a] if 0 <= a < M else -1.0
    assert y.tolist() == want.tolist(), (text, s)


def wrap_loop_runs(ety: str, e: int) -> bool:
    """``for j in E..E + 1`` runs once unless ``E + 1`` wraps around past the type's maximum."""
    return e < wrap(e + 1, ety)


def test_the_issue_reproduction_runs_on_the_cpu_and_picks_64_bit_ptx():
    """issue 18, item 2: ``o: i64 = 2**40`` in ``strided(o, 1) default 5.0``: index_inputs was
    empty, the launch 32-bit, the CPU refused it ("outside int32") and the PTX truncated ``o``."""
    src = "kernel k(x: f32[m] read strided(o, 1) default 5.0, o: i64, y: f32[n] write) over n { y = x; }"
    mod = kernc.compile(src)
    assert mod.k.signature.index_inputs == ["o"]
    x, y = np.arange(8, dtype=np.float32), np.zeros(4, np.float32)
    assert binding.bind(mod.k.signature, (x, 2**40, y), {}, cpu.is_host_array, "cpu").index_bits == 64
    assert binding.bind(mod.k.signature, (x, 2, y), {}, cpu.is_host_array, "cpu").index_bits == 32
    mod.k(x, 2**40, y)
    assert y.tolist() == [5.0] * 4
    mod.k(x, 2, y)
    assert y.tolist() == [2.0, 3.0, 4.0, 5.0]


@pytest.mark.parametrize("decl, param, body", [
    ("x: f32[m] read strided(o, 1) default 5.0", "o: i64", "y = x;"),
    ("x: f32[m] read strided(0, o) default 5.0", "o: u64", "y = x;"),
    ("y2: f32[m] write strided(o, 1)", "o: i64", "y2 = 1.0; y = 0.0;"),
    ("y2: f32[m] add strided(o, 2)", "o: u64", "y2 += 1.0; y = 0.0;"),
    ("x: f32[m] view default 5.0", "o: i64", "y = x.checked(index(o) + thread_id);"),
])
def test_64_bit_ptx_keeps_every_bit_of_a_64_bit_scalar(decl, param, body):
    """The PTX a 64-bit launch runs takes the scalar whole (no ``cvt.u32.u64`` truncation, which
    the 32-bit variant has): the GPU addresses the element the CPU does."""
    comp = Compilation(f"kernel k({decl}, {param}, y: f32[n] write) over n {{ {body} }}", "k.kern",
                       CompileOptions())
    assert "cvt.u32.u64" in comp.ptx(index_bits=32)
    ptx64 = comp.ptx(index_bits=64)
    assert "cvt.u32.u64" not in ptx64 and re.search(r"ld\.param\.(u|b|s)64", ptx64)


def test_routes_record_the_scalars_they_carry():
    """Every route records its scalar (and only the scalars that reach an index): strided
    offsets and strides of reads, writes and adds, loop bounds, functional-layout arguments,
    locals, loop-carried variables and float conversions; a scalar that only feeds a value, or a
    hash that a remainder or a mask bounds, does not count."""
    mod = kernc.compile("""
layout g(a) : (c) -> (r) { return (c + a); }
kernel rs(x: f32[m] read strided(o, s) default 0.0, o: u32, s: i16, y: f32[n] write) over n { y = x; }
kernel ws(y: f32[m] write strided(o, 2), o: u64) over n { y = 1.0; }
kernel loop(y: f32[n] write, a: i64, b: u8) over n { let c = 0.0; for k in a..a + 2i64 { c += 1.0; } y = c + f32(b); }
kernel fnl(x: f32[M] view default 0.0, a: i8, y: f32[n] write) over n { y = x.checked(g(index(a))(thread_id)); }
kernel carried(x: f32[M] view default 0.0, a: i64, y: f32[n] write) over n {
    let p: i64 = 0; let acc = 0.0;
    for k in 0..n { acc += x.checked(index(p)); p = p + a; }
    y = acc;
}
kernel fromf(x: f32[M] view default 0.0, f: f32, y: f32[n] write) over n { y = x.checked(index(f)); }
kernel valueonly(x: f32[M] view default 0.0, a: i64, y: f32[n] write) over n { y = x.checked(thread_id) + f32(a); }
kernel hashmod(x: f32[M] view default 0.0, seed: u32, m: u32, y: f32[n] write) over n {
    let h = (u32(thread_id) ^ seed) * 2654435761u32;
    y = x.checked(index(h % m));
}
kernel hashmask(x: f32[M] view default 0.0, seed: u32, y: f32[n] write) over n {
    let h = (u32(thread_id) ^ seed) * 2654435761u32;
    y = x.checked(index(h & 1023u32));
}
""")
    assert mod.rs.signature.index_inputs == ["o", "s"]
    assert mod.ws.signature.index_inputs == ["o"]
    assert mod.loop.signature.index_inputs == ["a"]
    assert mod.fnl.signature.index_inputs == ["a"]
    assert mod.carried.signature.index_inputs == ["a"]
    assert mod.fromf.signature.index_inputs == ["f"]
    assert mod.valueonly.signature.index_inputs == []
    # a remainder is below its divisor and an and with a constant below the constant: a big seed
    # hashed into an index keeps the launch 32-bit
    assert mod.hashmod.signature.index_inputs == ["m"]
    assert (mod.hashmask.signature.index_inputs, mod.hashmask.signature.index_literal_max) == ([], 1023)
    x, y = np.arange(64, dtype=np.float32), np.zeros(8, np.float32)
    assert binding.bind(mod.hashmod.signature, (x, 0xDEADBEEF, 64, y), {}, cpu.is_host_array, "cpu").index_bits == 32
    mod.hashmod(x, 0xDEADBEEF, 64, y)
    h = ((np.arange(8, dtype=np.uint32) ^ np.uint32(0xDEADBEEF)) * np.uint32(2654435761)) % np.uint32(64)
    assert y.tolist() == x[h].tolist()


@pytest.mark.parametrize("expr, big", [
    ("index(u32(s))", True),      # s = -1 is 4294967295 once unsigned: whatever s, 64-bit
    ("index(u - 1u32)", True),    # u = 0 wraps to 4294967295
    ("index(i64(u) << 4)", False),  # a shift by a constant is a product: bounded with the value
    ("index(1.0 / f)", True),     # a division by a scalar can make anything
])
def test_conversions_that_can_make_a_small_scalar_large_count_as_their_range(expr, big):
    """A signed scalar made unsigned, an unsigned subtraction and a float division by a scalar can
    turn small scalars into indices past int32: such a kernel runs 64-bit (the CPU used to refuse
    the launch, the GPU to wrap)."""
    mod = kernc.compile(f"kernel k(x: f32[M] view default -1.0, s: i32, u: u32, f: f32, y: f32[n] write) over n "
                        f"{{ y = x.checked({expr} + thread_id); }}")
    x, y = np.arange(8, dtype=np.float32), np.zeros(2, np.float32)
    args = (x, -1, 0, np.float32(1e-9), y)
    assert binding.bind(mod.k.signature, args, {}, cpu.is_host_array, "cpu").index_bits == (64 if big else 32)
    mod.k(*args)
    if expr == "index(i64(u) << 4)":  # u = 0: in range
        assert y.tolist() == [0.0, 1.0]
        big_u = (x, 3, 2**28, np.float32(1.0), y)  # 2**28 << 4 = 2**32
        assert binding.bind(mod.k.signature, big_u, {}, cpu.is_host_array, "cpu").index_bits == 64
        mod.k(*big_u)
    assert y.tolist() == [-1.0, -1.0]


@pytest.mark.parametrize("decl, body", [
    ("s: index", "y = x.checked(thread_id << s);"),
    ("s: u32", "y = x.checked(thread_id << index(s));"),
    ("s: i64", "let p: index = 0; if s > 3i64 { p = index(s); } y = x.checked(thread_id << p);"),
])
def test_a_scalar_shift_amount_makes_the_launch_64_bit(decl, body):
    """``thread_id << s`` with ``s = 20`` left int32 for thread 4096 while the launcher, seeing a
    small ``s``, picked 32 bits (the CPU refused the launch): a shift by a scalar multiplies by
    ``2^s``, which no product of two values bounds -- also where the amount is an index made from
    a scalar, through a branch."""
    mod = kernc.compile(f"kernel k(x: f32[M] view default -1.0, {decl}, y: f32[n] write) over n {{ {body} }}")
    x, y = np.arange(8, dtype=np.float32), np.zeros(4097, np.float32)
    assert binding.bind(mod.k.signature, (x, 20, y), {}, cpu.is_host_array, "cpu").index_bits == 64
    mod.k(x, 20, y)
    assert y[0] == 0.0 and (y[1:] == -1.0).all()


# ---------------------------------------------------------------------------------------------------
# (b) constants at and past the index range

BIG = [2**31 - 1, 2**31, 2**32, 2**32 + 1, 2**62, 2**63 - 1, 2**63, 2**64, 3 * 2**63]
PLACES = [
    "kernel k(x: f32[C] read, y: f32[n] write) over n { y = x; }",
    "kernel k(x: f32[C, 3] view, y: f32[n] write) over n { y = x.checked(thread_id, 2); }",
    "kernel k(x: f32[M, C] view, y: f32[P] write) over (i, j) in (M, C) { y = x.checked(i, j); }",
    "kernel k(y: f32[P] write) over (i, j) in (C, 3) { y = f32(i); }",
    "kernel k(y: f32[P] write) over (i, j) in (C, D) { y = f32(i + j); }",
    "kernel k(y: f32[P] write) over (i) in (C * D) { y = 1.0; }",
    "kernel k(y: f32[P] write) over (i) in (n * C) { y = 1.0; }",
    "kernel k(x: f32[n, 2] read as (n, 2):(1, C), y: f32[n] write) over n { y = x[1]; }",
    "kernel k(x: f32[M, N] view as (M, N):(C, 1), y: f32[N, M] view) over (i, j) in (N, M) { y[i, j] = x[j, i]; }",
    "kernel k(x: f32[M, N] view as (M, N):(1, D), y: f32[n] write) over n { y = x.checked(thread_id, 1); }",
    "kernel k(x: f32[m] read strided(C, D) default 0.0, y: f32[n] write) over n { y = x; }",
    "kernel k(y: f32[m] write strided(C, 1)) over n { y = 1.0; }",
    "kernel k(y: i64[n] write) over n { y = i64(thread_id + C); }",
    "kernel k(y: i64[n] write) over n { y = i64(thread_id * C * D); }",
    "kernel k(x: f32[M] view default 0.0, y: f32[n] write) over n { y = x.checked(index(Ci64) + thread_id); }",
    "layout g : (c) -> (r) { return (c * C); }\n"
    "kernel k(x: f32[M] view default 0.0, y: f32[n] write) over n { y = x.checked(g(thread_id)); }",
    "layout L(R) = (R, C):(C, 1);\nkernel k(x: f32[M, N] view as L(M), y: f32[n] write) over n { y = x.checked(0, 0); }",
    "layout b = (C, 2):(1, C);\nkernel k(x: f32[C, 2] view as b, y: f32[n] write) over n { y = x.checked(0, 1); }",
    "layout s = swizzle<SB, SM, SS> o (8, 8):(8, 1);\nkernel k(x: f32[8, 8] view as s, y: f32[n] write) over n { y = x.checked(thread_id, 1); }",
]


@st.composite
def constant_programs(draw):
    text = draw(st.sampled_from(PLACES))
    c, d = draw(st.sampled_from(BIG)), draw(st.sampled_from(BIG + [1, 2, 3]))
    sb, sm, ss = draw(st.integers(0, 70)), draw(st.integers(0, 70)), draw(st.integers(-70, 70))
    return (text.replace("Ci64", f"{min(c, 2**63 - 1)}i64").replace("SB", str(sb)).replace("SM", str(sm))
            .replace("SS", str(ss)).replace("C", str(c)).replace("D", str(d)))


@settings(max_examples=120 * SCALE, **FUZZ_SETTINGS)
@given(constant_programs())
def test_constants_at_and_past_the_index_range_compile_or_give_located_errors(text):
    """Constants past int64 passed ``kernc check`` and then failed in ``kern-lower-builtins`` or
    ``kern-lower-layouts`` with ``std::bad_cast`` (issue 18, item 4)."""
    try:
        comp = Compilation(text, "big.kern", CompileOptions())
    except CompileError as err:
        for d in err.diagnostics:
            assert re.match(r"big\.kern:\d+:\d+: error: ", d.format()), d.format()
        assert "beyond the index range" in str(err) or "swizzle" in str(err) or "out of range" in str(err) \
            or "does not match" in str(err) or "must be" in str(err) or "|S|" in str(err) \
            or "MAX_LAYOUT_SIZE" in str(err), str(err)  # the layout algebra's limits (2**48)
        return
    for bits in (32, 64):
        comp.llvm_ir(index_bits=bits)
