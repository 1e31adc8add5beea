"""Writing kernc's outputs: files all or none, atomically, and the standard streams completely.

Every file kernc writes (``kernc compile -o``, the ``.npy`` outputs and ``--stats-json`` of
``kernc run``, ``kernc layout --svg``, the benchmark's ``--json``) goes through
:func:`write_all_atomically`: each output is first written in full to a temporary file next to it,
and only when every one is complete are they renamed into place, so a failure (a full disk, an
interrupt, a kill) leaves each path either as it was or complete, never half-written. Text for
standard output goes through :func:`write_stdout`, which writes all of it or raises (a reader that
left, ``kernc compile | head -1``; a non-blocking pipe), and :func:`quiet_stdout` silences a
standard output whose reader left.

Two rules keep output folders safe and clean:

- Every symbolic link along an output path (the final component, a folder on the way, each link
  a link points to) is followed only when it belongs to this user or to the owner of the folder
  holding it (as Linux's ``fs.protected_symlinks`` does in sticky world-writable folders such as
  ``/tmp``): a link another user planted at ``/tmp/out.ptx``, at ``/tmp/dir`` for ``-o
  /tmp/dir/out.ptx``, or that a link of ours points to, would make the write replace whatever
  file of ours it points to. Such a link is refused (``OSError``). The path is resolved link by
  link (:func:`_resolve`), and the write goes to the path so resolved.
- A run killed between writing a temporary file and renaming it leaves ``.kernc-XXXXXXXX.tmp``
  behind. The first write into a folder in a process removes the ones this user owns there that
  are older than :data:`STALE_TEMPORARY_SECONDS` (an hour, as the compile cache does: no write
  holds its temporary file that long).

Only the standard library is imported (``select`` when first needed).
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
import time

#: a temporary file of this module older than this (seconds) is left from a killed run
STALE_TEMPORARY_SECONDS = 3600
_TEMPORARY = re.compile(r"\.kernc-[A-Za-z0-9_]{8}\.tmp")
_swept: set = set()  # folders whose stale temporary files this process removed


def write_atomically(path: str, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and ``os.replace``,
    so ``path`` is either untouched or complete (never half-written on an error or interrupt).

    The file gets the mode an ordinary ``open(path, "w")`` would give it: an existing file keeps its
    mode, a new one gets ``0o666`` less the umask. A symlink of this user or of the folder's owner is
    written through (its target is replaced, the link stays), as ``open(path, "w")`` would; another
    user's is refused (see the module). A path that exists and is not a regular
    file (``/dev/null``, ``/dev/stdout``, a FIFO, a terminal) is written directly, never renamed
    over: there is no file to leave half-written, and replacing a device node would break it for
    everyone. ``/dev/stdout`` and ``/dev/stderr`` are the process's own streams, whatever they are
    redirected to (a shell's ``>> file`` keeps its contents). A file ``open(path, "w")`` may not
    write (read-only for this user) is refused, not replaced. Raises ``OSError`` naming ``path``.
    """
    write_all_atomically([(path, data)])


def write_all_atomically(items: list[tuple[str, str | bytes]]) -> None:
    """Write several files as :func:`write_atomically` does, all or none: every file is first
    written in full to its temporary file, and only when all of them are complete are they renamed
    into place. A run out of disk space on the last output leaves every ``path`` as it was (the
    temporary files are removed). Raises ``OSError`` naming the path that failed."""
    staged: list[_Staged] = []
    try:
        for path, data in items:
            staged.append(_stage(path, data.encode() if isinstance(data, str) else data))
    except BaseException:
        for st in staged:
            st.discard()
        raise
    for i, st in enumerate(staged):
        try:
            st.commit()
        except BaseException:
            for rest in staged[i + 1:]:
                rest.discard()
            raise


class _Staged:
    """One output of :func:`write_all_atomically` between writing and committing: a complete
    temporary file to rename over ``path``, or (``tmp`` ``None``) bytes written straight to a
    stream or special file at commit."""

    def __init__(self, shown: str, path: str, tmp: str | None, data: bytes | None = None,
                 stream: str | None = None):
        self.shown, self.path, self.tmp, self.data, self.stream = shown, path, tmp, data, stream

    def commit(self) -> None:
        if self.stream is not None:
            _write_stream(getattr(sys, self.stream), self.data)
        elif self.tmp is None:
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
                try:
                    _write_all(fd, self.data)
                finally:
                    os.close(fd)
            except BrokenPipeError:
                raise
            except OSError as err:
                raise OSError(f"cannot write '{self.shown}': {err.strerror or err}") from None
        else:
            try:
                os.replace(self.tmp, self.path)
            except OSError as err:
                self.discard()
                raise OSError(f"cannot write '{self.shown}': {err.strerror or err}") from None

    def discard(self) -> None:
        if self.tmp is not None:
            try:
                os.unlink(self.tmp)
            except OSError:
                pass


def _stage(path: str, data: bytes) -> _Staged:
    """Check ``path`` and write ``data`` to a temporary file next to it (see :func:`write_atomically`)."""
    shown = path
    stream = _STD_STREAMS.get(path)
    if stream is not None:
        return _Staged(shown, path, None, data, stream)
    problem = writable_problem(path)
    if problem is not None:
        raise OSError(f"cannot write '{shown}': {problem}")
    path, problem = _resolve(path)
    if problem is not None:
        raise OSError(f"cannot write '{shown}': {problem}")
    st = os.stat(path) if os.path.exists(path) else None  # (a pipe, a device, a file)
    if st is not None and not stat.S_ISREG(st.st_mode):
        return _Staged(shown, path, None, data)
    folder = os.path.dirname(os.path.abspath(path))
    if st is not None:
        mode = st.st_mode & 0o7777
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    if folder not in _swept:
        _swept.add(folder)
        sweep_stale_temporaries(folder)
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".kernc-", suffix=".tmp")
    except OSError as err:
        raise OSError(f"cannot write '{shown}': {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(err, OSError):
            raise OSError(f"cannot write '{shown}': {err.strerror or err}") from None
        raise
    return _Staged(shown, path, tmp)


def _link_owner(path: str) -> int:
    """The owner of the symbolic link ``path`` itself (not of its target)."""
    return os.lstat(path).st_uid


#: at most this many symbolic links on one path (Linux's limit, ``ELOOP`` past it)
MAX_LINKS = 40


def _resolve(path: str) -> tuple:
    """``(the path with every symbolic link resolved, None)``, or ``(path, why not)`` when a link on
    the way belongs neither to this user nor to the owner of the folder holding it (see the
    module), or there are more than :data:`MAX_LINKS` links (a loop). Resolved as the kernel does,
    one component at a time (``..`` after a link goes up from its target); components past one
    that does not exist are kept as written (nothing there to follow yet)."""
    uid = os.geteuid()
    pending = os.path.join(os.getcwd(), path).split("/")[::-1]  # (not normalized: ``link/..``)
    current, links = "/", 0
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        try:
            st = os.lstat(candidate)
        except OSError:  # (no such file: the rest is created, or fails, as written)
            return os.path.join(candidate, *[p for p in reversed(pending) if p]), None
        if not stat.S_ISLNK(st.st_mode):
            current = candidate
            continue
        links += 1
        if links > MAX_LINKS:
            return path, "Too many levels of symbolic links"
        try:
            owner, folder_owner = _link_owner(candidate), os.stat(current).st_uid
            target = os.readlink(candidate)
        except OSError as err:
            return path, err.strerror or str(err)
        if owner not in (uid, folder_owner):
            return path, (f"'{candidate}' is a symbolic link owned by another user (uid {owner}); kernc "
                          f"does not follow it (as fs.protected_symlinks does not): remove it or write elsewhere")
        if target.startswith("/"):
            current = "/"
        pending += target.split("/")[::-1]
    return current, None


def sweep_stale_temporaries(folder: str, now: float | None = None) -> int:
    """Remove the ``.kernc-XXXXXXXX.tmp`` files this module left in ``folder`` (regular files of
    this user, older than :data:`STALE_TEMPORARY_SECONDS`); returns how many. Errors are ignored
    (a folder that cannot be listed keeps them)."""
    now = time.time() if now is None else now
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    uid = os.geteuid()
    for entry in entries:
        if not _TEMPORARY.fullmatch(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and st.st_uid == uid and now - st.st_mtime > STALE_TEMPORARY_SECONDS:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            pass
    return removed


#: Paths that name the process's own standard streams (see :func:`write_atomically`).
_STD_STREAMS = {"/dev/stdout": "stdout", "/dev/fd/1": "stdout", "/proc/self/fd/1": "stdout",
                "/dev/stderr": "stderr", "/dev/fd/2": "stderr", "/proc/self/fd/2": "stderr"}


def writable_problem(path: str, created_folder: str | None = None) -> str | None:
    """Why ``open(path, "w")`` would fail (or :func:`write_atomically` would refuse), or ``None``:
    a symlink loop or a path through a file, a folder, a regular file this user may not write, a
    missing folder (other than ``created_folder``, which the caller makes first)."""
    try:
        st = os.stat(path)  # follows symlinks
    except FileNotFoundError:
        st = None
    except OSError as err:
        return err.strerror or str(err)
    if st is not None and stat.S_ISDIR(st.st_mode):
        return "it is a directory"
    if st is not None and stat.S_ISREG(st.st_mode) and not os.access(path, os.W_OK):
        # replacing it by a rename would succeed where open(path, "w") is refused
        return "Permission denied (the file is read-only)"
    if st is None:
        folder = os.path.dirname(os.path.realpath(path))
        if not os.path.isdir(folder) and not (created_folder and folder == os.path.realpath(created_folder)):
            return "No such file or directory"
    return None


def require_stdout(instead: str):
    """``sys.stdout``, or ``OSError`` when the process was started with it closed (``>&-``);
    ``instead`` says what to use instead (``"write the output with -o FILE"``)."""
    if sys.stdout is None:
        raise OSError(f"standard output is closed; {instead}")
    return sys.stdout


def write_stdout(text: str, instead: str) -> None:
    """Write ``text`` to standard output completely, or raise: ``BrokenPipeError`` when the reader
    left (``kernc compile | head -1``; Python's own buffered write reported a partial write of a
    large output as success, exit 0 with the output cut), and a non-blocking pipe inherited from
    another process waits instead of dropping the rest. ``instead`` as for :func:`require_stdout`."""
    out = require_stdout(instead)
    _write_stream(out, text.encode(out.encoding or "utf-8", out.errors or "strict"), text)


def _write_stream(out, data: bytes, text: str | None = None) -> None:
    """``data`` to the text stream ``out`` (``sys.stdout``/``sys.stderr``) through its file
    descriptor (:func:`_write_all`), after what the stream holds; a stream with no descriptor (one
    captured in tests) takes ``text`` (when given) or ``data`` through its own writes."""
    try:
        fd = out.fileno()
    except (OSError, ValueError, AttributeError):
        if text is not None:
            out.write(text)
        else:
            out.buffer.write(data)
            out.buffer.flush()
        return
    out.flush()
    _write_all(fd, data)


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to file descriptor ``fd``: a partial write (a pipe whose reader left
    mid-way) continues until the kernel reports the error (``BrokenPipeError``), and a
    non-blocking descriptor (a pipe shared with a process that set ``O_NONBLOCK``) is waited on
    instead of failing part-way."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            import select

            select.select([], [fd], [])
            continue
        view = view[n:]


def quiet_stdout() -> None:
    """Point standard output at the null device (Python's documented recipe for a broken pipe, see
    the ``signal`` module's note on SIGPIPE): the buffered rest is not flushed into the closed pipe
    at exit, which would raise a second error. Every output file is complete by then (written
    atomically before anything is printed)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real file descriptor behind sys.stdout
        pass


__all__ = ["STALE_TEMPORARY_SECONDS", "sweep_stale_temporaries", "write_atomically", "write_all_atomically", "writable_problem", "require_stdout", "write_stdout",
           "quiet_stdout"]
