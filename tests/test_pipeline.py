"""The private pipeline (mechanisms/pipeline.py) on a raw table (dataset table, bound=private): the
clipping and the mean come exactly from the band sums, every step is in one ledger that composes to
the budget, and the release converges to the raw table's covariance. Its black-box audit:
tests/privacy/test_audit.py (every registered mechanism and configured variant)."""
import numpy as np
import pytest

from dpcov.data.table import table
from dpcov.mechanisms.privacy import PureDP, ZCDP
from dpcov.mechanisms.problem import CovProblem, clip_rows
from dpcov.mechanisms.registry import release

RAW = np.random.default_rng(0).standard_normal((6000, 4)) * [30.0, 10.0, 3.0, 0.5] + [100.0, 0.0, -20.0, 5.0]


@pytest.mark.parametrize("m", [0, 3, 5, 6, 7, 9])
def test_clipping_from_the_band_sums_is_exact(m):
    outer = CovProblem.from_rows(RAW, radius=2.0**10)
    clipped = outer.clipped_problem(m)
    tau = 2.0 ** (10 - m)
    rows = clip_rows(RAW, tau)[0]
    expected = CovProblem.from_rows(rows, radius=tau)
    assert clipped.radius == tau and clipped.n == expected.n
    assert np.array_equal(clipped.band_exponents, expected.band_exponents)
    assert np.array_equal(clipped.band_counts, expected.band_counts)
    for name in ("sigma", "band_moments", "band_directions", "band_sums", "band_unit_sums"):
        assert np.allclose(getattr(clipped, name), getattr(expected, name), rtol=1e-12, atol=1e-12 * tau**2), name
    assert np.allclose(outer.clipped_mean(m), rows.mean(axis=0), rtol=1e-12, atol=1e-12 * tau)


@pytest.mark.parametrize("name, budget, inner", [("pipeline", ZCDP(0.5), "GaussCov"),
                                                 ("pipeline_pure", PureDP(2.0), "LapCov")])
def test_every_step_is_in_one_ledger_that_composes_to_the_budget(name, budget, inner):
    problem = CovProblem.from_rows(RAW, radius=2.0**64)
    for standardize, steps in (("center", 3), ("none", 2)):
        _, accountant = release(name, problem, budget, np.random.default_rng(1), options={"standardize": standardize})
        what = [w for w, _ in accountant.ledger]
        assert what[0] == "PrivRadius: SVT" and what[-1].startswith(f"covariance: {inner}")
        assert len(what) == steps and ("mean (centring)" in what) == (standardize == "center")
        assert accountant.fully_spent and str(accountant.spent) == str(budget)


def test_a_raw_table_converges_to_its_covariance(tmp_path):
    path = tmp_path / "raw.npy"
    np.save(path, RAW)
    data = table(str(path), None, "center", "private", rng=None)
    assert data.info["private_preprocessing"] is True and data.radius == 2.0**64
    assert np.allclose(data.truth, np.cov(RAW.T, bias=True), rtol=1e-9)
    problem = data.statistics.problem()
    errors = []
    for rho in (0.01, 1.0, 100.0):
        runs = [release("pipeline", problem, ZCDP(rho), np.random.default_rng(s))[0] for s in range(4)]
        errors.append(np.mean([np.linalg.norm(r - data.truth) for r in runs]) / np.linalg.norm(data.truth))
    assert errors[0] > errors[1] > errors[2] and errors[2] < 0.05
    correlation = table(str(path), None, "zscore", "private", rng=None).truth
    assert np.allclose(np.diag(correlation), 1.0)
    out = release("pipeline", problem, ZCDP(100.0), np.random.default_rng(0), options={"standardize": "zscore"})[0]
    # the columns whose variance stands above the noise (tau^2 / (n sqrt(rho)) ~ 0.2 here): the last one's
    # (variance 0.25) correlations are noise, as the module says
    assert np.abs(out - correlation)[:3, :3].max() < 0.05 and np.abs(out).max() <= 1 + 1e-9


def test_bad_pipeline_choices_are_refused(tmp_path):
    np.save(path := tmp_path / "raw.npy", RAW)
    with pytest.raises(ValueError, match="bound=private reads the raw rows; standardize .* got 'minmax'"):
        table(str(path), None, "minmax", "private", rng=None)
    problem = CovProblem.from_rows(RAW, radius=2.0**64)
    with pytest.raises(ValueError, match="standardize must be one of"):
        release("pipeline", problem, ZCDP(1.0), np.random.default_rng(0), options={"standardize": "minmax"})
    with pytest.raises(ValueError, match="leave the covariance a share"):
        release("pipeline", problem, ZCDP(1.0), np.random.default_rng(0), options={"radius_share": 0.6,
                                                                                      "mean_share": 0.5})


def test_the_audit_flags_a_pipeline_whose_radius_is_read_from_the_data(monkeypatch):
    """The sphere pair (every row at norm 0.01, one moved onto the unit sphere): a pipeline clipping at
    the data's own largest band moves its noise 10^4-fold with that row: flagged; the private pipeline
    (PrivRadius) on the same pair and runs: not flagged."""
    from pathlib import Path

    from dpcov.audits.blackbox import audit
    from dpcov.audits.pairs import PairSpec

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "docs" / "examples"))
    leaky = audit("buggy_mechanisms:pipeline_data_radius", ZCDP(0.5), pairs=[PairSpec("sphere", 10000)],
                  runs=150, confirmations=1, seed=3, n_jobs=1)
    assert leaky.exceeded and leaky.worst.bound.value > 0.5, leaky.describe()
    honest = audit("pipeline", ZCDP(0.5), pairs=[PairSpec("sphere", 10000)], runs=150, confirmations=1, seed=3,
                   n_jobs=1)
    assert not honest.exceeded, honest.describe()
