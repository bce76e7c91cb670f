"""The streamed band sums' compiled pass (numba): a block of rows held column by column, read where it is (the
buffers Parquet, pandas or numpy hand over: no copy of the block), is normed, clipped, banded, sorted by band and
summed by band in one call, a cache-sized tile at a time; each band's two d x d products come from its contiguous
rows in one register-blocked pass (gram_pair), with no call back to Python (mechanisms/problem.py
BandSums.add_columns). Replaces a copy of each block, a second pass over it from memory, a unit row per row and
BLAS calls per band and tile: the streamed statistics in about half the time (results/measurements/
stream_benchmark.txt run 9)."""
from __future__ import annotations

import functools
import math
import threading

import numpy as np
from numba import carray, njit, types
from numba.extending import intrinsic

_reused = threading.local()
KEPT_BYTES = 64 << 20  # the largest work array a thread keeps between calls


def scratch(name: str, shape: tuple, dtype=float) -> np.ndarray:
    """This thread's work array ``name`` of ``shape`` (contents undefined), kept for the next call up to
    KEPT_BYTES (a larger one is fresh and not kept); never handed out of add_columns."""
    size = math.prod(shape)
    kept = getattr(_reused, name, None)
    if kept is None or kept.size < size or kept.dtype != dtype:
        kept = np.empty(max(size, 1), dtype)
        if kept.nbytes <= KEPT_BYTES:
            setattr(_reused, name, kept)
    return kept[:size].reshape(shape)


FINE, NOT_FINITE, OUTSIDE, MORE_BANDS = -1, -2, -3, -4  # band_block's status: all rows fine, the first bad
# row's kind, or more bands than its accumulators hold


@functools.lru_cache(maxsize=16)
def band_edges(radius: float) -> np.ndarray:
    """edges[j] = radius 2^-j, j = 0, 1, ... down to 0.0: band j holds edges[j + 1] < norm <= edges[j] (read-only:
    kept per radius)."""
    edges = np.ldexp(radius, -np.arange(math.frexp(radius)[1] + 1077, dtype=np.int64))
    edges[-1] = 0.0  # below every positive norm (2^-1074 at least), whatever ldexp rounded to
    edges.flags.writeable = False
    return edges


@njit(cache=True, nogil=True, error_model="numpy")
def _band(norm: float, radius: float, edges: np.ndarray) -> int:
    mantissa, exponent = math.frexp(norm / radius)  # norm / radius = mantissa 2^exponent, mantissa in [1/2, 1)
    return _settled(1 - exponent if mantissa == 0.5 else -exponent, norm, edges)  # the division rounded


@njit(cache=True, nogil=True, error_model="numpy")
def _settled(guess: int, norm: float, edges: np.ndarray) -> int:
    """The band j of ``norm``, edges[j + 1] < norm <= edges[j], from a guess a step or so off: the exact
    comparisons decide (dyadic_band)."""
    j = min(max(guess, 0), len(edges) - 2)
    while j > 0 and norm > edges[j]:
        j -= 1
    while norm <= edges[j + 1]:
        j += 1
    return j


@njit(cache=True, nogil=True, error_model="numpy")
def squares_by_row(X: np.ndarray, out: np.ndarray) -> None:
    """out[i] = sum_k X[i, k]^2, added in column order k = 0, 1, ... with one rounding per product and per sum:
    pass 1's order (_norm_and_band). Every path that norms a row (arrays, blocks, streamed tables, Dask
    partitions, with or without dropped rows) takes its norm from these sums, so a row on a band edge lands in the
    same band whichever path sums it (issue 58: two orders disagreed there by an ulp)."""
    for i in range(X.shape[0]):
        total = 0.0
        for k in range(X.shape[1]):
            total += X[i, k] * X[i, k]
        out[i] = total


@njit(cache=True, nogil=True, error_model="numpy")
def bands_of(norms: np.ndarray, radius: float, edges: np.ndarray, out: np.ndarray) -> None:
    """out[i] = the band j of norms[i] > 0 (edges[j + 1] < norm <= edges[j]; 0 above the radius): the one band
    routine of every path (pass 1 decides a row's band with the same ``_settled``)."""
    top = math.frexp(radius)[1] - 1
    for i in range(len(norms)):
        out[i] = _settled(top - (math.frexp(norms[i])[1] - 1), norms[i], edges)


@intrinsic
def _doubles_at(typingctx, address):
    """The float64 pointer at an integer address (a column's buffer: ``column_addresses``)."""
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(types.CPointer(types.float64)))
    return types.CPointer(types.float64)(types.intp), codegen


def column_addresses(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(addresses, strides in elements) of 1-D float64 arrays with positive strides that are whole elements, for
    band_block, which reads them in place: the caller keeps the arrays alive while band_block runs."""
    addresses = np.array([c.ctypes.data for c in columns], dtype=np.intp)
    strides = np.array([c.strides[0] // 8 for c in columns], dtype=np.intp)
    return addresses, strides


SAFE_BELOW, SAFE_ABOVE = 2.0**-500, 2.0**500  # norms whose products and 1 / norm^2 stay normal floats
_SUMS = {"reassoc", "contract"}  # sums in vector lanes (LLVM's order for this CPU: the same bits on one machine)


@njit(cache=True, nogil=True, error_model="numpy", fastmath=_SUMS)
def _sum(values: np.ndarray) -> float:
    total = 0.0
    for i in range(len(values)):
        total += values[i]
    return total


@njit(cache=True, nogil=True, error_model="numpy", fastmath=_SUMS)
def gram_add(x: np.ndarray, first: int, last: int, out: np.ndarray) -> None:
    """out += x[:, first:last] x[:, first:last]^T, its upper triangle (and part of the lower, by blocks), for x of
    a multiple of 4 rows: 4 x 2 blocks of entries, each summed over the columns in vector lanes (registers hold
    the block's 8 sums; the 6 rows it reads stay in cache): 1.5x numpy's syrk at d = 20 on this machine. For a
    tile whose weights 1 / ||x||^2 would leave float64's normal range (gram_pair's work there)."""
    d = x.shape[0]
    for k in range(0, d, 4):
        r0, r1, r2, r3 = x[k, first:last], x[k + 1, first:last], x[k + 2, first:last], x[k + 3, first:last]
        for j in range(k, d, 2):
            c0, c1 = x[j, first:last], x[j + 1, first:last]
            s00 = s01 = s10 = s11 = s20 = s21 = s30 = s31 = 0.0
            for i in range(last - first):
                b0, b1 = c0[i], c1[i]
                s00 += r0[i] * b0
                s01 += r0[i] * b1
                s10 += r1[i] * b0
                s11 += r1[i] * b1
                s20 += r2[i] * b0
                s21 += r2[i] * b1
                s30 += r3[i] * b0
                s31 += r3[i] * b1
            out[k, j] += s00
            out[k, j + 1] += s01
            out[k + 1, j] += s10
            out[k + 1, j + 1] += s11
            out[k + 2, j] += s20
            out[k + 2, j + 1] += s21
            out[k + 3, j] += s30
            out[k + 3, j + 1] += s31


@njit(cache=True, nogil=True, error_model="numpy", fastmath=_SUMS)
def _dot(values: np.ndarray, weights: np.ndarray) -> float:
    total = 0.0
    for i in range(len(values)):
        total += values[i] * weights[i]
    return total


@njit(cache=True, nogil=True, error_model="numpy", fastmath=_SUMS)
def gram_pair(x: np.ndarray, scale: np.ndarray, first: int, last: int, out: np.ndarray, scaled: np.ndarray) -> None:
    """gram_add into ``out`` and, in the same pass, sum scale_i^2 x_i x_i^T into ``scaled`` (i = first..last),
    by 2 x 2 blocks (16 sums in registers): with scale = 1 / ||x||, a band's moments and directions from its rows
    alone (no unit rows to write)."""
    d = x.shape[0]
    weights = scale[first:last]
    for k in range(0, d, 2):
        r0, r1 = x[k, first:last], x[k + 1, first:last]
        for j in range(k, d, 2):
            c0, c1 = x[j, first:last], x[j + 1, first:last]
            s00 = s01 = s10 = s11 = t00 = t01 = t10 = t11 = 0.0
            for i in range(last - first):
                w = weights[i] * weights[i]
                p00, p01, p10, p11 = r0[i] * c0[i], r0[i] * c1[i], r1[i] * c0[i], r1[i] * c1[i]
                s00 += p00
                s01 += p01
                s10 += p10
                s11 += p11
                t00 += p00 * w
                t01 += p01 * w
                t10 += p10 * w
                t11 += p11 * w
            out[k, j] += s00
            out[k, j + 1] += s01
            out[k + 1, j] += s10
            out[k + 1, j + 1] += s11
            scaled[k, j] += t00
            scaled[k, j + 1] += t01
            scaled[k + 1, j] += t10
            scaled[k + 1, j + 1] += t11


@njit(cache=True, nogil=True, error_model="numpy")
def _column(addresses: np.ndarray, strides: np.ndarray, m: int, k: int, start: int, stop: int) -> np.ndarray:
    """Rows start..stop of column k, read in place."""
    step = strides[k]
    return carray(_doubles_at(addresses[k]), ((m - 1) * step + 1,))[start * step:(stop - 1) * step + 1:step]


@njit(cache=True, nogil=True, error_model="numpy")
def _norm_and_band(addresses, strides, m, start, stop, clip, divisor, radius, limit, edges, norms, factors, bands,
                   counts):
    """Pass 1 over rows start..stop: each row's norm, clipped to ``clip`` (Clip(x, r) = min(1, r/||x||) x) and
    then divided by ``divisor`` (``norms``; ``factors``: what scales the row so); its band (``bands``; the last
    slot: zero rows); the tile's ``counts`` per band. Returns (status, row, largest norm before clipping, rows
    clipped); status NOT_FINITE or OUTSIDE (norm > ``limit``) stops at ``row``."""
    t = stop - start
    norms[:t] = 0.0
    for k in range(len(addresses)):  # sums of squares a column at a time: contiguous, vectorised
        part = _column(addresses, strides, m, k, start, stop)
        for i in range(t):
            norms[i] += part[i] * part[i]
    for i in range(t):
        norms[i] = math.sqrt(norms[i])
    zero = len(edges) - 1
    top = math.frexp(radius)[1] - 1  # floor(log2 radius)
    exponents = norms.view(np.int64)  # a norm's binary exponent guesses its band
    counts[:] = 0
    largest, clipped = 0.0, 0
    for i in range(t):
        norm = norms[i]
        if not norm < math.inf:  # NaN or inf in the row, or squares beyond float64: add_columns says which
            return NOT_FINITE, start + i, largest, clipped
        largest = max(largest, norm)
        factor = 1.0
        if norm > clip:
            factor, norm, clipped = clip / norm, clip, clipped + 1
        factor, norm = factor / divisor, norm / divisor
        if norm > limit:
            return OUTSIDE, start + i, largest, clipped
        factors[i], norms[i] = factor, norm
        exponent = (exponents[i] >> 52) & 0x7FF
        if norm == 0:
            band = zero
        elif exponent == 0:  # subnormal
            band = _band(norm, radius, edges)
        else:  # r 2^-(j+1) < norm <= r 2^-j: the binary exponents give j or j + 1
            band = _settled(top - (exponent - 1023), norm, edges)
        bands[i] = band
        counts[band] += 1
    return FINE, stop, largest, clipped


@njit(cache=True, nogil=True, error_model="numpy")
def band_block(addresses: np.ndarray, strides: np.ndarray, m: int, start: int, tile: int, clip: float,
               divisor: float, radius: float, limit: float, edges: np.ndarray, norms: np.ndarray,
               factors: np.ndarray, inverse: np.ndarray, ordered: np.ndarray, bands: np.ndarray, place: np.ndarray,
               counts: np.ndarray, rows: np.ndarray, units: np.ndarray, slots: np.ndarray, used: np.ndarray,
               slot_bands: np.ndarray, slot_counts: np.ndarray, moments: np.ndarray, directions: np.ndarray,
               totals: np.ndarray, unit_totals: np.ndarray):
    """Rows start..m of a block held as d columns (``addresses``, ``strides``: column_addresses), ``tile`` rows
    at a time (they stay in cache): pass 1 (_norm_and_band), then the tile's rows as seen x (clipped, divided)
    copied into ``rows`` (d' x tile, d' = d rounded up to 4, the rest zero) in band order, ``ordered`` their
    1 / ||x||, and each band's sums added to its slot: ``slot_counts``, ``moments`` += sum x x^T, ``directions``
    += sum x x^T / ||x||^2 (gram_pair; in a tile with a norm outside SAFE_BELOW..SAFE_ABOVE, from unit rows
    x / ||x|| in ``units`` by gram_add), ``totals`` += sum x, ``unit_totals`` += sum x / ||x||; symmetric once
    the block is done. ``slots[j]``: band j's slot (-1: none yet), ``slot_bands`` the reverse, ``used[0]`` how
    many; a new band takes the next slot, zeroed. Zero rows count in no band. ``norms`` .. ``place``: work
    arrays of the tile's length. Returns (status, row, largest norm before clipping, rows clipped): FINE;
    NOT_FINITE or OUTSIDE at the block's ``row``; MORE_BANDS: the tile at ``row`` needs more slots than the
    accumulators hold (nothing of it added: call again from ``row`` with larger ones)."""
    d, zero = len(addresses), len(edges) - 1
    largest, clipped = 0.0, 0
    following, present = np.empty_like(counts), np.empty_like(counts)
    for begin in range(start, m, tile):
        stop = min(begin + tile, m)
        t = stop - begin
        status, row, tile_largest, tile_clipped = _norm_and_band(addresses, strides, m, begin, stop, clip, divisor,
                                                                radius, limit, edges, norms, factors, bands,
                                                                counts)
        largest = max(largest, tile_largest)
        if status != FINE:
            return status, row, largest, clipped
        bands_in_tile, new = 0, 0
        for j in range(zero):
            if counts[j]:
                present[bands_in_tile] = j
                bands_in_tile += 1
                new += slots[j] < 0
        if used[0] + new > len(slot_bands):
            return MORE_BANDS, begin, largest, clipped
        for j in present[:bands_in_tile]:
            if slots[j] < 0:
                slot = used[0]
                slots[j], slot_bands[slot], used[0] = slot, j, slot + 1
                slot_counts[slot] = 0
                moments[slot] = 0.0
                directions[slot] = 0.0
                totals[slot] = 0.0
                unit_totals[slot] = 0.0
        clipped += tile_clipped
        # directions as sum x x^T / ||x||^2 from the rows alone where no product over- or underflows, else from
        # unit rows x / ||x|| (by division where 1 / ||x|| overflows: subnormal norms)
        weighted, tiny = True, False
        for i in range(t):
            inverse[i] = 1.0 / norms[i] if norms[i] > 0 else 0.0
            weighted = weighted and (norms[i] == 0 or SAFE_BELOW < norms[i] < SAFE_ABOVE)
            tiny = tiny or inverse[i] == math.inf
        # pass 2 (the tile in cache): each row's place in band order, the columns copied there, a column at a time
        total = 0
        for j in range(len(counts)):
            following[j] = total
            total += counts[j]
        to = place.view(np.uint64)  # unsigned: no wraparound test per store
        for i in range(t):
            to[i] = following[bands[i]]
            following[bands[i]] += 1
            ordered[to[i]] = inverse[i]
        for k in range(d):
            part, row, unit = _column(addresses, strides, m, k, begin, stop), rows[k], units[k]
            if weighted:
                for i in range(t):
                    row[to[i]] = part[i] * factors[i]
            elif tiny:
                for i in range(t):
                    if bands[i] != zero:
                        value = part[i] * factors[i]
                        row[to[i]] = value
                        unit[to[i]] = value / norms[i]
            else:
                for i in range(t):
                    value = part[i] * factors[i]
                    row[to[i]] = value
                    unit[to[i]] = value * inverse[i]
            first = 0
            for j in present[:bands_in_tile]:  # the column's band sums while it is in cache
                last = first + counts[j]
                totals[slots[j], k] += _sum(row[first:last])
                unit_totals[slots[j], k] += _dot(row[first:last], ordered[first:last]) if weighted else \
                    _sum(unit[first:last])
                first = last
        first = 0
        for j in present[:bands_in_tile]:  # each band's products from its contiguous columns
            slot, last = slots[j], first + counts[j]
            if weighted:
                gram_pair(rows, ordered, first, last, moments[slot], directions[slot])
            else:
                gram_add(rows, first, last, moments[slot])
                gram_add(units, first, last, directions[slot])
            slot_counts[slot] += counts[j]
            first = last
    for slot in range(used[0]):  # the lower triangles from the upper ones
        for k in range(d):
            for j in range(k):
                moments[slot, k, j] = moments[slot, j, k]
                directions[slot, k, j] = directions[slot, j, k]
    return FINE, m, largest, clipped
