"""Synthetic Zipf data of Dong, Liang & Yi 2022 §6.1 (GUIDE.md §2)."""
from __future__ import annotations

import numpy as np
import pytest

from dpcov.data.synthetic import synthetic_zipf, zipf_bin_sizes, zipf_norms

SKEW = 3.0


def bin_norms(N: int) -> np.ndarray:
    return np.array([2.0 ** (k - N) for k in range(1, N + 1)])


# --- bin sizes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 7, 1000, 50000, 123457])
@pytest.mark.parametrize("N", [1, 2, 4, 8, 16, 32])
def test_bin_sizes_sum_to_n_and_follow_zipf_shares(n, N):
    sizes = zipf_bin_sizes(n, N, SKEW)
    assert sizes.shape == (N,)
    assert sizes.sum() == n
    assert np.all(sizes >= 0)
    shares = 1.0 / np.arange(1, N + 1) ** SKEW
    shares /= shares.sum()
    # floor-of-cumulative-share edges: every bin is within one row of its exact share
    assert np.all(np.abs(sizes - n * shares) < 1 + 1e-9)


def test_bin_sizes_known_values():
    # shares 1 : 1/8 -> 8/9, 1/9 of 50000
    np.testing.assert_array_equal(zipf_bin_sizes(50000, 2, SKEW), [44444, 5556])
    np.testing.assert_array_equal(zipf_bin_sizes(10, 1, SKEW), [10])


def test_bin_sizes_are_non_increasing_for_large_n():
    sizes = zipf_bin_sizes(10**6, 32, SKEW)
    assert np.all(np.diff(sizes) <= 0)


def test_zipf_norms_repeat_bin_norms():
    norms = zipf_norms(50000, 4, SKEW)
    sizes = zipf_bin_sizes(50000, 4, SKEW)
    assert len(norms) == 50000
    for k, (size, norm) in enumerate(zip(sizes, bin_norms(4)), start=1):
        assert np.count_nonzero(norms == norm) == size, f"bin {k}"


# --- generator ----------------------------------------------------------------------------------
def test_shape_and_unit_norms_for_one_bin():
    X = synthetic_zipf(500, 7, 1, SKEW, np.random.default_rng(0))
    assert X.shape == (500, 7) and X.dtype == np.float64
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("N", [2, 4, 8, 32])
def test_row_norms_are_exactly_the_bin_norms(N):
    n = 3000
    X = synthetic_zipf(n, 5, N, SKEW, np.random.default_rng(N))
    norms = np.linalg.norm(X, axis=1)
    expected = np.sort(zipf_norms(n, N, SKEW))
    np.testing.assert_allclose(np.sort(norms), expected, rtol=1e-12, atol=0)
    # every row's norm is one of the bin norms 2^(k-N)
    nearest = bin_norms(N)[np.argmin(np.abs(np.log2(norms)[:, None] - (np.arange(1, N + 1) - N)), axis=1)]
    np.testing.assert_allclose(norms, nearest, rtol=1e-12, atol=0)


def test_bin_norms_are_assigned_to_rows_at_random():
    # the norms are permuted over rows, not sorted
    X = synthetic_zipf(2000, 3, 4, SKEW, np.random.default_rng(1))
    norms = np.linalg.norm(X, axis=1)
    assert not np.all(np.diff(norms) >= -1e-12)
    assert not np.all(np.diff(norms) <= 1e-12)


@pytest.mark.parametrize("N", [1, 2, 4, 8, 16, 32])
def test_trace_is_sum_of_squared_bin_norms(N):
    n = 4000
    X = synthetic_zipf(n, 5, N, SKEW, np.random.default_rng(7))
    sizes = zipf_bin_sizes(n, N, SKEW)
    expected = np.sum(sizes * 4.0 ** (np.arange(1, N + 1) - N)) / n
    assert np.trace(X.T @ X / n) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("N, trace", [(1, 1.0), (2, 0.33), (4, 0.041), (8, 2.8e-3),
                                      (16, 3.1e-4), (32, 4.8e-5)])
def test_guide_traces_at_n_50000(N, trace):
    n = 50000
    X = synthetic_zipf(n, 5, N, SKEW, np.random.default_rng(100 + N))
    got = float(np.sum(X * X) / n)
    assert float(f"{got:.2g}") == pytest.approx(trace, rel=1e-12), f"N={N}: trace {got}"


def test_columns_are_not_degenerate():
    # X = Z U has a full-rank covariance (U is a.s. invertible), and rescaling rows keeps it so
    X = synthetic_zipf(2000, 6, 1, SKEW, np.random.default_rng(2))
    eig = np.linalg.eigvalsh(X.T @ X / len(X))
    assert eig.min() > 1e-6


def test_deterministic_for_a_seed_and_different_for_another():
    a = synthetic_zipf(300, 4, 4, SKEW, np.random.default_rng(42))
    b = synthetic_zipf(300, 4, 4, SKEW, np.random.default_rng(42))
    c = synthetic_zipf(300, 4, 4, SKEW, np.random.default_rng(43))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_integer_valued_floats_are_accepted():
    X = synthetic_zipf(10.0, 3.0, 2.0, SKEW, np.random.default_rng(0))
    assert X.shape == (10, 3)


@pytest.mark.parametrize("kwargs, name", [
    ({"n": 0}, "n"), ({"n": -5}, "n"), ({"n": 2.5}, "n"),
    ({"d": 0}, "d"), ({"d": 1.5}, "d"),
    ({"N": 0}, "N"), ({"N": -1}, "N"), ({"N": 3.3}, "N"),
])
def test_bad_sizes_raise(kwargs, name):
    args = {"n": 10, "d": 3, "N": 2, **kwargs}
    with pytest.raises(ValueError, match=rf"\b{name} must be a positive integer"):
        synthetic_zipf(args["n"], args["d"], args["N"], SKEW, np.random.default_rng(0))


@pytest.mark.parametrize("s", [0.0, -1.0, float("nan")])
def test_bad_skew_raises(s):
    with pytest.raises(ValueError, match="skew"):
        synthetic_zipf(10, 3, 2, s, np.random.default_rng(0))
