"""Sparse-covariance Gaussian data of Wang & Xu (§5)."""
from __future__ import annotations

import math

import numpy as np

from .registry_types import Data


def sparse_population(p: int, sr: float, rng: np.random.Generator, *, lam: float = 50.0,
                      c: float = 200.0, value: float = 2.0) -> np.ndarray:
    """U = (U~ + lam I) / c with U~ symmetric, about sr p^2 non-zero entries.

    Our choice (the paper does not give one): the non-zeros are off-diagonal, placed in
    round(sr p^2 / 2) distinct random symmetric pairs, with values Uniform(-value, value).
    """
    if not 0 <= sr <= 1:
        raise ValueError(f"sparsity ratio sr must lie in [0, 1], got {sr!r}")
    iu = np.triu_indices(p, 1)
    pairs = min(len(iu[0]), int(round(sr * p * p / 2)))
    chosen = rng.choice(len(iu[0]), size=pairs, replace=False)
    U = np.zeros((p, p))
    U[iu[0][chosen], iu[1][chosen]] = rng.uniform(-value, value, pairs)
    U = U + U.T + lam * np.eye(p)
    smallest = np.linalg.eigvalsh(U)[0]
    if smallest <= 0:
        raise ValueError(f"U~ + {lam} I is not positive definite (smallest eigenvalue {smallest:.3g}) "
                         f"for p={p}, sr={sr}: lower the value range or raise lam")
    return U / c


STATISTICS = ("rows", "wishart")


def sparse_gaussian(n: int, p: int, sr: float, row_bound: float, rng: np.random.Generator,
                    statistic: str = "rows") -> Data:
    """Wang & Xu's data: U from sparse_population, and what the mechanisms see of n rows x ~ N(0, U)
    with the public norm bound R = row_bound * sqrt(tr U) (the paper's rows exceed the unit ball its
    analysis assumes; the privacy noise is calibrated to R). Errors are measured against U.

    statistic="rows" draws the n rows and clips those beyond R (O(n p^2)). statistic="wishart"
    simulates the statistic instead: Sigma = X^T X / n of unclipped Gaussian rows is exactly
    Wishart(n, U) / n, drawn in O(p^3) for any n (Bartlett, scipy.stats.wishart; needs n >= p). It
    equals the row path in law whenever no row is clipped; ``row_clip_bound`` (recorded for both)
    is a Chernoff bound on P(||x|| > R), so n * row_clip_bound bounds the expected clipped rows."""
    for name, v in {"n": n, "p": p}.items():
        if int(v) != v or v < 2:
            raise ValueError(f"{name} must be an integer >= 2, got {v!r}")
    if not row_bound > 0:
        raise ValueError(f"row_bound must be > 0, got {row_bound!r}")
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    n, p = int(n), int(p)
    if statistic == "wishart" and n < p:
        raise ValueError(f"statistic=wishart needs n >= p (a non-singular Wishart), got n={n}, p={p}")
    U = sparse_population(p, sr, rng)
    radius = row_bound * math.sqrt(np.trace(U))
    info = {"radius": radius, "statistic": statistic,
            "row_clip_bound": norm_tail_bound(np.linalg.eigvalsh(U), radius**2)}
    if statistic == "wishart":
        from scipy import stats  # here, not at import: scipy.stats takes ~0.5 s to import

        sigma = stats.wishart(df=n, scale=U).rvs(random_state=rng) / n
        return Data(None, radius=radius, truth=U, info=info, sigma=sigma, n=n)
    X = rng.standard_normal((n, p)) @ np.linalg.cholesky(U).T
    norms = np.linalg.norm(X, axis=1)
    clipped = norms > radius
    X[clipped] *= (radius / norms[clipped])[:, None]
    info.update({"clipped_fraction": float(clipped.mean()), "norm_median": float(np.median(norms)),
                 "norm_max": float(norms.max())})
    return Data(X, radius=radius, truth=U, info=info)


def norm_tail_bound(eigenvalues: np.ndarray, t: float) -> float:
    """Chernoff bound on P(||x||^2 > t) for x ~ N(0, U) with these eigenvalues of U:
    min over 0 < s < 1/(2 max lambda) of exp(-s t) prod (1 - 2 s lambda_i)^(-1/2)."""
    lam = np.asarray(eigenvalues, dtype=float)
    if t <= lam.sum():
        return 1.0
    top = 1 / (2 * lam.max())

    def log_bound(s):
        return -s * t - 0.5 * np.log1p(-2 * s * lam).sum()

    from scipy import optimize  # here, not at import (as scipy.stats above)

    best = optimize.minimize_scalar(log_bound, bounds=(0.0, top * (1 - 1e-12)), method="bounded")
    return float(min(1.0, math.exp(best.fun)))
