"""executor=dask: the same experiment on a Dask cluster gives identical results for the same seed."""
import os

import numpy as np
import pandas as pd
import pytest

from dpcov.data.chunks import BATCH_MONITORING, _worker_threads, dask_sums, local_cluster
from dpcov.experiments.config import ConfigError
from dpcov.experiments.runner import run_experiment
from dpcov.mechanisms.problem import CovProblem, clip_rows

distributed = pytest.importorskip("distributed", reason="executor=dask needs pip install -e '.[dask]'")


@pytest.fixture(scope="module")
def cluster():
    """One LocalCluster of two single-threaded worker processes, shared by the tests that connect to a
    cluster of their own making (starting one costs each worker's imports). The tests of the project's
    own local_cluster start theirs (its HTTP server then finds Dask's port 8787 free: this one takes any)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as shared:
        yield shared


def test_dask_cluster_matches_local_processes(experiment, cluster):
    local = pd.read_csv(run_experiment(experiment("synthetic_trace", "n_jobs=1", output="local")).results)
    exp = experiment("synthetic_trace", "executor=dask", f"dask_scheduler={cluster.scheduler_address}",
                     output="dask")
    remote = pd.read_csv(run_experiment(exp).results)
    key = ["mechanism", "trial", "N"]
    local, remote = local.sort_values(key).reset_index(drop=True), remote.sort_values(key).reset_index(drop=True)
    assert len(remote) == len(local) > 0
    pd.testing.assert_frame_equal(local[key + ["err_fro"]], remote[key + ["err_fro"]], check_exact=True)


def test_executor_dask_without_an_address_runs_on_the_projects_local_cluster(experiment):
    """executor=dask with no scheduler address: a local_cluster of n_jobs workers, the same numbers."""
    local = pd.read_csv(run_experiment(experiment("synthetic_trace", output="local")).results)
    remote = pd.read_csv(run_experiment(experiment("synthetic_trace", "executor=dask", "n_jobs=2",
                                                   output="dask")).results)
    key = ["mechanism", "trial", "N"]
    local, remote = local.sort_values(key).reset_index(drop=True), remote.sort_values(key).reset_index(drop=True)
    assert len(remote) == len(local) > 0
    pd.testing.assert_frame_equal(local[key + ["err_fro"]], remote[key + ["err_fro"]], check_exact=True)


def test_local_cluster_relaxes_the_workers_monitoring_and_leaves_the_callers_config():
    import dask

    before = {key: dask.config.get(key) for key in BATCH_MONITORING}
    assert before != BATCH_MONITORING  # Dask's defaults differ, so the check below can fail
    with local_cluster(2) as cluster, distributed.Client(cluster) as client:
        assert client.nthreads() and set(client.nthreads().values()) == {1} and len(client.nthreads()) == 2
        for key, value in BATCH_MONITORING.items():
            assert set(client.run(dask.config.get, key).values()) == {value}, key
        assert set(client.run(os.environ.get, "OMP_NUM_THREADS").values()) == {"1"}  # BLAS at one thread each
        assert {key: dask.config.get(key) for key in BATCH_MONITORING} == before


def test_the_documented_dask_config_is_batch_monitoring():
    """docs/scaling.md's YAML for a real cluster's machines says what local_cluster sets."""
    import re
    from pathlib import Path

    import yaml

    page = (Path(__file__).resolve().parents[1] / "docs" / "scaling.md").read_text()
    (block,) = [b for b in re.findall(r"^```yaml\n(.*?)^```", page, re.M | re.S) if "profile" in b]

    def flat(tree, prefix=""):
        for key, value in tree.items():
            yield from flat(value, f"{prefix}{key}.") if isinstance(value, dict) else [(prefix + key, value)]

    assert dict(flat(yaml.safe_load(block))) == BATCH_MONITORING


def test_executor_config_is_validated(experiment):
    with pytest.raises(ConfigError, match="executor must be one of"):
        experiment("synthetic_trace", "executor=spark")
    with pytest.raises(ConfigError, match="only used with executor=dask"):
        experiment("synthetic_trace", "dask_scheduler=tcp://x:8786")


def assert_same_statistics(streamed: CovProblem, expected: CovProblem) -> None:
    assert streamed.n == expected.n and np.array_equal(streamed.band_counts, expected.band_counts)
    assert np.array_equal(streamed.band_exponents, expected.band_exponents)
    for name in ("sigma", "eigenvalues", "band_moments", "band_directions"):
        a, b = getattr(streamed, name), getattr(expected, name)
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max(), name


def test_dask_workers_compute_the_statistics_of_one_process(tmp_path, cluster):
    """Dask arrays and dataframes on a LocalCluster: one BandSums per partition on the workers, merged
    in a tree, equal to the in-memory CovProblem (n exact, sums to 1e-12); clip=True clips per partition."""
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    X = np.random.default_rng(5).standard_normal((20011, 6)) * [1.0, 0.5, 0.3, 0.2, 0.1, 0.05] / 3
    inside = clip_rows(X, 1.0)[0]
    with distributed.Client(cluster):
        array = da.from_array(inside, chunks=(2900, 3))  # column chunks too: rows are made whole
        assert_same_statistics(dask_sums(array, 1.0).problem(), CovProblem.from_rows(inside))
        frame = dd.from_pandas(pd.DataFrame(X, columns=list("abcdef")), npartitions=7)
        assert_same_statistics(dask_sums(frame, 1.0, clip=True).problem(), CovProblem.from_rows(inside))
        chosen = dask_sums(frame, 1.0, columns=["a", "c"], clip=True).problem()
        assert_same_statistics(chosen, CovProblem.from_rows(clip_rows(X[:, [0, 2]], 1.0)[0]))
        with pytest.raises(ValueError, match="norm .* > radius 1.*within their partition"):
            dask_sums(frame, 1.0)
        np.save(path := tmp_path / "rows.npy", X)  # a file every worker reads its share of
        assert_same_statistics(dask_sums(path, 1.0, clip=True, shares=3).problem(), CovProblem.from_rows(inside))
        pd.DataFrame(X, columns=list("abcdef")).to_parquet(path := tmp_path / "rows.parquet", row_group_size=3000)
        assert_same_statistics(dask_sums(path, 1.0, clip=True).problem(), CovProblem.from_rows(inside))
        assert _worker_threads() == 2  # the default: a share per worker thread, 2 of the file's 7 row groups


def test_estimators_fit_dask_collections_on_a_cluster(cluster):
    """PrivateCovariance, PrivatePCA and PrivateRidge fit Dask arrays and dataframes: every step (the norms'
    histogram, the clipped sum, the band sums) runs on the workers; the release equals fit(array)'s with
    the same seed, to rounding."""
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    import dpcov
    rng = np.random.default_rng(9)
    X = rng.standard_normal((9000, 4)) * [1.0, 0.6, 0.3, 0.1]
    y = X @ [0.5, -0.2, 0.1, 0.0] + 0.05 * rng.standard_normal(9000)
    fits = [(dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.ZCDP(1.0), radius="private",
                                     centering="private", random_state=1), "covariance_"),
            (dpcov.PrivatePCA(2, budget=dpcov.PureDP(4.0), radius=3.0, clip=True, centering="private",
                              random_state=1), "components_")]
    with distributed.Client(cluster):
        for estimator, attribute in fits:
            memory = estimator.fit(X)
            expected = getattr(memory, attribute).copy()
            for collection in (da.from_array(X, chunks=(1000, 4)),
                               dd.from_pandas(pd.DataFrame(X, columns=list("abcd")), npartitions=5)):
                remote = estimator.fit(collection)
                assert remote.ledger_ == memory.ledger_ and remote.n_features_in_ == 4
                assert np.allclose(getattr(remote, attribute), expected, rtol=1e-9, atol=1e-12)
        ridge = dpcov.PrivateRidge(alpha=1.0, budget=dpcov.ZCDP(1.0), radius=4.0, clip=True,
                                   centering="private", random_state=2)
        coef = ridge.fit(X, y).coef_.copy()
        remote = ridge.fit(da.from_array(X, chunks=(1500, 4)), da.from_array(y, chunks=1500))
        assert np.allclose(remote.coef_, coef, rtol=1e-9, atol=1e-12) and remote.n_features_in_ == 4


def test_empty_partitions_add_nothing():
    """A filtered dataframe's empty partitions (Dask's local scheduler) add no rows and no error."""
    import dask
    import dask.dataframe as dd

    rows = np.random.default_rng(1).uniform(-0.3, 0.3, size=(100, 3))
    frame = dd.from_pandas(pd.DataFrame(rows, columns=list("abc")), npartitions=4)
    kept = frame.map_partitions(lambda part: part[part.index >= 50])  # the first two partitions: empty
    with dask.config.set(scheduler="synchronous"):
        assert_same_statistics(dask_sums(kept, 1.0, clip=True).problem(), CovProblem.from_rows(rows[50:]))


def test_an_estimators_refused_row_in_a_dask_collection_is_counted_not_named():
    """A NaN in a Dask array's second partition: the fit's error counts the rows over every partition and names
    none (an error from the data is an output: issue 58)."""
    da = pytest.importorskip("dask.array")
    import dpcov
    X = np.random.default_rng(3).standard_normal((400, 3)) * 0.1
    X[250, 1] = X[10, 0] = np.nan
    estimator = dpcov.PrivateCovariance(mechanism="gauss", budget=dpcov.ZCDP(1.0), radius=1.0,
                                        centering="private", random_state=0)
    with pytest.raises(ValueError, match=r"NaN or inf: drop or impute those rows") as refused:
        estimator.fit(da.from_array(X, chunks=(200, 3)))
    assert "250" not in str(refused.value) and "partition" not in str(refused.value)
