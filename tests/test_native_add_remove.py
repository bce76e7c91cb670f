"""Every line at its add/remove sensitivity (issue 59): the native route's sensitivities, the exact sums behind its
hardened releases (a neighbour moves each released statistic by at most its declared sensitivity; the same integers
whatever the blocks), the registry's declarations, the estimators' route in the ledger, and the audit's power to
flag a line that uses half its add/remove sensitivity."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpcov import PrivateCovariance, PureDP, ZCDP
from dpcov.audits.blackbox import audit
from dpcov.audits.pairs import PairSpec
from dpcov.mechanisms.exact_sums import ExactBandSums, exact_problem, row_scale
from dpcov.mechanisms.gaussian import gaussian_sigma, released_sigma, symmetric_gaussian
from dpcov.mechanisms.neighbours import ADD_REMOVE, REPLACE_ONE, Neighbours
from dpcov.mechanisms.problem import CovProblem
from dpcov.mechanisms.registry import MECHANISMS, register_mechanism, release

pytestmark = pytest.mark.filterwarnings("ignore::dpcov.estimators.UselessReleaseWarning")


def _rows(rng, n, d, power=3.0):
    X = rng.normal(size=(n, d)) * rng.uniform(0, 1, size=(n, 1)) ** power
    return X / np.maximum(np.linalg.norm(X, axis=1), 1)[:, None]


def test_the_add_remove_sensitivities_are_the_tables():
    r, n, d = 2.0, 100, 7
    assert REPLACE_ONE.covariance_l2(r, n) == pytest.approx(math.sqrt(2) * r**2 / n)
    assert ADD_REMOVE.covariance_l2(r, n) == pytest.approx(r**2 / n)
    assert ADD_REMOVE.covariance_l1(r, n, d) == pytest.approx((d + 1) / 2 * r**2 / n)
    assert REPLACE_ONE.covariance_l1(r, n, d) == pytest.approx(math.sqrt(2) * d * r**2 / n)
    assert ADD_REMOVE.eigenvalues_l1(r, n) == pytest.approx(r**2 / n)
    assert REPLACE_ONE.eigenvalues_l1(r, n) == pytest.approx(2 * r**2 / n)
    assert ADD_REMOVE.exponent_factor() == 2 and REPLACE_ONE.exponent_factor() == 1
    assert ADD_REMOVE.score_range() == (0.0, 1.0)
    with pytest.raises(ValueError, match="'replace_one' or 'add_remove'"):
        Neighbours("persons")
    with pytest.raises(ValueError, match=">= 1"):
        Neighbours("add_remove", 0.5)


@pytest.mark.parametrize("seed", range(6))
def test_a_row_added_moves_each_exact_statistic_by_at_most_its_sensitivity(seed):
    """The exact sums' statistics on D and D + x (x anywhere in the ball, a count ñ far below or above n): the
    clipped covariance in l2 and l1, the eigenvalues of the trace-normalised matrix in l1 and l2, the trace -- each
    within the declared add/remove sensitivity (the rounded rows' ``scale`` included)."""
    rng = np.random.default_rng(seed)
    d, n = int(rng.integers(2, 10)), int(rng.integers(5, 300))
    X = _rows(rng, n, d)
    x = rng.normal(size=(1, d))
    x *= rng.choice([1.0, 0.5, 0.3, 1e-3]) / np.linalg.norm(x)
    for count in (1, max(1, n // 7), n + 500):
        small = exact_problem(ExactBandSums(1.0).add(X), count)
        big = exact_problem(ExactBandSums(1.0).add(np.vstack([X[: n // 2], x, X[n // 2:]])), count)
        upper = np.triu_indices(d)
        for m in range(4):
            tau = small.tau(m)
            a, b = small.exact.sigma(m, count)[0], big.exact.sigma(m, count)[0]
            assert np.linalg.norm((a - b)[upper]) <= small.neighbours.covariance_l2(tau, count) * (1 + 1e-9)
            assert np.abs((a - b)[upper]).sum() <= small.neighbours.covariance_l1(tau, count, d) * (1 + 1e-9)
            ea = np.linalg.eigvalsh(small.exact.eigen_matrix(m, count)[0])
            eb = np.linalg.eigvalsh(big.exact.eigen_matrix(m, count)[0])
            assert np.abs(ea - eb).sum() <= small.neighbours.eigenvalues_l1(tau, count) * (1 + 1e-8)
            assert np.linalg.norm(ea - eb) <= small.neighbours.eigenvalues_l2(tau, count) * (1 + 1e-8)
            ta, tb = small.exact.trace(m, count)[0], big.exact.trace(m, count)[0]
            assert abs(ta - tb) <= (small.neighbours.scale * tau) ** 2 / count * (1 + 1e-9)


def test_exact_sums_are_the_same_integers_for_any_blocks_and_order():
    X = _rows(np.random.default_rng(3), 700, 5)
    whole = ExactBandSums(1.0).add(X)
    parts = ExactBandSums(1.0).add(X[400:]).merge(ExactBandSums(1.0).add(X[100:400])).merge(
        ExactBandSums(1.0).add(X[:100]))
    assert whole.counts == parts.counts
    for j in whole.counts:
        for store in ("moments", "directions", "totals", "unit_totals"):
            assert np.array_equal(getattr(whole, store)[j], getattr(parts, store)[j])
    # and near the float statistic (the rounding is 2^-14 of each band's edge)
    problem = exact_problem(whole, len(X))
    assert np.allclose(problem.exact.sigma(0, len(X))[0], X.T @ X / len(X), atol=1e-4)
    assert row_scale(1000) < 1.001


def test_a_hardened_release_refuses_float_sums_under_add_remove():
    X = _rows(np.random.default_rng(0), 50, 3)
    problem = CovProblem.from_rows(X, 1.0)
    native = type(problem)(**{**problem.__dict__, "neighbours": ADD_REMOVE})
    with pytest.raises(ValueError, match="exact sums"):
        released_sigma(native, 0, "hardened")


def test_the_native_lines_and_the_reduction_are_named_in_the_ledger():
    X = _rows(np.random.default_rng(1), 400, 4)
    problem = CovProblem.from_rows(X, 1.0, rows=X)
    _, native = release("gauss", problem, ZCDP(0.5), np.random.default_rng(0), privacy_unit="add_remove",
                        options={"numerics": "hardened"})
    assert "native add/remove" in native.ledger[-1][0]
    _, reduced = release("kt", problem, PureDP(1.0), np.random.default_rng(0), privacy_unit="add_remove")
    assert "by the reduction" in reduced.ledger[-1][0]
    assert MECHANISMS["gauss"].native and not MECHANISMS["kt"].native


def test_native_noise_is_the_add_remove_scale():
    """GaussCov's released noise under add/remove has sd r^2 / (ñ sqrt(2 rho')), 1/sqrt(2) of replace-one's at the
    same ñ: the off-diagonal noise's sample sd over many entries within 3 %."""
    d, n = 60, 5000
    X = np.zeros((n, d))
    problem = CovProblem.from_rows(X, 1.0, rows=X)
    sds = {}
    for unit in ("replace_one", "add_remove"):
        est, ledger = release("gauss", problem, ZCDP(0.5), np.random.default_rng(7), privacy_unit=unit, clamp=False)
        off = est[np.triu_indices(d, 1)]
        sds[unit] = off.std()
    count_rho = 0.5 * 0.98
    assert sds["add_remove"] == pytest.approx(gaussian_sigma(1.0, ZCDP(count_rho)) / n, rel=0.1)  # ñ ~ n
    assert sds["add_remove"] / sds["replace_one"] == pytest.approx(1 / math.sqrt(2 * 0.98), rel=0.05)


def test_a_native_plugin_must_declare_its_sensitivity():
    with pytest.raises(ValueError, match="needs sensitivity="):
        register_mechanism(notion="zcdp", add_remove="native")(lambda problem, accountant, rng: None)
    with pytest.raises(ValueError, match="add_remove='native'"):
        register_mechanism(notion="zcdp", sensitivity=lambda p: 1.0)(lambda problem, accountant, rng: None)


def _declared_l2(problem):
    return problem.neighbours.covariance_l2(problem.radius, problem.n)


@register_mechanism(notion="zcdp", label="GaussCov at its add/remove sensitivity (a native plug-in)",
                    add_remove="native", sensitivity=_declared_l2)
def native_gauss(problem, accountant, rng):
    budget = accountant.spend(accountant.total, "GaussCov (native)")
    return problem.sigma + gaussian_sigma(_declared_l2(problem), budget) * symmetric_gaussian(problem.d, rng)


@register_mechanism(notion="zcdp", label="GaussCov at HALF its add/remove sensitivity (not private)",
                    add_remove="native", sensitivity=_declared_l2)
def half_sensitivity_gauss(problem, accountant, rng):
    budget = accountant.spend(accountant.total, "GaussCov (native, half the sensitivity)")
    return problem.sigma + gaussian_sigma(_declared_l2(problem) / 2, budget) * symmetric_gaussian(problem.d, rng)


def test_the_add_remove_audit_flags_half_the_sensitivity_and_passes_the_native_line():
    """The black-box audit with add/remove pairs: a line at half its add/remove sensitivity (4x the claimed rho) is
    flagged; the same line at its sensitivity passes, as does every built-in native line tested above."""
    pairs = [PairSpec("add_unit", 10), PairSpec("add_values", 10)]
    flagged = audit(half_sensitivity_gauss, ZCDP(0.5), privacy_unit="add_remove", gaussian=True, pairs=pairs,
                    runs=1500, confirmations=2, seed=3, n_jobs=1, numerics="idealized")
    assert flagged.exceeded, flagged.describe()
    assert flagged.worst.bound.value > 1.5 * flagged.claim.value
    honest = audit(native_gauss, ZCDP(0.5), privacy_unit="add_remove", gaussian=True, pairs=pairs, runs=1500,
                   confirmations=2, seed=3, n_jobs=1, numerics="idealized")
    assert not honest.exceeded, honest.describe()


@pytest.mark.parametrize("name, budget", [("separate", ZCDP(0.5)), ("adaptive", ZCDP(0.5)),
                                          ("separate_lap", PureDP(1.0)), ("emcov", ZCDP(0.5))])
def test_native_lines_pass_the_add_remove_audit(name, budget):
    options = {} if name == "emcov" else {"numerics": "hardened"}
    report = audit(name, budget, options=options, privacy_unit="add_remove",
                   pairs=[PairSpec("add_unit", 10), PairSpec("add_values", 10)], runs=600, confirmations=1, seed=5,
                   n_jobs=1)
    assert not report.exceeded, report.describe()


def test_the_estimator_sums_every_row_under_add_remove():
    X = _rows(np.random.default_rng(2), 3000, 6, power=0.5)
    fit = PrivateCovariance(mechanism="gauss", budget=ZCDP(0.5), radius=1.0, centering="assume_centered",
                            random_state=0).fit(X)
    assert any("native add/remove" in what for what, _ in fit.ledger_)
    fit_kt = PrivateCovariance(mechanism="coinpress", budget=ZCDP(0.5), radius=1.0, centering="assume_centered",
                               random_state=0).fit(X)
    assert any("by the reduction" in what for what, _ in fit_kt.ledger_)


def test_exact_sums_refuse_levels_below_their_floor_and_keep_tiny_radii_exact():
    """Clipping below r 2^-60 would read the directions of rows whose squares underflow (a review's find: a row of
    1e-162 entries moved Sigma by 92 tau^2 / ñ): refused from the public level alone. Rows are scaled by an exact power
    of two first, so a tiny radius keeps its rows' norms and directions exact."""
    X = np.random.default_rng(0).normal(size=(200, 50)) * 1e-162
    problem = exact_problem(ExactBandSums(1.0).add(X), 200)
    with pytest.raises(ValueError, match="levels down to r 2"):
        problem.exact.sigma(61, 200)
    fit = PrivateCovariance(mechanism="clip_gauss", mechanism_options={"tau": 2.0**-61}, budget=ZCDP(0.5), radius=1.0,
                            centering="assume_centered", random_state=0)
    with pytest.raises(ValueError, match="levels down to r 2"):
        fit.fit(X)
    rng = np.random.default_rng(1)
    radius = 2.0**-500 * 3
    Y = _rows(rng, 300, 6) * radius
    x = rng.normal(size=(1, 6))
    x *= radius / np.linalg.norm(x)
    small, big = (exact_problem(ExactBandSums(radius).add(rows), 300) for rows in (Y, np.vstack([Y, x])))
    for m in (0, 3, 20):
        a, b = small.exact.sigma(m, 300)[0], big.exact.sigma(m, 300)[0]
        moved = np.linalg.norm(np.ldexp((a - b)[np.triu_indices(6)], 1000))  # (norms of ~1e-303 underflow)
        allowed = np.ldexp(small.neighbours.covariance_l2(small.tau(m), 300), 1000)
        assert moved <= allowed * (1 + 1e-9)
        assert moved > 0.1 * allowed or m > 0


def test_hardened_helpers_refuse_a_float_statistic_under_add_remove():
    """A hardened step handed a float statistic (no exact float error) under add/remove is refused: its default error
    bound assumes the private row count (gauss_noisy, lap_noisy, SeparateCov's eigenvalues, AdaptiveCov)."""
    from dpcov.mechanisms.gaussian import gauss_noisy
    from dpcov.mechanisms.laplace import lap_noisy
    from dpcov.mechanisms.privacy import Accountant
    X = _rows(np.random.default_rng(0), 100, 3)
    sigma = X.T @ X / 100
    for release_, budget in ((gauss_noisy, ZCDP(0.5)), (lap_noisy, PureDP(1.0))):
        with pytest.raises(ValueError, match="exact sums"):
            release_(sigma, 1.0, 100, budget, Accountant(budget), np.random.default_rng(0), "hardened", ADD_REMOVE)
    native_float = type(CovProblem.from_rows(X))(**{**CovProblem.from_rows(X).__dict__, "neighbours": ADD_REMOVE})
    for name in ("adaptive", "separate"):
        with pytest.raises(ValueError, match="exact sums"):
            release(name, native_float, ZCDP(0.5), np.random.default_rng(0), options={"numerics": "hardened"})


def test_an_add_remove_audit_needs_add_remove_pairs():
    """Replace-one pairs alone are held to group privacy at k = 2 under add/remove: they cannot see a line leaking on
    additions, so such an audit is refused (a review's find)."""
    with pytest.raises(ValueError, match="needs add/remove pairs"):
        audit("gauss", ZCDP(0.5), privacy_unit="add_remove", pairs=[PairSpec("swap_values", 10)], runs=10, n_jobs=1)


def test_a_line_searched_from_its_own_pair_specs_runs_under_add_remove():
    """audits.lines.search under add/remove for a line whose own search pairs are PairSpecs (dpcov.audited's
    estimators): the add/remove pairs at their size come first (it crashed unpacking a PairSpec: a review's find)."""
    import dpcov.audited  # noqa: F401  (registers the plug-ins)
    from dpcov.audits.lines import line_for, search
    line = line_for("covariance_zcdp", "dpcov.audited:covariance_zcdp", {}, ZCDP(0.5), "command line")
    report, = search(line, 1.0, runs=6, confirmations=1, seed=0, n_jobs=1, privacy_unit="add_remove",
                     numerics="idealized")
    assert report.privacy_unit == "add_remove" and report.screened


def test_a_plugin_sensitivity_sees_public_facts_only():
    seen = {}

    def sensitivity(facts):
        seen.update(vars(facts))
        return facts.neighbours.covariance_l2(facts.radius, facts.n)

    @register_mechanism(notion="zcdp", label="records its facts", add_remove="native", sensitivity=sensitivity)
    def recording(problem, accountant, rng):
        budget = accountant.spend(accountant.total, "GaussCov (native)")
        return problem.sigma + gaussian_sigma(_declared_l2(problem), budget) * symmetric_gaussian(problem.d, rng)

    X = _rows(np.random.default_rng(0), 50, 3)
    release(recording, CovProblem.from_rows(X, 1.0, rows=X), ZCDP(0.5), np.random.default_rng(0),
            privacy_unit="add_remove")
    assert set(seen) == {"radius", "n", "d", "neighbours"}


def test_a_levels_sums_are_the_same_in_int64_and_python_integers(monkeypatch):
    """_level_sum: int64 where its sums provably fit, Python integers beyond (many rows): the same integers, deep
    bands rounded to the level's grid alike, and the statistics the releases read identical."""
    from dpcov.mechanisms import exact_sums
    X = _rows(np.random.default_rng(5), 3000, 6, power=4.0)  # norms down to ~1e-4: bands deeper than m + GUARD
    sums = ExactBandSums(1.0).add(X)
    fast = {(m, p): sums._level_sum(m, p)[0].copy() for m in (0, 2, 5) for p in (1, 2)}
    assert all(v.dtype == np.int64 for v in fast.values())
    monkeypatch.setattr(exact_sums, "INT64_SUMS", 0)
    slow = ExactBandSums(1.0).add(X)
    for (m, p), values in fast.items():
        exact = slow._level_sum(m, p)[0]
        assert exact.dtype == object and np.array_equal(exact.astype(np.int64), values)
    assert np.array_equal(sums.sigma(2, 3000)[0], slow.sigma(2, 3000)[0])
    assert np.array_equal(sums.eigen_matrix(5, 3000)[0], slow.eigen_matrix(5, 3000)[0])


def test_a_means_pass_without_products_gives_the_same_mean():
    """The estimators' mean pass skips the d x d products when the covariance will sum shifted rows anyway: the same
    exact mean, and no covariance can be read from it by mistake."""
    X = _rows(np.random.default_rng(6), 800, 5)
    full, lean = ExactBandSums(1.0).add(X), ExactBandSums(1.0, grams=False).add(X)
    assert np.array_equal(full.mean(0, 800)[0], lean.mean(0, 800)[0])
    with pytest.raises(ValueError, match="no d x d products"):
        lean.sigma(0, 800)
    with pytest.raises(ValueError, match="made without"):
        exact_problem(lean, 800)
    with pytest.raises(ValueError, match="another radius, grid or kind"):
        full.merge(lean)


def test_the_eigenvalues_float_error_stays_small_at_wide_d():
    """The deep bands' rounding enters the eigenvalues' float error through its spectral norm (2 d e / ñ), not d^2
    entries (a review's find: at d = 2000 the entry-wise bound added 16 % to the Gaussian sensitivity)."""
    from dpcov.mechanisms.gaussian import released_eigen
    rng = np.random.default_rng(7)
    d, n = 400, 2000
    X = rng.normal(size=(n, d)) * rng.uniform(0, 1, size=(n, 1)) ** 4  # many deep bands
    X /= np.linalg.norm(X, axis=1).max()
    problem = exact_problem(ExactBandSums(1.0).add(X), n)
    _, error, _ = released_eigen(problem, 0, "hardened")
    sensitivity = problem.neighbours.eigenvalues_l2(1.0, n)
    assert 2 * error * math.sqrt(d) < 0.01 * sensitivity  # the float part noise.py adds, against the sensitivity
