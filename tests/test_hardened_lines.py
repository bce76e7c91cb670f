"""Issue 55 item 2: CoinPress, the (eps, delta) Gaussian and DP-/LDP-Thresholding hardened (mechanisms/noise.py).

The discrete Gaussian's (eps, delta) calibration (noise.discrete_gaussian_delta_bound) against its exact curve:
Canonne, Kamath & Steinke 2020 Theorem 7 in one dimension and a brute-force sum over Z^2 and Z^3 for shifts off the
axes; the coupling lemma of its proof; dp-accounting's PLD accountant; never wider than the zCDP route. Then every
new hardened line: its releases on the grid, its ledger, the estimators' hardenable set, the precision pair."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpcov.estimators import hardenable
from dpcov.mechanisms import CovProblem, ZCDP, noise, release
from dpcov.mechanisms.privacy import ApproxDP, Accountant
from dpcov.mechanisms.registry import get_mechanism
from dpcov.mechanisms import coinpress, thresholding


def pmf(sigma: float, half_width: int) -> tuple[np.ndarray, np.ndarray]:
    support = np.arange(-half_width, half_width + 1)
    weights = np.exp(-support.astype(float) ** 2 / (2 * sigma**2))
    return support, weights / weights.sum()


def exact_delta(eps: float, v, sigma: float) -> float:
    """delta(eps) = sum_y [p(y) - e^eps p(y - v)]_+ of the discrete Gaussian on Z^m, by brute force."""
    half = int(12 * sigma) + 2 + int(max(abs(x) for x in v))
    support, p1 = pmf(sigma, half)
    total = 0.0
    p = p1
    shifted = [np.interp(support - x, support, p1, left=0.0, right=0.0) for x in v]
    grids = np.meshgrid(*([p1] * len(v)), indexing="ij")
    sgrids = np.meshgrid(*shifted, indexing="ij")
    P, Q = np.prod(grids, axis=0), np.prod(sgrids, axis=0)
    total = np.maximum(P - math.exp(eps) * Q, 0.0).sum()
    del p
    return float(total)


def cks_theorem7(eps: float, delta_int: int, sigma: float) -> float:
    """CKS 2020 Thm 7: P[Y > eps s^2/D - D/2] - e^eps P[Y > eps s^2/D + D/2], Y ~ N_Z(0, s^2)."""
    support, p = pmf(sigma, int(15 * sigma) + 10)
    a = eps * sigma**2 / delta_int
    return float(p[support > a - delta_int / 2].sum() - math.exp(eps) * p[support > a + delta_int / 2].sum())


@pytest.mark.parametrize("sigma, shift, eps", [(3.0, 1, 0.5), (6.5, 2, 1.0), (10.0, 3, 0.3), (2.0, 1, 2.0)])
def test_the_bound_is_above_the_exact_one_dimensional_curve(sigma, shift, eps):
    exact = cks_theorem7(eps, shift, sigma)
    assert exact == pytest.approx(exact_delta(eps, [shift], sigma), rel=1e-9, abs=1e-15)
    bound = noise.discrete_gaussian_delta_bound(eps, shift, sigma)
    assert exact <= bound <= exact + 2 * shift / sigma**2 + 1e-12


@pytest.mark.parametrize("v", [(1, 1), (2, 1), (3, 4), (1, 1, 1), (2, 2, 1)])
@pytest.mark.parametrize("sigma, eps", [(2.5, 0.5), (5.0, 1.0)])
def test_the_bound_holds_for_shifts_off_the_axes(v, sigma, eps):
    """The multivariate case (the proof's coupling step), brute force over Z^2 and Z^3."""
    norm = math.sqrt(sum(x * x for x in v))
    assert exact_delta(eps, v, sigma) <= noise.discrete_gaussian_delta_bound(eps, norm, sigma)


@pytest.mark.parametrize("sigma", [1.0, 1.3, 2.7, 8.0, 40.0])
def test_the_coupling_lemma(sigma):
    """P(Y >= k + 1) <= P(G >= k) for every integer k: the quantile coupling moves no draw by more than 1."""
    support, p = pmf(sigma, int(40 * sigma) + 10)
    tail = p[::-1].cumsum()[::-1]  # tail[i] = P(Y >= support[i])
    for i, k in enumerate(support[:-1]):
        assert tail[i + 1] <= stats.norm.sf(k, scale=sigma) + 1e-16


def test_the_calibration_meets_its_curve_and_is_the_smallest():
    for eps, delta in [(0.25, 1e-6), (1.0, 1e-6), (4.0, 1e-6), (16.0, 1e-6), (1.0, 1e-10)]:
        steps = 2.0**40
        sigma = noise.discrete_gaussian_sigma_approx(steps, eps, delta)
        assert noise.discrete_gaussian_delta_bound(eps, steps, sigma) <= delta
        assert noise.discrete_gaussian_delta_bound(eps, steps, sigma * (1 - 1e-10)) > delta * (1 - 1e-6)
        analytic = noise.analytic_gaussian_ratio(eps, delta) * steps
        zcdp = steps / math.sqrt(2 * ApproxDP(eps, delta).to_zcdp().rho)
        assert analytic <= sigma <= analytic * (1 + 1e-4) and sigma < zcdp  # narrower than the zCDP route


def test_against_dp_accountings_pld():
    """dp-accounting's PLD of the discrete Gaussian (its own, pessimistic discretisation) at the calibrated sigma:
    within the budget, and 3 % less noise is not. (At 3000 steps the bound's extra Delta/sigma^2 is 5 % of delta; at
    the releases' ~2^40 steps it is ~1e-12 of mu: the calibration is then the analytic Gaussian's to 1e-9..1e-5.)"""
    dp_accounting = pytest.importorskip("dp_accounting")
    pld = dp_accounting.pld.privacy_loss_distribution
    eps, delta = 1.0, 1e-3
    sigma = noise.discrete_gaussian_sigma_approx(3000.0, eps, delta)
    at = pld.from_discrete_gaussian_mechanism(sigma, sensitivity=3000, value_discretization_interval=1e-4)
    assert at.get_delta_for_epsilon(eps) <= delta
    below = pld.from_discrete_gaussian_mechanism(0.97 * sigma, sensitivity=3000, value_discretization_interval=1e-4)
    assert below.get_delta_for_epsilon(eps) > delta


def _released_values(out):
    return np.asarray(out if isinstance(out, np.ndarray) else out.values), out


def _grid_of(what: str) -> float:
    return 2.0 ** int(what.split("grid 2^")[1].split(",")[0])


def _rows(n=3000, d=4, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d)) * np.geomspace(1, 0.2, d)
    return X / np.linalg.norm(X, axis=1).max()


@pytest.mark.parametrize("name, budget, options", [
    ("coinpress", ZCDP(0.5), {}), ("coinpress", ZCDP(0.5), {"calibration": "paper"}),
    ("gauss_approx", ApproxDP(1.0, 1e-6), {}), ("gauss_approx", ApproxDP(1.0, 1e-6), {"calibration": "public_code"}),
    ("dp_threshold", ApproxDP(2.0, 1e-6), {}), ("dp_threshold", ApproxDP(2.0, 1e-6), {"calibration": "as_written"}),
    ("ldp_threshold", ApproxDP(2.0, 1e-6), {}), ("ldp_threshold", ApproxDP(2.0, 1e-6), {"calibration": "as_written"})])
def test_hardened_lines_release_on_their_grid_and_say_so(name, budget, options):
    X = _rows()
    problem = CovProblem.from_rows(X, rows=X)
    assert hardenable(get_mechanism(name))
    out, accountant = release(name, problem, budget, np.random.default_rng(1), clamp=False,
                              options={"numerics": "hardened", **options})
    (what, spent), = accountant.ledger
    assert "(hardened: discrete Gaussian" in what and spent == budget and "(rounding)" in what
    assert ("calibrated by the (eps, delta) curve" in what) == (name != "coinpress" and options.get("calibration") != "as_written")
    assert ("as published" in what) == (options.get("calibration") in ("as_written", "public_code"))
    idealized, _ = release(name, problem, budget, np.random.default_rng(1), clamp=False, options=options)
    assert np.all(np.isfinite(np.asarray(out.values if hasattr(out, "values") else out)))
    same_default, _ = release(name, problem, budget, np.random.default_rng(1), clamp=False,
                              options={"numerics": "idealized", **options})
    a, b = (x.values if hasattr(x, "values") else x for x in (idealized, same_default))
    assert np.array_equal(a, b)  # the default is "idealized", bit for bit


def test_the_released_matrices_are_exact_multiples_of_the_grid():
    """Before the post-processing (threshold, PSD part): every entry a multiple of the ledger's grid."""
    X = _rows(seed=2)
    problem = CovProblem.from_rows(X, rows=X)
    accountant = Accountant(ApproxDP(1.0, 1e-6))
    noisy, sd = thresholding._hardened_approx(problem, math.sqrt(2) / problem.n, accountant, np.random.default_rng(3),
                                              "noisy covariance")
    grid = _grid_of(accountant.ledger[0][0])
    assert np.array_equal(noisy / grid, np.rint(noisy / grid)) and np.array_equal(noisy, noisy.T)
    assert sd > noise.analytic_gaussian_ratio(1.0, 1e-6) * math.sqrt(2) / problem.n
    accountant = Accountant(ApproxDP(2.0, 1e-6))
    mean, sd_user = thresholding.ldp_reports_hardened(problem, accountant, np.random.default_rng(4))
    grid = _grid_of(accountant.ledger[0][0])
    assert np.array_equal(mean * problem.n / grid, np.rint(mean * problem.n / grid))  # a sum of grid values, / n
    errors = (mean - problem.sigma)[np.triu_indices(problem.d)]
    assert abs(errors.std() * math.sqrt(problem.n) / sd_user - 1) < 0.5
    accountant = Accountant(ZCDP(1.0))
    coinpress.coinpress_cov_rows(X, coinpress.paper_rho_split(1.0, 3), np.random.default_rng(5), accountant,
                                 numerics="hardened")
    assert len(accountant.ledger) == 3 and all("(hardened: discrete Gaussian" in w for w, _ in accountant.ledger)


def test_hardened_ldp_without_rows_is_the_central_equivalent():
    """The estimators hold no rows: hardened LDP-Thresholding then releases Sigma once, on a grid, with the averaged
    reports' sd (and says so). At (covariance, (16, 1e-6), n = 300, d = 96) it ranks first among the hardened lines
    but ties with the zero matrix (its threshold keeps nothing there: results/measurements/defaults_hardened.txt), so
    auto releases the zero matrix, which spends nothing, and says why."""
    X = _rows(n=300)
    out, accountant = release("ldp_threshold", CovProblem.from_rows(X), ApproxDP(2.0, 1e-6), np.random.default_rng(0),
                              options={"numerics": "hardened"}, spectral=False, clamp=False)
    (what, _), = accountant.ledger
    assert "central model's equivalent" in what and "(hardened: discrete Gaussian" in what
    import dpcov
    Y = np.random.default_rng(1).normal(size=(300, 96)) / 40
    with pytest.warns(dpcov.UselessReleaseWarning, match="releases the zero matrix"):
        fit = dpcov.PrivateCovariance(budget=ApproxDP(16.0, 1e-6), radius=1.0, clip=True,
                                      centering="assume_centered", random_state=0).fit(Y)
    assert fit.mechanism_ == "zero" and "tied with the zero matrix: zero" in fit.advice_.reason, fit.advice_
    assert "ldp_threshold" in dict(fit.advice_.ranking)


def test_each_coinpress_step_statistic_is_within_its_float_error_bound():
    from fractions import Fraction as F
    rng = np.random.default_rng(6)
    X = _rows(n=80, d=5, seed=6)
    A = rng.normal(size=(5, 5)) * 3
    bound = 1.7
    computed = coinpress.clipped_second_moment(X @ A.T, bound)
    exact = [[F(0)] * 5 for _ in range(5)]
    for x in X.tolist():
        w = [sum(F(a) * F(v) for a, v in zip(row, x)) for row in A.tolist()]
        norm2 = sum(v * v for v in w)
        scale2 = min(F(1), F(bound) ** 2 / norm2)  # c(w) c(w)^T = min(1, B^2 / ||w||^2) w w^T
        for i, j in itertools.product(range(5), repeat=2):
            exact[i][j] += scale2 * w[i] * w[j] / 80
    worst = max(abs(F(float(computed[i, j])) - exact[i][j]) for i in range(5) for j in range(5))
    assert worst <= coinpress.moment_float_error(A, 1.0, bound, 80)


@pytest.mark.parametrize("name, budget", [("coinpress", ZCDP(0.5)), ("gauss_approx", ApproxDP(1.0, 1e-5)),
                                          ("dp_threshold", ApproxDP(1.0, 1e-5)),
                                          ("ldp_threshold", ApproxDP(1.0, 1e-5))])
def test_the_precision_pair_leaves_no_low_bit(name, budget):
    """The audits' precision pair (Sigma = 0 against diag(1/3, 0)): hardened, both release multiples of one grid --
    no low bit differs; idealized, the dyadic side's releases are visibly coarser."""
    D = np.zeros((3, 2))
    D2 = D.copy()
    D2[0] = (1.0, 0.0)
    grids = set()
    for rows in (D, D2):
        problem = CovProblem.from_rows(rows, rows=rows)
        for seed in range(20):
            out, accountant = release(name, problem, budget, np.random.default_rng(seed), clamp=False, spectral=False,
                                      options={"numerics": "hardened", **({"gamma": 0.0} if "threshold" in name
                                                                          else {})})
            grids.add(accountant.ledger[0][0].split("grid 2^")[1].split(",")[0])
    assert len(grids) == 1
