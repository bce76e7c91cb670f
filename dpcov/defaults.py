"""mechanism="auto": the estimators' default, chosen from public facts only by what the suite measured.

The facts: the task (PCA: captured variance of the top-k subspace; ridge: prediction error;
covariance: Frobenius error), n, d, k, and the budget's notion and size. Never the data.

The measurement (dpcov/measure.py, run by ``python scripts/defaults.py build``; committed as
``dpcov/auto_table.csv``): every registered mechanism that runs from bounded rows alone is fitted
through the estimators themselves (radius 1, centering="private", the default shares) on synthetic
rows at each cell of a grid of (task, notion, budget, n, d, k), in SCENARIOS that say what a public
radius usually is on real data: a loose bound (the largest row at 0.3-0.6 of it, as on MNIST, UCI and
scikit-learn's data), a mean away from 0, eigenvalues decaying as i^-decay. Its score in a cell is
its mean over scenarios and trials of (its metric relative to the cell's best: captured / best
captured, or best error / error), so 1 = best in every scenario.

``advise`` reads the cells of the budget's notion (and the nearest k for PCA), smooths each mechanism's
score over them with a Gaussian kernel in (log budget, log n, log d) half a grid step wide, and returns
the best with the ranking. The choice is checked out of sample
on real data (scripts/defaults.py agreement / pca; results/advisor/defaults/).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.advisor import candidates as runnable
from mechanisms.privacy import ApproxDP, PureDP, ZCDP, budget_guaranteeing
from mechanisms.registry import get_mechanism

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
SCENARIOS = ({"decay": 1.0, "fill": 1.0}, {"decay": 1.0, "fill": 0.6}, {"decay": 2.0, "fill": 0.3})
# the zero matrix releases nothing; its "principal components" would be the axes, which capture what the
# data's coordinates happen to: not a PCA. Ridge from it predicts the private mean of y: it won the synthetic
# ridge cells at small budgets and lost every held-out ridge cell it was chosen for (Amin's UCI targets: up
# to 53 x the best error), so it is left out there too.
NOT_FOR = {"pca": ("zero",), "ridge": ("zero",), "covariance": ()}
SMOOTHING = 0.5  # the kernel's width in grid steps (advise)


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


def advise(task: str, n: int, d: int, budget, k: int | None = None, table: pd.DataFrame | None = None) -> Advice:
    """The mechanism the measured table ranks first for these public facts (module doc)."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    budget_facts(budget)  # a clear error for a non-budget
    if table is None:
        return _advise_committed(task, int(n), int(d), budget, None if k is None else int(k))
    return _advise(task, n, d, budget, k, table)


@lru_cache(maxsize=1024)
def _advise_committed(task: str, n: int, d: int, budget, k: int | None) -> Advice:
    return _advise(task, n, d, budget, k, load_table())


def _advise(task: str, n: int, d: int, budget, k: int | None, table: pd.DataFrame) -> Advice:
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
    reason = (f"{ranking[0][0]}: first ({ranking[0][1]:.2f} of the best) in the measured cells around "
              f"n = {n}, d = {d}, {budget}{asked_k} (task {task}; nearest: n = {facts['n']}, d = {facts['d']}, "
              f"{notion} {facts['budget']:g}{cell_k}){runner_up}")
    return Advice(ranking[0][0], ranking, facts, reason)


def candidates(task: str, budget) -> list[str]:
    """The registered mechanisms auto may choose for ``task`` under ``budget`` (those that run from bounded
    rows alone and whose notion can meet it)."""
    names = []
    for name in runnable():
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
