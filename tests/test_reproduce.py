"""scripts/reproduce.py: every target names a real experiment; committed figures count as complete."""
import importlib.util
import re
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcov.experiments.config import experiment_names

ROOT = Path(__file__).resolve().parents[1]
reproduce = importlib.import_module("dpcov.commands.reproduce")


def test_targets_cover_committed_results_and_known_experiments():
    names = set(experiment_names())
    assert {t.experiment for t in reproduce.TARGETS} <= names
    committed = {str(p.parent.relative_to(ROOT / "results")) for p in (ROOT / "results").glob("*/*/summary.csv")}
    assert committed <= {t.out for t in reproduce.TARGETS}


def test_a_committed_figure_is_complete_and_tables_render():
    target = next(t for t in reproduce.TARGETS if t.out == "dong2022/fig3a")
    done, total, seconds = reproduce.progress(target)
    assert done == total > 0 and seconds == 0
    text = reproduce.tables()
    assert text.startswith(reproduce.BEGIN) and text.endswith(reproduce.END)
    assert "### dong2022/fig3a" in text and "| N | " in text


def test_status_from_scratch_counts_nothing_as_done(capsys, monkeypatch):
    """Every run of the target is left, each at the measured cost, plus each worker task's own cost,
    the target's work in the main process and the workers' start-up (stubbed here: 0.1 s per run,
    0.5 s per task, 3 s, 7 s; the measurements themselves are exercised in the next tests)."""
    monkeypatch.setattr(reproduce, "run_seconds", lambda exp, names, point, measure=False: dict.fromkeys(names, 0.1))
    monkeypatch.setattr(reproduce, "build_seconds", lambda exp, point: 0.0)
    monkeypatch.setattr(reproduce, "executor_seconds", lambda exp: {"startup": 7.0, "task": 0.5})
    monkeypatch.setattr(reproduce, "finish_seconds", lambda target, exp, names: 3.0)
    monkeypatch.setattr("sys.argv", ["reproduce.py", "--status", "--from-scratch", "--measure", "--n-jobs", "1", "fig3a"])
    reproduce.main()
    printed = capsys.readouterr().out
    target = next(t for t in reproduce.TARGETS if t.out == "dong2022/fig3a")
    exp = reproduce.experiment_of(target)
    tasks = reproduce.task_count(exp, exp.mechanisms)
    assert tasks == 6 * -(-50 // reproduce.trials_per_task(50, reproduce.cpu_count()))  # 6 grid points
    seconds = 2160 * 0.1 + tasks * 0.5 + 3 + 7  # plus composing the target, measured (a fraction of a second)
    estimate = float(re.search(r"dong2022/fig3a +0/2160 runs, ~[\d.]+ min left \(([\d.]+) s\)", printed).group(1))
    assert seconds <= estimate < seconds + 2
    assert "estimated time left: ~4.2 min on this machine (1 workers" in printed
    monkeypatch.setattr("sys.argv", ["reproduce.py", "--from-scratch", "fig3a"])
    with pytest.raises(SystemExit):
        reproduce.main()
    assert "--from-scratch goes with --status" in capsys.readouterr().err


@pytest.mark.skipif(reproduce.cpu_count() < 2, reason="one worker waits for nobody")
def test_the_estimate_counts_the_wait_for_the_last_task(monkeypatch):
    """Two workers: when one is done, the other is on average half-way through the run's last task
    (fig3a: 7 trials of its 8 lines, 0.1 s a run) -- a quarter of that task in wall seconds."""
    monkeypatch.setattr(reproduce, "run_seconds", lambda exp, names, point, measure=False: dict.fromkeys(names, 0.1))
    monkeypatch.setattr(reproduce, "build_seconds", lambda exp, point: 0.0)
    monkeypatch.setattr(reproduce, "executor_seconds", lambda exp: {"startup": 7.0, "task": 0.0})
    monkeypatch.setattr(reproduce, "finish_seconds", lambda target, exp, names: 3.0)
    target = next(t for t in reproduce.TARGETS if t.out == "dong2022/fig3a")
    with tempfile.TemporaryDirectory() as scratch:
        done, total, seconds = reproduce.progress(target, Path(scratch), Path(scratch), n_jobs=2)
    assert (done, total) == (0, 2160) and reproduce.trials_per_task(50, 2) == 7
    expected = 2160 * 0.1 / 2 + 3 + 7 * 8 * 0.1 / 4  # plus composing the target, measured
    assert expected <= seconds < expected + 1


def test_estimate_vs_run_forgets_only_numbas_cache(tmp_path):
    """scripts/estimate_vs_run.py runs each target with numba's on-disk cache removed (the workers
    compile from nothing, as in a fresh clone); nothing else is touched."""
    spec = importlib.util.spec_from_file_location("estimate_vs_run", ROOT / "scripts" / "estimate_vs_run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cache = tmp_path / "mechanisms" / "__pycache__"
    cache.mkdir(parents=True)
    for name in ("conditioned._phase-51.py311.nbi", "conditioned._phase-51.py311.1.nbc", "conditioned.cpython-311.pyc"):
        (cache / name).write_text("")
    module.forget_compiled(tmp_path)
    assert [p.name for p in cache.iterdir()] == ["conditioned.cpython-311.pyc"]


def test_executor_and_finish_are_measured():
    """The workers' start-up and a task's own cost, measured through the real executor with fig3a's
    first dataset instance; the target's main-process work by composing it and drawing its figures."""
    target = next(t for t in reproduce.TARGETS if t.out == "dong2022/fig3a")
    exp = reproduce.experiment_of(target)
    measured = reproduce.executor_seconds(exp)
    assert measured["startup"] >= 0 and measured["task"] > 0 and measured["fixed"] > 0
    assert reproduce.finish_seconds(target, exp, ["gauss"]) > 0


def test_run_costs_are_not_shared_between_targets_that_score_differently(monkeypatch):
    """Amin's regression target runs fig1a's lines on fig1a's data points, but also fits ridge models:
    its runs cost more, and must be measured, not taken from fig1a's (stub: a run costs 0.2 s with
    a ridge task, 0.1 s without)."""
    monkeypatch.setattr(reproduce, "_RUN_SECONDS", {})
    monkeypatch.setattr(reproduce, "_DATA_SECONDS", {})
    monkeypatch.setattr(reproduce, "_instance", lambda exp, point: None)
    monkeypatch.setattr(reproduce, "_fixed_seconds", lambda exp, instance, point: 0.0)
    monkeypatch.setattr(reproduce, "_timed_run", lambda exp, instance, point, name, fresh, trials=(0,):
                        len(trials) * (0.1 if exp.ridge_alpha is None else 0.2))
    fig1a, regression = (reproduce.experiment_of(next(t for t in reproduce.TARGETS if t.out == out))
                         for out in ("amin2019/fig1a", "amin2019/regression"))
    point = next(p for p in regression.grid() if p in fig1a.grid())  # the same data point and budget
    assert reproduce.run_seconds(fig1a, ["laplace"], point, measure=True) == {"laplace": pytest.approx(0.1)}
    assert reproduce.run_seconds(regression, ["laplace"], point) == {"laplace": pytest.approx(0.2)}


def test_unknown_target_is_refused(capsys, monkeypatch):
    monkeypatch.setattr("sys.argv", ["reproduce.py", "nope"])
    with pytest.raises(SystemExit):
        reproduce.main()
    assert "unknown target 'nope'" in capsys.readouterr().err


def test_a_new_line_runs_alone_and_merges_with_the_committed_ones(tmp_path):
    """Lines complete in the committed summary are re-used; only the new line runs (into partial/)."""
    base = next(t for t in reproduce.TARGETS if t.out == "dong2022/fig3a")
    target = reproduce.Target(base.out, base.experiment, (
        "mechanisms=[gauss,zero,gauss_twin]", "+variants.gauss_twin={mechanism: gauss, label: Twin}"), x="N")
    plan = reproduce.plan_target(target, out_root=tmp_path)
    assert plan.missing == ["gauss_twin"] and set(plan.committed.mechanism) == {"gauss", "zero"}
    done, total, seconds = reproduce.progress(target, out_root=tmp_path)
    assert (done, total) == (2 * 6 * 50, 3 * 6 * 50) and seconds > 0  # the twin's releases, measured now
    out = reproduce.complete_target(target, n_jobs=1, out_root=tmp_path)
    merged = pd.read_csv(out / "summary.csv")
    committed = pd.read_csv(reproduce.RESULTS / base.out / "summary.csv")
    assert list(merged.mechanism.unique()) == ["gauss", "zero", "gauss_twin"]
    pd.testing.assert_frame_equal(merged[merged.mechanism == "gauss"][committed.columns].reset_index(drop=True),
                                  committed[committed.mechanism == "gauss"].reset_index(drop=True))
    if "fallbacks" not in committed:  # a column newer than the committed summary: unknown there, counted here
        assert merged[merged.mechanism == "gauss"].fallbacks.isna().all()
        assert (merged[merged.mechanism == "gauss_twin"].fallbacks == 0).all()
    twin, gauss = merged[merged.mechanism == "gauss_twin"], merged[merged.mechanism == "gauss"]
    assert (twin.err_fro_count == 50).all()
    # same mechanism, other line name -> other noise, same distribution
    assert np.allclose(twin.err_fro_mean.values, gauss.err_fro_mean.values, rtol=0.05)
    assert (out / "figure.png").exists() and (out / "partial" / "results.csv").exists()
    assert reproduce.progress(target, out_root=tmp_path, base_root=tmp_path)[0] == 3 * 6 * 50


def test_rerun_reproduces_a_committed_line_and_replaces_it(tmp_path):
    """Re-running AD (the iterative eigenvector sampler) of Amin Fig. 1(a) with the same seeds gives
    the committed means (z = 0 up to rounding: the blocked sampler is the same path at d <= 14);
    the summary keeps every other line and gets the re-run's rows."""
    target = next(t for t in reproduce.TARGETS if t.out == "amin2019/fig1a")
    committed = pd.read_csv(reproduce.RESULTS / target.out / "summary.csv")
    (tmp_path / target.out).mkdir(parents=True)
    committed.to_csv(tmp_path / target.out / "summary.csv", index=False)
    stale = tmp_path / target.out / "partial" / reproduce.RERUN / "ad"
    pair = reproduce.rerun_line(target, "ad", n_jobs=1, root=tmp_path)
    assert not stale.exists()  # a completed re-run leaves nothing a later --rerun (new code) could re-use
    assert len(pair) == (committed.mechanism == "ad").sum() > 0
    assert pair.z.abs().max() < 1e-6 and pair.relative.abs().max() < 1e-9
    merged = pd.read_csv(tmp_path / target.out / "summary.csv")
    assert list(merged.mechanism.unique()) == list(committed.mechanism.unique())
    keep = committed.mechanism != "ad"
    pd.testing.assert_frame_equal(merged[merged.mechanism != "ad"][committed.columns].reset_index(drop=True),
                                  committed[keep].reset_index(drop=True))
    with pytest.raises(ValueError, match="no committed line 'nope'"):
        reproduce.rerun_line(target, "nope", n_jobs=1, root=tmp_path)


def test_rerun_of_a_line_no_target_has_is_refused(capsys, monkeypatch):
    monkeypatch.setattr("sys.argv", ["reproduce.py", "--rerun", "nope", "fig3a"])
    with pytest.raises(SystemExit, match="no chosen target has a committed line 'nope'"):
        reproduce.main()


def test_no_committed_line_is_stale():
    """Every committed line records what produced it (lines.json: its fingerprint on the probe problem),
    and today's code reproduces each one; a line whose code changed must be re-run (--rerun) first."""
    from dpcov.experiments.fingerprint import read_lines

    stale = {}
    for target in reproduce.TARGETS:
        summary = reproduce.RESULTS / target.out / "summary.csv"
        if not summary.exists():
            continue
        present = set(pd.read_csv(summary, usecols=["mechanism"]).mechanism)
        assert present <= set(read_lines(summary.parent)), f"{target.out}: lines without a fingerprint"
        for name, why in reproduce.stale_report(target).items():
            stale[f"{target.out}:{name}"] = why
    assert not stale, "stale committed lines (python scripts/reproduce.py --rerun LINE TARGET):\n" + \
        "\n".join(f"{k}: {v}" for k, v in stale.items())


def test_a_line_whose_code_changed_is_stale_and_runs_again(tmp_path, capsys):
    import shutil

    from dpcov.experiments.fingerprint import read_lines, write_lines

    target = next(t for t in reproduce.TARGETS if t.out == "dong2022/fig3a")
    copy = tmp_path / target.out
    shutil.copytree(reproduce.RESULTS / target.out, copy)
    lines = read_lines(copy)
    lines["gauss"]["fingerprint"] = [v * (1 + 1e-4) for v in lines["gauss"]["fingerprint"]]  # "older code"
    lines["zero"]["spec"] = {**lines["zero"]["spec"], "options": {"x": 1}}
    write_lines(copy, lines)
    assert set(reproduce.stale_report(target, tmp_path)) == {"gauss", "zero"}
    assert "code has changed" in reproduce.stale_report(target, tmp_path)["gauss"]
    plan = reproduce.plan_target(target, out_root=tmp_path, base_root=tmp_path)
    assert {"gauss", "zero"} <= set(plan.missing) and not {"gauss", "zero"} & set(plan.committed.mechanism)
    del lines["separate"]
    write_lines(copy, lines)
    assert reproduce.stale_report(target, tmp_path)["separate"] == "no fingerprint recorded"


def test_a_line_that_falls_back_on_the_small_probe_is_fingerprinted_on_the_large_one():
    from dpcov.experiments.fingerprint import fingerprint

    stable = fingerprint({"mechanism": "stable_gsampling", "options": {"on_fail": "zero"}, "budget": {}})
    assert isinstance(stable, list) and any(v != 0 for v in stable)  # not the zero fallback
    assert fingerprint({"mechanism": "clip_gauss", "options": {}, "budget": {}}) == \
        "error: ValueError: mechanism 'clip_gauss' needs option(s) ['tau'] (no default), e.g. options={'tau': ...}"


def test_compare_reports_identical_cells_and_z_scores(tmp_path):
    """--compare pairs every committed line with another tree's: the same tree is identical everywhere;
    a copy with one line's means moved by 3 standard errors shows |z| = 3 / sqrt 2 there only."""
    target = next(t for t in reproduce.TARGETS if t.out == "dong2022/fig3a")
    same = reproduce.compare([target], reproduce.RESULTS)
    rows = [line.split() for line in same[1:]]
    assert rows and all(row[2] == row[3] and float(row[5]) == 0 and row[8] == "identical" for row in rows)
    summary = pd.read_csv(reproduce.RESULTS / target.out / "summary.csv")
    moved = summary.mechanism == "gauss"
    summary.loc[moved, "err_fro_mean"] += 3 * summary.loc[moved, "err_fro_sem"]
    (tmp_path / target.out).mkdir(parents=True)
    summary.to_csv(tmp_path / target.out / "summary.csv", index=False)
    rows = {row[1]: row for row in (line.split() for line in reproduce.compare([target], tmp_path)[1:])}
    assert rows["gauss"][3] == "0" and abs(float(rows["gauss"][5]) - 3 / 2**0.5) < 0.01
    assert all(float(row[5]) == 0 for name, row in rows.items() if name != "gauss")


def test_compare_tells_rounding_from_a_moved_deterministic_line(tmp_path):
    """A line without spread (standard error 0, e.g. the zero matrix) that moved in its last bits (another
    CPU's rounding) is 'rounding only' with z = 0, not inf; one that moved by 0.1 % DIFFERS (z = inf)."""
    target = next(t for t in reproduce.TARGETS if t.out == "dong2022/fig3a")
    summary = pd.read_csv(reproduce.RESULTS / target.out / "summary.csv")
    zero = summary.mechanism == "zero"
    assert (summary.loc[zero, "err_fro_sem"] == 0).all()
    (tmp_path / target.out).mkdir(parents=True)
    rows = {}
    for factor in (1 + 1e-13, 1 + 1e-3):
        moved = summary.copy()
        moved.loc[zero, "err_fro_mean"] *= factor
        moved.to_csv(tmp_path / target.out / "summary.csv", index=False)
        rows[factor] = {row[1]: row for row in (line.split() for line in reproduce.compare([target], tmp_path)[1:])}
    small, large = rows[1 + 1e-13]["zero"], rows[1 + 1e-3]["zero"]
    assert small[4] == small[2] and float(small[5]) == 0 and small[8:] == ["rounding", "only"]
    assert large[5] == "inf" and large[8] == "DIFFERS"


def test_status_with_nothing_done_answers_from_the_committed_run_from_nothing(capsys, monkeypatch, tmp_path):
    """Outside a checkout (no results/ here) --status measures nothing: a target with nothing done
    costs its seconds in the committed run from nothing (from_scratch.csv, 2 workers), scaled to the
    workers here; --measure times it instead."""
    def measured(*args, **kwargs):
        raise AssertionError("--status measured a run")
    for name in ("run_seconds", "executor_seconds", "finish_seconds"):
        monkeypatch.setattr(reproduce, name, measured)
    monkeypatch.setattr(reproduce, "RESULTS", tmp_path)
    monkeypatch.setattr(reproduce, "cpu_count", lambda: 4)
    reproduce.main(["--status", "--n-jobs", "4"])
    printed = capsys.readouterr().out
    table = reproduce.from_scratch_seconds()
    assert set(table) == {t.out for t in reproduce.TARGETS}
    assert f"~{sum(table.values()) * 2 / 4 / 60:.1f} min" in printed.splitlines()[-1]
    assert printed.count("as in the committed run from nothing") == len(reproduce.TARGETS)
    with pytest.raises(AssertionError, match="measured a run"):
        reproduce.main(["--status", "--measure", "--n-jobs", "4", "fig3a"])


def test_the_from_scratch_table_is_the_committed_measurement():
    """from_scratch.csv (package data) holds the 'run (s)' column of results/measurements/from_scratch.txt."""
    log = (ROOT / "results" / "measurements" / "from_scratch.txt").read_text()
    measured = {t: float(s) for t, s in re.findall(r"^(\w+/\w+) +([\d.]+) +[\d.]+ +[\d.]+$", log, re.M)}
    assert reproduce.from_scratch_seconds() == measured
