"""The compile cache: gpu IR + kernel signatures per source, PTX per target, in memory and on disk.

Two kinds of entry, each immutable once written:

- ``gpu``: keyed by :func:`front_key` (the source text, its file name -- it is in the IR's debug
  locations --, the ``includes`` it reads, the selected kernels and :func:`compiler_id`). The payload
  holds the kern IR and gpu IR text (with debug info), whether the program calls libdevice math and
  the kernel signatures, so a warm start runs neither the frontend nor the kern passes.
- ``ptx``: keyed by :func:`ptx_key` (a ``gpu`` key plus arch, opt level, the
  :class:`~kernc.backend.variant.Variant` and :func:`libdevice_id`). The payload is the PTX text.

Entries live in a bounded in-process LRU and, one file per entry, under :func:`cache_dir`
(``$KERNC_CACHE_DIR``, else ``platformdirs.user_cache_dir("kernc")``). ``KERNC_ALWAYS_COMPILE=1``
turns the whole cache off (nothing is read or written).

On disk an entry is ``HEADER | payload`` where the header holds a magic with the format version, the
entry kind, the 32-byte key, the payload length and the payload's SHA-256. A file that is truncated,
corrupt, empty, of another kind or format, or stored under the wrong name is ignored (a miss) and
overwritten by the next successful compile; no cache problem ever reaches the user as an exception.
Writes go to a new temporary file in the same folder that is then renamed over the entry, so
readers never see a partial file and concurrent writers of one entry are safe (both write the same
bytes; the last rename wins); temporary files that a killed writer left are removed after
:data:`STALE_TEMPORARY_SECONDS`. The folder is created ``0o700`` and files ``0o600``.

Safety (nothing read from the folder may be someone else's): the cache root must be private to this
user as :mod:`kernc.support.private_dirs` defines it (checked step by step as it is opened, symbolic links
and their owners included) and ``v1/`` a real folder of this user that others cannot write to;
otherwise the disk cache is off. The entries folder is then held open, and every entry is opened,
created and renamed relative to that descriptor (``openat``/``renameat``), so a long-lived process
keeps using the folder it checked whatever later happens to its path. An entry is read only when
what was opened (``O_NOFOLLOW``, ``O_NONBLOCK``; ``fstat``) is a regular file owned by this user and
not writable by group or others.

This module imports nothing heavy (no MLIR, no numpy): ``kernc compile`` checks the cache before it
loads the compiler.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import threading
import time
from collections import OrderedDict

from kernc.support import private_dirs, version

from .variant import Variant

#: Bump when the entry layout or the payload schema changes (it is part of every key and header).
FORMAT_VERSION = 1
MAGIC = b"KERNCC%02d" % FORMAT_VERSION  # 8 bytes
_HEADER = struct.Struct("<8s8s32sQ32s")  # magic, kind, key, payload length, sha256(payload)
#: Entries larger than this are not read back (a guard against a bogus length or a huge file).
MAX_ENTRY_BYTES = 256 * 1024 * 1024
#: In-memory entries kept (least recently used dropped first), and their total text size limit.
MEMORY_ENTRIES = 512
MEMORY_BYTES = 64 * 1024 * 1024
#: The subfolder of :func:`cache_dir` that holds the entries of this format.
SUBDIR = f"v{FORMAT_VERSION}"
KINDS = ("gpu", "ptx")

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

_lock = threading.Lock()
_memory: OrderedDict = OrderedDict()  # (kind, key) -> (payload, size)
_memory_bytes = 0
_ready_dirs: dict = {}


# -- switches and location -------------------------------------------------------------------------
def enabled() -> bool:
    """False when ``KERNC_ALWAYS_COMPILE`` is set to anything but ``""``/``"0"``: no cache at all."""
    return os.environ.get("KERNC_ALWAYS_COMPILE", "").strip() in ("", "0")


def cache_dir() -> str:
    """The cache's root folder: ``$KERNC_CACHE_DIR`` if set, else the platform's user cache folder
    for ``kernc`` (``~/.cache/kernc`` on Linux). Entries go to the ``v<FORMAT_VERSION>`` subfolder."""
    env = os.environ.get("KERNC_CACHE_DIR")
    if env:
        return os.path.abspath(os.path.expanduser(env))
    import platformdirs

    return platformdirs.user_cache_dir("kernc")


_UNSEEN = object()  # a folder not looked at yet (None: looked at, not usable)


class _Folder:
    """The entries folder, opened once: every entry is opened, created and renamed relative to its
    file descriptor (``fd``), so the process keeps using the folder it checked even if its path is
    later made to lead elsewhere. ``fd`` is ``None`` without POSIX owners (Windows): ``path`` is
    used and only the folder's ACLs protect it."""

    def __init__(self, path: str, fd: int | None):
        self.path, self.fd = path, fd
        self.swept = False  # stale temporary files removed (on the first write)

    def at(self, name: str) -> tuple:
        """``(name, {"dir_fd": fd})`` for the ``os`` calls, or the joined path where there is no fd."""
        return (name, {"dir_fd": self.fd}) if self.fd is not None else (os.path.join(self.path, name), {})

    def gone(self) -> bool:
        """The folder was deleted since it was opened (``rm -r`` of the cache): look it up again."""
        if self.fd is None:
            return False
        try:
            return os.fstat(self.fd).st_nlink == 0
        except OSError:
            return True

    def __del__(self):
        # closed when the last user lets go (not by reset(): a thread may still be using it)
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass


def _entries_dir() -> _Folder | None:
    """The entries folder, checked and created (``0o700``) on first use and held open; ``None`` when
    it cannot be used safely. Checked once per process and cache root (:func:`reset` forgets), and
    again when the folder was deleted meanwhile."""
    folder = os.path.join(cache_dir(), SUBDIR)
    with _lock:
        held = _ready_dirs.get(folder, _UNSEEN)
        if held is _UNSEEN or (held is not None and held.gone()):
            _ready_dirs.clear()  # only the current folder stays open (KERNC_CACHE_DIR may change)
            held = _ready_dirs[folder] = _open_entries_dir(folder)
    return held


def _open_entries_dir(folder: str) -> _Folder | None:
    """Open (making them if missing) the cache root and its entries folder ``folder`` when both are
    private to this user (:mod:`kernc.support.private_dirs`: checked step by step on the way there, symbolic
    links and their owners included); ``None`` otherwise."""
    root = os.path.dirname(folder)
    if not hasattr(os, "getuid"):  # Windows: the folders' ACLs apply
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError:
            return None
        return _Folder(folder, None) if os.path.isdir(folder) else None
    root_fd = private_dirs.open_private_dir(root, create=True)  # None without openat: no disk cache
    if root_fd is None:
        return None  # others could replace our folder or plant entries (README, "Compile cache")
    try:
        try:
            os.mkdir(SUBDIR, 0o700, dir_fd=root_fd)
            made = True
        except FileExistsError:
            made = False
        fd = os.open(SUBDIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root_fd)
    except OSError:
        return None  # a symlink, a file or a FIFO planted where our folder should be, or no access
    finally:
        os.close(root_fd)
    try:
        if made:
            os.fchmod(fd, 0o700)  # mkdir's mode is reduced by the umask; be exact
        if private_dirs.mine_and_private(os.fstat(fd)):
            return _Folder(folder, fd)
    except OSError:
        pass
    os.close(fd)
    return None


# -- keys ------------------------------------------------------------------------------------------
def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _file_stamp(path: str | None):
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return [path, None]
    return [path, st.st_size, st.st_mtime_ns]


_ids: dict = {}


def _memo(name, fn):
    if name not in _ids:
        _ids[name] = fn()
    return _ids[name]


def source_fingerprint() -> str:
    """A digest of kernc's own source files (path, size, mtime of every ``.py``/``.lark`` file of the
    ``kernc`` package and its subpackages), so that a development checkout whose passes or frontend
    changed without a version bump never serves entries made by the old code. Computed once per
    process."""

    def compute():
        import importlib.util

        stamps = []
        for name in ("kernc", "kernc.support", "kernc.frontend", "kernc.dialect", "kernc.passes", "kernc.backend"):
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            dirs = list(spec.submodule_search_locations or []) if spec else []
            for d in dirs:
                try:
                    names = sorted(os.listdir(d))
                except OSError:
                    continue
                for f in names:
                    if f.endswith((".py", ".lark")):
                        stamps.append([name, f] + (_file_stamp(os.path.join(d, f)) or [])[1:])
        return _digest(stamps)

    return _memo("sources", compute)


def mlir_build_id() -> list:
    """Which MLIR bindings kernc will load and which build they are, without importing them.

    Mirrors ``kernc.mlir``'s choice (an upstream ``mlir`` package unless ``KERNC_MLIR`` is
    ``numba-cuda-mlir``, else the bindings bundled in ``numba-cuda-mlir``) and returns the
    distribution, its version (from its ``.dist-info`` folder name) and the size and mtime of each
    bundled shared library (a rebuilt wheel with the same version still changes the key)."""

    def compute():
        import importlib.util

        choice = None
        if os.environ.get("KERNC_MLIR") != "numba-cuda-mlir":
            try:
                spec = importlib.util.find_spec("mlir")
            except (ImportError, ValueError):
                spec = None
            if spec is not None and spec.submodule_search_locations:
                choice = ("mlir", list(spec.submodule_search_locations)[0], "_mlir_libs")
        if choice is None:
            try:
                spec = importlib.util.find_spec("numba_cuda_mlir")
            except (ImportError, ValueError):
                spec = None
            if spec is None or not spec.submodule_search_locations:
                return ["none"]
            choice = ("numba_cuda_mlir", list(spec.submodule_search_locations)[0],
                      os.path.join("_mlir", "_mlir_libs"))
        dist, pkg_dir, libs = choice
        version = None
        parent = os.path.dirname(pkg_dir)
        try:
            for f in sorted(os.listdir(parent)):
                name, _, rest = f[: -len(".dist-info")].partition("-")
                if f.endswith(".dist-info") and name.lower().replace(".", "_").replace("-", "_") == dist:
                    version = rest
                    break
        except OSError:
            pass
        stamps = []
        libdir = os.path.join(pkg_dir, libs)
        try:
            for f in sorted(os.listdir(libdir)):
                if ".so" in f or f.endswith((".dylib", ".dll", ".pyd")):
                    stamps.append(_file_stamp(os.path.join(libdir, f)))
        except OSError:
            pass
        return [dist, pkg_dir, version, _digest(stamps)]

    return _memo("mlir", compute)


def libdevice_id() -> list | None:
    """Path, size and mtime of the ``libdevice.10.bc`` kernc would link (``None`` if there is none).
    Computed once per process."""

    def compute():
        from kernc.backend import toolkit

        return _file_stamp(toolkit.libdevice_path())

    return _memo("libdevice", compute)


def compiler_id() -> dict:
    """Everything about the compiler that an entry depends on: cache format, kernc version, kernc's
    source fingerprint and the MLIR build."""
    return {
        "format": FORMAT_VERSION,
        "kernc": version.__version__,
        "sources": source_fingerprint(),
        "mlir": mlir_build_id(),
    }


def front_key(source: str, filename: str = "<string>", kernels=None, includes=()) -> str:
    """The key (64 hex digits) of the ``gpu`` entry of ``source``.

    ``filename`` is part of the key because the IR's debug locations name it. ``kernels`` is the
    kernel selection (``None``: all). ``includes`` is a sequence of ``(name, text)`` pairs for files
    the source reads (the language has none yet; an include's content changes the key)."""
    return _digest({
        "kind": "gpu",
        "compiler": compiler_id(),
        "source": hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest(),
        "filename": filename,
        "kernels": list(kernels) if kernels is not None else None,
        "includes": [[name, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()]
                     for name, text in includes],
    })


def option_includes(*, arch: str | None = None, coalesce: bool = True, fmad: bool = False, tile: bool = True,
                    shared: bool = True, tensor_cores: bool = True, privatize: bool = True,
                    group_registers: bool = True, wgmma: bool = False,
                    async_copy: bool = True, tma: bool = False, tma_stages: int = 2,
                    rolled_staging: bool = False, dynamic_shared_memory: bool = True,
                    wgmma_mn_major: bool = True) -> tuple:
    """The compile options that can change the gpu IR *or the diagnostics* of a compile (its errors:
    a ``gpu`` entry means "this source compiled with these options"), as ``includes`` pairs of
    :func:`front_key`. Each flag is the option as the user gave it, not what it amounts to on
    ``arch``: ``@tensor_cores`` is an error on ``sm_75`` without ``--no-tensor-cores`` and not with
    it, though both build the same IR. ``arch`` (the exact target; ``None``: not part of the key) is
    in the key because the passes decide by it (tensor cores, ``cp.async``, ``wgmma``) and their
    errors name it. ``wgmma``/``tma``: the options as given (``CompileOptions`` defaults
    ``wgmma=True``); ``tma_stages`` when not the default 2; ``rolled_staging``: the 64-bit index build
    of tensor-core kernels (``Compilation.wide_index``); ``dynamic_shared_memory``: off, 48 KiB of
    static workgroup memory at most (kern-dynamic-workgroup-memory; the dynamic buffer's bytes are in
    the cached signatures); ``wgmma_mn_major``: off (``--no-wgmma-mn-major``, every wgmma tile
    K-major). Empty for the defaults without ``arch``."""
    return ((() if arch is None else (("--arch", str(arch)),))
            + (() if coalesce else (("--no-coalesce", ""),))
            + ((("--fmad", ""),) if fmad else ())
            + (() if tile else (("--no-tile", ""),))
            + (() if shared else (("--no-shared", ""),))
            + (() if tensor_cores else (("--no-tensor-cores", ""),))
            + (() if privatize else (("--no-privatize", ""),))
            + (() if group_registers else (("--no-group-registers", ""),))
            + ((("--wgmma", ""),) if wgmma else ())
            + (() if async_copy else (("--no-async-copy", ""),))
            + ((("--tma", ""),) if tma else ())
            + (() if tma_stages == 2 else (("--tma-stages", str(tma_stages)),))
            + ((("rolled-staging", ""),) if rolled_staging else ())
            + (() if dynamic_shared_memory else (("--no-dynamic-shared-memory", ""),))
            + (() if wgmma_mn_major else (("--no-wgmma-mn-major", ""),)))


def ptx_key(front: str, arch: str, opt_level: int, variant: Variant | int) -> str:
    """The key of the ``ptx`` entry for the program of ``gpu`` key ``front`` compiled for ``arch``
    at LLVM ``opt_level`` as ``variant`` (a :class:`~kernc.backend.variant.Variant`, or an index
    width for the general variant at that width, ``Variant(index_bits)``); libdevice is part of it.
    A program compiled without kern-coalesce-views has a ``front`` key of its own, so
    ``Compilation`` keys its PTX with ``staged=True``. ``ValueError`` for an index width other than
    32 or 64."""
    if not isinstance(variant, Variant):
        variant = Variant(variant)
    fields = {
        "kind": "ptx",
        "front": front,
        "arch": arch,
        "opt_level": int(opt_level),
        "index_bits": int(variant.index_bits),
        "align": variant.align,
        "libdevice": libdevice_id(),
    }
    # only when set: the keys of the general variant stay as they were
    if variant.nonneg_scalars:
        fields["nonneg_scalars"] = True
    if not variant.staged:
        fields["staged"] = False
    return _digest(fields)


# -- entries ---------------------------------------------------------------------------------------
def entry_name(kind: str, key: str) -> str:
    """The file name of the ``kind`` entry of ``key`` in the entries folder."""
    return f"{kind}-{key}.kc"


def entry_path(kind: str, key: str) -> str | None:
    """Where the ``kind`` entry of ``key`` lives on disk (``None`` when the disk cache is unusable).
    For display: the cache opens entries relative to the folder it checked, never by this path."""
    folder = _entries_dir()
    return os.path.join(folder.path, entry_name(kind, key)) if folder else None


def encode(kind: str, key: str, payload: dict) -> bytes:
    """The on-disk bytes of an entry: header (magic, kind, key, length, checksum) then JSON."""
    body = json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8", "surrogatepass")
    head = _HEADER.pack(MAGIC, kind.encode().ljust(8, b"\0"), bytes.fromhex(key), len(body),
                        hashlib.sha256(body).digest())
    return head + body


def decode(kind: str, key: str, data: bytes) -> dict | None:
    """The payload of an entry's bytes, or ``None`` when they are not a valid ``kind`` entry for
    ``key`` (wrong magic or format, other kind or key, bad length or checksum, not a JSON object or
    nested too deeply to read)."""
    if len(data) < _HEADER.size:
        return None
    magic, k, digest, length, checksum = _HEADER.unpack_from(data)
    body = data[_HEADER.size:]
    if (magic != MAGIC or k != kind.encode().ljust(8, b"\0") or digest != bytes.fromhex(key)
            or length != len(body) or hashlib.sha256(body).digest() != checksum):
        return None
    try:
        payload = json.loads(body.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python recurses
        return None
    return payload if isinstance(payload, dict) else None


def _payload_size(payload: dict) -> int:
    def size(v):
        if isinstance(v, str):
            return len(v)
        if isinstance(v, list):
            return sum(size(x) for x in v)
        return 8
    return sum(size(v) for v in payload.values())


def _remember(kind: str, key: str, payload: dict) -> None:
    global _memory_bytes
    size = _payload_size(payload)
    with _lock:
        old = _memory.pop((kind, key), None)
        if old is not None:
            _memory_bytes -= old[1]
        _memory[(kind, key)] = (payload, size)
        _memory_bytes += size
        while len(_memory) > 1 and (len(_memory) > MEMORY_ENTRIES or _memory_bytes > MEMORY_BYTES):
            _memory_bytes -= _memory.popitem(last=False)[1][1]


def _read_entry(folder: _Folder, name: str) -> bytes | None:
    """The bytes of entry file ``name`` in ``folder`` if it is a regular file of at most
    :data:`MAX_ENTRY_BYTES` owned by this user and not writable by group or others, else ``None``
    (``OSError`` when it cannot be opened)."""
    path, at = folder.at(name)
    # O_NOFOLLOW: a symlink planted as an entry is not followed; O_NONBLOCK: a FIFO planted as an
    # entry does not block the open (fstat rejects it below)
    fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC | _O_NONBLOCK, **at)
    try:
        st = os.fstat(fd)  # of what was opened, not of what the name means by now
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
            return None
        if folder.fd is not None and not private_dirs.mine_and_private(st):
            return None  # not written by us, or others could have changed it
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(MAX_ENTRY_BYTES + 1)
    finally:
        os.close(fd)


def get(kind: str, key: str, require=()) -> dict | None:
    """The payload of the ``kind`` entry ``key`` (memory first, then disk), or ``None`` on a miss,
    when the cache is disabled, or when the entry is invalid or lacks one of the ``require`` fields.
    Never raises for a cache problem."""
    if not enabled():
        return None
    with _lock:
        held = _memory.get((kind, key))
        if held is not None:
            _memory.move_to_end((kind, key))
            return held[0]
    try:
        folder = _entries_dir()
        if folder is None:
            return None
        data = _read_entry(folder, entry_name(kind, key))
    except (OSError, ValueError):
        return None
    payload = decode(kind, key, data) if data is not None else None
    if payload is None or any(field not in payload for field in require):
        return None
    _remember(kind, key, payload)
    return payload


#: A temporary file older than this (seconds) was left by a writer that was killed: deleted.
STALE_TEMPORARY_SECONDS = 3600


def _temporary_name(kind: str) -> str:
    return f".{kind}-{os.urandom(8).hex()}.tmp"


def _is_temporary_name(name: str) -> bool:
    """A name :func:`_temporary_name` makes (``.ptx-<16 hex digits>.tmp``), or one that the
    ``tempfile.mkstemp`` of earlier versions made (``.ptx-<8 of [a-z0-9_]>.tmp``)."""
    kind, dash, rest = name[1:].partition("-")
    if not (name.startswith(".") and dash == "-" and kind in KINDS and rest.endswith(".tmp")):
        return False
    rand = rest[:-4]
    return ((len(rand) == 16 and all(c in "0123456789abcdef" for c in rand))
            or (len(rand) == 8 and all(c in "abcdefghijklmnopqrstuvwxyz0123456789_" for c in rand)))


def _sweep_temporaries(folder: _Folder) -> None:
    """Delete the temporary files that writers killed mid-write (``kill -9``, a crash) left behind,
    once per process and folder, on its first write: a temporary file of ours older than
    :data:`STALE_TEMPORARY_SECONDS`. Other files are never touched."""
    if folder.swept:
        return
    folder.swept = True
    limit = time.time() - STALE_TEMPORARY_SECONDS
    try:
        with os.scandir(folder.fd if folder.fd is not None else folder.path) as it:
            for entry in it:
                if not _is_temporary_name(entry.name):
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode) and st.st_mtime < limit and (
                            folder.fd is None or private_dirs.mine_and_private(st)):
                        path, at = folder.at(entry.name)
                        os.unlink(path, **at)
                except OSError:
                    continue
    except OSError:
        pass


def _write_entry(folder: _Folder, kind: str, name: str, data: bytes) -> None:
    """Write ``data`` as entry ``name`` atomically: a new temporary file (``O_EXCL``, ``0o600``) in
    ``folder``, renamed over the entry, both relative to the folder's descriptor. The temporary file
    is removed on any failure (``OSError`` is raised then)."""
    tmp = _temporary_name(kind)
    tmp_path, at = folder.at(tmp)
    fd = os.open(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600, **at)
    try:
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o600)  # the umask could have reduced it further (harmless, but be exact)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        dst, _ = folder.at(name)
        renames = {"src_dir_fd": folder.fd, "dst_dir_fd": folder.fd} if folder.fd is not None else {}
        try:
            os.replace(tmp_path, dst, **renames)
        except IsADirectoryError:  # an empty folder where the entry belongs: not ours, so replaced
            os.rmdir(dst, **at)  # (a folder with files in it stays: OSError, the entry is not written)
            os.replace(tmp_path, dst, **renames)
    except BaseException:  # never leave the temporary file behind
        try:
            os.unlink(tmp_path, **at)
        except OSError:
            pass
        raise


def put(kind: str, key: str, payload: dict) -> None:
    """Store an entry in memory and (atomically, ``0o600``) on disk. Errors (a read-only or full
    disk, an unusable folder) only lose the disk copy; they are never raised."""
    if not enabled():
        return
    _remember(kind, key, payload)
    try:
        data = encode(kind, key, payload)
        folder = _entries_dir()
        if folder is None:
            return
        _sweep_temporaries(folder)
        _write_entry(folder, kind, entry_name(kind, key), data)
    except (OSError, ValueError, TypeError):
        return


def clear_memory() -> None:
    """Forget the in-memory entries (the disk cache is kept)."""
    global _memory_bytes
    with _lock:
        _memory.clear()
        _memory_bytes = 0


def reset() -> None:
    """Forget in-memory entries, the per-process identities (sources, MLIR build, libdevice) and
    which folders were checked; the next use recomputes them (for tests and long-lived tools)."""
    clear_memory()
    _ids.clear()
    with _lock:
        _ready_dirs.clear()


# -- the fast path of ``kernc compile`` -------------------------------------------------------------
def lookup_ptx(source: str, filename: str, *, arch: str, opt_level: int, index_bits: int,
               kernels=None, fmad: bool = False) -> str | None:
    """The cached PTX of ``source`` for these options, or ``None``; imports no compiler module.

    A hit implies the options were valid and the program compiled when the entry was made."""
    if not enabled():
        return None
    try:
        # the defaults of every other option (the CLI takes this path only then), as the raw options
        # Compilation keys them with: arch, wgmma=True
        includes = option_includes(arch=arch, fmad=fmad, wgmma=True)
        key = ptx_key(front_key(source, filename, kernels, includes=includes),
                      arch, opt_level, index_bits)
    except Exception:  # noqa: BLE001 - a cache problem must never reach the user
        return None
    payload = get("ptx", key, require=("ptx",))
    ptx = payload.get("ptx") if payload else None
    return ptx if isinstance(ptx, str) else None


__all__ = [
    "enabled", "cache_dir", "front_key", "option_includes", "ptx_key", "compiler_id", "source_fingerprint",
    "mlir_build_id", "libdevice_id", "get", "put", "encode", "decode", "entry_path", "entry_name",
    "clear_memory", "reset", "lookup_ptx", "FORMAT_VERSION", "KINDS",
]
