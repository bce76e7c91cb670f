"""Amin et al. 2019 on UCI data: loaders, the L baseline, ridge regression from Sigma, output
perturbation, and experiment variants (G-x lines)."""
import hashlib
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpcov.data import files, uci
from dpcov.data.files import DataFile, DataFileError, locate
from dpcov.experiments.config import ConfigError
from dpcov.experiments.metrics import evaluate
from dpcov.experiments.runner import run_experiment
from dpcov.figures.plot import draw
from dpcov.mechanisms.privacy import ApproxDP, PureDP, Accountant
from dpcov.mechanisms.problem import CovProblem
from dpcov.mechanisms.regression import RidgeRelease, RidgeTask, output_perturbation, output_perturbation_sensitivity
from dpcov.mechanisms.registry import release

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def unit_rows(rng, n, d):
    X = rng.standard_normal((n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True) * rng.uniform(0.2, 1, (n, 1))


# ---- loaders on tiny files -------------------------------------------------------------------

def test_parse_wine_and_airfoil_exactly(tmp_path):
    wine = tmp_path / "wine.data"
    wine.write_text("1,14.23,1.71,2.43,15.6,127,2.8,3.06,.28,2.29,5.64,1.04,3.92,1065\n"
                    "3,13.2,1.78,2.14,11.2,100,2.65,2.76,.26,1.28,4.38,1.05,3.4,1050\n")
    table = uci.parse_wine(wine)
    assert table.shape == (2, 13) and table[0, 0] == 14.23 and table[1, 12] == 1050 and table[0, 7] == 0.28
    airfoil = tmp_path / "airfoil.dat"
    airfoil.write_bytes(b"800\t0\t0.3048\t71.3\t0.00266337\t126.201\r\n1000\t0\t0.3048\t71.3\t0.00266337\t125.201\r\n")
    np.testing.assert_array_equal(uci.parse_airfoil(airfoil)[:, 5], [126.201, 125.201])


def test_bad_cells_name_the_line(tmp_path):
    bad = tmp_path / "wine.data"
    bad.write_text("1,2,3,4,5,6,7,8,9,10,11,12,13,14\n1,2,3,x,5,6,7,8,9,10,11,12,13,14\n")
    with pytest.raises(ValueError, match="line 2: non-numeric"):
        uci.parse_wine(bad)
    bad.write_text("1,2,3\n")
    with pytest.raises(ValueError, match="line 1: expected 14 fields"):
        uci.parse_wine(bad)


def test_parse_adult_one_hot_with_missing_category(tmp_path):
    train = tmp_path / "adult.data"
    train.write_text("39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, "
                     "Male, 2174, 0, 40, United-States, <=50K\n"
                     "50, ?, 83311, Bachelors, 13, Married-civ-spouse, ?, Husband, White, Male, 0, 0, 13, ?, >50K\n\n")
    test = tmp_path / "adult.test"
    test.write_text("|1x3 Cross validator\n25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, "
                    "Own-child, Black, Female, 0, 0, 40, United-States, <=50K.\n")
    table, names = uci.parse_adult(train, test)
    assert table.shape == (3, len(names))
    assert names[:6] == uci.ADULT_NUMERIC
    np.testing.assert_array_equal(table[:, 5], [40, 13, 40])  # hours-per-week, the regression target
    workclass = [i for i, n in enumerate(names) if n.startswith("workclass=")]
    assert [names[i] for i in workclass] == ["workclass=?", "workclass=Private", "workclass=State-gov"]
    np.testing.assert_array_equal(table[:, workclass], [[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    categorical = table[:, 6:]
    np.testing.assert_array_equal(categorical.sum(axis=1), [8, 8, 8])  # one 1 per categorical field
    assert not any(n.startswith("income") for n in names)


def test_scaling_into_the_unit_ball():
    rng = np.random.default_rng(0)
    table = rng.uniform(-5, 100, (50, 4))
    table[:, 2] = 7.0  # a constant column
    for preprocess in uci.PREPROCESS:
        X = uci.scale_to_unit_ball(table, preprocess)
        assert np.linalg.norm(X, axis=1).max() == pytest.approx(1.0)
    X = uci.scale_to_unit_ball(table, "minmax")
    assert X.min() >= 0 and np.all(X[:, 2] == 0)
    with pytest.raises(ValueError, match="preprocess"):
        uci.scale_to_unit_ball(table, "zscore")


# ---- file lookup, checksums, cache -----------------------------------------------------------

@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """No shared data, no network: DPCOV_DATA and the cache point into tmp_path."""
    monkeypatch.setenv("DPCOV_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("DPCOV_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(files, "REPO_ROOT", tmp_path / "nowhere" / "repo")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_locate_verifies_checksums_and_explains_missing_files(isolated):
    content = b"1,2\n"
    spec = DataFile("toy", "toy.csv", hashlib.sha256(content).hexdigest(), (), "Make one with echo.")
    with pytest.raises(DataFileError) as err:
        locate(spec)
    message = str(err.value)
    assert "toy/toy.csv" in message and str(isolated / "data") in message and str(isolated / "cache") in message
    assert "Make one with echo." in message
    path = isolated / "data" / "toy" / "toy.csv"
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    assert locate(spec) == path
    path.write_bytes(b"1,3\n")  # corrupted
    with pytest.raises(DataFileError, match="SHA-256 .* not used"):
        locate(spec)
    # config data_dir comes first
    first = isolated / "first" / "toy" / "toy.csv"
    first.parent.mkdir(parents=True)
    first.write_bytes(content)
    assert locate(spec, data_dir=isolated / "first") == first


def test_download_goes_to_the_cache_and_is_verified(isolated):
    content = b"hello\n"
    source = isolated / "source.txt"
    source.write_bytes(content)
    spec = DataFile("toy", "hello.txt", hashlib.sha256(content).hexdigest(), (source.as_uri(),))
    path = locate(spec)
    assert path == isolated / "cache" / "toy" / "hello.txt" and path.read_bytes() == content
    wrong = DataFile("toy", "other.txt", "0" * 64, (source.as_uri(),))
    with pytest.raises(DataFileError, match="Download failed"):
        locate(wrong)
    assert not (isolated / "cache" / "toy" / "other.txt").exists()


def test_parse_cache_builds_once(isolated):
    calls = []

    def build():
        calls.append(1)
        return {"table": np.arange(6.0).reshape(2, 3)}

    first = files.cached_array("toy", {"sha256": "abc"}, build)
    second = files.cached_array("toy", {"sha256": "abc"}, build)
    np.testing.assert_array_equal(first["table"], second["table"])
    assert len(calls) == 1
    files.cached_array("toy", {"sha256": "other"}, build)
    assert len(calls) == 2


# ---- the staged real files -------------------------------------------------------------------

@pytest.mark.skipif(not SHARED.is_dir(), reason=f"staged data not found at {SHARED}")
@pytest.mark.parametrize("name, shape", [("wine", (178, 13)), ("airfoil", (1503, 6)), ("adult", (48842, 108))])
def test_staged_uci_files(name, shape):
    table = uci.load_table(name, data_dir=SHARED)
    assert table.shape == shape
    data = uci.uci(name, "minmax", np.random.default_rng(0), data_dir=SHARED)
    assert np.linalg.norm(data.X, axis=1).max() == pytest.approx(1.0)
    assert data.target == uci.TARGETS[name]


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"staged data not found at {SHARED}")
def test_staged_wine_matches_sklearn():
    from sklearn.datasets import load_wine
    np.testing.assert_array_equal(uci.load_table("wine", data_dir=SHARED), load_wine().data)


# ---- mechanisms ------------------------------------------------------------------------------

def test_amin_laplace_noise_scale():
    rng = np.random.default_rng(1)
    X = unit_rows(rng, 300, 12)
    problem = CovProblem.from_rows(X)
    eps = 0.7
    noise = []
    for _ in range(30):
        noisy, accountant = release("laplace", problem, PureDP(eps), rng, clamp=False)
        noise.extend((noisy - problem.sigma)[np.triu_indices(12)])
    scale = 2 * 12 / (eps * 300)
    assert stats.kstest(noise, "laplace", args=(0, scale)).pvalue > 1e-3
    assert stats.kstest(noise, "laplace", args=(0, scale / 2)).pvalue < 1e-6
    np.testing.assert_array_equal(noisy, noisy.T)
    assert accountant.spent == PureDP(eps)


@pytest.mark.parametrize("name", ["ad", "itu", "kt", "laplace", "gauss_approx"])
def test_released_eigenvalues_rounded_into_0_n(name):
    """Amin §4: eigenvalues of C^ rounded into [0, n], i.e. those of Sigma^ into [0, 1]."""
    rng = np.random.default_rng(2)
    problem = CovProblem.from_rows(unit_rows(rng, 40, 6))
    budget = ApproxDP(0.05, 1e-6) if name == "gauss_approx" else PureDP(0.05)
    estimate, _ = release(name, problem, budget, rng)
    values = np.linalg.eigvalsh(estimate)
    assert values.min() >= -1e-12 and values.max() <= 1 + 1e-12


def test_ridge_from_sigma_matches_sklearn():
    from sklearn.linear_model import Ridge
    rng = np.random.default_rng(3)
    X = unit_rows(rng, 200, 5)
    task = RidgeTask(target=2, alpha=0.01)
    w = task.weights(X.T @ X / len(X))
    A, y = np.delete(X, 2, axis=1), X[:, 2]
    # (1/2n)||y - Aw||^2 + alpha ||w||^2  <=>  ||y - Aw||^2 + 2 n alpha ||w||^2
    model = Ridge(alpha=2 * len(X) * task.alpha, fit_intercept=False).fit(A, y)
    np.testing.assert_allclose(w, model.coef_, rtol=1e-10, atol=1e-12)


def test_excess_risk_is_zero_at_the_exact_covariance_and_positive_elsewhere():
    rng = np.random.default_rng(4)
    sigma = np.cov(unit_rows(rng, 100, 4).T, bias=True)
    task = RidgeTask(0, 0.05)
    assert evaluate("reg", sigma, sigma, sigma, task) == pytest.approx(0, abs=1e-15)
    assert evaluate("reg_w", sigma, sigma, sigma, task) == pytest.approx(0, abs=1e-15)
    for _ in range(5):
        noisy = sigma + 0.01 * rng.standard_normal((4, 4))
        assert evaluate("reg", (noisy + noisy.T) / 2, sigma, sigma, task) > 0
    release_ = RidgeRelease(np.zeros(3))
    assert math.isnan(evaluate("fro", release_, sigma, sigma, task))
    assert evaluate("reg", release_, sigma, sigma, task) > 0
    with pytest.raises(ValueError, match="ridge task"):
        evaluate("reg", sigma, sigma, sigma, None)
    with pytest.raises(ValueError, match="alpha"):
        RidgeTask(0, 0.0)


@pytest.mark.parametrize("alpha", [0.001, 0.1])
def test_output_perturbation_sensitivity_holds_on_neighbours(alpha):
    """||w(X) - w(X')|| <= Delta on random and adversarial replace-one neighbours."""
    rng = np.random.default_rng(5)
    n, d = 60, 4
    task = RidgeTask(d - 1, alpha)
    bound = output_perturbation_sensitivity(alpha, n)
    worst = 0.0
    for trial in range(200):
        X = unit_rows(rng, n, d)
        Y = X.copy()
        if trial % 2:
            Y[0] = -X[0] / np.linalg.norm(X[0])  # far side of the sphere
        else:
            v = rng.standard_normal(d)
            Y[0] = v / np.linalg.norm(v)
        gap = np.linalg.norm(task.weights(X.T @ X / n) - task.weights(Y.T @ Y / n))
        worst = max(worst, gap)
    assert worst <= bound


def test_output_perturbation_noise_norm_and_budget():
    rng = np.random.default_rng(6)
    X = unit_rows(rng, 500, 5)
    task = RidgeTask(4, 0.05)
    problem = CovProblem.from_rows(X, ridge=task)
    w = task.weights(problem.sigma)
    eps = 0.5
    norms = []
    for _ in range(400):
        accountant = Accountant(PureDP(eps))
        norms.append(np.linalg.norm(output_perturbation(problem, accountant, rng).weights - w))
    assert accountant.spent == PureDP(eps)
    scale = output_perturbation_sensitivity(0.05, 500) / eps
    assert stats.kstest(norms, "gamma", args=(4, 0, scale)).pvalue > 1e-3
    with pytest.raises(ValueError, match="ridge task"):
        output_perturbation(CovProblem.from_rows(X), Accountant(PureDP(eps)), rng)


# ---- experiments -----------------------------------------------------------------------------

@pytest.mark.skipif(not SHARED.is_dir(), reason=f"staged data not found at {SHARED}")
def test_variants_run_at_their_own_budget(experiment):
    exp = experiment("amin_fig1b", "trials=1")
    assert exp.budget("g16", {"eps": 0.5}) == ApproxDP(0.5, 1e-16)
    assert exp.budget("ad", {"eps": 0.5}) == PureDP(0.5)
    run_experiment(exp)
    frame = pd.read_csv(Path(exp.output_dir) / "results.csv")
    g3 = frame[frame.mechanism == "g3"]
    assert set(g3.label) == {"G-3"} and all("1e-03" in b or "0.001" in b for b in g3.budget)
    assert set(frame[frame.mechanism == "ad"].spent.str.contains("ε-DP|eps", regex=True))


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"staged data not found at {SHARED}")
def test_regression_experiment_smoke(experiment):
    exp = experiment("amin_regression", "trials=1")
    draw(exp, run_experiment(exp))
    summary = pd.read_csv(Path(exp.output_dir) / "summary.csv")
    assert (summary.err_reg_mean >= 0).all() and summary.err_reg_w_mean.notna().all()
    assert (Path(exp.output_dir) / "figure_reg_w.png").exists()


def test_bad_variant_and_ridge_configs(experiment):
    with pytest.raises(ConfigError, match="variant 'g16'.*budget"):
        experiment("amin_fig1b", "++variants.g16.budget.sigma=1")
    with pytest.raises(ConfigError, match="unknown mechanism"):
        experiment("amin_fig1b", "variants.g16.mechanism=nope")
    with pytest.raises(ConfigError, match="ridge_alpha"):
        experiment("amin_regression", "ridge_alpha=null")
    with pytest.raises(ConfigError, match="ridge_alpha must be"):
        experiment("amin_regression", "ridge_alpha=-1")
    with pytest.raises(ConfigError, match="delta"):
        experiment("amin_fig1b", "variants.g3.budget.delta=2")
