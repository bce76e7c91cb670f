"""Plug-in mechanisms (mechanisms/registry.py): declared by @register_mechanism, named by a dotted
path or a short name; the accountant, variants, runner, resume, workers and Dask work unchanged."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcov.experiments.config import ConfigError
from dpcov.experiments.runner import run_experiment
from dpcov.figures.plot import draw
from dpcov.mechanisms import (AuditNeeds, BudgetExceeded, CovProblem, Facts, PureDP, ZCDP, get_mechanism,
                        register_mechanism, release)
from dpcov.mechanisms.registry import MECHANISMS, PLUGINS, plugin_modules

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
EXAMPLE = "my_mechanisms:shrunk_gauss"


@pytest.fixture(autouse=True)
def examples_on_path(monkeypatch):
    """docs/examples importable, as a user's PYTHONPATH would make it (workers inherit sys.path)."""
    monkeypatch.syspath_prepend(str(EXAMPLES))


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 12)) * np.linspace(1, 0.05, 12)
    return CovProblem.from_rows(X / np.linalg.norm(X, axis=1).max())


def test_dotted_path_short_name_and_function_resolve_to_the_same_mechanism(problem):
    import my_mechanisms

    by_path, by_name, by_fn = (get_mechanism(m) for m in (EXAMPLE, "shrunk_gauss", my_mechanisms.shrunk_gauss))
    assert by_path.name == EXAMPLE and by_name.name == "shrunk_gauss"
    assert by_path.fn is by_name.fn is by_fn.fn is my_mechanisms.shrunk_gauss
    assert by_path.notion is ZCDP and by_path.label == "ShrunkGaussCov" and by_path.option_names() == ["shrink"]
    releases = [release(m, problem, ZCDP(0.5), np.random.default_rng(7))[0]
                for m in (EXAMPLE, "shrunk_gauss", my_mechanisms.shrunk_gauss)]
    assert np.array_equal(releases[0], releases[1]) and np.array_equal(releases[0], releases[2])
    assert "shrunk_gauss" not in MECHANISMS  # built-ins (golden numbers, audits) stay as they are


def test_example_plugin_spends_its_budget_and_shrinks_gausscov_eigenvalues(problem):
    budget = ZCDP(0.5)
    gauss, _ = release("gauss", problem, budget, np.random.default_rng(3), options={"numerics": "hardened"},
                       clamp=False)
    shrunk, accountant = release(EXAMPLE, problem, budget, np.random.default_rng(3), clamp=False)
    (what, spent), = accountant.ledger  # GaussCov with hardened numerics (mechanisms/noise.py)
    assert accountant.fully_spent() and spent == budget and what.startswith("GaussCov: noisy covariance (hardened: ")
    # same noise draw: eigenvectors equal, each eigenvalue lowered by 2 s sqrt(d) and cut at 0
    scale = 1 / (np.sqrt(budget.rho) * problem.n)
    expected = np.maximum(np.linalg.eigvalsh(gauss) - 2 * scale * np.sqrt(problem.d), 0)
    assert np.allclose(np.linalg.eigvalsh(shrunk), np.sort(expected), atol=1e-12)
    none, _ = release(EXAMPLE, problem, budget, np.random.default_rng(3), options={"shrink": 0}, clamp=False)
    values = np.linalg.eigvalsh(gauss)
    assert np.allclose(np.linalg.eigvalsh(none), np.maximum(values, 0), atol=1e-12)
    with pytest.raises(ValueError, match="shrink must be a number >= 0"):
        release(EXAMPLE, problem, budget, np.random.default_rng(3), options={"shrink": -1})
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['shrnk'\]"):
        release(EXAMPLE, problem, budget, np.random.default_rng(3), options={"shrnk": 1})


def test_a_plugin_that_overspends_is_refused_by_the_accountant(problem):
    with pytest.raises(BudgetExceeded, match="would exceed the total 0.1-zCDP"):
        release("plugin_cases:overspending", problem, ZCDP(0.1), np.random.default_rng(0))
    # spending the same total in parts is fine, and the ledger shows each part
    _, accountant = release("plugin_cases:halves", problem, ZCDP(0.1), np.random.default_rng(0),
                            options={"parts": 4})
    assert accountant.fully_spent() and len(accountant.ledger) == 4


def test_overspending_plugin_stops_an_experiment(experiment):
    exp = experiment("synthetic_trace", "mechanisms=[gauss,plugin_cases:overspending]")
    with pytest.raises(BudgetExceeded):
        run_experiment(exp)


def test_a_plugin_runs_at_the_largest_budget_of_its_notion(problem):
    # a zCDP plug-in under an (eps, delta) target gets the rho that implies it; under pure DP: refused
    _, accountant = release("plugin_cases:halves", problem, PureDP(1.0).to_zcdp(), np.random.default_rng(0))
    assert accountant.total == ZCDP(0.5)
    with pytest.raises(ValueError, match="cannot meet a PureDP guarantee"):
        release("plugin_cases:halves", problem, PureDP(1.0), np.random.default_rng(0))
    with pytest.raises(TypeError, match="cannot charge a ZCDP step to a PureDP budget"):
        release("plugin_cases:wrong_notion", problem, PureDP(1.0), np.random.default_rng(0))


@pytest.mark.parametrize("name, error, message", [
    ("plugin_cases:wrong_shape", ValueError, r"returned shape \(13, 12\), expected \(12, 12\)"),
    ("plugin_cases:not_finite", ValueError, "returned NaN or inf"),
    ("plugin_cases:asymmetric", ValueError, "non-symmetric"),
    ("plugin_cases:undeclared", ValueError, "decorate it with @register_mechanism"),
    ("plugin_cases:missing", ValueError, "module 'plugin_cases' has no 'missing'"),
    ("no_such_package.cov:mech", ValueError, "cannot import module 'no_such_package.cov'"),
    ("nope", ValueError, "a plug-in is named by its dotted path"),
])
def test_broken_plugins_get_clear_errors(problem, name, error, message):
    with pytest.raises(error, match=message):
        release(name, problem, ZCDP(0.1), np.random.default_rng(0))


def test_register_mechanism_checks_its_declaration():
    with pytest.raises(ValueError, match="notion must be ZCDP, PureDP or ApproxDP"):
        register_mechanism(notion="renyi")
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        register_mechanism(notion=ZCDP, name="a.b")
    with pytest.raises(TypeError, match="options must be keyword-only"):
        @register_mechanism(notion=ZCDP)
        def positional(problem, accountant, rng, tau):
            return problem.sigma
    with pytest.raises(ValueError, match="is a built-in mechanism"):
        @register_mechanism(notion=ZCDP, name="gauss")
        def clash(problem, accountant, rng):
            return problem.sigma
    with pytest.raises(ValueError, match="already taken"):
        @register_mechanism(notion=ZCDP, name="halves")
        def other(problem, accountant, rng):
            return problem.sigma
    assert PLUGINS["halves"].fn.__module__ == "plugin_cases"


def test_release_checks_its_arguments(problem):
    with pytest.raises(TypeError, match="problem must be a CovProblem"):
        release("gauss", np.eye(3), ZCDP(0.1), np.random.default_rng(0))
    with pytest.raises(TypeError, match=r"budget must be ZCDP\(rho\)"):
        release("gauss", problem, 0.1, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        release("gauss", problem, ZCDP(0.1), 0)


def test_plugins_run_through_config_variants_workers_and_resume(experiment, monkeypatch):
    """Dotted path and short name in mechanisms=[...], a variant with options, two worker processes
    started before the plug-ins' directory was on sys.path; the rerun resumes (nothing new) and the
    numbers equal a one-process run."""
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(EXAMPLES)])
    run_experiment(experiment("synthetic_trace", "n_jobs=2", "mechanisms=[zero]", output="warm"))
    monkeypatch.syspath_prepend(str(EXAMPLES))  # the workers above keep their older sys.path
    import my_mechanisms  # noqa: F401  (registers the short name in this process)

    overrides = ["mechanisms=[gauss,my_mechanisms:shrunk_gauss,shrunk_gauss,strong]",
                 "+variants.strong={mechanism: 'my_mechanisms:shrunk_gauss', label: Strong, options: {shrink: 2}}"]
    two = experiment("synthetic_trace", "n_jobs=2", *overrides, output="two")
    out = run_experiment(two)
    rows = pd.read_csv(out.results)
    assert set(rows.mechanism) == {"gauss", EXAMPLE, "shrunk_gauss", "strong"}
    assert set(rows.label) == {"GaussCov", "ShrunkGaussCov", "Strong"}
    assert set(rows.spent) == set(rows.budget) and draw(two, out)[0].exists()
    assert run_experiment(two).new_rows == 0
    one = pd.read_csv(run_experiment(experiment("synthetic_trace", *overrides, output="one")).results)
    key = ["mechanism", "trial", "N"]
    pd.testing.assert_frame_equal(rows.sort_values(key)[key + ["err_fro"]].reset_index(drop=True),
                                  one.sort_values(key)[key + ["err_fro"]].reset_index(drop=True))
    with pytest.raises(ConfigError, match=r"unknown option\(s\) \['tau'\]"):
        experiment("synthetic_trace", "mechanisms=[strong]",
                   "+variants.strong={mechanism: 'my_mechanisms:shrunk_gauss', options: {tau: 2}}")


def test_a_plugin_that_cannot_be_imported_is_a_config_error(experiment):
    with pytest.raises(ConfigError, match="cannot import module 'nowhere.cov'"):
        experiment("synthetic_trace", "mechanisms=[gauss,nowhere.cov:mech]")


def test_plugin_on_a_dask_cluster_matches_local(experiment):
    distributed = pytest.importorskip("distributed", reason="executor=dask needs pip install -e '.[dask]'")
    mechs = f"mechanisms=[{EXAMPLE}]"
    local = pd.read_csv(run_experiment(experiment("synthetic_trace", mechs, output="local")).results)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        exp = experiment("synthetic_trace", mechs, "executor=dask", f"dask_scheduler={cluster.scheduler_address}",
                         output="dask")
        remote = pd.read_csv(run_experiment(exp).results)
    key = ["mechanism", "trial", "N"]
    pd.testing.assert_frame_equal(local.sort_values(key)[key + ["err_fro"]].reset_index(drop=True),
                                  remote.sort_values(key)[key + ["err_fro"]].reset_index(drop=True))


@pytest.mark.skipif(not (ROOT / "scripts" / "audit.py").exists(), reason="scripts/audit.py (issue 16) not present")
def test_the_audit_entry_point_accepts_the_example_plugin():
    env = {"PYTHONPATH": f"{ROOT}:{EXAMPLES}", "PATH": "/usr/bin:/bin"}
    # one process: worker processes importing a plug-in are test_blackbox.py's test_same_numbers_for_any_n_jobs
    out = subprocess.run([sys.executable, "scripts/audit.py", EXAMPLE, "--runs", "40", "--budget", "rho=0.1",
                          "--confirmations", "1", "--quiet", "--n-jobs", "1"], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr  # 1: the audited bound exceeds the claim
    assert EXAMPLE in out.stdout


def load_reproduce(monkeypatch):
    return importlib.import_module("dpcov.commands.reproduce")


def test_reproduce_add_plans_the_new_line_and_skips_targets_it_cannot_serve(tmp_path, capsys, monkeypatch):
    reproduce = load_reproduce(monkeypatch)
    fig3a = next(t for t in reproduce.TARGETS if t.name == "fig3a")
    target, why = reproduce.with_lines(fig3a, [EXAMPLE])
    plan = reproduce.plan_target(target, out_root=tmp_path)
    assert why == "" and plan.missing == [EXAMPLE] and EXAMPLE not in set(plan.committed.mechanism)
    assert plan.experiment.mechanisms[-1] == EXAMPLE and len(plan.experiment.mechanisms) > 1
    monkeypatch.setattr("sys.argv", ["reproduce.py", "--add", EXAMPLE, "--out", str(tmp_path), "--status",
                                     "fig3a", "fig8_eps"])
    reproduce.main()
    printed = capsys.readouterr().out
    assert "dong2022/fig8_eps" in printed and "cannot meet a PureDP guarantee" in printed
    assert "dong2022/fig3a" in printed and "runs, ~" in printed
    for argv, message in ([["--add", EXAMPLE, "fig3a"], "--add needs --out"],
                          [["--add", "nowhere:mech", "--out", str(tmp_path)], "cannot import module 'nowhere'"]):
        monkeypatch.setattr("sys.argv", ["reproduce.py", *argv])
        with pytest.raises(SystemExit):
            reproduce.main()
        assert message in capsys.readouterr().err


@pytest.mark.slow
def test_reproduce_add_runs_only_the_new_line_and_reuses_the_committed_ones(tmp_path, capsys, monkeypatch):
    reproduce = load_reproduce(monkeypatch)
    argv = ["reproduce.py", "--add", EXAMPLE, "--out", str(tmp_path), "--n-jobs", "1", "fig3a", "fig8_eps"]
    monkeypatch.setattr("sys.argv", argv)
    reproduce.main()
    assert not (tmp_path / "dong2022" / "fig8_eps").exists()
    merged = pd.read_csv(tmp_path / "dong2022" / "fig3a" / "summary.csv")
    committed = pd.read_csv(ROOT / "results" / "dong2022" / "fig3a" / "summary.csv")
    assert set(merged.mechanism) == {*committed.mechanism, EXAMPLE}
    mine = merged[merged.mechanism == EXAMPLE]
    assert len(mine) == 6 and (mine.err_fro_count == 50).all() and set(mine.label) == {"ShrunkGaussCov"}
    key = ["mechanism", "N"]
    # the committed columns (new runs add e.g. `fallbacks`, empty for committed rows)
    pd.testing.assert_frame_equal(merged.loc[merged.mechanism != EXAMPLE, list(committed.columns)]
                                  .sort_values(key).reset_index(drop=True),
                                  committed.sort_values(key).reset_index(drop=True), check_dtype=False)
    partial = pd.read_csv(tmp_path / "dong2022" / "fig3a" / "partial" / "results.csv")
    assert set(partial.mechanism) == {EXAMPLE}  # nothing committed was re-run
    assert (tmp_path / "dong2022" / "fig3a" / "figure.png").exists()
    capsys.readouterr()
    reproduce.main()  # complete: nothing runs again
    assert "dong2022/fig3a                   complete" in capsys.readouterr().out


def test_a_plugin_in_a_package_by_dotted_path(experiment, tmp_path, monkeypatch):
    """pkg.sub.cov:fn -- dots and a colon in mechanisms=[...]; its import root goes to the workers."""
    package = tmp_path / "site" / "mypkg" / "sub"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "cov.py").write_text(
        "from dpcov.mechanisms import ZCDP, register_mechanism\n"
        "from dpcov.mechanisms.gaussian import gauss_cov\n\n"
        "@register_mechanism(notion=ZCDP, label='Mine')\n"
        "def my_mech(problem, accountant, rng):\n"
        "    return gauss_cov(problem, accountant, rng)\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    exp = experiment("synthetic_trace", "mechanisms=[gauss,mypkg.sub.cov:my_mech]")
    rows = pd.read_csv(run_experiment(exp).results)
    assert set(rows.label) == {"GaussCov", "Mine"} and set(rows.spent) == {"0.1-zCDP"}
    assert plugin_modules(exp.mechanisms) == [("mypkg.sub.cov", str((tmp_path / "site").resolve()))]


def test_register_mechanism_checks_what_else_it_declares():
    with pytest.raises(TypeError, match="predict must be a Prediction or a function"):
        register_mechanism(notion=ZCDP, predict=3)
    with pytest.raises(TypeError, match="audit must be an AuditNeeds"):
        register_mechanism(notion=ZCDP, audit={"profile": "dp"})
    with pytest.raises(ValueError, match="style must be"):
        register_mechanism(notion=ZCDP, style="red")
    with pytest.raises(ValueError, match="audit profile must be"):
        AuditNeeds("renyi")


def test_a_plugins_declarations_reach_the_advisor_the_overlay_the_style_and_the_audit(monkeypatch):
    """One place per mechanism: what the example plug-in declares with @register_mechanism is what
    the advisor ranks, the figure overlays, the style table draws and the audits use."""
    import importlib.util

    from dpcov.experiments.theory import predicted_error
    from dpcov.figures import plot
    from dpcov.figures.style import style_for

    monkeypatch.syspath_prepend(str(EXAMPLES))
    import my_mechanisms

    facts = {"n": 1000, "d": 10, "rho": 0.1, "trace": 1.0}
    expected = my_mechanisms.shrunk_gauss_error(Facts.from_params(facts), ZCDP(0.1))
    assert predicted_error(EXAMPLE, facts) == pytest.approx(expected)
    advise = importlib.import_module("dpcov.commands.advise")
    frame = advise.advise(1000, 10, ZCDP(0.1), trace=1.0, mechanisms=["gauss", EXAMPLE], table=pd.DataFrame())
    row = frame.set_index("mechanism").loc[EXAMPLE]
    assert row.kind == "declared" and row.predicted == pytest.approx(expected)
    summary = pd.DataFrame([{"experiment": "t", "dataset": "synthetic_zipf", "mechanism": EXAMPLE,
                             "label": "ShrunkGaussCov", "n": n, "d": 10, "N": 1, "s": 3, "rho": 0.1,
                             "err_fro_mean": 0.01, "err_fro_sem": 0.0, "err_fro_count": 2} for n in (1000, 4000)])
    panels, _ = plot.summary_panels(summary, type("F", (), {"panel": None, "x": "n", "columns": None, "xlabel": None,
                                                             "ylabel": None, "logx": True, "logy": True})(),
                                    "fro", ["n", "d", "rho"])
    xs, ys, legend = plot._theory_line(panels[0], EXAMPLE, panels[0].frame)
    assert xs == [1000, 4000] and all(y > 0 for y in ys) and "heuristic" in legend
    assert style_for("ShrunkGaussCov").colour == "#17becf"
    assert get_mechanism(EXAMPLE).audit == AuditNeeds()  # nothing declared: the default pairs


def test_needs_and_spectral_outputs_of_plugins_are_checked(problem):
    from dpcov.mechanisms import Spectral

    with pytest.raises(ValueError, match="needs must be a tuple of strings"):
        register_mechanism(notion=ZCDP, needs="raw rows")

    @register_mechanism(notion=ZCDP)
    def skewed(problem, accountant, rng):
        accountant.spend(accountant.total, "nothing really")
        return Spectral(np.ones(problem.d), np.ones((problem.d, problem.d)))  # not orthonormal

    with pytest.raises(ValueError, match="not d x k with orthonormal columns"):
        release(skewed, problem, ZCDP(0.1), np.random.default_rng(0), spectral=True)
