import pytest
from threadpoolctl import threadpool_limits

from dpcov.experiments.config import compose_experiment


@pytest.fixture(autouse=True, scope="session")
def one_blas_thread():
    """The suite runs in two pytest-xdist workers on two cores (pyproject's addopts), each beside the
    subprocesses and joblib workers that tests start: a second BLAS thread in a test's process only
    spins against them (a 300 x 300 eigh took 15x longer on a loaded machine). Only this process is
    limited (threadpoolctl, not OMP_NUM_THREADS): the commands and workers that tests start keep the
    environment they would have, and a test about BLAS threads raises the limit itself."""
    with threadpool_limits(limits=1):
        yield


@pytest.fixture
def experiment(tmp_path):
    """compose("synthetic_trace", "trials=2", ...) -> Experiment writing under tmp_path."""
    def compose(name, *overrides, output="out"):
        return compose_experiment([f"experiment={name}", "scale=smoke", "n_jobs=1",
                                   f"output_dir={tmp_path / output}", *overrides])
    return compose
