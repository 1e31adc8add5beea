"""Folders private to this user, opened so that what was checked is what gets used (the compile cache).

The compile cache stores PTX that gets launched, so a file that someone else could have planted must
never be read, and an entry must never be written where someone else could read or swap it. A
folder is private when this user owns it and neither its group nor others can write to it, and when
nobody else can make its path lead elsewhere:

- every folder on the way to it is owned by this user or root and is not writable by group or
  others, unless it has the sticky bit (like ``/tmp``: there only an entry's owner can rename or
  delete it, so each entry passed through in it must be owned by this user or root too);
- every symbolic link on the way is owned by this user or root (a link is an entry like any other:
  in ``/tmp`` its owner can replace it by one pointing elsewhere), and its target is checked by the
  same rules, step by step.

The rule is OpenSSH's ``StrictModes`` check of ``~/.ssh`` (``secure_filename`` in ``misc.c``) with the
sticky-bit exception, applied to each link of the path as the kernel resolves it.

:func:`open_private_dir` checks while it walks the path one folder at a time with ``openat``
(``O_NOFOLLOW``, ``fstat`` of what was opened; links are read with ``readlinkat``), so a link or
folder swapped during the check cannot send it elsewhere, and it returns the opened folder: a caller
that keeps that file descriptor keeps using the folder it checked, whatever later happens to the
path. :func:`is_private_dir` is the yes/no form.

On systems without POSIX owners (Windows) the folder's ACLs apply: any folder counts, and
:func:`open_private_dir` returns ``None`` (as on a POSIX system without ``openat``, where no folder
can be checked this way and none counts as private).
"""

from __future__ import annotations

import os
import stat

#: Symbolic links followed at most while resolving one path (Linux's limit, ``ELOOP`` beyond it).
MAX_LINKS = 40

_DIR_FLAGS = (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
              | getattr(os, "O_CLOEXEC", 0))


def posix_owners() -> bool:
    """Whether this system has POSIX owners and ``openat``-style calls (not Windows)."""
    return hasattr(os, "getuid") and os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd


def owner(st: os.stat_result) -> int:
    """The owner uid of ``st``. The one place the checks read owners, so that a test that cannot
    ``chown`` (not root) can make a file it created look like another user's."""
    return st.st_uid


def trusted_owner(st: os.stat_result) -> bool:
    """Owned by this user or by root."""
    return owner(st) in (os.getuid(), 0)


def mine_and_private(st: os.stat_result) -> bool:
    """Owned by this user and not writable by group or others (what a cache folder or entry needs)."""
    return owner(st) == os.getuid() and not st.st_mode & 0o022


def _safe_folder(st: os.stat_result) -> bool:
    """A folder on the way: a folder owned by this user or root that others cannot write to, or
    that is sticky."""
    return (stat.S_ISDIR(st.st_mode) and trusted_owner(st)
            and (not st.st_mode & 0o022 or bool(st.st_mode & stat.S_ISVTX)))


def open_private_dir(path: str, create: bool = False) -> int | None:
    """A file descriptor (``O_RDONLY | O_DIRECTORY``, close-on-exec; the caller closes it) of the
    folder ``path`` if it is private to this user (module docstring), else ``None``. ``create``:
    make missing folders on the way (mode ``0o700``) as the walk reaches them. A relative ``path`` is
    taken from the current folder. Never raises; ``None`` also where there are no POSIX owners."""
    if not posix_owners():
        return None
    try:
        if not os.path.isabs(path):
            path = os.path.join(os.getcwd(), path)
        fd = _walk(path, create)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    if fd is None:
        return None
    try:
        if mine_and_private(os.fstat(fd)):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def _walk(path: str, create: bool) -> int | None:
    """The opened folder ``path`` leads to, every step checked (``None`` at the first unsafe one)."""
    fd = os.open("/", _DIR_FLAGS)
    try:
        if not _safe_folder(os.fstat(fd)):
            return None
        todo = path.split("/")[::-1]  # a stack: the next component last
        links = 0
        while todo:
            name = todo.pop()
            if name in ("", "."):
                continue
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not create or name == "..":
                    return None
                try:
                    os.mkdir(name, 0o700, dir_fd=fd)
                except FileExistsError:
                    pass
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                links += 1
                if links > MAX_LINKS or not trusted_owner(st):
                    return None  # someone else's link could be pointed anywhere at any time
                # the folder holding the link is safe and the link is not someone else's, so nobody
                # else can replace it between the stat above and this read
                target = os.readlink(name, dir_fd=fd)
                todo.extend(target.split("/")[::-1])
                if target.startswith("/"):
                    os.close(fd)
                    fd = -1
                    fd = os.open("/", _DIR_FLAGS)
                    if not _safe_folder(os.fstat(fd)):
                        return None
                continue
            if not trusted_owner(st):
                return None  # in a sticky folder its owner could rename it and put another in its place
            # O_NOFOLLOW: an entry swapped for a link since the stat fails here; fstat checks the folder
            # actually opened (".." included: the parent of the folder reached, as the kernel does)
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
            if not _safe_folder(os.fstat(fd)):
                return None
        result, fd = fd, -1
        return result
    finally:
        if fd >= 0:
            os.close(fd)


def is_private_dir(path: str) -> bool:
    """True if ``path`` is a folder private to this user (see the module docstring); False for any
    other folder, a non-folder, or a path that cannot be inspected (also on a POSIX system without
    ``openat``). Never raises. Where there are no POSIX owners (Windows), True for any folder."""
    if not hasattr(os, "getuid"):
        return os.path.isdir(path)
    fd = open_private_dir(path)  # None also on a POSIX system without openat: not checkable
    if fd is None:
        return False
    os.close(fd)
    return True
