"""Runs an experiment: grid points x trials x mechanisms, in parallel, resumable.

Data flow (GUIDE.md §6): loader -> X -> CovProblem (shared statistics, computed once per dataset
instance in the parent) -> for each trial, every mechanism on the same problem (paired comparison)
-> metrics -> one tidy row each -> results.csv -> summary.csv -> figure. Nothing here names a
mechanism or a dataset.
"""
from __future__ import annotations

import json
import math
import os
import signal
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from joblib import Parallel, cpu_count, delayed, effective_n_jobs, parallel_config
from threadpoolctl import threadpool_limits

from dpcov.data.chunks import local_cluster
from dpcov.mechanisms.registry import import_plugins, plugin_modules, release

from .config import Experiment
from .instances import SPECTRUM_FILE, Instance, build_instance, data_params, resampled, spectrum_row
from .metrics import evaluate
from .seeding import canonical, generator, params_key
from .store import ResultsStore, row_keys

STATS = ("mean", "std", "sem", "median", "count")


@dataclass(frozen=True)
class Outputs:
    results: Path
    summary: Path
    config: Path
    new_rows: int

    @property
    def directory(self) -> Path:
        return self.summary.parent


def line_spec(experiment: Experiment, name: str) -> str:
    """What line ``name`` runs, as one canonical JSON text: its registered mechanism, options and
    budget overrides (a variant's delta, say)."""
    def plain(value):  # tau: 1 and tau: 1.0 are one line
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return [plain(v) for v in value] if isinstance(value, (list, tuple)) else canonical(value)

    line = experiment.line(name)
    spec = {"mechanism": line.mechanism, "options": line.options, "budget": line.budget,
            **experiment.release_unit(name)}
    return json.dumps(plain(spec), sort_keys=True, separators=(",", ":"))


def run_identity(experiment: Experiment, point: dict, name: str, trial: int) -> dict:
    """The columns that define one run (resume matches rows of results.csv on all of them): dataset,
    line (name, label, spec), trial, seed, release settings and every parameter of the grid point."""
    identity = {"dataset": experiment.dataset, "mechanism": name, "label": experiment.line(name).label,
                "line": line_spec(experiment, name), "trial": trial, "seed": experiment.seed,
                "clamp_eigenvalues": experiment.clamp_eigenvalues}
    if experiment.ridge_alpha is not None:
        identity["ridge_alpha"] = experiment.ridge_alpha
    if experiment.add_remove():  # a column where any line protects membership (none: every run is replace_one)
        identity["privacy_unit"] = experiment.line(name).privacy_unit
    return {**identity, **{p: point[p] for p in experiment.param_names()}}


def run_columns(experiment: Experiment) -> list[str]:
    return list(run_identity(experiment, experiment.grid()[0], experiment.mechanisms[0], 0))


def run_key(experiment: Experiment, point: dict, name: str, trial: int) -> tuple:
    return tuple(canonical(v) for v in run_identity(experiment, point, name, trial).values())


def row_columns(experiment: Experiment) -> set[str]:
    """The columns every row of this experiment has (besides the loader's data_* facts)."""
    return {"experiment", *run_columns(experiment), "budget", "spent", "released",
            *(f"err_{m}" for m in experiment.metrics), "seconds"}


def check_rows(experiment: Experiment, store: ResultsStore, frame: pd.DataFrame) -> None:
    """Refuse a results.csv that holds runs of another configuration: other columns, or rows whose
    seed, dataset, release settings or line (label, mechanism, options, budget) differ from now."""
    if frame.empty:
        return
    found = {c for c in frame.columns if not c.startswith("data_")}
    wanted = row_columns(experiment)
    if found != wanted:
        raise ValueError(f"{store.results} has other columns than this command writes (only there: "
                         f"{sorted(found - wanted)}; missing: {sorted(wanted - found)}): another "
                         f"configuration, or an older dpcov; pass another output_dir=... or move it away")
    settings = {"seed": experiment.seed, "dataset": experiment.dataset,
                "clamp_eigenvalues": experiment.clamp_eigenvalues, "ridge_alpha": experiment.ridge_alpha}
    for column, now in settings.items():
        stored = {canonical(v) for v in frame[column].unique()} - {canonical(now)} if column in frame else ()
        if stored:
            raise ValueError(f"{store.results} holds runs with {column} = {sorted(stored, key=str)[0]!r}; this "
                             f"command has {column} = {now!r}: a different configuration; pass another "
                             f"output_dir=... or delete that directory")
    for name in experiment.mechanisms:
        now = (experiment.line(name).label, line_spec(experiment, name))
        rows = frame[frame.mechanism == name]
        other = set(zip(rows.label, rows.line)) - {now}
        if other:
            label, spec = sorted(other)[0]
            raise ValueError(f"{store.results} holds runs of line {name!r} as {label!r} {spec}; this command "
                             f"runs it as {now[0]!r} {now[1]}: a different configuration; pass another "
                             f"output_dir=... or delete that directory")


def run_trials(experiment: Experiment, instance: Instance | None, points: list[dict], trials: list[int],
               pending: dict[tuple[int, int], list[str]], plugins: tuple = ()) -> list[dict]:
    """One task: some trials of grid points that share their data parameters, each (point, trial)
    running its pending mechanisms, ``pending[(index in points, trial)]`` (instance None: a
    resampled dataset, built here once per trial for all the points). ``plugins``: modules
    registering plug-in mechanisms by short name, imported first (a worker has not imported them)."""
    import_plugins(plugins)
    rows = []
    with threadpool_limits(limits=1):  # one level of parallelism; also makes BLAS deterministic
        for trial in trials:
            trial_instance = instance or build_instance(experiment, points[0], trial)
            problem = trial_instance.problem
            for index, point in enumerate(points):
                for name in pending.get((index, trial), ()):
                    line, budget = experiment.line(name), experiment.budget(name, point)
                    rng = generator(experiment.seed, "trial", experiment.dataset, *params_key(point),
                                    trial, name)
                    start = time.perf_counter()
                    estimate, accountant = release(line.mechanism, problem, budget, rng, options=line.options,
                                                   clamp=experiment.clamp_eigenvalues,
                                                   **experiment.release_unit(name))
                    seconds = time.perf_counter() - start
                    row = {"experiment": experiment.name, **run_identity(experiment, point, name, trial),
                           "budget": str(budget), "spent": str(accountant.spent),
                           "released": accountant.released, **trial_instance.info}
                    for metric in experiment.metrics:
                        row[f"err_{metric}"] = evaluate(metric, estimate, trial_instance.truth, problem.sigma,
                                                        problem.ridge)
                    row["seconds"] = seconds
                    rows.append(row)
    return rows


PROGRESS_SECONDS = "DPCOV_PROGRESS_SECONDS"  # environment: seconds between progress lines (default 5)


def progress_seconds() -> float:
    text = os.environ.get(PROGRESS_SECONDS, "5")
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise ValueError(f"{PROGRESS_SECONDS} must be a number of seconds > 0, got {text!r}")
    return value


class Progress:
    """Prints done/total, elapsed and an estimate: at the first finished task, then every second for
    the first ten seconds and every ``every`` seconds after, and at the end -- one plain line each (readable in a log file and under CI). Before the
    first result a heartbeat thread says the workers are warming up (starting, importing, compiling
    the samplers, loading the data), so a slow start is reported as such."""

    def __init__(self, name: str, total: int, every: float | None = None, workers: int = 1):
        every = progress_seconds() if every is None else every
        self.name, self.total, self.every, self.workers = name, total, every, workers
        self.done, self.start = 0, time.perf_counter()
        self.last = self.start
        self._lock, self._stop = threading.Lock(), threading.Event()
        self.broken = False  # stdout's reader closed the pipe (dpcov run ... | head)
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(min(self.every, 1.0) / 5):
            now = time.perf_counter()
            if now - self.last >= (min(self.every, 1.0) if now - self.start < 10 else self.every):
                try:
                    self.update(0, force=True)
                except BrokenPipeError:  # the reader went away: the main thread raises it at its next update
                    return

    def update(self, count: int, force: bool = False) -> None:
        if self.broken:
            raise BrokenPipeError("stdout's reader closed the pipe")
        try:
            self._update(count, force)
        except BrokenPipeError:
            self.broken = True
            raise

    def _update(self, count: int, force: bool = False) -> None:
        with self._lock:
            first = self.done == 0 and count > 0
            self.done += count
            now = time.perf_counter()
            # every second for the first ten, then every ``every`` seconds
            every = min(self.every, 1.0) if now - self.start < 10 else self.every
            if force or first or now - self.last >= every or self.done == self.total:
                self.last = now
                elapsed = now - self.start
                if not self.done:
                    print(f"[{self.name}] 0/{self.total} mechanism runs, {elapsed:.0f}s elapsed: warming up "
                          f"({self.workers} worker{'s' * (self.workers != 1)} starting, importing and compiling, "
                          f"building the data)", flush=True)
                    return
                eta = f"~{elapsed / self.done * (self.total - self.done):.0f}s left"
                print(f"[{self.name}] {self.done}/{self.total} mechanism runs "
                      f"({100 * self.done / max(self.total, 1):.0f}%), {elapsed:.0f}s elapsed, {eta}", flush=True)


def trials_per_task(trials: int, workers: int) -> int:
    """Trials in one worker task: about 4 tasks per worker per grid point (so counts rise as runs
    finish), at most 10."""
    return max(1, min(10, math.ceil(trials / (4 * workers))))


def plan(experiment: Experiment, done: set[tuple]):
    """[(point, {trial: [pending mechanisms]})] for every grid point with work left; ``done`` holds
    the run keys (``run_key``) of the rows already in results.csv."""
    work = []
    for point in experiment.grid():
        pending = {t: [m for m in experiment.mechanisms
                       if t < experiment.trials_for(m) and run_key(experiment, point, m, t) not in done]
                   for t in range(experiment.trials)}
        pending = {t: ms for t, ms in pending.items() if ms}
        if pending:
            work.append((point, pending))
    return work


def _tasks(experiment: Experiment, work, chunk: int, spectra: list | None = None):
    """Lazily build each dataset instance once, then yield its trial chunks (grid order, but the grid
    points of one data point together: appc_dim's panels are budgets, its x the dimension). A
    resampled dataset is built in the worker, once per trial for every grid point that shares its
    data parameters (e.g. all the budgets of a data point): those points go in one task."""
    cache_key, instance = None, None
    plugins = tuple(plugin_modules(experiment.line(m).mechanism for m in experiment.mechanisms))
    keyed = [(params_key(data_params(experiment.dataset, point)), point, pending) for point, pending in work]
    first: dict[tuple, int] = {}
    first_chunk = True
    for key, _, _ in keyed:
        first.setdefault(key, len(first))
    groups: dict[tuple, list] = {}
    for key, point, pending in sorted(keyed, key=lambda item: first[item[0]]):  # a data point's together
        if resampled(experiment, point):
            groups.setdefault(key, []).append((point, pending))
        else:
            groups[(key, len(groups))] = [(point, pending)]
    for key, items in groups.items():
        points = [point for point, _ in items]
        if not resampled(experiment, points[0]) and key[0] != cache_key:
            cache_key, instance = key[0], build_instance(experiment, points[0])
            if spectra is not None:  # the data's eigenvalues, kept for the theory overlays (spectrum.csv)
                spectra.append(spectrum_row(experiment, points[0], instance.problem))
        trials = sorted({t for _, pending in items for t in pending})
        for i in range(0, len(trials), chunk):
            part = trials[i:i + chunk]
            pending = {(index, t): p[t] for index, (_, p) in enumerate(items) for t in part if t in p}
            # The first chunk, one task per line: the workers start on different lines, so the quick
            # ones report while another compiles (numba, on a fresh install) instead of all waiting.
            split = [{slot: [name] for slot, names in pending.items() if name in names}
                     for name in experiment.mechanisms] if first_chunk else [pending]
            for task_pending in filter(None, split):
                yield delayed(run_trials)(experiment, None if resampled(experiment, points[0]) else instance,
                                          points, part, task_pending, plugins)
            first_chunk = False


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
    over the rows of this experiment's grid and trials, and ``fallbacks``: how many of those trials
    released a mechanism's fallback (``released`` not "ok"). A run present twice is refused."""
    names = experiment.param_names()
    frame = frame[in_experiment(experiment, frame)]
    if frame.empty:
        return pd.DataFrame()
    repeated = row_keys(frame, run_columns(experiment)).duplicated()
    if repeated.any():
        first = frame[repeated].iloc[0]
        raise ValueError(f"the results hold {int(repeated.sum())} runs more than once (e.g. {first.mechanism} "
                         f"trial {first.trial} at {', '.join(f'{p}={first[p]}' for p in names)}), as two runs "
                         f"writing at once leave them; summary refused: keep one row per run or start over")
    values = [f"err_{m}" for m in experiment.metrics] + ["seconds"]
    group = ["experiment", "dataset", "mechanism", "label", *(["privacy_unit"] if experiment.add_remove() else []),
             *names]
    # Rows arrive in the order tasks finished: sort them (lines in the experiment's order, then the
    # grid, then trials) so the sums, hence the summary, are the same bits for any n_jobs or run.
    order = {m: i for i, m in enumerate(experiment.mechanisms)}
    frame = (frame.assign(_line=frame.mechanism.map(order)).sort_values(["_line", *names, "trial"], kind="stable")
             .drop(columns="_line"))
    # dropna=False: a parameter left null (e.g. columns=null: every column) is a value, not a missing row
    grouped = frame.assign(fallbacks=frame["released"] != "ok").groupby(group, sort=False, dropna=False)
    summary = grouped[values].agg(list(STATS))
    summary.columns = [f"{v}_{s}" for v, s in summary.columns]
    summary["fallbacks"] = grouped["fallbacks"].sum().astype(int)  # trials whose release was not "ok"
    return summary.reset_index()


def exit_with_parent(parent: int) -> None:
    """Initializer of the local (loky) worker processes, children of the run's process ``parent``:
    end this worker as soon as ``parent`` is gone (Ctrl-C, kill -9), not when its idle timeout ends."""
    if os.getppid() != parent:  # the run ended before this worker even started
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle: it ends the workers

    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


def start_workers(n_jobs: int) -> None:
    """Start the local (loky) workers so that a Ctrl-C during their start-up cannot kill one with a
    traceback. A terminal's Ctrl-C reaches the whole process group, and a worker still importing
    (before ``exit_with_parent`` ignores it) would die of it. An ignored signal stays ignored through
    fork and exec (and Python then installs no KeyboardInterrupt handler), so SIGINT is ignored here
    only while the workers are forked -- dispatching returns at once (a generator); a Ctrl-C in those
    milliseconds is lost -- and restored before waiting for them, so Ctrl-C ends the run as usual."""
    if not hasattr(signal, "SIGINT") or threading.current_thread() is not threading.main_thread():
        return  # signal.signal works in the main thread only
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        started = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(os.getpid)() for _ in range(effective_n_jobs(n_jobs)))
    finally:
        signal.signal(signal.SIGINT, previous)
    for _ in started:  # every worker up and through its initializer
        pass


@contextmanager
def trial_executor(experiment: Experiment):
    """Yields the n_jobs to give joblib. executor=dask runs the same tasks on a Dask cluster through
    joblib's Dask backend (results are identical: every trial is seeded by its key, not by where it
    runs); without a scheduler address, a LocalCluster of n_jobs single-threaded worker processes
    (data/chunks.py ``local_cluster``: Dask's monitoring relaxed, as no dashboard shows it)."""
    if experiment.executor == "local":
        cores = cpu_count()
        if experiment.n_jobs > cores:
            warnings.warn(f"n_jobs={experiment.n_jobs} exceeds the {cores} CPU cores here: the extra worker "
                          f"processes only compete for them (n_jobs=-1 uses every core)")
        # Workers end with this process, even after kill -9 of it (they watch their parent).
        with parallel_config(backend="loky", initializer=exit_with_parent, initargs=(os.getpid(),)):
            yield experiment.n_jobs
        return
    try:
        from dask.distributed import Client
    except ImportError:
        raise RuntimeError("executor=dask needs dask.distributed: pip install -e '.[dask]'") from None
    if experiment.dask_scheduler:
        client, cluster = Client(experiment.dask_scheduler), None
    else:
        cluster = local_cluster(effective_n_jobs(experiment.n_jobs))
        client = Client(cluster)
    print(f"[{experiment.name}] running on Dask: {client.scheduler.address}", flush=True)
    try:
        with parallel_config(backend="dask"):
            yield len(client.scheduler_info()["workers"]) or -1
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a run; ``kept`` runs of this experiment are in ``results`` (resume from there)."""

    def __init__(self, kept: int, results: Path):
        super().__init__(f"{kept} runs kept in {results}")
        self.kept, self.results = kept, results


def run_experiment(experiment: Experiment) -> Outputs:
    """Run what results.csv does not hold yet (one run at a time per output directory), then write
    summary.csv and config.yaml (the figures are drawn from them: figures.plot.write_figures).
    Ctrl-C raises ``Interrupted`` (every finished run kept)."""
    store = ResultsStore(experiment.output_dir, experiment.fingerprint())
    with store.locked():
        try:
            return _run(experiment, store)
        except KeyboardInterrupt:
            frame = store.load()
            raise Interrupted(int(in_experiment(experiment, frame).sum()), store.results) from None


def _run(experiment: Experiment, store: ResultsStore) -> Outputs:
    frame = store.load()
    check_rows(experiment, store, frame)
    outside = int((~in_experiment(experiment, frame)).sum())
    if outside:
        print(f"note: {store.results} also holds {outside} runs outside this command's grid, lines or "
              f"trials (kept); summary.csv, the figures and config.yaml describe this command only", flush=True)
    done = set(row_keys(frame, run_columns(experiment), store.results)) if not frame.empty else set()
    config_path = store.write_config(experiment.resolved)
    work = plan(experiment, done)
    runs = sum(len(ms) for _, pending in work for ms in pending.values())
    total = experiment.total_runs()
    fewer = "".join(f", {m}: {experiment.trials_for(m)}" for m in experiment.trials_per_mechanism)
    print(f"[{experiment.name}] {len(experiment.grid())} grid points x {experiment.trials} trials{fewer} x "
          f"{len(experiment.mechanisms)} mechanisms; {total - runs} runs already done, {runs} to go "
          f"-> {store.dir}", flush=True)
    new_rows = 0
    spectra: list[dict] = []
    if work:
        # The parent on one BLAS thread too: after a call (a data point's spectrum, say) OpenBLAS's
        # idle threads spin, taking the workers' cores.
        with threadpool_limits(limits=1), trial_executor(experiment) as n_jobs, \
                Progress(experiment.name, runs, workers=effective_n_jobs(n_jobs)) as progress:
            # tasks of a few trials: about 4 per worker per grid point, so counts rise as runs finish
            chunk = trials_per_task(experiment.trials, effective_n_jobs(n_jobs))
            if experiment.executor == "local":
                start_workers(n_jobs)
            parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered", pre_dispatch="2*n_jobs")
            outputs = parallel(_tasks(experiment, work, chunk, spectra))
            try:
                for rows in outputs:
                    store.append(rows)  # written as soon as a task finishes: an interruption loses little
                    new_rows += len(rows)
                    progress.update(len(rows))
            except BrokenPipeError:  # stdout's reader is gone: stop, quietly (joblib would warn of the cancelled tasks)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    outputs.close()
                raise
    try:
        summary = summarise(experiment, store.load())
    except ValueError as err:
        raise ValueError(f"{store.results}: {err}") from None
    summary_path = store.dir / "summary.csv"
    summary.to_csv(summary_path, index=False)
    data_points = {params_key(data_params(experiment.dataset, p)) for p in experiment.grid()}
    if spectra and len(spectra) == len(data_points):  # every data point was built in this run
        pd.DataFrame(spectra).to_csv(store.dir / SPECTRUM_FILE, index=False)
    return Outputs(store.results, summary_path, config_path, new_rows)

