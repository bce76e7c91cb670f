"""CoinPress covariance (Biswas et al. 2020): exact budget spending, PSD outputs, seeding, the noise
calibration of a step (statistical, fixed seeds), the clipping/sensitivity bound on adversarial
neighbours, a pseudocode-faithful reference pinned to the fast code, and the paper's accuracy claim
(more iterations, lower Mahalanobis error) in the regimes where it holds."""
from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
from scipy import stats

from dpcov.mechanisms import Accountant, BudgetExceeded, CovProblem, PureDP, ZCDP
from dpcov.mechanisms.coinpress import (
    clip_rows,
    clipped_second_moment,
    coinpress_cov,
    coinpress_cov_rows,
    gaussian_tail_radius,
    noise_nu,
    noisy_step,
    paper_rho_split,
    sampling_eta,
    sensitivity,
    step_bound,
)
from dpcov.mechanisms.gaussian import gauss_cov, symmetric_gaussian
from dpcov.mechanisms.spectral import as_matrix, clamp_eigenvalues

RHO = 0.1


def gaussian_rows(n: int, d: int, eigenvalues, seed: int) -> np.ndarray:
    """N(0, Q diag(eigenvalues) Q^T) rows, divided by the largest row norm (so they fill the unit ball)."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    cov = (Q * np.asarray(eigenvalues)) @ Q.T
    X = rng.standard_normal((n, d)) @ np.linalg.cholesky(cov).T
    return X / np.linalg.norm(X, axis=1).max()


def mahalanobis(estimate: np.ndarray, sigma: np.ndarray) -> float:
    """||Sigma^{-1/2} estimate Sigma^{-1/2} - I||_F."""
    values, vectors = np.linalg.eigh(sigma)
    root_inv = (vectors / np.sqrt(values)) @ vectors.T
    return float(np.linalg.norm(root_inv @ estimate @ root_inv - np.eye(len(sigma))))


def upper(M: np.ndarray) -> np.ndarray:
    return M[np.triu_indices(len(M))]


@pytest.fixture(scope="module")
def rows():
    return gaussian_rows(3000, 6, np.linspace(1, 3, 6), seed=7)


def run_rows(X, budgets, seed=0, total=None, **options):
    acc = Accountant(ZCDP(total if total is not None else sum(budgets)))
    return coinpress_cov_rows(X, budgets, np.random.default_rng(seed), acc, **options), acc


# --- budget ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("t", [1, 2, 3, 5])
def test_paper_split_sums_to_rho(t):
    split = paper_rho_split(RHO, t)
    assert len(split) == t and math.fsum(split) == pytest.approx(RHO, rel=1e-15)
    assert split[-1] == pytest.approx(RHO if t == 1 else 0.75 * RHO)


@pytest.mark.parametrize("t", [1, 2, 4])
@pytest.mark.parametrize("calibration", ["domain", "paper"])
def test_ledger_holds_one_entry_per_iteration_summing_to_rho(rows, t, calibration):
    budgets = paper_rho_split(RHO, t)
    _, acc = run_rows(rows, budgets, total=RHO, calibration=calibration)
    assert [what for what, _ in acc.ledger] == [f"CoinPress: iteration {i}/{t}" for i in range(1, t + 1)]
    assert all(isinstance(b, ZCDP) for _, b in acc.ledger)
    assert [b.rho for _, b in acc.ledger] == pytest.approx(budgets, rel=1e-15)
    assert acc.spent.rho == pytest.approx(RHO, rel=1e-12) and acc.fully_spent()


def test_uneven_budgets_are_spent_as_given(rows):
    _, acc = run_rows(rows, [0.01, ZCDP(0.02), 0.07], total=0.1)
    assert [b.rho for _, b in acc.ledger] == pytest.approx([0.01, 0.02, 0.07])
    assert acc.fully_spent()


def test_overspending_is_refused(rows):
    with pytest.raises(BudgetExceeded):
        run_rows(rows, [0.05, 0.06], total=0.1)


def test_needs_a_zcdp_accountant(rows):
    with pytest.raises(TypeError):
        coinpress_cov_rows(rows, [0.1], np.random.default_rng(0), Accountant(PureDP(1.0)))


def test_problem_version_spends_the_whole_budget_once(rows):
    acc = Accountant(ZCDP(RHO))
    coinpress_cov(CovProblem.from_rows(rows), acc, np.random.default_rng(0))
    assert [(w, b.rho) for w, b in acc.ledger] == [("CoinPress: iteration 1/1", RHO)]


# --- outputs -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("t", [1, 2, 3])
@pytest.mark.parametrize("calibration", ["domain", "paper"])
def test_output_is_symmetric_psd(t, calibration):
    X = gaussian_rows(40, 5, np.geomspace(1, 1e-2, 5), seed=3)  # tiny n: noise dominates
    for seed in range(5):
        est, _ = run_rows(X, paper_rho_split(RHO, t), seed=seed, calibration=calibration)
        assert est.shape == (5, 5) and np.all(np.isfinite(est))
        np.testing.assert_array_equal(est, est.T)
        assert np.linalg.eigvalsh(est).min() >= -1e-12 * np.abs(est).max()


@pytest.mark.parametrize("calibration", ["domain", "paper"])
def test_problem_version_is_psd(rows, calibration):
    problem = CovProblem.from_rows(rows[:30])
    for seed in range(5):
        est = as_matrix(coinpress_cov(problem, Accountant(ZCDP(RHO)), np.random.default_rng(seed),
                                      calibration=calibration))
        np.testing.assert_array_equal(est, est.T)
        assert np.linalg.eigvalsh(est).min() >= -1e-12 * np.abs(est).max()


@pytest.mark.parametrize("radius", [1.0, 3.0])
def test_one_dimension_and_other_radii(radius):
    X = gaussian_rows(500, 1, [1.0], seed=1) * radius
    est, _ = run_rows(X, [0.05, 0.05], radius=radius)
    assert est.shape == (1, 1) and est[0, 0] >= 0
    assert est[0, 0] == pytest.approx(np.mean(X[:, 0] ** 2), rel=0.5)


# --- seeding ---------------------------------------------------------------------------------------------
def test_same_seed_same_output_other_seed_other_output(rows):
    budgets = paper_rho_split(RHO, 3)
    a, _ = run_rows(rows, budgets, seed=42)
    b, _ = run_rows(rows, budgets, seed=42)
    c, _ = run_rows(rows, budgets, seed=43)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    problem = CovProblem.from_rows(rows)
    p1 = as_matrix(coinpress_cov(problem, Accountant(ZCDP(RHO)), np.random.default_rng(5)))
    p2 = as_matrix(coinpress_cov(problem, Accountant(ZCDP(RHO)), np.random.default_rng(5)))
    np.testing.assert_array_equal(p1, p2)


# --- noise calibration (statistical) -------------------------------------------------------------------
def assert_iid_normal(samples: np.ndarray, sd: float, what: str) -> None:
    """z-test on the mean and a two-sided chi-square interval (alpha = 1e-4) on the variance."""
    samples = np.asarray(samples).ravel()
    k = samples.size
    z = samples.sum() / (sd * math.sqrt(k))
    assert abs(z) < 4.5, f"{what}: mean off (z = {z:.2f})"
    lo, hi = stats.chi2.ppf([0.5e-4, 1 - 0.5e-4], k)
    stat = float(np.sum((samples / sd) ** 2))
    assert lo <= stat <= hi, f"{what}: sd {math.sqrt(stat / k) * sd:.4g} vs {sd:.4g}"


@pytest.mark.parametrize("calibration", ["domain", "paper"])
def test_one_step_noise_is_n0_bound2_over_n_sqrt_rho(rows, calibration):
    n, d = rows.shape
    rng = np.random.default_rng(0)
    A = np.linalg.qr(rng.standard_normal((d, d)))[0] * np.linspace(1, 20, d)  # non-trivial transform
    gamma = gaussian_tail_radius(d, n, 0.1)
    bound = step_bound(A, 1.0, gamma, calibration)
    expected_bound = gamma if calibration == "paper" else min(gamma, np.linalg.norm(A, 2))
    assert bound == pytest.approx(expected_bound)
    moment = clipped_second_moment(rows @ A.T, bound)
    budget = ZCDP(0.03)
    sd = bound**2 / (n * math.sqrt(budget.rho))  # Delta / sqrt(2 rho), Delta = sqrt(2) B^2 / n
    noise = []
    for seed in range(25):
        acc = Accountant(budget)
        Z = noisy_step(rows, A, bound, budget, acc, np.random.default_rng(seed), "step")
        np.testing.assert_array_equal(Z, Z.T)  # symmetric noise
        noise.append(upper(Z - moment))
    assert_iid_normal(np.concatenate(noise), sd, f"step noise ({calibration})")


def test_problem_version_noise(rows):
    # t = 1 from sigma alone: r^2 Z = Sigma + r^2 B^2 / (n sqrt(rho)) SGW before the PSD projection;
    # compare the projected release with the projection of the expected draw.
    radius = 2.0
    problem = CovProblem.from_rows(rows * radius, radius=radius)
    n, d = problem.n, problem.d
    for calibration, bound in [("domain", 1.0), ("paper", gaussian_tail_radius(d, n, 0.1))]:
        est = as_matrix(coinpress_cov(problem, Accountant(ZCDP(RHO)), np.random.default_rng(9),
                                      calibration=calibration))
        noisy = problem.sigma + radius**2 * bound**2 / (n * math.sqrt(RHO)) * symmetric_gaussian(
            d, np.random.default_rng(9))
        values, vectors = np.linalg.eigh(noisy)
        np.testing.assert_allclose(est, (vectors * np.maximum(values, 0)) @ vectors.T, atol=1e-14)


def test_one_iteration_domain_calibration_is_gausscov(rows):
    """Dong et al. §6: on the suite's data CoinPress with t = 1 'degenerates into GaussCov'."""
    problem = CovProblem.from_rows(rows)
    a = coinpress_cov(problem, Accountant(ZCDP(RHO)), np.random.default_rng(3))
    b = gauss_cov(problem, Accountant(ZCDP(RHO)), np.random.default_rng(3))
    np.testing.assert_allclose(clamp_eigenvalues(a, 0, 1), clamp_eigenvalues(b, 0, 1), atol=1e-14)


def test_rows_and_statistics_versions_agree_for_one_iteration(rows):
    problem = CovProblem.from_rows(rows)
    for calibration in ["domain", "paper"]:
        a, _ = run_rows(rows, [RHO], seed=11, calibration=calibration)
        b = coinpress_cov(problem, Accountant(ZCDP(RHO)), np.random.default_rng(11),
                          calibration=calibration)
        np.testing.assert_allclose(a, as_matrix(b), atol=1e-12)


# --- clipping and sensitivity ------------------------------------------------------------------------------
def test_clipped_rows_respect_the_bound():
    rng = np.random.default_rng(1)
    W = rng.standard_normal((500, 7)) * rng.uniform(0, 10, (500, 1))
    W[0] = 0.0
    out = clip_rows(W, 2.5)
    norms = np.linalg.norm(out, axis=1)
    assert norms.max() <= 2.5 * (1 + 1e-12)
    small = np.linalg.norm(W, axis=1) <= 2.5
    np.testing.assert_array_equal(out[small], W[small])  # rows inside the ball are untouched


@pytest.mark.parametrize("calibration", ["domain", "paper"])
@pytest.mark.parametrize("singular_values", [[40.0, 35.0, 3.0, 1.0, 0.5, 0.1],  # gamma < r ||A||: clips
                                             [2.0, 2.0, 1.0, 0.5, 0.2, 0.1]],  # r ||A|| < gamma
                         ids=["clipping", "no-clipping"])
def test_sensitivity_on_adversarial_neighbours_never_exceeds_sqrt2_b2_over_n(calibration,
                                                                              singular_values):
    rng = np.random.default_rng(2)
    n, d, radius = 50, 6, 1.5
    U, _ = np.linalg.qr(rng.standard_normal((d, d)))
    V, _ = np.linalg.qr(rng.standard_normal((d, d)))
    A = (U * np.array(singular_values)) @ V.T
    gamma = gaussian_tail_radius(d, n, 0.1)
    bound = step_bound(A, radius, gamma, calibration)
    limit = sensitivity(bound, n)
    assert limit == pytest.approx(math.sqrt(2) * bound**2 / n)
    base = rng.standard_normal((n, d))
    base *= radius * rng.uniform(0, 1, (n, 1)) / np.linalg.norm(base, axis=1, keepdims=True)
    # replacement rows on the sphere of radius r: the right singular directions of A (whose images
    # are orthogonal: the worst case ||ww^T - w'w'^T||_F = sqrt(2) B^2 when both reach B), their
    # sums and differences, and random directions
    candidates = [radius * v for v in V.T] + [-radius * V[:, 0]]
    candidates += [radius * (V[:, 0] + s * V[:, 1]) / math.sqrt(2) for s in (1, -1)]
    random = rng.standard_normal((200, d))
    candidates += list(radius * random / np.linalg.norm(random, axis=1, keepdims=True))
    worst_frobenius = worst_upper = 0.0
    for k, x in enumerate(candidates):
        for x_prime in candidates[k + 1:k + 40]:
            X, X2 = base.copy(), base.copy()
            X[0], X2[0] = x, x_prime
            diff = clipped_second_moment(X @ A.T, bound) - clipped_second_moment(X2 @ A.T, bound)
            worst_frobenius = max(worst_frobenius, np.linalg.norm(diff) / limit)
            worst_upper = max(worst_upper, np.linalg.norm(upper(diff)) / limit)  # what the noise covers
    assert worst_upper <= worst_frobenius <= 1 + 1e-9
    if bound <= radius * singular_values[1]:  # two orthogonal images reach B: the bound is attained
        assert worst_frobenius >= 1 - 1e-9
    else:  # "paper" calibration without clipping: B = gamma exceeds every ||A x||, noise is generous
        assert worst_frobenius <= (radius * singular_values[0] / bound) ** 2


def test_domain_bound_is_data_independent_and_never_above_gamma():
    A = np.diag([3.0, 0.2])
    assert step_bound(A, 1.0, 10.0, "domain") == pytest.approx(3.0)
    assert step_bound(A, 1.0, 2.0, "domain") == pytest.approx(2.0)
    assert step_bound(A, 1.0, 2.0, "paper") == 2.0
    # first iteration: A_0 = I / r maps the r-ball into the unit ball, gamma >= sqrt(d) >= 1
    for d, n in [(1, 10), (5, 1000), (200, 50000)]:
        gamma = gaussian_tail_radius(d, n, 0.1)
        assert gamma >= math.sqrt(d)
        assert step_bound(np.eye(d) / 4.0, 4.0, gamma, "domain") == pytest.approx(1.0)


# --- a pseudocode-faithful reference, pinned to the fast code -----------------------------------------------
def reference_coinpress(X, budgets, seed, radius, beta, calibration):
    """Algorithm as written: loop over rows, explicit inverse square roots and inverses.
    Returns the estimate and how many transformed rows were clipped over all steps."""
    from scipy.linalg import sqrtm
    rng = np.random.default_rng(seed)
    n, d = X.shape
    t = len(budgets)
    gamma = gaussian_tail_radius(d, n, beta / t)
    eta = sampling_eta(d, n, beta / t)
    A = np.eye(d) / radius
    clipped = 0
    for i, rho_i in enumerate(budgets, start=1):
        B = gamma if calibration == "paper" else min(gamma, radius * np.linalg.svd(A, compute_uv=False)[0])
        Z = np.zeros((d, d))
        for x in X:
            w = A @ x
            if np.linalg.norm(w) > B:
                w = w * B / np.linalg.norm(w)
                clipped += 1
            Z += np.outer(w, w) / n
        sd = (math.sqrt(2) * B**2 / n) / math.sqrt(2 * rho_i)
        Z = Z + sd * symmetric_gaussian(d, rng)
        values, vectors = np.linalg.eigh(Z)
        Z_plus = (vectors * np.maximum(values, 0)) @ vectors.T
        if i == t:
            A_inv = np.linalg.inv(A)
            return A_inv @ Z_plus @ A_inv.T, clipped
        U = Z_plus + (eta + noise_nu(d, sd, beta / t)) * np.eye(d)
        A = np.real(np.linalg.inv(sqrtm(U))) @ A


@pytest.mark.parametrize("calibration", ["domain", "paper"])
def test_fast_code_matches_the_reference(calibration):
    # an ill-conditioned bulk plus three rows on the sphere: once A has whitened the bulk, those rows
    # exceed gamma and are clipped (with "domain"; "paper" noise is too large to whiten that far)
    X = gaussian_rows(2000, 4, np.geomspace(1, 1e-2, 4), seed=5) * 0.1
    outliers = np.random.default_rng(4).standard_normal((3, 4))
    X = np.vstack([X, outliers / np.linalg.norm(outliers, axis=1, keepdims=True)]) * 2.0
    budgets = [2.0] * 6
    fast, _ = run_rows(X, budgets, seed=8, radius=2.0, calibration=calibration)
    slow, clipped = reference_coinpress(X, budgets, 8, 2.0, 0.1, calibration)
    np.testing.assert_allclose(fast, slow, rtol=1e-7, atol=1e-12)
    if calibration == "domain":
        assert clipped > 0


# --- accuracy: the paper's claim and where it holds ----------------------------------------------------------
@pytest.fixture(scope="module")
def well_conditioned():
    return gaussian_rows(100_000, 8, np.linspace(1, 2, 8), seed=1)


@pytest.fixture(scope="module")
def ill_conditioned():
    return gaussian_rows(100_000, 8, np.geomspace(1, 1e-3, 8), seed=1)


def mean_error(X, t, calibration, trials=4):
    sigma = X.T @ X / len(X)
    return np.mean([mahalanobis(run_rows(X, paper_rho_split(RHO, t), seed=s,
                                         calibration=calibration)[0], sigma)
                    for s in range(trials)])


def test_more_iterations_lower_mahalanobis_error_paper_calibration(well_conditioned):
    """The paper's claim (its covariance experiments vary t = 1..5): with a loose initial ellipsoid
    (here r^2 I, ~gamma^2 times Sigma's eigenvalues) t > 1 beats t = 1 for large n."""
    one = mean_error(well_conditioned, 1, "paper")
    three = mean_error(well_conditioned, 3, "paper")
    assert three < one / 5, (one, three)


def test_domain_calibration_well_conditioned_one_iteration_is_best(well_conditioned):
    """With the noise calibrated to the rows' public norm bound, step 1 is already GaussCov; on a
    well-conditioned Sigma whitening gains nothing and splitting the budget only costs (Dong §6)."""
    one = mean_error(well_conditioned, 1, "domain")
    three = mean_error(well_conditioned, 3, "domain")
    assert one < three, (one, three)
    assert one < mean_error(well_conditioned, 1, "paper") / 10  # domain dominates paper at t = 1


def test_domain_calibration_ill_conditioned_iterations_help(ill_conditioned):
    one = mean_error(ill_conditioned, 1, "domain")
    four = mean_error(ill_conditioned, 4, "domain")
    assert four < one / 2, (one, four)


# --- the registry entry ---------------------------------------------------------------------------------------
def test_registry_signature_has_keyword_only_options():
    params = inspect.signature(coinpress_cov).parameters.values()
    assert [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY] == \
        ["iterations", "beta", "calibration", "numerics"]


def test_problem_version_refuses_multiple_iterations(rows):
    with pytest.raises(ValueError, match="needs the rows"):
        coinpress_cov(CovProblem.from_rows(rows), Accountant(ZCDP(RHO)), np.random.default_rng(0),
                      iterations=3)


# --- validation -----------------------------------------------------------------------------------------------
def test_rejects_rows_outside_the_ball(rows):
    with pytest.raises(ValueError, match="radius"):
        run_rows(rows * 2, [RHO])


@pytest.mark.parametrize("options, error", [
    ({"calibration": "tight"}, ValueError),
    ({"beta": 0.0}, ValueError),
    ({"beta": 1.5}, ValueError),
    ({"beta": "0.1"}, TypeError),
])
def test_rejects_bad_options(rows, options, error):
    with pytest.raises(error):
        run_rows(rows, [RHO], **options)
    with pytest.raises(error):
        coinpress_cov(CovProblem.from_rows(rows), Accountant(ZCDP(RHO)), np.random.default_rng(0),
                      **options)


@pytest.mark.parametrize("budgets, error", [([], ValueError), (0.1, TypeError), ([0.1, -0.1], ValueError),
                                            ("0.1", TypeError)])
def test_rejects_bad_budgets(rows, budgets, error):
    with pytest.raises(error):
        coinpress_cov_rows(rows, budgets, np.random.default_rng(0), Accountant(ZCDP(1.0)))


@pytest.mark.parametrize("iterations, error", [(0, ValueError), (1.5, TypeError), (True, TypeError)])
def test_rejects_bad_iterations(rows, iterations, error):
    with pytest.raises(error):
        coinpress_cov(CovProblem.from_rows(rows), Accountant(ZCDP(RHO)), np.random.default_rng(0),
                      iterations=iterations)
    with pytest.raises(error):
        paper_rho_split(RHO, iterations)
