"""DP- and LDP-Thresholding for sparse covariance (Wang & Xu, Algorithms 1 and 2), under
(eps, delta)-DP, and their un-thresholded Gaussian baseline (their §4.1).

Calibration (deviation from the paper, for privacy): the paper's noise sigma_1^2 =
2 ln(1.25/delta) / (n^2 eps^2) uses l2-sensitivity 1/n and the classical Gaussian mechanism,
which is valid only for eps < 1. For replace-one neighbours in the r-ball the upper triangle of
X^T X / n has l2-sensitivity sqrt(2) r^2 / n, and the grids use eps up to 2, so the noise here is
the analytic Gaussian mechanism (Balle & Wang 2018) at that sensitivity, valid for every eps. The
threshold keeps the paper's form, gamma sqrt(log p / n) + 4 sqrt(log p) * (noise sd per entry),
which is the paper's second term with the paper's sd replaced by the one actually used.

numerics="hardened" (mechanisms/noise.py): the statistic on a 2^k grid plus exact discrete Gaussian noise calibrated
to (eps, delta) by the discrete Gaussian's own privacy curve (``noise.gaussian_release_approx``: within ~1e-9..1e-5
of the analytic Gaussian's sd, 10-36 % below the zCDP route's); the threshold uses the sd actually drawn. LDP: every
user's report x x^T is on the grid with her own exact noise, in the local model (the rows are needed: the problem
must carry them, else the central model's equivalent); the server's average is post-processing. The as-published calibrations, hardened, keep their
published sd (a discrete Gaussian of that sd on the grid): still not private at the claim, as their ledger says.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import noise
from .gaussian import covariance_float_error, hardened_upper, symmetric_gaussian, upper_indices, upper_of
from .privacy import ApproxDP, Accountant
from .predictions import gaussian_noise
from .problem import CovProblem, clip_rows
from .spectral import Spectral
from .transcript import released as _step


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
                 gamma: float = 0.5, threshold: bool = True, calibration: str = "private",
                 numerics: str = "idealized") -> Spectral:
    """DP-Thresholding (Wang & Xu Algorithm 1); threshold=False is the §4.1 baseline (Gaussian
    noise on Sigma, then the positive part).

    calibration="as_written" is Algorithm 1 *as written*: entry sd sigma_1 = sqrt(2 ln(1.25/delta)) / (n eps)
    (l2 sensitivity 1/n, classical Gaussian mechanism) and threshold gamma sqrt(log p / n) +
    4 sqrt(2 ln(1.25/delta)) sqrt(log p) / (n eps), whatever the rows' norm. It is NOT (eps, delta)-DP
    on data whose rows are not in the unit ball (Wang & Xu's own rows have norm ~ sqrt(p)/2: the
    true replace-one sensitivity is sqrt(2) R^2 / n; 1/n is right only for add/remove-one neighbours
    in the unit ball), nor for eps >= 1 (classical formula). The accountant records the claimed
    budget, labelled as such.

    numerics="hardened": Sigma's upper triangle on a 2^k grid plus the exact discrete Gaussian calibrated to
    (eps, delta) (``noise.gaussian_release_approx``), the threshold at the sd drawn (module docstring)."""
    _check_gamma(gamma)
    _check_calibration(calibration)
    noise.check_numerics(numerics)
    if calibration == "as_written":
        what = "noisy covariance (as published: claimed, not DP here)"
        if numerics == "hardened":
            sd = classical_gaussian_sd(1 / problem.n, accountant.total)
            noisy, sd = _hardened_at_sd(problem, 1 / problem.n, sd, accountant, rng, what)
        else:
            budget = accountant.spend(accountant.total, what)
            sd = classical_gaussian_sd(1 / problem.n, budget)
    else:
        l2 = math.sqrt(2) * problem.radius**2 / problem.n
        if numerics == "hardened":
            noisy, sd = _hardened_approx(problem, l2, accountant, rng, "noisy covariance")
        else:
            budget = accountant.spend(accountant.total, "noisy covariance (analytic Gaussian)")
            sd = analytic_gaussian_sigma(l2, budget)
    if numerics != "hardened":
        sensitivity = 1 / problem.n if calibration == "as_written" else l2
        noisy = _step("gaussian", "DP-Thresholding: noisy covariance", upper_of(problem.sigma),
                      problem.sigma + sd * symmetric_gaussian(problem.d, rng), sensitivity=sensitivity, norm="l2",
                      scale=sd, shape=problem.sigma.shape)  # step 1
    level = threshold_level(problem.n, problem.d, sd, gamma) if threshold else None
    return threshold_and_project(noisy, level)


def _hardened_approx(problem: CovProblem, l2: float, accountant: Accountant, rng: np.random.Generator,
                     what: str) -> tuple[np.ndarray, float]:
    """Sigma's upper triangle, (eps, delta)-DP with the exact discrete Gaussian (``noise.gaussian_release_approx``),
    mirrored; the hardening in the ledger. Returns it and the sd drawn (grid units times sigma)."""
    budget: ApproxDP = accountant.total
    kept = []

    def release(upper, error):
        out, how = noise.gaussian_release_approx(upper, l2_sensitivity=l2, eps=budget.eps, delta=budget.delta,
                                                 bound=problem.radius**2, float_error=error, rng=rng)
        kept.append(how)
        return out, how

    noisy = hardened_upper(problem.sigma, problem.radius, problem.n, accountant, what, budget, release)
    return noisy, kept[0].scale


def _hardened_at_sd(problem: CovProblem, l2: float, sd: float, accountant: Accountant, rng: np.random.Generator,
                    what: str) -> tuple[np.ndarray, float]:
    """An as-published calibration, hardened: a discrete Gaussian of the published entry sd (``noise.gaussian_release``
    at the rho with l2 / sqrt(2 rho) = sd) on the grid; it claims what the paper claims, no more."""
    kept = []

    def release(upper, error):
        out, how = noise.gaussian_release(upper, l2_sensitivity=l2, rho=(l2 / sd) ** 2 / 2, bound=problem.radius**2,
                                          float_error=error, rng=rng)
        kept.append(how)
        return out, how

    noisy = hardened_upper(problem.sigma, problem.radius, problem.n, accountant, what, accountant.total, release)
    return noisy, kept[0].scale


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
                  gamma: float = 0.5, per_user: bool = False, calibration: str = "private",
                  numerics: str = "idealized") -> Spectral:
    """LDP-Thresholding (Wang & Xu Algorithm 2): every user releases x x^T + z_i, z_i ~ SGW with
    the analytic-Gaussian sd for one user's l2-sensitivity sqrt(2) r^2 (each user's report is
    (eps, delta)-LDP); the server averages, thresholds at sqrt(n) eps scale, takes the positive part.

    calibration="as_written" is Algorithm 2 *as written*: per-user sd sqrt(2 ln(1.25/delta)) / eps
    (sensitivity 1, classical Gaussian), threshold gamma sqrt(log p / n) +
    4 sqrt(2 ln(1.25/delta)) sqrt(log p) / (sqrt(n) eps). NOT (eps, delta)-LDP on rows outside the
    unit ball (sensitivity sqrt(2) R^2) or for eps >= 1; the accountant records the claimed budget.

    numerics="hardened": the local model as executed (``ldp_reports_hardened``): each user clips her row to the
    r-ball and reports the upper triangle of x x^T on a 2^k grid plus her own exact discrete Gaussian noise (for
    calibration="private" calibrated to (eps, delta) by ``noise.approx_gaussian_plan``; "as_written": the published
    sd); the server averages the reports. Needs the rows (``CovProblem.from_rows(X, rows=X)``); n d(d+1)/2 exact
    draws (~0.2 us each)."""
    _check_gamma(gamma)
    _check_calibration(calibration)
    noise.check_numerics(numerics)
    if numerics == "hardened":
        noisy, sd_user = ldp_reports_hardened(problem, accountant, rng, calibration)
    else:
        if calibration == "as_written":
            budget = accountant.spend(accountant.total,
                                      "each user's noisy x x^T (as published: claimed, not DP here)")
            sd_user = classical_gaussian_sd(1.0, budget)
        else:
            budget = accountant.spend(accountant.total, "each user's noisy x x^T (analytic Gaussian)")
            sd_user = analytic_gaussian_sigma(math.sqrt(2) * problem.radius**2, budget)
        # the transcript: Sigma moves by sqrt(2) r^2 / n; the n users' noise averages to sd_user / sqrt(n)
        noisy = _step("gaussian", "each user's noisy x x^T (idealized)", upper_of(problem.sigma),
                      problem.sigma + ldp_noise_mean(problem.n, problem.d, sd_user, rng, per_user),
                      sensitivity=math.sqrt(2) * problem.radius**2 / problem.n, norm="l2",
                      scale=sd_user / math.sqrt(problem.n), shape=problem.sigma.shape)
    level = threshold_level(problem.n, problem.d, sd_user / math.sqrt(problem.n), gamma)
    return threshold_and_project(noisy, level)


LDP_CHUNK = 1 << 21  # entries (users x d(d+1)/2) drawn at a time
ROW_SLACK = 1e-8  # rows validated in the r-ball up to 1e-9 relative (problem._NORM_SLACK), then clipped in floats


def ldp_reports_hardened(problem: CovProblem, accountant: Accountant, rng: np.random.Generator,
                         calibration: str = "private") -> tuple[np.ndarray, float]:
    """The server's average of the n users' hardened reports, and the per-user sd drawn.

    User i (in the local model: her report alone is what leaves her) clips her row x_i to the r-ball, computes
    u_i = upper(x_i x_i^T) (one float product per entry: within u r'^2 of the exact product of her clipped floats,
    r' = r (1 + ROW_SLACK) bounding their norm), and reports g (round(u_i / g) + N_i), N_i exact discrete Gaussian
    draws; any two inputs give l2-sensitivity sqrt(2) r'^2, so each report is (eps, delta)-DP by
    ``noise.approx_gaussian_plan`` (grid and sigma from public facts only: the same for every user). The server sums
    the reports (post-processing) and divides by n."""
    if problem.rows is None:
        return _ldp_central_equivalent(problem, accountant, rng, calibration)
    r, d, n = problem.radius, problem.d, problem.n
    rows, _ = clip_rows(np.asarray(problem.rows, dtype=np.float64), r)
    if len(rows) != n:
        raise ValueError(f"the problem's rows ({len(rows)}) are not its n = {n} users")
    upper_rows, upper_cols = upper_indices(d)
    m = len(upper_rows)
    r2 = (r * (1 + ROW_SLACK)) ** 2
    l2 = math.sqrt(2) * r2
    error = noise.UNIT_ROUNDOFF * r2
    if calibration == "as_written":
        what = "each user's noisy x x^T, in the local model (as published: claimed, not DP here)"
        target = classical_gaussian_sd(1.0, accountant.total)
        rho = (l2 / target) ** 2 / 2  # noise.gaussian_release's calibration at the published sd
        grid = noise.grid_step(target, r2)
        steps = (l2 + 2 * error * math.sqrt(m)) / grid + math.sqrt(m)
        sigma = steps / math.sqrt(2 * rho) * (1 + 1e-12)
        how = noise.Hardening("discrete Gaussian", grid, l2, math.sqrt(m) * grid, 2 * error * math.sqrt(m),
                              sigma * grid)
    else:
        what = "each user's noisy x x^T, in the local model"
        budget: ApproxDP = accountant.total
        grid, sigma, how = noise.approx_gaussian_plan(l2_sensitivity=l2, eps=budget.eps, delta=budget.delta,
                                                      bound=r2, float_error=error, m=m)
    total = np.zeros(m)
    users = max(1, LDP_CHUNK // m)
    for start in range(0, n, users):
        block = rows[start:start + users]
        reports = block[:, upper_rows] * block[:, upper_cols]  # each user's own upper(x x^T)
        draws = noise.discrete_gaussian(sigma, reports.size, rng).reshape(reports.shape)
        total += noise._released(noise.on_grid(reports, grid, r2), draws, grid).sum(axis=0)
    accountant.spend(accountant.total, f"{what} ({how})")
    # the transcript: the reports' sum (one user's report moves it by l2 at most; the noise is the n reports')
    total = _step("gaussian", what, lambda _: (rows[:, upper_rows] * rows[:, upper_cols]).sum(axis=0), total,
                  sensitivity=l2, norm="l2", slack=2 * error * math.sqrt(m) * n, grid=grid, sigma=sigma, bound=r2,
                  users=n)
    out = np.empty((d, d))
    out[upper_rows, upper_cols] = total / n
    out[upper_cols, upper_rows] = total / n
    return out, how.scale


def _ldp_central_equivalent(problem: CovProblem, accountant: Accountant, rng: np.random.Generator,
                            calibration: str) -> tuple[np.ndarray, float]:
    """Without the rows (dpcov's estimators hold band sums, not rows), the central model's equivalent: Sigma on a grid
    plus one exact discrete Gaussian of the averaged reports' sd sd_user / sqrt(n) (their law's sd), and at least the
    central calibration at sensitivity sqrt(2) r^2 / n (``noise.approx_gaussian_plan``) -- which sd_user / sqrt(n)
    already exceeds about sqrt(n)-fold: (eps, delta)-DP in the central model, as executed; not the local protocol."""
    r, n = problem.radius, problem.n
    budget = accountant.total
    sd_user = classical_gaussian_sd(1.0, budget) if calibration == "as_written" else \
        analytic_gaussian_sigma(math.sqrt(2) * r**2, budget)
    l2 = math.sqrt(2) * r**2 / n
    kept = []

    def release(upper, error):
        grid, sigma, how = noise.approx_gaussian_plan(l2_sensitivity=l2, eps=budget.eps, delta=budget.delta,
                                                      bound=r**2, float_error=error, m=upper.size)
        sigma = max(sigma, sd_user / math.sqrt(n) / grid)
        how = noise.Hardening("discrete Gaussian", grid, l2, how.rounding, how.float_error, sigma * grid)
        draws = noise.discrete_gaussian(sigma, upper.size, rng)
        kept.append(how)
        released = _step("gaussian", "the users' reports' central equivalent", upper,
                         noise._released(noise.on_grid(upper, grid, r**2), draws, grid), sensitivity=l2, norm="l2",
                         slack=how.float_error, grid=grid, sigma=sigma, bound=r**2, shape=upper.shape)
        return released, how

    what = "noisy covariance, the central model's equivalent of the users' reports (the rows are not held)" + \
        (" (as published: claimed, not DP here)" if calibration == "as_written" else "")
    noisy = hardened_upper(problem.sigma, r, n, accountant, what, budget, release)
    return noisy, kept[0].scale * math.sqrt(n)


GAUSS_CALIBRATIONS = ("private", "public_code")


def gauss_approx(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                 calibration: str = "private", numerics: str = "idealized") -> Spectral:
    """The analytic Gaussian mechanism on Sigma at (eps, delta), positive part of the spectrum
    (Wang & Xu §4.1 baseline; Amin et al.'s G-x baselines), l2 sensitivity sqrt(2) r^2 / n of the
    upper triangle under replace-one neighbours.

    calibration="public_code" is Amin et al.'s G *as published* (google-research
    private_covariance_estimation gaussian_mechanism: find_sigma(eps, delta, 1.0) on C), i.e. the
    same analytic Gaussian mechanism at sensitivity r^2 / n. That is (eps, delta)-DP under add/remove-
    one neighbours (||x x^T||_F <= r^2) but NOT under the replace-one neighbours of Amin et al.'s
    definition (x x^T - y y^T has upper-triangle norm up to sqrt(2) r^2: sigma is sqrt(2) too small).

    numerics="hardened": the discrete Gaussian on a 2^k grid calibrated exactly to (eps, delta)
    (``noise.gaussian_release_approx``; "public_code": at its sensitivity r^2 / n)."""
    if calibration not in GAUSS_CALIBRATIONS:
        raise ValueError(f"calibration must be one of {GAUSS_CALIBRATIONS}, got {calibration!r}")
    noise.check_numerics(numerics)
    if calibration == "private":
        return dp_threshold(problem, accountant, rng, threshold=False, numerics=numerics)
    what = "noisy covariance (as published: add/remove sensitivity)"
    if numerics == "hardened":
        noisy, _ = _hardened_approx(problem, problem.radius**2 / problem.n, accountant, rng, what)
        return threshold_and_project(noisy, None)
    budget: ApproxDP = accountant.spend(accountant.total, what)
    sd = analytic_gaussian_sigma(problem.radius**2 / problem.n, budget)
    return threshold_and_project(_step("gaussian", what, upper_of(problem.sigma),
                                       problem.sigma + sd * symmetric_gaussian(problem.d, rng),
                                       sensitivity=problem.radius**2 / problem.n, norm="l2", scale=sd,
                                       shape=problem.sigma.shape), None)


# --- predicted errors (mechanisms/predictions.py) --------------------------------------------------

# The analytic Gaussian mechanism on Sigma: entry sd at l2 sensitivity sqrt(2) r^2 / n.
GAUSS_APPROX_PREDICTION = gaussian_noise(
    lambda f, budget: analytic_gaussian_sigma(math.sqrt(2) * f.r2 / f.n, budget))
