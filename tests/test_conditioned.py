"""The conditioned-proposal sampler of Algorithm 1's projection chain (mechanisms/conditioned.py): the
same distribution as the pseudocode (an eigh and Kent's sampler per step), in the flat, concentrated
and degenerate cases and through every fallback (a phase ended early, a step abandoned after CAP
proposals, a first step drawn by Kent's sampler)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from pseudocode import CASES, KT_SUBTRACT, Z_LIMIT
from pseudocode import max_z as max_z_against

import dpcov.mechanisms.conditioned as conditioned
from dpcov.mechanisms.emcov import sample_eigenvectors


def max_z(C, etas, case, trials=1600, **options):
    """Largest |z| of the sampler's moments (``trials`` releases, seed 3) against the pseudocode's stored
    ones (tests/pseudocode.py: 30000 releases; 1600 here have the power of 3000 against 3000 drawn anew)."""
    kind = "kt" if "subtract" in options else "projection"
    return max_z_against(lambda rng: sample_eigenvectors(C, etas, rng, **options), f"{kind}: {case}", trials, 3)


def short_phases(monkeypatch):
    """Phases of ceil(q / 3) steps even at d = 5 (MIN_PHASE = 1): fresh bases within a chain."""
    monkeypatch.setattr(conditioned, "MIN_PHASE", 1)


@pytest.mark.parametrize("phases", ["long", "short"])
@pytest.mark.parametrize("case", CASES)
def test_same_distribution_as_the_pseudocode(case, phases, monkeypatch):
    if phases == "short":
        short_phases(monkeypatch)
    C, etas = CASES[case]
    assert max_z(C, etas, case) < Z_LIMIT


@pytest.mark.parametrize("cap", [1, 2])
def test_every_fallback_keeps_the_distribution(monkeypatch, cap):
    """CAP = 1 or 2 abandons steps, ends phases early and sends first steps to Kent's sampler at
    almost every step of the concentrated case."""
    monkeypatch.setattr(conditioned, "CAP", cap)
    monkeypatch.setattr(conditioned, "_phase", conditioned._phase.py_func)  # the compiled one has CAP frozen
    C, etas = CASES["concentrated, adaptive etas"]
    assert max_z(C, etas, "concentrated, adaptive etas", trials=1050) < Z_LIMIT  # the power of 2000 against 2000


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("phases", ["long", "short"])
def test_kapralov_talwar_same_distribution_as_the_pseudocode(case, phases, monkeypatch):
    """Positive, negative and zero subtractions (noisy eigenvalues can be any of them: KT_SUBTRACT)."""
    if phases == "short":
        short_phases(monkeypatch)
    C, etas = CASES[case]
    assert max_z(C, etas, case, subtract=KT_SUBTRACT[case]) < Z_LIMIT


def test_kapralov_talwar_fallbacks_keep_the_distribution(monkeypatch):
    monkeypatch.setattr(conditioned, "CAP", 1)
    monkeypatch.setattr(conditioned, "_phase_subtract", conditioned._phase_subtract.py_func)
    case = "concentrated, adaptive etas"
    C, etas = CASES[case]
    assert max_z(C, etas, case, trials=1050, subtract=KT_SUBTRACT[case]) < Z_LIMIT


def test_thetas_orthonormal_and_reproducible_at_d_300():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 300)) * (1.0 / np.arange(1, 301)) ** 0.7
    C = X.T @ X
    C *= 50000 / np.trace(C)
    etas = np.full(300, math.sqrt(0.1 / 300))
    thetas = sample_eigenvectors(C, etas, np.random.default_rng(1))
    assert np.abs(thetas.T @ thetas - np.eye(300)).max() < 1e-10
    assert np.array_equal(thetas, sample_eigenvectors(C, etas, np.random.default_rng(1)))
    top = sample_eigenvectors(C, etas[:20], np.random.default_rng(1), steps=20)
    assert np.allclose(top, thetas[:, :20], atol=1e-12)  # a top-k release is the full run stopped early


def test_kent_gamma_keeps_the_kriging_conditioned():
    mu = np.array([0.0, 1.0, 1e6])
    for eta in (0.0, 1e-6, 1.0, 1e3):
        gamma = conditioned.kent_gamma(mu, eta)
        assert gamma > mu[-1] and (gamma - mu[0]) / (gamma - mu[-1]) <= conditioned.CONDITION * (1 + 1e-12)


def test_method_is_checked():
    C = np.eye(3)
    with pytest.raises(ValueError, match="method"):
        sample_eigenvectors(C, np.ones(3), np.random.default_rng(0), method="fast")
