"""A sweep under privacy_unit=add_remove (issue 54): every trial releases through
release(..., privacy_unit="add_remove") on a problem that holds its rows; the unit is recorded and is part of
a run's identity; replace_one (the default) writes what it always wrote."""
import json

import pandas as pd
import pytest

from dpcov.experiments.config import ConfigError
from dpcov.experiments.instances import build_instance
from dpcov.experiments.runner import line_spec, run_columns, run_experiment

LINES = "mechanisms=[gauss,separate,zero]"
COLS = ["mechanism", "trial", "N", "err_fro"]


def sorted_errors(path):
    frame = pd.read_csv(path)
    return frame[COLS].sort_values(COLS[:3]).reset_index(drop=True)


def test_add_remove_sweep_records_its_unit_differs_and_is_reproducible_for_any_n_jobs(experiment):
    one = run_experiment(experiment("synthetic_trace", "trials=3", LINES, "privacy_unit=add_remove",
                                    output="a"))
    two = run_experiment(experiment("synthetic_trace", "trials=3", LINES, "privacy_unit=add_remove",
                                    "n_jobs=2", output="b"))
    base = run_experiment(experiment("synthetic_trace", "trials=3", LINES, output="c"))
    results = pd.read_csv(one.results)
    assert set(results.privacy_unit) == {"add_remove"} and len(results) == 2 * 3 * 3
    assert all(label.endswith(" (add/remove)") for label in results.label)
    assert all(json.loads(spec)["privacy_unit"] == "add_remove" and json.loads(spec)["count_share"] == 0.02
               for spec in results.line)
    assert set(results.spent) == {"0.1-zCDP"}  # the count's share and the mechanism's: the whole budget
    summary = pd.read_csv(one.summary)
    assert set(summary.privacy_unit) == {"add_remove"}
    pd.testing.assert_frame_equal(sorted_errors(one.results), sorted_errors(two.results))
    # replace_one: no unit column, the line specs as before; the zero matrix's error is the same, the others not
    replace = pd.read_csv(base.results)
    assert "privacy_unit" not in replace and "privacy_unit" not in pd.read_csv(base.summary)
    assert set(replace.line) == {'{"budget":{},"mechanism":"gauss","options":{}}',
                                 '{"budget":{},"mechanism":"separate","options":{}}',
                                 '{"budget":{},"mechanism":"zero","options":{}}'}
    a, r = sorted_errors(one.results), sorted_errors(base.results)
    noisy = a.mechanism != "zero"
    assert (a.err_fro[noisy] != r.err_fro[noisy]).all()
    assert (a.err_fro[~noisy] == r.err_fro[~noisy]).all()


def test_a_sweep_does_not_mix_units_on_resume(experiment):
    run_experiment(experiment("synthetic_trace", "trials=1", "mechanisms=[gauss]", output="same"))
    for overrides in (["privacy_unit=add_remove"], ["+variants.gauss={mechanism:gauss,privacy_unit:add_remove}"]):
        with pytest.raises(ValueError, match="different configuration"):
            run_experiment(experiment("synthetic_trace", "trials=1", "mechanisms=[gauss]", *overrides, output="same"))
    run_experiment(experiment("synthetic_trace", "trials=1", "mechanisms=[gauss]", "privacy_unit=add_remove",
                              output="ar"))
    with pytest.raises(ValueError, match="different configuration.*count_share"):
        run_experiment(experiment("synthetic_trace", "trials=1", "mechanisms=[gauss]", "privacy_unit=add_remove",
                                  "count_share=0.1", output="ar"))


def test_both_units_in_one_figure_through_a_variant(experiment):
    """A variant may set its own unit: the two lines of one mechanism side by side, the column telling them apart."""
    exp = experiment("synthetic_trace", "trials=2", "mechanisms=[gauss,gauss_ar]",
                     "+variants.gauss_ar={mechanism:gauss,privacy_unit:add_remove}", "count_share=0.05")
    assert exp.line("gauss_ar").label == "GaussCov (add/remove)" and "privacy_unit" in run_columns(exp)
    assert json.loads(line_spec(exp, "gauss_ar"))["count_share"] == 0.05 and "privacy_unit" not in line_spec(exp, "gauss")
    summary = pd.read_csv(run_experiment(exp).summary)
    assert dict(zip(summary.mechanism, summary.privacy_unit)) == {"gauss": "replace_one", "gauss_ar": "add_remove"}


@pytest.mark.parametrize("overrides, message", [
    (["privacy_unit=add_remov"], "privacy_unit must be one of .*'add_remove'.*got 'add_remov'"),
    (["privacy_unit=[add_remove]"], "privacy_unit must be one of"),
    (["+variants.x={mechanism:gauss,privacy_unit:both}", "mechanisms=[x]"], "variants.x.privacy_unit must be one of"),
    (["count_share=0.1"], "count_share=0.1 is the count's share .* every line here is replace_one"),
    (["privacy_unit=add_remove", "count_share=1"], r"count_share must lie in \(0, 1\)"),
    (["privacy_unit=add_remove", "count_share=true"], r"count_share must lie in \(0, 1\)"),
])
def test_bad_units_are_refused(experiment, overrides, message):
    with pytest.raises(ConfigError, match=message):
        experiment("synthetic_trace", *overrides)


def test_a_dataset_without_bounded_rows_is_refused_under_add_remove(experiment):
    exp = experiment("stable_mahalanobis", "privacy_unit=add_remove")
    with pytest.raises(ValueError, match="add_remove needs the dataset's rows.*raw rows outside the norm ball"):
        build_instance(exp, exp.grid()[0], 0)
