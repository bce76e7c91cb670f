"""Your own data (dataset ``table``): the rows of a CSV, TSV, Parquet or ``.npy`` file, in a ball.

    python run.py experiment=table_rho params.path=mydata.csv params.columns=[age,income] params.bound=1

Parameters (every one is recorded with each result row):
- ``path``: the file (``.csv``, ``.tsv``, ``.parquet``/``.pq`` read by pandas, ``.npy`` by numpy); a
  relative path is looked up from the working directory, then in the data directories
  (``data_dir``, ``$DPCOV_DATA``, ``../shared/data``, the cache: data/files.py), then in the
  installed package (for its example, ``data/examples/table.csv``, shipped with it).
- ``columns``: the columns to use (names; column indices for ``.npy``); null: every column (all
  must be numeric).
- ``standardize``: ``none``; ``center`` (subtract column means); ``zscore`` (centre, divide by column
  standard deviations); ``minmax`` (columns to [0, 1]). Constant columns are left at 0.
- ``bound``: the rows' norm bound r the mechanisms calibrate their noise to:
  * a number r > 0 (a declared, public bound): rows with ||x|| > r are clipped to norm r
    (x -> x r / ||x||); the fraction clipped is recorded (``data_clipped_fraction``). The
    mechanisms then see rows in the ball of radius r, and errors are in the data's own units.
  * ``max``: every row divided by the largest row norm (radius 1), as the papers do.

Privacy: a declared ``bound`` with ``standardize=none`` keeps the whole pipeline private, and so does
``bound=private``: the raw rows are summed in an outer ball (2^64) and the mechanisms/pipeline.py lines
(``pipeline``, ``pipeline_pure``; experiment table_private) pick the radius and the mean privately, every
step in the run's ledger; ``standardize`` then names what they estimate (none, center, zscore).
``bound=max`` and every standardisation use the data's own statistics (largest norm, means,
deviations, ranges) before the mechanism runs; that step is NOT differentially private (the
mechanisms' guarantee then holds for the preprocessed rows, not the raw table). The recorded
clipped fraction and largest norm are facts about the data for your own analysis, not releases.

Bad input gets a clear error: a missing file (every place looked), an unsupported format, unknown
or repeated columns, non-numeric cells, NaN/inf (first row and column), no rows, a bad bound.

Streamed: the file is read a block of rows at a time (``file_blocks``: .npy by plain reads of row ranges,
CSV/TSV in chunks, Parquet by record batches; .npy and Parquet in two shares, each read and summed in its own
thread) into the sums a CovProblem holds (mechanisms/problem.py BandSums.add_columns), so memory is a few
blocks whatever the table's size; the dataset returns those sums, not the rows.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import numpy as np

from dpcov.mechanisms.problem import BandSums, clip_rows, row_norms

from .files import REPO_ROOT, DataFileError, data_dirs, file_digest
from .registry_types import Data

# one block of float64 rows: about this many bytes (below glibc's largest mmap threshold, 32 MiB: no page faults per
# block); Parquet at 1e8 x 20 in 0.9x the time of 16 MB blocks (results/measurements/stream_benchmark.txt run 9)
BLOCK_BYTES = 30 << 20
OUTER_RADIUS = 2.0**64  # bound=private: the ball the raw rows are summed in (no public bound; PrivRadius picks one)
PRIVATE_TARGETS = ("none", "center", "zscore")  # bound=private: what the pipeline estimates (mechanisms/pipeline.py)
FORMATS = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet", ".npy": "npy"}
STANDARDIZE = ("none", "center", "zscore", "minmax")
PARQUET_BUFFER = 1 << 20  # bytes read at a time from a Parquet column chunk (file_blocks)
SUM_THREADS = 2  # threads summing a table's shares: fixed, not the core count (the same bits on any machine)


def find_file(path, data_dir=None) -> Path:
    """``path`` itself, else (relative paths) the first data directory that holds it."""
    if not isinstance(path, (str, Path)) or not str(path):
        raise ValueError(f"path must name a data file (params.path=...), got {path!r}")
    given = Path(path).expanduser()
    candidates = [given] + ([] if given.is_absolute() else [d / given for d in [*data_dirs(data_dir), REPO_ROOT]])
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = "\n".join(f"  {c.resolve() if not c.is_absolute() else c}" for c in candidates)
    raise DataFileError(f"table file {str(path)!r} not found. Looked in:\n{looked}")


def read_table(path: Path) -> tuple[np.ndarray | None, object]:
    """(array, None) for .npy; (None, DataFrame) for the pandas formats."""
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"{path}: unsupported format {path.suffix!r}; supported: {', '.join(FORMATS)}")
    if kind == "npy":
        try:
            array = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as err:
            raise ValueError(f"{path}: not a readable .npy array of numbers ({err})") from None
        if array.ndim != 2:
            raise ValueError(f"{path}: a table needs a 2-D array (rows x columns), got shape {array.shape}")
        return array, None
    import pandas as pd

    try:
        if kind == "parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, sep="\t" if kind == "tsv" else ",")
    except ImportError as err:
        raise ImportError(f"{path}: reading Parquet needs pyarrow ({err}): pip install pyarrow") from None
    except (ValueError, OSError, pd.errors.ParserError) as err:
        raise ValueError(f"{path}: cannot read it as {kind} ({err})") from None
    return None, frame


def _chosen(path: Path, available: list, columns) -> list:
    """The columns asked for (all with None), checked: at least one, none repeated."""
    if columns is not None and not isinstance(columns, (list, tuple)):
        columns = [columns]
    chosen = list(available) if columns is None else list(columns)
    if not chosen:
        raise ValueError(f"{path}: columns is empty; name at least one column (or null for all)")
    if len(set(map(str, chosen))) != len(chosen):
        raise ValueError(f"{path}: repeated columns in {chosen}")
    return chosen


def named_columns(path: Path, available: list[str], columns) -> list[str]:
    """The names of the columns asked for among a file's ``available`` ones (all with None), or a clear error."""
    chosen = [str(c) for c in _chosen(path, available, columns)]
    missing = [c for c in chosen if c not in available]
    if missing:
        raise ValueError(f"{path}: no column(s) {missing}; the file has {available}")
    return chosen


def select_columns(path: Path, array, frame, columns, first_row: int = 0,
                   allow_empty: bool = False, name_cells: bool = True) -> tuple[np.ndarray, list[str]]:
    """The chosen columns as a float matrix and their names (clear errors for every bad choice);
    ``first_row``: the table's row number of the first row given (a block of a larger table). ``name_cells=False``
    (the estimators: an error from the data is an output): a non-numeric cell's error names its column, not its row
    or value."""
    available = [str(c) for c in frame.columns] if frame is not None else list(range(array.shape[1]))
    chosen = _chosen(path, available, columns)
    if frame is None:
        bad = [c for c in chosen if isinstance(c, bool) or not isinstance(c, (int, np.integer))
               or not 0 <= c < array.shape[1]]
        if bad:
            raise ValueError(f"{path}: columns of a .npy file are indices 0..{array.shape[1] - 1}, got {bad}")
        values = array[:, chosen]
        if not np.issubdtype(values.dtype, np.number) and values.dtype != bool:
            raise ValueError(f"{path}: the array holds {values.dtype}, not numbers")
        return values.astype(float), [str(c) for c in chosen]
    import pandas as pd

    chosen = named_columns(path, available, chosen)
    frame = frame.set_axis(available, axis=1)[[str(c) for c in chosen]]
    if frame.empty and not allow_empty:
        raise ValueError(f"{path}: no rows")
    values = {}
    for name in frame.columns:
        column = frame[name]
        values[name] = column if pd.api.types.is_numeric_dtype(column) else pd.to_numeric(column, errors="coerce")
        bad = np.flatnonzero(values[name].isna() & column.notna())
        if len(bad):
            where = f" (row {bad[0] + first_row}: {column.iloc[bad[0]]!r})" if name_cells else ""
            raise ValueError(f"{path}: column {name!r} is not numeric{where}; "
                             f"choose numeric columns with params.columns=[...]")
    return pd.DataFrame(values).to_numpy(dtype=float), list(frame.columns)


def block_rows(d: int, block_bytes: int = BLOCK_BYTES) -> int:
    return max(1, block_bytes // (8 * max(int(d), 1)))


def _share(total: int, part: tuple[int, int] | None) -> tuple[int, int]:
    """[start, stop) of ``part`` = (i, count): the i-th of count near-equal shares of range(total)."""
    if part is None:
        return 0, total
    i, count = part
    return total * i // count, total * (i + 1) // count


def _npy_rows(path: Path, array: np.memmap):
    """rows(i, j) of a row-major .npy file read into fresh memory (not through the memory map, whose touched
    pages would stay in the process's resident set: a 3.2 GB file read whole showed 3.5 GB resident)."""
    row_bytes = array.dtype.itemsize * array.shape[1]

    def rows(i: int, j: int) -> np.ndarray:
        with open(path, "rb") as f:
            f.seek(array.offset + i * row_bytes)
            return np.fromfile(f, dtype=array.dtype, count=(j - i) * array.shape[1]).reshape(j - i, array.shape[1])
    return rows


def file_blocks(path: Path, columns, block_bytes: int = BLOCK_BYTES, part: tuple[int, int] | None = None,
                prefetch: bool = True, as_columns: bool = False, name_cells: bool = True) -> tuple[list[str], Iterator]:
    """(column names, an iterator of row blocks) of a table file: the formats, checks and errors of
    data/table.py (read_table, select_columns), a block at a time; rows numbered across blocks.
    ``part`` = (i, count): only the i-th of count shares of the rows (.npy: row ranges; Parquet: row
    groups), for workers that each read their own share (data/chunks.py dask_sums on a path, ``summed``'s
    threads). ``prefetch``: CSV/Parquet blocks parsed one ahead in a thread (``prefetched``). ``as_columns``:
    each block as the list of its d columns (Parquet's own buffers: no copy; for BandSums.add_columns)
    instead of m x d rows. ``name_cells``: as ``select_columns``'s."""
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
        step = block_rows(array.shape[1], block_bytes)
        start, stop = _share(len(array), part)
        rows = _npy_rows(path, array) if array.flags.c_contiguous else (lambda i, j: array[i:j])
        blocks = (select_columns(path, rows(i, min(i + step, stop)), None, chosen, first_row=i,
                                 name_cells=name_cells)[0] for i in range(start, stop, step))
        return names, (list(X.T) for X in blocks) if as_columns else blocks
    if kind == "parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as err:
            raise ImportError(f"{path}: reading Parquet needs pyarrow ({err}): pip install pyarrow") from None
        try:
            # pre-buffering kept every batch read (GBs); a read buffer streams each column chunk's pages instead of
            # holding whole chunks (one 1e6-row group x 20 columns: 160 MB per reading thread)
            file = pq.ParquetFile(path, pre_buffer=False, buffer_size=PARQUET_BUFFER)
        except (OSError, ValueError) as err:
            raise ValueError(f"{path}: cannot read it as parquet ({err})") from None
        available = list(file.schema_arrow.names)
        wanted = available if columns is None else [str(c) for c in (columns if isinstance(columns, (list, tuple))
                                                                      else [columns])]
        read = [c for c in wanted if c in available] or None
        step = block_rows(len(wanted), block_bytes)
        start, stop = _share(file.num_row_groups, part)
        first = sum(file.metadata.row_group(g).num_rows for g in range(start))
        frames = lambda: file.iter_batches(batch_size=step, columns=read, row_groups=range(start, stop),  # noqa: E731
                                           use_threads=False)  # its thread pool only added CPU (the summing threads use the cores)
        names = named_columns(path, available, columns)  # without pandas: the numbers go straight to numpy
    else:
        import pandas as pd

        if part is not None and part[1] > 1:
            raise ValueError(f"{path}: a {kind} file is read in one pass; shares of it need .npy or Parquet")
        first = 0
        sep = "\t" if kind == "tsv" else ","
        try:
            empty = pd.read_csv(path, sep=sep, nrows=0)
        except (ValueError, OSError, pd.errors.ParserError) as err:
            raise ValueError(f"{path}: cannot read it as {kind} ({err})") from None
        step = block_rows(max(len(empty.columns), 1), block_bytes)
        frames = lambda: pd.read_csv(path, sep=sep, chunksize=step)  # noqa: E731  (opened when read: not for the names)
        names = select_columns(path, None, empty, columns, allow_empty=True)[1]

    def blocks():
        offset, reader = first, frames()
        try:
            for frame in reader:  # pandas chunks, or Arrow batches (numbers straight to numpy)
                block = _numeric_columns(frame, names)
                if block is None:  # text, nulls, ...: pandas says what is wrong
                    frame = frame.to_pandas() if hasattr(frame, "to_pandas") else frame
                    X = select_columns(path, None, frame, names, first_row=offset, name_cells=name_cells)[0]
                    block = list(X.T) if as_columns else X
                    offset += len(X)
                else:
                    offset += len(block[0])
                    block = block if as_columns else np.stack(block).T  # column-major: one memcpy per column
                yield block
        except ValueError as err:  # pandas' ParserError is one
            if str(err).startswith(str(path)):
                raise
            raise ValueError(f"{path}: cannot read it as {kind} ({err})") from None
        finally:
            getattr(reader, "close", lambda: None)()  # pandas' reader holds the file open
    return names, prefetched(blocks()) if prefetch else blocks()


def _numeric_columns(batch, names: list[str]) -> list[np.ndarray] | None:
    """An Arrow record batch of numeric columns without nulls as float64 columns (Arrow's own buffers where
    they are float64); None for anything else (a pandas chunk, text, nulls: select_columns then says what
    is wrong)."""
    if type(batch).__module__.split(".")[0] != "pyarrow":  # a pandas chunk (pyarrow is optional: Parquet only)
        return None
    import pyarrow as pa

    if batch.schema.names != names:
        return None
    columns = batch.columns
    if any(c.null_count or not (pa.types.is_floating(c.type) or pa.types.is_integer(c.type)) for c in columns):
        return None
    # float64: Arrow's own buffer, as to_numpy gives it but without the pandas import to_numpy makes (0.4 s)
    return [np.frombuffer(c.buffers()[1], np.float64, len(c), 8 * c.offset) if pa.types.is_float64(c.type)
            else c.to_numpy(zero_copy_only=False).astype(float) for c in columns]


def prefetched(blocks: Iterator[np.ndarray], depth: int = 1) -> Iterator[np.ndarray]:
    """The same blocks, read ``depth`` ahead in a thread: reading and parsing (pyarrow, pandas' C parser,
    numpy copies release the GIL) overlap the work on the block before. Errors arrive in order."""
    import queue

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


def standardized(X: np.ndarray, how: str) -> np.ndarray:
    """The standardisation of an in-memory table (the streamed one: ``ColumnMoments.transform``)."""
    if how == "none":
        return X
    if how == "minmax":
        low, high = X.min(axis=0), X.max(axis=0)
        return (X - low) / np.where(high > low, high - low, 1.0)
    centred = X - X.mean(axis=0)
    if how == "center":
        return centred
    std = X.std(axis=0)
    return centred / np.where(std > 0, std, 1.0)


class ColumnMoments:
    """Per-column count, mean, sum of squared deviations (Chan et al.'s parallel update), minimum and
    maximum, a block at a time: the table's own statistics the non-private standardisations use."""

    def __init__(self):
        self.n, self.mean, self.m2, self.low, self.high = 0, 0.0, 0.0, np.inf, -np.inf

    def add(self, X: np.ndarray) -> None:
        n, mean = len(X), X.mean(axis=0)
        m2 = ((X - mean) ** 2).sum(axis=0)
        total = self.n + n
        delta = mean - self.mean
        self.mean = self.mean + delta * (n / total)
        self.m2 = self.m2 + m2 + delta**2 * (self.n * n / total)
        self.low, self.high, self.n = np.minimum(self.low, X.min(axis=0)), np.maximum(self.high, X.max(axis=0)), total

    def transform(self, how: str) -> tuple[np.ndarray | float, np.ndarray | float]:
        """(shift, scale): standardised rows are (x - shift) / scale."""
        if how == "minmax":
            return self.low, np.where(self.high > self.low, self.high - self.low, 1.0)
        std = np.sqrt(self.m2 / self.n)
        return self.mean, (np.where(std > 0, std, 1.0) if how == "zscore" else 1.0)


def bounded(X: np.ndarray, bound) -> tuple[np.ndarray, float, float]:
    """(rows in the ball, its radius, fraction of rows clipped) for a declared bound or "max"."""
    norms = np.linalg.norm(X, axis=1)
    if bound == "max":
        largest = norms.max()
        if largest == 0:
            raise ValueError("every row is zero: nothing to estimate (bound=max divides by the largest norm)")
        return X / largest, 1.0, 0.0
    check_bound(bound)
    return clip_rows(X, bound, norms)[0], float(bound), float((norms > bound).mean())


def check_bound(bound) -> None:
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not (np.isfinite(bound) and bound > 0):
        raise ValueError(f"bound must be a number > 0 (a declared norm bound: rows are clipped to it) or "
                         f"'max' (divide by the data's largest row norm: not private), got {bound!r}")


def _finite_blocks(file: Path, names: list[str], blocks):
    """The blocks, after checking the whole table holds no NaN/inf (counted over every block)."""
    bad_rows, first, offset = 0, None, 0
    for X in blocks:
        with np.errstate(over="ignore", invalid="ignore"):  # sums of large finite values may overflow: checked below
            clean = not bad_rows and np.isfinite(np.add.reduce(X, axis=None))  # one sum of the block: no NaN/inf
            row_sums = None if clean else X.sum(axis=1)
        if clean:
            yield X
            offset += len(X)
            continue
        suspect = np.flatnonzero(~np.isfinite(row_sums))  # NaN/inf make the row sum non-finite
        bad = ~np.isfinite(X[suspect])  # (a sum that overflowed has no bad cell)
        if bad.any():
            bad_rows += int(bad.any(axis=1).sum())
            if first is None:
                row, col = np.argwhere(bad)[0]
                first = (suspect[row] + offset, names[col])
        elif not bad_rows:
            yield X
        offset += len(X)
    if bad_rows:
        raise ValueError(f"{file}: {bad_rows} row(s) hold NaN, inf or an empty cell (first: row {first[0]}, column "
                         f"{first[1]!r}); drop or impute them first")
    if not offset:
        raise ValueError(f"{file}: no rows")


def table_blocks(file: Path, columns, standardize: str, bound, block_bytes: int = BLOCK_BYTES):
    """(names, shares, as_seen) of a table file: ``shares``, SUM_THREADS iterators of blocks (each the list of its
    columns) that together cover the table in order (Parquet row groups and .npy row ranges split between them,
    each read in the thread that sums it; CSV/TSV, read in one pass, all in the first); ``as_seen(X)`` =
    (columns, clip, divisor), a block's columns as standardised, then the rows the mechanisms see are Clip(x, clip) / divisor
    (``table`` describes the steps; BandSums.add_columns applies the last two and checks NaN/inf). The
    non-private steps read the table first (one pass each)."""
    names, _ = file_blocks(file, columns, block_bytes)
    read = lambda: _finite_blocks(file, names, file_blocks(file, columns, block_bytes)[1])  # noqa: E731
    shift, scale = 0.0, 1.0
    if bound == "private":  # the raw rows, in the outer ball: every step is the pipeline's (private)
        if standardize not in PRIVATE_TARGETS:
            raise ValueError(f"bound=private reads the raw rows; standardize names what the release estimates "
                             f"and must be one of {PRIVATE_TARGETS} (the private pipeline's steps), got "
                             f"{standardize!r}")
        standardize, bound = "none", OUTER_RADIUS
    if standardize != "none":  # the table's own means, deviations or ranges: NOT private
        moments = ColumnMoments()
        for X in read():
            moments.add(X)
        shift, scale = moments.transform(standardize)
    prepare = (lambda X: X) if standardize == "none" else (lambda X: (X - shift) / scale)
    clip, divisor = np.inf, 1.0
    if bound == "max":  # the table's own largest norm: NOT private
        divisor = max(float(row_norms(prepare(X)).max()) for X in read())
        if divisor == 0:
            raise ValueError("every row is zero: nothing to estimate (bound=max divides by the largest norm)")
    else:
        check_bound(bound)
        clip = float(bound)
    if FORMATS[file.suffix.lower()] in ("parquet", "npy"):
        shares = [file_blocks(file, columns, block_bytes, part=(k, SUM_THREADS), prefetch=False, as_columns=True)[1]
                  for k in range(SUM_THREADS)]
    else:
        shares = [file_blocks(file, columns, block_bytes, as_columns=True)[1]]
    if standardize != "none":
        shift, scale = np.broadcast_to(shift, len(names)), np.broadcast_to(scale, len(names))
        return names, shares, lambda X: ([(c - shift[k]) / scale[k] for k, c in enumerate(X)], clip, divisor)
    return names, shares, lambda X: (X, clip, divisor)


def table(path: str, columns, standardize: str, bound, rng: np.random.Generator, data_dir=None) -> Data:
    """The statistics of a user's file (module docstring), streamed. ``rng`` is unused."""
    if standardize not in STANDARDIZE:
        raise ValueError(f"standardize must be one of {STANDARDIZE}, got {standardize!r}")
    if bound is None:
        raise ValueError("set the norm bound: params.bound=<r> (rows clipped to norm r; private), "
                         "params.bound=private (raw rows for the private pipeline) or params.bound=max (divide "
                         "by the data's largest norm; not private)")
    return table_data(find_file(path, data_dir), columns, standardize, bound)


def summed(shares: list, radius: float, as_seen) -> tuple[BandSums, dict]:
    """(the BandSums of the blocks as the mechanisms see them, what was seen: max_norm before clipping and how many
    rows were clipped) -- ``as_seen(X)`` = (columns, clip, divisor) for BandSums.add_columns. Each share (an iterator of
    blocks) is read and summed in its own thread (pyarrow, the compiled passes and BLAS release the GIL; a block
    is summed while it is still in cache), the partial sums merged in order: the same bits on any machine."""
    sums = [BandSums(radius) for _ in shares]
    seen = {"max_norm": 0.0, "clipped": 0}
    lock, failed = threading.Lock(), threading.Event()

    def add(k: int) -> None:
        try:
            for X in shares[k]:
                if failed.is_set():
                    return
                largest, clipped = sums[k].add_columns(*as_seen(X))
                with lock:
                    seen["max_norm"] = max(seen["max_norm"], largest)
                    seen["clipped"] += clipped
        except BaseException:
            failed.set()  # the other shares stop at their next block
            raise

    with ThreadPoolExecutor(len(shares)) as pool:
        for future in [pool.submit(add, k) for k in range(len(shares))]:
            future.result()
    for other in sums[1:]:
        sums[0].merge(other)
    return sums[0], seen


def table_data(file: Path, columns, standardize: str, bound, block_bytes: int = BLOCK_BYTES) -> Data:
    """``table`` on a found file, a block at a time: memory holds a block per thread (about ``block_bytes``) and
    O(bands d^2) sums, whatever the file's size."""
    with ThreadPoolExecutor(1) as pool:
        digest = pool.submit(file_digest, file)  # beside the sums (hashing releases the GIL); once per file version
        names, shares, as_seen = table_blocks(file, columns, standardize, bound, block_bytes)
        radius = 1.0 if bound == "max" else OUTER_RADIUS if bound == "private" else float(bound)
        try:
            sums, seen = summed(shares, radius, as_seen)
        except ValueError:  # a share refused a row: the table's own account, numbered in the whole table
            for _ in _finite_blocks(file, names, file_blocks(file, columns, block_bytes)[1]):
                pass  # NaN/inf: how many rows, the first
            summed([file_blocks(file, columns, block_bytes, as_columns=True)[1]], radius, as_seen)  # in order
            raise
    if not sums.n:
        raise ValueError(f"{file}: no rows")
    info = {"file_sha256": digest.result(), "columns": ",".join(names), "clipped_fraction": seen["clipped"] / sums.n,
            "max_norm": seen["max_norm"],
            "private_preprocessing": bound == "private" or (standardize == "none" and bound != "max")}
    truth = None
    if bound == "private":  # what the pipeline estimates: the raw rows' (centred, standardised) covariance
        truth = private_target(sums.problem(), standardize)
    return Data(None, radius=sums.radius, info=info, statistics=sums, truth=truth)


def private_target(problem, standardize: str) -> np.ndarray:
    """The raw table's second moment (none), covariance (center) or correlation (zscore), from its sums:
    the truth a private pipeline's release is measured against (evaluation only)."""
    sigma = problem.sigma
    if standardize == "none":
        return sigma
    mean = problem.band_sums.sum(axis=0)
    sigma = sigma - np.outer(mean, mean)
    if standardize == "center":
        return sigma
    scale = np.sqrt(np.diag(sigma))
    scale = np.where(scale > 0, scale, 1.0)
    return sigma / np.outer(scale, scale)
