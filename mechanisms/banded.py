"""The streamed band sums' compiled passes (numba): a block of rows held column by column (d x m, the
layout Parquet and pandas hand over) is normed, clipped, banded and sorted by band in two passes (the
second a cache-sized tile at a time), so that BLAS forms each band's sums from contiguous slices (mechanisms/problem.py
BandSums.add_columns). Replaces, per block, a row-major copy, the row norms, a copy per band and a
division (1e8 x 20 Parquet: results/measurements/stream_benchmark.txt run 7)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit

FINE, NOT_FINITE, OUTSIDE = -1, -2, -3  # the first pass's status: all rows fine, or the first bad row's kind


def band_edges(radius: float) -> np.ndarray:
    """edges[j] = radius 2^-j, j = 0, 1, ... down to 0.0: band j holds edges[j + 1] < norm <= edges[j]."""
    edges = np.ldexp(radius, -np.arange(math.frexp(radius)[1] + 1077, dtype=np.int64))
    edges[-1] = 0.0  # below every positive norm (2^-1074 at least), whatever ldexp rounded to
    return edges


@njit(cache=True, nogil=True, error_model="numpy")
def _band(norm: float, radius: float, edges: np.ndarray) -> int:
    mantissa, exponent = math.frexp(norm / radius)  # norm / radius = mantissa 2^exponent, mantissa in [1/2, 1)
    j = min(max(1 - exponent if mantissa == 0.5 else -exponent, 0), len(edges) - 2)
    while j > 0 and norm > edges[j]:  # the division rounded: the exact comparisons decide (dyadic_band)
        j -= 1
    while norm <= edges[j + 1]:
        j += 1
    return j


@njit(cache=True, nogil=True, error_model="numpy")
def norm_and_band(columns: np.ndarray, clip: float, divisor: float, radius: float, limit: float,
                  edges: np.ndarray):
    """Pass 1 over a d x m block: each row's norm, clipped to ``clip`` (Clip(x, r) = min(1, r/||x||) x), then
    divided by ``divisor``; its band (the last slot: zero rows); the bands' counts. Returns (status, row,
    factors, norms, bands, counts, largest norm before clipping, rows clipped); status NOT_FINITE or
    OUTSIDE (norm > ``limit``) stops at ``row``."""
    d, m = columns.shape
    norms = np.zeros(m)
    for k in range(d):  # sums of squares a column at a time: contiguous, vectorised
        column = columns[k]
        for i in range(m):
            norms[i] += column[i] * column[i]
    factors = np.empty(m)
    bands = np.empty(m, np.int64)
    zero = len(edges) - 1
    counts = np.zeros(zero + 1, np.int64)
    largest, clipped = 0.0, 0
    for i in range(m):
        norm = math.sqrt(norms[i])
        if not norm <= math.inf:
            return NOT_FINITE, i, factors, norms, bands, counts, largest, clipped
        largest = max(largest, norm)
        factor = 1.0
        if norm > clip:
            factor, norm, clipped = clip / norm, clip, clipped + 1
        factor, norm = factor / divisor, norm / divisor
        if norm > limit:
            return OUTSIDE, i, factors, norms, bands, counts, largest, clipped
        factors[i], norms[i] = factor, norm
        bands[i] = _band(norm, radius, edges) if norm > 0 else zero
        counts[bands[i]] += 1
    return FINE, m, factors, norms, bands, counts, largest, clipped


@njit(cache=True, nogil=True, error_model="numpy")
def sort_tile(columns: np.ndarray, start: int, stop: int, factors: np.ndarray, norms: np.ndarray,
              bands: np.ndarray, counts: np.ndarray, rows: np.ndarray, units: np.ndarray) -> None:
    """Pass 2, rows start..stop of the block (a tile that stays in cache): counts[j] = the tile's rows in
    band j; rows = the rows as seen x (clipped, divided) and units = x / ||x||, as columns in band order
    (zero rows last, with zero units)."""
    d = columns.shape[0]
    counts[:] = 0
    for i in range(start, stop):
        counts[bands[i]] += 1
    following = np.empty_like(counts)
    total = 0
    for j in range(len(counts)):
        following[j] = total
        total += counts[j]
    place = np.empty(stop - start, np.int64)
    inverse = np.empty(stop - start)
    for i in range(start, stop):
        place[i - start] = following[bands[i]]
        following[bands[i]] += 1
        inverse[i - start] = 1.0 / norms[i] if norms[i] > 0 else 0.0
    for k in range(d):  # a column at a time: contiguous reads, one run of writes per band
        column, row, unit = columns[k], rows[k], units[k]
        for i in range(start, stop):
            value = column[i] * factors[i]
            row[place[i - start]] = value
            unit[place[i - start]] = value * inverse[i - start]
