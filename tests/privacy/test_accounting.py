"""Our budget conversions and the analytic Gaussian calibration against Google's ``dp-accounting``
(issue #16): on a grid of (eps, delta, rho), ours must never be less conservative.

- rho-zCDP => (eps, delta): our eps (Bun & Steinke Prop. 1.3) >= the RDP conversion of dp-accounting
  (Canonne-Kamath-Steinke, tighter) >= the exact (eps, delta) of the Gaussian mechanism with
  sigma = 1/sqrt(2 rho) (a rho-zCDP mechanism, so no valid conversion can go below it).
- (eps, delta) => rho-zCDP (the rho a zCDP mechanism runs at under an (eps, delta) target): that rho
  converted back by dp-accounting gives at most eps, and the Gaussian mechanism at that rho is
  (eps, delta)-DP by its exact profile.
- eps-DP => eps^2/2-zCDP: the Laplace mechanism's exact Renyi curve stays below alpha eps^2 / 2.
- analytic Gaussian sigma (Balle & Wang 2018): >= dp-accounting's ``get_sigma_gaussian``, and
  dp-accounting's exact delta at our sigma is <= delta (the root is rounded to the safe side).
"""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest


from dpcov.mechanisms.privacy import ApproxDP, PureDP, ZCDP, budget_guaranteeing
from dpcov.mechanisms.thresholding import analytic_gaussian_sigma

EPSILONS = [0.01, 0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0]
DELTAS = [1e-16, 1e-10, 1e-5, 1e-3, 0.1, 0.5]
RHOS = [1e-5, 1e-3, 0.01, 0.1, 0.5, 1.0, 10.0, 100.0]
# Renyi orders from 1.01 to 1e8: small rho needs very large orders (alpha* ~ sqrt(ln(1/delta)/rho)),
# beyond dp-accounting's default grid (which would make its conversion needlessly loose).
ORDERS = list(np.concatenate([np.linspace(1.01, 8, 100), np.geomspace(8, 1e8, 400)[1:]]))


@functools.lru_cache(maxsize=1)
def accounting():
    """Google's dp-accounting (the `test` extra), imported when a test here first runs: at import it loads
    scipy.signal and scipy.stats, about 1 s of every xdist worker's collection."""
    import dp_accounting
    from dp_accounting import rdp  # noqa: F401  (dp_accounting.rdp)
    from dp_accounting.pld import privacy_loss_mechanism  # noqa: F401  (dp_accounting.pld.privacy_loss_mechanism)
    return dp_accounting


def rdp_epsilon(rho: float, delta: float) -> float:
    accountant = accounting().rdp.RdpAccountant(orders=ORDERS)
    accountant.compose(accounting().ZCDpEvent(rho))
    return accountant.get_epsilon(delta)


def gaussian_delta(sigma: float, sensitivity: float, eps: float) -> float:
    """Exact delta(eps) of N(0, sigma^2) noise at this sensitivity (dp-accounting's closed form)."""
    loss = accounting().pld.privacy_loss_mechanism.GaussianPrivacyLoss(sigma, sensitivity=sensitivity,
                                                                       pessimistic_estimate=False)
    return loss.get_delta_for_epsilon(eps)


@pytest.mark.parametrize("rho", RHOS)
def test_zcdp_to_approx_dp_is_never_tighter_than_dp_accounting(rho):
    for delta in DELTAS:
        ours = ZCDP(rho).to_approx_dp(delta).eps
        theirs = rdp_epsilon(rho, delta)
        exact_gaussian = accounting().get_epsilon_gaussian(1 / math.sqrt(2 * rho), delta)
        assert ours >= theirs * (1 - 1e-12), (rho, delta, ours, theirs)
        assert theirs >= exact_gaussian * (1 - 1e-9), (rho, delta, theirs, exact_gaussian)


@pytest.mark.parametrize("eps", EPSILONS)
def test_approx_dp_to_zcdp_implies_the_target(eps):
    for delta in DELTAS:
        rho = budget_guaranteeing(ApproxDP(eps, delta), ZCDP).rho
        assert rho == ApproxDP(eps, delta).to_zcdp().rho
        assert rdp_epsilon(rho, delta) <= eps * (1 + 1e-12), (eps, delta, rho)
        # The Gaussian mechanism run at rho (sigma = Delta / sqrt(2 rho), Delta = 1) meets (eps, delta):
        assert gaussian_delta(1 / math.sqrt(2 * rho), 1.0, eps) <= delta, (eps, delta, rho)
        assert 1 / math.sqrt(2 * rho) >= accounting().get_sigma_gaussian(eps, delta)


@pytest.mark.parametrize("eps", EPSILONS)
def test_pure_to_zcdp_bounds_the_laplace_renyi_curve(eps):
    rho = PureDP(eps).to_zcdp().rho
    assert rho == budget_guaranteeing(ZCDP(rho), ZCDP).rho == pytest.approx(eps**2 / 2)
    assert budget_guaranteeing(ZCDP(rho), PureDP).eps == pytest.approx(eps)  # the inverse direction
    accountant = accounting().rdp.RdpAccountant(orders=ORDERS)
    accountant.compose(accounting().LaplaceDpEvent(1 / eps))  # sensitivity 1, scale 1/eps: eps-DP
    renyi = np.asarray(accountant._rdp)  # noqa: SLF001 (the composed Renyi curve at ORDERS)
    assert np.all(renyi <= np.asarray(ORDERS) * rho * (1 + 1e-12))


@pytest.mark.parametrize("eps", EPSILONS)
@pytest.mark.parametrize("sensitivity", [1e-3, 1.0, 100.0])
def test_analytic_gaussian_sigma_is_on_the_safe_side(eps, sensitivity):
    for delta in DELTAS:
        ours = analytic_gaussian_sigma(sensitivity, ApproxDP(eps, delta))
        theirs = accounting().get_sigma_gaussian(eps, delta) * sensitivity
        assert ours >= theirs, (eps, delta, sensitivity, ours / theirs - 1)
        assert ours <= theirs * (1 + 1e-7), "calibration needlessly loose"
        assert gaussian_delta(ours, sensitivity, eps) <= delta, (eps, delta, sensitivity)


def test_an_eps_dp_step_under_zcdp_never_costs_more_than_its_rho_exactly():
    """eps-DP costs eps^2/2 zCDP: the eps a rho buys is rounded down where rounding to nearest would pass rho by an
    ulp (issue 58: no slack in a privacy comparison), and is otherwise the nearest float."""
    import math
    from fractions import Fraction

    import numpy as np

    from dpcov.mechanisms.adaptive import svt_eps
    from dpcov.mechanisms.privacy import PureDP, ZCDP, budget_guaranteeing, eps_within
    rhos = np.random.default_rng(0).uniform(1e-6, 10, 2000).tolist() + [0.25, 0.5, 1.0, 0.125]
    passed_by_nearest = 0
    for rho in rhos:
        eps = eps_within(rho)
        assert Fraction(eps) ** 2 / 2 <= Fraction(rho) and Fraction(math.nextafter(eps, 1e9)) ** 2 / 2 > Fraction(rho)
        assert budget_guaranteeing(ZCDP(rho), PureDP).eps == eps == svt_eps(ZCDP(rho))
        passed_by_nearest += Fraction(math.sqrt(2 * rho)) ** 2 / 2 > Fraction(rho)
    assert passed_by_nearest > 100  # the rounding this guards against is common
