"""The upstream ``cse`` that ``kern_to_gpu`` schedules right after ``kern-tile-contractions``
(``pipeline.TILE_CLEANUP``, docs/compile-time.md), and the size of what the tiling pass writes:
its cooperative staging is a loop over the rounds of slots (one copy of a staged read's index
arithmetic per tile, not one per slot: conv2d_fwd 627 ops and 62 divisions, where the unrolled
staging wrote 1733 and 282, of which the cleanup merged all but 154).

Structural checks: where the cleanup is scheduled, that ``kern-lower-divisions`` gets few
divisions, that the staging is not proportional to the rounds of slots, and that the 1-D pipelines
and ``tile=False`` are unchanged. The tiled kernels' results are checked against numpy and the
untiled build in ``test_tile_nests.py``."""

from __future__ import annotations

import os
import re
from collections import Counter

import pytest

from kernc.compiler import Compilation, CompileOptions
from kernc.passes import pipeline
from kernc.passes.base import UpstreamPass
from kernc.passes.tile_contractions import TileContractions
from conftest import EXAMPLES

# an SSA division: `%5 = arith.divui %3, %c64 : index` -> ("arith.divui", "%3, %c64 : index")
_DIVISION = re.compile(r"= (arith\.(?:div|rem|ceildiv|floordiv)\w*) ([^\n{]+)")


def _names(passes) -> list[str]:
    return [p.name for p in passes]


def test_the_cleanup_follows_the_tiling_pass_only_when_it_is_scheduled():
    on = pipeline.kern_to_gpu()
    at = next(i for i, p in enumerate(on) if p.name == TileContractions.name)
    assert isinstance(on[at + 1], UpstreamPass) and on[at + 1].pipeline == pipeline.TILE_CLEANUP == "cse"
    off = _names(pipeline.kern_to_gpu(tile=False))
    # without the tiling pass: the pipeline as before (its own cleanups at the end only)
    assert off.count("cse") == 1 and off[-2:] == ["canonicalize", "cse"]
    assert _names(on) == off[:at] + ["kern-tile-contractions", "cse"] + off[at:]


@pytest.fixture(scope="module")
def conv_stages():
    """The IR text after each pass of conv2d_fwd's tiled compile (pass name -> text; the first
    ``cse`` is the tile cleanup)."""
    path = os.path.join(EXAMPLES, "conv2d_fwd.kern")
    seen: dict[str, str] = {}
    comp = Compilation(open(path, encoding="utf-8").read(), path, CompileOptions(),
                       after_pass=lambda name, text: seen.setdefault(name, text), use_cache=False)
    assert comp.signatures["conv2d_fwd"].tiles, "conv2d_fwd is expected to compile tiled"
    return seen


def test_lower_divisions_gets_far_fewer_divisions_than_the_tiling_pass_wrote(conv_stages):
    tiled = Counter(_DIVISION.findall(conv_stages["kern-tile-contractions"]))
    # the input of kern-lower-divisions is the output of the pass before it
    reaching = Counter(_DIVISION.findall(conv_stages["kern-fold-range-checks"]))
    assert tiled, "conv2d_fwd's tiled kernel divides (its im2col coordinates)"
    assert sum(reaching.values()) <= sum(tiled.values())
    # the staging unrolled per slot wrote 282 divisions, 154 left after the cleanup; as a loop over
    # the rounds of slots (and without the per-item copies of the staged reads' index arithmetic)
    # the pass writes 62
    assert sum(reaching.values()) < 100


# an op of the generic or pretty form at the start of a line: `%5 = arith.addi ...`, `scf.yield ...`
_OP = re.compile(r"^\s*(?:%[^=]+= )?\"?[a-z_]+\.[a-z_.]+", re.M)


def test_the_staging_is_not_proportional_to_the_rounds_of_slots(conv_stages):
    """conv2d_fwd (64x64x16 tiles, 256 threads: 4 rounds of slots per staged tile): one copy per
    staged read and place (before the chunk loop, in it), each in a loop over the 4 rounds; the
    unrolled staging had 16 copies and 1733 ops (61 before the pass)."""
    text = conv_stages["kern-tile-contractions"]
    assert text.count("nvgpu.device_async_copy") == 4
    assert len(re.findall(r"scf\.for %\w+ = %c0\w* to %c4\w* step %c1\w* \{", text)) == 4
    assert len(_OP.findall(text)) < 900


def test_more_rounds_add_no_copies():
    """A 128x128x16 gemm tile over 256 threads has 8 rounds of slots per staged tile (64x64: 4):
    the same 4 copies, in loops over 8 rounds."""
    path = os.path.join(EXAMPLES, "gemm.kern")
    source = open(path, encoding="utf-8").read()
    text = "@tile(128, 128, 16)\n" + source[source.index("kernel gemm"):]
    seen: dict[str, str] = {}
    Compilation(text, path, CompileOptions(), after_pass=lambda name, t: seen.setdefault(name, t), use_cache=False)
    tiled = seen["kern-tile-contractions"]
    assert tiled.count("nvgpu.device_async_copy") == 4
    assert len(re.findall(r"scf\.for %\w+ = %c0\w* to %c8\w* step %c1\w* \{", tiled)) == 4
