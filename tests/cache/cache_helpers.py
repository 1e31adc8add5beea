"""Shared helpers of the cache-folder tests (a plain module, not a conftest: tests/conftest.py owns
that name): files that belong to another user."""

from __future__ import annotations

import os

import pytest

from kernc.support import private_dirs

#: The uid that plays the other user: ``nobody`` on Linux.
OTHER_UID = 65534


@pytest.fixture
def foreign(monkeypatch):
    """``foreign(path)`` makes the file, folder or symlink ``path`` (not followed) belong to another
    user. As root (as in this sandbox, where owner checks would otherwise accept everything the
    test creates) it really is ``lchown``-ed to ``nobody``. Without root the test cannot give a file
    away, so the owner that ``kernc.support.private_dirs.owner`` reports -- the only place the checks read
    an owner -- is changed for that inode: the checks' logic is tested the same way, the kernel's
    part (that such a file can exist) is not. In-process only (a subprocess does not see it).
    ``KERNC_TEST_SIMULATED_OWNERS=1`` takes the simulated way as root too (to check it here)."""
    if os.getuid() == 0 and not os.environ.get("KERNC_TEST_SIMULATED_OWNERS"):
        def make(path):
            os.lchown(path, OTHER_UID, OTHER_UID)
        return make
    marked = set()
    real = private_dirs.owner
    monkeypatch.setattr(private_dirs, "owner",
                        lambda st: OTHER_UID if (st.st_dev, st.st_ino) in marked else real(st))

    def make(path):
        st = os.stat(path, follow_symlinks=False)
        marked.add((st.st_dev, st.st_ino))
    return make
