"""The predictions the mechanisms declare (mechanisms/predictions.py, read through experiments/theory.py)
against Monte-Carlo on small cases, through the mechanisms themselves (release with clamp=False), so a
change in a mechanism's calibration breaks the overlay test; and every fitted bound refitted."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcov.data.synthetic import synthetic_zipf
from dpcov.experiments import theory
from dpcov.experiments.config import budget_from_params
from dpcov.figures.bounds import worst_case_bounds
from dpcov.mechanisms import CovProblem, release
from dpcov.mechanisms import predictions
from dpcov.mechanisms.predictions import Bound, Facts
from dpcov.mechanisms.registry import MECHANISMS, get_mechanism
from dpcov.mechanisms.gaussian import symmetric_gaussian
from dpcov.mechanisms.laplace import symmetric_laplace
from dpcov.mechanisms.stable import gaussian_sampling

ROOT = Path(__file__).resolve().parents[1]


def mc_mean(draw, trials, seed=0):
    rng = np.random.default_rng(seed)
    values = np.array([draw(rng) for _ in range(trials)])
    return values.mean(), values.std(ddof=1) / math.sqrt(trials)


@pytest.mark.parametrize("d", [1, 2, 3, 7, 20])
def test_expected_frobenius_of_the_noise_matrices(d):
    for exact, sampler in ((predictions.expected_frobenius_sgw, symmetric_gaussian),
                           (predictions.expected_frobenius_slw, symmetric_laplace)):
        mean, sem = mc_mean(lambda rng: np.linalg.norm(sampler(d, rng)), 20000, seed=d)
        assert abs(exact(d) - mean) < 4 * sem, (exact.__name__, d, exact(d), mean, sem)


def test_closed_forms_at_the_edges():
    assert predictions.expected_frobenius_sgw(1) == pytest.approx(math.sqrt(2 / math.pi), rel=1e-7)  # E|N(0,1)|
    assert predictions.expected_frobenius_slw(1) == pytest.approx(1.0, rel=1e-7)  # E|Lap(1)|
    for d in (100, 800):  # Jensen: E||W||_F < sqrt(E||W||_F^2), and the second-order expansion
        assert predictions.expected_frobenius_sgw(d) == pytest.approx(d * (1 - 1 / (2 * d**2)), rel=1e-5)
        assert predictions.expected_frobenius_slw(d) < math.sqrt(2) * d
        assert predictions.expected_frobenius_slw(d) == pytest.approx(math.sqrt(2) * d * (1 - 1.25 / d**2), rel=1e-5)
    with pytest.raises(ValueError, match="d must be"):
        predictions.expected_frobenius_sgw(0)


@pytest.fixture(scope="module")
def small_problem():
    X = synthetic_zipf(200, 6, 2, 3.0, np.random.default_rng(1))
    return CovProblem.from_rows(X)


@pytest.mark.parametrize("mechanism, budget", [
    ("gauss", {"rho": 0.5}), ("lap", {"eps": 1.0}), ("laplace", {"eps": 1.0}),
    ("gauss", {"eps": 1.0, "delta": 1e-6}),
])
def test_exact_predictions_match_the_mechanism_before_the_clamp(small_problem, mechanism, budget):
    p = small_problem
    params = {"n": p.n, "d": p.d, **budget}
    target = budget_from_params(params)

    def error(rng):
        estimate, _ = release(mechanism, p, target, rng, clamp=False)
        return np.linalg.norm(estimate - p.sigma)

    mean, sem = mc_mean(error, 3000)
    predicted = theory.predicted_error(mechanism, params)
    assert abs(predicted - mean) < 4 * sem + 1e-12, (mechanism, predicted, mean, sem)
    # the clamp is a projection onto a convex set holding Sigma: it can only lower the error
    clamped, _ = mc_mean(lambda rng: np.linalg.norm(release(mechanism, p, target, rng)[0] - p.sigma), 300)
    assert clamped <= predicted * 1.02


def test_gaussian_eps_delta_is_at_most_its_prediction(small_problem):
    """G-x keeps the positive part of the spectrum itself (a projection onto the PSD cone, which holds
    Sigma): its error is below E||s W||_F, and close to it when the noise is small."""
    p = small_problem
    params = {"n": p.n, "d": p.d, "eps": 1.0, "delta": 1e-6}
    target = budget_from_params(params)
    mean, sem = mc_mean(lambda rng: np.linalg.norm(release("gauss_approx", p, target, rng, clamp=False)[0]
                                                   - p.sigma), 1000)
    predicted = theory.predicted_error("gauss_approx", params)
    assert 0.4 * predicted < mean < predicted


def test_relative_metric_and_zero(small_problem):
    p = small_problem
    values = np.linalg.eigvalsh(p.sigma)
    params = {"n": p.n, "d": p.d, "rho": 0.5, "eigenvalues": values}
    assert theory.predicted_error("zero", params) == pytest.approx(np.linalg.norm(p.sigma))
    assert theory.predicted_error("zero", params, "fro_rel") == pytest.approx(1.0)
    assert theory.predicted_error("gauss", params, "fro_rel") == pytest.approx(
        theory.predicted_error("gauss", params) / np.linalg.norm(p.sigma))
    assert theory.predicted_error("gauss", {"n": p.n, "d": p.d, "rho": 0.5}, "fro_rel") is None
    assert theory.predicted_error("projection", params) is None  # nothing declared: no overlay
    with pytest.raises(ValueError, match="metric"):
        theory.predicted_error("gauss", params, "spectral")
    with pytest.raises(ValueError, match="needs 'n'"):
        theory.predicted_error("gauss", {"d": 3, "rho": 1})


@pytest.mark.parametrize("d, m", [(3, 50), (5, 400)])
def test_gaussian_sampling_rms_mahalanobis_error(d, m):
    """(1/m) sum y y^T, y ~ N(0, Sigma): the whitened error has E||S - I||_F^2 = d(d+1)/m exactly,
    for any Sigma (here an ill-conditioned one)."""
    rng0 = np.random.default_rng(7)
    A = rng0.standard_normal((d, d))
    sigma = A @ A.T + 0.01 * np.eye(d)
    values, vectors = np.linalg.eigh(sigma)
    whiten = vectors @ np.diag(values**-0.5) @ vectors.T

    def squared(rng):
        S = whiten @ gaussian_sampling(sigma, m, rng) @ whiten
        return np.sum((S - np.eye(d))**2)

    mean, sem = mc_mean(squared, 4000)
    assert abs(mean - d * (d + 1) / m) < 4 * sem
    rms = math.sqrt(d * (d + 1) / m)
    # the overlay uses the m the mechanism picks
    params = {"n": 10**6, "d": d, "eps": 1.0, "delta": 1e-6}
    from dpcov.mechanisms.stable import stable_parameters
    m_used = stable_parameters(params["n"], d, budget_from_params(params)).m
    assert m_used >= 1
    assert theory.predicted_error("stable_gsampling", params, "mahalanobis") == pytest.approx(
        math.sqrt(d * (d + 1) / m_used))
    assert theory.predicted_error("stable_gsampling", {**params, "n": 50}, "mahalanobis") is None
    assert theory.predicted_error("zero", params, "mahalanobis") == pytest.approx(math.sqrt(d))
    assert rms > 0


def test_zipf_trace_matches_the_generator():
    for n, N in [(50000, 1), (50000, 4), (1000, 8)]:
        X = synthetic_zipf(n, 5, N, 3.0, np.random.default_rng(0))
        assert theory.zipf_trace(n, N, 3.0) == pytest.approx(np.mean(np.sum(X**2, axis=1)), rel=1e-9)
    assert theory.zipf_trace(50000, 4, 3.0) == pytest.approx(0.041, abs=5e-4)  # GUIDE.md's table


def test_separate_bound_holds_with_the_theorem_constant_and_scales(small_problem):
    """Dong Thm 1's leading order: the fitted constant is below the theorem's 21.25 sqrt 2 (the
    theorem is a high-probability upper bound), and the bound has the theorem's scaling."""
    bound = get_mechanism("separate").predict
    assert 0 < bound.constant < 21.25 * math.sqrt(2)
    base = {"n": 10**4, "d": 100, "rho": 0.1, "trace": 0.5}

    def terms(params):
        return bound.terms(Facts.from_params(params), theory.line_budget("separate", params))

    a, b = terms(base)
    a4, b4 = terms({**base, "n": 4 * 10**4})
    assert a4 == pytest.approx(a / 2) and b4 == pytest.approx(b / 4)
    a16, _ = terms({**base, "d": 1600})
    assert a16 == pytest.approx(2 * a)


def test_fit_constant_recovers_a_known_constant():
    rng = np.random.default_rng(0)
    terms = [(a, b) for a, b in rng.uniform(0.1, 1, (30, 2))]
    measured = [2.5 * a + b for a, b in terms]
    assert predictions.fit_constant(measured, terms) == pytest.approx(2.5, rel=1e-4)


BOUNDS = {}  # each declared Bound once, by the first mechanism declaring it
for _name, _m in MECHANISMS.items():
    if isinstance(_m.predict, Bound) and all(b is not _m.predict for b in BOUNDS.values()):
        BOUNDS[_name] = _m.predict


def fitted_from_results(bound: Bound) -> tuple[float, np.ndarray]:
    """Refit ``bound``'s constant from the committed summaries and spectra it was fitted on, over the
    lines of every mechanism declaring it; also the measured / fitted-bound ratios."""
    measured, terms, caps = [], [], []
    for target in bound.fitted_on:
        summary = pd.read_csv(ROOT / "results" / target / "summary.csv")
        spectra = theory.read_spectra(ROOT / "results" / target)
        for row in summary.to_dict("records"):
            if row["mechanism"] not in MECHANISMS or MECHANISMS[row["mechanism"]].predict is not bound:
                continue
            params = theory.row_params(row, spectra)
            facts = Facts.from_params(params)
            metric = "fro_rel" if "err_fro_rel_mean" in row else "fro"
            scale = 1.0 if metric == "fro" else facts.fro_sigma
            measured.append(row[f"err_{metric}_mean"] * scale)
            terms.append(bound.terms(facts, theory.line_budget(row["mechanism"], params)))
            caps.append(predictions.clamp_cap(facts))
    assert measured, f"no committed line of {bound.citation} in {bound.fitted_on}"
    c = predictions.fit_constant(measured, terms, caps)
    values = [predictions.bound_value(t, c, cap) for t, cap in zip(terms, caps)]
    return c, np.asarray(measured) / np.asarray(values)


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_fitted_constants_are_not_stale(name):
    bound = BOUNDS[name]
    assert bound.constant == pytest.approx(fitted_from_results(bound)[0], rel=0.01)


def test_comparison_lines_up_measured_and_predicted():
    predicted = theory.predicted_error("gauss", {"n": 1000, "d": 10, "rho": 0.1})
    summary = pd.DataFrame([
        {"mechanism": "gauss", "label": "GaussCov", "dataset": "x", "n": 1000, "d": 10, "rho": 0.1,
         "err_fro_mean": predicted / 2},
        {"mechanism": "adaptive", "label": "AdaptiveCov", "dataset": "x", "n": 1000, "d": 10, "rho": 0.1,
         "err_fro_mean": 1.0},
        {"mechanism": "g", "label": "G", "dataset": "x", "n": 1000, "d": 10, "eps": 1.0, "err_fro_mean": 1.0},
    ])
    table = theory.comparison(summary, "fro", {"g": {"mechanism": "gauss_approx", "budget": {"delta": 1e-6}}})
    assert list(table.line) == ["GaussCov", "G"]  # no closed form for AdaptiveCov
    assert table.ratio.iloc[0] == pytest.approx(0.5)
    assert table.predicted.iloc[1] == pytest.approx(theory.predicted_error(
        "gauss_approx", {"n": 1000, "d": 10, "eps": 1.0, "delta": 1e-6}))


def test_worst_case_bounds_are_ordered_as_in_dong_fig1():
    d = np.array([10.0, 1e3, 1e5])
    curves = list(worst_case_bounds(d, 1e4).values())
    gauss, emcov, separate, lower = curves
    assert np.all(lower <= separate) and np.all(separate <= emcov) and np.all(curves[0] <= 1)
    assert gauss[0] < separate[0] and gauss[2] > separate[2]  # GaussCov wins for small d only
