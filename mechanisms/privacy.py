"""Privacy budgets as values, their conversions, and the accountant every mechanism spends through.

Notions (GUIDE.md §1, Dong et al. §3.1):
- ``ZCDP(rho)``: rho-zCDP (Bun & Steinke 2016); composes by adding rho.
- ``PureDP(eps)``: eps-DP; composes by adding eps; implies eps^2/2-zCDP.
- ``ApproxDP(eps, delta)``: (eps, delta)-DP; composes (basically) by adding both.
rho-zCDP implies (rho + 2 sqrt(rho ln(1/delta)), delta)-DP for every delta in (0, 1).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import Union

_TOLERANCE = 1e-9  # relative slack for floating-point sums of sub-budgets


class BudgetExceeded(RuntimeError):
    """A mechanism tried to spend more privacy budget than it was given."""


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return value


@dataclass(frozen=True)
class ZCDP:
    """rho-zero-concentrated DP."""

    rho: float

    def __post_init__(self):
        object.__setattr__(self, "rho", _positive("rho", self.rho))

    def scaled(self, fraction: float) -> "ZCDP":
        return ZCDP(self.rho * fraction)

    def to_approx_dp(self, delta: float) -> "ApproxDP":
        """rho-zCDP => (rho + 2 sqrt(rho ln(1/delta)), delta)-DP (Bun & Steinke 2016, Prop. 1.3)."""
        delta = ApproxDP(1.0, delta).delta
        return ApproxDP(self.rho + 2 * math.sqrt(self.rho * math.log(1 / delta)), delta)

    def __str__(self):
        return f"{self.rho:g}-zCDP"


@dataclass(frozen=True)
class PureDP:
    """Pure eps-DP."""

    eps: float

    def __post_init__(self):
        object.__setattr__(self, "eps", _positive("eps", self.eps))

    def scaled(self, fraction: float) -> "PureDP":
        return PureDP(self.eps * fraction)

    def to_zcdp(self) -> ZCDP:
        """eps-DP => eps^2/2-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
        return ZCDP(self.eps**2 / 2)

    def __str__(self):
        return f"{self.eps:g}-DP"


@dataclass(frozen=True)
class ApproxDP:
    """Approximate (eps, delta)-DP with 0 < delta < 1."""

    eps: float
    delta: float

    def __post_init__(self):
        object.__setattr__(self, "eps", _positive("eps", self.eps))
        delta = _positive("delta", self.delta)
        if delta >= 1:
            raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
        object.__setattr__(self, "delta", delta)

    def scaled(self, fraction: float) -> "ApproxDP":
        return ApproxDP(self.eps * fraction, self.delta * fraction)

    def to_zcdp(self) -> ZCDP:
        """The largest rho such that rho-zCDP implies this (eps, delta)-DP guarantee.

        Solves rho + 2 sqrt(rho L) = eps with L = ln(1/delta): sqrt(rho) = sqrt(L + eps) - sqrt(L).
        """
        log_term = math.log(1 / self.delta)  # sqrt(L + eps) - sqrt(L), without cancellation:
        return ZCDP((self.eps / (math.sqrt(log_term + self.eps) + math.sqrt(log_term))) ** 2)

    def __str__(self):
        return f"({self.eps:g}, {self.delta:g})-DP"


Budget = Union[ZCDP, PureDP, ApproxDP]
NOTIONS = {"zcdp": ZCDP, "pure": PureDP, "approx": ApproxDP}


def eps_within(rho: float) -> float:
    """The largest float eps with eps^2 / 2 <= rho exactly: an eps-DP step that a rho-zCDP budget pays for (eps-DP
    implies eps^2/2-zCDP), its square root rounded down where rounding to nearest would overspend by an ulp."""
    eps = math.sqrt(2) * math.sqrt(rho) if rho > 1e300 else math.sqrt(2 * rho)  # 2 rho may overflow
    while Fraction(eps) ** 2 > 2 * Fraction(rho):
        eps = math.nextafter(eps, 0.0)
    return eps


def budget_guaranteeing(target: Budget, notion: type) -> Budget:
    """The largest budget of ``notion`` whose guarantee implies ``target``.

    A mechanism of another notion can then be run at the returned budget and still satisfy
    ``target`` (e.g. a zCDP mechanism under an (eps, delta) target, or a pure-DP one under zCDP).
    """
    if isinstance(target, notion):
        return target
    if notion is PureDP and isinstance(target, ZCDP):
        return PureDP(eps_within(target.rho))
    if notion is PureDP and isinstance(target, ApproxDP):
        return PureDP(target.eps)
    if notion is ZCDP and isinstance(target, ApproxDP):
        return target.to_zcdp()
    raise ValueError(
        f"no {notion.__name__} budget implies {target}: "
        f"{notion.__name__} mechanisms cannot meet a {type(target).__name__} guarantee"
    )


def _cost(spend: Budget, notion: type) -> tuple[float, ...]:
    """What ``spend`` costs in the accountant's notion, as a tuple that composes by addition."""
    if notion is ZCDP:
        if isinstance(spend, ZCDP):
            return (spend.rho,)
        if isinstance(spend, PureDP):
            return (spend.to_zcdp().rho,)
    elif notion is PureDP:
        if isinstance(spend, PureDP):
            return (spend.eps,)
    elif notion is ApproxDP:
        if isinstance(spend, ApproxDP):
            return (spend.eps, spend.delta)
        if isinstance(spend, PureDP):
            return (spend.eps, 0.0)
    raise TypeError(f"cannot charge a {type(spend).__name__} step to a {notion.__name__} budget")


class Accountant:
    """Tracks what a mechanism spends of its total budget and refuses to overspend.

    Every noisy sub-step calls ``spend(budget, what)``; the ledger records each charge so a test can
    assert exactly what a mechanism spent.
    """

    def __init__(self, total: Budget):
        if not isinstance(total, (ZCDP, PureDP, ApproxDP)):
            raise TypeError(f"total must be a privacy budget, got {total!r}")
        self.total = total
        self.notion = type(total)
        self._limit = _cost(total, self.notion)
        self._spent = tuple(0.0 for _ in self._limit)
        self.ledger: list[tuple[str, Budget]] = []
        self.released = "ok"  # how the release ended: "ok", or why the mechanism fell back (fall_back)

    def fall_back(self, reason: str) -> None:
        """Record that the mechanism released its data-independent fallback (e.g. the zero matrix
        after a failed PTR test) instead of its estimate; the runner writes ``reason`` to the
        ``released`` column and summary.csv counts such trials (``fallbacks``)."""
        self.released = reason

    def spend(self, budget: Budget, what: str) -> Budget:
        cost = _cost(budget, self.notion)
        new = tuple(s + c for s, c in zip(self._spent, cost))
        if any(s > lim * (1 + _TOLERANCE) for s, lim in zip(new, self._limit)):
            raise BudgetExceeded(
                f"{what}: spending {budget} would exceed the total {self.total} "
                f"(already spent {self.spent})"
            )
        self._spent = new
        self.ledger.append((what, budget))
        return budget

    @property
    def spent(self) -> Budget | None:
        """Everything spent so far, as a budget of the accountant's notion (None if nothing)."""
        if not self.ledger:
            return None
        if self.notion is ApproxDP and self._spent[1] == 0:
            return PureDP(self._spent[0])
        return self.notion(*self._spent)

    @property
    def remaining(self) -> Budget | None:
        """What is left of the total, as a budget of the accountant's notion (None if nothing is)."""
        left = tuple(lim - s for s, lim in zip(self._spent, self._limit))
        if left[0] <= _TOLERANCE * self._limit[0]:
            return None
        if self.notion is ApproxDP and left[1] <= 0:
            return PureDP(left[0])
        return self.notion(*left)

    def fully_spent(self) -> bool:
        return all(abs(s - lim) <= _TOLERANCE * lim for s, lim in zip(self._spent, self._limit))


# ---------------------------------------------------------------------------------------------------
# rho-zCDP => (eps, delta)-DP, tight (Canonne, Kamath & Steinke 2020)


def _zcdp_log_delta_at(rho: float, eps: float, t: float) -> float:
    """ln of CKS's delta at Renyi order alpha = 1 + t: (alpha-1)(alpha rho - eps) - ln(alpha-1)
    + alpha ln(1 - 1/alpha), written in t for alpha near 1. Every t > 0 gives a valid delta."""
    return t * ((1 + t) * rho - eps) + t * math.log(t) - (1 + t) * math.log1p(t)


def _zcdp_log_delta(rho: float, eps: float) -> float:
    """ln delta(eps) of rho-zCDP: the infimum over alpha > 1 of CKS's bound. The bound's log is strictly convex
    in alpha, with derivative (2 alpha - 1) rho + ln(1 - 1/alpha) - eps (increasing from -inf to +inf), so its
    minimum is where that derivative vanishes: found by bisection on ln(alpha - 1). A point off the minimum
    (or beyond floats' reach) still gives a valid, larger delta."""
    def slope(t: float) -> float:
        return (1 + 2 * t) * rho + math.log(t) - math.log1p(t) - eps
    low, high = 1.0, 1.0
    while slope(low) >= 0 and low > 1e-300:  # at rho >> eps the minimum lies below alpha = 1 + 1e-300
        low /= 2
    while slope(high) <= 0:
        high *= 2
    for _ in range(200):
        middle = math.sqrt(low * high)
        if not low < middle < high:
            break
        if slope(middle) <= 0:
            low = middle
        else:
            high = middle
    return min(_zcdp_log_delta_at(rho, eps, low), _zcdp_log_delta_at(rho, eps, high))


def zcdp_delta(rho: float, eps: float) -> float:
    """The delta at which rho-zCDP is (eps, delta)-DP by Canonne, Kamath & Steinke 2020 (Prop. 12 / Cor. 13):
    delta = inf_{alpha > 1} exp((alpha - 1)(alpha rho - eps)) / (alpha - 1) * (1 - 1/alpha)^alpha."""
    rho = _positive("rho", rho)
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not math.isfinite(eps) or eps < 0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    return min(1.0, math.exp(_zcdp_log_delta(rho, float(eps))))


def zcdp_eps(rho: float, delta: float) -> float:
    """The smallest eps for which rho-zCDP is (eps, delta)-DP by Canonne, Kamath & Steinke 2020 (Prop. 12 /
    Cor. 13; what dp-accounting's Renyi accountant computes on its grid of orders, here over every order):
    delta(eps) = inf_{alpha > 1} exp((alpha - 1)(alpha rho - eps)) / (alpha - 1) * (1 - 1/alpha)^alpha
    decreases in eps, and eps is found by bisection, rounded up (delta(eps) <= delta). It never exceeds Bun &
    Steinke's rho + 2 sqrt(rho ln(1/delta)) (``ZCDP.to_approx_dp``): CKS's factor (alpha-1)^(alpha-1) / alpha^alpha
    is below 1 at every alpha. 0 when rho is so small that delta(0) <= delta already."""
    rho = _positive("rho", rho)
    delta = ApproxDP(1.0, delta).delta
    target = math.log(delta)
    if _zcdp_log_delta(rho, 0.0) <= target:
        return 0.0
    low, high = 0.0, rho + 2 * math.sqrt(rho * math.log(1 / delta))
    while _zcdp_log_delta(rho, high) > target:  # not expected (see above); float safety
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if not low < middle < high:
            break
        if _zcdp_log_delta(rho, middle) <= target:
            high = middle
        else:
            low = middle
    return high
