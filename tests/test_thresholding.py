"""Wang & Xu: the sparse generator, DP-/LDP-Thresholding, the analytic Gaussian calibration,
the relative l1/l2 metrics, and delta = 1/n passed through the harness."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.stats import norm

import dpcov.mechanisms.thresholding as thr
from dpcov.data.sparse import sparse_gaussian, sparse_population
from dpcov.experiments.config import ConfigError, budget_from_params
from dpcov.experiments.metrics import relative_l1, relative_spectral
from dpcov.experiments.runner import run_experiment
from dpcov.figures.plot import draw
from dpcov.mechanisms import Accountant, ApproxDP, CovProblem, release


def privacy_profile(sigma, sensitivity, eps):
    a, b = sensitivity / (2 * sigma), eps * sigma / sensitivity
    return norm.cdf(a - b) - math.exp(eps) * norm.cdf(-a - b)


@pytest.mark.parametrize("eps, delta", [(0.1, 1e-5), (1.0, 1e-5), (2.0, 1e-3), (8.0, 1e-10)])
def test_analytic_gaussian_is_tight_and_valid(eps, delta):
    sigma = thr.analytic_gaussian_sigma(0.7, ApproxDP(eps, delta))
    assert privacy_profile(sigma, 0.7, eps) <= delta * (1 + 1e-6)
    assert privacy_profile(sigma * 0.99, 0.7, eps) > delta  # the smallest valid sigma
    if eps < 1:  # never worse than the classical calibration where that one is valid
        assert sigma <= 0.7 * math.sqrt(2 * math.log(1.25 / delta)) / eps


def test_threshold_and_project_on_known_matrices():
    out = thr.threshold_and_project(np.array([[1.0, 0.05], [0.05, 1.0]]), 0.1).matrix()
    assert np.allclose(out, np.eye(2))
    out = thr.threshold_and_project(np.array([[1.0, 2.0], [2.0, 1.0]]), None).matrix()
    assert np.allclose(out, 1.5 * np.ones((2, 2)))  # eigenvalue -1 dropped, 3 kept
    assert math.isclose(thr.threshold_level(400, 100, 0.01, 0.5),
                        0.5 * math.sqrt(math.log(100) / 400) + 0.04 * math.sqrt(math.log(100)))


def sparse_problem(n=2000, p=8, seed=0):
    data = sparse_gaussian(n, p, 0.3, 1.5, np.random.default_rng(seed))
    return CovProblem.from_rows(data.X, radius=data.radius), data


def test_dp_noise_is_calibrated(monkeypatch):
    monkeypatch.setattr(thr, "threshold_and_project", lambda noisy, level: noisy)
    problem, _ = sparse_problem()
    budget = ApproxDP(1.0, 1e-4)
    noise = np.stack([thr.dp_threshold(problem, Accountant(budget), np.random.default_rng(s)) - problem.sigma
                      for s in range(300)])
    upper = noise[:, *np.triu_indices(problem.d)].ravel()
    expected = thr.analytic_gaussian_sigma(math.sqrt(2) * problem.radius**2 / problem.n, budget)
    low, high = stats.chi2.ppf([0.0005, 0.9995], len(upper)) / len(upper)
    assert low <= np.mean(upper**2) / expected**2 <= high
    assert np.allclose(noise, noise.transpose(0, 2, 1))


def test_ldp_closed_form_matches_the_per_user_protocol():
    n, p, sd = 40, 3, 2.0
    closed = np.stack([thr.ldp_noise_mean(n, p, sd, np.random.default_rng(s), False) for s in range(1500)])
    literal = np.stack([thr.ldp_noise_mean(n, p, sd, np.random.default_rng(10**6 + s), True) for s in range(1500)])
    for i, j in [(0, 0), (0, 2), (1, 1)]:
        assert stats.ks_2samp(closed[:, i, j], literal[:, i, j]).pvalue > 1e-3
        assert stats.kstest(literal[:, i, j] / (sd / math.sqrt(n)), "norm").pvalue > 1e-3
    assert np.allclose(literal, literal.transpose(0, 2, 1))


@pytest.mark.parametrize("mechanism", ["dp_threshold", "ldp_threshold", "gauss_approx"])
def test_mechanisms_spend_the_budget_and_release_psd(mechanism):
    problem, _ = sparse_problem()
    budget = ApproxDP(1.0, 1 / problem.n)
    est, acc = release(mechanism, problem, budget, np.random.default_rng(0), clamp=False)
    assert acc.ledger == [(acc.ledger[0][0], budget)] and acc.fully_spent()
    assert np.allclose(est, est.T) and np.linalg.eigvalsh(est).min() >= -1e-12


def test_thresholding_zeroes_the_true_zeros_with_enough_data():
    problem, data = sparse_problem(n=200000, p=20, seed=1)
    budget = ApproxDP(1.0, 1 / problem.n)
    est, _ = release("dp_threshold", problem, budget, np.random.default_rng(0), clamp=False)
    raw, _ = release("gauss_approx", problem, budget, np.random.default_rng(0), clamp=False)
    zeros = data.truth == 0
    level = thr.threshold_level(problem.n, problem.d, 0.0, 0.5)
    assert relative_spectral(est, data.truth) < 0.1
    # Before the final PSD step the thresholded matrix is exactly 0 where |entry| <= level, so the
    # released matrix is far closer to 0 on U's zero pattern than the un-thresholded one.
    assert np.abs(est[zeros]).mean() < 0.5 * np.abs(raw[zeros]).mean() and level > 0


def test_generator_sparsity_symmetry_and_clipping():
    U = sparse_population(50, 0.2, np.random.default_rng(0))
    off = U - np.diag(np.diag(U))
    assert np.allclose(U, U.T) and np.linalg.eigvalsh(U).min() > 0
    assert np.count_nonzero(off) == 2 * round(0.2 * 50 * 50 / 2)
    assert np.allclose(np.diag(U), 50 / 200)
    data = sparse_gaussian(3000, 50, 0.2, 0.9, np.random.default_rng(1))  # a tight bound clips
    norms = np.linalg.norm(data.X, axis=1)
    assert norms.max() <= data.radius * (1 + 1e-12)
    assert data.info["clipped_fraction"] == pytest.approx(np.mean(np.isclose(norms, data.radius)))
    assert 0 < data.info["clipped_fraction"] < 1
    again = sparse_gaussian(3000, 50, 0.2, 0.9, np.random.default_rng(1))
    assert np.array_equal(again.X, data.X)
    with pytest.raises(ValueError, match="positive definite"):
        sparse_population(100, 1.0, np.random.default_rng(0), value=20.0)


def test_relative_metrics():
    truth = np.diag([2.0, 1.0])
    est = np.array([[2.0, 0.5], [0.5, 0.0]])
    assert relative_l1(est, truth) == pytest.approx(1.5 / 2.0)  # max column sum of |diff|
    assert relative_spectral(est, truth) == pytest.approx(np.linalg.norm(est - truth, 2) / 2.0)
    with pytest.raises(ValueError, match="not symmetric"):
        relative_l1(np.array([[0.0, 1.0], [0.0, 0.0]]), truth)


def test_delta_one_over_n_reaches_the_mechanism(experiment):
    assert budget_from_params({"n": 400, "eps": 1, "delta": "1/n"}) == ApproxDP(1, 1 / 400)
    with pytest.raises(ConfigError, match="needs a parameter n"):
        budget_from_params({"eps": 1, "delta": "1/n"})
    exp = experiment("wangxu_eps")
    out = run_experiment(exp)
    draw(exp, out)
    rows = pd.read_csv(out.results)
    for n, budget in rows.groupby("n").budget:
        assert set(budget) == {f"({e:g}, {1 / n:g})-DP" for e in rows[rows.n == n].eps}
    assert {"err_l1", "err_l2", "data_row_clip_bound"} <= set(rows) and set(rows.data_statistic) == {"wishart"}
    assert (out.results.parent / "figure_l1.png").exists()
