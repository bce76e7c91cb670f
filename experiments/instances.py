"""A grid point's dataset instance: the data, the CovProblem the mechanisms see, the truth errors are
measured against, and the data's spectrum (for the theory overlays). Below both the runner (which
runs mechanisms on instances) and the theory (which reads the spectra the instances had)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from dpcov.data.registry import get_dataset
from dpcov.mechanisms.problem import CovProblem
from dpcov.mechanisms.regression import RidgeTask

from .config import Experiment
from .seeding import generator, params_key

SPECTRUM_FILE = "spectrum.csv"  # results/<target>/spectrum.csv: the data's eigenvalues per data point
SPECTRUM_COLUMNS = ("rows", "dim", "eigenvalues")


def data_params(dataset_name: str, point: dict) -> dict:
    return {k: point[k] for k in get_dataset(dataset_name).param_names()}


@dataclass(frozen=True)
class Instance:
    """A dataset instance: what mechanisms see, what errors are measured against, and columns."""

    problem: CovProblem
    truth: np.ndarray
    info: dict


def resampled(experiment: Experiment, point: dict) -> bool:
    """Whether the dataset draws a fresh sample for every trial at this grid point."""
    dataset = get_dataset(experiment.dataset)
    return dataset.resampled is not None and dataset.resampled(data_params(experiment.dataset, point))


def build_instance(experiment: Experiment, point: dict, trial: int | None = None) -> Instance:
    """The dataset instance of a grid point: seeded by its data parameters only, so every trial,
    mechanism and privacy budget at these data parameters sees the same rows -- or, for a
    resampled dataset, by the data parameters and ``trial`` (every mechanism and budget of a trial
    sees the same sample)."""
    dataset = get_dataset(experiment.dataset)
    params = data_params(experiment.dataset, point)
    key = params_key(params) + (() if trial is None else (f"trial={trial}",))
    rng = generator(experiment.seed, "data", dataset.name, *key)
    # One BLAS thread here too: sums in a fixed order, so the shared statistics (and every number
    # after them) do not depend on how many threads the environment gives BLAS (exact resume).
    with threadpool_limits(limits=1):
        data = dataset.load(params, rng, experiment.data_dir)
        ridge = None
        if experiment.ridge_alpha is not None and data.target is not None:
            ridge = RidgeTask(data.target, float(experiment.ridge_alpha))
        if experiment.add_remove():
            problem = _rows_problem(experiment, data, ridge)
        elif data.statistics is not None:  # rows summed a block at a time (a streamed table)
            problem = data.statistics.problem(ridge=ridge)
        elif data.X is None:  # a simulated statistic (Data.sigma of Data.n rows)
            problem = CovProblem.from_sigma(data.sigma, data.n, radius=data.radius)
        else:
            problem = CovProblem.from_rows(data.X, radius=data.radius, ridge=ridge, rows=data.rows_unbounded)
    truth = problem.sigma if data.truth is None else data.truth
    return Instance(problem, truth, {"data_trace": problem.trace,
                                     **{f"data_{k}": v for k, v in data.info.items()}})


def _rows_problem(experiment: Experiment, data, ridge) -> CovProblem:
    """The problem of a grid point where a line runs under privacy_unit=add_remove: it holds its (bounded) rows,
    which release resizes to each trial's released count (mechanisms/units.py). Only then are rows carried."""
    why = None
    if data.X is None:
        why = ("gives no rows: " + ("its rows are summed a block at a time (a streamed table)"
                                    if data.statistics is not None else "a simulated statistic (Sigma of n rows)"))
    elif data.rows_unbounded is not None:
        why = ("gives its mechanisms raw rows outside the norm ball (CovProblem.rows, for the stable mechanisms), "
               "where release resizes the problem's rows as rows in the ball")
    if why is not None:
        raise ValueError(f"privacy_unit=add_remove needs the dataset's rows, to resize them to each trial's "
                         f"released count; dataset {experiment.dataset!r} {why}: run it with "
                         f"privacy_unit=replace_one")
    return CovProblem.from_rows(data.X, radius=data.radius, ridge=ridge, rows=data.X)


def spectra_frame(experiment: Experiment) -> pd.DataFrame:
    """One row per data point of ``experiment`` (its data parameters): the rows and dimension of the
    instance the runner builds and the eigenvalues of its Sigma (space-separated), so overlays need
    no data at plotting time. Resampled datasets: trial 0's sample."""
    rows, seen = [], set()
    for point in experiment.grid():
        params = data_params(experiment.dataset, point)
        key = params_key(params)
        if key in seen:
            continue
        seen.add(key)
        problem = build_instance(experiment, point, 0 if resampled(experiment, point) else None).problem
        rows.append(spectrum_row(experiment, point, problem))
    return pd.DataFrame(rows)


def spectrum_row(experiment: Experiment, point: dict, problem: CovProblem) -> dict:
    """spectra_frame's row for the instance ``problem`` built at ``point``."""
    values = np.clip(np.linalg.eigvalsh(problem.sigma)[::-1], 0, None)
    return {**data_params(experiment.dataset, point), "rows": problem.n, "dim": problem.d,
            "eigenvalues": " ".join(f"{v:.6g}" for v in values)}
