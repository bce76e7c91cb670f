"""A private bound on the rows' l2 norms, for data with no public bound (dpcov's ``radius="private"``).

Dong et al.'s PrivRadius (Lemma 9), on a finer grid and without a public starting radius: the sparse
vector technique (adaptive.above_threshold, their Algorithm 3) walks a descending geometric grid of
radii R_k = TOP * RATIO^-k, k = 1..K, asking query k = #{rows with ||x|| > R_k}. A count changes by at
most 1 when one row is replaced (sensitivity 1, whatever the data's scale), so the walk is eps-DP
for any threshold; the threshold only decides how many rows the bound may leave outside. The bound
is the grid radius before the first noisy crossing: with probability 1 - beta at most about
2 * threshold rows lie outside it, and they are clipped onto it (a per-row map, Dong §5.1). With fewer
than 4 * threshold rows (a fact of n and eps alone) it refuses: the walk would then stop far above the
data or clip most rows.

The grid spans 2^-64 .. 2^64 (any float data) in steps of 2^(1/4) (a bound at most 19 % above the
grid's best, so at most 41 % more noise variance than an exact bound).
"""
from __future__ import annotations

import math

import numpy as np

from .adaptive import above_threshold, svt_eps
from .privacy import Accountant

TOP_EXPONENT, RATIO_EXPONENT = 64, 0.25  # the grid: 2^(64 - k/4), k = 1 .. 512
STEPS = int(2 * TOP_EXPONENT / RATIO_EXPONENT)


def grid(steps: int = STEPS) -> np.ndarray:
    """R_1 > R_2 > ... > R_K, the radii the walk asks about."""
    return np.exp2(TOP_EXPONENT - RATIO_EXPONENT * np.arange(1, steps + 1))


def threshold(eps: float, beta: float, steps: int = STEPS) -> float:
    """Dong et al.'s PrivRadius threshold 6/eps log(2K/beta) + 1: over the K queries the noise stays
    below it w.p. 1 - beta, so the walk neither stops among the empty radii above the data nor misses
    the crossing."""
    return 6 / eps * math.log(2 * steps / beta) + 1


def norm_histogram(norms: np.ndarray) -> np.ndarray:
    """Counts of ``norms`` per cell of the grid: cell i holds R_(i+1) < ||x|| <= R_i (cell 0: above R_1,
    cell K: at most R_K). A sum over rows: blocks' histograms add up (a table streamed, Dask partitions)."""
    norms = np.asarray(norms, dtype=float)
    if norms.ndim != 1 or not np.all(np.isfinite(norms)) or np.any(norms < 0):
        raise ValueError("norms must be a non-empty 1-D array of finite numbers >= 0")
    cells = STEPS - np.searchsorted(grid()[::-1], norms, side="left")  # the ascending grid's cell, reversed
    return np.bincount(cells, minlength=STEPS + 1)


def private_norm_bound(norms: np.ndarray, budget, accountant: Accountant, rng: np.random.Generator, *,
                       beta: float = 0.1, numerics: str = "idealized") -> float:
    """A radius that bounds all but about 2 * threshold(...) of ``norms`` (the rows' l2 norms), spending
    ``budget`` (as a pure-DP step of its eps) through ``accountant``."""
    norms = np.asarray(norms, dtype=float)
    if norms.ndim != 1 or len(norms) < 1:
        raise ValueError("norms must be a non-empty 1-D array of finite numbers >= 0")
    return private_norm_bound_of(norm_histogram(norms), budget, accountant, rng, beta=beta, numerics=numerics)


def private_norm_bound_of(histogram: np.ndarray, budget, accountant: Accountant, rng: np.random.Generator, *,
                          beta: float = 0.1, numerics: str = "idealized") -> float:
    """private_norm_bound from the rows' ``norm_histogram`` (summed over blocks): the same queries, the
    same answer. numerics="hardened": the walk's SVT on a grid with exact discrete Laplace noise (its
    counts are exact integers)."""
    n, eps, limit = _walk_facts(histogram, budget, beta)
    if limit > n / 4:  # public facts only (n, eps): refusing leaks nothing
        raise ValueError(f"radius='private' needs n >= 4 x its threshold 6/eps log(2K/beta) + 1 = {limit:.0f} "
                         f"rows at eps = {eps:.3g} (its share of the budget); with n = {n} the bound would "
                         f"clip most rows or stop far above them. Give a public radius, or a larger radius_share "
                         f"or budget (eps >= {6 * math.log(2 * STEPS / beta) / (n / 4 - 1):.3g})")
    return _walk(histogram, limit, eps, accountant, rng, "norm bound: SVT", numerics)


def quantile_possible(n: int, q: float, budget, beta: float = 0.1) -> bool:
    """Whether private_norm_quantile_of can place the q-quantile of n norms (public facts: n, q, the budget):
    the walk's noise margin, threshold(...), at most half of the rows on either side of it."""
    return threshold(svt_eps(budget), beta) <= n * min(q, 1 - q) / 2


def private_norm_quantile_of(histogram: np.ndarray, q: float, budget, accountant: Accountant,
                             rng: np.random.Generator, *, beta: float = 0.1, numerics: str = "idealized") -> float:
    """A grid radius with about a fraction ``q`` of the rows' norms at or below it, from their
    ``norm_histogram``: the same walk as the bound with the threshold (1 - q) n (n is public), so it stops
    at the first radius with more than about (1 - q) n rows above it and returns the radius before; within
    about threshold(...) rows of the quantile w.p. 1 - beta. An eps-DP step of ``budget``'s eps. Refuses
    (ValueError) where ``quantile_possible`` says no."""
    n, eps, _ = _walk_facts(histogram, budget, beta)
    if not 0 < q < 1:
        raise ValueError(f"q must lie in (0, 1), got {q!r}")
    if not quantile_possible(n, q, budget, beta):  # public facts only
        raise ValueError(f"a private {q:g}-quantile of {n} norms at eps = {eps:.3g} needs its threshold "
                         f"{threshold(eps, beta):.0f} <= n min(q, 1 - q) / 2")
    return _walk(histogram, (1 - q) * n, eps, accountant, rng, f"norm {q:g}-quantile: SVT", numerics)


def _walk_facts(histogram: np.ndarray, budget, beta: float) -> tuple[int, float, float]:
    """(n, the walk's eps, Dong's threshold) after checking the histogram and beta."""
    histogram = np.asarray(histogram)
    n = int(histogram.sum())
    if histogram.shape != (STEPS + 1,) or n < 1:
        raise ValueError(f"histogram must be norm_histogram's {STEPS + 1} counts of at least one row")
    if not 0 < beta < 1:
        raise ValueError(f"beta must lie in (0, 1), got {beta!r}")
    eps = svt_eps(budget)
    return n, eps, threshold(eps, beta)


def _walk(histogram: np.ndarray, limit: float, eps: float, accountant: Accountant, rng: np.random.Generator,
          what: str, numerics: str = "idealized") -> float:
    """The grid radius before the first noisy crossing of ``limit`` by the counts of rows above R_k (SVT)."""
    above = np.cumsum(np.asarray(histogram))[:-1]  # above[idx] = #{||x|| > R_(idx+1)}: the cells 0..idx

    def rows_above(idx):  # query idx+1: #{||x|| > R_(idx+1)}
        return above[idx]

    # an eps-DP step (eps-DP implies eps^2/2-zCDP, and (eps, 0)-DP): the accountant charges it as such
    k = above_threshold(rows_above, STEPS, limit, eps, accountant, rng, what, numerics=numerics,
                        bound=float(np.sum(histogram)))  # n: public, and no count exceeds it
    radii = grid()
    return float(radii[k - 2]) if k >= 2 else float(np.exp2(TOP_EXPONENT))  # the radius before the crossing
