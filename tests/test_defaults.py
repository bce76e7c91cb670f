"""The estimators' defaults: the private norm bound (radius="private"), centring that keeps the noise of
the r-ball, and mechanism="auto" (chosen from public facts only, by the measured table)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import dpcov
from dpcov import defaults, estimators
import pandas as pd

from dpcov.mechanisms.norm_bound import (STEPS, grid, norm_histogram, private_norm_bound, private_norm_quantile_of,
                                quantile_possible, threshold)
from dpcov.mechanisms.privacy import Accountant
from dpcov.mechanisms.registry import get_mechanism


def _rows(n=20000, d=6, scale=0.05, mean=0.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.linspace(1, 0.2, d) + mean
    return X * (scale / np.linalg.norm(X, axis=1).max())


def steps(ledger: list) -> list:
    """The ledger without each line's hardening (grid, rounding and float-error terms: mechanisms/noise.py)."""
    return [(what.split(" (hardened:")[0], budget) for what, budget in ledger]


# --- the private norm bound -----------------------------------------------------------------------

@pytest.mark.parametrize("budget", [dpcov.ZCDP(0.05), dpcov.PureDP(0.3), dpcov.ApproxDP(0.3, 1e-7)])
def test_norm_bound_spends_its_budget_and_leaves_few_rows_outside(budget):
    norms = np.abs(np.random.default_rng(1).standard_normal(20000)) * 3.7  # any scale: no public bound
    eps = math.sqrt(2 * budget.rho) if isinstance(budget, dpcov.ZCDP) else budget.eps
    allowed = 2 * threshold(eps, 0.1) + 8 * 4 / eps  # 2 x the threshold + the noise's tail
    outside = []
    for seed in range(40):
        accountant = Accountant(budget)
        bound = private_norm_bound(norms, budget, accountant, np.random.default_rng(seed))
        assert accountant.ledger == [("norm bound: SVT", dpcov.PureDP(eps))]
        assert accountant.fully_spent() or isinstance(budget, dpcov.ApproxDP)  # (eps, 0) of (eps, delta)
        assert bound <= norms.max() * 2 ** 0.5  # not loose: at most two grid steps above the largest norm
        outside.append(int((norms > bound).sum()))
    assert max(outside) <= allowed and np.mean(outside) > 0  # it does clip the tail, within its guarantee


def test_norm_bound_is_scale_equivariant():
    """Scaling every norm by 2^10 scales the bound's distribution by 2^10: nothing in it is tied to a scale,
    so no public bound is assumed."""
    norms = np.random.default_rng(2).gamma(2.0, size=5000)

    def bounds(scale):
        return np.array([private_norm_bound(scale * norms, dpcov.ZCDP(0.02), Accountant(dpcov.ZCDP(0.02)),
                                            np.random.default_rng([seed, int(scale)])) / scale for seed in range(300)])

    unit, scaled = bounds(1.0), bounds(1024.0)
    levels = np.union1d(unit, scaled)
    assert len(levels) <= 4  # a few grid points around the top of the norms
    counts = np.array([[np.sum(b == v) for v in levels] for b in (unit, scaled)])
    from scipy.stats import chi2_contingency
    assert chi2_contingency(counts[:, counts.sum(axis=0) > 0]).pvalue > 1e-3
    assert 0 < np.sum(norms > np.median(unit)) <= 2 * threshold(0.2, 0.1)  # a high quantile of the norms


def test_norm_bound_refuses_too_few_rows_for_its_budget():
    with pytest.raises(ValueError, match=r"radius='private' needs n >= 4 x its threshold"):
        private_norm_bound(np.ones(300), dpcov.PureDP(0.1), Accountant(dpcov.PureDP(0.1)), np.random.default_rng(0))
    with pytest.raises(ValueError, match="or a larger radius_share or budget"):  # before anything is spent
        dpcov.PrivateCovariance(radius="private", centering="private", budget=dpcov.PureDP(1.0)).fit(np.ones((300, 2)) / 2)


def test_norm_bound_refuses_bad_norms():
    for bad in ([], [np.nan], [-1.0], [[1.0]]):
        with pytest.raises(ValueError, match="norms must be"):
            private_norm_bound(np.asarray(bad, dtype=float), dpcov.ZCDP(1), Accountant(dpcov.ZCDP(1)),
                               np.random.default_rng(0))
    assert len(grid()) == STEPS and np.all(np.diff(grid()) < 0)


# --- the estimators with radius="private" -----------------------------------------------------------

def test_radius_private_is_in_the_ledger_and_clips_to_the_released_bound():
    X = _rows(scale=3.0)  # norms up to 3: no public bound is passed
    cov = dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.ZCDP(0.5), radius="private",
                                  centering="assume_centered", random_state=0, privacy_unit="replace_one").fit(X)
    assert steps(cov.ledger_)[:2] == [("norm bound: SVT", dpcov.PureDP(math.sqrt(2 * 0.05))),
                                      ("covariance: GaussCov: noisy covariance", dpcov.ZCDP(0.45))]
    assert cov.budget_spent_ == dpcov.ZCDP(0.5)
    assert 3.0 * 2 ** -1 < cov.radius_ <= 3.0 * 2 ** 0.5
    assert np.linalg.eigvalsh(cov.covariance_).max() <= cov.radius_ ** 2 + 1e-12
    with pytest.raises(ValueError, match="radius_share must lie in"):
        dpcov.PrivateCovariance(radius="private", radius_share=1.0, centering="private").fit(X)
    with pytest.raises(ValueError, match="must leave the covariance a share"):
        dpcov.PrivateCovariance(radius="private", radius_share=0.5, mean_share=0.5, centering="private").fit(X)
    with pytest.raises(ValueError, match="radius must be a finite number > 0 or 'private'"):
        dpcov.PrivateCovariance(radius="tight", centering="private").fit(X)


def test_radius_private_beats_a_loose_public_radius():
    """Rows of norm <= 0.05 declared in the unit ball: the loose radius pays (1 / 0.05)^2 in noise."""
    X = _rows(n=20000, scale=0.05)
    exact = X.T @ X / len(X)

    def error(radius):
        return np.mean([np.linalg.norm(dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.ZCDP(0.5),
                                                               radius=radius, centering="assume_centered",
                                                               random_state=s).fit(X).covariance_ - exact)
                        for s in range(5)])

    assert error("private") < error(1.0) / 20


# --- centring ---------------------------------------------------------------------------------------

def test_private_centring_keeps_the_noise_of_the_r_ball():
    """Sigma = M~ - mu~ mu~^T: the covariance's noise is that of rows in the r-ball (and the mean's), not of
    rows minus a mean in the 2r-ball (4 x the noise)."""
    X = _rows(n=4000, d=10, scale=1.0, mean=2.0, seed=4)  # a mean far from 0
    X = X / np.linalg.norm(X, axis=1).max()
    truth = np.cov(X.T, bias=True)
    private = np.mean([np.linalg.norm(dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.ZCDP(0.5), radius=1.0,
                                                              centering="private", random_state=s).fit(X).covariance_
                                      - truth) for s in range(10)])
    # the 2r route without even the mean's noise: rows minus the exact mean, declared in the 2-ball
    two_r = np.mean([np.linalg.norm(dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.ZCDP(0.45), radius=2.0,
                                                            centering="assume_centered", random_state=s)
                                    .fit(X - X.mean(axis=0)).covariance_ - truth) for s in range(10)])
    assert private < 0.6 * two_r


def test_mechanisms_that_adapt_to_norms_centre_the_rows():
    assert get_mechanism("adaptive").centre_rows and get_mechanism("adaptive_lap").centre_rows
    assert not get_mechanism("gauss").centre_rows
    X = _rows(n=5000, scale=0.9, mean=1.0)
    cov = dpcov.PrivateCovariance(mechanism="adaptive", budget=dpcov.ZCDP(1e8), radius=1.0, centering="private",
                                  random_state=0).fit(X)
    assert cov.radius_ == pytest.approx(1.0 + np.linalg.norm(cov.location_))  # rows minus mu~: the (r + |mu~|)-ball
    assert np.allclose(cov.covariance_, np.cov(X.T, bias=True), atol=1e-4)
    gauss = dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.ZCDP(1e8), radius=1.0, centering="private",
                                    random_state=0).fit(X)
    assert gauss.radius_ == 1.0 and np.allclose(gauss.covariance_, np.cov(X.T, bias=True), atol=1e-4)


# --- mechanism="auto" ------------------------------------------------------------------------------

BUDGETS = [dpcov.ZCDP(0.5), dpcov.PureDP(1.0), dpcov.ApproxDP(1.0, 1e-6)]


@pytest.mark.parametrize("budget", BUDGETS, ids=str)
def test_every_estimator_accepts_every_notion_with_auto(budget):
    X = _rows(n=3000, scale=0.8, mean=0.3)
    y = X @ np.linspace(1, -1, X.shape[1]) * 0.1
    for est in (dpcov.PrivateCovariance(budget=budget, radius=1.0, centering="private", random_state=0).fit(X),
                dpcov.PrivatePCA(2, budget=budget, radius=1.0, centering="private", random_state=0).fit(X),
                dpcov.PrivateRidge(budget=budget, radius=1.0, centering="private", random_state=0).fit(X, y)):
        mechanism = get_mechanism(est.mechanism_)
        dpcov.budget_guaranteeing(budget, mechanism.notion)  # its notion can meet the budget
        assert est.advice_.mechanism == est.mechanism_ and est.advice_.ranking[0][0] == est.mechanism_
        scores = [s for _, s in est.advice_.ranking]
        assert scores == sorted(scores, reverse=True) and est.mechanism_ in str(est.advice_)
        # PrivateRidge spends an (eps, delta) budget as the rho implying it (docs/estimators.md, the defaults)
        composed = budget.to_zcdp() if isinstance(est, dpcov.PrivateRidge) and isinstance(budget, dpcov.ApproxDP) \
            else budget
        assert est.budget_spent_ == composed or est.budget_spent_ == dpcov.PureDP(budget.eps)


def test_auto_reads_the_data_only_through_the_released_median(monkeypatch):
    """Two datasets of the same shape and budget get the same choice, whatever their content, once the one
    fact auto releases from the data (the rows' median norm) is the same; with no release, always."""
    a = _rows(n=4000, scale=0.9, seed=5)
    b = np.random.default_rng(6).uniform(-0.1, 0.1, (4000, 6))
    monkeypatch.setattr(estimators, "private_norm_quantile_of", lambda histogram, q, budget, accountant, rng,
                        numerics: accountant.spend(budget, "norm 0.5-quantile: SVT") and 0.5)
    for depends in (True, False):
        monkeypatch.setattr(defaults, "depends_on_typical", lambda *args, **kwargs: depends)
        fits = [dpcov.PrivatePCA(3, budget=dpcov.PureDP(8.0), radius=1.0, centering="private", random_state=1).fit(X)
                for X in (a, b)]  # 2 % of eps = 8 places a median of 4000 norms
        assert fits[0].mechanism_ == fits[1].mechanism_ and fits[0].advice_ == fits[1].advice_
        assert fits[0].advice_.cell["typical"] == (defaults.typical_of_release(0.5, 1.0) if depends else None)
    assert dpcov.PrivatePCA(budget=dpcov.PureDP(1)).get_params()["mechanism"] == "auto"
    with pytest.raises(ValueError, match="mechanism_options need a named mechanism"):
        dpcov.PrivateCovariance(radius=1.0, centering="private", mechanism_options={"beta": 0.2}).fit(a)


def test_the_table_covers_its_grid_with_mechanisms_that_meet_each_notion():
    table = defaults.load_table()
    cells = table.drop_duplicates(["task", "notion", "budget", "n", "d", "k"])
    assert len(cells) == len(defaults.grid_cells())
    for (notion, task), part in table.groupby(["notion", "task"]):
        budget = defaults.budget_of(notion, 1.0)
        assert set(part.mechanism) <= set(defaults.candidates(task, budget)), (notion, task)
        assert part.score.between(0, 1).all()
    pure = defaults.advise("pca", 60000, 49, dpcov.PureDP(1.0), 5)
    assert get_mechanism(pure.mechanism).notion is dpcov.PureDP
    assert pure.cell == {"task": "pca", "notion": "pure", "budget": 1.0, "n": 30000, "d": 32, "k": 5,
                         "typical": None}
    assert set(table.scenario) == set(range(len(defaults.SCENARIOS))) and table.typical.between(0, 1).all()
    with pytest.raises(ValueError, match="task must be one of"):
        defaults.advise("svd", 10, 2, dpcov.ZCDP(1))


def test_auto_names_the_missing_table(tmp_path):
    defaults.load_table.cache_clear()
    with pytest.raises(FileNotFoundError, match="scripts/defaults.py build"):
        defaults.load_table(str(tmp_path / "auto_table.csv"))
    defaults.load_table.cache_clear()


def test_the_estimator_path_audit_plugins_charge_what_the_fit_spent():
    from dpcov import audited  # noqa: F401  (registers the plug-ins)
    from dpcov.audits.pairs import PairSpec

    pair = PairSpec("sphere", 10000, 2).build()
    for name, budget in [("covariance_zcdp", dpcov.ZCDP(0.5)), ("covariance_pure", dpcov.PureDP(1.0)),
                         ("covariance_approx", dpcov.ApproxDP(1.0, 1e-5)), ("pca_pure", dpcov.PureDP(1.0)),
                         ("pca_approx", dpcov.ApproxDP(3.0, 0.1)), ("pca_pure_streamed", dpcov.PureDP(1.0))]:
        out, accountant = dpcov.release(f"dpcov.audited:{name}", pair.problems[0], budget,
                                        np.random.default_rng(0))
        assert out.shape == (2, 2)
        assert accountant.fully_spent() or isinstance(budget, dpcov.ApproxDP)  # (eps, 0) steps leave delta unspent
        assert len(accountant.ledger) == 1 and accountant.ledger[0][0].startswith("dpcov estimator (")
        spent = accountant.spent  # all of eps; of delta at most the claim (pure steps spend none)
        assert spent == budget or (isinstance(budget, dpcov.ApproxDP) and math.isclose(spent.eps, budget.eps)
                                   and getattr(spent, "delta", 0.0) <= budget.delta)
    # pca_pure_streamed fits on a file of the pair's rows, a block at a time: the release pca_pure gives, to rounding
    streamed, _ = dpcov.release("dpcov.audited:pca_pure_streamed", pair.problems[1], dpcov.PureDP(1.0),
                                np.random.default_rng(4))
    memory, _ = dpcov.release("dpcov.audited:pca_pure", pair.problems[1], dpcov.PureDP(1.0), np.random.default_rng(4))
    np.testing.assert_allclose(streamed, memory, rtol=1e-9, atol=1e-12)
    # pca_approx at the audit sweep's (3, 0.1) goes through the released median (what it is there to audit)
    fit = dpcov.PrivatePCA(1, budget=dpcov.ApproxDP(3.0, 0.1), radius="private", centering="private",
                           random_state=0).fit(pair.problems[0].rows)
    assert "norm 0.5-quantile: SVT" in [what for what, _ in steps(fit.ledger_)], fit.ledger_


def test_the_streamed_pipeline_plugins_read_the_band_sums_a_table_streams():
    """pipeline_streamed builds the pair's band sums a block at a time (BandSums.add_columns, as data/table.py
    does) and releases what the pipeline releases from them: the same noise draws as on from_rows' sums, so the
    same matrix to rounding."""
    from dpcov import audited
    from dpcov.audits.pairs import PairSpec

    problem = PairSpec("new_direction", 1000).build().problems[1]
    streamed = audited._streamed(problem)
    assert streamed.n == problem.n and np.array_equal(streamed.band_counts, problem.band_counts)
    np.testing.assert_allclose(streamed.band_moments, problem.band_moments, rtol=0, atol=1e-14)
    for name, inner, budget in [("pipeline_streamed", "pipeline", dpcov.ZCDP(0.5)),
                                ("pipeline_pure_streamed", "pipeline_pure", dpcov.PureDP(1.0))]:
        out, accountant = dpcov.release(f"dpcov.audited:{name}", problem, budget, np.random.default_rng(1))
        expected, _ = dpcov.release(inner, problem, budget, np.random.default_rng(1))
        np.testing.assert_allclose(out, expected, rtol=1e-9, atol=1e-12)
        assert accountant.fully_spent()


def test_the_audit_catches_a_radius_read_from_the_data_and_passes_the_private_one(monkeypatch):
    """On the sphere pair (every row of norm 0.01 against one row on the unit sphere) a radius read from
    the data moves the noise by 100^2: flagged. radius="private" on the same pair: not flagged."""
    from dpcov.audits.blackbox import audit
    from dpcov.audits.pairs import PairSpec

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "docs" / "examples"))
    leaky = audit("buggy_mechanisms:estimator_data_radius", dpcov.ZCDP(0.5), pairs=[PairSpec("sphere", 10000)],
                  runs=80, confirmations=1, seed=3, n_jobs=1)  # 80 runs: rho >= 2.7 (150: 3.5), far above 0.5
    assert leaky.exceeded and leaky.worst.bound.value > 0.5, leaky.describe()
    honest = audit("dpcov.audited:covariance_zcdp", dpcov.ZCDP(0.5), pairs=[PairSpec("sphere", 10000)], runs=80,
                   confirmations=1, seed=3, n_jobs=1)
    assert not honest.exceeded, honest.describe()


# --- auto's one fact from the data: the rows' typical norm ----------------------------------------------

@pytest.mark.parametrize("q", [0.25, 0.5, 0.9])
def test_norm_quantile_lands_near_its_quantile_and_spends_its_budget(q):
    norms = np.random.default_rng(3).gamma(2.0, size=20000) * 0.01
    histogram, eps = norm_histogram(norms), 0.5
    slack = 2 * threshold(eps, 0.1) / len(norms)  # rows: twice the walk's noise margin
    for seed in range(30):
        accountant = Accountant(dpcov.PureDP(eps))
        radius = private_norm_quantile_of(histogram, q, dpcov.PureDP(eps), accountant, np.random.default_rng(seed))
        assert accountant.ledger == [(f"norm {q:g}-quantile: SVT", dpcov.PureDP(eps))]
        assert radius in grid()
        assert np.mean(norms <= radius) >= q - slack  # at or above the quantile ...
        assert np.mean(norms <= radius / 2 ** 0.25) <= q + slack  # ... by at most one grid step


def test_norm_quantile_refuses_what_public_facts_say_it_cannot_place():
    assert quantile_possible(20000, 0.5, dpcov.PureDP(0.5)) and not quantile_possible(300, 0.5, dpcov.PureDP(0.5))
    with pytest.raises(ValueError, match="needs its threshold"):
        private_norm_quantile_of(norm_histogram(np.ones(300)), 0.5, dpcov.PureDP(0.5),
                                 Accountant(dpcov.PureDP(0.5)), np.random.default_rng(0))
    with pytest.raises(ValueError, match="q must lie in"):
        private_norm_quantile_of(norm_histogram(np.ones(300)), 1.0, dpcov.PureDP(0.5),
                                 Accountant(dpcov.PureDP(0.5)), np.random.default_rng(0))


def _two_scenarios() -> pd.DataFrame:
    """One cell, two scenarios: a loose radius (typical 0.2) where 'a' wins, a tight one (0.9) where 'b' does."""
    cell = {"task": "pca", "notion": "pure", "budget": 1.0, "n": 3000, "d": 8, "k": 5, "metric": 0.5, "trials": 3}
    return pd.DataFrame([{**cell, "scenario": s, "typical": t, "mechanism": m, "score": v}
                         for s, t, scores in [(0, 0.2, {"a": 1.0, "b": 0.5}), (1, 0.9, {"a": 0.6, "b": 1.0})]
                         for m, v in scores.items()])


def test_auto_weighs_the_scenarios_by_the_typical_norm():
    table, budget = _two_scenarios(), dpcov.PureDP(1.0)
    even = defaults.advise("pca", 3000, 8, budget, 5, table)
    assert even.mechanism == "a" and dict(even.ranking) == {"a": 0.8, "b": 0.75}  # every scenario weighs the same
    assert defaults.advise("pca", 3000, 8, budget, 5, table, typical=0.2).mechanism == "a"
    tight = defaults.advise("pca", 3000, 8, budget, 5, table, typical=0.85)
    assert tight.mechanism == "b" and tight.cell["typical"] == 0.85 and "typical norm 0.85" in str(tight)
    assert defaults.depends_on_typical("pca", 3000, 8, budget, 5, table)
    agreeing = table.assign(score=np.where(table.mechanism == "a", 1.0, 0.5))
    assert not defaults.depends_on_typical("pca", 3000, 8, budget, 5, agreeing)
    with pytest.raises(ValueError, match="typical must be a number > 0"):
        defaults.advise("pca", 3000, 8, budget, 5, table, typical=0.0)


def test_auto_releases_the_typical_norm_only_where_it_matters_and_can(monkeypatch):
    X = _rows(n=20000, d=8, scale=0.9, mean=0.3)
    budget = dpcov.PureDP(4.0)
    step = "norm 0.5-quantile: SVT"
    monkeypatch.setattr(defaults, "depends_on_typical", lambda *args, **kwargs: True)
    fit = dpcov.PrivatePCA(3, budget=budget, radius=1.0, centering="private", random_state=0).fit(X)
    assert (step, dpcov.PureDP(0.08)) in steps(fit.ledger_) and fit.budget_spent_ == budget  # auto_share = 0.02
    median = np.median(np.linalg.norm(X, axis=1))
    # the released grid radius at or above the median, moved to the middle of its 2^(1/4) step, over radius 1
    assert median * 2 ** -0.125 <= fit.advice_.cell["typical"] <= median * 2 ** 0.125 * 1.2
    named = dpcov.PrivatePCA(3, mechanism="lap", budget=budget, radius=1.0, centering="private", random_state=0).fit(X)
    few = dpcov.PrivatePCA(3, budget=budget, radius=1.0, centering="private", random_state=0).fit(X[:300])
    assert step not in [w for w, _ in steps(named.ledger_ + few.ledger_)] and few.advice_.cell["typical"] is None
    assert named.budget_spent_ == few.budget_spent_ == budget
    monkeypatch.setattr(defaults, "depends_on_typical", lambda *args, **kwargs: False)
    fit = dpcov.PrivatePCA(3, budget=budget, radius=1.0, centering="private", random_state=0).fit(X)
    assert step not in [w for w, _ in steps(fit.ledger_)] and fit.budget_spent_ == budget
    monkeypatch.setattr(defaults, "depends_on_typical", lambda *args, **kwargs: True)
    fit = dpcov.PrivatePCA(3, budget=budget, radius=1.0, centering="private", auto_share=0, random_state=0).fit(X)
    assert step not in [w for w, _ in steps(fit.ledger_)] and fit.budget_spent_ == budget  # 0: public facts only
    for shares in ({"auto_share": 1.5}, {"auto_share": -0.1}, {"auto_share": 0.5, "mean_share": 0.5}):
        with pytest.raises(ValueError, match="auto_share"):
            dpcov.PrivatePCA(3, budget=budget, radius=1.0, centering="private", **shares).fit(X)
    # where the median is not released, its share is not counted against the others: with n public (replace_one);
    # under add_remove the count is released after the shares are checked, so auto_share counts wherever auto runs
    dpcov.PrivatePCA(3, budget=budget, radius=1.0, centering="private", mean_share=0.99,
                     privacy_unit="replace_one").fit(X[:300])
    with pytest.raises(ValueError, match="must leave the covariance a share"):
        dpcov.PrivatePCA(3, budget=budget, radius=1.0, centering="private", mean_share=0.97).fit(X[:300])


@pytest.mark.parametrize("numerics", ["idealized", "hardened"])
def test_norm_quantile_is_eps_dp_on_a_neighbouring_pair(numerics):
    """One row moved from the top to the bottom (norm 1 -> 0.5: every count between changes by 1): each
    outcome's frequency on D within e^eps of D' (sampling error allowed); and the same check catches the walk
    run with a sixth of its noise (6 eps; observed: a worst log ratio of about 0.3 x the walk's eps here), so it
    can fail -- for gross under-noising, which is what a black-box check of one pair can see."""
    eps, runs = 1.0, 4000
    norms = np.r_[np.full(500, 0.5), np.full(500, 1.0)]
    moved = norms.copy()
    moved[-1] = 0.5

    def frequencies(values, seed, walk_eps):
        histogram, rng = norm_histogram(values), np.random.default_rng(seed)
        return pd.Series([private_norm_quantile_of(histogram, 0.5, dpcov.PureDP(walk_eps),
                                                   Accountant(dpcov.PureDP(walk_eps)), rng, numerics=numerics)
                          for _ in range(runs)]).value_counts()

    def worst_log_ratio(walk_eps):
        p, q = frequencies(norms, 1, walk_eps), frequencies(moved, 2, walk_eps)
        both = [r for r in p.index.intersection(q.index) if min(p[r], q[r]) >= 100]  # sd of a log count <= 0.1
        assert len(both) >= 2, (p, q)  # several radii come out: the walk's randomness is real
        return max(abs(math.log(p[r] / q[r])) for r in both)

    assert worst_log_ratio(eps) <= eps
    assert worst_log_ratio(6 * eps) > eps


def test_a_choice_from_the_other_sets_leaves_the_cells_own_set_out():
    """scripts/defaults.py fresh: each cell's mechanism chosen from the other sets' cells of its notion only
    (its own set left out), weighed by distance in (budget, n, d): a set unlike the rest is not told its own
    best; a cell of another notion does not vote."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("defaults_script", Path(__file__).resolve().parents[1]
                                                  / "scripts" / "defaults.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    cell = dict(notion="pure", budget=1.0, n=1000, d=10)
    cells = pd.DataFrame([{**cell, "data": "a", "relative": {"x": 1.0, "y": 0.5}},
                          {**cell, "data": "b", "relative": {"x": 1.0, "y": 0.6}},
                          {**cell, "data": "c", "relative": {"x": 0.4, "y": 1.0}},
                          {**cell, "notion": "zcdp", "data": "d", "relative": {"y": 1.0, "x": 0.0}},
                          {**cell, "notion": "zcdp", "data": "e", "relative": {"x": 1.0}},
                          {**cell, "data": "f", "n": 10**7, "relative": {"y": 1.0, "x": 0.0}}])
    # a: b, c (x 0.7, y 0.8; f, far in n, weighs ~0); b: a, c (x 0.7, y 0.75); c: a, b say x; d: e alone (y
    # missing there counts 0); e: d; f: a, b, c at one distance (x 0.8, y 0.7)
    assert script._by_other_sets(cells, width=0.5) == ["y", "y", "x", "x", "y", "x"]
