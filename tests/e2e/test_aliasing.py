"""Arrays shared by a buffer the kernel reads and one it writes (issue 18, item 7).

Before the fix, one array passed as both the input and the output of a multi-block kernel (a
256 x 256 transpose) or overlapping views (``a[:-1]``, ``a[1:]``) were accepted silently: the CPU
interpreter does every read of a step before any write, a GPU runs its threads in no fixed order,
so the two devices disagree. A launch now refuses memory shared by a written buffer and another
accessed one with a ``KerncLaunchError`` naming both, except one array for a pair the compiler
proves elementwise (every item reads and writes the same element of both:
``KernelSignature.in_place``, ``frontend/aliasing.py``). Two written buffers never share memory.

The same check runs on the GPU path, in the full binding and in the prepared fast path: with the
fake CuPy of ``tests/cache/fake_driver.py`` in ``tests/cache/test_launch_aliasing.py``, and here,
marked ``gpu``, with CuPy.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernc
from kernc.backend import binding
from kernc.support.errors import KerncLaunchError

from conftest import compiled_example

SRC = """
kernel saxpy(a: f32, x: f32[n] read, y: f32[n] add) over n { y += a * x; }
kernel scale(x: f32[n] read, y: f32[n] write) over n { y = 2.0 * x + 1.0; }
kernel vec(x: f32[n, 3] read, y: f32[n, 3] add) over n { y += x; }
kernel soa_aos(x: f32[n, 3] read as soa, y: f32[n, 3] write) over n { y = x; }
kernel bits(x: f32[n] read, y: i32[n] write) over n { y = i32(x); }
kernel two_out(x: f32[n] read, y: f32[n] write, z: f32[n] add) over n { y = x; z += x; }
kernel two_in(x: f32[n] read, w: f32[n] read, y: f32[n] write) over n { y = x + w; }
kernel unused(x: f32[n] read, y: f32[n] write) over n { y = 1.0; }
kernel st(x: f32[m] read strided(o, 2), o: i32, y: f32[m] write strided(o, 2)) over n { y = x + 1.0; }
kernel st2(x: f32[m] read strided(o, 2), o: i32, y: f32[m] write strided(1, 2)) over n { y = x; }
kernel ix(x: f32[m] read indexed(i), i: u32[n] read, y: f32[m] add indexed(i)) over n { y += x; }
kernel at(x: f32[m] read indexed(i), i: u32[n] read, y: f32[m] add atomic(i)) over n { y += x; }
kernel idx_out(x: f32[m] read indexed(i), i: u32[n] read, y: u32[q] add atomic(i)) over n { y += u32(x); }
kernel idx_copy(x: f32[m] read indexed(i), i: u32[n] read, y: u32[n] write) over n { y = i + u32(x); }
kernel total(x: f32[n] read, s: f32[n] add sum) over n { s += x; }
kernel ew(a: f32[R, C] view, b: f32[R, C] view) over (i, j) in (R, C) { b[i, j] = a[i, j] * 2.0; }
kernel ew_rw(a: f32[R, C] view, b: f32[R, C] view) over (i, j) in (R, C) { b[i, j] += a.checked(i, j); }
kernel ew_local(a: f32[R, C] view, b: f32[R, C] view) over (i, j) in (R, C) { let k = i; b[k, j] = a[k, j]; }
kernel shift(a: f32[R, C] view, b: f32[R, C] view) over (i, j) in (R, C) { b[i, j] = a.checked(i, j + 1); }
kernel probe(a: f32[R, C] view, b: f32[R, C] view) over (i, j) in (R, C) {
    if a.in_bounds(i + 1, j) { b[i, j] = 1.0; }
}
"""

_MOD = None


def mod():
    global _MOD
    if _MOD is None:
        _MOD = kernc.compile(SRC)
    return _MOD


def refused(fn, *names):
    with pytest.raises(KerncLaunchError) as err:
        fn()
    msg = str(err.value)
    for n in names:
        assert f"'{n}'" in msg, msg
    return msg


# ---- the reproductions ------------------------------------------------------------------

def test_transpose_in_place_is_refused():
    """A 256 x 256 transpose of one array into itself (many blocks): item (i, j) reads a[i, j] and
    writes the element a[j, i] another item reads."""
    a = np.arange(256 * 256, dtype=np.float32).reshape(256, 256)
    before = a.copy()
    msg = refused(lambda: compiled_example("transpose").transpose(a, a), "a", "b")
    assert "same array" in msg
    assert np.array_equal(a, before)  # nothing ran


@pytest.mark.parametrize("order", ["x_first", "y_first"])
def test_overlapping_views_are_refused(order):
    a = np.arange(10, dtype=np.float32)
    before = a.copy()
    x, y = (a[:-1], a[1:]) if order == "x_first" else (a[1:], a[:-1])
    msg = refused(lambda: mod().saxpy(2.0, x, y), "x", "y")
    assert "overlap" in msg and np.array_equal(a, before)


# ---- what stays allowed -----------------------------------------------------------------------

def test_saxpy_with_separate_arrays_and_in_place():
    x = np.arange(6, dtype=np.float32)
    y = np.ones(6, np.float32)
    mod().saxpy(2.0, x, y)
    assert y.tolist() == [1, 3, 5, 7, 9, 11]
    mod().saxpy(2.0, y, y)  # y += 2 y: every item reads and updates its own element
    assert y.tolist() == [3, 9, 15, 21, 27, 33]


def test_elementwise_in_place_is_allowed():
    x = np.arange(5, dtype=np.float32)
    mod().scale(x, x)
    assert x.tolist() == [1, 3, 5, 7, 9]
    v = np.arange(12, dtype=np.float32).reshape(4, 3)
    want = v * 2
    mod().vec(v, v)
    assert np.array_equal(v, want)


def test_read_only_sharing_and_unused_reads_are_allowed():
    x = np.arange(4, dtype=np.float32)
    y = np.zeros(4, np.float32)
    mod().two_in(x, x, y)
    assert y.tolist() == [0, 2, 4, 6]
    mod().unused(y, y)  # the body never reads x
    assert y.tolist() == [1, 1, 1, 1]


def test_empty_arrays_share_nothing():
    a = np.zeros(0, np.float32)
    mod().saxpy(1.0, a, a)
    b = np.zeros((0, 0), np.float32)
    compiled_example("transpose").transpose(b, b)


def test_strided_with_the_same_offset_and_stride():
    a = np.arange(9, dtype=np.float32)
    mod().st(a, 1, a, n=4)  # a[1 + 2t] = a[1 + 2t] + 1
    assert a.tolist() == [0, 2, 2, 4, 4, 6, 6, 8, 8]
    refused(lambda: mod().st2(a, 0, a, n=4), "x", "y")  # reads a[2t], writes a[1 + 2t]


def test_indexed_with_the_same_index_buffer():
    a = np.arange(4, dtype=np.float32)
    i = np.array([3, 0, 2], np.uint32)
    mod().ix(a, i, a)
    assert a.tolist() == [0, 1, 4, 6]
    # atomic(i) may add to one element from several items, while others read it
    refused(lambda: mod().at(a, i, a), "x", "y")
    # the index buffer itself is read (i[t] by item t): adding to it through itself is refused,
    # writing element t of it from item t is elementwise
    refused(lambda: mod().idx_out(a, i, i), "i", "y")
    j = np.array([1, 0, 2], np.uint32)
    mod().idx_copy(a, j, j)
    assert j.tolist() == [1 + 1, 0 + 0, 2 + 4]


def test_views_with_the_same_coordinates_are_allowed():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    mod().ew(a, a)
    assert a.tolist() == [[0, 2, 4], [6, 8, 10]]
    mod().ew_rw(a, a)
    assert a.tolist() == [[0, 4, 8], [12, 16, 20]]


def test_views_with_other_coordinates_are_refused():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    refused(lambda: mod().shift(a, a), "a", "b")  # b[i, j] = a[i, j + 1]
    refused(lambda: mod().ew_local(a, a), "a", "b")  # a local in the coordinates: not provable
    # a view of the same memory with another shape
    refused(lambda: compiled_example("transpose").transpose(a, a.reshape(3, 2)), "a", "b")


def test_in_bounds_reads_no_memory():
    a = np.zeros((2, 3), np.float32)
    mod().probe(a, a)
    assert a.tolist() == [[1, 1, 1], [0, 0, 0]]


def test_other_layouts_and_dtypes_of_the_same_memory_are_refused():
    v = np.arange(12, dtype=np.float32)
    refused(lambda: mod().soa_aos(v.reshape(3, 4), v.reshape(4, 3)), "x", "y")
    x = np.arange(4, dtype=np.float32)
    refused(lambda: mod().bits(x, x.view(np.int32)), "x", "y")


def test_two_written_buffers_never_share_memory():
    x = np.ones(4, np.float32)
    y = np.zeros(4, np.float32)
    msg = refused(lambda: mod().two_out(x, y, y), "y", "z")
    assert "writes both" in msg
    refused(lambda: mod().two_out(x[:3], y[:3], y[1:]), "y", "z")


def test_sums_are_refused_in_place():
    x = np.ones(1, np.float32)
    refused(lambda: mod().total(x, x), "x", "s")


# ---- what the compiler records ----------------------------------------------------------------

@pytest.mark.parametrize("kernel, reads, writes, in_place", [
    ("saxpy", ["x"], ["y"], [["x", "y"]]),
    ("vec", ["x"], ["y"], [["x", "y"]]),
    ("soa_aos", ["x"], ["y"], []),
    ("bits", ["x"], ["y"], []),
    ("two_out", ["x"], ["y", "z"], [["x", "y"], ["x", "z"]]),
    ("unused", [], ["y"], []),
    ("st", ["x"], ["y"], [["x", "y"]]),
    ("st2", ["x"], ["y"], []),
    ("ix", ["x", "i"], ["y"], [["x", "y"]]),
    ("at", ["x", "i"], ["y"], []),
    ("idx_out", ["x", "i"], ["y"], []),
    ("idx_copy", ["x", "i"], ["y"], [["i", "y"]]),
    ("total", ["x"], ["s"], []),
    ("ew", ["a"], ["b"], [["a", "b"]]),
    ("ew_rw", ["a", "b"], ["b"], [["a", "b"]]),
    ("ew_local", ["a"], ["b"], []),
    ("shift", ["a"], ["b"], []),
    ("probe", [], ["b"], []),
])
def test_signature_records_reads_writes_and_in_place_pairs(kernel, reads, writes, in_place):
    sig = mod()[kernel].signature
    assert (sig.reads, sig.writes, sig.in_place) == (reads, writes, in_place)
    again = type(sig).from_json(sig.to_json())
    assert (again.reads, again.writes, again.in_place) == (reads, writes, in_place)
    assert again.problem() is None


def test_signature_without_the_fields_is_conservative():
    """A hand-written signature (``kernc opt`` input) has no ``reads``/``writes``: every read or
    view buffer counts as read, every write/add/view one as written, no pair as in place."""
    sig = mod().saxpy.signature
    data = sig.to_json().replace('"in_place":[["x","y"]],', "").replace(',"reads":["x"]', "").replace(',"writes":["y"]', "")
    bare = type(sig).from_json(data)
    assert (bare.reads, bare.writes, bare.in_place) == (None, None, [])
    plan = binding.BindPlan(bare)
    assert plan.aliasing == [("x", False), ("y", True)] and not plan.in_place
    y = np.zeros(3, np.float32)
    with pytest.raises(KerncLaunchError):
        binding.bind(bare, (1.0, y, y), {}, lambda a: isinstance(a, np.ndarray), "cpu")


# ---- on a GPU -------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_refuses_and_allows_as_the_cpu_does():
    import cupy as cp

    t = compiled_example("transpose").transpose
    a = cp.arange(256 * 256, dtype=cp.float32).reshape(256, 256)
    refused(lambda: t(a, a), "a", "b")
    k = mod().saxpy
    v = cp.arange(10, dtype=cp.float32)
    refused(lambda: k(2.0, v[:-1], v[1:]), "x", "y")
    for _ in range(2):  # the second call takes the prepared fast path
        refused(lambda: k(2.0, v[1:], v[:-1]), "x", "y")
    y = cp.ones(1000, cp.float32)
    k(2.0, y, y)
    k(2.0, y, y)
    assert np.array_equal(y.get(), np.full(1000, 9.0, np.float32))


# ---- in place needs one element per item (trial of issue 18, F04) -------------------------------

# (the writes that several items may make are atomic: a plain one is a race the compiler refuses,
# frontend/races.py; the read of the same elements through the other view still is not in place)
SHARED = """
kernel first(x: f32[n] view, y: f32[n] view, z: f32[n] write) over n {
    let v = x[0]; z = v; if thread_id == 0 { y[0] = v + 1.0; }
}
kernel half(x: f32[n] view, y: f32[n] view, z: f32[n] write) over n {
    let v = x[thread_id / 2]; z = v; if thread_id % 2 == 0 { y.atomic(thread_id / 2) += 1.0; }
}
kernel modrow(a: f32[R, C] view, b: f32[R, C] view) over (i, j) in (R, C) { b.atomic(i % 2, j) += a[i % 2, j]; }
kernel diag(a: f32[R, C] view, b: f32[R, C] view) over (i, j) in (R, C) { b.atomic(i + j, 0) += a[i + j, 0]; }
kernel scaled(a: f32[n] view, b: f32[n] view, s: index) over n { b.atomic(thread_id * s) += a[thread_id * s]; }
kernel onlyrow(a: f32[R, C] view, b: f32[R, C] view) over (i, j) in (R, C) { b.atomic(i, 0) += a[i, 0]; }
kernel strided0(x: f32[m] read strided(o, s), o: i32, s: i32, y: f32[m] write strided(o, s)) over n { y = x; }
kernel affine(a: f32[m] view, b: f32[m] view, o: index) over n { b[2 * thread_id + o - 1] = a[2 * thread_id + o - 1] * 3.0; }
kernel swapped(a: f32[R, C] view, b: f32[R, C] view) over (i, j) in (R, C) { b[j, i] = -a[j, i]; }
"""


_SHARED = []


def shared_mod():
    if not _SHARED:
        _SHARED.append(kernc.compile(SHARED))
    return _SHARED[0]


@pytest.mark.parametrize("kernel, args", [
    ("first", lambda a: (a, a, np.zeros(a.size, np.float32))),
    ("half", lambda a: (a, a, np.zeros(a.size, np.float32))),
    ("modrow", lambda a: (a.reshape(4, 4), a.reshape(4, 4))),
    ("diag", lambda a: (a.reshape(4, 4), a.reshape(4, 4))),
    ("scaled", lambda a: (a, a, 1)),
    ("onlyrow", lambda a: (a.reshape(4, 4), a.reshape(4, 4))),
    ("strided0", lambda a: (a, 0, 0, a[:4])),
])
def test_shared_elements_are_not_in_place(kernel, args):
    """``x[0]``, ``x[thread_id / 2]``, ``x[i % 2, j]``, ``x[i + j, 0]``, ``x[thread_id * s]``,
    ``x[i, 0]`` (all ``j`` share it) and ``strided(o, s)`` let several items share an element:
    one array for both buffers was accepted (``in_place``) and the CPU and a GPU disagree."""
    m = shared_mod()
    assert m[kernel].signature.in_place == []
    a = np.zeros(16, np.float32)
    names = {"first": ("x", "y"), "half": ("x", "y"), "strided0": ("x", "y")}.get(kernel, ("a", "b"))
    refused(lambda: m[kernel](*args(a)), *names)


def test_one_element_per_item_stays_in_place():
    m = shared_mod()
    assert m.affine.signature.in_place == [["a", "b"]]
    assert m.swapped.signature.in_place == [["a", "b"]]
    a = np.arange(16, dtype=np.float32)
    m.affine(a, a, 1, n=8)
    assert a.tolist() == [3.0 * v if v % 2 == 0 else v for v in range(16)]
    g = np.arange(16, dtype=np.float32).reshape(4, 4)
    m.swapped(g, g)
    assert g.ravel().tolist() == [-v for v in range(16)]


# (a plain write through a layout that maps several coordinates to one element is a refused race,
# frontend/races.py: those writes are atomic; the other view's read of the same elements still is
# not in place)
LAYOUTS = """
layout Z = (8, 2):(1, 0);
layout O = (8, 2):(1, 4);
layout P = (8, 2):(1, 9);
kernel zero(x: f32[8, 2] view as Z, y: f32[8, 2] view as Z, z: f32[16] write) over (i, j) in (8, 2) {
    let v = x[i, j]; z = v; if j == 0 { y.atomic(i, j) += 1.0; } }
kernel overlap(x: f32[8, 2] view as O, y: f32[8, 2] view as O, z: f32[16] write) over (i, j) in (8, 2) {
    let v = x[i, j]; z = v; if j == 0 { y.atomic(i, j) += 1.0; } }
kernel padded(x: f32[8, 2] view as P, y: f32[8, 2] view as P, z: f32[16] write) over (i, j) in (8, 2) {
    let v = x[i, j]; z = v; y[i, j] = v + 1.0; }
"""


def test_a_non_injective_layout_is_not_in_place():
    """Retrial of issue 18, R04: one-per-item coordinates through a layout with a stride 0 or
    overlapping modes still share elements (items (i, 0) and (i, 1)); it was in place, the CPU gave
    z all 0.0 and a GPU order 1.0 for items (i, 1). A padded static layout stays in place."""
    m = kernc.compile(LAYOUTS, filename="layouts.kern")
    assert m.zero.signature.in_place == []
    assert m.overlap.signature.in_place == []
    a, b = np.zeros(8, np.float32), np.zeros(12, np.float32)
    refused(lambda: m.zero(a, a, np.zeros(16, np.float32)), "x", "y")
    refused(lambda: m.overlap(b, b, np.zeros(16, np.float32)), "x", "y")
    assert m.padded.signature.in_place == [["x", "y"]]
    a = np.arange(17, dtype=np.float32)
    m.padded(a, a, np.zeros(16, np.float32))
    assert a.tolist() == [v if v == 8 else v + 1.0 for v in range(17)]  # (element 8: padding)


@pytest.mark.parametrize("text, injective", [
    ("(8,2):(1,0)", False), ("(8,2):(1,4)", False), ("(8,2):(1,-4)", False), ("(M,2):(1,1)", False),
    ("(M,N):(ld,1)", False), ("(8,2):(2,1)", True), ("(2,2):(3,2)", True), ("(8,2):(-1,8)", True),
    ("(M,N):(N,1)", True), ("(M,N):(1,M)", True), ("(M,1,N):(N,0,1)", True), ("(M,2):(-1,M)", True)])
def test_layout_injectivity(text, injective):
    from kernc.dialect.strided import StridedLayout

    assert StridedLayout.parse(text).injective() is injective


WRAPS = """
kernel big(x: f32[n] view default -1.0, y: f32[n] view, z: f32[p] write) over p {
    let v = x.checked(4611686018427387904 * thread_id); z = v;
    if thread_id == 0 { y.checked(4611686018427387904 * thread_id) = v + 1.0; } }
kernel big2(x: f32[n] view default -1.0, y: f32[n] view, z: f32[p] write) over p {
    let v = x.checked(2147483648 * (2147483648 * thread_id)); z = v;
    if thread_id == 0 { y.checked(2147483648 * (2147483648 * thread_id)) = v + 1.0; } }
kernel bigs(x: f32[m] read strided(o, 4611686018427387904), o: i32, y: f32[m] write strided(o, 4611686018427387904)) over n { y = x; }
kernel fits(x: f32[n] view default -1.0, y: f32[n] view, z: f32[p] write) over p {
    let v = x.checked(4194303 * thread_id); z = v; y.checked(4194303 * thread_id) = v + 1.0; }
"""


def test_coefficients_that_wrap_modulo_2_64_are_not_in_place():
    """Retrial of issue 18, R05: ``2^62 * thread_id`` gives items 0 and 4 the element 0 modulo
    2^64 (and ``2^31 * (2^31 * t)``, a strided ``s = 2^62``); they were in place, the CPU gave
    z[4] = 0.0 and a GPU that runs item 0 first 1.0. |k| < 2^22 stays in place."""
    m = kernc.compile(WRAPS, filename="wraps.kern")
    for name in ("big", "big2", "bigs"):
        assert m[name].signature.in_place == [], name
    a = np.zeros(8, np.float32)
    refused(lambda: m.big(a, a, np.zeros(8, np.float32)), "x", "y")
    assert m.fits.signature.in_place == [["x", "y"]]
