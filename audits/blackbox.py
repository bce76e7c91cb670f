"""Black-box audit of any mechanism: pair search, learned attack, confirmation on fresh runs.

``audit(name, budget)`` runs the mechanism only through ``mechanisms.registry.release`` (so a plug-in
is audited exactly as the experiments run it) and answers: is there a pair of neighbouring datasets
and an event on which the releases prove the claim false, at confidence 1 - alpha?

1. **Pilot.** A few releases on every candidate pair (``default_pairs``: the families of
   ``audits.pairs`` at small n and d, r = 1 and r = 4, rotated planes, random pairs, rows on dyadic band
   edges and a row filling an empty norm band): pairs the mechanism refuses are dropped (with the reason),
   and the cost of a release is measured.
2. **Screen.** Releases on every pair; each pair's estimated loss is the best bound over the
   hand-picked statistics and the transcript texts (in-sample, for ranking only). Neighbours of the best
   pairs (n x 3, n / 3, d + 1, r x 4, a rotated plane, other random rows) are screened too: a greedy step.
3. **Confirm** (up to ``confirmations`` = K pairs, best first). On fresh *selection* runs a classifier
   (scikit-learn's histogram gradient boosting, DP-Sniper style, Bichsel et al. 2021) is trained to
   tell D's releases from D''s on basis-free features (sorted eigenvalues, |<v_i, e_j>|, trace, the
   entries at small d, the hand-picked statistics and the transcript texts); its score joins the statistics
   as a candidate, and the event (score, threshold, tail, order) with the largest bound at the claim's whole
   profile is chosen on held-out selection runs. Then *confirmation* runs, never seen before, give the bound with
   one-sided Clopper-Pearson limits at alpha / (2K) for each probability. The audit stops at the first
   confirmed excess.

**The whole transcript** (issue 58). A release is more than its numbers: every ledger line (text and budget), how
it ended (``accountant.released``, "ok" or a fallback's reason) and the output's kind are one text per release
(``pairs.transcript``). The pilot and screen runs of a pair name its texts (``MAX_TEXTS`` at most), each an
indicator column beside the hand-picked statistics; a text that one dataset's releases give and the other's never
do (a number computed from the data written into the ledger) is an event of probability 0 on one side.

The confidence statement covers the whole search: every choice (pair, classifier, event, point of the
profile) is made on runs independent of the confirmation runs of that pair, and at most K events are
confirmed, each at level alpha / K (Bonferroni), so a mechanism that meets its claim is flagged with
probability at most alpha, whatever the search did.

**Privacy unit** (``privacy_unit``; GUIDE.md section 9, issue 54). "replace_one" (the papers' model, n public):
the pairs have equal n. "add_remove" (a row's presence protected, n not public): the search starts from the
add/remove pairs (``default_add_remove_pairs``: D against D plus one row, zero rows where only n differs included)
and keeps every replace-one pair (an add/remove construction must pass those too, at the same budget); the
precision stage also runs on zero rows where only n differs (the first ``add_zeros`` pair searched, else 1 against
2 rows, where a noise scale that follows the exact n moves by 2x). A registered mechanism or an ordinary plug-in is then run through ``release(..., privacy_unit="add_remove")``
(the released count, then each line's own route: native at its add/remove sensitivity, or the rows resized to it: mechanisms/units.py) on problems that hold their rows; a plug-in that
protects a row's presence itself (``claims_unit("add_remove")``: dpcov's estimators in dpcov/audited.py, or your
own construction) is run as it is, on the pair's raw rows. The claim is the same budget under either unit.

Sample sizes follow the time budget (``seconds``) and the measured cost of a release; with ``runs``
they are fixed instead, and the numbers are then identical for the same seed on any ``n_jobs``.
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from threadpoolctl import ThreadpoolController, threadpool_limits

from dpcov.mechanisms.privacy import ZCDP, ApproxDP, PureDP, budget_guaranteeing
from dpcov.mechanisms.registry import check_options, get_mechanism, import_plugins, plugin_modules, release
from dpcov.mechanisms.units import check_privacy_unit, group_cost

from .bounds import Bound, Claim, Event, choose_event, confirm, confirm_counts
from .pairs import (EDGED, HAND_NAMES, SEEDED, Pair, PairSpec, features, precision_statistic_name, precision_statistics,
                    quantize, transcript)

DEFAULT_BUDGETS = {ZCDP: ZCDP(0.5), PureDP: PureDP(1.0), ApproxDP: ApproxDP(1.0, 1e-5)}
# A mechanism claims its notion at every budget. At rho = 0.5 (sqrt(2 rho) = 2 rho = 1) or eps = 1 a wrong
# functional form of the budget (Delta / (2 rho), Delta * eps, Delta / eps^2) is invisible, so the default
# audit also tests a small and a large budget, each with a quarter of the time (the default gets half).
# (eps, delta) claims constrain one point, where a mistake at delta = 1e-5 moves event probabilities by
# ~1e-4 only (an analytic Gaussian with sqrt(2) too little noise: FNR 6e-4 below the region at FPR 1e-3);
# at delta = 0.1 the same mistake moves them by ~0.1, so the extra budgets take delta = 0.1.
SWEEP_BUDGETS = {ZCDP: (ZCDP(0.5), ZCDP(0.05), ZCDP(2.0)), PureDP: (PureDP(1.0), PureDP(0.25), PureDP(3.0)),
                 ApproxDP: (ApproxDP(1.0, 1e-5), ApproxDP(0.25, 0.1), ApproxDP(3.0, 0.1))}
SWEEP_SHARES = (0.5, 0.25, 0.25)
CHUNK = 250  # releases per task: fixed, so the numbers do not depend on n_jobs
ENTRIES_MAX_D = 5  # the learned attack sees the matrix entries up to this d


def default_pairs() -> list[PairSpec]:
    """The search's starting points: every family once at the size where it exposes most (first, so a
    slow mechanism screens these), then other sizes, d, radius 4, a rotated plane, random rows and rows on
    dyadic band edges (issue 58: pairs that stress the code, not the statistics)."""
    S = PairSpec
    return [S("swap_values", 10), S("tie", 3), S("grow", 2), S("zeros", 1), S("sphere", 10), S("l1", 1),
            S("swap_vectors", 2), S("scale", 10), S("new_direction", 2), S("threshold", 100, m=1),
            S("dense", 20), S("random", 3, seed=1), S("band_edge", 10, seed=1), S("band_fill", 10, seed=1),
            S("swap_values", 1000), S("swap_values", 3, d=3), S("tie", 1), S("tie", 11), S("tie", 101),
            S("tie", 3, d=3), S("swap_vectors", 10), S("grow", 3), S("grow", 10), S("scale", 1000),
            S("new_direction", 1000), S("l1", 10), S("l1", 1, d=4), S("sphere", 100), S("zeros", 10),
            S("zeros", 1000), S("threshold", 100, m=3), S("dense", 1000),
            S("swap_values", 10, radius=4.0), S("tie", 3, radius=4.0), S("grow", 2, radius=4.0),
            S("swap_values", 10, angle=math.pi / 8), S("grow", 3, angle=math.pi / 8),
            S("random", 10, d=3, seed=2), S("random", 100, seed=3),
            S("band_edge", 100, seed=2), S("band_edge", 10, m=3, seed=3), S("band_fill", 1000, seed=2)]


def default_add_remove_pairs() -> list[PairSpec]:
    """The add/remove search's starting points (``audits.pairs.ADD_REMOVE_FAMILIES``): every family once at the
    size where it exposes most (only n differs at n = 1: 1 against 2 zero rows), issue 54's membership pair (809
    against 810 zero rows, both directions), then other sizes, d, radius 4, a rotated plane, random rows and rows on
    dyadic band edges."""
    S = PairSpec
    return [S("add_zeros", 1), S("add_unit", 1), S("add_sphere", 10), S("add_direction", 2), S("add_values", 10),
            S("add_tie", 2), S("add_threshold", 100, m=1), S("add_random", 3, seed=1),
            S("add_band_edge", 10, seed=1), S("add_band_fill", 10, seed=1),
            S("add_zeros", 809), S("add_zeros", 809, remove=True), S("add_zeros", 2, remove=True),
            S("add_unit", 10, remove=True), S("add_zeros", 10), S("add_unit", 1000), S("add_sphere", 100),
            S("add_direction", 1000), S("add_values", 1000), S("add_tie", 11), S("add_unit", 2, d=3),
            S("add_threshold", 100, m=3), S("add_values", 10, radius=4.0), S("add_unit", 2, radius=4.0),
            S("add_values", 10, angle=math.pi / 8), S("add_random", 10, d=3, seed=2),
            S("add_band_edge", 100, seed=2), S("add_band_fill", 100, seed=2, remove=True)]


def add_remove_pairs_at(n: int, d: int = 2, radius: float = 1.0) -> list[PairSpec]:
    """Add/remove pairs at one size (where a mechanism needs many rows, e.g. the estimators' private norm bound):
    only n differs, one row on the sphere, a new direction, the eigenvalues, a row filling an empty norm band, both
    directions."""
    S = PairSpec
    return [S("add_zeros", n, d, radius), S("add_sphere", n, d, radius), S("add_unit", n, d, radius),
            S("add_direction", n, d, radius), S("add_values", n, d, radius), S("add_band_fill", n, d, radius),
            S("add_zeros", n, d, radius, remove=True), S("add_sphere", n, d, radius, remove=True)]


# ---------------------------------------------------------------------------------------------------
# Which unit a mechanism protects by itself

OWN_UNIT = "dpcov_privacy_unit"  # attribute of a plug-in function that protects its unit itself


def claims_unit(unit: str):
    """Decorator (with or after ``@register_mechanism``): the plug-in protects ``unit``'s neighbours itself --
    e.g. it releases a count and resizes, as dpcov's estimators do under privacy_unit="add_remove" -- so the audit
    runs it as it is on the pair's raw rows, never through ``release``'s add/remove reduction."""
    check_privacy_unit(unit)

    def mark(fn):
        setattr(fn, OWN_UNIT, unit)
        return fn
    return mark


def own_unit(mechanism) -> str | None:
    """The unit a mechanism declares it protects by itself (``claims_unit``), or None."""
    return getattr(mechanism.fn, OWN_UNIT, None)


def neighbours_of(spec: PairSpec) -> list[PairSpec]:
    """The greedy step's moves from one pair."""
    moves = [replace(spec, n=spec.n * 3), replace(spec, d=spec.d + 1), replace(spec, radius=spec.radius * 4),
             replace(spec, angle=spec.angle + math.pi / 8)]
    if spec.n >= 3:
        moves.append(replace(spec, n=max(1, spec.n // 3)))
    if spec.family in SEEDED:
        moves.append(replace(spec, seed=spec.seed + 100))
    if spec.family in EDGED:
        moves.append(replace(spec, m=spec.m + 2))
    return moves


# ---------------------------------------------------------------------------------------------------
# Releases (in worker processes) -> features


@functools.lru_cache(maxsize=1)
def _blas() -> ThreadpoolController:
    """This process's BLAS pools, found once for the release chunks (threadpool_limits scans the loaded libraries
    each time: about 1.4 s of a 17 s audit when made per chunk). The classifier's fits keep threadpool_limits,
    which also finds the OpenMP pool scikit-learn loads later."""
    return ThreadpoolController()


def _one_blas_thread():
    return _blas().limit(limits=1)


def _sample_chunk(name: str, options: dict, budget, problem, reference, entries: bool, entropy: list[int],
                  count: int, plugins, precision: bool = False,
                  privacy_unit: str = "replace_one") -> tuple[np.ndarray, list[str], np.ndarray]:
    """``count`` releases of one dataset: their feature rows (``precision``: their low bits' statistics), their
    distinct transcripts (``pairs.transcript``: ledger, fallback, output kind; none with ``precision``) and each
    release's index into them. One Generator per chunk from its entropy. ``privacy_unit``: how ``release`` runs the
    mechanism ("add_remove": through the released count and the rows resized to it)."""
    import_plugins(plugins)
    rng = np.random.default_rng(np.random.SeedSequence(entropy))
    mechanism = get_mechanism(name)  # a plug-in's path resolved once, not per release
    with _one_blas_thread():
        released = [release(mechanism, problem, budget, rng, options=options or None, clamp=False,
                            privacy_unit=privacy_unit) for _ in range(count)]
        outs = [estimate for estimate, _ in released]
        if precision:
            return precision_statistics(outs, problem.radius), [], np.zeros(0, dtype=int)
        distinct: dict[str, int] = {}
        codes = np.array([distinct.setdefault(transcript(estimate, accountant), len(distinct))
                          for estimate, accountant in released])
        return features(reference, quantize(outs, problem.radius), entries), list(distinct), codes


@dataclass
class Sampler:
    """Releases of one mechanism at one budget, on any pair, in parallel chunks (seeded by key)."""

    name: str
    options: dict
    budget: object
    seed: int
    n_jobs: int
    plugins: tuple = ()
    privacy_unit: str = "replace_one"  # how release runs the mechanism ("add_remove": the reduction of units.py)
    releases: int = 0
    busy: float = 0.0  # wall seconds spent releasing
    texts: dict = field(default_factory=dict)  # pair key -> the transcript texts of its indicator columns

    def sample(self, requests: list[tuple[int, Pair, int, str, int]], parallel: bool = True,
               precision: bool = False, first_chunk: int = 0) -> list[np.ndarray]:
        """requests: (pair key, pair, side 0/1, phase, count) -> one feature array per request, its last columns the
        indicators of the pair's transcript texts (``texts``), or with ``precision`` the low bits' statistics
        (``parallel=False``: in this process, e.g. to time a release; ``first_chunk``: the chunks' numbering starts
        there, so more runs of a phase are fresh ones)."""
        tasks, owners = [], []
        for r, (key, pair, side, phase, count) in enumerate(requests):
            entries = pair.problems[side].d <= ENTRIES_MAX_D
            for c, start in enumerate(range(0, count, CHUNK), start=first_chunk):
                entropy = [self.seed, key, side, _PHASES[phase], c]
                tasks.append(delayed(_sample_chunk)(self.name, self.options, self.budget, pair.problems[side],
                                                    pair.reference, entries, entropy, min(CHUNK, count - start),
                                                    self.plugins, precision, self.privacy_unit))
                owners.append(r)
        start = time.perf_counter()
        if not parallel or self.n_jobs == 1 or len(tasks) == 1:
            results = [fn(*args, **kwargs) for fn, args, kwargs in tasks]
        else:
            results = Parallel(n_jobs=self.n_jobs)(tasks)
        self.busy += time.perf_counter() - start
        out: list[list] = [[] for _ in requests]
        if not precision:
            self._learn_texts([requests[r] for r in owners], results)
        for r, (block, distinct, codes) in zip(owners, results):
            out[r].append(block if precision else self._with_texts(requests[r][0], block, distinct, codes))
        self.releases += sum(count for *_, count in requests)
        return [np.concatenate(blocks) if blocks else np.empty((0, 0)) for blocks in out]

    def _learn_texts(self, requests: list, results: list) -> None:
        """The pilot and screen runs name a pair's transcript texts (in the order first seen, at most MAX_TEXTS):
        fixed before the runs that train, select and confirm, so a column means one text in all of them."""
        for (key, _, _, phase, _), (_, distinct, _) in zip(requests, results):
            if phase in TEXT_PHASES:
                known = self.texts.setdefault(key, [])
                known += [text for text in distinct if text not in known][:MAX_TEXTS - len(known)]

    def _with_texts(self, key: int, block: np.ndarray, distinct: list[str], codes: np.ndarray) -> np.ndarray:
        """The feature rows and one indicator column per known transcript text of the pair (1: the release's)."""
        known = self.texts.get(key, [])
        column = np.array([known.index(text) if text in known else -1 for text in distinct])
        return np.column_stack([block, (column[codes][:, None] == np.arange(len(known))).astype(float)])


TEXT_PHASES = ("pilot", "screen")  # the runs whose transcripts name a pair's indicator columns
MAX_TEXTS = 16  # indicator columns per pair at most (a transcript with a noisy number in it: a new text per release)
_PHASES = {"pilot": 0, "screen": 1, "train": 2, "select": 3, "confirm": 4, "precision_select": 5,
           "precision_confirm": 6}


# ---------------------------------------------------------------------------------------------------
# The learned attack


def _fit_attack(train0: np.ndarray, train1: np.ndarray, seed: int):
    """A classifier of D's releases (0) against D''s (1); None when the sample is too small or constant."""
    if min(len(train0), len(train1)) < 100:
        return None
    X = np.vstack([train0, train1])
    y = np.concatenate([np.zeros(len(train0)), np.ones(len(train1))])
    X = np.clip(X, -1e150, 1e150)
    if np.all(X.std(axis=0) == 0):
        return None
    from sklearn.ensemble import HistGradientBoostingClassifier
    model = HistGradientBoostingClassifier(max_iter=150, learning_rate=0.1, max_leaf_nodes=15,
                                           early_stopping=len(X) > 4000, random_state=seed)
    with threadpool_limits(limits=1):  # finds the OpenMP pool scikit-learn loaded since
        model.fit(X, y)
    return model


def _scores(model, F: np.ndarray, texts: int) -> np.ndarray:
    """The hand-picked statistics, the indicators of the pair's ``texts`` transcript texts (F's last columns), then
    the classifier's log-odds (when trained)."""
    numeric = F.shape[1] - texts
    hand = F[:, :len(HAND_NAMES)] if numeric >= len(HAND_NAMES) else F[:, :numeric]
    columns = [hand, F[:, numeric:]]
    if model is not None:
        with threadpool_limits(limits=1):
            columns.append(model.decision_function(np.clip(F, -1e150, 1e150)))
    return np.column_stack(columns)


def _statistic_name(j: int, width: int, learned: bool, texts: list[str]) -> str:
    if learned and j == width - 1:
        return "learned attack (classifier score)"
    hand = width - learned - len(texts)
    if j >= hand:
        return f"transcript is {_quoted(texts[j - hand])} (1 if so)"
    return HAND_NAMES[j] if hand == len(HAND_NAMES) else f"statistic {j}"


def _quoted(text: str, limit: int = 160) -> str:
    """A transcript text on one line, shortened to ``limit`` characters."""
    line = text.replace("\n", " / ")
    return repr(line if len(line) <= limit else line[:limit - 3] + "...")


# ---------------------------------------------------------------------------------------------------
# Reports


@dataclass
class Finding:
    """One confirmed event: the pair, the event, the bound on the confirmation runs."""

    pair: str
    statistic: str
    bound: Bound
    claim: Claim
    level: float  # of each probability's Clopper-Pearson bound
    stage: str = "paper"  # "paper": the search on rounded releases (the calibration); "low bits": the precision stage

    @property
    def exceeded(self) -> bool:
        return self.bound.value > self.claim.value

    def describe(self) -> str:
        e = self.bound.event
        tail = ">" if e.sign > 0 else "<"
        first, second = ("D'", "D") if e.swap else ("D", "D'")
        return (f"{self.claim.symbol} >= {self.bound.value:.4g} vs claim {self.claim.value:.4g} on {self.pair}; "
                f"event {self.statistic} {tail} {e.threshold:.6g}: {self.bound.counts[0]}/{self.bound.counts[2]} "
                f"runs on {first} vs {self.bound.counts[1]}/{self.bound.counts[2]} on {second}")


@dataclass
class AuditReport:
    mechanism: str
    options: dict
    claim: Claim
    alpha: float
    findings: list[Finding]
    screened: list[tuple[str, float]]  # (pair, estimated loss / claim), best first
    dropped: list[tuple[str, str]]  # (pair, why the mechanism refused it)
    releases: int
    seconds: float
    confirmations: int
    numerics: str = "idealized"  # "as executed": the low bits were audited too (precision stage)
    privacy_unit: str = "replace_one"  # the neighbours audited (add_remove: the replace-one pairs too)
    run_as: str = ""  # how the mechanism ran: through release's add/remove reduction, or as it is
    low_bits_audited: bool = False  # the precision stage ran (numerics "as executed", unless a sweep skipped it)
    low_bits_seconds: float = 0.0  # wall seconds of the precision stage (the rest: the calibration's search)

    @property
    def exceeded(self) -> bool:
        """The claim is exceeded: on paper, or (audited as executed) by the low bits."""
        return any(f.exceeded for f in self.findings)

    @property
    def calibration_exceeded(self) -> bool:
        """The verdict on paper: the search on rounded releases (the calibration) confirmed an excess."""
        return any(f.exceeded for f in self.findings if f.stage != "low bits")

    @property
    def low_bits_exceeded(self) -> bool:
        """The verdict as executed: the precision stage confirmed an excess on the releases' low bits."""
        return any(f.exceeded for f in self.findings if f.stage == "low bits")

    def _worst_of(self, stage: str) -> Finding | None:
        found = [f for f in self.findings if (f.stage == "low bits") == (stage == "low bits")]
        return max(found, key=lambda f: f.bound.value) if found else None

    def verdicts(self) -> list[str]:
        """One line per verdict: on paper (the calibration) and, audited as executed, the low bits."""
        def text(exceeded: bool, worst: Finding | None) -> str:
            bound = f": {worst.claim.symbol} >= {worst.bound.value:.4g} vs {worst.claim.value:.4g}" if worst else ""
            return ("EXCEEDS its claim" if exceeded else "no evidence against its claim") + bound
        out = [f"on paper (the calibration, low bits rounded away): "
               f"{text(self.calibration_exceeded, self._worst_of('paper'))}"]
        if self.numerics == "as executed":
            out.append("as executed (the low bits): " + (
                text(self.low_bits_exceeded, self._worst_of("low bits")) if self.low_bits_audited else
                "not audited at this claim (they leaked at an earlier one)"))
        return out

    @property
    def worst(self) -> Finding | None:
        if not self.findings:
            return None
        return max(self.findings, key=lambda f: f.bound.value)

    def describe(self) -> str:
        unit = ("add/remove (pairs of n and n + 1 rows; the replace-one pairs at k = 2, a removal and an addition)"
                if self.privacy_unit == "add_remove"
                else "replace-one (pairs of equal n)")
        lines = [f"claim: {self.claim.describe()}",
                 f"neighbours: {unit}{'; ' + self.run_as if self.run_as else ''}",
                 "numerics: " + ("as executed (the releases' low bits audited on a dyadic/non-dyadic pair)"
                                 if self.numerics == "as executed" else
                                 "idealized (low bits rounded away: private on paper, not as executed)"),
                 f"{len(self.screened)} neighbour pairs screened, {len(self.findings)} confirmed on fresh runs "
                 f"({self.releases} releases, {self.seconds:.0f} s)"]
        worst = self.worst
        if worst is not None:
            lines.append(f"worst pair: {worst.pair}")
            lines.append(f"lower bound: {worst.describe()}")
        if self.numerics == "as executed":
            lines += self.verdicts()
        verdict = ("EXCEEDS its claim" if self.exceeded else "no evidence against its claim")
        lines.append(f"verdict: {verdict} (alpha = {self.alpha:.3g} over this whole search: "
                     f"{self.confirmations} confirmation{'s' if self.confirmations != 1 else ''} at alpha/"
                     f"{self.confirmations} each)")
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# The audit


class NoPairError(ValueError):
    """The mechanism refused every neighbour pair of the audit (the reasons are in the message)."""


@dataclass
class _Candidate:
    key: int
    pair: Pair
    cost: float  # seconds per release (one core)
    estimate: float = -math.inf  # screened loss / claim
    data: list = field(default_factory=lambda: [[], []])  # earlier (non-confirmation) runs per side


def _estimate(claim: Claim, F0: np.ndarray, F1: np.ndarray, texts: int) -> float:
    """In-sample loss over the hand-picked statistics and the transcript texts, relative to the claim (ranking
    only)."""
    _, value = choose_event(_scores(None, F0, texts), _scores(None, F1, texts), claim, 0.05, candidates=60)
    return value / claim.value if claim.value > 0 else value


# Audited as executed, the precision stage (the low bits) gets this share of the time budget, the search (the
# calibration, on paper) the rest; a finding in one does not end the other. A float leak is an event that is
# (almost) certain on one side and impossible on the other, confirmed on ~1000 runs per side in a few seconds; the
# calibration needs the search's hundreds of thousands of runs (docs/privacy.md, results/measurements/audit_two_verdicts.txt)
LOW_BITS_SHARE = 0.15
# ... unless the event it chose is one-sided (``one_sided``) and its first bound stays below the claim: a rare float
# leak (float_cases.over_noised: 64 of 14381 runs on D, 0 of 14381 on D', rho >= 0.14 against 0.5) is unbounded, only
# the runs limit its bound, so the stage confirms it in rounds until the bound exceeds the claim or this share of the
# time budget is spent (the search gets the rest)
ONE_SIDED_SHARE = 0.5
ONE_SIDED_MIN, ONE_SIDED_RATIO = 10, 20  # one-sided: seen >= 10 times on one dataset, >= 20 x as often as on the other
PRECISION_PAIR = PairSpec("zeros", 3)  # Sigma = 0 (dyadic) against diag(1/3, 0) (not): the low bits differ
# add/remove: 1 against 2 zero rows, only n differs: a grid (or a noise scale) that follows the exact n moves by 2x
# (a power of two above c / n), one that follows a released count does not
PRECISION_PAIR_ADD_REMOVE = PairSpec("add_zeros", 1)


def as_executed(mechanism, options: dict) -> bool:
    """Whether the audit checks a mechanism's low bits: a plug-in unless it declares itself idealized, a
    built-in (idealized, float noise) when it runs with numerics="hardened"."""
    return not mechanism.idealized or options.get("numerics") == "hardened"


def audit(name, budget=None, *, options: dict | None = None, seconds: float = 240.0, alpha: float = 0.05,
          confirmations: int = 3, pairs: list | None = None, gaussian: bool = False, n_jobs: int = -1,
          seed: int = 0, runs: int | None = None, run_at=None, numerics: str | None = None,
          privacy_unit: str | None = None, precision_pairs: list | None = None,
          log: Callable[[str], None] | None = None) -> AuditReport:
    """Audit mechanism ``name`` (registered name, plug-in path or decorated function) against its claim.

    budget: the requested budget (default: rho = 0.5, eps = 1 or (1, 1e-5) by the mechanism's notion);
    the claim tested is the budget of the mechanism's own notion that ``release`` runs it at.
    pairs: PairSpec or Pair objects to search instead of ``default_pairs()``.
    gaussian: the mechanism is a post-processed Gaussian mechanism (exact mu-GDP profile).
    runs: fixed selection and confirmation runs per dataset (instead of the time budget).
    run_at: run the mechanism at this budget instead of the claim's (under-noised copies, audits.lines).
    numerics: "as executed" audits the releases' low bits too (a precision stage first, on
    ``PRECISION_PAIR``, one more confirmation in the Bonferroni split; ``LOW_BITS_SHARE`` of the time, up to
    ``ONE_SIDED_SHARE`` to confirm a one-sided event in rounds), "idealized" rounds them away (the
    mechanism on paper); default ``as_executed(mechanism, options)``.
    privacy_unit: the neighbours the claim is for (default: the unit the mechanism protects by itself,
    ``claims_unit``, else "replace_one"). "add_remove": the default pairs are ``default_add_remove_pairs()`` then
    ``default_pairs()``, the precision stage also runs on ``PRECISION_PAIR_ADD_REMOVE`` (one more confirmation),
    and a mechanism that does not protect it by itself runs through ``release(..., privacy_unit="add_remove")``.
    precision_pairs: the pairs of the precision stage (numerics "as executed"), each one more confirmation. Default:
    ``PRECISION_PAIR``; under add/remove first the all-zero pair where only n differs: the first ``add_zeros`` of
    ``pairs`` (a grid that follows the exact n changes where a power of two falls between c / n and c / (n + 1):
    give the size where it does, e.g. issue 54's 809 -> 810), else ``PRECISION_PAIR_ADD_REMOVE`` (1 -> 2 rows).
    """
    log = log or (lambda text: None)
    started = time.perf_counter()
    mechanism = get_mechanism(name)
    path = name if isinstance(name, str) else mechanism.name
    options = dict(options or {})
    check_options(mechanism, options)  # unknown or invalid options: the registry's clear error, up front
    requested = budget or DEFAULT_BUDGETS[mechanism.notion]
    run_budget = budget_guaranteeing(requested, mechanism.notion)
    claim = Claim.of(run_budget, gaussian)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if confirmations < 1:
        raise ValueError(f"confirmations must be >= 1, got {confirmations!r}")
    if runs is None and not seconds > 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    if numerics is None:
        numerics = "as executed" if as_executed(mechanism, options) else "idealized"
    if numerics not in ("as executed", "idealized"):
        raise ValueError(f"numerics must be 'as executed' or 'idealized', got {numerics!r}")
    declared = own_unit(mechanism)
    unit = check_privacy_unit(privacy_unit if privacy_unit is not None else declared or "replace_one")
    release_unit = "add_remove" if unit == "add_remove" and declared is None else "replace_one"
    if release_unit == "add_remove" and mechanism.add_remove is not None:
        raise ValueError(f"mechanism {mechanism.name!r} cannot protect a row's presence (privacy_unit='add_remove'): "
                         f"{mechanism.add_remove}")
    if release_unit == "add_remove" and claim.kind == "gaussian":
        # the count's exact integer noise is not exactly a Gaussian mechanism (the discrete Gaussian's curve is the
        # continuous one's plus a small term; the discrete Laplace's is not Gaussian at all): the composition is
        # claimed in its notion's region (zCDP / (eps, delta)), not as mu-GDP
        claim = Claim.of(run_budget, False)
    run_as = "" if unit == "replace_one" and declared is None else (
        "run through release(privacy_unit='add_remove'): the released count, then the line's own add/remove route"
        if release_unit == "add_remove" else f"run as it is (it protects {declared} neighbours itself)")
    workers = max(1, effective_n_jobs(n_jobs))
    sampler = Sampler(path, options, run_at or run_budget, seed, workers, tuple(plugin_modules([path])),
                      privacy_unit=release_unit)
    log(f"auditing {mechanism.name} ({mechanism.label}) options {options}: claim {claim.describe()}; "
        f"{'fixed runs' if runs else f'time budget {seconds:.0f} s'} on {workers} worker(s); numerics {numerics}; "
        f"privacy unit {unit}{' (' + run_as + ')' if run_as else ''}")
    if numerics != "as executed":
        precision_pairs = []
    elif precision_pairs is not None:
        precision_pairs = list(precision_pairs)
    elif unit == "add_remove":
        zeros = [p for p in (pairs or []) if isinstance(p, PairSpec) and p.family == "add_zeros"]
        precision_pairs = [zeros[0] if zeros else PRECISION_PAIR_ADD_REMOVE, PRECISION_PAIR]
    else:
        precision_pairs = [PRECISION_PAIR]
    slots = confirmations + len(precision_pairs)  # events that may be confirmed, fixed before any is

    def report(findings, screened, dropped) -> AuditReport:
        return AuditReport(mechanism.name, options, claim, alpha, findings, screened, dropped, sampler.releases,
                           time.perf_counter() - started, slots, numerics, unit, run_as, low_bits_ran,
                           low_bits_seconds)

    # 0. As executed: the low bits, on pairs whose release's grid may differ (LOW_BITS_SHARE of the time; up to
    # ONE_SIDED_SHARE for an event seen on one side only).
    # A leak is one verdict; the calibration is the other: the search below runs whatever the low bits say
    precision_findings = []
    low_bits_seconds = 0.0
    low_bits_ran = False  # a precision stage that ran (a line that refuses every precision pair has no such verdict)
    one_sided_deadline = None if runs is not None else started + seconds * ONE_SIDED_SHARE
    for k, spec in enumerate(precision_pairs):
        finding = _precision_stage(sampler, _claim_for(claim, spec, unit), alpha / (2 * slots), seconds * LOW_BITS_SHARE / len(precision_pairs),
                                   runs, seed, log, spec, key=10**6 + k, deadline=one_sided_deadline)
        if finding is not None:
            low_bits_ran = True
            log(("EXCEEDS " if finding.exceeded else "within  ") + finding.describe()
                + f" [{time.perf_counter() - started:.0f} s]")
            precision_findings.append(finding)
            if finding.exceeded:
                log("the low bits leak; the calibration is audited next, on paper (low bits rounded away)")
                break  # one leak decides this verdict: the time left goes to the calibration
    low_bits_seconds = time.perf_counter() - started if precision_pairs else 0.0

    # 1. Pilot: which pairs the mechanism accepts, and what a release costs
    if pairs is not None:
        specs = list(pairs)
    else:
        specs = default_add_remove_pairs() + default_pairs() if unit == "add_remove" else default_pairs()
    if unit == "add_remove" and not any(getattr(s, "unit", "replace_one") == "add_remove" for s in specs):
        raise ValueError("an add/remove audit needs add/remove pairs (a row added or removed): the replace-one pairs "
                         "alone are held to group privacy at k = 2 and cannot see a line that leaks on additions; "
                         "add e.g. PairSpec('add_unit', 10), or leave pairs=None")
    if unit == "replace_one":
        wrong = [s.describe() for s in specs if getattr(s, "unit", "replace_one") != "replace_one"]
        if wrong:
            raise ValueError(f"add/remove pairs ({', '.join(wrong[:3])}) in a replace-one audit: pass "
                             f"privacy_unit='add_remove'")
    candidates, dropped = _pilot(sampler, specs, log)
    if not candidates:
        reasons = "; ".join(f"{p}: {why}" for p, why in dropped[:5])
        raise NoPairError(f"mechanism {mechanism.name!r} released on none of the audit's neighbour pairs at "
                          f"{requested} ({reasons})")

    def remaining() -> float:
        return seconds - (time.perf_counter() - started)

    wall = {"per_pilot_second": 1.0 / workers}  # wall seconds per pilot-measured second, updated below

    def runs_for(share_seconds: float, pairs_count: int, cost: float, low: int, high: int) -> int:
        if runs is not None:
            return runs
        count = share_seconds / max(cost * wall["per_pilot_second"], 1e-9) / (2 * pairs_count)
        return int(min(high, max(low, count)))

    # 2. Screen every pair, then the neighbours of the best ones (one greedy step)
    mean_cost = float(np.mean([c.cost for c in candidates]))
    screen_runs = runs_for(0.3 * remaining(), len(candidates), mean_cost, 30, 5000)
    if runs is not None:
        screen_runs = min(runs, 2000)
    else:  # a slow mechanism: screen the first pairs (every family once comes first) that the time affords
        affordable = int(0.3 * remaining() / max(2 * screen_runs * mean_cost / workers, 1e-9))
        if affordable < len(candidates):
            log(f"a release takes {mean_cost * 1e3:.1f} ms: screening {max(affordable, confirmations)} of "
                f"{len(candidates)} pairs in the time budget (--seconds)")
            candidates = candidates[:max(affordable, confirmations)]
    busy = sampler.busy
    _screen(sampler, claim, candidates, screen_runs, unit)
    pilot_seconds = 2 * screen_runs * sum(c.cost for c in candidates)
    wall["per_pilot_second"] = (sampler.busy - busy) / max(pilot_seconds, 1e-9)  # measured throughput
    candidates.sort(key=lambda c: -c.estimate)
    if pairs is None and remaining() > 0.5 * seconds:
        known = {c.pair.spec for c in candidates}
        moves = []
        for c in candidates[:2]:  # pairs=None: every candidate is a PairSpec's
            moves += [m for m in neighbours_of(c.pair.spec) if m not in known and m.n <= 30000 and m.d <= 8]
            known |= set(moves)
        more, why = _pilot(sampler, moves, log, first_key=len(specs))
        dropped += why
        if more:
            _screen(sampler, claim, more, screen_runs, unit)
            candidates = sorted(candidates + more, key=lambda c: -c.estimate)
    log("screened: " + ", ".join(f"{_short(c.pair)} {c.estimate:.2f}" for c in candidates[:5])
        + f" (estimated loss / claim, in-sample); {time.perf_counter() - started:.0f} s")

    # 3. Select and confirm, best pair first; stop at the first confirmed excess
    findings = list(precision_findings)
    chosen = candidates[:confirmations]
    # Bonferroni over the events that may be confirmed, fixed before any is (the precision stage's included)
    level = alpha / (2 * (len(chosen) + len(precision_pairs)))
    for k, cand in enumerate(chosen):
        slot = remaining() / (len(chosen) - k)
        total = runs_for(slot, 1, cand.cost, 400, 2_000_000)
        n_select = runs if runs is not None else total // 2
        n_confirm = runs if runs is not None else total - n_select
        finding = _select_and_confirm(sampler, _claim_for(claim, cand.pair, unit), cand, n_select, n_confirm,
                                      level, seed)
        findings.append(finding)
        log(("EXCEEDS " if finding.exceeded else "within  ") + finding.describe()
            + f" [{time.perf_counter() - started:.0f} s]")
        if finding.exceeded:
            break
    slots = len(chosen) + len(precision_pairs)
    return report(findings, [(c.pair.describe(), c.estimate) for c in candidates], dropped)


def _claim_for(claim: Claim, pair, unit: str) -> Claim:
    """The claim a pair is audited against: under add/remove, a replace-one pair (equal n) is a removal and an
    addition, two add/remove steps, so the claim there is group privacy's at k = 2 (4 rho, 2 eps, (2 eps,
    2 e^eps delta); 2 mu for a Gaussian profile). A native add/remove line needs exactly that (issue 59); a line
    through the reduction meets the tighter replace-one claim too."""
    if unit != "add_remove" or getattr(getattr(pair, "spec", pair), "unit", "replace_one") != "replace_one":
        return claim
    return Claim.of(group_cost(claim.budget, 2), claim.kind == "gaussian")


def _precision_stage(sampler: Sampler, claim: Claim, level: float, share_seconds: float, runs: int | None,
                     seed: int, log, spec: PairSpec = PRECISION_PAIR, key: int = 10**6,
                     deadline: float | None = None) -> Finding | None:
    """Releases on ``spec`` (``PRECISION_PAIR``) before any rounding: the event on their low bits
    (``precision_statistics``) chosen on selection runs, its bound on fresh confirmation runs at ``level``.
    An event that is ``one_sided`` on the selection runs (a float leak's signature) is confirmed in rounds instead
    (unless ``runs`` fixes them): each round adds fresh confirmation runs, doubling them (or as many as the time
    left to ``deadline``, a ``time.perf_counter()``, affords), until the bound exceeds the claim; round k is tested
    at level / 2^(k+1), so every round's bound holds at once with probability 1 - level (alpha spending), wherever
    the rounds stop.
    None when the mechanism refuses the pair. ``key``: the pair's (those of the search count from 0)."""
    pair = spec.build()
    try:
        start = time.perf_counter()
        sampler.sample([(key, pair, 0, "precision_select", 20)], parallel=False, precision=True)
        cost = (time.perf_counter() - start) / 20
    except (ValueError, TypeError, ArithmeticError, RuntimeError) as err:
        log(f"precision stage skipped: the mechanism refused {pair.describe()} ({err})")
        return None
    n = runs if runs is not None else int(min(20000, max(1000, share_seconds / max(4 * cost / sampler.n_jobs, 1e-9))))
    s0, s1 = sampler.sample([(key, pair, 0, "precision_select", n), (key, pair, 1, "precision_select", n)],
                            precision=True)
    event, _ = choose_event(s0, s1, claim, level, n)
    rounds = deadline is not None and runs is None and one_sided(event, s0, s1)
    level_now = level / 2 if rounds else level
    start = time.perf_counter()
    c0, c1 = sampler.sample([(key, pair, 0, "precision_confirm", n), (key, pair, 1, "precision_confirm", n)],
                            precision=True)
    per_run = (time.perf_counter() - start) / n
    bound = confirm(event, c0, c1, claim, level_now)
    name = precision_statistic_name(event.statistic, s0.shape[1])
    if rounds and not bound.value > claim.value:
        seen, other = event.counts(s0, s1)
        log(f"low bits: the event on {name} is one-sided ({seen} of {n} selection runs against {other}), "
            f"{claim.symbol} >= {bound.value:.4g} on {n} confirmation runs: more rounds, until it exceeds the claim "
            f"or {max(deadline - time.perf_counter(), 0):.0f} s are spent")
    total, chunks = n, -(-n // CHUNK)
    while rounds and not bound.value > claim.value:
        more = min(total, int((deadline - time.perf_counter()) / max(per_run, 1e-9)))  # doubling, as time affords
        if more < CHUNK:
            break
        start = time.perf_counter()
        m0, m1 = sampler.sample([(key, pair, 0, "precision_confirm", more), (key, pair, 1, "precision_confirm", more)],
                                precision=True, first_chunk=chunks)
        per_run = (time.perf_counter() - start) / more
        k1, k0 = event.counts(m0, m1)
        total, chunks, level_now = total + more, chunks + -(-more // CHUNK), level_now / 2
        bound = confirm_counts(event, bound.counts[0] + k1, total, bound.counts[1] + k0, total, claim, level_now)
    return Finding(f"{pair.describe()} [low bits]", name, bound, claim, level_now, stage="low bits")


def one_sided(event: Event, s0: np.ndarray, s1: np.ndarray) -> bool:
    """Whether an event looks like a float leak on the runs that chose it: seen ONE_SIDED_MIN times or more on one
    dataset, at least ONE_SIDED_RATIO times as often as on the other (an event one side's releases never give has
    an unbounded loss: only the runs limit its bound)."""
    seen, other = event.counts(s0, s1)
    return seen >= ONE_SIDED_MIN and other * ONE_SIDED_RATIO <= seen


def _short(pair) -> str:
    spec = getattr(pair, "spec", None)
    return spec.describe() if spec is not None else pair.describe()


def _pilot(sampler: Sampler, specs: list, log, first_key: int = 0) -> tuple[list[_Candidate], list]:
    """Build each pair, run a few releases on both datasets; refused pairs are dropped with the reason."""
    candidates, dropped = [], []
    for i, spec in enumerate(specs):
        try:
            pair = spec.build() if isinstance(spec, PairSpec) else spec
            start = time.perf_counter()
            sampler.sample([(first_key + i, pair, 0, "pilot", 3), (first_key + i, pair, 1, "pilot", 3)],
                           parallel=False)
            cost = (time.perf_counter() - start) / 6
        except (ValueError, TypeError, ArithmeticError, RuntimeError) as err:
            what = spec.describe() if hasattr(spec, "describe") else str(spec)
            dropped.append((what, f"{type(err).__name__}: {err}"))
            continue
        candidates.append(_Candidate(first_key + i, pair, cost))
    if dropped:
        log(f"{len(dropped)} pair(s) refused by the mechanism, e.g. {dropped[0][0]}: {dropped[0][1][:160]}")
    return candidates, dropped


def _screen(sampler: Sampler, claim: Claim, candidates: list[_Candidate], count: int,
            unit: str = "replace_one") -> None:
    requests = [(c.key, c.pair, side, "screen", count) for c in candidates for side in (0, 1)]
    results = sampler.sample(requests)
    for i, c in enumerate(candidates):
        F0, F1 = results[2 * i], results[2 * i + 1]
        c.data = [[F0], [F1]]
        c.estimate = _estimate(_claim_for(claim, c.pair, unit), F0, F1,
                               len(sampler.texts.get(c.key, ())))


def _select_and_confirm(sampler: Sampler, claim: Claim, cand: _Candidate, n_select: int, n_confirm: int,
                        level: float, seed: int) -> Finding:
    """Train the attack and choose the event on selection runs; bound it on fresh confirmation runs."""
    key, pair = cand.key, cand.pair
    texts = sampler.texts.get(key, [])  # named by the pilot and screen runs: fixed from here
    half = max(n_select // 2, 1)
    train = sampler.sample([(key, pair, 0, "train", half), (key, pair, 1, "train", half)])
    select = sampler.sample([(key, pair, 0, "select", n_select - half), (key, pair, 1, "select", n_select - half)])
    # the screening runs are independent of the confirmation runs: they train the attack too
    train = [np.vstack(cand.data[side] + [train[side]]) for side in (0, 1)]
    model = _fit_attack(train[0], train[1], seed)
    # a stricter level on the selection runs than the confirmation's: it discounts rare events whose
    # selection counts are mostly luck (they rarely confirm)
    event, _ = choose_event(_scores(model, select[0], len(texts)), _scores(model, select[1], len(texts)), claim,
                            level / 20, n_confirm)
    fresh = sampler.sample([(key, pair, 0, "confirm", n_confirm), (key, pair, 1, "confirm", n_confirm)])
    s0, s1 = _scores(model, fresh[0], len(texts)), _scores(model, fresh[1], len(texts))
    bound = confirm(event, s0, s1, claim, level)
    name = _statistic_name(event.statistic, s0.shape[1], model is not None, texts)
    return Finding(pair.describe(), name, bound, claim, level)


def audit_sweep(name, budgets=None, *, seconds: float = 240.0, alpha: float = 0.05, log=None,
                **kwargs) -> list[AuditReport]:
    """``audit`` at several claimed budgets (default ``SWEEP_BUDGETS`` of the mechanism's notion), the
    time split by ``SWEEP_SHARES`` and alpha by the number of budgets (Bonferroni), so that the
    confidence 1 - alpha covers every budget together. Stops at the first budget whose calibration (the
    verdict on paper) exceeds its claim. Audited as executed, a leak of the low bits ends neither verdict: the
    later budgets skip the precision stage (that verdict is known) and give its time to the calibration."""
    mechanism = get_mechanism(name)
    if not 0 < alpha < 1 or not seconds > 0:
        raise ValueError(f"alpha must be in (0, 1) and seconds > 0, got alpha={alpha!r}, seconds={seconds!r}")
    budgets = list(budgets) if budgets is not None else list(SWEEP_BUDGETS[mechanism.notion])
    shares = SWEEP_SHARES if len(budgets) == len(SWEEP_SHARES) else (1 / len(budgets),) * len(budgets)
    started, reports = time.perf_counter(), []
    for k, budget in enumerate(budgets):
        left = seconds - (time.perf_counter() - started)
        share = left * shares[k] / sum(shares[k:])
        more = dict(kwargs)
        if any(r.low_bits_exceeded for r in reports):
            more["precision_pairs"] = []  # the low bits leaked at an earlier budget: the calibration only
        try:
            report = audit(name, budget, seconds=max(share, 1.0), alpha=alpha / len(budgets), log=log, **more)
        except NoPairError as err:
            if k == 0:
                raise
            (log or print)(f"skipped {budget}: {err}")  # e.g. a budget too small for the mechanism's n
            continue
        reports.append(report)
        if report.calibration_exceeded:
            break
    return reports


def verdicts(reports: list[AuditReport]) -> dict:
    """The two verdicts of one audit (several claims, e.g. ``audit_sweep``'s): "paper" (the calibration, low bits
    rounded away) and, when audited as executed, "low bits"; each None (no evidence against the claim) or the
    first report whose claim it exceeds. ``exit_status``: 1 the calibration exceeds its claim (whatever the low
    bits say), 3 only the low bits leak, 0 both hold (the command line's, dpcov/commands/audit.py)."""
    paper = next((r for r in reports if r.calibration_exceeded), None)
    low = next((r for r in reports if r.low_bits_exceeded), None)
    executed = any(r.numerics == "as executed" for r in reports)
    return {"paper": paper, "low bits": low, "as executed": executed,
            "exit_status": 1 if paper is not None else 3 if low is not None else 0}
