"""Hardened additive noise: private as executed, not only on paper.

A float release fl(s + eta) carries the statistic s in its low bits (Mironov 2012; Haney et al. 2022's
precision-based attack), whatever the sampler. The remedy of OpenDP and Google's library, here:

1. the statistic, clipped to a public bound B per entry, is rounded to the nearest multiple of a grid
   step g = 2^k, with k from public facts alone: about 2^-40 of the noise scale (``GRID_BITS``), coarser
   only where B / g would not fit the float mantissa;
2. exact integer noise is added on that grid (Canonne, Kamath & Steinke 2020, "The discrete Gaussian
   for differential privacy"): the discrete Laplace (pure eps-DP, their Algorithm 2) or the discrete
   Gaussian (rho-zCDP: Delta^2 / (2 sigma^2) for integer queries, their Theorem 14; Algorithm 3),
   built from exact Bernoulli(exp(-gamma)) draws (Algorithm 1) on uniform integers (each from the 53
   random bits of one rng.random(), by rejection: ``_below``) -- no float arithmetic in the sampler but one
   lazy comparison (below);
3. the sensitivity in grid steps is inflated by the rounding (each entry moves at most one step more
   between neighbours: l1 + m, l2 + sqrt(m) for m entries) and by a proven bound on the statistic's own
   float error (Casacuberta et al. 2022: each computed entry within e of the exact one moves by at most
   2e more; ``sum_error_bound``);
4. the release is g * N exactly (|N| < 2^52, checked: never a silent wrap).

The discrete Gaussian's acceptance test, Bernoulli(exp(-(|Y| - c)^2 / (2 t c))), has integers too large
for int64 at 2^40 grid steps; it compares 53 random bits with a float approximation of the
probability and its proven error bound, and only when they cannot decide (probability ~1e-14) draws
further bits and decides exactly with rational arithmetic (``_exact_accept``). Timing side channels
are out of scope, as in OpenDP and Google's library.
"""
from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
from numba import njit

from .privacy import ApproxDP
from .transcript import released as _step

GRID_BITS = 40  # the grid step is the power of two at about 2^-40 of the noise scale
MANTISSA_BITS = 52  # |N| < 2^52: g * N is exact in float64, with room for the noise
UNIT_ROUNDOFF = 2.0**-53
WORD, WORD_FLOAT = 2**53, 2.0**53  # the random bits of one rng.random()
MIN_GRID_EXPONENT = -1000  # g * N stays a normal float (2^-1022 and up) for the |N| a release reaches
NUMERICS = ("idealized", "hardened")  # float noise (private on paper) | this module's (private as executed)


def check_numerics(numerics: str) -> None:
    if numerics not in NUMERICS:
        raise ValueError(f"numerics must be 'idealized' or 'hardened', got {numerics!r}")


def secure_generator() -> np.random.Generator:
    """A generator for releases meant for publishing: ChaCha20 (randomgen) keyed by 256 bits of the
    operating system's entropy. numpy's PCG64 is fast but not cryptographic: its state can be
    recovered from its output."""
    from randomgen import ChaCha
    return np.random.Generator(ChaCha(key=int.from_bytes(os.urandom(32), "little"), rounds=20))


def is_secure(rng: np.random.Generator) -> bool:
    """Whether ``rng`` draws from a cryptographic bit generator (ChaCha with 20 rounds, as
    ``secure_generator`` makes)."""
    bits = rng.bit_generator
    return type(bits).__name__ == "ChaCha" and bits.state["state"].get("rounds", 0) >= 20


def sum_error_bound(n_terms: int, term_bound: float, ops_per_term: int = 3) -> float:
    """A bound on |computed - exact| of a float64 sum of ``n_terms`` terms, each |term| <= ``term_bound``
    and computed with at most ``ops_per_term`` roundings, added in any order (Higham, Accuracy and
    Stability of Numerical Algorithms, 2002, eq. 4.4 and Lemma 3.1: gamma_k = k u / (1 - k u))."""
    k = n_terms - 1 + ops_per_term
    if k * UNIT_ROUNDOFF >= 0.5:
        raise ValueError(f"no useful float error bound for a sum of {n_terms} terms")
    return k * UNIT_ROUNDOFF / (1 - k * UNIT_ROUNDOFF) * n_terms * term_bound


@dataclass(frozen=True)
class Hardening:
    """What a hardened release did, for the ledger: the grid step, the ideal sensitivity and what the
    rounding and the statistic's float error added to it (in the statistic's units), the noise."""

    noise: str  # "discrete Gaussian" | "discrete Laplace"
    grid: float
    sensitivity: float
    rounding: float
    float_error: float
    scale: float  # sigma (Gaussian) or b (Laplace), in the statistic's units

    def __str__(self) -> str:
        return (f"hardened: {self.noise} on the grid 2^{int(math.log2(self.grid))}, sensitivity "
                f"{self.sensitivity:.6g} + {self.rounding:.3g} (rounding) + {self.float_error:.3g} (float error)")


def grid_step(scale: float, bound: float) -> float:
    """The grid 2^k from public facts: about 2^-GRID_BITS of the noise ``scale``, and coarse enough that
    ``bound`` (the entries' public bound) is under 2^(MANTISSA_BITS - 1) steps."""
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"noise scale must be positive and finite, got {scale!r}")
    if not (bound > 0 and math.isfinite(bound)):
        raise ValueError(f"the statistic's public bound must be positive and finite, got {bound!r}")
    k = max(math.frexp(scale)[1] - GRID_BITS, math.frexp(bound)[1] - (MANTISSA_BITS - 1))
    if k < MIN_GRID_EXPONENT:
        raise ValueError(f"noise scale {scale:g} is too small for a float grid (2^{k} < 2^{MIN_GRID_EXPONENT}): "
                         f"its releases would be subnormal")
    return math.ldexp(1.0, k)


def on_grid(statistic: np.ndarray, grid: float, bound: float) -> np.ndarray:
    """The statistic clipped to [-bound, bound] in grid steps, rounded to the nearest integer (int64)."""
    values = np.asarray(statistic, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError("the statistic holds NaN or inf: nothing to release")
    return np.rint(np.clip(values, -bound, bound) / grid).astype(np.int64)


def _released(steps: np.ndarray, noise: np.ndarray, grid: float) -> np.ndarray:
    total = steps + noise  # |steps| < 2^51 and |noise| < 2^62 cannot wrap; checked against 2^52 next
    if np.any(np.abs(total) >= 2**MANTISSA_BITS):
        raise OverflowError(f"a noisy value exceeds 2^{MANTISSA_BITS} grid steps of {grid:g}: g * N would not "
                            f"be exact (a noise draw beyond all tails, or a bound too large for the grid)")
    return total.astype(np.float64) * grid  # exact: |N| < 2^52 and g a power of two


# --- exact samplers (Canonne, Kamath & Steinke 2020) -----------------------------------------------

@njit(cache=True)
def _below(rng, n):
    """A uniform integer in [0, n), exactly: for n <= 2^53 from the 53 random bits of one rng.random() (numpy's
    doubles are (next_uint64 >> 11) 2^-53, so times 2^53 they are those bits, exactly), by rejection above the
    largest multiple of n -- about 8 x faster than numba's rng.integers; larger n through rng.integers."""
    if n == 1:
        return 0
    if n <= WORD:
        limit = WORD - WORD % n
        while True:
            v = np.int64(rng.random() * WORD_FLOAT)
            if v < limit:
                return v % n
    return rng.integers(0, n)


@njit(cache=True)
def _bernoulli_exp_fraction(rng, num, den):
    """Bernoulli(exp(-num/den)) for integers 0 <= num <= den (Algorithm 1, gamma in [0, 1]):
    K = 1, 2, ... while Bernoulli(gamma / K) succeeds; true iff K ends odd. Bernoulli(num / (den K)) is
    Bernoulli(1/K) and Bernoulli(num/den), independent (no product den K to overflow)."""
    k = 1
    while _below(rng, k) == 0 and _below(rng, den) < num:
        k += 1
    return k % 2 == 1


@njit(cache=True)
def _discrete_laplace_one(rng, t):
    """One draw with P(x) proportional to exp(-|x| / t), integer t >= 1 (Algorithm 2 with s = 1)."""
    while True:
        u = _below(rng, t)
        if not _bernoulli_exp_fraction(rng, u, t):  # U accepted with probability exp(-U/t)
            continue
        v = 0
        while _bernoulli_exp_fraction(rng, 1, 1):  # V ~ Geometric(1 - exp(-1))
            v += 1
            if v > (2**62) // t:
                raise OverflowError("discrete Laplace draw beyond 2^62")
        x = u + t * v
        negative = _below(rng, 2) == 1
        if negative and x == 0:  # zero once, not twice
            continue
        return -x if negative else x


@njit(cache=True)
def _discrete_laplace_fill(rng, t, out):
    for i in range(out.size):
        out[i] = _discrete_laplace_one(rng, t)


@njit(cache=True)
def _discrete_gaussian_fill(rng, t, c, out, start, pending, pending_bits, slack):
    """Discrete Gaussian draws with sigma^2 = t c (Algorithm 3): Y ~ DLap(t), kept with probability
    exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)) = exp(-(|Y| - c)^2 / (2 t c)). That probability p is
    compared with a uniform U given by 53 random bits v, U in [v 2^-53, (v+1) 2^-53): decided when
    the interval lies on one side of p's float value widened by its error bound (|a|, t, c < 2^53 are
    exact floats; three roundings in gamma, one in exp: |p_float - p| <= 4e-16 (gamma + 1) p, bounded
    here by 1e-14 (gamma + 1) p). Undecided draws (their index and v) go to ``pending``. Fills out[start:] and
    returns (the index it stopped at, how many are pending): it stops early when ``pending`` is full, to be called
    again from there (the same draws in the same order whatever the buffer's size)."""
    n_pending = 0
    for i in range(start, out.size):
        if n_pending == len(pending):
            return i, n_pending
        while True:
            y = _discrete_laplace_one(rng, t)
            a = abs(y) - c
            gamma = float(a) * float(a) / (2.0 * float(t) * float(c))
            p = math.exp(-gamma)
            tolerance = slack * (gamma + 1.0) * p + 1e-300
            v = np.int64(rng.random() * WORD_FLOAT)  # its 53 random bits (_below)
            if (v + 1) * 2.0**-53 <= p - tolerance:  # U < p for sure: keep
                out[i] = y
                break
            if v * 2.0**-53 >= p + tolerance:  # U >= p for sure: reject, draw again
                continue
            out[i] = y  # undecided: exactly, below
            pending[n_pending] = i
            pending_bits[n_pending] = v
            n_pending += 1
            break
    return out.size, n_pending


def _exact_accept(a: int, t: int, c: int, v: int, rng: np.random.Generator) -> bool:
    """Whether U < exp(-a^2 / (2 t c)) for the uniform U whose first 53 bits are v: further random bits
    and exp to more digits (Python's decimal: correctly rounded) until the two are decided, exactly."""
    gamma = Fraction(a * a, 2 * t * c)
    numerator, bits, digits = v, 53, 40
    while True:
        numerator = (numerator << 64) | int(rng.integers(0, 2**64, dtype=np.uint64))
        bits += 64
        low, high = Fraction(numerator, 1 << bits), Fraction(numerator + 1, 1 << bits)
        with localcontext() as context:
            context.prec = digits
            p = Fraction((-(Decimal(gamma.numerator) / Decimal(gamma.denominator))).exp())
        error = (gamma + 1) * Fraction(1, 10 ** (digits - 3))  # division and exp, each within 1 ulp
        if high <= p - error:
            return True
        if low >= p + error:
            return False
        digits += 25


def discrete_laplace(t: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` iid draws with P(x) proportional to exp(-|x| / t), t a positive integer (int64)."""
    t = int(t)
    if not 1 <= t < 2**61:
        raise ValueError(f"discrete Laplace scale must be an integer in [1, 2^61), got {t}")
    out = np.empty(int(size), dtype=np.int64)
    _discrete_laplace_fill(rng, t, out)
    return out


def discrete_gaussian_parameters(sigma: float) -> tuple[int, int]:
    """(t, c) with t = floor(sigma) + 1 and sigma^2 <= t c exactly (c = ceil(sigma^2 / t)): the discrete
    Gaussian of variance parameter t c is at least as wide as asked."""
    if not (sigma > 0 and math.isfinite(sigma)):
        raise ValueError(f"discrete Gaussian sigma must be positive and finite, got {sigma!r}")
    t = math.floor(sigma) + 1
    exact = Fraction(sigma) ** 2 / t
    c = -(-exact.numerator // exact.denominator)
    if t * c >= 2**100 or t >= 2**52 or c >= 2**52:
        raise OverflowError(f"discrete Gaussian sigma {sigma:g} grid steps is too large for exact sampling")
    return t, max(c, 1)


def discrete_gaussian(sigma: float, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` iid draws with P(x) proportional to exp(-x^2 / (2 s^2)), s^2 = t c >= sigma^2 (int64)."""
    t, c = discrete_gaussian_parameters(sigma)
    return _discrete_gaussian(t, c, int(size), rng)


PENDING = 1 << 16  # undecided draws held per call of the compiled fill (not one slot per draw: 8 bytes x d^2 / 2 saved)


SLACK = 1e-14  # the float acceptance probability's relative error bound (above): draws within it are decided exactly


def _discrete_gaussian(t: int, c: int, size: int, rng: np.random.Generator, slack: float = SLACK) -> np.ndarray:
    """``size`` draws (discrete_gaussian); ``slack``: the band decided exactly (wider in tests: every draw there
    exact, only more of them undecided)."""
    if not slack >= SLACK:
        raise ValueError(f"slack must be at least the float bound {SLACK}, got {slack!r}")
    out = np.empty(size, dtype=np.int64)
    pending = np.empty(min(size, PENDING), dtype=np.int64)  # undecided draws are rare (a 1e-14 band): a small buffer
    bits = np.empty(len(pending), dtype=np.int64)
    undecided, start = [], 0
    while True:  # every draw first, then the undecided ones decided in order (the same random stream as one call)
        start, n_pending = _discrete_gaussian_fill(rng, t, c, out, start, pending, bits, slack)
        undecided += zip(pending[:n_pending].tolist(), bits[:n_pending].tolist())
        if start >= size:
            break
    for index, v in undecided:
        if not _exact_accept(abs(int(out[index])) - c, t, c, v, rng):  # rejected: a fresh draw, decided
            out[index] = _discrete_gaussian(t, c, 1, rng, slack)[0]
    return out


# --- hardened releases ---------------------------------------------------------------------------

def gaussian_release(statistic: np.ndarray, *, l2_sensitivity: float, rho: float, bound: float,
                     float_error: float, rng: np.random.Generator) -> tuple[np.ndarray, Hardening]:
    """rho-zCDP release of ``statistic`` (entries within [-bound, bound] in exact arithmetic, computed
    within ``float_error`` each; l2-sensitivity ``l2_sensitivity``): g * (round(s / g) + discrete
    Gaussian), sigma = (Delta/g + 2 e sqrt(m)/g + sqrt(m)) / sqrt(2 rho) grid steps."""
    values = np.asarray(statistic, dtype=np.float64)
    m = values.size
    ideal = l2_sensitivity / math.sqrt(2 * rho)
    grid = grid_step(ideal, bound)
    rounding = math.sqrt(m) * grid
    float_part = 2 * float_error * math.sqrt(m)
    steps = (l2_sensitivity + float_part) / grid + math.sqrt(m)
    sigma = steps / math.sqrt(2 * rho) * (1 + 1e-12)  # rounded up: never less noise than the bound asks
    noise = discrete_gaussian(sigma, m, rng).reshape(values.shape)
    released = _released(on_grid(values, grid, bound), noise, grid)
    released = _step("gaussian", "discrete Gaussian (zCDP)", values, released, sensitivity=l2_sensitivity, norm="l2",
                     slack=float_part, grid=grid, sigma=sigma, bound=bound, shape=values.shape, rho=rho)
    return released, Hardening("discrete Gaussian", grid, l2_sensitivity, rounding, float_part, sigma * grid)


def laplace_release(statistic: np.ndarray, *, l1_sensitivity: float, eps: float, bound: float,
                    float_error: float, rng: np.random.Generator) -> tuple[np.ndarray, Hardening]:
    """eps-DP release of ``statistic`` (as ``gaussian_release``; l1): g * (round(s / g) + discrete
    Laplace), scale t = ceil((Delta/g + 2 e m/g + m) / eps) grid steps."""
    values = np.asarray(statistic, dtype=np.float64)
    m = values.size
    ideal = l1_sensitivity / eps
    grid = grid_step(ideal, bound)
    rounding = m * grid
    float_part = 2 * float_error * m
    steps = (l1_sensitivity + float_part) / grid + m
    t = math.ceil(steps / eps * (1 + 1e-12))
    noise = discrete_laplace(t, m, rng).reshape(values.shape)
    released = _released(on_grid(values, grid, bound), noise, grid)
    released = _step("laplace", "discrete Laplace (eps-DP)", values, released, sensitivity=l1_sensitivity, norm="l1",
                     slack=float_part, grid=grid, t=t, bound=bound, shape=values.shape, eps=eps)
    return released, Hardening("discrete Laplace", grid, l1_sensitivity, rounding, float_part, t * grid)


# --- the discrete Gaussian calibrated to (eps, delta) ----------------------------------------------

_DIGITS = 50  # mpmath's working precision for the privacy curve (decimal digits)


def _continuous_delta(eps, mu):
    """delta(eps) of the continuous Gaussian mechanism with sensitivity / sigma = mu (Balle & Wang 2018, Thm 8):
    Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu), as an mpmath number at _DIGITS digits."""
    import mpmath
    with mpmath.workdps(_DIGITS):
        eps, mu = mpmath.mpf(eps), mpmath.mpf(mu)
        return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)


def discrete_gaussian_delta_bound(eps: float, sensitivity: float, sigma: float) -> float:
    """An upper bound on delta(eps) of y -> q + Y, Y ~ N_Z(0, sigma^2)^m iid (any m), for integer queries q whose
    neighbours differ by an integer vector v with ||v||_2 <= ``sensitivity`` (all in grid steps, sigma >= 1):

        delta(eps) <= Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) + Delta / sigma^2,   mu = Delta / sigma,

    the continuous Gaussian's curve at the same sigma plus Delta / sigma^2 (~2^-40 of mu on this module's grids).

    Proof. (1) For integer v the two outputs' pmfs have the same normaliser, so the privacy loss at y = q + Y is
    L = (||v||^2 - 2 v.Y) / (2 sigma^2), distributed (Y symmetric) as (||v||^2 + 2 S) / (2 sigma^2) with S = v.Y, and
    delta_v(eps) = E[f(L)], f(l) = max(0, 1 - e^(eps - l)) (the hockey-stick divergence; both orders of the pair, as
    -v is a shift too). For m = 1 this is Canonne, Kamath & Steinke 2020, Theorem 7; for the continuous G ~
    N(0, sigma^2)^m the same formula with S = v.G ~ N(0, sigma^2 ||v||^2) is Balle & Wang's curve at mu = ||v||/sigma.
    (2) g(s) = f((||v||^2 + 2 s) / (2 sigma^2)) is nondecreasing and 1/sigma^2-Lipschitz (f' = e^(eps - l) <= 1 where
    f > 0), so |E g(v.Y) - E g(v.G)| <= E|v.(Y - G)| / sigma^2 under any coupling of Y and G.
    (3) The coupling: coordinate by coordinate, the quantile coupling of Y_j ~ N_Z(0, sigma^2) and G_j ~ N(0, sigma^2)
    (one uniform U_j: Y_j = F_Y^-1(U_j), G_j = F_G^-1(U_j)). It has |Y_j - G_j| <= 1 surely: that holds iff
    P(Y >= k + 1) <= P(G >= k) for every integer k (with the symmetric statement, which is the same by symmetry).
    For k >= 0 phi (the N(0, sigma^2) density) decreases on [k, inf): sum_{i > k} phi(i) <= int_k^inf phi, and
    P(Y = i) = phi(i) / (1 + theta) <= phi(i) (Poisson summation: sum_i phi(i) = 1 + theta, theta =
    2 sum_{k>=1} e^(-2 pi^2 sigma^2 k^2) > 0). For k < 0 it reads P(G >= J) <= P(Y >= J), J = -k >= 1: the left sums
    exceed the integral by at least phi(J) h(J/sigma^2), h(u) = 1 - (1 - e^-u)/u >= min(u/3, 0.36), and theta times
    Mills' bound P(G >= J) <= phi(J) sigma^2 / J is smaller whenever theta <= 1 / (3 sigma^4), true for sigma >= 1.
    The coupling is symmetric (U -> 1 - U negates both), so D_j = Y_j - G_j are independent, mean 0, |D_j| <= 1, and
    E|v.D| <= sqrt(sum_j v_j^2 E D_j^2) <= ||v||. Hence delta_v(eps) <= delta_G(eps; ||v||/sigma) + ||v||/sigma^2,
    and both terms increase with ||v|| <= Delta: the bound, for every v and every m at once (no union over
    coordinates: the dimension enters only through Delta).
    The curve is evaluated with mpmath at 50 digits (its error ~1e-45 relative, far below the 1e-12 margin the
    calibration keeps: ``discrete_gaussian_sigma_approx``)."""
    if not (sigma >= 1 and math.isfinite(sigma)):
        raise ValueError(f"the coupling bound needs sigma >= 1 grid step, got {sigma!r}")
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be positive and finite, got {sensitivity!r}")
    import mpmath
    with mpmath.workdps(_DIGITS):
        total = _continuous_delta(eps, mpmath.mpf(sensitivity) / mpmath.mpf(sigma)) \
            + mpmath.mpf(sensitivity) / mpmath.mpf(sigma) ** 2
        return float(total) * (1 + 1e-15) + 1e-300  # rounded up (float() is within 2^-53 relative)


def _check_eps_delta(eps: float, delta: float) -> None:
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"eps must be positive and finite, got {eps!r}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")


@functools.lru_cache(maxsize=256)
def analytic_gaussian_ratio(eps: float, delta: float) -> float:
    """sigma / sensitivity of the continuous analytic Gaussian mechanism at (eps, delta) (Balle & Wang 2018), by
    bisection on the 50-digit curve to a relative 1e-12, rounded up: the grid's public reference scale."""
    _check_eps_delta(eps, delta)
    low, high = 1.0, 1.0  # in units of the sensitivity: find high with delta(high) <= delta < delta(low)
    while _continuous_delta(eps, 1 / high) > delta:
        low, high = high, 2 * high
    while _continuous_delta(eps, 1 / low) <= delta and low > 1e-12:
        low /= 2
    while high - low > 1e-13 * high:
        middle = (low + high) / 2
        low, high = (low, middle) if _continuous_delta(eps, 1 / middle) <= delta else (middle, high)
    return high


@functools.lru_cache(maxsize=256)
def discrete_gaussian_sigma_approx(sensitivity: float, eps: float, delta: float) -> float:
    """The smallest sigma (grid steps, to a relative 1e-12, rounded up) whose ``discrete_gaussian_delta_bound`` at
    eps is at most delta: N_Z(0, sigma^2) noise on an integer query of l2-sensitivity ``sensitivity`` (steps) is then
    (eps, delta)-DP in any dimension (the bound's proof). The bound decreases in sigma, so bisection finds it; it
    starts at the continuous analytic Gaussian's sigma, which the bound's extra term Delta/sigma^2 puts just
    below the answer."""
    _check_eps_delta(eps, delta)
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise ValueError(f"sensitivity must be positive and finite, got {sensitivity!r}")
    low = max(analytic_gaussian_ratio(eps, delta) * sensitivity * (1 - 1e-9), 1.0)
    high = 2 * low
    while discrete_gaussian_delta_bound(eps, sensitivity, high) > delta:
        low, high = high, 2 * high
    while high - low > 1e-13 * high:
        middle = (low + high) / 2
        if discrete_gaussian_delta_bound(eps, sensitivity, middle) <= delta:
            high = middle
        else:
            low = middle
    return high


def approx_gaussian_plan(*, l2_sensitivity: float, eps: float, delta: float, bound: float, float_error: float,
                         m: int) -> tuple[float, float, Hardening]:
    """The grid g and sigma (grid steps) of an (eps, delta)-DP discrete Gaussian release of m entries (as
    ``gaussian_release``): sigma the smaller of ``discrete_gaussian_sigma_approx`` at the inflated sensitivity
    (Delta/g + 2 e sqrt(m)/g + sqrt(m) steps: the discrete Gaussian's curve, proven in
    ``discrete_gaussian_delta_bound``) and the zCDP route's (steps / sqrt(2 rho), rho = ``ApproxDP.to_zcdp``:
    Canonne et al. 2020 Thm 14 and Bun & Steinke Prop. 1.3) -- each proven on its own, so the smaller is too, and never wider
    than the zCDP route. The grid comes from the continuous analytic Gaussian's scale (public: the budget, Delta)."""
    _check_eps_delta(eps, delta)
    ideal = analytic_gaussian_ratio(eps, delta) * l2_sensitivity
    grid = grid_step(ideal, bound)
    rounding = math.sqrt(m) * grid
    float_part = 2 * float_error * math.sqrt(m)
    steps = (l2_sensitivity + float_part) / grid + math.sqrt(m)
    exact = discrete_gaussian_sigma_approx(steps, eps, delta)
    via_zcdp = steps / math.sqrt(2 * ApproxDP(eps, delta).to_zcdp().rho) * (1 + 1e-12)
    sigma = min(exact, via_zcdp)
    how = "the (eps, delta) curve" if exact <= via_zcdp else "zCDP"
    return grid, sigma, Hardening(f"discrete Gaussian (calibrated by {how})", grid, l2_sensitivity, rounding,
                                  float_part, sigma * grid)


def gaussian_release_approx(statistic: np.ndarray, *, l2_sensitivity: float, eps: float, delta: float,
                            bound: float, float_error: float, rng: np.random.Generator
                            ) -> tuple[np.ndarray, Hardening]:
    """(eps, delta)-DP release of ``statistic`` (as ``gaussian_release``): g * (round(s / g) + discrete Gaussian),
    g and sigma from ``approx_gaussian_plan``."""
    values = np.asarray(statistic, dtype=np.float64)
    grid, sigma, how = approx_gaussian_plan(l2_sensitivity=l2_sensitivity, eps=eps, delta=delta, bound=bound,
                                            float_error=float_error, m=values.size)
    noise = discrete_gaussian(sigma, values.size, rng).reshape(values.shape)
    released = _step("gaussian", "discrete Gaussian ((eps, delta))", values,
                     _released(on_grid(values, grid, bound), noise, grid), sensitivity=l2_sensitivity, norm="l2",
                     slack=how.float_error, grid=grid, sigma=sigma, bound=bound, shape=values.shape, eps=eps,
                     delta=delta)
    return released, how
