"""The CPU interpreter reports a missing ``gpu.barrier`` as a data race (backend/interpreter/memory.py
``_track``): two threads of a block touching one workgroup address between two barriers, at least
one storing, raise a located ``KerncRuntimeError``; the correct IR runs as before.

The kernels are kern-tile-contractions' tiled (double-buffered) gemm with one of its two barriers
deleted (the one in the chunk loop: a thread reads a tile element another thread stored, read after
write; the one before a tile's first chunk: a thread overwrites an element other threads read in the
previous tile's last chunk, write after read), and small hand-written gpu IR for the other orders
and the masked path.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import kernc
from kernc.backend.interpreter import Interpreter
from kernc.support.errors import KerncRuntimeError
from conftest import EXAMPLES


@pytest.fixture(scope="module")
def gemm_ir() -> str:
    return kernc.compile_file(f"{EXAMPLES}/gemm.kern")._compilation.gpu_ir(debug_info=True)


def _without_barrier(text: str, which: int) -> str:
    """``text`` with its ``which``-th ``gpu.barrier`` (0-based) deleted."""
    at = [m.start() for m in re.finditer(r"gpu\.barrier", text)]
    assert len(at) == 2, "the tiled gemm has a barrier before a tile's first chunk and one per chunk"
    i = at[which]
    return text[:i] + text[text.index("\n", i):]


def _run(text: str, M: int, K: int, N: int, grid: int):
    rng = np.random.default_rng(M + K + N)
    a = rng.standard_normal(M * K).astype(np.float32)
    b = rng.standard_normal(K * N).astype(np.float32)
    c = np.zeros(M * N, np.float32)
    Interpreter(text).run("gemm", grid, 256, [a, b, c, M, K, N])
    return a.reshape(M, K), b.reshape(K, N), c.reshape(M, N)


@pytest.mark.parametrize("shape", [(64, 32, 64), (70, 17, 130)])
def test_correct_tiled_gemm_has_no_race(gemm_ir, shape):
    M, K, N = shape
    grid = -(-M // 64) * -(-N // 64)
    a, b, c = _run(gemm_ir, M, K, N, grid)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, grid", [((64, 32, 64), 1), ((70, 17, 130), 6), ((130, 40, 70), 2)])
def test_missing_barrier_in_the_chunk_loop_is_a_read_after_write_race(gemm_ir, shape, grid):
    """(``grid`` below the tile count: blocks loop over several tiles, the masks differ by block.)"""
    with pytest.raises(KerncRuntimeError) as err:
        _run(_without_barrier(gemm_ir, 1), *shape, grid)
    msg = str(err.value)
    assert re.search(r"data race on workgroup buffer 'workgroup[01]' \(workgroup memory of block \d+\): "
                     r"thread \d+ stored to index \d+ and thread \d+ loads it with no gpu.barrier between "
                     r"them \(at loc\(\"[^\"]*gemm.kern\":\d+:\d+\)", msg), msg


def test_missing_barrier_before_a_tile_is_a_write_after_read_race(gemm_ir):
    """One block, two tiles (128 x 64), one chunk (K = 16): the second tile's first stores go to the
    half the first tile's only chunk read, by other threads, with no barrier between."""
    with pytest.raises(KerncRuntimeError) as err:
        _run(_without_barrier(gemm_ir, 0), 128, 16, 64, 1)
    msg = str(err.value)
    assert "loaded index" in msg and "stores to it with no gpu.barrier between them" in msg, msg
    # two chunks: the first tile's last chunk read the other half; one tile: no previous reads
    for M, K, N in ((128, 32, 64), (64, 16, 64)):
        a, b, c = _run(_without_barrier(gemm_ir, 0), M, K, N, 1)
        np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


W = "#gpu.address_space<workgroup>"
G = "#gpu.address_space<global>"


def _exchange(barrier: bool, second_store: bool = False, masked: bool = False) -> str:
    """Each thread stores its id to smem[tid], then (after a barrier, or not) loads smem[tid ^ 1]
    (``second_store``: stores there instead: write after write); ``masked``: only even threads
    of block 1 store."""
    bar = "gpu.barrier" if barrier else ""
    second = ("memref.store %v, %s[%p] : memref<256xf32, " + W + ">" if second_store else
              "%r = memref.load %s[%p] : memref<256xf32, " + W + ">\n      memref.store %r, %out[%g] : memref<?xf32, " + G + ">")
    cond = ("%e = arith.remui %tid, %c2 : index\n      %ev = arith.cmpi eq, %e, %c0 : index\n"
            "      %b1 = arith.cmpi eq, %bid, %c1 : index\n      %ok = arith.ori %ev, %b1 : i1") if masked else \
        "%ok = arith.constant true"
    return f"""
module attributes {{gpu.container_module}} {{
  gpu.module @kernels {{
    gpu.func @x(%out: memref<?xf32, {G}>) workgroup(%s : memref<256xf32, {W}>) kernel {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %bid = gpu.block_id x
      %tid = gpu.thread_id x
      %c256 = arith.constant 256 : index
      %b0 = arith.muli %bid, %c256 : index
      %g = arith.addi %b0, %tid : index
      %v = arith.index_cast %tid : index to i32
      %vf = arith.sitofp %v : i32 to f32
      {cond}
      scf.if %ok {{
        memref.store %vf, %s[%tid] : memref<256xf32, {W}>
      }}
      {bar}
      %p = arith.xori %tid, %c1 : index
      {second.replace("%v,", "%vf,")}
      gpu.return
    }}
  }}
}}
"""


@pytest.mark.parametrize("masked", [False, True])
def test_exchange_through_workgroup_memory(masked):
    out = np.zeros(512, np.float32)
    Interpreter(_exchange(True, masked=masked)).run("x", 2, 256, [out])
    t = np.arange(256) ^ 1
    assert np.array_equal(out[256:], t.astype(np.float32))
    with pytest.raises(KerncRuntimeError, match=r"block (0|1)\): thread (\d+) stored to index \d+ and thread \d+ "
                                                r"loads it with no gpu.barrier"):
        Interpreter(_exchange(False, masked=masked)).run("x", 2, 256, [np.zeros(512, np.float32)])


def test_write_after_write_by_another_thread_is_a_race():
    with pytest.raises(KerncRuntimeError, match=r"thread 1 stored to index 1 and thread 0 stores to it"):
        Interpreter(_exchange(False, second_store=True)).run("x", 1, 256, [np.zeros(256, np.float32)])
    Interpreter(_exchange(True, second_store=True)).run("x", 1, 256, [np.zeros(256, np.float32)])


def _vector_exchange(barrier: bool, write_after_write: bool = False) -> str:
    """Thread t of each block vector.stores 4 f32 to s[4t .. 4t+3], then (after a barrier, or not)
    vector.loads those of thread t ^ 1 into out (``write_after_write``: loads its own, then
    vector.stores them over thread t ^ 1's, with no barrier)."""
    vec = "vector<4xf32>"
    tail = (f"""%r = vector.load %s[%q] : memref<1024xf32, {W}>, {vec}
      vector.store %r, %out[%o] : memref<?xf32, {G}>, {vec}""" if not write_after_write else
            f"""%r = vector.load %s[%d] : memref<1024xf32, {W}>, {vec}
      vector.store %r, %out[%o] : memref<?xf32, {G}>, {vec}
      vector.store %r, %s[%q] : memref<1024xf32, {W}>, {vec}""")
    return f"""
module attributes {{gpu.container_module}} {{
  gpu.module @kernels {{
    gpu.func @x(%out: memref<?xf32, {G}>) workgroup(%s : memref<1024xf32, {W}>) kernel {{
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %c1024 = arith.constant 1024 : index
      %bid = gpu.block_id x
      %tid = gpu.thread_id x
      %d = arith.muli %tid, %c4 : index
      %p = arith.xori %tid, %c1 : index
      %q = arith.muli %p, %c4 : index
      %ob = arith.muli %bid, %c1024 : index
      %o = arith.addi %ob, %d : index
      %v = arith.index_cast %tid : index to i32
      %vf = arith.sitofp %v : i32 to f32
      %w = vector.broadcast %vf : f32 to {vec}
      vector.store %w, %s[%d] : memref<1024xf32, {W}>, {vec}
      {"gpu.barrier" if barrier else ""}
      {tail}
      gpu.return
    }}
  }}
}}
"""


def test_vector_loads_and_stores_of_workgroup_memory_are_race_checked():
    """vector.load/vector.store go through the barrier-interval check as memref.load/store do, each
    of the 4 elements as the lane's own; the report names both accesses (their lines here)."""
    out = np.zeros(2048, np.float32)
    Interpreter(_vector_exchange(True)).run("x", 2, 256, [out])
    assert np.array_equal(out.reshape(2, 256, 4)[:, :, 0], np.tile(np.arange(256) ^ 1, (2, 1)).astype(np.float32))
    text = _vector_exchange(False)
    with pytest.raises(KerncRuntimeError, match=r"block 0\): thread 1 stored to index 4 and thread 0 loads it "
                                                r"with no gpu.barrier between them") as err:
        Interpreter(text).run("x", 2, 256, [np.zeros(2048, np.float32)])
    lines = text.split("\n")
    ops = [lines[int(n) - 1] for n in re.findall(r'loc\("-":(\d+):\d+\)', str(err.value))]
    assert "vector.load %s[%q]" in ops[0] and "vector.store %w, %s[%d]" in ops[1], ops
    with pytest.raises(KerncRuntimeError, match=r"thread 1 stored to index 4 and thread 0 stores to it"):
        Interpreter(_vector_exchange(False, write_after_write=True)).run("x", 1, 256, [np.zeros(1024, np.float32)])
