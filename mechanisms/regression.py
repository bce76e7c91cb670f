"""Ridge regression from a (private) covariance matrix (Amin et al. 2019 §1.1) and the output-
perturbation baseline of Chaudhuri, Monteleoni & Sarwate 2011 (Amin et al. Appendix C).

Amin's model, divided through by n: predict column t (y) from the others (A) with
    w_alpha = argmin_w  J(w) = (1/2n) sum_j (w^T a_j - y_j)^2 + alpha ||w||^2
            = (Sigma_AA + 2 alpha I)^-1 Sigma_Ay,              Sigma = X^T X / n,
so any estimate of Sigma gives a model, for every alpha and target, at no further privacy cost.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import noise
from .gaussian import covariance_float_error, gaussian_sigma, released_sigma, upper_indices
from .privacy import PureDP, ZCDP, Accountant
from .problem import CovProblem
from .transcript import released as _step


@dataclass(frozen=True)
class RidgeTask:
    target: int  # column predicted from the others
    alpha: float  # regularisation weight of J above

    def __post_init__(self):
        if not (isinstance(self.alpha, (int, float)) and math.isfinite(self.alpha) and self.alpha > 0):
            raise ValueError(f"ridge alpha must be a finite number > 0, got {self.alpha!r}")

    def blocks(self, sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """(Sigma_AA, Sigma_Ay, Sigma_yy) of Amin §1.1's block form."""
        d = sigma.shape[0]
        if not 0 <= self.target < d:
            raise ValueError(f"ridge target column {self.target} is outside 0..{d - 1}")
        rest = np.delete(np.arange(d), self.target)
        return sigma[np.ix_(rest, rest)], sigma[rest, self.target], float(sigma[self.target, self.target])

    def weights(self, sigma: np.ndarray) -> np.ndarray:
        """w_alpha = (Sigma_AA + 2 alpha I)^-1 Sigma_Ay (Amin §1.1, divided by n)."""
        saa, say, _ = self.blocks(sigma)
        return np.linalg.solve(saa + 2 * self.alpha * np.eye(len(say)), say)

    def objective(self, w: np.ndarray, sigma: np.ndarray) -> float:
        """J(w) = 1/2 (w^T Sigma_AA w - 2 w^T Sigma_Ay + Sigma_yy) + alpha ||w||^2."""
        saa, say, syy = self.blocks(sigma)
        return float(0.5 * (w @ saa @ w - 2 * w @ say + syy) + self.alpha * w @ w)


@dataclass(frozen=True)
class RidgeRelease:
    """A mechanism's output that is a ridge model, not a covariance matrix. ``intercept``: None where the line fits
    rows centred elsewhere (AdaSSP: PrivateRidge's private mean gives it), else its own (TukeyEM). ``passed``: False
    where a propose-test-release line gave its documented "no output" (zero weights)."""

    weights: np.ndarray
    intercept: float | None = None
    passed: bool = True
    # the weights' covariance from the line's own noise (post-processing of its releases and public scales; AdaSSP),
    # None where the line gives none (TukeyEM)
    noise_covariance: np.ndarray | None = None


def ridge_noise_covariance(inverse: np.ndarray, w: np.ndarray, sd_xx: float, sd_xy: float) -> np.ndarray:
    """Cov(w) to first order (the delta method) for w = M^-1 s_xy, M = S_xx + lam I, where S_xx carries symmetric
    noise with iid upper-triangle entries of sd ``sd_xx`` and s_xy independent entries of sd ``sd_xy``: dw = M^-1
    (e_xy - E_xx w), Cov(E_xx w) = sd_xx^2 (||w||^2 I + w w^T - diag(w^2)) (E_ij = E_ji counted once)."""
    inner = sd_xy**2 * np.eye(len(w)) + sd_xx**2 * ((w @ w) * np.eye(len(w)) + np.outer(w, w) - np.diag(w * w))
    return inverse @ inner @ inverse.T


def output_perturbation_sensitivity(alpha: float, n: int) -> float:
    """l2-sensitivity of w_alpha for rows with ||(a, y)|| <= 1 (Chaudhuri et al. 2011, Cor. 8):
    J's regulariser alpha ||w||^2 is (2 alpha)-strongly convex, so ||w - w'|| <= 2 L / (n 2 alpha).
    Both minimisers satisfy alpha ||w||^2 <= J(0) <= 1/2, i.e. ||w|| <= B = 1/sqrt(2 alpha); on that
    ball the loss gradient (w^T a - y) a has norm <= |w^T a - y| <= sqrt(B^2 + 1) (Cauchy-Schwarz)."""
    lipschitz = math.sqrt(1 + 1 / (2 * alpha))
    return lipschitz / (n * alpha)


def output_perturbation(problem: CovProblem, accountant: Accountant, rng: np.random.Generator) -> RidgeRelease:
    """eps-DP ridge model: w_alpha + b, density of b proportional to exp(-eps ||b|| / Delta)
    (Chaudhuri et al. 2011, Algorithm 1): ||b|| ~ Gamma(d - 1, Delta / eps), direction uniform."""
    task: RidgeTask | None = problem.ridge
    if task is None:
        raise ValueError("output_perturbation needs a ridge task: a dataset with a regression target "
                         "and the config key ridge_alpha")
    if problem.radius != 1.0:
        raise ValueError(f"output_perturbation assumes rows in the unit ball, got radius {problem.radius}")
    budget: PureDP = accountant.spend(accountant.total, "ridge model + Gamma-norm noise")
    w = task.weights(problem.sigma)
    scale = output_perturbation_sensitivity(task.alpha, problem.n) / budget.eps
    direction = rng.standard_normal(len(w))
    direction /= np.linalg.norm(direction)
    return RidgeRelease(_step("gamma-norm", "ridge model + Gamma-norm noise", w,
                              w + rng.gamma(shape=len(w), scale=scale) * direction,
                              sensitivity=output_perturbation_sensitivity(task.alpha, problem.n), norm="l2",
                              scale=scale))


# --- AdaSSP (Wang 2018) ---------------------------------------------------------------------------------------------

ADASSP_FAILURE = 0.05  # the failure probability of AdaSSP's high-probability bounds (Wang's rho)


def adassp(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
           failure: float = ADASSP_FAILURE, numerics: str = "idealized") -> RidgeRelease:
    """AdaSSP (Wang 2018, "Revisiting differentially private linear regression", Algorithm 2) on the rows [a, y] of the
    problem's ridge task, each in the r-ball (so ||a|| <= r and |y| <= r: Wang's bounds X = Y = r), in thirds of the
    budget (zCDP; an (eps, delta) claim runs at the rho implying it):

    1. lambda_min(Sigma_AA) by the Gaussian mechanism (sensitivity r^2 / n: Weyl), less its one-sided tail
       sd sqrt(2 log(3 / failure)), floored at 0: a private lower bound l~ on the data's own curvature;
    2. Sigma_AA's upper triangle by the Gaussian mechanism (sqrt(2) r^2 / n; r^2 / n under add/remove);
    3. Sigma_Ay by the Gaussian mechanism (||a y - a' y'|| <= ||a|| |y| + ||a'|| |y'| <= r^2, as ||a|| |y| <= r^2 / 2
       on the sphere; r^2 / (2n) under add/remove);
    4. the penalty lam = max(0, s sqrt(d log(2 d^2 / failure)) - l~), s step 2's noise sd: Wang's bound on the noise's
       spectral norm, less the curvature the data already have (post-processing);
    w = (Sigma~_AA + lam I)^-1 Sigma~_Ay. The task's alpha is not used: AdaSSP chooses its own penalty.

    numerics="hardened": each step on a grid with exact noise (mechanisms/noise.py; under add/remove from the exact
    sums, mechanisms/exact_sums.py, entries clipped to [-r^2, r^2], whose smallest eigenvalue moves by at most the
    Frobenius norm of a row's step)."""
    task: RidgeTask | None = problem.ridge
    if task is None:
        raise ValueError("adassp needs a ridge task: a dataset with a regression target (the config key ridge_alpha)")
    if not 0 < failure < 1:
        raise ValueError(f"failure must lie in (0, 1), got {failure!r}")
    noise.check_numerics(numerics)
    total: ZCDP = accountant.total
    third = total.scaled(1 / 3)
    r, n, neighbours = problem.radius, problem.n, problem.neighbours
    sigma, entry_error = released_sigma(problem, 0, numerics)
    if entry_error is None and numerics == "hardened":  # float sums of n public rows (replace-one)
        entry_error = covariance_float_error(r, n, problem.d)
    bound = r**2
    rest = np.delete(np.arange(problem.d), task.target)
    d = len(rest)
    saa, say = sigma[np.ix_(rest, rest)], sigma[rest, task.target]
    # one eigenvalue moves by at most ||x x^T - x' x'^T||_2 <= r^2 (replace-one: Weyl, both rank-one terms PSD) or
    # ||x x^T||_F (add/remove; with the exact sums' entry clipping, at most the step's Frobenius norm)
    l_min = (neighbours.scale * r) ** 2 / n if neighbours.add_remove else r**2 / n
    l_aa = neighbours.covariance_l2(r, n)
    l_ay = (neighbours.scale * r) ** 2 / (2 * n) if neighbours.add_remove else r**2 / n
    curvature = float(np.linalg.eigvalsh(saa)[0])
    # eigh's backward error on a matrix of entries within [-bound, bound] (||.||_2 <= d bound; LAPACK's p(d) = 64 d,
    # as gaussian.eigenvalue_float_error) plus the entries' own errors
    curvature_error = None if entry_error is None else \
        d * entry_error + 64 * d * noise.UNIT_ROUNDOFF * d * bound * 1.01
    rows, cols = upper_indices(d)

    def gaussian(what: str, statistic: np.ndarray, sensitivity: float, error: float | None) -> tuple[np.ndarray, float]:
        """(the release, its noise sd) at a third of the budget."""
        if numerics == "hardened":
            out, how = noise.gaussian_release(statistic, l2_sensitivity=sensitivity, rho=third.rho, bound=bound,
                                              float_error=error, rng=rng)
            accountant.spend(third, f"AdaSSP: {what} ({how})")
            return out, how.scale
        accountant.spend(third, f"AdaSSP: {what}")
        sd = gaussian_sigma(sensitivity, third)
        return _step("gaussian", f"AdaSSP: {what}", statistic, statistic + sd * rng.standard_normal(statistic.shape),
                     sensitivity=sensitivity, norm="l2", scale=sd, shape=statistic.shape), sd

    # Step 1: a private lower bound on lambda_min(Sigma_AA)
    noisy_min, sd_min = gaussian("smallest eigenvalue", np.array([curvature]), l_min, curvature_error)
    lower = max(float(noisy_min[0]) - sd_min * math.sqrt(2 * math.log(3 / failure)), 0.0)
    # Steps 2-3: the sufficient statistics
    noisy_upper, sd_aa = gaussian("Sigma_AA", saa[rows, cols], l_aa, entry_error)
    noisy_aa = np.empty((d, d))
    noisy_aa[rows, cols] = noisy_upper
    noisy_aa[cols, rows] = noisy_upper
    noisy_ay, sd_ay_noise = gaussian("Sigma_Ay", say, l_ay, entry_error)
    # Step 4: the penalty, sized to the noise (post-processing)
    penalty = max(0.0, sd_aa * math.sqrt(d * math.log(2 * d * d / failure)) - lower)
    weights = np.linalg.lstsq(noisy_aa + penalty * np.eye(d), noisy_ay, rcond=None)[0]
    inverse = np.linalg.pinv(noisy_aa + penalty * np.eye(d))  # post-processing: the weights' noise to first order
    return RidgeRelease(weights, noise_covariance=ridge_noise_covariance(inverse, weights, sd_aa, sd_ay_noise))
