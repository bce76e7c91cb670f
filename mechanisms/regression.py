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

from .privacy import PureDP, Accountant
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
    """A mechanism's output that is a ridge model, not a covariance matrix."""

    weights: np.ndarray


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
