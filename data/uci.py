"""UCI wine, airfoil self-noise and adult, as Amin et al. 2019 §4 use them (their d = 13, 6, 108).

Encoding (ours; Amin et al. do not give theirs):
- wine: the 13 numeric attributes (the class label is dropped), 178 rows.
- airfoil: all 6 columns (5 attributes + scaled sound pressure), 1503 rows.
- adult: adult.data + adult.test (48842 rows). The 6 numeric attributes (age, fnlwgt,
  education-num, capital-gain, capital-loss, hours-per-week) and the 8 categoricals one-hot encoded
  over the categories seen in either file, with "?" (missing) kept as a category of its own
  (workclass, occupation and native-country have it): 6 + 9 + 16 + 7 + 15 + 6 + 5 + 2 + 42 = 108
  columns. The income label is dropped (it is not among Amin's 108 columns).
Scaling (parameter ``preprocess``):
- ``minmax`` (default in our configs): every column min-max scaled to [0, 1] (one-hot columns
  already are), then every row divided by the largest row norm, so max ||x|| = 1 (the unit ball the
  mechanisms need). Min-max rather than z-scores: adult's capital-gain has z-scores up to 13, which
  would leave all but a few rows tiny after the division by the largest norm.
- ``raw``: only the division by the largest row norm. One large-valued column then dominates
  (wine: proline, airfoil: frequency, adult: fnlwgt) and C is nearly rank one (top eigenvalue share
  > 99.7 %).
Both use the data's own largest norm, a non-private preprocessing step (as in Amin et al.).
Regression target (Amin §1.1, predict one column from the others): wine: alcohol (column 0);
airfoil: scaled sound pressure (column 5); adult: hours-per-week (column 5).
"""
from __future__ import annotations

import numpy as np

from .files import DataFile, cached_array, locate
from .registry_types import Data

UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
_HOW = "The staged copies are in ../shared/data (see its README); the originals are on the UCI repository."

FILES = {
    "wine": DataFile("wine", "wine.data", "6be6b1203f3d51df0b553a70e57b8a723cd405683958204f96d23d7cd6aea659",
                     (f"{UCI}/wine/wine.data",), _HOW),
    "airfoil": DataFile("airfoil", "airfoil_self_noise.dat",
                        "74c75fd71783f1e6b71f8a622b993dc592897a97cd689c5090a07147a1b097b3",
                        (f"{UCI}/00291/airfoil_self_noise.dat",), _HOW),
    "adult.data": DataFile("adult", "adult.data", "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
                           (f"{UCI}/adult/adult.data",), _HOW),
    "adult.test": DataFile("adult", "adult.test", "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
                           (f"{UCI}/adult/adult.test",), _HOW),
}
SOURCES = {"wine": ("wine",), "airfoil": ("airfoil",), "adult": ("adult.data", "adult.test")}
TARGETS = {"wine": 0, "airfoil": 5, "adult": 5}
TARGET_NAMES = {"wine": "alcohol", "airfoil": "scaled sound pressure", "adult": "hours-per-week"}

ADULT_FIELDS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                "hours-per-week", "native-country", "income"]
ADULT_NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
ADULT_CATEGORICAL = ["workclass", "education", "marital-status", "occupation", "relationship", "race",
                     "sex", "native-country"]


def _numeric_table(path, sep: str | None, columns: int) -> np.ndarray:
    """Rows of ``columns`` numbers; a clear error for a bad cell (names the line)."""
    rows = []
    with open(path, encoding="ascii", errors="replace") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            cells = line.strip().split(sep)
            if len(cells) != columns:
                raise ValueError(f"{path}, line {line_no}: expected {columns} fields, got {len(cells)}")
            try:
                rows.append([float(c) for c in cells])
            except ValueError:
                raise ValueError(f"{path}, line {line_no}: non-numeric cell in {line.strip()!r}") from None
    return np.array(rows)


def parse_wine(path) -> np.ndarray:
    return _numeric_table(path, ",", 14)[:, 1:]  # drop the class label


def parse_airfoil(path) -> np.ndarray:
    return _numeric_table(path, None, 6)


def _adult_records(path) -> list[list[str]]:
    records = []
    with open(path, encoding="ascii", errors="replace") as f:
        for line_no, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("|"):  # blank tail line; adult.test's "|1x3 Cross validator"
                continue
            cells = [c.strip() for c in line.split(",")]
            if len(cells) != len(ADULT_FIELDS):
                raise ValueError(f"{path}, line {line_no}: expected {len(ADULT_FIELDS)} fields, got {len(cells)}")
            records.append(cells)
    return records


def parse_adult(*paths) -> tuple[np.ndarray, list[str]]:
    """The 108-column encoding of the module docstring, before scaling, and the column names."""
    records = [r for p in paths for r in _adult_records(p)]
    index = {name: i for i, name in enumerate(ADULT_FIELDS)}
    columns, names = [], []
    for name in ADULT_NUMERIC:
        try:
            columns.append(np.array([float(r[index[name]]) for r in records]))
        except ValueError as err:
            raise ValueError(f"adult: non-numeric {name} value ({err})") from None
        names.append(name)
    for name in ADULT_CATEGORICAL:
        values = np.array([r[index[name]] for r in records])
        for category in sorted(set(values)):
            columns.append((values == category).astype(float))
            names.append(f"{name}={category}")
    return np.column_stack(columns), names


PREPROCESS = ("minmax", "raw")


def scale_to_unit_ball(table: np.ndarray, preprocess: str = "minmax") -> np.ndarray:
    """``minmax``: every column to [0, 1] (constant columns -> 0); then (both) rows / largest row norm."""
    if preprocess not in PREPROCESS:
        raise ValueError(f"preprocess must be one of {PREPROCESS}, got {preprocess!r}")
    X = table
    if preprocess == "minmax":
        low, high = table.min(axis=0), table.max(axis=0)
        X = (table - low) / np.where(high > low, high - low, 1.0)
    largest = np.linalg.norm(X, axis=1).max()
    if largest == 0:
        raise ValueError("every row is zero after preprocessing: nothing to estimate")
    return X / largest


def load_table(name: str, data_dir=None) -> np.ndarray:
    """The unscaled table of dataset ``name`` (parsed once, then from the parse cache)."""
    if name not in SOURCES:
        raise ValueError(f"unknown UCI dataset {name!r}; known: {sorted(SOURCES)}")
    files = [FILES[f] for f in SOURCES[name]]
    paths = [locate(f, data_dir) for f in files]

    def build():
        if name == "adult":
            return {"table": parse_adult(*paths)[0]}
        return {"table": (parse_wine if name == "wine" else parse_airfoil)(paths[0])}

    return cached_array(f"uci-{name}", {"sha256": [f.sha256 for f in files], "version": 1}, build)["table"]


def uci(name: str, preprocess: str, rng: np.random.Generator, data_dir=None) -> Data:
    """UCI dataset ``name`` (wine | airfoil | adult), rows scaled into the unit ball as ``preprocess``
    says (minmax | raw). ``rng`` is unused: the data are fixed."""
    X = scale_to_unit_ball(load_table(name, data_dir), preprocess)
    return Data(X, radius=1.0, target=TARGETS[name], info={"target": TARGET_NAMES[name]})
