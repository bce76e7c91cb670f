"""The measurement behind mechanism="auto" (dpcov/defaults.py): every candidate fitted through the
estimators on synthetic rows at one cell of the grid, scored by the cell's task.

    python scripts/defaults.py build     # every cell, resumable; writes dpcov/auto_table.csv
"""
from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
from scipy import special
from threadpoolctl import threadpool_limits

from .defaults import SCENARIOS, budget_of, candidates
from dpcov.mechanisms.registry import get_mechanism

from .estimators import PrivateCovariance, PrivatePCA, PrivateRidge, captured_variance_ratio, hardenable


def scenario_rows(n: int, d: int, decay: float, fill: float, seed: int, ridge: bool = False,
                  kind: str = "gaussian"):
    """Rows in the unit ball whose largest norm is ``fill``, eigenvalues ~ i^-decay along random directions
    (not the axes: a release of nothing, whose eigenvectors are the axes, must not find them); with ``ridge``
    the last column is y = x w + noise. kind="gaussian": a mean of half the typical norm along a random
    direction. kind="nonnegative": each column of those rows mapped through its normal CDF into [0, 1], as
    min-max scaled columns and pixel intensities are: a mean near the largest norm, norms bunched below it."""
    if kind not in ("gaussian", "nonnegative"):
        raise ValueError(f"kind must be 'gaussian' or 'nonnegative', got {kind!r}")
    rng = np.random.default_rng([seed, n, d, int(100 * decay), int(100 * fill), ridge]
                                + ([1] if kind == "nonnegative" else []))
    scales = np.arange(1, d + 1, dtype=float) ** (-decay / 2)
    rotation = np.linalg.qr(rng.standard_normal((d, d)))[0]
    Z = (rng.standard_normal((n, d)) * scales) @ rotation.T
    direction = rng.standard_normal(d)
    if kind == "gaussian":
        Z += 0.5 * np.sqrt((scales**2).sum()) * direction / np.linalg.norm(direction)
    else:
        Z = special.ndtr(Z / np.sqrt(((scales * rotation) ** 2).sum(axis=1)))  # column j's sd: |row j of R S|
    if ridge:
        w = rng.standard_normal(d - 1)
        Z[:, -1] = Z[:, :-1] @ w / np.sqrt(d - 1) + 0.1 * rng.standard_normal(n)
    return Z * (fill / np.linalg.norm(Z, axis=1).max())


def score_fit(task: str, mechanism: str, budget, X: np.ndarray, y: np.ndarray | None = None, k: int = 1,
              seed: int = 0, radius=1.0, privacy_unit: str = "replace_one") -> tuple[float, str, float]:
    """(the task's metric, the mechanism fitted, the fit's seconds) of one fit through the estimator, radius
    ``radius`` and centering="private": PCA's captured variance (higher is better), the covariance's
    Frobenius error or ridge's training MSE on (X, y) (lower is better). Each mechanism runs with the numerics the
    estimators give it: hardened where it can be (auto, and every additive mechanism), else idealized (named: no
    warning here). ``privacy_unit``: "replace_one" (n public), the unit every committed measurement (the defaults'
    table, the head-to-head) was made under, or "add_remove" (the estimators' default; results/measurements/
    privacy_unit.txt measures what it costs)."""
    numerics = "hardened" if mechanism == "auto" or hardenable(get_mechanism(mechanism)) else "idealized"
    common = dict(mechanism=mechanism, budget=budget, radius=radius, centering="private", random_state=seed,
                  numerics=numerics, privacy_unit=privacy_unit)
    with threadpool_limits(limits=1):
        start = time.perf_counter()
        model = {"pca": lambda: PrivatePCA(k, **common).fit(X), "covariance": lambda: PrivateCovariance(**common).fit(X),
                 "ridge": lambda: PrivateRidge(**common).fit(X, y)}[task]()  # its default alpha="auto"
        seconds = time.perf_counter() - start
        if task == "pca":
            return captured_variance_ratio(model.components_, X), model.mechanism_, seconds
        if task == "covariance":
            return float(np.linalg.norm(model.covariance_ - np.cov(X.T, bias=True))), model.mechanism_, seconds
        return float(np.mean((model.predict(X) - y) ** 2)), model.mechanism_, seconds


def typical_norm(rows: np.ndarray) -> float:
    """The rows' median norm (the scenarios' rows lie in the unit ball, so also over their radius): how tight a
    public radius is for most rows (not only the largest), the fact mechanism="auto" may estimate privately to
    weigh the scenarios (dpcov/defaults.py)."""
    return float(np.median(np.linalg.norm(rows, axis=1)))


def measure_cell(task: str, notion: str, value: float, n: int, d: int, k: int | None, trials: int,
                 seed: int = 0, hardened_only: bool = False) -> pd.DataFrame:
    """One cell of the table: every candidate's mean relative score per scenario (SCENARIOS) over trials,
    with the scenario's typical norm. ``hardened_only``: the candidates the estimators' default numerics can run
    (auto's choices there), not the idealized-only samplers."""
    budget = budget_of(notion, value)
    names = [m for m in candidates(task, budget) if not hardened_only or hardenable(get_mechanism(m))]
    frames = []
    for s, scenario in enumerate(SCENARIOS):
        rows = scenario_rows(n, d, scenario["decay"], scenario["fill"], seed, ridge=task == "ridge",
                             kind=scenario.get("kind", "gaussian"))
        X, y = (rows[:, :-1], rows[:, -1]) if task == "ridge" else (rows, None)
        relative = {m: [] for m in names}
        raw = {m: [] for m in names}
        for trial in range(trials):
            metric = {}
            for m in names:
                try:
                    metric[m] = score_fit(task, m, budget, X, y, k or 1, 1000 * seed + 100 * s + trial)[0]
                except (ValueError, ArithmeticError, RuntimeError):
                    metric[m] = math.nan
            values = np.array([metric[m] for m in names])
            best = np.nanmax(values) if task == "pca" else np.nanmin(values)
            for m in names:
                v = metric[m]
                rel = (v / best if best > 0 else 1.0) if task == "pca" else (best / v if v > 0 else 1.0)
                relative[m].append(0.0 if math.isnan(v) else rel)
                raw[m].append(v)
        frames.append(pd.DataFrame({
            "task": task, "notion": notion, "budget": value, "n": n, "d": d, "k": k if task == "pca" else np.nan,
            "scenario": s, "typical": typical_norm(rows), "mechanism": names,
            "score": [float(np.mean(relative[m])) for m in names],
            "metric": [float(np.nanmean(raw[m])) if np.isfinite(raw[m]).any() else math.nan for m in names],
            "trials": trials}))
    return pd.concat(frames, ignore_index=True)
