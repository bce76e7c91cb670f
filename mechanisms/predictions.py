"""What a mechanism declares about its error: the generic pieces of a prediction.

A mechanism's row in the registry (or ``register_mechanism(..., predict=...)`` for a plug-in) may
carry a ``Prediction``: its expected error, or a theorem's leading-order bound, as a function of
public facts (``Facts``: n, d, the norm bound r, and what may be assumed about the spectrum) and of
the budget it runs at, already in its own notion (ZCDP, PureDP or ApproxDP, as ``release`` gives it).

Two kinds:
- ``Prediction(fro, kind="exact")``: an expected error computed exactly, e.g. E||s W||_F of the
  noise matrix before the eigenvalue clamp (``expected_frobenius_sgw``/``_slw`` below). The clamp
  projects onto a convex set holding Sigma, so it only lowers the error: measured <= predicted.
- ``Bound(terms, constant=c, fitted_on=[...])``: a theorem's leading-order bound c A + B with A and B
  from ``terms`` and the one constant c fitted to committed results (``fit_constant``; a test refits
  it from ``fitted_on`` and fails when it went stale), capped by ``clamp_cap``.

``fro_rel`` is derived from ``fro`` (divided by ||Sigma||_F); ``mahalanobis`` is declared on its own.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import numpy as np
from scipy import special

METRICS = ("fro", "fro_rel", "mahalanobis")  # the metrics a prediction may speak to
KINDS = ("exact", "bound", "declared")


@dataclass(frozen=True)
class Facts:
    """What a prediction may use: n rows, dimension d, norm bound r, and -- when known or assumed --
    the eigenvalues of Sigma = X^T X / n, its trace and Frobenius norm (each derived from the
    eigenvalues when not given), plus ``extra`` settings (e.g. ptr_fraction)."""

    n: int
    d: int
    radius: float = 1.0
    eigenvalues: np.ndarray | None = None
    trace: float | None = None
    fro_sigma: float | None = None
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_params(cls, params: dict) -> "Facts":
        values = params.get("eigenvalues")
        values = None if values is None else np.asarray(values, dtype=float)
        trace, fro = params.get("trace"), params.get("fro_sigma")
        if trace is None and values is not None:
            trace = float(np.sum(values))
        if fro is None and values is not None:
            fro = float(np.linalg.norm(values))
        known = {"n", "d", "radius", "eigenvalues", "trace", "fro_sigma", "rho", "eps", "delta"}
        return cls(int(params["n"]), int(params["d"]), float(params.get("radius", 1.0)), values,
                   None if trace is None else float(trace), None if fro is None else float(fro),
                   {k: v for k, v in params.items() if k not in known})

    @property
    def r2(self) -> float:
        return self.radius**2

    def eigenvalues_of_c(self) -> np.ndarray | None:
        """The eigenvalues of C = X^T X / r^2 = n Sigma / r^2 (Amin et al.'s scale), clipped at 0."""
        if self.eigenvalues is None:
            return None
        return np.clip(self.eigenvalues, 0, None) * self.n / self.r2


class Prediction:
    """A mechanism's predicted error: ``fro(facts, budget)`` (E||S~ - Sigma||_F, or a bound),
    optionally ``mahalanobis(facts, budget)``; either returns None when a needed fact is missing."""

    def __init__(self, fro: Callable | None = None, *, mahalanobis: Callable | None = None,
                 kind: str = "exact", citation: str = ""):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if fro is None and mahalanobis is None:
            raise ValueError("a Prediction needs fro=... or mahalanobis=...")
        self._fro, self._mahalanobis, self.kind, self.citation = fro, mahalanobis, kind, citation

    def fro(self, facts: Facts, budget) -> float | None:
        return None if self._fro is None else self._fro(facts, budget)

    def value(self, facts: Facts, budget, metric: str = "fro") -> float | None:
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        if metric == "mahalanobis":
            return None if self._mahalanobis is None else self._mahalanobis(facts, budget)
        value = self.fro(facts, budget)
        if value is None or metric == "fro":
            return value
        return value / facts.fro_sigma if facts.fro_sigma else None

    def legend(self) -> str:
        """Legend text of the overlay."""
        if self.kind == "exact":
            return f"predicted (exact{', ' + self.citation if self.citation else ''})"
        return f"predicted ({self.citation})" if self.citation else "predicted (declared)"


class Bound(Prediction):
    """A theorem's leading-order bound min(c A + B, clamp_cap) with ``terms(facts, budget) -> (A, B)``
    (None when a fact is missing) and the constant c fitted on the committed targets ``fitted_on``."""

    def __init__(self, terms: Callable, *, constant: float, fitted_on: tuple, citation: str):
        super().__init__(self._bound, kind="bound", citation=citation)
        self.terms, self.constant, self.fitted_on = terms, float(constant), tuple(fitted_on)

    def _bound(self, facts: Facts, budget) -> float | None:
        terms = self.terms(facts, budget)
        return None if terms is None else bound_value(terms, self.constant, clamp_cap(facts))

    def legend(self) -> str:
        return f"{self.citation}, c = {self.constant:.3g} (fitted)"


# --- bounds: the clamp's cap and the one fitted constant ------------------------------------------

def clamp_cap(facts: Facts) -> float | None:
    """The largest Frobenius distance from Sigma to any matrix with eigenvalues in [0, r^2] (where the
    released estimate is clamped): sqrt(sum_i max(lambda_i, r^2 - lambda_i)^2), attained by r^2 times
    the projector onto Sigma's eigenvectors with lambda_i < r^2/2. No bound needs to exceed it."""
    if facts.eigenvalues is None:
        return None
    values = np.concatenate([facts.eigenvalues, np.zeros(max(facts.d - len(facts.eigenvalues), 0))])
    return float(np.sqrt(np.sum(np.maximum(values, facts.r2 - values) ** 2)))


def bound_value(terms: tuple[float, float], c: float, cap: float | None = None) -> float:
    a, b = terms
    return min(c * a + b, cap) if cap is not None else c * a + b


def fit_constant(measured, terms, caps=None) -> float:
    """The c minimising sum (log measured - log min(c A + B, cap))^2 over the points (A, B, cap)."""
    measured = np.asarray(measured, dtype=float)
    a, b = (np.asarray(t, dtype=float) for t in zip(*terms))
    cap = np.full(len(a), np.inf) if caps is None else np.array([np.inf if v is None else v for v in caps])

    def loss(logc):
        return np.sum((np.log(measured) - np.log(np.minimum(math.exp(logc) * a + b, cap)))**2)

    from scipy.optimize import minimize_scalar  # scipy.optimize and .integrate load when used (~1 s per process)

    return float(math.exp(minimize_scalar(loss, bounds=(-15, 15), method="bounded").x))


# --- the exact expected Frobenius norm of the symmetric noise matrices ----------------------------

def _expected_sqrt(log_laplace, d: int) -> float:
    """E sqrt(Q) for Q = sum of the squared entries of a d x d symmetric noise matrix, from the
    Laplace transform L(t) = E exp(-t Q): sqrt(q) = 1/(2 sqrt(pi)) int_0^inf (1 - e^(-tq)) t^(-3/2) dt,
    so E sqrt(Q) = 1/(2 sqrt(pi)) int_0^inf (1 - L(t)) t^(-3/2) dt (Fubini; t = e^u below)."""
    def integrand(u):
        return -math.expm1(log_laplace(math.exp(u))) * math.exp(-u / 2)

    centre = -2 * math.log(d)  # the transition: t ~ 1 / E Q ~ 1 / d^2
    pieces = [(centre - 40, centre - 5), (centre - 5, centre + 5), (centre + 5, centre + 60)]
    from scipy import integrate

    total = sum(integrate.quad(integrand, a, b, limit=200, epsabs=0, epsrel=1e-10)[0] for a, b in pieces)
    return total / (2 * math.sqrt(math.pi))


def _check_d(d) -> int:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    return int(d)


@lru_cache(maxsize=None)
def expected_frobenius_sgw(d: int) -> float:
    """E||W||_F for W ~ SGW(d) (iid N(0,1) on and above the diagonal, mirrored): ||W||_F^2 =
    chi2_d + 2 chi2_{d(d-1)/2}, so E exp(-tQ) = (1+2t)^(-d/2) (1+4t)^(-d(d-1)/4). Exact (quadrature);
    sqrt(d^2) = d is its leading order (Dong Lemma 7's omega(d, beta) is a tail bound)."""
    d = _check_d(d)
    off = d * (d - 1) / 2
    return _expected_sqrt(lambda t: -d / 2 * math.log1p(2 * t) - off / 2 * math.log1p(4 * t), d)


def _log_laplace_sq(s: float) -> float:
    """log E exp(-s L^2) for L ~ Lap(1): int_0^inf exp(-s x^2 - x) dx = sqrt(pi)/(2 sqrt s) erfcx(1/(2 sqrt s));
    for small s the moment series sum_k (-s)^k (2k)!/k! (E L^2k = (2k)!), whose truncation error
    ~ 7e5 s^6 is far below erfcx's cancellation there."""
    if s < 1e-4:
        return math.log1p(sum((-s)**k * math.factorial(2 * k) / math.factorial(k) for k in range(1, 6)))
    root = math.sqrt(s)
    return math.log(math.sqrt(math.pi) / (2 * root) * special.erfcx(1 / (2 * root)))


@lru_cache(maxsize=None)
def expected_frobenius_slw(d: int) -> float:
    """E||W||_F for W ~ SLW(d) (iid Lap(1) on and above the diagonal, mirrored); exact (quadrature);
    sqrt(E||W||_F^2) = sqrt(2) d is its leading order (Dong Lemma 18)."""
    d = _check_d(d)
    off = d * (d - 1) / 2
    return _expected_sqrt(lambda t: d * _log_laplace_sq(t) + off * _log_laplace_sq(2 * t), d)


def gaussian_noise(scale: Callable[[Facts, object], float]) -> Prediction:
    """The exact prediction of S~ = Sigma + s W, W ~ SGW(d), with entry scale ``scale(facts, budget)``."""
    return Prediction(lambda f, b: scale(f, b) * expected_frobenius_sgw(f.d), kind="exact", citation="before clamp")


def laplace_noise(scale: Callable[[Facts, object], float]) -> Prediction:
    """The exact prediction of S~ = Sigma + s W, W ~ SLW(d), with entry scale ``scale(facts, budget)``."""
    return Prediction(lambda f, b: scale(f, b) * expected_frobenius_slw(f.d), kind="exact", citation="before clamp")
