"""The upstream ``cse`` that ``kern_to_gpu`` schedules right after ``kern-tile-contractions``
(``pipeline.TILE_CLEANUP``, docs/compile-time.md): a tiled convolution repeats the index arithmetic
of its cooperative loads for every element a thread loads; merged before ``kern-lower-divisions``,
each division is expanded once instead of once per copy (conv2d_fwd's gpu stage: 0.4-0.7x its time).

Structural checks: where the cleanup is scheduled, that ``kern-lower-divisions`` gets far fewer
divisions than the tiling pass wrote, and that the 1-D pipelines and ``tile=False`` are unchanged. The
tiled kernels' results are checked against numpy and the untiled build in ``test_tile_nests.py``.
"""

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
    at = next(i for i, p in enumerate(on) if isinstance(p, TileContractions))
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
    # the tiling pass writes each division once per loaded element (282 here); after the cleanup
    # the copies left (154) are in sibling regions (one per guarded load), which cse does not merge
    assert sum(reaching.values()) < 0.7 * sum(tiled.values())
