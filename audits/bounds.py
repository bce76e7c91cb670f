"""What a privacy claim says about one event, and the lower bounds an audit draws from counts.

A test of M(D) against M(D') with event E has P[M(D) in E] = p1 and P[M(D') in E] = p0. Every claim
bounds the pair (p1, p0) for every event; an audit estimates both with one-sided Clopper-Pearson
bounds (p1 from below, p0 from above) and turns them into the smallest privacy parameter of the
claim's own kind that the pair is compatible with. The claim is exceeded when that lower bound is
above the claimed parameter. The profiles (``Claim.kind``):

- ``renyi`` (a rho-zCDP claim): zCDP is closed under post-processing, so the Bernoulli pair itself
  has D_a(Bern(p1) || Bern(p0)) <= a rho for every order a > 1 (Bun & Steinke 2016; the Renyi
  hypothesis-testing region of Balle et al. 2020). rho_lb = sup_a D_a(Bern(p1-) || Bern(p0+)) / a.
  This is the whole privacy profile at once: it implies every (eps, delta(eps)) point of the tight
  conversion (Canonne, Kamath & Steinke 2020), and each event picks its own point.
- ``pure`` (eps-DP): eps_lb = ln(p1- / p0+).
- ``approx`` ((eps, delta)-DP, the point): eps_lb = ln((p1- - delta) / p0+) at the claimed delta.
- ``gaussian`` (a post-processed Gaussian mechanism: mu-GDP, exact): every test has
  FNR >= Phi(Phi^-1(1 - FPR) - mu), so mu_lb = Phi^-1(1 - p0+) - Phi^-1(1 - p1-). rho-zCDP of a
  Gaussian mechanism is mu = sqrt(2 rho); an (eps, delta) claim is the mu whose profile passes through it.
  Valid only for mechanisms that are post-processed Gaussian mechanisms (declared, never assumed).

Events are thresholds on a scalar score of the release (``Event``); ``choose_event`` searches every
score, threshold, tail and order for the largest bound.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import betaincinv
from scipy.stats import norm

from dpcov.mechanisms.privacy import ZCDP, ApproxDP, PureDP

# Renyi orders: dense near 1 (events of large probability) up to 1e4 (rare events, large ratios).
ORDERS = np.concatenate([np.linspace(1.02, 2.0, 25), np.geomspace(2.0, 1e4, 60)[1:]])


# ---------------------------------------------------------------------------------------------------
# Clopper-Pearson bounds (vectorised)


def cp_lower(k, n, level):
    """One-sided Clopper-Pearson lower bound: P[p < bound] <= level."""
    k = np.asarray(k)
    # the Beta(k, n - k + 1) quantile: scipy.stats.beta.ppf's own kernel, without its 160 us of argument checks
    out = np.where(k > 0, betaincinv(np.maximum(k, 1), np.maximum(n - k + 1, 1), level), 0.0)
    return float(out) if out.ndim == 0 else out


def cp_upper(k, n, level):
    """One-sided Clopper-Pearson upper bound: P[p > bound] <= level."""
    k = np.asarray(k)
    out = np.where(k < n, betaincinv(k + 1, np.maximum(n - k, 1), 1 - level), 1.0)
    return float(out) if out.ndim == 0 else out


# ---------------------------------------------------------------------------------------------------
# Gaussian profile


def gaussian_delta(mu: float, eps: float) -> float:
    """delta(eps) of mu-GDP (Dong, Roth & Su 2022, Cor. 2.13): Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)."""
    return float(norm.cdf(-eps / mu + mu / 2) - math.exp(eps + norm.logcdf(-eps / mu - mu / 2)))


@functools.lru_cache(maxsize=256)
def gaussian_mu(eps: float, delta: float) -> float:
    """The mu of the Gaussian mechanism that is exactly (eps, delta)-DP (delta_mu(eps) = delta)."""
    return brentq(lambda mu: gaussian_delta(mu, eps) - delta, 1e-9, 100.0, xtol=1e-14, rtol=1e-13)


def claimed_mu(budget) -> float:
    """The mu-GDP that a Gaussian mechanism meeting ``budget`` exactly has."""
    if isinstance(budget, ZCDP):
        return math.sqrt(2 * budget.rho)
    if isinstance(budget, ApproxDP):
        return gaussian_mu(budget.eps, budget.delta)
    raise TypeError(f"no Gaussian profile for a {budget} claim")


# ---------------------------------------------------------------------------------------------------
# The bound of each profile: (k1 of n1, k0 of n0) -> lower bound on the claim's parameter


def _log_renyi_bernoulli(p, q):
    """D_a(Bern(p) || Bern(q)) for every order in ORDERS: arrays (m,) -> (m, orders)."""
    a = ORDERS[None, :]
    p, q = np.asarray(p, float)[:, None], np.asarray(q, float)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        first = a * np.log(p) + (1 - a) * np.log(q)
        second = a * np.log1p(-p) + (1 - a) * np.log1p(-q)
        return np.logaddexp(first, second) / (a - 1)


def renyi_rho(p1, p0):
    """sup_a D_a(Bern(p1) || Bern(p0)) / a where p1 > p0 (0 elsewhere): the smallest rho of a rho-zCDP
    mechanism that can have the event probabilities (p1, p0)."""
    p1, p0 = np.atleast_1d(np.asarray(p1, float)), np.atleast_1d(np.asarray(p0, float))
    out = np.zeros(np.broadcast(p1, p0).shape)
    p1, p0 = np.broadcast_to(p1, out.shape), np.broadcast_to(p0, out.shape)
    live = p1 > p0
    if np.any(live):
        q = np.clip(p0[live], 1e-300, 1.0)
        p = np.clip(p1[live], 0.0, 1.0)
        div = _log_renyi_bernoulli(p, q) / ORDERS[None, :]
        out[live] = np.nanmax(np.where(np.isfinite(div), div, np.nan), axis=1, initial=0.0)
    return out


def _bound(kind: str, k1, n1, k0, n0, level: float, delta: float = 0.0):
    """Lower bound on the claim parameter from counts: each probability bounded at ``level``."""
    k1, k0 = np.asarray(k1), np.asarray(k0)
    if kind == "gaussian":
        p0 = cp_upper(k0, n0, level)
        miss = cp_upper(n1 - k1, n1, level)  # FNR upper bound: p1 lower bound
        return np.maximum(norm.isf(p0) - norm.ppf(miss), 0.0)
    p1, p0 = cp_lower(k1, n1, level), cp_upper(k0, n0, level)
    if kind == "renyi":
        return renyi_rho(p1, p0)
    with np.errstate(divide="ignore", invalid="ignore"):
        excess = np.asarray(p1) - (delta if kind == "approx" else 0.0)
        value = np.where(excess > 0, np.log(np.maximum(excess, 1e-300) / np.asarray(p0)), 0.0)
    return np.maximum(value, 0.0)


@dataclass(frozen=True)
class Claim:
    """A privacy claim as an audit tests it: its kind of profile and the claimed parameter."""

    budget: object  # ZCDP, PureDP or ApproxDP
    kind: str  # renyi, pure, approx, gaussian

    @classmethod
    def of(cls, budget, gaussian: bool = False) -> "Claim":
        """The whole profile of ``budget``; ``gaussian``: the mechanism is declared a post-processed
        Gaussian mechanism, so its exact mu-GDP profile applies (zCDP or (eps, delta) claims)."""
        if gaussian:
            claimed_mu(budget)  # TypeError for a pure claim
            return cls(budget, "gaussian")
        kinds = {ZCDP: "renyi", PureDP: "pure", ApproxDP: "approx"}
        if type(budget) not in kinds:
            raise TypeError(f"budget must be ZCDP, PureDP or ApproxDP, got {budget!r}")
        return cls(budget, kinds[type(budget)])

    @property
    def value(self) -> float:
        """The claimed parameter in the units of the bound."""
        if self.kind == "gaussian":
            return claimed_mu(self.budget)
        return self.budget.rho if self.kind == "renyi" else self.budget.eps

    @property
    def symbol(self) -> str:
        return {"gaussian": "mu", "renyi": "rho", "pure": "eps",
                "approx": f"eps (delta={getattr(self.budget, 'delta', 0):.3g})"}[self.kind]

    @property
    def delta(self) -> float:
        return self.budget.delta if self.kind == "approx" else 0.0

    def bound(self, k1, n1, k0, n0, level: float):
        """Lower bound on the parameter (vectorised over counts), each probability at ``level``."""
        return _bound(self.kind, k1, n1, k0, n0, level, self.delta)

    def describe(self) -> str:
        profile = {"renyi": "Renyi region of zCDP (every order)", "pure": "pure DP",
                   "approx": "(eps, delta) point", "gaussian": "exact Gaussian (mu-GDP) profile"}[self.kind]
        return f"{self.budget} ({profile}; {self.symbol} = {self.value:.4g})"


# ---------------------------------------------------------------------------------------------------
# Events: thresholds on a score


@dataclass(frozen=True)
class Event:
    """E = {sign * score_j > sign * threshold}; ``swap``: the numerator dataset is D' (p1 from D')."""

    statistic: int
    sign: int
    threshold: float
    swap: bool

    def count(self, scores: np.ndarray) -> int:
        s = np.asarray(scores)
        column = s[:, self.statistic] if s.ndim == 2 else s
        return int(np.sum(self.sign * column > self.sign * self.threshold))

    def counts(self, s0: np.ndarray, s1: np.ndarray) -> tuple[int, int]:
        """(runs in the event on the numerator dataset, on the other): s0 from D, s1 from D'."""
        first, second = (s1, s0) if self.swap else (s0, s1)
        return self.count(first), self.count(second)


def _counts_above(sorted_s: np.ndarray, t: np.ndarray, sign: int) -> np.ndarray:
    if sign > 0:
        return len(sorted_s) - np.searchsorted(sorted_s, t, side="right")
    return np.searchsorted(sorted_s, t, side="left")


def _threshold_grid(pooled: np.ndarray, candidates: int) -> np.ndarray:
    unique = np.unique(pooled)
    return np.unique(np.concatenate([np.quantile(pooled, np.linspace(0, 1, candidates)),
                                     np.quantile(pooled, 1 - np.geomspace(1e-4, 0.05, 20)),
                                     np.quantile(pooled, np.geomspace(1e-4, 0.05, 20)),
                                     unique[:30], unique[-30:]]))


def choose_event(s0: np.ndarray, s1: np.ndarray, claim: Claim, level: float, n_confirm: int | None = None,
                 candidates: int = 200) -> tuple[Event, float]:
    """The event with the largest bound on (s0, s1) (arrays runs x scores; s0 from D, s1 from D'):
    every score, both tails, both orders, thresholds at quantiles of the pooled sample (and its
    extremes, for atoms). ``n_confirm``: the runs per dataset that will confirm the event; when fewer
    than the selection runs, the counts are rescaled to it (the confirmation's sampling error is then
    the larger one); never scaled up, which would trust rare selection events more than they deserve."""
    s0, s1 = np.asarray(s0, float), np.asarray(s1, float)
    s0, s1 = (s0[:, None], s1[:, None]) if s0.ndim == 1 else (s0, s1)
    n = min(n_confirm or len(s0), len(s0))
    best, best_value = Event(0, 1, 0.0, False), -np.inf
    for j in range(s0.shape[1]):
        a, b = s0[:, j], s1[:, j]
        pooled = np.concatenate([a, b])
        pooled = pooled[np.isfinite(pooled)]
        if not len(pooled):
            continue
        grid = _threshold_grid(pooled, candidates)
        sorted0, sorted1 = np.sort(a), np.sort(b)
        for sign in (1, -1):
            c0 = _counts_above(sorted0, grid, sign) * (n / len(a))
            c1 = _counts_above(sorted1, grid, sign) * (n / len(b))  # len(b) >= n too
            for swap, (num, den) in ((False, (c0, c1)), (True, (c1, c0))):
                value = claim.bound(np.round(num), n, np.round(den), n, level)
                i = int(np.argmax(value))
                if value[i] > best_value:
                    best, best_value = Event(j, sign, float(grid[i]), swap), float(value[i])
    return best, best_value


@dataclass
class Bound:
    """A confirmed lower bound: the event, its counts on the held-out runs and the bound."""

    value: float
    event: Event
    counts: tuple[int, int, int]  # k1 (numerator dataset), k0, runs per dataset


def confirm(event: Event, s0: np.ndarray, s1: np.ndarray, claim: Claim, level: float) -> Bound:
    """The bound of a fixed event on fresh runs (s0 from D, s1 from D'), each probability at ``level``."""
    k1, k0 = event.counts(s0, s1)
    n1, n0 = (len(s1), len(s0)) if event.swap else (len(s0), len(s1))
    return confirm_counts(event, k1, n1, k0, n0, claim, level)


def confirm_counts(event: Event, k1: int, n1: int, k0: int, n0: int, claim: Claim, level: float) -> Bound:
    """The bound of a fixed event from its counts on fresh runs: k1 of n1 on the numerator dataset, k0 of n0 on
    the other (``confirm``'s, or counts added up over rounds of runs)."""
    value = float(np.atleast_1d(claim.bound(k1, n1, k0, n0, level))[0])
    return Bound(value if np.isfinite(value) else 0.0, event, (k1, k0, min(n1, n0)))


def split_bound(s0, s1, claim: Claim, alpha: float = 0.05) -> Bound:
    """The event chosen on the first half of each sample, the bound on the held-out second half, at
    confidence 1 - alpha (alpha/2 for each probability)."""
    s0, s1 = np.asarray(s0, float), np.asarray(s1, float)
    s0, s1 = (s0[:, None], s1[:, None]) if s0.ndim == 1 else (s0, s1)
    h = min(len(s0), len(s1)) // 2
    event, _ = choose_event(s0[:h], s1[:h], claim, alpha / 2)
    return confirm(event, s0[h:2 * h], s1[h:2 * h], claim, alpha / 2)
