"""Exact Bingham sampling on the sphere: density proportional to exp(-x^T A x), x in S^(q-1).

Rejection sampler of Kent, Ganeiber & Mardia (2018) with the angular central Gaussian (ACG)
envelope, as used by Amin et al. (2019, Algorithm 2). Everything runs in A's eigenbasis, so a
proposal costs O(q), and the acceptance test is done in log space (no overflow for large q).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

DEFAULT_MAX_PROPOSALS = 10_000_000


@dataclass(frozen=True)
class BinghamStats:
    """Acceptance statistics of one sampling call."""

    proposals: int
    accepted: int

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.proposals if self.proposals else float("nan")


def acg_parameter(lam: np.ndarray) -> float:
    """b in [1, q] with sum_i 1 / (b + 2 lam_i) = 1, for lam >= 0 with min(lam) = 0 (Kent et al.)."""
    q = len(lam)
    if q == 1 or not np.any(lam > 0):
        return float(q)
    return _acg_newton(lam)


@njit(cache=True)
def _acg_newton(lam):
    """g(b) = sum 1/(b + 2 lam) - 1 is convex and decreasing with g(1) >= 0 >= g(q): Newton from
    b = 1 increases monotonically to the root without overshooting."""
    q = len(lam)
    b = 1.0
    for _ in range(200):
        g = -1.0
        dg = 0.0
        for x in lam:
            w = 1.0 / (b + 2.0 * x)
            g += w
            dg += w * w
        step = g / dg
        b = min(b + step, float(q))
        if step <= 1e-15 * b:
            break
    return b


@njit(cache=True, error_model="numpy")
def log_acceptance(t, q, b):
    """log of  exp(-t) (x^T Omega x)^(q/2) e^((q-b)/2) (b/q)^(q/2)  with t = x^T A x and
    x^T Omega x = 1 + 2t/b (Omega = I + 2A/b). It is <= 0, with equality at t = (q - b)/2."""
    return -t + 0.5 * q * np.log1p(2.0 * t / b) + 0.5 * (q - b) + 0.5 * q * math.log(b / q)


@njit(cache=True, error_model="numpy")
def _screen(z, scale, lam, log_u, q, b):
    """The ACG proposals z * scale (rows) normalised onto the sphere in place, and which of them
    pass the acceptance test log u < log_acceptance (one pass, no temporaries)."""
    accept = np.empty(len(z), dtype=np.bool_)
    for i in range(len(z)):
        norm2 = 0.0
        for j in range(q):
            z[i, j] *= scale[j]
            norm2 += z[i, j] * z[i, j]
        norm = math.sqrt(norm2)
        t = 0.0
        for j in range(q):
            z[i, j] /= norm
            t += z[i, j] * z[i, j] * lam[j]
        accept[i] = log_u[i] < log_acceptance(t, q, b)
    return accept


def sample_bingham_eigen(lam, rng: np.random.Generator, size: int, *,
                         max_proposals: int = DEFAULT_MAX_PROPOSALS) -> tuple[np.ndarray, BinghamStats]:
    """``size`` draws (size x q) in the eigenbasis of A, given A's eigenvalues ``lam`` (any shift)."""
    lam = np.asarray(lam, dtype=float)
    if lam.ndim != 1 or len(lam) == 0 or not np.all(np.isfinite(lam)):
        raise ValueError("eigenvalues must be a non-empty finite 1-D array")
    lam = lam - lam.min()  # the density is unchanged by a shift of the spectrum
    q = len(lam)
    b = acg_parameter(lam)
    scale = 1.0 / np.sqrt(1.0 + 2.0 * lam / b)  # ACG envelope: z ~ N(0, Omega^-1)
    out = np.empty((size, q))
    filled = proposals = accepted = 0
    rate = 0.5
    while filled < size:
        if proposals >= max_proposals:
            raise RuntimeError(
                f"Bingham sampler: {proposals} proposals gave only {filled} of {size} draws "
                f"(acceptance {accepted / proposals:.2e}); raise max_proposals or check A"
            )
        batch = int(min(max_proposals - proposals, max(8, 1.5 * (size - filled) / rate)))
        x = rng.standard_normal((batch, q))
        accept = _screen(x, scale, lam, np.log(rng.uniform(size=batch)), q, b)
        proposals += batch
        accepted += int(accept.sum())
        take = x[accept][: size - filled]  # surplus acceptances are dropped (iid, so still exact)
        out[filled:filled + len(take)] = take
        filled += len(take)
        rate = max(accepted / proposals, 1e-3)
    return out, BinghamStats(proposals, accepted)


def sample_bingham(A, rng: np.random.Generator, size: int | None = None, *,
                   max_proposals: int = DEFAULT_MAX_PROPOSALS, return_stats: bool = False):
    """Unit vectors with density proportional to exp(-x^T A x) on the sphere, A symmetric q x q.

    size=None gives one vector of shape (q,); size=k gives (k, q). With return_stats=True also
    returns the BinghamStats (proposals, accepted).
    """
    A = np.asarray(A, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ValueError(f"A must be a non-empty square matrix, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("A contains NaN or inf")
    if not np.allclose(A, A.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(A).max())):
        raise ValueError("A must be symmetric")
    lam, vectors = np.linalg.eigh((A + A.T) / 2)
    draws, stats = sample_bingham_eigen(lam, rng, 1 if size is None else int(size),
                                        max_proposals=max_proposals)
    samples = draws @ vectors.T
    samples = samples[0] if size is None else samples
    return (samples, stats) if return_stats else samples
