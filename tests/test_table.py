"""Dataset ``table`` (data/table.py): a user's CSV/TSV/Parquet/.npy file as rows in a ball."""
import os

import numpy as np
import pandas as pd
import pytest

from dpcov.data.files import DataFileError
from dpcov.data.registry import get_dataset
from dpcov.data.table import bounded, standardized, table, table_blocks, table_data
from dpcov.experiments.runner import run_experiment
from dpcov.mechanisms.problem import CovProblem, clip_rows


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.standard_normal((300, 3)) * [1.0, 2.0, 0.5] + [0, 1, 0], columns=["a", "b", "c"])
    df["city"] = "Paris"
    return df


@pytest.fixture
def csv(tmp_path, frame):
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    return path


def load(path, columns=None, standardize="none", bound=1.0, **kw):
    return table(str(path), columns, standardize, bound, rng=np.random.default_rng(0), **kw)


def rows(path, columns=None, standardize="none", bound=1.0, block_bytes=1 << 20):
    """The rows the mechanisms see (the dataset sums them a block at a time), all in memory."""
    _, shares, as_seen = table_blocks(path, columns, standardize, bound, block_bytes)
    seen = [as_seen(X) for share in shares for X in share]
    return np.concatenate([clip_rows(np.column_stack(columns), clip)[0] / divisor for columns, clip, divisor in seen])


def test_declared_bound_clips_rows_and_records_the_fraction(csv, frame):
    data = load(csv, ["a", "b", "c"], bound=2.0)
    raw = frame[["a", "b", "c"]].to_numpy()
    norms = np.linalg.norm(raw, axis=1)
    assert data.radius == 2.0 and data.info["clipped_fraction"] == pytest.approx(np.mean(norms > 2))
    assert 0 < data.info["clipped_fraction"] < 1 and data.info["private_preprocessing"] is True
    inside, X = norms <= 2, rows(csv, ["a", "b", "c"], bound=2.0)
    assert np.array_equal(X[inside], raw[inside])  # rows inside the ball are untouched
    assert np.allclose(np.linalg.norm(X[~inside], axis=1), 2.0)  # the others land on the sphere
    assert np.allclose(X[~inside] / np.linalg.norm(X[~inside], axis=1)[:, None],
                       raw[~inside] / norms[~inside, None])  # same directions
    assert data.info["columns"] == "a,b,c" and data.info["max_norm"] == pytest.approx(norms.max())


def test_bound_max_divides_by_the_largest_norm(csv, frame):
    data = load(csv, ["a", "c"], bound="max")
    raw = frame[["a", "c"]].to_numpy()
    assert data.radius == 1.0 and np.allclose(rows(csv, ["a", "c"], bound="max"), raw / np.linalg.norm(raw, axis=1).max())
    assert data.info["clipped_fraction"] == 0 and data.info["private_preprocessing"] is False


@pytest.mark.parametrize("how", ["center", "zscore", "minmax"])
def test_standardisation(csv, frame, how):
    X = rows(csv, ["a", "b"], standardize=how, bound=100.0, block_bytes=8 * 2 * 70)  # blocks of 70 rows
    raw = frame[["a", "b"]].to_numpy()
    if how == "minmax":
        assert np.allclose(X.min(axis=0), 0) and np.allclose(X.max(axis=0), 1)
    else:
        assert np.allclose(X.mean(axis=0), 0, atol=1e-12)
        scale = raw.std(axis=0) if how == "zscore" else 1
        assert np.allclose(X, (raw - raw.mean(axis=0)) / scale)


def test_all_formats_give_the_same_rows(tmp_path, frame):
    numeric = frame[["a", "b", "c"]]
    numeric.to_csv(tmp_path / "t.tsv", sep="\t", index=False)
    np.save(tmp_path / "t.npy", numeric.to_numpy())
    expected = rows(tmp_path / "t.tsv", bound="max")
    assert np.array_equal(rows(tmp_path / "t.npy", bound="max"), expected)
    assert np.array_equal(rows(tmp_path / "t.npy", [0, 2], bound="max"), rows(tmp_path / "t.tsv", ["a", "c"], bound="max"))
    pytest.importorskip("pyarrow", reason="Parquet needs pyarrow")
    numeric.to_parquet(tmp_path / "t.parquet")
    assert np.array_equal(rows(tmp_path / "t.parquet", bound="max"), expected)


def test_relative_path_is_found_in_the_data_directory(tmp_path, frame, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "store").mkdir()
    frame[["a"]].to_csv(tmp_path / "store" / "x.csv", index=False)
    assert load("x.csv", data_dir=tmp_path / "store").statistics.problem().n == 300


@pytest.mark.parametrize("columns, kwargs, message", [
    (["a", "zz"], {}, r"no column\(s\) \['zz'\]; the file has \['a', 'b', 'c', 'city'\]"),
    (["a", "a"], {}, "repeated columns"),
    ([], {}, "columns is empty"),
    (None, {}, "column 'city' is not numeric \\(row 0: 'Paris'\\)"),
    (["a"], {"bound": 0}, "bound must be a number > 0"),
    (["a"], {"bound": "largest"}, "bound must be a number > 0"),
    (["a"], {"bound": None}, "set the norm bound"),
    (["a"], {"standardize": "scale"}, "standardize must be one of"),
])
def test_bad_choices_are_refused(csv, columns, kwargs, message):
    with pytest.raises(ValueError, match=message):
        load(csv, columns, **kwargs)


def test_bad_files_are_refused(tmp_path):
    with pytest.raises(DataFileError, match="table file 'nowhere.csv' not found. Looked in"):
        load("nowhere.csv", data_dir=tmp_path)
    (tmp_path / "t.xlsx").write_text("a\n1\n")
    with pytest.raises(ValueError, match="unsupported format '.xlsx'"):
        load(tmp_path / "t.xlsx")
    (tmp_path / "nan.csv").write_text("a,b\n1,2\n3,\n4,inf\n")
    with pytest.raises(ValueError, match=r"2 row\(s\) hold NaN, inf or an empty cell \(first: row 1, column 'b'\)"):
        load(tmp_path / "nan.csv")
    (tmp_path / "empty.csv").write_text("a,b\n")
    with pytest.raises(ValueError, match="no rows"):
        load(tmp_path / "empty.csv")
    for suffix in (".npy", ".parquet"):
        with pytest.raises(ValueError, match="no rows"):
            load(write(tmp_path / f"empty{suffix}", np.zeros((0, 2))))
    (tmp_path / "mixed.csv").write_text("a\n1\n2\nthree\n")
    with pytest.raises(ValueError, match="column 'a' is not numeric \\(row 2: 'three'\\)"):
        load(tmp_path / "mixed.csv")
    np.save(tmp_path / "flat.npy", np.arange(4.0))
    with pytest.raises(ValueError, match=r"needs a 2-D array"):
        load(tmp_path / "flat.npy")
    np.save(tmp_path / "m.npy", np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"indices 0..1, got \[2\]"):
        load(tmp_path / "m.npy", [0, 2])
    (tmp_path / "zero.csv").write_text("a\n0\n0\n")
    with pytest.raises(ValueError, match="every row is zero"):
        load(tmp_path / "zero.csv", bound="max")


def test_registered_and_runs_an_experiment_with_resume(experiment, csv):
    assert get_dataset("table").param_names() == ["path", "columns", "standardize", "bound"]
    exp = experiment("table_rho", f"params.path={csv}", "params.columns=[a,b]", "params.bound=3",
                     "mechanisms=[gauss,zero]")
    out = run_experiment(exp)
    rows = pd.read_csv(out.results)
    assert len(rows) == 2 * 2 * 2 and set(rows.data_columns) == {"a,b"}
    assert rows.data_file_sha256.nunique() == 1 and (rows.data_clipped_fraction > 0).all()
    assert run_experiment(exp).new_rows == 0  # list-valued params resume too


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".npy", ".parquet"])
def test_columns_null_summarises_and_resumes_on_every_format(experiment, tmp_path, suffix):
    """columns=null (every column) is a value of the grid: results.csv reads it back as an empty cell, which
    must still match the grid (the summary was empty, and the figure failed: "No columns to parse")."""
    values = np.random.default_rng(1).standard_normal((400, 3))
    path = tmp_path / f"every{suffix}"
    if suffix == ".npy":
        np.save(path, values)
    else:
        frame = pd.DataFrame(values, columns=["a", "b", "c"])
        frame.to_parquet(path) if suffix == ".parquet" else frame.to_csv(path, sep="\t" if suffix == ".tsv" else ",",
                                                                         index=False)
    exp = experiment("table_rho", f"params.path={path}", "params.columns=null", "params.bound=8",
                     "mechanisms=[gauss,zero]")
    out = run_experiment(exp)
    summary = pd.read_csv(out.summary)
    assert len(summary) == 2 * 2 and summary.columns.str.startswith("err_fro").any()
    assert run_experiment(exp).new_rows == 0


def test_other_experiments_run_on_a_table_once_their_data_parameters_are_dropped(experiment, csv):
    exp = experiment("synthetic_rho", "dataset=table", "~params.n", "~params.d", "~params.N", "~params.s",
                     f"params.path={csv}", "params.columns=[a,b,c]", "params.standardize=none",
                     "params.bound=max", "mechanisms=[gauss,separate]")
    rows = pd.read_csv(run_experiment(exp).results)
    assert set(rows.dataset) == {"table"} and len(rows) == 2 * 2 * 2


def write(path, values: np.ndarray, names=None):
    names = names or [f"x{i}" for i in range(values.shape[1])]
    if path.suffix == ".npy":
        np.save(path, values)
    elif path.suffix == ".parquet":
        pd.DataFrame(values, columns=names).to_parquet(path, row_group_size=997)
    else:
        pd.DataFrame(values, columns=names).to_csv(path, sep="\t" if path.suffix == ".tsv" else ",", index=False)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".npy", ".parquet"])
@pytest.mark.parametrize("standardize, bound", [("none", 3.0), ("none", "max"), ("zscore", 2.0), ("minmax", "max"),
                                                ("center", 1.5)])
def test_streamed_statistics_equal_the_in_memory_build(tmp_path, suffix, standardize, bound):
    """A table read in blocks of 333 rows gives the CovProblem of the whole table in memory: n and the
    band counts exactly, Sigma, its eigenvalues and the band sums to 1e-12 relative."""
    if suffix == ".parquet":
        pytest.importorskip("pyarrow", reason="Parquet needs pyarrow")
    raw = np.random.default_rng(2).standard_normal((5000, 4)) * [2.0, 1.0, 0.5, 0.1] + [1, 0, 0, 3]
    path = write(tmp_path / f"t{suffix}", raw)
    X, radius, _ = bounded(standardized(raw, standardize), bound)
    expected = CovProblem.from_rows(X, radius=radius)
    data = table_data(path, None, standardize, bound, block_bytes=8 * 4 * 333)
    streamed = data.statistics.problem()
    assert streamed.n == expected.n and streamed.radius == expected.radius
    assert np.array_equal(streamed.band_exponents, expected.band_exponents)
    assert np.array_equal(streamed.band_counts, expected.band_counts)
    for name in ("sigma", "eigenvalues", "band_moments", "band_directions"):
        a, b = getattr(streamed, name), getattr(expected, name)
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max(), name
    norms = np.linalg.norm(standardized(raw, standardize), axis=1)
    assert data.info["max_norm"] == pytest.approx(norms.max(), rel=1e-12)
    assert data.info["clipped_fraction"] == (0 if bound == "max" else np.mean(norms > bound))


@pytest.mark.parametrize("suffix", [".csv", ".npy", ".parquet"])
def test_bad_cells_are_numbered_in_the_whole_table_across_blocks(tmp_path, suffix):
    """Also when the summing thread of the table's second share (Parquet row groups, .npy rows) meets them."""
    values = np.random.default_rng(3).standard_normal((2000, 2))
    values[1500, 1], values[1950, 0] = np.nan, np.inf  # inf too: a clipped inf row would sum to NaN
    with pytest.raises(ValueError, match=r"2 row\(s\) hold NaN.*first: row 1500, column '(x1|1)'"):
        table_data(write(tmp_path / f"nan{suffix}", values), None, "none", 5.0, block_bytes=8 * 2 * 128)
    values[1500, 1], values[1950, 0] = 1e200, 0.0  # finite, but its square is not: numbered in the whole table
    with pytest.raises(ValueError, match=r"row 1500 has entries up to 1e\+200, whose squares exceed float64"):
        table_data(write(tmp_path / f"big{suffix}", values), None, "none", 5.0, block_bytes=8 * 2 * 128)


def test_non_numeric_cells_are_numbered_in_the_whole_table(tmp_path):
    (tmp_path / "mixed.csv").write_text("a\n" + "1\n" * 600 + "three\n")
    with pytest.raises(ValueError, match=r"column 'a' is not numeric \(row 600: 'three'\)"):
        table_data(tmp_path / "mixed.csv", None, "none", 5.0, block_bytes=8 * 100)


def test_a_streamed_table_holds_one_block_in_memory(tmp_path):
    """Peak Python/numpy allocations while summing a memory-mapped .npy of 48 MB in 1 MB blocks stay under 20
    blocks (each of the two summing threads' block, its copy and its reused work arrays: 13.6-16.6 MB measured,
    by how many blocks are in flight at once), not the file (tracemalloc sees numpy's allocations; the mapped
    file is not one)."""
    import tracemalloc
    path = tmp_path / "big.npy"
    np.save(path, np.random.default_rng(4).uniform(-0.2, 0.2, size=(300_000, 20)))
    table_data(write(tmp_path / "warm.npy", np.zeros((10, 20))), None, "none", 1.0)  # the compiled passes load once
    tracemalloc.start()
    try:
        data = table_data(path, None, "none", 1.0, block_bytes=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert data.statistics.n == 300_000
    assert peak < 20 << 20, f"peak {peak / 2**20:.1f} MB for a 48 MB file in 1 MB blocks"


def test_csv_and_npy_tables_need_no_pyarrow(tmp_path, frame, monkeypatch):
    """pyarrow is the Parquet extra only: a CSV or .npy table streams without it (a fresh install)."""
    import sys
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now fails
    numeric = frame[["a", "b"]]
    numeric.to_csv(tmp_path / "t.csv", index=False)
    np.save(tmp_path / "t.npy", numeric.to_numpy())
    assert load(tmp_path / "t.csv", bound=3.0).statistics.n == load(tmp_path / "t.npy", bound=3.0).statistics.n == 300


def test_the_file_digest_is_read_once_until_the_file_changes(tmp_path, monkeypatch):
    from dpcov.data import files

    monkeypatch.setenv("DPCOV_CACHE", str(tmp_path / "cache"))
    table_file = tmp_path / "t.csv"
    table_file.write_text("a,b\n1,2\n")
    real, calls = files.sha256sum, []
    monkeypatch.setattr(files, "sha256sum", lambda path: calls.append(path) or real(path))
    first = files.file_digest(table_file)
    assert files.file_digest(table_file) == first == real(table_file) and len(calls) == 1  # the second: cached
    table_file.write_text("a,b\n1,3\n")  # same size, new content
    stat = table_file.stat()
    os.utime(table_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # (a clock that did not tick)
    assert files.file_digest(table_file) == real(table_file) != first and len(calls) == 2
    (tmp_path / "not_a_directory").write_text("")
    monkeypatch.setenv("DPCOV_CACHE", str(tmp_path / "not_a_directory"))  # an unusable cache only costs time
    assert files.file_digest(table_file) == real(table_file) and len(calls) == 3


def test_a_names_only_call_leaves_no_file_open(tmp_path):
    """file_blocks opens a CSV reader only when its blocks are read: a call for the column names alone (Rows, the
    estimators) leaves no file open (it left pandas' reader open: a ResourceWarning when collected)."""
    import gc
    import warnings
    from dpcov.data.table import file_blocks
    path = tmp_path / "t.csv"
    pd.DataFrame(np.zeros((5, 2)), columns=["a", "b"]).to_csv(path, index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        names, blocks = file_blocks(path, None)
        del blocks
        gc.collect()
    assert names == ["a", "b"] and not [w for w in caught if issubclass(w.category, ResourceWarning)]
