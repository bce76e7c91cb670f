"""Stable covariance (Brown-Hopkins-Smith 2023) + Gaussian sampling (Alabi et al. 2023): the four
properties of the lecture notes on random and adversarial neighbours, the failure path, reproducibility,
Alg 1's mean, the budget, the cost claim, and the harness integration."""
import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from dpcov.data.gaussian import gaussian_kappa, kappa_population
from dpcov.experiments.metrics import mahalanobis
from dpcov.mechanisms import stable
from dpcov.mechanisms.privacy import Accountant, ApproxDP, ZCDP
from dpcov.mechanisms.problem import CovProblem
from dpcov.mechanisms.registry import release

BUDGET = ApproxDP(1.0, 1e-6)


# ---------------------------------------------------------------------------------------------------
# Datasets and neighbours


def gaussian(n, d, seed):
    return np.random.default_rng(seed).standard_normal((n, d)) @ np.random.default_rng(seed + 99).standard_normal((d, d))


def borderline(n, d, L0, seed, planted=12, spread=(0, 2.5)):
    """Gaussian rows plus ``planted`` rows with leverage spread over [e^a L0, e^b L0], (a, b) = ``spread``:
    with fewer than k rows above L0, d_hat < k and the properties are exercised where they bite."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    u = rng.uniform(*spread, planted)
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


N, D, K = 1200, 3, 6  # inside the proved regime: default_L0(1200, 3) = 0.0154 <= proved_L0_limit(6) = 0.0171
L0 = stable.default_L0(N, D)  # (n = 300 with k = 6, the parameters before issue 16, is outside it)


@pytest.fixture(autouse=True)
def one_blas_thread():
    with threadpool_limits(limits=1):  # mostly tiny matrices: BLAS threads only cost time
        yield


def test_module_parameters_are_inside_the_proved_regime():
    assert L0 <= stable.proved_L0_limit(K)


def cases():
    for seed in range(6):
        yield "gaussian", gaussian(N, D, seed)
        yield "borderline", borderline(N, D, L0, seed, planted=4)
        yield "borderline-many", borderline(N, D, L0, seed, planted=30, spread=(-1.5, 0.15))


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


@pytest.mark.parametrize("extra", range(-2, 4))
def test_early_stopping_with_many_rows_just_above_L0(extra):
    """K + extra rows with leverage in (L, e^{1/K} L): removed at j = 0 only, so d_hat = min(K + extra, 1).
    Stopping with d_hat = K once K rows are gone at j = 0 (as before issue 16) moved the released score
    from 1 to K between neighbours (K - 1 and K such rows)."""
    rng = np.random.default_rng(extra + 10)
    n, L = 3000, 0.002
    X = rng.standard_normal((n, D))
    X /= np.linalg.norm(X, axis=1, keepdims=True) / math.sqrt(D)  # every leverage about D/n < L
    q = K + extra
    directions = rng.standard_normal((q, D))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    X[:q] = directions * math.sqrt(n * L * math.exp(0.5 / K))
    full = stable.stable_covariance(X, L, K)
    assert full.sizes[0] == n - q and full.sizes[1] == n  # the construction works
    assert full.d_hat == min(q, 1)
    assert stable.stability_score(X, L, K)[0] == full.d_hat


@pytest.mark.parametrize("name, X", list(cases()))
def test_soundness_weighted_leverage_at_most_20_L0(name, X):
    """Property 3 (Lemma 7): when d_hat < k, weighted leverage <= B(k, L0) <= 20 L0 where w_i > 0."""
    checked = 0
    for Y in [X] + [Y for _, Y in neighbours(X, seed=3)]:
        result = stable.stable_covariance(Y, L0, K)
        if result.d_hat >= K:
            continue
        positive = result.w > 0
        lev = stable.weighted_leverages(Y, result.w)
        assert (lev[positive] <= stable.soundness_bound(L0, K)).all()
        checked += 1
    assert checked and stable.soundness_bound(L0, K) <= stable.SOUNDNESS_FACTOR * L0


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
    assert np.array_equal(stable.greedy_filter(X, L0), S)
    # at most one per round: rows whose norm alone proves leverage > L0 leave without a factorisation
    assert 1 <= len(counted) <= rounds


@pytest.mark.parametrize("seed", range(4))
def test_warm_started_filters_equal_independent_filters(seed):
    """Alg 3 as the notes write it: 2k + 1 independent greedy filters, |S_j| and w_i counted directly.
    The warm-started filters (and their per-row removal index) must give the same sizes, score and weights
    on data whose sets change at many thresholds."""
    k = 6
    X = borderline(400, 3, 0.02, seed, planted=25, spread=(-0.5, 2.2))
    sets = [stable.greedy_filter(X, np.exp(j / k) * 0.02) for j in range(2 * k + 1)]
    sizes = np.array([S.sum() for S in sets])
    assert len(set(sizes)) >= 4  # the sets do change at several thresholds
    result = stable.stable_covariance(X, 0.02, k)
    assert np.array_equal(result.sizes, sizes)
    assert result.d_hat == min(k, min(400 - sizes[j] + j for j in range(k + 1)))
    assert np.array_equal(result.w, sum(sets[k + 1:]) / k)


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
# The conditions of the proof (docs/stable_privacy.md), computed from public values


def test_every_condition_holds_at_the_defaults_with_margin():
    for n, d, budget in [(1_000_000, 10, BUDGET), (400_000, 4, ApproxDP(1.0, 1e-5)), (500_000, 10, BUDGET)]:
        p = stable.stable_parameters(n, d, budget)
        conditions = stable.proof_conditions(n, d, p)
        assert [c.name.split()[0] for c in conditions] == ["(C1)", "(C2)", "(C3)", "(C4)", "(C5)"]
        assert all(c.holds for c in conditions), conditions
        # (C1), (C2) by hand: e^{(2k-1)/k} L0 <= 1 - e^{-1/k} and (k-1) e^2 L0 <= 1 - e^2/20
        assert math.exp((2 * p.k - 1) / p.k) * p.L0 <= 1 - math.exp(-1 / p.k)
        assert (p.k - 1) * math.e**2 * p.L0 <= 1 - math.e**2 / 20
        assert p.L0 <= stable.proved_L0_limit(p.k)
        # (C5): the Renyi bound of Alg 1 at the notes' m is well inside eps2
        assert stable.gaussian_sampling_epsilon(p.m, p.sensitivity, p.sampling.delta) < 0.7 * p.sampling.eps


@pytest.mark.parametrize("n, d, options, violated", [
    # the examples: the old test parameters, and a small ptr_fraction (k = 2768)
    (300, 3, {"L0": stable.default_L0(300, 3), "k": 6}, ["(C1)", "(C2)", "(C3)", "(C4)", "(C5)"]),
    (1_000_000, 10, {"ptr_fraction": 0.02}, ["(C2)"]),
    (1_000_000, 10, {"ptr_fraction": 0.03}, ["(C2)"]),
    (1_000_000, 10, {"ptr_fraction": 0.005}, ["(C1)", "(C2)"]),
    # L0 and k set by hand into the unproved regime, one condition at a time
    (1_000_000, 10, {"L0": 1.2 * stable.proved_L0_limit(558), "k": 558}, ["(C2)", "(C5)"]),
    (10_000_000, 10, {"L0": 1.2 * stable.proved_L0_limit(6000), "k": 6000}, ["(C2)"]),
    (1_000_000, 10, {"k": 20}, ["(C3)"]),  # a PTR threshold that passes unsafe data too often
    (1_000_000, 10, {"beta": 1e-30}, ["(C2)", "(C5)"]),  # beta -> 0 inflates L0
])
def test_unproved_regimes_are_refused_naming_the_condition(n, d, options, violated):
    with pytest.raises(stable.InsufficientData) as info:
        stable.stable_parameters(n, d, BUDGET, **options)
    message = str(info.value)
    failed = [name for name in ["(C1)", "(C2)", "(C3)", "(C4)", "(C5)"] if f"{name}" in message]
    assert failed == violated, message
    assert "docs/stable_privacy.md" in message


def test_refusal_happens_before_the_data_are_read(monkeypatch):
    monkeypatch.setattr(stable, "stability_score", lambda *a: pytest.fail("the data were read"))
    monkeypatch.setattr(stable, "stable_covariance", lambda *a: pytest.fail("the data were read"))
    X = np.random.default_rng(0).standard_normal((1_000_000, 10))
    with pytest.raises(stable.InsufficientData, match=r"\(C2\) soundness FAILS"):
        stable.stable_release(X, BUDGET, np.random.default_rng(0), ptr_fraction=0.02)
    problem = CovProblem.from_rows(np.zeros((1_000_000, 10)), radius=1.0, rows=X)
    with pytest.raises(stable.InsufficientData, match=r"\(C2\)"):
        release("stable_gsampling", problem, BUDGET, np.random.default_rng(0), options={"ptr_fraction": 0.02})


def test_the_soundness_constant_cannot_be_set_below_what_is_proved(monkeypatch):
    monkeypatch.setattr(stable, "SOUNDNESS_FACTOR", 7.0)  # < e^2: no L0 makes (C2) hold
    with pytest.raises(stable.InsufficientData, match=r"\(C2\) soundness FAILS"):
        stable.stable_parameters(1_000_000, 10, BUDGET)
    assert stable.proved_L0_limit(558) == 0


def test_option_values_are_checked_at_config_time():
    from dpcov.mechanisms.registry import check_options
    check_options("stable_gsampling", {"ptr_fraction": 0.2, "on_fail": "zero", "beta": 2})
    for bad in [{"ptr_fraction": 1.5}, {"ptr_fraction": 0}, {"ptr_fraction": "0.1"}, {"beta": -1},
                {"beta": math.inf}, {"on_fail": "ignore"}]:
        with pytest.raises(ValueError, match="stable_gsampling"):
            check_options("stable_gsampling", bad)


def test_ptr_k_is_the_smallest_even_k_passing_the_ptr_condition():
    for eps1, delta1 in [(0.1, 5e-7), (0.05, 5e-6), (0.5, 1e-3), (1.0, 0.25)]:
        k = stable.ptr_k(eps1, delta1)
        assert k % 2 == 0
        assert 0.5 * math.exp(-(k / 2 - 2) * eps1 / 2) <= delta1
        assert 0.5 * math.exp(-((k - 2) / 2 - 2) * eps1 / 2) > delta1


def _renyi_gaussians(u, alpha):
    """Exact D_alpha(N(0, I + diag u) || N(0, I)) (sum over eigenvalues)."""
    lam = 1 + np.asarray(u)
    inner = alpha + (1 - alpha) * lam
    assert (inner > 0).all()
    return float(np.sum(-0.5 * np.log(lam) - np.log(inner) / (2 * (alpha - 1))))


def test_gaussian_sampling_renyi_bound():
    """Lemma 10: D_alpha <= ||u||^2/4 (1/(1 - Delta)^2 + a/(1 - a Delta)^2), a = alpha - 1, for every u
    with ||u||_2 <= Delta (both signs, spread or concentrated), and the (eps, delta) it implies is at
    least the exact conversion of the exact divergence (so the certificate is a bound, not an estimate)."""
    rng = np.random.default_rng(0)
    for Delta in [0.001, 0.05, 0.3, 0.8]:
        for a in [0.1, 1.0, 0.5 / Delta, 0.95 / Delta]:
            bound = Delta**2 / 4 * (1 / (1 - Delta) ** 2 + a / (1 - a * Delta) ** 2)
            for _ in range(200):
                u = rng.standard_normal(rng.integers(1, 6))
                u *= Delta / np.linalg.norm(u) * rng.choice([1.0, rng.uniform(0.5, 1)])
                assert _renyi_gaussians(u, 1 + a) <= bound * (1 + 1e-12)
            for u in ([Delta], [-Delta]):
                assert _renyi_gaussians(u, 1 + a) <= bound * (1 + 1e-12)
    # the certificate vs the exact single-direction divergence at its own alpha, m samples
    m, Delta, delta = 201, 0.0064, 5e-6
    eps = stable.gaussian_sampling_epsilon(m, Delta, delta)
    exact = min(m * max(_renyi_gaussians([Delta], 1 + a), _renyi_gaussians([-Delta], 1 + a))
                + math.log(1 / delta) / a for a in np.geomspace(1, 1 / Delta * 0.99, 400))
    assert exact <= eps < 1.3 * exact  # a bound (the Lagrange remainders cost ~20% here), not an estimate
    assert stable.gaussian_sampling_epsilon(m, 1.0, delta) == math.inf
    # the notes' claim: Delta <= eps/(8 ln(1/delta)) and m = floor(eps^2/(8 Delta^2 ln(1/delta))) => eps
    for eps, delta in [(0.9, 5e-7), (0.5, 1e-3), (0.1, 1e-9), (0.99, 0.4)]:
        log_term = math.log(1 / delta)
        for Delta in [eps / (8 * log_term), eps / (80 * log_term)]:
            m = math.floor(eps**2 / (8 * Delta**2 * log_term))
            assert stable.gaussian_sampling_epsilon(m, Delta, delta) <= eps


# ---------------------------------------------------------------------------------------------------
# Floating point: one far-out row must not move the score by more than the proof allows


def test_far_out_and_tiny_rows_do_not_break_score_stability():
    """A row of norm 1e200 used to overflow X_S^T X_S (every S_j empty or everything kept); a row far
    enough to make it numerically singular emptied every S_j. Both moved d_hat from ~0 to k."""
    X = gaussian(3000, 3, 0)
    L = 1.5 * stable.leverages(X).max()
    base = stable.stable_covariance(X, L, K)
    rng = np.random.default_rng(1)
    for scale in [1e8, 1e20, 1e100, 1e150, 1e200, 1e300, 1e-200]:
        Y = X.copy()
        Y[0] = scale * rng.standard_normal(D)
        other = stable.stable_covariance(Y, L, K)
        assert abs(base.d_hat - other.d_hat) <= 2, scale
        assert stable.stability_score(Y, L, K)[0] == other.d_hat
        if scale > 1:
            assert other.w[0] == 0
    # exact power-of-two scaling of every row changes nothing (leverages are scale-invariant)
    for e in [-900, -300, 300, 900]:
        Z = np.ldexp(X, e)
        other = stable.stable_covariance(Z, L, K)
        assert other.d_hat == base.d_hat and np.array_equal(other.w, base.w)


def test_release_is_scale_equivariant_and_bounded_to_its_domain():
    budget = ApproxDP(1.0, 0.1)  # a loose delta lets n = 1e5 run (only the arithmetic is tested here)
    X = gaussian(100_000, 5, 0)
    a = stable.stable_release(X, budget, np.random.default_rng(5))
    b = stable.stable_release(np.ldexp(X, 400), budget, np.random.default_rng(5))
    assert np.array_equal(np.ldexp(a, 800), b)  # computed at the scale of the largest entry, exactly
    Y = X.copy()
    Y[0] = 1e140  # inside the domain: a finite release, this row filtered out
    c = stable.stable_release(Y, budget, np.random.default_rng(5))
    assert np.isfinite(c).all() and np.allclose(c, a, rtol=0.5)
    Y[0] = 1e160
    with pytest.raises(ValueError, match="at most"):
        stable.stable_release(Y, budget, np.random.default_rng(5))


def test_trials_share_the_deterministic_steps_and_nothing_else(monkeypatch):
    """Releases on one problem keep d_hat and Sigma_w (functions of the rows alone) in problem.shared:
    the same numbers as computed afresh, the score computed once, and fresh noise for every release."""
    budget = ApproxDP(1.0, 0.1)
    X = gaussian(100_000, 5, 0)
    fresh = [stable.stable_release(X, budget, np.random.default_rng(seed)) for seed in (5, 6)]
    calls = []
    score = stable.stability_score
    monkeypatch.setattr(stable, "stability_score", lambda *a: calls.append(1) or score(*a))
    shared = {}
    kept = [stable.stable_release(X, budget, np.random.default_rng(seed), shared=shared) for seed in (5, 6)]
    assert all(np.array_equal(a, b) for a, b in zip(fresh, kept)) and len(calls) == 1
    assert not np.array_equal(kept[0], kept[1])
    problem = CovProblem.from_rows(X / np.linalg.norm(X, axis=1).max(), rows=X)
    assert problem.shared == {} and problem.shared is problem.shared


@pytest.mark.parametrize("shift", [-1074, -1022, -600, -3, 0, 7, 600, 1023, 1060])
def test_power_of_two_scaling_equals_ldexp(shift):
    """_scaled multiplies by 2^shift where that is a normal double: the same correctly rounded values as
    np.ldexp, also where the result is subnormal or overflows (the floating-point argument of the proof)."""
    rng = np.random.default_rng(shift + 2000)
    X = rng.standard_normal(20000) * 10.0 ** rng.uniform(-320, 300, 20000)
    with np.errstate(over="ignore"):
        assert np.array_equal(stable._scaled(X, shift), np.ldexp(X, shift))
