"""The streamed band sums' compiled passes (numba): a block of rows held column by column (as Parquet and
pandas hand it over) is normed, clipped, banded and sorted by band in two passes (the second a cache-sized
tile at a time), so that BLAS forms each band's sums from contiguous slices (mechanisms/problem.py
BandSums.add_columns). Replaces, per block, a row-major copy, the row norms, a copy per band and a
division; the work arrays are each thread's own, reused from block to block (no fresh pages per block:
Dask's workers return freed memory at once). Measured: results/measurements/stream_benchmark.txt run 7."""
from __future__ import annotations

import math
import threading

import numpy as np
from numba import njit

_reused = threading.local()
KEPT_BYTES = 64 << 20  # the largest work array a thread keeps between blocks (a 16 MB block needs 16 MB)


def scratch(name: str, shape: tuple, dtype=float) -> np.ndarray:
    """This thread's work array ``name`` of ``shape`` (contents undefined), kept for the next block up to
    KEPT_BYTES (a larger one, e.g. a big Dask partition, is fresh and not kept); never handed out of
    add_columns."""
    size = math.prod(shape)
    kept = getattr(_reused, name, None)
    if kept is None or kept.size < size or kept.dtype != dtype:
        kept = np.empty(max(size, 1), dtype)
        if kept.nbytes <= KEPT_BYTES:
            setattr(_reused, name, kept)
    return kept[:size].reshape(shape)


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
                  edges: np.ndarray, factors: np.ndarray, norms: np.ndarray, bands: np.ndarray, counts: np.ndarray):
    """Pass 1 over a d x m block: each row's norm, clipped to ``clip`` (Clip(x, r) = min(1, r/||x||) x), then
    divided by ``divisor`` (``norms``; ``factors``: what scales the row so); its band (``bands``; the last
    slot: zero rows); the bands' ``counts``. Returns (status, row, largest norm before clipping, rows
    clipped); status NOT_FINITE or OUTSIDE (norm > ``limit``) stops at ``row``."""
    d, m = columns.shape
    norms[:] = 0.0
    for k in range(d):  # sums of squares a column at a time: contiguous, vectorised
        column = columns[k]
        for i in range(m):
            norms[i] += column[i] * column[i]
    zero = len(edges) - 1
    counts[:] = 0
    largest, clipped = 0.0, 0
    for i in range(m):
        norm = math.sqrt(norms[i])
        if not norm < math.inf:  # NaN or inf in the row, or squares beyond float64: add_columns says which
            return NOT_FINITE, i, largest, clipped
        largest = max(largest, norm)
        factor = 1.0
        if norm > clip:
            factor, norm, clipped = clip / norm, clip, clipped + 1
        factor, norm = factor / divisor, norm / divisor
        if norm > limit:
            return OUTSIDE, i, largest, clipped
        factors[i], norms[i] = factor, norm
        bands[i] = _band(norm, radius, edges) if norm > 0 else zero
        counts[bands[i]] += 1
    return FINE, m, largest, clipped


@njit(cache=True, nogil=True, error_model="numpy")
def sort_tile(columns: np.ndarray, start: int, stop: int, factors: np.ndarray, norms: np.ndarray,
              bands: np.ndarray, counts: np.ndarray, rows: np.ndarray, units: np.ndarray, place: np.ndarray,
              inverse: np.ndarray) -> None:
    """Pass 2, rows start..stop of the block (a tile that stays in cache): counts[j] = the tile's rows in
    band j; rows = the rows as seen x (clipped, divided) and units = x / ||x||, as columns in band order
    (zero rows last, with zero units); ``place`` and ``inverse``: work arrays of the tile's length."""
    d = columns.shape[0]
    counts[:] = 0
    for i in range(start, stop):
        counts[bands[i]] += 1
    following = np.empty_like(counts)
    total = 0
    for j in range(len(counts)):
        following[j] = total
        total += counts[j]
    tiny = False  # a norm whose reciprocal overflows (subnormal): that tile's units by division
    for i in range(start, stop):
        place[i - start] = following[bands[i]]
        following[bands[i]] += 1
        inverse[i - start] = 1.0 / norms[i] if norms[i] > 0 else 0.0
        tiny = tiny or inverse[i - start] == math.inf
    for k in range(d):  # a column at a time: contiguous reads, one run of writes per band
        column, row, unit = columns[k], rows[k], units[k]
        for i in range(start, stop):
            value = column[i] * factors[i]
            row[place[i - start]] = value
            if tiny:
                unit[place[i - start]] = value / norms[i] if norms[i] > 0 else 0.0
            else:
                unit[place[i - start]] = value * inverse[i - start]
