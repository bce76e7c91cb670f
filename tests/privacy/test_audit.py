"""Privacy audits (issue #9): empirical lower bounds on epsilon must not exceed the claimed guarantee,
and must exceed it for deliberately broken mechanisms (the audit has power). Method: tests/privacy/audit.py.

Fast tests: every registered mechanism once (neighbours e1 -> e2), T runs per dataset.
Slow tests (pytest -m slow): more runs, a second neighbouring pair (e1 -> 0) and stable_gsampling.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from audit import (ALPHA, SLOW_MECHANISMS, audit_mechanism, audit_run, covariance_neighbours, cp_lower, cp_upper,
                   epsilon_lower_bound)
from mechanisms import gaussian, laplace
from mechanisms.privacy import Accountant, PureDP, ZCDP
from mechanisms.registry import MECHANISMS

T_CHEAP = 3000  # runs per dataset, fast tests
T_ITERATIVE = 1000  # the iterative / adaptive mechanisms (about 1 ms a run)
ALL = list(MECHANISMS)
COVARIANCE_ONLY = [m for m in ALL if m not in ("output_perturbation", "stable_gsampling")]


def _check(audit):
    eps_claim, delta = audit.claim
    r = audit.result
    assert r.eps_lb <= eps_claim, (
        f"{audit.name}: audited eps >= {r.eps_lb:.3f} (confidence {1 - ALPHA:g}) exceeds the claimed "
        f"({eps_claim:.3g}, {delta:g})-DP at {audit.budget}; event {r.event}, counts {r.counts}, "
        f"neighbours {audit.neighbours}")


# --- The statistics of the audit ----------------------------------------------------------------------


def test_clopper_pearson_bounds():
    from scipy.stats import binom
    # Exact one-sided coverage: at the bound, the observed count is exactly as extreme as level allows.
    assert binom.sf(29, 100, cp_lower(30, 100, 0.025)) == pytest.approx(0.025, rel=1e-6)
    assert binom.cdf(30, 100, cp_upper(30, 100, 0.025)) == pytest.approx(0.025, rel=1e-6)
    assert cp_lower(0, 50, 0.025) == 0.0 and cp_upper(50, 50, 0.025) == 1.0
    assert cp_upper(0, 1000, 0.025) == pytest.approx(1 - 0.025 ** (1 / 1000))


def test_identical_distributions_give_no_privacy_loss():
    rng = np.random.default_rng(1)
    s = rng.standard_normal(20000)
    assert epsilon_lower_bound(s[:10000], s[10000:], 0.0).eps_lb == 0.0
    constant = np.zeros(1000)  # a point mass (the zero mechanism)
    assert epsilon_lower_bound(constant, constant, 0.0).eps_lb == 0.0


def test_bound_recovers_a_known_laplace_shift():
    """Lap(1) vs Lap(1) + 1 is exactly 1-DP: the bound is valid and, with 20000 runs, not far below."""
    rng = np.random.default_rng(2)
    r = epsilon_lower_bound(rng.laplace(size=20000), 1 + rng.laplace(size=20000), 0.0)
    assert 0.6 < r.eps_lb <= 1.0


# --- Every registered mechanism ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_audit_does_not_exceed_claim(name):
    if name == "stable_gsampling":
        pytest.skip("stable_gsampling needs n ~ 3e5 rows (InsufficientData below): audited in the slow test")
    T = T_ITERATIVE if name in SLOW_MECHANISMS else T_CHEAP
    audit = audit_mechanism(name, T, seed=hash_seed(name))
    _check(audit)


def test_every_mechanism_is_audited():
    """Nothing registered escapes the parametrisation above (new mechanisms are audited automatically);
    the cheap Gaussian ones, whose analysis is tight, give clearly positive bounds."""
    assert set(ALL) == set(MECHANISMS)
    audit = audit_mechanism("gauss", T_CHEAP, seed=hash_seed("gauss"))
    assert audit.result.eps_lb > 0.5


@pytest.mark.slow
@pytest.mark.parametrize("pair", ["swap", "remove"])
@pytest.mark.parametrize("name", COVARIANCE_ONLY)
def test_audit_does_not_exceed_claim_slow(name, pair):
    T = 5000 if name in SLOW_MECHANISMS else 20000
    _check(audit_mechanism(name, T, seed=hash_seed(name) + 1, pair=pair))


@pytest.mark.slow
def test_audit_output_perturbation_slow():
    _check(audit_mechanism("output_perturbation", 20000, seed=hash_seed("output_perturbation") + 1))


@pytest.mark.slow
def test_audit_stable_gsampling_slow():
    """Registered and run through ``release`` on raw rows (n = 3e5, d = 2). The PTR test must pass on
    these safe Gaussian data, or the audit would only see the data-independent zero matrix."""
    from audit import neighbours_for, registry_runner, sample_statistics
    from mechanisms.privacy import ApproxDP
    budget = ApproxDP(1.0, 1e-5)
    nb = neighbours_for("stable_gsampling")
    s0, s1 = sample_statistics(registry_runner("stable_gsampling", budget, nb.options), nb, 10, seed=3)
    assert np.all(s0 != 0) and np.all(s1 != 0), "PTR failed: nothing released"
    _check(audit_mechanism("stable_gsampling", 400, seed=hash_seed("stable_gsampling")))


# --- Broken mechanisms: the audit must catch them ---------------------------------------------------------


def broken_gauss(problem, rng, *, budget: ZCDP, noise_factor: float):
    """GaussCov with its noise scale multiplied by noise_factor, built from the real noise function:
    the scale is 1/sqrt(rho), so noise_factor 1/2 is GaussCov at 4 rho claimed as rho."""
    actual = budget.scaled(1 / noise_factor**2)
    return gaussian.gauss_noisy(problem.sigma, problem.radius, problem.n, actual, Accountant(actual), rng)


def broken_lap(problem, rng, *, budget: PureDP, noise_factor: float):
    """LapCov with its noise scale multiplied by noise_factor (LapCov at eps / noise_factor)."""
    actual = budget.scaled(1 / noise_factor)
    return laplace.lap_noisy(problem.sigma, problem.radius, problem.n, actual, Accountant(actual), rng)


def test_audit_catches_gausscov_with_halved_noise():
    """Claimed 0.5-zCDP, i.e. (3.53, 0.01)-DP; actually 2-zCDP (Gaussian, mu = 2). The delta of the
    conversion is 0.01 here (every delta is a valid conversion; a large one gives the audit power)."""
    budget = ZCDP(0.5)
    claim, result = audit_run(lambda p, rng: broken_gauss(p, rng, budget=budget, noise_factor=0.5),
                              covariance_neighbours("swap"), budget, T=20000, seed=11, delta=0.01)
    assert claim[0] == pytest.approx(0.5 + 2 * math.sqrt(0.5 * math.log(100)))
    assert result.eps_lb > claim[0], f"broken GaussCov not detected: {result}"
    # ... while the real GaussCov at the same budget, T and seed passes.
    claim_ok, ok = audit_run(lambda p, rng: broken_gauss(p, rng, budget=budget, noise_factor=1.0),
                             covariance_neighbours("swap"), budget, T=20000, seed=11, delta=0.01)
    assert ok.eps_lb <= claim_ok[0]


def test_audit_catches_lapcov_with_quartered_noise():
    """Claimed 1-DP; the noise of LapCov at eps = 4 (the e1 -> e2 change moves two entries by 1/n
    against an l1 calibration of sqrt(2) d / n: true loss 4 * 2 / (2 sqrt(2)) = 2.83)."""
    budget = PureDP(1.0)
    claim, result = audit_run(lambda p, rng: broken_lap(p, rng, budget=budget, noise_factor=0.25),
                              covariance_neighbours("swap"), budget, T=5000, seed=12)
    assert claim == (1.0, 0.0)
    assert result.eps_lb > 1.0, f"broken LapCov not detected: {result}"


def hash_seed(name: str) -> int:
    """A fixed per-mechanism seed (Python's hash() of str is salted per process: not used)."""
    return int.from_bytes(name.encode(), "little") % (2**32)


def test_markdown_table():
    from audit import markdown_table
    rows = [[audit_mechanism("lap", 50, seed=0, pair=p) for p in ("swap", "remove")],
            [audit_mechanism("output_perturbation", 50, seed=0)]]
    table = markdown_table(rows).splitlines()
    assert len(table) == 4 and table[2].startswith("| lap | PureDP | 1-DP | (1, 0) |")
    assert "ridge" in table[3]
