"""DP- and LDP-Thresholding for sparse covariance (Wang & Xu, Algorithms 1 and 2), under
(eps, delta)-DP, and their un-thresholded Gaussian baseline (their §4.1).

Calibration (deviation from the paper, for privacy): the paper's noise sigma_1^2 =
2 ln(1.25/delta) / (n^2 eps^2) uses l2-sensitivity 1/n and the classical Gaussian mechanism,
which is valid only for eps < 1. For replace-one neighbours in the r-ball the upper triangle of
X^T X / n has l2-sensitivity sqrt(2) r^2 / n, and the grids use eps up to 2, so the noise here is
the analytic Gaussian mechanism (Balle & Wang 2018) at that sensitivity, valid for every eps. The
threshold keeps the paper's form, gamma sqrt(log p / n) + 4 sqrt(log p) * (noise sd per entry),
which is the paper's second term with the paper's sd replaced by the one actually used.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .gaussian import symmetric_gaussian
from .privacy import ApproxDP, Accountant
from .predictions import gaussian_noise
from .problem import CovProblem
from .spectral import Spectral


@functools.lru_cache(maxsize=256)  # a pure function of public values, asked for once per release
def analytic_gaussian_sigma(sensitivity: float, budget: ApproxDP) -> float:
    """Smallest sigma with Phi(D/2s - eps s/D) - e^eps Phi(-D/2s - eps s/D) <= delta
    (Balle & Wang 2018, Theorem 8): N(0, sigma^2) noise is then (eps, delta)-DP for every eps."""
    from scipy.optimize import brentq  # scipy.stats and .optimize load when used (~1 s of every process's start)
    from scipy.stats import norm

    eps, delta = budget.eps, budget.delta

    def excess(sigma):  # decreasing in sigma
        a, b = sensitivity / (2 * sigma), eps * sigma / sensitivity
        return norm.cdf(a - b) - math.exp(eps + norm.logcdf(-a - b)) - delta

    high = sensitivity
    while excess(high) > 0:
        high *= 2
    low = high / 2
    while excess(low) <= 0 and low > 1e-300:
        low /= 2
    sigma = brentq(excess, low, high, xtol=1e-15 * high, rtol=1e-12)
    # Round to the safe side: brentq's root may sit ~1e-12 relatively below the true one, and another
    # evaluation of delta(sigma) may differ from ours by ~1e-11 relatively; step up until delta(sigma)
    # <= delta (1 - 1e-9), so sigma is never below the root under either rounding.
    step = 1e-12 * sigma
    while excess(sigma) > -1e-9 * delta:
        sigma, step = sigma + step, 2 * step
    return sigma


def threshold_level(n: int, p: int, noise_sd: float, gamma: float) -> float:
    """gamma sqrt(log p / n) + 4 sqrt(log p) * noise_sd (Wang & Xu eq. (10) and (34))."""
    return gamma * math.sqrt(math.log(p) / n) + 4 * math.sqrt(math.log(p)) * noise_sd


def threshold_and_project(noisy: np.ndarray, level: float | None) -> Spectral:
    """Steps 2-3 of Algorithm 1: zero the entries with |sigma~_ij| <= level, then keep the
    positive part of the spectrum."""
    if level is not None:
        noisy = np.where(np.abs(noisy) > level, noisy, 0.0)
    values, vectors = np.linalg.eigh(noisy)
    return Spectral(np.maximum(values, 0.0), vectors)


def _check_gamma(gamma):
    if not (isinstance(gamma, (int, float)) and gamma >= 0):
        raise ValueError(f"gamma must be a number >= 0, got {gamma!r}")


THRESHOLD_CALIBRATIONS = ("private", "as_written")


def classical_gaussian_sd(sensitivity: float, budget: ApproxDP) -> float:
    """sqrt(2 ln(1.25/delta)) sensitivity / eps: the classical Gaussian mechanism (Dwork & Roth,
    Thm. A.1), (eps, delta)-DP only for eps < 1; Wang & Xu's sigma_1 with sensitivity 1/n."""
    return math.sqrt(2 * math.log(1.25 / budget.delta)) * sensitivity / budget.eps


def _check_calibration(calibration):
    if calibration not in THRESHOLD_CALIBRATIONS:
        raise ValueError(f"calibration must be one of {THRESHOLD_CALIBRATIONS}, got {calibration!r}")


def dp_threshold(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                 gamma: float = 0.5, threshold: bool = True, calibration: str = "private") -> Spectral:
    """DP-Thresholding (Wang & Xu Algorithm 1); threshold=False is the §4.1 baseline (Gaussian
    noise on Sigma, then the positive part).

    calibration="as_written" is Algorithm 1 *as written*: entry sd sigma_1 = sqrt(2 ln(1.25/delta)) / (n eps)
    (l2 sensitivity 1/n, classical Gaussian mechanism) and threshold gamma sqrt(log p / n) +
    4 sqrt(2 ln(1.25/delta)) sqrt(log p) / (n eps), whatever the rows' norm. It is NOT (eps, delta)-DP
    on data whose rows are not in the unit ball (Wang & Xu's own rows have norm ~ sqrt(p)/2: the
    true replace-one sensitivity is sqrt(2) R^2 / n; 1/n is right only for add/remove-one neighbours
    in the unit ball), nor for eps >= 1 (classical formula). The accountant records the claimed
    budget, labelled as such."""
    _check_gamma(gamma)
    _check_calibration(calibration)
    if calibration == "as_written":
        budget = accountant.spend(accountant.total, "noisy covariance (as published: claimed, not DP here)")
        sd = classical_gaussian_sd(1 / problem.n, budget)
    else:
        budget = accountant.spend(accountant.total, "noisy covariance (analytic Gaussian)")
        sd = analytic_gaussian_sigma(math.sqrt(2) * problem.radius**2 / problem.n, budget)
    noisy = problem.sigma + sd * symmetric_gaussian(problem.d, rng)  # step 1
    level = threshold_level(problem.n, problem.d, sd, gamma) if threshold else None
    return threshold_and_project(noisy, level)


def ldp_noise_mean(n: int, p: int, sd: float, rng: np.random.Generator, per_user: bool) -> np.ndarray:
    """(1/n) sum_i z_i for n users' independent SGW noise matrices of entry sd ``sd``. Its exact
    law is SGW with entry sd sd / sqrt(n) (sum of independent Gaussians); per_user=True runs the
    literal protocol instead (O(n p^2), for small sizes and for the test that pins the two)."""
    if not per_user:
        return sd / math.sqrt(n) * symmetric_gaussian(p, rng)
    total = np.zeros((p, p))
    for _ in range(n):
        total += symmetric_gaussian(p, rng)
    return sd * total / n


def ldp_threshold(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                  gamma: float = 0.5, per_user: bool = False, calibration: str = "private") -> Spectral:
    """LDP-Thresholding (Wang & Xu Algorithm 2): every user releases x x^T + z_i, z_i ~ SGW with
    the analytic-Gaussian sd for one user's l2-sensitivity sqrt(2) r^2 (each user's report is
    (eps, delta)-LDP); the server averages, thresholds at sqrt(n) eps scale, takes the positive part.

    calibration="as_written" is Algorithm 2 *as written*: per-user sd sqrt(2 ln(1.25/delta)) / eps
    (sensitivity 1, classical Gaussian), threshold gamma sqrt(log p / n) +
    4 sqrt(2 ln(1.25/delta)) sqrt(log p) / (sqrt(n) eps). NOT (eps, delta)-LDP on rows outside the
    unit ball (sensitivity sqrt(2) R^2) or for eps >= 1; the accountant records the claimed budget."""
    _check_gamma(gamma)
    _check_calibration(calibration)
    if calibration == "as_written":
        budget = accountant.spend(accountant.total, "each user's noisy x x^T (as published: claimed, not DP here)")
        sd_user = classical_gaussian_sd(1.0, budget)
    else:
        budget = accountant.spend(accountant.total, "each user's noisy x x^T (analytic Gaussian)")
        sd_user = analytic_gaussian_sigma(math.sqrt(2) * problem.radius**2, budget)
    noisy = problem.sigma + ldp_noise_mean(problem.n, problem.d, sd_user, rng, per_user)
    level = threshold_level(problem.n, problem.d, sd_user / math.sqrt(problem.n), gamma)
    return threshold_and_project(noisy, level)


GAUSS_CALIBRATIONS = ("private", "public_code")


def gauss_approx(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                 calibration: str = "private") -> Spectral:
    """The analytic Gaussian mechanism on Sigma at (eps, delta), positive part of the spectrum
    (Wang & Xu §4.1 baseline; Amin et al.'s G-x baselines), l2 sensitivity sqrt(2) r^2 / n of the
    upper triangle under replace-one neighbours.

    calibration="public_code" is Amin et al.'s G *as published* (google-research
    private_covariance_estimation gaussian_mechanism: find_sigma(eps, delta, 1.0) on C), i.e. the
    same analytic Gaussian mechanism at sensitivity r^2 / n. That is (eps, delta)-DP under add/remove-
    one neighbours (||x x^T||_F <= r^2) but NOT under the replace-one neighbours of Amin et al.'s
    definition (x x^T - y y^T has upper-triangle norm up to sqrt(2) r^2: sigma is sqrt(2) too small)."""
    if calibration not in GAUSS_CALIBRATIONS:
        raise ValueError(f"calibration must be one of {GAUSS_CALIBRATIONS}, got {calibration!r}")
    if calibration == "private":
        return dp_threshold(problem, accountant, rng, threshold=False)
    budget: ApproxDP = accountant.spend(accountant.total, "noisy covariance (as published: add/remove sensitivity)")
    sd = analytic_gaussian_sigma(problem.radius**2 / problem.n, budget)
    return threshold_and_project(problem.sigma + sd * symmetric_gaussian(problem.d, rng), None)


# --- predicted errors (mechanisms/predictions.py) --------------------------------------------------

# The analytic Gaussian mechanism on Sigma: entry sd at l2 sensitivity sqrt(2) r^2 / n.
GAUSS_APPROX_PREDICTION = gaussian_noise(
    lambda f, budget: analytic_gaussian_sigma(math.sqrt(2) * f.r2 / f.n, budget))
