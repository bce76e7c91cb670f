"""Regenerate every committed paper figure at paper scale, skipping what is complete; then rebuild
the generated tables at the end of REPRODUCTION.md from the summaries.

    dpcov reproduce --status          what is complete, what is left, time estimate (seconds)
    dpcov reproduce --status --from-scratch   the time of the whole --all from nothing
    dpcov reproduce --status --measure        time what is left on this machine now (minutes)
    dpcov reproduce --all             run everything that is not complete (resumable)
    dpcov reproduce fig3a amin/fig1a  only these targets (by name or output dir)
    dpcov reproduce --tables          only rebuild the tables, GALLERY.md and the composite figures
    dpcov reproduce --figures         re-draw every committed figure from its committed summary
    dpcov reproduce --rerun emcov fig2 fig4   re-run a committed line after a change that
                                                  must keep its distribution; prints the z-scores
    dpcov reproduce --add mypkg.cov:my_mech --out results_mine/
                                                  every figure with your mechanism's line added
    dpcov reproduce --record-lines    record the fingerprints of committed lines that have none
    dpcov reproduce --compare ../clone/results   every committed line against another results
                                                  tree (a regeneration): identical cells, z-scores

A target is complete when its summary.csv has every (mechanism, grid point) at the paper's trial
count and no line is stale: results/<target>/lines.json records each committed line's fingerprint
(experiments/fingerprint.py: its seeded output on a small probe problem); a line whose code has changed
since gives another one, is reported stale by --status and re-runs (--rerun LINE TARGET). A line (mechanism or variant) that is complete in the committed summary is re-used, never
re-run; the missing lines run into <target>/partial/ (resumable from its results.csv) and are merged
with the committed ones into summary.csv and the figure.

``--add NAME --out DIR`` (NAME: a mechanism, e.g. a plug-in's dotted path; repeatable) adds the line
to every chosen target (default: all) and writes the merged figures into DIR/<target>/: the committed
lines come from results/ (never re-run, never modified), only the added lines run (resumable from
DIR/<target>/partial/). Targets whose budget the mechanism's privacy notion cannot meet (a zCDP
mechanism under pure eps-DP) are skipped with a note.
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from joblib import Parallel, cpu_count, delayed, effective_n_jobs


from dpcov.experiments.config import budget_from_params, compose_experiment
from dpcov.experiments.fingerprint import fingerprint, read_lines, stale_lines, write_lines
from dpcov.experiments.instances import SPECTRUM_FILE, build_instance, data_params, resampled, spectra_frame
from dpcov.experiments.runner import (in_experiment, line_spec, run_experiment, run_trials, trial_executor,
                                trials_per_task)
from dpcov.experiments.seeding import canonical, params_key
from dpcov.mechanisms.privacy import budget_guaranteeing
from dpcov.mechanisms.registry import get_mechanism
from dpcov.figures.bounds import STEM, plot_bounds
from dpcov.figures.composite import load_composites, render_composite
from dpcov.figures.gallery import GALLERY, gallery
from dpcov.figures.plot import write_figures

from .table import markdown
from . import project_root

ROOT = project_root()

REPRODUCTION = ROOT / "REPRODUCTION.md"
BEGIN, END = "<!-- generated tables: begin -->", "<!-- generated tables: end -->"


@dataclass(frozen=True)
class Target:
    out: str  # under results/
    experiment: str
    overrides: tuple = ()
    x: str = ""
    panel: str | None = None

    @property
    def name(self) -> str:
        return self.out.split("/", 1)[1]


TARGETS = [
    Target("dong2022/fig2", "synthetic_unit_norm", x="d", panel="n"),
    Target("dong2022/fig3a", "synthetic_trace", x="N"),
    Target("dong2022/fig3b", "synthetic_dim", x="d"),
    Target("dong2022/fig3c", "synthetic_samples", x="n"),
    Target("dong2022/fig3d", "synthetic_rho", x="rho"),
    Target("dong2022/fig4", "mnist_rho", x="rho", panel="n"),
    Target("dong2022/fig5", "news_rho", x="rho", panel="d"),
    Target("dong2022/fig6", "mnist_digits", x="rho", panel="digit"),
    Target("dong2022/fig7", "pure_unit_norm", x="d", panel="n"),
    Target("dong2022/fig8_trace", "pure_trace", x="N", panel="n"),
    Target("dong2022/fig8_dim", "pure_dim", x="d", panel="n"),
    Target("dong2022/fig8_eps", "pure_eps", x="eps", panel="n"),
    Target("wangxu/sparsity", "wangxu_sparsity", x="n", panel="sr"),
    Target("wangxu/dim", "wangxu_dim", x="n", panel="p"),
    Target("wangxu/eps", "wangxu_eps", x="n", panel="eps"),
    Target("amin2019/fig1a", "amin_fig1a", x="eps", panel="name"),
    Target("amin2019/fig1b", "amin_fig1b", x="eps", panel="name"),
    Target("amin2019/zcdp", "amin_zcdp", x="eps", panel="name"),
    Target("amin2019/regression", "amin_regression", x="eps", panel="name"),
    Target("amin2019/fig1a_raw", "amin_fig1a", ("params.preprocess=raw",), x="eps", panel="name"),
    Target("amin2019/fig1b_raw", "amin_fig1b", ("params.preprocess=raw",), x="eps", panel="name"),
    Target("amin2019/regression_raw", "amin_regression", ("params.preprocess=raw",), x="eps", panel="name"),
    Target("amin2019/appc_dim", "amin_appc_dim", x="d", panel="eps"),
    Target("lecture/stable_mahalanobis", "stable_mahalanobis", x="n", panel="kappa"),
    Target("advisor/phase_diagram", "phase_diagram", x="d", panel="n"),  # dpcov advise
]


RESULTS = ROOT / "results"
PARTIAL = "partial"  # <target>/partial/: results.csv of the lines run here (not committed)
FROM_SCRATCH_FILE = Path(__file__).with_name("from_scratch.csv")  # package data: each target's measured seconds
FROM_SCRATCH_WORKERS = 2  # the workers of that measured run


def from_scratch_seconds() -> dict[str, float]:
    """Each target's seconds in the committed --all run from nothing (from_scratch.csv)."""
    table = pd.read_csv(FROM_SCRATCH_FILE, comment="#")
    return dict(zip(table.target, table.seconds.astype(float)))


def experiment_of(target: Target, n_jobs: int = -1, extra: tuple = (), output_dir: Path | None = None):
    out = output_dir or RESULTS / target.out
    return compose_experiment([f"experiment={target.experiment}", "scale=paper", f"n_jobs={n_jobs}",
                               f"output_dir={out}", *target.overrides, *extra])


def _count_column(summary: pd.DataFrame) -> str:
    return next(c for c in summary.columns if c.startswith("err_") and c.endswith("_count"))


def committed_lines(exp, summary_path: Path) -> pd.DataFrame:
    """The rows of a committed summary.csv that belong to ``exp`` (its lines and grid), for the lines
    that are complete there (every grid point at the line's trial count); empty if none are."""
    if not summary_path.exists():
        return pd.DataFrame()
    summary = pd.read_csv(summary_path)
    names = exp.param_names()
    if summary.empty or not set(names) <= set(summary.columns):
        return pd.DataFrame()
    keys = {tuple(canonical(p[k]) for k in names) for p in exp.grid()}
    in_grid = summary[names].apply(lambda r: tuple(canonical(v) for v in r), axis=1).isin(keys)
    summary = summary[in_grid & summary.mechanism.isin(exp.mechanisms)]
    count = summary[_count_column(summary)] if not summary.empty else pd.Series(dtype=float)
    complete = [m for m in exp.mechanisms
                if (summary.mechanism == m).sum() == len(keys)
                and (count[summary.mechanism == m] >= exp.trials_for(m)).all()]
    stale = stale_lines(summary_path.parent, {m: spec_of(exp, m) for m in complete})
    return summary[summary.mechanism.isin([m for m in complete if m not in stale])]


def spec_of(exp, name: str) -> dict:
    """A line's spec (mechanism, options, budget overrides) as lines.json records it."""
    return json.loads(line_spec(exp, name))


def record_lines(exp, directory: Path, names, base: Path | None = None) -> None:
    """lines.json of ``directory``: today's fingerprint for the lines ``names`` just run, the recorded
    entries (from ``base``, the committed target, if given) for the others; only the target's lines."""
    recorded = {**read_lines(base or directory), **read_lines(directory)}
    lines = {m: recorded[m] for m in exp.mechanisms if m in recorded and m not in names}
    for name in names:
        spec = spec_of(exp, name)
        lines[name] = {"spec": spec, "fingerprint": fingerprint(spec)}
    write_lines(directory, lines)


@dataclass
class Plan:
    """What a target still needs: the experiment, the complete committed lines, the lines to run."""

    experiment: object
    committed: pd.DataFrame
    missing: list
    out: Path

    @property
    def partial(self) -> Path:
        return self.out / PARTIAL


def plan_target(target: Target, n_jobs: int = -1, out_root: Path = RESULTS, base_root: Path = RESULTS) -> Plan:
    """Lines already complete in ``base_root``'s committed summary are re-used, not re-run; the
    others run into ``out_root/<target>/partial`` (resumable) and are merged with them."""
    exp = experiment_of(target, n_jobs)
    committed = committed_lines(exp, base_root / target.out / "summary.csv")
    done = set(committed.mechanism) if not committed.empty else set()
    return Plan(exp, committed, [m for m in exp.mechanisms if m not in done], out_root / target.out)


def missing_experiment(target: Target, plan: Plan, n_jobs: int = -1):
    return experiment_of(target, n_jobs, (f"mechanisms=[{','.join(plan.missing)}]",), plan.partial)


_RUN_SECONDS: dict[tuple, float] = {}  # (dataset, line, _data_key, grid point) -> seconds of a run
_DATA_SECONDS: dict[tuple, list] = {}  # (dataset, line, _data_key) -> the runs measured there
_WARM: set = set()  # (dataset, line) already run once in this process
_BUILD_SECONDS: dict[tuple, float] = {}  # _data_key -> seconds to build its instance
_INSTANCE: dict[tuple, object] = {}  # the last dataset instance built for a measurement
_EXECUTOR: dict[str, float] = {}  # "startup", "task" (executor_seconds), "fixed" (_fixed_seconds): measured once
_FIRST_USE = [0.0]  # seconds the lines' first runs in this process took beyond a run (run_seconds)
ROUND_TRIPS = 64  # empty tasks timed through the executor (executor_seconds)
CHEAP = 0.05  # seconds: a line whose run costs less is timed at every grid point, over a task's trials


def _data_key(exp, point: dict) -> tuple:
    """What a run's cost depends on besides its line and budget: the data point, and how the runner
    builds and scores it (targets share a dataset but not always its ridge task or metrics)."""
    return (exp.dataset, exp.ridge_alpha, exp.clamp_eigenvalues, tuple(exp.metrics),
            params_key(data_params(exp.dataset, point)))


def _instance(exp, point: dict):
    """``point``'s dataset instance, built once for consecutive measurements (its build time kept)."""
    data_key = _data_key(exp, point)
    if data_key not in _INSTANCE:
        _INSTANCE.clear()
        start = time.perf_counter()
        _INSTANCE[data_key] = build_instance(exp, point, 0 if resampled(exp, point) else None)
        _BUILD_SECONDS[data_key] = time.perf_counter() - start
    return _INSTANCE[data_key]


def run_seconds(exp, names: list[str], point: dict, measure: bool = False) -> dict[str, float]:
    """Seconds of one run of each line in ``names`` at ``point`` -- the release and its error metrics,
    measured now as a worker runs them (experiments.runner.run_trials, one BLAS thread; a line's
    first measurement in this process follows a warm-up run, for JIT compilation), without a task's
    own cost (``executor_seconds``). A worker task runs a few trials on one copy of the instance,
    so what a release keeps on it (C's eigh, stable_gsampling's score) is computed once per task: a
    run costs the first release plus (chunk - 1) later ones, over chunk. A cheap line (< CHEAP) is
    measured at every grid point, over a whole task's trials in one call (one run's timing would be
    mostly noise); an expensive one where ``measure`` asks (progress: the first and last budget of
    each data point) and elsewhere costs the mean of its data point's measurements (an exponential
    mechanism's rejection sampling can cost more at a large budget than at a small one)."""
    data_key = _data_key(exp, point)
    point_key = (*data_key, params_key(point))
    keys = {name: (exp.dataset, line_spec(exp, name)) for name in names}

    def known(name):
        measured = _RUN_SECONDS.get((*keys[name], point_key))
        costs = _DATA_SECONDS.get((*keys[name], data_key), [])
        if measured is None and costs and min(costs) >= CHEAP and not measure:
            return sum(costs) / len(costs)
        return measured

    unmeasured = [name for name in names if known(name) is None]
    if unmeasured:
        instance = _instance(exp, point)
        chunk = trials_per_task(exp.trials, cpu_count())
        fixed = _fixed_seconds(exp, instance, point)
        for name in unmeasured:
            warm_up = None
            if keys[name] not in _WARM:  # the line's first run in this process: a warm-up
                warm_up = _timed_run(exp, instance, point, name, fresh=True) - fixed
                _WARM.add(keys[name])
            single = first = later = max(_timed_run(exp, instance, point, name, fresh=True) - fixed, 0.0)
            if first < CHEAP:
                first = later = max(_timed_run(exp, instance, point, name, True, range(chunk)) - fixed, 0.0) / chunk
            elif chunk > 1:
                later = max(_timed_run(exp, instance, point, name, fresh=False) - fixed, 0.0)
            if warm_up is not None:  # its kernels' JIT compilation (or loading numba's cache): the
                _FIRST_USE[0] += max(warm_up - single, 0.0)  # workers pay it too, at the same time
            _RUN_SECONDS[(*keys[name], point_key)] = cost = (first + (chunk - 1) * later) / chunk
            _DATA_SECONDS.setdefault((*keys[name], data_key), []).append(cost)
    return {name: known(name) for name in names}


def _timed_run(exp, instance, point: dict, name: str | None, fresh: bool, trials=(0,)) -> float:
    """Seconds of one call running ``name`` for ``trials`` (None: nothing, a task's fixed cost);
    ``fresh``: with nothing kept on the instance by earlier runs."""
    if fresh:
        for kept in ("unit_gram_eigh", "shared"):  # cached properties of CovProblem
            instance.problem.__dict__.pop(kept, None)
    start = time.perf_counter()
    run_trials(exp, instance, [point], list(trials), {(0, t): [name] for t in trials} if name else {})
    return time.perf_counter() - start


def _fixed_seconds(exp, instance, point: dict) -> float:
    """run_trials's own seconds with nothing to run (BLAS thread limits, plug-ins), measured once."""
    if "fixed" not in _EXECUTOR:
        _EXECUTOR["fixed"] = min(_timed_run(exp, instance, point, None, fresh=False) for _ in range(3))
    return _EXECUTOR["fixed"]


def executor_seconds(exp) -> dict[str, float]:
    """Measured once, through the run's executor with ``exp``'s first dataset instance: "startup", the
    seconds its worker processes take to start (spawn, imports) -- paid once per reproduce run: the
    workers are re-used -- and "task", a worker task's own seconds (run_trials's own, sending it its
    arguments, returning its rows): ROUND_TRIPS tasks with nothing to run, on cold then warm workers."""
    if "task" in _EXECUTOR:
        return _EXECUTOR
    point = exp.grid()[0]
    instance = None if resampled(exp, point) else _instance(exp, point)
    _fixed_seconds(exp, _instance(exp, point), point)
    tasks = [delayed(run_trials)(exp, instance, [point], [], {}) for _ in range(ROUND_TRIPS)]
    walls = []
    with trial_executor(exp) as n_jobs:
        for _ in range(2):
            start = time.perf_counter()
            Parallel(n_jobs=n_jobs, pre_dispatch="2*n_jobs")(tasks)
            walls.append(time.perf_counter() - start)
    _EXECUTOR["startup"] = max(walls[0] - walls[1], 0.0)
    _EXECUTOR["task"] = walls[1] * effective_n_jobs(exp.n_jobs) / ROUND_TRIPS
    return _EXECUTOR


def task_count(exp, names: list[str]) -> int:
    """The worker tasks of the lines ``names`` (experiments.runner._tasks): each grid point --
    or each data point, for a resampled dataset -- in chunks of trials."""
    chunk = trials_per_task(exp.trials, cpu_count())
    trials = max(exp.trials_for(name) for name in names)
    grid = exp.grid()
    groups = {params_key(data_params(exp.dataset, p)) for p in grid if resampled(exp, p)}
    return (len(groups) + sum(not resampled(exp, p) for p in grid)) * math.ceil(trials / chunk)


def build_seconds(exp, point: dict) -> float:
    """Seconds to build ``point``'s dataset instance (after ``run_seconds`` at a point with its data)."""
    return _BUILD_SECONDS[_data_key(exp, point)]


def finish_seconds(target: Target, exp, names: list[str]) -> float:
    """Seconds a target spends outside its runs, in the main process: composing its experiment (a
    run composes it twice: progress times the other), the new lines' fingerprints, the summary and
    figures (timed by drawing the committed summary, if there is one)."""
    start = time.perf_counter()
    experiment_of(target)
    for name in names:
        fingerprint(spec_of(exp, name))
    summary_path = RESULTS / target.out / "summary.csv"
    if summary_path.exists():
        with tempfile.TemporaryDirectory() as scratch:
            summary = pd.read_csv(summary_path)
            summary.to_csv(Path(scratch) / "summary.csv", index=False)
            if (RESULTS / target.out / SPECTRUM_FILE).exists():
                shutil.copyfile(RESULTS / target.out / SPECTRUM_FILE, Path(scratch) / SPECTRUM_FILE)
            write_figures(exp, summary, Path(scratch))
    return time.perf_counter() - start


def progress(target: Target, out_root: Path = RESULTS, base_root: Path = RESULTS,
             n_jobs: int = -1, measure: bool = True) -> tuple[int, int, float]:
    """(runs done, runs in total, estimated wall seconds left): committed complete lines count as
    done; the other lines count what their partial results.csv holds. The time left is each
    missing run's cost -- the mean seconds of the line's runs in partial/ if it has any, else one
    run measured now (``run_seconds``; plus each worker task's own cost, and each dataset
    instance's build: once per trial and data point in the workers for a resampled dataset, else
    once in the main process while the workers wait) -- over the worker processes, plus the wait
    for its last task, the target's own work in the main process (``finish_seconds``) and the
    first use of its lines' kernels (JIT compilation from nothing, else loading numba's cache).
    Not counted: the workers' start-up (``executor_seconds``), paid once by the first target a run
    has work for. ``measure=False``: a target with nothing done yet costs its seconds in the committed
    run from nothing (``from_scratch_seconds``, scaled from its 2 workers to ours) instead, at once."""
    start, first_use = time.perf_counter(), _FIRST_USE[0]
    plan = plan_target(target, n_jobs, out_root, base_root)
    composed = time.perf_counter() - start
    exp = plan.experiment
    total = exp.total_runs()
    grid = exp.grid()
    done = sum(len(grid) * exp.trials_for(m) for m in exp.mechanisms if m not in plan.missing)
    frame = pd.DataFrame(columns=["mechanism", "seconds"])
    results = plan.partial / "results.csv"
    if plan.missing and results.exists() and results.stat().st_size:
        frame = pd.read_csv(results, low_memory=False)
        frame = frame[in_experiment(missing_experiment(target, plan), frame)]
    seconds, unmeasured = 0.0, []
    workers = cpu_count() if n_jobs < 0 else min(n_jobs, cpu_count())
    if not measure and done == 0 and frame.empty and target.out in from_scratch_seconds():
        return 0, total, from_scratch_seconds()[target.out] * FROM_SCRATCH_WORKERS / workers
    for name in plan.missing:
        ran = frame[frame.mechanism == name]
        done += len(ran)
        if len(ran):
            seconds += (len(grid) * exp.trials_for(name) - len(ran)) * float(ran.seconds.mean())
        else:
            unmeasured.append(name)
    if unmeasured:
        built, last = set(), {}
        for point in grid:  # each data point's last budget
            last[params_key(data_params(exp.dataset, point))] = point
        for point in grid:
            data_key = params_key(data_params(exp.dataset, point))
            if data_key not in built:  # an expensive line: measured at its first and last budget
                run_seconds(exp, unmeasured, point, measure=True)
                run_seconds(exp, unmeasured, last[data_key], measure=True)
            costs = run_seconds(exp, unmeasured, point)
            seconds += sum(exp.trials_for(name) * costs[name] for name in unmeasured)
            if data_key in built:
                continue
            built.add(data_key)
            if resampled(exp, point):  # built once per trial in the workers
                seconds += max(exp.trials_for(name) for name in unmeasured) * build_seconds(exp, point)
            else:  # built once in the main process, while the workers wait for its tasks
                seconds += workers * build_seconds(exp, point)
        seconds += task_count(exp, unmeasured) * executor_seconds(missing_experiment(target, plan))["task"]
        # The run's last task (the runner keeps a data point's grid points together, in the order the
        # data points first appear: the last one's last point): while it runs, the workers that are
        # done wait, on average half of it.
        last_point = list(last.values())[-1]
        chunk = trials_per_task(exp.trials, workers)
        seconds += (workers - 1) * chunk * sum(run_seconds(exp, unmeasured, last_point).values()) / 2
    if done < total:  # the main process's work, and the first use of the lines' kernels, in wall seconds
        seconds += workers * (composed + finish_seconds(target, exp, plan.missing) + _FIRST_USE[0] - first_use)
    return min(done, total), total, seconds / workers


def complete_target(target: Target, n_jobs: int = -1, out_root: Path = RESULTS, base_root: Path = RESULTS):
    """Run the target's missing lines, merge them with the committed complete ones, and write
    summary.csv, the figures and config.yaml into ``out_root/<target>``."""
    plan = plan_target(target, n_jobs, out_root, base_root)
    parts = [plan.committed]
    forget_stale_runs(target, plan, base_root)
    if plan.missing:
        outputs = run_experiment(missing_experiment(target, plan, n_jobs))
        parts.append(pd.read_csv(outputs.summary))
    summary = pd.concat([p for p in parts if not p.empty], ignore_index=True)
    order = {m: i for i, m in enumerate(plan.experiment.mechanisms)}
    summary = summary.sort_values("mechanism", key=lambda c: c.map(order), kind="stable")
    plan.out.mkdir(parents=True, exist_ok=True)
    summary.to_csv(plan.out / "summary.csv", index=False)
    (plan.out / "config.yaml").write_text(yaml.safe_dump(plan.experiment.resolved, sort_keys=False))
    record_lines(plan.experiment, plan.out, plan.missing, base_root / target.out)
    ensure_spectrum(plan.experiment, plan.out, target.out)  # the theory overlays' data (from nothing)
    write_figures(plan.experiment, summary, plan.out)
    return plan.out


def forget_stale_runs(target: Target, plan: Plan, base_root: Path) -> None:
    """Remove partial/ when a committed line is stale: its runs there may come from the code that made
    the committed line (e.g. a from-scratch run's leftovers), which a resumed run would re-use under
    today's fingerprint, and the lines to run are no longer those partial/ was started for."""
    stale = stale_report(target, base_root)
    if stale and plan.partial.exists():
        shutil.rmtree(plan.partial)
        print(f"    removed {plan.partial} (stale: {', '.join(sorted(stale))}; its runs may be of older code)",
              flush=True)


RERUN = "rerun"  # <target>/partial/rerun/<line>/: a committed line run afresh (not committed)


ROUNDING = 1e-9  # relative change of a mean that is rounding (another CPU, BLAS), not a different result


def z_scores(old: pd.DataFrame, new: pd.DataFrame, keys: list[str], metric: str) -> pd.DataFrame:
    """old and new summary rows paired on ``keys``, with z = (mean_new - mean_old) / combined standard
    error of ``metric`` and the relative change. A cell without spread (a deterministic line: standard
    error 0) has z = 0 when it moved by rounding only (<= ROUNDING relative), else inf."""
    pair = old.merge(new, on=keys, suffixes=("_old", "_new"), validate="one_to_one")
    se = np.sqrt(pair[f"{metric}_sem_old"] ** 2 + pair[f"{metric}_sem_new"] ** 2)
    diff = pair[f"{metric}_mean_new"] - pair[f"{metric}_mean_old"]
    pair["relative"] = diff / pair[f"{metric}_mean_old"]
    rounding = diff.abs() <= ROUNDING * pair[f"{metric}_mean_old"].abs()
    pair["z"] = np.where(se > 0, diff / se.where(se > 0, 1.0), np.where(rounding, 0.0, np.inf))
    pair["rounding"] = rounding & (diff != 0)
    return pair


def compare(chosen: list[Target], other: Path) -> list[str]:
    """Each committed line of ``chosen`` against the same line in another results tree (e.g. a
    from-scratch run): cells, how many are bit-identical, how many moved by rounding only, max |z|, the
    share beyond |z| = 2, the largest relative change, and a verdict. On the machine that made the
    committed results a regeneration gives identical means for any n_jobs; on another CPU rounding
    differs, and rejection samplers and thresholds amplify it, so cells move but the lines stay
    statistically the same (~5 % of cells beyond |z| = 2)."""
    lines = [f"{'target':26s} {'line':18s} {'cells':>5s} {'same':>5s} {'round':>5s} {'max|z|':>7s} {'|z|>2':>6s} "
             f"{'max rel':>8s}  verdict"]
    for t in chosen:
        mine, theirs = RESULTS / t.out / "summary.csv", other / t.out / "summary.csv"
        if not (mine.exists() and theirs.exists()):
            lines.append(f"{t.out:26s} (missing in {'results/' if not mine.exists() else other})")
            continue
        exp = experiment_of(t)
        old, new = pd.read_csv(mine), pd.read_csv(theirs)
        metric = _count_column(old)[:-len("_count")]
        keys = ["mechanism", *exp.param_names()]
        for name in exp.mechanisms:
            pair = z_scores(old[old.mechanism == name], new[new.mechanism == name], keys, metric)
            if pair.empty:
                continue
            z = pair.z.abs()
            same = int((pair[f"{metric}_mean_old"] == pair[f"{metric}_mean_new"]).sum())
            verdict = ("identical" if same == len(pair) else
                       "rounding only" if same + int(pair.rounding.sum()) == len(pair) else
                       "DIFFERS" if np.isinf(z).any() or (z > 2).mean() > 0.2 else "statistically the same")
            lines.append(f"{t.out:26s} {name:18s} {len(pair):5d} {same:5d} {int(pair.rounding.sum()):5d} "
                         f"{z.max():7.2f} {(z > 2).mean():6.1%} {pair.relative.abs().max():8.1%}  {verdict}")
    return lines


def rerun_line(target: Target, name: str, n_jobs: int = -1, root: Path = RESULTS) -> pd.DataFrame:
    """Run the committed line ``name`` of ``target`` afresh (after a change to its mechanism that
    must not change its distribution), into <target>/partial/rerun/<line> (an interrupted re-run
    resumes from there; a completed one removes it, so the next --rerun starts afresh and never
    re-uses runs of older code); compare each grid point's mean with the committed one (z =
    difference / combined standard error) and replace the line's rows in summary.csv, then redraw
    the target's figures. Returns the comparison."""
    committed_path = root / target.out / "summary.csv"
    plan = plan_target(target, n_jobs, root, root)
    if name not in plan.experiment.mechanisms or not committed_path.exists():
        raise ValueError(f"{target.out} has no committed line {name!r}")
    out = plan.partial / RERUN / name
    rerun = experiment_of(target, n_jobs, (f"mechanisms=[{name}]",), out)
    new = pd.read_csv(run_experiment(rerun).summary)
    old = pd.read_csv(committed_path)
    metric = _count_column(old)[:-len("_count")]
    keys = ["mechanism", *plan.experiment.param_names()]
    pair = z_scores(old[old.mechanism == name], new, keys, metric)
    if len(pair) != len(new):
        raise ValueError(f"{target.out}: the re-run's grid does not match the committed line {name!r}")
    order = {m: i for i, m in enumerate(plan.experiment.mechanisms)}
    summary = pd.concat([old[old.mechanism != name], new], ignore_index=True)
    summary = summary.sort_values("mechanism", key=lambda c: c.map(order), kind="stable")
    summary.to_csv(committed_path, index=False)
    record_lines(plan.experiment, root / target.out, [name])
    write_figures(plan.experiment, summary, root / target.out)
    shutil.rmtree(out)
    return pair


def with_lines(target: Target, names: list[str]) -> tuple[Target | None, str]:
    """``target`` with the lines ``names`` added to its mechanisms, or (None, why) when a line's
    privacy notion cannot meet the target's budget."""
    exp = experiment_of(target, 1)
    for name in names:
        notion = get_mechanism(name).notion
        for point in exp.grid():
            try:
                budget_guaranteeing(budget_from_params(point), notion)
            except ValueError as err:
                return None, f"skipped: {name} ({notion.__name__}) cannot run here ({err})"
    added = [n for n in names if n not in exp.mechanisms]
    mechanisms = f"mechanisms=[{','.join([*exp.mechanisms, *added])}]"
    return Target(target.out, target.experiment, (*target.overrides, mechanisms), target.x, target.panel), ""


def tables() -> str:
    parts = [BEGIN, "## Generated tables (mean error over trials; `dpcov reproduce --tables`)", ""]
    for target in TARGETS:
        path = ROOT / "results" / target.out / "summary.csv"
        if not path.exists():
            parts += [f"### {target.out}: not generated yet", ""]
            continue
        summary = pd.read_csv(path)
        metric = [c for c in summary.columns if c.startswith("err_") and c.endswith("_mean")][0][4:-5]
        parts += [f"### {target.out} (`{target.experiment}`{''.join(' ' + o for o in target.overrides)}, {metric})", ""]
        groups = summary.groupby(target.panel) if target.panel else [(None, summary)]
        others = {"d", "scaling"} & set(summary.columns) if target.experiment == "news_rho" else \
            {"N"} if target.experiment == "phase_diagram" else set()
        for value, part in groups:
            if value is not None:
                parts += [f"{target.panel} = {value if isinstance(value, str) else f'{value:g}'}", ""]
            for column in sorted(others - {target.panel}):
                for sub, piece in part.groupby(column):
                    parts += [f"{column} = {sub}", "", markdown(piece, target.x, metric), ""]
            if not (others - {target.panel}):
                parts += [markdown(part, target.x, metric), ""]
    parts.append(END)
    return "\n".join(parts)


def ensure_spectrum(experiment, directory: Path, name: str) -> None:
    """directory/spectrum.csv (the data's eigenvalues, for the theory overlays) if it is missing: the one
    a run in directory/partial wrote as it built the data, else computed (building the data again)."""
    if (directory / SPECTRUM_FILE).exists() or not set(experiment.metrics) & {"fro", "fro_rel"}:
        return
    ran = directory / PARTIAL / SPECTRUM_FILE
    if ran.exists():
        shutil.copyfile(ran, directory / SPECTRUM_FILE)
    else:
        try:
            spectra_frame(experiment).to_csv(directory / SPECTRUM_FILE, index=False)
        except (OSError, ValueError) as err:  # e.g. a data file not on this machine
            print(f"note: no theory overlays needing the data for {name}: {err}")


def render_figures(targets=TARGETS, experiments_too: bool = True) -> list[Path]:
    """Re-draw from the committed summaries, running nothing: each target's own figures (if
    ``experiments_too``), the composite figures of conf/figures/*.yaml and Dong's Fig. 1. A missing
    results/<target>/spectrum.csv (the data's eigenvalues, for theory overlays) is computed first."""
    written = []
    for target in targets if experiments_too else []:
        directory = RESULTS / target.out
        if not (directory / "summary.csv").exists():
            continue
        experiment = experiment_of(target, 1)
        ensure_spectrum(experiment, directory, target.out)
        written.append(write_figures(experiment, pd.read_csv(directory / "summary.csv"), directory)[0])
    for composite in load_composites():
        missing = [p["summary"] for p in composite.spec["panels"] if not (RESULTS / p["summary"] / "summary.csv").exists()]
        if missing:
            print(f"note: {composite.out} not drawn: no summary yet for {sorted(set(missing))}")
            continue
        written.append(render_composite(composite)[0])
    written.append(plot_bounds(RESULTS / STEM)[0])
    return written


def rebuild_gallery() -> None:
    GALLERY.write_text(gallery(TARGETS, load_composites(), RESULTS, f"results/{STEM}"))
    print(f"rebuilt {GALLERY}")


def rebuild_tables() -> None:
    text = REPRODUCTION.read_text()
    if BEGIN in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1] if END in rest else ""
        text = head.rstrip("\n") + "\n\n" + tables() + tail
    else:
        text = text.rstrip("\n") + "\n\n" + tables() + "\n"
    REPRODUCTION.write_text(text)
    print(f"rebuilt the generated tables in {REPRODUCTION}")


def committed_names(target: Target, root: Path = RESULTS) -> tuple[object, list[str]]:
    """(the target's experiment, its lines that have rows in ``root``'s committed summary.csv); (None, [])
    without a committed summary (nothing composed: --status outside a checkout stays fast)."""
    summary = root / target.out / "summary.csv"
    if not summary.exists():
        return None, []
    exp = experiment_of(target, 1)
    present = set(pd.read_csv(summary, usecols=["mechanism"]).mechanism)
    return exp, [m for m in exp.mechanisms if m in present]


def stale_report(target: Target, root: Path = RESULTS) -> dict[str, str]:
    """The committed lines of ``target`` (in ``root``) that today's code would not reproduce: line -> why."""
    exp, names = committed_names(target, root)
    return stale_lines(root / target.out, {m: spec_of(exp, m) for m in names})


def rerun_all(chosen: list[Target], names: list[str], n_jobs: int = -1) -> None:
    """``--rerun``: every (target, line) pair that exists, then the tables and composite figures."""
    pairs = [(t, n) for t in chosen for n in names
             if n in experiment_of(t, 1).mechanisms and (RESULTS / t.out / "summary.csv").exists()]
    if not pairs:
        sys.exit(f"--rerun: no chosen target has a committed line {' or '.join(map(repr, names))}")
    print(f"{'target':24s} {'line':18s} points  max|z|  |z|>2  |z|>3  max relative change")
    for target, name in pairs:
        pair = rerun_line(target, name, n_jobs)
        z = pair.z.abs()
        print(f"{target.out:24s} {name:18s} {len(pair):6d} {z.max():7.2f} {(z > 2).mean():6.0%} {(z > 3).mean():6.0%}"
              f"  {pair.relative.abs().max():.2%}", flush=True)
    rebuild_tables()
    render_figures(experiments_too=False)
    rebuild_gallery()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", help="target names (e.g. fig3a) or output dirs (dong2022/fig3a)")
    parser.add_argument("--all", action="store_true", help="every target")
    parser.add_argument("--status", action="store_true", help="print progress and the time estimate only")
    parser.add_argument("--from-scratch", action="store_true",
                        help="with --status: estimate as if nothing were committed (the whole --all run)")
    parser.add_argument("--measure", action="store_true",
                        help="with --status: time each missing line on this machine now (minutes), also for "
                             "targets with nothing done, which otherwise cost their time in the committed run "
                             "from nothing (seconds)")
    parser.add_argument("--tables", action="store_true",
                        help="only rebuild REPRODUCTION.md's tables, GALLERY.md and the composite figures")
    parser.add_argument("--figures", action="store_true",
                        help="re-draw every committed figure from its committed summary (runs nothing)")
    parser.add_argument("--add", action="append", metavar="NAME", default=[],
                        help="add this mechanism's line (built-in name or plug-in path; repeatable); needs --out")
    parser.add_argument("--rerun", action="append", metavar="LINE", default=[],
                        help="run this committed line afresh in the chosen targets (default: all that have "
                             "it), print how far its means moved (z-scores) and replace it (repeatable)")
    parser.add_argument("--record-lines", action="store_true",
                        help="record today's fingerprint of every committed line without one (lines.json); a "
                             "line whose fingerprint is recorded is never overwritten (re-run it instead)")
    parser.add_argument("--compare", type=Path, metavar="DIR",
                        help="compare every committed line with the same line in another results tree "
                             "(e.g. a clone's results/ after --all): identical cells, z-scores")
    parser.add_argument("--out", type=Path, help="write the figures here instead of results/ (re-using results/)")
    parser.add_argument("--n-jobs", type=int, default=-1)
    args = parser.parse_args(argv)
    if args.figures:
        for path in render_figures():
            print(f"drew {path.relative_to(ROOT)}")
    if args.tables or args.figures:
        if not args.figures:
            render_figures(experiments_too=False)
        rebuild_tables()
        rebuild_gallery()
        return
    if args.add and args.out is None:
        parser.error("--add needs --out DIR: the committed results/ are re-used, never overwritten")
    out_root = (args.out or RESULTS).resolve()
    if out_root == RESULTS.resolve() and args.out is not None:
        out_root = RESULTS
    for name in args.add:
        try:
            get_mechanism(name)
        except ValueError as err:
            parser.error(str(err))
    chosen = TARGETS if args.all or (args.status or args.add or args.rerun or args.record_lines or args.compare) \
        and not args.targets else []
    for wanted in args.targets:
        match = [t for t in TARGETS if wanted in (t.name, t.out)]
        if not match:
            parser.error(f"unknown target {wanted!r}; known: {', '.join(t.out for t in TARGETS)}")
        chosen += match
    if not chosen:
        parser.error("name targets, or use --all / --status / --tables")
    if args.rerun:
        rerun_all(chosen, args.rerun, args.n_jobs)
        return
    if args.compare:
        print("\n".join(compare(chosen, args.compare)))
        return
    if args.record_lines:
        for t in chosen:
            exp, names = committed_names(t)
            if names:
                new = [m for m in names if m not in read_lines(RESULTS / t.out)]
                record_lines(exp, RESULTS / t.out, new)
                print(f"{t.out:32s} recorded {', '.join(new) or 'nothing new'}")
        return
    if args.add:
        extended = [(t, *with_lines(t, args.add)) for t in chosen]
        for t, _, why in extended:
            if why:
                print(f"{t.out:32s} {why}")
        chosen = [new for _, new, _ in extended if new is not None]
    if args.from_scratch and not args.status:
        parser.error("--from-scratch goes with --status (it estimates; to re-run, move results/ away)")
    if args.measure and not args.status:
        parser.error("--measure goes with --status (it times what is left)")
    if args.from_scratch:  # nothing counts as done: an empty directory stands in for results/
        out_root = base_root = Path(tempfile.mkdtemp(prefix="dpcov-scratch-"))
    else:
        base_root = RESULTS
    if args.status:  # estimates come from partial/ runs or from one run of each line measured now
        left, started, recorded = 0.0, False, 0
        for t in chosen:
            done, total, seconds = progress(t, out_root, base_root, args.n_jobs, measure=args.measure)
            from_record = not args.measure and done == 0 and t.out in from_scratch_seconds()
            recorded += from_record
            if done < total and not started and not from_record:  # the workers start with the first target
                missing = missing_experiment(t, plan_target(t, args.n_jobs, out_root, base_root))
                seconds += executor_seconds(missing)["startup"]
                started = True
            left += seconds
            mark = "complete" if done == total else \
                f"{done}/{total} runs, ~{seconds / 60:.1f} min left ({seconds:.1f} s" + \
                (", as in the committed run from nothing)" if from_record else ")")
            print(f"{t.out:32s} {mark}", flush=True)
            for name, why in stale_report(t, base_root).items():
                print(f"{'':32s} stale line {name}: {why} (re-run: dpcov reproduce --rerun {name} "
                      f"{t.name})", flush=True)
        workers = cpu_count() if args.n_jobs < 0 else min(args.n_jobs, cpu_count())
        how = "per-run costs measured now" if not recorded else \
            f"{recorded} target(s) with nothing done at their time in the committed run from nothing on the " \
            f"project's 2-core machine, scaled to {workers} workers; --measure times them here"
        print(f"estimated time left: ~{left / 60:.1f} min on this machine ({workers} workers, {how})")
        return
    # A run measures nothing up front (--status does, at a cost of minutes): each target says how
    # many runs it has left, then how long it took.
    start = time.perf_counter()
    for t in chosen:
        plan = plan_target(t, args.n_jobs, out_root, base_root)
        if not plan.missing and (out_root == RESULTS or (out_root / t.out / "summary.csv").exists()):
            continue
        print(f"\n=== {t.out}: lines to run: {', '.join(plan.missing) or 'none (figures only)'}", flush=True)
        for name, why in stale_report(t, base_root).items():
            print(f"    stale line {name}: {why}", flush=True)
        began = time.perf_counter()
        complete_target(t, args.n_jobs, out_root)
        took = time.perf_counter() - began
        print(f"=== {t.out}: done in {took / 60:.1f} min ({took:.1f} s); "
              f"{(time.perf_counter() - start) / 60:.1f} min since the start", flush=True)
    print(f"\nall targets complete ({(time.perf_counter() - start) / 60:.1f} min)")
    if out_root == RESULTS:
        rebuild_tables()
        render_figures(experiments_too=False)
        rebuild_gallery()
    else:
        print(f"figures: {out_root}/<target>/figure.png (committed lines from {RESULTS}, yours from partial/)")


if __name__ == "__main__":
    main()
