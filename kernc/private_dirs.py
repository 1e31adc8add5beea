"""Is a folder private to this user? (the compile cache and the parser tables live in one)

The compile cache stores PTX that gets launched and Lark's parser-table cache is a pickle, so a file
that someone else could have planted must never be read. A folder is private when this user owns it
and neither its group nor others can write to it, and when nobody else can replace it: each folder
above it is owned by this user or root and not writable by group or others, unless it has the sticky
bit (like ``/tmp``: there only a file's owner can rename or delete it). The rule is OpenSSH's
``StrictModes`` check of ``~/.ssh`` (``secure_filename`` in ``misc.c``), with the sticky-bit
exception.
"""

from __future__ import annotations

import os
import stat


def is_private_dir(path: str) -> bool:
    """True if ``path`` is a folder private to this user (see the module docstring); False for any
    other folder, a non-folder, or a path that cannot be inspected. Never raises."""
    if not hasattr(os, "getuid"):  # no POSIX owners (Windows): the folder's ACLs apply
        return os.path.isdir(path)
    uid = os.getuid()
    try:
        st = os.stat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or st.st_mode & 0o022:
            return False
        # the folders above the path as given (a symlink in it could be swapped) and above its target
        return all(_safe_ancestors(p, uid) for p in {os.path.abspath(path), os.path.realpath(path)})
    except OSError:
        return False


def _safe_ancestors(here: str, uid: int) -> bool:
    """Every folder above ``here`` is owned by ``uid`` or root and not group/other-writable unless
    sticky (``OSError`` when one cannot be inspected)."""
    while True:
        parent = os.path.dirname(here)
        if parent == here:
            return True
        here = parent
        st = os.stat(here)
        if st.st_uid not in (uid, 0):
            return False
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return False
