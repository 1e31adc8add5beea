"""The compile cache (``kernc.backend.cache``): keys, hits and misses, the disk format's validation,
permissions, the kill switch, and that a hit gives the same PTX and the same results."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import threading

import numpy as np
import pytest

from conftest import EXAMPLES, example_reference
from kernc.backend import cache

SAXPY_FILE = os.path.join(EXAMPLES, "saxpy.kern")
PARTICLES_FILE = os.path.join(EXAMPLES, "particles.kern")
SAXPY = open(SAXPY_FILE).read()
TWO_KERNELS = SAXPY + """
kernel scale(a: f32, y: f32[n] write) over n {
    y = a;
}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Each test gets an empty cache folder and an empty in-memory cache."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("KERNC_CACHE_DIR", str(folder))
    monkeypatch.delenv("KERNC_ALWAYS_COMPILE", raising=False)
    cache.reset()
    yield folder
    cache.reset()


def entries(folder, kind=None):
    """Entry files on disk (``kind``: only ``gpu`` or ``ptx`` ones)."""
    sub = folder / cache.SUBDIR
    if not sub.is_dir():
        return []
    return sorted(p for p in sub.iterdir() if p.suffix == ".kc" and (kind is None or p.name.startswith(kind + "-")))


def compile_(text=SAXPY, filename="saxpy.kern", **opts):
    from kernc.compiler import Compilation, CompileOptions

    return Compilation(text, filename, CompileOptions(**opts))


@pytest.fixture
def count_ptx(monkeypatch):
    """Counts how often PTX is really generated (``extract_ptx`` runs after the NVPTX backend)."""
    import kernc.compiler as compiler

    calls = []
    real = compiler.extract_ptx

    def counting(module):
        calls.append(1)
        return real(module)

    monkeypatch.setattr(compiler, "extract_ptx", counting)
    return calls


# -- keys ------------------------------------------------------------------------------------------
def test_front_key_depends_on_every_input():
    base = cache.front_key(SAXPY, "a.kern", None)
    assert base == cache.front_key(SAXPY, "a.kern", None)
    assert len(base) == 64 and int(base, 16) >= 0
    others = {
        cache.front_key(SAXPY + " ", "a.kern", None),
        cache.front_key(SAXPY, "b.kern", None),
        cache.front_key(SAXPY, "a.kern", ("saxpy",)),
        cache.front_key(SAXPY, "a.kern", None, includes=[("inc.kern", "x")]),
        cache.front_key(SAXPY, "a.kern", None, includes=[("inc.kern", "y")]),
    }
    assert base not in others and len(others) == 5


def test_ptx_key_depends_on_every_option():
    front = cache.front_key(SAXPY)
    base = cache.ptx_key(front, "sm_90", 3, 32)
    others = {
        cache.ptx_key(cache.front_key(SAXPY + "\n"), "sm_90", 3, 32),
        cache.ptx_key(front, "sm_80", 3, 32),
        cache.ptx_key(front, "sm_90", 2, 32),
        cache.ptx_key(front, "sm_90", 3, 64),
    }
    assert base not in others and len(others) == 4


@pytest.mark.parametrize("component", ["kernc", "sources", "mlir", "libdevice"])
def test_compiler_identity_is_in_the_key(component, monkeypatch):
    from kernc.support import version

    front = cache.front_key(SAXPY)
    ptx = cache.ptx_key(front, "sm_90", 3, 32)
    if component == "kernc":
        monkeypatch.setattr(version, "__version__", "999.0")  # kernc.__version__
    elif component == "libdevice":
        cache._ids["libdevice"] = ["/elsewhere/libdevice.10.bc", 1, 2]
    else:
        cache.compiler_id()  # fill the memo, then change one part
        cache._ids[component] = ["changed"]
    front2 = cache.front_key(SAXPY)
    if component == "libdevice":
        assert front2 == front  # libdevice matters only from the LLVM stage on
    else:
        assert front2 != front
    assert cache.ptx_key(front2, "sm_90", 3, 32) != ptx


def test_mlir_build_is_identified_without_importing_mlir():
    code = (
        "import sys; from kernc.backend import cache; b = cache.mlir_build_id(); cache.compiler_id(); "
        "cache.libdevice_id(); assert b[0] in ('mlir', 'numba_cuda_mlir'), b; "
        "assert not [m for m in sys.modules if 'mlir' in m and m != 'kernc.mlir' and 'cache' not in m], "
        "sorted(m for m in sys.modules if 'mlir' in m); assert 'kernc.mlir' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- hits and misses -------------------------------------------------------------------------------
def test_second_compile_is_a_hit_with_identical_artefacts(private_cache, count_ptx):
    first = compile_()
    assert not first.from_cache
    ptx = first.ptx()
    assert len(count_ptx) == 1
    assert len(entries(private_cache, "gpu")) == 1 and len(entries(private_cache, "ptx")) == 1

    second = compile_()
    assert second.from_cache
    assert second.ptx() == ptx and len(count_ptx) == 1  # PTX from the cache
    assert second.gpu_ir(debug_info=True) == first.gpu_ir(debug_info=True)
    assert second.gpu_ir() == first.gpu_ir()
    assert second.kern_ir() == first.kern_ir()
    assert second.ast() == first.ast()  # the AST is parsed lazily on a hit
    assert {k: v.to_json() for k, v in second.signatures.items()} == \
        {k: v.to_json() for k, v in first.signatures.items()}

    cache.clear_memory()  # now from disk
    third = compile_()
    assert third.from_cache and third.ptx() == ptx and len(count_ptx) == 1


@pytest.mark.parametrize("change", [
    {"text": SAXPY.replace("y += a * x", "y += a * x + 1.0")},
    {"filename": "other.kern"},
    {"arch": "sm_80"},
    {"opt_level": 2},
    {"index_bits": 64},
])
def test_changing_an_input_misses(change, count_ptx):
    compile_().ptx()
    assert len(count_ptx) == 1
    args = {"text": SAXPY, "filename": "saxpy.kern"}
    opts = {k: v for k, v in change.items() if k not in args}
    args.update({k: v for k, v in change.items() if k in args})
    comp = compile_(args["text"], args["filename"], **opts)
    comp.ptx()
    assert len(count_ptx) == 2
    # a change of source, file name or arch changes the gpu entry (the passes decide by the arch,
    # and their errors name it); the PTX options only the PTX
    assert comp.from_cache == (not ({"text", "filename", "arch"} & set(change)))


def test_kernel_selection_is_in_the_key():
    all_ = compile_(TWO_KERNELS, "two.kern")
    one = compile_(TWO_KERNELS, "two.kern", kernels=("scale",))
    assert not one.from_cache and set(one.signatures) == {"scale"} and set(all_.signatures) == {"saxpy", "scale"}
    assert compile_(TWO_KERNELS, "two.kern", kernels=("scale",)).from_cache


def test_ptx_per_index_width(count_ptx, private_cache):
    comp = compile_()
    p32, p64 = comp.ptx(32), comp.ptx(64)
    assert p32 != p64 and len(count_ptx) == 2
    again = compile_()
    assert again.ptx(64) == p64 and again.ptx(32) == p32 and len(count_ptx) == 2
    assert len(entries(private_cache, "ptx")) == 2


def test_errors_are_not_cached(private_cache):
    from kernc.support.errors import CompileError

    bad = "kernel k(x: f32[n] read, y: f32[n] write) over n { y = x + undefined; }"
    for _ in range(2):
        with pytest.raises(CompileError):
            compile_(bad, "bad.kern")
    with pytest.raises(CompileError):
        compile_(kernels=("nope",))
    assert entries(private_cache) == []


def test_disabled_by_environment(monkeypatch, private_cache, count_ptx):
    monkeypatch.setenv("KERNC_ALWAYS_COMPILE", "1")
    a, b = compile_(), compile_()
    assert a.ptx() == b.ptx()
    assert not a.from_cache and not b.from_cache and len(count_ptx) == 2
    assert not private_cache.exists()
    monkeypatch.setenv("KERNC_ALWAYS_COMPILE", "0")  # "0" means: cache on
    compile_()
    assert compile_().from_cache


def test_pass_hooks_and_use_cache_false_bypass_the_cache(private_cache):
    from kernc.compiler import Compilation

    compile_().ptx()
    seen = []
    hooked = Compilation(SAXPY, "saxpy.kern", after_pass=lambda name, text: seen.append(name))
    hooked.ptx()
    assert not hooked.from_cache and "cse" in seen and any("module-to-binary" in s for s in seen)
    assert not Compilation(SAXPY, "saxpy.kern", use_cache=False).from_cache


# -- what lands on disk ----------------------------------------------------------------------------
def test_permissions_are_user_only(private_cache):
    old = os.umask(0)
    try:
        compile_().ptx()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(private_cache).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(private_cache / cache.SUBDIR).st_mode) == 0o700
    files = entries(private_cache)
    assert len(files) == 2
    for f in files:
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o600
    assert not [p for p in (private_cache / cache.SUBDIR).iterdir() if p.suffix != ".kc"]  # no temp files


def _damage(path, how):
    data = path.read_bytes()
    if how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "header-only":
        path.write_bytes(data[:90])
    elif how == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif how == "flipped-payload-byte":
        b = bytearray(data)
        b[-10] ^= 0x20
        path.write_bytes(bytes(b))
    elif how == "old-format":
        path.write_bytes(b"KERNCC00" + data[8:])
    elif how == "appended":
        path.write_bytes(data + b"x")
    elif how == "empty-folder":  # found by a trial: never rewritten, a miss on every compile
        path.unlink()
        path.mkdir()
    elif how == "valid-json-wrong-fields":
        key = path.name.split("-", 1)[1][:-3]
        kind = path.name.split("-", 1)[0]
        path.write_bytes(cache.encode(kind, key, {"unexpected": 1}))
    elif how == "valid-json-wrong-types":
        key = path.name.split("-", 1)[1][:-3]
        kind = path.name.split("-", 1)[0]
        payload = {"ptx": 5} if kind == "ptx" else {"kern": 1, "gpu": [], "needs_libdevice": "no", "signatures": 3}
        path.write_bytes(cache.encode(kind, key, payload))
    elif how == "deeply-nested-json":  # found by the cache-folder trial: RecursionError escaped get()
        key = path.name.split("-", 1)[1][:-3]
        kind = path.name.split("-", 1)[0]
        deep = "[" * 100_000 + "]" * 100_000
        if kind == "ptx":
            body = deep.encode()
            path.write_bytes(cache._HEADER.pack(cache.MAGIC, b"ptx".ljust(8, b"\0"), bytes.fromhex(key),
                                                len(body), hashlib.sha256(body).digest()) + body)
        else:  # a well-formed entry whose signature text is nested too deeply
            path.write_bytes(cache.encode(kind, key, {"kern": "", "gpu": "", "signatures": [deep]}))
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("kind", ["gpu", "ptx"])
@pytest.mark.parametrize("how", ["empty", "truncated", "header-only", "garbage", "flipped-payload-byte",
                                 "old-format", "appended", "valid-json-wrong-fields", "valid-json-wrong-types",
                                 "empty-folder", "deeply-nested-json"])
def test_damaged_entries_are_ignored_and_rewritten(private_cache, kind, how, count_ptx):
    good = compile_()
    ptx = good.ptx()
    (path,) = entries(private_cache, kind)
    original = path.read_bytes()
    _damage(path, how)
    cache.clear_memory()
    again = compile_()
    assert again.from_cache == (kind == "ptx")
    assert again.ptx() == ptx
    assert len(count_ptx) == (2 if kind == "ptx" else 1)
    assert path.read_bytes() == original  # rewritten with the good entry
    cache.clear_memory()
    assert compile_().from_cache


def test_foreign_entry_under_our_name_is_ignored(private_cache):
    """An entry file (valid for its own key) copied under another key's name never answers."""
    mine_ptx = compile_().ptx()
    other_text = SAXPY.replace("y += a * x", "y += a * x + 2.0")
    other_ptx = compile_(other_text, "saxpy.kern").ptx()
    assert other_ptx != mine_ptx
    for kind in ("gpu", "ptx"):
        keys = []
        for text in (SAXPY, other_text):
            front = cache.front_key(text, "saxpy.kern", None,
                                    includes=cache.option_includes(arch="sm_90", wgmma=True))
            keys.append(front if kind == "gpu" else cache.ptx_key(front, "sm_90", 3, 32))
        mine, theirs = (private_cache / cache.SUBDIR / f"{kind}-{k}.kc" for k in keys)
        mine.write_bytes(theirs.read_bytes())
    cache.clear_memory()
    again = compile_()
    assert not again.from_cache
    assert again.ptx() == mine_ptx


def test_memory_is_bounded(monkeypatch):
    monkeypatch.setattr(cache, "MEMORY_BYTES", 1000)
    for i in range(5):
        cache.put("ptx", f"{i:064x}", {"ptx": "x" * 400})
    assert len(cache._memory) == 2 and cache._memory_bytes == 800
    monkeypatch.setattr(cache, "MEMORY_ENTRIES", 1)
    cache.put("ptx", "f" * 64, {"ptx": "y"})
    assert list(cache._memory) == [("ptx", "f" * 64)] and cache._memory_bytes == 1
    cache.clear_memory()
    assert cache.get("ptx", f"{0:064x}") == {"ptx": "x" * 400}  # still on disk


def test_wrong_kind_is_rejected():
    data = cache.encode("gpu", "ab" * 32, {"ptx": "x"})
    assert cache.decode("gpu", "ab" * 32, data) == {"ptx": "x"}
    assert cache.decode("ptx", "ab" * 32, data) is None
    assert cache.decode("gpu", "cd" * 32, data) is None


def test_unusable_folder_never_raises(tmp_path, monkeypatch):
    # a file where the folder should be
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    monkeypatch.setenv("KERNC_CACHE_DIR", str(blocker))
    cache.reset()
    a = compile_()
    assert a.ptx() and compile_().from_cache  # memory still works
    # a folder others can write to: the disk part is switched off
    shared = tmp_path / "shared"
    (shared / cache.SUBDIR).mkdir(parents=True)
    os.chmod(shared / cache.SUBDIR, 0o777)
    monkeypatch.setenv("KERNC_CACHE_DIR", str(shared))
    cache.reset()
    compile_().ptx()
    assert list((shared / cache.SUBDIR).iterdir()) == []
    # a root folder others can write to (they could swap our entries folder): not used either
    open_root = tmp_path / "open-root"
    open_root.mkdir()
    os.chmod(open_root, 0o777)
    monkeypatch.setenv("KERNC_CACHE_DIR", str(open_root))
    cache.reset()
    compile_().ptx()
    assert not (open_root / cache.SUBDIR).exists()
    # a private folder inside one that others can write to (they could swap the folder itself)
    inner = open_root / "inner"
    inner.mkdir(mode=0o700)
    monkeypatch.setenv("KERNC_CACHE_DIR", str(inner))
    cache.reset()
    compile_().ptx()
    assert not (inner / cache.SUBDIR).exists()
    # ... unless that one is sticky, like /tmp: then only the owner can rename what is in it
    os.chmod(open_root, 0o1777)
    cache.reset()
    compile_().ptx()
    assert (inner / cache.SUBDIR).is_dir() and list((inner / cache.SUBDIR).iterdir())
    # a read-only folder
    ro = tmp_path / "ro"
    (ro / cache.SUBDIR).mkdir(parents=True, mode=0o700)
    os.chmod(ro / cache.SUBDIR, 0o500)
    monkeypatch.setenv("KERNC_CACHE_DIR", str(ro))
    cache.reset()
    try:
        compile_().ptx()
    finally:
        os.chmod(ro / cache.SUBDIR, 0o700)


def test_entry_that_is_a_folder_or_symlink(private_cache):
    compile_().ptx()
    (path,) = entries(private_cache, "ptx")
    path.unlink()
    path.mkdir()
    cache.clear_memory()
    assert compile_().ptx()
    assert path.is_file()  # the empty folder was replaced by the entry
    path.unlink()
    target = private_cache / "elsewhere"
    target.write_bytes(b"x")
    path.symlink_to(target)
    cache.clear_memory()
    assert ".entry saxpy" in compile_().ptx()


def test_concurrent_writers_of_one_entry(private_cache):
    key = "ef" * 32
    payload = {"ptx": "P" * 200_000}
    errors = []

    def writer():
        try:
            for _ in range(20):
                cache.put("ptx", key, payload)
        except Exception as err:  # pragma: no cover - the test fails below
            errors.append(err)

    threads = [threading.Thread(target=writer) for _ in range(4)]
    procs = [subprocess.Popen([sys.executable, "-c",
                               "from kernc.backend import cache\n"
                               f"for _ in range(20): cache.put('ptx', '{key}', {{'ptx': 'P' * 200_000}})"])
             for _ in range(3)]
    for t in threads:
        t.start()
    seen = 0
    for _ in range(50):  # readers meanwhile: a miss or the whole entry, never a torn one
        cache.clear_memory()
        got = cache.get("ptx", key)
        assert got is None or got == payload
        seen += got is not None
    for t in threads:
        t.join()
    assert all(p.wait(timeout=60) == 0 for p in procs)
    assert not errors
    cache.clear_memory()
    assert cache.get("ptx", key) == payload
    assert [p.name for p in (private_cache / cache.SUBDIR).iterdir()] == [f"ptx-{key}.kc"]


# -- end to end ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["saxpy", "particles", "gather_scatter"])
def test_cache_hit_gives_identical_run_results(name):
    import kernc

    path = os.path.join(EXAMPLES, f"{name}.kern")
    ref = example_reference(name)
    results = []
    for attempt in range(3):
        if attempt == 2:
            cache.clear_memory()
        mod = kernc.compile_file(path)
        assert mod._compilation.from_cache == (attempt > 0)
        inputs = ref.make_inputs(777, np.random.default_rng(5))
        res = getattr(mod, name)(**inputs)
        results.append(({k: v.copy() for k, v in inputs.items() if isinstance(v, np.ndarray)},
                         res.stats.to_dict(), mod.ptx))
    for arrays, stats, ptx in results[1:]:
        assert ptx == results[0][2] and stats == results[0][1]
        for k, v in arrays.items():
            np.testing.assert_array_equal(v, results[0][0][k])


def test_cli_hit_is_identical_and_does_not_load_mlir(tmp_path, private_cache):
    env = dict(os.environ)
    out1, out2 = tmp_path / "1.ptx", tmp_path / "2.ptx"
    cmd = [sys.executable, "-m", "kernc", "compile", PARTICLES_FILE, "--arch", "sm_80"]
    subprocess.run(cmd + ["-o", str(out1)], check=True, env=env, timeout=300)
    probe = (
        "import sys; from kernc.cli import main; rc = main(sys.argv[1:]); "
        "assert rc == 0; assert 'kernc.mlir' not in sys.modules and 'kernc.compiler' not in sys.modules, "
        "'MLIR was imported on a cache hit'"
    )
    subprocess.run([sys.executable, "-c", probe, "compile", PARTICLES_FILE, "--arch", "sm_80", "-o", str(out2)],
                   check=True, env=env, timeout=300)
    assert out1.read_bytes() == out2.read_bytes()
    # other stages and other options still work and agree with an uncached compile
    env_off = dict(env, KERNC_ALWAYS_COMPILE="1")
    for extra in (["--emit", "gpu"], ["--emit", "ast"], ["--index-bits", "64"], ["--kernel", "particles"]):
        cached = subprocess.run([sys.executable, "-m", "kernc", "compile", PARTICLES_FILE, *extra],
                                capture_output=True, text=True, env=env, timeout=300)
        fresh = subprocess.run([sys.executable, "-m", "kernc", "compile", PARTICLES_FILE, *extra],
                               capture_output=True, text=True, env=env_off, timeout=300)
        assert cached.returncode == fresh.returncode == 0, cached.stderr + fresh.stderr
        assert cached.stdout == fresh.stdout


def test_cli_errors_unchanged_with_a_warm_cache(tmp_path):
    from kernc.cli import main

    assert main(["compile", SAXPY_FILE, "-o", str(tmp_path / "a.ptx")]) == 0
    with pytest.raises(SystemExit) as usage:  # a bad option value: argparse's usage error
        main(["compile", SAXPY_FILE, "--arch", "sm_1"])
    assert usage.value.code == 2
    assert main(["compile", SAXPY_FILE, "--kernel", "nope"]) == 1
    bad = tmp_path / "latin1.kern"
    bad.write_bytes(b"// caf\xe9\n")
    assert main(["compile", str(bad)]) == 1


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_in_the_cache_never_blocks(private_cache):
    """A FIFO planted as an entry blocked open() forever (the parser tables, once a FIFO target too,
    are no longer read from the cache folder: tests/cache/test_cache_folder_safety.py)."""
    compile_().ptx()
    (path,) = entries(private_cache, "ptx")
    path.unlink()
    os.mkfifo(path)
    cache.clear_memory()
    done = []
    worker = threading.Thread(target=lambda: done.append(compile_().ptx()), daemon=True)
    worker.start()
    worker.join(60)
    assert done and ".entry saxpy" in done[0]


def test_the_key_names_the_mlir_build_whether_or_not_mlir_is_loaded(tmp_path):
    """Found by a trial: kernc.mlir's stand-in package module had no __spec__, so once MLIR was
    loaded find_spec failed and the key's MLIR build became ['none'] (entries that survive an MLIR
    upgrade; the CLI's PTX fast path, keyed before MLIR loads, and the API never shared entries)."""
    import subprocess
    import sys

    probe = ("import json\n"
             "from kernc.backend import cache\n"
             "before = cache.mlir_build_id()\n"
             "import kernc.compiler\n"
             "cache._ids.clear()  # computed again, now with MLIR loaded\n"
             "print(json.dumps([before, cache.mlir_build_id()]))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env=dict(os.environ, KERNC_CACHE_DIR=str(tmp_path))).stdout
    before, after = json.loads(out)
    assert before != ["none"] and after == before


GEMM_F16_TC = open(os.path.join(EXAMPLES, "gemm_f16.kern")).read().replace("\nkernel gemm_f16", "\n@tensor_cores\nkernel gemm_f16")


def test_an_error_of_one_option_set_is_not_answered_by_another_sets_entry(tmp_path, private_cache):
    """A ``gpu`` entry says "this source compiled with these options": ``@tensor_cores`` on
    ``sm_75`` is an error, with ``--no-tensor-cores`` it is not; the same IR on that arch, but the
    error must come back after the second compile warmed the cache (it was served from the entry of
    ``--no-tensor-cores``, on CUDA cores)."""
    from kernc.cli import main
    from kernc.errors import CompileError

    src = tmp_path / "tc.kern"
    src.write_text(GEMM_F16_TC)
    out = str(tmp_path / "o.ptx")
    assert main(["compile", str(src), "--arch", "sm_75", "--emit", "gpu", "-o", out]) == 1
    assert main(["compile", str(src), "--arch", "sm_75", "--no-tensor-cores", "--emit", "gpu", "-o", out]) == 0
    assert main(["compile", str(src), "--arch", "sm_75", "--emit", "gpu", "-o", out]) == 1
    assert main(["compile", str(src), "--arch", "sm_75", "-o", out]) == 1  # the PTX fast path too
    # the API the same way
    with pytest.raises(CompileError, match="tensor"):
        compile_(GEMM_F16_TC, "tc.kern", arch="sm_75")
    assert compile_(GEMM_F16_TC, "tc.kern", arch="sm_75", tensor_cores=False).signatures
    with pytest.raises(CompileError, match="tensor"):
        compile_(GEMM_F16_TC, "tc.kern", arch="sm_75")


def test_the_gpu_key_holds_every_option_as_given():
    """Each option that can change the gpu IR or the diagnostics, as the user gave it, and the exact
    arch: distinct keys (not what the option amounts to on that arch)."""
    from kernc.compiler import CompileOptions

    keys = set()
    variants = [{}, {"arch": "sm_75"}, {"arch": "sm_75", "tensor_cores": False}, {"arch": "sm_80"},
                {"arch": "sm_86"}, {"arch": "sm_90a"}, {"tile": False}, {"coalesce": False}, {"fmad": True},
                {"shared": False}, {"tensor_cores": False}, {"privatize": False}, {"group_registers": False},
                {"wgmma": False}, {"async_copy": False}, {"tma": True},
                {"arch": "sm_75", "async_copy": False}, {"arch": "sm_80", "wgmma": False},
                {"arch": "sm_80", "tma": True}]
    for v in variants:
        comp = compile_(SAXPY, "saxpy.kern", **v)
        assert comp.options == CompileOptions(**v)
        keys.add(comp.cache_key)
    assert len(keys) == len(variants)
