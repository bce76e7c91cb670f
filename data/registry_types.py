"""What a loader may return besides a bare array."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Data:
    """Rows X plus, optionally, their norm bound (overrides the dataset's), the matrix errors are
    measured against (default: Sigma = X^T X / n), the column ridge models predict (regression
    metrics) and columns to record with every result row.

    A loader that simulates the statistic instead of drawing rows returns X = None with ``sigma``
    (= X^T X / n of ``n`` rows in the ``radius`` ball); the mechanisms then see CovProblem.from_sigma."""

    X: np.ndarray | None
    radius: float | None = None
    truth: np.ndarray | None = None
    target: int | None = None
    info: dict = field(default_factory=dict)
    # The raw rows before any clipping to ``radius``, for mechanisms that need no norm bound (e.g. the
    # stable covariance estimator, mechanisms/stable.py); None for every other dataset.
    rows_unbounded: np.ndarray | None = None
    sigma: np.ndarray | None = None  # the statistic X^T X / n, when X is None
    n: int | None = None  # its sample size
    # The sums of the rows (mechanisms/problem.py BandSums), when X is None: a table streamed a block at
    # a time (data/table.py); the mechanisms see exactly what CovProblem.from_rows would give them.
    statistics: object = None
