"""CoinPress covariance estimation (Biswas, Dong, Kamath & Ullman, NeurIPS 2020, arXiv 2006.06618).

The covariance estimator of CoinPress ("MVC": t calls of the one-step improvement MVCStep) keeps a
transform A whose ellipsoid {Sigma <= A^-1 A^-T} contains the covariance (invariant A Sigma A^T <= I)
and tightens it t times. Step i, with budget rho_i (composition: rho = rho_1 + ... + rho_t):

  1. W_j = A_{i-1} x_j for every row; clip W_j to the ball of radius gamma (the Gaussian tail radius:
     every A x of N(0, Sigma) data with A Sigma A^T <= I lies inside with probability >= 1 - beta_s).
  2. Z_i = (1/n) sum_j W_j W_j^T + symmetric Gaussian noise (the Gaussian mechanism, rho_i-zCDP).
  3. if i < t: U = Z_i^+ + (eta + nu) I, where eta bounds the sampling error of the empirical
     covariance and nu the spectral norm of the noise, so U >= A Sigma A^T w.h.p.; A_i = U^{-1/2} A_{i-1}.
  4. if i = t: release A_{t-1}^{-1} Z_t^+ A_{t-1}^{-T}.
(Z^+ is the PSD projection of Z: eigenvalues clipped at 0, free post-processing that keeps U invertible
and the release PSD, as in the authors' public code.)

Adaptations to this suite (GUIDE.md §1):
- Target: the *uncentred* second moment Sigma = X^T X / n (no mean estimation, no centring step).
- Initial ellipsoid: the only public information is ||x|| <= r, which gives 0 <= Sigma <= r^2 I for
  every dataset, so A_0 = I / r (the paper needs a user-supplied bound Sigma <= K I; here K = r^2).
- Clipping threshold: the paper's gamma(d, n, beta_s) (``gaussian_tail_radius``). The rows are not
  Gaussian, so gamma has no accuracy guarantee here, but privacy never depends on it: clipping is what
  bounds the sensitivity, whatever the threshold.
- Noise calibration (``calibration``): every transformed row already satisfies ||A x|| <= r ||A||_op
  (public: A depends only on earlier noisy releases). Clipping at gamma therefore releases exactly the
  same statistic as clipping at B = min(gamma, r ||A||_op), and its true l2-sensitivity is at most
  sqrt(2) B^2 / n. ``"domain"`` (default) calibrates the noise to this B; ``"paper"`` calibrates it
  to gamma as the paper does (it knows no bound on the rows). With ``"domain"`` the first iteration
  (B = min(gamma, 1) = 1, since gamma >= sqrt(d)) is GaussCov plus a PSD projection; ``"paper"`` adds
  gamma^2 ~ d times more noise.

Sensitivity (replace-one neighbours, clipped transformed rows w, w' of norm <= B):
  ||w w^T - w' w'^T||_F^2 = ||w||^4 + ||w'||^4 - 2 (w.w')^2 <= 2 B^4,
so the released upper triangle of (1/n) sum W W^T (l2 norm <= the Frobenius norm) moves by at most
Delta = sqrt(2) B^2 / n. Noise N(0, Delta^2 / (2 rho_i)) = N(0, (B^2 / (n sqrt(rho_i)))^2) on every entry
on and above the diagonal, mirrored below (``symmetric_gaussian``), is rho_i-zCDP (Dong Lemma 3).
A_{i-1} is post-processing of earlier releases, so the t steps compose adaptively to sum rho_i.

Rows versus sufficient statistics: step 1 needs only Sigma (A_0 = I / r maps the r-ball into the unit
ball and gamma >= 1, so nothing is clipped). Every later step clips by the *ellipsoidal* norm
||A_{i-1} x||, with A_{i-1} drawn at run time from the noise: it needs the rows (or, per iteration, the
clipped second moment (1/n) sum clip_B(A_{i-1} x) clip_B(A_{i-1} x)^T for that A_{i-1}), which no
statistic computed before the run can provide. ``coinpress_cov_rows`` is the full algorithm on rows;
``coinpress_cov`` (the registry entry, which sees only ``CovProblem``) is one-iteration CoinPress.

numerics="hardened" (mechanisms/noise.py), every step: the step's statistic, its upper triangle, on a 2^k grid plus
exact discrete Gaussian noise at rho_i (``noise.gaussian_release``), the sensitivity inflated by the rounding and by
a proven bound on the computed statistic's float error (``moment_float_error``: the transform A x, the clip, the
products and the sum); nu then uses the sd actually drawn. Everything after a release (PSD part, U, the next A, the
final A^-1 Z^+ A^-T) is post-processing of released values.
"""
from __future__ import annotations

import math
import numbers
from typing import Sequence

import numpy as np

from . import noise
from .gaussian import covariance_float_error, gaussian_sigma, symmetric_gaussian, upper_indices, upper_of
from .privacy import ZCDP, Accountant
from .problem import CovProblem, validate_rows
from .spectral import Spectral
from .transcript import released as _step

CALIBRATIONS = ("domain", "paper")
DEFAULT_BETA = 0.1  # failure probability of the whole run (the authors' experiments use 0.1)
LAST_STEP_SHARE = 0.75  # the authors' experiments: 3 rho / 4 on the last step, rho / (4 (t-1)) before


# --- the paper's constants -------------------------------------------------------------------------
def gaussian_tail_radius(d: int, n: int, beta: float) -> float:
    """gamma = sqrt(d + 2 sqrt(d ln(n/beta)) + 2 ln(n/beta)).

    Laurent & Massart: P(chi^2_d >= d + 2 sqrt(d x) + 2 x) <= e^-x; with x = ln(n/beta) and a union
    bound, all n rows of N(0, A Sigma A^T <= I) satisfy ||A x|| <= gamma with probability >= 1 - beta.
    """
    log_term = math.log(n / beta)
    return math.sqrt(d + 2 * math.sqrt(d * log_term) + 2 * log_term)


def sampling_eta(d: int, n: int, beta: float) -> float:
    """eta = 2 delta + delta^2, delta = sqrt(d/n) + sqrt(2 ln(2/beta) / n): with probability >= 1 - beta
    the empirical covariance of n Gaussian rows is within eta (spectral norm, relative) of the truth."""
    delta = math.sqrt(d / n) + math.sqrt(2 * math.log(2 / beta) / n)
    return 2 * delta + delta**2


def noise_nu(d: int, scale: float, beta: float) -> float:
    """nu: a (1 - beta) bound on the spectral norm of scale * SGW(d) (Bandeira & van Handel 2016 with
    explicit constants and epsilon = (ln d / d)^(1/3), as in the paper's MVCStep):
    scale (2 sqrt(d) + 2 d^(1/6) ln^(1/3) d + 6 (1 + eps) sqrt(ln d) / sqrt(ln(1 + eps))
           + 2 sqrt(2 ln(1/beta))).
    For d = 1 the matrix is one N(0, scale^2) entry: scale sqrt(2 ln(2/beta))."""
    if d == 1:
        return scale * math.sqrt(2 * math.log(2 / beta))
    log_d = math.log(d)
    eps = (log_d / d) ** (1 / 3)
    return scale * (2 * math.sqrt(d) + 2 * d ** (1 / 6) * log_d ** (1 / 3)
                    + 6 * (1 + eps) * math.sqrt(log_d) / math.sqrt(math.log1p(eps))
                    + 2 * math.sqrt(2 * math.log(1 / beta)))


def paper_rho_split(rho: float, iterations: int) -> list[float]:
    """The authors' split: rho / (4 (t-1)) on each of the first t-1 steps, 3 rho / 4 on the last
    (all of rho when t = 1)."""
    rho = ZCDP(rho).rho
    iterations = _positive_int("iterations", iterations)
    if iterations == 1:
        return [rho]
    first = (1 - LAST_STEP_SHARE) * rho / (iterations - 1)
    return [first] * (iterations - 1) + [LAST_STEP_SHARE * rho]


# --- one step ----------------------------------------------------------------------------------------
def clip_rows(W: np.ndarray, bound: float) -> np.ndarray:
    """Project every row of W onto the ball of radius ``bound``: w min(1, bound / ||w||)."""
    norms = np.linalg.norm(W, axis=1)
    factor = np.minimum(1.0, bound / np.maximum(norms, np.finfo(float).tiny))
    return W * factor[:, None]


def clipped_second_moment(W: np.ndarray, bound: float) -> np.ndarray:
    """(1/n) sum clip(w) clip(w)^T: the statistic each step releases; l2-sensitivity sqrt(2) bound^2/n."""
    clipped = clip_rows(W, bound)
    out = clipped.T @ clipped / len(W)
    return (out + out.T) / 2


def sensitivity(bound: float, n: int) -> float:
    """l2-sensitivity of the upper triangle of ``clipped_second_moment`` (replace-one neighbours)."""
    return math.sqrt(2) * bound**2 / n


def step_bound(A: np.ndarray, radius: float, gamma: float, calibration: str) -> float:
    """The norm bound B the noise is calibrated to (see the module docstring)."""
    if calibration == "paper":
        return gamma
    return min(gamma, radius * float(np.linalg.norm(A, 2)))


ROW_SLACK = 1e-8  # validated rows lie in the r-ball up to 1e-9 relative (problem._NORM_SLACK)


def moment_float_error(A: np.ndarray, radius: float, bound: float, n: int) -> float:
    """A bound on each computed entry of ``clipped_second_moment(X @ A.T, bound)``'s distance from the exact
    (1/n) sum c(A x) c(A x)^T (A the public float matrix, c the projection onto the B-ball, ||x|| <= r):
    - w = A x in floats: |w^_i - w_i| <= gamma_d sum_k |A_ik| |x_k|, so ||w^ - w||_2 <= gamma_d ||A||_F r' = eta_w;
    - c is 1-Lipschitz, and the computed clip (the norm: d products, d - 1 sums, sqrt; B / norm, min, the product)
      is within gamma_(d+4) ||c(w^)|| <= gamma_(d+4) B of c(w^) per entry: eta_c = eta_w + gamma_(d+4) B sqrt(d);
    - a product of two clipped entries within eta_c (2 B + eta_c); the sum of n products of size (B + eta_c)^2
      (``noise.sum_error_bound``), / n, and the symmetrisation's add and halving: 3 u (B + eta_c)^2 more."""
    d = A.shape[0]
    gamma = lambda k: k * noise.UNIT_ROUNDOFF / (1 - k * noise.UNIT_ROUNDOFF)  # noqa: E731 Higham's gamma_k
    eta_w = gamma(d) * float(np.linalg.norm(A)) * (1 + 1e-6) * radius * (1 + ROW_SLACK)
    eta_c = eta_w + gamma(d + 4) * bound * math.sqrt(d)
    top = (bound + eta_c) ** 2
    return (eta_c * (2 * bound + eta_c) + noise.sum_error_bound(n, top, ops_per_term=1) / n
            + 3 * noise.UNIT_ROUNDOFF * top)


def hardened_moment(moment: np.ndarray, bound: float, n: int, budget: ZCDP, float_error: float,
                    accountant: Accountant, rng: np.random.Generator, what: str) -> tuple[np.ndarray, float]:
    """The step's statistic (entries within B^2), its upper triangle released rho_i-zCDP on a 2^k grid with exact
    discrete Gaussian noise (l2-sensitivity sqrt(2) B^2 / n, inflated), mirrored; the hardening in the ledger.
    Returns the release and the sd drawn."""
    d = moment.shape[0]
    rows, cols = upper_indices(d)
    noisy, how = noise.gaussian_release(moment[rows, cols], l2_sensitivity=sensitivity(bound, n), rho=budget.rho,
                                        bound=bound**2, float_error=float_error, rng=rng)
    accountant.spend(budget, f"{what} ({how})")
    out = np.empty((d, d))
    out[rows, cols] = noisy
    out[cols, rows] = noisy
    return out, how.scale


def noisy_step(X: np.ndarray, A: np.ndarray, bound: float, budget: ZCDP, accountant: Accountant,
               rng: np.random.Generator, what: str, numerics: str = "idealized", radius: float = 1.0) -> np.ndarray:
    """Steps 1-2 of MVCStep: the clipped second moment of the rows A x plus rho-zCDP Gaussian noise.
    numerics="hardened": on a grid with exact noise (``hardened_moment``; rows in the ``radius`` ball)."""
    return _noisy_step(X, A, bound, budget, accountant, rng, what, numerics, radius)[0]


def _noisy_step(X, A, bound, budget, accountant, rng, what, numerics, radius) -> tuple[np.ndarray, float]:
    """``noisy_step`` and the sd of its noise."""
    noise.check_numerics(numerics)
    if numerics == "hardened":
        moment = clipped_second_moment(X @ A.T, bound)
        error = moment_float_error(A, radius, bound, len(X))
        return hardened_moment(moment, bound, len(X), budget, error, accountant, rng, what)
    accountant.spend(budget, what)
    moment = clipped_second_moment(X @ A.T, bound)
    scale = gaussian_sigma(sensitivity(bound, len(X)), budget)  # = bound^2 / (n sqrt(rho))
    return _step("gaussian", what, upper_of(moment), moment + scale * symmetric_gaussian(moment.shape[0], rng),
                 sensitivity=sensitivity(bound, len(X)), norm="l2", scale=scale, shape=moment.shape), scale


def _psd_part(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values, vectors = np.linalg.eigh((Z + Z.T) / 2)
    return np.maximum(values, 0.0), vectors


# --- the algorithm on rows -----------------------------------------------------------------------------
def coinpress_cov_rows(X, rho_budgets: Sequence, rng: np.random.Generator, accountant: Accountant, *,
                       radius: float = 1.0, beta: float = DEFAULT_BETA,
                       calibration: str = "domain", numerics: str = "idealized") -> np.ndarray:
    """CoinPress covariance (t = len(rho_budgets) iterations) of the uncentred Sigma = X^T X / n.

    ``rho_budgets``: rho_1..rho_t (numbers or ``ZCDP``), each spent through ``accountant`` by one
    Gaussian-mechanism step (``paper_rho_split`` gives the authors' split). Rows must lie in the ball of
    radius ``radius``. ``beta`` is split evenly over the t steps (beta_s = beta / t) for gamma, eta, nu.
    Returns the d x d PSD estimate A_{t-1}^{-1} Z_t^+ A_{t-1}^{-T}. numerics="hardened": every step on a grid with
    exact noise (module docstring).
    """
    noise.check_numerics(numerics)
    X = validate_rows(X, radius)
    budgets = _budgets(rho_budgets)
    beta = _probability("beta", beta)
    calibration = _calibration(calibration)
    n, d = X.shape
    t = len(budgets)
    beta_s = beta / t
    gamma = gaussian_tail_radius(d, n, beta_s)
    eta = sampling_eta(d, n, beta_s)

    A = np.eye(d) / radius  # A_0: 0 <= Sigma <= r^2 I for every dataset in the r-ball
    A_inv = np.eye(d) * radius  # kept alongside A, so no matrix is ever inverted
    for i, budget in enumerate(budgets, start=1):
        bound = step_bound(A, radius, gamma, calibration)
        Z, scale = _noisy_step(X, A, bound, budget, accountant, rng, f"CoinPress: iteration {i}/{t}", numerics,
                              radius)
        values, vectors = _psd_part(Z)
        if i == t:
            basis = A_inv @ vectors  # A^{-1} Z^+ A^{-T} = (A^{-1} V) diag(values) (A^{-1} V)^T
            out = (basis * values) @ basis.T
            return (out + out.T) / 2
        nu = noise_nu(d, scale, beta_s)  # the sd drawn (hardened: a little wider than the ideal)
        shifted = values + eta + nu  # U = Z^+ + (eta + nu) I, eigenvalues > 0
        A = (vectors / np.sqrt(shifted)) @ vectors.T @ A  # U^{-1/2} A
        A_inv = A_inv @ (vectors * np.sqrt(shifted)) @ vectors.T  # A^{-1} U^{1/2}
    raise AssertionError("unreachable")  # pragma: no cover


# --- the registry entry (statistics only) ---------------------------------------------------------------
def coinpress_cov(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                  iterations: int = 1, beta: float = DEFAULT_BETA,
                  calibration: str = "domain", numerics: str = "idealized") -> Spectral:
    """One-iteration CoinPress from ``problem.sigma`` alone (the whole budget on the single step).

    With A_0 = I / r the transformed rows x / r lie in the unit ball and gamma >= 1, so the clip is
    vacuous and the step's statistic is Sigma / r^2: Z = Sigma / r^2 + (B^2 / (n sqrt(rho))) SGW,
    released as r^2 Z^+. With ``calibration="domain"`` (B = 1) this is GaussCov plus a PSD projection;
    ``"paper"`` calibrates the noise to B = gamma(d, n, beta) as the paper does.

    Multi-iteration CoinPress (``iterations > 1``) is refused: from step 2 on it clips the rows by the
    ellipsoidal norm ||A_{i-1} x||, where A_{i-1} depends on the noise drawn at run time, so it needs
    the rows themselves (equivalently, for each step, (1/n) sum clip_B(A_{i-1} x) clip_B(A_{i-1} x)^T
    for that A_{i-1}), which ``CovProblem`` does not hold. Use ``coinpress_cov_rows`` on the rows.

    numerics="hardened": Sigma / r^2 (computed within covariance_float_error / r^2 + u per entry) on a grid with exact
    discrete Gaussian noise at sensitivity sqrt(2) B^2 / n.
    """
    noise.check_numerics(numerics)
    iterations = _positive_int("iterations", iterations)
    if iterations != 1:
        raise ValueError(
            f"coinpress with iterations={iterations} needs the rows: every step after the first clips "
            "||A x|| for a transform A drawn at run time, which the sufficient statistics in CovProblem "
            "cannot provide; use mechanisms.coinpress.coinpress_cov_rows(X, ...) or iterations=1"
        )
    beta = _probability("beta", beta)
    calibration = _calibration(calibration)
    n, d, r = problem.n, problem.d, problem.radius
    A0 = np.eye(d) / r
    bound = step_bound(A0, r, gaussian_tail_radius(d, n, beta), calibration)
    # The statistic of step 1 without rows: no transformed row x / r exceeds 1 <= bound.
    moment = problem.sigma / r**2
    if numerics == "hardened":
        error = covariance_float_error(r, n, d) / r**2 + noise.UNIT_ROUNDOFF * (1 + 1e-6)
        noisy, _ = hardened_moment(moment, bound, n, accountant.total, error, accountant, rng,
                                   "CoinPress: iteration 1/1")
        values, vectors = _psd_part(noisy)
        return Spectral(values * r**2, vectors)
    accountant.spend(accountant.total, "CoinPress: iteration 1/1")
    scale = gaussian_sigma(sensitivity(bound, n), accountant.total)
    values, vectors = _psd_part(_step("gaussian", "CoinPress: iteration 1/1", upper_of(moment),
                                      moment + scale * symmetric_gaussian(d, rng), sensitivity=sensitivity(bound, n),
                                      norm="l2", scale=scale, shape=moment.shape))
    return Spectral(values * r**2, vectors)


# --- validation ---------------------------------------------------------------------------------------------
def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}")
    return int(value)


def _probability(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not 0 < value < 1:
        raise ValueError(f"{name} must lie in (0, 1), got {value!r}")
    return value


def _calibration(value) -> str:
    if value not in CALIBRATIONS:
        raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {value!r}")
    return value


def _budgets(rho_budgets) -> list[ZCDP]:
    if isinstance(rho_budgets, (ZCDP, numbers.Real)) or isinstance(rho_budgets, (str, bytes)):
        raise TypeError("rho_budgets must be a sequence rho_1..rho_t (one per iteration)")
    budgets = [b if isinstance(b, ZCDP) else ZCDP(b) for b in rho_budgets]
    if not budgets:
        raise ValueError("rho_budgets must hold at least one budget (t >= 1 iterations)")
    return budgets
