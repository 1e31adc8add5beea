"""The convolutions with ``tma=True``: conv2d_fwd_f16's im2col read ``x`` loaded by TMA's im2col mode
(``passes/wgmma_contractions_im2col.py``, rows = pixels: one copy per chunk into the K-major tile)
and its filter ``w[k, r, s, c]`` by a 2-d box over the flattened ``(r, s, c)``; conv2d_wgrad_f16's
``x`` by im2col-mode copies too (rows = filter taps: one copy per 64-row block of its MN-major tile,
64 channels by the chunk's 64 pixels) and its ``dy`` by MN-major 64x64 boxes. On the CPU
interpreter bit for bit equal to the per-thread staging build (padding, strides, dilations, odd
N*OH*OW and K, C past one chunk); the launches the maps cannot take running the ``tma=False``
build with the reason; the race when the wait is removed; the recogniser on hand-written
convolutions and on reads it must refuse; the remarks; ptxas."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import kernc
from kernc.backend import binding, cpu, toolkit
from kernc.compiler import Compilation, CompileOptions
from kernc.support.errors import KerncRuntimeError
from conftest import EXAMPLES
from tensor_core_helpers import compiled_sm90a, copy_inputs, fwd_inputs, sm90_cupy, wgrad_inputs

# (N, H, W, C, K, R, S, stride, pad, dil): C a multiple of 64 (one filter tap per chunk)
TMA_SHAPES = [(2, 6, 7, 64, 19, 3, 3, (1, 1), (1, 1), (1, 1)),    # 84 rows: one tile, padding
              (1, 9, 8, 128, 130, 3, 2, (2, 1), (1, 0), (1, 2)),  # 2 chunks per tap, K past a tile
              (3, 11, 9, 64, 5, 2, 3, (1, 2), (0, 2), (2, 1)),    # 2 tiles of rows, the last partial
              (1, 1, 1, 64, 1, 1, 1, (1, 1), (0, 0), (1, 1))]     # one output pixel


def _run(mod, inputs, name="conv2d_fwd_f16", out="y"):
    """``(out array, LaunchResult)`` of ``mod.name`` on a copy of ``inputs``."""
    args = copy_inputs(inputs)
    ran = getattr(mod, name)(**args)
    return args[out], ran


@pytest.mark.parametrize("shape", TMA_SHAPES, ids=lambda s: "x".join(map(str, s[:7])))
def test_the_im2col_build_is_bitwise_the_staged_build(shape):
    mod = compiled_sm90a("conv2d_fwd_f16", tma=True)
    sig = mod._compilation.signatures["conv2d_fwd_f16"]
    assert [(p.name, p.tensor_map.get("mode")) for p in sig.extra] == [("__tma_x", "im2col"), ("__tma_w", None)]
    inputs = fwd_inputs(*shape)
    got, ran = _run(mod, inputs)
    assert (ran.tma, ran.no_tma) == (True, None)
    want, plain = _run(compiled_sm90a("conv2d_fwd_f16"), inputs)
    assert plain.tma is None
    assert not np.isnan(got).any()
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def _bound(mod, inputs):
    return binding.bind(mod.conv2d_fwd_f16.signature, (), copy_inputs(inputs), cpu.is_host_array, "cpu")


@pytest.mark.parametrize("shape, reason", [
    ((1, 5, 5, 96, 7, 3, 3, (1, 1), (1, 1), (1, 1)),
     "im2col tensor map parameter '__tma_x': C = 96 is not a multiple of the 64-channel chunk: a chunk "
     "would straddle two filter taps"),
    ((1, 4, 5, 33, 7, 1, 1, (1, 1), (0, 0), (1, 1)),  # (x's C % 64 first; w's 66-byte row after)
     "im2col tensor map parameter '__tma_x': C = 33 is not a multiple of the 64-channel chunk"),
    ((1, 5, 6, 64, 7, 3, 3, (1, 1), (200, 1), (1, 1)),
     "im2col tensor map parameter '__tma_x': the padding / dilated filter put the pixel box's lower corner "
     "(-1, -200) (W, H) outside -128..127"),
])
def test_a_geometry_the_map_cannot_take_runs_the_build_without_tma(shape, reason):
    mod = compiled_sm90a("conv2d_fwd_f16", tma=True)
    inputs = fwd_inputs(*shape)
    assert _bound(mod, inputs).no_tma.startswith("kernel 'conv2d_fwd_f16', " + reason)
    got, ran = _run(mod, inputs)
    assert ran.tma is False and ran.no_tma.startswith("kernel 'conv2d_fwd_f16', " + reason)
    want, _ = _run(compiled_sm90a("conv2d_fwd_f16"), inputs)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_cropped_output_runs_the_build_without_tma():
    """An output smaller than the convolution's (a valid kernel: fewer items): the pixel box's walk
    would wrap rows at the convolution's OW, not at this OW (CubeCL's note on the width)."""
    mod = compiled_sm90a("conv2d_fwd_f16", tma=True)
    inputs = fwd_inputs(1, 5, 6, 64, 3, 3, 3, (1, 1), (1, 1), (1, 1))
    inputs["y"] = inputs["y"][:, :, :4].copy()
    got, ran = _run(mod, inputs)
    assert ran.tma is False and "the output is 5 x 4, not the convolution's 5 x 6" in ran.no_tma
    want, _ = _run(compiled_sm90a("conv2d_fwd_f16"), inputs)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


WAIT = re.compile(r"nvvm\.mbarrier\.try_wait\.parity [^\n]*\n")


def test_without_the_waits_wgmma_reads_a_copy_in_flight():
    from kernc.backend.interpreter import Interpreter
    from kernc.compiler import context
    from kernc.support.mlir import ir

    mod = compiled_sm90a("conv2d_fwd_f16", tma=True)
    text = mod._compilation.gpu_ir()
    assert len(WAIT.findall(text)) == 1
    inputs = fwd_inputs(*TMA_SHAPES[0])
    for t, ok in ((text, True), (WAIT.sub("\n", text), False)):
        bound = _bound(mod, inputs)
        with context():
            it = Interpreter(ir.Module.parse(t))
        run = lambda: it.run("conv2d_fwd_f16", bound.grid, bound.block, bound.args)  # noqa: E731
        if ok:
            run()
            want, _ = _run(compiled_sm90a("conv2d_fwd_f16"), inputs)
            np.testing.assert_array_equal(bound.args[2].reshape(want.shape).view(np.uint32), want.view(np.uint32))
        else:
            with pytest.raises(KerncRuntimeError, match=r"operand read of workgroup buffer .* the element was "
                                                        r"written by the cp\.async\.bulk\.tensor at"):
                run()


def test_the_remarks_say_how_each_operand_is_loaded(capsys):
    text = open(os.path.join(EXAMPLES, "conv2d_fwd_f16.kern"), encoding="utf-8").read()
    Compilation(text, "t.kern", CompileOptions(arch="sm_90a", tma=True, remarks=True), use_cache=False).gpu_ir()
    err = capsys.readouterr().err
    assert ("t.kern:25:26: remark: 'x' of 'conv2d_fwd_f16' loaded by the tensor memory accelerator: per chunk one "
            "cp.async.bulk.tensor.4d.im2col of 64 channels x 128 pixels (the rows (n, oh, ow) from the tile's "
            "first, the chunk's filter tap as its im2col offsets (s*dw, r*dh)") in err
    assert "(at launch C a multiple of 64, the output the convolution's" in err
    assert ("t.kern:26:26: remark: 'w' of 'conv2d_fwd_f16' loaded by the tensor memory accelerator: per chunk one "
            "cp.async.bulk.tensor.2d of the box 64x128") in err
    assert "not loaded by TMA" not in err


HAND = """
kernel conv(x: f16[N, H, W, C] view, w: f16[K, R, S, C] view, y: f32[N, OH, OW, K] view, {params})
        over (n, oh, ow, k) in (N, OH, OW, K) {{
    let acc = 0.0;
    for r in 0..R {{
        for s in 0..S {{
            for c in 0..C {{
                acc += x.checked({read}) * w[k, r, s, c];
            }}
        }}
    }}
    y[n, oh, ow, k] = acc;
}}
"""


def _hand(read: str, params: str = "sh: index, sw: index, ph: index, pw: index, dh: index, dw: index"):
    text = HAND.format(read=read, params=params)
    comp = Compilation(text, "t.kern", CompileOptions(arch="sm_90a", tma=True, remarks=True), use_cache=False)
    comp.gpu_ir()
    return comp


def test_a_hand_written_convolution_is_the_same_im2col_read(capsys):
    comp = _hand("n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c")
    m = comp.signatures["conv"].extra[0].tensor_map
    assert (m["mode"], m["stride"], m["dilation"], m["pad"], m["filter"], m["out"]) == (
        "im2col", ["sw", "sh"], ["dw", "dh"], ["pw", "ph"], ["S", "R"], ["OW", "OH"])
    # literals: stride 2 along W, no padding along H
    lit = _hand("n, oh + r, ow*2 + s*dw - 1, c", "dw: index").signatures["conv"].extra[0].tensor_map
    assert (lit["stride"], lit["dilation"], lit["pad"]) == (["2", "1"], ["dw", "1"], ["1", "0"])
    mod = kernc.compile(HAND.format(read="n, oh + r, ow*2 + s*dw - 1, c", params="dw: index"),
                        arch="sm_90a", tma=True)
    plain = kernc.compile(HAND.format(read="n, oh + r, ow*2 + s*dw - 1, c", params="dw: index"), arch="sm_90a")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 7, 9, 64)).astype(np.float16)
    w = rng.standard_normal((6, 2, 3, 64)).astype(np.float16)
    ys = [np.full((2, 6, 4, 6), np.nan, np.float32) for _ in range(2)]  # OW = (9 + 2 - 2*2 - 1)//2 + 1
    ran = mod.conv(x, w, ys[0], dw=2)
    plain.conv(x, w, ys[1], dw=2)
    assert ran.tma is True
    np.testing.assert_array_equal(ys[0].view(np.uint32), ys[1].view(np.uint32))


@pytest.mark.parametrize("read, why", [
    ("n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c + 1", "its channel coordinate is not the innermost loop's variable"),
    ("oh, n*sh + r*dh - ph, ow*sw + s*dw - pw, c", "its image coordinate is not 'n'"),
    ("n, oh*sh - r*dh + ph, ow*sw + s*dw - pw, c", "its H stride or dilation is not a positive kernel parameter"),
    ("n, oh*sh + s*dh - ph, ow*sw + s*dw - pw, c", "one loop variable is both its H and W filter tap"),
    ("n, oh*ow + r*dh - ph, ow*sw + s*dw - pw, c", "its spatial coordinates are not im2col's"),
    ("n, oh*sh*dh + r - ph, ow*sw + s*dw - pw, c", "its H stride or dilation is not a positive kernel parameter"),
    ("n, oh*sh + r*dh + ph, ow*sw + s*dw - pw, c", "its H padding is not a kernel parameter or literal subtracted"),
    ("n, oh*sh + r*dh - ph, ow*sw + k*dw - pw, c", "its coordinates are not sums of products"),
])
def test_a_read_that_is_not_im2col_keeps_the_stores(read, why, capsys):
    comp = _hand(read)
    err = capsys.readouterr().err
    if "k*dw" in read:  # (it reads the item's own element: not staged at all)
        assert not any(p.kind == "tensor_map" and p.tensor_map["view"] == "x" for p in comp.signatures["conv"].extra)
        return
    assert f"'x' of 'conv' not loaded by TMA: {why}" in err, err
    assert [p.tensor_map["view"] for p in comp.signatures["conv"].extra] == ["w"]


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
@pytest.mark.parametrize("index_bits", [32, 64])
def test_ptxas_takes_the_im2col_build_without_spills(index_bits):
    ptx = compiled_sm90a("conv2d_fwd_f16", tma=True)._compilation.ptx(index_bits)
    assert ptx.count("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.im2col") == 2
    assert ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes") == 2
    res = toolkit.run_ptxas(ptx, "sm_90a")
    assert res.ok, res.log
    assert res.spills["conv2d_fwd_f16"] == (0, 0)
    print("conv2d_fwd_f16 registers", index_bits, res.registers["conv2d_fwd_f16"])


# (N, OH, OW, C, K, R, S, stride, pad, dil) of conv2d_wgrad_f16: C a multiple of 64
WGRAD_SHAPES = [(2, 5, 7, 64, 32, 3, 2, (1, 2), (1, 1), (2, 1)),   # 70 pixels: 2 chunks, the last partial
                (1, 3, 4, 128, 24, 3, 3, (1, 1), (1, 1), (1, 1)),  # 1152 rows (r, s, c): 9 row tiles
                (1, 4, 3, 64, 8, 1, 1, (1, 1), (0, 0), (1, 1))]    # 64 rows: the second block clamped


def _wgrad(mod, inputs):
    return _run(mod, inputs, "conv2d_wgrad_f16", "gw")


@pytest.mark.parametrize("shape", WGRAD_SHAPES, ids=lambda s: "x".join(map(str, s[:7])))
def test_the_weight_gradient_by_tma_is_bitwise_the_staged_build(shape):
    mod = compiled_sm90a("conv2d_wgrad_f16", tma=True)
    m = mod._compilation.signatures["conv2d_wgrad_f16"].extra[1].tensor_map
    assert (m["mode"], m["rows"], m["major"], m["box"], m["copies"], m["loop"]) == (
        "im2col", "taps", "mn", [64, 64], 2, "M")
    inputs = wgrad_inputs(*shape)
    got, ran = _wgrad(mod, inputs)
    assert (ran.tma, ran.no_tma) == (True, None)
    want, _ = _wgrad(compiled_sm90a("conv2d_wgrad_f16"), inputs)
    assert not np.isnan(got).any()
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_a_weight_gradient_whose_loop_is_not_the_pixel_walk_falls_back():
    """dy with fewer columns M than N*OH*OW: the loop over m stops early, the pixel walk would not."""
    mod = compiled_sm90a("conv2d_wgrad_f16", tma=True)
    inputs = wgrad_inputs(*WGRAD_SHAPES[0])
    inputs["dy"] = inputs["dy"][:64].copy()  # (stored M x K: the layout kxm)
    got, ran = _wgrad(mod, inputs)
    assert ran.tma is False and ran.no_tma.endswith(
        "its loop over m ends at M = 64, not N*OH*OW = 70: the pixel walk would not stop where the loop does")
    want, _ = _wgrad(compiled_sm90a("conv2d_wgrad_f16"), inputs)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


WGRAD_HAND = """
kernel wg(x: f16[N, H, W, C] view, dy: f16[N, OH, OW, K] view, gw: f32[K, R, S, C] view,
          sh: index, sw: index, ph: index, pw: index, dh: index, dw: index)
        over (k, r, s, c) in (K, R, S, C) {
    let acc = 0.0;
    for n in 0..N {
        for oh in 0..OH {
            for ow in 0..OW {
                acc += dy[n, oh, ow, k] * x.checked(n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c);
            }
        }
    }
    gw[k, r, s, c] = acc;
}
"""


def test_a_hand_written_weight_gradient_is_an_im2col_read_over_its_loops(capsys):
    comp = Compilation(WGRAD_HAND, "t.kern", CompileOptions(arch="sm_90a", tma=True, remarks=True), use_cache=False)
    comp.gpu_ir()
    err = capsys.readouterr().err
    maps = {p.tensor_map["view"]: p.tensor_map for p in comp.signatures["wg"].extra}
    assert (maps["x"]["rows"], maps["x"]["out"], maps["x"]["filter"]) == ("taps", ["OW", "OH"], ["S", "R"])
    assert "loop" not in maps["x"]  # (three loops: n ends at the view's N, OH/OW checked at launch)
    assert "'x' of 'wg' loaded by the tensor memory accelerator: per chunk one cp.async.bulk.tensor.4d.im2col per " \
           "64-row block of the MN-major tile" in err
    mod, plain = (kernc.compile(WGRAD_HAND, arch="sm_90a", tma=t) for t in (True, False))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 5, 64)).astype(np.float16)
    dy = rng.standard_normal((2, 3, 5, 16)).astype(np.float16)  # stride (2, 1), padding 1, dilation 1, R = S = 3
    gws = [np.full((16, 3, 3, 64), np.nan, np.float32) for _ in range(2)]
    geometry = dict(sh=2, sw=1, ph=1, pw=1, dh=1, dw=1)
    ran = mod.wg(x, dy, gws[0], **geometry)
    plain.wg(x, dy, gws[1], **geometry)
    assert ran.tma is True, ran.no_tma
    np.testing.assert_array_equal(gws[0].view(np.uint32), gws[1].view(np.uint32))


@pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")
@pytest.mark.parametrize("index_bits", [32, 64])
def test_ptxas_takes_the_weight_gradients_tma_build_without_spills(index_bits):
    ptx = compiled_sm90a("conv2d_wgrad_f16", tma=True)._compilation.ptx(index_bits)
    assert ptx.count("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.im2col") == 4
    res = toolkit.run_ptxas(ptx, "sm_90a")
    assert res.ok, res.log
    assert res.spills["conv2d_wgrad_f16"] == (0, 0)
    print("conv2d_wgrad_f16 registers", index_bits, res.registers["conv2d_wgrad_f16"])


def test_an_unchecked_read_with_padding_runs_the_build_that_reports_it():
    """Trial: a plain x[...] (no .checked) with padding 1 ran by TMA, whose zero fill hid the read
    outside the image; the tma=False build reports it. A padded unchecked read falls back; without
    padding it is in bounds and TMA runs."""
    from kernc.support.errors import KerncRuntimeError

    src = HAND.replace("x.checked(", "x(").replace("x({read})", "x[{read}]").format(
        read="n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c", params="sh: index, sw: index, ph: index, pw: index, "
        "dh: index, dw: index")
    mod = kernc.compile(src, arch="sm_90a", tma=True)
    assert mod._compilation.signatures["conv"].extra[0].tensor_map["unchecked"] is True
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 5, 5, 64)).astype(np.float16)
    w = rng.standard_normal((3, 3, 3, 64)).astype(np.float16)
    with pytest.raises(KerncRuntimeError, match="out-of-bounds load from buffer 'x'"):
        mod.conv(x, w, np.zeros((1, 5, 5, 3), np.float32), sh=1, sw=1, ph=1, pw=1, dh=1, dw=1)
    y = np.full((1, 3, 3, 3), np.nan, np.float32)
    assert mod.conv(x, w, y, sh=1, sw=1, ph=0, pw=0, dh=1, dw=1).tma is True
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    want = np.zeros((1, 3, 3, 3))
    for r in range(3):
        for s_ in range(3):
            want += np.einsum("nhwc,kc->nhwk", xd[:, r:r + 3, s_:s_ + 3], wd[:, r, s_])
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-3 * np.sqrt(576))


@pytest.mark.gpu
@pytest.mark.parametrize("name, shape", [("conv2d_fwd_f16", TMA_SHAPES[1]), ("conv2d_wgrad_f16", WGRAD_SHAPES[0])])
def test_on_a_gpu_the_im2col_maps_give_the_staged_builds_bits(name, shape):
    """On an sm_90 device: the driver's im2col map (cuTensorMapEncodeIm2col) and the PTX copy agree
    with the interpreter's reading of PTX ISA 5.5.4 (the pixel walk, the corners, the offsets) iff
    the TMA build's bits are the staged build's. (The sums' order on tensor cores is the same in
    both builds: only the tiles' loads differ.)"""
    cp = sm90_cupy()
    inputs = (fwd_inputs if name == "conv2d_fwd_f16" else wgrad_inputs)(*shape)
    out = "y" if name == "conv2d_fwd_f16" else "gw"
    got, want = ({k: cp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in inputs.items()} for _ in range(2))
    ran = getattr(compiled_sm90a(name, tma=True), name)(**got)
    assert ran.tma is True, ran.no_tma
    getattr(compiled_sm90a(name), name)(**want)
    np.testing.assert_array_equal(cp.asnumpy(got[out]).view(np.uint32), cp.asnumpy(want[out]).view(np.uint32))
