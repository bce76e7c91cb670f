"""mechanism="auto": the estimators' default, chosen by what the suite measured.

The facts: the task (PCA: captured variance of the top-k subspace; ridge: prediction error;
covariance: Frobenius error), n, d, k, and the budget's notion and size -- public -- and, only where
the measured choice depends on it and n allows, the rows' typical norm: their median norm over the
radius, released privately by the estimator (``auto_share`` of the budget, in its ledger;
mechanisms/norm_bound.py private_norm_quantile_of). A radius tight for most rows (min-max scaled
tables) favours mechanisms calibrated to it; a loose one (pixels, a bound far above most rows)
favours those that clip adaptively.

The measurement (dpcov/measure.py, run by ``python scripts/defaults.py build``; committed as
``dpcov/auto_table.csv``): every registered mechanism that runs from bounded rows alone is fitted
through the estimators themselves (radius 1, centering="private", the default shares) on synthetic
rows at each cell of a grid of (task, notion, budget, n, d, k), in SCENARIOS that say what a public
radius and the rows usually are on real data: a tight or loose bound (the largest row at 0.3-1 of it, as
on MNIST, UCI and scikit-learn's data), eigenvalues decaying as i^-decay, Gaussian rows with a mean away
from 0, and nonnegative columns (min-max scaled tables, pixels) whose mean is near the largest norm and
whose norms bunch below it. Its score in a cell is
its mean over trials of (its metric relative to the scenario's best: captured / best captured, or best
error / error) per scenario, so 1 = best in every trial, with the scenario's typical norm. The committed table
was measured with idealized numerics (before issue 48); hardened and idealized errors are statistically identical
(results/measurements/hardened_vs_idealized.txt), so it stands, and with the estimators' default numerics="hardened"
the estimators read its ranking restricted to the mechanisms that can be hardened (dpcov/estimators.py).

``advise`` reads the cells of the budget's notion (and the nearest k for PCA), smooths each mechanism's
score over them with a Gaussian kernel in (log budget, log n, log d) half a grid step wide -- and, given
a typical norm, in log typical norm (TYPICAL_WIDTH) across scenarios; else every scenario weighs the
same -- and returns the best with the ranking. The choice is checked on real data
(scripts/defaults.py agreement / pca; results/advisor/defaults/): out of sample on the sets of
``pca --held-out``, which nothing here was designed on.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from dpcov.experiments.advisor import candidates as runnable
from dpcov.mechanisms.norm_bound import RATIO_EXPONENT, grid, quantile_possible
from dpcov.mechanisms.privacy import ApproxDP, PureDP, ZCDP, budget_guaranteeing
from dpcov.mechanisms.registry import MECHANISMS, get_mechanism

TABLE = Path(__file__).with_name("auto_table.csv")
TASKS = ("pca", "covariance", "ridge")
NOTION_NAMES = {ZCDP: "zcdp", PureDP: "pure", ApproxDP: "approx"}
DELTA = 1e-6  # the (eps, delta) cells' delta
# the grid of the committed table
GRID_N = (300, 3000, 30000)
GRID_D = (8, 32, 96)
GRID_K = (1, 5)
GRID_BUDGETS = {"pure": (0.25, 1.0, 4.0, 16.0), "zcdp": (0.005, 0.05, 0.5, 5.0), "approx": (0.25, 1.0, 4.0, 16.0)}
# fill: largest row norm / radius (1: a tight public radius, as after the UCI loaders' scaling; 0.3-0.6:
# a loose one, as on MNIST and scikit-learn's data with their public bounds)
SCENARIOS = ({"decay": 1.0, "fill": 1.0}, {"decay": 1.0, "fill": 0.6}, {"decay": 2.0, "fill": 0.3},
             # nonnegative columns (min-max scaled tables, pixel intensities): a mean near the largest norm and
             # most norms close to it, where a public radius is tight for most rows (dpcov/measure.py scenario_rows)
             {"decay": 1.0, "fill": 1.0, "kind": "nonnegative"}, {"decay": 2.0, "fill": 0.6, "kind": "nonnegative"})
# the zero matrix releases nothing; its "principal components" would be the axes, which capture what the
# data's coordinates happen to: not a PCA. Ridge from it predicts the private mean of y: it won the synthetic
# ridge cells at small budgets and lost every held-out ridge cell it was chosen for (Amin's UCI targets: up
# to 53 x the best error), so it is left out there too.
NOT_FOR = {"pca": ("zero",), "ridge": ("zero",), "covariance": ()}
SMOOTHING = 0.5  # the kernel's width in grid steps (advise)
# the scenarios' kernel in log typical norm (advise): half the median gap between the scenarios' typical norms
# in a cell (0.08, 0.31, 0.47, 0.49, 0.82 at n = 30000, d = 96: gaps 1.33, 0.42, 0.04, 0.52), as SMOOTHING is
# half a grid step of the other axes
TYPICAL_WIDTH = 0.25
TYPICAL_QUANTILE = 0.5  # the typical norm: the rows' median norm over the radius
# the estimators' default auto_share: what the median norm costs where it is released. The median needs no more
# than a grid step's accuracy: at 2 % the walk's margin, 6/eps log(2K/beta) + 1 rows, is a small part of the n/2
# around it wherever n is large (MNIST, adult: any eps >= 0.25), and small sets, where it would cost most, go without
AUTO_SHARE = 0.02
TYPICALS = tuple(np.geomspace(0.05, 1.0, 13))  # where depends_on_typical looks for a change of choice


@dataclass(frozen=True)
class Advice:
    """Why mechanism="auto" chose ``mechanism``: the table cell it read and that cell's ranking."""

    mechanism: str
    ranking: tuple  # ((name, score), ...) best first; score 1 = the cell's best in every scenario
    cell: dict  # the grid point read: task, notion, budget, n, d, k
    reason: str

    def __str__(self) -> str:
        return self.reason


def budget_facts(budget) -> tuple[str, float]:
    """(notion name, the number that sets its noise: rho for zCDP, eps otherwise)."""
    for notion, name in NOTION_NAMES.items():
        if isinstance(budget, notion):
            return name, (budget.rho if notion is ZCDP else budget.eps)
    raise TypeError(f"budget must be ZCDP(rho), PureDP(eps) or ApproxDP(eps, delta), got {budget!r}")


def budget_of(notion: str, value: float):
    return {"zcdp": lambda: ZCDP(value), "pure": lambda: PureDP(value),
            "approx": lambda: ApproxDP(value, DELTA)}[notion]()


@lru_cache(maxsize=4)
def load_table(path: str = str(TABLE)) -> pd.DataFrame:
    table_path = Path(path)
    if not table_path.exists():
        raise FileNotFoundError(f"mechanism='auto' reads its measured table {table_path}, which is missing; "
                                f"rebuild it with  python scripts/defaults.py build  (or name a mechanism)")
    return pd.read_csv(table_path)


def advise(task: str, n: int, d: int, budget, k: int | None = None, table: pd.DataFrame | None = None,
           typical: float | None = None) -> Advice:
    """The mechanism the measured table ranks first for these facts (module doc); ``typical``: the rows'
    typical norm (median norm / radius, released privately), None to weigh every scenario the same."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    budget_facts(budget)  # a clear error for a non-budget
    if typical is not None and not (np.isfinite(typical) and typical > 0):
        raise ValueError(f"typical must be a number > 0 (the rows' median norm over the radius), got {typical!r}")
    typical = None if typical is None else float(typical)
    if table is None:
        return _advise_committed(task, int(n), int(d), budget, None if k is None else int(k), typical)
    return _advise(task, n, d, budget, k, table, typical)


def typical_of_release(released: float, radius: float) -> float:
    """The typical norm auto reads from a released median (a grid radius at or above the median, up to one
    2^(1/4) step and the walk's noise): moved to the middle of its grid step, over the radius, at most 1."""
    return min(released * 2.0 ** (-RATIO_EXPONENT / 2), radius) / radius


def typical_stand_in(median: float, radius: float) -> float:
    """What typical_of_release gives, without the walk's noise, for rows whose exact median norm is ``median``
    (scripts/defaults.py agreement: the committed targets' rows, read exactly)."""
    radii = grid()
    return typical_of_release(float(radii[radii >= median].min()), radius)


def releases_typical(task: str, n: int, d: int, budget, k: int | None = None, share: float = AUTO_SHARE) -> bool:
    """Whether the estimators' auto releases the rows' median norm (``share`` of the budget, 0: never), from
    public facts only: where the measured choice depends on it and n is large enough to place a private median."""
    return (share > 0 and quantile_possible(int(n), TYPICAL_QUANTILE, budget.scaled(share))
            and depends_on_typical(task, n, d, budget, k))


def depends_on_typical(task: str, n: int, d: int, budget, k: int | None = None,
                       table: pd.DataFrame | None = None) -> bool:
    """Whether the rows' typical norm can change auto's choice here (public: the table, n, d, k, budget):
    only then does the estimator spend on releasing it."""
    if table is None:
        return _depends_committed(task, int(n), int(d), budget, None if k is None else int(k))
    return _depends(task, n, d, budget, k, table)


@lru_cache(maxsize=1024)
def _depends_committed(task: str, n: int, d: int, budget, k: int | None) -> bool:
    return _depends(task, n, d, budget, k, None)


def _depends(task: str, n: int, d: int, budget, k: int | None, table: pd.DataFrame | None) -> bool:
    choices = {advise(task, n, d, budget, k, table, typical=t).mechanism for t in TYPICALS}
    return len(choices | {advise(task, n, d, budget, k, table).mechanism}) > 1


@lru_cache(maxsize=1024)
def _advise_committed(task: str, n: int, d: int, budget, k: int | None, typical: float | None) -> Advice:
    return _advise(task, n, d, budget, k, load_table(), typical)


def _advise(task: str, n: int, d: int, budget, k: int | None, table: pd.DataFrame,
            typical: float | None = None) -> Advice:
    notion, value = budget_facts(budget)
    rows = table[(table.task == task) & (table.notion == notion)]
    if task == "pca":
        k = 1 if k is None else int(k)
        rows = rows[rows.k == min(GRID_K, key=lambda g: abs(math.log(g) - math.log(k)))]
    # each mechanism's score smoothed over the grid (a Gaussian kernel in log budget, log n, log d, half a
    # grid step wide): one cell's few trials decide little where every mechanism is near a random answer
    steps = {"budget": math.log(4.0 if notion != "zcdp" else 10.0), "n": math.log(10.0), "d": math.log(3.0)}
    asked = {"budget": value, "n": n, "d": d}
    distance = sum((np.log(rows[axis].to_numpy() / asked[axis]) / steps[axis]) ** 2 for axis in steps)
    weights = np.exp(-(distance - distance.min()) / (2 * SMOOTHING**2))  # the nearest cell weighs 1
    if typical is not None:  # within each cell, the scenarios whose rows' typical norm is near the data's
        gap = pd.Series((np.log(rows.typical.to_numpy() / typical) / TYPICAL_WIDTH) ** 2 / 2, index=rows.index)
        nearest_in_cell = gap.groupby([rows.budget, rows.n, rows.d]).transform("min")  # its nearest weighs 1:
        weights = weights * np.exp(-(gap - nearest_in_cell)).to_numpy()  # the cells keep their own kernel
    smoothed = (pd.DataFrame({"mechanism": rows.mechanism.to_numpy(), "w": weights,
                              "ws": weights * rows.score.to_numpy()})
                .groupby("mechanism")[["w", "ws"]].sum())
    smoothed = (smoothed.ws / smoothed.w).sort_values(ascending=False, kind="stable")
    nearest = rows.iloc[int(np.argmin(distance))]
    ranking = tuple((str(m), round(float(v), 3)) for m, v in smoothed.items())
    facts = {"task": task, "notion": notion, "budget": float(nearest.budget), "n": int(nearest.n),
             "d": int(nearest.d), "k": (int(nearest.k) if task == "pca" else None)}
    runner_up = f"; next {ranking[1][0]} ({ranking[1][1]:.2f})" if len(ranking) > 1 else ""
    asked_k = f", k = {k}" if task == "pca" else ""
    cell_k = f", k = {facts['k']}" if task == "pca" else ""
    rows_like = "" if typical is None else f", rows' typical norm {typical:.2g} x the radius"
    reason = (f"{ranking[0][0]}: first ({ranking[0][1]:.2f} of the best) in the measured cells around "
              f"n = {n}, d = {d}, {budget}{asked_k}{rows_like} (task {task}; nearest: n = {facts['n']}, "
              f"d = {facts['d']}, {notion} {facts['budget']:g}{cell_k}){runner_up}")
    facts["typical"] = typical
    return Advice(ranking[0][0], ranking, facts, reason)


def regression_lines() -> list[str]:
    """The registered regression lines PrivateRidge runs from bounded rows with nothing to choose (AdaSSP: a ridge
    task and numerics=; not TukeyEM, which reads raw rows)."""
    return [name for name, m in MECHANISMS.items() if m.needs == ("a ridge task",) and not m.required_options()
            and "numerics" in m.option_names()]


def candidates(task: str, budget) -> list[str]:
    """The registered mechanisms auto may choose for ``task`` under ``budget`` (those that run from bounded
    rows alone and whose notion can meet it; for ridge, the regression lines too: issue 60)."""
    names = []
    for name in runnable() + (regression_lines() if task == "ridge" else []):
        if name in NOT_FOR[task]:
            continue
        try:
            budget_guaranteeing(budget, get_mechanism(name).notion)
        except ValueError:
            continue
        names.append(name)
    return names


def grid_cells(tasks=TASKS) -> list[tuple]:
    cells = []
    for task in tasks:
        for notion, values in GRID_BUDGETS.items():
            for value in values:
                for n in GRID_N:
                    for d in GRID_D:
                        for k in (GRID_K if task == "pca" else (None,)):
                            if task == "pca" and k > d:
                                continue
                            cells.append((task, notion, value, n, d, k))
    return cells
