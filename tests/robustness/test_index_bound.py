"""The launcher's bound on every ``index`` value (trial of issue 18, F02).

The launcher picked 32-bit ``index`` code when ``m * max(m, largest size + block)`` fit int32
(``m``: the largest index scalar or constant): one product, not sums of products (``s*s + s*s``),
a sum then multiplied (``(s + s) * s``), ``index(s + s)`` squared, ``thread_id*C + thread_id*C``,
a value summed around nested loops. The CPU interpreter refused such valid launches ("outside
int32") where a GPU would have wrapped. Now the kern IR of each kernel gives a program bounding
every index value bottom-up (``dialect/index_bound.py``), evaluated at launch on the actual
scalars and sizes: those launches run 64-bit and give numpy's answer, small ones stay 32-bit, and
a property test checks the bound against exact evaluation of random index expressions.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernc
from kernc.backend import binding, cpu
from kernc.dialect import index_bound

M = 48
X = np.arange(1, M + 1, dtype=np.float32)

#: (name, scalar type, body reading x.checked(...), a value of s that leaves int32, n)
ROUTES = [
    ("sum_then_product", "index", "y = x.checked((s + s) * s + thread_id);", 46340, 2),
    ("sum_of_products", "index", "y = x.checked(s * s + s * s + thread_id);", 46340, 2),
    ("products_and_sums", "index", "y = x.checked(s * s + s + s + thread_id);", 46340, 2),
    ("negated", "index", "y = x.checked(-s * s - s * s);", 46340, 1),
    ("select_plus", "index", "y = x.checked(select(s > 0, s * s, 0) + s * s);", 46340, 1),
    ("max_times", "index", "y = x.checked(max(s, s) * s + s * s);", 46340, 1),
    ("floor_div_sum", "index", "y = x.checked(s * s // 1 + s * s);", 46340, 1),
    ("local_squared", "index", "let a = s * 2; y = x.checked(a * a);", 30000, 1),
    ("difference_times", "index", "let a = s - (0 - s); y = x.checked(a * s);", 40000, 1),
    ("converted_sum_squared", "i32", "let a = index(s + s); y = x.checked(a * a);", 40000, 1),
    ("or_squared", "i64", "let a = index(s | 16383i64); y = x.checked(a * a);", 40000, 1),
    ("xor_squared", "i64", "let a = index(s ^ 16383i64); y = x.checked(a * a);", 40000, 1),
    ("nested_loop_sum", "i64",
     "let p: i64 = 0; for k in 0..s { for j in 0..s { p = p + s; } } y = x.checked(index(p));", 1300, 1),
]


@pytest.fixture(scope="module")
def routes():
    src = "\n".join(f"kernel {name}(x: f32[M] view default -1.0, s: {ty}, y: f32[n] write) over n {{ {body} }}"
                    for name, ty, body, _, _ in ROUTES)
    src += ("\nkernel rowcol(x: f32[M] view default -1.0, r: index, ld: index, c: index, y: f32[n] write) "
            "over n { y = x.checked(r * ld + c + thread_id); }"
            "\nkernel twice(x: f32[M] view default -1.0, y: f32[n] write) over n "
            "{ y = x.checked(thread_id * 40000 + thread_id * 40000); }")
    return kernc.compile(src, filename="routes.kern")


def _bits(kernel, args) -> int:
    return binding.bind(kernel.signature, args, {}, cpu.is_host_array, "cpu").index_bits


@pytest.mark.parametrize("name, ty, body, big, n", ROUTES, ids=[r[0] for r in ROUTES])
def test_sums_of_products_leave_int32_and_run_64_bit(routes, name, ty, body, big, n):
    k = getattr(routes, name)
    y = np.zeros(n, np.float32)
    assert _bits(k, (X, big, y)) == 64
    k(X, big, y)  # was: KerncRuntimeError "index arithmetic gives ..., outside int32"
    assert y.tolist() == [-1.0] * n  # every index is past the 48 elements: the default
    if k.signature.index_literal_max < 2**15:  # (16383 * 16383: the lowering's products rule)
        assert _bits(k, (X, 3, np.zeros(n, np.float32))) == 32  # small values keep 32-bit code


def test_row_times_ld_plus_col_and_two_thread_products(routes):
    y = np.zeros(46000, np.float32)
    assert _bits(routes.rowcol, (X, 46340, 46340, 46340, y)) == 64
    routes.rowcol(X, 46340, 46340, 46340, y)
    assert (y == -1.0).all()
    routes.rowcol(X, 0, 7, 2, y[:4])
    assert y[:4].tolist() == X[2:6].tolist()
    y = np.zeros(30000, np.float32)
    assert _bits(routes.twice, (X, y)) == 64
    routes.twice(X, y)
    assert y[0] == 1.0 and (y[1:] == -1.0).all()


def test_the_prepared_launch_limit_is_the_largest_magnitude_that_stays_32_bit(routes):
    """``BoundLaunch.index_scalar_bound`` (the CUDA fast path's check) follows the new bound: a
    ``(s + s) * s`` kernel is 32-bit for ``|s| < b`` and 64-bit at ``b``."""
    k = routes.sum_then_product
    b = binding.bind(k.signature, (X, 5, np.zeros(2, np.float32)), {}, cpu.is_host_array, "cpu").index_scalar_bound
    assert b is not None and 2 * (b - 1) ** 2 + 300 < 2**31 <= 2 * b * b
    assert _bits(k, (X, b - 1, np.zeros(2, np.float32))) == 32
    assert _bits(k, (X, b, np.zeros(2, np.float32))) == 64


# -- soundness of the bound against exact evaluation ---------------------------------------------

def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _wrap64(v: int) -> int:
    return (v + 2**63) % 2**64 - 2**63


@st.composite
def expressions(draw, depth=0):
    """``(source text, f(a, b, c, t) -> exact value, [all intermediate values' functions])``."""
    leaves = ["a", "b", "c", "thread_id", "const"]
    kind = draw(st.sampled_from(leaves if depth >= 3 else leaves + ["bin"] * 4 + ["un"] * 2 + ["sel"]))
    if kind == "const":
        v = draw(st.integers(-70000, 70000))
        return f"({v})", (lambda a, b, c, t, v=v: v)
    if kind in ("a", "b", "c", "thread_id"):
        return kind, (lambda a, b, c, t, k=kind: {"a": a, "b": b, "c": c, "thread_id": t}[k])
    x, fx = draw(expressions(depth + 1))
    if kind == "un":
        op = draw(st.sampled_from(["/", "%", "<<", "|", "^", "&"]))
        k = draw(st.integers(1, 9)) if op == "<<" else draw(st.sampled_from([1, 3, 7, 255, 1000, 65535]))
        if op == "/":
            return f"({x} / {k})", (lambda *v, f=fx, k=k: _c_div(f(*v), k))
        if op == "%":
            return f"({x} % {k})", (lambda *v, f=fx, k=k: f(*v) - _c_div(f(*v), k) * k)
        if op == "<<":
            return f"({x} << {k})", (lambda *v, f=fx, k=k: _wrap64(f(*v) << k))
        py = {"|": lambda p, q: p | q, "^": lambda p, q: p ^ q, "&": lambda p, q: p & q}[op]
        return f"({x} {op} {k})", (lambda *v, f=fx, k=k, g=py: g(f(*v), k))
    y, fy = draw(expressions(depth + 1))
    if kind == "sel":
        z, fz = draw(expressions(depth + 1))
        return (f"select({x} > {y}, {y}, {z})",
                lambda *v, f=fx, g=fy, h=fz: g(*v) if f(*v) > g(*v) else h(*v))
    op = draw(st.sampled_from(["+", "-", "*", "min", "max"]))
    if op in ("min", "max"):
        fn = min if op == "min" else max
        return f"{op}({x}, {y})", (lambda *v, f=fx, g=fy, fn=fn: fn(f(*v), g(*v)))
    py = {"+": lambda p, q: p + q, "-": lambda p, q: p - q, "*": lambda p, q: p * q}[op]
    return f"({x} {op} {y})", (lambda *v, f=fx, g=fy, h=py: _wrap64(h(f(*v), g(*v))))


SCALARS = st.one_of(st.integers(-50, 50), st.integers(-70000, 70000), st.sampled_from([46340, -46341, 2**20]))


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(exprs=st.lists(expressions(), min_size=3, max_size=3), a=SCALARS, b=SCALARS, c=SCALARS,
       n=st.integers(1, 40))
def test_the_bound_holds_for_random_index_expressions(exprs, a, b, c, n):
    """For random index expressions of scalars, thread ids and constants (+, -, *, min, max,
    select, / and % by constants, shifts, |, ^, &), the evaluated bound is at least the exact
    magnitude of the result for every thread, and a launch the bound lets run 32-bit runs on the
    CPU interpreter (which refuses any index value outside int32 in a 32-bit launch) and gives
    the exact values."""
    src = "\n".join(f"kernel e{i}(a: index, b: index, c: index, y: i64[n] write) over n {{ y = i64(0 * a + {text}); }}"
                    for i, (text, _) in enumerate(exprs))
    mod = kernc.compile(src, filename="e.kern")
    for i, (text, f) in enumerate(exprs):
        k = getattr(mod, f"e{i}")
        y = np.zeros(n, np.int64)
        bound = binding.bind(k.signature, (a, b, c, y), {}, cpu.is_host_array, "cpu")
        largest = max(n, bound.problem_size)
        got = binding.index_values_bound(k.signature, {"a": a, "b": b, "c": c}, {"n": n}, largest + bound.block)
        exact = [f(a, b, c, t) for t in range(n)]
        assert got >= max(abs(v) for v in exact), text
        k(a, b, c, y)  # 32-bit only when the bound fits: never "outside int32"
        assert y.tolist() == exact, text


def test_a_program_read_from_disk_is_checked():
    assert index_bound.problem([["add", 64, 0, 1]]) is not None  # refers forward
    assert index_bound.problem([["exec", 64]]) is not None
    assert index_bound.problem([["c", 0, 1, 1], ["p", 64, "s", 0], ["mul", 64, 0, 1]]) is None
    assert index_bound.problem("x") is not None


@pytest.mark.parametrize("c", ["5e-324", "1e-310", "4.9e-324"])
def test_a_float_division_by_a_subnormal_constant_is_bounded_not_an_internal_error(c):
    """``x / c`` is bounded as ``x * (1/c)``; ``1/c`` of a subnormal ``c`` is inf in a float and
    ``math.ceil(inf)`` raised OverflowError: an internal compiler error (found by the differential
    fuzzer). It is now the top bound, so the launch runs 64-bit and gives numpy's answer."""
    import kernc

    src = (f"kernel k(s: f64, y: i64[n] write) over n {{\n"
           f"    y = i64(index(i64(s / {c})) + thread_id);\n}}\n")
    mod = kernc.compile(src)
    y = np.zeros(3, np.int64)
    mod.k(0.0, y, device="cpu")
    assert y.tolist() == [0, 1, 2]
