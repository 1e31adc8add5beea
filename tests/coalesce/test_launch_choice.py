"""The launch-time choice between a kernel staged by kern-coalesce-views and the same kernel
compiled without it (``launch_policy.staging_pays``).

A staged kernel launches one block per tile of its tile plane; with an extent far below the tile's
(a 4096 x 2 transpose, an NHWC permute of 2 channels) most of every tile is empty, and on an H200
such a launch ran up to 10x slower than the unstaged kernel (see ``staging_pays``). The CPU
interpreter runs the same choice, so its results and traffic counters show which kernel ran."""

from __future__ import annotations

import json

import numpy as np
import pytest

import kernc
from kernc.backend import binding, launch_policy

SRC = """
layout rowmaj(R, C) = (R, C):(C, 1);
layout nchw(N, C, H, W) = (N, C, H, W):(C * H * W, H * W, W, 1);
layout nhwc(N, H, W, C) = (N, H, W, C):(H * W * C, W * C, C, 1);
kernel transpose(a: f32[R, C] view as rowmaj(R, C), b: f32[C, R] view as rowmaj(C, R))
        over (i, j) in (R, C) {
    b[j, i] = a[i, j];
}
kernel to_nhwc(x: f32[N, C, H, W] view as nchw(N, C, H, W), y: f32[N, H, W, C] view as nhwc(N, H, W, C))
        over (n, c, h, w) in (N, C, H, W) {
    y[n, h, w, c] = x[n, c, h, w];
}
"""


@pytest.fixture(scope="module")
def mods():
    return kernc.compile(SRC), kernc.compile(SRC, coalesce=False)


def test_tile_fill_and_unstaged_sector_use():
    sig = kernc.compile(SRC)._compilation.signatures["transpose"]
    assert sig.tiles == [["R", 32], ["C", 32]]
    # b[j, i] at j*R + i, as the unstaged kernel stores it
    assert sig.staged == {"extents": ["R", "C"], "views": [["b", ["1", "R"]]]}
    assert launch_policy.tile_fill(sig, {"R": 4096, "C": 1}) == 1 / 32
    assert launch_policy.tile_fill(sig, {"R": 64, "C": 64}) == 1.0
    assert launch_policy.tile_fill(sig, {"R": 33, "C": 33}) == 33 * 33 / (64 * 64)
    assert launch_policy.tile_fill(sig, {"R": 7, "C": 0}) is None
    use = launch_policy.unstaged_sector_use
    assert use(sig, {"R": 4096, "C": 1}) == use(sig, {"R": 1, "C": 4096}) == 1.0  # a copy
    # over the first warp: runs of 8, 4 and 2 elements of b's rows
    assert use(sig, {"R": 4096, "C": 4}) == 1.0
    assert use(sig, {"R": 4096, "C": 8}) == 0.5  # half sectors
    assert use(sig, {"R": 4096, "C": 16}) == 0.25
    assert use(sig, {"R": 4097, "C": 8}) == 4 / 11  # three of the eight runs straddle two sectors
    assert use(sig, {"R": 2, "C": 4096}) == 0.5  # elements 2 apart
    assert use(sig, {"R": 6, "C": 4096}) == 4 / 24
    assert use(sig, {"R": 64, "C": 64}) == 4 / 32  # elements 64 apart
    assert use(sig, {"R": 3, "C": 5}) == 1.0  # 15 elements: 2 sectors, both needed
    plain = kernc.compile(SRC, coalesce=False)._compilation.signatures["transpose"]
    assert launch_policy.tile_fill(plain, {"R": 4096, "C": 1}) is None and plain.staged is None
    assert launch_policy.staging_pays(plain, {"R": 4096, "C": 1})


def test_sector_use_counts_element_bytes():
    src = SRC.replace("f32", "f64")
    sig = kernc.compile(src)._compilation.signatures["transpose"]
    assert launch_policy.unstaged_sector_use(sig, {"R": 2, "C": 4096}) == 0.5  # 16 bytes apart
    assert launch_policy.unstaged_sector_use(sig, {"R": 4, "C": 4096}) == 0.25
    assert launch_policy.unstaged_sector_use(sig, {"R": 4096, "C": 4}) == 1.0  # runs of 8 doubles


#: Skinny transposes measured on an H200, about 2^24 f32 elements (2^25 f16, 2^23 f64):
#: {(R, C): (GB/s staged, GB/s unstaged)}, the data ``launch_policy.staging_pays`` was calibrated on.
MEASURED_GBS = {
    (16777216, 1): (243, 2537), (1, 16777216): (236, 2522), (8388608, 2): (479, 2513),
    (2, 8388608): (465, 1666), (5592405, 3): (702, 2452), (3, 5592405): (676, 1131),
    (4194304, 4): (925, 2502), (4194305, 4): (926, 2432), (4, 4194304): (896, 950), (4, 4194305): (885, 854),
    (3355443, 5): (1140, 2385), (5, 3355443): (1099, 746), (2796202, 6): (1334, 2304),
    (6, 2796202): (1282, 618), (2396745, 7): (1540, 2296), (7, 2396745): (1483, 554),
    (2097152, 8): (1728, 2433), (2097153, 8): (1719, 2237), (8, 2097152): (1666, 517),
    (8, 2097153): (1659, 480), (1864128, 9): (1904, 2091), (1864135, 9): (1904, 1961),
    (9, 1864128): (1823, 506), (9, 1864135): (1812, 483), (1677696, 10): (2089, 2200),
    (1677721, 10): (2085, 1885), (10, 1677696): (1991, 501), (10, 1677721): (1969, 463),
    (1525184, 11): (2245, 1899), (1525201, 11): (2237, 1718), (11, 1525184): (2138, 473),
    (11, 1525201): (2122, 448), (1398080, 12): (2416, 1932), (1398101, 12): (2396, 1856),
    (12, 1398080): (2281, 461), (12, 1398101): (2259, 437), (1048576, 16): (2901, 1549),
    (16, 1048576): (2752, 370), (838860, 20): (3134, 1041), (20, 838860): (2966, 265),
    (699050, 24): (2840, 910), (24, 699050): (3169, 219), (541200, 31): (3482, 536),
    (31, 541200): (3372, 150), (524288, 32): (3521, 540), (32, 524288): (3593, 150)
}

MEASURED_F16_GBS = {
    (33554432, 1): (115, 1484), (33554433, 1): (115, 1483), (1, 33554432): (114, 1484),
    (1, 33554433): (114, 1483), (16777216, 2): (228, 1478), (16777217, 2): (228, 1476),
    (2, 16777216): (224, 1301), (2, 16777217): (224, 1270), (11184800, 3): (340, 1465),
    (11184811, 3): (340, 1471), (3, 11184800): (332, 1058), (3, 11184811): (333, 1078),
    (8388608, 4): (451, 1464), (8388609, 4): (451, 1456), (4, 8388608): (439, 930), (4, 8388609): (439, 851),
    (5592384, 6): (665, 1346), (5592405, 6): (664, 1426), (6, 5592384): (647, 667), (6, 5592405): (648, 615),
    (4194304, 8): (874, 1390), (4194305, 8): (873, 1377), (8, 4194304): (847, 515), (8, 4194305): (838, 473),
    (3355424, 10): (1074, 1095), (3355443, 10): (1074, 1162), (10, 3355424): (1036, 418),
    (10, 3355443): (1041, 397), (2796192, 12): (1269, 805), (2796203, 12): (1268, 1141),
    (12, 2796192): (1217, 355), (12, 2796203): (1220, 328), (2097152, 16): (1636, 530),
    (2097153, 16): (1633, 513), (16, 2097152): (1546, 270), (16, 2097153): (1553, 257)
}

MEASURED_F64_GBS = {
    (8388608, 1): (471, 3565), (8388609, 1): (471, 3567), (1, 8388608): (456, 3563),
    (1, 8388609): (456, 3584), (4194304, 2): (911, 3486), (4194305, 2): (910, 3486),
    (2, 4194304): (880, 1706), (2, 4194305): (878, 1552), (2796192, 3): (1329, 3423),
    (2796203, 3): (1326, 3450), (3, 2796192): (1260, 1226), (3, 2796203): (1261, 1225),
    (2097152, 4): (1714, 3476), (2097153, 4): (1706, 3265), (4, 2097152): (1651, 958),
    (4, 2097153): (1623, 868), (1398080, 6): (2379, 3046), (1398101, 6): (2354, 2827),
    (6, 1398080): (2286, 887), (6, 1398101): (2231, 803), (1048576, 8): (2907, 3408),
    (1048577, 8): (2867, 2540), (8, 1048576): (2795, 771), (8, 1048577): (2715, 717),
    (838848, 10): (3252, 2626), (838861, 10): (3184, 2279), (10, 838848): (3144, 572),
    (10, 838861): (3041, 559), (699040, 12): (3383, 2005), (699051, 12): (3307, 2143),
    (12, 699040): (3341, 515), (12, 699051): (3234, 500), (524288, 16): (3654, 1907),
    (524289, 16): (3303, 1498), (16, 524288): (3655, 359), (16, 524289): (3525, 348)
}


@pytest.mark.parametrize("dtype, measured", [("f32", MEASURED_GBS), ("f16", MEASURED_F16_GBS),
                                             ("f64", MEASURED_F64_GBS)])
def test_the_choice_is_within_8_percent_of_the_faster_kernel_at_every_measured_shape(dtype, measured):
    sig = kernc.compile(SRC.replace("f32", dtype))._compilation.signatures["transpose"]
    for (R, C), (staged_gbs, unstaged_gbs) in measured.items():
        staged = launch_policy.staging_pays(sig, {"R": R, "C": C})
        got = staged_gbs if staged else unstaged_gbs
        assert got >= 0.92 * max(staged_gbs, unstaged_gbs), (R, C, staged)


#: Measured after the calibration, on kernels and dtypes it did not see (i8 and u16 transposes, f32
#: NCHW -> NHWC permutes ``(N, C, H, W)``): {(kind, shape): (GB/s staged, GB/s unstaged)}.
VALIDATION_GBS = {
    ("i8", (33554432, 2)): (123, 822), ("i8", (33554433, 2)): (123, 822), ("i8", (2, 33554432)): (121, 792),
    ("i8", (2, 33554433)): (121, 787), ("i8", (16777216, 4)): (244, 815), ("i8", (16777217, 4)): (244, 816),
    ("i8", (4, 16777216)): (238, 709), ("i8", (4, 16777217)): (238, 695), ("i8", (11184800, 6)): (362, 809),
    ("i8", (11184811, 6)): (363, 811), ("i8", (6, 11184800)): (353, 570), ("i8", (6, 11184811)): (351, 559),
    ("i8", (8388608, 8)): (481, 781), ("i8", (8388609, 8)): (481, 779), ("i8", (8, 8388608)): (465, 494),
    ("i8", (8, 8388609)): (466, 463), ("i8", (5592384, 12)): (710, 424), ("i8", (5592405, 12)): (709, 706),
    ("i8", (12, 5592384)): (683, 353), ("i8", (12, 5592405)): (684, 328), ("i8", (4194304, 16)): (931, 226),
    ("i8", (4194305, 16)): (929, 214), ("i8", (16, 4194304)): (891, 270), ("i8", (16, 4194305)): (893, 251),
    ("u16", (16777216, 2)): (242, 1476), ("u16", (16777217, 2)): (242, 1477),
    ("u16", (2, 16777216)): (235, 1303), ("u16", (2, 16777217)): (235, 1268),
    ("u16", (8388608, 4)): (477, 1469), ("u16", (8388609, 4)): (477, 1457),
    ("u16", (4, 8388608)): (459, 930), ("u16", (4, 8388609)): (459, 854), ("u16", (5592384, 6)): (701, 1399),
    ("u16", (5592405, 6)): (701, 1432), ("u16", (6, 5592384)): (675, 668), ("u16", (6, 5592405)): (672, 612),
    ("u16", (4194304, 8)): (919, 1393), ("u16", (4194305, 8)): (919, 1376),
    ("u16", (8, 4194304)): (882, 515), ("u16", (8, 4194305)): (884, 473),
    ("u16", (2796192, 12)): (1330, 863), ("u16", (2796203, 12)): (1331, 797),
    ("u16", (12, 2796192)): (1266, 355), ("u16", (12, 2796203)): (1269, 328),
    ("u16", (2097152, 16)): (1709, 529), ("u16", (2097153, 16)): (1700, 504),
    ("u16", (16, 2097152)): (1606, 271), ("u16", (16, 2097153)): (1607, 256),
    ("perm", (4, 2, 32768, 64)): (314, 1874), ("perm", (4, 2, 299593, 7)): (73, 1791),
    ("perm", (4, 2, 65536, 32)): (314, 1876), ("perm", (4, 3, 21845, 64)): (466, 1629),
    ("perm", (4, 3, 199728, 7)): (108, 1593), ("perm", (4, 3, 43690, 32)): (466, 1629),
    ("perm", (4, 4, 16384, 64)): (617, 1341), ("perm", (4, 4, 149796, 7)): (144, 1322),
    ("perm", (4, 4, 32768, 32)): (616, 1338), ("perm", (4, 8, 8192, 64)): (1198, 815),
    ("perm", (4, 8, 74898, 7)): (284, 806), ("perm", (4, 8, 16384, 32)): (1197, 815),
    ("perm", (4, 16, 4096, 64)): (2243, 665), ("perm", (4, 16, 37449, 7)): (553, 647),
    ("perm", (4, 16, 8192, 32)): (2242, 665)
}


def test_the_choice_on_kernels_it_was_not_calibrated_on():
    """Out of sample: within 10% of the faster kernel at 62 of the 63 shapes, and 15% at the last
    (a permute of 16 channels by 7 columns, staged)."""
    sigs = {t: kernc.compile(SRC.replace("f32", t))._compilation.signatures["transpose"] for t in ("i8", "u16")}
    sigs["perm"] = kernc.compile(SRC)._compilation.signatures["to_nhwc"]
    ratios = []
    for (kind, shape), (staged_gbs, unstaged_gbs) in VALIDATION_GBS.items():
        env = dict(zip("NCHW", shape)) if kind == "perm" else {"R": shape[0], "C": shape[1]}
        got = staged_gbs if launch_policy.staging_pays(sigs[kind], env) else unstaged_gbs
        ratios.append(got / max(staged_gbs, unstaged_gbs))
    assert len(ratios) == 63 and sorted(ratios)[1] >= 0.9 and min(ratios) >= 0.85


#: measured shapes run here at a smaller long extent with the same remainder mod 32 (the choice
#: depends on the sector alignment of the long extent, not its size)
STAND_INS = [(16777216, 1), (1, 16777216), (5592405, 3), (3, 5592405), (4194304, 4), (4, 4194304),
             (2097153, 8), (8, 2097152), (1677696, 10), (1677721, 10), (1525184, 11), (12, 1398101),
             (1048576, 16), (32, 524288)]


@pytest.mark.parametrize("shape", STAND_INS)
def test_transpose_runs_the_kernel_the_choice_names(mods, shape):
    R, C = shape
    R, C = (2048 + R % 32, C) if R > C else (R, 2048 + C % 32)
    staged_mod, plain_mod = mods
    a = np.random.default_rng(R * C).standard_normal((R, C)).astype(np.float32)
    b = np.full((C, R), np.nan, np.float32)
    res = staged_mod.transpose(a, b)
    np.testing.assert_array_equal(b, a.T)
    staged = res.stats.shared_requests > 0
    assert staged == launch_policy.staging_pays(staged_mod._compilation.signatures["transpose"], {"R": R, "C": C})
    assert staged == launch_policy.staging_pays(staged_mod._compilation.signatures["transpose"],
                                          {"R": shape[0], "C": shape[1]})  # as at the measured size
    if staged:
        assert res.grid == -(-R // 32) * -(-C // 32)  # one block per tile
    else:  # exactly what the kernel compiled without the pass does
        b2 = np.full((C, R), np.nan, np.float32)
        want = plain_mod.transpose(a, b2)
        assert res.grid == want.grid == -(-R * C // 256)
        assert res.stats == want.stats


@pytest.mark.parametrize("R, C", [(64, 64), (33, 33), (5, 3), (40, 40), (100, 9), (9, 100)])
def test_other_shapes_follow_the_rule(mods, R, C):
    a = np.random.default_rng(R + C).standard_normal((R, C)).astype(np.float32)
    b = np.full((C, R), np.nan, np.float32)
    res = mods[0].transpose(a, b)
    np.testing.assert_array_equal(b, a.T)
    sig = mods[0]._compilation.signatures["transpose"]
    env = {"R": R, "C": C}
    want = (launch_policy.tile_fill(sig, env)
            >= launch_policy.EMPTY_SLOT_BYTES / 4 * launch_policy.unstaged_sector_use(sig, env))
    assert (res.stats.shared_requests > 0) == want


def test_skinny_transposes_move_fewer_sectors_than_their_staged_kernel(mods):
    """The choice's point on the CPU's counters: a 4096 x 1 transpose (a copy) runs 4096 threads at
    4 sectors per request, where the staged kernel runs 32 x 32 tiles of 32 elements each."""
    staged_mod, _ = mods
    a = np.arange(4096, dtype=np.float32).reshape(4096, 1)
    st = staged_mod.transpose(a, np.zeros((1, 4096), np.float32)).stats
    assert st.threads == 4096 and st.global_store_sectors == 4 * st.global_store_requests == 512


@pytest.mark.parametrize("shape, staged", [((2, 2, 8, 64), False), ((1, 32, 4, 64), True), ((2, 16, 3, 64), True)])
def test_permute_with_few_channels_runs_unstaged(mods, shape, staged):
    """NCHW -> NHWC stages (c, w) tiles: with 2 channels the unstaged stores are 2 elements apart
    (half their sectors used) and the tiles 1/16 full; with 16, 16 apart and half full."""
    N, C, H, W = shape
    x = np.random.default_rng(C).standard_normal(shape).astype(np.float32)
    y = np.zeros((N, H, W, C), np.float32)
    res = mods[0].to_nhwc(x, y)
    np.testing.assert_array_equal(y, x.transpose(0, 2, 3, 1))
    assert (res.stats.shared_requests > 0) == staged


def test_forced_staging_still_runs_every_shape(mods, always_staged):
    """With ``staging_pays`` always true (the staged kernel's own tests) a skinny launch stays staged."""
    a = np.arange(4096, dtype=np.float32).reshape(4096, 1)
    b = np.zeros((1, 4096), np.float32)
    res = mods[0].transpose(a, b)
    assert np.array_equal(b, a.T) and res.grid == 128 and res.stats.shared_requests > 0


@pytest.mark.gpu
@pytest.mark.parametrize("R, C", [(1 << 16, 1), (2, 1 << 15), (1000, 6), (7, 999), (999, 8), (256, 256), (33, 70)])
def test_choice_on_gpu(mods, R, C):
    """The same choice and results on a GPU (the grid tells which kernel ran)."""
    import cupy as cp

    a = np.random.default_rng(R + C).standard_normal((R, C)).astype(np.float32)
    b = cp.full((C, R), np.nan, np.float32)
    res = mods[0].transpose(cp.asarray(a), b)
    assert np.array_equal(b.get(), a.T)
    staged = launch_policy.staging_pays(mods[0]._compilation.signatures["transpose"], {"R": R, "C": C})
    assert res.grid == (-(-R // 32) * -(-C // 32) if staged else -(-R * C // 256)) and res.staged is staged


def test_the_signature_check_knows_staged():
    sig = kernc.compile(SRC)._compilation.signatures["transpose"]
    assert sig.problem() is None
    for bad in ({"extents": ["R"], "views": [["b", ["1", "R"]]]}, {"extents": ["R", "C"], "views": [["zz", ["1", "R"]]]},
                {"extents": ["R", "C"]}, ["R", "C"], {"extents": ["R", "C"], "views": [["b", [1, "R"]]]}):
        sig.staged = bad
        assert "'staged' must be" in sig.problem()


def test_problems_past_the_unstaged_grid_stay_staged(monkeypatch):
    """The unstaged kernel needs ceil(P / block) blocks, the staged one loops over its tiles: a
    skinny problem with more blocks than CUDA's grid x holds stays staged instead of being refused
    (found by a trial: 3 * 2^36 x 1 at @block(64) was a KerncLaunchError). Bound only (not run)."""
    from numpy.lib.stride_tricks import as_strided

    # the huge views claim gigabytes over 16 bytes each, so their address ranges overlap: not what
    # this test is about
    monkeypatch.setattr(binding, "check_aliasing", lambda *args: None)

    src = """layout rowmaj(R, C) = (R, C):(C, 1);
@block(64)
kernel t(a: i8[C, R] view as rowmaj(C, R), b: i8[R, C] view as rowmaj(R, C)) over (i, j) in (R, C) {
    b[i, j] = a[j, i];
}"""
    sig = kernc.compile(src)._compilation.signatures["t"]
    base = np.zeros(16, np.int8)

    def choice(a, b) -> tuple:  # (no bound launch is kept: printing its views would read them)
        bound = binding.bind(sig, (a, b), {}, lambda x: isinstance(x, np.ndarray), "cpu")
        return bound.staging_pays, bound.grid

    R = 3 * 2**36  # views of 16 bytes: binding reads no element of them
    small = choice(np.zeros((1, 1 << 20), np.int8), np.zeros((1 << 20, 1), np.int8))
    huge = choice(as_strided(base, (1, R), (R, 1)), as_strided(base, (R, 1), (1, 1)))
    assert small[0] is False
    assert huge == (True, binding.MAX_GRID_X)


def test_a_view_read_twice_is_one_access_pattern():
    src = SRC + """
kernel twice(a: f32[C, R] view as rowmaj(C, R), b: f32[R, C] view as rowmaj(R, C)) over (i, j) in (R, C) {
    b[i, j] = a[j, i] * a[j, i];
}
"""
    sig = kernc.compile(src)._compilation.signatures["twice"]
    assert sig.staged["views"] == [["a", ["1", "R"]]]


def test_the_launch_result_says_which_kernel_ran(mods, tmp_path, capsys):
    staged_mod, plain_mod = mods
    skinny = staged_mod.transpose(np.zeros((4096, 2), np.float32), np.zeros((2, 4096), np.float32))
    square = staged_mod.transpose(np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32))
    plain = plain_mod.transpose(np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32))
    empty = staged_mod.transpose(np.zeros((0, 64), np.float32), np.zeros((64, 0), np.float32))
    assert (skinny.staged, square.staged, plain.staged, empty.staged) == (False, True, None, None)
    # kernc run says so
    from kernc.cli import main

    src = tmp_path / "t.kern"
    src.write_text(SRC)
    np.save(tmp_path / "a.npy", np.arange(8192, dtype=np.float32).reshape(4096, 2))
    np.save(tmp_path / "b.npy", np.zeros((2, 4096), np.float32))
    assert main(["run", str(src), "--kernel", "transpose", "--input", f"a=@{tmp_path / 'a.npy'}",
                 "--input", f"b=@{tmp_path / 'b.npy'}", "--output-dir", str(tmp_path / "out")]) == 0
    assert "without view staging" in capsys.readouterr().out
    np.save(tmp_path / "a2.npy", np.zeros((64, 64), np.float32))
    np.save(tmp_path / "b2.npy", np.zeros((64, 64), np.float32))
    assert main(["run", str(src), "--kernel", "transpose", "--input", f"a=@{tmp_path / 'a2.npy'}",
                 "--input", f"b=@{tmp_path / 'b2.npy'}", "--output-dir", str(tmp_path / "out2")]) == 0
    assert "view accesses staged through workgroup tiles" in capsys.readouterr().out
    # --stats-json says it too: the counters are those of the kernel that ran
    for a, b, want in (("a.npy", "b.npy", False), ("a2.npy", "b2.npy", True)):
        assert main(["run", str(src), "--kernel", "transpose", "--input", f"a=@{tmp_path / a}",
                     "--input", f"b=@{tmp_path / b}", "--output-dir", str(tmp_path / "out3"),
                     "--stats-json", "-"]) == 0
        stats = json.loads(capsys.readouterr().out)
        assert stats["staged"] is want
        assert stats["shared_requests"] > 0 if want else stats["shared_requests"] == 0
    assert np.array_equal(np.load(tmp_path / "out" / "b.npy"), np.arange(8192, dtype=np.float32).reshape(4096, 2).T)
