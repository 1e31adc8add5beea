"""The bundle-adjustment example (``examples/bundle_adjustment``): BAL reading, and a
Levenberg-Marquardt solve whose J^T r, J v and J^T (J v) all come from kernc.grad/kernc.jvp of one
residual kernel, on the CPU interpreter, against scipy.optimize.least_squares on the same problem."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "bundle_adjustment"
sys.path.insert(0, str(HERE))

import bal  # noqa: E402
import make_synthetic  # noqa: E402
import solver  # noqa: E402


def test_bal_round_trip_and_errors(tmp_path):
    p = bal.read(HERE / "synthetic.bal")
    assert (p.cameras.shape, p.points.shape, p.xy.shape) == ((16, 9), (40, 3), (640, 2))
    bal.write(tmp_path / "copy.bal", p)
    q = bal.read(tmp_path / "copy.bal")
    assert np.array_equal(q.cameras, p.cameras) and np.array_equal(q.xy, p.xy) and np.array_equal(q.cam, p.cam)
    (tmp_path / "bad.bal").write_text("1 1 1\n0 3 1.0 2.0\n" + "0\n" * 12)
    with pytest.raises(ValueError, match="past the header's counts"):
        bal.read(tmp_path / "bad.bal")
    (tmp_path / "short.bal").write_text("1 1 0\n1\n2\n")
    with pytest.raises(ValueError, match="expected 12 parameters"):
        bal.read(tmp_path / "short.bal")


def test_shipped_file_is_what_the_generator_makes(tmp_path):
    make_synthetic.main(str(tmp_path / "again.bal"))
    assert (tmp_path / "again.bal").read_text() == (HERE / "synthetic.bal").read_text()


def test_caspar_packing_round_trips():
    x = np.random.default_rng(0).standard_normal((5, 9))
    assert np.array_equal(solver.from_caspar(solver.to_caspar(x), 9), x)


def test_lm_converges_to_the_noise_floor_and_matches_scipy():
    scipy_optimize = pytest.importorskip("scipy.optimize")
    from scipy.sparse import lil_matrix

    p = bal.read(HERE / "synthetic.bal")
    res = solver.BundleAdjuster(p).solve()
    assert res.iterations <= 30 and res.costs[-1] < 0.05 * res.costs[0]
    # the noise floor: the RMS a least-squares fit leaves, sigma * sqrt(dof / m), the 7 gauge freedoms
    # (a similarity) not counted as parameters
    m = p.xy.size
    params = p.cameras.size + p.points.size - 7
    floor = make_synthetic.NOISE * np.sqrt((m - params) / m)
    rms = np.sqrt(2 * res.costs[-1] / m)
    assert abs(rms / floor - 1) < 0.05
    # scipy on the same residuals (numpy), finite-difference Jacobian with the problem's sparsity
    C, P = len(p.cameras), len(p.points)
    sparsity = lil_matrix((m, 9 * C + 3 * P), dtype=int)
    for i, (c, q) in enumerate(zip(p.cam, p.point)):
        sparsity[2 * i:2 * i + 2, 9 * c:9 * c + 9] = 1
        sparsity[2 * i:2 * i + 2, 9 * C + 3 * q:9 * C + 3 * q + 3] = 1
    x0 = np.concatenate([p.cameras.ravel(), p.points.ravel()])
    ref = scipy_optimize.least_squares(
        lambda x: solver.residuals_numpy(x[:9 * C].reshape(C, 9), x[9 * C:].reshape(P, 3), p), x0,
        jac_sparsity=sparsity, x_scale="jac", method="trf", ftol=1e-12, xtol=1e-12, gtol=1e-12)
    assert abs(res.costs[-1] - ref.cost) <= 1e-3 * ref.cost
    # the kernel's residuals equal numpy's at the solution
    r = solver.BundleAdjuster(p).residuals(solver.to_caspar(res.cameras), solver.to_caspar(res.points))
    np.testing.assert_allclose(np.asarray(r).ravel(), solver.residuals_numpy(res.cameras, res.points, p),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.gpu
def test_lm_on_cupy_reaches_the_cost_of_the_cpu_interpreter():
    cp = pytest.importorskip("cupy")
    from kernc.backend import cuda

    if not cuda.available():
        pytest.skip("no CUDA device")
    p = bal.read(HERE / "synthetic.bal")
    mod = solver.module()
    cpu = solver.BundleAdjuster(p, mod).solve()
    gpu = solver.BundleAdjuster(p, mod, xp=cp).solve()
    assert abs(gpu.costs[-1] - cpu.costs[-1]) <= 1e-6 * cpu.costs[-1]
