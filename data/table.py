"""Your own data (dataset ``table``): the rows of a CSV, TSV, Parquet or ``.npy`` file, in a ball.

    python run.py experiment=table_rho params.path=mydata.csv params.columns=[age,income] params.bound=1

Parameters (every one is recorded with each result row):
- ``path``: the file (``.csv``, ``.tsv``, ``.parquet``/``.pq`` read by pandas, ``.npy`` by numpy); a
  relative path is looked up from the working directory, then in the data directories
  (``data_dir``, ``$DPCOV_DATA``, ``../shared/data``, the cache: data/files.py), then in the
  repository (for its example, ``docs/examples/table.csv``).
- ``columns``: the columns to use (names; column indices for ``.npy``); null: every column (all
  must be numeric).
- ``standardize``: ``none``; ``center`` (subtract column means); ``zscore`` (centre, divide by column
  standard deviations); ``minmax`` (columns to [0, 1]). Constant columns are left at 0.
- ``bound``: the rows' norm bound r the mechanisms calibrate their noise to:
  * a number r > 0 (a declared, public bound): rows with ||x|| > r are clipped to norm r
    (x -> x r / ||x||); the fraction clipped is recorded (``data_clipped_fraction``). The
    mechanisms then see rows in the ball of radius r, and errors are in the data's own units.
  * ``max``: every row divided by the largest row norm (radius 1), as the papers do.

Privacy: only a declared ``bound`` with ``standardize=none`` keeps the whole pipeline private.
``bound=max`` and every standardisation use the data's own statistics (largest norm, means,
deviations, ranges) before the mechanism runs; that step is NOT differentially private (the
mechanisms' guarantee then holds for the preprocessed rows, not the raw table). The recorded
clipped fraction and largest norm are facts about the data for your own analysis, not releases.

Bad input gets a clear error: a missing file (every place looked), an unsupported format, unknown
or repeated columns, non-numeric cells, NaN/inf (first row and column), no rows, a bad bound.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .files import REPO_ROOT, DataFileError, data_dirs, sha256sum
from .registry_types import Data

FORMATS = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet", ".npy": "npy"}
STANDARDIZE = ("none", "center", "zscore", "minmax")


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


def select_columns(path: Path, array, frame, columns) -> tuple[np.ndarray, list[str]]:
    """The chosen columns as a float matrix and their names (clear errors for every bad choice)."""
    available = [str(c) for c in frame.columns] if frame is not None else list(range(array.shape[1]))
    if columns is not None and not isinstance(columns, (list, tuple)):
        columns = [columns]
    chosen = list(available) if columns is None else list(columns)
    if not chosen:
        raise ValueError(f"{path}: columns is empty; name at least one column (or null for all)")
    if len(set(map(str, chosen))) != len(chosen):
        raise ValueError(f"{path}: repeated columns in {chosen}")
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

    missing = [c for c in map(str, chosen) if c not in available]
    if missing:
        raise ValueError(f"{path}: no column(s) {missing}; the file has {available}")
    frame = frame.set_axis(available, axis=1)[[str(c) for c in chosen]]
    if frame.empty:
        raise ValueError(f"{path}: no rows")
    values = {}
    for name in frame.columns:
        column = frame[name]
        values[name] = column if pd.api.types.is_numeric_dtype(column) else pd.to_numeric(column, errors="coerce")
        bad = np.flatnonzero(values[name].isna() & column.notna())
        if len(bad):
            raise ValueError(f"{path}: column {name!r} is not numeric (row {bad[0]}: {column.iloc[bad[0]]!r}); "
                             f"choose numeric columns with params.columns=[...]")
    return pd.DataFrame(values).to_numpy(dtype=float), list(frame.columns)


def standardized(X: np.ndarray, how: str) -> np.ndarray:
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


def bounded(X: np.ndarray, bound) -> tuple[np.ndarray, float, float]:
    """(rows in the ball, its radius, fraction of rows clipped) for a declared bound or "max"."""
    norms = np.linalg.norm(X, axis=1)
    if bound == "max":
        largest = norms.max()
        if largest == 0:
            raise ValueError("every row is zero: nothing to estimate (bound=max divides by the largest norm)")
        return X / largest, 1.0, 0.0
    if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not (np.isfinite(bound) and bound > 0):
        raise ValueError(f"bound must be a number > 0 (a declared norm bound: rows are clipped to it) or "
                         f"'max' (divide by the data's largest row norm: not private), got {bound!r}")
    over = norms > bound
    factor = np.where(over, bound / np.where(over, norms, 1.0), 1.0)
    return X * factor[:, None], float(bound), float(over.mean())


def table(path: str, columns, standardize: str, bound, rng: np.random.Generator, data_dir=None) -> Data:
    """The rows of a user's file (module docstring). ``rng`` is unused: the rows are the file's."""
    if standardize not in STANDARDIZE:
        raise ValueError(f"standardize must be one of {STANDARDIZE}, got {standardize!r}")
    if bound is None:
        raise ValueError("set the norm bound: params.bound=<r> (rows clipped to norm r; private) or "
                         "params.bound=max (divide by the data's largest norm; not private)")
    file = find_file(path, data_dir)
    array, frame = read_table(file)
    X, names = select_columns(file, array, frame, columns)
    if len(X) == 0:
        raise ValueError(f"{file}: no rows")
    if not np.all(np.isfinite(X)):
        row, col = np.argwhere(~np.isfinite(X))[0]
        count = int((~np.isfinite(X)).any(axis=1).sum())
        raise ValueError(f"{file}: {count} row(s) hold NaN, inf or an empty cell (first: row {row}, column "
                         f"{names[col]!r}); drop or impute them first")
    X = standardized(X, standardize)
    largest = float(np.linalg.norm(X, axis=1).max())
    X, radius, clipped = bounded(X, bound)
    info = {"file_sha256": sha256sum(file), "columns": ",".join(names), "clipped_fraction": clipped,
            "max_norm": largest, "private_preprocessing": standardize == "none" and bound != "max"}
    return Data(X, radius=radius, info=info)
