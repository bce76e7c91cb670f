"""A table read a block of rows at a time: ``.npy`` memory-mapped, CSV/TSV in chunks (pandas),
Parquet by record batches (pyarrow), Dask arrays and dataframes partition by partition. Each block
is a float64 array of the chosen columns, checked like the whole table (data/table.py), so the
statistics of a file larger than memory are built in memory that does not grow with its rows."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

BLOCK_BYTES = 64 << 20  # one block of float64 rows: at most about this many bytes


def block_rows(d: int, block_bytes: int = BLOCK_BYTES) -> int:
    return max(1, block_bytes // (8 * max(int(d), 1)))


def is_dask(obj) -> bool:
    """A Dask array or dataframe (without importing Dask when it is not in use)."""
    return type(obj).__module__.split(".")[0] in ("dask", "dask_expr")


def dask_blocks(obj, columns=None) -> Iterator[np.ndarray]:
    """A Dask array's or dataframe's partitions, one at a time, as float64 row blocks."""
    frame = obj if not hasattr(obj, "blocks") else None
    if frame is not None:
        if columns is not None:
            frame = frame[list(columns)]
        for part in frame.to_delayed():
            yield np.asarray(part.compute(), dtype=float)
    else:
        if obj.ndim != 2:
            raise ValueError(f"a Dask array of rows must be 2-D, got {obj.ndim} dimensions")
        array = obj if columns is None else obj[:, list(columns)]
        array = array.rechunk({1: -1})  # whole rows in each block
        for i in range(array.numblocks[0]):
            yield np.asarray(array.blocks[i].compute(), dtype=float)


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
            file = pq.ParquetFile(path)
        except (OSError, ValueError) as err:
            raise ValueError(f"{path}: cannot read it as parquet ({err})") from None
        available = list(file.schema_arrow.names)
        wanted = available if columns is None else [str(c) for c in (columns if isinstance(columns, (list, tuple))
                                                                      else [columns])]
        read = [c for c in wanted if c in available] or None
        step = block_rows(len(wanted), block_bytes)
        frames = (batch.to_pandas() for batch in file.iter_batches(batch_size=step, columns=read))
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
            for frame in frames:
                yield select_columns(path, None, frame, names, first_row=offset)[0]
                offset += len(frame)
        except (ValueError, pd.errors.ParserError) as err:
            if str(err).startswith(str(path)):
                raise
            raise ValueError(f"{path}: cannot read it as {kind} ({err})") from None
    return names, blocks()
