"""Privacy units (mechanisms/units.py): the released count, the rows resized to it, persons with several rows,
and the estimators' fit under add/remove neighbours, alone and in a session."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import dpcov
from dpcov import estimators
from dpcov.mechanisms import units
from dpcov.mechanisms.privacy import Accountant, ApproxDP, BudgetExceeded, PureDP, ZCDP
from dpcov.mechanisms.problem import BandSums, CovProblem
from dpcov.mechanisms.registry import release


def _ball_rows(n, d, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d))
    return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1.0) * 0.9


def _pmf_test(draws: np.ndarray, log_weight) -> float:
    """The chi-square p-value of integer ``draws`` against the pmf proportional to exp(log_weight(k))."""
    support = np.arange(draws.min() - 3, draws.max() + 4)
    pmf = np.exp(log_weight(support) - log_weight(support).max())
    pmf /= pmf.sum()
    observed = np.array([(draws == k).sum() for k in support])
    expected = pmf * len(draws)
    keep = expected >= 5
    f_obs = np.r_[observed[keep], observed[~keep].sum()]
    f_exp = np.r_[expected[keep], expected[~keep].sum()]
    return stats.chisquare(f_obs, f_exp).pvalue


@pytest.mark.parametrize("budget", [ZCDP(0.02), PureDP(0.3), ApproxDP(0.5, 1e-6)])
def test_the_count_is_n_plus_exact_integer_noise_of_its_calibration(budget):
    """ñ - n follows the discrete Gaussian of variance parameter >= 1/(2 rho) (zCDP; (eps, delta) through its
    largest rho) or the discrete Laplace exp(-|z|/t), t = ceil(1/eps) (pure): chi-square against the exact pmf,
    and a sampler off by a quarter of its scale fails the same test."""
    kind, scale = units.count_noise(budget)
    rng = np.random.default_rng(1)
    accountant = Accountant(budget.scaled(6000))
    draws = np.array([units.private_count(10_000, budget, accountant, rng) for _ in range(6000)]) - 10_000
    if kind == "discrete Laplace":
        assert scale == math.ceil(1 / budget.eps)
        log_weight = lambda k, s=scale: -np.abs(k) / s  # noqa: E731
        wrong = lambda k, s=scale: -np.abs(k) / (0.75 * s)  # noqa: E731
    else:
        rho = budget.rho if isinstance(budget, ZCDP) else budget.to_zcdp().rho
        assert scale >= 1 / math.sqrt(2 * rho)
        t, c = dpcov.mechanisms.noise.discrete_gaussian_parameters(scale)
        log_weight = lambda k, v=t * c: -k.astype(float) ** 2 / (2 * v)  # noqa: E731
        wrong = lambda k, v=t * c: -k.astype(float) ** 2 / (2 * 0.5625 * v)  # noqa: E731
    assert _pmf_test(draws, log_weight) > 1e-4
    assert _pmf_test(draws, wrong) < 1e-6
    assert len(accountant.ledger) == 6000 and "(hardened: " in accountant.ledger[0][0]


def test_the_count_is_at_least_one_and_a_budget_too_small_is_refused():
    rng = np.random.default_rng(2)
    assert min(units.private_count(1, ZCDP(1e-4), Accountant(ZCDP(1.0)), rng) for _ in range(200)) == 1
    with pytest.raises(ValueError, match="too small for exact integer noise"):
        units.count_noise(ZCDP(1e-35))
    with pytest.raises(ValueError, match="too small for exact integer noise"):
        units.count_noise(PureDP(1e-20))


def test_resizing_drops_a_uniform_subset_and_padding_is_zero_rows():
    rng = np.random.default_rng(3)
    counts = np.zeros(10)
    for _ in range(4000):
        counts[units.resized_drop(np.arange(10), 7, rng)] += 1
    assert counts.sum() == 3 * 4000 and stats.chisquare(counts).pvalue > 1e-4
    assert len(units.resized_drop(np.arange(10), 12, rng)) == 0
    X = _ball_rows(50, 3)
    padded = BandSums(1.0).add(X).problem(rows=X, n_public=58)
    exact = CovProblem.from_rows(np.vstack([X, np.zeros((8, 3))]), 1.0)
    assert padded.n == 58 and np.allclose(padded.sigma, exact.sigma, rtol=0, atol=1e-15)
    assert np.array_equal(padded.band_counts, exact.band_counts) and padded.rows.shape == (58, 3)
    assert np.allclose(padded.band_sums, exact.band_sums, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="drop rows first"):
        BandSums(1.0).add(X).problem(n_public=49)


def test_persons_keep_at_most_k_rows_each_chosen_uniformly():
    rng = np.random.default_rng(4)
    persons = np.array(["a"] * 5 + ["b"] * 2 + ["c"])
    kept_a = np.zeros(5)
    for _ in range(3000):
        drop = units.person_drop(persons, 2, rng)
        kept = np.setdiff1d(np.arange(8), drop)
        assert [list(persons[kept]).count(p) for p in "abc"] == [2, 2, 1]
        kept_a[kept[kept < 5]] += 1
    assert stats.chisquare(kept_a).pvalue > 1e-4
    assert units.person_budget(ZCDP(0.9), 3) == ZCDP(0.1) and units.person_budget(PureDP(0.9), 3) == PureDP(0.3)
    row = units.person_budget(ApproxDP(1.0, 1e-6), 4)
    person = units.group_cost(row, 4)
    assert person.eps == pytest.approx(1.0) and person.delta <= 1e-6


def _fixed_count(monkeypatch, value):
    """private_count replaced by a constant: what follows must then depend on n only through it."""
    monkeypatch.setattr(estimators, "private_count", lambda n, budget, accountant, rng: (
        accountant.spend(budget, "count (fixed in a test)"), value)[1])


@pytest.mark.parametrize("mechanism, budget, radius", [("gauss", ZCDP(0.5), 1.0), ("auto", ZCDP(0.5), "private"),
                                                       ("lap", PureDP(1.0), 1.0), ("auto", PureDP(2.0), 1.0)])
def test_after_the_count_nothing_reads_the_exact_n(monkeypatch, mechanism, budget, radius):
    """With the count's release fixed at 3000: D and D plus zero rows (3000 rows or fewer) give the same bits,
    and D with rows beyond 3000 gives a release of 3000 of them -- every normalisation, grid, threshold and choice
    reads the released count, and n itself only enters through it."""
    _fixed_count(monkeypatch, 3000)
    X = _ball_rows(2900, 4, seed=5) + 0.05
    X /= np.linalg.norm(X, axis=1).max()
    fits = []
    for rows in (X, np.vstack([X, np.zeros((100, 4))]), np.vstack([np.zeros((60, 4)), X])):
        # assume_centered: rows centred by a released mean are padded at that mean (units.py), not at zero
        fits.append(dpcov.PrivateCovariance(mechanism=mechanism, budget=budget, radius=radius,
                                            centering="assume_centered", random_state=7).fit(rows))
    for other in fits[1:2]:
        assert np.array_equal(other.covariance_, fits[0].covariance_)
        assert np.array_equal(other.location_, fits[0].location_) and other.ledger_ == fits[0].ledger_
    assert fits[0].count_ == 3000 and fits[0].budget_spent_ == budget
    # 60 zero rows first: the same data in another order, padded -- the same distribution, not the same bits
    assert fits[2].mechanism_ == fits[0].mechanism_


def test_add_remove_is_the_default_and_the_count_leads_the_ledger():
    X = _ball_rows(3000, 5, seed=6)
    fit = dpcov.PrivateCovariance(budget=ZCDP(0.5), radius=1.0, centering="private", random_state=0).fit(X)
    assert fit.get_params()["privacy_unit"] == "add_remove"
    assert fit.ledger_[0][0].startswith("count (hardened: discrete Gaussian") and fit.ledger_[0][1] == ZCDP(0.01)
    assert fit.budget_spent_ == ZCDP(0.5) and abs(fit.count_ - 3000) < 60
    public = dpcov.PrivateCovariance(budget=ZCDP(0.5), radius=1.0, centering="private", random_state=0,
                                     privacy_unit="replace_one").fit(X)
    assert not public.ledger_[0][0].startswith("count") and public.count_ == 3000


def test_one_norm_bound_release_with_a_private_radius():
    """radius="private" releases the rows' norm bound once: AdaptiveCov takes it (radius="known") instead of its
    own PrivRadius; a named AdaptiveCov told to run PrivRadius as well is refused."""
    X = _ball_rows(20000, 4, seed=7) * 3
    for budget, mechanism in ((ZCDP(0.5), "adaptive"), (PureDP(2.0), "adaptive_lap")):
        fit = dpcov.PrivateCovariance(mechanism=mechanism, budget=budget, radius="private", centering="private",
                                      random_state=0).fit(X)
        bounds = [what for what, _ in fit.ledger_ if "SVT" in what and "AdaptiveCov: SVT" not in what]
        assert len(bounds) == 1 and bounds[0].startswith("norm bound: SVT"), fit.ledger_
        assert fit.budget_spent_ == budget
    public = dpcov.PrivateCovariance(mechanism="adaptive", budget=ZCDP(0.5), radius=4.0, centering="private",
                                     random_state=0).fit(X)
    assert any("PrivRadius" in what for what, _ in public.ledger_)  # a public radius: AdaptiveCov finds its own
    with pytest.raises(ValueError, match="second time"):
        dpcov.PrivateCovariance(mechanism="adaptive", budget=ZCDP(0.5), radius="private", centering="private",
                                mechanism_options={"radius": "private"}).fit(X)


def test_persons_fit_is_private_for_the_person_and_never_releases_identifiers():
    rng = np.random.default_rng(8)
    X = _ball_rows(4000, 3, seed=9)
    persons = np.array([f"patient-{i}" for i in rng.integers(0, 900, size=4000)])
    fit = dpcov.PrivateCovariance(budget=ZCDP(0.9), radius=1.0, centering="private", max_rows_per_person=3,
                                  random_state=1).fit(X, persons=persons)
    assert fit.ledger_[0][1] is None and "group privacy" in fit.ledger_[0][0] and "0.1-zCDP per row" in fit.ledger_[0][0]
    assert fit.ledger_[1][1] == ZCDP(0.1 * units.COUNT_SHARE) and fit.budget_spent_ == ZCDP(0.9)
    kept = len(persons) - len(units.person_drop(persons, 3, np.random.default_rng(0)))
    assert abs(fit.count_ - kept) < 200  # the count of the kept rows, noised at the row budget
    text = repr({k: v for k, v in vars(fit).items() if k.endswith("_")})
    assert "patient-" not in text
    pca = dpcov.PrivatePCA(2, budget=PureDP(3.0), radius=1.0, centering="private", max_rows_per_person=2,
                           random_state=1).fit(X, persons=persons)
    assert pca.budget_spent_ == PureDP(3.0)
    ridge = dpcov.PrivateRidge(budget=ZCDP(0.9), radius=1.0, centering="private", max_rows_per_person=2,
                               random_state=1).fit(X[:, :2], X[:, 2], persons=persons)
    assert ridge.budget_spent_ == ZCDP(0.9)


@pytest.mark.parametrize("params, fit_kwargs, message", [
    ({"privacy_unit": "add-remove"}, {}, "privacy_unit must be 'add_remove'"),
    ({"count_share": 0.0}, {}, "count_share must lie in"),
    ({"max_rows_per_person": 0}, {"persons": np.arange(100)}, "max_rows_per_person must be an integer >= 1"),
    ({"max_rows_per_person": 2}, {"persons": np.arange(99)}, "99 identifiers, not one per row"),
    ({}, {"persons": np.arange(100)}, "persons= needs max_rows_per_person"),
    ({"max_rows_per_person": 2, "privacy_unit": "replace_one"}, {"persons": np.arange(100)}, "protects 'add_remove'"),
    ({"max_rows_per_person": 2}, {}, "needs persons="),
])
def test_bad_declarations_are_refused_and_spend_nothing(tmp_path, params, fit_kwargs, message):
    session = dpcov.Session(ZCDP(1.0), path=tmp_path / "s.json", new=True)
    X = _ball_rows(100, 3)
    with pytest.raises(ValueError, match=message):
        dpcov.PrivateCovariance(budget=ZCDP(0.2), radius=1.0, centering="private", session=session,
                                **{**params, "privacy_unit": params.get("privacy_unit", "add_remove")}
                                ).fit(X, **fit_kwargs)
    assert session.spent is None


def test_a_session_spans_releases_refuses_the_overspend_and_is_shared_through_its_file(tmp_path):
    """Covariance, PCA and ridge on one table charge one zCDP session (a pure-DP PCA as eps^2/2); the release that
    would pass the total raises BudgetExceeded before reading a row and spends nothing; a second Session on the
    same file (another process's view) sees the same total and ledger."""
    path = tmp_path / "table.session.json"
    session = dpcov.Session(ZCDP(1.0), path=path, new=True)
    X = _ball_rows(3000, 4, seed=10)
    common = dict(radius=1.0, centering="private", random_state=0, session=session)
    dpcov.PrivateCovariance(budget=ZCDP(0.4), **common).fit(X)
    dpcov.PrivatePCA(2, budget=PureDP(0.6), **common).fit(X)  # 0.18 in zCDP
    dpcov.PrivateRidge(budget=ZCDP(0.3), **common).fit(X[:, :3], X[:, 3])
    assert session.spent.rho == pytest.approx(0.88)

    before = path.read_bytes()
    np.save(tmp_path / "rows.npy", X)
    with pytest.raises(BudgetExceeded, match="left"):
        dpcov.PrivateCovariance(budget=ZCDP(0.2), **common).fit(str(tmp_path / "rows.npy"))
    assert path.read_bytes() == before
    other = dpcov.Session.open(path)
    assert other.spent.rho == pytest.approx(0.88) and len(other.releases) == 3
    assert [len(r["steps"]) > 1 for r in other.releases] == [True] * 3
    assert other.releases[0]["steps"][0]["what"].startswith("count")
    with pytest.raises(ValueError, match="protects 'add_remove'"):
        dpcov.PrivateCovariance(budget=ZCDP(0.01), privacy_unit="replace_one", **common).fit(X)


def test_a_session_charges_a_dask_fit(tmp_path):
    da = pytest.importorskip("dask.array")
    session = dpcov.Session(PureDP(2.0))
    X = _ball_rows(4000, 3, seed=11)
    fit = dpcov.PrivateCovariance(budget=PureDP(1.5), radius=1.0, centering="private", random_state=0,
                                  session=session).fit(da.from_array(X, chunks=(1000, 3)))
    assert session.spent == PureDP(1.5) and fit.budget_spent_ == PureDP(1.5) and abs(fit.count_ - 4000) < 400
    with pytest.raises(BudgetExceeded):
        dpcov.PrivateCovariance(budget=PureDP(0.6), radius=1.0, centering="private", session=session).fit(
            da.from_array(X, chunks=(1000, 3)))
    assert session.spent == PureDP(1.5)


def test_streamed_rows_resized_to_the_count_match_the_array(tmp_path, monkeypatch):
    """Rows dropped block by block (a file, Dask partitions) give the release of the same rows dropped from the
    array, to rounding."""
    da = pytest.importorskip("dask.array")
    _fixed_count(monkeypatch, 2500)
    X = _ball_rows(3000, 3, seed=12)
    np.save(tmp_path / "rows.npy", X)
    kwargs = dict(mechanism="gauss", budget=ZCDP(0.5), radius=1.0, centering="private", numerics="idealized",
                  random_state=3)
    from_array = dpcov.PrivateCovariance(**kwargs).fit(X)
    from_file = dpcov.PrivateCovariance(**kwargs).fit(str(tmp_path / "rows.npy"))
    from_dask = dpcov.PrivateCovariance(**kwargs).fit(da.from_array(X, chunks=(700, 3)))
    for other in (from_file, from_dask):
        assert np.allclose(other.covariance_, from_array.covariance_, rtol=0, atol=1e-12)


def test_release_add_remove_needs_rows_and_matches_the_estimator_route():
    X = _ball_rows(500, 3, seed=13)
    with pytest.raises(ValueError, match="rows=X"):
        release("gauss", CovProblem.from_rows(X, 1.0), ZCDP(0.5), np.random.default_rng(0), privacy_unit="add_remove")
    estimate, accountant = release("gauss", CovProblem.from_rows(X, 1.0, rows=X), ZCDP(0.5),
                                   np.random.default_rng(0), privacy_unit="add_remove")
    assert accountant.spent == ZCDP(0.5) and accountant.ledger[0][0].startswith("count")
    with pytest.raises(ValueError, match="privacy_unit must be"):
        release("gauss", CovProblem.from_rows(X, 1.0, rows=X), ZCDP(0.5), np.random.default_rng(0),
                privacy_unit="person")


def test_resizing_from_the_sums_equals_the_rebuild():
    """release(add_remove) with idealized numerics resizes from the problem's own sums (the dropped rows' subtracted):
    the same problem as the rebuild from the kept rows, to rounding, both when rows are dropped and when padded."""
    X = _ball_rows(3000, 5, seed=14) * np.exp2(-np.random.default_rng(15).integers(0, 6, size=(3000, 1)))
    problem = CovProblem.from_rows(X, 1.0, rows=X)
    for n_public, drop in ((2950, np.sort(np.random.default_rng(16).choice(3000, 50, replace=False))),
                           (3100, np.empty(0, dtype=np.int64))):
        kept = np.delete(X, drop, axis=0)
        rebuilt = BandSums(1.0).add(kept).problem(rows=kept, n_public=n_public)
        resized = problem.resized(n_public, X[drop], rows=kept)
        assert resized.n == rebuilt.n == n_public and np.array_equal(resized.band_counts, rebuilt.band_counts)
        for a, b in ((resized.sigma, rebuilt.sigma), (resized.band_sums, rebuilt.band_sums),
                     (resized.band_directions, rebuilt.band_directions), (resized.rows, rebuilt.rows)):
            assert np.allclose(a, b, rtol=0, atol=1e-15)
