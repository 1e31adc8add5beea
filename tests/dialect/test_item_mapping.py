"""The item-to-thread mapping (``dialect/mapping.py``): what ``kern-to-gpu`` records, what
``kern-coalesce-views`` turns it into, and that the launcher's grid is the mapping's."""

from __future__ import annotations

import math
import os

import pytest

from kernc.compiler import Compilation, CompileOptions, context
from kernc.dialect.mapping import MAPPING_ATTR, ItemMapping, of_function
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.support.mlir import ir
from kernc.passes.base import functions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _mappings(src: str, **options) -> dict:
    text = Compilation(src, "m.kern", CompileOptions(**options)).gpu_ir()
    with context():
        module = ir.Module.parse(text)
        return {ir.StringAttr(fn.attributes["sym_name"]).value:
                (of_function(fn), KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value))
                for fn in functions(module, {"gpu.func"})}


SRC = """
layout rowmaj(R, C) = (R, C):(C, 1);
kernel saxpy(a: f32, x: f32[n] read, y: f32[n] add) over n { y = a * x; }
@block(128)
kernel transpose(a: f32[R, C] view as rowmaj(R, C), b: f32[C, R] view as rowmaj(C, R)) over (i, j) in (R, C) {
    b[j, i] = a[i, j];
}
kernel wide(y: f32[n, m] view as rowmaj(n, m)) over (i, j) in (n, 2 * m) {
    if j < m { y[i, j] = 1.0; }
}
"""


def test_kern_to_gpu_maps_items_linearly():
    maps = _mappings(SRC, coalesce=False)
    saxpy, _ = maps["saxpy"]
    assert saxpy == ItemMapping.linear(256, ["n"]) and saxpy.tile is None and saxpy.values == 1
    assert saxpy.thread_values == "(256,1):(1,0)" and not saxpy.grid_stride
    assert saxpy.blocks({"n": 1000}) == 4 and saxpy.grid == "ceil((n)/256)"
    assert [saxpy.tile_position(t, 0) for t in (0, 5, 255)] == [(0,), (5,), (255,)]
    transpose, _ = maps["transpose"]
    assert transpose == ItemMapping.linear(128, ["R", "C"])
    assert transpose.blocks({"R": 3, "C": 100}) == 3  # ceil(300 / 128)
    wide, sig = maps["wide"]  # an extent that is not a size symbol: the linear index only
    assert wide.extents == (sig.problem_size,) and wide.tile is None


def test_coalesce_views_maps_items_to_tiles():
    transpose, sig = _mappings(SRC)["transpose"]
    # @block(128): 4 rows of 32 threads per pass, 16x32 tiles, 4 items per thread
    assert transpose.tile == (16, 32) and transpose.values == 4 and transpose.grid_stride
    assert transpose.thread_values == "((32,4),4):((16,1),4)"
    assert sig.tiles == transpose.launch_tiles() == [["R", 16], ["C", 32]]
    assert transpose.grid == "ceil(R/16)*ceil(C/32)"
    for tid in range(128):
        for k in range(4):  # kern-coalesce-views: rows tid/32 + 4k of column tid % 32
            assert transpose.tile_position(tid, k) == (tid // 32 + 4 * k, tid % 32)
    assert _mappings(SRC)["saxpy"][0].tile is None  # nothing to stage: still linear


@pytest.mark.parametrize("block", [64, 128, 256, 512, 1024])
def test_each_tile_item_has_one_thread(block):
    rows = block // 32
    ti = min(32, 4 * rows)
    for extents, tiled in ((["R", "C"], (0, 1)), (["N", "C", "H", "W"], (1, 3))):
        m = ItemMapping.tiled(block, extents, tiled, (ti, 32))
        assert m.problem() is None and m.values == ti // rows
        seen = {m.tile_position(t, k) for t in range(block) for k in range(m.values)}
        assert len(seen) == math.prod(m.tile) == block * m.values
        assert all(0 <= c < s for pos in seen for c, s in zip(pos, m.tile))


@pytest.mark.parametrize("R,C,N", [(1, 1, 1), (5, 700, 1), (33, 31, 1), (64, 64, 3), (1000, 3, 2)])
def test_the_launch_grid_is_the_mapping_s(R, C, N):
    """The launcher's tile count (``backend/launch_policy.py``) and ``ceil(P / B)`` agree with
    :meth:`ItemMapping.blocks`, what the launcher will read in phase two."""
    from kernc.backend import launch_policy

    maps = _mappings(SRC)
    tiled, sig = maps["transpose"]
    env = {"R": R, "C": C}
    assert tiled.blocks(env) == launch_policy.tile_count(sig, R * C, env)
    linear, _ = _mappings(SRC, coalesce=False)["transpose"]
    assert linear.blocks(env) == math.ceil(R * C / 128)
    with open(os.path.join(ROOT, "bench", "kern", "permute.kern")) as f:
        (permute, psig), = _mappings(f.read()).values()
    assert permute.tile == (1, 32, 1, 32)  # (c, w) tiled, n and h batch coordinates
    env = {"N": N, "C": C, "H": R, "W": 7}
    assert permute.blocks(env) == launch_policy.tile_count(psig, N * C * R * 7, env)


def test_round_trip_and_malformed_mappings():
    m = ItemMapping.tiled(256, ["N", "R", "C"], (1, 2), (32, 32))
    assert ItemMapping.from_json(m.to_json()) == m and m.tile == (1, 32, 32)
    for bad, message in [
        ("[]", "malformed"), ("{", "malformed"), ('{"block": 256}', "malformed"),
        (m.to_json().replace('"block":256', '"block":100'), "power of two"),
        (m.to_json().replace('"values":4', '"values":2'), "a tile of 1024 items"),
        (m.to_json().replace('"tile":[1,32,32]', '"tile":[32,32]'), "one positive size per extent"),
        (ItemMapping.linear(64, ["n"]).to_json().replace('"values":1', '"values":2'), "linear mapping"),
    ]:
        with pytest.raises(ValueError) as info:
            ItemMapping.from_json(bad)
        assert message in str(info.value)
    with pytest.raises(ValueError):
        ItemMapping.tiled(256, ["R", "C"], (0, 1), (4, 32))  # 8 rows per pass do not divide 4
    with pytest.raises(ValueError):
        m.tile_position(256, 0)


def test_a_malformed_mapping_is_a_located_error_of_kernc_opt(tmp_path, capsys):
    from kernc.cli import main

    kern_ir, gpu = tmp_path / "t.kern.mlir", tmp_path / "t.mlir"
    assert main(["compile", os.path.join(ROOT, "examples", "transpose.kern"), "--emit", "kern",
                 "-o", str(kern_ir)]) == 0
    assert main(["opt", str(kern_ir), "--passes", "kern-to-gpu", "-o", str(gpu)]) == 0
    text = gpu.read_text()
    assert text.count(MAPPING_ATTR) == 1
    assert text.count("\\22values\\22:1") == 1
    gpu.write_text(text.replace("\\22values\\22:1", "\\22values\\22:3"))
    capsys.readouterr()
    assert main(["opt", str(gpu), "--passes", "kern-coalesce-views", "-o", str(tmp_path / "o.mlir")]) == 1
    err = capsys.readouterr().err
    assert "kernel 'transpose': the kern.mapping attribute: bad item mapping: a linear mapping" in err
    assert "Traceback" not in err and not (tmp_path / "o.mlir").exists()
