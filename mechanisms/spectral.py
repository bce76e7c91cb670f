"""Symmetric matrices kept as eigen-pairs, and eigenvalue clamping (free post-processing)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import eigh as scipy_eigh


@dataclass(frozen=True)
class Spectral:
    """A symmetric matrix V diag(values) V^T, kept factored so post-processing needs no eigh."""

    values: np.ndarray
    vectors: np.ndarray  # columns are orthonormal eigenvectors

    @classmethod
    def of(cls, matrix: np.ndarray) -> "Spectral":
        values, vectors = np.linalg.eigh(matrix)
        return cls(values, vectors)

    @classmethod
    def top(cls, matrix: np.ndarray, k: int) -> "Spectral":
        """The k largest eigen-pairs only (LAPACK's syevr on an index range: the tridiagonal reduction, then k
        vectors instead of d), for a PCA of a released matrix (post-processing; issue 61)."""
        d = len(matrix)
        if not 1 <= k < d:
            return cls.of(matrix)
        values, vectors = scipy_eigh(matrix, subset_by_index=[d - k, d - 1], driver="evr", check_finite=False)
        return cls(values, vectors)

    def matrix(self) -> np.ndarray:
        """V diag(values) V^T, from the pairs whose value is not zero (a clamp's zeros add nothing: at wide d about
        half the noisy spectrum, a product of d^2 k flops instead of d^3; issue 61)."""
        kept = self.values != 0
        vectors, values = (self.vectors, self.values) if kept.all() else (self.vectors[:, kept], self.values[kept])
        out = (vectors * values) @ vectors.T
        return symmetrized(out)


def mirror_upper(matrix: np.ndarray, block: int = 512) -> np.ndarray:
    """The symmetric matrix of ``matrix``'s upper triangle (diagonal included), in place, a block of rows at a time
    (no d x d temporary): what syrk and a released upper triangle leave."""
    for start in range(0, len(matrix), block):
        stop = start + block
        matrix[start:stop, :start] = matrix[:start, start:stop].T
        square = matrix[start:stop, start:stop]
        square[...] = np.triu(square) + np.triu(square, 1).T
    return matrix


def symmetrized(matrix: np.ndarray, block: int = 512) -> np.ndarray:
    """(M + M^T) / 2 in place, a block pair at a time (the same bits: each pair of entries gets (a + b) / 2, and
    addition commutes; no d x d temporary)."""
    d = len(matrix)
    for start in range(0, d, block):
        stop = min(start + block, d)
        for other in range(start, d, block):
            end = min(other + block, d)
            upper, lower = matrix[start:stop, other:end], matrix[other:end, start:stop]
            average = (upper + lower.T) / 2
            upper[...] = average
            lower[...] = average.T
    return matrix


def upper_vector(matrix: np.ndarray) -> np.ndarray:
    """The upper triangle (diagonal included) row by row, the order of np.triu_indices: slices, no index arrays."""
    d = len(matrix)
    return np.concatenate([matrix[i, i:] for i in range(d)]) if d else np.zeros(0)


def from_upper(values: np.ndarray, d: int) -> np.ndarray:
    """The symmetric d x d matrix whose upper triangle, row by row, is ``values`` (``upper_vector``'s inverse)."""
    out = np.empty((d, d))
    offset = 0
    for i in range(d):
        out[i, i:] = values[offset:offset + d - i]
        offset += d - i
    return mirror_upper(out)


def clamp_eigenvalues(estimate, low: float, high: float) -> np.ndarray:
    """Project the eigenvalues of a symmetric estimate into [low, high] (post-processing).

    Dong et al.'s public code clamps every released Sigma to [0, r^2] (GUIDE.md §3): true covariances
    of rows in the r-ball are PSD with eigenvalues at most tr <= r^2.
    """
    if not isinstance(estimate, Spectral) and low <= 0.0 <= high and not np.any(estimate):
        return np.zeros_like(estimate, dtype=float)  # the zero matrix (no eigh: its eigenvalues are 0)
    spectral = estimate if isinstance(estimate, Spectral) else Spectral.of(estimate)
    return Spectral(np.clip(spectral.values, low, high), spectral.vectors).matrix()


def as_matrix(estimate) -> np.ndarray:
    return estimate.matrix() if isinstance(estimate, Spectral) else np.asarray(estimate)
