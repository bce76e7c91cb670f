"""What every mechanism may read about a dataset, computed once and shared by all trials.

Mechanisms never see the raw rows: everything the Dong et al. mechanisms need is a function of

- Sigma = X^T X / n (the target, Dong et al. §1) and its eigenvalues, and
- per dyadic norm band j (rows with r 2^-(j+1) < ||x|| <= r 2^-j, Dong et al. §5.2 "Count_s"):
  the row count, S_j = sum x x^T / n and T_j = sum x x^T / (n ||x||^2).

Clipping every row to tau = r 2^-m then gives exactly  Sigma(Clip(X, tau)) = sum_{j>=m} S_j +
tau^2 sum_{j<m} T_j,  so AdaptiveCov's clipped covariances cost O(#bands d^2) instead of O(n d^2).
The statistics are small (no n x d array), so shipping them to worker processes is cheap.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .neighbours import ADD_REMOVE, REPLACE_ONE, Neighbours
from .banded import FINE, MORE_BANDS, band_block, band_edges, bands_of, column_addresses, scratch, squares_by_row

_NORM_SLACK = 1e-9  # relative tolerance for rows that sit on the ball's surface
NORM_BLOCK = 2**20  # entries of X per block in row_norms (8 MB)
TILE_ROWS = 8192  # add_columns norms, sorts and sums a tile of at most this many rows at a time,
TILE_BYTES = 1 << 20  # of about this many bytes (in cache)


def row_norms(X: np.ndarray) -> np.ndarray:
    """Each row's l2 norm, its squares summed in column order (banded.squares_by_row: the same bits as the streamed
    pass's norms, so every path puts a row in the same band), a block of rows at a time: no n x d temporary."""
    X = np.asarray(X, dtype=float)
    norms = np.empty(len(X))
    step = max(1, NORM_BLOCK // max(X.shape[1], 1))
    with np.errstate(over="ignore"):
        for start in range(0, len(X), step):
            squares_by_row(X[start:start + step], norms[start:start + step])
        np.sqrt(norms, out=norms)
    overflowed = np.flatnonzero(np.isinf(norms))
    if len(overflowed):  # squares beyond float64 (or an inf entry): a finite row's norm by scaling it first
        overflowed = overflowed[np.all(np.isfinite(X[overflowed]), axis=1)]
        rows = X[overflowed]
        largest = np.abs(rows).max(axis=1)
        norms[overflowed] = largest * np.sqrt(np.add.reduce((rows / largest[:, None]) ** 2, axis=1))
    return norms


def clip_rows(X: np.ndarray, radius: float, norms: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """(rows scaled onto the ``radius`` sphere where they lie outside it, how many were) -- Clip(x, r) =
    min(1, r/||x||) x; a copy only when some row moves."""
    norms = row_norms(X) if norms is None else norms
    outside = norms > radius
    if outside.any():
        X = X.copy()
        X[outside] *= (radius / norms[outside])[:, None]
    return X, int(outside.sum())


def validate_rows(X, radius: float) -> np.ndarray:
    """Return X as a float64 n x d array, or raise a clear error (NaN/inf, shape, norm bound)."""
    return _checked_rows(X, radius)[0]


def _checked_rows(X, radius: float) -> tuple[np.ndarray, np.ndarray]:
    """validate_rows, and the rows' norms it computed."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"data must be a 2-D array (n rows x d columns), got shape {X.shape}")
    n, d = X.shape
    if n < 1 or d < 1:
        raise ValueError(f"data must have at least one row and one column, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(_not_finite(*np.argwhere(~np.isfinite(X))[0]))
    if not (np.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a finite number > 0, got {radius!r}")
    norms = row_norms(X)
    worst = int(np.argmax(norms))
    if norms[worst] > radius * (1 + _NORM_SLACK):
        raise ValueError(_outside(worst, norms[worst], radius))
    return X, norms


def _not_finite(row: int, column: int) -> str:
    return f"data contains NaN or inf (first at row {row}, column {column})"


def _outside(row: int, norm: float, radius: float) -> str:
    shown = f"{norm:.6g}" if float(f"{norm:.6g}") > radius else repr(float(norm))  # every digit at the surface
    return (f"row {row} has norm {shown} > radius {radius:g}: the mechanisms' privacy proofs need every row "
            f"inside the ball of radius {radius:g}; rescale or clip the data")


@dataclass(frozen=True)
class CovProblem:
    """Sufficient statistics of X for covariance mechanisms (rows in the ball of radius ``radius``)."""

    n: int
    d: int
    radius: float
    # X^T X / n (the ``sigma`` property); None: an exact problem whose Gram products wait for the level a release
    # reads (exact_problem of deferred sums: mechanisms/exact_sums.py, issue 61), computed from them on first read
    given_sigma: np.ndarray | None
    # of sigma, descending (the ``eigenvalues`` property); None: computed on first read (exact_problem: hardened releases
    # read the exact sums, so an eager O(d^3) decomposition of the float Sigma was paid for nothing; issue 61)
    given_eigenvalues: np.ndarray | None
    # Per-band statistics; None for a problem built from Sigma alone (from_sigma), which has no rows.
    band_exponents: np.ndarray | None  # int j of each non-empty band, ascending (largest norms first)
    band_counts: np.ndarray | None  # rows per band
    band_moments: np.ndarray | None  # S_j, shape (bands, d, d)
    band_directions: np.ndarray | None  # T_j, shape (bands, d, d)
    ridge: object = None  # a regression.RidgeTask when the experiment evaluates ridge models
    # Raw (unclipped) rows for mechanisms that need no norm bound (mechanisms/stable.py); None unless the
    # dataset provides them (Data.rows_unbounded), so other experiments never carry rows.
    rows: np.ndarray | None = None
    # Per band, sum x / n and sum x / ||x|| / n (shape (bands, d)): the mean of the rows clipped at any
    # dyadic radius (``clipped_mean``), for private centring from the sums alone (mechanisms/pipeline.py).
    band_sums: np.ndarray | None = None
    band_unit_sums: np.ndarray | None = None
    # which neighbours the releases are calibrated for (mechanisms/neighbours.py): replace-one (n public), or add/remove
    # (every row summed, n = the released count ñ, n itself private)
    neighbours: Neighbours = REPLACE_ONE
    # add/remove with hardened numerics: the rows' exact integer sums (mechanisms/exact_sums.py), which every hardened
    # release reads instead of the float statistics above (whose float error grows with the private row count)
    exact: object = None

    @classmethod
    def from_rows(cls, X, radius: float = 1.0, ridge=None, rows=None) -> "CovProblem":
        X = np.asarray(X, dtype=float)
        if rows is not None:
            rows = np.asarray(rows, dtype=float)
            if rows.shape != X.shape or not np.all(np.isfinite(rows)):
                raise ValueError(f"rows must be a finite array of the shape of X {X.shape}, got {rows.shape}")
        return BandSums(radius).add(X).problem(ridge=ridge, rows=rows)

    @classmethod
    def from_sigma(cls, sigma, n: int, radius: float = 1.0) -> "CovProblem":
        """A problem known only through Sigma = X^T X / n of n rows in the ``radius`` ball (e.g. a
        simulated statistic, data/sparse.py). Mechanisms that need the rows' norm bands (clipping,
        AdaptiveCov) refuse it (``require_bands``); the others see exactly what from_rows gives them."""
        sigma = np.asarray(sigma, dtype=float)
        if sigma.ndim != 2 or sigma.shape[0] != sigma.shape[1] or not np.all(np.isfinite(sigma)):
            raise ValueError(f"sigma must be a finite square matrix, got shape {sigma.shape}")
        if isinstance(n, bool) or int(n) != n or n < 1:
            raise ValueError(f"n must be an integer >= 1, got {n!r}")
        if not (np.isfinite(radius) and radius > 0):
            raise ValueError(f"radius must be a finite number > 0, got {radius!r}")
        sigma = (sigma + sigma.T) / 2
        eigenvalues = np.linalg.eigvalsh(sigma)[::-1].copy()
        return cls(int(n), sigma.shape[0], float(radius), sigma, eigenvalues, None, None, None, None)

    @classmethod
    def from_raw_rows(cls, rows, ridge=None) -> "CovProblem":
        """A problem of raw rows alone, with no norm bound (a line that needs nothing else: TukeyEM). Its Sigma and
        eigenvalues are NaN: a mechanism that reads them instead of the rows fails loudly."""
        rows = np.asarray(rows, dtype=float)
        if rows.ndim != 2 or len(rows) < 1:
            raise ValueError(f"rows must be a 2-D array with at least one row, got {rows.ndim} dimension(s)"
                             if rows.ndim != 2 else "rows must hold at least one row")
        d = rows.shape[1]
        return cls(len(rows), d, 1.0, np.full((d, d), np.nan), np.full(d, np.nan), None, None, None, None,
                   ridge=ridge, rows=rows)

    @property
    def raw_only(self) -> bool:
        """Built by ``from_raw_rows``: rows with no bound and no sums."""
        return self.band_exponents is None and self.rows is not None and bool(np.isnan(self.sigma[0, 0]))

    def require_bands(self, what: str) -> None:
        if self.band_exponents is None:
            raise ValueError(f"{what} needs the rows' norm bands, but this problem was built from the "
                             f"statistic Sigma alone (CovProblem.from_sigma, e.g. statistic=wishart): "
                             f"use a dataset of rows")

    @cached_property
    def unit_gram_eigh(self) -> tuple[np.ndarray, np.ndarray]:
        """eigh (values ascending, vectors) of C = X^T X for the rows rescaled into the unit ball
        (sigma n / r^2), where Amin et al.'s Algorithm 1 starts (EMCov, AD, IT-U, KT): computed on
        first use and shared by every release on this problem (read-only)."""
        values, vectors = np.linalg.eigh(self.sigma * (self.n / self.radius**2))
        values.flags.writeable = vectors.flags.writeable = False
        return values, vectors

    @cached_property
    def sigma(self) -> np.ndarray:
        """X^T X / n: as given, or (deferred exact sums) the exact level-0 statistic, on first read."""
        if self.given_sigma is not None:
            return self.given_sigma
        if self.exact is None:
            raise ValueError("this problem has no Sigma and no exact sums to form it from")
        return self.exact.sigma(0, self.n)[0]

    @cached_property
    def eigenvalues(self) -> np.ndarray:
        """Sigma's eigenvalues, descending: as given, or computed on first read."""
        if self.given_eigenvalues is not None:
            return self.given_eigenvalues
        return np.linalg.eigvalsh(self.sigma)[::-1].copy()

    @cached_property
    def shared(self) -> dict:
        """Deterministic intermediate results a mechanism keeps for later releases on this problem
        (a mechanism's own keys; e.g. stable_gsampling's score and weighted covariance)."""
        return {}

    @property
    def trace(self) -> float:
        return float(np.trace(self.sigma))

    def tau(self, m: int) -> float:
        """The dyadic clipping threshold r 2^-m."""
        return float(np.ldexp(self.radius, -int(m)))

    def clipped_sigma(self, m: int) -> np.ndarray:
        """Sigma(Clip(X, r 2^-m)), exact (Dong et al. §5.1, Clip(x, tau) = min(1, tau/||x||) x)."""
        if m <= 0:
            return self.sigma
        self.require_bands("clipping")
        if self.band_moments is None and self.exact is not None:  # deferred exact sums: the level's own statistic
            return self.exact.sigma(m, self.n)[0]
        kept = self.band_exponents >= m
        tau2 = self.tau(m) ** 2
        self._require_directions(m, kept)
        return self.band_moments[kept].sum(axis=0) + tau2 * self.band_directions[~kept].sum(axis=0)

    def _require_band_moments(self, what: str) -> None:
        if self.band_moments is None:
            raise ValueError(f"{what} needs the rows' per-band products, which this problem's deferred exact sums do "
                             f"not hold (they form one clipping level's statistic when a release reads it: "
                             f"mechanisms/exact_sums.py)")

    def _require_directions(self, m: int, kept: np.ndarray) -> None:
        if self.band_directions is None and not kept.all():
            raise ValueError(f"clipping at r 2^-{m} needs the rows' directions' products, which this problem was built "
                             f"without (a line that never clips: mechanisms/exact_sums.py directions=False)")

    def clipped_mean(self, m: int) -> np.ndarray:
        """The mean of Clip(X, r 2^-m), exact from the band sums."""
        if self.band_sums is None:
            raise ValueError("this problem has no band sums of the rows (built before they existed, or from Sigma)")
        kept = self.band_exponents >= max(int(m), 0)
        return self.band_sums[kept].sum(axis=0) + self.tau(max(int(m), 0)) * self.band_unit_sums[~kept].sum(axis=0)

    def clipped_problem(self, m: int) -> "CovProblem":
        """The CovProblem of Clip(X, tau = r 2^-m) in the tau-ball, exact from the band statistics
        (``clipped_sigma``, ``clipped_counts``): the bands at or below tau keep their sums (exponent
        j - m); the rows above it land on the sphere and join band m: moments tau^2 sum T_j, directions
        sum T_j, sums tau sum x/||x|| / n."""
        m = int(m)
        if m <= 0:
            return self
        self._require_band_moments("a clipped problem")
        exponents, counts = self.clipped_counts(m)
        kept, tau = self.band_exponents >= m, self.tau(m)
        self._require_directions(m, kept)
        top = np.zeros((self.d, self.d)) if self.band_directions is None else self.band_directions[~kept].sum(axis=0)
        top_units = self.band_unit_sums[~kept].sum(axis=0)

        def with_clipped(values: np.ndarray, clipped: np.ndarray) -> np.ndarray:
            if kept.all():
                return values
            if len(values) and self.band_exponents[kept][0] == m:  # band m holds rows already
                values = values.copy()
                values[0] += clipped
                return values
            return np.concatenate([[clipped], values])

        sigma = self.clipped_sigma(m)
        sigma = (sigma + sigma.T) / 2
        return CovProblem(self.n, self.d, tau, sigma, np.linalg.eigvalsh(sigma)[::-1].copy(), exponents - m, counts,
                          with_clipped(self.band_moments[kept], tau**2 * top),
                          None if self.band_directions is None else with_clipped(self.band_directions[kept], top),
                          self.ridge, None,
                          with_clipped(self.band_sums[kept], tau * top_units),
                          with_clipped(self.band_unit_sums[kept], top_units), self.neighbours)

    def resized(self, n_public: int, dropped: np.ndarray, rows: np.ndarray | None = None) -> "CovProblem":
        """This problem without the rows ``dropped`` and padded with zero rows to ``n_public`` (mechanisms/units.py),
        from its own sums: the dropped rows' band sums subtracted, every sum divided by n_public -- O(dropped d^2)
        instead of a rebuild's O(n d^2). For idealized numerics: a subtraction and a rescaling round once more than
        ``BandSums.problem(n_public=...)``, outside the hardened releases' float-error bounds (they rebuild).
        ``rows``: the kept rows, padded with zero rows here (None: none kept)."""
        self.require_bands("resizing")
        self._require_band_moments("resizing")
        if self.band_sums is None:
            raise ValueError("this problem has no band sums of the rows (built before they existed, or from Sigma)")
        n_kept = self.n - len(dropped)
        if not 1 <= n_kept <= int(n_public):
            raise ValueError(f"{n_kept} rows left for a public count of {n_public}")
        n_public = int(n_public)
        stats = [dict(zip(self.band_exponents.tolist(), values * self.n)) for values in
                 (self.band_moments, self.band_directions, self.band_sums, self.band_unit_sums)]
        counts = dict(zip(self.band_exponents.tolist(), self.band_counts.tolist()))
        if len(dropped):
            gone = BandSums(self.radius).add(dropped)
            for j, count in gone.counts.items():
                counts[j] -= count
                for stat, values in zip(stats, (gone.moments, gone.directions, gone.totals, gone.unit_totals)):
                    stat[j] = stat[j] - values[j]
        exponents = np.array(sorted(j for j, c in counts.items() if c > 0), dtype=np.int64)
        moments, directions, sums, unit_sums = (
            np.array([stat[j] / n_public for j in exponents]).reshape((len(exponents),) + shape)
            for stat, shape in zip(stats, ((self.d, self.d), (self.d, self.d), (self.d,), (self.d,))))
        sigma = moments.sum(axis=0) if len(exponents) else np.zeros((self.d, self.d))
        sigma = (sigma + sigma.T) / 2
        if rows is not None:
            rows = np.vstack([rows, np.zeros((n_public - len(rows), self.d))])
        return CovProblem(n_public, self.d, self.radius, sigma, np.linalg.eigvalsh(sigma)[::-1].copy(), exponents,
                          np.array([counts[j] for j in exponents], dtype=np.int64), moments, directions, self.ridge,
                          rows, sums, unit_sums)

    def clipped_counts(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Band exponents and counts of Clip(X, r 2^-m): bands above m merge into band m."""
        self.require_bands("clipping")
        kept = self.band_exponents >= m
        exponents = self.band_exponents[kept]
        counts = self.band_counts[kept]
        clipped = int(self.band_counts[~kept].sum())
        if clipped:
            if len(exponents) and exponents[0] == m:
                counts = counts.copy()
                counts[0] += clipped
            else:
                exponents = np.concatenate([[m], exponents])
                counts = np.concatenate([[clipped], counts])
        return exponents, counts


class BandSums:
    """The sums behind a CovProblem, added a block of rows at a time and mergeable (a tree reduction
    over partitions, e.g. Dask's): n, and per dyadic norm band its count, sum x x^T and sum x x^T /
    ||x||^2. ``add`` checks each block (NaN/inf, norms inside the ball; rows are numbered across
    blocks). One block gives exactly the bits of the in-memory build; several agree with it to
    rounding (sums in another order)."""

    def __init__(self, radius: float):
        if not (np.isfinite(radius) and radius > 0):
            raise ValueError(f"radius must be a finite number > 0, got {radius!r}")
        self.radius, self.n, self.d = float(radius), 0, None
        self.counts: dict[int, int] = {}
        self.moments: dict[int, np.ndarray] = {}
        self.directions: dict[int, np.ndarray] = {}
        self.totals: dict[int, np.ndarray] = {}  # sum x
        self.unit_totals: dict[int, np.ndarray] = {}  # sum x / ||x||

    def add(self, X, norms: np.ndarray | None = None) -> "BandSums":
        """Add a block of rows; ``norms``: their norms (row_norms), when the caller has them already."""
        if self.d is not None and np.ndim(X) == 2 and np.shape(X)[1] != self.d:
            raise ValueError(f"a block of {np.shape(X)[1]} columns after blocks of {self.d}")
        known = norms is not None and isinstance(X, np.ndarray) and X.dtype == float and X.ndim == 2 \
            and np.all(norms <= self.radius * (1 + _NORM_SLACK))  # False for NaN: the full check says where
        if not known:
            try:
                X, norms = _checked_rows(X, self.radius)
            except ValueError as err:  # number the row across blocks
                raise ValueError(renumber_rows(str(err), self.n)) from None
        self.d = X.shape[1]
        X = np.ascontiguousarray(X)  # rows are taken below: 8x faster from a row-major block (same values)
        nonzero = norms > 0
        bands = np.full(len(X), -1)
        bands[nonzero] = dyadic_band(norms[nonzero], self.radius)
        ones = np.ones(len(X))
        for j in np.flatnonzero(np.bincount(bands[nonzero])):  # the non-empty bands, ascending
            index = np.flatnonzero(bands == j)
            rows = X.take(index, axis=0)  # a copy (faster than a boolean mask): scaled to unit rows below
            moment, total = rows.T @ rows, ones[:len(rows)] @ rows  # column sums by BLAS: 2.5x sum(axis=0)
            rows /= norms.take(index)[:, None]
            self._accumulate(int(j), len(rows), moment, rows.T @ rows, total, ones[:len(rows)] @ rows)
        self.n += len(X)
        return self

    def add_columns(self, columns, clip: float = np.inf, divisor: float = 1.0) -> tuple[float, int]:
        """Add a block of rows given as its columns: a d x m array, or d arrays of m values (a streamed block:
        Parquet's own buffers, read in place), each row clipped to norm ``clip`` and then divided by ``divisor``;
        checked like ``add`` (NaN/inf, inside the ball; squares beyond float64 refused too), and a refused row
        leaves the sums as they were. mechanisms/banded.py's band_block, one compiled call (again only when the
        block has more bands than the accumulators hold). Returns the block's largest norm before clipping and
        how many rows were clipped. Agrees with ``add`` on the same rows to rounding (sums in another order, the
        same bits on one machine), except that a clipped row's norm is taken as exactly ``clip``: its band is
        decided on that, where clip_rows' rounding can leave it an ulp above."""
        columns = _column_list(columns)
        d, m = len(columns), len(columns[0])
        if self.d is not None and d != self.d:
            raise ValueError(f"a block of {d} columns after blocks of {self.d}")
        self.d = d
        if not m:  # an empty block (e.g. a filtered Dask partition) adds nothing
            return 0.0, 0
        addresses, strides = column_addresses(columns)
        edges = band_edges(self.radius)
        tile = max(1, min(m, TILE_ROWS, TILE_BYTES // (8 * d)))
        padded = -(-d // 4) * 4  # gram_add's rows: a multiple of 4
        work = [scratch(name, (tile,)) for name in ("norms", "factors", "inverse", "ordered")]
        work += [scratch(name, (tile,), np.int64) for name in ("bands", "place")]
        work += [np.empty(len(edges), np.int64)]  # a tile's counts
        rows, units = scratch("rows", (padded, tile)), scratch("units", (padded, tile))
        rows[d:], units[d:] = 0.0, 0.0
        slots, used = np.full(len(edges), -1, np.int64), np.zeros(1, np.int64)
        sums = _band_slots(4, padded, d)
        largest, clipped, start = 0.0, 0, 0
        while True:
            status, row, part_largest, part_clipped = band_block(
                addresses, strides, m, start, tile, float(clip), float(divisor), self.radius,
                self.radius * (1 + _NORM_SLACK), edges, *work, rows, units, slots, used, *sums)
            largest, clipped, start = max(largest, part_largest), clipped + part_clipped, row
            if status == FINE:
                break
            if status == MORE_BANDS:  # room for twice as many bands, from the tile at ``row`` on
                sums = _band_slots(2 * len(sums[0]), padded, d, sums)
                continue
            x = np.array([column[row] for column in columns])  # refused: what is wrong, numbered in the table
            raise ValueError(renumber_rows(_bad_row(x, clip, divisor, self.radius), self.n + row))
        bands, counts, moments, directions, totals, unit_totals = (values[:used[0]] for values in sums)
        for slot in np.argsort(bands):  # ascending bands
            self._accumulate(int(bands[slot]), int(counts[slot]), moments[slot, :d, :d].copy(),
                             directions[slot, :d, :d].copy(), totals[slot].copy(), unit_totals[slot].copy())
        self.n += m
        return float(largest), int(clipped)

    def _accumulate(self, j: int, count: int, moment: np.ndarray, direction: np.ndarray, total: np.ndarray,
                    unit_total: np.ndarray) -> None:
        if j in self.counts:
            self.counts[j] += count
            self.moments[j] += moment
            self.directions[j] += direction
            self.totals[j] += total
            self.unit_totals[j] += unit_total
        else:
            self.counts[j], self.moments[j], self.directions[j] = count, moment, direction
            self.totals[j], self.unit_totals[j] = total, unit_total

    def merge(self, other: "BandSums") -> "BandSums":
        """Both blocks' sums in this one (the same radius); returns self."""
        if other.radius != self.radius:
            raise ValueError(f"cannot merge sums for radius {other.radius:g} into radius {self.radius:g}")
        if other.d is not None and self.d is not None and other.d != self.d:
            raise ValueError(f"cannot merge sums of {other.d} columns into sums of {self.d}")
        for j in sorted(other.counts):
            self._accumulate(j, other.counts[j], other.moments[j].copy(), other.directions[j].copy(),
                             other.totals[j].copy(), other.unit_totals[j].copy())
        self.n += other.n
        self.d = self.d if self.d is not None else other.d
        return self

    def problem(self, ridge=None, rows=None, n_public: int | None = None, native: bool = False) -> CovProblem:
        """The CovProblem of the rows added. ``n_public`` (add/remove, mechanisms/units.py): the released count
        ñ >= n; the problem is then that of these rows and ñ - n zero rows (every sum divided by ñ: zero rows
        add nothing to any sum and belong to no norm band), and its ``n`` is ñ. ``native``: every row's sums divided
        by the released count ñ = ``n_public`` whatever n is, for releases at their add/remove sensitivity
        (mechanisms/neighbours.py)."""
        if self.n == 0 or self.d is None:
            raise ValueError("data must have at least one row and one column, got no rows")
        n, d = self.n, self.d
        if native:
            n = int(n_public)
        elif n_public is not None:
            if int(n_public) < n:
                raise ValueError(f"cannot pad {n} rows to {n_public}: drop rows first (units.resized_drop)")
            n = int(n_public)
            if rows is not None:
                rows = np.vstack([rows, np.zeros((n - len(rows), d))])
        exponents = np.array(sorted(self.counts), dtype=np.int64)
        moments = np.empty((len(exponents), d, d))
        directions = np.empty((len(exponents), d, d))
        for k, j in enumerate(exponents):
            moments[k] = self.moments[j] / n
            directions[k] = self.directions[j] / n
        counts = np.array([self.counts[j] for j in exponents], dtype=np.int64)
        sums = np.array([self.totals[j] / n for j in exponents]).reshape(len(exponents), d)
        unit_sums = np.array([self.unit_totals[j] / n for j in exponents]).reshape(len(exponents), d)
        sigma = moments.sum(axis=0) if len(exponents) else np.zeros((d, d))
        sigma = (sigma + sigma.T) / 2
        eigenvalues = np.linalg.eigvalsh(sigma)[::-1].copy()
        return CovProblem(n, d, self.radius, sigma, eigenvalues, exponents, counts, moments, directions, ridge,
                          rows, sums, unit_sums, ADD_REMOVE if native else REPLACE_ONE)


def _band_slots(capacity: int, padded: int, d: int, kept=()) -> list[np.ndarray]:
    """band_block's accumulators for ``capacity`` bands (band, count, sum x x^T and x x^T / ||x||^2 as padded x
    padded, sum x and x / ||x||), holding the ``kept`` ones' values in their first slots."""
    grown = [np.empty(capacity, np.int64), np.empty(capacity, np.int64), np.empty((capacity, padded, padded)),
             np.empty((capacity, padded, padded)), np.empty((capacity, d)), np.empty((capacity, d))]
    for new, old in zip(grown, kept):
        new[:len(old)] = old
    return grown


def _column_list(columns) -> list[np.ndarray]:
    """A block's columns as d 1-D float64 arrays that band_block can read in place (the arrays themselves, or
    views of a d x m array's rows); a column is copied only when it is not float64 or not evenly strided."""
    arrays = [np.asarray(c) for c in columns]
    if not arrays or any(a.ndim != 1 or len(a) != len(arrays[0]) for a in arrays):
        raise ValueError(f"a block of columns must be d >= 1 arrays of the same length, got shapes "
                         f"{[a.shape for a in arrays[:3]]}{'...' if len(arrays) > 3 else ''}")
    return [a if a.dtype == np.float64 and a.strides[0] > 0 and a.strides[0] % 8 == 0 else
            np.ascontiguousarray(a, dtype=np.float64) for a in arrays]


def _bad_row(x: np.ndarray, clip: float, divisor: float, radius: float) -> str:
    """What is wrong with a row pass 1 refused (numbered 0, for renumber_rows): a NaN/inf cell, squares beyond
    float64, or a norm outside the ball once clipped and divided."""
    if not np.all(np.isfinite(x)):
        return _not_finite(0, int(np.flatnonzero(~np.isfinite(x))[0]))
    with np.errstate(over="ignore"):
        norm = float(np.sqrt(np.sum(x * x)))
    if not np.isfinite(norm):
        return (f"row 0 has entries up to {np.abs(x).max():.3g}, whose squares exceed float64: rescale the data "
                f"before it is summed")
    return _outside(0, min(norm, clip) / divisor, radius)


ROW_NUMBER = re.compile(r"(first at row |^row )(\d+)")  # where a row-numbered error names its row


def renumber_rows(message: str, offset: int) -> str:
    """A row-numbered error of one block, numbered in the whole table (offset: rows before the block)."""
    if not offset:
        return message
    return ROW_NUMBER.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + offset}", message)


def dyadic_band(norms: np.ndarray, radius: float) -> np.ndarray:
    """j >= 0 with r 2^-(j+1) < norm <= r 2^-j (0 above r), decided by exact comparisons (norm > 0): the band
    routine of every path (banded.bands_of)."""
    norms = np.ascontiguousarray(norms, dtype=float)
    out = np.empty(len(norms), dtype=np.int64)
    bands_of(norms, float(radius), band_edges(float(radius)), out)
    return out
