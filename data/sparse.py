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


def sparse_gaussian(n: int, p: int, sr: float, row_bound: float, rng: np.random.Generator) -> Data:
    """n rows x ~ N(0, U) of Wang & Xu's generator, clipped to the public norm bound
    R = row_bound * sqrt(tr U) (the paper's rows exceed the unit ball its analysis assumes; the
    privacy noise is calibrated to R). Errors are measured against the population U."""
    for name, v in {"n": n, "p": p}.items():
        if int(v) != v or v < 2:
            raise ValueError(f"{name} must be an integer >= 2, got {v!r}")
    if not row_bound > 0:
        raise ValueError(f"row_bound must be > 0, got {row_bound!r}")
    n, p = int(n), int(p)
    U = sparse_population(p, sr, rng)
    X = rng.standard_normal((n, p)) @ np.linalg.cholesky(U).T
    radius = row_bound * math.sqrt(np.trace(U))
    norms = np.linalg.norm(X, axis=1)
    clipped = norms > radius
    X[clipped] *= (radius / norms[clipped])[:, None]
    info = {"radius": radius, "clipped_fraction": float(clipped.mean()),
            "norm_median": float(np.median(norms)), "norm_max": float(norms.max())}
    return Data(X, radius=radius, truth=U, info=info)
