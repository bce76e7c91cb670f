"""Exact sums for hardened releases under add/remove neighbours (issue 59): float-error bounds independent of the
private number of rows.

Under add/remove the estimators sum every row and divide by the released count ñ; the number of rows summed, n, is
private, and a float sum's error grows with it (Higham: gamma_(n-1) sum |x|), so a hardened release could not state
its float error from public facts. Here each row's contribution is rounded first and the rounded contributions are
added exactly (integers): nothing that depends on n is ever rounded.

Each row is clipped, banded (r 2^-(j+1) < ||x|| <= r 2^-j, ``banded.bands_of``) and rounded to its band's grid:
x^ = rint(x 2^(j+k) / r) (k = ``GRID_BITS``; bands deeper than ``FLOOR_BAND`` on that band's grid), and its
direction to u^ = rint(x / ||x|| 2^k). Every band keeps the exact integer sums of x^ x^^T, u^ u^^T, x^ and u^
(float64 products of chunks of at most ``CHUNK`` rows, exact because every partial sum is an integer below 2^53;
then int64, Python integers beyond). A row then contributes, at clipping level m (tau = r 2^-m), x^ x^^T r^2
4^-(j+k) (j >= m) or tau^2 u^ u^^T 4^-k (j < m): its norm is at most tau (1 + (d + 8) u + sqrt(d) 2^-(k+1))
(``row_scale``: the rounding adds at most half a step per coordinate), the neighbours' sensitivities' ``scale``
(mechanisms/neighbours.py). The sums are the same integers whatever the input kind, block size or order.

The statistics a release reads are then formed exactly and rounded once, from magnitudes bounded by public facts:
- the covariance Sigma = S / ñ, S = sum of the contributions, with each entry clipped to [-tau^2, tau^2] (1-Lipschitz:
  sensitivities hold; Sigma's exact entries lie there whenever n <= ñ): float error 3u tau^2;
- for eigenvalues, S / (ñ + tr(S) / (K tau^2)) (``EIGEN_TRACE_FACTOR`` K): its spectral norm is at most K tau^2, so
  the eigensolver's error is public, and its eigenvalues still move by at most ||x||^2 / ñ in l1 and l2 (proof in
  docs/privacy.md); the released values are mapped back by lambda / (1 - sum(lambda) / (K tau^2)) (post-processing);
- the trace and the mean, clipped to their public ranges.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.linalg.blas import dsyrk as _syrk

from .banded import band_edges, bands_of, scratch
from .neighbours import Neighbours
from .problem import CovProblem, row_norms
from .spectral import mirror_upper, symmetrized

GRID_BITS = 14  # x^ on 2^-14 of its band's edge: sqrt(d) 2^-15 more norm (1e-3 at d = 1000)
FLOOR_BAND = 60  # rows below r 2^-60 share that band's grid (their contributions are < 4^-60 r^2 each)
CHUNK = 1 << 16  # rows per exact float64 product: CHUNK (2^k + 1)^2 < 2^53
INT64_ROWS = 1 << 32  # int64 accumulators hold this many rows' (2^k + 1)^2 entries; Python integers beyond
EIGEN_TRACE_FACTOR = 64.0  # K above: the eigensolver's error grows with K tau^2, the map-back's noise with 1 + 1/K at most
INT64_SUMS = 2**60  # a level's sums in int64 while they provably stay below this; Python integers beyond
# a level's statistic in units 2^-GUARD finer than its rows' grid (per power: x x^T, x): units tau^2 2^-36 and
# tau 2^-30; bands deeper than that are rounded to it, half a unit each (at most FLOOR_BAND - m - GUARD of them: a
# public bound), while a row's part stays below 2^36 and 2^30 units: int64 holds the sums of 2^24 and 2^30 rows, Python
# integers beyond (the same values; only the time tells the two apart, a timing channel, out of scope as in noise.py)
GUARD = {2: 4, 1: 16}
UNIT_ROUNDOFF = 2.0**-53


_NO_GRAM = np.zeros((1, 1), dtype=np.int64)  # the products' place in sums made without them
_NO_SUM = np.zeros(0, dtype=np.int64)  # a sum's place in lean sums, which never read it
_NO_BUFFER = np.zeros((0, 0))  # the units' buffer where no units are formed
TILE_ENTRIES = 1 << 22  # entries of X read at a time (32 MB of float64) by the sums' element-wise work


# --- the compiled pass: ``ExactBandSums._transformed`` and the rounding, fused row by row (the same bits) ----------

@njit(cache=True, nogil=True, error_model="numpy")
def _transformed_row(X, i, clip, scale, shift, radius, row) -> float:
    """Row i of X as ``ExactBandSums._transformed`` leaves it, into ``row``; its norm, or -1 where a row's squares
    are not finite (the caller then takes numpy's path, which norms such a row by scaling it). Each value is the
    same float operation numpy applies (a product, a power-of-two scaling, a difference; squares summed in column
    order as squares_by_row does), so the same bits."""
    d = X.shape[1]
    factor, outside = 1.0, False
    if clip < np.inf:
        total = 0.0
        for k in range(d):
            total += X[i, k] * X[i, k]
        if not total < np.inf:
            return -1.0
        norm = math.sqrt(total)
        if norm > clip:
            factor, outside = clip / norm, True
    total = 0.0
    for k in range(d):
        value = X[i, k]
        if outside:
            value = value * factor
        value = value * scale
        if len(shift):
            value = value - shift[k]
        row[k] = value
        total += value * value
    if not total < np.inf:
        return -1.0
    norm = math.sqrt(total)
    if norm > radius:  # rounding (of the clip, or of a shifted row): onto the sphere
        factor = radius / norm
        for k in range(d):
            row[k] = row[k] * factor
        norm = radius
    return norm


@njit(cache=True, nogil=True, error_model="numpy")
def _norms_kernel(X, clip, scale, shift, radius, out) -> bool:
    """out[i] = row i's norm as ``_transformed`` gives it; False where a row needs numpy's path."""
    row = np.empty(X.shape[1])
    for i in range(X.shape[0]):
        out[i] = _transformed_row(X, i, clip, scale, shift, radius, row)
        if out[i] < 0:
            return False
    return True


@njit(cache=True, nogil=True, error_model="numpy")
def _rounded_kernel(X, index, clip, scale, shift, radius, band_scale, step, units_mode, rounded, units, sums) -> bool:
    """The rows ``index`` of one band, rounded: rounded[t] = rint(x band_scale), units[t] = rint(x / ||x|| step)
    (units_mode 2; 1: zeros, the floor band; 0: not formed), and their sums and squares' sums added to sums[0..3]
    (exact integers); False where a row needs numpy's path."""
    d = X.shape[1]
    row = np.empty(d)
    for t in range(len(index)):
        norm = _transformed_row(X, index[t], clip, scale, shift, radius, row)
        if norm < 0:
            return False
        for k in range(d):
            value = np.rint(row[k] * band_scale)
            rounded[t, k] = value
            sums[0, k] += value
            sums[2, k] += value * value
        if units_mode == 2:
            for k in range(d):
                value = np.rint(row[k] / norm * step)
                units[t, k] = value
                sums[1, k] += value
                sums[3, k] += value * value
        elif units_mode == 1:
            for k in range(d):
                units[t, k] = 0.0
    return True


def _mirrored(upper: np.ndarray) -> np.ndarray:
    """The symmetric matrix of syrk's upper triangle (mirrored in place), as exact int64 (its entries are integers
    below 2^53)."""
    return mirror_upper(upper).astype(np.int64)


def row_scale(d: int, bits: int = GRID_BITS) -> float:
    """A summed row's norm over its bound (rounding to the grid, and the float steps that clip, shift and scale it)."""
    return 1 + (d + 8) * UNIT_ROUNDOFF + math.sqrt(d) * 2.0 ** -(bits + 1)


class ExactBandSums:
    """Per band: the count and the exact integer sums of the rounded rows (module docstring). ``add`` a block of rows
    (finite; clipped to ``clip`` here), ``merge`` another's sums. Integer sums: any order, any blocks, same result."""

    def __init__(self, radius: float, bits: int = GRID_BITS, grams: bool = True, directions: bool = True,
                 level: int | None = None, lean: bool = False):
        """``grams=False``: the sums of the rows and their directions only, no d x d products (a mean's pass; or the
        first pass of deferred sums, ``defer``). ``directions=False``: no d x d products of the directions, which only
        clipping levels m > 0 read (a line that never clips: one Gram product per band instead of two; issue 61).
        ``level``: the products clipping level ``level`` reads and no other -- per band the rows' (j >= level) or
        the directions' (j < level): one product per band (a deferred pass, ``defer``). ``lean``: only what one use
        reads -- with grams=False the rows' sums alone (a mean's pass: ``mean(0, n)``), with ``level`` that level's
        products and the rows' squares (a deferred second pass, checked against the first); the rest left empty
        and refused when read."""
        if not (np.isfinite(radius) and radius > 0):
            raise ValueError(f"radius must be a finite number > 0, got {radius!r}")
        if level is not None and not (isinstance(level, (int, np.integer)) and 0 <= level <= FLOOR_BAND):
            raise ValueError(f"level must be an integer in [0, {FLOOR_BAND}], got {level!r}")
        self.radius, self.bits, self.n, self.d = float(radius), int(bits), 0, None
        self.grams = bool(grams)
        self.with_directions = bool(directions)
        self.level = None if level is None else int(level)
        self.lean = bool(lean)
        if self.lean and self.grams == (self.level is None):
            raise ValueError("lean sums are a mean's pass (grams=False) or one level's products (level=m)")
        # rows are scaled by 2^-e (exact) so the radius lies in [1/2, 1): no square of a row above the floor band
        # underflows, whatever the radius (a row's norm and direction stay exact to a few ulps)
        self._exponent = math.frexp(self.radius)[1]
        self._radius = math.ldexp(self.radius, -self._exponent)
        self.counts: dict[int, int] = {}
        self.moments: dict[int, np.ndarray] = {}
        self.directions: dict[int, np.ndarray] = {}
        self.totals: dict[int, np.ndarray] = {}
        self.unit_totals: dict[int, np.ndarray] = {}
        # the products' diagonals (sum x^ ** 2 and u^ ** 2 per column), always: a trace needs no d x d product
        self.moment_squares: dict[int, np.ndarray] = {}
        self.direction_squares: dict[int, np.ndarray] = {}
        self._moments_at: dict[int, tuple] = {}  # clipped_moment's results by level (cleared when rows are added)
        self._source = None  # deferred sums: level -> the same rows' sums with that level's products (``defer``)

    @property
    def _stores(self) -> tuple[dict, ...]:
        return (self.moments, self.directions, self.totals, self.unit_totals, self.moment_squares,
                self.direction_squares)

    def defer(self, source) -> "ExactBandSums":
        """Sums without products (``grams=False``) whose d x d statistic at a clipping level is formed when a release
        reads it: ``source(m)`` sums the same rows again with ``level=m`` (one Gram product per band, for the level
        chosen instead of both products of every band; issue 61). The integers are the ones full sums give; the
        second pass must see the same rows (its counts are checked)."""
        if self.grams:
            raise ValueError("only sums made without products (grams=False) can defer them")
        self._source = source
        return self

    def add(self, X: np.ndarray, clip: float = np.inf, shift: np.ndarray | None = None) -> "ExactBandSums":
        """Rows of ``X`` clipped to norm ``clip``, then shifted by ``-shift`` (a released mean), then (rounding aside)
        inside the radius: clipped onto it where float rounding left them an ulp outside."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 2:
            raise ValueError(f"data must be a 2-D array, got shape {X.shape}")
        self.d = X.shape[1] if self.d is None else self.d
        if X.shape[1] != self.d:
            raise ValueError(f"a block of {X.shape[1]} columns after blocks of {self.d}")
        for start in range(0, len(X), CHUNK):
            self._add_chunk(X[start:start + CHUNK], clip, shift)
        return self

    def _transformed(self, X: np.ndarray, clip: float, shift) -> tuple[np.ndarray, np.ndarray]:
        """(a copy of the rows ``X`` as the sums read them, their norms): clipped to ``clip`` in their own units
        (row_norms norms a finite row whose squares overflow), scaled by 2^-e (exact: the radius then in [1/2, 1)),
        shifted, and onto the radius where rounding left them outside. Row by row: a row's bits are the same in any
        block of rows, so a band's rows can be read again a tile at a time."""
        X = np.array(X, dtype=float)
        if np.isfinite(clip):
            norms = row_norms(X)
            outside = norms > clip
            if outside.any():
                X[outside] *= (clip / norms[outside])[:, None]
        np.ldexp(X, -self._exponent, out=X)
        if shift is not None:
            X -= np.ldexp(np.asarray(shift, dtype=float), -self._exponent)
        radius = self._radius
        norms = row_norms(X)
        outside = norms > radius
        if outside.any():  # rounding (of the clip, or of a shifted row): onto the sphere
            X[outside] *= (radius / norms[outside])[:, None]
            norms = np.where(outside, radius, norms)
        return X, norms

    def _compiled(self, clip: float, shift) -> tuple | None:
        """The compiled pass's (clip, 2^-e, the scaled shift, the scaled radius), or None where
        2^-e is not a normal float (radii beyond 2^+-1000: numpy's ldexp path)."""
        if not -1000 < self._exponent < 1000:
            return None
        scale = math.ldexp(1.0, -self._exponent)
        shifted = np.zeros(0) if shift is None else np.ldexp(np.asarray(shift, dtype=float), -self._exponent)
        return float(clip), scale, shifted, self._radius

    def _add_chunk(self, X: np.ndarray, clip: float, shift) -> None:
        """A chunk's rows (at most CHUNK): first every row's band, then each band's rows a tile at a time (tiles of
        about TILE_ENTRIES entries: the element-wise work's temporaries stay small whatever n and d), their products
        added into one float64 accumulator per band (BLAS syrk, exact: integer partial sums below 2^53)."""
        if shift is None:  # a row outside the radius never reaches the power-of-two scaling (it could overflow there)
            clip = min(clip, self.radius)
        radius, tile = self._radius, max(1, TILE_ENTRIES // max(self.d, 1))
        bands = np.full(len(X), -1, dtype=np.int64)
        compiled = self._compiled(clip, shift)
        for start in range(0, len(X), tile):
            norms = np.empty(len(X[start:start + tile]))
            if compiled is None or not _norms_kernel(X[start:start + tile], *compiled, norms):
                _, norms = self._transformed(X[start:start + tile], clip, shift)
            nonzero = np.flatnonzero(norms > 0)
            if len(nonzero):
                values = np.ascontiguousarray(norms[nonzero])
                out = np.empty(len(values), dtype=np.int64)
                bands_of(values, radius, band_edges(radius), out)
                bands[start + nonzero] = np.minimum(out, FLOOR_BAND)
        step = math.ldexp(1.0, self.bits)
        for j in np.unique(bands[bands >= 0]):
            index = np.flatnonzero(bands == j)
            scale = math.ldexp(1.0, int(j) + self.bits) / radius
            if not self.grams:
                products = (False, False)
            elif self.level is not None:  # the one product level m reads: the rows' at or below it, else directions'
                products = (j >= self.level, j < self.level)
            else:
                products = (True, self.with_directions)
            grams = [np.zeros((self.d, self.d), order="F") if wanted else None for wanted in products]
            # sum x^, sum u^, sum x^ ** 2, sum u^ ** 2 (exact integers below 2^53); lean sums: the ones their use reads
            wanted = (True, not self.lean, not self.lean or self.level is not None, not self.lean)
            sums = np.zeros((4, self.d))
            # directions serve levels m > j only, so never the floor band's rows (m <= FLOOR_BAND), whose norms may
            # have underflowed: theirs are left zero
            units_mode = (1 if j == FLOOR_BAND else 2) if wanted[1] or products[1] else 0
            buffers = None
            if compiled is not None:  # this thread's work arrays (kept between calls: no fresh pages per pass), NaN
                # until the band's first tile writes them: an entry that tile missed would reach the sums as NaN
                shape = (min(tile, len(index)), self.d)
                buffers = [scratch("exact_rounded", shape), scratch("exact_units", shape) if units_mode else _NO_BUFFER]
                for buffer in buffers:
                    buffer.fill(np.nan)
            for start in range(0, len(index), tile):
                part = index[start:start + tile]
                tile_sums = np.zeros((4, self.d))
                if compiled is not None and _rounded_kernel(X, part, *compiled, scale, step, units_mode,
                                                            buffers[0], buffers[1], tile_sums):
                    rounded, units = buffers[0][:len(part)], buffers[1][:len(part)] if units_mode else None
                else:  # numpy's path (a row whose squares overflow, an extreme radius): the same integers
                    rows, norms = self._transformed(X[part], clip, shift)
                    rounded = np.rint(rows * scale)
                    units = None if not units_mode else np.zeros_like(rows) if units_mode == 1 else \
                        np.rint(rows / norms[:, None] * step)
                    tile_sums[0], tile_sums[2] = rounded.sum(axis=0), np.einsum("ij,ij->j", rounded, rounded)
                    if units is not None:
                        tile_sums[1], tile_sums[3] = units.sum(axis=0), np.einsum("ij,ij->j", units, units)
                for gram, values in zip(grams, (rounded, units)):
                    if gram is not None:  # gram += values^T values, its upper triangle, in place
                        _syrk(1.0, values.T, beta=1.0, c=gram, trans=0, lower=0, overwrite_c=1)
                sums += tile_sums
            self._accumulate(int(j), len(index), *(_NO_GRAM.copy() if gram is None else _mirrored(gram)
                                                   for gram in grams),
                             *(part.astype(np.int64) if want else _NO_SUM.copy() for part, want in zip(sums, wanted)),
                             own=True)
        self.n += len(X)

    def _accumulate(self, j: int, count: int, *parts, own: bool = False) -> None:
        """Band j's ``count`` rows' sums, one part per store (``_stores``' order), added exactly. ``own``: the parts
        are this object's to keep (fresh int64 arrays: a new band stores them, no copy)."""
        self._moments_at.clear()
        values = [np.asarray(v).astype(np.int64, copy=not own)
                  if not isinstance(v, np.ndarray) or v.dtype != object else v for v in parts]
        stores = self._stores
        if j not in self.counts:
            self.counts[j] = count
            for store, v in zip(stores, values):
                store[j] = v if own else v.copy()
            if count > INT64_ROWS:
                for store in stores:
                    store[j] = store[j].astype(object)
            return
        self.counts[j] += count
        if self.counts[j] > INT64_ROWS:  # beyond int64's room: exact Python integers
            for store in stores:
                if store[j].dtype != object:
                    store[j] = store[j].astype(object)
        for store, value in zip(stores, values):
            if store[j].dtype == object:
                store[j] = store[j] + value.astype(object)
            else:
                store[j] += value

    def merge(self, other: "ExactBandSums") -> "ExactBandSums":
        if other.radius != self.radius or other.bits != self.bits or other.grams != self.grams \
                or other.with_directions != self.with_directions or other.level != self.level \
                or other.lean != self.lean:
            raise ValueError("cannot merge exact sums of another radius, grid or kind")
        if other.d is not None and self.d is not None and other.d != self.d:
            raise ValueError(f"cannot merge sums of {other.d} columns into sums of {self.d}")
        for j in sorted(other.counts):
            self._accumulate(j, other.counts[j], *(store[j] for store in other._stores))
        self.n += other.n
        self.d = self.d if self.d is not None else other.d
        return self

    # --- exact statistics at clipping level m (tau = r 2^-m), in integer units ---------------------------------

    def _level(self, m: int) -> int:
        """A clipping level the exact sums serve: 0 <= m <= FLOOR_BAND (rows below r 2^-60 share band 60's grid, and
        deeper levels would read their directions and leave the integers: refused, from the public m alone)."""
        m = max(int(m), 0)
        if m > FLOOR_BAND:
            raise ValueError(f"clipping at r 2^-{m}: the exact sums of add/remove's hardened releases serve levels "
                             f"down to r 2^-{FLOOR_BAND} (mechanisms/exact_sums.py)")
        return m

    def _level_sum(self, m: int, power: int, diagonal: bool = False) -> tuple[np.ndarray, float]:
        """The rows clipped to tau = r 2^-m, summed -- x x^T (power 2; ``diagonal``: its diagonal alone, from the
        squares' sums, no product read) or x (power 1) -- as exact integers in units of r^power 2^-power (m + k +
        GUARD): each band's integer sum times its power of two, or, for bands more than GUARD below tau (their rows'
        grids finer than the statistic needs), divided by it and rounded (each within half a unit of exact).
        Returns (the integers: int64 where every partial sum provably fits, else Python integers; the same values
        either way), the public bound on the rounding (units per entry: half a unit per band that can round, at most
        FLOOR_BAND + 1 of them)."""
        key = (m, power, diagonal)
        if key in self._moments_at:
            return self._moments_at[key]
        if self.lean and (self.grams and (power == 1 or diagonal)
                          or not self.grams and (power == 2 or any(j < m for j in self.counts))):
            raise ValueError("lean exact sums hold only what their one use reads (a mean's pass: the rows' sums; a "
                             "deferred pass: one level's products)")
        if power == 2 and not diagonal:
            if not self.grams:
                if self._source is None:
                    raise ValueError("these exact sums hold no d x d products (grams=False: a mean's pass)")
                self._moments_at[key] = self._deferred(m)
                return self._moments_at[key]
            if self.level is not None and m != self.level:
                raise ValueError(f"these exact sums hold the products clipping level {self.level} reads, not level "
                                 f"{m}'s")
            if m > 0 and self.level is None and not self.with_directions and any(j < m for j in self.counts):
                raise ValueError(f"clipping at r 2^-{m} reads the directions' products, which these exact sums were "
                                 f"made without (directions=False: a line that never clips)")
        bits, total_rows = self.bits, sum(self.counts.values())
        guard = GUARD[power]
        fits = total_rows * (2**bits + 1) ** power * 2 ** (power * guard) < INT64_SUMS  # (speed only: same result)
        kept, clipped = (self.totals, self.unit_totals) if power == 1 else \
            (self.moment_squares, self.direction_squares) if diagonal else (self.moments, self.directions)
        shape = (self.d, self.d) if power == 2 and not diagonal else (self.d,)
        total = np.zeros(shape, dtype=np.int64 if fits else object)
        work = np.empty(shape, dtype=np.int64) if fits else None  # int64: each band's part in place
        for j in sorted(self.counts):
            if j < m:  # clipped onto tau: tau^p u^ u^^T 2^-pk = its integers times 2^(p GUARD) in these units
                values, shift = clipped[j], power * guard
            else:  # x^ on r 2^-(j + k): its integers times 2^(p (m + GUARD - j))
                values, shift = kept[j], power * (m + guard - j)
            if fits:
                if shift >= 0:
                    total += np.left_shift(values, shift, out=work)
                elif -shift < 61:  # |values| < 2^60 (INT64_SUMS): beyond, it rounds to 0
                    np.add(values, 1 << (-shift - 1), out=work)  # rounded to the nearest unit (ties up)
                    total += np.right_shift(work, -shift, out=work)
                continue
            values = values.astype(object)
            if shift >= 0:
                total = total + values * (1 << shift)
            else:  # rounded to the nearest unit (ties up): within half a unit
                total = total + ((values + (1 << (-shift - 1))) >> -shift)
        self._moments_at[key] = (total, max(0, FLOOR_BAND - m - guard) / 2)  # at most that many bands round
        return self._moments_at[key]

    def _deferred(self, m: int) -> tuple[np.ndarray, float]:
        """Level m's product sums from the second pass (``defer``), checked to be of the same rows."""
        other = self._source(m)
        same = isinstance(other, ExactBandSums) and other.n == self.n and other.d == self.d \
            and other.counts == self.counts and other.level == m and all(
                np.array_equal(other.moment_squares[j], self.moment_squares[j]) for j in self.counts)
        if not same:
            raise RuntimeError(f"the rows read for level {m}'s products are not the rows summed first: deferred exact "
                               "sums need a source that reads the same rows again")
        return other._level_sum(m, 2)

    def clipped_moment(self, m: int):
        """(S of the rows clipped to r 2^-m in units of r^2 4^-(m + k + GUARD) (``_level_sum``), its trace, the
        rounding's public bound per entry in those units)."""
        m = self._level(m)
        total, slack = self._level_sum(m, 2)
        return total, self._trace_units(m), slack

    def _trace_units(self, m: int) -> int:
        """The trace of ``clipped_moment``'s S, in its units, from the squares' sums alone (the same integer as the
        product's diagonal: both are exact)."""
        diagonal, _ = self._level_sum(m, 2, diagonal=True)
        return int(sum(int(v) for v in diagonal.tolist()))

    def in_units(self, values, power: int, divisor: float, level: int):
        """Exact integers (an array, or one) in units of r^power 2^-power (level + k + GUARD), divided by
        ``divisor``, as floats: the radius's power-of-two part applied last by ldexp (exact), so nothing underflows
        on the way; two roundings (values times r'^power, r' the radius in [1/2, 1), then / divisor) after the
        conversion's one."""
        values = np.asarray(values).astype(float)  # a new array: scaled in place (no d x d temporary)
        values *= self._radius**power / divisor
        exponent = power * (self._exponent - level - self.bits - GUARD[power])
        return np.ldexp(values, exponent, out=values) if values.ndim else np.ldexp(values, exponent)

    def _tau2(self, m: int) -> float:
        return (self.radius * math.ldexp(1.0, -self._level(m))) ** 2

    def _unit(self, m: int, power: int) -> float:
        """The value of one unit of ``_level_sum`` at level m: tau^power 2^-power (k + GUARD)."""
        return (self.radius * math.ldexp(1.0, -self._level(m))) ** power * \
            math.ldexp(1.0, -power * (self.bits + GUARD[power]))

    def sigma(self, m: int, n_public: int) -> tuple[np.ndarray, float]:
        """(Sigma of the clipped rows, entries clipped to [-tau^2, tau^2], its float error per entry: the conversion's
        and the deep bands' rounding)."""
        m = self._level(m)
        moment, _, slack = self.clipped_moment(m)
        limit = int(n_public) << (2 * (self.bits + GUARD[2]))  # ñ tau^2 in units
        out = self.in_units(_clipped(moment, limit), 2, int(n_public), m)
        return symmetrized(out), 5 * UNIT_ROUNDOFF * self._tau2(m) + slack * self._unit(m, 2) / int(n_public)

    def eigen_matrix(self, m: int, n_public: int) -> tuple[np.ndarray, float, float, float]:
        """(S / (ñ + tr(S) / (K tau^2)), its float error per entry, the bound K tau^2 on its spectral norm, the deep
        bands' rounding's bound in spectral norm). The rounding E (within e units per entry) moves it by at most
        ||E||_2 / ñ + ||S / D||_2 |tr E| / (K tau^2 ñ) <= 2 d e units / ñ in spectral norm (so every eigenvalue by
        that much: Weyl)."""
        level = self._level(m)
        moment, trace, slack = self.clipped_moment(level)
        divisor = int(n_public) + math.ldexp(float(trace), -2 * (self.bits + GUARD[2])) / EIGEN_TRACE_FACTOR
        out = self.in_units(moment, 2, divisor, level)
        bound = EIGEN_TRACE_FACTOR * self._tau2(level)
        rounding = 2 * self.d * slack * self._unit(level, 2) / int(n_public)
        return symmetrized(out), 12 * UNIT_ROUNDOFF * bound, bound, rounding

    def trace(self, m: int, n_public: int) -> tuple[float, float]:
        """(tr Sigma of the clipped rows, clipped to [0, tau^2], its float error)."""
        level = self._level(m)
        trace, slack = self._trace_units(level), self._level_sum(level, 2, diagonal=True)[1]
        limit = int(n_public) << (2 * (self.bits + GUARD[2]))
        error = 5 * UNIT_ROUNDOFF * self._tau2(level) + self.d * slack * self._unit(level, 2) / int(n_public)
        return float(self.in_units(min(trace, limit), 2, int(n_public), level)), error

    def mean(self, m: int, n_public: int) -> tuple[np.ndarray, float]:
        """(the clipped rows' sum / ñ, entries clipped to [-tau, tau], its float error per entry)."""
        level = self._level(m)
        total, slack = self._level_sum(level, 1)
        limit = int(n_public) << (self.bits + GUARD[1])
        tau = self.radius * math.ldexp(1.0, -level)
        return self.in_units(_clipped(total, limit), 1, int(n_public), level), \
            5 * UNIT_ROUNDOFF * tau + slack * self._unit(level, 1) / int(n_public)


def _clipped(values: np.ndarray, limit: int) -> np.ndarray:
    """Exact integers clipped to [-limit, limit] (int64 sums are below 2^60: a larger limit cannot bind)."""
    if values.dtype != object and limit >= INT64_SUMS:
        return values
    return np.clip(values, -limit, limit)


def exact_problem(sums: ExactBandSums, n_public: int, ridge=None) -> CovProblem:
    """The add/remove CovProblem of ``sums`` at the released count ñ = ``n_public``: float band statistics (the rounded
    rows' sums / ñ) for what is not released hardened, the exact sums for what is (``CovProblem.exact``)."""
    if sums.n == 0 or sums.d is None:
        raise ValueError("data must have at least one row and one column, got no rows")
    if not sums.grams and sums._source is None:
        raise ValueError("a problem needs the rows' d x d products: these exact sums were made without (grams=False)")
    if sums.lean:
        raise ValueError("a problem needs every sum of the rows: these exact sums are lean (one use's only)")
    n, d, r = int(n_public), sums.d, sums.radius
    exponents = np.array(sorted(sums.counts), dtype=np.int64)
    unit_step = math.ldexp(1.0, -sums.bits)
    totals = np.array([sums.in_units(sums.totals[j], 1, n, int(j) - GUARD[1]) for j in exponents]
                      ).reshape(len(exponents), d)
    unit_totals = np.array([sums.unit_totals[j].astype(float) * unit_step / n for j in exponents]
                           ).reshape(len(exponents), d)
    counts = np.array([sums.counts[j] for j in exponents], dtype=np.int64)
    neighbours = Neighbours("add_remove", row_scale(d, sums.bits))
    if not sums.grams or sums.level is not None:  # one level's products, or deferred ones: no per-band products;
        # Sigma and the level's statistic formed when read (another level: refused by the sums, or a second pass)
        return CovProblem(n, d, r, None, None, exponents, counts, None, None, ridge, None, totals, unit_totals,
                          neighbours, sums)
    # x^ on the grid r 2^-(j + k): in units of r^p 2^-p(F + k), a band's sums are 2^p(F - j) of its integers
    moments = np.array([sums.in_units(sums.moments[j], 2, n, int(j) - GUARD[2]) for j in exponents]
                       ).reshape(len(exponents), d, d)
    directions = np.array([sums.directions[j].astype(float) * unit_step**2 / n for j in exponents]
                          ).reshape(len(exponents), d, d) if sums.with_directions else None
    sigma = moments.sum(axis=0) if len(exponents) else np.zeros((d, d))
    sigma = (sigma + sigma.T) / 2
    return CovProblem(n, d, r, sigma, None, exponents, counts, moments, directions,
                      ridge, None, totals, unit_totals, neighbours, sums)


def eigenvalues_back(values: np.ndarray, tau2: float) -> np.ndarray:
    """Released eigenvalues of S / (ñ + tr S / (K tau^2)) mapped back to those of S / ñ: lambda / (1 - sum lambda /
    (K tau^2)) (exact for the exact values; post-processing of the noisy ones; the divisor kept >= 1/2)."""
    shrink = 1 - float(np.sum(values)) / (EIGEN_TRACE_FACTOR * tau2)
    return np.asarray(values) / max(shrink, 0.5)
