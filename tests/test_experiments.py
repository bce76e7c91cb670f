"""The harness: every experiment end to end at smoke scale, seeding, resume, bad configs."""
import inspect
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcov.data.files import data_dirs
from dpcov.data.registry import get_dataset
from dpcov.experiments.config import ConfigError, compose_experiment, experiment_names
from dpcov.experiments.instances import SPECTRUM_FILE, resampled, spectra_frame
from dpcov.experiments.runner import run_experiment
from dpcov.figures.plot import draw
from dpcov.experiments.store import ResultsStore
from dpcov.mechanisms.privacy import budget_guaranteeing
from dpcov.mechanisms.registry import get_mechanism

ROOT = Path(__file__).resolve().parents[1]
KEY = ["mechanism", "trial", "N"]


def reads_missing_files(dataset: str) -> bool:
    """A real-data experiment while no data directory is available (no ../shared/data, no DPCOV_DATA)."""
    reads_files = "data_dir" in inspect.signature(get_dataset(dataset).loader).parameters
    return reads_files and not any(d.is_dir() for d in data_dirs()[:-1])


SHARED = ROOT.parent / "shared" / "data"
STAGED_RUNS = ("mnist_rho", "mnist_digits", "news_rho")  # with ../shared/data: test_real_data.py runs them


@pytest.mark.parametrize("name", experiment_names())
def test_every_experiment_runs_at_smoke_scale(name, experiment):
    if name in STAGED_RUNS and SHARED.is_dir():
        pytest.skip(f"{name} runs on the staged data in test_real_data.py::test_smoke_runs_on_staged_data, "
                    "with these checks (check_smoke_run) and downloads disabled")
    exp = experiment(name)
    if reads_missing_files(exp.dataset):
        pytest.skip(f"{name} reads real-data files and no data directory exists (../shared/data, $DPCOV_DATA)")
    check_smoke_run(exp, run_experiment(exp))


def check_smoke_run(exp, out) -> None:
    """A finished smoke run: every row and summary column, the spectra file, the figures, the zero
    matrix's error and every line's spent budget (also used by test_real_data.py on the staged data)."""
    results, summary = pd.read_csv(out.results), pd.read_csv(out.summary)
    assert len(results) == len(exp.grid()) * exp.trials * len(exp.mechanisms)
    assert set(results.mechanism) == set(exp.mechanisms)
    errors = [f"err_{m}" for m in exp.metrics]
    for column in ["experiment", "dataset", "mechanism", "trial", "seed", *errors, "seconds",
                   *exp.param_names()]:
        assert column in results
    assert np.isfinite(results[errors]).all().all() and (results[errors] >= 0).all().all()
    for error in errors:
        assert {f"{error}_mean", f"{error}_std", f"{error}_sem", f"{error}_median"} <= set(summary)
    spectrum = out.summary.parent / SPECTRUM_FILE  # written as the run built the data (not if resampled)
    if spectrum.exists():
        pd.testing.assert_frame_equal(pd.read_csv(spectrum), pd.read_csv(io.StringIO(
            spectra_frame(exp).to_csv(index=False))))
    else:
        assert any(resampled(exp, point) for point in exp.grid())
    assert len(summary) == len(exp.grid()) * len(exp.mechanisms)
    png, pdf = draw(exp, out)  # the runner stores; the figures are drawn from its files
    assert png.stat().st_size > 0 and pdf.exists() and out.config.exists()
    # The zero matrix's error is ||Sigma||_F, and every released estimate respects the budget.
    zero = results[results.mechanism == "zero"]
    assert (zero.get("err_fro", zero.data_trace) <= zero.data_trace + 1e-12).all()
    # (A variant may run at another notion: then it spends the largest budget of its notion that
    # implies the requested one.)
    for name in set(exp.mechanisms) - {"zero"}:
        line = exp.line(name)
        notion = get_mechanism(line.mechanism).notion
        for point, spent in zip(results[results.mechanism == name][exp.param_names()].to_dict("records"),
                                results[results.mechanism == name].spent):
            assert spent == str(budget_guaranteeing(exp.budget(name, point), notion))


def test_identical_results_for_any_n_jobs(experiment):
    one = pd.read_csv(run_experiment(experiment("synthetic_trace", "n_jobs=1", output="a")).results)
    two = pd.read_csv(run_experiment(experiment("synthetic_trace", "n_jobs=2", output="b")).results)
    cols = ["mechanism", "trial", "N", "err_fro"]
    pd.testing.assert_frame_equal(one[cols].sort_values(cols[:3]).reset_index(drop=True),
                                  two[cols].sort_values(cols[:3]).reset_index(drop=True))


def test_the_parent_keeps_one_blas_thread_while_the_workers_run(experiment, monkeypatch):
    """The run's own process builds instances and their spectra while the workers run: on more BLAS
    threads, OpenBLAS's idle ones would spin and take the workers' cores."""
    from threadpoolctl import threadpool_info, threadpool_limits

    import dpcov.experiments.runner as runner
    seen, build = [], runner.build_instance

    def recording(*args, **kwargs):
        seen.append(max((lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"),
                        default=1))
        return build(*args, **kwargs)

    monkeypatch.setattr(runner, "build_instance", recording)
    with threadpool_limits(limits=2, user_api="blas"):  # as outside the suite (conftest: one thread)
        assert max(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas") == 2
        run_experiment(experiment("synthetic_trace", "n_jobs=2"))
    assert seen and set(seen) == {1}


def test_each_data_point_is_built_once_whatever_the_grid_order(experiment, monkeypatch):
    """appc_dim sweeps the budget before the dimension: its grid visits each data point twice."""
    import dpcov.experiments.runner as runner
    built, build = [], runner.build_instance
    monkeypatch.setattr(runner, "build_instance",
                        lambda exp, point, *a: built.append(point["d"]) or build(exp, point, *a))
    exp = experiment("amin_appc_dim", "sweep.eps=[0.5,1]", "sweep.d=[4,8]")
    assert [p["d"] for p in exp.grid()] == [4, 8, 4, 8]
    outputs = run_experiment(exp)
    assert sorted(built) == [4, 8]
    assert len(pd.read_csv(outputs.directory / SPECTRUM_FILE)) == 2


def test_seed_changes_numbers_and_data_is_shared_across_mechanisms(experiment):
    a = pd.read_csv(run_experiment(experiment("synthetic_trace", output="a")).results)
    b = pd.read_csv(run_experiment(experiment("synthetic_trace", "seed=1", output="b")).results)
    assert not np.allclose(a.sort_values(KEY).err_fro.values, b.sort_values(KEY).err_fro.values)
    # All mechanisms of a grid point saw the same dataset (same true trace in every row).
    assert (a.groupby("N").data_trace.nunique() == 1).all()


def test_resume_skips_finished_trials_and_extends(experiment):
    small = experiment("synthetic_trace", "trials=1")
    first = run_experiment(small)
    assert first.new_rows == len(small.grid()) * len(small.mechanisms)
    again = run_experiment(small)
    assert again.new_rows == 0
    more = experiment("synthetic_trace", "trials=2")
    extended = run_experiment(more)
    assert extended.new_rows == len(more.grid()) * len(more.mechanisms)  # only trial 1 ran
    resumed = pd.read_csv(extended.results)
    fresh = pd.read_csv(run_experiment(experiment("synthetic_trace", "trials=2", output="fresh")).results)
    merge = resumed.merge(fresh, on=KEY, suffixes=("", "_fresh"))
    assert len(merge) == len(fresh) and np.array_equal(merge.err_fro, merge.err_fro_fresh)


def test_fewer_trials_for_a_slow_mechanism(experiment):
    exp = experiment("synthetic_trace", "trials=3", "mechanisms=[gauss,zero]", "++trials_per_mechanism.gauss=1")
    assert [exp.trials_for(m) for m in exp.mechanisms] == [1, 3]
    out = run_experiment(exp)
    results, summary = pd.read_csv(out.results), pd.read_csv(out.summary)
    assert results.groupby("mechanism").trial.max().to_dict() == {"gauss": 0, "zero": 2}
    assert out.new_rows == len(exp.grid()) * (1 + 3)
    assert set(summary[summary.mechanism == "gauss"].err_fro_count) == {1}
    assert set(summary[summary.mechanism == "zero"].err_fro_count) == {3}
    # Raising the count later runs only the missing trials; rows past the count are left out of the summary.
    more = run_experiment(experiment("synthetic_trace", "trials=3", "mechanisms=[gauss,zero]"))
    assert more.new_rows == len(exp.grid()) * 2
    fewer = run_experiment(exp)
    assert fewer.new_rows == 0 and set(pd.read_csv(fewer.summary).err_fro_count) == {1, 3}


def test_interrupted_write_is_repaired(experiment):
    exp = experiment("synthetic_trace")
    out = run_experiment(exp)
    lines = out.results.read_text().splitlines(keepends=True)
    # Simulate a crash: drop the last 3 rows and leave half a line behind.
    out.results.write_text("".join(lines[:-3]) + lines[-3][:10])
    with pytest.warns(UserWarning, match="incomplete last line"):
        again = run_experiment(exp)
    assert again.new_rows == 3
    assert len(pd.read_csv(again.results)) == len(lines) - 1


def test_changed_configuration_in_same_output_dir_is_refused(experiment):
    run_experiment(experiment("synthetic_trace"))
    with pytest.raises(ValueError, match="different configuration"):
        run_experiment(experiment("synthetic_trace", "seed=7"))


def test_corrupted_results_file_gives_clear_error(experiment, tmp_path):
    exp = experiment("synthetic_trace")
    store_dir = Path(exp.output_dir)
    ResultsStore(store_dir, exp.fingerprint())
    (store_dir / "results.csv").write_text('a,b\n1,"unterminated\n')
    with pytest.raises(ValueError, match="results"):
        run_experiment(exp)


def test_overrides_fix_and_narrow_parameters(experiment):
    exp = experiment("synthetic_unit_norm", "sweep.n=[300]", "params.d=5")
    assert exp.sweep == {"n": [300]} and exp.params["d"] == 5
    assert [p["d"] for p in exp.grid()] == [5]
    exp = experiment("synthetic_trace", "mechanisms=[gauss,zero]", "sweep.rho=[0.1,1]")
    assert len(exp.grid()) == 4 and exp.mechanisms == ["gauss", "zero"]


def test_paper_scale_holds_the_paper_grid(tmp_path):
    exp = compose_experiment(["experiment=synthetic_unit_norm", "scale=paper", f"output_dir={tmp_path}"])
    assert exp.trials == 50 and exp.sweep["n"] == [1000, 4000, 16000]
    assert exp.sweep["d"] == [10, 20, 30, 50, 70, 100, 200, 400, 800]
    exp = compose_experiment(["experiment=synthetic_samples", "scale=paper", "trials=3"])
    assert exp.trials == 3 and exp.sweep["n"][-1] == 800000  # the command line wins over the scale


@pytest.mark.parametrize("override, message", [
    ("params.rho=0", "rho must be a finite number > 0"),
    ("params.rho=-1", "rho must be a finite number > 0"),
    ("sweep.rho=[0.1,-2]", "rho must be a finite number > 0"),
    ("mechanisms=[gauss,nope]", "unknown mechanism 'nope'"),
    ("params.bogus=3", "unknown parameter"),
    ("trials=0", "trials must be an integer >= 1"),
    ("trials=abc", "trials must be an integer"),
    ("n_jobs=0", "n_jobs must be a non-zero integer"),
    ("++mechanism_options.gauss.beta=0.1", "unknown option"),
    ("sweep.N=[]", "non-empty list"),
    ("scale=huge", "scale must be one of"),
    ("++params.eps=1", "exactly one privacy budget"),
    ("++trials_per_mechanism.gauss=0", "trials_per_mechanism.gauss must be an integer >= 1"),
    ("++trials_per_mechanism.nope=2", "unknown mechanism 'nope'"),
])
def test_bad_configs_fail_with_clear_errors(experiment, override, message):
    with pytest.raises(ConfigError, match=message):
        experiment("synthetic_trace", override)


def test_unknown_top_level_key_is_rejected():
    with pytest.raises(ConfigError, match="unknown key 'tirals'.*did you mean 'trials'"):
        compose_experiment(["experiment=synthetic_trace", "tirals=3"])


def test_run_py_end_to_end(tmp_path):
    """The user's command: prints progress and where everything went; bad config exits non-zero.
    (In one process, n_jobs=1: run.py's worker processes are run by test_hostile_harness.py's progress
    and Ctrl-C tests.)"""
    done = subprocess.run([sys.executable, "run.py", "experiment=synthetic_trace", "scale=smoke", "n_jobs=1",
                           f"output_dir={tmp_path}"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for word in ["results:", "summary:", "figure:", "mechanism runs"]:
        assert word in done.stdout
    assert (tmp_path / "figure.png").exists()
    bad = subprocess.run([sys.executable, "run.py", "experiment=synthetic_trace", "params.rho=-1",
                          f"output_dir={tmp_path / 'bad'}"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode != 0 and "rho must be" in bad.stderr


def test_resampled_datasets_draw_a_fresh_sample_per_trial(experiment, monkeypatch):
    """A dataset with resampled(params) True (e.g. MNIST subsamples) is rebuilt per trial: trials
    differ, all mechanisms and budgets of one trial share the sample, any n_jobs gives the same."""
    from dpcov.data import registry
    from dpcov.data.synthetic import synthetic_zipf

    toy = registry.Dataset("synthetic_zipf", synthetic_zipf, 1.0, "resampled copy", resampled=lambda p: True)
    monkeypatch.setitem(registry.DATASETS, "synthetic_zipf", toy)
    frames = []
    for jobs in (1, 2):
        exp = experiment("synthetic_rho", "trials=3", f"n_jobs={jobs}", "mechanisms=[gauss,zero]",
                         output=f"jobs{jobs}")
        frames.append(pd.read_csv(run_experiment(exp).results))
    one, two = (f.sort_values(["mechanism", "trial", "rho"]).reset_index(drop=True) for f in frames)
    pd.testing.assert_series_equal(one.err_fro, two.err_fro)
    zero = one[one.mechanism == "zero"]
    per_trial = zero.groupby("trial").err_fro.nunique()
    assert (per_trial == 1).all()  # same sample across budgets within a trial
    assert zero.groupby("trial").err_fro.first().nunique() == 3  # a different sample per trial


def test_a_grid_of_panels(experiment):
    exp = experiment("synthetic_rho", "trials=1", "mechanisms=[gauss,zero]", "sweep.n=[300,400]",
                     "sweep.d=[4,8]", "sweep.rho=[0.1,1]", "figure.x=d", "figure.panel=[n,rho]")
    out = run_experiment(exp)
    assert draw(exp, out)[0].stat().st_size > 0
    with pytest.raises(ConfigError, match="figure axis 'nope'"):
        experiment("synthetic_rho", "figure.panel=[rho,nope]")
    with pytest.raises(ConfigError, match="figure.columns must be an integer >= 1"):
        experiment("synthetic_rho", "figure.columns=0")


def test_panels_wrap_after_figure_columns(experiment):
    import matplotlib.image
    shapes = {}
    for columns in (None, 2):
        exp = experiment("synthetic_rho", "trials=1", "mechanisms=[zero]", "sweep.rho=[0.1,1,10]",
                         "figure.panel=rho", *([f"figure.columns={columns}"] if columns else []),
                         output=f"c{columns}")
        shapes[columns] = matplotlib.image.imread(draw(exp, run_experiment(exp))[0]).shape
    assert shapes[None][1] > 2.5 * shapes[None][0]  # one row of three panels
    assert shapes[2][1] < 1.5 * shapes[2][0]  # two rows of two (the fourth left blank)


def test_benchmark_times_every_line_of_the_experiment_including_variants():
    """scripts/benchmark.py at a toy size: one row per line (a variant such as EMCov (as published) runs
    its base mechanism with the variant's options), plus the iterative samplers."""
    done = subprocess.run([sys.executable, "scripts/benchmark.py", "--d", "6", "--n", "200", "--repeats", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    timed = {line.split()[1] for line in done.stdout.splitlines()[1:]}
    assert {"eigh", "emcov", "emcov_published", "gauss", "emcov_pure", "ad", "itu", "kt"} <= timed


def test_summary_is_the_same_bits_whatever_order_the_runs_finished_in():
    """Tasks finish in any order (joblib's unordered generator, several workers): the summary sorts the
    rows first, so a regeneration gives the committed numbers to the last bit."""
    from dpcov.experiments.config import compose_experiment
    from dpcov.experiments.runner import run_identity, summarise
    exp = compose_experiment(["experiment=synthetic_trace", "scale=smoke"])
    rng = np.random.default_rng(0)
    rows = [{"experiment": exp.name, **run_identity(exp, point, m, t), "released": "ok",
             "seconds": rng.exponential(),
             **{f"err_{metric}": rng.exponential() * 1e-3 + 0.1 for metric in exp.metrics}}
            for point in exp.grid() for m in exp.mechanisms for t in range(exp.trials_for(m))]
    frame = pd.DataFrame(rows)
    first = summarise(exp, frame)
    for seed in range(3):
        shuffled = frame.sample(frac=1.0, random_state=seed)
        pd.testing.assert_frame_equal(summarise(exp, shuffled), first, check_exact=True)


def test_task_grouping_changes_no_number(experiment):
    """The runner's first chunk of trials is one task per line (quick lines report while another
    compiles), the rest hold every line; a line added later runs in tasks of its own. Every run's
    randomness comes from its key, so the numbers are those of one fresh run of every line."""
    from dpcov.experiments.runner import _tasks, plan, trials_per_task

    exp = experiment("synthetic_trace", "n_jobs=1", "mechanisms=[gauss,separate,zero]", output="fresh")
    tasks = list(_tasks(exp, plan(exp, set()), trials_per_task(exp.trials, 1)))
    first = [task[1][4] for task in tasks[:3]]  # run_trials(experiment, instance, points, trials, pending, ...)
    assert [sorted({m for ms in pending.values() for m in ms}) for pending in first] == \
        [["gauss"], ["separate"], ["zero"]]
    fresh = pd.read_csv(run_experiment(exp).results)
    run_experiment(experiment("synthetic_trace", "n_jobs=1", "mechanisms=[separate]", output="grown"))
    grown = pd.read_csv(run_experiment(experiment("synthetic_trace", "n_jobs=1", "mechanisms=[gauss,separate,zero]",
                                                  output="grown")).results)
    cols = ["mechanism", "trial", "N", "err_fro"]
    pd.testing.assert_frame_equal(fresh[cols].sort_values(cols[:3]).reset_index(drop=True),
                                  grown[cols].sort_values(cols[:3]).reset_index(drop=True))
