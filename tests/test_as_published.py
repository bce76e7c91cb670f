"""The papers' calibrations "as published" (issue 14): each variant pinned to the formula it claims
to implement, computed here independently of the mechanism code; the Wishart simulation of Wang &
Xu's statistic against the row path; the variant lines present in the paper configs."""
import math

import numpy as np
import pytest
from scipy import optimize, stats
from scipy.stats import norm

import dpcov.data.sparse as sparse
import dpcov.mechanisms.emcov as emcov
import dpcov.mechanisms.thresholding as thr
from dpcov.data.sparse import sparse_gaussian
from dpcov.experiments.config import compose_experiment
from dpcov.mechanisms import Accountant, ApproxDP, CovProblem, PureDP, ZCDP, release


def one_dimensional(n=400, value=0.7):
    """d = 1: C = n value^2, so the released value is C's eigenvalue plus exactly the eigenvalue noise."""
    return CovProblem.from_rows(np.full((n, 1), value) * np.where(np.arange(n) % 2, 1, -1)[:, None])


def capture_etas(monkeypatch):
    """Replace the sampler by one that records the inverse temperatures and returns the identity."""
    seen = []

    def record(C, etas, rng, **kw):
        seen.append(np.array(etas, dtype=float))
        return np.eye(C.shape[0])

    monkeypatch.setattr(emcov, "sample_eigenvectors", record)
    return seen


def unit_rows(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) @ rng.standard_normal((d, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True) * rng.uniform(0.3, 1, (n, 1))


# --- Amin et al.: public code's sampler temperature, eigenvalue noise, and G with sensitivity 1 ----

@pytest.mark.parametrize("calibration, factor", [("paper", 1 / 4), ("public_code", 2.0)])
def test_amin_sampler_temperature(monkeypatch, calibration, factor):
    """Paper: exp(eps_i/4 u^T C u); public code: exp(2 eps_i u^T C u), eps_i summing to eps/2."""
    seen = capture_etas(monkeypatch)
    problem = CovProblem.from_rows(unit_rows(500, 6, 1))
    eps = 3.0
    emcov.iterative_uniform(problem, Accountant(PureDP(eps)), np.random.default_rng(0), calibration=calibration)
    assert np.allclose(seen[-1], factor * eps / 2 / 6)  # IT-U: eps_i = eps / (2d)
    emcov.iterative_adaptive(problem, Accountant(PureDP(eps)), np.random.default_rng(0), calibration=calibration)
    assert math.isclose(seen[-1].sum(), factor * eps / 2) and seen[-1][0] > seen[-1][-1]


@pytest.mark.parametrize("calibration, scale", [("paper", 2 / 0.5), ("public_code", 1 / 0.5)])
def test_amin_eigenvalue_noise(monkeypatch, calibration, scale):
    """lambda(C) + Lap(b): b = 2/eps_0 in the paper, 1/eps_0 in the public code (eps_0 = eps/2 = 0.5)."""
    capture_etas(monkeypatch)
    problem = one_dimensional()
    truth = problem.eigenvalues[0] * problem.n
    noise = np.array([emcov.iterative_uniform(problem, Accountant(PureDP(1.0)), np.random.default_rng(s),
                                              calibration=calibration).values[0] * problem.n - truth
                      for s in range(2000)])
    assert stats.kstest(noise, "laplace", args=(0, scale)).pvalue > 1e-3
    other = 1 / 0.5 if calibration == "paper" else 2 / 0.5
    assert stats.kstest(noise, "laplace", args=(0, other)).pvalue < 1e-6  # the test can tell them apart


def test_amin_public_code_spends_the_claimed_budget_and_says_so():
    problem = CovProblem.from_rows(unit_rows(300, 4, 2))
    for name in ("ad", "itu"):
        _, acc = release(name, problem, PureDP(1.0), np.random.default_rng(0),
                         options={"calibration": "public_code"})
        assert acc.fully_spent() and all("as published" in what for what, _ in acc.ledger)
    with pytest.raises(ValueError, match="calibration"):
        release("ad", problem, PureDP(1.0), np.random.default_rng(0), options={"calibration": "code"})


def analytic_sigma(sensitivity, eps, delta):
    """Balle & Wang (2018) Thm. 8, solved here with brentq (independent of thresholding.py)."""
    def profile(sigma):
        a, b = sensitivity / (2 * sigma), eps * sigma / sensitivity
        return norm.cdf(a - b) - math.exp(eps) * norm.cdf(-a - b) - delta
    return optimize.brentq(profile, 1e-6 * sensitivity, 1e3 * sensitivity, xtol=1e-14)


def upper_noise(monkeypatch, fn, problem, budget, seeds=400, **options):
    monkeypatch.setattr(thr, "threshold_and_project", lambda noisy, level: (noisy, level))
    outs = [fn(problem, Accountant(budget), np.random.default_rng(s), **options) for s in range(seeds)]
    noise = np.stack([noisy for noisy, _ in outs]) - problem.sigma
    return noise[:, *np.triu_indices(problem.d)].ravel(), outs[0][1]


def assert_sd(values, sd):
    low, high = stats.chi2.ppf([1e-4, 1 - 1e-4], len(values)) / len(values)
    assert low <= np.mean(values**2) / sd**2 <= high


@pytest.mark.parametrize("calibration, factor", [("private", math.sqrt(2)), ("public_code", 1.0)])
def test_amin_gaussian_sensitivity(monkeypatch, calibration, factor):
    """G-x: analytic Gaussian at l2 sensitivity sqrt(2)/n (replace-one) or 1/n (public code) on Sigma."""
    problem = CovProblem.from_rows(unit_rows(200, 5, 3))
    budget = ApproxDP(0.5, 1e-3)
    noise, level = upper_noise(monkeypatch, thr.gauss_approx, problem, budget, calibration=calibration)
    assert level is None
    assert_sd(noise, analytic_sigma(factor / problem.n, 0.5, 1e-3))


# --- Wang & Xu as written ----------------------------------------------------------------------

def test_dp_thresholding_as_written(monkeypatch):
    """sigma_1 = sqrt(2 ln(1.25/delta)) / (n eps) whatever the radius; threshold of eq. (10)."""
    rows = unit_rows(800, 6, 4) * 3.0  # rows far outside the unit ball, as in the paper's data
    problem = CovProblem.from_rows(rows, radius=3.0)
    n, p, eps, delta = 800, 6, 0.7, 1 / 800
    noise, level = upper_noise(monkeypatch, thr.dp_threshold, problem, ApproxDP(eps, delta), calibration="as_written")
    c = math.sqrt(2 * math.log(1.25 / delta))
    assert_sd(noise, c / (n * eps))
    assert math.isclose(level, 0.5 * math.sqrt(math.log(p) / n) + 4 * c * math.sqrt(math.log(p)) / (n * eps))


def test_ldp_thresholding_as_written(monkeypatch):
    """Per-user sd sqrt(2 ln(1.25/delta)) / eps, averaged over n users; threshold of eq. (34)."""
    problem = CovProblem.from_rows(unit_rows(900, 5, 5) * 2.0, radius=2.0)
    n, p, eps, delta = 900, 5, 1.5, 1e-3
    noise, level = upper_noise(monkeypatch, thr.ldp_threshold, problem, ApproxDP(eps, delta), calibration="as_written",
                               gamma=0.3)
    c = math.sqrt(2 * math.log(1.25 / delta))
    assert_sd(noise, c / eps / math.sqrt(n))
    assert math.isclose(level, 0.3 * math.sqrt(math.log(p) / n) + 4 * c * math.sqrt(math.log(p)) / (math.sqrt(n) * eps))


# --- Dong et al.: EMCov with the public code's (eps, 1e-10) calibration ---------------------------

@pytest.mark.parametrize("rho, d", [(0.1, 6), (1e-4, 3), (10.0, 4)])
def test_emcov_public_code_temperature(monkeypatch, rho, d):
    """eps = rho + 2 sqrt(rho ln 1e10); eta = x/4 with d x^2 + sqrt(2 d ln 1e10) x = eps/2."""
    seen = capture_etas(monkeypatch)
    problem = CovProblem.from_rows(unit_rows(400, d, 6))
    emcov.emcov_zcdp(problem, Accountant(ZCDP(rho)), np.random.default_rng(0), calibration="public_code")
    L = math.log(1e10)
    eps = rho + 2 * math.sqrt(rho * L)
    x = max(np.roots([d, math.sqrt(2 * d * L), -eps / 2]).real)
    assert np.allclose(seen[-1], x / 4, rtol=1e-10)
    emcov.emcov_zcdp(problem, Accountant(ZCDP(rho)), np.random.default_rng(0))
    assert np.allclose(seen[-1], math.sqrt(2 * rho / (2 * d)))  # the zCDP calibration, for contrast


def test_emcov_public_code_eigenvalue_noise(monkeypatch):
    """lambda(C) + Lap(2 / (eps/2)), eps = rho + 2 sqrt(rho ln 1e10)."""
    capture_etas(monkeypatch)
    problem = one_dimensional(n=2000)
    truth = problem.eigenvalues[0] * problem.n
    rho = 0.01
    eps = rho + 2 * math.sqrt(rho * math.log(1e10))
    noise = np.array([emcov.emcov_zcdp(problem, Accountant(ZCDP(rho)), np.random.default_rng(s),
                                       calibration="public_code").values[0] * problem.n - truth
                      for s in range(2000)])
    assert stats.kstest(noise, "laplace", args=(0, 4 / eps)).pvalue > 1e-3
    _, acc = release("emcov", problem, ZCDP(rho), np.random.default_rng(0), options={"calibration": "public_code"})
    assert acc.fully_spent() and "as published" in acc.ledger[0][0]


def test_advanced_composition_step_solves_the_quadratic():
    for eps, k, delta in [(1.0, 10, 1e-10), (1e-3, 784, 1e-10), (50.0, 2, 1e-5)]:
        x = emcov.advanced_composition_step(eps, k, delta)
        assert x > 0 and math.isclose(k * x * x + math.sqrt(2 * k * math.log(1 / delta)) * x, eps, rel_tol=1e-12)


# --- Wang & Xu's statistic simulated as Wishart(n, U)/n ------------------------------------------

def test_wishart_statistic_matches_the_row_path(monkeypatch):
    """Same mean (U) and covariance of entries ((U_ik U_jl + U_il U_jk)/n) as X^T X / n of n rows,
    with a bound that clips nothing."""
    p, n, reps = 4, 60, 3000
    rng = np.random.default_rng(0)
    A = rng.standard_normal((p, p))
    U = A @ A.T / p + 0.5 * np.eye(p)
    monkeypatch.setattr(sparse, "sparse_population", lambda *a, **k: U)
    iu = np.triu_indices(p)
    draws = {}
    for statistic in ("rows", "wishart"):
        out = []
        for s in range(reps):
            data = sparse_gaussian(n, p, 0.2, 10.0, np.random.default_rng([s, 1]), statistic=statistic)
            sigma = data.sigma if data.X is None else data.X.T @ data.X / n
            assert data.info.get("clipped_fraction", 0.0) == 0.0
            out.append(sigma[iu])
        draws[statistic] = np.array(out)
    pairs = list(zip(*iu))
    theory = np.array([[(U[i, k] * U[j, l] + U[i, l] * U[j, k]) / n for k, l in pairs] for i, j in pairs])
    for statistic, x in draws.items():
        se = np.sqrt(np.diag(theory) / reps)
        assert np.all(np.abs(x.mean(0) - U[iu]) < 5 * se), statistic
        cov = np.cov(x.T)
        tol = 6 * np.sqrt((np.outer(np.diag(theory), np.diag(theory)) + theory**2) / reps)
        assert np.all(np.abs(cov - theory) < tol), statistic
    for j in range(len(pairs)):  # and the two paths against each other, entry by entry
        assert stats.ks_2samp(draws["rows"][:, j], draws["wishart"][:, j]).pvalue > 1e-4


def test_wishart_statistic_runs_at_any_n_and_refuses_rows_mechanisms():
    data = sparse_gaussian(10**12, 30, 0.2, 1.5, np.random.default_rng(0), statistic="wishart")
    assert data.X is None and data.n == 10**12 and np.abs(data.sigma - data.truth).max() < 1e-4
    assert data.info["statistic"] == "wishart" and 0 < data.info["row_clip_bound"] < 0.01  # p = 30
    problem = CovProblem.from_sigma(data.sigma, data.n, data.radius)
    est, _ = release("dp_threshold", problem, ApproxDP(1.0, 1e-12), np.random.default_rng(0), clamp=False)
    assert np.linalg.norm(est - data.truth, 2) < 1e-3
    with pytest.raises(ValueError, match="norm bands"):
        release("adaptive", problem, ZCDP(0.1), np.random.default_rng(0))
    with pytest.raises(ValueError, match="n >= p"):
        sparse_gaussian(20, 30, 0.2, 1.5, np.random.default_rng(0), statistic="wishart")
    with pytest.raises(ValueError, match="statistic"):
        sparse_gaussian(200, 30, 0.2, 1.5, np.random.default_rng(0), statistic="rows2")


def test_row_clip_bound_is_an_upper_bound():
    lam = np.array([0.3, 0.25, 0.2, 0.2, 0.1])
    x = np.random.default_rng(0).standard_normal((400000, 5)) * np.sqrt(lam)
    for t in (1.5, 2.5, 4.0):
        assert np.mean((x**2).sum(1) > t) <= sparse.norm_tail_bound(lam, t)
    assert sparse.norm_tail_bound(lam, 0.5) == 1.0  # below the mean: no information


# --- the variant lines in the paper configs ------------------------------------------------------

@pytest.mark.parametrize("name, lines", [
    ("amin_fig1a", {"AD (as published)", "IT-U (as published)"}),
    ("amin_fig1b", {"AD (as published)", "G-16 (as published)", "G-10 (as published)", "G-3 (as published)"}),
    ("wangxu_sparsity", {"DP-Thresholding (as published, not DP on these data)",
                         "LDP-Thresholding (as published, not DP on these data)"}),
    ("wangxu_dim", {"DP-Thresholding (as published, not DP on these data)"}),
    ("wangxu_eps", {"LDP-Thresholding (as published, not DP on these data)"}),
    *[(name, {"EMCov (as published)"}) for name in ("synthetic_unit_norm", "synthetic_trace", "synthetic_dim",
                                                    "synthetic_samples", "synthetic_rho", "mnist_rho",
                                                    "news_rho", "mnist_digits")],
])
def test_paper_configs_carry_the_as_published_lines(name, lines):
    exp = compose_experiment([f"experiment={name}", "scale=paper"])
    labels = {exp.line(m).label for m in exp.mechanisms}
    assert lines <= labels
    for m in exp.mechanisms:
        if "as published" in exp.line(m).label:
            assert exp.line(m).options.get("calibration") in ("public_code", "as_written")
