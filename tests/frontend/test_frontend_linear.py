"""Checking and lowering long bodies is linear (issue 18, item 5).

64k straight-line statements took 15 s in ``lower`` and 100k lets 83 s: ``stmts[i + 1:]`` after
every statement copied the rest of the block, each ``if``/``for``/guard copied the whole variable
state (``dict(env)``), and each guard after an early return walked the rest of the block again.
The work is counted, never timed: every statement-list element the checker and the lowering touch
(iterated, indexed or copied by a slice) and every state entry copied by ``dict(...)`` in
``frontend/lower.py``; doubling the program must about double the count.
"""

from __future__ import annotations

import pytest

import kernc
import kernc.frontend.lower as lower_mod
from kernc import frontend
from kernc.compiler import context
from kernc.frontend import ast as A

HEAD = "kernel k(x: f32[n] read, y: f32[n] write) over n {\n    let v = x;\n"


def _lets(n):
    return "".join(f"    let a{i} = v + {i}.0;\n" for i in range(n)) + f"    y = a{n - 1};\n"


def _lets_and_ifs(n):
    return "".join(f"    let a{i} = v * 2.0;\n    if a{i} > 3.0 {{ v = v + a{i}; }}\n" for i in range(n)) + "    y = v;\n"


def _lets_and_loops(n):  # 100 trips: a real scf.for, not unrolled
    return "".join(f"    let a{i} = v * 2.0;\n    for j in 0..100 {{ v = v + a{i}; }}\n" for i in range(n)) + "    y = v;\n"


def _early_returns(n):
    return "".join(f"    if v > {i}.0 {{ y = v; return; }}\n    v = v + 1.0;\n" for i in range(n)) + "    y = v;\n"


SHAPES = [_lets, _lets_and_ifs, _lets_and_loops, _early_returns]


class _CountingList(list):
    """A statement list that counts the elements read from it (iterated, indexed, sliced)."""

    counter = None

    def __iter__(self):
        for x in list.__iter__(self):
            _CountingList.counter[0] += 1
            yield x

    def __getitem__(self, i):
        got = list.__getitem__(self, i)
        _CountingList.counter[0] += len(got) if isinstance(i, slice) else 1
        return got


def _wrap_blocks(program) -> None:
    for node in A.iter_nodes(program):
        if isinstance(node, A.Block):
            node.stmts = _CountingList(node.stmts)


@pytest.fixture
def counting(monkeypatch):
    counter = [0]
    monkeypatch.setattr(_CountingList, "counter", counter)

    class CountingDict(dict):  # dict(env) in lower.py: count the entries copied
        def __init__(self, *args, **kwargs):
            if args and hasattr(args[0], "keys"):
                counter[0] += len(args[0])
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(lower_mod, "dict", CountingDict, raising=False)
    return counter


def _work(shape, n: int, counter) -> tuple[int, int]:
    """(elements the checker touched, elements and state entries the lowering touched)."""
    program = frontend.parse(HEAD + shape(n) + "}\n", "t.kern")
    _wrap_blocks(program)
    counter[0] = 0
    frontend.check(program)
    checked = counter[0]
    counter[0] = 0
    frontend.lower(program, context())
    return checked, counter[0]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda f: f.__name__.strip("_"))
def test_checking_and_lowering_touch_each_statement_a_bounded_number_of_times(shape, counting):
    n = 600
    c1, l1 = _work(shape, n, counting)
    c2, l2 = _work(shape, 2 * n, counting)
    statements = 2 * n  # about two statements per step of each shape
    for small, large, what in ((c1, c2, "check"), (l1, l2, "lower")):
        assert large <= 2.2 * small + 50, (what, small, large)  # linear: twice the program, twice the work
        assert small <= 12 * statements, (what, small)  # (quadratic: ~n**2/2 = 180000 at n = 600)


def test_many_early_returns_are_not_nested_too_deeply():
    """Each guard after an early return was a recursive call: a few hundred `if c { return; }`
    in one straight-line body were "nested too deeply" for the recursion limit."""
    mod = kernc.compile(HEAD + _early_returns(600) + "}\n")
    import numpy as np

    x = np.array([-1.0, 0.5, 2.5, 1e9], dtype=np.float32)
    y = np.zeros_like(x)
    mod.k(x, y)
    # v = x + i at the i-th test, returning y = v when v > i, i.e. when x > 0 at the first test
    want = np.where(x > 0.0, x, x + 600.0).astype(np.float32)
    assert np.array_equal(y, want)
