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

from .banded import band_edges, bands_of
from .neighbours import Neighbours
from .problem import CovProblem, row_norms

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


def row_scale(d: int, bits: int = GRID_BITS) -> float:
    """A summed row's norm over its bound (rounding to the grid, and the float steps that clip, shift and scale it)."""
    return 1 + (d + 8) * UNIT_ROUNDOFF + math.sqrt(d) * 2.0 ** -(bits + 1)


class ExactBandSums:
    """Per band: the count and the exact integer sums of the rounded rows (module docstring). ``add`` a block of rows
    (finite; clipped to ``clip`` here), ``merge`` another's sums. Integer sums: any order, any blocks, same result."""

    def __init__(self, radius: float, bits: int = GRID_BITS, grams: bool = True, directions: bool = True):
        """``grams=False``: the sums of the rows and their directions only, no d x d products (a mean's pass).
        ``directions=False``: no d x d products of the directions, which only clipping levels m > 0 read (a line that
        never clips: one Gram product per band instead of two; issue 61)."""
        if not (np.isfinite(radius) and radius > 0):
            raise ValueError(f"radius must be a finite number > 0, got {radius!r}")
        self.radius, self.bits, self.n, self.d = float(radius), int(bits), 0, None
        self.grams = bool(grams)
        self.with_directions = bool(directions)
        # rows are scaled by 2^-e (exact) so the radius lies in [1/2, 1): no square of a row above the floor band
        # underflows, whatever the radius (a row's norm and direction stay exact to a few ulps)
        self._exponent = math.frexp(self.radius)[1]
        self._radius = math.ldexp(self.radius, -self._exponent)
        self.counts: dict[int, int] = {}
        self.moments: dict[int, np.ndarray] = {}
        self.directions: dict[int, np.ndarray] = {}
        self.totals: dict[int, np.ndarray] = {}
        self.unit_totals: dict[int, np.ndarray] = {}
        self._moments_at: dict[int, tuple] = {}  # clipped_moment's results by level (cleared when rows are added)

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

    def _add_chunk(self, X: np.ndarray, clip: float, shift) -> None:
        if shift is None:  # a row outside the radius never reaches the power-of-two scaling (it could overflow there)
            clip = min(clip, self.radius)
        if np.isfinite(clip):  # in the rows' own units (row_norms norms a finite row whose squares overflow)
            norms = row_norms(X)
            outside = norms > clip
            if outside.any():
                X = X.copy()
                X[outside] *= (clip / norms[outside])[:, None]
        e = self._exponent
        X = np.ldexp(X, -e)  # exact: the radius now in [1/2, 1), the rows inside it (up to rounding)
        if shift is not None:
            X = X - np.ldexp(np.asarray(shift, dtype=float), -e)
        radius = self._radius
        norms = row_norms(X)
        outside = norms > radius
        if outside.any():  # rounding (of the clip, or of a shifted row): onto the sphere
            X[outside] *= (radius / norms[outside])[:, None]
            norms = np.where(outside, radius, norms)
        bands = np.full(len(X), -1, dtype=np.int64)
        nonzero = norms > 0
        if nonzero.any():
            values = np.ascontiguousarray(norms[nonzero])
            out = np.empty(len(values), dtype=np.int64)
            bands_of(values, radius, band_edges(radius), out)
            bands[nonzero] = np.minimum(out, FLOOR_BAND)
        step = math.ldexp(1.0, self.bits)
        for j in np.unique(bands[nonzero]):
            index = np.flatnonzero(bands == j)
            rows = X[index]
            rounded = np.rint(rows * (math.ldexp(1.0, int(j) + self.bits) / radius))
            # directions serve levels m > j only, so never the floor band's rows (m <= FLOOR_BAND), whose norms may
            # have underflowed: theirs are left zero
            units = np.zeros_like(rows) if j == FLOOR_BAND else np.rint(rows / norms[index][:, None] * step)
            grams = (rounded.T @ rounded, units.T @ units if self.with_directions else _NO_GRAM) if self.grams \
                else (_NO_GRAM, _NO_GRAM)
            self._accumulate(int(j), len(index), *grams, rounded.sum(axis=0), units.sum(axis=0))
        self.n += len(X)

    def _accumulate(self, j: int, count: int, moment, direction, total, unit_total) -> None:
        self._moments_at.clear()
        values = [np.asarray(v).astype(np.int64) if not isinstance(v, np.ndarray) or v.dtype != object else v
                  for v in (moment, direction, total, unit_total)]
        if j not in self.counts:
            self.counts[j] = 0
            self.moments[j], self.directions[j], self.totals[j], self.unit_totals[j] = \
                (np.zeros_like(v, dtype=np.int64) for v in values)
        self.counts[j] += count
        if self.counts[j] > INT64_ROWS:  # beyond int64's room: exact Python integers
            for store in (self.moments, self.directions, self.totals, self.unit_totals):
                if store[j].dtype != object:
                    store[j] = store[j].astype(object)
        for store, value in zip((self.moments, self.directions, self.totals, self.unit_totals), values):
            if store[j].dtype == object:
                store[j] = store[j] + value.astype(object)
            else:
                store[j] += value

    def merge(self, other: "ExactBandSums") -> "ExactBandSums":
        if other.radius != self.radius or other.bits != self.bits or other.grams != self.grams \
                or other.with_directions != self.with_directions:
            raise ValueError("cannot merge exact sums of another radius, grid or kind")
        if other.d is not None and self.d is not None and other.d != self.d:
            raise ValueError(f"cannot merge sums of {other.d} columns into sums of {self.d}")
        for j in sorted(other.counts):
            self._accumulate(j, other.counts[j], other.moments[j], other.directions[j], other.totals[j],
                             other.unit_totals[j])
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

    def _level_sum(self, m: int, power: int) -> tuple[np.ndarray, float]:
        """The rows clipped to tau = r 2^-m, summed -- x x^T (power 2) or x (power 1) -- as exact integers in units of
        r^power 2^-power (m + k + GUARD): each band's integer sum times its power of two, or, for bands more than
        GUARD below tau (their rows' grids finer than the statistic needs), divided by it and rounded (each within
        half a unit of exact). Returns (the integers: int64 where every partial sum provably fits, else Python
        integers; the same values either way), the public bound on the rounding (units per entry: half a unit per
        band that can round, at most FLOOR_BAND + 1 of them)."""
        key = (m, power)
        if power == 2 and not self.grams:
            raise ValueError("these exact sums hold no d x d products (grams=False: a mean's pass)")
        if power == 2 and m > 0 and not self.with_directions and any(j < m for j in self.counts):
            raise ValueError(f"clipping at r 2^-{m} reads the directions' products, which these exact sums were made "
                             f"without (directions=False: a line that never clips)")
        if key in self._moments_at:
            return self._moments_at[key]
        bits, total_rows = self.bits, sum(self.counts.values())
        guard = GUARD[power]
        fits = total_rows * (2**bits + 1) ** power * 2 ** (power * guard) < INT64_SUMS  # (speed only: same result)
        total = np.zeros((self.d, self.d) if power == 2 else (self.d,), dtype=np.int64 if fits else object)
        for j in sorted(self.counts):
            if j < m:  # clipped onto tau: tau^p u^ u^^T 2^-pk = its integers times 2^(p GUARD) in these units
                values, shift = (self.directions[j] if power == 2 else self.unit_totals[j]), power * guard
            else:  # x^ on r 2^-(j + k): its integers times 2^(p (m + GUARD - j))
                values, shift = (self.moments[j] if power == 2 else self.totals[j]), power * (m + guard - j)
            values = values if fits else values.astype(object)
            if shift >= 0:
                total = total + (values << shift if fits else values * (1 << shift))
            elif fits and -shift >= 61:  # |values| < 2^60 (INT64_SUMS): rounds to 0
                continue
            else:  # rounded to the nearest unit (ties up): within half a unit
                total = total + ((values + (1 << (-shift - 1))) >> -shift)
        self._moments_at[key] = (total, max(0, FLOOR_BAND - m - guard) / 2)  # at most that many bands round
        return self._moments_at[key]

    def clipped_moment(self, m: int):
        """(S of the rows clipped to r 2^-m in units of r^2 4^-(m + k + GUARD) (``_level_sum``), its trace, the
        rounding's public bound per entry in those units)."""
        m = self._level(m)
        total, slack = self._level_sum(m, 2)
        return total, int(sum(int(total[i, i]) for i in range(self.d))), slack

    def in_units(self, values, power: int, divisor: float, level: int):
        """Exact integers (an array, or one) in units of r^power 2^-power (level + k + GUARD), divided by
        ``divisor``, as floats: the radius's power-of-two part applied last by ldexp (exact), so nothing underflows
        on the way; two roundings (values times r'^power, r' the radius in [1/2, 1), then / divisor) after the
        conversion's one."""
        values = np.asarray(values).astype(float) * (self._radius**power / divisor)
        return np.ldexp(values, power * (self._exponent - level - self.bits - GUARD[power]))

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
        return (out + out.T) / 2, 5 * UNIT_ROUNDOFF * self._tau2(m) + slack * self._unit(m, 2) / int(n_public)

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
        return (out + out.T) / 2, 12 * UNIT_ROUNDOFF * bound, bound, rounding

    def trace(self, m: int, n_public: int) -> tuple[float, float]:
        """(tr Sigma of the clipped rows, clipped to [0, tau^2], its float error)."""
        level = self._level(m)
        _, trace, slack = self.clipped_moment(level)
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
    if not sums.grams:
        raise ValueError("a problem needs the rows' d x d products: these exact sums were made without (grams=False)")
    n, d, r = int(n_public), sums.d, sums.radius
    exponents = np.array(sorted(sums.counts), dtype=np.int64)
    unit_step = math.ldexp(1.0, -sums.bits)
    # x^ on the grid r 2^-(j + k): in units of r^p 2^-p(F + k), a band's sums are 2^p(F - j) of its integers
    moments = np.array([sums.in_units(sums.moments[j], 2, n, int(j) - GUARD[2]) for j in exponents]
                       ).reshape(len(exponents), d, d)
    directions = np.array([sums.directions[j].astype(float) * unit_step**2 / n for j in exponents]
                          ).reshape(len(exponents), d, d) if sums.with_directions else None
    totals = np.array([sums.in_units(sums.totals[j], 1, n, int(j) - GUARD[1]) for j in exponents]
                      ).reshape(len(exponents), d)
    unit_totals = np.array([sums.unit_totals[j].astype(float) * unit_step / n for j in exponents]
                           ).reshape(len(exponents), d)
    counts = np.array([sums.counts[j] for j in exponents], dtype=np.int64)
    sigma = moments.sum(axis=0) if len(exponents) else np.zeros((d, d))
    sigma = (sigma + sigma.T) / 2
    return CovProblem(n, d, r, sigma, None, exponents, counts, moments, directions,
                      ridge, None, totals, unit_totals, Neighbours("add_remove", row_scale(d, sums.bits)), sums)


def eigenvalues_back(values: np.ndarray, tau2: float) -> np.ndarray:
    """Released eigenvalues of S / (ñ + tr S / (K tau^2)) mapped back to those of S / ñ: lambda / (1 - sum lambda /
    (K tau^2)) (exact for the exact values; post-processing of the noisy ones; the divisor kept >= 1/2)."""
    shrink = 1 - float(np.sum(values)) / (EIGEN_TRACE_FACTOR * tau2)
    return np.asarray(values) / max(shrink, 0.5)
