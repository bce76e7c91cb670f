"""The streamed statistics on a table larger than memory (issue 39): a generated Parquet file of
--rows x 20 columns, read by

  floor    pyarrow's own read of every record batch, the data discarded (the speed limit);
  stream   dataset=table's path (data/table.py table_data: blocks, clipping to the declared bound, sums);
  dask     data/chunks.py dask_sums on the file's path, on a distributed.LocalCluster of 2 single-threaded
           worker processes (data/chunks.py local_cluster, as executor=dask makes it: Dask's monitoring
           relaxed): each worker reads its share of the row groups straight into numpy (the clock starts
           once the cluster is up and its workers started up as one process does);
  dask_defaults  the same on a LocalCluster with Dask's default monitoring;
  dask_frame  the same as dask on dask.dataframe.read_parquet's partitions (pandas in between);

each in a fresh process (its peak resident memory from getrusage; the clock starts after the process's one-time
start-up, ``start_up``: imports, numba's, which are timed and printed apart), and the streamed statistics of the
first --check-rows rows against the in-memory build (CovProblem.from_rows) of the same rows.

    python scripts/stream_benchmark.py --rows 100000000 --file /tmp/big.parquet [--repeat 5]

With --repeat R the tasks run R rounds, interleaved (every other round in reverse order), and each ratio is
reported per round (min/median/max): this machine drifts by 10-30 % over minutes, so only a round's own pair is
compared.
"""
from __future__ import annotations

import argparse
import importlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpcov.data.chunks import dask_sums, local_cluster  # noqa: E402
from dpcov.data.table import table_data  # noqa: E402
from dpcov.mechanisms.problem import BandSums, CovProblem, clip_rows  # noqa: E402

COLUMNS = 20
ROW_GROUP = 1_000_000
SCALES = np.linspace(1.0, 0.05, COLUMNS) / 5  # rows mostly inside the unit ball, some clipped


def generate(path: Path, rows: int, seed: int = 0) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = [f"x{i}" for i in range(COLUMNS)]
    rng = np.random.default_rng(seed)
    schema = pa.schema([(name, pa.float64()) for name in names])
    with pq.ParquetWriter(path, schema, compression="none") as writer:
        for start in range(0, rows, ROW_GROUP):
            block = rng.standard_normal((min(ROW_GROUP, rows - start), COLUMNS)) * SCALES
            writer.write_table(pa.Table.from_arrays([pa.array(block[:, i]) for i in range(COLUMNS)], names=names))


def peak_mb() -> float:
    """This process's peak resident memory (VmHWM: per address space, so not the parent's before exec,
    which getrusage's ru_maxrss keeps)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def start_up(task: str) -> None:
    """What a process does once, before any row: its imports and, for the streamed statistics, numba's start-up
    (0.6 s at the first call of any compiled function, cached or not) and the compiled pass's loading. Outside
    the clock, for the floor as for the others: the clock times the rows (``seconds``), ``start_up`` is kept."""
    import pyarrow.parquet  # noqa: F401
    if task != "floor":
        BandSums(1.0).add_columns(np.zeros((COLUMNS, 1)))


def child(task: str, path: str) -> dict:
    """One measurement, in this (fresh) process."""
    begin = time.perf_counter()
    start_up(task)
    start = time.perf_counter()
    result = {"start_up": start - begin}
    if task == "floor":
        import pyarrow.parquet as pq
        rows = 0
        for batch in pq.ParquetFile(path, pre_buffer=False).iter_batches(batch_size=ROW_GROUP):
            rows += batch.num_rows
        result["rows"] = rows
    elif task == "stream":
        from threadpoolctl import threadpool_limits
        with threadpool_limits(limits=1):
            data = table_data(Path(path), None, "none", 1.0)
            problem = data.statistics.problem()
        result.update(rows=problem.n, trace=problem.trace, clipped=data.info["clipped_fraction"])
    elif task in ("dask", "dask_defaults", "dask_frame"):
        import dask.dataframe as dd
        import distributed
        cluster = (distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
                   if task == "dask_defaults" else local_cluster(2))
        with cluster, distributed.Client(cluster) as client:
            # the workers start up as this process did before its clock started (imports, numba)
            client.run(importlib.import_module, "dpcov.data.chunks")
            client.run(start_up, task)
            start = time.perf_counter()  # the cluster's start-up is not the statistics' time
            rows = dd.read_parquet(path, split_row_groups=True) if task == "dask_frame" else path
            problem = dask_sums(rows, 1.0, clip=True).problem()
            result["seconds"] = time.perf_counter() - start
            result["workers_peak_mb"] = max(client.run(peak_mb).values())
        result.update(rows=problem.n, trace=problem.trace)
    result.setdefault("seconds", time.perf_counter() - start)
    result["peak_mb"] = peak_mb()
    return result


def check(path: Path, rows: int) -> float:
    """max |Sigma_streamed - Sigma_in_memory| / max |Sigma| on the first ``rows`` rows (a slice file)."""
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path).read_row_groups(list(range(max(1, rows // ROW_GROUP))))
    X = np.column_stack([c.to_numpy() for c in table.columns])
    piece = path.with_name(path.stem + "_slice.parquet")
    pq.write_table(table, piece, compression="none")
    streamed = table_data(piece, None, "none", 1.0, block_bytes=8 << 20).statistics.problem()
    piece.unlink()
    expected = CovProblem.from_rows(clip_rows(X, 1.0)[0])
    assert streamed.n == expected.n and np.array_equal(streamed.band_counts, expected.band_counts)
    return float(np.abs(streamed.sigma - expected.sigma).max() / np.abs(expected.sigma).max())


def measure(task: str, file: Path, size: int, script: str = __file__) -> dict:
    """One task in a fresh process (``script --child task file``), its line printed."""
    done = subprocess.run([sys.executable, script, "--child", task, str(file)], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{task} failed:\n{done.stderr[-2000:]}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    workers = f", each worker {r['workers_peak_mb']:.0f} MB" if "workers_peak_mb" in r else ""
    print(f"{task:13s} {r['rows']} rows in {r['seconds']:7.1f} s = {size / 1e6 / r['seconds']:7.0f} MB/s, "
          f"peak resident {r['peak_mb']:6.0f} MB{workers} (start-up {r['start_up']:.1f} s before)", flush=True)
    return r


def prepared(file: Path, rows: int) -> int:
    """The file's size in bytes, printed; generated first (--rows x 20) when it does not exist."""
    if not file.exists():
        start = time.perf_counter()
        generate(file, rows)
        print(f"generated {file}: {rows} rows x {COLUMNS} columns, {file.stat().st_size / 1e9:.1f} GB, "
              f"{time.perf_counter() - start:.0f} s", flush=True)
    size = file.stat().st_size
    print(f"{file}: {size / 1e9:.2f} GB", flush=True)
    return size


def rounds(tasks: list[str], file: Path, size: int, repeat: int, scripts: dict | None = None) -> list[dict]:
    """``repeat`` rounds of the tasks (each by ``scripts[task]``, default this script), every other round in the
    reverse order, so that no task always runs first (after the page cache's last reader)."""
    return [{task: measure(task, file, size, (scripts or {}).get(task, __file__))
             for task in (tasks if k % 2 == 0 else tasks[::-1])} for k in range(repeat)]


def ratios(values: list[float]) -> str:
    return "/".join(f"{v:.2f}" for v in (min(values), float(np.median(values)), max(values))) if len(values) > 1 \
        else f"{values[0]:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--file", type=Path, default=Path("big.parquet"))
    parser.add_argument("--check-rows", type=int, default=2_000_000)
    parser.add_argument("--tasks", default="floor,stream,dask,dask_defaults,dask_frame")
    parser.add_argument("--repeat", type=int, default=1, help="rounds of the tasks, interleaved (ratios per round)")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    size = prepared(args.file, args.rows)
    tasks = args.tasks.split(",")
    measured = rounds(tasks, args.file, size, args.repeat)
    spread = "min/median/max over the rounds" if args.repeat > 1 else "one round"
    if "floor" in tasks and "stream" in tasks:
        print(f"stream / floor speed ({spread}): "
              f"{ratios([r['floor']['seconds'] / r['stream']['seconds'] for r in measured])}")
    for task in ("dask", "dask_defaults", "dask_frame"):
        if "stream" in tasks and task in tasks:
            traces = {f"{r[name]['trace']:.12g}" for r in measured for name in ("stream", task)}
            print(f"{task} / one process time ({spread}, each round's pair): "
                  f"{ratios([r[task]['seconds'] / r['stream']['seconds'] for r in measured])}, traces {sorted(traces)}")
    print(f"in-memory check on the first {args.check_rows} rows: max relative difference of Sigma "
          f"{check(args.file, args.check_rows):.2e}")


if __name__ == "__main__":
    main()
