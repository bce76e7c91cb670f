"""AdaSSP (Wang 2018, Alg. 2; issue 60) as a registered regression line: its steps and their sensitivities, its
penalty sized to the noise, both units and both numerics, bad input, and the black-box audit at its claim."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dpcov import ApproxDP, ZCDP
from dpcov.audits.blackbox import audit
from dpcov.audits.lines import _FixedPair, audit_lines, neighbours, search
from dpcov.mechanisms.problem import CovProblem
from dpcov.mechanisms.registry import MECHANISMS, release
from dpcov.mechanisms.regression import RidgeRelease, RidgeTask


def _regression(n=4000, d=5, seed=0, noise=0.1):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    y = A @ w + noise * rng.normal(size=n)
    R = np.column_stack([A, y])
    R /= np.linalg.norm(R, axis=1).max()
    return R, CovProblem.from_rows(R, 1.0, ridge=RidgeTask(d, 1.0 / n), rows=R)


def _mse(R, w):
    return float(np.mean((R[:, :-1] @ w - R[:, -1]) ** 2))


def test_adassp_is_a_registered_ridge_line():
    line = MECHANISMS["adassp"]
    assert line.notion is ZCDP and "a ridge task" in line.needs and line.native
    assert "Wang 2018" in line.source


@pytest.mark.parametrize("unit, numerics", [("replace_one", "idealized"), ("replace_one", "hardened"),
                                            ("add_remove", "idealized"), ("add_remove", "hardened")])
def test_adassp_spends_its_budget_in_thirds_and_approaches_least_squares(unit, numerics):
    R, problem = _regression()
    ols = np.linalg.lstsq(R[:, :-1], R[:, -1], rcond=None)[0]
    out, ledger = release("adassp", problem, ZCDP(1e6), np.random.default_rng(0), privacy_unit=unit,
                          options={"numerics": numerics})
    assert isinstance(out, RidgeRelease)
    assert _mse(R, out.weights) <= 1.01 * _mse(R, ols)  # a huge budget: the noise and the penalty vanish
    steps = [what for what, _ in ledger.ledger if what.startswith("AdaSSP")]
    assert [s.split(" (")[0].split(" [")[0] for s in steps] == ["AdaSSP: smallest eigenvalue", "AdaSSP: Sigma_AA",
                                                                "AdaSSP: Sigma_Ay"]
    assert ledger.spent == ZCDP(1e6) or ledger.spent.rho == pytest.approx(1e6)


def test_the_penalty_is_sized_to_the_noise():
    """A small budget on well-conditioned data: AdaSSP's penalty keeps the model near least squares (the ridge of the
    noisy statistics without a penalty errs far more), the published behaviour (Wang 2018, Thm 3)."""
    R, problem = _regression(n=2000, d=10, noise=0.5)
    ols = np.linalg.lstsq(R[:, :-1], R[:, -1], rcond=None)[0]
    d = R.shape[1] - 1
    adaptive, plain = [], []
    for seed in range(8):
        out, _ = release("adassp", problem, ApproxDP(1.0, 1e-6), np.random.default_rng(seed))
        adaptive.append(_mse(R, out.weights) / _mse(R, ols))
        noisy, _ = release("gauss", problem, ApproxDP(1.0, 1e-6), np.random.default_rng(seed), clamp=False)
        plain.append(_mse(R, np.linalg.lstsq(noisy[:d, :d], noisy[:d, d], rcond=None)[0]) / _mse(R, ols))
    assert np.median(adaptive) < 0.5 * np.median(plain)


def test_adassp_refuses_bad_input():
    R, problem = _regression(n=200)
    with pytest.raises(ValueError, match="failure must lie in"):
        release("adassp", problem, ZCDP(1.0), np.random.default_rng(0), options={"failure": 1.5})
    without = CovProblem.from_rows(R, 1.0, rows=R)
    with pytest.raises(ValueError, match="needs a ridge task"):
        release("adassp", without, ZCDP(1.0), np.random.default_rng(0))


@pytest.mark.parametrize("unit", ["replace_one", "add_remove"])
def test_adassp_passes_the_audit_at_its_claim(unit):
    """The line's own search (audits.lines.search: the ridge pairs, and under add/remove the ridge pair plus a row) at
    its claim; the copy at 0.35 of its noise (8 x rho) is flagged on the same pairs: the audit has the power there
    (at half the noise, 4 x rho, the weight after three composed steps and a penalty is too weak a witness in 4000
    runs: rho >= 0.37 and 0.45 against 0.5)."""
    line = next(x for x in audit_lines() if x.line == "adassp")
    honest, = search(line, 1.0, runs=800, confirmations=1, seed=4, n_jobs=1, privacy_unit=unit, numerics="idealized")
    assert not honest.exceeded, honest.describe()
    under, = search(line, 0.35, runs=4000, confirmations=1, seed=4, n_jobs=1, privacy_unit=unit,
                    numerics="idealized")
    assert under.exceeded, under.describe()


def test_private_ridge_runs_adassp_and_other_estimators_refuse_it():
    """PrivateRidge(mechanism="adassp"): the rows centred by the private mean, AdaSSP's model as coef_, the intercept
    from the mean, covariance_ None, the ledger's model lines; PrivateCovariance refuses a regression line."""
    import dpcov
    rng = np.random.default_rng(2)
    X = rng.normal(size=(20000, 4)) * 0.1 + 0.2
    y = X @ np.array([0.5, -0.3, 0.2, 0.1]) + 0.05 + 0.01 * rng.normal(size=20000)
    model = dpcov.PrivateRidge(mechanism="adassp", budget=ApproxDP(4.0, 1e-6), radius=1.0, clip=True,
                               centering="private", random_state=0).fit(X, y)
    assert model.covariance_ is None and model.coef_.shape == (4,) and model.mechanism_ == "adassp"
    assert any(what.startswith("model: AdaSSP: Sigma_AA") for what, _ in model.ledger_)
    assert model.budget_spent_ == ApproxDP(4.0, 1e-6).to_zcdp()  # composed in rho (PrivateRidge)
    assert model.score(X, y) > 0.8
    with pytest.raises(ValueError, match="needs a ridge task: not a PrivateCovariance mechanism"):
        dpcov.PrivateCovariance(mechanism="adassp", budget=ZCDP(1.0), radius=1.0, centering="private").fit(X)


def test_private_ridge_refuses_a_regression_line_without_hardened_numerics():
    """output_perturbation (float Gamma noise, rows in the unit ball, no centring) is refused by PrivateRidge with why,
    before anything is spent (a review's find)."""
    import dpcov
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(500, 3)) * 0.1, rng.normal(size=500) * 0.1
    with pytest.raises(ValueError, match="PrivateRidge runs the regression lines that take numerics="):
        dpcov.PrivateRidge(mechanism="output_perturbation", budget=dpcov.PureDP(1.0), radius=1.0,
                           centering="private").fit(X, y)


def test_the_audit_claims_no_low_bits_verdict_where_no_precision_stage_ran():
    """Hardened AdaSSP refuses the covariance precision pairs (no ridge task): the report must not say its low bits
    were audited (a review's find)."""
    report = audit("adassp", ZCDP(0.5), options={"numerics": "hardened"}, privacy_unit="add_remove",
                   pairs=[_FixedPair(neighbours("ridge_add", 10)), _FixedPair(neighbours("ridge", 10))], runs=200,
                   confirmations=1, seed=0, n_jobs=1, numerics="as executed")
    assert not report.low_bits_audited
