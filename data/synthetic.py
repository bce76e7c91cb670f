"""Synthetic data of Dong, Liang & Yi 2022 §6.1 (after Amin et al. 2019)."""
from __future__ import annotations

import numpy as np

from dpcov.mechanisms.problem import row_norms


def zipf_bin_sizes(n: int, N: int, s: float) -> np.ndarray:
    """Rows per bin k = 1..N with shares proportional to 1/k^s.

    Bin edges are floor(n * cumulative share), so rounding leftovers go to the last (norm-1) bin; this
    matches the traces of GUIDE.md §2 (e.g. N = 16: 3.1e-4, N = 32: 4.8e-5 at n = 50000).
    """
    shares = 1.0 / np.arange(1, N + 1) ** s
    edges = np.floor(n * np.cumsum(shares) / shares.sum()).astype(np.int64)
    edges[-1] = n
    return np.diff(edges, prepend=0)


def zipf_norms(n: int, N: int, s: float) -> np.ndarray:
    """Row norms: bin k holds zipf_bin_sizes[k-1] rows of norm 2^(k-N); N = 1 gives all ones."""
    return np.repeat(np.ldexp(1.0, np.arange(1, N + 1) - N), zipf_bin_sizes(n, N, s))


def synthetic_zipf(n: int, d: int, N: int, s: float, rng: np.random.Generator) -> np.ndarray:
    """X = Z U with Z ~ N(0, I) (n x d) and U ~ Uniform(0, 1) (d x d); columns centred; then each row
    rescaled to an exact norm from the Zipf bins (randomly assigned to rows)."""
    for name, value in {"n": n, "d": d, "N": N}.items():
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if n < 2:
        raise ValueError(f"n must be >= 2 (one centred row is the zero vector), got {n!r}")
    if not s > 0:
        raise ValueError(f"Zipf skew s must be > 0, got {s!r}")
    n, d, N = int(n), int(d), int(N)
    X = rng.standard_normal((n, d)) @ rng.uniform(0.0, 1.0, (d, d))
    X -= X.mean(axis=0)
    norms = row_norms(X)  # np.linalg.norm's bits without an n x d temporary
    norms[norms == 0] = 1.0  # a zero row stays zero (probability 0 for d >= 1, n >= 2)
    X *= (rng.permutation(zipf_norms(n, N, s)) / norms)[:, None]  # in place: X can be 800 MB
    return X
