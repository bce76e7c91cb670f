"""scripts/advise.py: predicted errors from public facts, ranked, with the nearest committed
measurement; the phase diagram from the committed (d, n) sweep."""
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpcov.experiments.theory import predicted_error
from dpcov.mechanisms import ApproxDP, PureDP, ZCDP

ROOT = Path(__file__).resolve().parents[1]
advise = importlib.import_module("dpcov.commands.advise")


@pytest.fixture(scope="module")
def table():
    return advise.summaries()


def test_ranked_table_from_public_facts(table):
    frame = advise.advise(20000, 300, ZCDP(0.1), table=table)
    ranked = frame[frame.predicted.notna()]
    assert list(ranked.predicted) == sorted(ranked.predicted)  # ranked by the prediction
    has_prediction = frame.predicted.notna().tolist()
    assert has_prediction == sorted(has_prediction, reverse=True)  # predicted ones first
    gauss = frame.set_index("mechanism").loc["gauss"]
    worst = {"n": 20000, "d": 300, "rho": 0.1, "radius": 1.0}
    assert gauss.predicted == pytest.approx(predicted_error("gauss", worst))  # the theory, unchanged
    assert gauss.kind == "exact" and gauss["runs at"] == "0.1-zCDP"
    assert frame.set_index("mechanism").loc["zero"].predicted == pytest.approx(1.0)  # ||Sigma||_F <= tr = 1
    assert frame.set_index("mechanism").loc["ad"]["runs at"] == str(PureDP(np.sqrt(0.2)))
    assert "adaptive" in set(frame.mechanism)  # no closed form, but listed with its measurement


def test_budget_notions_decide_who_may_run(table):
    pure = advise.advise(5000, 50, PureDP(1.0), table=table)
    assert "gauss" not in set(pure.mechanism) and {"lap", "ad", "zero"} <= set(pure.mechanism)
    approx = advise.advise(5000, 50, ApproxDP(1.0, 1e-6), table=table)
    assert {"gauss", "gauss_approx", "dp_threshold", "ad"} <= set(approx.mechanism)


def test_nearest_measurement_is_the_committed_number_at_a_committed_point(table):
    """At a point of the committed phase-diagram sweep the nearest measurement is that very row, and
    the exact prediction (before the clamp) is not below it."""
    summary = pd.read_csv(ROOT / "results" / "advisor" / "phase_diagram" / "summary.csv")
    row = summary[(summary.mechanism == "gauss") & (summary.N == 1) & (summary.n == 16000) & (summary.d == 100)]
    value, where, distance = advise.nearest_measurement("gauss", 16000, 100, ZCDP(0.1), 1.0, "fro", table)
    assert distance == 0 and value == pytest.approx(row.err_fro_mean.item())
    assert "n=16000, d=100" in where and "tr=1" in where
    predicted = predicted_error("gauss", {"n": 16000, "d": 100, "rho": 0.1})
    assert value <= predicted * 1.02  # the clamp can only lower the error


def test_trace_assumption_moves_the_zero_matrix_and_separatecov(table):
    full = advise.advise(20000, 300, ZCDP(0.1), table=table).set_index("mechanism")
    small = advise.advise(20000, 300, ZCDP(0.1), trace=0.04, table=table).set_index("mechanism")
    assert small.loc["zero"].predicted == pytest.approx(0.04)
    assert small.loc["separate"].predicted < full.loc["separate"].predicted
    assert small.loc["gauss"].predicted == full.loc["gauss"].predicted  # data-independent noise
    with pytest.raises(ValueError, match=r"trace must lie in \(0, r\^2\]"):
        advise.advise(100, 5, ZCDP(0.1), trace=2.0, table=table)


def test_command_line(capsys):
    advise.main(["--n", "20000", "--d", "300", "--rho", "0.1", "--theory-only"])
    out = capsys.readouterr().out
    assert "| 1 | SeparateCov (`separate`)" in out and "assumed tr = 1 (the worst case)" in out
    assert "caveats:" in out and "never the data" in out
    advise.main(["--table", "data/examples/table.csv", "--columns", "height,weight,age", "--bound", "3",
                 "--eps", "1", "--delta", "1e-6", "--trials", "2"])
    out = capsys.readouterr().out
    assert "n = 1000, d = 3 (only the shape is used)" in out and "r = 3" in out


@pytest.mark.parametrize("argv, message", [
    (["--n", "0", "--d", "3", "--rho", "0.1"], "must be > 0"),
    (["--n", "100", "--d", "3", "--rho", "0"], "rho must be a finite number > 0"),
    (["--n", "100", "--d", "3", "--rho", "0.1", "--eps", "1"], "exactly one privacy budget"),
    (["--n", "100", "--d", "3", "--eps", "1", "--delta", "2"], "delta must lie in (0, 1)"),
    (["--d", "3", "--rho", "0.1"], "give --n and --d"),
    (["--table", "data/examples/table.csv", "--rho", "0.1"], "--table needs --bound"),
    (["--table", "data/examples/table.csv", "--bound", "-1", "--rho", "0.1"], "--bound must be a number > 0"),
    (["--table", "data/examples/table.csv", "--bound", "1", "--rho", "0.1"], "column 'city' is not numeric"),
    (["--n", "100", "--d", "3", "--rho", "0.1", "--mechanisms", "gauss,nope"], "unknown mechanism 'nope'"),
])
def test_bad_input_is_refused(capsys, argv, message):
    with pytest.raises(SystemExit):
        advise.main(argv)
    assert message in capsys.readouterr().err


def test_phase_diagram_of_the_committed_sweep(tmp_path):
    summary = pd.read_csv(ROOT / "results" / "advisor" / "phase_diagram" / "summary.csv")
    assert set(summary.mechanism) == {"gauss", "separate", "adaptive", "zero"} and set(summary.N) == {1, 4}
    assert (summary.err_fro_count == 10).all()
    summary.to_csv(tmp_path / "summary.csv", index=False)
    png, cells = advise.phase_diagram(tmp_path)
    assert png.exists() and png.with_suffix(".pdf").exists()
    assert len(cells) == summary.groupby(["N", "n", "d"]).ngroups and (cells.margin >= 1).all()
    # the qualitative picture (Dong et al. §1): GaussCov wins at small d / large n with tr = 1,
    # SeparateCov at large d; the zero matrix only where n is small and tr < 1
    best = cells.set_index(["N", "n", "d"]).best
    assert best[(1, 64000, 10)] == "GaussCov" and best[(1, 1000, 400)] == "SeparateCov"
    assert best[(4, 1000, 100)] == "Zero" and "Zero" not in set(best[1])


# --- the advisor that measures (experiments/advisor.py) ----------------------------------------------------

from dpcov.experiments import advisor as simulation  # noqa: E402


def test_synthetic_problem_matches_the_stated_facts():
    P = simulation.synthetic_problem(50000, 30, 2.0, 1.5, 1.0, seed=3, norms="equal")
    assert P.n == 50000 and P.d == 30 and P.radius == 2.0
    assert P.trace == pytest.approx(1.5, rel=1e-9)  # every row has norm sqrt(trace)
    values = np.sort(np.linalg.eigvalsh(P.sigma))[::-1]
    assert values[0] / values[9] == pytest.approx(10, rel=0.35)  # eigenvalues ~ 1/i
    skewed = simulation.synthetic_problem(50000, 30, 2.0, 1.5, 1.0, seed=3)  # default: extreme norms
    assert skewed.trace == pytest.approx(1.5, rel=1e-3)
    assert list(skewed.band_exponents) == [0] and skewed.band_counts[0] == round(50000 * 1.5 / 4)  # on the sphere
    with pytest.raises(ValueError, match="norms must be one of"):
        simulation.synthetic_problem(100, 5, 1.0, 1.0, 0.0, norms="pareto")
    big = simulation.synthetic_problem(10**7, 400, 1.0, 1.0, 0.0)
    assert big.n == 10**7 and big.band_counts.sum() == pytest.approx(10**7, rel=1e-6)  # a subsample, n kept
    with pytest.raises(ValueError, match="trace must lie in"):
        simulation.synthetic_problem(100, 5, 1.0, 2.0, 0.0)
    with pytest.raises(ValueError, match="decay must be"):
        simulation.synthetic_problem(100, 5, 1.0, 1.0, -1.0)


def test_the_simulation_ranks_every_candidate_with_no_blank_row_and_is_reproducible():
    one = simulation.simulate(3000, 12, ZCDP(0.5), trace=0.5, decay=1.0, trials=3, n_jobs=1)
    two = simulation.simulate(3000, 12, ZCDP(0.5), trace=0.5, decay=1.0, trials=3, n_jobs=2)
    pd.testing.assert_frame_equal(one.drop(columns="seconds"), two.drop(columns="seconds"))
    from dpcov.mechanisms.registry import MECHANISMS

    # every candidate whose notion can meet a zCDP claim (pure DP can; (eps, delta)-DP cannot)
    assert set(one.mechanism) == {m for m in simulation.candidates() if MECHANISMS[m].notion is not ApproxDP}
    assert one.measured.notna().all() and (one.trials == 3).all()
    assert list(one.measured) == sorted(one.measured)
    assert (one.low <= one.measured).all() and (one.measured <= one.high).all()
    zero = one.set_index("mechanism").loc["zero"]
    assert zero.measured == pytest.approx(np.linalg.norm(simulation.synthetic_problem(3000, 12, 1.0, 0.5, 1.0).sigma))
    assert simulation.simulate(3000, 12, ZCDP(0.5), trace=0.5, decay=1.0, trials=3, n_jobs=1, norms="equal",
                               mechanisms=["zero"]).measured.iloc[0] != zero.measured  # another problem


def test_measured_advice_keeps_the_theory_column_and_takes_plugins(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "docs" / "examples"))
    frame = advise.measured_advice(4000, 10, ZCDP(0.1), trace=1.0, mechanisms=["gauss", "separate", "emcov",
                                                                                 "my_mechanisms:shrunk_gauss"],
                                   trials=3, n_jobs=1)
    rows = frame.set_index("mechanism")
    assert rows.loc["gauss", "kind"] == "exact" and rows.loc["separate", "kind"] == "bound"
    assert rows.loc["my_mechanisms:shrunk_gauss", "kind"] == "declared"
    assert frame.measured.notna().all()
    text = advise.render_measured(frame)
    assert "ShrunkGaussCov" in text and "—" not in text.split("\n")[2]


def test_the_command_line_measures_by_default():
    done = advise_cli("--n", "2000", "--d", "8", "--rho", "0.5", "--trials", "2", "--mechanisms", "gauss,zero")
    assert "measured mean error [95 % interval]" in done and "| 1 |" in done and "| 2 |" in done


def advise_cli(*argv) -> str:
    import subprocess

    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "advise.py"), *argv], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_agreement_report_counts_first_choices():
    frame = pd.DataFrame({"target": ["a", "a", "b"], "best": ["x", "y", "x"], "advisor": ["x", "x", "x"],
                          "advisor_regret": [1.0, 1.05, 1.0], "theory": ["y", "y", None],
                          "theory_regret": [1.3, 1.0, np.nan]})
    text = advise.agreement_report(frame)
    assert "| first choice = measured best | 67% | 33% |" in text
    assert "| regret <= 1.1 | 100% | 33% |" in text


def test_the_time_budget_sets_the_trials():
    """A pilot times each mechanism; the rest of --seconds sets its trials, between 3 and 30."""
    tight = simulation.simulate(2000, 10, ZCDP(0.5), mechanisms=["gauss", "zero"], seconds=1e-6, n_jobs=1)
    assert list(tight.trials) == [simulation.MIN_TRIALS] * 2
    loose = simulation.simulate(2000, 10, ZCDP(0.5), mechanisms=["gauss", "zero"], seconds=60, n_jobs=1)
    assert list(loose.trials) == [simulation.MAX_TRIALS] * 2  # cheap releases: the cap, long before 60 s


def test_a_mechanism_that_cannot_run_says_why_instead_of_a_blank_row():
    frame = advise.measured_advice(2000, 6, ZCDP(0.5), mechanisms=["gauss", "clip_gauss"], trials=2, n_jobs=1)
    failed = frame.set_index("mechanism").loc["clip_gauss"]
    assert failed.trials == 0 and "needs option(s) ['tau']" in failed.failed
    assert "failed: ValueError: mechanism 'clip_gauss' needs option(s)" in advise.render_measured(frame)
