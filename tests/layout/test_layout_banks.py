"""``kernc layout --banks``: bank conflicts counted as the CPU interpreter's ``RunStats`` counts them.

README / ``RunStats.shared_bank_conflicts``: per request, (max over the 32 banks of distinct 4-byte
words in the bank) - 1; a broadcast (one word, many lanes) is no conflict; an 8-byte (16-byte)
element is two (four) words and its request is served in 2 (4) phases of 16 (8) consecutive lanes,
counted separately (a conflict-free f64 warp access counts 0). The printer counted one 32-lane
request instead (a contiguous f64 row was "2-way"), and took ``--elem-bytes 3``.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest

from kernc.backend import interpreter as interp
from kernc.cli import main
from kernc.dialect import layout_print
from kernc.dialect.layout_print import bank_of, layout_to_svg, layout_to_text
from kernc.layout import Layout, LayoutError, parse_layout


def bank_conflicts(offsets, elem_bytes):
    # looked up at call time, so that the CLI checks of a test run (and fail) before the fix too
    return layout_print.bank_conflicts(offsets, elem_bytes)


def _last_line(argv, capsys) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out.rstrip("\n").splitlines()[-1]


# ------------------------------------------------------------------------------------------------
# f64 (8-byte elements: 2 words each, 2 phases of 16 lanes)


def test_f64_contiguous_row_is_conflict_free(capsys):
    # row m of (32,32):(32,1): offsets 32m + n -> words 64m + 2n, 64m + 2n + 1. Phase 0 (lanes 0-15)
    # touches 32 consecutive words, one per bank: 1-way, 0 conflicts; phase 1 likewise. The old
    # printer put all 32 lanes (64 words) in one request: "2-way".
    line = _last_line(["layout", "(32,32):(32,1)", "--banks", "--elem-bytes", "8"], capsys)
    assert line.endswith("a row up to 1-way (0 conflicts)"), line
    assert bank_conflicts(range(32), 8) == (1, 0)


def test_f64_column_conflicts_within_each_phase(capsys):
    # column n of (32,32):(32,1): lane i reads offset 32i + n -> words 64i + 2n, 64i + 2n + 1, i.e.
    # banks 2n and 2n+1 for every lane. Phase 0 (lanes 0-15): 16 distinct words in bank 2n ->
    # 16-way, 15 conflicts; phase 1 (lanes 16-31) the same: 30 conflicts per warp request.
    # (The old printer: 32 distinct words in one bank, "32-way".)
    line = _last_line(["layout", "(32,32):(32,1)", "--banks", "--elem-bytes", "8"], capsys)
    assert line == "bank conflicts: reading a column is up to 16-way (30 conflicts), a row up to 1-way (0 conflicts)"
    assert bank_conflicts([32 * i for i in range(32)], 8) == (16, 30)


def test_f64_stride_2_conflicts_two_way_per_phase(capsys):
    # row m of (4,32):(64,2): lane i reads offset 64m + 2i -> words 128m + 4i, 128m + 4i + 1, i.e.
    # banks 4i % 32 and 4i % 32 + 1. In phase 0 (i = 0..15) lanes i and i+8 share both banks with
    # different words: 2-way, 1 conflict; phase 1 (i = 16..31) the same: 2 conflicts per request.
    # (The old printer: i, i+8, i+16, i+24 in one request, "4-way".)
    line = _last_line(["layout", "(4,32):(64,2)", "--banks", "--elem-bytes", "8"], capsys)
    assert line.endswith("a row up to 2-way (2 conflicts)"), line
    assert bank_conflicts([2 * i for i in range(32)], 8) == (2, 2)


def test_f64_broadcast_is_not_a_conflict(capsys):
    # column of (32,4):(0,1): every lane reads the same element (words 2n, 2n+1): a broadcast
    line = _last_line(["layout", "(32,4):(0,1)", "--banks", "--elem-bytes", "8"], capsys)
    assert "reading a column is up to 1-way (0 conflicts)" in line, line
    assert bank_conflicts([5] * 32, 8) == (1, 0)


def test_f64_bank_grid_header_names_the_phases():
    text = layout_to_text(Layout((2, 32), (32, 1)), banks=True, elem_bytes=8)
    assert "banks: (offset*8//4) % 32 (an element's first of 2 words; a warp's access is served in " \
           "2 phases of 16 lanes)" in text


# ------------------------------------------------------------------------------------------------
# 16-byte elements: 4 words each, 4 phases of 8 lanes


def test_16_byte_elements(capsys):
    # contiguous row: lane i reads words 4i..4i+3; a phase of 8 lanes covers 32 consecutive words,
    # one per bank: 1-way, 0 conflicts (the old printer: 128 words in one request, "4-way").
    line = _last_line(["layout", "(2,32):(32,1)", "--banks", "--elem-bytes", "16"], capsys)
    assert line.endswith("a row up to 1-way (0 conflicts)"), line
    assert bank_conflicts(range(32), 16) == (1, 0)
    # stride 2: lane i reads words 8i..8i+3 (banks 8i % 32 + 0..3); in each 8-lane phase lanes i
    # and i+4 meet in 4 banks with different words: 2-way, 1 conflict; 4 phases: 4 conflicts.
    # (The old printer: 8 lanes per bank in one request, "8-way".)
    line = _last_line(["layout", "(2,32):(64,2)", "--banks", "--elem-bytes", "16"], capsys)
    assert line.endswith("a row up to 2-way (4 conflicts)"), line
    assert bank_conflicts([2 * i for i in range(32)], 16) == (2, 4)
    # column of (8,8):(8,1): lane i reads words 32i + 4n..+3, banks 4n..4n+3 for all 8 lanes, which
    # are one phase: 8-way, 7 conflicts
    line = _last_line(["layout", "(8,8):(8,1)", "--banks", "--elem-bytes", "16"], capsys)
    assert line.startswith("bank conflicts: reading a column is up to 8-way (7 conflicts)"), line
    assert bank_conflicts([8 * i for i in range(8)], 16) == (8, 7)


# ------------------------------------------------------------------------------------------------
# 1-, 2- and 4-byte elements: one phase per warp of 32 lanes (as before)


def test_f32_unchanged(capsys):
    # column of (32,32):(32,1): words 32i + n, all in bank n: 32-way, 31 conflicts; a row: words
    # 32m + n, one per bank: 1-way. Padding the rows to 33 spreads a column over all banks.
    line = _last_line(["layout", "(32,32):(32,1)", "--banks"], capsys)
    assert "reading a column is up to 32-way" in line and "a row up to 1-way" in line, line   # as before
    assert line == "bank conflicts: reading a column is up to 32-way (31 conflicts), a row up to 1-way (0 conflicts)"
    assert bank_conflicts([32 * i for i in range(32)], 4) == (32, 31)
    line = _last_line(["layout", "(32,32):(33,1)", "--banks", "--elem-bytes", "4"], capsys)
    assert line == "bank conflicts: reading a column is up to 1-way (0 conflicts), a row up to 1-way (0 conflicts)"
    # stride 2 f32: lanes i and i+16 share bank 2i % 32 with different words: 2-way, 1 conflict
    assert bank_conflicts([2 * i for i in range(32)], 4) == (2, 1)


def test_f16_and_u8_broadcast_within_a_word():
    # 32 contiguous f16 are 16 words (2 lanes per word: broadcast): 1-way
    assert bank_conflicts(range(32), 2) == (1, 0)
    # f16 8x64 row-major, a column: lane i reads word 32i (bank 0): 8-way, 7 conflicts
    assert bank_conflicts([64 * i for i in range(8)], 2) == (8, 7)
    # u8 stride 128 bytes: word 32i, bank 0 for all 32 lanes: 32-way
    assert bank_conflicts([128 * i for i in range(32)], 1) == (32, 31)
    assert bank_conflicts(range(32), 1) == (1, 0)


def test_rows_longer_than_a_warp_are_several_requests(capsys):
    # a row of 64 f32 is read by two warps: each touches 32 consecutive words, one per bank (the
    # interpreter counts two conflict-free requests; the old printer took the 64 lanes as one, 2-way)
    line = _last_line(["layout", "(2,64):(64,1)", "--banks"], capsys)
    assert line.endswith("a row up to 1-way (0 conflicts)"), line
    assert bank_conflicts(range(64), 4) == (1, 0)
    # conflicts add up over the requests: 64 lanes of stride 32 f32 -> two 32-way requests
    assert bank_conflicts([32 * i for i in range(64)], 4) == (32, 62)
    assert bank_conflicts([], 8) == (0, 0)


# ------------------------------------------------------------------------------------------------
# the same numbers as the interpreter


def _interpreter_conflicts(offsets, elem_bytes: int) -> int:
    """``RunStats.shared_bank_conflicts`` of one workgroup load where lane i reads ``offsets[i]``
    (the interpreter's own accounting, driven with a minimal frame)."""
    lanes = np.arange(len(offsets), dtype=np.int64)
    stats = interp.RunStats()
    fr = SimpleNamespace(stats=stats, warp=lanes // interp.WARP_SIZE, lane_in_warp=lanes % interp.WARP_SIZE,
                         nwarps=int(-(-len(offsets) // interp.WARP_SIZE)))
    buf = SimpleNamespace(kind="workgroup", itemsize=elem_bytes)
    interp._count(fr, buf, None, np.asarray(offsets, dtype=np.int64), "load")
    return stats.shared_bank_conflicts


def test_constants_match_the_interpreter():
    assert layout_print.NUM_BANKS == interp.SHARED_BANKS
    assert layout_print.BANK_BYTES == interp.BANK_BYTES
    assert layout_print.WARP_SIZE == interp.WARP_SIZE


@pytest.mark.parametrize("elem_bytes", [1, 2, 4, 8, 16])
def test_matches_the_interpreter(elem_bytes):
    rng = random.Random(elem_bytes)
    cases = [list(range(32)), [2 * i for i in range(32)], [32 * i for i in range(32)], [7] * 32,
             [3 * i for i in range(48)]]
    for _ in range(200):
        n = rng.randint(1, 96)
        stride = rng.choice([0, 1, 2, 3, 4, 8, 16, 17, 32, 33, 64])
        base = rng.randrange(0, 256)
        if rng.random() < 0.3:
            cases.append([rng.randrange(0, 512) for _ in range(n)])
        else:
            cases.append([base + stride * i for i in range(n)])
    for offsets in cases:
        _, conflicts = bank_conflicts(offsets, elem_bytes)
        assert conflicts == _interpreter_conflicts(offsets, elem_bytes), (elem_bytes, offsets)


# ------------------------------------------------------------------------------------------------
# element sizes other than 1, 2, 4, 8, 16


@pytest.mark.parametrize("bad", ["3", "0", "-4", "32"])
def test_cli_rejects_other_elem_bytes(capsys, bad):
    try:
        rc = main(["layout", "(4,4):(4,1)", "--banks", "--elem-bytes", bad])
    except SystemExit as exit_:
        rc = exit_.code
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert "usage: kernc layout" in err
    assert f"argument --elem-bytes: invalid choice: {bad} (choose from 1, 2, 4, 8, 16)" in err, err
    assert "Traceback" not in err and out == ""


@pytest.mark.parametrize("bad", [3, 0, -8, 5, 32, 4.5, True])
def test_python_api_rejects_other_elem_bytes(bad):
    lay = parse_layout("(4,4):(4,1)")
    for call in (lambda: layout_to_text(lay, banks=True, elem_bytes=bad),
                 lambda: layout_to_text(lay, elem_bytes=bad),
                 lambda: layout_to_svg(lay, banks=True, elem_bytes=bad),
                 lambda: bank_of(3, bad),
                 lambda: bank_conflicts(range(4), bad)):
        with pytest.raises(ValueError, match=r"elem_bytes must be one of 1, 2, 4, 8, 16 \(bytes\)"):
            call()
    with pytest.raises(LayoutError):   # the layout printer's error (a ValueError)
        bank_of(0, bad)


def test_valid_elem_bytes_accepted():
    lay = parse_layout("(4,4):(4,1)")
    for eb in (1, 2, 4, 8, 16):
        assert "bank conflicts:" in layout_to_text(lay, banks=True, elem_bytes=eb)
        assert "hsl(" in layout_to_svg(lay, banks=True, elem_bytes=eb)
        assert bank_of(16, eb) == (16 * eb // 4) % 32
