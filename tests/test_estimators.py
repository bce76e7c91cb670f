"""dpcov's scikit-learn estimators: the docs run, scikit-learn's own checks pass (but the listed ones),
at a very large budget each agrees with its non-private counterpart, the budget is spent as declared,
and nothing is taken from the data silently."""
from __future__ import annotations

import doctest
import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.covariance import EmpiricalCovariance
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import Ridge
from sklearn.utils.estimator_checks import check_estimator

import dpcov
from dpcov.mechanisms.emcov import sample_eigenvectors

ROOT = Path(__file__).resolve().parents[1]
DECLARED = dict(radius=1.0, centering="private", clip=True, random_state=0)
EXPECTED_FAILURES = {  # docs/estimators.md explains each
    "check_parameters_default_constructible": "the default budget is a ZCDP/PureDP object",
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4000, 6)) * np.array([3, 2, 1, .5, .3, .1]) + 0.3
    X /= 1.2 * np.linalg.norm(X, axis=1).max()  # inside the unit ball (a test: the scale is read from X)
    y = X @ np.array([.4, -.3, .2, 0, 0, .1]) + 0.01 * rng.standard_normal(len(X))
    return X, y


def step(what: str) -> str:
    """A ledger line without its hardening (grid, rounding and float-error terms: mechanisms/noise.py)."""
    return what.split(" (hardened:")[0]

def test_docs_estimators_examples_run(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = doctest.testfile(str(ROOT / "docs" / "estimators.md"), module_relative=False, verbose=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 15 and result.failed == 0


@pytest.mark.parametrize("estimator", [
    dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.ZCDP(0.5), **DECLARED),
    dpcov.PrivatePCA(1, mechanism="itu", budget=dpcov.PureDP(1.0), **DECLARED),
    dpcov.PrivatePCA(1, mechanism="separate", budget=dpcov.ZCDP(0.5), **DECLARED),
    dpcov.PrivateRidge(alpha=1.0, mechanism="gauss", budget=dpcov.ZCDP(1e6), **DECLARED),
], ids=["covariance", "pca-topk", "pca-eigh", "ridge"])
def test_scikit_learn_estimator_checks(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, on_fail=None, expected_failed_checks=EXPECTED_FAILURES)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert len(results) > 30 and not failed


def test_a_private_regressor_at_a_realistic_budget_fails_only_the_accuracy_check():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(dpcov.PrivateRidge(mechanism="gauss", budget=dpcov.ZCDP(0.1), **DECLARED),
                                  on_fail=None, expected_failed_checks=EXPECTED_FAILURES)
    assert {r["check_name"] for r in results if r["status"] == "failed"} == {"check_regressors_train"}


@pytest.mark.parametrize("centering", ["assume_centered", "private"])
@pytest.mark.parametrize("mechanism, budget", [("gauss", dpcov.ZCDP(1e10)), ("separate", dpcov.ZCDP(1e10)),
                                               ("lap", dpcov.PureDP(1e8))])
def test_covariance_agrees_with_empirical_covariance_at_a_huge_budget(data, centering, mechanism, budget):
    X, _ = data
    cov = dpcov.PrivateCovariance(mechanism=mechanism, budget=budget, radius=1.0, centering=centering,
                                  random_state=1, privacy_unit="replace_one").fit(X)  # n public: nothing rounds it
    exact = EmpiricalCovariance(assume_centered=centering == "assume_centered").fit(X)
    assert np.allclose(cov.covariance_, exact.covariance_, atol=1e-5)
    assert np.allclose(cov.location_, exact.location_, atol=1e-5)


@pytest.mark.filterwarnings("ignore:mechanism .* has no hardened numerics")  # an eigenvector sampler, named
@pytest.mark.parametrize("mechanism, budget", [("itu", dpcov.PureDP(1e8)), ("ad", dpcov.PureDP(1e8)),
                                               ("kt", dpcov.PureDP(1e8)), ("emcov", dpcov.ZCDP(1e12)),
                                               ("gauss", dpcov.ZCDP(1e12))])
def test_pca_agrees_with_pca_at_a_huge_budget(data, mechanism, budget):
    X, _ = data
    pca = dpcov.PrivatePCA(3, mechanism=mechanism, budget=budget, radius=1.0, centering="private",
                           random_state=2).fit(X)
    exact = PCA(3).fit(X)
    cosines = np.abs(np.sum(pca.components_ * exact.components_, axis=1))
    assert np.all(cosines > 1 - 1e-4), cosines
    assert np.allclose(pca.explained_variance_, exact.explained_variance_ * (len(X) - 1) / len(X), rtol=1e-3)
    assert np.allclose(pca.transform(X), exact.transform(X) * np.sign(np.sum(pca.components_ * exact.components_,
                                                                              axis=1)), atol=1e-3)
    assert dpcov.captured_variance_ratio(pca.components_, X) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("centering, intercept", [("assume_centered", False), ("private", True)])
def test_ridge_agrees_with_ridge_at_a_huge_budget(data, centering, intercept):
    X, y = data
    scale = np.linalg.norm(np.column_stack([X, y]), axis=1).max()
    Xs, ys = X / scale, y / scale
    ridge = dpcov.PrivateRidge(alpha=2.0, mechanism="gauss", budget=dpcov.ZCDP(1e14), radius=1.0,
                               centering=centering, random_state=3).fit(Xs, ys)
    exact = Ridge(alpha=2.0, fit_intercept=intercept).fit(Xs, ys)
    assert np.allclose(ridge.coef_, exact.coef_, atol=1e-4)
    assert ridge.intercept_ == pytest.approx(exact.intercept_, abs=1e-4)
    assert ridge.score(Xs, ys) == pytest.approx(exact.score(Xs, ys), abs=1e-4)


@pytest.mark.filterwarnings("ignore:mechanism .* has no hardened numerics")  # an eigenvector sampler, named
def test_the_budget_is_spent_as_declared(data):
    X, y = data
    cov = dpcov.PrivateCovariance(mechanism="separate", budget=dpcov.ZCDP(0.4), mean_share=0.25, **DECLARED,
                                  privacy_unit="replace_one").fit(X)
    assert cov.budget_spent_ == dpcov.ZCDP(0.4)
    assert (step(cov.ledger_[0][0]), cov.ledger_[0][1]) == ("mean (centring)", dpcov.ZCDP(0.1))
    assert sum(b.rho for _, b in cov.ledger_[1:]) == pytest.approx(0.3)
    centred = dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.ZCDP(0.4), radius=1.0,
                                      centering="assume_centered").fit(X)  # add_remove: the count first
    assert [(step(what), b) for what, b in centred.ledger_] == [
        ("count", dpcov.ZCDP(0.008)), ("covariance: GaussCov: noisy covariance", dpcov.ZCDP(0.392))]
    assert np.array_equal(centred.location_, np.zeros(X.shape[1]))
    pca = dpcov.PrivatePCA(2, mechanism="ad", budget=dpcov.PureDP(1.0), **DECLARED).fit(X)
    steps = [b.eps for what, b in pca.ledger_ if "eigenvector" in what]
    assert len(steps) == 2 and sum(steps) == pytest.approx(0.44)  # eps/2 of the covariance's 0.88, over k = 2
    ridge = dpcov.PrivateRidge(mechanism="lap", budget=dpcov.PureDP(1.0), **DECLARED).fit(X, y)
    assert ridge.budget_spent_ == dpcov.PureDP(1.0)


def test_topk_sampling_draws_the_first_k_eigenvectors_of_the_full_algorithm():
    """Algorithm 1 stopped after k steps: the same draws as the first k steps of the full run (the same
    distribution, exactly), so only the budget split differs."""
    rng = np.random.default_rng(4)
    A = rng.standard_normal((40, 9))
    C = A.T @ A
    etas = np.linspace(2.0, 0.5, 9)
    for k in (1, 3, 8, 9):
        top = sample_eigenvectors(C, etas[:k], np.random.default_rng(5), steps=k, block=2)
        full = sample_eigenvectors(C, etas, np.random.default_rng(5), block=2)
        assert top.shape == (9, k) and np.allclose(top, full[:, :k], atol=1e-10)
        assert np.allclose(top.T @ top, np.eye(k), atol=1e-10)
    with pytest.raises(ValueError, match="steps must be an integer in"):
        sample_eigenvectors(C, etas, rng, steps=10)


def test_nothing_is_taken_from_the_data_silently(data):
    X, y = data
    with pytest.raises(ValueError, match="needs radius="):
        dpcov.PrivateCovariance(centering="private").fit(X)
    with pytest.raises(ValueError, match="centering must be 'assume_centered'"):
        dpcov.PrivateCovariance(radius=1.0).fit(X)
    with pytest.raises(ValueError, match=r"rows have norm > radius = 0.5: pass a radius") as refused:
        dpcov.PrivateCovariance(radius=0.5, centering="private").fit(X)
    assert "largest" not in str(refused.value)  # an error is an output too: how many rows, and no value
    clipped = dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.ZCDP(1e10), radius=0.5, centering="assume_centered",
                                      clip=True).fit(X)
    assert np.trace(clipped.covariance_) <= 0.25 + 1e-6
    for bad, message in [(dict(budget=0.1), "budget must be"), (dict(radius=-1), "radius must be"),
                         (dict(mean_share=1.0), "mean_share must lie"), (dict(mechanism="gaus"), "unknown mechanism"),
                         (dict(mechanism="stable_gsampling"), "needs raw rows"),
                         (dict(mechanism="gauss", mechanism_options={"tau": 1}), "unknown option"),
                         (dict(random_state="x"), "random_state must be")]:
        with pytest.raises((ValueError, TypeError), match=message):
            dpcov.PrivateCovariance(**{**DECLARED, **bad}).fit(X)
    with pytest.raises(ValueError, match="n_components must be an integer in"):
        dpcov.PrivatePCA(7, **DECLARED).fit(X)
    with pytest.raises(ValueError, match="alpha must be"):
        dpcov.PrivateRidge(alpha=-1, **DECLARED).fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        dpcov.PrivateCovariance(**DECLARED).fit(np.full((3, 2), np.nan))


@pytest.mark.filterwarnings("ignore:mechanism .* has no hardened numerics")  # an eigenvector sampler, named
def test_clone_params_and_reproducibility(data):
    X, _ = data
    est = dpcov.PrivatePCA(2, mechanism="itu", budget=dpcov.PureDP(1.0), **DECLARED)
    twin = clone(est)
    assert twin.get_params() == est.get_params() and twin is not est
    assert np.array_equal(est.fit(X).components_, twin.fit(X).components_)  # random_state=0: the same release
    other = clone(est).set_params(random_state=1).fit(X)
    assert not np.array_equal(other.components_, est.components_)
    fresh = [dpcov.PrivatePCA(2, mechanism="itu", budget=dpcov.PureDP(1.0), radius=1.0, centering="private",
                              clip=True).fit(X).components_ for _ in range(2)]
    assert not np.array_equal(*fresh)  # random_state=None: fresh noise each fit


def test_import_dpcov_is_the_public_api():
    for name in dpcov.__all__:
        assert hasattr(dpcov, name), name
    assert dpcov.release is importlib.import_module("dpcov.mechanisms").release
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        dpcov.nonexistent  # noqa: B018


def test_importing_a_subpackage_does_not_load_the_estimators():
    """What a Dask worker summing a table imports stays light: dpcov's names load on first use."""
    code = ("import sys, dpcov.mechanisms.problem; "
            "print(sorted(m for m in ('dpcov.estimators', 'sklearn', 'dpcov.mechanisms.registry') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("budget, sd", [
    (dpcov.ZCDP(0.5), 2 * 0.8 / 100 / np.sqrt(2 * 0.5)),  # Gaussian: l2 sensitivity 2r/n over sqrt(2 rho)
    (dpcov.PureDP(1.0), np.sqrt(2) * 2 * 0.8 * np.sqrt(3) / 100 / 1.0),  # Laplace: scale 2r sqrt(d)/(n eps)
])
def test_private_mean_noise_is_calibrated(budget, sd):
    """The centring step's noise has the sd its sensitivity and budget give (r = 0.8, n = 100, d = 3),
    and is charged to the accountant."""
    from dpcov.mechanisms.mean import private_mean

    X = np.full((100, 3), 0.1)
    draws = []
    for seed in range(4000):
        accountant = dpcov.Accountant(budget)
        draws.append(private_mean(X, 0.8, budget, accountant, np.random.default_rng(seed)) - 0.1)
        assert accountant.ledger == [("mean (centring)", budget)]
    draws = np.asarray(draws)
    assert draws.std() == pytest.approx(sd, rel=0.05)
    assert np.abs(draws.mean(axis=0)).max() < 4 * sd / np.sqrt(4000)


def test_private_mean_under_approx_dp_uses_the_analytic_gaussian():
    from dpcov.mechanisms.mean import private_mean
    from dpcov.mechanisms.thresholding import analytic_gaussian_sigma

    budget = dpcov.ApproxDP(1.0, 1e-5)
    X = np.zeros((50, 2))
    draws = np.array([private_mean(X, 1.0, budget, dpcov.Accountant(budget), np.random.default_rng(s))
                      for s in range(4000)])
    assert draws.std() == pytest.approx(analytic_gaussian_sigma(2 / 50, budget), rel=0.05)


def test_estimators_refuse_non_private_calibrations_and_impossible_budgets(data):
    X, _ = data
    for mechanism, value in [("emcov", "public_code"), ("itu", "public_code"), ("ad", "public_code"),
                             ("dp_threshold", "as_written")]:
        with pytest.raises(ValueError, match="as-published calibration, not private"):
            dpcov.PrivateCovariance(mechanism=mechanism, budget=dpcov.ApproxDP(1.0, 1e-6),
                                    mechanism_options={"calibration": value}, **DECLARED).fit(X)
    with pytest.raises(ValueError, match=r"mechanism 'gauss' \(ZCDP\) cannot meet budget 1-DP"):
        dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.PureDP(1.0), **DECLARED).fit(X)


def test_pca_ranks_components_on_the_unclamped_private_eigenvalues(data):
    X, _ = data
    pca = dpcov.PrivatePCA(6, mechanism="separate", budget=dpcov.ZCDP(1e-6), **DECLARED).fit(X)
    assert np.all(np.diff(pca.explained_variance_) <= 0) and np.all(pca.explained_variance_ >= 0)
    assert np.allclose(pca.components_ @ pca.components_.T, np.eye(6), atol=1e-8)


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".parquet"])
def test_fit_streams_a_table_file_to_the_in_memory_release(tmp_path, suffix):
    """fit(path) sums the file a block at a time (blocks of 1000 rows here) and releases what fit(array)
    releases with the same seed, to rounding: the private radius, the private mean and the covariance."""
    from dpcov.data.chunks import Rows
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    X = np.random.default_rng(8).standard_normal((12000, 5)) * [2.0, 1.0, 0.5, 0.3, 0.1] + [1, 0, 0, 0, 2]
    path = tmp_path / f"t{suffix}"
    if suffix == ".npy":
        np.save(path, X)
    else:
        frame = pd.DataFrame(X, columns=list("abcde"))
        frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    for estimator in (dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.ZCDP(1.0), radius="private",
                                              centering="private", random_state=3),
                      dpcov.PrivatePCA(2, budget=dpcov.ZCDP(1.0), radius=4.0, clip=True, centering="private",
                                       random_state=3)):
        memory = clone(estimator).fit(X)
        assert clone(estimator).fit(str(path)).mechanism_ == memory.mechanism_  # a path, one block
        streamed = clone(estimator).fit(Rows(path, block_bytes=8 * 5 * 1000))  # 12 blocks
        assert streamed.n_features_in_ == 5 and streamed.ledger_ == memory.ledger_
        assert streamed.radius_ == pytest.approx(memory.radius_, rel=1e-12) and streamed.mechanism_ == memory.mechanism_
        fitted = ("covariance_", "location_") if hasattr(memory, "covariance_") else ("components_", "mean_")
        for name in fitted:
            assert np.allclose(getattr(streamed, name), getattr(memory, name), rtol=1e-9, atol=1e-12), name


@pytest.mark.parametrize("clip, shift", [(None, None), (1.0, None), (1.0, np.array([0.3, -0.2, 0.1, 0.0]))])
def test_the_one_band_sums_routine_is_adds_to_rounding(clip, shift):
    """Every input kind's blocks are summed by the one-call pass (it clips the rows itself unless a centre shifts
    them); BandSums.add of the same rows, clipped and shifted by numpy, agrees to 1e-12: n and the bands exact,
    every sum to rounding."""
    from dpcov.estimators import _band_sums
    from dpcov.mechanisms.problem import BandSums, clip_rows
    X = np.random.default_rng(6).standard_normal((3000, 4)) * [0.8, 0.4, 0.2, 0.1]
    if clip is None:
        X /= np.linalg.norm(X, axis=1).max() * (1 + 1e-12)  # inside the unit ball: nothing to clip
    radius = 1.0 + (0.0 if shift is None else float(np.linalg.norm(shift)))
    assert clip is None or np.linalg.norm(X, axis=1).max() > clip  # rows to clip
    rows = X if clip is None else clip_rows(X, clip)[0]
    streamed = _band_sums(X, clip, shift, radius).problem()
    expected = BandSums(radius).add(rows if shift is None else rows - shift).problem()
    assert streamed.n == expected.n and np.array_equal(streamed.band_counts, expected.band_counts)
    for name in ("sigma", "band_moments", "band_directions"):
        a, b = getattr(streamed, name), getattr(expected, name)
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max(), name


def test_a_row_whose_squares_overflow_is_clipped_on_every_input_kind(tmp_path):
    """A finite row of entries near 1e200 (its squares beyond float64), clip=True: clipped onto the sphere whether
    the rows are an array, a file or a Dask array, and whichever rows a person's bound drops (no error from the
    draw)."""
    da = pytest.importorskip("dask.array")
    X = np.random.default_rng(2).standard_normal((600, 3)) * 0.1
    X[2] = [1e200, -1e200, 3e199]
    np.save(tmp_path / "big.npy", X)
    persons = np.r_[[0, 0, 0], np.arange(1, 598)]  # person 0: rows 0-2, k = 2 drops one of them
    for data in (X, str(tmp_path / "big.npy"), da.from_array(X, chunks=(200, 3))):
        for seed in range(4):
            fitted = dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.ZCDP(1e6), radius=1.0, clip=True,
                                             centering="assume_centered", max_rows_per_person=2,
                                             random_state=seed).fit(data, persons=persons)
            assert np.all(np.isfinite(fitted.covariance_))


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".parquet"])
def test_fit_on_a_file_counts_refused_rows_and_refuses_no_rows_first(tmp_path, suffix):
    """A NaN in a later block of a file is an error that says how many rows hold one and names none (an error from
    the data is an output: issue 58); an empty file says "no rows" before any step reads n (mechanism="auto"'s
    table, on n = 0)."""
    from dpcov.data.chunks import Rows
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    X = np.random.default_rng(4).standard_normal((12000, 5)) * [0.3, 0.2, 0.1, 0.05, 0.02]
    X[9000, 2] = np.nan

    def write(rows, to):
        if suffix == ".npy":
            np.save(to, rows)
        else:
            frame = pd.DataFrame(rows, columns=list("abcde"))
            frame.to_csv(to, index=False) if suffix == ".csv" else frame.to_parquet(to, row_group_size=1000)
        return to

    estimator = dpcov.PrivatePCA(2, budget=dpcov.ZCDP(1.0), radius="private", centering="private", random_state=3)
    with pytest.raises(ValueError, match=r"NaN or inf: drop or impute") as refused:
        estimator.fit(Rows(write(X, tmp_path / f"t{suffix}"), block_bytes=8 * 5 * 1000))
    assert "9000" not in str(refused.value)
    empty = write(X[:0], tmp_path / f"empty{suffix}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="no rows"):
            clone(estimator).set_params(radius=1.0).fit(str(empty))


def test_auto_falls_back_when_its_choice_releases_nothing():
    """300 rows under 1-DP: auto chooses AdaptiveCov, whose private radius finds no row (its eighth of the budget
    is too little for 300 rows) and releases a zero covariance having spent only that eighth. auto then releases
    the next mechanism of its ranking at exactly the unspent budget: the whole budget spent, nothing more, a PCA
    rather than the coordinate axes, and advice_ says why. A named AdaptiveCov releases the zero matrix, with a
    warning; the zero mechanism (which spends nothing) is never replaced; PrivateCovariance keeps the zero."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((300, 2)) * [0.3, 0.1] @ np.array([[0.6, 0.8], [-0.8, 0.6]])
    common = dict(budget=dpcov.PureDP(1.0), radius=1.0, centering="private", random_state=0,
                  privacy_unit="replace_one")
    assert dpcov.defaults.advise("pca", 300, 2, dpcov.PureDP(1.0), 1).mechanism == "adaptive_lap"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no zero release left
        pca = dpcov.PrivatePCA(1, **common).fit(X)
    fell_back = [b for what, b in pca.ledger_ if "after adaptive_lap released nothing" in what]
    assert pca.mechanism_ not in ("adaptive_lap", "adaptive") and fell_back
    assert [step(what) for what, _ in pca.ledger_][:2] == ["mean (centring)", "covariance: PrivRadius: SVT"]
    assert sum(b.eps for _, b in pca.ledger_) == pytest.approx(1.0, rel=1e-12) and pca.budget_spent_ == dpcov.PureDP(1.0)
    assert "adaptive_lap released nothing" in str(pca.advice_) and pca.advice_.mechanism == pca.mechanism_
    assert np.all(pca.explained_variance_ > 0) and np.count_nonzero(pca.components_[0]) == 2  # not an axis
    centred = dpcov.PrivatePCA(1, **{**common, "centering": "assume_centered"}).fit(X - X.mean(axis=0))
    assert any("released nothing" in what for what, _ in centred.ledger_)  # the fallback draws k = 1 vector, not d
    assert sum("eigenvector" in what for what, _ in centred.ledger_) <= 1
    with pytest.warns(UserWarning, match="adaptive_lap released a zero covariance"):
        named = dpcov.PrivatePCA(1, mechanism="adaptive_lap", **common).fit(X)
    assert named.mechanism_ == "adaptive_lap" and not np.any(named.explained_variance_)
    zero = dpcov.PrivateCovariance(mechanism="zero", **common).fit(X)
    assert not np.any(zero.covariance_) and zero.mechanism_ == "zero"
    # a covariance (and a ridge) keeps the zero release: an estimate there, better than the fallback's on wine's ridge
    covariance = dpcov.PrivateCovariance(**common).fit(X)
    assert covariance.mechanism_ == "adaptive_lap" and not np.any(covariance.covariance_)
    assert not any("released nothing" in what for what, _ in covariance.ledger_)


def test_private_pca_names_its_outputs_and_sets_pandas_output_in_a_pipeline():
    """As scikit-learn's PCA: get_feature_names_out, and set_output(transform="pandas") alone or in a pipeline."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.standard_normal((2000, 4)) / 4, columns=list("abcd"))
    y = (X.a > 0).astype(int)
    pca = dpcov.PrivatePCA(2, budget=dpcov.ZCDP(0.5), radius=1.0, clip=True, centering="private", random_state=0)
    with pytest.raises(NotFittedError):
        pca.get_feature_names_out()
    model = make_pipeline(pca, LogisticRegression()).set_output(transform="pandas").fit(X, y)
    out = model[0].transform(X)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["privatepca0", "privatepca1"]
    assert list(model[0].get_feature_names_out()) == ["privatepca0", "privatepca1"]
    assert np.allclose(out.values, (X.values - model[0].mean_) @ model[0].components_.T)
    assert 0 <= model.score(X, y) <= 1


def test_numeric_extremes_get_a_right_answer_or_a_clear_error():
    """Issue 55: rows of any finite norm are clipped onto the sphere (their norm computed without overflow), and a
    radius or budget the hardened noise cannot represent is refused before any row is read, in the user's terms."""
    X = np.random.default_rng(3).normal(size=(1000, 4))
    X /= np.linalg.norm(X, axis=1).max()
    huge = X.copy()
    huge[:10] *= 1e200
    cov = dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.ZCDP(1e8), radius=1.0, centering="assume_centered",
                                  clip=True, random_state=0, privacy_unit="replace_one").fit(huge)
    on_sphere = X.copy()
    on_sphere[:10] /= np.linalg.norm(on_sphere[:10], axis=1, keepdims=True)
    assert np.allclose(cov.covariance_, on_sphere.T @ on_sphere / len(X), atol=1e-5)  # not the zero matrix
    for params, message in ((dict(radius=1e300), r"outside \[2\^-400, 2\^400\].*rescale"),
                            (dict(radius=1e-300), r"outside \[2\^-400, 2\^400\]"),
                            (dict(budget=dpcov.ZCDP(1e-30)), "below what hardened noise can represent"),
                            (dict(budget=dpcov.PureDP(1e-30)), "below what hardened noise can represent")):
        with pytest.raises(ValueError, match=message):
            dpcov.PrivateCovariance(**{**dict(budget=dpcov.ZCDP(0.5), radius=1.0, centering="private"), **params}
                                    ).fit(X)
    with pytest.raises(ValueError, match="below what hardened noise"):
        dpcov.PrivateCovariance(budget=dpcov.PureDP(1e-30), radius=1.0, centering="private",
                                privacy_unit="add_remove")._check_static(None, 4)


def test_reading_errors_of_a_fit_name_no_cell_and_no_row_count(tmp_path):
    """A non-numeric cell of a CSV file, a Dask dataframe's text column, persons or y of the wrong length: the
    estimators' errors name the column or say what is wrong, never a cell's value, its row or n (issue 58); the data
    layer itself still numbers the cell for the experiment suite."""
    da = pytest.importorskip("dask.dataframe")
    X = np.random.default_rng(0).standard_normal((300, 2)) / 4
    frame = pd.DataFrame(X, columns=["a", "b"]).astype(object)
    frame.loc[250, "b"] = "secret-value-42"
    frame.to_csv(tmp_path / "bad.csv", index=False)
    common = dict(budget=dpcov.ZCDP(0.5), radius=1.0, centering="assume_centered", random_state=0)
    for data in (str(tmp_path / "bad.csv"), da.from_pandas(frame, npartitions=2)):
        with pytest.raises(ValueError) as refused:
            dpcov.PrivateCovariance(**common).fit(data)
        assert "secret" not in str(refused.value) and "250" not in str(refused.value), str(refused.value)
    with pytest.raises(ValueError, match="column 'b' is not numeric \\(row 250: 'secret-value-42'\\)"):
        from dpcov.data.table import table_data
        table_data(tmp_path / "bad.csv", None, "none", 5.0)
    with pytest.raises(ValueError, match="persons has 3 identifiers, not one per row") as refused:
        dpcov.PrivateCovariance(max_rows_per_person=1, **common).fit(X, persons=[1, 2, 3])
    assert "300" not in str(refused.value)
    with pytest.raises(ValueError, match="X and y have different numbers of rows") as refused:
        dpcov.PrivateRidge(**common).fit(X[:, :1], X[:-1, 1])
    assert "300" not in str(refused.value) and "299" not in str(refused.value)


def test_a_dataframes_text_cell_is_an_error_naming_no_value():
    X = pd.DataFrame(np.random.default_rng(0).standard_normal((50, 2)) / 4, columns=["a", "b"]).astype(object)
    X.loc[3, "b"] = "SECRET123"
    common = dict(budget=dpcov.ZCDP(1.0), radius=1.0, centering="assume_centered")
    for fit in (lambda: dpcov.PrivateCovariance(**common).fit(X),
                lambda: dpcov.PrivateRidge(**common).fit(X[["a"]].astype(float), X["b"])):
        with pytest.raises(ValueError, match="not a number") as refused:
            fit()
        assert "SECRET" not in str(refused.value)
