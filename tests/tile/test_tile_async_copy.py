"""kern-tile-contractions' cp.async staging and the CPU interpreter's model of it.

On sm_80 and later the tiled kernels copy their staged tiles with ``nvgpu.device_async_copy`` (one
group per chunk, ``device_async_wait`` + barrier before the chunk's products); the results stay
bitwise those of the untiled kernel and of the plain-load staging, and the counters are the same
(the copies count as global loads and workgroup stores). The interpreter executes cp.async,
commit_group and wait_group N as the PTX ISA says: a kernel whose wait is missing, whose wait leaves
the chunk's group in flight, or whose barrier after the wait is missing is a reported race. Operands
cp.async cannot copy (f16: 2 bytes; a non-zero default) keep plain loads, and the remark says why.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from kernc.api import Module
from kernc.backend import cache
from kernc.backend.interpreter import Interpreter
from kernc.compiler import Compilation, CompileOptions
from kernc.passes import pipeline
from kernc.support.errors import KerncRuntimeError
from conftest import EXAMPLES

GEMM = open(os.path.join(EXAMPLES, "gemm.kern")).read()


def _module(src: str, **kw) -> Module:
    return Module(Compilation(src, "t.kern", CompileOptions(**kw), use_cache=False), choose_tile=False)


@pytest.fixture(scope="module")
def gemms():
    return {"async": _module(GEMM), "plain": _module(GEMM, async_copy=False), "untiled": _module(GEMM, tile=False)}


def _inputs(M, K, N, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)


@pytest.mark.parametrize("shape", [(70, 37, 65), (64, 16, 64), (5, 0, 3)])
def test_cp_async_gemm_bitwise_equals_untiled_and_plain_staging(gemms, shape):
    M, K, N = shape
    a, b = _inputs(M, K, N)
    out = {}
    for name, mod in gemms.items():
        c = np.full((M, N), 7, np.float32)
        out[name] = (c, mod.gemm(a, b, c).stats)
    assert (out["async"][0].view(np.int32) == out["untiled"][0].view(np.int32)).all()
    assert (out["plain"][0].view(np.int32) == out["untiled"][0].view(np.int32)).all()
    sa, sp = out["async"][1], out["plain"][1]
    # the copies are counted as the loads and stores they replace: the same traffic
    for field in ("global_load_requests", "global_load_sectors", "shared_requests", "shared_bank_conflicts"):
        assert getattr(sa, field) == getattr(sp, field), field
    if K:
        assert sa.global_load_sectors * 10 < out["untiled"][1].global_load_sectors or M * N < 64 * 64


def test_gpu_ir_has_cp_async_on_sm80_only(gemms):
    ir80 = gemms["async"]._compilation.gpu_ir()
    # one copy per staged read, in a loop over its 4 rounds of slots, before the chunk loop and in it
    assert ir80.count("nvgpu.device_async_copy") == 4
    assert len(re.findall(r"scf\.for %\w+ = %c0 to %c4 step %c1 \{", ir80)) == 4
    assert ir80.count("nvgpu.device_async_wait") == 2
    assert "nvgpu.device_async" not in gemms["plain"]._compilation.gpu_ir()
    ir75 = Compilation(GEMM, "t.kern", CompileOptions(arch="sm_75"), use_cache=False).gpu_ir()
    assert "nvgpu.device_async" not in ir75


def test_cache_key_includes_async_copy():
    assert cache.option_includes(async_copy=False) == (("--no-async-copy", ""),)
    assert cache.option_includes() == ()
    c80 = Compilation(GEMM, "t.kern", CompileOptions(arch="sm_80"), use_cache=False)
    c75 = Compilation(GEMM, "t.kern", CompileOptions(arch="sm_75"), use_cache=False)
    off = Compilation(GEMM, "t.kern", CompileOptions(arch="sm_80", async_copy=False), use_cache=False)
    assert c80.uses_async_copy and not c75.uses_async_copy and not off.uses_async_copy


def _with_drop(monkeypatch, what: str) -> Module:
    """The tiled gemm built with kern-tile-contractions' test hook ``drop_sync = what``."""
    build = pipeline.kern_to_gpu

    def patched(**kw):
        passes = build(**kw)
        for p in passes:
            if p.name == "kern-tile-contractions":  # (an OnDemand: the pass it builds)
                p.built().drop_sync = what
        return passes
    monkeypatch.setattr(pipeline, "kern_to_gpu", patched)
    return _module(GEMM)


def test_single_buffered_staging_is_a_loop_over_rounds_and_bitwise_equal(monkeypatch, gemms):
    """``double_buffer = False`` (plain loads, a barrier before the stores and one after): each
    staged tile's 4 rounds of slots are a loop whose load is stored at once (not 4 unrolled loads
    held in registers), bitwise equal to the untiled kernel, with the global loads of the
    double-buffered plain staging and no bank conflict."""
    build = pipeline.kern_to_gpu

    def patched(**kw):
        passes = build(**kw)
        for p in passes:
            if p.name == "kern-tile-contractions":  # (an OnDemand: the pass it builds)
                p.built().double_buffer = False
        return passes
    monkeypatch.setattr(pipeline, "kern_to_gpu", patched)
    single = _module(GEMM)
    text = single._compilation.gpu_ir()
    assert "nvgpu.device_async" not in text
    rounds = re.findall(r"scf\.for %\w+ = %c0 to %c4 step %c1 \{", text)
    assert len(rounds) == 2  # a's and b's, in the chunk loop
    for M, K, N in ((70, 37, 65), (64, 16, 64)):
        a, b = _inputs(M, K, N, seed=M)
        out = {}
        for name, mod in (("single", single), ("plain", gemms["plain"]), ("untiled", gemms["untiled"])):
            c = np.full((M, N), 7, np.float32)
            out[name] = (c, mod.gemm(a, b, c).stats)
        assert (out["single"][0].view(np.int32) == out["untiled"][0].view(np.int32)).all()
        s, p = out["single"][1], out["plain"][1]
        assert (s.global_load_requests, s.global_load_sectors) == (p.global_load_requests, p.global_load_sectors)
        # (the double-buffered staging also stores the zeros of the chunk after the last)
        assert 0 < s.shared_requests <= p.shared_requests and s.shared_bank_conflicts == 0


@pytest.mark.parametrize("what, pattern", [
    ("wait", r"thread \d+ loads index \d+ \(at loc\(\"t.kern\":10:9\)\) while a cp.async to it "
             r"\(nvgpu.device_async_copy at loc\(\"t.kern\":10:9\)\) is in flight"),
    ("wait1", r"thread \d+ loads index \d+ .* while a cp.async to it .* is in flight: no "
              r"nvgpu.device_async_wait \(cp.async.wait_group\) has retired its group"),
    ("barrier", r"thread \d+ stored to index \d+ and thread \d+ loads it with no gpu.barrier between them"),
])
def test_missing_wait_or_barrier_is_a_reported_race(monkeypatch, what, pattern):
    mod = _with_drop(monkeypatch, what)
    a, b = _inputs(70, 37, 65)
    with pytest.raises(KerncRuntimeError) as err:
        mod.gemm(a, b, np.zeros((70, 65), np.float32))
    assert re.search(r"data race on workgroup buffer 'workgroup[01]' \(workgroup memory of block \d+\): "
                     + pattern, str(err.value)), str(err.value)


W = "#gpu.address_space<workgroup>"
G = "#gpu.address_space<global>"


def _groups(wait: int, read_other: bool, barrier: bool, second: bool = True) -> str:
    """Thread ``t`` copies ``src[t]`` to ``s[t]`` (group 0) and ``src[256 + t]`` to ``s[256 + t]``
    (group 1, ``second``), waits with ``numGroups = wait``, (barrier,) then loads ``s[t]`` (or
    ``s[t ^ 1]``, another thread's: ``read_other``) into ``out[t]``."""
    two = f"""%t1 = nvgpu.device_async_copy %src[%hi], %s[%hi], 1 : memref<?xf32, {G}> to memref<512xf32, {W}>
      %g1 = nvgpu.device_async_create_group %t1""" if second else ""
    return f"""
module attributes {{gpu.container_module}} {{
  gpu.module @kernels {{
    gpu.func @x(%src: memref<?xf32, {G}>, %out: memref<?xf32, {G}>) workgroup(%s : memref<512xf32, {W}>) kernel {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c256 = arith.constant 256 : index
      %tid = gpu.thread_id x
      %hi = arith.addi %tid, %c256 : index
      %t0 = nvgpu.device_async_copy %src[%tid], %s[%tid], 1 : memref<?xf32, {G}> to memref<512xf32, {W}>
      %g0 = nvgpu.device_async_create_group %t0
      {two}
      nvgpu.device_async_wait %g0 {{numGroups = {wait} : i32}}
      {"gpu.barrier" if barrier else ""}
      %p = {"arith.xori %tid, %c1 : index" if read_other else "arith.addi %tid, %c0 : index"}
      %v = memref.load %s[%p] : memref<512xf32, {W}>
      memref.store %v, %out[%tid] : memref<?xf32, {G}>
      {"%w = memref.load %s[%hi] : memref<512xf32, " + W + ">" if second and wait == 0 else ""}
      gpu.return
    }}
  }}
}}
"""


def _run_groups(text: str):
    src = np.arange(512, dtype=np.float32) + 0.5
    out = np.zeros(256, np.float32)
    Interpreter(text).run("x", 1, 256, [src, out])
    return src, out


def test_wait_group_retires_all_but_the_newest_groups():
    # wait_group 1: group 0 (s[t]) is complete for its own thread, group 1 may still be in flight
    src, out = _run_groups(_groups(1, read_other=False, barrier=False))
    assert (out == src[:256]).all()
    # ... so reading group 1's target is a race even after a barrier (a barrier completes no copy)
    bad = _groups(1, read_other=False, barrier=True).replace("%v = memref.load %s[%p]", "%v = memref.load %s[%hi]")
    with pytest.raises(KerncRuntimeError, match=r"thread 0 loads index 256 .* while a cp.async to it"):
        _run_groups(bad)
    # wait_group 0 retires both; another thread's element needs the barrier after the wait
    src, out = _run_groups(_groups(0, read_other=True, barrier=True))
    assert (out == src[np.arange(256) ^ 1]).all()
    with pytest.raises(KerncRuntimeError, match=r"thread 1 stored to index 1 and thread 0 loads it with no "
                                                r"gpu.barrier between them"):
        _run_groups(_groups(0, read_other=True, barrier=False))


def test_uncommitted_copy_is_not_waited_for():
    """wait_group waits for committed groups only: the copy to s[256 + t], never committed, is
    still in flight after ``wait_group 0`` (which completes s[t]'s group)."""
    text = _groups(0, read_other=False, barrier=False).replace("%g1 = nvgpu.device_async_create_group %t1", "")
    with pytest.raises(KerncRuntimeError, match=r"thread 0 loads index 256 .* while a cp.async to it"):
        _run_groups(text)
    src, out = _run_groups(_groups(0, read_other=False, barrier=False))  # committed: complete
    assert (out == src[:256]).all()


F16 = """
kernel gemm(a: f16[M, K] view, b: f32[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for k in 0..K { acc += a[i, k] * b[k, j]; }
    c[i, j] = acc;
}
"""

DEFAULTED = """
kernel gemm(a: f32[M, K] view default 1.0, b: f32[K, N] view, c: f32[M, N] view) over (i, j) in (M, N) {
    let acc = 0.0;
    for k in 0..K { acc += a.checked(i, k) * b[k, j]; }
    c[i, j] = acc;
}
"""


@pytest.mark.parametrize("src, reason", [
    (F16, "a with plain loads (a f16 element is 2 bytes and cp.async copies 4, 8 or 16; no vector copy "
          "along the unit stride yet)"),
    (DEFAULTED, "a with plain loads (its checked read's default 1.000000e+00 : f32 is not 0, and cp.async "
                "fills with zeros)"),
])
def test_operands_cp_async_cannot_copy_keep_plain_loads(src, reason, capsys):
    mod = Module(Compilation(src, "t.kern", CompileOptions(remarks=True, tensor_cores=False), use_cache=False),
                 choose_tile=False)
    err = capsys.readouterr().err
    assert "b staged with cp.async" in err and reason in err, err
    text = mod._compilation.gpu_ir()
    # b's copy in a loop over its 4 rounds of slots, before the chunk loop and in it; a's are plain
    assert text.count("nvgpu.device_async_copy") == 2
    M, K, N = 66, 19, 67
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K)).astype(np.float16 if src is F16 else np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c1, c2 = np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)
    mod.gemm(a, b, c1)
    _module(src, tile=False).gemm(a, b, c2)
    assert (c1.view(np.int32) == c2.view(np.int32)).all()


def test_tile_needing_more_registers_than_ptxas_gives_is_a_located_error():
    """``@block(1024)``: at most 64 registers per thread (64K per SM); 128x512 items over 1024
    threads are 8x8 accumulators per thread, which ptxas spills: a located error at ``@tile``
    (column of its name, as the other ``@tile`` errors) naming the limit. 128x128 (4x4 items) fits."""
    from kernc.backend import toolkit
    from kernc.errors import CompileError

    if toolkit.ptxas_path() is None:
        pytest.skip("no ptxas (pip install nvidia-cuda-nvcc)")
    body = GEMM.split("\n", 7)[7]
    mod = Module(Compilation("@block(1024) @tile(128, 512, 8)\n" + body, "t.kern", CompileOptions(),
                             use_cache=False))
    with pytest.raises(CompileError) as err:
        mod.ptx
    msg = str(err.value)
    assert re.search(r"t.kern:1:15: error: @tile\(128, 512, 8\) of kernel 'gemm': its 64 items per thread do "
                     r"not fit in registers on sm_90: ptxas -v allocates 64 registers \(a thread of a "
                     r"1024-thread block may use up to 64\) and spills \d+ bytes of stores, \d+ of loads", msg), msg
    fits = Module(Compilation("@block(1024) @tile(128, 128, 16)\n" + body, "t.kern", CompileOptions(),
                              use_cache=False))
    assert ".entry gemm" in fits.ptx


def test_partial_round_of_copies_bitwise_equals_untiled(gemms):
    """``@tile(16, 256, 8)``: a's 8x16 tile is 128 slots for 256 threads, so half the threads copy
    nothing (the copy under ``scf.if``, outside the group's tokens); b's 2048 slots are 8 rounds,
    a loop over them (one copy in it), before the chunk loop and in it."""
    mod = _module("@tile(16, 256, 8)\n" + GEMM.split("\n", 7)[7])
    assert mod._compilation.gpu_ir().count("nvgpu.device_async_copy") == 2 * (1 + 1)
    M, K, N = 37, 21, 300
    a, b = _inputs(M, K, N, seed=3)
    c1, c2 = np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)
    mod.gemm(a, b, c1)
    gemms["untiled"].gemm(a, b, c2)
    assert (c1.view(np.int32) == c2.view(np.int32)).all()


def _ldmatrix_after_copy(wait: bool, barrier: bool, read: str = "ldmatrix") -> str:
    """32 threads: thread t cp.asyncs src[8t .. 8t+7] (16 bytes, f16) to s[8t ..], commits, (waits,
    barrier,) then reads row 8t with ``nvgpu.ldmatrix`` x4 (or ``vector.load`` of 8 elements) and
    stores its first element to out[t]."""
    reader = ("%m = nvgpu.ldmatrix %s[%d] {numTiles = 4 : i32, transpose = false} : "
              f"memref<256xf16, {W}> -> vector<4x2xf16>\n      %v = vector.extract %m[0, 0] : f16 from vector<4x2xf16>"
              if read == "ldmatrix" else
              f"%m = vector.load %s[%d] : memref<256xf16, {W}>, vector<8xf16>\n"
              "      %v = vector.extract %m[0] : f16 from vector<8xf16>")
    return f"""
module attributes {{gpu.container_module}} {{
  gpu.module @kernels {{
    gpu.func @x(%src: memref<?xf16, {G}>, %out: memref<?xf16, {G}>) workgroup(%s : memref<256xf16, {W}>) kernel {{
      %c8 = arith.constant 8 : index
      %tid = gpu.thread_id x
      %d = arith.muli %tid, %c8 : index
      %t0 = nvgpu.device_async_copy %src[%d], %s[%d], 8 : memref<?xf16, {G}> to memref<256xf16, {W}>
      %g0 = nvgpu.device_async_create_group %t0
      {"nvgpu.device_async_wait %g0 {numGroups = 0 : i32}" if wait else ""}
      {"gpu.barrier" if barrier else ""}
      {reader}
      memref.store %v, %out[%tid] : memref<?xf16, {G}>
      gpu.return
    }}
  }}
}}"""


@pytest.mark.parametrize("read", ["ldmatrix", "vector"])
def test_ldmatrix_and_vector_loads_of_a_copy_in_flight_are_races(read):
    src = (np.arange(256) % 100).astype(np.float16)
    out = np.zeros(32, np.float16)
    Interpreter(_ldmatrix_after_copy(True, True, read)).run("x", 1, 32, [src, out])
    # ldmatrix: lane l gets word l % 4 of row l >> 2 (row r: thread r's 8 elements); vector: its own
    want = src[8 * (np.arange(32) >> 2) + 2 * (np.arange(32) % 4)] if read == "ldmatrix" else src[8 * np.arange(32)]
    np.testing.assert_array_equal(out, want)
    with pytest.raises(KerncRuntimeError, match=r"thread 0 loads index 0 \(at loc\(\"-\":\d+:\d+\)\) while a "
                                                r"cp.async to it \(nvgpu.device_async_copy at loc"):
        Interpreter(_ldmatrix_after_copy(False, False, read)).run("x", 1, 32, [src, np.zeros(32, np.float16)])
    # waited but no barrier: ldmatrix's rows go to other lanes than the copying one (vector.load: its own)
    if read == "ldmatrix":
        with pytest.raises(KerncRuntimeError, match=r"thread 0 stored to index 0 and the warp of threads 0-31 loads "
                                                    r"it .* the store by thread 0 at loc\(\"-\":8:13\), retired at"):
            Interpreter(_ldmatrix_after_copy(True, False, read)).run("x", 1, 32, [src, np.zeros(32, np.float16)])


def _copy_then_store(where: str, width: int = 1, offset: int = 0) -> str:
    """256 threads: thread t cp.asyncs ``width`` f32 from src[width*t + offset] to s[width*t +
    offset] and then stores 0 to src[t] (``where``: "before" the wait that retires the copy,
    "after" it, or "none"), then reads s[width*t + offset] into out[t]."""
    store = f"memref.store %z, %src[%tid] : memref<?xf32, {G}>"
    return f"""
module attributes {{gpu.container_module}} {{
  gpu.module @kernels {{
    gpu.func @x(%src: memref<?xf32, {G}>, %out: memref<?xf32, {G}>) workgroup(%s : memref<1040xf32, {W}>) kernel {{
      %z = arith.constant 0.0 : f32
      %cw = arith.constant {width} : index
      %co = arith.constant {offset} : index
      %tid = gpu.thread_id x
      %d0 = arith.muli %tid, %cw : index
      %d = arith.addi %d0, %co : index
      %t0 = nvgpu.device_async_copy %src[%d], %s[%d], {width} : memref<?xf32, {G}> to memref<1040xf32, {W}>
      %g0 = nvgpu.device_async_create_group %t0
      {store if where == "before" else ""}
      nvgpu.device_async_wait %g0 {{numGroups = 0 : i32}}
      {store if where == "after" else ""}
      %v = memref.load %s[%d] : memref<1040xf32, {W}>
      memref.store %v, %out[%tid] : memref<?xf32, {G}>
      gpu.return
    }}
  }}
}}"""


def test_writing_the_source_of_a_copy_in_flight_is_a_race():
    """PTX leaves open when cp.async reads its source: a store to it before the wait that retires
    the copy is reported (by any thread), one after it is not."""
    src = np.arange(1024, dtype=np.float32) + 0.5
    out = np.zeros(256, np.float32)
    Interpreter(_copy_then_store("after")).run("x", 1, 256, [src.copy(), out])
    np.testing.assert_array_equal(out, src[:256])
    with pytest.raises(KerncRuntimeError, match=r"data race on buffer 'arg0': thread 0 stores to index 0 "
                                                r"\(at loc\(\"-\":13:7\)\) while the cp.async \(nvgpu.device_async_copy "
                                                r"at loc\(\"-\":11:13\)\) that reads it is in flight"):
        Interpreter(_copy_then_store("before")).run("x", 1, 256, [src.copy(), out])
    # 4-element copies: every source element of a copy in flight counts
    with pytest.raises(KerncRuntimeError, match=r"thread 0 stores to index 0 .* while the cp.async"):
        Interpreter(_copy_then_store("before", width=4)).run("x", 1, 256, [src.copy(), out])


@pytest.mark.parametrize("width, offset, ok", [(1, 1, True), (2, 0, True), (4, 0, True), (2, 1, False),
                                               (4, 2, False)])
def test_cp_async_addresses_must_be_aligned_to_the_copy_size(width, offset, ok):
    src = np.arange(1100, dtype=np.float32) + 0.5
    out = np.zeros(256, np.float32)
    text = _copy_then_store("none", width, offset)
    if ok:
        Interpreter(text).run("x", 1, 256, [src, out])
        np.testing.assert_array_equal(out, src[width * np.arange(256) + offset])
        return
    with pytest.raises(KerncRuntimeError, match=rf"nvgpu.device_async_copy \(at loc\(\"-\":11:13\)\): thread 0 "
                                                rf"copies {4 * width} bytes with a destination address \(index "
                                                rf"{offset} of workgroup buffer 'workgroup0'\) that is not "
                                                rf"{4 * width}-byte aligned"):
        Interpreter(text).run("x", 1, 256, [src, out])
