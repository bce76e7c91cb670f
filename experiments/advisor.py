"""Which mechanism should I use? Measured, not guessed: every candidate mechanism is run on synthetic
data that matches only what may be stated publicly (n, d, the norm bound r, the budget, and an assumed
trace and spectral decay), and ranked by its mean error with a 95 % interval.

    simulate(n, d, budget, radius=1, trace=None, decay=0, mechanisms=..., seconds=30) -> DataFrame

The synthetic rows: eigenvalues lambda_i proportional to i^-decay (decay 0: flat), summing to the
assumed trace (default r^2, the worst case); directions drawn along N(0, diag(lambda)). Row norms (not
stated publicly, so by default the least favourable for clipping): a fraction trace / r^2 of the rows
on the sphere and the others 0 ("extreme"), or every row of norm sqrt(trace) ("equal"). For large
n * d^2 the shared statistics come from a subsample of the same distribution, and n is kept as stated
(the noise scales with r^2 / n). Nothing of the user's data is read.
"""
from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, effective_n_jobs
from threadpoolctl import threadpool_limits

from dpcov.mechanisms.neighbours import ADD_REMOVE
from dpcov.mechanisms.privacy import budget_guaranteeing
from dpcov.mechanisms.problem import CovProblem
from dpcov.mechanisms.registry import MECHANISMS, get_mechanism, release

from .seeding import generator

STATISTIC_WORK = 4e8  # the subsample for the shared statistics: at most about this many flops (rows x d^2)
MIN_TRIALS, MAX_TRIALS = 3, 30


def candidates() -> list[str]:
    """Every registered mechanism that runs from bounded rows alone, with nothing to choose."""
    return [name for name, m in MECHANISMS.items() if m.runs_from_public_facts]


def spectrum(d: int, trace: float, decay: float) -> np.ndarray:
    values = np.arange(1, d + 1, dtype=float) ** -float(decay)
    return values * (trace / values.sum())


NORMS = ("extreme", "equal")


def synthetic_problem(n: int, d: int, radius: float, trace: float, decay: float, seed: int = 0,
                      norms: str = "extreme") -> CovProblem:
    """A CovProblem of n rows in the r-ball with tr(Sigma) = trace and eigenvalues ~ i^-decay (module doc);
    ``norms``: "extreme" (a fraction trace / r^2 of the rows on the sphere, the others 0: the most skewed
    norms a trace allows, where clipping gains least) or "equal" (every row of norm sqrt(trace))."""
    if norms not in NORMS:
        raise ValueError(f"norms must be one of {NORMS}, got {norms!r}")
    if not 0 < trace <= radius**2:
        raise ValueError(f"trace must lie in (0, r^2] = (0, {radius**2:g}], got {trace!r}")
    if decay < 0 or not math.isfinite(decay):
        raise ValueError(f"decay must be a finite number >= 0, got {decay!r}")
    rng = generator(seed, "advisor", "rows", n, d)
    # enough rows that a trace of r^2 / 100 still puts ~100 rows on the sphere (the trace within 1 %)
    m = int(min(n, max(2000, STATISTIC_WORK // (d * d), math.ceil(100 * radius**2 / trace))))
    Z = rng.standard_normal((m, d)) * np.sqrt(spectrum(d, trace, decay))
    norms_kind, lengths = norms, np.linalg.norm(Z, axis=1)
    lengths[lengths == 0] = 1.0
    if norms_kind == "equal":
        X = Z / lengths[:, None] * math.sqrt(trace)
    else:
        on_sphere = max(1, int(round(m * trace / radius**2)))
        X = np.zeros_like(Z)
        X[:on_sphere] = Z[:on_sphere] / lengths[:on_sphere, None] * radius
    X *= min(1.0, radius / max(float(np.linalg.norm(X, axis=1).max()), 1e-300))  # rounding: inside the ball
    problem = CovProblem.from_rows(X, radius=radius)
    if m < n:  # the statistics are averages over rows: the subsample's, with the stated n
        problem = replace(problem, n=int(n), band_counts=np.round(problem.band_counts * (n / m)).astype(np.int64))
    return problem


def _runs(name: str, problem: CovProblem, budget, trials: range, seed: int, options: dict) -> list[tuple]:
    out = []
    with threadpool_limits(limits=1):
        for trial in trials:
            start = time.perf_counter()
            try:
                estimate, _ = release(name, problem, budget, generator(seed, "advisor", name, trial), options=options)
                error = float(np.linalg.norm(estimate - problem.sigma))
            except (ValueError, ArithmeticError, RuntimeError) as err:  # e.g. a mechanism that refuses this n
                return out + [(trial, math.nan, time.perf_counter() - start, f"{type(err).__name__}: {err}")]
            out.append((trial, error, time.perf_counter() - start, ""))
    return out


def simulate(n: int, d: int, budget, radius: float = 1.0, trace: float | None = None, decay: float = 0.0,
             mechanisms=None, seconds: float = 30.0, trials: int | None = None, seed: int = 0, n_jobs: int = -1,
             problem: CovProblem | None = None, options: dict | None = None, norms: str = "extreme",
             privacy_unit: str = "replace_one") -> pd.DataFrame:
    """One row per mechanism that can meet ``budget``: its own budget, mean Frobenius error with a 95 %
    interval over its trials, the number of trials and seconds per release; ranked by the mean.
    ``trials`` fixes the count (the numbers are then identical on every run and for any n_jobs);
    otherwise a one-trial pilot times each mechanism and the rest of ``seconds`` (on all workers)
    sets its trials (between 3 and 30). ``options``: mechanism -> its options (default: none).
    ``privacy_unit="add_remove"``: each line as the estimators run it under add/remove, the count taken as known
    (its share of the budget is the caller's to remove): a native line (mechanisms/neighbours.py) on the rows'
    sums at its add/remove sensitivity, the others at their replace-one calibration (the reduction's)."""
    options = options or {}
    trace = radius**2 if trace is None else float(trace)
    problem = problem or synthetic_problem(n, d, radius, trace, decay, seed, norms)
    native = replace(problem, neighbours=ADD_REMOVE) if privacy_unit == "add_remove" else problem
    problems = {name: native if get_mechanism(name).native else problem for name in (mechanisms or candidates())}
    names = []
    for name in mechanisms or candidates():
        notion = get_mechanism(name).notion  # an unknown name is an error, not a silent omission
        try:
            budget_guaranteeing(budget, notion)
            names.append(name)
        except ValueError:
            continue  # its notion cannot meet this guarantee
    started = time.perf_counter()
    parallel = Parallel(n_jobs=n_jobs)
    if trials is None:
        pilot = dict(zip(names, parallel(delayed(_runs)(m, problems[m], budget, range(1), seed, options.get(m, {}))
                                         for m in names)))
        left = max(seconds - (time.perf_counter() - started), 0.0) * effective_n_jobs(n_jobs)
        share = left / max(len(names), 1)
        plan = {m: (0 if pilot[m] and pilot[m][-1][3] else
                    int(np.clip(share / max(pilot[m][0][2], 1e-4), MIN_TRIALS - 1, MAX_TRIALS - 1))) for m in names}
        rest = parallel(delayed(_runs)(m, problems[m], budget, range(1, 1 + plan[m]), seed, options.get(m, {}))
                        for m in names)
        runs = {m: pilot[m] + r for m, r in zip(names, rest)}
    else:
        runs = dict(zip(names, parallel(delayed(_runs)(m, problems[m], budget, range(trials), seed,
                                                       options.get(m, {})) for m in names)))
    rows = []
    for name in names:
        mechanism = get_mechanism(name)
        errors = np.array([r[1] for r in runs[name] if not r[3]])
        failure = next((r[3] for r in runs[name] if r[3]), "")
        mean = float(errors.mean()) if len(errors) else math.nan
        half = 1.96 * float(errors.std(ddof=1)) / math.sqrt(len(errors)) if len(errors) > 1 else math.nan
        rows.append({"mechanism": name, "label": mechanism.label,
                     "runs at": str(budget_guaranteeing(budget, mechanism.notion)),
                     "measured": mean, "low": mean - half, "high": mean + half, "trials": len(errors),
                     "seconds": float(np.median([r[2] for r in runs[name]])) if runs[name] else math.nan,
                     "failed": failure})
    frame = pd.DataFrame(rows)
    return frame.sort_values("measured", na_position="last", kind="stable").reset_index(drop=True)
