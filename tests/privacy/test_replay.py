"""The replay test (issue 58, GUIDE.md §10; mechanisms/transcript.py): every observable is a release.

A fit on D is recorded step by step; a fit on a neighbour D' replays it (each privatised step returns D's output).
Then every public value must be identical -- each step's kind, label and declared parameters, the ledger, the
warnings, the errors and every fitted attribute -- and each step's statistic may move by at most its declared
sensitivity (plus its declared float-error slack) in its declared norm. Neighbour families that stress code, not
statistics: rows on band edges, a row that fills an empty band, the count held at n, above and below it, persons at
and over k, NaN in a row a person's bound may drop; arrays, blocks, Dask and table files. Every estimator path and
every registered mechanism (through ``release``) runs here, new ones included, without being listed.
"""
from __future__ import annotations

import math
import sys
import warnings

import numpy as np
import pytest

import dpcov.mechanisms.adaptive as adaptive_module
from dpcov import PrivateCovariance, PrivatePCA, PrivateRidge
from dpcov.data.chunks import Rows
from dpcov.estimators import hardenable
from dpcov.mechanisms import registry
from dpcov.mechanisms.privacy import ApproxDP, PureDP, ZCDP
from dpcov.mechanisms.problem import CovProblem
from dpcov.mechanisms.regression import RidgeTask
from dpcov.mechanisms.transcript import differences, run_pair

N, D_COLUMNS = 2000, 4  # enough rows that every step runs: the private radius, AdaptiveCov's clipping, a covariance
BUDGETS = {ZCDP: ZCDP(2.0), PureDP: PureDP(4.0), ApproxDP: ApproxDP(4.0, 1e-6)}
RELEASE_KINDS = {"gaussian", "laplace", "sampler", "gamma-norm"}  # a step that releases the statistic itself


def directions(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    X = rng.standard_normal((n, d))
    return X / np.linalg.norm(X, axis=1)[:, None]


def base_rows(seed: int = 0) -> np.ndarray:
    """Rows on band edges: norms within ulps of 1/2 and 1/4 (r = 1), none in band 0 (norm above 1/2)."""
    rng = np.random.default_rng(seed)
    X = directions(N, D_COLUMNS, rng)
    X[: N // 2] *= 0.5
    X[N // 2:] *= 0.25
    return X


def extra_row(kind: str) -> np.ndarray:
    """The row a neighbour adds or puts in place of D's last: on an edge, filling the empty band 0, or at r."""
    x = directions(1, D_COLUMNS, np.random.default_rng(99))[0]
    return x * {"edge": 0.5, "fills_band": 0.9, "radius": 1.0}[kind]


# (name, how D' is made, the count forced on both runs relative to |D| (None: drawn), privacy unit)
FAMILIES = {
    "add_edge_count_at_n": ("add", "edge", 0, "add_remove"),
    "add_fills_band_count_below_n": ("add", "fills_band", -3, "add_remove"),
    "add_radius_count_above_n": ("add", "radius", 3, "add_remove"),
    "remove_count_at_n": ("remove", None, 0, "add_remove"),
    "remove_count_below_n": ("remove", None, -3, "add_remove"),
    "add_edge_count_drawn": ("add", "edge", None, "add_remove"),
    "replace_edge": ("replace", "edge", None, "replace_one"),
    "replace_fills_band": ("replace", "fills_band", None, "replace_one"),
}


def neighbours(family: str, X: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict, str]:
    how, kind, count, unit = FAMILIES[family]
    if how == "add":
        other = np.vstack([X, extra_row(kind)])
    elif how == "remove":
        other = X[:-1]
    else:
        other = X.copy()
        other[-1] = extra_row(kind)
    force = {} if count is None else {"count": float(len(X) + count)}
    return X, other, force, unit


def public(est) -> dict:
    """Every fitted attribute, in a form compared exactly (arrays by their bytes)."""
    out = {}
    for key, value in sorted(vars(est).items()):
        if key.endswith("_") and not key.startswith("_"):
            out[key] = (value.shape, value.tobytes()) if isinstance(value, np.ndarray) else repr(value)
    return out


def fitting(estimator, data, y=None, persons=None):
    """A fit as a function: ("ok", fitted attributes, warnings) or ("error", type, text, warnings)."""
    def go():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                if y is None:
                    estimator.fit(data, persons=persons)
                else:
                    estimator.fit(data, y, persons=persons)
                result = ("ok", public(estimator))
            except (ValueError, TypeError, RuntimeError) as err:
                result = ("error", type(err).__name__, str(err))
        return result + (sorted((w.category.__name__, str(w.message)) for w in caught),)
    return go


def check_pair(make_d, make_d_prime, force, tolerance=0.0, rows=1, releases=True):
    """The replay's two checks; ``releases``: the pair must also be a real test -- the fit ran, and a step released a
    statistic (not only the count or a sparse-vector index: a release that says nothing would pass vacuously)."""
    recorded, replayed, on_d, on_d_prime = run_pair(make_d, make_d_prime, force)
    problems = differences(recorded, replayed, tolerance, rows)
    assert not problems, "\n".join(problems)
    assert on_d == on_d_prime, _first_difference(on_d, on_d_prime)
    if releases:
        assert on_d[0] == "ok", on_d
        assert RELEASE_KINDS & {step.kind for step in recorded.steps}, [step.kind for step in recorded.steps]
    return recorded


def _first_difference(a, b) -> str:
    if a[0] != b[0] or a[0] == "error":
        return f"D: {a[:3]}\nD': {b[:3]}"
    for key in a[1]:
        if a[1][key] != b[1].get(key):
            return f"fitted {key} differs: {str(a[1][key])[:300]} on D, {str(b[1].get(key))[:300]} on D'"
    return f"warnings differ: {a[2]} on D, {b[2]} on D'"


def estimator_of(task: str, unit: str, seed: int = 3, **params):
    cls = {"covariance": PrivateCovariance, "pca": PrivatePCA, "ridge": PrivateRidge}[task]
    params = {"radius": 1.0, "centering": "assume_centered", "random_state": seed, "privacy_unit": unit, **params}
    if task == "pca":
        params.setdefault("n_components", 2)
    return cls(**params)


def split_ridge(X):
    return X[:, :-1], X[:, -1]


# --- every estimator path on every family ---------------------------------------------------------------------
PATHS = [(task, centering, radius, notion)
         for task in ("covariance", "pca", "ridge")
         for centering in ("assume_centered", "private")
         for radius in (1.0, "private")
         for notion in (ZCDP, PureDP, ApproxDP)]


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("path", PATHS[::3] + PATHS[1::6] + PATHS[2::6], ids=str)  # each (task, centring, radius)
def test_estimator_paths_replay(family, path):
    task, centering, radius, notion = path
    X, other, force, unit = neighbours(family, base_rows())
    make = {}
    for name, data in (("d", X), ("d_prime", other)):
        est = estimator_of(task, unit, centering=centering, radius=radius, budget=BUDGETS[notion])
        make[name] = fitting(est, *split_ridge(data)) if task == "ridge" else fitting(est, data)
    check_pair(make["d"], make["d_prime"], force)


@pytest.mark.parametrize("family", ["add_edge_count_at_n", "remove_count_below_n", "replace_edge"])
@pytest.mark.parametrize("mechanism", sorted(m for m in registry.MECHANISMS
                                             if hardenable(registry.get_mechanism(m))
                                             and not registry.get_mechanism(m).needs))
def test_every_hardenable_mechanism_in_the_estimator_replays(family, mechanism):
    spec = registry.get_mechanism(mechanism)
    X, other, force, unit = neighbours(family, base_rows())
    options = {"tau": 0.5} if "tau" in spec.required_options() else None
    make = [fitting(estimator_of("covariance", unit, mechanism=mechanism, budget=BUDGETS[spec.notion],
                                 mechanism_options=options), data) for data in (X, other)]
    check_pair(*make, force, releases=mechanism != "zero")  # the zero matrix releases nothing


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("centering", ["assume_centered", "private"])
def test_the_regression_line_in_private_ridge_replays(family, centering):
    """PrivateRidge(mechanism="adassp"): its model's three releases and the mean, every family (issue 60)."""
    X, other, force, unit = neighbours(family, base_rows())
    make = [fitting(estimator_of("ridge", unit, mechanism="adassp", centering=centering, budget=ZCDP(0.5)),
                    *split_ridge(data)) for data in (X, other)]
    check_pair(*make, force)


@pytest.mark.parametrize("family", ["add_edge_count_at_n", "replace_fills_band"])
@pytest.mark.parametrize("task", ["covariance", "pca"])
def test_idealized_numerics_replay(family, task):
    """Idealized numerics are private on paper: the same transcript, the statistics to rounding."""
    X, other, force, unit = neighbours(family, base_rows())
    make = [fitting(estimator_of(task, unit, numerics="idealized", budget=ZCDP(0.5)), data) for data in (X, other)]
    check_pair(*make, force, tolerance=1e-9)


# --- input kinds: one norm and one band per row, whichever path sums it ------------------------------------------
def as_kind(X: np.ndarray, kind: str, tmp_path):
    if kind == "array":
        return X
    if kind == "blocks":
        return Rows(X, block_bytes=8 * D_COLUMNS * 50)  # blocks of 50 rows
    if kind == "file":
        path = tmp_path / f"rows{len(X)}.npy"
        np.save(path, X)
        return str(path)
    import dask.array as da
    return da.from_array(X, chunks=(70, D_COLUMNS))


@pytest.mark.parametrize("kind", ["array", "blocks", "file", "dask"])
@pytest.mark.parametrize("family", ["add_edge_count_at_n", "remove_count_below_n", "add_fills_band_count_below_n"])
def test_input_kinds_replay(kind, family, tmp_path):
    X, other, force, unit = neighbours(family, base_rows())
    make = [fitting(estimator_of("covariance", unit, mechanism="adaptive", budget=ApproxDP(1.0, 1e-6)),
                    as_kind(data, kind, tmp_path)) for data in (X, other)]
    check_pair(*make, force)


def test_band_counts_agree_across_paths_on_band_edges():
    """The issue's case: 20000 rows of norm 1/2 (radius 1, d = 20) in the same bands by every path."""
    from dpcov.mechanisms.problem import BandSums
    X = directions(20000, 20, np.random.default_rng(0)) * 0.5
    by_rows = BandSums(1.0).add(X).counts
    by_columns = BandSums(1.0)
    by_columns.add_columns(X.T)
    blocks = Rows(X, block_bytes=8 * 20 * 999).dropping([])
    assert by_rows == by_columns.counts
    assert set(by_rows) == {0, 1} and by_rows[0] not in (0, 20000)  # rows on both sides of the edge
    sums = blocks._reduce_kept(lambda block: BandSums(1.0).add(block), BandSums.merge)
    assert sums.counts == by_rows


def test_band_counts_agree_on_every_input_kind(tmp_path):
    """Rows on the edges of bands 1 and 2 in the same bands whether summed as an array, in blocks, from a file or
    from Dask partitions (data/chunks.py dask_sums)."""
    from dpcov.data.chunks import dask_sums
    from dpcov.mechanisms.problem import BandSums
    da = pytest.importorskip("dask.array")
    X = directions(6000, 7, np.random.default_rng(1)) * np.where(np.arange(6000) % 2, 0.5, 0.25)[:, None]
    np.save(tmp_path / "edges.npy", X)
    expected = BandSums(1.0).add(X).counts
    assert dask_sums(da.from_array(X, chunks=(1000, 7)), 1.0).counts == expected
    assert dask_sums(str(tmp_path / "edges.npy"), 1.0).counts == expected
    assert sorted(expected) == [0, 1, 2] and min(expected.values()) > 0  # both edges split their rows


def test_the_ledger_is_the_same_on_a_pair_that_fills_an_empty_band():
    """The issue's pair: one row moved into a band empty on D; AdaptiveCov (hardened) at the same seed writes the
    same SVT line on D and D' in every seed (before the fix: '+ 3.12e-12 (float error)' against '+ 4.9e-12'). The
    lines after it may differ: they follow the SVT's released threshold."""
    X, other = inside_bands()
    for seed in range(20):
        lines = [[what for what, _ in estimator_of("covariance", "replace_one", seed=seed, mechanism="adaptive",
                                                   budget=ZCDP(0.5), mechanism_options={"radius": "known"})
                  .fit(data).ledger_ if "SVT" in what] for data in (X, other)]
        assert lines[0] == lines[1] and len(lines[0]) == 1 and "(float error)" in lines[0][0]


# --- persons -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rows_of_new_person", [1, 2, 3])
@pytest.mark.parametrize("count", [0, -2, None])
def test_persons_at_and_over_k_replay(rows_of_new_person, count):
    X = base_rows()
    persons = np.arange(len(X)) // 2  # two rows each: at k = 2
    new = np.vstack([extra_row("edge")] * rows_of_new_person) * np.linspace(1, 0.9, rows_of_new_person)[:, None]
    other, other_persons = np.vstack([X, new]), np.r_[persons, [10**6] * rows_of_new_person]
    force = {} if count is None else {"count": float(len(X) + count)}
    make = [fitting(estimator_of("covariance", "add_remove", max_rows_per_person=2, budget=ZCDP(8.0)), data,
                    persons=ids) for data, ids in ((X, persons), (other, other_persons))]
    check_pair(*make, force, rows=2)  # a person: at most k = 2 rows, each step at twice its row sensitivity


def test_nan_in_a_row_a_person_may_drop_is_an_error_whatever_the_draw():
    """Bad input is an error whichever rows the random draw drops, charged first, and names no row."""
    X = base_rows()
    X[5, 1] = np.nan
    persons = np.r_[np.zeros(3, dtype=int), np.arange(1, len(X) - 2)]  # person 0: rows 0-2, k = 2 drops one
    outcomes = set()
    for seed in range(8):
        est = estimator_of("covariance", "add_remove", seed=seed, max_rows_per_person=2)
        with pytest.raises(ValueError) as err:
            est.fit(X, persons=persons)
        outcomes.add(str(err.value))
    assert len(outcomes) == 1
    message = outcomes.pop()
    assert "NaN" in message and "row 5" not in message and "column" not in message


# --- every registered mechanism through release ------------------------------------------------------------
def _problem_of(name: str, X: np.ndarray) -> CovProblem:
    spec = registry.get_mechanism(name)
    ridge = RidgeTask(target=X.shape[1] - 1, alpha=1.0) if "a ridge task" in spec.needs else None
    return BandSumsProblem(X, ridge)


def BandSumsProblem(X, ridge):  # noqa: N802 -- a problem with its rows, as release(add_remove) needs
    return CovProblem.from_rows(X, 1.0, ridge=ridge, rows=X)


def _release_options(name: str) -> list[dict]:
    spec = registry.get_mechanism(name)
    base = {"tau": 0.5} if "tau" in spec.required_options() else {}
    if "numerics" in spec.option_names():
        return [{**base, "numerics": "hardened"}, {**base, "numerics": "idealized"}]
    return [base]


# every registered mechanism, plug-ins registered before collection included (stable_gsampling's proof conditions
# refuse these sizes from public facts alone: the same error on both sides, which the test compares too)
RELEASED = [(name, unit) for name in sorted(registry.MECHANISMS) for unit in ("replace_one", "add_remove")]


@pytest.mark.parametrize("name, unit", RELEASED)
def test_every_registered_mechanism_replays_through_release(name, unit):
    spec = registry.get_mechanism(name)
    if unit == "add_remove" and spec.add_remove is not None:
        pytest.skip(f"{name} refuses add_remove: {spec.add_remove}")
    X = base_rows()
    family = "add_edge_count_at_n" if unit == "add_remove" else "replace_edge"
    X, other, force, _ = neighbours(family, X)
    budget = BUDGETS[spec.notion]
    for options in _release_options(name):
        def go(data, options=options):
            def run():
                estimate, accountant = registry.release(name, _problem_of(name, data), budget,
                                                        np.random.default_rng(5), options=options,
                                                        privacy_unit=unit)
                value = getattr(estimate, "weights", estimate)
                values = np.asarray(getattr(value, "values", value))
                return values.tobytes(), accountant.ledger, accountant.released
            return run
        idealized = options.get("numerics", "idealized") == "idealized"
        # the zero matrix releases nothing; stable_gsampling refuses these sizes from public facts (its proof's
        # conditions): the same refusal on both sides
        check_pair(go(X), go(other), force, tolerance=1e-9 if idealized else 0.0,
                   releases=name not in ("zero", "stable_gsampling"))


# --- the two leaks of issue 58, reintroduced: the replay test fails on each ------------------------------------
@pytest.fixture
def old_summation_paths(monkeypatch):
    """Bug 1 as it was: arrays without a dropped row summed by BandSums.add on numpy's pairwise norms, and by the
    streamed pass's column-order norms once a row was dropped: the path chosen by whether a row was dropped."""
    import dpcov.estimators as estimators
    from dpcov.mechanisms.problem import BandSums, clip_rows
    one_routine, count_step, dropped = estimators._band_sums, estimators._PrivateFit._step_count, {}

    def step_count(self, fit):
        count_step(self, fit)
        dropped["any"] = len(fit.rows.drop) > 0

    def two_paths(X, clip, shift, radius):
        if dropped["any"] or shift is not None:
            return one_routine(X, clip, shift, radius)
        X = X if clip is None else clip_rows(X, clip)[0]
        return BandSums(radius).add(X, norms=np.sqrt(np.add.reduce(X * X, axis=1)))  # numpy's pairwise order

    monkeypatch.setattr(estimators._PrivateFit, "_step_count", step_count)
    monkeypatch.setattr(estimators, "_band_sums", two_paths)


@pytest.fixture
def band_count_in_sensitivity(monkeypatch):
    """Bug 2 as it was: the hardened SVT's float error from the number of non-empty bands (a fact of the data)."""
    original = adaptive_module.diff_float_error

    def from_data(bands, n, bound):
        counts = sys._getframe(1).f_locals["counts"]  # adaptive_cov's own band counts, as the old call read them
        return original(len(counts), n, bound)

    monkeypatch.setattr(adaptive_module, "diff_float_error", from_data)


@pytest.fixture
def by_the_reduction(monkeypatch):
    """AdaptiveCov under add/remove by the reduction (rows resized to the count, float sums), the route the two leaks
    lived on: since issue 59 it runs natively on exact sums (mechanisms/exact_sums.py), where neither can occur."""
    from dataclasses import replace as replaced

    from dpcov.mechanisms import registry
    monkeypatch.setitem(registry.MECHANISMS, "adaptive", replaced(registry.MECHANISMS["adaptive"],
                                                                    native=False))


def _default_pair(X, other, force, **options):
    make = [fitting(estimator_of("covariance", "add_remove", mechanism="adaptive", budget=ApproxDP(1.0, 1e-6),
                                 mechanism_options=options or None), data) for data in (X, other)]
    recorded, replayed, on_d, on_d_prime = run_pair(*make, force)
    return differences(recorded, replayed), on_d == on_d_prime


def test_replay_catches_the_two_summation_paths(old_summation_paths, by_the_reduction):
    X = directions(4000, 20, np.random.default_rng(0)) * 0.5
    problems, same = _default_pair(X, np.vstack([X, extra_row_of(20)]), {"count": float(len(X))})
    assert problems and any("moved by" in p for p in problems), problems


def inside_bands() -> tuple[np.ndarray, np.ndarray]:
    """D: rows of norm 0.45 and 0.2 (bands 1 and 2 of r = 1); D': its last row replaced by one of norm 0.9, alone in
    band 0 (AdaptiveCov at the declared radius: r~ = r, so band 0 is not clipped away)."""
    X = base_rows() * np.where(np.arange(N) < N // 2, 0.9, 0.8)[:, None]
    other = X.copy()
    other[-1] = extra_row("fills_band")
    return X, other


def test_replay_catches_a_band_count_in_the_sensitivity(band_count_in_sensitivity, by_the_reduction):
    problems, same = _default_pair(*inside_bands(), {"count": float(N)}, radius="known")
    assert any("slack differs" in p for p in problems) and not same, problems


def extra_row_of(d: int) -> np.ndarray:
    return directions(1, d, np.random.default_rng(7)) * 0.5


def test_without_the_bugs_the_same_pairs_replay():
    X = directions(4000, 20, np.random.default_rng(0)) * 0.5
    assert _default_pair(X, np.vstack([X, extra_row_of(20)]), {"count": float(len(X))}) == ([], True)
    assert _default_pair(*inside_bands(), {"count": float(N)}, radius="known") == ([], True)


def test_the_transcript_flags_a_statistic_beyond_its_sensitivity():
    """The checker itself: a step that declares half its sensitivity is flagged on a pair that moves it fully."""
    from dpcov.mechanisms.transcript import released

    def step(value):
        return lambda: released("gaussian", "half", np.array([value]), 0.0, sensitivity=0.5, norm="l2")
    recorded, replayed, _, _ = run_pair(step(0.0), step(1.0))
    assert differences(recorded, replayed) and "moved by 1" in differences(recorded, replayed)[0]
    recorded, replayed, _, _ = run_pair(step(0.0), step(0.5))
    assert differences(recorded, replayed) == []
    assert math.isclose(recorded.steps[0].sensitivity, 0.5)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_tukey_in_private_ridge_replays(family):
    """PrivateRidge(mechanism="tukey") on raw rows: the count (add/remove), the test and the restricted exponential
    mechanism, every family (issue 60). A large budget, so that these few rows have enough models for the test."""
    X, other, force, unit = neighbours(family, base_rows())
    make = [fitting(PrivateRidge(mechanism="tukey", budget=ApproxDP(40.0, 0.2), numerics="idealized",
                                 random_state=3, privacy_unit=unit), *split_ridge(data)) for data in (X, other)]
    check_pair(*make, force)
