"""Stable covariance (Brown-Hopkins-Smith 2023) + Gaussian sampling (Alabi et al. 2023): the four
properties of the lecture notes on random and adversarial neighbours, the failure path, reproducibility,
Alg 1's mean, the budget, the cost claim, and the harness integration."""
import math

import numpy as np
import pytest

from data.gaussian import gaussian_kappa, kappa_population
from experiments.metrics import mahalanobis
from mechanisms import stable
from mechanisms.privacy import Accountant, ApproxDP, ZCDP
from mechanisms.problem import CovProblem
from mechanisms.registry import release

BUDGET = ApproxDP(1.0, 1e-6)


# ---------------------------------------------------------------------------------------------------
# Datasets and neighbours


def gaussian(n, d, seed):
    return np.random.default_rng(seed).standard_normal((n, d)) @ np.random.default_rng(seed + 99).standard_normal((d, d))


def borderline(n, d, L0, seed, planted=12):
    """Gaussian rows plus ``planted`` rows with leverage spread over [L0, e^2.5 L0]: d_hat lands
    anywhere in 0..k, so the properties are exercised where they bite."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    u = rng.uniform(0, 2.5, planted)
    directions = rng.standard_normal((planted, d))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    X[:planted] = directions * np.sqrt(n * L0 * np.exp(u))[:, None]
    return X


def neighbours(X, seed):
    """Replace-one neighbours: a far planted outlier, a duplicated point, a removed point (replaced by
    the zero row, which adds nothing to any Gram matrix), a fresh Gaussian point, and a borderline one."""
    rng = np.random.default_rng(seed)
    n, d = X.shape
    out = []
    for r in rng.choice(n, size=3, replace=False):
        far = X.copy()
        far[r] = 1e6 * rng.standard_normal(d)
        dup = X.copy()
        dup[r] = X[(r + 1) % n]
        zero = X.copy()
        zero[r] = 0
        fresh = X.copy()
        fresh[r] = rng.standard_normal(d)
        moved = X.copy()
        moved[r] = X[r] * rng.uniform(1, 4)
        out += [("far outlier", far), ("duplicate", dup), ("removed", zero), ("fresh", fresh),
                ("scaled", moved)]
    return out


N, D, K = 300, 3, 6
L0 = stable.default_L0(N, D)


def cases():
    for seed in range(6):
        yield "gaussian", gaussian(N, D, seed)
        yield "borderline", borderline(N, D, L0, seed)
        yield "borderline-many", borderline(N, D, L0, seed, planted=30)


# ---------------------------------------------------------------------------------------------------
# Alg 2: greedy filtering


def slow_filter(X, L):
    """Pseudocode-faithful Alg 2: one explicit inverse per round, leverage point by point."""
    S = list(range(len(X)))
    while True:
        A_inv = np.linalg.inv(X[S].T @ X[S])
        out = [i for i in S if X[i] @ A_inv @ X[i] > L]
        if not out:
            return S
        S = [i for i in S if i not in out]


@pytest.mark.parametrize("seed", range(4))
def test_greedy_filter_matches_pseudocode_and_leaves_no_outlier(seed):
    X = borderline(N, D, L0, seed, planted=20)
    for L in [L0, 2 * L0, 5 * L0]:
        keep = stable.greedy_filter(X, L)
        assert np.flatnonzero(keep).tolist() == slow_filter(X, L)
        lev = stable.leverages(X, keep)
        assert (lev[keep] <= L).all()


def test_leverages_are_affine_invariant_and_sum_to_d():
    X = gaussian(200, 4, 1)
    A = np.random.default_rng(5).standard_normal((4, 4))
    lev = stable.leverages(X)
    assert lev.sum() == pytest.approx(4)  # trace of the hat matrix
    np.testing.assert_allclose(stable.leverages(X @ A.T), lev, rtol=1e-8)


def test_singular_gram_counts_every_point_as_outlier():
    X = np.zeros((10, 3))
    X[:, 0] = 1
    assert np.isinf(stable.leverages(X)).all()
    assert not stable.greedy_filter(X, 1.0).any()


# ---------------------------------------------------------------------------------------------------
# Alg 3: the four properties


@pytest.mark.parametrize("name, X", list(cases()))
def test_score_stability_and_weight_stability_on_neighbours(name, X):
    base = stable.stable_covariance(X, L0, K)
    for kind, Y in neighbours(X, seed=len(name)):
        other = stable.stable_covariance(Y, L0, K)
        # (1) |d_hat(x) - d_hat(x')| <= 2
        assert abs(base.d_hat - other.d_hat) <= 2, kind
        # (4) ||w(x) - w(x')||_1 <= 2 when both scores are below k
        if base.d_hat < K and other.d_hat < K:
            assert np.abs(base.w - other.w).sum() <= 2 + 1e-12, kind


@pytest.mark.parametrize("name, X", list(cases()))
def test_early_stopping_score_equals_full_score(name, X):
    assert stable.stability_score(X, L0, K)[0] == stable.stable_covariance(X, L0, K).d_hat
    Y = np.random.default_rng(len(name)).standard_cauchy((N, D))
    assert stable.stability_score(Y, L0, K)[0] == stable.stable_covariance(Y, L0, K).d_hat


@pytest.mark.parametrize("name, X", list(cases()))
def test_soundness_weighted_leverage_at_most_20_L0(name, X):
    for Y in [X] + [Y for _, Y in neighbours(X, seed=3)]:
        result = stable.stable_covariance(Y, L0, K)
        positive = result.w > 0
        lev = stable.weighted_leverages(Y, result.w)
        assert (lev[positive] <= stable.SOUNDNESS_FACTOR * L0).all()


def test_removal_neighbour_at_fixed_parameters():
    """Add/remove neighbours (n changes; L0 and k held fixed): properties 1 and 4 still hold."""
    for seed in range(4):
        X = borderline(N, D, L0, seed, planted=15)
        base = stable.stable_covariance(X, L0, K)
        for r in [0, 5, 100]:
            other = stable.stable_covariance(np.delete(X, r, axis=0), L0, K)
            assert abs(base.d_hat - other.d_hat) <= 2
            if base.d_hat < K and other.d_hat < K:
                w = np.delete(base.w, r)
                assert np.abs(w - other.w).sum() + base.w[r] <= 2 + 1e-12


@pytest.mark.parametrize("seed", range(5))
def test_completeness(seed):
    X = gaussian(N, D, seed)
    L = stable.leverages(X).max() * (1 + 1e-9)  # every leverage <= L0
    result = stable.stable_covariance(X, L, K)
    assert result.d_hat == 0 and (result.w == 1).all()
    # With the default L0, Gaussian data are (almost always) near-safe: a tiny score, full weights.
    X = np.random.default_rng(seed).standard_normal((20000, 10))
    result = stable.stable_covariance(X, stable.default_L0(20000, 10), 40)
    assert result.d_hat <= 5 and result.w.min() == 1


def test_score_is_capped_at_k_and_affine_invariant():
    X = np.random.default_rng(0).standard_cauchy((N, D))  # heavy tails: many leverage outliers
    result = stable.stable_covariance(X, L0, K)
    assert result.d_hat == K
    A = np.random.default_rng(1).standard_normal((D, D))
    for Y in [gaussian(N, D, 2), borderline(N, D, L0, 3)]:
        a, b = stable.stable_covariance(Y, L0, K), stable.stable_covariance(Y @ A.T, L0, K)
        assert a.d_hat == b.d_hat and np.array_equal(a.w, b.w)


# ---------------------------------------------------------------------------------------------------
# The cost claim: one factorisation per filtering round, shared rounds computed once


@pytest.fixture
def counted(monkeypatch):
    calls = []
    real = stable._gram_factor

    def factor(A):
        calls.append(A.shape)
        return real(A)

    monkeypatch.setattr(stable, "_gram_factor", factor)
    monkeypatch.setattr(np.linalg, "inv", lambda *a, **k: pytest.fail("no explicit inverse"))
    return calls


def test_one_factorisation_per_round(counted):
    X = gaussian(5000, 5, 0)
    L = stable.leverages(X).max() * 1.01
    counted.clear()
    result = stable.stable_covariance(X, L, 50)
    assert len(counted) == 1 == result.factorisations  # 101 filters, all satisfied by round one
    counted.clear()
    X[0] *= 1e4  # a planted far outlier: round one removes it at every threshold, round two is shared
    result = stable.stable_covariance(X, stable.default_L0(5000, 5), 50)
    assert result.w[0] == 0 and len(counted) == result.factorisations <= 3
    counted.clear()
    assert stable.stability_score(X, stable.default_L0(5000, 5), 50)[0] == result.d_hat
    assert len(counted) <= 3
    counted.clear()
    # A single greedy filter: exactly one factorisation per round, whatever n.
    X = borderline(N, D, L0, 1, planted=20)
    rounds = 0
    S = np.ones(N, dtype=bool)
    while True:
        rounds += 1
        out = S & (stable.leverages(X, S) > L0)
        if not out.any():
            break
        S &= ~out
    counted.clear()
    stable.greedy_filter(X, L0)
    assert len(counted) == rounds


# ---------------------------------------------------------------------------------------------------
# Alg 1 and parameters


def test_gaussian_sampling_is_unbiased():
    rng = np.random.default_rng(0)
    sigma = kappa_population(4, 100.0, np.random.default_rng(1))
    reps, m = 4000, 5
    draws = np.array([stable.gaussian_sampling(sigma, m, rng) for _ in range(reps)])
    mean = draws.mean(axis=0)
    se = draws.std(axis=0) / math.sqrt(reps)
    assert (np.abs(mean - sigma) <= 5 * se + 1e-12).all()
    # Var of an entry: (sigma_ij^2 + sigma_ii sigma_jj) / m (Wishart)
    np.testing.assert_allclose(draws.var(axis=0), (sigma**2 + np.outer(np.diag(sigma), np.diag(sigma))) / m,
                               rtol=0.15)
    with pytest.raises(ValueError, match="m must be"):
        stable.gaussian_sampling(sigma, 0, rng)


def test_parameters_follow_the_notes():
    p = stable.stable_parameters(1_000_000, 10, BUDGET)
    assert p.ptr == ApproxDP(0.1, 5e-7) and p.sampling == ApproxDP(0.9, 5e-7)
    # PTR: passing with d_hat >= k - 2 has probability <= delta1; the threshold is k/2
    assert p.threshold == p.k / 2
    assert 0.5 * math.exp(-(p.k - 2 - p.threshold) / p.laplace_scale) <= p.ptr.delta
    # Alg 1's claim: Delta <= eps2 / (8 ln(1/delta2)) and m the largest allowed
    log_term = math.log(1 / p.sampling.delta)
    assert p.sensitivity <= p.sampling.eps / (8 * log_term)
    assert p.m <= p.sampling.eps**2 / (8 * p.sensitivity**2 * log_term) < p.m + 1
    assert p.sensitivity >= 80 * p.L0
    # L0 ~ d/n with a max-of-n margin
    assert 10 / 1e6 < p.L0 < 10 * 10 / 1e6
    with pytest.raises(stable.InsufficientData, match="too small"):
        stable.stable_parameters(20000, 10, BUDGET)
    with pytest.raises(ValueError, match="eps2 < 1"):
        stable.stable_parameters(1_000_000, 10, ApproxDP(2.0, 1e-6))


# ---------------------------------------------------------------------------------------------------
# The (eps, delta)-DP estimator through the registry


@pytest.fixture(scope="module")
def instance():
    data = gaussian_kappa(600_000, 5, 100.0, 3.0, np.random.default_rng(0))
    return data, CovProblem.from_rows(data.X, radius=data.radius, rows=data.rows_unbounded)


def test_release_budget_reproducibility_and_accuracy(instance):
    data, problem = instance
    a, acc = release("stable_gsampling", problem, BUDGET, np.random.default_rng(3))
    b, _ = release("stable_gsampling", problem, BUDGET, np.random.default_rng(3))
    c, _ = release("stable_gsampling", problem, BUDGET, np.random.default_rng(4))
    assert np.array_equal(a, b) and not np.allclose(a, c)
    assert acc.spent == BUDGET and acc.fully_spent()
    assert [what.split()[0] for what, _ in acc.ledger] == ["PTR", "Gaussian"]
    assert acc.ledger[0][1] == ApproxDP(0.1, 5e-7) and acc.ledger[1][1] == ApproxDP(0.9, 5e-7)
    p = stable.stable_parameters(600_000, 5, BUDGET)
    err = mahalanobis(a, data.truth)
    assert 0 < err < 3 * math.sqrt(5 * 6 / p.m) + 0.1  # the sampling error ~ sqrt(d(d+1)/m)
    with pytest.raises(ValueError, match="no ApproxDP budget implies"):
        release("stable_gsampling", problem, ZCDP(0.1), np.random.default_rng(0))


def test_failure_paths(instance):
    data, problem = instance
    rng = np.random.default_rng(0)
    # Far from safe: heavy-tailed rows have many leverage outliers -> the PTR test fails.
    X = np.random.default_rng(1).standard_cauchy((600_000, 5))
    with pytest.raises(stable.PTRFailed, match="too far from safe"):
        stable.stable_release(X, BUDGET, rng)
    p = stable.stable_parameters(600_000, 5, BUDGET)
    assert stable.stability_score(X, p.L0, p.k) [1] <= p.k + 1  # early stopping: bounded work
    bad = CovProblem.from_rows(np.zeros((600_000, 5)), radius=1.0, rows=X)
    with pytest.raises(stable.PTRFailed):
        stable.stable_gsampling(bad, Accountant(BUDGET), rng)
    zero = stable.stable_gsampling(bad, Accountant(BUDGET), rng, on_fail="zero")
    assert np.array_equal(zero, np.zeros((5, 5)))
    # n too small: decided from public quantities.
    small = CovProblem.from_rows(data.X[:1000], radius=data.radius, rows=data.rows_unbounded[:1000])
    with pytest.raises(stable.InsufficientData):
        stable.stable_gsampling(small, Accountant(BUDGET), rng)
    # No raw rows: a clear error.
    clipped_only = CovProblem.from_rows(data.X, radius=data.radius)
    with pytest.raises(ValueError, match="raw rows"):
        stable.stable_gsampling(clipped_only, Accountant(BUDGET), rng)
    with pytest.raises(ValueError, match="on_fail"):
        stable.stable_gsampling(problem, Accountant(BUDGET), rng, on_fail="ignore")


def test_loader_and_metric():
    rng = np.random.default_rng(0)
    data = gaussian_kappa(5000, 6, 1000.0, 1.5, rng)
    values = np.linalg.eigvalsh(data.truth)
    assert values.max() == pytest.approx(1) and values.max() / values.min() == pytest.approx(1000)
    assert np.linalg.norm(data.X, axis=1).max() <= data.radius * (1 + 1e-12)
    clipped = np.linalg.norm(data.rows_unbounded, axis=1) > data.radius
    assert data.info["clipped_fraction"] == clipped.mean() > 0
    np.testing.assert_array_equal(data.X[~clipped], data.rows_unbounded[~clipped])
    assert mahalanobis(data.truth, data.truth) == pytest.approx(0, abs=1e-9)
    assert mahalanobis(2 * data.truth, data.truth) == pytest.approx(math.sqrt(6))
    assert mahalanobis(np.zeros((6, 6)), data.truth) == pytest.approx(math.sqrt(6))


def test_build_instance_passes_raw_rows_only_when_given(experiment):
    from experiments.runner import build_instance
    exp = experiment("stable_mahalanobis")
    inst = build_instance(exp, exp.grid()[0])
    assert inst.problem.rows is not None and inst.problem.rows.shape == (inst.problem.n, inst.problem.d)
    other = experiment("synthetic_trace")
    assert build_instance(other, other.grid()[0]).problem.rows is None
