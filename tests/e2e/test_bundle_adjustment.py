"""The bundle-adjustment example (``examples/bundle_adjustment/``): its BAL reader, its residual
kernel against the numpy model, Caspar's host conversion, and the LM solver against
``scipy.optimize.least_squares`` on the shipped synthetic problem."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import kernc
from kernc.caspar import from_caspar, rows, to_caspar

HERE = os.path.dirname(os.path.abspath(__file__))
BA = os.path.join(HERE, "..", "..", "examples", "bundle_adjustment")
sys.path.insert(0, BA)

import bal  # noqa: E402
import model  # noqa: E402
from make_synthetic import SIGMA, make_problem  # noqa: E402
from solver import NumpyOps, levenberg_marquardt  # noqa: E402


@pytest.fixture(scope="module")
def shipped():
    return bal.read_bal(os.path.join(BA, "synthetic.bal"))


@pytest.fixture(scope="module")
def residual_module():
    return kernc.compile_file(os.path.join(BA, "reprojection.kern"))


def test_shipped_file_is_the_generators_output(shipped):
    """The indices exactly; the floats to 1e-12 relative: the generator's rotations and
    projections go through numpy's sin/cos/arctan, whose last bits depend on the CPU's SIMD
    dispatch (on one machine 5e-15 apart from the shipped file, written on another)."""
    start, _ = make_problem()
    for name in ("cam_idx", "pt_idx"):
        assert np.array_equal(getattr(shipped, name), getattr(start, name)), name
    for name in ("cameras", "points", "observed"):
        a, b = getattr(shipped, name), getattr(start, name)
        assert a.shape == b.shape, name
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * float(np.abs(b).max()), err_msg=name)
    assert shipped.sizes == (48, 128, 6144)


def test_bal_round_trip(tmp_path):
    start, _ = make_problem(C=3, Np=5, seed=1)
    path = tmp_path / "p.bal"
    bal.write_bal(start, str(path))
    back = bal.read_bal(str(path))
    for name in ("cameras", "points", "cam_idx", "pt_idx", "observed"):
        assert np.array_equal(getattr(back, name), getattr(start, name)), name
    assert back.cam_idx.dtype == np.uint32


@pytest.mark.parametrize("text, where", [
    ("1 1 1\n0 0 1.0 2.0\n" + "0\n" * 9 + "0\n0\n", ": 1 cameras, 1 points and 1 observations need 19 numbers, the file has 18"),
    ("0 0 2147483647\n", "need 8589934591 numbers, the file has 3"),  # checked before allocating 32 GiB
    ("1 1 1\n0 3 1.0 2.0\n" + "0\n" * 12, ":2: point index 3 of observation 0 is outside [0, 1)"),
    ("1 1 1\n0 0 1.0 nan\n" + "0\n" * 12, ":2: y of observation 0 is not finite"),
    ("1 1 -1\n", ":1: the number of observations must be in [0, 2^31)"),
    ("1 x 1\n", ":1: the number of points must be an integer, got 'x'"),
    ("1 1 1\n0 0 1 2\n" + "0\n" * 12 + "7\n", ":15: unexpected text after the last point: '7'"),
])
def test_bal_errors_name_the_line(tmp_path, text, where):
    path = tmp_path / "bad.bal"
    path.write_text(text)
    with pytest.raises(bal.BALError) as e:
        bal.read_bal(str(path))
    assert where in str(e.value)
    assert str(path) in str(e.value)


def test_bal_not_ascii(tmp_path):
    path = tmp_path / "u.bal"
    path.write_bytes(b"1 1 1\n0 0 1.0 2\xc3\xa9\n")
    with pytest.raises(bal.BALError, match=":2: not ASCII text"):
        bal.read_bal(str(path))


def test_lm_on_an_empty_problem():
    empty = (np.zeros((0, 9)), np.zeros((0, 3)))
    idx = np.zeros(0, np.uint32)
    out = levenberg_marquardt(NumpyOps(idx, idx, np.zeros((0, 2))), empty, idx, idx)
    assert out.cost == 0.0 and out.history == [] and out.rms == 0.0


@pytest.mark.parametrize("n, dtype, want_rows", [(2, np.float64, 2), (3, np.float64, 4), (9, np.float64, 9),
                                                  (3, np.float32, 4), (7, np.float32, 8), (9, np.float32, 9),
                                                  (2, np.float32, 2)])
def test_caspar_round_trip(n, dtype, want_rows):
    x = np.arange(5 * n, dtype=dtype).reshape(5, n) + 1
    a = to_caspar(x)
    assert a.shape == (want_rows, 5) == (rows(n, dtype), 5) and a.dtype == dtype
    assert np.array_equal(from_caspar(a, n), x)
    # every value once, padding zero
    assert sorted(a.reshape(-1)[a.reshape(-1) != 0].tolist()) == sorted(x.reshape(-1).tolist())


def test_caspar_matches_the_kernel_layout():
    # element i's chunk k at R_k*M + i*d_k + e: a 9-double camera is chunks of 2,2,2,2,1 at rows 0,2,4,6,8
    x = np.arange(27.0).reshape(3, 9)
    flat = to_caspar(x).reshape(-1)
    assert flat[2 * 3 + 1 * 2 + 0] == x[1, 2]      # chunk 1 (row 2), element 1, component 0
    assert flat[8 * 3 + 2] == x[2, 8]              # chunk 4 (row 8, d=1), element 2


def test_caspar_bad_types():
    with pytest.raises(ValueError, match="integer or float elements"):
        to_caspar(np.zeros((3, 2), dtype=object))
    with pytest.raises(ValueError, match="integer or float elements"):
        to_caspar(np.zeros((3, 2), dtype=bool))
    with pytest.raises(ValueError, match="component count must be an integer, got 2.5"):
        from_caspar(np.zeros((2, 3)), 2.5)


def test_caspar_bad_shapes():
    with pytest.raises(ValueError, match="shape \\(M, N\\) with N >= 2"):
        to_caspar(np.zeros(4))
    with pytest.raises(ValueError, match="has shape \\(9, M\\), got \\(8, 3\\)"):
        from_caspar(np.zeros((8, 3)), 9)


def test_residual_kernel_matches_numpy(shipped, residual_module):
    s = shipped
    res = np.zeros((2, len(s.observed)))
    residual_module.reprojection(cam=to_caspar(s.cameras), pt=to_caspar(s.points), cam_idx=s.cam_idx,
                                 pt_idx=s.pt_idx, observed=to_caspar(s.observed), residual=res)
    want = model.residual(s.cameras, s.points, s.cam_idx, s.pt_idx, s.observed)
    np.testing.assert_allclose(from_caspar(res, 2), want, rtol=1e-12, atol=1e-9)


def test_residual_kernel_small_angle_branch(residual_module):
    # a camera at the identity rotation takes the first-order branch of rotate()
    cams = np.array([[0.0, 0, 0, 0.1, -0.2, -5.0, 400.0, 1e-3, -1e-4],
                     [1e-7, 0, 0, 0, 0, -4.0, 300.0, 0, 0]])
    pts = np.array([[0.5, -0.25, 1.0], [0.0, 0.0, 0.0]])
    ci = np.array([0, 1, 1, 0], np.uint32)
    pi = np.array([0, 0, 1, 1], np.uint32)
    obs = np.zeros((4, 2))
    res = np.zeros((2, 4))
    residual_module.reprojection(cam=to_caspar(cams), pt=to_caspar(pts), cam_idx=ci, pt_idx=pi,
                                 observed=to_caspar(obs), residual=res)
    np.testing.assert_allclose(from_caspar(res, 2), model.residual(cams, pts, ci, pi, obs), rtol=1e-12)


def test_lm_numpy_converges_to_the_noise_floor(shipped):
    s = shipped
    ops = NumpyOps(s.cam_idx, s.pt_idx, s.observed)
    out = levenberg_marquardt(ops, (s.cameras, s.points), s.cam_idx, s.pt_idx)
    assert len(out.history) <= 30
    assert out.initial_cost > 100 * out.cost
    assert abs(out.rms - SIGMA) <= 0.05 * SIGMA, out.rms


@pytest.fixture(scope="module")
def kernc_ops(shipped):
    from kernels import KerncOps

    return KerncOps(shipped)


def test_kernc_derivatives_match_the_numpy_model(shipped, kernc_ops):
    s = shipped
    x = (s.cameras, s.points)
    ref = NumpyOps(s.cam_idx, s.pt_idx, s.observed)
    rng = np.random.default_rng(3)
    v = (rng.standard_normal(s.cameras.shape), rng.standard_normal(s.points.shape))
    jv, want = kernc_ops.jvp(x, v), ref.jvp(x, v)
    assert np.abs(jv - want).max() <= 1e-6 * np.abs(want).max()
    rbar = rng.standard_normal(s.observed.shape)
    for got, want in zip(kernc_ops.vjp(x, rbar), ref.vjp(x, rbar)):
        assert np.abs(got - want).max() <= 1e-6 * np.abs(want).max()
    # the dot-product test of the two modes: <rbar, J v> = <J^T rbar, v>
    lhs = float(np.vdot(rbar, jv))
    rhs = sum(float(np.vdot(a, b)) for a, b in zip(kernc_ops.vjp(x, rbar), v))
    assert abs(lhs - rhs) <= 1e-9 * abs(lhs)


def test_lm_with_kernc_derivatives_matches_scipy(shipped, kernc_ops):
    from scipy_reference import solve_with_scipy

    s = shipped
    out = levenberg_marquardt(kernc_ops, (s.cameras, s.points), s.cam_idx, s.pt_idx)
    assert len(out.history) <= 30
    assert abs(out.rms - SIGMA) <= 0.05 * SIGMA, out.rms     # the noise floor
    _, _, cost = solve_with_scipy(s.cameras, s.points, s.cam_idx, s.pt_idx, s.observed, ftol=1e-10)
    assert abs(out.cost - cost) <= 1e-3 * cost, (out.cost, cost)


@pytest.mark.gpu
def test_kernc_ops_on_cuda_equal_the_interpreter(shipped, kernc_ops):
    from kernels import KerncOps

    s = shipped
    gpu = KerncOps(s, device="cuda")
    x = (s.cameras, s.points)
    rng = np.random.default_rng(5)
    v = (rng.standard_normal(s.cameras.shape), rng.standard_normal(s.points.shape))
    np.testing.assert_allclose(gpu.residual(x), kernc_ops.residual(x), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(gpu.jvp(x, v), kernc_ops.jvp(x, v), rtol=1e-12, atol=1e-9)
    rbar = rng.standard_normal(s.observed.shape)
    for got, want in zip(gpu.vjp(x, rbar), kernc_ops.vjp(x, rbar)):  # atomics: any order of the adds
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-9)
