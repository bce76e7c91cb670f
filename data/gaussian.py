"""Gaussian data of growing condition number (lecture notes' figure: Mahalanobis error vs n)."""
from __future__ import annotations

import math

import numpy as np

from .registry_types import Data


def kappa_population(d: int, kappa: float, rng: np.random.Generator) -> np.ndarray:
    """Sigma = Q diag(lambda) Q^T: eigenvalues log-spaced from 1 (the largest, fixed) down to 1/kappa,
    lambda_i = kappa^{-i/(d-1)} (i = 0..d-1), rotated by a Haar-random orthogonal Q (so the clipping
    below is not axis-aligned). kappa = 1 gives Sigma = I."""
    if not kappa >= 1:
        raise ValueError(f"kappa must be >= 1, got {kappa!r}")
    values = np.float_power(float(kappa), -np.arange(d) / max(d - 1, 1))
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    Q = Q * np.sign(np.diag(R))  # Haar measure
    sigma = (Q * values) @ Q.T
    return (sigma + sigma.T) / 2


def gaussian_kappa(n: int, d: int, kappa: float, bound: float, rng: np.random.Generator) -> Data:
    """n rows x ~ N(0, Sigma) with cond(Sigma) = kappa (``kappa_population``: largest eigenvalue 1).

    X = the rows clipped to the public norm bound R = bound * sqrt(tr Sigma) (what norm-bounded
    mechanisms such as GaussCov and SeparateCov see; radius = R); rows_unbounded = the raw rows (what
    the stable estimator sees); truth = the population Sigma. info: R, the clipped fraction."""
    for name, v in {"n": n, "d": d}.items():
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if not bound > 0:
        raise ValueError(f"bound must be > 0, got {bound!r}")
    n, d = int(n), int(d)
    sigma = kappa_population(d, kappa, rng)
    values, vectors = np.linalg.eigh(sigma)
    raw = rng.standard_normal((n, d)) @ (vectors * np.sqrt(np.clip(values, 0, None))).T
    radius = bound * math.sqrt(np.trace(sigma))
    norms = np.linalg.norm(raw, axis=1)
    clipped = norms > radius
    X = raw.copy()
    X[clipped] *= (radius / norms[clipped])[:, None]
    info = {"radius": radius, "clipped_fraction": float(clipped.mean())}
    return Data(X, radius=radius, truth=sigma, info=info, rows_unbounded=raw)
