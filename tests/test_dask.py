"""executor=dask: the same experiment on a Dask cluster gives identical results for the same seed."""
import pandas as pd
import pytest

from experiments.config import ConfigError
from experiments.runner import run_experiment

distributed = pytest.importorskip("distributed", reason="executor=dask needs pip install -e '.[dask]'")


def test_dask_cluster_matches_local_processes(experiment):
    local = pd.read_csv(run_experiment(experiment("synthetic_trace", "n_jobs=1", output="local")).results)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        exp = experiment("synthetic_trace", "executor=dask", f"dask_scheduler={cluster.scheduler_address}",
                         output="dask")
        remote = pd.read_csv(run_experiment(exp).results)
    key = ["mechanism", "trial", "N"]
    local, remote = local.sort_values(key).reset_index(drop=True), remote.sort_values(key).reset_index(drop=True)
    assert len(remote) == len(local) > 0
    pd.testing.assert_frame_equal(local[key + ["err_fro"]], remote[key + ["err_fro"]], check_exact=True)


def test_executor_config_is_validated(experiment):
    with pytest.raises(ConfigError, match="executor must be one of"):
        experiment("synthetic_trace", "executor=spark")
    with pytest.raises(ConfigError, match="only used with executor=dask"):
        experiment("synthetic_trace", "dask_scheduler=tcp://x:8786")
