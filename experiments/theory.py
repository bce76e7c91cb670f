"""Closed-form predicted errors of the mechanisms, for the theory overlays on the figures and for
choosing a mechanism before running anything.

    predicted_error(mechanism, params, metric="fro") -> float | None

``mechanism`` is a registry name (mechanisms/registry.py). ``params`` (plain numbers):

    n, d            rows and dimension (always needed)
    rho | eps [+ delta]
                    the privacy budget the line must satisfy, as in a grid point; it is converted
                    to the mechanism's own notion exactly as ``release`` does (budget_guaranteeing)
    radius          row-norm bound r (default 1)
    trace           tr(Sigma) of Sigma = X^T X / n (SeparateCov)
    eigenvalues     the eigenvalues of Sigma (AD/EMCov, the zero matrix, relative errors);
                    trace and fro_sigma default to their sum / root sum of squares
    fro_sigma       ||Sigma||_F (the zero matrix, the relative metric fro_rel)

``metric``: "fro" = ||S~ - Sigma||_F, "fro_rel" = ||S~ - Sigma||_F / ||Sigma||_F (= Amin's
||C^ - C||_F / ||C||_F), "mahalanobis" = ||Sigma^-1/2 S~ Sigma^-1/2 - I||_F.
The result is None when no closed form is known for that mechanism and metric, or a quantity it
needs is not in ``params``.

Two kinds of prediction (``KIND[mechanism]`` says which):
- "exact": the expected error of the noise before the eigenvalue clamp (GaussCov, LapCov, Amin's L
  and G-x: E||s W||_F for the symmetric noise matrix W, computed exactly by one integral; the zero
  matrix: ||Sigma||_F; Gaussian sampling: sqrt(d(d+1)/m), the root mean square of the Wishart error).
  The released matrix is clamped into {0 <= eigenvalues <= r^2}, a convex set holding Sigma, so the
  clamp can only lower the error: measured <= predicted up to sampling noise.
- "bound": a theorem's leading-order bound with ONE constant fitted to the committed results
  (``FITTED``): Dong et al. Theorem 1 for SeparateCov, Amin et al. Theorem 2 / Corollary 1 for AD.
"""
from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import integrate, special

METRICS = ("fro", "fro_rel", "mahalanobis")

# One constant per bound, fitted once (``fit_constant``) on the committed summaries named here by
# least squares in log space; tests/test_theory.py refits and fails if the number went stale.
FITTED = {
    # Dong Thm 1: ||S_Sep - Sigma||_F <= c sqrt(tr) r d^1/4 / (rho^1/4 sqrt n) + sqrt(2d) r^2 / (sqrt(rho) n)
    # (the theorem's constant is 21.25 sqrt 2 with upsilon(d) -> 2 sqrt d; the second term is the
    # eigenvalue noise, E||Y||_2 ~ sqrt d, kept as is). Fit: SeparateCov in Dong Fig. 2 and 3(a-d).
    "separate": 0.327,
    # Amin Thm 2 with the Corollary 1 split (true eigenvalues in place of the private ones): on C,
    # ||C^ - C||_F <= c sqrt(d / eps) sum_i sqrt(lambda_i(C) + 1/eps) + 4 sqrt(2d) / eps
    # (the second term: the Laplace noise on the eigenvalues at eps/2). Fit: AD in Amin Fig. 1(a).
    "ad": 0.953,
}
FIT_SOURCES = {"separate": ["dong2022/fig2", "dong2022/fig3a", "dong2022/fig3b", "dong2022/fig3c",
                            "dong2022/fig3d"],
               "ad": ["amin2019/fig1a"]}
KIND = {"gauss": "exact", "lap": "exact", "laplace": "exact", "gauss_approx": "exact", "zero": "exact",
        "stable_gsampling": "exact", "separate": "bound", "ad": "bound", "emcov_pure": "bound"}
# Mechanisms whose bound is Amin's (EMCov under pure DP is Amin's Algorithm 1 with the AD split).
BOUND_OF = {"separate": "separate", "ad": "ad", "emcov_pure": "ad"}


# --- the exact expected Frobenius norm of the symmetric noise matrices ----------------------------

def _expected_sqrt(log_laplace, d: int) -> float:
    """E sqrt(Q) for Q = sum of the squared entries of a d x d symmetric noise matrix, from the
    Laplace transform L(t) = E exp(-t Q): sqrt(q) = 1/(2 sqrt(pi)) int_0^inf (1 - e^(-tq)) t^(-3/2) dt,
    so E sqrt(Q) = 1/(2 sqrt(pi)) int_0^inf (1 - L(t)) t^(-3/2) dt (Fubini; t = e^u below)."""
    def integrand(u):
        return -math.expm1(log_laplace(math.exp(u))) * math.exp(-u / 2)

    centre = -2 * math.log(d)  # the transition: t ~ 1 / E Q ~ 1 / d^2
    pieces = [(centre - 40, centre - 5), (centre - 5, centre + 5), (centre + 5, centre + 60)]
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


# --- parameters -------------------------------------------------------------------------------------

def line_budget(mechanism: str, params: dict):
    """The budget ``mechanism`` runs at for a grid point's rho | eps [+ delta] (as release does)."""
    from mechanisms.privacy import budget_guaranteeing
    from mechanisms.registry import get_mechanism
    from .config import budget_from_params

    point = {k: params[k] for k in ("rho", "eps", "delta", "n") if k in params}
    return budget_guaranteeing(budget_from_params(point), get_mechanism(mechanism).notion)


def _fro_sigma(params: dict) -> float | None:
    if params.get("fro_sigma") is not None:
        return float(params["fro_sigma"])
    if params.get("eigenvalues") is not None:
        return float(np.linalg.norm(np.asarray(params["eigenvalues"], dtype=float)))
    return None


def _trace(params: dict) -> float | None:
    if params.get("trace") is not None:
        return float(params["trace"])
    if params.get("eigenvalues") is not None:
        return float(np.sum(params["eigenvalues"]))
    return None


def zipf_trace(n: int, N: int, s: float) -> float:
    """tr(Sigma) of Dong's synthetic data (data/synthetic.py): the mean squared row norm of the Zipf bins."""
    from data.synthetic import zipf_norms

    return float(np.mean(np.square(zipf_norms(int(n), int(N), s))))


def noise_scale(mechanism: str, params: dict) -> float | None:
    """Entry scale s of the symmetric noise s W the mechanism adds to Sigma (None: not a noise-matrix
    mechanism). GaussCov: sensitivity sqrt(2) r^2 / n at rho -> r^2 / (sqrt(rho) n); LapCov:
    sqrt(2) d r^2 / (eps n); Amin's L: 2 d r^2 / (eps n); G-x: the analytic Gaussian sd at (eps, delta)."""
    n, d, r2 = params["n"], params["d"], params.get("radius", 1.0) ** 2
    budget = line_budget(mechanism, params)
    if mechanism == "gauss":
        return r2 / (math.sqrt(budget.rho) * n)
    if mechanism == "lap":
        return math.sqrt(2) * d * r2 / (budget.eps * n)
    if mechanism == "laplace":
        return 2 * d * r2 / (budget.eps * n)
    if mechanism == "gauss_approx":
        from mechanisms.thresholding import analytic_gaussian_sigma

        return analytic_gaussian_sigma(math.sqrt(2) * r2 / n, budget)
    return None


# --- the leading-order bounds -------------------------------------------------------------------------

def bound_terms(mechanism: str, params: dict) -> tuple[float, float] | None:
    """(A, B) with the bound = c A + B on ||S~ - Sigma||_F (c = FITTED[...]); None if not known."""
    kind = BOUND_OF.get(mechanism)
    n, d, r = params["n"], params["d"], params.get("radius", 1.0)
    if kind == "separate":
        trace = _trace(params)
        if trace is None:
            return None
        rho = line_budget(mechanism, params).rho
        return (math.sqrt(max(trace, 0.0)) * r * d**0.25 / (rho**0.25 * math.sqrt(n)),
                math.sqrt(2 * d) * r**2 / (math.sqrt(rho) * n))
    if kind == "ad":
        if params.get("eigenvalues") is None:
            return None
        eps = line_budget(mechanism, params).eps
        lam_c = np.clip(np.asarray(params["eigenvalues"], dtype=float), 0, None) * n / r**2  # of C
        a = math.sqrt(d / eps) * float(np.sum(np.sqrt(lam_c + 1 / eps)))
        b = 4 * math.sqrt(2 * d) / eps
        return a * r**2 / n, b * r**2 / n  # back to Sigma = C r^2 / n
    return None


def clamp_cap(params: dict) -> float | None:
    """The largest Frobenius distance from Sigma to any matrix with eigenvalues in [0, r^2] (where the
    released estimate is clamped): sqrt(sum_i max(lambda_i, r^2 - lambda_i)^2), attained by r^2 times
    the projector onto Sigma's eigenvectors with lambda_i < r^2/2. No theorem bound needs to exceed it."""
    if params.get("eigenvalues") is None:
        return None
    r2 = params.get("radius", 1.0) ** 2
    values = np.asarray(params["eigenvalues"], dtype=float)
    values = np.concatenate([values, np.zeros(max(int(params["d"]) - len(values), 0))])
    return float(np.sqrt(np.sum(np.maximum(values, r2 - values) ** 2)))


def bound_value(mechanism: str, params: dict, c: float, terms=None) -> float:
    """min(c A + B, clamp_cap): the leading-order bound of the released (clamped) matrix."""
    a, b = terms or bound_terms(mechanism, params)
    cap = clamp_cap(params)
    return min(c * a + b, cap) if cap is not None else c * a + b


def fit_constant(measured, terms, caps=None) -> float:
    """The c minimising sum (log measured - log min(c A + B, cap))^2 over the points (A, B, cap)."""
    from scipy.optimize import minimize_scalar

    measured = np.asarray(measured, dtype=float)
    a, b = (np.asarray(t, dtype=float) for t in zip(*terms))
    cap = np.full(len(a), np.inf) if caps is None else np.array([np.inf if v is None else v for v in caps])

    def loss(logc):
        return np.sum((np.log(measured) - np.log(np.minimum(math.exp(logc) * a + b, cap)))**2)

    return float(math.exp(minimize_scalar(loss, bounds=(-15, 15), method="bounded").x))


# --- the interface ---------------------------------------------------------------------------------------

def predicted_error(mechanism: str, params: dict, metric: str = "fro") -> float | None:
    """Predicted mean error of ``mechanism`` at ``params`` in ``metric`` (module docstring), or None."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    for key in ("n", "d"):
        if key not in params:
            raise ValueError(f"params needs {key!r}, got {sorted(params)}")
    fro_sigma = _fro_sigma(params)
    if metric == "mahalanobis":
        return _mahalanobis(mechanism, params)
    if mechanism == "zero":
        value = fro_sigma
    elif noise_scale(mechanism, params) is not None:
        w = expected_frobenius_slw if mechanism in ("lap", "laplace") else expected_frobenius_sgw
        value = noise_scale(mechanism, params) * w(int(params["d"]))
    elif mechanism in BOUND_OF:
        terms = bound_terms(mechanism, params)
        value = None if terms is None else bound_value(mechanism, params, FITTED[BOUND_OF[mechanism]], terms)
    else:
        value = None
    if value is None or metric == "fro":
        return value
    return None if not fro_sigma else value / fro_sigma


def _mahalanobis(mechanism: str, params: dict) -> float | None:
    """Gaussian sampling (Alabi et al. Alg. 1) with m samples from Sigma_w ~ Sigma: the whitened error
    S - I, S ~ Wishart(I, m)/m, has E||S - I||_F^2 = (d^2 + d)/m; the zero matrix: ||-I||_F = sqrt d."""
    d = int(params["d"])
    if mechanism == "zero":
        return math.sqrt(d)
    if mechanism != "stable_gsampling":
        return None
    m = gaussian_sampling_m(params)
    return None if m is None else math.sqrt(d * (d + 1) / m)


def gaussian_sampling_m(params: dict) -> int | None:
    """m of the stable covariance + Gaussian sampling release at (n, d, eps, delta); None when n is too
    small for the claim (the mechanism then fails or falls back)."""
    from mechanisms.privacy import ApproxDP
    from mechanisms.stable import InsufficientData, stable_parameters

    try:
        budget = ApproxDP(params["eps"], params["delta"])
        return stable_parameters(int(params["n"]), int(params["d"]), budget,
                                 ptr_fraction=params.get("ptr_fraction", 0.1)).m
    except (InsufficientData, ValueError, KeyError):
        return None


def theory_label(mechanism: str) -> str:
    """Legend text of a mechanism's overlay."""
    if mechanism in BOUND_OF:
        which = "Dong Thm 1" if BOUND_OF[mechanism] == "separate" else "Amin Thm 2"
        return f"{which}, c = {FITTED[BOUND_OF[mechanism]]:.3g} (fitted)"
    return "predicted (exact, before clamp)"


# --- from the tidy results: a summary row (+ the data's spectrum) -> params ---------------------------

SPECTRUM_FILE = "spectrum.csv"  # results/<target>/spectrum.csv: the data's eigenvalues per data point
SPECTRUM_COLUMNS = ("rows", "dim", "eigenvalues")


def spectra_frame(experiment) -> pd.DataFrame:
    """One row per data point of ``experiment`` (its data parameters): the rows and dimension of the
    instance the runner built and the eigenvalues of its Sigma (space-separated), so overlays need
    no data at plotting time. Resampled datasets: trial 0's sample."""
    from .runner import build_instance, data_params, resampled

    rows, seen = [], set()
    for point in experiment.grid():
        params = data_params(experiment.dataset, point)
        key = tuple(sorted(params.items()))
        if key in seen:
            continue
        seen.add(key)
        problem = build_instance(experiment, point, 0 if resampled(experiment, point) else None).problem
        values = np.clip(np.linalg.eigvalsh(problem.sigma)[::-1], 0, None)
        rows.append({**params, "rows": problem.n, "dim": problem.d,
                     "eigenvalues": " ".join(f"{v:.6g}" for v in values)})
    return pd.DataFrame(rows)


def read_spectra(directory) -> pd.DataFrame | None:
    path = Path(directory) / SPECTRUM_FILE
    return pd.read_csv(path) if path.exists() else None


def _matching_spectrum(row: dict, spectra: pd.DataFrame | None) -> dict | None:
    if spectra is None or spectra.empty:
        return None
    keys = [c for c in spectra.columns if c not in SPECTRUM_COLUMNS]
    if not all(k in row for k in keys):
        return None
    hit = spectra[np.logical_and.reduce([spectra[k].astype(str) == str(row[k]) for k in keys])] \
        if keys else spectra
    return hit.iloc[0].to_dict() if len(hit) else None


def row_params(row: dict, spectra: pd.DataFrame | None = None, budget: dict | None = None) -> dict:
    """predicted_error's params for a summary.csv row: n, d and the budget from the row (``budget``:
    a variant's overrides, e.g. {"delta": 1e-16}), the eigenvalues and the true n, d from the
    matching spectrum row, the trace of Dong's synthetic data in closed form."""
    params = {k: row[k] for k in ("n", "d", "rho", "eps", "delta", "N", "s") if k in row and pd.notna(row[k])}
    params.update(budget or {})
    spectrum = _matching_spectrum(row, spectra)
    if spectrum is not None:
        params["n"], params["d"] = int(spectrum["rows"]), int(spectrum["dim"])
        params["eigenvalues"] = np.array(str(spectrum["eigenvalues"]).split(), dtype=float)
    elif row.get("dataset") == "synthetic_zipf" and {"n", "N", "s"} <= set(params):
        params["trace"] = zipf_trace(params["n"], params["N"], params["s"])
    for key in ("n", "d"):
        if key in params:
            params[key] = int(params[key])
    if isinstance(params.get("delta"), str) and params["delta"] != "1/n":
        params["delta"] = float(params["delta"])
    return params


# --- Dong et al. Fig. 1: worst-case bounds (tr = 1) as functions of d at fixed n --------------------------

def worst_case_bounds(d, n: float) -> dict[str, np.ndarray]:
    """The curves of Dong et al. Fig. 1 (error of Sigma = X^T X / n, rows in the unit ball, O~ with the
    privacy parameter and polylog factors dropped), capped at 1 (the zero matrix's error):
    upper bounds GaussCov d/n, EMCov (Amin) d^3/4/sqrt n + sqrt d/n, SeparateCov d^1/4/sqrt n + sqrt d/n;
    lower bounds sqrt d/n (mean estimation) and d/n for d < sqrt n (Kasiviswanathan et al.)."""
    d = np.asarray(d, dtype=float)
    cap = lambda v: np.minimum(v, 1.0)  # noqa: E731
    return {
        "GaussCov upper: d/n": cap(d / n),
        "EMCov upper: d^{3/4}/√n + √d/n": cap(d**0.75 / math.sqrt(n) + np.sqrt(d) / n),
        "SeparateCov upper: d^{1/4}/√n + √d/n": cap(d**0.25 / math.sqrt(n) + np.sqrt(d) / n),
        "lower bound: max(√d/n, d/n if d < √n)": cap(np.where(d < math.sqrt(n), d / n, np.sqrt(d) / n)),
    }
