"""dpcov's estimators end to end, as mechanisms the black-box audits can run: the private norm bound
(radius="private"), the clipping, the private mean, the choice of mechanism="auto" and the release,
one per notion of budget, and PrivatePCA under pure and approximate DP (the latter where auto releases
the rows' median norm before choosing; ``pca_pure_fallback``, ``pca_approx_fallback``: where auto's choice releases
nothing and the next mechanism runs at the unspent budget; ``pca_pure_streamed``: fit on a file, a block at a
time); and the private pipeline of a streamed table (``pipeline_streamed``, ``pipeline_pure_streamed``): the band
sums built a block at a time by the compiled passes.

    python scripts/audit.py dpcov.audited:covariance_zcdp --seconds 60
    python scripts/audit.py dpcov.audited:covariance_pure --seconds 60
    python scripts/audit.py dpcov.audited:covariance_approx --seconds 60

Each reads the pair's raw rows (audits/pairs.py keeps them), fits ``PrivateCovariance`` with every
default and radius="private", centering="private", at the budget the audit claims, and charges what
the fit says it spent (``budget_spent_``) to the audit's accountant, so an estimator that spent more
than its budget fails there, and one that leaks more than it says fails the audit.

Privacy units (issue 54). The lines above fit with privacy_unit="replace_one" (the papers' model, n public: what
they were written to audit, on replace-one pairs; the estimators' default is now "add_remove"). The ``*_add_remove``
lines fit with the estimators' default unit, "add_remove": the released count, the rows resized to it, then the
hardened steps, all inside the fit. They protect a row's presence themselves (``claims_unit("add_remove")``), so the
audit runs them as they are on the pair's raw rows, on add/remove pairs (n against n + 1 rows, zero rows where only
n differs included) and on the replace-one pairs:

    python scripts/audit.py dpcov.audited:covariance_zcdp_add_remove --seconds 60
    python scripts/audit.py dpcov.audited:membership_gauss --seconds 60

``membership_gauss`` is issue 54's membership configuration (mechanism="gauss", radius=1.0, centering="private",
hardened numerics) with a public radius, so it runs on 1 against 2 zero rows and its low bits are audited (the
precision stage: a grid that followed the exact n would move by 2x there).
"""
from __future__ import annotations

import functools
import hashlib
import tempfile
from pathlib import Path

import numpy as np

from dpcov.audits.blackbox import add_remove_pairs_at, claims_unit
from dpcov.audits.pairs import PairSpec
from dpcov.data.chunks import Rows
from dpcov.mechanisms.problem import BandSums
from dpcov.mechanisms.registry import MECHANISMS, AuditNeeds, register_mechanism

from .estimators import PrivateCovariance, PrivatePCA

# the norm bound moves with the largest row (sphere, zeros) and with how many rows sit at a radius
# (threshold); swap_values moves the eigenvalues, new_direction adds a direction. n = 10000: the private
# norm bound refuses fewer rows than 4 x its threshold (about 8900 at the audit sweep's eps = 0.25)
SEARCH = (PairSpec("sphere", 10000), PairSpec("swap_values", 10000), PairSpec("zeros", 10000),
          PairSpec("new_direction", 10000), PairSpec("threshold", 10000, m=1), PairSpec("threshold", 10000, m=3),
          PairSpec("swap_values", 10000, radius=4.0), PairSpec("random", 10000, d=3, seed=1))
AUDIT = AuditNeeds("dp", (("swap_values", 10000),), search_pairs=SEARCH)
# idealized=True below: the audit rounds the releases' low bits away. The estimators run with hardened numerics
# (their default), but the audit's precision stage releases on zeros(n=3), which radius="private" refuses (n >= 4 x
# its threshold); their low bits are audited through the built-ins they run (dpcov audit adaptive --options
# '{"numerics": "hardened"}', results/measurements/audit_numerics.txt) and scripts/precision_attack.py


def _fit(problem, accountant, rng, pca: bool = False, radius="private", streamed: bool = False,
         privacy_unit: str = "replace_one", output: str = "covariance", **options):
    if problem.rows is None:
        raise ValueError("the estimator path needs the pair's raw rows (CovProblem.from_rows(..., rows=...))")
    common = dict(budget=accountant.total, radius=radius, centering="private", random_state=rng,
                  privacy_unit=privacy_unit, **options)
    rows = _as_file(problem.rows) if streamed else problem.rows
    estimator = (PrivatePCA(1, **common) if pca else PrivateCovariance(**common)).fit(rows)
    accountant.spend(estimator.budget_spent_, f"dpcov estimator ({estimator.mechanism_})")
    if output == "location":
        return np.diag(estimator.location_)
    if pca:  # the released direction as a rank-one matrix (its sign is arbitrary)
        u = estimator.components_[0]
        return np.outer(u, u)
    return estimator.covariance_


@register_mechanism(idealized=True, notion="zcdp", label="PrivateCovariance (auto, private radius)", audit=AUDIT, needs=("raw rows",))
def covariance_zcdp(problem, accountant, rng):
    return _fit(problem, accountant, rng)


@register_mechanism(idealized=True, notion="pure", label="PrivateCovariance (auto, private radius)", audit=AUDIT, needs=("raw rows",))
def covariance_pure(problem, accountant, rng):
    return _fit(problem, accountant, rng)


@register_mechanism(idealized=True, notion="approx", label="PrivateCovariance (auto, private radius)", audit=AUDIT,
                    needs=("raw rows",))
def covariance_approx(problem, accountant, rng):
    return _fit(problem, accountant, rng)


@register_mechanism(idealized=True, notion="pure", label="PrivatePCA (auto, private radius, k = 1)", audit=AUDIT, needs=("raw rows",))
def pca_pure(problem, accountant, rng):
    return _fit(problem, accountant, rng, pca=True)


# Under (eps, delta) at n = 10000 and d = 2 or 3, auto's choice for a PCA turns on the rows' median norm
# (dpcov/defaults.py releases_typical, at (3, 1e-5) and (3, 0.1), the audit sweep's third budget): this line
# audits that release too.
@register_mechanism(idealized=True, notion="approx", label="PrivatePCA (auto, private radius, k = 1)", audit=AUDIT,
                    needs=("raw rows",))
def pca_approx(problem, accountant, rng):
    return _fit(problem, accountant, rng, pca=True)


# auto's fallback (estimators._fall_back): at n = 300 and d = 2 or 3 under 1-DP, the sweep's first budget, auto
# chooses AdaptiveCov, whose private radius finds no row there; auto then releases the next mechanism of its
# ranking (AD) at the unspent budget. Radius 1 (public): the private norm bound refuses 300 rows
SMALL = (PairSpec("swap_values", 300), PairSpec("sphere", 300), PairSpec("zeros", 300), PairSpec("new_direction", 300),
         PairSpec("threshold", 300, m=1), PairSpec("random", 300, d=3, seed=1))


@register_mechanism(idealized=True, notion="pure", label="PrivatePCA (auto, radius 1, k = 1, n = 300: auto's fallback)",
                    audit=AuditNeeds("dp", (("swap_values", 300),), search_pairs=SMALL), needs=("raw rows",))
def pca_pure_fallback(problem, accountant, rng):
    return _fit(problem, accountant, rng, pca=True, radius=1.0)


# the same under (eps, delta): at (1, 1e-5), the sweep's first budget, the choice releases nothing at n = 300 and the
# next mechanism (SeparateCov with Laplace noise) runs at the unspent budget of the choice's own notion
@register_mechanism(idealized=True, notion="approx", label="PrivatePCA (auto, radius 1, k = 1, n = 300: auto's fallback)",
                    audit=AuditNeeds("dp", (("swap_values", 300),), search_pairs=SMALL), needs=("raw rows",))
def pca_approx_fallback(problem, accountant, rng):
    return _fit(problem, accountant, rng, pca=True, radius=1.0)


# fit on a file: every pass a block at a time, the band sums by the one-call pass (estimators._band_sums);
# the pair's rows are written once per process to a .npy file, read in blocks of 1000 rows
@functools.lru_cache(maxsize=1)
def _scratch() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="dpcov-audit-")  # removed when the process ends


def _as_file(rows: np.ndarray) -> Rows:
    path = Path(_scratch().name) / f"{hashlib.sha256(rows.tobytes() + str(rows.shape).encode()).hexdigest()}.npy"
    if not path.exists():
        np.save(path, rows)
    return Rows(path, block_bytes=1000 * 8 * rows.shape[1])


@register_mechanism(idealized=True, notion="pure", label="PrivatePCA (auto, private radius, k = 1) on a file", audit=AUDIT,
                    needs=("raw rows",))
def pca_pure_streamed(problem, accountant, rng):
    return _fit(problem, accountant, rng, pca=True, streamed=True)


# dataset=table with bound=private: the pipeline reads band sums that data/table.py built a block at a time with
# BandSums.add_columns (mechanisms/banded.py), not from_rows; these lines audit the pipeline on exactly those sums
# (the pair's rows in blocks of 64: 1000 rows, 16 blocks merged in one BandSums)
STREAM_BLOCK = 64


def _streamed(problem):
    if problem.rows is None:
        raise ValueError("the streamed path needs the pair's raw rows (CovProblem.from_rows(..., rows=...))")
    sums = BandSums(problem.radius)
    for start in range(0, len(problem.rows), STREAM_BLOCK):
        sums.add_columns(problem.rows[start:start + STREAM_BLOCK].T)
    return sums.problem(rows=problem.rows)


@register_mechanism(idealized=True, notion="zcdp", label="Private pipeline (streamed band sums)", audit=MECHANISMS["pipeline"].audit,
                    needs=("raw rows",))
def pipeline_streamed(problem, accountant, rng):
    return MECHANISMS["pipeline"].fn(_streamed(problem), accountant, rng)


@register_mechanism(idealized=True, notion="pure", label="Private pipeline (streamed band sums)",
                    audit=MECHANISMS["pipeline_pure"].audit, needs=("raw rows",))
def pipeline_pure_streamed(problem, accountant, rng):
    return MECHANISMS["pipeline_pure"].fn(_streamed(problem), accountant, rng)


# --- Under the estimators' default unit, add/remove: the count, the resized rows, the grid, the mechanism ---------------

# n = 10000 (radius="private" needs thousands of rows): add/remove pairs at that size first (only n differs, one row on
# the sphere, a unit row, a new direction, the eigenvalues; both directions), then the replace-one search pairs
SEARCH_ADD_REMOVE = tuple(add_remove_pairs_at(10000)) + (PairSpec("add_threshold", 10000, m=1),
                                                         PairSpec("add_random", 10000, d=3, seed=1)) + SEARCH
AUDIT_ADD_REMOVE = AuditNeeds("dp", (("swap_values", 10000),), search_pairs=SEARCH_ADD_REMOVE)


@claims_unit("add_remove")
@register_mechanism(idealized=True, notion="zcdp", label="PrivateCovariance (auto, private radius, add/remove)",
                    audit=AUDIT_ADD_REMOVE, needs=("raw rows",))
def covariance_zcdp_add_remove(problem, accountant, rng):
    return _fit(problem, accountant, rng, privacy_unit="add_remove")


@claims_unit("add_remove")
@register_mechanism(idealized=True, notion="pure", label="PrivateCovariance (auto, private radius, add/remove)",
                    audit=AUDIT_ADD_REMOVE, needs=("raw rows",))
def covariance_pure_add_remove(problem, accountant, rng):
    return _fit(problem, accountant, rng, privacy_unit="add_remove")


@claims_unit("add_remove")
@register_mechanism(idealized=True, notion="pure", label="PrivatePCA (auto, private radius, k = 1, add/remove)",
                    audit=AUDIT_ADD_REMOVE, needs=("raw rows",))
def pca_pure_add_remove(problem, accountant, rng):
    return _fit(problem, accountant, rng, pca=True, privacy_unit="add_remove")


# issue 54's membership configuration: a public radius, so it runs at every n, and as executed (idealized=False): the
# audit's precision stage releases on 1 against 2 zero rows (audits.blackbox.PRECISION_PAIR_ADD_REMOVE) and on
# zeros(n=3), and the search starts from the membership pair, 809 against 810 zero rows
MEMBERSHIP = (PairSpec("add_zeros", 809), PairSpec("add_zeros", 1), PairSpec("add_unit", 1),
              PairSpec("add_sphere", 10), PairSpec("add_direction", 2), PairSpec("add_values", 10),
              PairSpec("add_zeros", 809, remove=True), PairSpec("swap_values", 10), PairSpec("zeros", 1),
              PairSpec("new_direction", 2), PairSpec("sphere", 10))


@claims_unit("add_remove")
@register_mechanism(idealized=False, notion="zcdp", label="PrivateCovariance (gauss, radius 1, private centre, add/remove)",
                    audit=AuditNeeds("dp", (("swap_values", 1000),), search_pairs=MEMBERSHIP), needs=("raw rows",))
def membership_gauss(problem, accountant, rng, *, output: str = "location"):
    """output="location": diag(location_), the released centre (where issue 54's leak was: its grid followed n);
    "covariance": covariance_. A release is one d x d matrix, so each is audited on its own (--options)."""
    if output not in ("location", "covariance"):
        raise ValueError(f"output must be 'location' or 'covariance', got {output!r}")
    return _fit(problem, accountant, rng, radius=1.0, privacy_unit="add_remove", mechanism="gauss", output=output)
