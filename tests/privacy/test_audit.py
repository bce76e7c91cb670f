"""Privacy audits (issues #9, #16): the audited lower bounds never exceed a line's claim, the white-box
noise fits match the papers' formulas, and the audits catch under-noised copies (they have power).
Method and registry: audits/lines.py (the search audit: audits/blackbox.py, tests/privacy/test_blackbox.py);
the power table: scripts/audit_power.py.

Fast suite: every audit line (registered mechanism or configured variant) once, black-box within its
claim on its first neighbour pair; its white-box fit matches the formula and catches noise x 0.5;
the black-box audit itself catches x 0.5 for the Gaussian lines.
Slow (pytest -m slow): every pair at larger T, the white-box audit catches x 0.67 for every line, the
black-box one for the Gaussian lines whose analysis is tight, and stable_gsampling's black-box audit
(its white-box fit, on n = 3e5 rows, is in the fast suite: Alg 3 runs once per dataset, memoised).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpcov.audits import lines as A
from dpcov.mechanisms.privacy import ApproxDP, PureDP, ZCDP
from dpcov.mechanisms.registry import MECHANISMS

# Lines labelled "as published" are deliberately not private at their claim: reported in the power
# table (scripts/audit_power.py), not asserted private here.
LINES = [line.line for line in A.audit_lines() if not line.as_published]
FAST_LINES = [name for name in LINES if not A.slow_line(A.audit_line(name))]
NOISY_LINES = [name for name in LINES if A.audit_line(name).calibration is not None]
HEAVY = {"emcov", "emcov_pure", "itu", "ad", "kt"}  # ~1 ms per release


def _T(line: A.AuditLine, cheap: int, heavy: int) -> int:
    return heavy if line.mechanism in HEAVY else cheap


# --- The statistics of the audit ----------------------------------------------------------------------


def test_clopper_pearson_bounds():
    from scipy.stats import binom
    assert binom.sf(29, 100, A.cp_lower(30, 100, 0.025)) == pytest.approx(0.025, rel=1e-6)
    assert binom.cdf(30, 100, A.cp_upper(30, 100, 0.025)) == pytest.approx(0.025, rel=1e-6)
    assert A.cp_lower(0, 50, 0.025) == 0.0 and A.cp_upper(50, 50, 0.025) == 1.0
    assert A.cp_upper(0, 1000, 0.025) == pytest.approx(1 - 0.025 ** (1 / 1000))


def test_identical_distributions_give_no_privacy_loss():
    rng = np.random.default_rng(1)
    s = rng.standard_normal(20000)
    assert A.epsilon_lower_bound(s[:10000], s[10000:], 0.0).value == 0.0
    assert A.mu_lower_bound(s[:10000], s[10000:]).value < 0.1
    constant = np.zeros(1000)  # a point mass (the zero mechanism)
    assert A.epsilon_lower_bound(constant, constant, 0.0).value == 0.0
    assert A.mu_lower_bound(constant, constant).value == 0.0


def test_bounds_recover_known_shifts():
    """Lap(1) vs Lap(1) + 1 is exactly 1-DP; N(0, 1) vs N(1.5, 1) exactly 1.5-GDP: the bounds are valid
    and, with 20000 runs, close."""
    rng = np.random.default_rng(2)
    eps = A.epsilon_lower_bound(rng.laplace(size=20000), 1 + rng.laplace(size=20000), 0.0).value
    assert 0.6 < eps <= 1.0
    mu = A.mu_lower_bound(rng.standard_normal(20000), 1.5 + rng.standard_normal(20000)).value
    assert 1.35 < mu <= 1.5


def test_gaussian_profile():
    """delta_mu(eps) of mu-GDP and its inverse; rho-zCDP Gaussian <=> sqrt(2 rho)-GDP."""
    mu = A.gaussian_mu(1.0, 1e-5)
    assert A.gaussian_delta(mu, 1.0) == pytest.approx(1e-5, rel=1e-9)
    assert A.claimed_mu(ZCDP(0.5)) == pytest.approx(1.0)
    # the analytic Gaussian at (eps, delta) has exactly this mu (dp-accounting's calibration)
    import dp_accounting
    assert 1 / dp_accounting.get_sigma_gaussian(1.0, 1e-5) == pytest.approx(mu, rel=1e-6)
    # zCDP claims of non-Gaussian mechanisms: the Renyi conversion, tighter than ours
    assert A.zcdp_epsilon(0.5, 1e-3) < ZCDP(0.5).to_approx_dp(1e-3).eps


@pytest.mark.parametrize("c", [0.8, 0.67, 0.5])
def test_undernoised_budgets_scale_the_canonical_noise(c):
    import dp_accounting
    assert A.undernoised(ZCDP(0.5), c).rho == pytest.approx(0.5 / c**2)  # sd ~ 1/sqrt(rho)
    assert A.undernoised(PureDP(1.0), c).eps == pytest.approx(1 / c)  # Laplace scale ~ 1/eps
    for budget in (ApproxDP(1.0, 1e-5), ApproxDP(1.0, 1e-16), ApproxDP(0.5, 1e-3)):
        low = A.undernoised(budget, c)
        assert low.eps == budget.eps
        ratio = dp_accounting.get_sigma_gaussian(low.eps, low.delta) / dp_accounting.get_sigma_gaussian(
            budget.eps, budget.delta)
        assert ratio == pytest.approx(c, rel=1e-6)
    assert A.undernoised(ZCDP(0.5), 1.0) == ZCDP(0.5)
    # the generic noise-scale copy (COPY_SCALES) reproduces the canonical rule for the analytic Gaussian
    budget = ApproxDP(1.0, 1e-5)
    generic = A.scaled_budget(lambda b: 1 / A.gaussian_mu(b.eps, b.delta), budget, c)
    assert generic.eps == budget.eps and generic.delta == pytest.approx(A.undernoised(budget, c).delta, rel=1e-6)


# --- The registry is data: every mechanism and every configured variant -----------------------------------


def test_every_mechanism_and_variant_has_an_audit_line():
    mechanisms = {line.mechanism for line in A.audit_lines() if not line.as_published}
    assert mechanisms == set(MECHANISMS)
    for variant, label in (("g16", "G-16"), ("g10", "G-10"), ("g3", "G-3"), ("separate10", None),
                           ("adaptive10", None)):
        assert A.audit_line(variant).source.endswith("variants")
        assert label is None or A.audit_line(variant).label == label
    assert len(set(LINES)) == len(LINES)
    # every line that adds noise has a white-box fit; only zero (no noise), the private pipelines (a private
    # radius, then any mechanism), AdaSSP (a model from three composed releases and a penalty read from them) and
    # TukeyEM (a point drawn over boxes the data place) have no one noise scale to fit: audited black-box
    # (tests/test_adassp.py, tests/test_tukey.py)
    assert {line.mechanism for line in A.audit_lines() if line.calibration is None} == \
        {"zero", "pipeline", "pipeline_pure", "adassp", "tukey"}


def test_neighbour_pairs_move_what_they_say():
    values = A.neighbours("swap_values", 1000).problems
    assert np.allclose(values[1].eigenvalues - values[0].eigenvalues, [1e-3, -1e-3])  # l2 sqrt(2)/n
    vectors = A.neighbours("swap_vectors", 10).problems
    assert np.allclose(vectors[1].eigenvalues, vectors[0].eigenvalues)
    scaled = A.neighbours("scale", 1000).problems
    assert np.allclose(scaled[0].eigenvalues - scaled[1].eigenvalues, [1e-3, 0])
    new = A.neighbours("new_direction", 1000).problems
    assert np.allclose(new[1].eigenvalues - new[0].eigenvalues, [0, 1e-3])
    l1 = A.neighbours("l1", 10).problems
    change = A.upper_triangle(l1[1].sigma - l1[0].sigma)
    assert np.abs(change).sum() == pytest.approx(math.sqrt(5) / 10)
    dense = A.neighbours("dense", 1000).problems[0]
    assert dense.sigma.min() >= 0.25 - 1e-3  # thresholding keeps every entry


# --- Every line: within its claim, noise as the paper says ---------------------------------------------


@pytest.mark.parametrize("name", FAST_LINES)
def test_black_box_within_claim(name):
    line = A.audit_line(name)
    result = A.black_box(line, _T(line, 1000, 250), seed=1)
    assert not result.exceeded, result.describe()


@pytest.mark.parametrize("name", NOISY_LINES)
def test_noise_matches_the_papers_formula(name):
    """White-box: the fitted noise sd / the formula's sd at the claimed budget is 1 (99.9 % interval)."""
    for result in A.calibrate(A.audit_line(name), 300, alpha=1e-3):
        assert result.low <= 1 <= result.high, result.describe()
        assert result.dropped == 0, result.describe()  # every release carries its noise step


@pytest.mark.parametrize("name", NOISY_LINES)
def test_white_box_catches_halved_noise(name):
    results = A.calibrate(A.audit_line(name), 300, c=0.5)
    assert any(r.caught for r in results), [r.describe() for r in results]


@pytest.mark.parametrize("name", ["gauss", "separate", "coinpress", "projection"])
def test_black_box_catches_halved_noise(name):
    """At the tight Gaussian profile the black-box audit alone catches x 0.5 (the old (eps, 1e-5)
    audit needed a 9x overspend); the mechanism itself stays within its claim at the same T."""
    line = A.audit_line(name)
    assert A.black_box(line, 1000, c=0.5).exceeded


# --- stable_gsampling: its calibration data and the test's own formula for m ---------------------------


@pytest.mark.parametrize("n, d, eps, delta, ptr_fraction", [
    (300_000, 2, 1.0, 1e-5, 0.1), (1_000_000, 10, 1.0, 1e-6, 0.1), (400_000, 4, 1.0, 1e-5, 0.1),
    (2_000_000, 3, 0.5, 1e-6, 0.2), (1_000_000, 2, 1.0, 1e-5, 0.3)])
def test_stable_samples_formula_matches_the_mechanism(n, d, eps, delta, ptr_fraction):
    """The audit's m (written out from the notes and docs/stable_privacy.md) is the mechanism's, exactly,
    at the claim and at the under-noised copies (m' = floor(m / c^2) or just below: noise x c or above)."""
    from dpcov.mechanisms.stable import stable_parameters
    budget = ApproxDP(eps, delta)
    m = A.stable_samples(n, d, budget, ptr_fraction)
    assert m == stable_parameters(n, d, budget, ptr_fraction=ptr_fraction).m >= 1
    scale = lambda b: 1 / math.sqrt(A.stable_samples(n, d, b, ptr_fraction))  # noqa: E731
    for c in A.FACTORS:
        copy = A.scaled_budget(scale, budget, c)
        m_copy = stable_parameters(n, d, copy, ptr_fraction=ptr_fraction).m  # the proof's conditions hold
        assert m_copy == A.stable_samples(n, d, copy, ptr_fraction)
        assert 0.99 * m / c**2 <= m_copy <= m / c**2 + 1e-9


def test_stable_calibration_data_is_inside_the_proved_regime():
    """On the white-box data (n = 3e5 standard Gaussian rows, d = 2) at the claim: the proof's conditions
    hold, the stability score is 0 and every weight is 1 (so Sigma_w is the rows' second moment), and the
    releases are not the empty "no output"."""
    from dpcov.mechanisms.stable import stable_covariance, stable_parameters
    line = A.audit_line("stable_gsampling")
    pair, n = A.CALIBRATION_DATA[line.calibration]
    P = A.neighbours(pair, n).problems[0]
    params = stable_parameters(P.n, P.d, line.budget)
    fit = stable_covariance(P.rows, params.L0, params.k)
    assert fit.d_hat == 0 and np.all(fit.w == 1)
    outs = A.outputs(line.mechanism, line.options, line.budget, P, 20, [5])
    assert all(np.any(A.as_matrix(out) != 0) for out in outs)


# --- Slow: more runs, every pair, x 0.67 -------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", LINES)
def test_black_box_within_claim_every_pair_slow(name):
    line = A.audit_line(name)
    T = 200 if line.mechanism == "stable_gsampling" else _T(line, 5000, 1000)
    for k, pair in enumerate(line.pairs):
        result = A.black_box(line, T, pair=pair, seed=2 + k)
        assert not result.exceeded, result.describe()


@pytest.mark.slow
@pytest.mark.parametrize("name", NOISY_LINES)
def test_white_box_catches_two_thirds_noise_slow(name):
    results = A.calibrate(A.audit_line(name), 1000, c=0.67)
    assert any(r.caught for r in results), [r.describe() for r in results]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gauss", "clip_gauss", "projection", "coinpress", "g3"])
def test_black_box_catches_two_thirds_noise_slow(name):
    assert A.black_box(A.audit_line(name), 5000, c=0.67).exceeded


@pytest.mark.slow
def test_stable_gsampling_releases_on_the_audit_pair_slow():
    """The PTR test must pass on the audit's Gaussian data, or the audit would only see the zero matrix."""
    line = A.audit_line("stable_gsampling")
    nb = A.neighbours(*line.pairs[0])
    for problem in nb.problems:
        outs = A.outputs(line.mechanism, line.options, line.budget, problem, 5, [3])
        assert all(np.any(A.as_matrix(out) != 0) for out in outs), "PTR failed: nothing released"


# --- The command-line entry points ---------------------------------------------------------------------------


def test_audit_script(capsys, script):
    """scripts/audit.py NAME --options --budget: the search audit (and the white-box fit) through the
    registry only; exit status 0 when the mechanism stays within its claim; bad input is refused clearly."""
    main = script("audit").main
    assert main(["dp_threshold", "--options", '{"gamma": 0.5}', "--budget", "eps=1,delta=1e-3", "--runs", "60",
                 "--factors", "1,0.5", "--white-box", "--confirmations", "1", "--quiet",
                 "--n-jobs", "1"]) == 0  # fixed --runs: the same numbers for any --n-jobs (test_blackbox.py)
    out = capsys.readouterr().out
    assert "claim: (1, 0.001)-DP" in out and "copy with noise x 0.5" in out and "noise ratio" in out
    assert main(["no_such_mechanism"]) == 2 and "unknown mechanism" in capsys.readouterr().err
    assert main(["gauss", "--options", '{"gamma": 1}', "--seconds", "2"]) == 2
    assert "unknown option" in capsys.readouterr().err


def test_power_table_script(tmp_path, script):
    table = tmp_path / "power.md"
    script("audit_power").main(["--lines", "lap,zero", "--seconds", "1", "--factors", "", "--calibration-T", "100",
                                 "--output", str(table)])
    rows = table.read_text().splitlines()
    assert rows[0].startswith("| line |") and rows[2].startswith("| lap | `lap` | 1-DP |")
    assert rows[3].startswith("| zero |") and "(no noise)" in rows[3] and "| within |" in rows[3]
