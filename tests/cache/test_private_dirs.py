"""kernc.private_dirs: which cache folders are private enough to read a pickle or PTX from."""

from __future__ import annotations

import os

import pytest

from kernc.private_dirs import is_private_dir

pytestmark = pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes")


def _mkdir(path, mode):
    path.mkdir()
    os.chmod(path, mode)
    return path


def test_private_folder(tmp_path):
    assert is_private_dir(str(_mkdir(tmp_path / "p", 0o700)))
    assert is_private_dir(str(_mkdir(tmp_path / "q", 0o755)))  # others may read, not write


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722, 0o1777])
def test_folder_others_can_write_to(tmp_path, mode):
    assert not is_private_dir(str(_mkdir(tmp_path / "w", mode)))


@pytest.mark.parametrize("parent_mode,private", [(0o777, False), (0o775, False), (0o1777, True), (0o755, True)])
def test_the_folders_above_count(tmp_path, parent_mode, private):
    parent = _mkdir(tmp_path / "parent", 0o755)
    inner = _mkdir(parent / "inner", 0o700)
    os.chmod(parent, parent_mode)
    assert is_private_dir(str(inner)) is private


def test_a_symlink_in_a_folder_others_can_write_to(tmp_path):
    target = _mkdir(tmp_path / "target", 0o700)
    open_dir = _mkdir(tmp_path / "open", 0o777)
    (open_dir / "link").symlink_to(target)
    assert is_private_dir(str(target))
    assert not is_private_dir(str(open_dir / "link"))  # anyone could point the link elsewhere


def test_not_a_folder(tmp_path):
    (tmp_path / "f").write_text("x")
    assert not is_private_dir(str(tmp_path / "f"))
    assert not is_private_dir(str(tmp_path / "missing"))
