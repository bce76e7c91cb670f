"""Before a release: will it beat a trivial one? A forecast from public facts only (issue 55).

The facts an estimator has before its covariance step: the public count (n, or the released ñ), d, k, the
covariance's share of the budget, the rows' radius (public, or the released bound) and, where auto released it,
the rows' median norm. The forecast is the chosen mechanism's declared prediction of its Frobenius error
(``Mechanism.predict``: the exact noise norm of GaussCov / LapCov / the analytic Gaussian, or a theorem's bound
with its fitted constant), set against the largest signal these facts allow, S = ||Sigma||_F <= tr(Sigma) <= r^2
(r^2 times the squared typical norm when auto released it):

- covariance: the zero matrix errs by ||Sigma||_F <= S: a release whose noise is at least S is no better;
- PCA: a random k-subspace; the top-k subspace of Sigma + E follows Sigma's only while E is well below its
  eigengaps, so the limit is 0.3 of the signal (PCA_LIMIT);
- ridge: predicting y's mean; (Sigma_xx + alpha/n I)^-1 Sigma_xy amplifies the covariance's noise by the inverse of
  Sigma_xx's small eigenvalues: with the trace spread over d directions and decaying, the smallest relevant are
  about S / d^2, the limit.
The two limits were set on the committed head-to-head cells and scikit-learn's diabetes set, where the measured
release is or is not better than the trivial one (results/measurements/forecast.txt: the forecast beside the
measured error at every cell).

A forecast is a screen, not a promise: the prediction assumes the worst trace (tr = r^2) unless the median norm
is known, and the clamp of the released eigenvalues into [0, r^2] can only lower the error. It warns, and says how
many rows or how much budget the forecast needs to pass; the release still runs (the user chose its budget).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from dpcov.mechanisms.predictions import Facts
from dpcov.mechanisms.privacy import ApproxDP, budget_guaranteeing
from dpcov.mechanisms.registry import get_mechanism

TRIVIAL = {"covariance": "the zero matrix", "pca": "a random subspace (the coordinate axes)",
           "ridge": "predicting y's mean (R^2 = 0)"}


def threshold(task: str, d: int) -> float:
    """The noise-to-signal ratio at which a release is forecast no better than the trivial one (module doc)."""
    return {"covariance": 1.0, "pca": PCA_LIMIT, "ridge": 1.0 / d**2}[task]


PCA_LIMIT = 0.3  # PCA needs the noise well below the eigengaps, not only below the signal (module doc)


@dataclass(frozen=True)
class Forecast:
    task: str
    mechanism: str
    noise: float  # the predicted Frobenius error of the covariance release
    signal: float  # the largest ||Sigma||_F the public facts allow
    limit: float  # noise / signal at which the release is no better than the trivial one
    n_needed: int | None  # the public count at which the forecast passes (None: not within 2^40 rows)
    scale_needed: float | None  # the budget's multiple at which it passes (None: not within 2^40)

    @property
    def ratio(self) -> float:
        return self.noise / self.signal

    @property
    def useless(self) -> bool:
        return self.ratio >= self.limit

    def needs(self, n: int, budget) -> str:
        """How many rows, or how much budget, the forecast needs to pass."""
        needs = []
        if self.n_needed is not None:
            needs.append(f"about {self.n_needed} rows at this budget")
        if self.scale_needed is not None:
            needs.append(f"about {self.scale_needed:.3g} x this budget ({times(budget, self.scale_needed)}) with "
                         f"{n} rows")
        return " or ".join(needs) if needs else "far more rows or budget"

    def message(self, n: int, budget) -> str:
        return (f"this {self.task} release is forecast no better than {TRIVIAL[self.task]}: {self.mechanism}'s "
                f"predicted error {self.noise:.3g} is {self.ratio:.3g} x the largest signal these facts allow "
                f"({self.signal:.3g}; the limit is {self.limit:.3g}) at n = {n}, budget {budget} for the covariance. "
                f"It would beat it with {self.needs(n, budget)} -- or with a tighter radius (rows scaled so their "
                f"norms fill it), fewer columns, or a larger share of the budget for the covariance")


def _noise(mechanism, n: int, d: int, radius: float, budget, signal: float) -> float | None:
    facts = Facts(int(n), int(d), float(radius), trace=signal, fro_sigma=signal)
    return mechanism.predict.value(facts, budget_guaranteeing(budget, mechanism.notion), "fro")


def times(budget, factor: float):
    """``budget`` made ``factor`` times larger: rho or eps times the factor; an (eps, delta) budget keeps its delta
    (scaling delta past 1 is no budget: a forecast at eps = 0.1, delta = 1e-6 looked 2e6 x further and failed)."""
    if isinstance(budget, ApproxDP):
        return ApproxDP(budget.eps * factor, budget.delta)
    return budget.scaled(factor)


def forecast(task: str, mechanism: str, n: int, d: int, radius: float, budget, typical: float | None = None
             ) -> Forecast | None:
    """The forecast of a release of ``mechanism`` (registered name) at the covariance's ``budget``, or None where
    the mechanism declares no prediction (nothing to say: no warning) or spends nothing (the zero matrix: the
    estimators say so on their own)."""
    chosen = get_mechanism(mechanism)
    if chosen.predict is None or chosen.name == "zero":
        return None
    signal = radius**2 * (1.0 if typical is None else min(1.0, typical) ** 2)
    noise = _noise(chosen, n, d, radius, budget, signal)
    if noise is None or not math.isfinite(noise):
        return None
    limit = threshold(task, d)

    def passes_at(value: float, rows: bool) -> bool:
        predicted = _noise(chosen, value if rows else n, d, radius, budget if rows else times(budget, value), signal)
        return predicted is not None and predicted / signal < limit

    def needed(rows: bool):
        low, high = (n, n) if rows else (1.0, 1.0)
        while not passes_at(high, rows):
            if high > 2.0**40 * (n if rows else 1):
                return None
            low, high = high, high * 2
        for _ in range(40):  # geometric bisection to about 2 %
            middle = math.sqrt(low * high)
            low, high = (low, middle) if passes_at(middle, rows) else (middle, high)
            if high / low < 1.02:
                break
        return int(math.ceil(high)) if rows else high

    useless = noise / signal >= limit
    return Forecast(task, chosen.name, noise, signal, limit, needed(True) if useless else None,
                    needed(False) if useless else None)
