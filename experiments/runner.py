"""Runs an experiment: grid points x trials x mechanisms, in parallel, resumable.

Data flow (GUIDE.md §6): loader -> X -> CovProblem (shared statistics, computed once per dataset
instance in the parent) -> for each trial, every mechanism on the same problem (paired comparison)
-> metrics -> one tidy row each -> results.csv -> summary.csv -> figure. Nothing here names a
mechanism or a dataset.
"""
from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, effective_n_jobs, parallel_config
from threadpoolctl import threadpool_limits

from data.registry import get_dataset
from mechanisms.problem import CovProblem
from mechanisms.regression import RidgeTask
from mechanisms.registry import release

from .config import Experiment
from .metrics import evaluate
from .seeding import canonical, generator, params_key
from .store import ResultsStore

STATS = ("mean", "std", "sem", "median", "count")


@dataclass(frozen=True)
class Outputs:
    results: Path
    summary: Path
    figure_png: Path | None
    figure_pdf: Path | None
    config: Path
    new_rows: int


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
    data = dataset.load(params, rng, experiment.data_dir)
    ridge = None
    if experiment.ridge_alpha is not None and data.target is not None:
        ridge = RidgeTask(data.target, float(experiment.ridge_alpha))
    if data.X is None:  # a simulated statistic (Data.sigma of Data.n rows)
        problem = CovProblem.from_sigma(data.sigma, data.n, radius=data.radius)
    else:
        problem = CovProblem.from_rows(data.X, radius=data.radius, ridge=ridge, rows=data.rows_unbounded)
    truth = problem.sigma if data.truth is None else data.truth
    return Instance(problem, truth, {"data_trace": problem.trace,
                                     **{f"data_{k}": v for k, v in data.info.items()}})


def run_trials(experiment: Experiment, instance: Instance | None, point: dict, trials: list[int],
               pending: dict[int, list[str]]) -> list[dict]:
    """One task: some trials of one grid point, each running its pending mechanisms (instance None:
    a resampled dataset, built here for each trial)."""
    rows = []
    with threadpool_limits(limits=1):  # one level of parallelism; also makes BLAS deterministic
        for trial in trials:
            trial_instance = instance or build_instance(experiment, point, trial)
            problem = trial_instance.problem
            for name in pending[trial]:
                line, budget = experiment.line(name), experiment.budget(name, point)
                rng = generator(experiment.seed, "trial", experiment.dataset, *params_key(point),
                                trial, name)
                start = time.perf_counter()
                estimate, accountant = release(line.mechanism, problem, budget, rng, options=line.options,
                                               clamp=experiment.clamp_eigenvalues)
                seconds = time.perf_counter() - start
                row = {"experiment": experiment.name, "dataset": experiment.dataset,
                       "mechanism": name, "label": line.label, "trial": trial,
                       "seed": experiment.seed, **point, "budget": str(budget),
                       "spent": str(accountant.spent), **trial_instance.info}
                for metric in experiment.metrics:
                    row[f"err_{metric}"] = evaluate(metric, estimate, trial_instance.truth, problem.sigma,
                                                    problem.ridge)
                row["seconds"] = seconds
                rows.append(row)
    return rows


class Progress:
    def __init__(self, name: str, total: int, every: float = 5.0):
        self.name, self.total, self.every = name, total, every
        self.done, self.start, self.last = 0, time.perf_counter(), 0.0

    def update(self, count: int, force: bool = False) -> None:
        self.done += count
        now = time.perf_counter()
        if force or now - self.last >= self.every or self.done == self.total:
            self.last = now
            elapsed = now - self.start
            eta = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
            print(f"[{self.name}] {self.done}/{self.total} mechanism runs "
                  f"({100 * self.done / max(self.total, 1):.0f}%), {elapsed:.0f}s elapsed, "
                  f"~{eta:.0f}s left", flush=True)


def plan(experiment: Experiment, done: set[tuple]):
    """[(point, {trial: [pending mechanisms]})] for every grid point with work left."""
    names = experiment.param_names()
    work = []
    for point in experiment.grid():
        key = tuple(canonical(point[p]) for p in names)
        pending = {t: [m for m in experiment.mechanisms
                       if t < experiment.trials_for(m) and (m, t, *key) not in done]
                   for t in range(experiment.trials)}
        pending = {t: ms for t, ms in pending.items() if ms}
        if pending:
            work.append((point, pending))
    return work


def _tasks(experiment: Experiment, work, chunk: int):
    """Lazily build each dataset instance once, then yield its trial chunks (grid order)."""
    cache_key, instance = None, None
    for point, pending in work:
        key = params_key(data_params(experiment.dataset, point))
        if resampled(experiment, point):
            cache_key, instance = None, None  # built per trial in the worker
        elif key != cache_key:
            cache_key, instance = key, build_instance(experiment, point)
        trials = sorted(pending)
        for i in range(0, len(trials), chunk):
            part = trials[i:i + chunk]
            yield delayed(run_trials)(experiment, instance, point, part, {t: pending[t] for t in part})


def in_experiment(experiment: Experiment, frame: pd.DataFrame) -> pd.Series:
    """Which rows of a results table belong to this experiment: its grid, mechanisms and trials."""
    if frame.empty:
        return pd.Series(False, index=frame.index)
    names = experiment.param_names()
    keys = {tuple(canonical(p[k]) for k in names) for p in experiment.grid()}
    in_grid = frame[names].apply(lambda r: tuple(canonical(v) for v in r), axis=1).isin(keys)
    trials = {m: experiment.trials_for(m) for m in experiment.mechanisms}
    return in_grid & (frame["trial"] < frame["mechanism"].map(trials))  # NaN (other mechanism): False


def summarise(experiment: Experiment, frame: pd.DataFrame) -> pd.DataFrame:
    """mean, std, sem, median and count of every metric (and seconds) per mechanism x grid point,
    over the rows of this experiment's grid and trials."""
    names = experiment.param_names()
    frame = frame[in_experiment(experiment, frame)]
    values = [f"err_{m}" for m in experiment.metrics] + ["seconds"]
    grouped = frame.groupby(["experiment", "dataset", "mechanism", "label", *names], sort=False)[values]
    summary = grouped.agg(list(STATS))
    summary.columns = [f"{v}_{s}" for v, s in summary.columns]
    return summary.reset_index()


@contextmanager
def trial_executor(experiment: Experiment):
    """Yields the n_jobs to give joblib. executor=dask runs the same tasks on a Dask cluster through
    joblib's Dask backend (results are identical: every trial is seeded by its key, not by where it
    runs); without a scheduler address, a LocalCluster of n_jobs single-threaded worker processes."""
    if experiment.executor == "local":
        yield experiment.n_jobs
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise RuntimeError("executor=dask needs dask.distributed: pip install -e '.[dask]'") from None
    if experiment.dask_scheduler:
        client, cluster = Client(experiment.dask_scheduler), None
    else:
        cluster = LocalCluster(n_workers=effective_n_jobs(experiment.n_jobs), threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
    print(f"[{experiment.name}] running on Dask: {client.scheduler.address}", flush=True)
    try:
        with parallel_config(backend="dask"):
            yield len(client.scheduler_info()["workers"]) or -1
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_experiment(experiment: Experiment, make_figure: bool = True) -> Outputs:
    store = ResultsStore(experiment.output_dir, experiment.fingerprint())
    config_path = store.write_config(experiment.resolved)
    work = plan(experiment, store.done(experiment.param_names()))
    runs = sum(len(ms) for _, pending in work for ms in pending.values())
    total = experiment.total_runs()
    fewer = "".join(f", {m}: {experiment.trials_for(m)}" for m in experiment.trials_per_mechanism)
    print(f"[{experiment.name}] {len(experiment.grid())} grid points x {experiment.trials} trials{fewer} x "
          f"{len(experiment.mechanisms)} mechanisms; {total - runs} runs already done, {runs} to go "
          f"-> {store.dir}", flush=True)
    new_rows = 0
    if work:
        with trial_executor(experiment) as n_jobs:
            chunk = max(1, min(10, math.ceil(experiment.trials / effective_n_jobs(n_jobs))))
            progress = Progress(experiment.name, runs)
            parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered", pre_dispatch="2*n_jobs")
            for rows in parallel(_tasks(experiment, work, chunk)):
                store.append(rows)  # written as soon as a task finishes: an interruption loses little
                new_rows += len(rows)
                progress.update(len(rows))
    summary = summarise(experiment, store.load())
    summary_path = store.dir / "summary.csv"
    summary.to_csv(summary_path, index=False)
    png, pdf = write_figures(experiment, summary, store.dir) if make_figure else (None, None)
    return Outputs(store.results, summary_path, png, pdf, config_path, new_rows)


def write_figures(experiment: Experiment, summary: pd.DataFrame, directory: Path):
    """figure.png/.pdf (the first metric) and figure_<metric>.png/.pdf for the others, from a
    summary; returns the first metric's (png, pdf), or (None, None) for an empty summary."""
    from figures.plot import plot_summary  # plotting reads only the summary

    png = pdf = None
    if summary.empty:
        return png, pdf
    for metric in reversed(experiment.metrics):  # figure.png: the first metric; others by name
        stem = "figure" if metric == experiment.metrics[0] else f"figure_{metric}"
        png, pdf = plot_summary(summary, experiment.figure, metric, Path(directory) / stem,
                                title=experiment.figure.title or experiment.paper_figure,
                                params=experiment.param_names())
    return png, pdf
