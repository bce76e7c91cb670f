"""Which datasets a problem's releases are calibrated for, and the sensitivities that follow (issue 59;
docs/privacy.md, "Each line at its add/remove sensitivity").

- ``REPLACE_ONE``: the papers' model; n is public and a row may be replaced by any other of the ball. Adding x and
  removing y moves upper(X^T X) by ||x x^T - y y^T||_F <= sqrt(2) r^2 (Dong Lemma 10), its eigenvalues by 2 r^2 in
  l1 (Weyl: one rank-one step up, one down).
- ``add_remove(scale)``: a row is added or removed; the sums run over every row and are divided by the released
  count ñ (post-processing: ñ is public once released). Adding x moves upper(X^T X) by ||x x^T||_F = ||x||^2 <= r^2,
  its l1 norm by (||x||_1^2 + ||x||_2^2) / 2 <= (d + 1) r^2 / 2, and every eigenvalue up (Weyl), by ||x||^2 in all
  (l1), ||x x^T||_F in l2 (Hoffman-Wielandt). ``scale`` >= 1 bounds a row's norm as summed over the ball's radius
  (1 for float sums; a little more for rows rounded to a grid before an exact sum: mechanisms/exact_sums.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

UNITS = ("replace_one", "add_remove")


@dataclass(frozen=True)
class Neighbours:
    unit: str = "replace_one"
    scale: float = 1.0  # add_remove: a summed row's norm is at most scale * its bound (rows rounded to a grid)

    def __post_init__(self):
        if self.unit not in UNITS:
            raise ValueError(f"neighbours must be 'replace_one' or 'add_remove', got {self.unit!r}")
        if not (self.scale >= 1 and math.isfinite(self.scale)):
            raise ValueError(f"a row's norm scale must be a finite number >= 1, got {self.scale!r}")

    @property
    def add_remove(self) -> bool:
        return self.unit == "add_remove"

    def covariance_l2(self, row_bound: float, n: int) -> float:
        """l2 sensitivity of upper(sum x x^T / n) for rows of norm <= row_bound."""
        if self.add_remove:
            return (self.scale * row_bound) ** 2 / n
        return math.sqrt(2) * row_bound**2 / n

    def covariance_l1(self, row_bound: float, n: int, d: int) -> float:
        """l1 sensitivity of upper(sum x x^T / n): replace-one sqrt(2) d r^2 / n (Dong Lemma 12, as calibrated there);
        add/remove (||x||_1^2 + ||x||^2) / 2 <= (d + 1) r^2 / 2, / n."""
        if self.add_remove:
            return (d + 1) / 2 * (self.scale * row_bound) ** 2 / n
        return math.sqrt(2) * d * row_bound**2 / n

    def eigenvalues_l2(self, row_bound: float, n: int) -> float:
        """l2 sensitivity of the eigenvalues of sum x x^T / n (Hoffman-Wielandt: at most the matrix's Frobenius)."""
        return self.covariance_l2(row_bound, n)

    def eigenvalues_l1(self, row_bound: float, n: int) -> float:
        """l1 sensitivity of the eigenvalues: replace-one 2 r^2 / n (Dong Lemma 13); add/remove ||x||^2 / n (a
        rank-one PSD step moves every eigenvalue up, by tr(x x^T) in all)."""
        if self.add_remove:
            return (self.scale * row_bound) ** 2 / n
        return 2 * row_bound**2 / n

    def score_range(self) -> tuple[float, float]:
        """How far a neighbour moves an eigenvector sampler's score u^T C u (rows in the unit ball): [-1, 1] under
        replace-one, [0, scale^2] (one-sided: adding a row only raises it) under add/remove."""
        return (0.0, self.scale**2) if self.add_remove else (-1.0, 1.0)

    def exponent_factor(self) -> float:
        """The sampler's exponent relative to replace-one's: the exponential mechanism is eps-DP at exponent
        eps / w, w the width of the interval its score moves in (two-sided [-D, D]: eps / 2D; one-sided [0, D]:
        eps / D, McSherry & Talwar 2007, monotone utilities) -- so 2 / w: 2 / scale^2 under add/remove, 1 under
        replace-one."""
        low, high = self.score_range()
        return 2.0 / (high - low)


REPLACE_ONE = Neighbours()
ADD_REMOVE = Neighbours("add_remove")
