"""Privacy units: which datasets are neighbours, and the steps that turn a replace-one release into one for
add/remove neighbours or for persons with several rows (GUIDE.md §9; issue 54).

- ``"replace_one"`` (the papers' model, bounded DP): D and D' have the same n rows and differ in one; n is
  public. Every mechanism of the registry is proven for it.
- ``"add_remove"`` (unbounded DP, OpenDP's and Tumult's default): D' is D plus or minus one row, so whether a
  row is there at all is protected, and n is not public.

The reduction used for every mechanism (``private_count``, ``resized_drop``):
1. release the count ñ = max(1, n + Z), Z exact integer noise (sensitivity 1: a row more or less moves n by 1);
2. make a dataset of exactly ñ rows: the rows themselves, or a uniformly random ñ of them when there are
   more (``resized_drop``), padded with zero rows (``CovProblem.padded``: zero rows add nothing to any sum and
   lie in every ball);
3. run the replace-one mechanism on it with ñ public.
Given ñ, adding a row x to D turns the padded dataset D + 0^(ñ-|D|) into D + x + 0^(ñ-|D|-1): one zero row
replaced by x. Where D has more than ñ rows, a uniform ñ-subset of D + x and one of D can be coupled to be
equal or to differ in one replaced row (x in place of a row of D). Either way the two step-3 inputs are
replace-one neighbours of ñ rows, so step 3 keeps its own replace-one guarantee, with its own float error
bounds (it sums at most ñ rows); a mixture of such pairs is as private (Rényi divergence is jointly
quasi-convex). Steps 1 and 3 compose: the count's share plus the mechanism's. Nothing after step 1 reads
the exact n. The padding row only has to be public and inside the ball: where the estimators centre the rows by a
released mean mu~ (a top-k draw, AdaptiveCov), the padding rows are zero rows of the centred data, i.e. rows at
mu~ (inside the r-ball), which add nothing to the centred covariance.

Several rows per person (``person_drop``, ``person_budget``): each person keeps at most k rows (the others are
dropped uniformly at random), so adding or removing a person adds or removes at most k rows; by group
privacy the whole fit at a row-level budget b_row is, for the person, k^2 rho (zCDP; Bun & Steinke 2016,
Prop. 1.9), k eps (pure DP) or (k eps, k e^((k-1) eps) delta) ((eps, delta)-DP): ``person_budget`` inverts these.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from . import noise
from .privacy import ApproxDP, PureDP, ZCDP, Accountant, budget_guaranteeing
from .transcript import released as _step

PRIVACY_UNITS = ("replace_one", "add_remove")
COUNT_SHARE = 0.02  # the count's share of an add/remove fit (measured: results/measurements/privacy_unit.txt)
MAX_COUNT_SIGMA = 2.0**50  # exact integer noise beyond this scale cannot be drawn (noise.discrete_gaussian)


def check_privacy_unit(unit) -> str:
    if unit not in PRIVACY_UNITS:
        raise ValueError(f"privacy_unit must be 'add_remove' (a row's presence is protected; n is released "
                         f"privately) or 'replace_one' (the papers' model: n public, a row's content protected), "
                         f"got {unit!r}")
    return unit


def check_count_share(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(f"count_share must lie in (0, 1), got {value!r}")
    return float(value)


def count_noise(budget) -> tuple[str, int | float]:
    """The count's noise for ``budget`` (public): ("discrete Laplace", t) with P(z) ~ exp(-|z|/t), t = ceil(1/eps),
    which is 1/t <= eps-DP for a sensitivity-1 integer (Canonne, Kamath & Steinke 2020, Alg. 2); or
    ("discrete Gaussian", sigma) with sigma = 1/sqrt(2 rho), rho-zCDP (their Thm 14). Under (eps, delta) the narrower
    of the two: the discrete Laplace at eps (eps-DP meets (eps, delta)), or the discrete Gaussian at the largest rho
    implying (eps, delta) (Bun & Steinke Prop. 1.3) -- at a count's small share of eps the Laplace's sqrt(2) t is
    usually far narrower (eps = 0.02, delta = 2e-8: 71 rows against 298). Refuses a scale exact sampling cannot
    reach."""
    if isinstance(budget, ApproxDP):
        laplace, gaussian = count_noise(PureDP(budget.eps)), count_noise(budget.to_zcdp())
        return laplace if math.sqrt(2) * laplace[1] <= gaussian[1] else gaussian
    if isinstance(budget, PureDP):
        scale = 1 / budget.eps
        if not scale < MAX_COUNT_SIGMA:
            raise ValueError(f"the count's share of the budget, {budget}, is too small for exact integer noise "
                             f"(scale {scale:.3g} > 2^50): raise count_share or the budget")
        return "discrete Laplace", max(1, math.ceil(1 / Fraction(budget.eps)))  # exact: t >= 1/eps
    rho = budget_guaranteeing(budget, ZCDP).rho
    sigma = 1 / math.sqrt(2 * rho) * (1 + 1e-12)  # rounded up: never less noise than rho asks
    if not sigma < MAX_COUNT_SIGMA:
        raise ValueError(f"the count's share of the budget, {budget}, is too small for exact integer noise "
                         f"(sigma {sigma:.3g} > 2^50): raise count_share or the budget")
    return "discrete Gaussian", sigma


def private_count(n: int, budget, accountant: Accountant, rng: np.random.Generator, what: str = "count") -> int:
    """ñ = max(1, n + Z) at ``budget`` (``count_noise``), spent through ``accountant``. Exact integers: no float
    ever carries n, so nothing leaks from low bits (hardened whatever the numerics)."""
    kind, scale = count_noise(budget)
    accountant.spend(budget, f"{what} (hardened: {kind} of scale {scale:.4g} on the integers, sensitivity 1)")
    z = noise.discrete_laplace(scale, 1, rng)[0] if kind == "discrete Laplace" else \
        noise.discrete_gaussian(scale, 1, rng)[0]
    return int(_step("count", what, float(n), max(1, int(n) + int(z)), sensitivity=1.0, norm="l1", noise=kind,
                     scale=scale))


def selection_generators(rng: np.random.Generator, count: int = 2) -> list[np.random.Generator]:
    """Generators for a fit's random row selections (persons' rows beyond k, rows beyond the released count), split
    off the fit's generator before any row is read, one per selection (ChaCha20 where the fit's is cryptographic).
    Each selection draws one key per row index (``row_keys``), so a row's key depends on its index alone: D and D
    with rows appended then keep the same rows of D, or one fewer and an appended row instead -- the coupling the
    proofs above use, realised (the replay test, mechanisms/transcript.py, runs on it)."""
    children = np.random.SeedSequence([int(v) for v in rng.integers(0, 2**63, size=4)]).spawn(count)
    if noise.is_secure(rng):
        from randomgen import ChaCha
        return [np.random.Generator(ChaCha(seed=child, rounds=20)) for child in children]
    return [np.random.Generator(np.random.PCG64(child)) for child in children]


def row_keys(rng: np.random.Generator, total: int) -> np.ndarray:
    """One uniform key per row index 0 .. total - 1 (a prefix of the keys of more rows)."""
    return rng.random(int(total))


def resized_drop(kept: np.ndarray, n_public: int, rng: np.random.Generator, total: int | None = None) -> np.ndarray:
    """The rows (indices into ``kept``, the candidates) to drop so that at most ``n_public`` remain (step 2 above):
    when there are more, those beyond the ``n_public`` smallest keys (``row_keys`` over ``total`` row indices,
    default max(kept) + 1; ties by index), a uniformly random subset; else none. Sorted."""
    kept = np.asarray(kept, dtype=np.int64)
    extra = len(kept) - int(n_public)
    if extra <= 0:
        return np.empty(0, dtype=np.int64)
    keys = row_keys(rng, int(kept.max()) + 1 if total is None else total)[kept]
    order = np.lexsort((kept, keys))  # by key, then index
    return np.sort(kept[order[int(n_public):]])


def person_drop(persons, k: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of the rows beyond ``k`` per person: each person keeps its ``k`` rows of smallest key (``row_keys``,
    ties by index), a uniformly random k of them (sorted). ``persons``: one identifier per row (any hashable
    values numpy can sort: ints, strings)."""
    ids = np.asarray(persons)
    if ids.ndim != 1:
        raise ValueError(f"persons must be one identifier per row (1-D), got shape {ids.shape}")
    n = len(ids)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    keys = row_keys(rng, n)
    _, group = np.unique(ids, return_inverse=True)
    by_person = np.lexsort((np.arange(n), keys, group.ravel()))  # by person, then key, then index
    sorted_groups = group.ravel()[by_person]
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    rank = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    return np.sort(by_person[rank >= k])


def check_rows_per_person(k) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"max_rows_per_person must be an integer >= 1, got {k!r}")
    return int(k)


def person_budget(budget, k: int):
    """The row-level budget whose fit is ``budget`` for a person with at most ``k`` rows, by group privacy:
    rho / k^2 (zCDP), eps / k (pure), (eps / k, delta / (k e^eps)) ((eps, delta)-DP: k rows give
    (k eps', k e^((k-1) eps') delta') <= (eps, delta))."""
    if k == 1:
        return budget
    if isinstance(budget, ZCDP):
        return ZCDP(budget.rho / k**2)
    if isinstance(budget, PureDP):
        return PureDP(budget.eps / k)
    return ApproxDP(budget.eps / k, budget.delta / (k * math.exp(budget.eps)))


def group_cost(row_budget, k: int):
    """What a fit at ``row_budget`` per row costs a person with at most ``k`` rows (group privacy, as above)."""
    if k == 1:
        return row_budget
    if isinstance(row_budget, ZCDP):
        return ZCDP(row_budget.rho * k**2)
    if isinstance(row_budget, PureDP):
        return PureDP(row_budget.eps * k)
    return ApproxDP(row_budget.eps * k, min(k * math.exp((k - 1) * row_budget.eps) * row_budget.delta, 1 - 1e-16))


def group_privacy_note(budget, k: int) -> str:
    """The ledger's line for a person-level fit."""
    how = {ZCDP: "k^2 rho", PureDP: "k eps", ApproxDP: "(k eps, k e^((k-1) eps) delta)"}[type(budget)]
    return (f"persons: at most {k} rows per person (the rest dropped at random); group privacy ({how}): the fit "
            f"runs at {person_budget(budget, k)} per row, {budget} per person")
