import compileall
import sys
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("dpcov", "mechanisms", "data", "experiments", "figures", "audits")

# pytest keeps the test modules it rewrites for its assertion messages (tests/__pycache__, git-ignored) unless
# bytecode writing is off: with PYTHONDONTWRITEBYTECODE set, as on the project's machines, every xdist worker
# rewrote all of them again on every run (3 s of its collection). A clean clone's first run still does.
sys.dont_write_bytecode = False


def pytest_configure(config):
    """Byte-compile the project once, in the controlling process (before pytest-xdist starts its
    workers): about 40 commands (run.py, dpcov ..., the docs' examples) and the joblib workers that tests
    start each import some 50 of its modules, and with PYTHONDONTWRITEBYTECODE set (as on the project's
    machines) each would compile them again (0.1-0.3 s of CPU a process). The .pyc files go where Python
    puts them itself (__pycache__/, git-ignored); a stale one is never used (Python checks the source's
    time stamp and size), and an up-to-date tree costs one stat a file."""
    if not hasattr(config, "workerinput"):  # the controller (or -n 0), not each xdist worker
        for package in PACKAGES:
            compileall.compile_dir(ROOT / package, quiet=1)


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
    from dpcov.experiments.config import compose_experiment  # here: the xdist controller starts without it

    def compose(name, *overrides, output="out"):
        return compose_experiment([f"experiment={name}", "scale=smoke", "n_jobs=1",
                                   f"output_dir={tmp_path / output}", *overrides])
    return compose


# Modules whose tests start commands, worker processes or clusters (several seconds each): run first, so
# that the two xdist workers end on short tests instead of one waiting for the other's last long one.
LONG_FIRST = ("test_hostile_harness.py", "test_reproduce.py", "test_plugins.py", "test_head_to_head.py",
              "test_real_data.py", "test_docs.py", "test_dask.py", "test_experiments.py", "test_advise.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_FIRST)))  # stable: file order otherwise
