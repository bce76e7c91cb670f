"""Hardened noise (mechanisms/noise.py): the exact samplers against their exact pmfs, the lazy
acceptance test's exact fallback, the grid of every release, the sensitivity inflation, overflow."""
from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpcov.estimators import hardenable
from dpcov.mechanisms import noise

DRAWS = 10**6


def chi_square_p(draws: np.ndarray, support: np.ndarray, weights: np.ndarray) -> float:
    """p-value of a chi-square test of ``draws`` against the pmf proportional to ``weights`` on
    ``support`` (cells expecting under 5 draws pooled into one; draws outside the support count there)."""
    p = weights / weights.sum()
    observed = np.array([np.count_nonzero(draws == k) for k in support], dtype=float)
    expected = p * len(draws)
    keep = expected >= 5
    pooled_obs = len(draws) - observed[keep].sum()
    pooled_exp = len(draws) - expected[keep].sum()
    chi = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    cells = keep.sum()
    if pooled_exp >= 5:
        chi += (pooled_obs - pooled_exp) ** 2 / pooled_exp
        cells += 1
    return float(stats.chi2.sf(chi, cells - 1))


@pytest.mark.parametrize("sigma", [0.7, 2.5, 6.2])
def test_discrete_gaussian_matches_its_pmf_and_tails(sigma):
    t, c = noise.discrete_gaussian_parameters(sigma)
    s2 = t * c
    assert s2 >= sigma**2 and t == math.floor(sigma) + 1
    draws = noise.discrete_gaussian(sigma, DRAWS, np.random.default_rng(11))
    support = np.arange(-int(15 * math.sqrt(s2)) - 2, int(15 * math.sqrt(s2)) + 3)
    weights = np.exp(-support.astype(float) ** 2 / (2 * s2))
    assert chi_square_p(draws, support, weights) > 1e-4
    k = int(np.ceil(3 * math.sqrt(s2)))  # a tail: P(|X| >= k), exactly from the pmf, within 5 sd
    tail = weights[np.abs(support) >= k].sum() / weights.sum()
    assert abs(np.mean(np.abs(draws) >= k) - tail) < 5 * math.sqrt(tail * (1 - tail) / DRAWS)


@pytest.mark.parametrize("t", [1, 3, 11])
def test_discrete_laplace_matches_its_pmf_and_tails(t):
    draws = noise.discrete_laplace(t, DRAWS, np.random.default_rng(12))
    support = np.arange(-40 * t, 40 * t + 1)
    weights = np.exp(-np.abs(support) / t)
    assert chi_square_p(draws, support, weights) > 1e-4
    k = 4 * t
    tail = weights[np.abs(support) >= k].sum() / weights.sum()
    assert abs(np.mean(np.abs(draws) >= k) - tail) < 5 * math.sqrt(tail * (1 - tail) / DRAWS)


def test_a_wrong_sampler_fails_the_pmf_test():
    """The test has power: a rounded continuous Gaussian of the same variance is rejected."""
    s2 = 1.0
    draws = np.rint(np.random.default_rng(13).normal(0, math.sqrt(s2), DRAWS)).astype(np.int64)
    support = np.arange(-20, 21)
    assert chi_square_p(draws, support, np.exp(-support.astype(float) ** 2 / (2 * s2))) < 1e-6


def test_large_scale_draws_have_the_asked_spread():
    sigma = 2.0**40
    draws = noise.discrete_gaussian(sigma, 200_000, np.random.default_rng(14))
    assert abs(draws.std() / sigma - 1) < 0.01 and abs(draws.mean()) < 5 * sigma / math.sqrt(len(draws))
    lap = noise.discrete_laplace(2**40, 200_000, np.random.default_rng(15))
    assert abs(np.abs(lap).mean() / 2**40 - 1) < 0.01


@pytest.mark.parametrize("a, t, c", [(3, 4, 5), (0, 2**40 + 1, 2**40), (2**41, 2**40 + 1, 2**40 - 7)])
def test_the_exact_fallback_accepts_with_the_exact_probability(a, t, c):
    """_exact_accept (the undecided 1e-14 of the lazy test) given the first 53 bits v of a uniform: kept
    with probability exp(-a^2 / (2tc)) over uniform v -- and for a v beside p, it decides by further bits."""
    rng = np.random.default_rng(16)
    p = math.exp(-a * a / (2 * t * c))
    kept = [noise._exact_accept(a, t, c, int(v), rng) for v in rng.integers(0, 2**53, 20_000)]
    assert abs(np.mean(kept) - p) < 5 * math.sqrt(p * (1 - p) / 20_000) + 1e-12
    v = int(Fraction(p) * 2**53)  # the 53-bit cell holding p: decided by the bits after
    assert {noise._exact_accept(a, t, c, v, rng) for _ in range(200)} <= {True, False}


def test_releases_are_on_a_public_grid_and_calibrated():
    rng = np.random.default_rng(17)
    statistic = rng.uniform(-1, 1, (30, 30))
    released, how = noise.gaussian_release(statistic, l2_sensitivity=1e-3, rho=0.5, bound=1.0,
                                           float_error=1e-12, rng=rng)
    g = how.grid
    assert math.log2(g).is_integer() and g <= 1e-3 * 2.0**-39  # about 2^-40 of the noise scale
    assert np.array_equal(released / g, np.rint(released / g))  # every value is g * N exactly
    m = statistic.size
    assert how.rounding == math.sqrt(m) * g and how.float_error == 2e-12 * math.sqrt(m)
    expected = (1e-3 + how.rounding + how.float_error) / math.sqrt(2 * 0.5)
    assert expected <= how.scale < expected * (1 + 1e-9)
    errors = (released - statistic).ravel()
    assert abs(errors.std() / how.scale - 1) < 5 / math.sqrt(2 * m)
    lap, lhow = noise.laplace_release(statistic, l1_sensitivity=1e-2, eps=1.0, bound=1.0, float_error=0.0, rng=rng)
    assert np.array_equal(lap / lhow.grid, np.rint(lap / lhow.grid))
    assert lhow.scale >= 1e-2 + m * lhow.grid and abs(np.abs(lap - statistic).mean() / lhow.scale - 1) < 0.15


def test_the_grid_depends_on_public_facts_only():
    """The precision attack's pair: a dyadic statistic (0) and a non-dyadic one (1/3) are released on
    the same grid, every value a multiple of it: no low bit tells them apart."""
    grids, releases = set(), []
    for value in (0.0, 1 / 3):
        out, how = noise.gaussian_release(np.full(1000, value), l2_sensitivity=0.01, rho=0.5, bound=1.0,
                                          float_error=0.0, rng=np.random.default_rng(18))
        grids.add(how.grid)
        releases.append(out)
    (g,) = grids
    for out in releases:
        assert np.array_equal(out / g, np.rint(out / g))


def test_statistic_outside_its_bound_is_clipped_and_nan_refused():
    out, how = noise.laplace_release(np.array([5.0, -5.0]), l1_sensitivity=1e-6, eps=1.0, bound=1.0,
                                     float_error=0.0, rng=np.random.default_rng(19))
    assert np.all(np.abs(np.abs(out) - 1.0) < 1e-4)
    with pytest.raises(ValueError, match="NaN or inf"):
        noise.gaussian_release(np.array([np.nan]), l2_sensitivity=1.0, rho=1.0, bound=1.0, float_error=0.0,
                               rng=np.random.default_rng(0))


def test_a_noisy_value_beyond_the_mantissa_is_an_error_never_a_wrap():
    steps = np.array([2**51, -(2**51)], dtype=np.int64)
    with pytest.raises(OverflowError, match="would not be exact"):
        noise._released(steps, np.array([2**51, 0], dtype=np.int64), 2.0**-10)
    with pytest.raises(ValueError, match="integer in"):
        noise.discrete_laplace(0, 3, np.random.default_rng(0))


def test_grid_coarsens_for_a_large_bound():
    g = noise.grid_step(scale=1e-6, bound=1e6)
    assert g >= 1e6 * 2.0**-51 and 1e6 / g < 2**51


def test_sum_error_bound_covers_a_float_sum():
    rng = np.random.default_rng(20)
    terms = rng.uniform(-1, 1, 100_000) * 10.0 ** rng.integers(-8, 1, 100_000)
    exact = math.fsum(terms)
    bound = noise.sum_error_bound(len(terms), float(np.abs(terms).max()), ops_per_term=0)
    naive = 0.0
    for x in terms[:2000]:
        naive += x
    assert abs(naive - math.fsum(terms[:2000])) <= noise.sum_error_bound(2000, float(np.abs(terms[:2000]).max()), 0)
    assert abs(float(np.sum(terms)) - exact) <= bound
    with pytest.raises(ValueError):
        noise.sum_error_bound(2**60, 1.0)


def test_secure_generator_is_chacha20_from_os_entropy():
    a, b = noise.secure_generator(), noise.secure_generator()
    assert noise.is_secure(a) and not noise.is_secure(np.random.default_rng(0))
    assert not np.array_equal(a.integers(0, 2**62, 4), b.integers(0, 2**62, 4))
    draws = noise.discrete_gaussian(3.0, 1000, a)  # the compiled samplers take it
    assert draws.dtype == np.int64


# --- the estimators' hardened numerics ----------------------------------------------------------

import dpcov  # noqa: E402
from dpcov.mechanisms import CovProblem, PureDP, ZCDP, release  # noqa: E402


@pytest.mark.parametrize("name, budget, noise_name", [("gauss", ZCDP(0.5), "discrete Gaussian"),
                                                      ("lap", PureDP(1.0), "discrete Laplace")])
def test_hardened_covariance_is_on_its_grid_and_in_the_ledger(name, budget, noise_name):
    X = np.random.default_rng(21).normal(size=(500, 4))
    X /= np.linalg.norm(X, axis=1).max()
    problem = CovProblem.from_rows(X, radius=1.0)
    out, accountant = release(name, problem, budget, np.random.default_rng(22), options={"numerics": "hardened"},
                              clamp=False)
    (what, _), = accountant.ledger
    assert noise_name in what and "(rounding)" in what and "(float error)" in what
    grid = 2.0 ** int(what.split("grid 2^")[1].split(",")[0])
    assert np.array_equal(out, out.T) and np.array_equal(out / grid, np.rint(out / grid))
    idealized, _ = release(name, problem, budget, np.random.default_rng(22), clamp=False)
    hardened_error = np.abs(out - problem.sigma).mean()
    assert 0.5 < hardened_error / np.abs(idealized - problem.sigma).mean() < 2  # the same noise, to sampling


def attack_events(rows, numerics, fits):
    """scripts/precision_attack.py's event on the released mean (fits seeded 0..fits-1)."""
    hits = 0
    for seed in range(fits):
        location = dpcov.PrivateCovariance(mechanism="zero", budget=PureDP(1.0), radius=1.0, centering="private",
                                           mean_share=0.5, numerics=numerics, random_state=seed,
                                           privacy_unit="replace_one").fit(rows).location_  # n public: the papers
        value = float(location[0])
        hits += abs(value) < 1 / 8 and not (value * 2.0**55).is_integer() and np.linalg.norm(location) < 1 - 1e-9
    return hits


@pytest.mark.filterwarnings("ignore::dpcov.estimators.UselessReleaseWarning")  # the zero mechanism, on purpose
def test_the_precision_attack_separates_idealized_neighbours_and_not_hardened_ones():
    D = np.zeros((3, 2))
    D2 = D.copy()
    D2[0] = (1.0, 0.0)
    assert attack_events(D, "idealized", 400) > 0 == attack_events(D2, "idealized", 400)  # the leak (eps unbounded)
    assert attack_events(D, "hardened", 400) == 0 == attack_events(D2, "hardened", 400)


def test_estimators_are_hardened_by_default_in_every_step_and_notion():
    """The default numerics is "hardened": every release of the fit (the private radius's and auto's sparse
    vector steps, the mean, AdaptiveCov's trace, SVT and covariance) says so in the ledger, under zCDP, pure DP
    and (eps, delta); unseeded it draws from ChaCha20, seeded it is reproducible and says it is for research."""
    X = np.random.default_rng(23).normal(size=(3000, 5)) / 8
    fit = dpcov.PrivateCovariance(budget=ZCDP(0.5), radius=1.0, clip=True, centering="private").fit(X)
    assert fit.get_params()["numerics"] == "hardened" and "cryptographic" in fit.numerics_
    assert fit.mechanism_ == "adaptive" and all("(hardened: discrete" in what for what, _ in fit.ledger_), fit.ledger_
    for budget, noise_name in [(ZCDP(0.5), "discrete Gaussian"), (PureDP(1.0), "discrete Laplace"),
                               (dpcov.ApproxDP(1.0, 1e-6), "discrete Gaussian")]:
        private = dpcov.PrivateCovariance(budget=budget, radius="private", centering="private", random_state=1).fit(X)
        mean_line = next(what for what, _ in private.ledger_ if what.startswith("mean"))
        assert noise_name in mean_line and all("(hardened: discrete" in what for what, _ in private.ledger_)
        spent = private.budget_spent_  # (eps, delta): the sparse vector steps spend no delta
        assert "for tests and research" in private.numerics_ and (spent == budget or (
            spent.eps == pytest.approx(budget.eps) and spent.delta <= budget.delta))
    seeded = dpcov.PrivatePCA(2, budget=PureDP(1.0), radius=1.0, clip=True, centering="private", random_state=0).fit(X)
    assert hardenable(dpcov.get_mechanism(seeded.mechanism_)) and "for tests and research" in seeded.numerics_
    again = dpcov.PrivatePCA(2, budget=PureDP(1.0), radius=1.0, clip=True, centering="private", random_state=0).fit(X)
    assert np.array_equal(seeded.components_, again.components_)  # seeded: the same bits
    assert "idealized" in dpcov.PrivateCovariance(budget=ZCDP(0.5), radius=1.0, clip=True, centering="assume_centered",
                                                  numerics="idealized").fit(X).numerics_
    with pytest.raises(ValueError, match="numerics must be"):
        dpcov.PrivateCovariance(budget=ZCDP(0.5), radius=1.0, centering="private", numerics="exact").fit(X)


def test_a_named_mechanism_that_cannot_be_hardened_warns_and_the_ledger_says_idealized():
    X = np.random.default_rng(24).normal(size=(2000, 4)) / 8
    with pytest.warns(UserWarning, match="'kt' has no hardened numerics"):
        pca = dpcov.PrivatePCA(1, mechanism="kt", budget=PureDP(2.0), radius=1.0, clip=True, centering="private",
                               random_state=0).fit(X)
    covariance = [what for what, _ in pca.ledger_ if what.startswith("covariance")]
    assert covariance and all("(idealized numerics)" in what for what in covariance)
    assert "(hardened: discrete Laplace" in pca.ledger_[0][0] and pca.numerics_.startswith("idealized numerics")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto never picks one
        for budget in (PureDP(2.0), ZCDP(0.5), dpcov.ApproxDP(2.0, 1e-6)):
            for estimator in (dpcov.PrivatePCA(1), dpcov.PrivateCovariance()):
                fit = estimator.set_params(budget=budget, radius=1.0, clip=True, centering="private",
                                           random_state=0).fit(X)
                assert hardenable(dpcov.get_mechanism(fit.mechanism_)), (budget, fit.mechanism_)


def test_the_suite_runs_hardened_lines_on_request(tmp_path):
    """numerics=hardened: the lines with hardened numerics get the option (their fingerprint then differs from
    the committed idealized lines'); the others stay idealized; a smoke run works; a bad value is refused."""
    from dpcov.experiments.config import ConfigError, compose_experiment
    from dpcov.experiments.runner import run_experiment
    exp = compose_experiment(["experiment=synthetic_trace", "scale=smoke", "mechanisms=[gauss,coinpress,emcov,zero]",
                              "numerics=hardened", f"output_dir={tmp_path}"])
    assert exp.line("gauss").options == exp.line("coinpress").options == {"numerics": "hardened"}  # since issue 55
    assert exp.line("emcov").options == {}  # an eigenvector sampler: no hardened numerics
    assert len(run_experiment(exp).results.read_text().splitlines()) == 1 + exp.total_runs()
    assert compose_experiment(["experiment=pure_trace", "scale=smoke"]).line("lap").options == {}
    with pytest.raises(ConfigError, match="numerics must be one of"):
        compose_experiment(["experiment=pure_trace", "numerics=exact"])


# --- the hardened sparse vector technique and AdaptiveCov --------------------------------------------

from dpcov.mechanisms import adaptive  # noqa: E402
from dpcov.mechanisms.gaussian import covariance_float_error  # noqa: E402
from dpcov.mechanisms.privacy import Accountant  # noqa: E402


def test_hardened_svt_needs_a_public_bound_clips_to_it_and_says_so():
    queries = lambda idx: np.where(idx == 3, 1e12, 0.0)  # noqa: E731  query 4 far beyond the bound: clipped to it
    with pytest.raises(ValueError, match="public bound"):
        adaptive.above_threshold(queries, 10, 5.0, 50.0, Accountant(PureDP(50.0)), np.random.default_rng(0),
                                 numerics="hardened")
    accountant = Accountant(PureDP(50.0))
    k = adaptive.above_threshold(queries, 10, 5.0, 50.0, accountant, np.random.default_rng(0), "walk",
                                 numerics="hardened", bound=100.0)
    (what, spent), = accountant.ledger
    assert k == 4 and spent == PureDP(50.0) and what.startswith("walk (hardened: discrete Laplace on the grid 2^")


def _grid_of(what: str) -> float:
    return 2.0 ** int(what.split("grid 2^")[1].split(",")[0])


@pytest.mark.parametrize("budget, scale, factor, route", [
    (ZCDP(0.5), 1.0, 1.0, "matrix"), (ZCDP(0.05), 1.0, 1 / 14, "spectral"),
    (PureDP(2.0), 1.0, 1.0, "matrix"), (PureDP(0.5), 0.3, 1 / 14, "spectral")])
def test_hardened_adaptive_releases_every_step_on_its_grid(budget, scale, factor, route):
    """AdaptiveCov hardened, both of its final branches, both notions: every ledger line hardened, and the
    released matrix (GaussCov / LapCov) or eigenvalues (SeparateCov) exact multiples of their grid."""
    X = np.random.default_rng(30).normal(size=(2000, 12)) * np.geomspace(1, 0.01, 12)
    X *= scale / np.linalg.norm(X, axis=1).max()
    problem = CovProblem.from_rows(X, radius=1.0)
    name = "adaptive" if isinstance(budget, ZCDP) else "adaptive_lap"
    out, accountant = release(name, problem, budget, np.random.default_rng(31), clamp=False, spectral=route == "spectral",
                              options={"numerics": "hardened", "separate_noise_factor": factor})
    whats = [what for what, _ in accountant.ledger]
    assert len(whats) >= 4 and all("(hardened: discrete" in what for what in whats), whats
    assert ("eigenvalues" in whats[-2]) == (route == "spectral"), whats  # the branch this case is for
    assert "AdaptiveCov: SVT" in whats[-2 if route == "matrix" else -3] and accountant.fully_spent()
    released = whats[-1] if route == "matrix" else whats[-2]  # SeparateCov: eigenvalues, then GaussCov/LapCov
    grid = _grid_of(released)
    values = np.asarray(out if route == "matrix" else out.values)
    assert np.array_equal(values / grid, np.rint(values / grid))


def test_the_float_error_bounds_cover_the_computed_statistics():
    """Sigma of the clipped rows as the suite computes it (band sums, tau^2 x x^T / ||x||^2 for the clipped ones)
    against the exact rational value from the same float rows: within covariance_float_error; AdaptiveCov's Diff
    query within diff_float_error of its exact value."""
    from fractions import Fraction as F
    rng = np.random.default_rng(32)
    X = rng.normal(size=(60, 5))
    X *= rng.uniform(0.05, 1.0, size=(60, 1)) / np.linalg.norm(X, axis=1, keepdims=True)
    problem = CovProblem.from_rows(X, radius=1.0)
    n, d, m = 60, 5, 2
    tau2 = F(problem.tau(m)) ** 2
    exact = [[F(0)] * d for _ in range(d)]
    for x in X.tolist():
        row = [F(v) for v in x]
        norm2 = sum(v * v for v in row)
        scale = min(F(1), tau2 / norm2)  # Clip(x, tau) x^T = min(1, tau^2 / ||x||^2) x x^T
        for i in range(d):
            for j in range(d):
                exact[i][j] += scale * row[i] * row[j] / n
    computed = problem.clipped_sigma(m)
    worst = max(abs(F(float(computed[i, j])) - exact[i][j]) for i in range(d) for j in range(d))
    bound = covariance_float_error(problem.tau(0), n, d)
    assert 0 < bound and worst <= bound, (float(worst), bound)
    assert adaptive.diff_float_error(40, n, 100.0 * n) > 0


@pytest.mark.parametrize("name, budget", [("adaptive", ZCDP(0.5)), ("adaptive_lap", PureDP(1.0))])
def test_hardened_adaptive_on_rows_near_zero_releases_without_a_subnormal_grid(name, budget):
    """Found by the audit: PrivRadius on rows of norm ~1e-200 returns r~ with r~^2 near the float floor, where the
    trace's grid (2^-40 of r~^2 / (n eps)) underflowed to 0. Hardened, such r~ releases the zero matrix; a grid
    below the normal floats is a clear error in noise.grid_step."""
    for scale in (1e-200, 1e-150, 0.0):
        X = np.random.default_rng(40).normal(size=(3, 2)) * scale
        for seed in range(10):
            out, _ = release(name, CovProblem.from_rows(X), budget, np.random.default_rng(seed),
                             options={"numerics": "hardened"}, clamp=False)
            assert np.all(np.isfinite(out))
    with pytest.raises(ValueError, match="too small for a float grid"):
        noise.grid_step(1e-300, 1e-300)


@pytest.mark.parametrize("make", [lambda: np.random.default_rng(5), noise.secure_generator], ids=["PCG64", "ChaCha20"])
def test_the_samplers_uniform_bits_are_53_exact_random_bits(make):
    """The samplers read 53 uniform bits from each rng.random() (noise._below): for both generators a double times
    2^53 is an integer, and its lowest bits are uniform (a generator whose doubles carried fewer random bits, e.g.
    32, would fail both), so the bounded integers built from them are exactly uniform."""
    words = make().random(200_000) * 2.0**53
    assert np.array_equal(words, np.floor(words))
    low = (words.astype(np.int64) & 0xFF).astype(np.int64)
    assert stats.chisquare(np.bincount(low, minlength=256)).pvalue > 1e-4
    assert abs(float(np.mean(words.astype(np.int64) & 1)) - 0.5) < 0.01
