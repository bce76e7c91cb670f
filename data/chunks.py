"""A table read a block of rows at a time: ``.npy`` memory-mapped, CSV/TSV in chunks (pandas), Parquet
by record batches (pyarrow). Each block is a float64 array of the chosen columns, checked like the
whole table (data/table.py), so the statistics of a file larger than memory are built in memory that
does not grow with its rows. Dask arrays and dataframes: the same sums computed by the workers, one per
partition, reduced in a tree (``dask_sums``)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from mechanisms.norm_bound import clip_rows
from mechanisms.problem import BandSums, row_norms

BLOCK_BYTES = 16 << 20  # one block of float64 rows: about this many bytes (below glibc's mmap threshold: no page faults per block)


def block_rows(d: int, block_bytes: int = BLOCK_BYTES) -> int:
    return max(1, block_bytes // (8 * max(int(d), 1)))


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


def _partition_sums(part, radius: float, clip: bool) -> BandSums:
    X = np.asarray(part, dtype=float)
    if clip:
        X = clip_rows(X, radius, row_norms(X))[0]
    return BandSums(radius).add(X)


def _merged(a: BandSums, b: BandSums) -> BandSums:
    return a.merge(b)


def dask_sums(obj, radius: float, columns=None, clip: bool = False) -> BandSums:
    """The sums of a Dask array's or dataframe's rows (mechanisms/problem.py BandSums), computed where
    the partitions live: one BandSums per partition (rows clipped to ``radius`` first with clip=True,
    else checked to lie inside it), merged pairwise in a tree; only d x d sums travel. Runs on the
    scheduler in use (a ``distributed.Client``'s cluster, else Dask's default)."""
    import dask

    sums = [dask.delayed(_partition_sums)(part, radius, clip) for part in _partitions(obj, columns)]
    if not sums:
        raise ValueError("data must have at least one row and one column, got no partitions")
    while len(sums) > 1:
        sums = [dask.delayed(_merged)(*sums[i:i + 2]) if i + 1 < len(sums) else sums[i]
                for i in range(0, len(sums), 2)]
    try:
        return dask.compute(sums[0])[0]
    except ValueError as err:
        raise ValueError(f"{err} (rows numbered within their partition)") from None


def file_blocks(path: Path, columns, block_bytes: int = BLOCK_BYTES) -> tuple[list[str], Iterator[np.ndarray]]:
    """(column names, an iterator of row blocks) of a table file: the formats, checks and errors of
    data/table.py (read_table, select_columns), a block at a time; rows numbered across blocks."""
    from .table import FORMATS, select_columns

    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"{path}: unsupported format {path.suffix!r}; supported: {', '.join(FORMATS)}")
    if kind == "npy":
        try:
            array = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError) as err:
            raise ValueError(f"{path}: not a readable .npy array of numbers ({err})") from None
        if array.ndim != 2:
            raise ValueError(f"{path}: a table needs a 2-D array (rows x columns), got shape {array.shape}")
        _, names = select_columns(path, array[:0], None, columns)  # checks the indices on no rows
        chosen = [int(c) for c in names]
        step = block_rows(len(chosen), block_bytes)
        blocks = (select_columns(path, array[i:i + step], None, chosen)[0] for i in range(0, len(array), step))
        return names, blocks
    import pandas as pd

    if kind == "parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as err:
            raise ImportError(f"{path}: reading Parquet needs pyarrow ({err}): pip install pyarrow") from None
        try:
            file = pq.ParquetFile(path, pre_buffer=False)  # pre-buffering kept every batch read (GBs)
        except (OSError, ValueError) as err:
            raise ValueError(f"{path}: cannot read it as parquet ({err})") from None
        available = list(file.schema_arrow.names)
        wanted = available if columns is None else [str(c) for c in (columns if isinstance(columns, (list, tuple))
                                                                      else [columns])]
        read = [c for c in wanted if c in available] or None
        step = block_rows(len(wanted), block_bytes)
        frames = file.iter_batches(batch_size=step, columns=read)
        empty = file.schema_arrow.empty_table().to_pandas()
    else:
        sep = "\t" if kind == "tsv" else ","
        try:
            empty = pd.read_csv(path, sep=sep, nrows=0)
        except (ValueError, OSError, pd.errors.ParserError) as err:
            raise ValueError(f"{path}: cannot read it as {kind} ({err})") from None
        step = block_rows(max(len(empty.columns), 1), block_bytes)
        frames = pd.read_csv(path, sep=sep, chunksize=step)
    names = select_columns(path, None, empty, columns, allow_empty=True)[1]

    def blocks():
        offset = 0
        try:
            for frame in frames:  # pandas chunks, or Arrow batches (numbers straight to numpy)
                block = _numeric_batch(frame, names)
                if block is None:
                    frame = frame.to_pandas() if hasattr(frame, "to_pandas") else frame
                    block = select_columns(path, None, frame, names, first_row=offset)[0]
                yield block
                offset += len(block)
        except (ValueError, pd.errors.ParserError) as err:
            if str(err).startswith(str(path)):
                raise
            raise ValueError(f"{path}: cannot read it as {kind} ({err})") from None
    return names, prefetched(blocks())


def _numeric_batch(batch, names: list[str]) -> np.ndarray | None:
    """An Arrow record batch of numeric columns without nulls as one float64 array (one
    copy); None for anything else (a pandas chunk, text, nulls: select_columns then says what is wrong)."""
    import pyarrow as pa

    if not isinstance(batch, pa.RecordBatch) or batch.schema.names != names:
        return None
    columns = batch.columns
    if any(c.null_count or not (pa.types.is_floating(c.type) or pa.types.is_integer(c.type)) for c in columns):
        return None
    block = np.empty((batch.num_rows, len(columns)), order="F")
    for i, column in enumerate(columns):
        block[:, i] = column.to_numpy(zero_copy_only=False)
    return block


def prefetched(blocks: Iterator[np.ndarray], depth: int = 1) -> Iterator[np.ndarray]:
    """The same blocks, read ``depth`` ahead in a thread: reading and parsing (pyarrow, pandas' C parser,
    numpy copies release the GIL) overlap the work on the block before. Errors arrive in order."""
    import queue
    import threading

    ahead: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def read():
        try:
            for block in blocks:
                while not stop.is_set():
                    try:
                        ahead.put(block, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            ahead.put(done)
        except BaseException as err:  # handed to the consumer
            ahead.put(err)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    try:
        while True:
            item = ahead.get()
            if item is done:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
