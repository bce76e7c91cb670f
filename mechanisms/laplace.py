"""Pure eps-DP mechanisms of Dong, Liang & Yi 2022, Appendix I: LapCov and SeparateCov with
Laplace noise, plus the Laplace concentration bounds AdaptiveCov's noise prediction needs."""
from __future__ import annotations

import math

import numpy as np

from . import noise
from .gaussian import (_exact_or_refuse, at_level, hardened_eigenvalues, hardened_upper, mirrored_upper, paired,
                       released_sigma, separate_at_level, upper_of)
from .neighbours import REPLACE_ONE, Neighbours
from .privacy import PureDP, Accountant
from .predictions import Bound, Facts, laplace_noise
from .problem import CovProblem
from .spectral import Spectral
from .transcript import released as _step

# Constant taken for the unspecified O(log(1/beta) log d) terms of Lemmas 16-18 (our choice).
TAIL_CONSTANT = 2.0


def symmetric_laplace(d: int, rng: np.random.Generator) -> np.ndarray:
    """W ~ SLW(d): iid Lap(1) on and above the diagonal, mirrored below (Appendix I)."""
    return mirrored_upper(rng.laplace(size=(d, d)))


def lap_noisy(sigma: np.ndarray, row_bound: float, n: int, budget: PureDP,
              accountant: Accountant, rng: np.random.Generator, numerics: str = "idealized",
              neighbours: Neighbours = REPLACE_ONE, float_error: float | None = None) -> np.ndarray:
    """Sigma + sqrt(2) d r^2 / (eps n) SLW: the upper triangle of Sigma has l1-sensitivity
    sqrt(2) d r^2 / n (Lemma 12: ||x||_2 <= r gives ||x||_1 <= sqrt(d) r); (d + 1) r^2 / (2 n) under add/remove
    (mechanisms/neighbours.py). numerics="hardened": the upper triangle on a 2^k grid plus discrete Laplace noise."""
    d = sigma.shape[0]
    l1 = neighbours.covariance_l1(row_bound, n, d)
    if numerics == "hardened":
        _exact_or_refuse(neighbours, float_error)
        return hardened_upper(sigma, row_bound, n, accountant, "LapCov: noisy covariance", budget,
                              lambda upper, error: noise.laplace_release(
                                  upper, l1_sensitivity=l1, eps=budget.eps, bound=row_bound**2, float_error=error,
                                  rng=rng), float_error)
    noise.check_numerics(numerics)
    accountant.spend(budget, "LapCov: noisy covariance")
    return _step("laplace", "LapCov: noisy covariance", upper_of(sigma),
                 sigma + l1 / budget.eps * symmetric_laplace(d, rng), sensitivity=l1, norm="l1", scale=l1 / budget.eps,
                 shape=sigma.shape)


def separate_lap_noisy(sigma: np.ndarray, eigenvalues: np.ndarray | None, row_bound: float, n: int,
                       budget: PureDP, accountant: Accountant, rng: np.random.Generator,
                       numerics: str = "idealized", neighbours: Neighbours = REPLACE_ONE,
                       float_error: float | None = None, eigen=None, components: int | None = None) -> Spectral:
    """SeparateCov under eps-DP: eigenvalues + Lap(2 r^2 / (n eps/2)) (l1-sensitivity 2 r^2 / n,
    Lemma 13; r^2 / n under add/remove), eigenvectors of LapCov at eps/2, paired in descending order.
    numerics="hardened": both on a grid with exact discrete Laplace noise (gaussian.eigenvalue_float_error; ``eigen``
    and ``float_error`` as for gaussian.separate_noisy)."""
    half = budget.scaled(0.5)
    values_error, back = None, (lambda released: released)
    if eigen is not None:
        eigenvalues, values_error, back = eigen
    if eigenvalues is None:
        eigenvalues = np.linalg.eigvalsh(sigma)[::-1]
    l1 = neighbours.eigenvalues_l1(row_bound, n)
    if numerics == "hardened":
        _exact_or_refuse(neighbours, values_error)
        noisy_values = back(hardened_eigenvalues(eigenvalues, row_bound, n, accountant,
                                                 "SeparateCov (Laplace): eigenvalues", half,
                                                 lambda values, error: noise.laplace_release(
                                                     values, l1_sensitivity=l1, eps=half.eps, bound=row_bound**2,
                                                     float_error=error, rng=rng), values_error))
    else:
        noise.check_numerics(numerics)
        accountant.spend(half, "SeparateCov (Laplace): eigenvalues")
        scale = l1 / half.eps
        noisy_values = back(_step("laplace", "SeparateCov (Laplace): eigenvalues", eigenvalues,
                                  eigenvalues + rng.laplace(scale=scale, size=len(eigenvalues)), sensitivity=l1,
                                  norm="l1", scale=scale, shape=np.shape(eigenvalues)))
    return paired(noisy_values, lap_noisy(sigma, row_bound, n, half, accountant, rng, numerics, neighbours,
                                          float_error), components)


def lap_at(problem: CovProblem, m: int, budget: PureDP, accountant: Accountant, rng: np.random.Generator,
           numerics: str) -> np.ndarray:
    """LapCov on Clip(X, r 2^-m)."""
    return at_level(lap_noisy, problem, m, budget, accountant, rng, numerics)


def separate_lap_at(problem: CovProblem, m: int, budget: PureDP, accountant: Accountant, rng: np.random.Generator,
                    numerics: str, components: int | None = None) -> Spectral:
    """SeparateCov (Laplace) on Clip(X, r 2^-m)."""
    return separate_at_level(separate_lap_noisy, problem, m, budget, accountant, rng, numerics, components)


def lap_cov(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
            numerics: str = "idealized") -> np.ndarray:
    """LapCov (Appendix I); numerics="hardened": on a grid, exact noise."""
    return lap_at(problem, 0, accountant.total, accountant, rng, numerics)


def separate_lap_cov(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                     numerics: str = "idealized") -> Spectral:
    """SeparateCov with Laplace noise (Appendix I)."""
    return separate_lap_at(problem, 0, accountant.total, accountant, rng, numerics)


def amin_laplace_cov(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                     numerics: str = "idealized") -> np.ndarray:
    """Amin et al.'s L baseline: C + Lap(2d/eps) entries, symmetric (upper triangle mirrored), i.e.
    Sigma + 2 d r^2 / (eps n) SLW. The entries of xx^T sum to ||x||_1^2 <= d r^2 in absolute value,
    so C's upper triangle has l1-sensitivity <= 2 d r^2 (looser than Lemma 12's sqrt(2) d r^2: kept
    as the paper calibrates it); under add/remove one row's d r^2 (mechanisms/neighbours.py).
    numerics="hardened": on a grid with exact discrete Laplace noise."""
    d, total = problem.d, accountant.total
    factor = (problem.neighbours.scale**2 if problem.neighbours.add_remove else 2)
    l1 = factor * d * problem.radius**2 / problem.n
    sigma, error = released_sigma(problem, 0, numerics)
    if numerics == "hardened":
        return hardened_upper(sigma, problem.radius, problem.n, accountant, "L: noisy covariance", total,
                              lambda upper, error: noise.laplace_release(
                                  upper, l1_sensitivity=l1, eps=total.eps, bound=problem.radius**2,
                                  float_error=error, rng=rng), error)
    noise.check_numerics(numerics)
    budget: PureDP = accountant.spend(total, "L: noisy covariance")
    scale = l1 / budget.eps
    return _step("laplace", "L: noisy covariance", upper_of(sigma), sigma + scale * symmetric_laplace(d, rng),
                 sensitivity=l1, norm="l1", scale=scale, shape=sigma.shape)


def _tail(d: int, beta: float) -> float:
    return TAIL_CONSTANT * math.log(2 / beta) * max(math.log(d), 1.0)


def lap_vector_bound(d: int, beta: float) -> float:
    """||Y||_2 for Y ~ Lap(1)^d (Lemma 16): 3/2 sqrt(d) + O(log(1/beta) log d)."""
    return 1.5 * math.sqrt(d) + _tail(d, beta)


def lap_spectral_bound(d: int, beta: float) -> float:
    """||W||_2 for W ~ SLW(d) (Lemma 17): 3 sqrt(d) + O(log(1/beta) log d)."""
    return 3 * math.sqrt(d) + _tail(d, beta)


def lap_frobenius_bound(d: int, beta: float) -> float:
    """||W||_F for W ~ SLW(d) (Lemma 18; E||W||_F^2 <= 2 d^2): sqrt(2) d + O(log(1/beta) log d)."""
    return math.sqrt(2) * d + _tail(d, beta)


def lap_noise(tau, n: int, d: int, budget: PureDP, beta: float):
    """Predicted ClipLapCov error at threshold tau: tau^2 sqrt(2) d / (eps n) ||W||_F bound."""
    return np.square(tau) * math.sqrt(2) * d / (budget.eps * n) * lap_frobenius_bound(d, beta)


def separate_lap_noise(trace: float, tau, n: int, d: int, budget: PureDP, beta: float):
    """Predicted ClipSeparateCov (Laplace) error: 2 sqrt(tr B_vec) + B_val, the structure of Dong's
    Theorem 1 with B_vec (eigenvector-noise spectral norm) and B_val (eigenvalue-noise norm) from
    the Laplace bounds at eps/2 each, scaled to rows in the tau-ball."""
    half = budget.eps / 2
    b_vec = math.sqrt(2) * d / (half * n) * lap_spectral_bound(d, beta / 2)
    b_val = 2 / (half * n) * lap_vector_bound(d, beta / 2)
    return 2 * np.asarray(tau) * math.sqrt(max(trace, 0.0) * b_vec) + np.square(tau) * b_val


# --- predicted errors (mechanisms/predictions.py) --------------------------------------------------

# LapCov: Sigma + s W, W ~ SLW(d), s = sqrt(2) d r^2 / (eps n) (l1 sensitivity of the upper triangle).
LAP_PREDICTION = laplace_noise(lambda f, budget: math.sqrt(2) * f.d * f.r2 / (budget.eps * f.n))
# Amin's L: entries Lap(2d/eps) on C = n Sigma / r^2, so s = 2 d r^2 / (eps n) on Sigma.
AMIN_LAPLACE_PREDICTION = laplace_noise(lambda f, budget: 2 * f.d * f.r2 / (budget.eps * f.n))


def separate_lap_terms(f: Facts, budget: PureDP) -> tuple[float, float] | None:
    """Dong et al. App. I (Lemma 19), leading order, in Theorem 1's structure at eps/2 each:
    c sqrt(tr) r d^3/4 / sqrt(eps n) (the eigenvectors of LapCov) + the eigenvalues' Laplace noise
    4 sqrt(2d) r^2 / (eps n)."""
    if f.trace is None:
        return None
    return (math.sqrt(max(f.trace, 0.0)) * f.radius * f.d**0.75 / math.sqrt(budget.eps * f.n),
            4 * math.sqrt(2 * f.d) * f.r2 / (budget.eps * f.n))


SEPARATE_LAP_PREDICTION = Bound(separate_lap_terms, constant=0.789, citation="Dong App. I, Lemma 19",
                                fitted_on=("dong2022/fig7", "dong2022/fig8_trace", "dong2022/fig8_dim",
                                           "dong2022/fig8_eps"))
