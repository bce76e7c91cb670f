import pytest

from dpcov.experiments.config import compose_experiment


@pytest.fixture
def experiment(tmp_path):
    """compose("synthetic_trace", "trials=2", ...) -> Experiment writing under tmp_path."""
    def compose(name, *overrides, output="out"):
        return compose_experiment([f"experiment={name}", "scale=smoke", "n_jobs=1",
                                   f"output_dir={tmp_path / output}", *overrides])
    return compose
