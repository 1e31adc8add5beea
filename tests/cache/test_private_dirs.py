"""kernc.support.private_dirs: which cache folders are private enough to read PTX from and write it to, checked
step by step along the path, symbolic links and their owners included."""

from __future__ import annotations

import os
import stat

import pytest

from cache_helpers import foreign  # noqa: F401 - a fixture
from kernc.support import private_dirs
from kernc.support.private_dirs import is_private_dir, open_private_dir

pytestmark = pytest.mark.skipif(not private_dirs.posix_owners(), reason="POSIX owners and openat")


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


def test_a_symlink_of_another_user_is_refused_wherever_it_points(tmp_path, foreign):
    """Issue 18: the check followed a link in a sticky world-writable folder (like /tmp) and checked
    only its target; the link's owner can point it elsewhere at any moment."""
    sticky = _mkdir(tmp_path / "tmp", 0o1777)
    mine = _mkdir(tmp_path / "mine", 0o700)
    (sticky / "mine-link").symlink_to(mine)
    assert is_private_dir(str(sticky / "mine-link"))  # the user's own link: followed
    (sticky / "their-link").symlink_to(mine)
    foreign(sticky / "their-link")
    assert not is_private_dir(str(sticky / "their-link"))
    assert not is_private_dir(str(sticky / "their-link" / "."))
    # also further down a chain of links, and whatever folder holds it
    private = _mkdir(tmp_path / "private", 0o700)
    (private / "hop").symlink_to(sticky / "their-link")
    assert not is_private_dir(str(private / "hop"))
    (private / "theirs-here").symlink_to(mine)
    foreign(private / "theirs-here")
    assert not is_private_dir(str(private / "theirs-here"))


def test_another_users_folder_in_a_sticky_folder_is_refused(tmp_path, foreign):
    sticky = _mkdir(tmp_path / "tmp", 0o1777)
    theirs = _mkdir(sticky / "theirs", 0o755)
    inner = _mkdir(theirs / "inner", 0o700)
    foreign(theirs)
    assert not is_private_dir(str(inner))


def test_links_are_resolved_as_the_kernel_does(tmp_path, monkeypatch):
    """Relative targets, '..' (the parent of where the link led), chains and absolute targets."""
    base = _mkdir(tmp_path / "base", 0o755)
    target = _mkdir(_mkdir(base / "a", 0o755) / "b", 0o700)
    links = _mkdir(base / "links", 0o755)
    (links / "to-a").symlink_to("../a")
    (links / "chain").symlink_to(links / "to-a")
    (links / "up").symlink_to("to-a/b/..")
    for path in (links / "to-a" / "b", links / "chain" / "b", links / "up" / "b"):
        fd = open_private_dir(str(path))
        assert fd is not None, path
        try:
            assert os.fstat(fd).st_ino == os.stat(target).st_ino
        finally:
            os.close(fd)
    monkeypatch.chdir(base)
    assert is_private_dir("links/to-a/b") and is_private_dir("a/b")


def test_a_link_leading_through_a_writable_folder_is_refused(tmp_path):
    open_dir = _mkdir(tmp_path / "open", 0o777)
    inside = _mkdir(open_dir / "inside", 0o700)
    private = _mkdir(tmp_path / "private", 0o700)
    (private / "link").symlink_to(inside)
    assert not is_private_dir(str(private / "link"))


def test_a_link_loop_is_refused_at_once(tmp_path):
    (tmp_path / "x").symlink_to("y")
    (tmp_path / "y").symlink_to("x")
    (tmp_path / "self").symlink_to("self/a")
    assert not is_private_dir(str(tmp_path / "x"))
    assert not is_private_dir(str(tmp_path / "self"))


def test_create_makes_missing_folders_private_and_only_on_safe_ground(tmp_path, foreign):
    fd = open_private_dir(str(tmp_path / "new" / "deeper"), create=True)
    assert fd is not None
    os.close(fd)
    for p in (tmp_path / "new", tmp_path / "new" / "deeper"):
        assert stat.S_IMODE(os.stat(p).st_mode) & 0o077 == 0
    open_dir = _mkdir(tmp_path / "open", 0o777)
    assert open_private_dir(str(open_dir / "kernc"), create=True) is None
    theirs = _mkdir(tmp_path / "theirs", 0o755)
    foreign(theirs)
    assert open_private_dir(str(theirs / "kernc"), create=True) is None
    assert list(open_dir.iterdir()) == [] and list(theirs.iterdir()) == []


def test_the_folder_itself_must_be_this_users(tmp_path, foreign):
    theirs = _mkdir(tmp_path / "theirs", 0o700)
    foreign(theirs)
    assert not is_private_dir(str(theirs))


def _resolve_by_full_paths(path):
    """An independent statement of the rule: resolve ``path`` as the kernel does (links expanded in
    place, '..' the physical parent) using full paths, lstat-checking each step; the folder it
    leads to, or None where the rule refuses it."""
    def trusted(st):
        return private_dirs.owner(st) in (os.getuid(), 0)

    def safe_dir(st):
        return (stat.S_ISDIR(st.st_mode) and trusted(st)
                and (not st.st_mode & 0o022 or bool(st.st_mode & stat.S_ISVTX)))

    parts, cur, links = [p for p in path.split("/") if p], "/", 0
    if not safe_dir(os.lstat("/")):
        return None
    while parts:
        name = parts.pop(0)
        if name == ".":
            continue
        nxt = os.path.dirname(cur) if name == ".." else os.path.join(cur, name)
        try:
            st = os.lstat(nxt)
        except OSError:
            return None
        if not trusted(st):
            return None
        if stat.S_ISLNK(st.st_mode):
            links += 1
            target = os.readlink(nxt)
            if links > private_dirs.MAX_LINKS:
                return None
            parts = [p for p in target.split("/") if p] + parts
            cur = "/" if target.startswith("/") else cur
            continue
        if not safe_dir(st):
            return None
        cur = nxt
    st = os.stat(cur)
    return cur if private_dirs.owner(st) == os.getuid() and not st.st_mode & 0o022 else None


@pytest.mark.parametrize("seed", range(8))
def test_random_trees_agree_with_an_independent_resolver(tmp_path, foreign, seed):
    """Random folders (modes 0700 to 1777) and links (absolute, relative, '..', dangling), a quarter
    of them another user's: open_private_dir accepts exactly the paths the full-path statement of
    the rule accepts, and the folder it opens is the one the kernel resolves the path to."""
    import random

    rng = random.Random(seed)
    for tree in range(6):
        base = _mkdir(tmp_path / f"t{tree}", 0o755)
        nodes = [str(base)]
        for i in range(12):
            parent = rng.choice([n for n in nodes if os.path.isdir(n) and not os.path.islink(n)])
            p = os.path.join(parent, f"n{i}")
            if rng.random() < 0.4:
                target = rng.choice(nodes + ["..", "../..", "missing"])
                os.symlink(os.path.relpath(target, parent) if rng.random() < 0.5 and target.startswith("/")
                           else target, p)
            else:
                os.mkdir(p)
                os.chmod(p, rng.choice([0o700, 0o755, 0o777, 0o1777, 0o775]))
            if rng.random() < 0.25:
                foreign(p)
            nodes.append(p)
        accepted = 0
        for n in nodes:
            for path in (n, n + "/..", n + "/../n1"):
                want = _resolve_by_full_paths(path)
                fd = open_private_dir(path)
                got = None
                if fd is not None:
                    got = os.readlink(f"/proc/self/fd/{fd}") if os.path.isdir("/proc/self/fd") else want
                    os.close(fd)
                    assert got == os.path.realpath(path), path
                    accepted += 1
                assert got == want, path
        assert accepted  # the trees are not all refused
