"""SVT (Dong Algorithm 3), PrivRadius (Lemma 9), the concentration bounds (Lemmas 6, 7) and
AdaptiveCov (Algorithm 2) edge cases."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import dpcov.mechanisms.adaptive as adaptive_module
from dpcov.data.synthetic import synthetic_zipf
from dpcov.mechanisms import CovProblem, PureDP, ZCDP, release
from dpcov.mechanisms.adaptive import (
    above_threshold,
    eta,
    omega,
    private_radius_exponent,
    upsilon,
)
from dpcov.mechanisms.gaussian import symmetric_gaussian
from dpcov.mechanisms.privacy import Accountant
from dpcov.mechanisms.problem import row_norms

HUGE_EPS = 1e9  # Laplace noise of scale ~1e-9: SVT becomes exact on well-separated queries


def table(values):
    """queries(idx) for a fixed array of answers, recording every index it is asked about."""
    values = np.asarray(values, dtype=float)
    asked: list[np.ndarray] = []

    def queries(idx):
        asked.append(np.asarray(idx).copy())
        return values[idx]

    queries.asked = asked
    return queries


def svt(values, threshold, eps=HUGE_EPS, seed=0, accountant=None):
    accountant = accountant or Accountant(PureDP(eps))
    return above_threshold(table(values), len(values), threshold, eps, accountant,
                           np.random.default_rng(seed))


def unit_rows(norms, d, rng):
    X = rng.standard_normal((len(norms), d))
    return X / np.linalg.norm(X, axis=1, keepdims=True) * np.asarray(norms)[:, None]


# --- SVT (Algorithm 3) --------------------------------------------------------------------------
@pytest.mark.parametrize("values, threshold, expected", [
    ([0, 0, 0, 5, 0, 10], 2.0, 4),
    ([3, 0, 0], 2.0, 1),
    ([0, 1, 2, 3, 4, 5, 6], 4.5, 6),
    ([-10, -5, -1, 0.5], 0.0, 4),
    ([1.0, 1.0, 1.0], 1.5, 4),  # none clears: count + 1
    ([], 0.0, 1),  # no queries at all: count + 1
])
def test_svt_with_huge_eps_returns_first_crossing(values, threshold, expected):
    for seed in range(5):
        assert svt(values, threshold, seed=seed) == expected


def test_svt_returns_count_plus_one_when_nothing_crosses():
    values = np.zeros(1000)
    assert svt(values, 1.0) == 1001


@pytest.mark.parametrize("crossing", [0, 63, 64, 65, 191, 87_654, 99_999])
def test_svt_chunked_evaluation_over_long_sequences(crossing):
    count = 100_000
    values = np.where(np.arange(count) >= crossing, 10.0, 0.0)
    queries = table(values)
    acc = Accountant(PureDP(HUGE_EPS))
    k = above_threshold(queries, count, 5.0, HUGE_EPS, acc, np.random.default_rng(1))
    assert k == crossing + 1
    asked = np.concatenate(queries.asked)
    # queries are asked in order, each at most once, starting at 0 and covering the crossing
    np.testing.assert_array_equal(asked, np.arange(len(asked)))
    # growing chunks (64, 128, ...) never ask more than 2 * crossing + 64 queries
    assert crossing < len(asked) <= 2 * crossing + 64


def test_svt_chunked_no_crossing_asks_every_query_once():
    count = 100_000
    queries = table(np.zeros(count))
    k = above_threshold(queries, count, 5.0, HUGE_EPS, Accountant(PureDP(HUGE_EPS)),
                        np.random.default_rng(2))
    assert k == count + 1
    np.testing.assert_array_equal(np.concatenate(queries.asked), np.arange(count))


def test_svt_charges_pure_eps():
    acc = Accountant(ZCDP(1.0))
    above_threshold(table([0.0, 1.0]), 2, 0.5, 0.6, acc, np.random.default_rng(0), what="my SVT")
    assert acc.ledger == [("my SVT", PureDP(0.6))]
    assert acc.spent.rho == pytest.approx(0.6**2 / 2, rel=1e-15)
    # and refuses to run beyond the budget
    with pytest.raises(Exception):
        above_threshold(table([0.0]), 1, 0.5, 2.0, acc, np.random.default_rng(0))
    assert len(acc.ledger) == 1


def svt_reference(values, threshold, eps, rng):
    """Algorithm 3 verbatim, one query at a time."""
    noisy_threshold = threshold + rng.laplace(scale=2 / eps)
    for k, f in enumerate(values, start=1):
        if f + rng.laplace(scale=4 / eps) >= noisy_threshold:
            return k
    return len(values) + 1


HARDENED = {"numerics": "hardened", "bound": 100.0}  # the queries' public bound


@pytest.mark.parametrize("hardening", [{}, HARDENED], ids=["idealized", "hardened"])
def test_svt_single_query_crossing_probability(hardening):
    """P(f + Lap(4/eps) >= T + Lap(2/eps)) for f = T - c: the difference of two Laplaces with scales
    a = 4/eps, b = 2/eps has tail (a^2 e^{-c/a} - b^2 e^{-c/b}) / (2 (a^2 - b^2)). Hardened (discrete Laplace
    on a grid 2^-40 of the scale, one step more sensitivity): the same to far below the sampling error."""
    eps, c, trials = 1.0, 4.0, 4000
    a, b = 4 / eps, 2 / eps
    p = (a * a * math.exp(-c / a) - b * b * math.exp(-c / b)) / (2 * (a * a - b * b))
    acc = Accountant(PureDP(eps * trials))
    rng = np.random.default_rng(123)
    hits = sum(above_threshold(lambda idx: np.full(len(idx), -c), 1, 0.0, eps, acc, rng, **hardening) == 1
               for _ in range(trials))
    se = math.sqrt(p * (1 - p) / trials)
    assert abs(hits / trials - p) < 4 * se, (hits / trials, p)


@pytest.mark.parametrize("hardening", [{}, HARDENED], ids=["idealized", "hardened"])
def test_svt_distribution_matches_algorithm_3(hardening):
    """Chunked SVT and the verbatim loop agree in distribution (chi-square on the output index); hardened too."""
    eps, threshold, trials = 0.5, 5.0, 3000
    values = 0.5 * np.arange(1, 21)
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(8)
    acc = Accountant(PureDP(eps * trials))
    ours = [above_threshold(table(values), len(values), threshold, eps, acc, rng_a, **hardening)
            for _ in range(trials)]
    ref = [svt_reference(values, threshold, eps, rng_b) for _ in range(trials)]
    # bins: 1, 2, ..., 12, then everything later pooled
    bins = np.arange(1, 14)
    h_ours = np.bincount(np.minimum(ours, 13), minlength=14)[1:]
    h_ref = np.bincount(np.minimum(ref, 13), minlength=14)[1:]
    assert len(bins) == len(h_ours)
    _, pvalue, _, _ = stats.chi2_contingency(np.vstack([h_ours, h_ref]))
    assert pvalue > 1e-3


# --- PrivRadius ---------------------------------------------------------------------------------
def test_priv_radius_with_huge_eps_on_power_of_two_radius():
    # rad(X) = 0.25 exactly (several rows): the first query with >= 2 rows above r 2^-k is k = 3
    rng = np.random.default_rng(0)
    X = unit_rows(np.concatenate([np.full(5, 0.25), rng.uniform(0, 0.2, 50)]), 4, rng)
    X[0] = [0.25, 0, 0, 0]  # exactly on the edge
    problem = CovProblem.from_rows(X)
    acc = Accountant(PureDP(HUGE_EPS))
    m = private_radius_exponent(problem, HUGE_EPS, 0.1, 1000, acc, np.random.default_rng(1))
    assert m == 2
    assert acc.ledger == [("PrivRadius: SVT", PureDP(HUGE_EPS))]


@pytest.mark.parametrize("rad", [0.9, 0.3, 0.013, 2.0**-50 * 1.3])
def test_priv_radius_with_huge_eps_two_approximates_the_radius(rad):
    rng = np.random.default_rng(4)
    norms = np.concatenate([np.full(3, rad), rad * rng.uniform(0, 1, 100)])
    X = unit_rows(norms, 3, rng)
    problem = CovProblem.from_rows(X)
    true_rad = np.linalg.norm(X, axis=1).max()
    m = private_radius_exponent(problem, HUGE_EPS, 0.1, 1000, Accountant(PureDP(HUGE_EPS)),
                                np.random.default_rng(5))
    r_tilde = problem.tau(m)
    assert true_rad <= r_tilde <= 2 * true_rad  # three rows sit at rad: nothing is clipped
    assert np.sum(np.linalg.norm(X, axis=1) > r_tilde) == 0


def test_priv_radius_with_huge_eps_clips_a_single_outlier():
    # a single large row does not cross the threshold 1 + O(1/eps): r~ follows the second largest
    rng = np.random.default_rng(9)
    X = unit_rows(np.concatenate([[0.9], np.full(20, 0.1)]), 3, rng)
    problem = CovProblem.from_rows(X)
    m = private_radius_exponent(problem, HUGE_EPS, 0.1, 1000, Accountant(PureDP(HUGE_EPS)),
                                np.random.default_rng(0))
    r_tilde = problem.tau(m)
    norms = np.linalg.norm(X, axis=1)
    assert r_tilde <= 2 * norms.max()
    assert 0.1 <= r_tilde <= 0.2
    assert np.sum(norms > r_tilde) == 1


def test_priv_radius_lemma_9_guarantee_with_moderate_eps():
    """w.p. >= 1 - beta: r~ <= 2 rad(X) + b and at most 12/eps log(2K/beta) + 1 rows exceed r~
    (the last query before the crossing stayed below T + 6/eps log(2K/beta), Lemma 5)."""
    eps, beta, K = 1.0, 0.1, 1000
    rng = np.random.default_rng(2)
    norms = 0.4 * np.exp2(-rng.uniform(0, 12, 5000))  # spread over 12 dyadic bands below 0.4
    X = unit_rows(norms, 3, rng)
    problem = CovProblem.from_rows(X)
    rad = norms.max()
    allowed = 12 / eps * math.log(2 * K / beta) + 1
    ok = 0
    runs = 60
    for seed in range(runs):
        acc = Accountant(PureDP(eps))
        m = private_radius_exponent(problem, eps, beta, K, acc, np.random.default_rng(seed))
        r_tilde = problem.tau(m)
        ok += (r_tilde <= 2 * rad + 2.0**-K) and (np.sum(norms > r_tilde) <= allowed)
        assert acc.fully_spent()
    assert ok >= (1 - beta) * runs


def test_priv_radius_on_zero_data_returns_the_floor():
    problem = CovProblem.from_rows(np.zeros((50, 2)))
    ms = [private_radius_exponent(problem, 10.0, 0.1, 200, Accountant(PureDP(10.0)),
                                  np.random.default_rng(s)) for s in range(20)]
    # no query ever has a row above it: no crossing (w.h.p.) returns b = r 2^-K
    assert sum(m == 200 for m in ms) >= 18


# --- concentration bounds (Lemmas 6 and 7) ------------------------------------------------------
def test_bound_formulas_known_values():
    # d = 1, beta = 0.1: eta = sqrt(1 + 2 sqrt(ln 10) + 2 ln 10)
    L = math.log(10)
    assert eta(1, 0.1) == pytest.approx(math.sqrt(1 + 2 * math.sqrt(L) + 2 * L), rel=1e-14)
    # d = 1: upsilon's log d terms vanish
    assert upsilon(1, 0.1) == pytest.approx(2 + 2 * math.sqrt(2 * L), rel=1e-14)
    # omega(1, beta) = sqrt(1 + 2 sqrt(ln(2/beta)) + 6 ln(2/beta))
    L2 = math.log(20)
    assert omega(1, 0.1) == pytest.approx(math.sqrt(1 + 2 * math.sqrt(L2) + 6 * L2), rel=1e-14)
    # d = 8, beta = 0.05 from the paper's formula for upsilon
    d, lb = 8, math.log(20)
    x = (math.log(d) / d) ** (1 / 3)
    expected = (2 * math.sqrt(d) + 2 * d ** (1 / 6) * math.log(d) ** (1 / 3)
                + 6 * (1 + x) * math.sqrt(math.log(d)) / math.sqrt(math.log(1 + x))
                + 2 * math.sqrt(2 * lb))
    assert upsilon(d, 0.05) == pytest.approx(expected, rel=1e-14)


def test_upsilon_is_continuous_at_d_equal_one():
    # the third term behaves like 6 log(d)^(1/3) -> 0 as d -> 1
    assert upsilon(1 + 1e-12, 0.1) == pytest.approx(upsilon(1, 0.1), abs=1e-3)


@pytest.mark.parametrize("bound", [eta, upsilon, omega])
def test_bounds_decrease_in_beta_and_increase_in_d(bound):
    assert bound(10, 0.01) > bound(10, 0.1) > bound(10, 0.5)
    assert bound(2, 0.1) < bound(10, 0.1) < bound(100, 0.1)


@pytest.mark.parametrize("d", [1, 5, 40])
@pytest.mark.parametrize("beta", [0.1, 0.5])
def test_concentration_bounds_hold_empirically(d, beta):
    rng = np.random.default_rng(1000 + d)
    draws = 200
    y_norms = np.linalg.norm(rng.standard_normal((draws, d)), axis=1)
    w_specs, w_fros = [], []
    for _ in range(draws):
        W = symmetric_gaussian(d, rng)
        w_specs.append(np.linalg.norm(W, 2))
        w_fros.append(np.linalg.norm(W, "fro"))
    assert np.mean(y_norms <= eta(d, beta)) >= 1 - beta
    assert np.mean(np.array(w_specs) <= upsilon(d, beta)) >= 1 - beta
    assert np.mean(np.array(w_fros) <= omega(d, beta)) >= 1 - beta


@pytest.mark.parametrize("d", [5, 40])
def test_omega_is_not_vacuous(d):
    # E ||W||_F^2 = d^2 for W ~ SGW(d): omega(d, 1/2) is within a small factor of d
    assert d < omega(d, 0.5) < 1.6 * d + 3
    assert math.sqrt(d) < eta(d, 0.5) < 1.6 * math.sqrt(d) + 3


def test_symmetric_gaussian_structure():
    rng = np.random.default_rng(0)
    W = symmetric_gaussian(300, rng)
    np.testing.assert_array_equal(W, W.T)
    upper = W[np.triu_indices(300)]
    # d(d+1)/2 iid N(0, 1) entries: mean 0, variance 1
    k = len(upper)
    assert abs(upper.mean()) < 4 / math.sqrt(k)
    lo, hi = stats.chi2.ppf([1e-4, 1 - 1e-4], k)
    assert lo <= np.sum(upper**2) <= hi
    assert symmetric_gaussian(1, rng).shape == (1, 1)


# --- AdaptiveCov edge cases ---------------------------------------------------------------------
@pytest.mark.parametrize("radius_option", ["known", "private"])
@pytest.mark.parametrize("n, d", [(1, 1), (50, 1), (40, 3)])
def test_adaptive_on_all_zero_data_does_not_crash(radius_option, n, d):
    problem = CovProblem.from_rows(np.zeros((n, d)))
    for seed in range(5):
        est, acc = release("adaptive", problem, ZCDP(0.1), np.random.default_rng(seed),
                           options={"radius": radius_option})
        assert est.shape == (d, d) and np.all(np.isfinite(est))
        np.testing.assert_allclose(est, est.T, atol=1e-15)
        eig = np.linalg.eigvalsh(est)
        assert eig.min() >= -1e-12 and eig.max() <= 1 + 1e-12
        assert acc.spent is not None and acc.spent.rho <= 0.1 * (1 + 1e-9)


@pytest.mark.parametrize("radius_option", ["known", "private"])
def test_adaptive_on_one_dimensional_data(radius_option):
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (400, 1)) * 0.3
    problem = CovProblem.from_rows(X)
    ests = []
    for seed in range(5):
        est, acc = release("adaptive", problem, ZCDP(1.0), np.random.default_rng(seed),
                           options={"radius": radius_option}, clamp=False)
        assert est.shape == (1, 1) and np.isfinite(est[0, 0])
        assert acc.fully_spent()
        ests.append(est[0, 0])
    # n = 400, rho = 1: the estimate of Sigma = E x^2 ~ 0.03 is accurate to a few 1e-3
    assert np.median(np.abs(np.array(ests) - problem.sigma[0, 0])) < 0.02


def test_adaptive_on_tiny_radius_data_uses_private_radius():
    """Rows of norm ~2^-40: PrivRadius shrinks the clipping radius so that noise scales with it."""
    rng = np.random.default_rng(8)
    X = unit_rows(np.full(2000, 2.0**-40), 3, rng)
    problem = CovProblem.from_rows(X)
    est, _ = release("adaptive", problem, ZCDP(1.0), np.random.default_rng(0),
                     options={"radius": "private"}, clamp=False)
    err_private = np.linalg.norm(est - problem.sigma)
    est_known, _ = release("adaptive", problem, ZCDP(1.0), np.random.default_rng(0),
                           options={"radius": "known"}, clamp=False)
    err_known = np.linalg.norm(est_known - problem.sigma)
    # noise ~ r~^2 / n with r~ <= 2 rad(X): small relative to tr = 2^-80; the declared radius 1 is not
    assert err_private < 1e-2 * problem.trace
    assert err_known > 1e3 * err_private


# --- AdaptiveCov step by step (Algorithm 2), observed through the module's own building blocks ---


def paper_gauss_noise(tau, n, d, rho, beta):
    """GaussNoise(tau, rho, beta) = tau^2 / (sqrt(rho) n) * omega(d, beta)  (Dong §5.2)."""
    return tau**2 / (math.sqrt(rho) * n) * omega(d, beta)


def paper_separate_noise(trace, tau, n, d, rho, beta):
    """SeparateNoise(tr, tau, rho, beta) = tau 2^1.25 sqrt(tr) / (rho^1/4 sqrt(n)) sqrt(upsilon(d, beta/2))
    + tau^2 sqrt(2) / (sqrt(rho) n) eta(d, beta/2)  (Dong §5.2)."""
    return (tau * 2**1.25 * math.sqrt(max(trace, 0.0)) / (rho**0.25 * math.sqrt(n))
            * math.sqrt(upsilon(d, beta / 2))
            + tau**2 * math.sqrt(2) / (math.sqrt(rho) * n) * eta(d, beta / 2))


def band_upper_edge(norm, radius):
    j = 0
    while norm <= math.ldexp(radius, -(j + 1)):
        j += 1
    return math.ldexp(radius, -j)


def paper_diff(X, radius, r_tilde, tau, trace_hat, rho_cov, beta, factor=1.0):
    """Diff(X~, tr^, tau, rho, beta) / r~^2 computed from the rows (Dong §5.2): X~ = Clip(X, r~);
    Bias = 1/n sum over rows of X~ with norm > tau of (upper edge of the row's band^2 - tau^2)."""
    n, d = X.shape
    norms = np.minimum(row_norms(X), r_tilde)
    bias = sum(band_upper_edge(v, radius) ** 2 - tau**2 for v in norms[norms > tau]) / n
    noise = min(paper_gauss_noise(tau, n, d, rho_cov, beta),
                factor * paper_separate_noise(trace_hat, tau, n, d, rho_cov, beta))
    return n * (bias - noise) / r_tilde**2


@pytest.fixture
def spy(monkeypatch):
    """Record every SVT run, the trace estimate and the final mechanism call of adaptive_cov."""
    rec = {"svt": [], "traces": [], "final": []}
    original_svt = adaptive_module.above_threshold
    original_sep_noise = adaptive_module.separate_noise
    original_gauss = adaptive_module.gauss_at
    original_separate = adaptive_module.separate_at

    def svt(queries, count, threshold, eps, accountant, rng, what="SVT", **hardening):
        k = original_svt(queries, count, threshold, eps, accountant, rng, what, **hardening)
        rec["svt"].append({"queries": queries, "count": count, "threshold": threshold, "eps": eps,
                           "what": what, "k": k})
        return k

    def sep_noise(trace, *args, **kwargs):
        rec["traces"].append(trace)
        return original_sep_noise(trace, *args, **kwargs)

    def gauss(problem, m, budget, accountant, rng, numerics="idealized"):
        rec["final"].append({"kind": "gauss", "sigma": problem.clipped_sigma(m), "bound": problem.tau(m),
                             "budget": budget})
        return original_gauss(problem, m, budget, accountant, rng, numerics)

    def separate(problem, m, budget, accountant, rng, numerics="idealized", components=None):
        rec["final"].append({"kind": "separate", "sigma": problem.clipped_sigma(m), "bound": problem.tau(m),
                             "budget": budget, "eigenvalues": problem.eigenvalues if m == 0 else None})
        return original_separate(problem, m, budget, accountant, rng, numerics, components)

    monkeypatch.setattr(adaptive_module, "above_threshold", svt)
    monkeypatch.setattr(adaptive_module, "separate_noise", sep_noise)
    monkeypatch.setattr(adaptive_module, "gauss_at", gauss)
    monkeypatch.setattr(adaptive_module, "separate_at", separate)
    return rec


STEP_CASES = [
    # (n, d, N, row scale, rho, radius option, separate_noise_factor, expected final branch)
    (2000, 8, 4, 1.0, 0.1, "private", 1.0, "gauss"),
    (2000, 8, 4, 1.0, 0.1, "known", 1.0, "gauss"),
    (1000, 60, 1, 1.0, 0.1, "private", 1 / 6, "separate"),
    (1000, 60, 1, 0.25, 0.1, "known", 1 / 6, "separate"),  # clips at tau~ < r
    (3000, 5, 8, 1.0, 1.0, "private", 1.0, None),
]


@pytest.mark.parametrize("n, d, N, scale, rho, radius_option, factor, branch", STEP_CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_adaptive_follows_algorithm_2(spy, n, d, N, scale, rho, radius_option, factor, branch, seed):
    beta = 0.1
    X = scale * synthetic_zipf(n, d, N, 3.0, np.random.default_rng(50 + N))
    problem = CovProblem.from_rows(X)
    est, acc = release("adaptive", problem, ZCDP(rho), np.random.default_rng(seed),
                       options={"radius": radius_option, "beta": beta,
                                "separate_noise_factor": factor}, clamp=False)
    runs = {r["what"]: r for r in spy["svt"]}

    # Step 1: PrivRadius(X, sqrt(rho)/2, beta/8, 2^-2dn) -- SVT over #{||x|| > r 2^-k}
    if radius_option == "private":
        pr = runs["PrivRadius: SVT"]
        K = min(2 * d * n, 1000)
        assert pr["count"] == K
        assert pr["eps"] == pytest.approx(math.sqrt(rho) / 2, rel=1e-12)
        assert pr["threshold"] == pytest.approx(6 / pr["eps"] * math.log(2 * K / (beta / 8)) + 1,
                                                rel=1e-12)
        idx = np.arange(40)
        norms = row_norms(X)  # the one norm routine of every path
        expected = [np.sum(norms > math.ldexp(1.0, -(int(i) + 1))) for i in idx]
        np.testing.assert_array_equal(pr["queries"](idx), expected)
        m0 = pr["k"] - 1
        cov_rho = rho / 2
    else:
        assert "PrivRadius: SVT" not in runs
        m0 = 0
        cov_rho = 5 * rho / 8
    r_tilde = math.ldexp(1.0, -m0)

    # Steps 2-4: tr^ = min(tr(X~) + sd N(0,1) + sd sqrt(2 log(8/beta)), r~^2), at most r~^2
    trace_hat = spy["traces"][0]
    assert all(t == trace_hat for t in spy["traces"])
    assert trace_hat <= r_tilde**2

    # Step 5: SVT over Diff(X~, tr^, tau, rho_cov, beta/2), tau = r~, r~/2, ...; T = 0, eps = sqrt(rho/2)
    sv = runs["AdaptiveCov: SVT"]
    assert sv["count"] == min(d * n, 1000)
    assert sv["threshold"] == 0.0
    assert sv["eps"] == pytest.approx(math.sqrt(rho / 2), rel=1e-12)
    idx = np.arange(0, 30)
    got = sv["queries"](idx)
    expected = [paper_diff(X, 1.0, r_tilde, r_tilde * 2.0**-i, trace_hat, cov_rho, beta / 2, factor)
                for i in idx]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)

    # Step 6: tau~ = r~ 2^-max(k-2, 0)  (the last tau before the crossing)
    tau = r_tilde * 2.0 ** -max(sv["k"] - 2, 0)
    (final,) = spy["final"]
    assert final["bound"] == tau
    assert isinstance(final["budget"], ZCDP)
    assert final["budget"].rho == pytest.approx(cov_rho, rel=1e-12)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    clipped = X * np.minimum(1.0, tau / norms)
    np.testing.assert_allclose(final["sigma"], clipped.T @ clipped / n, rtol=0, atol=1e-12)

    # Steps 7-10: ClipGaussCov iff SeparateNoise >= GaussNoise at tau~
    sep = factor * paper_separate_noise(trace_hat, tau, n, d, cov_rho, beta / 2)
    gauss = paper_gauss_noise(tau, n, d, cov_rho, beta / 2)
    assert final["kind"] == ("gauss" if sep >= gauss else "separate")
    if branch is not None:
        assert final["kind"] == branch
    if scale < 1 and radius_option == "known":
        assert tau < 1.0  # this case must exercise clipping
    if final["kind"] == "separate" and final["eigenvalues"] is not None:
        np.testing.assert_allclose(final["eigenvalues"],
                                   np.sort(np.linalg.eigvalsh(final["sigma"]))[::-1], atol=1e-12)
    assert acc.fully_spent()


def test_adaptive_trace_estimate_distribution(spy):
    """tr^ - tr(X~) ~ N(sd sqrt(2 log(8/beta)), sd^2) with sd = 2 r~^2 / (sqrt(rho) n)  (step 4)."""
    n, d, rho, beta = 2000, 4, 0.1, 0.1
    X = synthetic_zipf(n, d, 4, 3.0, np.random.default_rng(3))
    problem = CovProblem.from_rows(X)
    draws = 400
    traces = []
    for seed in range(draws):
        spy["traces"].clear()
        release("adaptive", problem, ZCDP(rho), np.random.default_rng(seed),
                options={"radius": "known", "beta": beta})
        traces.append(spy["traces"][0])
    sd = 2 / (math.sqrt(rho) * n)
    assert max(traces) < 1.0  # never capped at r~^2 = 1 here
    shifted = np.array(traces) - problem.trace - sd * math.sqrt(2 * math.log(8 / beta))
    assert abs(shifted.mean()) < 4.5 * sd / math.sqrt(draws)
    lo, hi = stats.chi2.ppf([5e-5, 1 - 5e-5], draws)
    assert lo <= np.sum((shifted / sd) ** 2) <= hi
