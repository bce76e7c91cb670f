"""AdaptiveCov (Dong, Liang & Yi 2022, Algorithm 2) with SVT (Algorithm 3) and PrivRadius (Lemma 9)."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from . import laplace, noise
from .gaussian import (covariance_float_error, gauss_at, gauss_noisy, gaussian_sigma, separate_at, separate_noisy,
                       separate_terms)
from .predictions import Bound, Facts
from .privacy import PureDP, ZCDP, Accountant, eps_within
from .exact_sums import FLOOR_BAND
from .problem import CovProblem
from .spectral import Spectral
from .transcript import released as _step

# Float64 cannot tell 2^-1000 from 0 in a squared norm, so the paper's 2^-dn and 2^-2dn floors are
# capped here; below this every clipped covariance and bias term is 0 to machine precision anyway.
MAX_HALVINGS = 1000
# hardened: below this r~^2 the grid of the noise (2^-40 of r~^2 / (n eps)) would leave the normal floats; the
# rows are then all within 2^-450 of zero and the zero matrix is released (post-processing of PrivRadius's r~)
HARDENED_FLOOR = 2.0**-900


# --- Concentration bounds (Dong Lemmas 6 and 7) ---------------------------------------------------
def eta(d: int, beta: float) -> float:
    """||Y||_2 <= eta(d, beta) w.p. 1 - beta for Y ~ N(0, I_d) (Lemma 6)."""
    log_b = math.log(1 / beta)
    return math.sqrt(d + 2 * math.sqrt(d * log_b) + 2 * log_b)


def upsilon(d: int, beta: float) -> float:
    """||W||_2 <= upsilon(d, beta) w.p. 1 - beta for W ~ SGW(d) (Lemma 7)."""
    log_d = math.log(d)
    x = (log_d / d) ** (1 / 3)
    # The third term -> 0 as d -> 1 (it behaves like d^(1/6) log(d)^(1/3)); avoid 0/0 at d = 1.
    third = 6 * (1 + x) * math.sqrt(log_d) / math.sqrt(math.log1p(x)) if d > 1 else 0.0
    return 2 * math.sqrt(d) + 2 * d ** (1 / 6) * log_d ** (1 / 3) + third + 2 * math.sqrt(2 * math.log(1 / beta))


def omega(d: int, beta: float) -> float:
    """||W||_F <= omega(d, beta) w.p. 1 - beta for W ~ SGW(d) (Lemma 7)."""
    log_b = math.log(2 / beta)
    return math.sqrt(d * d + 2 * math.sqrt(d * log_b) * (1 + math.sqrt(2 * (d - 1))) + 6 * log_b)


def gauss_noise(tau, n: int, d: int, budget: ZCDP, beta: float):
    """GaussNoise(tau, rho, beta) = tau^2 / (sqrt(rho) n) * omega(d, beta)  (§5.2)."""
    return np.square(tau) / (math.sqrt(budget.rho) * n) * omega(d, beta)


def separate_noise(trace: float, tau, n: int, d: int, budget: ZCDP, beta: float):
    """SeparateNoise(tr, tau, rho, beta): the Theorem 1 bound for rows in the tau-ball (§5.2)."""
    trace = max(trace, 0.0)
    vectors = np.asarray(tau) * 2**1.25 * math.sqrt(trace) / (budget.rho**0.25 * math.sqrt(n)) * math.sqrt(upsilon(d, beta / 2))
    values = np.square(tau) * math.sqrt(2) / (math.sqrt(budget.rho) * n) * eta(d, beta / 2)
    return vectors + values


# --- Sparse vector technique (Algorithm 3) --------------------------------------------------------
def above_threshold(queries: Callable[[np.ndarray], np.ndarray], count: int, threshold: float,
                    eps: float, accountant: Accountant, rng: np.random.Generator,
                    what: str = "SVT", *, numerics: str = "idealized", bound: float | None = None,
                    float_error: float = 0.0) -> int:
    """Index k (1-based) of the first sensitivity-1 query whose noisy answer clears the noisy
    threshold, or count + 1 if none does; eps-DP (Algorithm 3).

    ``queries(idx)`` answers the 0-based queries ``idx`` at once, so long sequences are evaluated in
    growing vectorised chunks (the noise is iid, so the output distribution is unchanged).

    numerics="hardened" (``hardened_above_threshold``): the answers, computed within ``float_error`` of
    the exact ones and clipped to the public [-bound, bound], on a 2^k grid with exact discrete Laplace
    noise; every comparison is between integers.
    """
    noise.check_numerics(numerics)
    if numerics == "hardened":
        if bound is None:
            raise ValueError("a hardened SVT needs the queries' public bound")
        k = hardened_above_threshold(queries, count, threshold, eps, accountant, rng, what, bound, float_error)
    else:
        k = _float_above_threshold(queries, count, threshold, eps, accountant, rng, what)
    # the transcript (mechanisms/transcript.py): the answers up to the index released, each of sensitivity 1 (plus
    # twice the float error); the threshold, eps, count and bound are public
    return _step("svt", what, lambda k: np.asarray(queries(np.arange(min(k, count))), dtype=float), k, sensitivity=1.0,
                 norm="linf", slack=2 * float_error, threshold=threshold, eps=eps, count=count, numerics=numerics,
                 bound=bound)


def _float_above_threshold(queries, count: int, threshold: float, eps: float, accountant: Accountant,
                           rng: np.random.Generator, what: str) -> int:
    """Algorithm 3 with float Laplace noise (idealized numerics)."""
    accountant.spend(PureDP(eps), what)
    noisy_threshold = threshold + rng.laplace(scale=2 / eps)  # step 1
    start, chunk = 0, 64
    while start < count:  # steps 2-4
        idx = np.arange(start, min(count, start + chunk))
        noisy = np.asarray(queries(idx), dtype=float) + rng.laplace(scale=4 / eps, size=len(idx))
        hits = np.flatnonzero(noisy >= noisy_threshold)
        if hits.size:
            return int(idx[hits[0]]) + 1
        start, chunk = start + len(idx), chunk * 2
    return count + 1  # step 5


def hardened_above_threshold(queries: Callable[[np.ndarray], np.ndarray], count: int, threshold: float, eps: float,
                             accountant: Accountant, rng: np.random.Generator, what: str, bound: float,
                             float_error: float) -> int:
    """Algorithm 3 on a grid g = 2^k (mechanisms/noise.py): each answer clipped to [-bound, bound] (1-Lipschitz:
    the sensitivity stays) and rounded to the nearest step, the public threshold rounded too. Two neighbours'
    answers then differ by at most Delta = (1 + 2 float_error) / g + 1 steps, an integer shift; the noise is the
    discrete Laplace of scale ceil(2 Delta / eps) on the threshold and ceil(4 Delta / eps) on each answer,
    whose ratios under integer shifts are those the proof of Algorithm 3 uses (Lyu, Su & Li 2017, Thm 2)."""
    bound = max(float(bound), abs(float(threshold)))
    grid = noise.grid_step(4 / eps, bound)
    delta = (1 + 2 * float_error) / grid + 1
    t_threshold, t_answer = math.ceil(2 * delta / eps), math.ceil(4 * delta / eps)
    accountant.spend(PureDP(eps), f"{what} (hardened: discrete Laplace on the grid 2^{int(math.log2(grid))}, "
                                  f"sensitivity 1 + {float_error:.3g} (float error) + one step (rounding))")
    noisy_threshold = int(np.rint(threshold / grid)) + int(noise.discrete_laplace(t_threshold, 1, rng)[0])
    start, chunk = 0, 1024  # larger chunks than the float path's: each compiled call costs ~40 us to enter
    while start < count:
        idx = np.arange(start, min(count, start + chunk))
        answers = noise.on_grid(queries(idx), grid, bound) + noise.discrete_laplace(t_answer, len(idx), rng)
        hits = np.flatnonzero(answers >= noisy_threshold)
        if hits.size:
            return int(idx[hits[0]]) + 1
        start, chunk = start + len(idx), chunk * 2
    return count + 1


def private_radius_exponent(problem: CovProblem, eps: float, beta: float, max_halvings: int,
                            accountant: Accountant, rng: np.random.Generator, numerics: str = "idealized") -> int:
    """PrivRadius (Lemma 9) by SVT over dyadic radii: m with r~ = r 2^-m <= 2 rad(X) + b.

    Query k = 1..K counts the rows with norm > r 2^-k (sensitivity 1, non-decreasing in k); the
    threshold 6/eps log(2K/beta) + 1 makes the first noisy crossing, w.p. 1 - beta, a k at which some
    row exceeds r 2^-k (so r 2^-(k-1) < 2 rad(X)) while only O(log(K/beta)/eps) rows exceed
    r 2^-(k-1). No crossing returns b = r 2^-K. The counts are exact integers (float error 0, bound n).
    """
    K = max_halvings
    threshold = 6 / eps * math.log(2 * K / beta) + 1

    def rows_above(idx):  # query idx+1: #{||x|| > r 2^-(idx+1)}, i.e. rows in bands j < idx+1
        return (problem.band_exponents[None, :] <= idx[:, None]) @ problem.band_counts

    k = above_threshold(rows_above, K, threshold, eps, accountant, rng, "PrivRadius: SVT", numerics=numerics,
                        bound=problem.n)
    return k - 1


# --- AdaptiveCov (Algorithm 2) -------------------------------------------------------------------
PAPER_SPLIT = {"radius": 1 / 8, "trace": 1 / 8, "svt": 1 / 4}  # the rest goes to the covariance


def svt_eps(budget) -> float:
    """The eps of an eps-DP step that costs ``budget``: eps^2/2 = rho under zCDP, eps under eps-DP and
    (eps, delta)-DP (a pure step meets both)."""
    return eps_within(budget.rho) if isinstance(budget, ZCDP) else budget.eps


def adaptive_cov(problem: CovProblem, accountant: Accountant, rng: np.random.Generator, *,
                 beta: float = 0.1, radius: str = "private", split: dict | None = None,
                 separate_noise_factor: float = 1.0, numerics: str = "idealized",
                 components: int | None = None) -> np.ndarray | Spectral:
    """AdaptiveCov: clip at a privately chosen tau, then the better of ClipGaussCov/ClipSeparateCov.

    radius="private" runs PrivRadius; radius="known" takes the declared radius r as r~ (the paper's
    experiments, whose data have 0.5 <= rad(X) <= 1) and gives PrivRadius's share to the covariance.
    split: budget fractions {radius, trace, svt}; the covariance step gets the rest (paper: 1/8,
    1/8, 1/4, 1/2). separate_noise_factor multiplies the SeparateNoise prediction (paper: 1; the
    public code uses 1/6; 1/14 in its pure-DP version).

    Under a PureDP accountant this is the eps-DP AdaptiveCov of Dong Appendix I: LapCov and
    SeparateCov with Laplace noise, a Laplace tail bound for the trace, the same SVT and PrivRadius
    (already pure), with the split read as fractions of eps.

    numerics="hardened" (mechanisms/noise.py): every step on a grid with exact integer noise -- both SVTs
    (``hardened_above_threshold``), the trace and the covariance release (discrete Gaussian or Laplace).

    components (a PCA of that many components; post-processing of the same release): the eigen-pairs it reads only
    -- the top ones of ClipGaussCov's matrix, or SeparateCov's pairs down to the deepest of its k largest values
    (``gaussian.paired``) -- instead of a full eigendecomposition (issue 61).
    """
    problem.require_bands("AdaptiveCov")
    if radius not in ("private", "known"):
        raise ValueError(f"radius must be 'private' or 'known', got {radius!r}")
    if not 0 < beta < 1:
        raise ValueError(f"beta must lie in (0, 1), got {beta!r}")
    noise.check_numerics(numerics)
    if components is not None and (isinstance(components, bool) or not isinstance(components, (int, np.integer))
                                   or components < 1):
        raise ValueError(f"components must be an integer >= 1, got {components!r}")
    if not separate_noise_factor > 0:
        raise ValueError(f"separate_noise_factor must be > 0, got {separate_noise_factor!r}")
    split = {**PAPER_SPLIT, **(split or {})}
    if set(split) != set(PAPER_SPLIT) or any(not 0 <= f < 1 for f in split.values()):
        raise ValueError(f"split needs fractions in [0, 1) for {sorted(PAPER_SPLIT)}, got {split}")
    if radius == "known":
        split["radius"] = 0.0
    cov_fraction = 1 - sum(split.values())
    if cov_fraction <= 0 or split["trace"] <= 0 or split["svt"] <= 0:
        raise ValueError(f"split {split} leaves no budget for a step")
    total = accountant.total
    pure = isinstance(total, PureDP)
    predict_gauss, predict_separate = (laplace.lap_noise, laplace.separate_lap_noise) if pure \
        else (gauss_noise, separate_noise)
    n, d = problem.n, problem.d
    if numerics == "hardened" and problem.neighbours.add_remove and problem.exact is None:
        raise ValueError("hardened AdaptiveCov at add/remove sensitivity needs the rows' exact sums "
                         "(mechanisms/exact_sums.py exact_problem): its float errors must not depend on the private "
                         "row count")
    # exact sums serve clipping levels down to r 2^-FLOOR_BAND (a public cap on both walks)
    deepest = FLOOR_BAND if problem.exact is not None else MAX_HALVINGS
    halvings = min(d * n, MAX_HALVINGS)
    # the noise predictions (Dong §5.2) stay replace-one's under add/remove too, though the covariance's noise is then
    # smaller: read at the add/remove sensitivity (a larger count) they stop the SVT at a larger tau, and on MNIST-49
    # (eps = 16, pure) the error rose from 0.043 to 0.16 of ||Sigma||_F (issue 59)

    # Step 1: r~ = PrivRadius(X, sqrt(rho)/2, beta/8, 2^-2dn) -- or the declared radius.
    if radius == "private":
        eps_radius = svt_eps(total.scaled(split["radius"]))
        m0 = private_radius_exponent(problem, eps_radius, beta / 8, min(2 * d * n, MAX_HALVINGS, deepest),
                                     accountant, rng, numerics)
    else:
        m0 = 0
    r_tilde = problem.tau(m0)
    if r_tilde**2 == 0.0 or (numerics == "hardened" and r_tilde**2 < HARDENED_FLOOR):
        return np.zeros((d, d))  # every row is (numerically) zero: nothing left to estimate
    # Steps 2-4: X~ = Clip(X, r~); a private upper bound on tr(X~) (sensitivity r~^2 / n). Hardened under add/remove:
    # the exact sums' trace, its error public (mechanisms/exact_sums.py; no d x d statistic formed for it)
    clipped_trace, trace_error = problem.exact.trace(m0, n) if numerics == "hardened" and problem.exact is not None \
        else (float(np.trace(problem.clipped_sigma(m0))), None)
    if numerics == "hardened":
        noisy_trace = _hardened_trace(clipped_trace, r_tilde, n, d, total.scaled(split["trace"]), beta, accountant,
                                      rng, trace_error, problem.neighbours.scale)
    elif pure:  # Laplace mechanism and its one-sided tail: P(Lap(b) > b log(4/beta)) = beta/8
        trace_budget = accountant.spend(total.scaled(split["trace"]), "AdaptiveCov: trace")
        b = r_tilde**2 / (n * trace_budget.eps)
        noisy_trace = _step("laplace", "AdaptiveCov: trace", clipped_trace, clipped_trace + rng.laplace(scale=b),
                            sensitivity=r_tilde**2 / n, norm="l1", scale=b) + b * math.log(4 / beta)
    else:  # Gaussian mechanism and its tail: P(N(0, sd^2) > sd sqrt(2 log(8/beta))) <= beta/8
        trace_budget = accountant.spend(total.scaled(split["trace"]), "AdaptiveCov: trace")
        sd = gaussian_sigma(r_tilde**2 / n, trace_budget)
        noisy_trace = _step("gaussian", "AdaptiveCov: trace", clipped_trace, clipped_trace + sd * rng.standard_normal(),
                            sensitivity=r_tilde**2 / n, norm="l2", scale=sd) + sd * math.sqrt(2 * math.log(8 / beta))
    trace_hat = min(noisy_trace, r_tilde**2)
    if problem.exact is not None:  # tau~ = r~ 2^-(k-2) stays at or above r 2^-FLOOR_BAND (k <= halvings + 1)
        halvings = max(1, min(halvings, deepest + 1 - m0))
    # Step 5: SVT over Diff(X~, tr^, tau, rho_cov, beta/2), tau = r~, r~/2, ..., threshold 0.
    cov_budget = total.scaled(cov_fraction)
    exponents, counts = problem.clipped_counts(m0)
    upper2 = np.ldexp(problem.radius, -exponents) ** 2  # band upper edges, squared

    exact_counts = problem.exact is not None and numerics == "hardened"

    def diff(idx):
        m = m0 + idx
        tau = np.ldexp(problem.radius, -m)
        if exact_counts:  # add/remove: n bias / r~^2 = sum_j count_j (4^(m0-j) - 4^(m0-m)) exactly, clipped to the
            # SVT's public bound before one rounding (the row count summed is private: no float error may grow with it)
            bias = np.array([_exact_bias(exponents, counts, m0, int(level), bound) for level in m]) * r_tilde**2 / n
        else:
            clipped = exponents[None, :] < m[:, None]
            bias = (clipped * counts * (upper2[None, :] - (tau**2)[:, None])).sum(axis=1) / n
        predicted = np.minimum(predict_gauss(tau, n, d, cov_budget, beta / 2),
                               separate_noise_factor * predict_separate(trace_hat, tau, n, d, cov_budget,
                                                                        beta / 2))
        return n * (bias - predicted) / r_tilde**2  # sensitivity 1 (Bias has sensitivity r~^2 / n)

    # hardened: |Diff| <= n + its public noise term at tau = r~ (the largest); computed within
    # diff_float_error of the exact query
    hardening = {}
    if numerics == "hardened":
        bound = n * (1 + _largest_noise(predict_gauss, predict_separate, separate_noise_factor, trace_hat, r_tilde,
                                        n,
                                        d, cov_budget, beta) / r_tilde**2)
        # the bias sums at most `halvings` non-zero terms (bands r~ 2^-j, j < m0 + halvings): a public count, never
        # the number of non-empty bands (a fact of the data: issue 58)
        hardening = {"bound": bound, "float_error": 8 * noise.UNIT_ROUNDOFF * bound if exact_counts else
                     diff_float_error(halvings, n, bound)}
    k = above_threshold(diff, halvings, 0.0, svt_eps(total.scaled(split["svt"])),
                        accountant, rng, "AdaptiveCov: SVT", numerics=numerics, **hardening)
    # Step 6: tau~ = min(2^(t~+1), r~) = r~ 2^-max(k-2, 0), the last tau before the crossing.
    m = m0 + max(k - 2, 0)
    tau = problem.tau(m)
    # Steps 7-10: the better predicted mechanism on Clip(X, tau~), at the remaining budget.
    if separate_noise_factor * predict_separate(trace_hat, tau, n, d, cov_budget, beta / 2) >= \
            predict_gauss(tau, n, d, cov_budget, beta / 2):
        release_plain = laplace.lap_at if pure else gauss_at
        matrix = release_plain(problem, m, cov_budget, accountant, rng, numerics)
        return matrix if components is None else Spectral.top(matrix, int(components))
    release_separate = laplace.separate_lap_at if pure else separate_at
    return release_separate(problem, m, cov_budget, accountant, rng, numerics, components)


def _exact_bias(exponents: np.ndarray, counts: np.ndarray, m0: int, m: int, bound: float) -> float:
    """n Bias(tau = r 2^-m) / r~^2 (r~ = r 2^-m0) from the integer counts of the bands above tau, exactly (Fraction),
    clipped to [0, bound] and then rounded once."""
    from fractions import Fraction
    total = sum((int(c) * (Fraction(4) ** (m0 - int(j)) - Fraction(4) ** (m0 - m))
                 for j, c in zip(exponents.tolist(), counts.tolist()) if j < m), Fraction(0))
    return float(min(max(total, Fraction(0)), Fraction(bound)))


def _largest_noise(predict_gauss, predict_separate, factor: float, trace_hat: float, r_tilde: float, n: int, d: int,
                   budget, beta: float) -> float:
    """Diff's public noise term at tau = r~, its largest (both predictions grow with tau)."""
    return float(min(predict_gauss(r_tilde, n, d, budget, beta / 2),
                     factor * predict_separate(trace_hat, r_tilde, n, d, budget, beta / 2)))


def diff_float_error(bands: int, n: int, bound: float) -> float:
    """A bound on |computed Diff - exact Diff| (Step 5's query, in units of r~^2 / n): the bias is a sum of at most
    ``bands`` non-zero terms count_j (u_j^2 - tau^2) (``bands``: a public bound, the SVT's number of queries; each
    within [0, n r~^2] with a few roundings), then divided by n,
    less the public noise term, times n / r~^2 (sum_error_bound; every magnitude is within the SVT's clip bound
    ``bound`` = n (1 + noise / r~^2), whose roundings add a few units of it)."""
    # the terms are non-negative and add up to at most n (sum_j count_j <= n, (u_j^2 - tau^2) / r~^2 <= 1): Higham's
    # gamma_k sum |term| with that sum, i.e. ``bands`` terms of n / bands each at most in total
    return noise.sum_error_bound(bands, float(n) / bands, ops_per_term=6) + 8 * noise.UNIT_ROUNDOFF * bound


def _hardened_trace(clipped_trace: float, r_tilde: float, n: int, d: int, budget, beta: float,
                    accountant: Accountant, rng: np.random.Generator, error: float | None = None,
                    scale: float = 1.0) -> float:
    """Steps 3-4 hardened: tr(X~) (sensitivity r~^2 / n, within [0, r~^2]) on a grid plus discrete Gaussian
    (zCDP) or discrete Laplace (eps-DP) noise, plus the same one-sided tail as the float steps. The tail sets
    only the bound's confidence (utility, not privacy); at 2^40 grid steps the discrete noise's tails are the
    continuous ones' to a relative 2^-40."""
    sensitivity = (scale * r_tilde) ** 2 / n  # replace-one and add/remove alike (a row's ||x||^2 <= r~^2; ``scale``:
    # a rounded row's, mechanisms/exact_sums.py)
    if error is None:  # n float-summed rows (replace-one); add/remove passes the exact sums' public error
        error = d * covariance_float_error(r_tilde, n, d) + noise.sum_error_bound(d, r_tilde**2, ops_per_term=0)
    if isinstance(budget, PureDP):
        noisy, how = noise.laplace_release(np.array([clipped_trace]), l1_sensitivity=sensitivity, eps=budget.eps,
                                           bound=r_tilde**2, float_error=error, rng=rng)
        tail = how.scale * math.log(4 / beta)  # P(DLap > b log(4/beta)) <= beta/8 as for Lap(b)
    else:
        noisy, how = noise.gaussian_release(np.array([clipped_trace]), l2_sensitivity=sensitivity, rho=budget.rho,
                                            bound=r_tilde**2, float_error=error, rng=rng)
        tail = how.scale * math.sqrt(2 * math.log(8 / beta))  # sub-Gaussian: P(N_Z(0, s^2) > s x) <= exp(-x^2/2)
    accountant.spend(budget, f"AdaptiveCov: trace ({how})")
    return float(noisy[0]) + tail


# --- predicted error (mechanisms/predictions.py) ---------------------------------------------------

def adaptive_terms(f: Facts, budget: ZCDP) -> tuple[float, float] | None:
    """Dong et al. Theorem 3 at tau = r (no clipping; the tail gamma(X, tau) is not public), leading
    order: Noise(X, r, rho/2) = min(GaussCov's d r^2 / (sqrt(rho/2) n), Theorem 1's
    sqrt(tr) r d^1/4 / ((rho/2)^1/4 sqrt n) + sqrt(2d) r^2 / (sqrt(rho/2) n)), times one fitted constant."""
    half = ZCDP(budget.rho / 2)
    separate = separate_terms(f, half)
    if separate is None:
        return None
    return min(f.d * f.r2 / (math.sqrt(half.rho) * f.n), separate[0] + separate[1]), 0.0


ADAPTIVE_PREDICTION = Bound(adaptive_terms, constant=0.489, citation="Dong Thm 3 at τ = r",
                            fitted_on=("dong2022/fig2", "dong2022/fig3a", "dong2022/fig3b", "dong2022/fig3c",
                                       "dong2022/fig3d"))


def adaptive_lap_terms(f: Facts, budget: PureDP) -> tuple[float, float] | None:
    """Dong et al. Theorem 4 (AdaptiveCov under eps-DP) at tau = r, leading order: the better of
    LapCov's E||noise||_F ~ 2 d^2 r^2 / (eps' n) and the pure SeparateCov terms, at the covariance's
    eps' = eps/2, times one fitted constant."""
    half = PureDP(budget.eps / 2)
    separate = laplace.separate_lap_terms(f, half)
    if separate is None:
        return None
    return min(2 * f.d**2 * f.r2 / (half.eps * f.n), separate[0] + separate[1]), 0.0


ADAPTIVE_LAP_PREDICTION = Bound(adaptive_lap_terms, constant=0.576, citation="Dong Thm 4 at τ = r",
                                fitted_on=("dong2022/fig7", "dong2022/fig8_trace", "dong2022/fig8_dim",
                                           "dong2022/fig8_eps"))
