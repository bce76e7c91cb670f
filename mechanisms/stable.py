"""Stable covariance and the Gaussian sampling mechanism (lecture notes on DP covariance estimation:
Brown, Hopkins & Smith 2023 for leverage filtering, Alabi et al. 2023 for Gaussian sampling).

The estimator needs **no bound on the rows' norms**: leverage scores l_S(i) = x_i^T (X_S^T X_S)^{-1} x_i
are invariant under x -> A x for every invertible A, and so is everything below (up to the final
sampling noise, which is itself of the form Sigma_w^{1/2} (noise) Sigma_w^{1/2}). It therefore reads the
raw rows ``problem.rows`` (CovProblem.rows, filled from Data.rows_unbounded), not the clipped ones.

Algorithms (numbering of the notes):

- Alg 1 ``gaussian_sampling(sigma, m, rng)``: m samples y ~ N(0, Sigma_hat), release (1/m) sum y y^T.
- Alg 2 ``greedy_filter``: repeat { OUT = {i in S : l_S(i) > L}; S -= OUT } until OUT is empty. Each
  round computes the leverages of all points from ONE Cholesky factorisation of X_S^T X_S
  (``_gram_factor``, counted by the tests) and one triangular solve, never an inverse per point.
- Alg 3 ``stable_covariance``: S_j = filter at threshold e^{j/k} L0, j = 0..2k;
  d_hat = min{k, min_{0<=j<=k} (n - |S_j| + j)};  w_i = (1/k) sum_{j=k+1}^{2k} 1{i in S_j}.
  The notes print "n - |S_j| - j"; with a minus, completeness (d_hat = 0 on safe data) would fail
  (j = k would give -k), so this is the "+ j" of Brown-Hopkins-Smith's score: removing few points at a
  low threshold is what "close to safe" means. All 2k + 1 filters start from S = [n], so round one is
  shared; the filters run from the largest threshold down, each warm-started from the previous set
  (``_Filter``: provably the same sets), so a round is computed only when the set changes.
- ``stable_gsampling`` (the registry mechanism): propose-test-release on d_hat, then Alg 1 on the
  weighted covariance Sigma_w = sum w_i x_i x_i^T / sum w_i.

Parameters (all public functions of n, d, eps, delta; derivation in ``stable_parameters``):

- L0 = chi2_{d}^{-1}(1 - beta/n) / (n (1 - sqrt(d/n))^2), beta = 1. For Gaussian rows (any covariance:
  affine invariance) l(i) = z_i^T (Z^T Z)^{-1} z_i <= ||z_i||^2 / lambda_min(Z^T Z) with ||z_i||^2 ~
  chi2_d and lambda_min(Z^T Z) ~ n (1 - sqrt(d/n))^2, so about beta points exceed L0: d_hat is then 0
  or a few units (completeness), far below the PTR threshold. This is the notes' "expect d/n" with the
  max-of-n margin.
- PTR with (eps1, delta1) = (f eps, delta/2), f = ``ptr_fraction`` = 0.1: d_hat has sensitivity 2
  (property 1), so d_hat + Lap(2/eps1) is eps1-DP. Release only if d_hat + Lap(2/eps1) < t = k/2. For
  the release to be safe we need d_hat(x) <= k - 3 (then d_hat(x') < k too and property 4 applies), i.e.
  P[pass | d_hat >= k - 2] = exp(-(k - 2 - t) eps1/2)/2 <= delta1, which holds for
  k = 2 ceil((2/eps1) ln(1/(2 delta1)) + 2). On safe data (d_hat ~ 0) the test fails with probability
  exp(-t eps1/2)/2 <= delta1: essentially never.
- Sensitivity of Sigma_w in the Mahalanobis distance d_M of the notes' claim. Let A = sum w_i x_i x_i^T
  on x and A' on a neighbour x' (row r replaced). ||A^{-1/2} (A' - A) A^{-1/2}||_F <= sum_i |rank-one
  change_i| l_A(i); soundness (property 3) bounds every weighted leverage by 20 L0, and the weight mass
  that changes is ||w - w'||_1 <= 2 (property 4) off row r plus w_r + w'_r <= 2 on row r, so c = 80 L0.
  Points with weight only under x' have leverage under A at most 20 L0 / (1 - D) when d_M(A, A') <= D;
  D (1 - D) <= c gives D <= c / (1 - 2c) (for c <= 1/4). Normalising by W = sum w_i >= n - k (d_hat < k
  implies |S_{k+1}| > n - k), with |W - W'| <= 2:
      Delta = (1 + 2/(n - k)) c / (1 - 2c) + 2 sqrt(d) / (n - k).
  This is a derivation *sketch* from the notes' four properties (which tests/test_stable.py checks
  empirically), not a proof; the constants are the notes' (20 L0, and 8 in the claim below).
- m = floor(eps2^2 / (8 Delta^2 ln(1/delta2))) with (eps2, delta2) = ((1 - f) eps, delta/2): the
  largest m of the notes' claim for Alg 1, which needs Delta <= eps2 / (8 ln(1/delta2)) (equivalently
  m >= 8 ln(1/delta2)) and eps2, delta2 in (0, 1). When n is too small for that, the mechanism cannot
  run at all: a public fact, raised as ``InsufficientData`` before the data are touched.

Composition: the PTR test is (eps1, delta1)-DP together with the sampling step's (eps2, delta2): the
whole (eps, delta) is charged through the accountant before anything is computed (whether or not the
test passes, so the ledger is the same for every dataset). Failure: ``PTRFailed`` (on_fail="raise") or
the documented "no output" release, the zero matrix (on_fail="zero"; data-independent, so free).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import linalg, stats

from .privacy import ApproxDP
from .problem import CovProblem

SOUNDNESS_FACTOR = 20.0  # property 3 of the notes: weighted leverage <= 20 L0 wherever w_i > 0
_CHUNK = 1 << 17  # rows per block of the triangular solve (bounds the temporary d x chunk array)


class StableReleaseFailed(RuntimeError):
    """The stable covariance estimator released nothing (base class)."""


class PTRFailed(StableReleaseFailed):
    """The private test found the data too far from 'safe' (no leverage outliers): no output."""


class InsufficientData(StableReleaseFailed, ValueError):
    """n is too small for the Gaussian sampling claim at this budget (a public fact: no data read)."""


# ---------------------------------------------------------------------------------------------------
# Parameters


@dataclass(frozen=True)
class StableParameters:
    L0: float  # base leverage threshold
    k: int  # number of threshold steps per e-fold (2k + 1 filters)
    threshold: float  # PTR threshold t on d_hat + Lap(2/eps1)
    sensitivity: float  # Delta: Mahalanobis sensitivity of Sigma_w when d_hat < k
    m: int  # Gaussian sampling: number of samples
    ptr: ApproxDP  # budget of the test
    sampling: ApproxDP  # budget of Alg 1

    @property
    def laplace_scale(self) -> float:
        return 2.0 / self.ptr.eps


def default_L0(n: int, d: int, beta: float = 1.0) -> float:
    """chi2_d quantile at 1 - beta/n over n (1 - sqrt(d/n))^2: about beta Gaussian points exceed it."""
    if n <= d:
        raise InsufficientData(f"need n > d for leverage scores, got n={n}, d={d}")
    return float(stats.chi2.isf(min(beta / n, 0.5), d) / (n * (1 - math.sqrt(d / n)) ** 2))


def ptr_k(eps1: float, delta1: float) -> int:
    """Smallest even k with P[d_hat + Lap(2/eps1) < k/2 | d_hat >= k - 2] <= delta1."""
    return 2 * math.ceil((2 / eps1) * math.log(1 / (2 * delta1)) + 2)


def mahalanobis_sensitivity(L0: float, n: int, d: int, k: int) -> float:
    """Delta of the module docstring: d_M(Sigma_w(x), Sigma_w(x')) for neighbours with d_hat < k."""
    c = 4 * SOUNDNESS_FACTOR * L0
    if c >= 0.25 or n - k <= 2:
        return math.inf
    W = n - k
    return (1 + 2 / W) * c / (1 - 2 * c) + 2 * math.sqrt(d) / W


def stable_parameters(n: int, d: int, budget: ApproxDP, *, ptr_fraction: float = 0.1,
                      beta: float = 1.0, L0: float | None = None, k: int | None = None) -> StableParameters:
    """L0, k, the PTR threshold, Delta and m for n rows in R^d at (eps, delta) (module docstring).

    Raises InsufficientData when n is too small for the Gaussian sampling claim (Delta too large)."""
    if not 0 < ptr_fraction < 1:
        raise ValueError(f"ptr_fraction must lie in (0, 1), got {ptr_fraction!r}")
    ptr = ApproxDP(ptr_fraction * budget.eps, budget.delta / 2)
    sampling = ApproxDP(budget.eps - ptr.eps, budget.delta - ptr.delta)
    if sampling.eps >= 1:
        raise ValueError(f"the Gaussian sampling claim needs eps2 < 1, got eps2 = {sampling.eps:g} "
                         f"(eps = {budget.eps:g}, ptr_fraction = {ptr_fraction:g})")
    L0 = default_L0(n, d, beta) if L0 is None else float(L0)
    k = ptr_k(ptr.eps, ptr.delta) if k is None else int(k)
    delta_m = mahalanobis_sensitivity(L0, n, d, k)
    log_term = math.log(1 / sampling.delta)
    if not delta_m <= sampling.eps / (8 * log_term):
        raise InsufficientData(
            f"n = {n} is too small for (eps2, delta2) = ({sampling.eps:g}, {sampling.delta:g}) in d = {d}: "
            f"the sensitivity {delta_m:.3g} (80 L0 with L0 = {L0:.3g}) exceeds eps2 / (8 ln(1/delta2)) = "
            f"{sampling.eps / (8 * log_term):.3g}")
    m = math.floor(sampling.eps**2 / (8 * delta_m**2 * log_term))
    return StableParameters(L0, k, k / 2, delta_m, m, ptr, sampling)


# ---------------------------------------------------------------------------------------------------
# Alg 1: Gaussian sampling


def gaussian_sampling(sigma: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """Alg 1: (1/m) sum_{i<=m} y_i y_i^T with y_i ~ N(0, sigma) iid (sigma PSD)."""
    if int(m) != m or m < 1:
        raise ValueError(f"m must be an integer >= 1, got {m!r}")
    values, vectors = np.linalg.eigh((sigma + sigma.T) / 2)
    root = vectors * np.sqrt(np.clip(values, 0, None))  # root root^T = sigma
    Y = rng.standard_normal((int(m), len(sigma))) @ root.T
    return Y.T @ Y / m


# ---------------------------------------------------------------------------------------------------
# Alg 2 and 3: leverage filtering


def _gram_factor(A: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor of X_S^T X_S: the one factorisation per filtering round."""
    return np.linalg.cholesky(A)


def leverages(X: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
    """l_S(i) = x_i^T (X_S^T X_S)^{-1} x_i for every row i (S = ``keep``, default all rows), from one
    Cholesky factorisation; +inf for every row when X_S^T X_S is singular."""
    XS = X if keep is None else X[keep]
    try:
        factor = _gram_factor(XS.T @ XS)
    except np.linalg.LinAlgError:
        return np.full(len(X), np.inf)
    out = np.empty(len(X))
    for start in range(0, len(X), _CHUNK):
        block = linalg.solve_triangular(factor, X[start:start + _CHUNK].T, lower=True, check_finite=False)
        out[start:start + _CHUNK] = np.einsum("ij,ij->j", block, block)
    return out


class _Filter:
    """Greedy leverage filtering of one dataset at decreasing thresholds, warm-started.

    Let T*(L) be the largest S with every l_S(i) <= L (unique, as the notes say). Started from any
    superset of T*(L), Alg 2 ends at T*(L): a point i of T* has l_S(i) <= l_{T*}(i) <= L in every
    superset S (more rows, larger Gram matrix), so it is never removed, and the end set is valid, hence
    T*(L) by maximality. T*(L) grows with L, so the filters of Alg 3 can run from the largest threshold
    down, each starting where the previous one ended: exactly the sets of 2k + 1 independent filters,
    but a round (one factorisation) is computed only when the set changes, and memory stays O(n)."""

    def __init__(self, X: np.ndarray):
        self.X = X
        self.keep = np.ones(len(X), dtype=bool)
        self.lev = leverages(X)  # of the current S (rows outside S: stale, ignored)
        self.rounds = 1

    def run(self, L: float, limit: int | None = None) -> np.ndarray | None:
        """Alg 2 at threshold L from the current S (which must contain T*(L)); returns S (a view), or
        None as soon as ``limit`` rows or more are removed in all (when given)."""
        while True:
            out = self.keep & (self.lev > L)
            if not out.any():
                return self.keep
            self.keep &= ~out
            if limit is not None and len(self.keep) - self.keep.sum() >= limit:
                return None
            self.lev = leverages(self.X, self.keep)
            self.rounds += 1


def greedy_filter(X, L: float) -> np.ndarray:
    """Alg 2: the boolean mask of S after greedy leverage filtering at threshold L."""
    X = np.asarray(X, dtype=float)
    return _Filter(X).run(L).copy()


@dataclass(frozen=True)
class StableCovariance:
    d_hat: int  # Alg 3's score (distance to safety), capped at k
    w: np.ndarray  # weights in [0, 1]
    sizes: np.ndarray  # |S_j|, j = 0..2k
    factorisations: int  # filtering rounds computed (one factorisation each)


def stable_covariance(X, L0: float, k: int) -> StableCovariance:
    """Alg 3: filters at e^{j/k} L0 (j = 0..2k), the score d_hat and the weights w."""
    X = np.asarray(X, dtype=float)
    if not (L0 > 0 and int(k) == k and k >= 1):
        raise ValueError(f"need L0 > 0 and an integer k >= 1, got L0={L0!r}, k={k!r}")
    n, k = len(X), int(k)
    filters = _Filter(X)
    sizes = np.empty(2 * k + 1, dtype=np.int64)
    inside = np.zeros(n, dtype=np.int64)  # #{j in k+1..2k : i in S_j}: exact integers, so w_i = 0 exactly
    for j in range(2 * k, -1, -1):  # largest threshold first (warm starts, see _Filter)
        S = filters.run(math.exp(j / k) * L0)
        sizes[j] = S.sum()
        if j > k:
            inside += S
    d_hat = int(min(k, min(n - sizes[j] + j for j in range(k + 1))))
    return StableCovariance(d_hat, inside / k, sizes, filters.rounds)


def stability_score(X, L0: float, k: int) -> tuple[int, int]:
    """Alg 3's d_hat alone, with early stopping: (d_hat, factorisations).

    Once k rows are removed at some threshold, every S_j with j <= k (a subset) misses >= k rows, so
    d_hat = k: the filters stop there. At most k + 1 rounds, whatever the data; equal to
    ``stable_covariance(X, L0, k).d_hat`` (tested). Used before the PTR test, so that data far from
    safe (e.g. heavy tails, where the full filters cascade through thousands of rounds) fail fast."""
    X = np.asarray(X, dtype=float)
    n, k = len(X), int(k)
    filters = _Filter(X)
    d_hat = k
    for j in range(2 * k, -1, -1):
        S = filters.run(math.exp(j / k) * L0, limit=k)
        if S is None:
            return k, filters.rounds
        if j <= k:
            d_hat = min(d_hat, n - int(S.sum()) + j)
    return d_hat, filters.rounds


def weighted_covariance(X, w) -> np.ndarray:
    """Sigma_w = sum w_i x_i x_i^T / sum w_i (only rows of positive weight are read)."""
    X, w = np.asarray(X, dtype=float), np.asarray(w, dtype=float)
    support = w > 0
    Xs, ws = X[support], w[support]
    sigma = (Xs * ws[:, None]).T @ Xs / ws.sum()
    return (sigma + sigma.T) / 2


def weighted_leverages(X, w) -> np.ndarray:
    """l_w(i) = x_i^T (sum_j w_j x_j x_j^T)^{-1} x_i (property 3 of the notes)."""
    X, w = np.asarray(X, dtype=float), np.asarray(w, dtype=float)
    A = (X * w[:, None]).T @ X
    factor = np.linalg.cholesky((A + A.T) / 2)
    block = linalg.solve_triangular(factor, X.T, lower=True)
    return np.einsum("ij,ij->j", block, block)


# ---------------------------------------------------------------------------------------------------
# The (eps, delta)-DP estimator


def stable_release(X, budget: ApproxDP, rng: np.random.Generator, *, ptr_fraction: float = 0.1,
                   beta: float = 1.0, L0: float | None = None, k: int | None = None) -> np.ndarray:
    """(eps, delta)-DP covariance of the rows X (no norm bound): PTR on d_hat, then Alg 1 on Sigma_w.

    Raises InsufficientData (n too small, decided from n, d, eps, delta only) or PTRFailed."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ValueError(f"X must be a finite 2-D array, got shape {X.shape}")
    n, d = X.shape
    params = stable_parameters(n, d, budget, ptr_fraction=ptr_fraction, beta=beta, L0=L0, k=k)
    d_hat, _ = stability_score(X, params.L0, params.k)  # the test first: fails fast on unsafe data
    noisy = d_hat + rng.laplace(scale=params.laplace_scale)
    if not noisy < params.threshold:
        raise PTRFailed(f"the data are too far from safe: noisy score {noisy:.3g} >= threshold "
                        f"{params.threshold:g} (k = {params.k}); nothing released")
    w = stable_covariance(X, params.L0, params.k).w  # only when the test passed
    return gaussian_sampling(weighted_covariance(X, w), params.m, rng)


ON_FAIL = ("raise", "zero")


def stable_gsampling(problem: CovProblem, accountant, rng: np.random.Generator, *,
                     on_fail: str = "raise", ptr_fraction: float = 0.1, beta: float = 1.0) -> np.ndarray:
    """Registry mechanism (ApproxDP): ``stable_release`` on ``problem.rows`` (the raw rows).

    The whole budget is charged first: (f eps, delta/2) for the PTR test and the rest for Gaussian
    sampling. on_fail="raise" propagates PTRFailed / InsufficientData; on_fail="zero" releases the
    zero matrix instead (the documented "no output": it does not depend on the data beyond the
    private test's outcome, so it costs nothing more)."""
    if on_fail not in ON_FAIL:
        raise ValueError(f"on_fail must be one of {ON_FAIL}, got {on_fail!r}")
    if problem.rows is None:
        raise ValueError("stable_gsampling needs the raw rows (CovProblem.rows): use a dataset whose "
                         "loader returns Data(..., rows_unbounded=...), e.g. gaussian_kappa")
    total = accountant.total
    if not isinstance(total, ApproxDP):
        raise TypeError(f"stable_gsampling is an (eps, delta)-DP mechanism, got a {total} budget")
    ptr = ApproxDP(ptr_fraction * total.eps, total.delta / 2)
    accountant.spend(ptr, "PTR test on the stability score d_hat (Laplace)")
    accountant.spend(ApproxDP(total.eps - ptr.eps, total.delta - ptr.delta),
                     "Gaussian sampling mechanism on Sigma_w (Alg 1)")
    try:
        return stable_release(problem.rows, total, rng, ptr_fraction=ptr_fraction, beta=beta)
    except StableReleaseFailed as err:
        if on_fail == "raise":
            raise
        accountant.fall_back(f"{type(err).__name__}: {err}")
        return np.zeros((problem.d, problem.d))
