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

import math
import os
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
from numba import njit

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
def _discrete_gaussian_fill(rng, t, c, out, pending, pending_bits):
    """Discrete Gaussian draws with sigma^2 = t c (Algorithm 3): Y ~ DLap(t), kept with probability
    exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)) = exp(-(|Y| - c)^2 / (2 t c)). That probability p is
    compared with a uniform U given by 53 random bits v, U in [v 2^-53, (v+1) 2^-53): decided when
    the interval lies on one side of p's float value widened by its error bound (|a|, t, c < 2^53 are
    exact floats; three roundings in gamma, one in exp: |p_float - p| <= 4e-16 (gamma + 1) p, bounded
    here by 1e-14 (gamma + 1) p). Undecided draws (their index and v) go to ``pending``."""
    n_pending = 0
    for i in range(out.size):
        while True:
            y = _discrete_laplace_one(rng, t)
            a = abs(y) - c
            gamma = float(a) * float(a) / (2.0 * float(t) * float(c))
            p = math.exp(-gamma)
            tolerance = 1e-14 * (gamma + 1.0) * p + 1e-300
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
    return n_pending


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


def _discrete_gaussian(t: int, c: int, size: int, rng: np.random.Generator) -> np.ndarray:
    out = np.empty(size, dtype=np.int64)
    pending = np.empty(size, dtype=np.int64)
    bits = np.empty(size, dtype=np.int64)
    n_pending = _discrete_gaussian_fill(rng, t, c, out, pending, bits)
    for index, v in zip(pending[:n_pending].tolist(), bits[:n_pending].tolist()):
        if not _exact_accept(abs(int(out[index])) - c, t, c, v, rng):  # rejected: a fresh draw, decided
            out[index] = _discrete_gaussian(t, c, 1, rng)[0]
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
    return released, Hardening("discrete Laplace", grid, l1_sensitivity, rounding, float_part, t * grid)
