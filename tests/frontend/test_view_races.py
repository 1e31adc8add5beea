"""Race diagnostics for plain view writes (issue 21 item 4): a write whose coordinates are not
provably distinct per item is a located error with a hint to the atomic form; writes the checker
proves injective in the items (``frontend/injective.py``) stay accepted."""

from __future__ import annotations

import pytest

from frontend_helpers import compile_text

ACCEPTED = [
    # permutations and affine maps of the item coordinates
    "kernel k(a: f32[M, N] view, y: f32[M, N] view) over (i, j) in (M, N) { y[i, j] = a[i, j]; }",
    "kernel k(a: f32[M, N] view, y: f32[N, M] view) over (i, j) in (M, N) { y[j, i] = a[i, j]; }",
    "kernel k(y: f32[m] view) over n { let t = thread_id; y[2 * t + 1] = 1.0; }",
    "kernel k(y: f32[m] view) over n { y[thread_id] = 1.0; y[thread_id] += 2.0; }",
    "kernel k(y: f32[M, P] view) over (i, j) in (M, N) { y[i, i + j] = 1.0; }",
    # a flattened index: mixed radix over the extents
    "kernel k(y: f32[m] view) over (i, j) in (M, N) { y[i * N + j] = 1.0; }",
    "kernel k(y: f32[m] view) over (i, j, l) in (M, N, 4) { y[(i * N + j) * 4 + l] = 1.0; }",
    # two writes, disjoint by parity / by a constant coordinate
    "kernel k(y: f32[m] view) over n { let t = thread_id; y[2 * t] = 1.0; y[2 * t + 1] = 2.0; }",
    "kernel k(y: f32[n, 2] view) over n { y[thread_id, 0] = 1.0; y[thread_id, 1] = 2.0; }",
    # a loop variable in another coordinate; a branch
    "kernel k(y: f32[n, 8] view) over n { for q in 0..8 { y[thread_id, q] = 1.0; } }",
    "kernel k(x: f32[n] read, y: f32[n] view) over n { if x > 0.0 { y[thread_id] = x; } else { y[thread_id] = 0.0; } }",
    # one item writes (pinned by the condition); a row written by the items of column 0
    "kernel k(y: f32[4] view) over n { if thread_id == 0 { y[0] = 1.0; } }",
    "kernel k(y: f32[M] view) over (i, j) in (M, N) { if j == 0 { y[i] = 1.0; } }",
    # injective layouts: column-major, NHWC with symbolic strides, swizzled
    "kernel k(y: f32[M, N] view as (M, N):(1, M)) over (i, j) in (M, N) { y[i, j] = 1.0; }",
    "layout nhwc(N, H, W, C) = (N, H, W, C):(H * W * C, W * C, C, 1);\n"
    "kernel k(y: f32[N, H, W, C] view as nhwc(N, H, W, C)) over (a, b, c, d) in (N, H, W, C) { y[a, b, c, d] = 1.0; }",
    "layout sw = swizzle<3, 3, 3> o (8, 64):(64, 1);\n"
    "kernel k(y: f32[8, 64] view as sw) over (i, j) in (8, 64) { y[i, j] = 1.0; }",
    # atomics are the way to accumulate
    "kernel k(x: u8[n] read, h: u32[256] view) over n { h.atomic(index(x)) += 1; }",
]

REJECTED = [
    ("kernel k(x: u8[n] read, h: u32[256] view) over n { h[index(x)] += 1u32; }", "h.atomic(...) +="),
    ("kernel k(y: f32[4] view) over n { y[0] = 1.0; }", "y.atomic(...)"),
    ("kernel k(y: f32[m] view) over n { y[thread_id / 2] = 1.0; }", "y.atomic(...)"),
    ("kernel k(y: f32[M] view) over (i, j) in (M, N) { y[i] = 1.0; }", "y.atomic(...)"),
    ("kernel k(y: f32[m] view) over (i, j) in (M, N) { y[i + j] = 1.0; }", "y.atomic(...)"),
    ("kernel k(y: f32[m] view, s: index) over n { y[thread_id * s] = 1.0; }", "y.atomic(...)"),
    ("kernel k(y: f32[m] view) over n { for q in 0..4 { y[thread_id + index(q)] = 1.0; } }", "y.atomic(...)"),
    ("kernel k(y: f32[m] view) over (i, j) in (M, N) { y[i * 3 + j] = 1.0; }", "y.atomic(...)"),
    ("kernel k(x: f32[n] read, y: f32[m] view) over n { let b = x; y[index(i32(b))] = 1.0; }", "y.atomic(...)"),
    ("kernel k(y: f32[M, N] view) over (i, j) in (M, N) { if j == 0 { y[i, 0] = 1.0; } y[0, j] = 2.0; }",
     "the one at line 1"),
    ("kernel k(y: f32[m] view) over n { y[thread_id] = 1.0; y[thread_id + 1] = 2.0; }",
     "the one at line 1"),
    ("kernel k(y: f32[n, 4] view as (n, 4):(1, 0)) over n { y[thread_id, 0] = 1.0; }",
     "maps several coordinates to one element"),
    ("kernel k(x: u8[n] read, h: u32[256] view) over n { h.atomic(index(x)) += 1; h[0] = 0u32; }",
     "races with the atomic updates"),
]


@pytest.mark.parametrize("src", ACCEPTED)
def test_provably_distinct_writes_are_accepted(src):
    compile_text(src)


@pytest.mark.parametrize("src, hint", REJECTED)
def test_racy_writes_are_located_errors(src, hint):
    with pytest.raises(Exception) as info:
        compile_text(src)
    diags = info.value.diagnostics
    assert len(diags) == 1, [d.format() for d in diags]
    text = diags[0].format()
    line = text.splitlines()[0]
    assert line.startswith(f"t.kern:{src.count(chr(10)) + 1}:"), text
    assert "race" in line, text
    assert hint in text, text
