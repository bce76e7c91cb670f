"""A raw table released privately from the first byte: the norm bound and the standardisation as
private steps before any covariance mechanism, every step in one accountant (dataset ``table`` with
``bound=private``; issue 39).

The problem holds the raw rows' statistics in a ball no row leaves (the table dataset's outer radius
2^64: no public bound is needed), per dyadic norm band: counts, sum xx^T, sum xx^T/||x||^2, sum x and
sum x/||x||. Each step below spends a stated share of the budget through the same accountant:

1. radius (``radius_share``): Dong et al.'s PrivRadius (Lemma 9: SVT over the dyadic radii,
   adaptive.private_radius_exponent) picks tau = r 2^-m; the rows are clipped to tau, exactly from
   the band sums (CovProblem.clipped_problem, Dong §5.1);
2. mean (``mean_share``, standardize center or zscore): the private mean of the clipped rows
   (mechanisms/mean.py, sensitivity 2 tau / n), from the band sums (CovProblem.clipped_mean);
3. covariance (the rest): the inner ``mechanism`` (any registered name) on the clipped rows gives
   the second moment M~;
4. post-processing (free): Sigma~ = M~ - mu~ mu~^T (center); zscore: the correlations D^-1 Sigma~ D^-1
   (D: the square roots of Sigma~'s diagonal, floored at 1e-3 tau), clipped into [-1, 1] with a unit
   diagonal; eigenvalues clamped into [0, tau^2] (center), [0, d] (zscore). A column whose variance is
   below the noise has no private z-score worth the name: its correlations are noise.

Basic composition of the three releases: the sum of the shares is the budget (zCDP adds rho; pure
DP adds eps; the SVT step is eps-DP, charged in the accountant's notion as every SVT step is).
"""
from __future__ import annotations

import numpy as np

from .adaptive import private_radius_exponent, svt_eps
from .mean import private_mean_of
from .privacy import Accountant
from .problem import CovProblem
from .spectral import as_matrix, clamp_eigenvalues

STANDARDIZE = ("none", "center", "zscore")
MAX_HALVINGS = 128  # dyadic radii r 2^-1 .. r 2^-128: from the outer 2^64 down to 2^-64


def private_pipeline(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, release, *,
                     mechanism: str = "gauss", standardize: str = "center", radius_share: float = 0.1,
                     mean_share: float = 0.1, beta: float = 0.1, options: dict | None = None,
                     numerics: str = "idealized") -> np.ndarray:
    """Steps 1-4 above; ``release``: mechanisms.registry.release (the registry lists this function, so it
    hands its own release in: no import cycle). numerics="hardened": the SVT, the mean and the inner mechanism
    (which must take the option ``numerics``) on a grid with exact integer noise (mechanisms/noise.py)."""
    if standardize not in STANDARDIZE:
        raise ValueError(f"standardize must be one of {STANDARDIZE}, got {standardize!r}")
    shares = radius_share + (mean_share if standardize != "none" else 0.0)
    if not (0 < radius_share < 1 and 0 < mean_share < 1 and shares < 1):
        raise ValueError(f"radius_share and mean_share must lie in (0, 1) and leave the covariance a share, "
                         f"got {radius_share!r} and {mean_share!r}")
    if problem.band_sums is None:
        raise ValueError("the private pipeline needs the rows' band sums (a CovProblem built from rows)")
    total = accountant.total
    # 1. radius: PrivRadius, an eps-DP step charged radius_share of the budget
    m = private_radius_exponent(problem, svt_eps(total.scaled(radius_share)), beta, MAX_HALVINGS, accountant, rng,
                                numerics)
    clipped = problem.clipped_problem(m)
    tau = clipped.radius
    # 2. mean of the clipped rows
    centre = np.zeros(problem.d)
    if standardize != "none":
        centre = private_mean_of(problem.clipped_mean(m) * problem.n, problem.n, tau, total.scaled(mean_share),
                                 accountant, rng, numerics)
    # 3. the second moment by the inner mechanism, at the rest of the budget
    rest = total.scaled(1 - shares)
    if numerics == "hardened":
        options = {**(options or {}), "numerics": "hardened"}  # an inner mechanism without it: an unknown option
    moment, inner = release(mechanism, clipped, rest, rng, options=options, clamp=standardize == "none")
    accountant.spend(rest, f"covariance: {mechanism}")
    accountant.ledger[-1:] = [(f"covariance: {what}", spent) for what, spent in inner.ledger]
    if standardize == "none":
        return as_matrix(moment)
    # 4. post-processing
    sigma = as_matrix(moment) - np.outer(centre, centre)
    sigma = (sigma + sigma.T) / 2
    if standardize == "center":
        return clamp_eigenvalues(sigma, 0.0, tau**2)
    scale = np.sqrt(np.maximum(np.diag(sigma), 1e-6 * tau**2))  # a variance lost in the noise: floored
    correlation = np.clip(sigma / np.outer(scale, scale), -1.0, 1.0)
    np.fill_diagonal(correlation, 1.0)
    return clamp_eigenvalues(correlation, 0.0, float(problem.d))
