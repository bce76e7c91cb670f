"""GaussCov, SeparateCov and their clipped versions under rho-zCDP (Dong, Liang & Yi 2022, §3–5)."""
from __future__ import annotations

import functools
import math

import numpy as np

from . import noise
from .privacy import ZCDP, Accountant
from .predictions import Bound, Facts, Prediction, gaussian_noise
from .exact_sums import eigenvalues_back
from .neighbours import REPLACE_ONE, Neighbours
from .problem import CovProblem
from .spectral import Spectral, from_upper, upper_vector
from .transcript import released as _step


def gaussian_sigma(l2_sensitivity: float, budget: ZCDP) -> float:
    """Noise scale of the Gaussian mechanism: N(0, Delta^2 / (2 rho)) is rho-zCDP (Dong Lemma 3)."""
    return l2_sensitivity / math.sqrt(2 * budget.rho)


def symmetric_gaussian(d: int, rng: np.random.Generator) -> np.ndarray:
    """W ~ SGW(d): iid N(0, 1) on and above the diagonal, mirrored below (Dong §3.1)."""
    return mirrored_upper(rng.standard_normal((d, d)))


def upper_indices(d: int) -> tuple[np.ndarray, np.ndarray]:
    """np.triu_indices(d), read-only and kept for d <= 1024 (a call costs ~50 us: per release in the audits)."""
    return _kept_upper_indices(d) if d <= 1024 else np.triu_indices(d)


@functools.lru_cache(maxsize=16)
def _kept_upper_indices(d: int) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = np.triu_indices(d)
    rows.flags.writeable = cols.flags.writeable = False
    return rows, cols


def upper_of(matrix: np.ndarray) -> np.ndarray:
    """A symmetric matrix's upper triangle (diagonal included), the statistic its releases' sensitivities are of."""
    rows, cols = upper_indices(matrix.shape[0])
    return matrix[rows, cols]


def mirrored_upper(draws: np.ndarray) -> np.ndarray:
    """The symmetric matrix with the upper triangle (diagonal included) of the square ``draws``, in one pass."""
    index = np.arange(len(draws))
    return np.where(index[:, None] <= index, draws, draws.T)


def gauss_noisy(sigma: np.ndarray, row_bound: float, n: int, budget: ZCDP,
                accountant: Accountant, rng: np.random.Generator, numerics: str = "idealized",
                neighbours: Neighbours = REPLACE_ONE, float_error: float | None = None) -> np.ndarray:
    """Sigma + SGW noise for rows of norm <= row_bound.

    The upper triangle of Sigma = X^T X / n has l2-sensitivity sqrt(2) row_bound^2 / n under replace-one, so the
    noise scale is row_bound^2 / (sqrt(rho) n) (Dong §3.1: 1 / (sqrt(rho) n) for the unit ball); row_bound^2 / n
    under add/remove (``neighbours``: mechanisms/neighbours.py; n the released count).
    numerics="hardened": the upper triangle on a 2^k grid plus discrete Gaussian noise (``hardened_upper``);
    ``float_error``: Sigma's per-entry float error (default ``covariance_float_error`` of n float-summed rows).
    """
    l2 = neighbours.covariance_l2(row_bound, n)
    if numerics == "hardened":
        _exact_or_refuse(neighbours, float_error)
        return hardened_upper(sigma, row_bound, n, accountant, "GaussCov: noisy covariance", budget,
                              lambda upper, error: noise.gaussian_release(
                                  upper, l2_sensitivity=l2, rho=budget.rho, bound=row_bound**2, float_error=error,
                                  rng=rng), float_error)
    noise.check_numerics(numerics)
    accountant.spend(budget, "GaussCov: noisy covariance")
    scale = gaussian_sigma(l2, budget)
    return _step("gaussian", "GaussCov: noisy covariance", upper_of(sigma),
                 sigma + scale * symmetric_gaussian(sigma.shape[0], rng), sensitivity=l2, norm="l2", scale=scale,
                 shape=sigma.shape)


def _exact_or_refuse(neighbours: Neighbours, float_error: float | None) -> None:
    """A hardened release under add/remove must be handed its statistic's float error from exact sums
    (``released_sigma``): the default bound assumes n float-summed rows, and n is private there."""
    if neighbours.add_remove and float_error is None:
        raise ValueError("a hardened release at add/remove sensitivity needs its statistic from the rows' exact sums "
                         "and their float error (released_sigma / released_eigen: mechanisms/exact_sums.py); the "
                         "default bound assumes the private row count")


def released_sigma(problem: CovProblem, m: int, numerics: str) -> tuple[np.ndarray, float | None]:
    """(Sigma of Clip(X, r 2^-m), its per-entry float error) as a release reads it: the exact sums' under add/remove
    with hardened numerics (mechanisms/exact_sums.py); else the float statistic, whose error bound
    (``covariance_float_error``) holds for n = problem.n rows summed -- refused where n is private. A native plug-in
    with hardened numerics reads its statistic here (``problem.sigma`` of an exact problem is a float sum of its bands,
    or, where the sums hold one level's products, that level's statistic as released_sigma forms it)."""
    if problem.exact is not None:
        return problem.exact.sigma(m, problem.n)
    if numerics == "hardened" and problem.neighbours.add_remove:
        raise ValueError("a hardened release at add/remove sensitivity needs the rows' exact sums (their float error "
                         "must not depend on the private row count): build the problem with "
                         "mechanisms/exact_sums.py's exact_problem")
    return problem.clipped_sigma(m), None


def released_eigen(problem: CovProblem, m: int, numerics: str):
    """(the matrix whose eigenvalues a hardened release adds noise to, its eigenvalues (descending), their float error,
    how to map released values back): under add/remove the exact sums' S / (ñ + tr S / (K tau^2))
    (mechanisms/exact_sums.py), else Sigma of Clip(X, r 2^-m) itself (``eigenvalue_float_error``)."""
    if problem.exact is not None:
        matrix, entry_error, norm_bound, rounding = problem.exact.eigen_matrix(m, problem.n)
        values = np.linalg.eigvalsh(matrix)[::-1].copy()
        d = problem.d
        error = d * entry_error + 64 * d * noise.UNIT_ROUNDOFF * norm_bound * 1.01 + rounding
        tau2 = problem.tau(m) ** 2
        return values, error, lambda released: eigenvalues_back(released, tau2)
    sigma, _ = released_sigma(problem, m, numerics)
    values = problem.eigenvalues if m <= 0 else np.linalg.eigvalsh(sigma)[::-1]
    return values, None, lambda released: released


def covariance_float_error(row_bound: float, n: int, d: int) -> float:
    """A bound on each computed entry's distance from Sigma's exact entry: a sum of n products x_i x_j
    (|x_i x_j| <= r^2), / n. Each product carries up to d + 8 roundings on the way: a row's squared norm (d
    products and d - 1 sums: clipping, its band, x x^T / ||x||^2), the clipping scale, the product, tau^2 and
    the band's 1 / n (Higham's gamma_k composes them)."""
    return noise.sum_error_bound(n, row_bound**2, ops_per_term=d + 8) / n + noise.UNIT_ROUNDOFF * row_bound**2


def eigenvalue_float_error(row_bound: float, n: int, d: int) -> float:
    """A bound on each computed eigenvalue's distance from the exact Sigma's: Sigma's entries are each within
    e = covariance_float_error (||E||_2 <= ||E||_F <= d e, Weyl), and a backward-stable symmetric
    eigensolver returns the eigenvalues of Sigma + F with ||F||_2 <= p(d) u ||Sigma||_2 (Demmel 1997, §5.2;
    LAPACK's syevd). LAPACK states p(d) only as a modest function of d: here p(d) = 64 d, with ||Sigma||_2 <= r^2
    (1 + u). An assumed constant, not a proven one: docs/privacy.md says so."""
    return d * covariance_float_error(row_bound, n, d) + 64 * d * noise.UNIT_ROUNDOFF * row_bound**2 * 1.01


def hardened_upper(sigma: np.ndarray, row_bound: float, n: int, accountant: Accountant, what: str, budget,
                   release, float_error: float | None = None) -> np.ndarray:
    """Sigma's upper triangle released by ``release(upper, float_error)`` (mechanisms/noise.py: a grid and
    exact integer noise), mirrored; the hardening (grid, rounding and float-error terms) in the ledger.
    ``float_error``: Sigma's per-entry float error (default: ``covariance_float_error`` of n float-summed rows)."""
    d = sigma.shape[0]
    error = covariance_float_error(row_bound, n, d) if float_error is None else float_error
    noisy, how = release(upper_vector(sigma), error)  # row by row: np.triu_indices' order, with no index arrays
    accountant.spend(budget, f"{what} ({how})")
    return from_upper(noisy, d)


def hardened_eigenvalues(eigenvalues: np.ndarray, row_bound: float, n: int, accountant: Accountant, what: str,
                         budget, release, float_error: float | None = None) -> np.ndarray:
    """SeparateCov's eigenvalues released by ``release(values, float_error)`` (mechanisms/noise.py), their float
    error ``eigenvalue_float_error`` (or ``float_error``); the hardening in the ledger (as ``hardened_upper``)."""
    error = eigenvalue_float_error(row_bound, n, len(eigenvalues)) if float_error is None else float_error
    noisy, how = release(eigenvalues, error)
    accountant.spend(budget, f"{what} ({how})")
    return noisy


def separate_noisy(sigma: np.ndarray, eigenvalues: np.ndarray | None, row_bound: float, n: int,
                   budget: ZCDP, accountant: Accountant, rng: np.random.Generator,
                   numerics: str = "idealized", neighbours: Neighbours = REPLACE_ONE, float_error: float | None = None,
                   eigen=None, components: int | None = None) -> Spectral:
    """SeparateCov (Dong Algorithm 1) on the covariance of rows of norm <= row_bound; numerics="hardened":
    the eigenvalues and GaussCov on a grid with exact noise (``eigenvalue_float_error``). ``eigen``: (eigenvalues,
    their float error, the map back) from ``released_eigen`` (add/remove's exact route); ``float_error``: Sigma's;
    ``components``: the pairs a PCA of that many components reads (``paired``)."""
    half = budget.scaled(0.5)
    values_error, back = None, (lambda released: released)
    if eigen is not None:
        eigenvalues, values_error, back = eigen
    if eigenvalues is None:
        eigenvalues = np.linalg.eigvalsh(sigma)[::-1]
    # Step 2: eigenvalues by the Gaussian mechanism; their l2-sensitivity is sqrt(2) r^2 / n (Lemma 10), r^2 / n
    # under add/remove (mechanisms/neighbours.py).
    l2 = neighbours.eigenvalues_l2(row_bound, n)
    if numerics == "hardened":
        _exact_or_refuse(neighbours, values_error)
        noisy_values = back(hardened_eigenvalues(eigenvalues, row_bound, n, accountant, "SeparateCov: eigenvalues",
                                                 half, lambda values, error: noise.gaussian_release(
                                                     values, l2_sensitivity=l2, rho=half.rho, bound=row_bound**2,
                                                     float_error=error, rng=rng), values_error))
    else:
        noise.check_numerics(numerics)
        accountant.spend(half, "SeparateCov: eigenvalues")
        scale = gaussian_sigma(l2, half)
        noisy_values = back(_step("gaussian", "SeparateCov: eigenvalues", eigenvalues,
                                  eigenvalues + scale * rng.standard_normal(len(eigenvalues)), sensitivity=l2,
                                  norm="l2", scale=scale, shape=np.shape(eigenvalues)))
    # Steps 3-5: eigenvectors of GaussCov(X, rho/2), paired with the values in descending order.
    return paired(noisy_values, gauss_noisy(sigma, row_bound, n, half, accountant, rng, numerics, neighbours,
                                            float_error), components)


def paired(noisy_values: np.ndarray, noisy_matrix: np.ndarray, components: int | None = None) -> Spectral:
    """SeparateCov's release (Dong Algorithm 1, steps 3-5): the noisy matrix's eigenvectors from eigh (not SVD, which
    flips signs), paired in descending order with the released values, which keep the order of the true eigenvalues.
    ``components`` (a PCA of k components; post-processing): only the pairs down to the deepest position among the k
    largest released values (the ones a PCA reads), those vectors alone computed (LAPACK's syevr on an index range:
    issue 61)."""
    d = len(noisy_values)
    if components is None or components >= d:
        _, vectors = np.linalg.eigh(noisy_matrix)
        return Spectral(noisy_values, vectors[:, ::-1])
    deepest = int(np.argsort(-noisy_values, kind="stable")[:components].max())
    top = Spectral.top(noisy_matrix, deepest + 1)
    return Spectral(noisy_values[:deepest + 1], top.vectors[:, ::-1])


def gauss_cov(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
              numerics: str = "idealized") -> np.ndarray:
    """GaussCov: Sigma + SGW noise of scale r^2 / (sqrt(rho) n); numerics="hardened": on a grid, exact noise."""
    return gauss_at(problem, 0, accountant.total, accountant, rng, numerics)


def at_level(release, problem: CovProblem, m: int, budget, accountant: Accountant, rng: np.random.Generator,
             numerics: str):
    """``release`` (gauss_noisy, laplace.lap_noisy) on Clip(X, r 2^-m) as the problem's neighbours and numerics read
    it (``released_sigma``)."""
    sigma, error = released_sigma(problem, m, numerics)
    return release(sigma, problem.tau(m), problem.n, budget, accountant, rng, numerics, problem.neighbours, error)


def separate_at_level(release, problem: CovProblem, m: int, budget, accountant: Accountant,
                      rng: np.random.Generator, numerics: str, components: int | None = None) -> Spectral:
    """``release`` (separate_noisy, laplace.separate_lap_noisy) on Clip(X, r 2^-m), its eigenvalues as
    ``released_eigen`` gives them under add/remove's exact sums; ``components``: a PCA's (``paired``)."""
    sigma, error = released_sigma(problem, m, numerics)
    eigen = released_eigen(problem, m, numerics) if problem.exact is not None else None
    eigenvalues = problem.eigenvalues if m <= 0 and eigen is None else None
    return release(sigma, eigenvalues, problem.tau(m), problem.n, budget, accountant, rng, numerics,
                   problem.neighbours, error, eigen, components=components)


def gauss_at(problem: CovProblem, m: int, budget: ZCDP, accountant: Accountant, rng: np.random.Generator,
             numerics: str) -> np.ndarray:
    """GaussCov on Clip(X, r 2^-m)."""
    return at_level(gauss_noisy, problem, m, budget, accountant, rng, numerics)


def separate_at(problem: CovProblem, m: int, budget: ZCDP, accountant: Accountant, rng: np.random.Generator,
                numerics: str, components: int | None = None) -> Spectral:
    """SeparateCov on Clip(X, r 2^-m)."""
    return separate_at_level(separate_noisy, problem, m, budget, accountant, rng, numerics, components)


def separate_cov(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                 numerics: str = "idealized") -> Spectral:
    """SeparateCov (Dong Algorithm 1): half the budget on eigenvalues, half on eigenvectors."""
    return separate_at(problem, 0, accountant.total, accountant, rng, numerics)


def clip_exponent(problem: CovProblem, tau: float) -> int:
    """m with tau = r 2^-m; the precomputed band statistics support exactly these thresholds."""
    m = math.log2(problem.radius / tau) if tau > 0 else float("nan")
    if not (m >= 0 and float(m).is_integer()):
        raise ValueError(
            f"clipping threshold tau={tau!r} must be radius * 2^-m for an integer m >= 0 "
            f"(radius={problem.radius:g})"
        )
    return int(m)


def clip_gauss_cov(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                   tau: float, numerics: str = "idealized") -> np.ndarray:
    """ClipGaussCov (Dong §5.1): GaussCov on Clip(X, tau) / tau, scaled back by tau^2."""
    return gauss_at(problem, clip_exponent(problem, tau), accountant.total, accountant, rng, numerics)


def clip_separate_cov(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                      tau: float, numerics: str = "idealized") -> Spectral:
    """ClipSeparateCov (Dong §5.1): SeparateCov on Clip(X, tau) / tau, scaled back by tau^2."""
    return separate_at(problem, clip_exponent(problem, tau), accountant.total, accountant, rng, numerics)


def zero_cov(problem: CovProblem, accountant: Accountant, rng: np.random.Generator) -> np.ndarray:
    """The zero matrix: data-independent, spends nothing; its error is ||Sigma||_F <= tr."""
    return np.zeros((problem.d, problem.d))


def project_eigenvalues(values: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection of ``values`` onto {u >= 0, sum u <= total} (Dong Lemma 11)."""
    positive = np.maximum(values, 0.0)
    if positive.sum() <= total:
        return positive
    # Onto the simplex {u >= 0, sum u = total}: u = max(v - theta, 0) with the sort-based theta.
    v = np.sort(values)[::-1]
    cumulative = np.cumsum(v) - total
    k = np.nonzero(v - cumulative / np.arange(1, len(v) + 1) > 0)[0][-1]
    return np.maximum(values - cumulative[k] / (k + 1), 0.0)


def projection_cov(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                   numerics: str = "idealized") -> Spectral:
    """The projection mechanism (Dong Appendix E): GaussCov, then the Frobenius-nearest covariance of
    some dataset in the r-ball, {PSD, tr <= r^2}: one eigendecomposition and the eigenvalue
    projection of Lemma 11 (post-processing, so rho-zCDP)."""
    values, vectors = np.linalg.eigh(gauss_at(problem, 0, accountant.total, accountant, rng, numerics))
    return Spectral(project_eigenvalues(values, problem.radius**2), vectors)


# --- predicted errors (mechanisms/predictions.py) --------------------------------------------------

# GaussCov: Sigma + s W, W ~ SGW(d), s = sqrt(2) r^2 / n / sqrt(2 rho) = r^2 / (sqrt(rho) n) (Dong §3.1).
GAUSS_PREDICTION = gaussian_noise(lambda f, budget: f.r2 / (math.sqrt(budget.rho) * f.n))
# The zero matrix: ||0 - Sigma||_F = ||Sigma||_F; in the Mahalanobis metric ||-I||_F = sqrt d.
ZERO_PREDICTION = Prediction(lambda f, budget: f.fro_sigma, mahalanobis=lambda f, budget: math.sqrt(f.d))


def separate_terms(f: Facts, budget: ZCDP) -> tuple[float, float] | None:
    """Dong et al. Theorem 1, leading order: ||S_Sep - Sigma||_F <= c sqrt(tr) r d^1/4 / (rho^1/4 sqrt n)
    + sqrt(2d) r^2 / (sqrt(rho) n) (the theorem's constant is 21.25 sqrt 2 with upsilon(d) -> 2 sqrt d;
    the second term is the eigenvalue noise, E||Y||_2 ~ sqrt d, kept as is)."""
    if f.trace is None:
        return None
    return (math.sqrt(max(f.trace, 0.0)) * f.radius * f.d**0.25 / (budget.rho**0.25 * math.sqrt(f.n)),
            math.sqrt(2 * f.d) * f.r2 / (math.sqrt(budget.rho) * f.n))


SEPARATE_PREDICTION = Bound(separate_terms, constant=0.327, citation="Dong Thm 1",
                            fitted_on=("dong2022/fig2", "dong2022/fig3a", "dong2022/fig3b", "dong2022/fig3c",
                                       "dong2022/fig3d"))
