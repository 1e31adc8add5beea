"""Objects that show themselves: ``repr()`` of a compiled module, a kernel and a launch result
(``kernc/display.py``), ``RunStats`` as an aligned table (``backend/stats_table.py``)."""

from __future__ import annotations

import numpy as np

from conftest import compiled_example


def test_repr_of_saxpy_names_it_and_its_parameters():
    mod = compiled_example("saxpy")
    text = repr(mod)
    assert text.startswith("<kernc module ") and "examples/saxpy.kern (sm_90)" in text
    assert "saxpy(a: f32, x: f32[n] read, y: f32[n] add) over n, block 256" in text
    assert repr(mod.saxpy) == "<kernc kernel saxpy(a: f32, x: f32[n] read, y: f32[n] add) over n, block 256>"
    html = mod._repr_html_()
    assert "saxpy" in html and "examples/saxpy.kern" in html


def test_kernel_repr_shows_accessors_layouts_and_block():
    text = repr(compiled_example("edge_update").edge_update)
    assert "pos: f32[V, 3] read shared(src) as (V,3):(4,1)" in text
    assert "force: f32[V, 3] add shared_sum(dst)" in text and "energy: f32[1] add sum" in text
    assert "over E, block 256" in text and "src.unique" not in text  # hidden tables left out
    assert "block 128>" in repr(compiled_example("particles").particles)
    mod = compiled_example("gather_scatter")
    assert "x: f32[m] read indexed(idx)" in repr(mod.gather_scatter)


def test_launch_result_and_stats_table():
    mod = compiled_example("saxpy")
    x = np.ones(600, np.float32)
    y = np.ones(600, np.float32)
    res = mod.saxpy(2.0, x, y)
    assert repr(res) == ("<kernc launch on cpu: P=600 (n=600), 3 blocks of 256; 38 load requests / "
                         "150 sectors, 19 store requests / 75 sectors>")
    lines = str(res.stats).splitlines()
    assert len(lines) == len(res.stats.to_dict())
    assert lines[1].split()[:2] == ["global_load_sectors", "150"]
    assert lines[1].endswith("3.95 per request")  # 150 / 38
    # aligned: every value ends in the same column
    ends = {line.index(str(v)) + len(str(v)) for line, v in zip(lines, res.stats.to_dict().values())}
    assert len(ends) == 1
    assert "<table>" in res.stats._repr_html_()
    one = mod.saxpy(2.0, x[:10], y[:10])
    assert ", 1 block of 256;" in repr(one)  # (it said "1 blocks")


def test_launch_repr_says_whether_it_ran_tiled_and_on_tensor_cores():
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) % 7
    b = np.ones((64, 64), np.float32)
    c = np.zeros((64, 64), np.float32)
    res = compiled_example("gemm").gemm(a, b, c)
    assert res.tiled is True and ", tiled" in repr(res) and "tensor cores" not in repr(res)
    small = compiled_example("gemm").gemm(a[:2, :3].copy(), b[:3, :2].copy(), np.zeros((2, 2), np.float32))
    assert small.tiled is False and ", untiled (smaller than one block tile)" in repr(small)
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    res = compiled_example("gemm_f16").gemm_f16(a16, b16, c)
    assert res.tensor_cores == "mma.sync" and ", tensor cores (mma.sync)" in repr(res)
    np.testing.assert_array_equal(c, a16.astype(np.float32) @ b16.astype(np.float32))


def test_a_strided_view_the_kernel_only_reads_is_not_said_to_be_written():
    """Regression: the C-contiguity error said "so that results are written where you can see them"
    of every ``view`` param, also of one the kernel only reads (gemm's ``a``)."""
    import pytest

    from kernc.support.errors import KerncLaunchError
    a = np.ones((8, 8), np.float32)
    c = np.zeros((4, 4), np.float32)
    with pytest.raises(KerncLaunchError) as err:
        compiled_example("gemm").gemm(a[:4, :8], a[:8, :4], c)
    assert "argument 'b': the array is not C-contiguous" in str(err.value)
    assert "written" not in str(err.value)
    with pytest.raises(KerncLaunchError, match="argument 'c'.*so that results are written"):
        compiled_example("gemm").gemm(a[:4].copy(), a[:, :4].copy(), np.zeros((4, 8), np.float32)[:, :4])
