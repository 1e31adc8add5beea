"""Reading the files kernc reads (sources, IR, ``--input x=@file.npy`` arrays) without hanging.

``open(path)`` on a FIFO waits for a writer, forever if none comes, and reading ``/dev/zero`` never
ends. A file is first opened non-blocking and examined with ``fstat`` on what was opened (as the
compile cache opens its entries, ``backend/cache.py``):

- :func:`open_for_reading` (an array file, which ``np.load`` reads and seeks in): a regular file;
- :func:`read_stream_or_file` (a source text, read once): a regular file, a FIFO or a pipe (read
  until its writers close it, waiting for the first writer as a read of standard input waits
  for its data: ``kernc compile <(...)``, ``kernc opt FIFO``), or a terminal;
- anything else -- a device such as ``/dev/zero``, a socket, a FIFO where an array file is needed --
  is refused with an ``OSError`` that says what it is.

A source is at most :data:`MAX_SOURCE_BYTES` (16 MiB): a read stops after one byte more (standard
input included, :func:`read_limited`; a regular file larger than that is refused from its size,
unread), and the ``OSError`` names the limit.
"""

from __future__ import annotations

import os
import stat

__all__ = ["MAX_SOURCE_BYTES", "open_for_reading", "read_limited", "read_stream_or_file"]

#: the largest source (``.kern`` or IR text) kernc reads, in bytes
MAX_SOURCE_BYTES = 16 * 2**20

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _blocking(fd: int) -> None:
    if _NONBLOCK:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)


def _open_examined(path):
    """``(fd, stat)`` of ``path`` opened read-only and non-blocking (an open that waits for a FIFO's
    writer would hang here); ``IsADirectoryError`` for a folder."""
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            import errno

            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def _refusal(st, what: str) -> OSError:
    return OSError(f"it is {_kind(st.st_mode)}; kernc reads {what} here")


def open_for_reading(path):
    """A binary file object reading the regular file ``path`` (an array file, which ``np.load``
    reads and seeks in). ``OSError`` when it cannot be opened (with the errno and the path as
    ``filename``) or is not a regular file (no errno; the message says what it is, for the caller
    to put after the path)."""
    fd, st = _open_examined(path)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _refusal(st, "regular files only")
    _blocking(fd)
    return open(fd, "rb")


def _too_large(limit: int) -> OSError:
    size = f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit} bytes"
    return OSError(f"it is larger than {size}, the limit on the size of a source kernc reads")


def read_limited(f, limit: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of the binary file object ``f`` up to its end; ``OSError`` naming the limit once
    more than ``limit`` bytes come (it reads ``limit + 1`` at most: ``/dev/zero`` ends at once)."""
    chunks, n = [], 0
    while n <= limit:
        chunk = f.read(min(limit + 1 - n, 1 << 20))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        n += len(chunk)
    raise _too_large(limit)


def read_stream_or_file(path, limit: int = MAX_SOURCE_BYTES) -> bytes:
    """All the bytes of ``path``: a regular file, a FIFO or pipe (read until its writers close it,
    waiting for the first writer as a read of standard input waits for data), or a terminal.
    ``OSError`` as :func:`open_for_reading` for anything else (``/dev/zero`` would never end), and
    for more than ``limit`` bytes (a regular file is refused from its size)."""
    fd, st = _open_examined(path)
    try:
        if stat.S_ISREG(st.st_mode) and st.st_size > limit:
            raise _too_large(limit)
        if stat.S_ISREG(st.st_mode) or (stat.S_ISCHR(st.st_mode) and os.isatty(fd)):
            _blocking(fd)
            with open(fd, "rb", closefd=False) as f:  # (not os.fdopen: the output writers use it)
                return read_limited(f, limit)
        if not stat.S_ISFIFO(st.st_mode):
            raise _refusal(st, "regular files, pipes and terminals")
        return _read_fifo(fd, limit)
    finally:
        os.close(fd)


def _read_fifo(fd: int, limit: int) -> bytes:
    """Read a FIFO opened non-blocking until end of file. The descriptor stays non-blocking (so
    opening it did not wait for a writer, and a writer's open does not wait for this reader);
    ``poll`` waits for data: a FIFO that never had a writer is not reported hung up, so poll waits
    for the first writer rather than seeing an empty file (Linux ``pipe_poll``; POSIX leaves it
    open, and where ``poll`` is missing the read simply blocks)."""
    import select

    if not hasattr(select, "poll") or not _NONBLOCK:
        _blocking(fd)
        chunks, n = [], 0
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            n += len(chunk)
            if n > limit:
                raise _too_large(limit)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    chunks, n = [], 0
    while True:
        poller.poll()
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:  # woken without data (another reader took it): wait again
            continue
        if not chunk:  # every writer closed it
            return b"".join(chunks)
        chunks.append(chunk)
        n += len(chunk)
        if n > limit:
            raise _too_large(limit)
