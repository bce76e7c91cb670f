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

Parameters (all public functions of n, d, eps, delta and the options; ``stable_parameters``):

- L0 = chi2_{d}^{-1}(1 - beta/n) / (n (1 - sqrt(d/n))^2), beta = 1. For Gaussian rows (any covariance:
  affine invariance) l(i) = z_i^T (Z^T Z)^{-1} z_i <= ||z_i||^2 / lambda_min(Z^T Z) with ||z_i||^2 ~
  chi2_d and lambda_min(Z^T Z) ~ n (1 - sqrt(d/n))^2, so about beta points exceed L0: d_hat is then 0
  or a few units (completeness), far below the PTR threshold. This is the notes' "expect d/n" with the
  max-of-n margin.
- PTR with (eps1, delta1) = (f eps, delta/2), f = ``ptr_fraction`` = 0.1: d_hat has sensitivity 2, so
  d_hat + Lap(2/eps1) is eps1-DP; release only if it is < t = k/2, with k = ``ptr_k`` the smallest even
  k with P[pass | d_hat >= k - 2] = exp(-(k - 2 - t) eps1/2)/2 <= delta1.
- Delta = (1 + 2/(n - k)) c / (1 - 2c) + 2 sqrt(d) / (n - k), c = 4 * 20 L0: an upper bound on the
  Mahalanobis distance between Sigma_w on neighbours that both have d_hat < k.
- m = floor(eps2^2 / (8 Delta^2 ln(1/delta2))) with (eps2, delta2) = ((1 - f) eps, delta/2) (the notes'
  claim for Alg 1).

The privacy proof of exactly this code is docs/stable_privacy.md. It holds under five conditions on
public values, computed by ``proof_conditions`` and checked by ``stable_parameters`` before the data are
touched (``InsufficientData`` names each violated one):
  (C1) threshold spacing   e^{(2k-1)/k} L0 <= 1 - e^{-1/k}   (Sherman-Morrison: properties 1 and 4)
  (C2) soundness           e^2 L0 / (1 - (k-1) e^2 L0) <= 20 L0   (property 3 with the constant in Delta)
  (C3) PTR threshold       exp(-(k - 2 - t) eps1/2) / 2 <= delta1
  (C4) sensitivity         c = 80 L0 < 1/4 and n - k > 2   (Delta finite)
  (C5) Gaussian sampling   Delta <= eps2 / (8 ln(1/delta2)), m >= 1, and the Renyi bound of Alg 1 at
                           (m, Delta) gives eps <= eps2 at delta2 (``gaussian_sampling_epsilon``)

Composition: the PTR test is (eps1, delta1)-DP together with the sampling step's (eps2, delta2): the
whole (eps, delta) is charged through the accountant before anything is computed (whether or not the
test passes, so the ledger is the same for every dataset). Failure: ``PTRFailed`` (on_fail="raise") or
the documented "no output" release, the zero matrix (on_fail="zero"; data-independent, so free).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import linalg

from .privacy import ApproxDP
from .predictions import Facts, Prediction
from .problem import CovProblem
from .transcript import released as _step

SOUNDNESS_FACTOR = 20.0  # property 3 of the notes: weighted leverage <= 20 L0 where w_i > 0 ((C2))
ON_FAIL = ("raise", "zero")  # stable_gsampling's on_fail: raise the failure, or release the zero matrix
MAX_ENTRY = 2.0**500  # domain of stable_release: |x_ij| <= 2^500 ~ 3e150, so covariances stay finite
_CHUNK = 1 << 17  # rows per block of the triangular solve (bounds the temporary d x chunk array)


class StableReleaseFailed(RuntimeError):
    """The stable covariance estimator released nothing (base class)."""


class PTRFailed(StableReleaseFailed):
    """The private test found the data too far from 'safe' (no leverage outliers): no output."""


class InsufficientData(StableReleaseFailed, ValueError):
    """A condition of the privacy proof fails at these public values (n, d, eps, delta, options): most
    often n too small for the budget. Decided before the data are read."""


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
    from scipy import stats  # loads when used (~1 s per process)

    return float(stats.chi2.isf(min(beta / n, 0.5), d) / (n * (1 - math.sqrt(d / n)) ** 2))


def _ptr_passes_rarely(k: int, threshold: float, ptr: ApproxDP) -> bool:
    """(C3): P[d_hat + Lap(2/eps1) < t | d_hat >= k - 2] = exp(-(k - 2 - t) eps1/2)/2 <= delta1."""
    return k - 2 - threshold >= 0 and 0.5 * math.exp(-(k - 2 - threshold) * ptr.eps / 2) <= ptr.delta


def ptr_k(eps1: float, delta1: float) -> int:
    """Smallest even k with P[d_hat + Lap(2/eps1) < k/2 | d_hat >= k - 2] <= delta1 (as computed)."""
    k = 2 * math.ceil((2 / eps1) * math.log(1 / (2 * delta1)) + 2)
    while not _ptr_passes_rarely(k, k / 2, ApproxDP(eps1, delta1)):  # guards float rounding at the boundary
        k += 2
    return k


def soundness_bound(L0: float, k: int) -> float:
    """Lemma 7 of docs/stable_privacy.md: when d_hat < k, every point of positive weight has weighted
    leverage <= e^2 L0 / (1 - (k - 1) e^2 L0) (inf when (k - 1) e^2 L0 >= 1)."""
    lam = math.e**2 * L0
    return lam / (1 - (k - 1) * lam) if (k - 1) * lam < 1 else math.inf


def proved_L0_limit(k: int, factor: float | None = None) -> float:
    """The largest L0 satisfying (C1) and (C2) for this k (``factor``: the soundness constant)."""
    factor = SOUNDNESS_FACTOR if factor is None else factor
    spacing = (1 - math.exp(-1 / k)) * math.exp(-(2 * k - 1) / k)
    sound = max(0.0, 1 - math.e**2 / factor) / ((k - 1) * math.e**2) if k > 1 else math.inf
    return min(spacing, sound)


def mahalanobis_sensitivity(L0: float, n: int, d: int, k: int) -> float:
    """Delta: d_M(Sigma_w(x), Sigma_w(x')) for neighbours with d_hat < k (Lemma 9 of the proof)."""
    c = 4 * SOUNDNESS_FACTOR * L0
    if c >= 0.25 or n - k <= 2:
        return math.inf
    W = n - k
    return (1 + 2 / W) * c / (1 - 2 * c) + 2 * math.sqrt(d) / W


def gaussian_sampling_epsilon(m: int, sensitivity: float, delta: float) -> float:
    """Lemma 10 of docs/stable_privacy.md: Alg 1 with m samples on Sigma, Sigma' with
    d_M(Sigma, Sigma') <= Delta < 1 is (eps, delta)-indistinguishable for
    eps = min over a = alpha - 1 in (0, 1/Delta) of
        m Delta^2/4 (1/(1 - Delta)^2 + a/(1 - a Delta)^2) + ln(1/delta)/a
    (a bound on the Renyi divergence of order alpha between Gaussians, then the RDP conversion). Every a
    gives a valid bound; the minimiser only makes it small."""
    D, log_term = float(sensitivity), math.log(1 / delta)
    if not (0 < D < 1 and m >= 1):
        return math.inf

    def bound(a: float) -> float:
        return m * D**2 / 4 * (1 / (1 - D) ** 2 + a / (1 - a * D) ** 2) + log_term / a

    from scipy import optimize

    best = optimize.minimize_scalar(bound, bounds=(1e-12, (1 - 1e-9) / D), method="bounded",
                                    options={"xatol": 1e-10})
    return float(bound(best.x))


@dataclass(frozen=True)
class Condition:
    """One condition of the privacy proof, evaluated on public values."""
    name: str
    holds: bool
    detail: str  # the inequality with its numbers

    def __str__(self) -> str:
        return f"{self.name} {'holds' if self.holds else 'FAILS'}: {self.detail}"


def proof_conditions(n: int, d: int, params: "StableParameters") -> list[Condition]:
    """(C1)-(C5) of docs/stable_privacy.md for n rows in R^d at these parameters."""
    L0, k, ptr, sampling = params.L0, params.k, params.ptr, params.sampling
    spacing_lhs, spacing_rhs = math.exp((2 * k - 1) / k) * L0, 1 - math.exp(-1 / k)
    sound = soundness_bound(L0, k)
    ptr_tail = 0.5 * math.exp(-(k - 2 - params.threshold) * ptr.eps / 2)
    c = 4 * SOUNDNESS_FACTOR * L0
    log_term = math.log(1 / sampling.delta)
    gs_limit = sampling.eps / (8 * log_term)
    gs_eps = gaussian_sampling_epsilon(params.m, params.sensitivity, sampling.delta)
    limit = proved_L0_limit(k)
    hint = f" (with k = {k}: needs L0 <= {limit:.3g}, i.e. larger n or a larger ptr_fraction)"
    return [
        Condition("(C1) threshold spacing", spacing_lhs <= spacing_rhs,
                  f"e^((2k-1)/k) L0 = {spacing_lhs:.3g} must be <= 1 - e^(-1/k) = {spacing_rhs:.3g} "
                  f"(k = {k}, L0 = {L0:.3g})" + ("" if spacing_lhs <= spacing_rhs else hint)),
        Condition("(C2) soundness", sound <= SOUNDNESS_FACTOR * L0,
                  f"e^2 L0 / (1 - (k-1) e^2 L0) = {sound / L0:.3g} L0 must be <= {SOUNDNESS_FACTOR:g} L0 "
                  f"((k-1) e^2 L0 = {(k - 1) * math.e**2 * L0:.3g})"
                  + ("" if sound <= SOUNDNESS_FACTOR * L0 else hint)),
        Condition("(C3) PTR threshold", _ptr_passes_rarely(k, params.threshold, ptr),
                  f"exp(-(k - 2 - t) eps1/2)/2 = {ptr_tail:.3g} must be <= delta1 = {ptr.delta:.3g} "
                  f"(k = {k}, t = {params.threshold:g}, eps1 = {ptr.eps:g})"),
        Condition("(C4) sensitivity", c < 0.25 and n - k > 2,
                  f"c = {SOUNDNESS_FACTOR * 4:g} L0 = {c:.3g} must be < 1/4 and n - k = {n - k} > 2"),
        Condition("(C5) Gaussian sampling",
                  params.sensitivity <= gs_limit and params.m >= 1 and gs_eps <= sampling.eps,
                  f"n = {n} is too small for (eps2, delta2) = ({sampling.eps:g}, {sampling.delta:g}) in "
                  f"d = {d}: the sensitivity {params.sensitivity:.3g} (80 L0 with L0 = {L0:.3g}) exceeds "
                  f"eps2 / (8 ln(1/delta2)) = {gs_limit:.3g}"
                  if not params.sensitivity <= gs_limit else
                  f"m = {params.m} samples at Delta = {params.sensitivity:.3g}: proved eps {gs_eps:.4g} "
                  f"must be <= eps2 = {sampling.eps:g}"),
    ]


def check_options(options: dict) -> None:
    """The option values no n can make safe: raised at config time (registry hook) and at release."""
    on_fail = options.get("on_fail", "raise")
    if on_fail not in ON_FAIL:
        raise ValueError(f"stable_gsampling: on_fail must be one of {ON_FAIL}, got {on_fail!r}")
    f = options.get("ptr_fraction", 0.1)
    if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f < 1:
        raise ValueError(f"stable_gsampling: ptr_fraction must be a number in (0, 1), got {f!r}")
    beta = options.get("beta", 1.0)
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not 0 < beta < math.inf:
        raise ValueError(f"stable_gsampling: beta must be a finite number > 0, got {beta!r}")


def stable_parameters(n: int, d: int, budget: ApproxDP, *, ptr_fraction: float = 0.1,
                      beta: float = 1.0, L0: float | None = None, k: int | None = None) -> StableParameters:
    """L0, k, the PTR threshold, Delta and m for n rows in R^d at (eps, delta) (module docstring).

    Raises InsufficientData, naming every violated condition of the privacy proof, when one fails."""
    check_options({"ptr_fraction": ptr_fraction, "beta": beta})
    ptr = ApproxDP(ptr_fraction * budget.eps, budget.delta / 2)
    sampling = ApproxDP(budget.eps - ptr.eps, budget.delta - ptr.delta)
    if sampling.eps >= 1:
        raise ValueError(f"the Gaussian sampling claim needs eps2 < 1, got eps2 = {sampling.eps:g} "
                         f"(eps = {budget.eps:g}, ptr_fraction = {ptr_fraction:g})")
    L0 = default_L0(n, d, beta) if L0 is None else float(L0)
    k = ptr_k(ptr.eps, ptr.delta) if k is None else k
    if not (0 < L0 < math.inf and not isinstance(k, bool) and int(k) == k and k >= 1):
        raise ValueError(f"need L0 > 0 and an integer k >= 1, got L0={L0!r}, k={k!r}")
    k = int(k)
    delta_m = mahalanobis_sensitivity(L0, n, d, k)
    log_term = math.log(1 / sampling.delta)
    m = math.floor(sampling.eps**2 / (8 * delta_m**2 * log_term)) if delta_m < math.inf else 0
    params = StableParameters(L0, k, k / 2, delta_m, m, ptr, sampling)
    failed = [str(c) for c in proof_conditions(n, d, params) if not c.holds]
    if failed:
        raise InsufficientData("stable_gsampling cannot run at these public parameters (the privacy proof, "
                               "docs/stable_privacy.md, needs every condition): " + "; ".join(failed))
    return params


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


def _power_of_two_below(top: float) -> int:
    """e with top * 2^-e in [0.5, 1) (0 when top = 0): scaling by 2^-e is exact in floating point."""
    return int(np.frexp(top)[1])


def leverages(X: np.ndarray, keep: np.ndarray | None = None) -> np.ndarray:
    """l_S(i) = x_i^T (X_S^T X_S)^{-1} x_i for every row i (S = ``keep``, default all rows), from one
    Cholesky factorisation; +inf for every row when X_S^T X_S is singular. Computed on X scaled by a power
    of two (exact; leverages are scale-invariant) that brings X_S's entries below 1, so the Gram matrix
    neither overflows nor underflows whatever the rows' scale (rows outside S far larger than S's: inf)."""
    XS = X if keep is None else X[keep]
    shift = -_power_of_two_below(max(XS.max(initial=0.0), -XS.min(initial=0.0)))
    XS = _scaled(XS, shift)
    try:
        factor = _gram_factor(XS.T @ XS)
    except np.linalg.LinAlgError:
        return np.full(len(X), np.inf)
    out = np.empty(len(X))
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, len(X), _CHUNK):
            rows = _scaled(X[start:start + _CHUNK], shift)
            block = linalg.solve_triangular(factor, rows.T, lower=True, check_finite=False)
            out[start:start + _CHUNK] = np.einsum("ij,ij->j", block, block)
    return out


def _scaled(X: np.ndarray, shift: int) -> np.ndarray:
    """X * 2^shift, correctly rounded (exact unless it under- or overflows)."""
    if not shift:
        return X
    with np.errstate(over="ignore"):
        if -1022 <= shift <= 1023:  # 2^shift is a normal double: one correctly rounded product, as ldexp
            return X * (2.0 ** shift)  # (and ~10x faster than np.ldexp)
        return np.ldexp(X, shift)


class _Filter:
    """Greedy leverage filtering of one dataset at decreasing thresholds, warm-started.

    Let T*(L) be the largest S with every l_S(i) <= L (unique, as the notes say). Started from any
    superset of T*(L), Alg 2 ends at T*(L): a point i of T* has l_S(i) <= l_{T*}(i) <= L in every
    superset S (more rows, larger Gram matrix), so it is never removed, and the end set is valid, hence
    T*(L) by maximality. T*(L) grows with L, so the filters of Alg 3 can run from the largest threshold
    down, each starting where the previous one ended: exactly the sets of 2k + 1 independent filters,
    but a round (one factorisation) is computed only when the set changes, and memory stays O(n).

    Floating point (docs/stable_privacy.md, "Implementation"): a row with ||x_i||^2 > L tr(X_S^T X_S)
    has l_S(i) >= ||x_i||^2 / tr > L, so it is outside T*(L) and is removed before any factorisation
    (by the argument above the end set is the same); squared norms are taken at the scale of S's largest
    entry (a power of two). So one huge row can neither overflow the Gram matrix nor make it numerically
    singular (which would empty every S_j: a score jump from 0 to k between neighbours)."""

    def __init__(self, X: np.ndarray):
        self.X = X
        self.keep = np.ones(len(X), dtype=bool)
        self.size = len(X)  # |S|
        self.row_max = np.abs(X).max(axis=1, initial=0.0)
        self.lev = None  # leverages of the current S (rows outside S: stale, ignored); None: to compute
        self.lev_top = None  # max of lev over S: a threshold at or above it removes nothing (no O(n) pass)
        self.rounds = 0
        self.exponent = None
        self._update_norms()

    def _update_norms(self):
        """Squared row norms at the scale of S's largest entry, their sum and maximum over S."""
        exponent = _power_of_two_below(self.row_max[self.keep].max(initial=0.0))
        if exponent != self.exponent:
            self.exponent = exponent
            Y = _scaled(self.X, -exponent)
            with np.errstate(over="ignore", invalid="ignore"):
                self.norms2 = np.einsum("ij,ij->i", Y, Y)
        inside = self.norms2[self.keep]
        self.trace, self.top = inside.sum(), inside.max(initial=0.0)

    def _remove(self, out: np.ndarray, limit: int | None) -> bool:
        """Remove ``out`` from S; True when ``limit`` rows or more are now removed in all."""
        self.keep &= ~out
        self.size = int(self.keep.sum())
        self.lev = None
        self._update_norms()
        return limit is not None and len(self.keep) - self.size >= limit

    def run(self, L: float, limit: int | None = None) -> np.ndarray | None:
        """Alg 2 at threshold L from the current S (which must contain T*(L)); returns S (a view), or
        None as soon as ``limit`` rows or more are removed in all (when given)."""
        while True:
            if self.top > L * self.trace:  # rows whose norm alone proves l_S(i) > L
                if self._remove(self.keep & (self.norms2 > L * self.trace), limit):
                    return None
                continue
            if self.lev is None:
                self.lev = leverages(self.X, self.keep)
                self.lev_top = self.lev[self.keep].max(initial=-np.inf)
                self.rounds += 1
            if self.lev_top <= L:
                return self.keep
            out = self.keep & (self.lev > L)
            if not out.any():
                return self.keep
            if self._remove(out, limit):
                return None


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
    # S_2k ⊇ ... ⊇ S_0 (warm starts, see _Filter): row i is in S_j exactly for j > removed_at[i] (-1:
    # never removed), so #{j in k+1..2k : i in S_j} = 2k - max(removed_at[i], k), in exact integers
    # (w_i = 0 exactly), with O(n) work only when S changes.
    removed_at = np.full(n, -1, dtype=np.int64)
    for j in range(2 * k, -1, -1):  # largest threshold first
        S = filters.run(math.exp(j / k) * L0)
        sizes[j] = filters.size
        if sizes[j] < (n if j == 2 * k else sizes[j + 1]):  # rows left S at this threshold
            removed_at[~S & (removed_at < 0)] = j
    d_hat = int(min(k, min(n - sizes[j] + j for j in range(k + 1))))
    inside = 2 * k - np.maximum(removed_at, k)
    return StableCovariance(d_hat, inside / k, sizes, filters.rounds)


def stability_score(X, L0: float, k: int) -> tuple[int, int]:
    """Alg 3's d_hat alone, with early stopping: (d_hat, factorisations).

    The filters run from j = 2k down. Once k rows are removed at threshold j, every S_j' with j' <= j
    (a subset) misses >= k rows, so its term n - |S_j'| + j' >= k cannot lower the minimum: d_hat is
    the minimum over the thresholds already done (k when j >= k), and the filters stop there. At most
    k + 1 rounds, whatever the data; equal to ``stable_covariance(X, L0, k).d_hat`` (tested, also on
    data with many rows just above L0, where stopping with d_hat = k would be wrong). Used before the
    PTR test, so that data far from safe (e.g. heavy tails, where the full filters cascade through
    thousands of rounds) fail fast."""
    X = np.asarray(X, dtype=float)
    n, k = len(X), int(k)
    filters = _Filter(X)
    d_hat = k
    for j in range(2 * k, -1, -1):
        S = filters.run(math.exp(j / k) * L0, limit=k)
        if S is None:
            return d_hat, filters.rounds
        if j <= k:
            d_hat = min(d_hat, n - filters.size + j)
    return d_hat, filters.rounds


def weighted_covariance(X, w) -> np.ndarray:
    """Sigma_w = sum w_i x_i x_i^T / sum w_i (only rows of positive weight are read)."""
    X, w = np.asarray(X, dtype=float), np.asarray(w, dtype=float)
    support = w > 0
    Xs, ws = (X, w) if support.all() else (X[support], w[support])
    # all weights 1 (common): the same products without the n x d weighted copy
    sigma = (Xs if ws.min(initial=1.0) == 1.0 else Xs * ws[:, None]).T @ Xs / ws.sum()
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
                   beta: float = 1.0, L0: float | None = None, k: int | None = None,
                   shared: dict | None = None) -> np.ndarray:
    """(eps, delta)-DP covariance of the rows X (no norm bound): PTR on d_hat, then Alg 1 on Sigma_w.

    ``shared``: a dict kept with X (CovProblem.shared) where the deterministic steps -- d_hat and
    Sigma_w, functions of X, L0 and k alone -- are kept for the next release on the same rows (the
    trials of an experiment): the same numbers, computed once; only the noise is drawn afresh.

    Raises InsufficientData (a condition of the privacy proof fails: decided from n, d, eps, delta and
    the options only, before the data are read) or PTRFailed."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ValueError(f"X must be a finite 2-D array, got shape {X.shape}")
    largest = np.abs(X).max(initial=0.0)
    if largest > MAX_ENTRY:
        raise ValueError(f"the rows' entries must be at most {MAX_ENTRY:.3g} in absolute value (the domain "
                         f"of stable_gsampling: the released covariance must be representable), got "
                         f"{largest:.3g}")
    n, d = X.shape
    params = stable_parameters(n, d, budget, ptr_fraction=ptr_fraction, beta=beta, L0=L0, k=k)
    # Work at the scale of the largest entry (a power of two: exact, and every step is scale-equivariant)
    exponent = _power_of_two_below(largest)
    known = {} if shared is None else shared.setdefault(("stable", params.L0, params.k), {})
    if "d_hat" not in known:  # the test first: fails fast on unsafe data
        known["d_hat"] = stability_score(_scaled(X, -exponent), params.L0, params.k)[0]
    noisy = _step("laplace", "PTR: d_hat", known["d_hat"], known["d_hat"] + rng.laplace(scale=params.laplace_scale),
                  sensitivity=2.0, norm="l1", scale=params.laplace_scale, threshold=params.threshold)
    if not noisy < params.threshold:
        raise PTRFailed(f"the data are too far from safe: noisy score {noisy:.3g} >= threshold "
                        f"{params.threshold:g} (k = {params.k}); nothing released")
    if "sigma_w" not in known:  # only when the test passed
        scaled = _scaled(X, -exponent)
        known["sigma_w"] = weighted_covariance(scaled, stable_covariance(scaled, params.L0, params.k).w)
    # the transcript: Sigma_w moves by at most Delta in the Mahalanobis distance between neighbours with d_hat < k
    # (docs/stable_privacy.md, Lemma 9); the power-of-two scale is exact and undone
    return _step("sampler", "Gaussian sampling (Alg 1)", lambda _: _scaled(known["sigma_w"], 2 * exponent),
                 _scaled(gaussian_sampling(known["sigma_w"], params.m, rng), 2 * exponent),
                 sensitivity=params.sensitivity, norm="mahalanobis", m=params.m)


def stable_gsampling(problem: CovProblem, accountant, rng: np.random.Generator, *,
                     on_fail: str = "raise", ptr_fraction: float = 0.1, beta: float = 1.0) -> np.ndarray:
    """Registry mechanism (ApproxDP): ``stable_release`` on ``problem.rows`` (the raw rows).

    The whole budget is charged first: (f eps, delta/2) for the PTR test and the rest for Gaussian
    sampling. on_fail="raise" propagates PTRFailed / InsufficientData; on_fail="zero" releases the
    zero matrix instead (the documented "no output": it does not depend on the data beyond the
    private test's outcome, so it costs nothing more)."""
    check_options({"on_fail": on_fail, "ptr_fraction": ptr_fraction, "beta": beta})
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
        return stable_release(problem.rows, total, rng, ptr_fraction=ptr_fraction, beta=beta,
                              shared=problem.shared)
    except StableReleaseFailed as err:
        if on_fail == "raise":
            raise
        accountant.fall_back(f"{type(err).__name__}: {err}")
        return np.zeros((problem.d, problem.d))


# --- predicted error (mechanisms/predictions.py) ---------------------------------------------------

def predicted_mahalanobis(f: Facts, budget: ApproxDP) -> float | None:
    """Gaussian sampling (Alabi et al. Alg. 1) with m samples from Sigma_w ~ Sigma: the whitened error
    S - I, S ~ Wishart(I, m)/m, has E||S - I||_F^2 = (d^2 + d)/m; None when n is too small for the
    claim (the mechanism then fails or falls back)."""
    try:
        m = stable_parameters(f.n, f.d, budget, ptr_fraction=f.extra.get("ptr_fraction", 0.1)).m
    except (InsufficientData, ValueError):
        return None
    return math.sqrt(f.d * (f.d + 1) / m)


STABLE_PREDICTION = Prediction(mahalanobis=predicted_mahalanobis, kind="exact", citation="RMS √(d(d+1)/m)")
