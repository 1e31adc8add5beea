"""``as caspar`` for elements of any width (issue 22, item 5): Caspar's planes of 16-byte chunks.

The model here is written from the shared design note ``caspar-layout.md`` alone (not from the
compiler): an element of ``N`` scalars in chunks of ``cs`` (4 floats, 2 doubles), chunk ``k`` of
``c`` scalars taking ``d_k = caspar_size(c)`` slots, starting at row ``R_k = sum_{j<k} d_j``; scalar
``e`` of chunk ``k`` of object ``i`` at flat offset ``R_k * M + i * d_k + e``; the host array of shape
``(caspar_size(N), M)``. It is checked against the note's worked examples, then kernels reading
(``sequential``, ``shared(I)``) and writing (``write``, ``add``, ``add shared_sum(J)``) a Pose3-like
7-float element, a 9-float camera, a 6-float element, an f64 3-vector and a 2-float element (2
slots, as Caspar) run on the CPU interpreter against it; padding is never written. The PTX for
sm_90 assembles with ptxas and moves each full chunk with one 16-byte vector load.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernc
from kernc.backend import toolkit
from kernc.backend.shared_indices import shared_indices

BLOCK = 32


def caspar_size(n: int) -> int:
    return n + 1 if n % 4 == 3 else n


def model_offsets(N: int, M: int, dtype) -> tuple[int, np.ndarray]:
    """``(rows, off)``: the host array's rows and ``off[i, s]``, the flat offset of scalar ``s`` of
    object ``i`` (``caspar-layout.md``)."""
    cs = 16 // np.dtype(dtype).itemsize
    off = np.zeros((M, N), np.int64)
    R = 0
    for k, first in enumerate(range(0, N, cs)):
        c = min(cs, N - first)
        d = caspar_size(c)
        for e in range(c):
            off[:, first + e] = R * M + np.arange(M) * d + e
        R += d
    return caspar_size(N), off


def pack(values: np.ndarray, fill=np.nan) -> np.ndarray:
    """``values`` (``M`` objects of ``N`` scalars) as Caspar's host array, padding = ``fill``."""
    M, N = values.shape
    rows, off = model_offsets(N, M, values.dtype)
    flat = np.full(rows * M, fill, values.dtype)
    flat[off] = values
    return flat.reshape(rows, M)


def unpack(host: np.ndarray, N: int) -> np.ndarray:
    return host.reshape(-1)[model_offsets(N, host.shape[1], host.dtype)[1]]


def padding(host: np.ndarray, N: int) -> np.ndarray:
    mask = np.ones(host.size, bool)
    mask[model_offsets(N, host.shape[1], host.dtype)[1]] = False
    return host.reshape(-1)[mask]


def test_model_reproduces_the_worked_examples():
    """The note's flat memory of each worked example (``_`` = padding, here NaN)."""
    _ = np.nan
    f3 = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    got = pack(np.vstack([f3, np.full((1, 3), np.nan, np.float32)]))  # M = 4
    np.testing.assert_array_equal(got.reshape(-1)[:12], [1, 2, 3, _, 4, 5, 6, _, 7, 8, 9, _])
    f6 = (np.arange(18, dtype=np.float32) + 1).reshape(3, 6)
    np.testing.assert_array_equal(pack(f6).reshape(-1),
                                  [1, 2, 3, 4, 7, 8, 9, 10, 13, 14, 15, 16, 5, 6, 11, 12, 17, 18])
    pose = (np.arange(14, dtype=np.float32) + 1).reshape(2, 7)
    np.testing.assert_array_equal(pack(pose).reshape(-1), [1, 2, 3, 4, 8, 9, 10, 11, 5, 6, 7, _, 12, 13, 14, _])
    d3 = np.array([[1, 2, 3], [4, 5, 6]], np.float64)
    host = pack(d3)
    assert host.shape == (4, 2)
    np.testing.assert_array_equal(host.reshape(-1), [1, 2, 4, 5, 3, 6, _, _])


#: (name, dtype, N): the elements of the issue
ELEMENTS = [("pose", "f32", 7), ("camera", "f32", 9), ("six", "f32", 6), ("d3", "f64", 3), ("two", "f32", 2)]


def _src() -> str:
    out = []
    for name, T, N in ELEMENTS:
        ramp = "[" + ", ".join(f"{c}.0" for c in range(N)) + "]"
        out.append(f"""
kernel seq_{name}(x: {T}[V, {N}] read as caspar, y: {T}[V, {N}] write as caspar) over V {{
    y = x * 2.0 + {ramp};
}}
kernel shared_{name}(x: {T}[V, {N}] read shared(I) as caspar, I: u32[n] read,
                     y: {T}[n, {N}] add as caspar) over n {{
    y += x;
}}
kernel scatter_{name}(x: {T}[n, {N}] read as caspar, J: u32[n] read,
                      y: {T}[V, {N}] add shared_sum(J) as caspar) over n {{
    y += x;
}}""")
    return "\n".join(out)


@pytest.fixture(scope="module")
def mod():
    src = _src().replace("kernel ", f"@block({BLOCK}) kernel ")
    return kernc.compile(src, filename="caspar_chunks.kern")


def _values(rng, shape, T):
    return (rng.integers(-8, 9, size=shape) / 4).astype(np.dtype(T.replace("f", "float")))


@pytest.mark.parametrize("name,T,N", ELEMENTS)
def test_sequential_read_and_write(mod, name, T, N):
    rng = np.random.default_rng(N)
    V = 37
    x = _values(rng, (V, N), T)
    xh, yh = pack(x), pack(np.zeros_like(x))
    assert xh.shape == (caspar_size(N), V)
    getattr(mod, f"seq_{name}")(xh, yh)
    np.testing.assert_array_equal(unpack(yh, N), x * 2 + np.arange(N))
    assert np.isnan(padding(yh, N)).all(), "the padding was written"


@pytest.mark.parametrize("name,T,N", ELEMENTS)
def test_shared_read_and_add(mod, name, T, N):
    rng = np.random.default_rng(N + 100)
    V, n = 11, 2 * BLOCK + 5
    x = _values(rng, (V, N), T)
    I = np.sort(rng.integers(0, V, n)).astype(np.uint32)  # runs: staged once per block
    y0 = _values(rng, (n, N), T)
    yh = pack(y0)
    getattr(mod, f"shared_{name}")(pack(x, fill=np.inf), shared_indices(I, BLOCK), yh)
    np.testing.assert_array_equal(unpack(yh, N), y0 + x[I])
    assert np.isnan(padding(yh, N)).all()


@pytest.mark.parametrize("name,T,N", ELEMENTS)
def test_shared_sum_add(mod, name, T, N):
    rng = np.random.default_rng(N + 200)
    V, n = 7, 3 * BLOCK + 1
    x = _values(rng, (n, N), T)
    J = rng.integers(0, V, n).astype(np.uint32)
    y0 = _values(rng, (V, N), T)
    yh = pack(y0)
    getattr(mod, f"scatter_{name}")(pack(x), shared_indices(J, BLOCK), yh)
    want = y0.astype(np.float64)
    np.add.at(want, J, x.astype(np.float64))  # exact: multiples of 1/4
    np.testing.assert_array_equal(unpack(yh, N), want.astype(x.dtype))
    assert np.isnan(padding(yh, N)).all()


def test_signature_and_host_shape(mod):
    sig = {p.name: p for p in mod.seq_pose.signature.params}
    assert sig["x"].storage_shape == [8, "V"]
    assert sig["x"].layout == "(V,4):(4,1) | (V,3):(4,1)+4*V"
    assert {p.name: p for p in mod.seq_camera.signature.params}["x"].layout == \
        "(V,4):(4,1) | (V,4):(4,1)+4*V | (V,1):(1,1)+8*V"
    assert {p.name: p for p in mod.seq_two.signature.params}["x"].storage_shape == [2, "V"]
    assert {p.name: p for p in mod.seq_d3.signature.params}["x"].layout == "(V,2):(2,1) | (V,1):(1,1)+2*V"
    with pytest.raises(kernc.KerncLaunchError if hasattr(kernc, "KerncLaunchError") else Exception,
                       match="dimension 0 must be 8"):
        mod.seq_pose(np.zeros((7, 4), np.float32), np.zeros((8, 4), np.float32))


needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")


@needs_ptxas
def test_ptx_moves_each_chunk_with_one_vector_access():
    """One ``ld.global.v4`` per 4-float chunk (the Pose3's 3-float chunk reads its padding lane
    too), ``v2.f64`` per double chunk, ``v2`` for a 2-float element; ptxas assembles it."""
    def total(n):
        return " + ".join(f"x[{c}]" for c in range(n))
    src = f"""
kernel pose(x: f32[V, 7] read as caspar, y: f32[V] write) over V {{ y = {total(7)}; }}
kernel cam(x: f32[V, 9] read as caspar, y: f32[V] write) over V {{ y = {total(9)}; }}
kernel d3(x: f64[V, 3] read as caspar, y: f64[V] write) over V {{ y = {total(3)}; }}
kernel two(x: f32[V, 2] read as caspar, y: f32[V] write) over V {{ y = {total(2)}; }}
"""
    ptx = kernc.compile(src, filename="caspar_ptx.kern", arch="sm_90").ptx  # 16-byte aligned bases
    result = toolkit.run_ptxas(ptx, arch="sm_90")
    assert result.ok, result.log[-3000:]
    bodies = dict(re.findall(r"\.entry (\w+)\((.*?)\n}\n", ptx, re.S))
    loads = {k: re.findall(r"ld\.global\.(?:nc\.)?(v[24]\.)?\w+", v) for k, v in bodies.items()}
    # each kernel also has the scalar loads of its misaligned-base path: count the vector ones
    assert loads["pose"].count("v4.") == 2, loads["pose"]
    assert loads["cam"].count("v4.") == 2, loads["cam"]
    assert loads["d3"].count("v2.") == 1, loads["d3"]
    assert loads["two"].count("v2.") == 1, loads["two"]
