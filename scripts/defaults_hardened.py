"""mechanism="auto" under hardened numerics, where issue 55 changed its choice: the cells of the measured table
(dpcov/auto_table.csv) whose best-ranked hardenable mechanism changed when CoinPress, gauss_approx, DP- and
LDP-Thresholding became hardenable, re-measured with hardened numerics.

    python scripts/defaults_hardened.py [--trials 200] [--n-jobs 2]   # writes results/measurements/defaults_hardened.txt

The changed cells: over every cell of the table's grid (defaults.grid_cells), auto's ranking there (defaults.advise,
no released median norm) restricted to the hardenable mechanisms (estimators.hardenable) with the four excluded
("before": what auto chose before they became hardenable) and with them ("after": what it chooses now). At each
changed cell the old choice, the new one and, where the table's first is not hardenable (idealized only), that
one too, are fitted as the table's were (dpcov/measure.py score_fit: through the estimators, radius 1,
centering="private", default shares, privacy_unit="replace_one", hardened numerics wherever the mechanism can be
hardened) on each of the table's five SCENARIOS, in two settings:

- "table data": the rows the table was measured on (scenario_rows seed 0), fresh noise seeds (not the table's);
- "fresh data": a new data set per trial (scenario_rows seed 1 + trial), the same fresh noise seeds.

A trial's score of a mechanism is the table's: its metric relative to the best of the mechanisms compared here in
that trial and scenario (PCA: captured / best captured; covariance: best error / error), then averaged over the
five scenarios with equal weights (as advise weighs them without a released median). Its standard error is over
the trials (iid: independent noise, and in "fresh data" independent data). The paired difference new - old is
taken trial by trial. Verdict: "new >= old" where the difference is >= 0 or within 2 se of 0; "new worse" where it
is below -2 se and more than 0.01; covariance cells also count how often a release was exactly the zero matrix.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # a checkout without the package installed

from dpcov import defaults  # noqa: E402
from dpcov.estimators import hardenable  # noqa: E402
from dpcov.measure import SCENARIOS, scenario_rows, score_fit, typical_norm  # noqa: E402
from dpcov.mechanisms.registry import get_mechanism  # noqa: E402

OUT = ROOT / "results" / "measurements" / "defaults_hardened.txt"
NEWLY_HARDENED = ("coinpress", "gauss_approx", "dp_threshold", "ldp_threshold")  # issue 55
MODES = ("table data", "fresh data")


def _first(ranking) -> tuple[str, str]:
    """(auto's choice before the four were hardenable, its choice now): the ranking's first hardenable one."""
    after = [m for m, _ in ranking if hardenable(get_mechanism(m))]
    return [m for m in after if m not in NEWLY_HARDENED][0], after[0]


def changed_cells() -> list[dict]:
    """Every grid cell whose best-ranked hardenable mechanism differs with and without NEWLY_HARDENED (advise without
    a released median: every scenario weighs the same)."""
    cells = []
    for task, notion, value, n, d, k in defaults.grid_cells():
        budget = defaults.budget_of(notion, value)
        advice = defaults.advise(task, n, d, budget, k)
        scores = dict(advice.ranking)
        old, new = _first(advice.ranking)
        if old == new:
            continue
        first = advice.ranking[0][0]
        idealized = first if first not in (old, new) else None
        compared = [old, new] + ([idealized] if idealized else [])
        cells.append({"task": task, "notion": notion, "budget": value, "n": n, "d": d, "k": k, "old": old, "new": new,
                      "idealized": idealized, "compared": compared, "table": {m: scores[m] for m in compared},
                      "typicals": None, "releases_typical": defaults.releases_typical(task, n, d, budget, k)})
    return cells


def changed_with_typical() -> list[dict]:
    """The cells where the estimator releases the rows' median norm (defaults.releases_typical, replace_one) and the
    choice changes for some typical norm of defaults.TYPICALS: one entry per (cell, old -> new), with those norms."""
    cells = []
    for task, notion, value, n, d, k in defaults.grid_cells():
        budget = defaults.budget_of(notion, value)
        if not defaults.releases_typical(task, n, d, budget, k):
            continue
        pairs = {}
        for typical in defaults.TYPICALS:
            advice = defaults.advise(task, n, d, budget, k, typical=typical)
            old, new = _first(advice.ranking)
            if old != new:
                pairs.setdefault((old, new), []).append((float(typical), dict(advice.ranking)))
        for (old, new), found in pairs.items():
            cells.append({"task": task, "notion": notion, "budget": value, "n": n, "d": d, "k": k, "old": old,
                          "new": new, "idealized": None, "compared": [old, new],
                          "table": {m: float(np.mean([r[m] for _, r in found])) for m in (old, new)},
                          "typicals": [t for t, _ in found], "releases_typical": True})
    return cells


def scenario_weights(cell: dict) -> np.ndarray:
    """The scenarios' weights: equal without a released median; else advise's weighing within a cell (the scenario
    nearest the typical norm weighs 1, the others exp(-gap); TYPICAL_WIDTH), averaged over the typical norms at which
    the choice changed, summing to 1."""
    if cell["typicals"] is None:
        return np.full(len(SCENARIOS), 1.0 / len(SCENARIOS))
    norms = np.array([typical_norm(scenario_rows(cell["n"], cell["d"], sc["decay"], sc["fill"], 0,
                                                 ridge=cell["task"] == "ridge", kind=sc.get("kind", "gaussian")))
                      for sc in SCENARIOS])
    weights = np.zeros(len(SCENARIOS))
    for typical in cell["typicals"]:
        gap = (np.log(norms / typical) / defaults.TYPICAL_WIDTH) ** 2 / 2
        weights += np.exp(-(gap - gap.min()))
    cell["scenario_typicals"] = norms
    return weights / weights.sum()


def run_scenario(cell: dict, s: int, mode: str, trials: int) -> pd.DataFrame:
    """Every compared mechanism's metric in each trial at scenario ``s`` of ``cell``."""
    scenario = SCENARIOS[s]
    budget = defaults.budget_of(cell["notion"], cell["budget"])
    records = []
    rows = None
    for trial in range(trials):
        if rows is None or mode == "fresh data":
            rows = scenario_rows(cell["n"], cell["d"], scenario["decay"], scenario["fill"],
                                 0 if mode == "table data" else 1 + trial, ridge=cell["task"] == "ridge",
                                 kind=scenario.get("kind", "gaussian"))
            X, y = (rows[:, :-1], rows[:, -1]) if cell["task"] == "ridge" else (rows, None)
            exact = float(np.linalg.norm(np.cov(rows.T, bias=True)))  # the zero matrix's Frobenius error
        seed = 10**6 + 1000 * s + trial  # not the table's seeds (100 s + trial)
        for m in cell["compared"]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    metric, fitted, seconds = score_fit(cell["task"], m, budget, X, y, cell["k"] or 1, seed,
                                                        privacy_unit="replace_one")
                except (ValueError, ArithmeticError, RuntimeError):
                    metric, fitted, seconds = math.nan, m, math.nan
            records.append({"mode": mode, "scenario": s, "trial": trial, "mechanism": m, "metric": metric,
                            "zero_release": cell["task"] == "covariance" and math.isclose(metric, exact, rel_tol=1e-9),
                            "seconds": seconds})
    frame = pd.DataFrame(records)
    for key, value in (("task", cell["task"]), ("notion", cell["notion"]), ("budget", cell["budget"]),
                       ("n", cell["n"]), ("d", cell["d"]), ("k", cell["k"])):
        frame[key] = value
    return frame


def relative(frame: pd.DataFrame, task: str) -> pd.DataFrame:
    """Each trial's metric relative to the best compared mechanism in that trial and scenario (1 = the best)."""
    wide = frame.pivot_table(index=["mode", "scenario", "trial"], columns="mechanism", values="metric")
    if task == "pca":
        best = wide.max(axis=1)
        rel = wide.div(best, axis=0).where(best > 0, 1.0)
    else:
        best = wide.min(axis=1)
        rel = (1.0 / wide).mul(best, axis=0).where(wide > 0, 1.0)
    return rel.fillna(0.0)


def summarize(cell: dict, frame: pd.DataFrame) -> dict:
    rel = relative(frame, cell["task"])
    weights = pd.Series(scenario_weights(cell), index=range(len(SCENARIOS)))
    out = {"weights": weights}
    for mode in MODES:
        part = rel.loc[mode]
        per_trial = part.mul(weights, axis=0, level="scenario").groupby(level="trial").sum()  # weighted over scenarios
        t = len(per_trial)
        scores = {m: (per_trial[m].mean(), per_trial[m].std(ddof=1) / math.sqrt(t)) for m in cell["compared"]}
        diff = per_trial[cell["new"]] - per_trial[cell["old"]]
        d_mean, d_se = diff.mean(), diff.std(ddof=1) / math.sqrt(t)
        worse = d_mean < -0.01 and (d_se == 0 or d_mean < -2 * d_se)
        by_scenario = part.groupby(level="scenario")
        scenario_diff = (by_scenario.mean()[cell["new"]] - by_scenario.mean()[cell["old"]])
        scenario_se = (part[cell["new"]] - part[cell["old"]]).groupby(level="scenario").std(ddof=1) / math.sqrt(t)
        out[mode] = {"trials": t, "scores": scores, "diff": (d_mean, d_se), "verdict": "new worse" if worse else "new >= old",
                     "scenario_diff": scenario_diff.to_dict(), "scenario_se": scenario_se.to_dict()}
    part = frame[frame["mode"] == "table data"]
    out["raw"] = part.groupby(["mechanism", "scenario"]).metric.agg(["mean", "std", "count"])
    out["zero"] = frame.groupby("mechanism").zero_release.mean().to_dict()
    out["failed"] = int(frame.metric.isna().sum())
    return out


def cell_name(cell: dict) -> str:
    budget = {"zcdp": f"rho={cell['budget']:g}", "approx": f"eps={cell['budget']:g} d=1e-6",
              "pure": f"eps={cell['budget']:g}"}[cell["notion"]]
    k = f" k={cell['k']}" if cell["task"] == "pca" else ""
    return f"{cell['task']:10s} {budget:16s} n={cell['n']:<5d} d={cell['d']:<2d}{k}"


METRICS = "PCA: captured variance ratio, higher better; covariance: Frobenius error, ridge: training MSE, lower better"


def report(cells: list[dict], results: list[dict], trials: int, seconds: float, n_jobs: int, part: str,
           note: str = "") -> str:
    lines = [f"# python scripts/defaults_hardened.py --part {part} --trials {trials} --n-jobs {n_jobs}: {seconds:.0f} s "
             f"on the 2-core machine (other jobs on it)"] + ([f"# {note}"] if note else [])
    if part == "plain":
        lines += [
            "# auto's choice without a released median (the table's ranking, every scenario weighing the same, restricted",
            f"# to hardenable mechanisms) changed when {', '.join(NEWLY_HARDENED)} became hardenable (issue 55) in",
            f"# {len(cells)} of the {len(defaults.grid_cells())} cells of dpcov/auto_table.csv. Score: the metric relative "
            "to the best of the mechanisms",
            "# compared in that trial and scenario (1 = best), averaged over the five scenarios with equal weights."]
    else:
        lines += [
            "# The cells where the estimator releases the rows' median norm (defaults.releases_typical, replace_one, default",
            "# shares) and auto's choice, weighed by it, changed for some typical norm of defaults.TYPICALS when the four",
            "# became hardenable (one entry per cell and old -> new; 'at typical' lists those norms). Score: as in part",
            "# plain, but the scenarios weighed as advise weighs them for those norms (weights w, scenario typical norms t).",
            "# Measured: the old and the new choice only."]
    lines += [
        f"# Measured with hardened numerics (score_fit: through the estimators, privacy_unit='replace_one', as the table), "
        f"{trials} trials",
        "# per scenario with fresh noise seeds; 'table data' = the table's rows (seed 0), 'fresh data' = new rows per trial.",
        "# mean +- se over trials; diff = new - old, paired by trial; verdict: 'new worse' iff diff < -0.01 and < -2 se.",
        "# table: the table's smoothed score (advise's ranking; relative to the best of ALL candidates, idealized numerics).",
        "# per scenario: new - old per scenario 0-4 (mean over trials; se about the same as the diff's x sqrt(5)).", "",
        "## The changed cells (old -> new; the table's first where it is idealized only)", ""]
    for cell in cells:
        ideal = f"; table's first {cell['idealized']} (idealized only)" if cell["idealized"] else ""
        table = ", ".join(f"{m} {v:.3f}" for m, v in cell["table"].items())
        where = (f"; at typical {', '.join(f'{t:.2f}' for t in cell['typicals'])}" if cell["typicals"]
                 else f"; releases_typical={cell['releases_typical']}")
        lines.append(f"{cell_name(cell)}  {cell['old']} -> {cell['new']}{ideal}  [table: {table}{where}]")
    lines += ["", "## Measured (hardened numerics)", ""]
    header = f"{'cell':44s} {'data':10s} {'mechanism':20s} {'score':>7s} {'se':>6s}   {'table':>5s}"
    for cell, res in zip(cells, results):
        lines.append(header)
        if cell["typicals"]:
            w = " ".join(f"{v:.2f}" for v in res["weights"])
            t = " ".join(f"{v:.2f}" for v in cell["scenario_typicals"])
            lines.append(f"{'':44s} scenario weights w [{w}], typical norms t [{t}]")
        for mode in MODES:
            r = res[mode]
            for m in cell["compared"]:
                role = "old" if m == cell["old"] else "new" if m == cell["new"] else "ideal."
                mean, se = r["scores"][m]
                lines.append(f"{cell_name(cell):44s} {mode:10s} {m + ' (' + role + ')':20s} {mean:7.4f} {se:6.4f}   "
                             f"{cell['table'][m]:5.3f}")
            d_mean, d_se = r["diff"]
            per_scenario = " ".join(f"{v:+.3f}" for _, v in sorted(r["scenario_diff"].items()))
            lines.append(f"{'':44s} {mode:10s} diff new-old {d_mean:+.4f} +- {d_se:.4f} (z {d_mean / d_se if d_se else 0:+.1f})"
                         f"  per scenario [{per_scenario}]  -> {r['verdict']}")
        if res["failed"]:
            lines.append(f"{'':44s} FAILED fits (scored 0): {res['failed']}")
        if cell["task"] == "covariance":
            zero = ", ".join(f"{m} {v:.0%}" for m, v in res["zero"].items())
            lines.append(f"{'':44s} releases exactly the zero matrix: {zero}")
        lines.append("")
    lines += [f"## Raw metric, table data: mean (sd/sqrt(trials)) per scenario 0-4 ({METRICS})", ""]
    for cell, res in zip(cells, results):
        raw = res["raw"]
        for m in cell["compared"]:
            values = " ".join(f"{raw.loc[(m, s), 'mean']:.4g} ({raw.loc[(m, s), 'std'] / math.sqrt(raw.loc[(m, s), 'count']):.1g})"
                              for s in range(len(SCENARIOS)))
            lines.append(f"{cell_name(cell):44s} {m:13s} {values}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("plain", "typical"), default="plain",
                        help="plain: the cells changed without a released median; typical: those changed with one")
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help=f"default: {OUT.relative_to(ROOT)} (--part typical: appended)")
    parser.add_argument("--note", default="", help="a line for the report's header (e.g. the commit measured)")
    args = parser.parse_args(argv)
    cells = changed_cells() if args.part == "plain" else changed_with_typical()
    print(f"{len(cells)} changed cells ({args.part})", flush=True)
    for cell in cells:
        print(f"  {cell_name(cell)}  {cell['old']} -> {cell['new']}"
              + (f" (table's first: {cell['idealized']})" if cell["idealized"] else "")
              + (f" at typical {cell['typicals']}" if cell["typicals"] else ""), flush=True)
    started = time.perf_counter()
    jobs = [(i, s, mode) for i in range(len(cells)) for s in range(len(SCENARIOS)) for mode in MODES]
    jobs.sort(key=lambda j: -cells[j[0]]["n"] * cells[j[0]]["d"] ** 2)  # heavy first, so the workers end together
    frames = Parallel(n_jobs=args.n_jobs)(delayed(run_scenario)(cells[i], s, mode, args.trials) for i, s, mode in jobs)
    seconds = time.perf_counter() - started
    by_cell = [pd.concat([f for (i, _, _), f in zip(jobs, frames) if i == c], ignore_index=True)
               for c in range(len(cells))]
    results = [summarize(cell, frame) for cell, frame in zip(cells, by_cell)]
    text = report(cells, results, args.trials, seconds, args.n_jobs, args.part, args.note)
    out = args.out or OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.part == "typical" and args.out is None and out.exists():
        text = out.read_text() + "\n" + text
    out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
