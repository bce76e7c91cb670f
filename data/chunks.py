"""Rows that need not fit in memory, reduced where they are: a table file a block at a time
(data/table.py ``file_blocks``), Dask arrays and dataframes partition by partition on the workers with
the results merged in a tree (``dask_sums``, ``Rows``)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from dpcov.mechanisms.problem import ROW_NUMBER, BandSums, renumber_rows

from .table import BLOCK_BYTES, block_rows, file_blocks, find_file


def is_dask(obj) -> bool:
    """A Dask array or dataframe (without importing Dask when it is not in use)."""
    return type(obj).__module__.split(".")[0] in ("dask", "dask_expr")


def _partitions(obj, columns=None) -> list:
    """A Dask array's (whole rows per block) or dataframe's partitions, as delayed objects."""
    if hasattr(obj, "blocks"):  # a Dask array
        if obj.ndim != 2:
            raise ValueError(f"a Dask array of rows must be 2-D, got {obj.ndim} dimensions")
        array = (obj if columns is None else obj[:, list(columns)]).rechunk({1: -1})
        return list(array.to_delayed().ravel())
    return list((obj if columns is None else obj[list(columns)]).to_delayed())


def _add_columns(sums: BandSums, columns, clip: bool) -> BandSums:
    """Add a block given as its columns, its rows clipped to the sums' radius first with clip=True (else checked
    inside it)."""
    sums.add_columns(columns, sums.radius if clip else np.inf)
    return sums


def _block_sums(X: np.ndarray, radius: float, clip: bool) -> BandSums:
    return _add_columns(BandSums(radius), X.T, clip)  # X.T: its columns, copied into reused memory


def _file_share_sums(path: Path, columns, part: tuple[int, int], radius: float, clip: bool) -> BandSums:
    sums = BandSums(radius)
    for block in file_blocks(path, columns, part=part, prefetch=False, as_columns=True)[1]:
        _add_columns(sums, block, clip)
    return sums


def _tree(values: list, combine):
    """Delayed values combined pairwise in a tree (log depth): the merges run on the workers too."""
    import dask

    while len(values) > 1:
        values = [dask.delayed(combine)(*values[i:i + 2]) if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


def _merged(a: BandSums, b: BandSums) -> BandSums:
    return a.merge(b)


def dask_sums(obj, radius: float, columns=None, clip: bool = False, shares: int | None = None) -> BandSums:
    """The sums of a Dask array's or dataframe's rows (mechanisms/problem.py BandSums), computed where
    the partitions live: one BandSums per partition (rows clipped to ``radius`` first with clip=True,
    else checked to lie inside it), merged pairwise in a tree; only d x d sums travel. ``obj`` may also
    be the path of a .npy or Parquet file every worker can read: each reads its own ``shares`` (default: one
    per worker thread, as one process sums one per thread; more balance uneven workers; at most one per row
    group) straight into numpy, without Dask's dataframe layer.
    Runs on the scheduler in use (a ``distributed.Client``'s cluster, else Dask's default)."""
    import dask

    try:
        if not isinstance(obj, (str, Path)):
            return Rows(obj, columns).reduce(_block_sums, _merged, radius, clip)
        path = find_file(obj)
        if shares is None:  # 1e8 x 20 Parquet on 2 workers: 2 shares 0.04-0.44 s faster than 4 (stream_benchmark.txt)
            shares = min(_worker_threads(), _row_groups(path))
        return dask.compute(_tree([dask.delayed(_file_share_sums)(path, columns, (i, shares), radius, clip)
                                   for i in range(shares)], _merged))[0]
    except ValueError as err:
        raise ValueError(f"{err} (rows numbered within their partition)") from None


# Dask's own monitoring, relaxed for a batch of CPU-bound tasks on a few cores. By default the scheduler, each
# nanny and each worker ticks its event loop every 20 ms, reads the system every 500 ms and its memory every
# 100 ms, and each worker samples its threads' stacks every 10 ms: on this 2-core machine that took about 2 of
# the 25 core-s that 1e8 x 20 Parquet rows' sums cost (results/measurements/stream_benchmark.txt, run 10).
# A cluster without a dashboard shows none of it; the memory limits still hold, checked every second.
BATCH_MONITORING = {
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.worker.profile.enabled": False,
}


def local_cluster(n_workers: int):
    """A ``distributed.LocalCluster`` of ``n_workers`` single-threaded worker processes (BLAS at one thread
    each) with no dashboard and Dask's monitoring relaxed (``BATCH_MONITORING``, which the workers receive
    when they start; the caller's Dask config is left as it was). In a script, call it under
    ``if __name__ == "__main__":``: the worker processes import the script."""
    try:
        import dask
        from distributed import LocalCluster
    except ImportError:
        raise RuntimeError("a Dask cluster needs dask.distributed: pip install -e '.[dask]'") from None
    with dask.config.set(BATCH_MONITORING):
        return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None)


def _worker_threads() -> int:
    """The threads that run tasks: the distributed client's workers', else this machine's cores."""
    try:
        from distributed import get_client

        return max(1, sum(get_client().nthreads().values()))
    except (ImportError, ValueError):  # no distributed, or no client: Dask's local scheduler
        return os.cpu_count() or 1


def _row_groups(path: Path) -> int:
    if path.suffix.lower() in (".parquet", ".pq"):
        import pyarrow.parquet as pq
        return max(1, pq.ParquetFile(path).num_row_groups)
    if path.suffix.lower() != ".npy":
        return 1
    rows, d = np.load(path, mmap_mode="r").shape
    return max(1, -(-rows // block_rows(d)))


class Rows:
    """Rows to reduce over where they are: an in-memory array (one block: the same bits as before), a
    table file (``file_blocks``: memory one block), or a Dask array or dataframe (each partition on the
    workers, the results merged in a tree). ``reduce(fn, combine, *args)`` = combine over blocks of
    fn(block, *args); only those results travel (a d-vector, a d x d sum, a histogram)."""

    def __init__(self, data, columns=None, block_bytes: int = BLOCK_BYTES, name_cells: bool = True):
        self.data, self.columns, self.block_bytes, self.name_cells = data, columns, block_bytes, name_cells
        if isinstance(data, (str, Path)):
            self.kind = "file"
            self.data = find_file(data)
            self.names, _ = file_blocks(self.data, columns, block_bytes, name_cells=name_cells)
        elif is_dask(data):
            self.kind = "dask"
            self.names = [str(c) for c in (columns if columns is not None else
                                           getattr(data, "columns", range(data.shape[1])))]
        else:
            self.kind = "array"
            self.data = np.asarray(data, dtype=float)
            if self.data.ndim != 2:
                raise ValueError(f"data must be a 2-D array (n rows x d columns), got shape {self.data.shape}")
            self.names = [str(i) for i in range(self.data.shape[1])]
        self._n = len(self.data) if self.kind == "array" else self._known_rows()

    def _known_rows(self) -> int | None:
        """The row count without a pass, where the format says it (.npy, Parquet, a Dask array)."""
        if self.kind == "dask":
            rows = self.data.shape[0] if hasattr(self.data, "blocks") else None
            return int(rows) if rows is not None and np.isfinite(rows) else None
        if self.data.suffix.lower() == ".npy":
            return int(np.load(self.data, mmap_mode="r").shape[0])
        if self.data.suffix.lower() in (".parquet", ".pq"):
            import pyarrow.parquet as pq
            return int(pq.ParquetFile(self.data).metadata.num_rows)
        return None

    @property
    def d(self) -> int:
        return len(self.names)

    @property
    def n(self) -> int:
        if self._n is None:
            self._n = self.reduce(len, int.__add__)
        if not self._n:  # before any step reads n (e.g. mechanism="auto")
            raise ValueError(f"{self.data if self.kind == 'file' else 'data'}: no rows")
        return self._n

    def dropping(self, drop) -> "Rows":
        """These rows without the rows at the (sorted, global) indices ``drop``: each block filtered before any
        step reads it (mechanisms/units.py: rows beyond a person's bound, rows beyond the released count)."""
        total = self.n + len(self.drop)  # every row, dropped or not
        drop = np.union1d(self.drop, np.asarray(drop, dtype=np.int64))
        if len(drop) and (drop[0] < 0 or drop[-1] >= total):
            raise ValueError(f"rows to drop must be indices in [0, {total}), got {drop[0]} .. {drop[-1]}")
        rows = Rows.__new__(Rows)
        rows.__dict__.update(self.__dict__)
        rows.drop = drop
        rows._n = total - len(drop)
        return rows

    drop = np.empty(0, dtype=np.int64)

    def quiet(self) -> "Rows":
        """These rows, whose reading errors name no cell (a column, not a row or a value): the estimators'."""
        rows = Rows.__new__(Rows)
        rows.__dict__.update(self.__dict__)
        rows.name_cells = False
        return rows

    def _file_blocks(self):
        return file_blocks(self.data, self.columns, self.block_bytes, name_cells=self.name_cells)[1]

    def reduce(self, fn, combine, *args):
        if len(self.drop):
            return self._reduce_kept(fn, combine, *args)
        if self.kind == "array":
            return fn(self.data, *args)
        if self.kind == "file":
            return self._reduce_blocks(self._file_blocks(), fn, combine,
                                       *args)
        import dask

        values = [dask.delayed(_as_float_then)(part, fn, self.name_cells, *args)
                  for part in _partitions(self.data, self.columns)]
        if not values:
            raise ValueError("data must have at least one row and one column, got no partitions")
        try:
            return dask.compute(_tree(values, combine))[0]
        except ValueError as err:  # a row-numbered error: numbered within its partition
            if not ROW_NUMBER.search(str(err)):
                raise
            raise ValueError(f"{err} (rows numbered within their partition)") from None


    def _reduce_blocks(self, blocks, fn, combine, *args):
        """combine over the blocks of fn(block, *args), each block without the rows in ``drop``."""
        result, offset = None, 0
        for block in blocks:
            local = self.drop[(self.drop >= offset) & (self.drop < offset + len(block))] - offset
            kept = _kept_block(block, local, offset)
            try:
                value = fn(kept, *args)
            except ValueError as err:  # a row-numbered error of the block, numbered in the file
                number = np.delete(np.arange(offset, offset + len(block)), local)
                raise ValueError(ROW_NUMBER.sub(lambda m: f"{m.group(1)}{number[int(m.group(2))]}", str(err))) \
                    from None
            offset += len(block)
            result = value if result is None else combine(result, value)
        if result is None:
            raise ValueError(f"{self.data if self.kind == 'file' else 'data'}: no rows")
        return result

    def _reduce_kept(self, fn, combine, *args):
        if self.kind == "array":  # a block at a time: no copy of the whole array
            step = block_rows(self.data.shape[1], self.block_bytes)
            return self._reduce_blocks((self.data[i:i + step] for i in range(0, len(self.data), step)), fn, combine,
                                       *args)
        if self.kind == "file":
            return self._reduce_blocks(self._file_blocks(), fn, combine,
                                       *args)
        import dask

        parts = _partitions(self.data, self.columns)
        lengths = dask.compute(*[dask.delayed(len)(part) for part in parts])
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        values = [dask.delayed(_kept_then)(part, self.drop[(self.drop >= lo) & (self.drop < hi)] - lo, int(lo), fn,
                                           *args)
                  for part, lo, hi in zip(parts, offsets[:-1], offsets[1:])]
        return dask.compute(_tree(values, combine))[0]


def _kept_block(block: np.ndarray, local: np.ndarray, offset: int) -> np.ndarray:
    """A block without its rows ``local``; a dropped row that is not finite is still refused (bad input is an
    error whichever rows a random draw drops)."""
    block = np.asarray(block, dtype=float)
    if not len(local):
        return block
    bad = ~np.isfinite(block[local])
    if bad.any():
        row, column = np.argwhere(bad)[0]
        raise ValueError(f"data contains NaN or inf (first at row {offset + local[row]}, column {column})")
    return np.delete(block, local, axis=0)


def _kept_then(part, local, offset: int, fn, *args):
    return fn(_kept_block(part, local, offset), *args)


def _as_float_then(part, fn, name_cells: bool, *args):
    return fn(_as_float(part, name_cells), *args)


def _as_float(part, name_cells: bool = True) -> np.ndarray:
    """A partition as floats; ``name_cells=False``: a cell that is no number is an error naming no value."""
    try:
        return np.asarray(part, dtype=float)
    except (ValueError, TypeError):
        if name_cells:
            raise
        raise ValueError("a Dask partition holds a value that is not a number: choose numeric columns") from None
