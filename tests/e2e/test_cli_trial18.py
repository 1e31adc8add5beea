"""CLI findings of the trial of issue 18 (F05-F09): one rule for integers, sources of bounded size,
repeated options, output files through other users' symlinks, stale temporaries of killed runs."""

from __future__ import annotations

import io
import os
import types

import numpy as np
import pytest

from kernc.cli import main
from kernc.support import input_files


# ---- F07: a source is at most MAX_SOURCE_BYTES ------------------------------------------------

@pytest.mark.parametrize("command", [["check", "-"], ["compile", "-", "-o", os.devnull]])
def test_dev_zero_on_stdin_ends_with_a_user_error_naming_the_limit(monkeypatch, capsys, command):
    """``kernc check - < /dev/zero`` read forever (and, out of memory, was an internal error)."""
    with open("/dev/zero", "rb") as zero:
        monkeypatch.setattr("sys.stdin", types.SimpleNamespace(buffer=zero))
        assert main(command) == 1
    err = capsys.readouterr().err
    assert "standard input" in err and "16 MiB" in err and "Traceback" not in err


def test_a_huge_source_file_is_refused_from_its_size(tmp_path, capsys):
    big = tmp_path / "big.kern"
    with open(big, "wb") as f:  # sparse: 6 GB of nothing
        f.truncate(6 * 2**30)
    assert main(["check", str(big)]) == 1
    assert "16 MiB" in capsys.readouterr().err


def test_read_limited_reads_one_byte_past_the_limit():
    class Counting(io.BytesIO):
        taken = 0

        def read(self, n=-1):
            data = super().read(n)
            Counting.taken += len(data)
            return data

    assert input_files.read_limited(io.BytesIO(b"x" * 10), 10) == b"x" * 10
    with pytest.raises(OSError, match="10 bytes"):
        input_files.read_limited(Counting(b"x" * 1000), 10)
    assert Counting.taken == 11


# ---- F05: --size and --input read integers by one rule ----------------------------------------

SZ = "kernel fill(y: f32[n] write) over n { y = 1.0; }\nkernel q(s: index, y: f32[n] write) over n { y = f32(s); }\n"


@pytest.fixture
def sz(tmp_path):
    (tmp_path / "sz.kern").write_text(SZ)
    return tmp_path


@pytest.mark.parametrize("text, value", [("007", 7), ("0x10", 16), ("1_000", 1000), ("+5", 5), (" 3 ", 3)])
def test_size_and_input_take_the_same_integers(sz, capsys, text, value):
    out = sz / "o"
    assert main(["run", str(sz / "sz.kern"), "--kernel", "fill", "--size", f"n={text}", "--output-dir", str(out)]) == 0
    assert np.load(out / "y.npy").shape == (value,)
    assert main(["run", str(sz / "sz.kern"), "--kernel", "q", "--size", "n=2", "--input", f"s={text}",
                 "--output-dir", str(out)]) == 0
    assert np.load(out / "y.npy").tolist() == [float(value)] * 2


@pytest.mark.parametrize("text", ["1e1", "2.0", "١٢"])
def test_size_and_input_refuse_the_same_non_integers_without_type_names(sz, capsys, text):
    with pytest.raises(SystemExit) as e:
        main(["run", str(sz / "sz.kern"), "--kernel", "fill", "--size", f"n={text}"])
    assert e.value.code == 2 and "non-negative integer" in capsys.readouterr().err
    assert main(["run", str(sz / "sz.kern"), "--kernel", "q", "--size", "n=2", "--input", f"s={text}",
                 "--output-dir", str(sz)]) == 1
    err = capsys.readouterr().err
    assert f"'{text}' is not an integer (index" in err and "Fraction" not in err


def test_spaces_around_names_are_read_alike(sz, capsys):
    assert main(["run", str(sz / "sz.kern"), "--kernel", "q", "--size", " n=2", "--input", " s=4",
                 "--output-dir", str(sz)]) == 0
    assert np.load(sz / "y.npy").tolist() == [4.0, 4.0]


# ---- F08: a repeated single-valued option is an error naming it ---------------------------------

@pytest.mark.parametrize("args, option", [
    (["run", "{f}", "--kernel", "fill", "--kernel", "q", "--size", "n=2", "--input", "s=1"], "--kernel"),
    (["compile", "{f}", "-o", "{d}/a.ptx", "-o", "{d}/b.ptx"], "-o/--output"),
    (["run", "{f}", "--kernel", "fill", "--size", "n=2", "--output-dir", "{d}", "--output-dir", "{d}/x"],
     "--output-dir"),
    (["compile", "{f}", "--emit", "kern", "--emit", "ptx"], "--emit"),
    (["run", "{f}", "--kernel", "fill", "--device", "cpu", "--device", "cpu"], "--device"),
])
def test_repeated_single_valued_options_are_refused(sz, capsys, args, option):
    args = [a.format(f=sz / "sz.kern", d=sz) for a in args]
    with pytest.raises(SystemExit) as e:
        main(args)
    assert e.value.code == 2
    assert f"argument {option}: given twice" in capsys.readouterr().err
    assert not (sz / "a.ptx").exists() and not (sz / "b.ptx").exists() and not (sz / "y.npy").exists()


def test_repeatable_options_still_repeat(sz, capsys):
    assert main(["compile", str(sz / "sz.kern"), "--emit", "kern", "--kernel", "fill", "--kernel", "q"]) == 0


# ---- F06: another user's symlink is not followed -----------------------------------------------

from kernc.support import output_files  # noqa: E402


def _plant_foreign_link(tmp_path, monkeypatch):
    """A symlink ``out.ptx`` -> ``mine.ptx`` owned by another user (really, with ``lchown`` as
    root; otherwise the owner lookup says so) in a folder this user does not own."""
    mine = tmp_path / "mine.ptx"
    mine.write_text("precious\n")
    link = tmp_path / "out.ptx"
    link.symlink_to(mine)
    if os.geteuid() == 0:
        os.lchown(link, 4321, 4321)
    else:  # (the folder is this user's: only the link's owner is another's)
        monkeypatch.setattr(output_files, "_link_owner", lambda path: 4321)
    return mine, link


def test_another_users_symlink_is_refused(tmp_path, monkeypatch, capsys):
    (tmp_path / "k.kern").write_text(SZ)
    mine, link = _plant_foreign_link(tmp_path, monkeypatch)
    assert main(["compile", str(tmp_path / "k.kern"), "-o", str(link)]) == 1
    err = capsys.readouterr().err
    assert "symbolic link owned by another user" in err and str(link) in err
    assert mine.read_text() == "precious\n" and link.is_symlink()


def test_own_symlink_is_still_written_through(tmp_path, capsys):
    (tmp_path / "k.kern").write_text(SZ)
    target = tmp_path / "target.ptx"
    target.write_text("old")
    link = tmp_path / "out.ptx"
    link.symlink_to(target)
    assert main(["compile", str(tmp_path / "k.kern"), "-o", str(link)]) == 0
    assert link.is_symlink() and ".entry fill" in target.read_text()


# ---- F09: temporaries of killed runs are swept --------------------------------------------------

def test_stale_temporaries_of_killed_writes_are_removed(tmp_path, monkeypatch):
    old = tmp_path / ".kernc-abcd1234.tmp"      # a killed run's, two hours old
    fresh = tmp_path / ".kernc-efgh5678.tmp"    # a write in progress
    other = tmp_path / ".kernc-notours.tmp.bak"  # not a name the writer makes
    for f in (old, fresh, other):
        f.write_bytes(b"x" * 100)
    two_hours = os.path.getmtime(old) - 2 * 3600
    os.utime(old, (two_hours, two_hours))
    os.utime(other, (two_hours, two_hours))
    monkeypatch.setattr(output_files, "_swept", set())
    output_files.write_atomically(str(tmp_path / "a.txt"), "done")
    assert not old.exists() and fresh.exists() and other.exists()
    assert (tmp_path / "a.txt").read_text() == "done"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([fresh.name, other.name, "a.txt"])


def _foreign(link, monkeypatch, foreign: set):
    """``link`` owned by another user: really (``lchown``, as root), else through the owner lookup."""
    if os.geteuid() == 0:
        os.lchown(link, 4321, 4321)
    else:
        foreign.add(str(link))
        monkeypatch.setattr(output_files, "_link_owner",
                            lambda path: 4321 if path in foreign else os.lstat(path).st_uid)


def test_another_users_symlink_anywhere_on_the_path_is_refused(tmp_path, monkeypatch, capsys):
    """Retrial of issue 18, R07: only the last link was checked, then ``realpath`` followed the
    whole chain: our link -> another user's link -> our file replaced it, and so did ``-o
    planted_folder_link/victim.txt``. Every link on the way is checked now."""
    (tmp_path / "k.kern").write_text(SZ)
    private = tmp_path / "private"
    private.mkdir()
    victim = private / "victim.txt"
    victim.write_text("precious\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    planted, planted_dir = shared / "planted", shared / "dirlink"
    planted.symlink_to(victim)
    planted_dir.symlink_to(private)
    foreign: set = set()
    _foreign(planted, monkeypatch, foreign)
    _foreign(planted_dir, monkeypatch, foreign)
    ours = tmp_path / "out.ptx"
    ours.symlink_to(planted)
    ours_dir = tmp_path / "outdir"
    ours_dir.symlink_to(shared / "dirlink")
    for out in (ours, planted_dir / "victim.txt", ours_dir / "victim.txt"):
        assert main(["compile", str(tmp_path / "k.kern"), "-o", str(out)]) == 1, out
        err = capsys.readouterr().err
        assert "symbolic link owned by another user" in err and str(out) in err
        assert victim.read_text() == "precious\n"
    # links of ours all the way (a chain, a folder link, "..") are still followed
    (tmp_path / "hop").symlink_to(tmp_path / "out2.ptx")
    (tmp_path / "out2.ptx").symlink_to(victim)
    (tmp_path / "pdir").symlink_to(private)
    for out in (tmp_path / "hop", tmp_path / "pdir" / "new.ptx", tmp_path / "pdir" / ".." / "private" / "new2.ptx"):
        assert main(["compile", str(tmp_path / "k.kern"), "-o", str(out)]) == 0, out
    assert ".entry fill" in victim.read_text() and (tmp_path / "hop").is_symlink()
    assert ".entry fill" in (private / "new.ptx").read_text() and (private / "new2.ptx").exists()


def test_a_symlink_loop_is_refused(tmp_path, capsys):
    (tmp_path / "k.kern").write_text(SZ)
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert main(["compile", str(tmp_path / "k.kern"), "-o", str(tmp_path / "a")]) == 1
    assert "symbolic links" in capsys.readouterr().err


# ---- retrial R06: a float scalar's -0.0 keeps its sign ------------------------------------------

@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16"])
@pytest.mark.parametrize("text", ["-0.0", "-0", "-0e0", " -0.000 "])
def test_a_negative_zero_input_stays_negative(tmp_path, monkeypatch, capsys, text, dtype):
    """``--input f=-0.0`` passed +0.0 (the exact Fraction of a decimal has no signed zero); the
    API's ``f=-0.0`` gives -0.0. Integers and a plain 0 are unchanged."""
    (tmp_path / "z.kern").write_text(f"kernel fill(f: {dtype}, y: f32[n] write) over n {{ y = f32(f); }}")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "z.kern", "-q", "--size", "n=1", "--input", f"f={text}"]) == 0
    y = np.load(tmp_path / "y.npy")
    assert y.tolist() == [0.0] and np.signbit(y).tolist() == [True]
    assert main(["run", "z.kern", "-q", "--size", "n=1", "--input", "f=0.0"]) == 0
    assert np.signbit(np.load(tmp_path / "y.npy")).tolist() == [False]
