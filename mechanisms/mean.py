"""A private mean of rows in the r-ball, for centring before a covariance release (dpcov's estimators).

Replacing one row moves the mean by at most 2r/n in l2 (and 2r sqrt(d)/n in l1). The noise follows
the budget's notion: the Gaussian mechanism under rho-zCDP (sd = (2r/n) / sqrt(2 rho), Bun & Steinke
2016), the Laplace mechanism under eps-DP (scale 2r sqrt(d) / (n eps) per coordinate), the analytic
Gaussian mechanism under (eps, delta)-DP (Balle & Wang 2018). The noisy mean is then projected into
the r-ball (post-processing: the true mean lies there), so rows minus it lie in the 2r-ball.

numerics="hardened" releases the mean on a 2^k grid with exact integer noise (mechanisms/noise.py): the
discrete Gaussian under rho-zCDP, the discrete Laplace under eps-DP, the sensitivity inflated by the
rounding and by the float error of the sum (``noise.sum_error_bound``). Under (eps, delta) it is the
discrete Gaussian calibrated by its own (eps, delta) curve (``noise.gaussian_release_approx``: within 1e-5 of the
analytic Gaussian's width, never wider than the zCDP route's).
"""
from __future__ import annotations

import math

import numpy as np

from . import noise
from .neighbours import REPLACE_ONE, Neighbours
from .privacy import ApproxDP, PureDP, ZCDP, Accountant, budget_guaranteeing
from .thresholding import analytic_gaussian_sigma
from .transcript import released as _step


def private_mean(X: np.ndarray, radius: float, budget, accountant: Accountant, rng: np.random.Generator,
                 numerics: str = "idealized") -> np.ndarray:
    """The mean of the rows of ``X`` (each of norm <= ``radius``) at ``budget``, spent through ``accountant``."""
    n, d = X.shape
    return private_mean_of(X.sum(axis=0), n, radius, budget, accountant, rng, numerics)


def private_mean_of(total: np.ndarray, n: int, radius: float, budget, accountant: Accountant,
                    rng: np.random.Generator, numerics: str = "idealized", neighbours: Neighbours = REPLACE_ONE,
                    exact: tuple | None = None) -> np.ndarray:
    """private_mean from the rows' sum and count (a sum over blocks: a table streamed, Dask partitions).
    ``neighbours`` (mechanisms/neighbours.py): under add/remove the sum of every row divided by the released count n,
    sensitivity r/n (a row added moves the sum by x), not replace-one's 2r/n. ``exact``: (the mean, its float error)
    from exact sums (mechanisms/exact_sums.py), the hardened route when the number of rows summed is private."""
    noise.check_numerics(numerics)
    if exact is not None:
        mean, exact_error = np.asarray(exact[0], dtype=float), float(exact[1])
    else:
        if numerics == "hardened" and neighbours.add_remove:
            raise ValueError("a hardened mean at add/remove sensitivity needs exact sums (mechanisms/exact_sums.py)")
        mean, exact_error = np.asarray(total, dtype=float) / n, None
    d = len(mean)
    l2 = (neighbours.scale * radius if neighbours.add_remove else 2 * radius) / n
    if numerics == "hardened":
        # each coordinate of the sum: n terms within [-r, r] (clipping: the row's norm, d + 3 roundings), then / n
        error = exact_error if exact_error is not None else \
            noise.sum_error_bound(n, radius, ops_per_term=d + 3) / n + noise.UNIT_ROUNDOFF * radius
        if isinstance(budget, PureDP):
            noisy, how = noise.laplace_release(mean, l1_sensitivity=l2 * math.sqrt(d), eps=budget.eps,
                                               bound=radius, float_error=error, rng=rng)
        elif isinstance(budget, ApproxDP):  # the discrete Gaussian's own (eps, delta) curve (noise.py)
            noisy, how = noise.gaussian_release_approx(mean, l2_sensitivity=l2, eps=budget.eps, delta=budget.delta,
                                                       bound=radius, float_error=error, rng=rng)
        else:
            rho = budget_guaranteeing(budget, ZCDP).rho  # ZCDP itself, or the rho implying (eps, delta)
            noisy, how = noise.gaussian_release(mean, l2_sensitivity=l2, rho=rho, bound=radius,
                                                float_error=error, rng=rng)
        accountant.spend(budget, f"mean (centring) ({how}){_route(neighbours)}")
    else:
        accountant.spend(budget, f"mean (centring){_route(neighbours)}")
        pure = isinstance(budget, PureDP)  # l1 <= sqrt(d) l2 for the Laplace draw
        noisy, scale = _idealized_noisy_mean(mean, l2, d, budget, rng)
        noisy = _step("laplace" if pure else "gaussian", "mean (centring)", mean, noisy,
                      sensitivity=l2 * math.sqrt(d) if pure else l2, norm="l1" if pure else "l2", scale=scale,
                      shape=np.shape(mean))
    norm = float(np.linalg.norm(noisy))
    return noisy if norm <= radius else noisy * (radius / norm)


def mean_noise_sd(n: int, d: int, radius: float, budget, neighbours: Neighbours = REPLACE_ONE) -> float:
    """The standard deviation of each coordinate of ``private_mean_of``'s noise, from public facts only (a model's
    standard errors; the hardened draws' discrete noise has the same scale to within its grid)."""
    l2 = (neighbours.scale * radius if neighbours.add_remove else 2 * radius) / n
    if isinstance(budget, PureDP):
        return math.sqrt(2) * l2 * math.sqrt(d) / budget.eps  # Laplace(b): sd sqrt(2) b
    if isinstance(budget, ApproxDP):
        return analytic_gaussian_sigma(l2, budget)
    return l2 / math.sqrt(2 * budget.rho)


def _route(neighbours: Neighbours) -> str:
    return " [native add/remove: every row, / the released count]" if neighbours.add_remove else ""


def _idealized_noisy_mean(mean: np.ndarray, l2: float, d: int, budget,
                          rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """(the mean plus float noise, the noise's scale: the Gaussian's sd or the Laplace's b)."""
    if isinstance(budget, ZCDP):
        scale = l2 / math.sqrt(2 * budget.rho)
        return mean + scale * rng.standard_normal(d), scale
    if isinstance(budget, PureDP):
        scale = l2 * math.sqrt(d) / budget.eps
        return mean + rng.laplace(scale=scale, size=d), scale
    if isinstance(budget, ApproxDP):
        scale = analytic_gaussian_sigma(l2, budget)
        return mean + scale * rng.standard_normal(d), scale
    raise TypeError(f"budget must be ZCDP, PureDP or ApproxDP, got {budget!r}")
