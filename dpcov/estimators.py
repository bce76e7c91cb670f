"""scikit-learn estimators on the suite's mechanisms: a private covariance, a private PCA and ridge
regression from a private covariance (Amin et al. 2019, App. C).

Conventions (scikit-learn's): ``__init__`` only stores its parameters, ``fit`` returns self, fitted
attributes end in ``_``; ``get_params``/``set_params``/``clone`` work; ``random_state`` (an int, a
``numpy.random.Generator`` or None) seeds the noise, so a fixed int gives the same release on every fit.
Use a fixed seed for tests and reproducible examples only: two releases with the same seed share their
noise, so their difference is the difference of the data (for GaussCov, Sigma(D) - Sigma(D') exactly),
and the budgets of such releases do not compose. For real releases keep ``random_state=None`` (fresh
noise on every fit from ChaCha20 keyed by the operating system's entropy, with the default hardened numerics:
``numerics`` below).

Privacy, said explicitly by the caller:
- ``radius``: a public bound on every row's l2 norm (for PrivateRidge: of the row [x, y]). It is never
  taken from the data: without it ``fit`` refuses. Rows outside the ball are an error, or, with
  ``clip=True``, scaled onto its surface (a per-row map that needs no data: still private).
- ``centering``: "assume_centered" (the data are centred with public knowledge: Sigma = X^T X / n) or
  "private" (a private mean spends ``mean_share`` of the budget, the covariance the rest, by basic
  composition in one accountant; centred rows then lie in the 2r-ball). There is no default.
- ``mechanism``: a registered name, or "auto" (the default): the measured best for the task, n, d, k and
  the budget (dpcov/defaults.py). Where that choice depends on how tight the radius is for most rows and n
  allows, auto first releases the rows' median norm (an SVT over the norm histogram, ``auto_share`` of the
  budget, in the ledger; auto_share=0: never) and weighs the measured scenarios by it; ``advice_`` says what
  it read.
- ``budget``: ZCDP(rho), PureDP(eps) or ApproxDP(eps, delta) for the whole fit; the mechanism runs at
  the largest budget of its own notion that implies its share (as ``release`` does). The spent
  budget and every sub-step are in ``budget_spent_`` and ``ledger_``.
"""
from __future__ import annotations

import math
import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, RegressorMixin, TransformerMixin
from sklearn.utils import column_or_1d
from sklearn.utils.validation import check_is_fitted, validate_data

from dpcov.data.chunks import Rows, is_dask
from dpcov.mechanisms.mean import mean_noise_sd, private_mean_of
from dpcov.mechanisms.noise import check_numerics, is_secure, secure_generator
from dpcov.mechanisms.norm_bound import norm_histogram, private_norm_bound_of, private_norm_quantile_of
from dpcov.mechanisms.privacy import ApproxDP, PureDP, ZCDP, Accountant, budget_guaranteeing
from dpcov.mechanisms.problem import BandSums, CovProblem, clip_rows, row_norms
from dpcov.mechanisms.exact_sums import ExactBandSums, exact_problem, row_scale
from dpcov.mechanisms.neighbours import ADD_REMOVE, REPLACE_ONE, Neighbours
from dpcov.mechanisms.regression import RidgeRelease, RidgeTask, ridge_noise_covariance
from dpcov.mechanisms.registry import MECHANISMS, REDUCTION_ROUTE, check_options, get_mechanism, native_route, release
from dpcov.mechanisms.spectral import Spectral, as_matrix, clamp_eigenvalues, symmetrized
from dpcov.mechanisms.units import (COUNT_SHARE, check_count_share, check_privacy_unit, check_rows_per_person,
                                    group_cost, group_privacy_note, person_budget, person_drop, private_count,
                                    resized_drop, selection_generators)
from dpcov.session import Session

from .forecast import forecast
from .defaults import AUTO_SHARE, TYPICAL_QUANTILE, advise, releases_typical, typical_of_release

CENTERINGS = ("assume_centered", "private")
RADIUS_RANGE = (2.0**-400, 2.0**400)  # r^2 and the noise's grid stay normal floats
MIN_STEP_EPS = 1e-8  # the smallest eps (or sqrt(2 rho)) of a hardened step: noise of at most ~2^50 grid steps


class UselessReleaseWarning(UserWarning):
    """A release forecast (from public facts) to be no better than a trivial one, or the trivial one itself."""


def hardenable(mechanism) -> bool:
    """Whether a mechanism can release with hardened numerics (mechanisms/noise.py): it takes the option
    ``numerics``, or it draws no noise at all (the zero matrix)."""
    return "numerics" in mechanism.option_names() or mechanism.name == "zero"
TASKS = {"PrivateCovariance": "covariance", "PrivatePCA": "pca", "PrivateRidge": "ridge"}


@contextmanager
def _no_cell_in_errors():
    """Conversion errors of the data without the value that failed (numpy's "could not convert string to float:
    'Paris'" prints it): an error from the data is an output too."""
    try:
        yield
    except ValueError as err:
        if "could not convert" not in str(err) and "not a number" not in str(err):
            raise
        raise ValueError("the data hold a value that is not a number: choose numeric columns (the error names no "
                         "value)") from None


def _generator(random_state, numerics: str = "idealized") -> np.random.Generator:
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None and numerics == "hardened":  # for publishing: a cryptographic generator
        return secure_generator()
    if random_state is None or (isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool)):
        return np.random.default_rng(random_state)
    raise ValueError(f"random_state must be an int, a numpy.random.Generator or None, got {random_state!r}")


def _share(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(f"{name} must lie in (0, 1), got {value!r}")
    return float(value)


# The steps of a fit as functions of one block of rows (run where the block is: Rows.reduce).
def _norm_histogram(X: np.ndarray) -> np.ndarray:
    return norm_histogram(row_norms(X))


def _bad_rows(X: np.ndarray, limit: float, histogram: bool) -> np.ndarray:
    """[rows holding NaN or inf, finite rows of norm > limit, then (``histogram``) the finite rows' norm histogram]
    of a block, from the rows' norms alone (no copy of X: row_norms gives NaN or inf exactly for a row holding one,
    a finite norm for every finite row). The histogram serves radius='private' when no row is dropped: one pass
    fewer."""
    norms = row_norms(X)
    finite = np.isfinite(norms)
    counts = [int(len(norms) - finite.sum()), int((norms[finite] > limit).sum())]
    return np.concatenate([counts, norm_histogram(norms[finite])]) if histogram else np.array(counts)


def _clipped(X: np.ndarray, clip: float | None) -> np.ndarray:
    return X if clip is None else clip_rows(X, clip)[0]


def _clipped_sum(X: np.ndarray, clip: float | None) -> np.ndarray:
    return _clipped(X, clip).sum(axis=0)


def _band_sums(X: np.ndarray, clip: float | None, shift: np.ndarray | None, radius: float) -> BandSums:
    """A block's band sums (an array's rows, a file's block, a Dask partition), by the one-call pass that reads X's
    rows in place and clips them itself when nothing shifts them (BandSums.add_columns): the one routine of every
    input kind, with or without dropped rows (one band per row whatever the path: issue 58), and 1.3-2.2x faster than
    clip_rows then add's BLAS products per band (results/measurements/band_sums.txt). A finite row whose squares exceed float64 is
    clipped by clip_rows first (it norms such a row by scaling it), in the block that holds one."""
    sums = BandSums(radius)
    if shift is not None:
        sums.add_columns((_clipped(X, clip) - shift).T)
        return sums
    try:
        sums.add_columns(X.T, np.inf if clip is None else clip)
    except ValueError:
        if clip is None:
            raise
        sums = BandSums(radius)
        sums.add_columns(clip_rows(X, clip)[0].T)
    return sums


def _exact_band_sums(X: np.ndarray, clip: float | None, shift: np.ndarray | None, radius: float,
                     grams: bool = True, directions: bool = True, level: int | None = None,
                     lean: bool = False) -> ExactBandSums:
    """A block's exact sums (mechanisms/exact_sums.py): the rows clipped, shifted, rounded to their band's grid and
    added as integers -- the same integers for every input kind, block and order. ``grams=False``: no d x d
    products (the mean's pass, where the covariance will sum rows shifted by the mean anyway; a deferred first
    pass); ``directions=False``: not the directions' (a line that never clips, ``Mechanism.clips``); ``level``: the
    products of that clipping level alone (a deferred second pass); ``lean``: what that one use reads alone."""
    return ExactBandSums(radius, grams=grams, directions=directions, level=level, lean=lean).add(
        X, np.inf if clip is None else clip, shift)


def _exact_kind(mechanism) -> tuple:
    """Which sums the covariance's exact sums are for ``mechanism`` (issue 61), as ``_exact_band_sums``'s (grams,
    directions, level, lean): a line that reads one level (``Mechanism.exact_levels``) and never clips, level 0's
    products alone (one pass); one that chooses its level privately (AdaptiveCov), none in the first pass (deferred:
    the chosen level's in a second); any other, every band's (the directions' too where it clips)."""
    if mechanism.exact_levels:
        return (False, True, None, False) if mechanism.clips else (True, False, 0, False)
    return True, mechanism.clips, None, False


MEAN_ONLY = (False, True, None, True)  # a mean's pass the covariance will not reuse: the rows' sums alone


def _kind_of(sums: ExactBandSums) -> tuple:
    return sums.grams, sums.with_directions, sums.level, sums.lean


@dataclass
class _Fit:
    """What a fit's steps share: the public facts so far and the rows the next step reads. Only a privatised
    step (its ``accountant.spend``) reads more than these facts."""

    rows: Rows  # the rows left to read: after the persons' bound and the count's resizing
    n: int  # the public row count: n under replace_one, the released count ñ under add_remove
    d: int
    budget: object  # the fit's budget per row (the person's budget over group privacy), every share's base
    accountant: Accountant
    rng: np.random.Generator
    components: int | None = None
    mechanism: object = None  # chosen after the count (auto reads n), again after the median norm
    radius: float | None = None  # the released rows' ball (grows by the mean's norm where rows are centred)
    clip: float | None = None  # the radius rows are clipped to (a public radius, or the released bound)
    histogram: np.ndarray | None = None  # the padded rows' norm histogram: the bound's and the median's query
    histogram_of_all: np.ndarray | None = None  # every row's norm histogram (the check's pass; radius='private')
    typical: float | None = None  # the released median norm over the radius (auto; None: not released)
    centre: np.ndarray | None = None
    shift: np.ndarray | None = None
    notes: list = field(default_factory=list)  # ledger lines that spend nothing (group privacy)
    selection: tuple = ()  # generators of the persons' and the count's row selections (units.selection_generators)
    every_row: Rows | None = None  # add_remove: the rows before the count's resizing, which a native line sums
    exact: ExactBandSums | None = None  # add_remove, hardened: every row's exact sums (clipped, not shifted)


class _PrivateFit:
    """The shared steps of every estimator's fit, in the order ``_private_covariance`` runs them; each says what it
    reads, what it releases and what it is charged:

    ========== =================================== ================================ ==========================
    step       reads                               releases                         charged
    ========== =================================== ================================ ==========================
    check      every row: NaN/inf, outside a       nothing (an error naming no row, nothing
               public radius                       or clip=True)
    persons    identifiers, k                      nothing (drops rows beyond k)    nothing; the rest at the
                                                                                    row budget (group privacy)
    count      n (add_remove only)                 ñ (rows beyond ñ then dropped,   count_share
                                                   zero rows pad to ñ)
    choose     public facts: ñ, d, k, budget       the mechanism (auto)             nothing
    bound      the norms' histogram                a norm bound (radius='private'), radius_share
                                                   rows clipped to it
    typical    the norms' histogram (auto)         the median norm; auto chooses    auto_share
                                                   again
    centre     the rows' sum                       a private mean                   mean_share
    covariance the rows' band sums                 the covariance                   the rest
    ========== =================================== ================================ ==========================

    A session (``session=``) is charged the whole budget before the first step reads any row, and gets the ledger
    after the last."""

    _provides: tuple = ()  # what a mechanism may need that this estimator gives it (PrivateRidge: "a ridge task")

    def _check_static(self, n: int | None = None, d: int | None = None, components: int | None = None):
        """Every declaration that needs no row (bad input spends nothing: checked before a session is charged).
        ``n``: the public row count under replace_one; under add_remove (None) the count is not known yet, so the
        shares must leave the covariance a part even where auto would release the median norm."""
        self._check_common()
        if self.radius is None:
            raise ValueError(f"{type(self).__name__} needs radius=: a public bound on every row's l2 norm (not "
                             f"taken from the data, which would not be private); e.g. radius=1.0 for rows "
                             f"scaled into the unit ball, and clip=True to project rows outside it onto it; or "
                             f"radius='private' to spend radius_share of the budget on a private bound")
        if self.radius != "private" and (isinstance(self.radius, (bool, str)) or
                                         not isinstance(self.radius, (int, float, np.floating))
                                         or not np.isfinite(self.radius) or self.radius <= 0):
            raise ValueError(f"radius must be a finite number > 0 or 'private', got {self.radius!r}")
        if self.radius != "private" and not RADIUS_RANGE[0] <= self.radius <= RADIUS_RANGE[1]:
            raise ValueError(f"radius = {self.radius:g} is outside [2^-400, 2^400] = [{RADIUS_RANGE[0]:.3g}, "
                             f"{RADIUS_RANGE[1]:.3g}], where its square and the noise on the grid are floats: rescale "
                             f"the data (and the radius with it) by a public factor, e.g. into the unit ball")
        if self.radius == "private":
            _share("radius_share", self.radius_share)
        if self.centering not in CENTERINGS:
            raise ValueError(f"centering must be 'assume_centered' (the data are centred with public knowledge) "
                             f"or 'private' (a private mean spends mean_share of the budget), got {self.centering!r}")
        if self.centering == "private":
            _share("mean_share", self.mean_share)
        if self.mechanism == "auto" and self.auto_share != 0:  # 0: never release the median (public facts only)
            _share("auto_share", self.auto_share)
        typical = self.mechanism == "auto" and (n is None or releases_typical(
            TASKS[type(self).__name__], n, d, self._row_budget(), components, self.auto_share))
        spent = self._spent_before_release(typical_released=typical)
        if self.numerics == "hardened" and spent < 1:
            self._check_representable(spent, d)
        if spent >= 1:
            raise ValueError(f"count_share (add_remove) + radius_share + mean_share (+ auto_share where "
                             f"mechanism='auto' releases the median norm) must leave the covariance a share of the "
                             f"budget, got {spent:g}")
        if self.mechanism == "auto":
            if self.mechanism_options:
                raise ValueError("mechanism_options need a named mechanism: with mechanism='auto' the choice is "
                                 "the suite's, and so are its options")
        else:
            self._checked_mechanism(get_mechanism(self.mechanism), self.budget)

    _rho_composition = False  # PrivateRidge: an (eps, delta) budget composed in rho (``_composed_in``)

    def _row_budget(self, k: int | None = None):
        """What one row's steps split: the budget composed in rho where it is (``_composed_in``), then divided among a
        person's ``k`` rows by group privacy (rho / k^2: converting first keeps more of it)."""
        return person_budget(self._composed_in(self.budget), k or self.max_rows_per_person or 1)

    def _composed_in(self, budget):
        """The budget the fit's steps split. PrivateRidge spends an (eps, delta) budget as the rho-zCDP that implies
        it (ApproxDP.to_zcdp): the count, mean and covariance then compose in rho, far tighter than adding their
        epsilons and deltas (results/regression/table_basic_composition.md: better in 44 of 60 cells, worse in 13,
        by 0.02 R^2 at the median, up to 26 where n is small). Pure steps inside (AdaptiveCov's sparse vector) run at
        eps_within of their rho share, which the measurement includes. Not with radius="private" (its sparse vector
        over the norms, measured at (eps, delta) composition), nor for a named (eps, delta) or pure mechanism; not
        yet for PCA and covariance, whose defaults were measured at (eps, delta) composition."""
        if not (self._rho_composition and isinstance(budget, ApproxDP)) or self.radius == "private":
            return budget
        if self.mechanism != "auto" and get_mechanism(self.mechanism).notion is not ZCDP:
            return budget
        return budget.to_zcdp()

    def _check_common(self) -> None:
        """The declarations every fit checks first: the budget, numerics, unit, shares, persons' cap and session."""
        if not isinstance(self.budget, (ZCDP, PureDP, ApproxDP)):
            raise TypeError(f"budget must be ZCDP(rho), PureDP(eps) or ApproxDP(eps, delta), got {self.budget!r}")
        check_numerics(self.numerics)
        check_privacy_unit(self.privacy_unit)
        if self.privacy_unit == "add_remove":
            check_count_share(self.count_share)
        if self.max_rows_per_person is not None:
            check_rows_per_person(self.max_rows_per_person)
        if self.session is not None:
            if not isinstance(self.session, Session):
                raise TypeError(f"session must be a dpcov.Session, got {self.session!r}")
            if self.session.privacy_unit != self.privacy_unit:
                raise ValueError(f"the session protects {self.session.privacy_unit!r} neighbours and this "
                                 f"estimator {self.privacy_unit!r}: pass privacy_unit={self.session.privacy_unit!r}")

    def _check_representable(self, spent: float, d: int | None) -> None:
        """Hardened numerics draw exact integer noise of at most about 2^50 grid steps: a step whose share of the
        budget is below ``MIN_STEP_EPS`` (as eps, or sqrt(2 rho)) -- more for many entries, d(d+1)/2 of them each
        rounded on the grid -- cannot be drawn. Refused here, before any row is read, in the budget's terms."""
        shares = [share for share, used in ((self.count_share, self.privacy_unit == "add_remove"),
                                            (self.radius_share, self.radius == "private"),
                                            (self.mean_share, self.centering == "private"),
                                            (self.auto_share, self.mechanism == "auto" and self.auto_share),
                                            (1 - spent, True)) if used]
        smallest = self._row_budget().scaled(min(shares))
        eps = math.sqrt(2 * smallest.rho) if isinstance(smallest, ZCDP) else smallest.eps
        entries = 1 if d is None else d * (d + 1) // 2
        floor = max(MIN_STEP_EPS, entries * 2.0**-44)
        if eps < floor:
            raise ValueError(f"budget {self.budget} is below what hardened noise can represent: its smallest step "
                             f"(a share {min(shares):g} of it) would be eps = {eps:.3g}, and exact integer noise needs "
                             f"eps >= {floor:.3g} per step here (noise at most ~2^50 grid steps). Such a release would "
                             f"be noise ~1/eps times the data's scale: raise the budget (or the smallest share)")

    def _checked_mechanism(self, mechanism, budget):
        """A named or chosen mechanism that can run this fit, or a clear error."""
        missing = [need for need in mechanism.needs if need not in self._provides]
        if missing:
            raise ValueError(f"mechanism {mechanism.name!r} needs {', '.join(missing)}: not a "
                             f"{type(self).__name__} mechanism")
        if _regression_line(mechanism) and "numerics" not in mechanism.option_names() and \
                "raw rows" not in mechanism.needs:
            raise ValueError(f"mechanism {mechanism.name!r} releases a model for rows in the unit ball with float noise "
                             f"(no hardened numerics, no centring): release it with dpcov.release on a ridge task; "
                             f"PrivateRidge runs the regression lines that take numerics= (e.g. 'adassp')")
        if self.privacy_unit == "add_remove" and mechanism.add_remove is not None:
            raise ValueError(f"mechanism {mechanism.name!r} cannot protect a row's presence "
                             f"(privacy_unit='add_remove'): {mechanism.add_remove}. Use privacy_unit='replace_one' "
                             f"(n public) or another mechanism; mechanism='auto' chooses among those that qualify")
        options = dict(self.mechanism_options or {})
        check_options(mechanism, options)
        for option, value in mechanism.not_private:
            if options.get(option) == value:
                raise ValueError(f"{option}={value!r} is {mechanism.label}'s as-published calibration, not private at "
                                 f"the claimed budget (mechanisms/registry.py: not_private): the estimators refuse it")
        if self.radius == "private" and mechanism.own_radius is not None:
            option, value = mechanism.own_radius
            if option in options and options[option] != value:
                raise ValueError(f"{mechanism.name} would release the rows' norm bound a second time "
                                 f"({option}={options[option]!r}) after radius='private' released it: leave "
                                 f"{option} unset (the estimators pass {option}={value!r})")
        try:
            budget_guaranteeing(budget, mechanism.notion)
        except ValueError as err:
            raise ValueError(f"mechanism {mechanism.name!r} ({mechanism.notion.__name__}) cannot meet budget "
                             f"{budget}: {err}; mechanism='auto' chooses one that can") from None
        return mechanism

    def _choose(self, fit: _Fit, typical: float | None = None):
        """The mechanism: the named one, or auto's choice from public facts (the public count, d, k, the fit's
        budget; ``typical``: the released median norm) among those that qualify for the unit and numerics."""
        if self.mechanism != "auto":
            mechanism = get_mechanism(self.mechanism)
            self.advice_ = None
            if self.numerics == "hardened" and not hardenable(mechanism):  # named explicitly (auto picks none)
                names = sorted(m for m in MECHANISMS if hardenable(get_mechanism(m)) and not get_mechanism(m).needs)
                warnings.warn(f"mechanism {mechanism.name!r} has no hardened numerics (its noise is not additive "
                              f"noise on a grid: {mechanism.label} draws from a continuous distribution in floats): "
                              f"its release runs with idealized numerics, private on paper, and the ledger says so. "
                              f"Hardened: {names}", UserWarning, stacklevel=4)
            return mechanism
        self.advice_ = advise(TASKS[type(self).__name__], fit.n, fit.d, fit.budget, fit.components, typical=typical)
        qualifies = [name for name, _ in self.advice_.ranking if self._qualifies(get_mechanism(name))]
        scores = dict(self.advice_.ranking)
        if "zero" in qualifies and qualifies[0] != "zero" and scores["zero"] >= scores[qualifies[0]]:
            qualifies.remove("zero")  # a tie with the zero matrix (e.g. a threshold that keeps nothing): the release
            qualifies.insert(0, "zero")  # that spends nothing and says so, not one that draws noise to the same end
        if not qualifies:
            raise ValueError(f"no mechanism measured for this task can release under {fit.budget} with "
                             f"numerics={self.numerics!r} and privacy_unit={self.privacy_unit!r}: use "
                             f"numerics='idealized'")
        if qualifies[0] != self.advice_.mechanism:
            why = [] if hardenable(get_mechanism(self.advice_.mechanism)) or self.numerics != "hardened" \
                else ["numerics='hardened'"]
            why += ["tied with the zero matrix"] if qualifies[0] == "zero" else []
            why += [] if get_mechanism(self.advice_.mechanism).add_remove is None or \
                self.privacy_unit != "add_remove" else ["privacy_unit='add_remove'"]
            self.advice_ = replace(self.advice_, mechanism=qualifies[0], reason=(
                f"{self.advice_.reason}; {' and '.join(why)}: {qualifies[0]}, the best ranked that qualifies"))
        return self._checked_mechanism(get_mechanism(self.advice_.mechanism), fit.budget)

    def _qualifies(self, mechanism) -> bool:
        return (self.numerics != "hardened" or hardenable(mechanism)) and \
            (self.privacy_unit != "add_remove" or mechanism.add_remove is None)

    def _rows(self, X):
        """An array (scikit-learn's checks), or ``Rows``: a Dask array or dataframe, or the path of a table
        file (.npy, .csv, .tsv, .parquet: every column), summed a block at a time, never loaded whole."""
        if isinstance(X, Rows) or is_dask(X) or isinstance(X, (str, os.PathLike)):
            rows = X if isinstance(X, Rows) else Rows(X)  # quiet in the fit (_private_covariance)
            self.n_features_in_ = rows.d
            return rows
        with _no_cell_in_errors():
            return validate_data(self, X, dtype=np.float64, ensure_all_finite=False)  # NaN: after the charge

    def _spent_before_release(self, typical_released: bool = False) -> float:
        return (self.count_share if self.privacy_unit == "add_remove" else 0.0) + \
            (self.radius_share if self.radius == "private" else 0.0) + \
            (self.mean_share if self.centering == "private" else 0.0) + \
            (self.auto_share if typical_released and self.mechanism == "auto" else 0.0)

    # --- the steps --------------------------------------------------------------------------------------
    def _checked_persons(self, persons, rows: Rows):
        """The identifiers as an array, or None; a clear error (before anything is charged) where they and
        max_rows_per_person do not go together."""
        if persons is None:
            if self.max_rows_per_person is not None:
                raise ValueError("max_rows_per_person needs persons=: one identifier per row, passed to fit")
            return None
        if self.max_rows_per_person is None:
            raise ValueError("persons= needs max_rows_per_person=k: each person's rows beyond k are dropped, and "
                             "the fit is private for the person by group privacy over k rows")
        if self.privacy_unit != "add_remove":
            raise ValueError("persons= protects a person's presence: it needs privacy_unit='add_remove' (under "
                             "'replace_one' the public n would tell how many rows a person has)")
        check_rows_per_person(self.max_rows_per_person)
        persons = np.asarray(persons)
        if persons.ndim != 1 or len(persons) != rows.n:
            raise ValueError(f"persons has {len(persons) if persons.ndim == 1 else persons.shape} identifiers, not one "
                             f"per row of the data (the error says not how many rows: under add_remove n is private)")
        return persons

    def _step_persons(self, fit: _Fit, persons) -> None:
        """Reads the identifiers; releases nothing; drops each person's rows beyond max_rows_per_person at random
        (the fit's generator). The fit then runs at the row budget that group privacy turns into the person's."""
        if persons is None:
            return
        fit.rows = fit.rows.dropping(person_drop(persons, self.max_rows_per_person, fit.selection[0]))
        fit.notes.append((group_privacy_note(self._composed_in(self.budget), self.max_rows_per_person), None))

    def _step_count(self, fit: _Fit) -> None:
        """add_remove: reads n; releases ñ (count_share); keeps a random ñ of the rows when there are more. The
        rows that follow are those, padded with ñ - n zero rows (mechanisms/units.py): the replace-one steps below
        then hold for add/remove neighbours. replace_one: n is public."""
        if self.privacy_unit != "add_remove":
            fit.n = fit.rows.n
            return
        n = private_count(fit.rows.n, fit.budget.scaled(self.count_share), fit.accountant, fit.rng)
        fit.every_row = fit.rows
        candidates = np.setdiff1d(np.arange(fit.rows.n + len(fit.rows.drop)), fit.rows.drop, assume_unique=True)
        extra = resized_drop(candidates, n, fit.selection[1], total=fit.rows.n + len(fit.rows.drop))
        if len(extra):
            fit.rows = fit.rows.dropping(extra)
        fit.n = n

    def _padded_histogram(self, fit: _Fit) -> np.ndarray:
        """The norms' histogram of the rows padded to the public count (zero rows: the last cell)."""
        if fit.histogram is None:  # every row's, counted by the check, unless rows were dropped since (the same counts)
            histogram = fit.histogram_of_all.copy() if fit.histogram_of_all is not None and not len(fit.rows.drop) \
                else fit.rows.reduce(_norm_histogram, np.add).copy()
            histogram[-1] += fit.n - fit.rows.n  # >= 0: at most n rows are left
            fit.histogram = histogram
        return fit.histogram

    def _step_check(self, fit: _Fit) -> None:
        """Reads every row (before any is dropped: whether an error fires never depends on a random draw): rows
        holding NaN or inf, and rows outside a public radius; releases nothing but an error, which names no row and
        no value (an error is an output too), and comes after the session was charged. Rows are then clipped to a
        public radius whatever the check found (clipping leaves a row inside the ball as it is): a row within
        rounding of the sphere, norm in (r, r (1 + 1e-12)], is clipped onto it, never kept outside."""
        private = self.radius == "private"
        limit = np.inf if private else float(self.radius) * (1 + 1e-12)
        not_finite, outside, *histogram = fit.rows.reduce(_bad_rows, np.add, limit, private)
        fit.histogram_of_all = np.array(histogram) if private else None
        if not_finite:  # the error says neither which rows nor how many: it is an output too
            raise ValueError("data contains NaN or inf: drop or impute those rows before the fit (the error names no "
                             "row and no count: it is an output too)")
        if outside and not self.clip:
            raise ValueError(f"some rows have norm > radius = {self.radius:g}: pass a radius that bounds every row, "
                             f"clip=True to project them onto the ball, or radius='private' (the error names no row "
                             f"and no count)")
        if self.radius != "private":
            fit.radius = fit.clip = float(self.radius)

    def _step_bound(self, fit: _Fit) -> None:
        """radius='private': reads the norms' histogram (rows padded to the public count); releases a bound
        (radius_share); rows are clipped to it. A mechanism that would release its own bound takes this one
        (``Mechanism.own_radius``): one release per quantity."""
        if self.radius == "private":
            fit.radius = fit.clip = private_norm_bound_of(self._padded_histogram(fit),
                                                          fit.budget.scaled(self.radius_share), fit.accountant,
                                                          fit.rng, numerics=self.numerics)

    def _step_typical(self, fit: _Fit) -> None:
        """auto, where the measured choice depends on it: reads the norms' histogram; releases the median norm
        (auto_share); chooses again with it."""
        if self.mechanism == "auto" and releases_typical(TASKS[type(self).__name__], fit.n, fit.d, fit.budget,
                                                         fit.components, self.auto_share):
            median = private_norm_quantile_of(self._padded_histogram(fit), TYPICAL_QUANTILE,
                                              fit.budget.scaled(self.auto_share), fit.accountant, fit.rng,
                                              numerics=self.numerics)
            fit.typical = typical_of_release(median, fit.radius)
            fit.mechanism = self._choose(fit, typical=fit.typical)

    def _warn_if_useless(self, fit: _Fit) -> None:
        """Before the covariance's budget is spent: the forecast from public facts (dpcov/forecast.py) -- the public
        count, d, the covariance's share, the radius, the released median norm -- and a warning where it says the
        release will be no better than the trivial one, or is the trivial one (the zero matrix)."""
        task = TASKS[type(self).__name__]
        budget = fit.budget.scaled(1 - self._spent_before_release(typical_released=fit.typical is not None))
        self.forecast_ = forecast(task, fit.mechanism.name, fit.n, fit.d, fit.radius, budget, fit.typical)
        if fit.mechanism.name == "zero":
            better = next((name for name, _ in (self.advice_.ranking if self.advice_ else ()) if name != "zero"
                           and self._qualifies(get_mechanism(name))), None)
            other = None if better is None else forecast(task, better, fit.n, fit.d, fit.radius, budget, fit.typical)
            why = "auto chose it: no mechanism is measured to beat it" if self.advice_ else "named"
            needs = "" if other is None or not other.useless else \
                f" {better}, the next ranked, would beat it with {other.needs(fit.n, budget)}."
            warnings.warn(f"{type(self).__name__} releases the zero matrix ({why} at n = {fit.n}, d = {fit.d}, "
                          f"{fit.budget}): nothing about the data is released.{needs}", UselessReleaseWarning,
                          stacklevel=4)
        elif self.forecast_ is not None and self.forecast_.useless:
            warnings.warn(self.forecast_.message(fit.n, budget), UselessReleaseWarning, stacklevel=4)

    def _step_centre(self, fit: _Fit) -> None:
        """centering='private': reads the rows' sum; releases their mean (mean_share, divided by the public count);
        rows then centred by it (a top-k draw, a mechanism that adapts to the norms) or the second moment later."""
        fit.centre = np.zeros(fit.d)
        self._mean_radius = fit.radius  # the rows' bound the mean is released at (before any shift)
        if self.centering != "private":
            return
        shifts = _draws_top_k(fit.mechanism, fit.components) or fit.mechanism.centre_rows or \
            _regression_line(fit.mechanism)  # rows centred by the released mean (else the second moment, less it)
        budget = self._mean_budget = fit.budget.scaled(self.mean_share)
        if self.privacy_unit == "replace_one":
            total = fit.rows.reduce(_clipped_sum, np.add, fit.clip)
            fit.centre = private_mean_of(total, fit.n, fit.radius, budget, fit.accountant, fit.rng, self.numerics)
        elif self.numerics == "hardened":  # add/remove: every row, exact sums (kept for the covariance if it can; no
            # products where it will sum rows minus the mean, or is not native)
            kind = _exact_kind(fit.mechanism) if not shifts and fit.mechanism.native else MEAN_ONLY
            fit.exact = fit.every_row.reduce(_exact_band_sums, ExactBandSums.merge, fit.clip, None, fit.radius, *kind)
            fit.centre = private_mean_of(None, fit.n, fit.radius, budget, fit.accountant, fit.rng, self.numerics,
                                         Neighbours("add_remove", row_scale(fit.d, fit.exact.bits)),
                                         fit.exact.mean(0, fit.n))
        else:  # add/remove: every row's sum / ñ at sensitivity r/ñ
            total = fit.every_row.reduce(_clipped_sum, np.add, fit.clip)
            fit.centre = private_mean_of(total, fit.n, fit.radius, budget, fit.accountant, fit.rng, self.numerics,
                                         ADD_REMOVE)
        if shifts:
            fit.shift, fit.radius = fit.centre, fit.radius + float(np.linalg.norm(fit.centre))

    def _private_covariance(self, X, components: int | None = None, spectral: bool = False,
                            clamp: bool = True, persons=None):
        """(release, centre, radius of the released rows, the public count) with ``ledger_``, ``budget_spent_``,
        ``mechanism_``, ``advice_``, ``radius_`` and ``count_`` set: the steps above, then the covariance. ``X``: an
        array, or ``Rows`` (a table file, a Dask array or dataframe): each step is a sum over rows, computed a block
        at a time.

        ``components``: draw only that many eigenvectors, when the mechanism can stop early (PCA).
        Centring (centering="private") by the route that measured best (docs/estimators.md):
        - the second moment M = X^T X / n of the rows in the r-ball and a private mean, Sigma = M~ - mu~ mu~^T
          (post-processing of two releases, basic composition): the noise is that of rows in the r-ball,
          not the 2r-ball of rows minus a mean. For mechanisms calibrated to the declared radius;
        - rows minus the released mean mu~, which lie in the (r + ||mu~||)-ball (mu~ is public once
          released: adaptive composition). For a top-k draw (eigenvectors of the centred rows) and for
          mechanisms that adapt to the rows' norms (``Mechanism.centre_rows``: AdaptiveCov clips the
          centred rows at a private radius, often far inside the declared one).
        """
        rows = (X if isinstance(X, Rows) else Rows(X)).quiet()  # its reading errors name no cell
        check_privacy_unit(self.privacy_unit)
        self._check_static(rows.n if self.privacy_unit == "replace_one" else None, rows.d, components)
        persons = self._checked_persons(persons, rows)
        k = self.max_rows_per_person if persons is not None else 1
        budget = self._row_budget(k)
        charge = None
        if self.session is not None:  # the whole budget, before any row is read (BudgetExceeded: nothing spent)
            who = "" if persons is None else f"; per person, <= {k} rows each, group privacy"
            charge = self.session.charge(self.budget, f"{type(self).__name__}.fit ({self.mechanism}, {self.budget}"
                                                      f"{who})", rows_per_person=None if persons is None else k)
        rng = _generator(self.random_state, self.numerics)
        fit = _Fit(rows, 0, rows.d, budget, Accountant(budget), rng, components)
        if self.privacy_unit == "add_remove":  # split off before any row is read (a public fact decides)
            fit.selection = tuple(selection_generators(rng, 2))
        self._step_check(fit)
        self._step_persons(fit, persons)
        self._step_count(fit)
        fit.mechanism = self._choose(fit)
        self._step_bound(fit)
        self._step_typical(fit)
        self._warn_if_useless(fit)
        self._step_centre(fit)
        estimate = self._step_covariance(fit, spectral, clamp)
        if charge is not None:  # the steps that spend (a note on group privacy is in the release's line)
            self.session.record(charge, [(what, b) for what, b in self.ledger_ if b is not None])
        return estimate, fit.centre, fit.radius, fit.n

    def _step_covariance(self, fit: _Fit, spectral: bool, clamp: bool):
        """Reads the rows' band sums (clipped, shifted, divided by the public count); releases the covariance
        (the rest of the budget) by the chosen mechanism, then post-processing."""
        mechanism, accountant, rng, components = fit.mechanism, fit.accountant, fit.rng, fit.components
        top_k = _draws_top_k(mechanism, components)
        clip = fit.clip
        cov_budget = fit.budget.scaled(1 - self._spent_before_release(typical_released=fit.typical is not None))
        native = self.privacy_unit == "add_remove" and mechanism.native
        if not native:  # replace-one, or add/remove by the reduction: the rows resized to the public count
            problem = fit.rows.reduce(_band_sums, BandSums.merge, clip, fit.shift, fit.radius).problem(n_public=fit.n)
            route = "" if self.privacy_unit == "replace_one" else f" [{REDUCTION_ROUTE}]"
        elif self.numerics == "hardened":  # every row, exact sums (mechanisms/exact_sums.py), / the released count:
            # the products ``_exact_kind`` says (a deferred level's in a second pass when the release reads it)
            kind = _exact_kind(mechanism)
            reused = fit.exact is not None and fit.shift is None and _kind_of(fit.exact) == kind
            sums = fit.exact if reused else fit.every_row.reduce(_exact_band_sums, ExactBandSums.merge, clip,
                                                                 fit.shift, fit.radius, *kind)
            if not sums.grams:
                rows, shift, radius = fit.every_row, fit.shift, fit.radius
                sums.defer(lambda level: rows.reduce(_exact_band_sums, ExactBandSums.merge, clip, shift, radius,
                                                     True, True, level, True))
            problem = exact_problem(sums, fit.n)
        else:  # every row, float sums / the released count (mechanisms/neighbours.py)
            problem = fit.every_row.reduce(_band_sums, BandSums.merge, clip, fit.shift, fit.radius).problem(
                n_public=fit.n, native=True)
        if native:
            route = f" [{native_route(mechanism, problem)}]"
        if _regression_line(mechanism):  # the last column predicted from the others (PrivateRidge's rows [x, y])
            problem = replace(problem, ridge=RidgeTask(target=fit.d - 1, alpha=max(self._alpha_or_one(), 1e-12) / fit.n))
        options = {**dict(self.mechanism_options or {}), **({"components": int(components)} if top_k else {}),
                   **({"numerics": self.numerics} if "numerics" in mechanism.option_names() else {}),
                   **(dict([mechanism.own_radius]) if self.radius == "private" and mechanism.own_radius else {})}
        idealized_release = self.numerics == "hardened" and not hardenable(mechanism)  # warned: named explicitly
        second_moment = self.centering == "private" and fit.shift is None
        spectral_release, clamp_release = spectral and not second_moment, clamp and not second_moment
        estimate, inner = release(mechanism.name, problem, cov_budget, rng, options=options,
                                  spectral=spectral_release, clamp=clamp_release)
        ledger = [(f"covariance: {what}{' (idealized numerics)' if idealized_release else ''}{route}", b)
                  for what, b in inner.ledger]
        if isinstance(estimate, RidgeRelease):  # a regression line's model: no covariance to post-process
            accountant.spend(cov_budget, f"model: {mechanism.label} ({mechanism.name})")
            self.ledger_ = fit.notes + accountant.ledger[:-1] + [(w.replace("covariance: ", "model: ", 1), b)
                                                                 for w, b in ledger]
            k = self.max_rows_per_person if fit.notes else 1
            self.budget_spent_ = None if accountant.spent is None else group_cost(accountant.spent, k)
            self.mechanism_, self.radius_, self.count_ = mechanism.name, fit.radius, fit.n
            self.numerics_ = _numerics_note(self.numerics, rng, mechanism if idealized_release else None)
            return estimate
        # a PCA whose auto choice stopped early with nothing released (spent a part, not none: the zero matrix spends
        # nothing). Not for a covariance or a ridge: there the zero matrix is an estimate (error ||Sigma||_F; ridge then
        # predicts y's mean), which measured better than the fallback's noisy one (results/head_to_head: wine's ridge)
        if self.mechanism == "auto" and components is not None and not np.any(_values(estimate)) \
                and inner.spent is not None and inner.remaining is not None:
            fallback = self._fall_back(mechanism, problem, inner.remaining, rng, components, not second_moment,
                                       spectral_release, clamp_release)
            if fallback is not None:
                mechanism, estimate, extra = fallback
                ledger += extra
        if second_moment:  # Sigma~ = M~ - mu~ mu~^T, then the clamp (post-processing)
            sigma = as_matrix(estimate) - np.outer(fit.centre, fit.centre)
            if spectral:  # symmetrised in place; a PCA reads only its top k: the rest is never decomposed
                symmetric = symmetrized(sigma)
                estimate = Spectral.top(symmetric, components) if components else Spectral.of(symmetric)
            else:
                estimate = sigma
            if clamp:
                estimate = clamp_eigenvalues(estimate, 0.0, fit.radius**2)
        accountant.spend(cov_budget, f"covariance: {mechanism.label} ({mechanism.name})")
        self.ledger_ = fit.notes + accountant.ledger[:-1] + ledger
        k = self.max_rows_per_person if fit.notes else 1
        self.budget_spent_ = None if accountant.spent is None else group_cost(accountant.spent, k)
        self.mechanism_ = mechanism.name
        self.radius_ = fit.radius
        self.count_ = fit.n
        self.numerics_ = _numerics_note(self.numerics, rng, mechanism if idealized_release else None)
        if components is None and mechanism.name != "zero" and \
                np.abs(_values(estimate)).max(initial=0.0) <= 1e-12 * fit.radius**2:  # the trivial release itself
            warnings.warn(f"{mechanism.name} released (numerically) the zero matrix at n = {fit.n}, d = {fit.d}, "
                          f"{fit.budget}: nothing about the data (e.g. AdaptiveCov's private radius finds no row above "
                          f"r 2^-K with too few rows for its share); more rows or budget, or a tighter radius, would "
                          f"let it say something", UselessReleaseWarning, stacklevel=4)
        return estimate

    def _fall_back(self, failed, problem, remaining, rng, components, final_rows: bool, spectral: bool,
                   clamp: bool):
        """PrivatePCA's mechanism="auto" after its choice released a zero covariance having spent only part of its
        budget (AdaptiveCov whose private radius found no row: too few rows for its share): the next mechanism of
        ``advice_``'s ranking that runs on another algorithm and can meet the unspent ``remaining``, released
        at exactly that. Private: which mechanism runs is a function of the first release (post-processing),
        the second stage's budget is the first's unspent part whatever it released, and the two compose
        within the covariance's budget. (mechanism, release, its ledger lines), or None where no mechanism can
        (the zero release stands; PrivatePCA warns)."""
        for name, _ in self.advice_.ranking:
            mechanism = get_mechanism(name)
            if mechanism.fn is failed.fn or (self.numerics == "hardened" and not hardenable(mechanism)) or \
                    (problem.neighbours.add_remove and not mechanism.native):  # every row summed: native lines only
                continue
            try:
                budget_guaranteeing(remaining, mechanism.notion)
            except ValueError:
                continue
            # a top-k draw where the problem's rows are the ones to decompose (not a second moment to centre after)
            top_k = final_rows and _draws_top_k(mechanism, components)
            estimate, inner = release(name, problem, remaining, rng, options={
                **({"components": int(components)} if top_k else {}),
                **({"numerics": self.numerics} if "numerics" in mechanism.option_names() else {})},
                spectral=spectral, clamp=clamp)
            self.advice_ = replace(self.advice_, mechanism=name, reason=(
                f"{self.advice_.reason}; {failed.name} released nothing (its private radius found no row): "
                f"{name} at its unspent {remaining}"))
            return mechanism, estimate, [(f"covariance: {what} (after {failed.name} released nothing)", b)
                                         for what, b in inner.ledger]
        return None


def _numerics_note(numerics: str, rng: np.random.Generator, idealized_mechanism=None) -> str:
    """What the release's numerics and the generator it drew from guarantee, for ``numerics_``."""
    if numerics == "idealized":
        return ("idealized: float noise on a float statistic, private on paper (its low bits can leak the "
                "statistic); for research and tests")
    if idealized_mechanism is not None:
        return (f"idealized numerics for the covariance ({idealized_mechanism.name}: not additive noise on a grid, "
                f"private on paper only); the other steps hardened")
    if is_secure(rng):
        return "hardened: grid and exact integer noise, cryptographic randomness (ChaCha20)"
    return ("hardened numerics, seeded randomness: reproducible, for tests and research, not for publishing "
            "(random_state=None draws from a cryptographic generator)")


def _regression_line(mechanism) -> bool:
    """A mechanism that releases a ridge model (RidgeRelease), not a covariance: the rows are centred by the released
    mean before it runs (centering="private"; its model has no intercept; measured better than the second moment less
    the mean's outer product on wine and airfoil, issue 60), and PrivateRidge takes its weights."""
    return "a ridge task" in mechanism.needs


def _signed(components: np.ndarray) -> np.ndarray:
    """Components (rows) each signed so its largest-magnitude entry is positive (scikit-learn's convention): an
    eigenvector's sign is arbitrary, and this one does not depend on which eigensolver found it (but where two entries'
    magnitudes tie to rounding)."""
    components = np.array(components, dtype=float)
    if components.size:
        largest = np.abs(components).argmax(axis=1)
        components *= np.where(components[np.arange(len(components)), largest] < 0, -1.0, 1.0)[:, None]
    return components


def _draws_top_k(mechanism, components) -> bool:
    """A PCA (``components`` set) whose mechanism can draw only the top eigenvectors."""
    return components is not None and "components" in mechanism.option_names()


def _values(estimate) -> np.ndarray:
    """A release's eigenvalues (Spectral) or entries (a matrix): all zero when it says nothing."""
    return estimate.values if isinstance(estimate, Spectral) else as_matrix(estimate)


class PrivateCovariance(_PrivateFit, BaseEstimator):
    """A private covariance Sigma = X^T X / n of rows in the ``radius``-ball (about a private mean with
    centering="private"), released by any registered mechanism or plug-in (``mechanism``, by name).

    Fitted: ``covariance_`` (d x d, eigenvalues clamped into [0, r^2] as every release is), ``location_``
    (the centre used), ``ledger_``, ``budget_spent_``, ``mechanism_``, ``numerics_``, ``n_features_in_``.

    ``numerics`` (all three estimators): "hardened", the default (mechanisms/noise.py: each additive release
    -- the mean, the covariance, the sparse-vector steps of the private radius and of auto's median norm --
    on a 2^k grid with exact discrete Gaussian or Laplace noise, the sensitivity inflated by the rounding
    and the float error, both in the ledger; random_state=None then draws from ChaCha20; a seed is for
    tests and research), or "idealized" (float noise on a float statistic: private on paper, its low bits
    can carry the statistic). mechanism="auto" then picks the best-ranked mechanism that can be hardened;
    a named one that cannot (the eigenvector samplers: emcov, itu, ad, kt, ...) warns and runs with idealized
    numerics, and the ledger and ``numerics_`` say so."""

    def __init__(self, mechanism="auto", budget=ZCDP(0.1), radius=None, centering=None, mean_share=0.1,
                 radius_share=0.1, auto_share=AUTO_SHARE, mechanism_options=None, clip=False, random_state=None,
                 numerics="hardened", privacy_unit="add_remove", count_share=COUNT_SHARE, max_rows_per_person=None,
                 session=None):
        self.mechanism = mechanism
        self.budget = budget
        self.radius = radius
        self.centering = centering
        self.mean_share = mean_share
        self.radius_share = radius_share
        self.auto_share = auto_share
        self.mechanism_options = mechanism_options
        self.clip = clip
        self.random_state = random_state
        self.numerics = numerics
        self.privacy_unit = privacy_unit
        self.count_share = count_share
        self.max_rows_per_person = max_rows_per_person
        self.session = session

    def fit(self, X, y=None, persons=None):
        """``X``: an array, a Dask array or dataframe, or the path of a table file (streamed). ``persons``: one
        identifier per row (with ``max_rows_per_person``): privacy for the person, not the row."""
        self.covariance_, self.location_, _, _ = self._private_covariance(self._rows(X), persons=persons)
        return self


class PrivatePCA(ClassNamePrefixFeaturesOutMixin, _PrivateFit, TransformerMixin, BaseEstimator):
    """Private principal components: the top ``n_components`` eigenvectors.

    For a mechanism that can stop early (Amin et al.'s Algorithm 1 and its relatives: itu, ad, emcov,
    emcov_pure, kt -- those with a ``components`` option), only k eigenvectors are drawn and the
    eigenvector budget is split over those k steps; for any other mechanism, the eigenvectors of its
    private covariance. Variances are those of Sigma = X^T X / n (divided by n, not n - 1).

    Fitted: ``components_`` (k x d, rows), ``explained_variance_`` (the private eigenvalues, clamped into
    [0, r^2]), ``mean_``, ``n_components_``, ``ledger_``, ``budget_spent_``, ``mechanism_``. As scikit-learn's
    PCA, its outputs are named ``privatepca0``, ``privatepca1``, ... (``get_feature_names_out``), so
    ``set_output(transform="pandas")`` works, alone or in a pipeline."""

    def __init__(self, n_components=2, mechanism="auto", budget=PureDP(1.0), radius=None, centering=None,
                 mean_share=0.1, radius_share=0.1, auto_share=AUTO_SHARE, mechanism_options=None, clip=False,
                 random_state=None, numerics="hardened", privacy_unit="add_remove", count_share=COUNT_SHARE,
                 max_rows_per_person=None, session=None):
        self.n_components = n_components
        self.mechanism = mechanism
        self.budget = budget
        self.radius = radius
        self.centering = centering
        self.mean_share = mean_share
        self.radius_share = radius_share
        self.auto_share = auto_share
        self.mechanism_options = mechanism_options
        self.clip = clip
        self.random_state = random_state
        self.numerics = numerics
        self.privacy_unit = privacy_unit
        self.count_share = count_share
        self.max_rows_per_person = max_rows_per_person
        self.session = session

    def fit(self, X, y=None, persons=None):
        """``X``: an array, a Dask array or dataframe, or the path of a table file (streamed). ``persons``: one
        identifier per row (with ``max_rows_per_person``): privacy for the person, not the row."""
        X = self._rows(X)
        d = X.d if isinstance(X, Rows) else X.shape[1]
        k = self.n_components
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= d:
            raise ValueError(f"n_components must be an integer in [1, n_features = {d}], got {k!r}")
        spectral, self.mean_, radius, _ = self._private_covariance(X, components=int(k), spectral=True, clamp=False,
                                                                   persons=persons)
        order = np.argsort(-spectral.values, kind="stable")[:k]  # largest private eigenvalues first (unclamped)
        if not np.any(spectral.values):
            warnings.warn(f"{self.mechanism_} released a zero covariance: nothing about the data at this budget "
                          f"(e.g. AdaptiveCov's private radius finds no row above r 2^-K with too few rows for its "
                          f"share); components_ are the first {k} coordinate axes, not principal components",
                          UselessReleaseWarning, stacklevel=2)
        self.components_ = _signed(spectral.vectors[:, order].T)
        self.explained_variance_ = np.clip(spectral.values[order], 0.0, radius**2)  # post-processing
        self.n_components_ = int(k)
        return self

    @property
    def _n_features_out(self) -> int:
        """How many columns transform returns (names for get_feature_names_out and set_output)."""
        return self.components_.shape[0]

    def transform(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X - self.mean_) @ self.components_.T

    def inverse_transform(self, X):
        check_is_fitted(self)
        return np.asarray(X, dtype=float) @ self.components_ + self.mean_


def captured_variance_ratio(components, X) -> float:
    """The variance of the centred rows of ``X`` inside the span of ``components`` (k x d, orthonormal
    rows) over the most any k-dimensional subspace captures (the top k eigenvalues): 1 for the exact
    principal subspace. Evaluation only: it reads the data."""
    X = np.asarray(X, dtype=float)
    components = np.asarray(components, dtype=float)
    sigma = np.cov(X.T, bias=True).reshape(X.shape[1], X.shape[1])
    best = np.sort(np.linalg.eigvalsh(sigma))[::-1][:len(components)].sum()
    return float(np.trace(components @ sigma @ components.T) / best) if best > 0 else 1.0


class PrivateRidge(_PrivateFit, RegressorMixin, BaseEstimator):
    """Ridge regression from a private covariance of the rows [x, y] (Amin et al. 2019, App. C):
    w = (Sigma~_xx + (alpha / n) I)^-1 Sigma~_xy, which minimises ||y - X w||^2 + alpha ||w||^2 (scikit-learn's
    ``Ridge`` convention for ``alpha``) on the private statistics. ``radius`` bounds the norm of [x, y].
    alpha="auto" (the default): a penalty sized to the covariance's noise (``_penalty``; post-processing), ``alpha_``
    says which. With centering="private" the intercept is y's private mean minus w . x's; else 0.

    A regression line releases the model itself: ``mechanism="adassp"`` (AdaSSP, Wang 2018, its penalty sized to its
    noise) on the rows centred by the private mean (centering="private"); ``mechanism="tukey"`` (TukeyEM, Amin et al.
    2023: no bound, its own intercept; an ApproxDP budget, radius and centering left None). ``alpha`` is then unused
    and ``covariance_`` is None.

    Fitted: ``coef_``, ``intercept_``, ``covariance_`` (of [x, y]), ``location_`` (its released mean), ``alpha_``,
    ``ledger_``, ``budget_spent_``, ``mechanism_``, ``n_features_in_``; TukeyEM's ``passed_`` (its test)."""

    _provides = ("a ridge task", "raw rows")  # regression lines may run here; raw rows: those with no bound (fit)
    _rho_composition = True

    def __init__(self, alpha="auto", mechanism="auto", budget=ZCDP(0.1), radius=None, centering=None,
                 mean_share=0.1, radius_share=0.1, auto_share=AUTO_SHARE, mechanism_options=None, clip=False,
                 random_state=None, numerics="hardened", privacy_unit="add_remove", count_share=COUNT_SHARE,
                 max_rows_per_person=None, session=None):
        self.alpha = alpha
        self.mechanism = mechanism
        self.budget = budget
        self.radius = radius
        self.centering = centering
        self.mean_share = mean_share
        self.radius_share = radius_share
        self.auto_share = auto_share
        self.mechanism_options = mechanism_options
        self.clip = clip
        self.random_state = random_state
        self.numerics = numerics
        self.privacy_unit = privacy_unit
        self.count_share = count_share
        self.max_rows_per_person = max_rows_per_person
        self.session = session

    def fit(self, X, y, persons=None):
        """``X, y``: arrays, or Dask collections with the same partitions (rows [x, y] summed on the workers).
        ``persons``: one identifier per row (with ``max_rows_per_person``): privacy for the person."""
        if self.alpha != "auto" and (isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float))
                                     or not self.alpha >= 0):
            raise ValueError(f"alpha must be 'auto' or a number >= 0, got {self.alpha!r}")
        if self.mechanism != "auto" and "raw rows" in get_mechanism(self.mechanism).needs:
            return self._fit_raw(X, y, persons)
        if is_dask(X):
            import dask.array as da
            X = X.to_dask_array(lengths=True) if not hasattr(X, "blocks") else X
            y = y.to_dask_array(lengths=True) if not hasattr(y, "blocks") else y
            rows = Rows(da.concatenate([X, y.reshape(-1, 1)], axis=1))
            self.n_features_in_ = d = rows.d - 1
        else:
            with _no_cell_in_errors():
                X = validate_data(self, X, dtype=np.float64, ensure_all_finite=False)  # NaN in X or y: after the charge
                y = np.asarray(column_or_1d(y, warn=True), dtype=np.float64)
            if len(y) != len(X):  # without the lengths: under add_remove n is private
                raise ValueError("X and y have different numbers of rows: one target per row")
            rows, d = np.column_stack([X, y]), X.shape[1]
        released, centre, _, n = self._private_covariance(rows, persons=persons)  # n: the public count
        residual = mean_effect = None
        if isinstance(released, RidgeRelease):  # a regression line (e.g. "adassp"): its model, on centred rows
            self.covariance_ = self.alpha_ = None
            self.coef_ = w = np.asarray(released.weights, dtype=float)
            noise_covariance = released.noise_covariance
        else:
            self.covariance_ = released
            sxx, sxy = self.covariance_[:d, :d], self.covariance_[:d, d]
            penalty = self._penalty(sxx, n)
            self.alpha_ = penalty * n
            self.coef_ = w = np.linalg.lstsq(sxx + penalty * np.eye(d), sxy, rcond=None)[0]
            inverse = np.linalg.pinv(sxx + penalty * np.eye(d))
            sd = self._entry_sd(d + 1)
            noise_covariance = None if sd is None else ridge_noise_covariance(inverse, w, sd, sd)
            # the data's own sampling variance, read from the release: the residual variance (s_yy - 2 w.s_xy +
            # w S_xx w) / n through the ridge's sandwich M^-1 S_xx M^-1 (S_xx's negative noise eigenvalues cut)
            residual = max(float(self.covariance_[d, d] - 2 * w @ sxy + w @ sxx @ w), 0.0)
            psd = clamp_eigenvalues(sxx, 0.0, np.inf)
            noise_covariance = None if noise_covariance is None else \
                noise_covariance + residual / n * inverse @ psd @ inverse.T
            mechanism = get_mechanism(self.mechanism_)
            if self.centering == "private" and not (mechanism.centre_rows or _regression_line(mechanism)):
                # Sigma~ = M~ - mu~ mu~^T: the mean's noise dmu moves S_xy - S_xx w by mu_x (w.dmu_x - dmu_y) +
                # dmu_x (mu_x.w - mu_y), so dw = M^-1 J dmu (rows centred by mu~ instead: second order only)
                mu_x, mu_y = centre[:d], centre[d]
                jacobian = np.column_stack([np.outer(mu_x, w) + (mu_x @ w - mu_y) * np.eye(d), -mu_x])
                mean_effect = inverse @ jacobian
        self.passed_ = bool(getattr(released, "passed", True))  # a propose-test-release line's test (TukeyEM: _fit_raw)
        self.location_ = centre  # the released mean of [x, y] (zeros under assume_centered)
        self.intercept_ = float(centre[d] - centre[:d] @ w)
        self._set_standard_errors(noise_covariance, residual, centre, n, d, mean_effect)
        return self

    def _entry_sd(self, width: int) -> float | None:
        """The sd of one entry of the covariance's noise, from the forecast's expected Frobenius error F (public
        facts): F / width for symmetric noise of iid entries (E||E||_F ~ sd * width). The forecast is made at
        replace-one; a native add/remove release has the ratio of the two sensitivities less noise. An exact
        prediction (gauss, lap, ...) gives the noise's own scale; a bound (AdaptiveCov, SeparateCov) a larger one."""
        frobenius = self._noise_frobenius(width)
        return None if frobenius is None else frobenius / width

    def _set_standard_errors(self, noise_covariance, residual, centre, n: int, d: int, mean_effect=None) -> None:
        """``coef_se_`` and ``intercept_se_`` (post-processing: the released statistics and the noise's known
        scales, to first order): the weights' covariance from the covariance's noise (``ridge_noise_covariance``),
        on the covariance route the sampling variance and, where Sigma~ = M~ - mu~ mu~^T, the mean's noise through
        ``mean_effect`` (dw = mean_effect dmu); the intercept mu_y - mu_x.w adds the mean's own noise and the
        residual's variance / n. NaN where the release gives no noise scale (a mechanism without a forecast)."""
        if noise_covariance is None:
            self.coef_se_, self.intercept_se_ = np.full(d, np.nan), float("nan")
            return
        w = self.coef_
        mean_sd = 0.0
        if self.centering == "private":
            mean_sd = mean_noise_sd(n, d + 1, self._mean_radius, self._mean_budget,
                                    ADD_REMOVE if self.privacy_unit == "add_remove" else REPLACE_ONE)
        through_mean = np.zeros((d, d + 1)) if mean_effect is None else mean_effect
        coefficients = noise_covariance + mean_sd**2 * through_mean @ through_mean.T
        self.coef_se_ = np.sqrt(np.clip(np.diag(coefficients), 0.0, None))
        direct = np.append(-w, 1.0) - through_mean.T @ centre[:d]  # d intercept / d mu
        variance = mean_sd**2 * (direct @ direct) + centre[:d] @ noise_covariance @ centre[:d] + (residual or 0.0) / n
        # assume_centered: the intercept is 0 by declaration, not an estimate
        self.intercept_se_ = float(math.sqrt(max(variance, 0.0))) if self.centering == "private" else 0.0

    def _alpha_or_one(self) -> float:
        return 1.0 if self.alpha == "auto" else float(self.alpha)

    def _penalty(self, sxx: np.ndarray, n: int) -> float:
        """The ridge penalty added to Sigma~_xx. alpha="auto" (issue 60): sized to the noise, as AdaSSP (Wang 2018)
        sizes its own, from public facts and the release only (post-processing, no budget): where the covariance's
        noise is additive with an exactly predicted size (``Prediction.kind == "exact"``: gauss, lap, gauss_approx,
        ...), E = 2 F / sqrt(d + 1), the spectral norm of symmetric noise whose Frobenius norm is the forecast F
        (the semicircle law); the penalty then lifts Sigma~_xx's smallest eigenvalue to 2 E (at least 1/n): the
        solve never divides by a direction the noise can flip. Measured against E and E less the curvature on
        adult, airfoil, wine, wine quality and diabetes (results/regression/). Elsewhere (AdaptiveCov, SeparateCov:
        no such size), and for a number alpha: alpha / n, scikit-learn's Ridge convention."""
        if self.alpha != "auto":
            return float(self.alpha) / n
        mechanism = get_mechanism(self.mechanism_)
        frobenius = self._noise_frobenius(len(sxx) + 1)
        if frobenius is None or mechanism.predict is None or mechanism.predict.kind != "exact":
            return 1.0 / n
        spectral = 2 * frobenius / math.sqrt(len(sxx) + 1)
        return max(1.0 / n, 2 * spectral - float(np.linalg.eigvalsh(sxx)[0]))

    def _noise_frobenius(self, width: int) -> float | None:
        """The covariance's forecast noise E||E||_F (public facts), at this fit's unit: the forecast is made at
        replace-one, and a native add/remove release has the ratio of the two sensitivities less noise."""
        if getattr(self, "forecast_", None) is None:
            return None
        mechanism = get_mechanism(self.mechanism_)
        frobenius = self.forecast_.noise
        if self.privacy_unit == "add_remove" and mechanism.native:
            frobenius *= ADD_REMOVE.covariance_l1(1.0, 1, width) / REPLACE_ONE.covariance_l1(1.0, 1, width) \
                if mechanism.notion is PureDP else ADD_REMOVE.covariance_l2(1.0, 1) / REPLACE_ONE.covariance_l2(1.0, 1)
        return frobenius

    def _fit_raw(self, X, y, persons):
        """A regression line on the raw rows with no bound (TukeyEM): nothing is clipped, centred or summed; the line
        fits its own intercept. The session is charged before any row is read; under add/remove the registry's
        reduction (a released count, the rows resized to it) runs it."""
        mechanism = get_mechanism(self.mechanism)
        if not _regression_line(mechanism):
            raise ValueError(f"mechanism {mechanism.name!r} reads raw rows but releases no model: not a PrivateRidge "
                             f"mechanism")
        for name, value in (("radius", self.radius), ("centering", self.centering)):
            if value is not None:
                raise ValueError(f"{mechanism.name} takes no {name} (it needs no bound on the rows and fits its own "
                                 f"intercept): leave {name}=None")
        if persons is not None or self.max_rows_per_person is not None:
            raise ValueError(f"{mechanism.name} runs per row: persons= / max_rows_per_person are not supported")
        if is_dask(X) or is_dask(y):
            raise ValueError(f"{mechanism.name} fits least squares on parts of the rows in memory: pass arrays")
        self._check_common()
        self._checked_mechanism(mechanism, self.budget)
        with _no_cell_in_errors():
            X = validate_data(self, X, dtype=np.float64, ensure_all_finite=False)
            y = np.asarray(column_or_1d(y, warn=True), dtype=np.float64)
        if len(y) != len(X):
            raise ValueError("X and y have different numbers of rows: one target per row")
        charge = None
        if self.session is not None:
            charge = self.session.charge(self.budget, f"{type(self).__name__}.fit ({self.mechanism}, {self.budget})")
        rows = np.column_stack([X, y])
        if not np.all(np.isfinite(rows)):  # after the charge; names no row and no count
            raise ValueError("data contains NaN or inf: drop or impute those rows before the fit (the error names no "
                             "row and no count: it is an output too)")
        if self.numerics == "hardened":
            warnings.warn(f"mechanism {mechanism.name!r} has no hardened numerics ({mechanism.label} draws from "
                          f"continuous distributions in floats): its release runs with idealized numerics, private on "
                          f"paper, and the ledger says so", UserWarning, stacklevel=3)
        rng = _generator(self.random_state, self.numerics)
        d = X.shape[1]
        problem = CovProblem.from_raw_rows(rows, RidgeTask(target=d, alpha=1.0))
        released, accountant = release(mechanism.name, problem, self.budget, rng, privacy_unit=self.privacy_unit,
                                       count_share=self.count_share, options=dict(self.mechanism_options or {}))
        idealized = " (idealized numerics)" if self.numerics == "hardened" else ""
        self.ledger_ = [(f"model: {what}{idealized}", b) for what, b in accountant.ledger]
        self.budget_spent_ = accountant.spent
        if charge is not None:
            self.session.record(charge, [(what, b) for what, b in self.ledger_ if b is not None])
        self.mechanism_, self.radius_, self.count_, self.advice_, self.forecast_ = mechanism.name, None, None, None, None
        self.numerics_ = _numerics_note(self.numerics, rng, mechanism if idealized else None)
        self.covariance_ = self.location_ = self.alpha_ = None
        self.coef_ = np.asarray(released.weights, dtype=float)
        self.intercept_ = float(released.intercept)
        self.coef_se_, self.intercept_se_ = np.full(d, np.nan), float("nan")  # no noise scale to read
        self.passed_ = bool(released.passed)
        if not self.passed_:
            warnings.warn(f"{mechanism.label}'s test did not pass (too few rows, or models too spread, for its "
                          f"budget): it released its documented 'no output', zero weights and intercept",
                          UselessReleaseWarning, stacklevel=2)
        return self

    def predict(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_
