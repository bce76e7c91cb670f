"""The Dong et al. zCDP mechanisms through ``release``: outputs, exact privacy spending, seeding,
noise calibration (statistical, fixed seeds) and input validation."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpcov.data.synthetic import synthetic_zipf
from dpcov.mechanisms import (
    MECHANISMS,
    ApproxDP,
    CovProblem,
    PureDP,
    ZCDP,
    get_mechanism,
    release,
)

CASES = [
    ("gauss", {}),
    ("separate", {}),
    ("adaptive", {"radius": "known"}),
    ("adaptive", {"radius": "private"}),
    ("clip_gauss", {"tau": 0.5}),
    ("clip_separate", {"tau": 0.5}),
    ("zero", {}),
]
CASE_IDS = [name + "".join(f"-{k}={v}" for k, v in opts.items()) for name, opts in CASES]
NOISY = [case for case in CASES if case[0] != "zero"]
NOISY_IDS = [i for i in CASE_IDS if i != "zero"]
RHO = 0.1

# AdaptiveCov's SVT budgets under the paper's split (Dong Alg. 2; GUIDE.md §3)
EPS_RADIUS = math.sqrt(RHO) / 2  # PrivRadius at sqrt(rho)/2  -> rho/8
EPS_SVT = math.sqrt(RHO / 2)  # SVT at sqrt(rho/2)          -> rho/4


def chi2_interval(k: int, alpha: float = 1e-4) -> tuple[float, float]:
    """Two-sided interval for a chi-square statistic with k degrees of freedom."""
    lo, hi = stats.chi2.ppf([alpha / 2, 1 - alpha / 2], k)
    return float(lo), float(hi)


def assert_iid_normal(samples: np.ndarray, sd: float, what: str) -> None:
    """samples ~ iid N(0, sd^2): z-test on the mean and chi-square interval on the variance."""
    samples = np.asarray(samples).ravel()
    k = samples.size
    z = samples.sum() / (sd * math.sqrt(k))
    assert abs(z) < 4.5, f"{what}: mean {samples.mean():.3g} is off (z = {z:.2f})"
    lo, hi = chi2_interval(k)
    stat = float(np.sum((samples / sd) ** 2))
    assert lo <= stat <= hi, (f"{what}: empirical sd {math.sqrt(stat / k) * sd:.4g} vs expected "
                              f"{sd:.4g} (chi2 {stat:.1f} not in [{lo:.1f}, {hi:.1f}], k={k})")


@pytest.fixture(scope="module")
def problem():
    X = synthetic_zipf(2000, 8, 4, 3.0, np.random.default_rng(2024))
    return CovProblem.from_rows(X)


@pytest.fixture(scope="module")
def noisy_rows():
    """Tiny n: noise dominates, so clamping is active at both ends."""
    return synthetic_zipf(30, 6, 1, 3.0, np.random.default_rng(11))


@pytest.fixture(scope="module")
def noisy_problem(noisy_rows):
    return CovProblem.from_rows(noisy_rows)


def run(name, problem, options, seed=0, budget=ZCDP(RHO), clamp=True):
    return release(name, problem, budget, np.random.default_rng(seed), options=options, clamp=clamp)


# --- outputs ------------------------------------------------------------------------------------
@pytest.mark.parametrize("clamp", [True, False])
@pytest.mark.parametrize("name, options", CASES, ids=CASE_IDS)
def test_output_is_finite_symmetric_d_by_d(problem, name, options, clamp):
    est, _ = run(name, problem, options, clamp=clamp)
    assert isinstance(est, np.ndarray)
    assert est.shape == (problem.d, problem.d)
    assert np.all(np.isfinite(est))
    np.testing.assert_array_equal(est, est.T)  # exactly symmetric


@pytest.mark.parametrize("name, options", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("radius", [1.0, 2.0])
def test_clamped_eigenvalues_lie_in_zero_r_squared(noisy_rows, name, options, radius):
    problem = CovProblem.from_rows(noisy_rows * radius, radius=radius)
    options = {k: (v * radius if k == "tau" else v) for k, v in options.items()}
    for seed in range(5):
        est, _ = run(name, problem, options, seed=seed, clamp=True)
        eig = np.linalg.eigvalsh(est)
        assert eig.min() >= -1e-12 * radius**2
        assert eig.max() <= radius**2 * (1 + 1e-12)


@pytest.mark.parametrize("name, options", [c for c in NOISY if c[1] != {"radius": "private"}],
                         ids=[i for i in NOISY_IDS if i != "adaptive-radius=private"])
def test_unclamped_output_can_leave_the_range(noisy_problem, name, options):
    # with n = 30 the noise is large: without clamping some eigenvalue is < 0 or > 1 for some seed.
    # (Not AdaptiveCov with PrivRadius: at n = 30 its SVT threshold ~ 6/eps log(2K/beta) > n is
    # never crossed, so r~ = 2^-K and the release is ~0.)
    out_of_range = False
    for seed in range(10):
        eig = np.linalg.eigvalsh(run(name, noisy_problem, options, seed=seed, clamp=False)[0])
        out_of_range |= eig.min() < -1e-9 or eig.max() > 1 + 1e-9
    assert out_of_range


def test_zero_mechanism_releases_zero_and_spends_nothing(problem):
    est, acc = run("zero", problem, {})
    np.testing.assert_array_equal(est, np.zeros((problem.d, problem.d)))
    assert acc.ledger == [] and acc.spent is None and not acc.fully_spent()


# --- exact privacy spending ---------------------------------------------------------------------
def ledger_values(acc):
    """The ledger as (what, notion name, value) with values as floats for approx comparison."""
    out = []
    for what, budget in acc.ledger:
        value = budget.rho if isinstance(budget, ZCDP) else budget.eps
        out.append((what, type(budget).__name__, value))
    return out


def assert_ledger(acc, expected):
    got = ledger_values(acc)
    assert [g[:2] for g in got] == [e[:2] for e in expected], got
    for g, e in zip(got, expected):
        assert g[2] == pytest.approx(e[2], rel=1e-12), (g, e)


def test_gauss_spends_rho(problem):
    _, acc = run("gauss", problem, {})
    assert_ledger(acc, [("GaussCov: noisy covariance", "ZCDP", RHO)])
    assert acc.fully_spent() and acc.spent.rho == pytest.approx(RHO, rel=1e-12)


@pytest.mark.parametrize("name, options", [("separate", {}), ("clip_separate", {"tau": 0.5})])
def test_separate_spends_half_on_eigenvalues_half_on_gausscov(problem, name, options):
    _, acc = run(name, problem, options)
    assert_ledger(acc, [("SeparateCov: eigenvalues", "ZCDP", RHO / 2),
                        ("GaussCov: noisy covariance", "ZCDP", RHO / 2)])
    assert acc.fully_spent()


def test_clip_gauss_spends_rho(problem):
    _, acc = run("clip_gauss", problem, {"tau": 0.25})
    assert_ledger(acc, [("GaussCov: noisy covariance", "ZCDP", RHO)])
    assert acc.fully_spent()


def _final_step(cov_rho, branch):
    if branch == "gauss":
        return [("GaussCov: noisy covariance", "ZCDP", cov_rho)]
    return [("SeparateCov: eigenvalues", "ZCDP", cov_rho / 2),
            ("GaussCov: noisy covariance", "ZCDP", cov_rho / 2)]


def _branch(acc):
    return "separate" if acc.ledger[-2][0] == "SeparateCov: eigenvalues" else "gauss"


@pytest.mark.parametrize("seed", range(3))
def test_adaptive_private_radius_spends_the_paper_split(problem, seed):
    _, acc = run("adaptive", problem, {"radius": "private"}, seed=seed)
    # PrivRadius sqrt(rho)/2-DP (rho/8), trace rho/8, SVT sqrt(rho/2)-DP (rho/4), covariance rho/2
    assert_ledger(acc, [("PrivRadius: SVT", "PureDP", EPS_RADIUS),
                        ("AdaptiveCov: trace", "ZCDP", RHO / 8),
                        ("AdaptiveCov: SVT", "PureDP", EPS_SVT)] + _final_step(RHO / 2, _branch(acc)))
    assert acc.fully_spent()


@pytest.mark.parametrize("seed", range(3))
def test_adaptive_known_radius_gives_radius_share_to_covariance(problem, seed):
    _, acc = run("adaptive", problem, {"radius": "known"}, seed=seed)
    assert_ledger(acc, [("AdaptiveCov: trace", "ZCDP", RHO / 8),
                        ("AdaptiveCov: SVT", "PureDP", EPS_SVT)] + _final_step(5 * RHO / 8, _branch(acc)))
    assert acc.fully_spent()


@pytest.fixture(scope="module")
def separate_branch_problem():
    # d = 60, n = 1000, all rows of norm 1 with the public code's 1/6 factor: ClipSeparateCov wins
    X = synthetic_zipf(1000, 60, 1, 3.0, np.random.default_rng(1))
    return CovProblem.from_rows(X)


@pytest.mark.parametrize("radius_option", ["known", "private"])
def test_adaptive_separate_branch_spends_the_split(separate_branch_problem, radius_option):
    options = {"radius": radius_option, "separate_noise_factor": 1 / 6}
    _, acc = run("adaptive", separate_branch_problem, options, seed=0)
    assert _branch(acc) == "separate"
    head = [("AdaptiveCov: trace", "ZCDP", RHO / 8), ("AdaptiveCov: SVT", "PureDP", EPS_SVT)]
    if radius_option == "private":
        head = [("PrivRadius: SVT", "PureDP", EPS_RADIUS)] + head
    cov = RHO / 2 if radius_option == "private" else 5 * RHO / 8
    assert_ledger(acc, head + _final_step(cov, "separate"))
    assert acc.fully_spent()


def test_adaptive_custom_split_is_charged(problem):
    split = {"radius": 0.25, "trace": 0.125, "svt": 0.5}
    _, acc = run("adaptive", problem, {"radius": "private", "split": split}, seed=1)
    assert_ledger(acc, [("PrivRadius: SVT", "PureDP", math.sqrt(2 * RHO * 0.25)),
                        ("AdaptiveCov: trace", "ZCDP", RHO * 0.125),
                        ("AdaptiveCov: SVT", "PureDP", math.sqrt(2 * RHO * 0.5))]
                  + _final_step(RHO * 0.125, _branch(acc)))
    assert acc.fully_spent()


@pytest.mark.parametrize("split", [
    {"radius": 0.5, "trace": 0.25, "svt": 0.25},  # nothing left for the covariance
    {"trace": 0.0},
    {"svt": -0.1},
    {"other": 0.1},
])
def test_adaptive_bad_split_raises(problem, split):
    with pytest.raises(ValueError, match="split"):
        run("adaptive", problem, {"split": split})


@pytest.mark.parametrize("options", [{"radius": "estimated"}, {"beta": 0.0}, {"beta": 1.0}])
def test_adaptive_bad_options_raise(problem, options):
    with pytest.raises(ValueError):
        run("adaptive", problem, options)


@pytest.mark.parametrize("name, options", NOISY, ids=NOISY_IDS)
def test_zcdp_mechanism_under_approx_dp_target_spends_the_converted_rho(problem, name, options):
    target = ApproxDP(1.0, 1e-6)
    _, acc = run(name, problem, options, budget=target)
    rho = target.to_zcdp().rho
    assert acc.total == ZCDP(rho)
    assert acc.spent.rho == pytest.approx(rho, rel=1e-9)
    assert acc.spent.to_approx_dp(1e-6).eps <= 1.0 * (1 + 1e-9)


@pytest.mark.parametrize("name, options", [c for c in CASES if c[0] != "zero"],
                         ids=[i for c, i in zip(CASES, CASE_IDS) if c[0] != "zero"])
def test_zcdp_mechanism_refuses_a_pure_dp_target(problem, name, options):
    # zCDP never implies pure DP: budget_guaranteeing has no answer, so release raises (the zero
    # matrix spends nothing and is registered as pure DP: tests/test_pure.py)
    with pytest.raises(ValueError, match="cannot meet a PureDP guarantee"):
        run(name, problem, options, budget=PureDP(0.8))


# --- seeding ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, options", CASES, ids=CASE_IDS)
def test_same_seed_same_output(problem, name, options):
    a, acc_a = run(name, problem, options, seed=17)
    b, acc_b = run(name, problem, options, seed=17)
    np.testing.assert_array_equal(a, b)
    assert acc_a.ledger == acc_b.ledger


@pytest.mark.parametrize("name, options", NOISY, ids=NOISY_IDS)
def test_different_seed_different_output(problem, name, options):
    a, _ = run(name, problem, options, seed=17)
    b, _ = run(name, problem, options, seed=18)
    assert not np.allclose(a, b, rtol=0, atol=1e-12)


def test_release_does_not_touch_the_problem(problem):
    sigma = problem.sigma.copy()
    for name, options in CASES:
        run(name, problem, options)
    np.testing.assert_array_equal(problem.sigma, sigma)


# --- noise calibration --------------------------------------------------------------------------
def ball_problem(n, d, seed, radius=1.0):
    """Synthetic rows (N = 2: norms 1/2 and 1) scaled into the ball of the given radius."""
    X = synthetic_zipf(n, d, 2, 3.0, np.random.default_rng(seed)) * radius
    assert np.linalg.norm(X, axis=1).max() == pytest.approx(radius, rel=1e-12)
    return CovProblem.from_rows(X, radius=radius)


@pytest.mark.parametrize("rho", [0.1, 2.0])
def test_gausscov_noise_has_sd_one_over_sqrt_rho_n(rho):
    n, d, seeds = 500, 40, 20
    problem = ball_problem(n, d, 0)
    diag, off = [], []
    iu = np.triu_indices(d, 1)
    for seed in range(seeds):
        est, acc = run("gauss", problem, {}, seed=seed, budget=ZCDP(rho), clamp=False)
        noise = est - problem.sigma
        np.testing.assert_array_equal(noise, noise.T)  # one draw per pair, mirrored exactly
        diag.append(np.diag(noise))
        off.append(noise[iu])
    sd = 1 / (math.sqrt(rho) * n)
    assert_iid_normal(np.concatenate(off), sd, "off-diagonal GaussCov noise")
    assert_iid_normal(np.concatenate(diag), sd, "diagonal GaussCov noise")
    # entries of one draw are uncorrelated with each other (no repeated draws)
    first = np.concatenate([diag[0], off[0]])
    second = np.concatenate([diag[1], off[1]])
    assert abs(np.corrcoef(first, second)[0, 1]) < 4.5 / math.sqrt(first.size)


def test_clip_gausscov_noise_has_sd_tau_squared_over_sqrt_rho_n():
    n, d, seeds, tau = 500, 30, 10, 0.25
    problem = ball_problem(n, d, 1)
    m = 2
    entries = []
    for seed in range(seeds):
        est, _ = run("clip_gauss", problem, {"tau": tau}, seed=seed, clamp=False)
        entries.append((est - problem.clipped_sigma(m))[np.triu_indices(d)])
    assert_iid_normal(np.concatenate(entries), tau**2 / (math.sqrt(RHO) * n), "ClipGaussCov noise")


@pytest.fixture(scope="module")
def gapped_problem():
    """Eigenvalues ~ 0.005 * (1..10): gaps far above the eigenvalue noise sqrt(2)/(sqrt(rho) n)."""
    rng = np.random.default_rng(99)
    n, d = 20000, 10
    X = rng.standard_normal((n, d)) * np.sqrt(0.005 * np.arange(1, d + 1))
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    X = X / np.maximum(norms, 1.0)
    return CovProblem.from_rows(X)


@pytest.mark.parametrize("rho", [0.5, 4.0])
def test_separatecov_eigenvalue_noise_has_sd_sqrt2_over_sqrt_rho_n(gapped_problem, rho):
    problem = gapped_problem
    sd = math.sqrt(2) / (math.sqrt(rho) * problem.n)
    # the released matrix is V diag(noisy) V^T with orthonormal V: its eigenvalues are the noisy
    # eigenvalues; with gaps of > 30 sd their sorted order is the pairing order of the true ones
    assert -np.diff(problem.eigenvalues).min() > 30 * sd
    diffs = []
    for seed in range(40):
        est, acc = run("separate", problem, {}, seed=seed, budget=ZCDP(rho), clamp=False)
        released = np.sort(np.linalg.eigvalsh(est))[::-1]
        diffs.append(released - problem.eigenvalues)
    assert_iid_normal(np.concatenate(diffs), sd, "SeparateCov eigenvalue noise")


def test_clip_separatecov_eigenvalue_noise_is_around_the_clipped_spectrum(gapped_problem):
    """ClipSeparateCov perturbs the eigenvalues of Sigma(Clip(X, tau)) with sd tau^2 sqrt(2)/(sqrt(rho) n)."""
    problem, tau, m, rho = gapped_problem, 0.25, 2, 1.0
    clipped_eigenvalues = np.sort(np.linalg.eigvalsh(problem.clipped_sigma(m)))[::-1]
    sd = tau**2 * math.sqrt(2) / (math.sqrt(rho) * problem.n)
    assert -np.diff(clipped_eigenvalues).min() > 30 * sd
    # clipping at 1/4 changes the spectrum by far more than the noise
    assert np.abs(clipped_eigenvalues - problem.eigenvalues).max() > 1000 * sd
    diffs = []
    for seed in range(40):
        est, _ = run("clip_separate", problem, {"tau": tau}, seed=seed, budget=ZCDP(rho), clamp=False)
        diffs.append(np.sort(np.linalg.eigvalsh(est))[::-1] - clipped_eigenvalues)
    assert_iid_normal(np.concatenate(diffs), sd, "ClipSeparateCov eigenvalue noise")


def test_separatecov_eigenvectors_come_from_gausscov_at_half_rho(gapped_problem):
    # with well-separated eigenvalues the released eigenvectors are close to the true ones
    problem = gapped_problem
    est, _ = run("separate", problem, {}, seed=3, budget=ZCDP(1.0), clamp=False)
    _, v_true = np.linalg.eigh(problem.sigma)
    _, v_est = np.linalg.eigh(est)
    overlaps = np.abs(np.sum(v_true * v_est, axis=0))
    assert overlaps.min() > 0.99


@pytest.mark.parametrize("name, options", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("clamp", [False, True])
def test_radius_two_scales_everything_by_four(name, options, clamp):
    """Rows 2X in the ball of radius 2 vs X in the unit ball: same draws, output times r^2 = 4."""
    X = synthetic_zipf(800, 6, 3, 3.0, np.random.default_rng(5))
    p1 = CovProblem.from_rows(X, radius=1.0)
    p2 = CovProblem.from_rows(2 * X, radius=2.0)
    opts2 = {k: (2 * v if k == "tau" else v) for k, v in options.items()}
    for seed in range(3):
        e1, acc1 = run(name, p1, options, seed=seed, clamp=clamp)
        e2, acc2 = run(name, p2, opts2, seed=seed, clamp=clamp)
        np.testing.assert_allclose(e2, 4 * e1, rtol=1e-9, atol=1e-14)
        assert acc1.ledger == acc2.ledger


def test_gausscov_noise_scales_with_radius_squared():
    # rows of norm <= 2 in the ball of radius 2: noise sd r^2 / (sqrt(rho) n)
    n, d, seeds, radius = 500, 30, 10, 2.0
    problem = ball_problem(n, d, 2, radius=radius)
    entries = []
    for seed in range(seeds):
        est, _ = run("gauss", problem, {}, seed=seed, clamp=False)
        entries.append((est - problem.sigma)[np.triu_indices(d)])
    assert_iid_normal(np.concatenate(entries), radius**2 / (math.sqrt(RHO) * n),
                      "GaussCov noise at radius 2")


# --- bad input ----------------------------------------------------------------------------------
def test_rows_outside_the_ball_raise_helpfully():
    X = np.full((3, 2), 0.5)
    X[1] = [1.0, 0.5]
    with pytest.raises(ValueError, match=r"row 1 has norm 1\.11803 > radius 1.*rescale or clip"):
        CovProblem.from_rows(X)
    with pytest.raises(ValueError, match="radius 0.5"):
        CovProblem.from_rows(np.full((3, 2), 0.5), radius=0.5)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_inf_rows_raise_helpfully(bad):
    X = np.full((3, 2), 0.1)
    X[0, 1] = bad
    with pytest.raises(ValueError, match="NaN or inf"):
        CovProblem.from_rows(X)


def test_one_dimensional_array_raises_helpfully():
    with pytest.raises(ValueError, match=r"2-D array \(n rows x d columns\), got shape \(5,\)"):
        CovProblem.from_rows(np.full(5, 0.1))


def test_unknown_mechanism_raises(problem):
    with pytest.raises(ValueError, match=r"unknown mechanism 'no_such_mechanism'.*adaptive.*gauss"):
        release("no_such_mechanism", problem, ZCDP(RHO), np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown mechanism"):
        get_mechanism("Gauss")


@pytest.mark.parametrize("name, options", [
    ("gauss", {"tau": 0.5}),
    ("separate", {"beta": 0.1}),
    ("adaptive", {"tau": 0.5}),
    ("clip_gauss", {"tau": 0.5, "radius": "known"}),
    ("zero", {"anything": 1}),
])
def test_unknown_option_raises(problem, name, options):
    with pytest.raises(ValueError, match="unknown option"):
        run(name, problem, options)


@pytest.mark.parametrize("tau", [0.3, 2.0, 0.0, -0.5, float("nan")])
@pytest.mark.parametrize("name", ["clip_gauss", "clip_separate"])
def test_clip_threshold_must_be_dyadic(problem, name, tau):
    with pytest.raises(ValueError, match="clipping threshold"):
        run(name, problem, {"tau": tau})


@pytest.mark.parametrize("name", ["clip_gauss", "clip_separate"])
def test_clip_mechanisms_need_tau(problem, name):
    with pytest.raises(ValueError, match=r"needs option\(s\) \['tau'\] \(no default\)"):
        run(name, problem, {})


def test_option_names_are_exposed():
    assert get_mechanism("clip_gauss").option_names() == ["tau", "numerics"]
    assert set(get_mechanism("adaptive").option_names()) == {"beta", "radius", "split",
                                                            "separate_noise_factor", "numerics", "components"}
    assert get_mechanism("gauss").option_names() == ["numerics"]  # "hardened": mechanisms/noise.py
    assert set(MECHANISMS) >= {"gauss", "separate", "adaptive", "clip_gauss", "clip_separate", "zero"}


# --- accuracy where the answer is known -----------------------------------------------------------
@pytest.mark.parametrize("name, options", NOISY, ids=NOISY_IDS)
def test_clamping_keeps_a_top_eigenvalue_at_r_squared(name, options):
    """Rows +-2 e_1 in the ball of radius 2: Sigma = diag(4, 0, 0), on the boundary of [0, r^2]."""
    n, d, radius = 20000, 3, 2.0
    X = np.zeros((n, d))
    X[:, 0] = np.where(np.arange(n) % 2, radius, -radius)
    problem = CovProblem.from_rows(X, radius=radius)
    options = {k: (radius if k == "tau" else v) for k, v in options.items()}  # tau = r: no clipping
    est, _ = run(name, problem, options, seed=0, budget=ZCDP(1.0), clamp=True)
    assert np.linalg.eigvalsh(est).max() <= radius**2 * (1 + 1e-12)
    np.testing.assert_allclose(est, problem.sigma, rtol=0, atol=0.01)


@pytest.mark.parametrize("radius_option", ["known", "private"])
def test_adaptive_with_huge_budget_does_not_clip_below_the_data(radius_option):
    """All rows of norm 2^-5. With rho = 1e6 the noise is negligible, so every SVT query with a
    positive clipping bias (tau <= 2^-6) clears the threshold 0: AdaptiveCov ends at tau >= 2^-5
    and its error is noise only (~1e-5), far below the bias of clipping at 2^-6 (~4e-4)."""
    rng = np.random.default_rng(6)
    n, d = 1000, 4
    X = rng.standard_normal((n, d))
    X *= 2.0**-5 / np.linalg.norm(X, axis=1, keepdims=True)
    problem = CovProblem.from_rows(X)
    bias_below = np.linalg.norm(problem.sigma - problem.clipped_sigma(6))
    assert bias_below > 3e-4
    for seed in range(10):
        est, acc = run("adaptive", problem, {"radius": radius_option}, seed=seed,
                       budget=ZCDP(1e6), clamp=False)
        assert np.linalg.norm(est - problem.sigma) < bias_below / 10
        assert acc.fully_spent()
