"""Issue 54's membership attack, from the estimators' public output only.

PrivateCovariance(mechanism="gauss", budget=ZCDP(0.5), radius=1.0, centering="private") fitted on 809 rows of zeros
and on 810: the data say nothing, only n differs. The event: "location_[0] is not a multiple of the 809-row grid"
(the grid the 809-row fit's ledger names for its centre; under replace-one every 809-row release lies on it).

(a) privacy_unit="replace_one" (n public, the papers' model): the event never happens on 809 rows and happens on
    about half of the 810-row fits: the known leak, asserted so that this test fails if the attack stops working.
(b) the estimators' default unit, "add_remove" (the count released, the grid follows it): the event's frequencies
    on the two datasets are within what 0.5-zCDP allows (the Renyi region of every order, and the (eps, delta)
    point at delta = 1e-6, tight conversion: 5.22), with one-sided Clopper-Pearson bounds at 95 % overall.

4000 fits per dataset and unit (about 0.4 ms a fit: ~7 s); seeded (random_state), hardened numerics (the default).
"""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from dpcov import PrivateCovariance, ZCDP
from dpcov.audits.bounds import Claim
from dpcov.mechanisms.privacy import ApproxDP, zcdp_eps

# fits on rows of zeros release (numerically) nothing, and say so: expected here
pytestmark = pytest.mark.filterwarnings("ignore::dpcov.estimators.UselessReleaseWarning")

FITS = 4000
RHO, DELTA = 0.5, 1e-6
ALPHA = 0.05


def _fit(n: int, unit: str, seed: int) -> PrivateCovariance:
    return PrivateCovariance(mechanism="gauss", budget=ZCDP(RHO), radius=1.0, centering="private", privacy_unit=unit,
                             random_state=seed).fit(np.zeros((n, 2)))


def _grid_809() -> float:
    """The 809-row centre's grid, as the replace-one fit's public ledger names it ("grid 2^-46")."""
    ledger = _fit(809, "replace_one", 0).ledger_
    centre = next(what for what, _ in ledger if what.startswith("mean"))
    return 2.0 ** int(re.search(r"grid 2\^(-?\d+)", centre).group(1))


def _off_grid_counts(unit: str, grid: float) -> tuple[int, int]:
    """(fits on 809 rows, fits on 810 rows) whose location_[0] is not a multiple of ``grid``; distinct seeds."""
    counts = []
    for n, offset in ((809, 10**6), (810, 2 * 10**6)):
        released = np.array([_fit(n, unit, offset + i).location_[0] for i in range(FITS)])
        counts.append(int(np.sum(np.fmod(released, grid) != 0)))
    return counts[0], counts[1]


def _bounds(k809: int, k810: int) -> tuple[float, float]:
    """(rho, eps at DELTA) lower bounds from the counts, both orders of the two datasets, each probability at
    ALPHA / 8 (two orders, two claims' profiles, two probabilities: 95 % over everything this test bounds)."""
    level = ALPHA / 8
    rho = Claim.of(ZCDP(RHO))
    eps = Claim.of(ApproxDP(1.0, DELTA))  # the (eps, delta) point at DELTA: its bound does not depend on the eps
    rho_lb = max(float(np.atleast_1d(rho.bound(a, FITS, b, FITS, level))[0]) for a, b in ((k810, k809), (k809, k810)))
    eps_lb = max(float(np.atleast_1d(eps.bound(a, FITS, b, FITS, level))[0]) for a, b in ((k810, k809), (k809, k810)))
    return rho_lb, eps_lb


@pytest.fixture(scope="module")
def grid() -> float:
    g = _grid_809()
    assert _grid_809() == g and 2.0**-60 < g < 2.0**-30
    return g


def test_replace_one_tells_n_through_the_grid(grid):
    k809, k810 = _off_grid_counts("replace_one", grid)
    assert k809 == 0  # every 809-row release lies on the 809-row grid ...
    assert 0.4 * FITS < k810 < 0.6 * FITS  # ... about half of the 810-row ones do not (its grid is half as coarse)
    rho_lb, eps_lb = _bounds(k809, k810)
    allowed = zcdp_eps(RHO, DELTA)  # what 0.5-zCDP allows at delta = 1e-6: 5.22 (CKS; Bun & Steinke's 5.76)
    assert allowed < RHO + 2 * math.sqrt(RHO * math.log(1 / DELTA))
    assert rho_lb > RHO and eps_lb > allowed, (k809, k810, rho_lb, eps_lb)


def test_add_remove_keeps_the_event_within_the_claim(grid):
    k809, k810 = _off_grid_counts("add_remove", grid)
    rho_lb, eps_lb = _bounds(k809, k810)
    assert 0 < k809 < FITS and 0 < k810 < FITS  # the grid follows the released count: both sides straddle it
    assert rho_lb <= RHO and eps_lb <= zcdp_eps(RHO, DELTA), (k809, k810, rho_lb, eps_lb)
    assert abs(k809 - k810) < 0.1 * FITS  # and the two frequencies are close (a few sd of the count's shift)
