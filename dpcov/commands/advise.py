"""Which mechanism should I use? Predicted errors from public facts only (n, d, the norm bound, the
budget), never the data, ranked, with the nearest committed measurement of each mechanism.

    dpcov advise --n 20000 --d 300 --rho 0.1
    dpcov advise --n 20000 --d 300 --eps 1 --delta 1e-6 --radius 2 --trace 0.5
    dpcov advise --table mydata.csv --columns a,b,c --bound 2 --rho 0.1
    dpcov advise --phase-diagram        # the figure of the committed (d, n) sweep

Predictions: what each mechanism declares in the registry (``Mechanism.predict``; a plug-in's
``register_mechanism(..., predict=...)``), read through experiments/theory.py ``predicted_error``:
- "exact": the expected Frobenius norm of the mechanism's noise (GaussCov, LapCov, Amin's L, the
  analytic Gaussian). The release is then clamped to eigenvalues in [0, r^2], which can only lower
  the error -- a lot when tr(Sigma) is far below r^2 -- so these are upper estimates.
- "bound": a theorem's leading-order bound with one constant fitted to the committed results (Dong
  Thm 1 / App. I for SeparateCov, Thm 3 / Thm 4 for AdaptiveCov, App. C for EMCov; Amin Thm 2 for
  AD/IT-U, KT's Thm 18),
  at the worst spectrum for the given trace.
- the zero matrix: ||Sigma||_F <= tr(Sigma), shown at that worst case (a rank-one Sigma).
The trace is not public; by default the worst case tr = r^2 (every row on the sphere), else
``--trace`` (a public bound or a prior). Mechanisms that declare no prediction get only the nearest
committed measurement: the mean error of results/*/summary.csv at the closest (n, d, budget, trace),
on Dong et al.'s synthetic data (the only committed data whose trace is known without the data),
whose spectra may not resemble yours.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd


from dpcov.experiments.advisor import candidates, simulate, spectrum
from dpcov.experiments.config import budget_from_params, load_yaml
from dpcov.experiments.theory import line_budget, predicted_error, prediction_of, zipf_trace
from dpcov.mechanisms.privacy import PureDP, ZCDP, budget_guaranteeing
from dpcov.mechanisms.registry import get_mechanism
from dpcov.mechanisms.units import COUNT_SHARE
from dpcov.data.table import find_file, read_table, select_columns
from dpcov.figures.style import paper_name, style_for
from dpcov.figures.plot import tight_layout
from . import project_root

ROOT = project_root()

RESULTS = ROOT / "results"
PHASE_DIR = RESULTS / "advisor" / "phase_diagram"
# Matrix mechanisms that run from (n, d, r, budget) alone, as each declares in the registry: no
# option to choose (a clipping threshold), no raw rows, no regression task.
DEFAULT_MECHANISMS = tuple(candidates())
AGREEMENT = RESULTS / "advisor" / "agreement"
DEFAULT_DECAY = 1.0  # eigenvalues ~ 1/i: a spectrum with structure (a flat one favours the eigenvector samplers)
MEASURED_CAVEATS = """caveats:
- measured = the mean Frobenius error over the trials shown, with a 95 % interval, on synthetic rows that
  match only the facts above (eigenvalues ~ i^-decay; row norms --norms: by default tr/r^2 of the rows on
  the sphere and the rest 0, where clipping gains least), never your data; a different spectrum or
  distribution of row norms can reorder mechanisms (AdaptiveCov gains from norms well inside the ball:
  --norms equal), so state what you may (--trace, --decay, --norms);
- theory = the prediction each mechanism declares (exact noise before the clamp, or a theorem's bound
  with one fitted constant) on the same assumed spectrum; "—": none declared;
- how often the first choice was the measured best on the committed targets: results/advisor/agreement/."""
CAVEATS = """caveats:
- predictions use only n, d, r, the budget and the trace assumed above, never the data;
- exact = expected error of the noise before the eigenvalue clamp into [0, r^2] (the clamp only
  lowers it, most when tr << r^2); bound = a theorem's leading order with one fitted constant, at
  the worst spectrum for that trace; zero = ||Sigma||_F <= tr, at its worst case;
- measured = the committed mean error nearest in (n, d, budget, trace) on Dong et al.'s synthetic
  data (target named; the phase-diagram sweep covers d <= 400, n <= 64000 at tr = 1 and 0.04): a
  different spectrum or distribution of row norms can reorder mechanisms, AdaptiveCov most of all,
  so check with  dpcov run experiment=table_rho  on data you may look at."""


def budget_value(budget) -> float:
    """The number that sets a budget's noise level: rho for zCDP, eps otherwise."""
    return budget.rho if isinstance(budget, ZCDP) else budget.eps


def summaries(root: Path = RESULTS) -> pd.DataFrame:
    """Every committed summary.csv row with its target (results/<target>/summary.csv) and, where the
    data's trace is known in closed form (Dong's synthetic data: n, N, s), a ``trace`` column."""
    frames = []
    for path in sorted(root.glob("*/*/summary.csv")):
        frame = pd.read_csv(path, low_memory=False)
        frames.append(frame.assign(target=str(path.parent.relative_to(root))))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    table["trace"] = np.nan
    if not table.empty and {"n", "N", "s"} <= set(table.columns):
        zipf = (table.dataset == "synthetic_zipf") & table[["n", "N", "s"]].notna().all(axis=1)
        keys = table.loc[zipf, ["n", "N", "s"]].drop_duplicates().itertuples(index=False, name=None)
        traces = {k: zipf_trace(int(k[0]), int(k[1]), float(k[2])) for k in keys}
        table.loc[zipf, "trace"] = [traces[k] for k in table.loc[zipf, ["n", "N", "s"]].itertuples(index=False, name=None)]
    return table


def nearest_measurement(mechanism: str, n: int, d: int, budget, trace: float, metric: str, table: pd.DataFrame):
    """(mean error, description, distance) of the committed row of ``mechanism`` nearest to (n, d,
    budget, trace) in the sum of |log ratio|s (same budget notion; rows of known trace only); or None."""
    column = f"err_{metric}_mean"
    if table.empty or column not in table or not {"n", "d", "trace"} <= set(table.columns):
        return None
    rows = table[(table.mechanism == mechanism) & table[column].notna() & table.n.notna() & table.d.notna()
                 & table.trace.notna()]
    best = None
    for row in rows.to_dict("records"):
        point = {k: row[k] for k in ("rho", "eps", "delta") if k in row and pd.notna(row[k])}
        if "delta" in point and point["delta"] != "1/n":
            point["delta"] = float(point["delta"])
        try:
            theirs = line_budget(mechanism, {**point, "n": row["n"]})
        except ValueError:
            continue
        if type(theirs) is not type(budget):
            continue
        distance = (abs(math.log(row["n"] / n)) + abs(math.log(row["d"] / d)) + abs(math.log(row["trace"] / trace))
                    + abs(math.log(budget_value(theirs) / budget_value(budget))))
        if best is None or distance < best[2]:
            where = (f"{row[column]:.3g} at n={row['n']:g}, d={row['d']:g}, {theirs}, tr={row['trace']:.2g} "
                     f"({row['target']})")
            best = (float(row[column]), where, distance)
    return best


def advise(n: int, d: int, budget, radius: float = 1.0, trace: float | None = None, metric: str = "fro",
           mechanisms=DEFAULT_MECHANISMS, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per mechanism that can meet ``budget``: its own budget, predicted error and kind,
    nearest committed measurement; ranked by predicted error (no prediction: after, by measured)."""
    trace = radius**2 if trace is None else trace
    if not 0 < trace <= radius**2:
        raise ValueError(f"trace must lie in (0, r^2] = (0, {radius**2:g}], got {trace!r}")
    table = summaries() if table is None else table
    point = budget_point(budget)
    rows = []
    for name in mechanisms:
        mechanism = get_mechanism(name)
        try:
            own = budget_guaranteeing(budget, mechanism.notion)
        except ValueError:
            continue  # cannot meet this guarantee
        params = {"n": n, "d": d, "radius": radius, **point, "trace": trace, "fro_sigma": trace,
                  "eigenvalues": np.full(d, trace / d)}  # the worst spectrum for the bounds
        predicted = predicted_error(name, params, metric)
        prediction = prediction_of(name)
        measured = nearest_measurement(name, n, d, own, trace, metric, table)
        rows.append({"mechanism": name, "label": mechanism.label, "runs at": str(own),
                     "predicted": predicted, "kind": prediction.kind if predicted is not None else "none",
                     "measured": None if measured is None else measured[0],
                     "nearest measurement": "none committed" if measured is None else measured[1]})
    frame = pd.DataFrame(rows)
    order = frame.assign(_p=frame.predicted.fillna(np.inf), _m=frame.measured.fillna(np.inf))
    return frame.loc[order.sort_values(["_p", "_m"], kind="stable").index].reset_index(drop=True)


def budget_point(budget) -> dict:
    if isinstance(budget, ZCDP):
        return {"rho": budget.rho}
    return {"eps": budget.eps} if isinstance(budget, PureDP) else {"eps": budget.eps, "delta": budget.delta}


def measured_advice(n: int, d: int, budget, radius: float = 1.0, trace: float | None = None,
                    decay: float = DEFAULT_DECAY,
                    mechanisms=DEFAULT_MECHANISMS, seconds: float = 30.0, trials: int | None = None, seed: int = 0,
                    n_jobs: int = -1, options: dict | None = None, norms: str = "extreme",
                    privacy_unit: str = "replace_one") -> pd.DataFrame:
    """The simulation's ranking (experiments/advisor.py) with each mechanism's declared prediction on the
    same assumed spectrum beside it (``theory``, ``kind``; replace-one's)."""
    trace = radius**2 if trace is None else trace
    frame = simulate(n, d, budget, radius, trace, decay, mechanisms, seconds, trials, seed, n_jobs, options=options,
                     norms=norms, privacy_unit=privacy_unit)
    params = {"n": n, "d": d, "radius": radius, **budget_point(budget), "eigenvalues": spectrum(d, trace, decay)}
    theory = [predicted_error(m, params) for m in frame.mechanism]
    frame["theory"] = [np.nan if t is None else t for t in theory]
    frame["kind"] = [prediction_of(m).kind if t is not None else "none" for m, t in zip(frame.mechanism, theory)]
    return frame


def render_measured(frame: pd.DataFrame) -> str:
    lines = ["| rank | mechanism | runs at | measured mean error [95 % interval] | trials | s / release | "
             "theory (kind) |", "|---|---|---|---|---|---|---|"]
    for rank, row in enumerate(frame.to_dict("records"), 1):
        if row["failed"] and not row["trials"]:
            measured = f"failed: {row['failed'][:80]}"
        else:
            interval = "" if pd.isna(row["low"]) else f" [{row['low']:.3g}, {row['high']:.3g}]"
            measured = f"{row['measured']:.3g}{interval}" + (" (some trials failed)" if row["failed"] else "")
        theory = "—" if pd.isna(row["theory"]) else f"{row['theory']:.3g} ({row['kind']})"
        lines.append(f"| {rank} | {row['label']} (`{row['mechanism']}`) | {row['runs at']} | {measured} | "
                     f"{row['trials']} | {row['seconds']:.2g} | {theory} |")
    return "\n".join(lines)


def render(frame: pd.DataFrame) -> str:
    lines = ["| rank | mechanism | runs at | predicted | kind | nearest committed measurement |",
             "|---|---|---|---|---|---|"]
    for rank, row in enumerate(frame.to_dict("records"), 1):
        predicted = "—" if pd.isna(row["predicted"]) else f"{row['predicted']:.3g}"
        lines.append(f"| {rank if not pd.isna(row['predicted']) else '–'} | {row['label']} (`{row['mechanism']}`) | "
                     f"{row['runs at']} | {predicted} | {row['kind']} | {row['nearest measurement']} |")
    return "\n".join(lines)


def table_shape(path: str, columns: str | None) -> tuple[int, int]:
    """n and d of a table file (its shape only; no value is used)."""
    file = find_file(path)
    array, frame = read_table(file)
    chosen = None if columns is None else [int(c) if array is not None else c for c in columns.split(",")]
    X, _ = select_columns(file, array, frame, chosen)
    return X.shape


# --- the phase diagram: best mechanism over (d, n), from the committed sweep --------------------------

def best_by_cell(summary: pd.DataFrame, metric: str = "fro") -> pd.DataFrame:
    """Per (N, n, d): the mechanism with the lowest mean error and its ratio to the runner-up."""
    column = f"err_{metric}_mean"
    rows = []
    for (N, n, d), cell in summary.groupby(["N", "n", "d"]):
        ranked = cell.sort_values(column)
        first, second = ranked.iloc[0], ranked.iloc[1] if len(ranked) > 1 else None
        rows.append({"N": N, "n": n, "d": d, "best": first["label"], "error": first[column],
                     "margin": (second[column] / first[column]) if second is not None else np.nan})
    return pd.DataFrame(rows)


def part_trace(summary: pd.DataFrame, N) -> float:
    """tr(Sigma) of the synthetic data at N (the largest n of the sweep; it hardly depends on n)."""
    part = summary[summary.N == N]
    return zipf_trace(int(part.n.max()), int(N), float(part.s.iloc[0]))


def phase_diagram(directory: Path = PHASE_DIR, metric: str = "fro") -> tuple[Path, pd.DataFrame]:
    """directory/phase.png (+ .pdf): one panel per N (tr = 1, tr < 1), cells coloured by the best."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    summary = pd.read_csv(Path(directory) / "summary.csv")
    cells = best_by_cell(summary, metric)
    labels = sorted(cells.best.unique())
    colours = {label: style_for(label).colour for label in labels}  # the same colour as every figure
    Ns = sorted(cells.N.unique())
    fig, axes = plt.subplots(1, len(Ns), figsize=(5.2 * len(Ns), 4.2), squeeze=False)
    for ax, N in zip(axes[0], Ns):
        part = cells[cells.N == N]
        ds, ns = sorted(part.d.unique()), sorted(part.n.unique())
        for row in part.to_dict("records"):
            x, y = ds.index(row["d"]), ns.index(row["n"])
            ax.add_patch(plt.Rectangle((x - 0.5, y - 0.5), 1, 1, color=colours[row["best"]], alpha=0.75))
            ax.text(x, y, f"×{row['margin']:.2g}", ha="center", va="center", fontsize=8)
        ax.set_xlim(-0.5, len(ds) - 0.5), ax.set_ylim(-0.5, len(ns) - 0.5)
        ax.set_xticks(range(len(ds)), [f"{v:g}" for v in ds]), ax.set_yticks(range(len(ns)), [f"{v:g}" for v in ns])
        trace = "tr = 1 (N = 1: every row norm 1)" if N == 1 else \
            f"tr < 1 (N = {N:g}: Zipf row norms, tr = {part_trace(summary, N):.2g})"
        ax.set_xlabel("d"), ax.set_ylabel("n"), ax.set_title(trace)
    rho = ", ".join(f"ρ = {v:g}" for v in sorted(summary.rho.unique())) if "rho" in summary else ""
    fig.suptitle(f"lowest mean {metric} error ({rho}); cell text: runner-up's error / best's")
    fig.legend(handles=[Patch(color=colours[k], alpha=0.75, label=paper_name(k)) for k in labels], loc="lower center",
               ncol=len(labels), frameon=False)
    tight_layout(fig, rect=(0, 0.07, 1, 0.95))
    png = Path(directory) / "phase.png"
    fig.savefig(png, dpi=130), fig.savefig(png.with_suffix(".pdf"))
    plt.close(fig)
    return png, cells


def positive(kind):
    def parse(text):
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value
    return parse


# --- how often the advisor's first choice is the measured best, on the committed targets ----------------

AGREEMENT_TARGETS = ("dong2022/fig2", "dong2022/fig3a", "dong2022/fig3b", "dong2022/fig3c", "dong2022/fig3d",
                     "dong2022/fig7", "dong2022/fig8_dim", "dong2022/fig8_eps", "dong2022/fig8_trace",
                     "advisor/phase_diagram")


def agreement_cells(targets=AGREEMENT_TARGETS, root: Path = RESULTS, every: int = 1) -> list[dict]:
    """The grid points of committed targets on Dong et al.'s synthetic data (their trace is public in
    closed form): n, d, the budget, the trace, and the measured mean error of every candidate mechanism
    (registered, runnable from public facts) at that point; every ``every``-th point."""
    cells = []
    for target in targets:
        summary = pd.read_csv(root / target / "summary.csv")
        config = load_yaml(root / target / "config.yaml")
        options = {k: dict(v) for k, v in (config.get("mechanism_options") or {}).items() if v}  # as committed
        summary = summary[summary.mechanism.isin(DEFAULT_MECHANISMS) & (summary.dataset == "synthetic_zipf")]
        keys = [k for k in ("n", "d", "N", "s", "rho", "eps", "delta") if k in summary and summary[k].notna().any()]
        for key, part in summary.groupby(keys, sort=True):
            point = dict(zip(keys, key))
            if part.mechanism.nunique() < 2:
                continue
            cells.append({"target": target, **point, "trace": zipf_trace(int(point["n"]), int(point["N"]), point["s"]),
                          "measured": dict(zip(part.mechanism, part.err_fro_mean)), "options": options})
    return cells[::every]


def agreement(cells: list[dict], trials: int = 5, decay: float = DEFAULT_DECAY, seed: int = 0,
              norms: str = "extreme") -> pd.DataFrame:
    """Per cell: the measured best, the advisor's first choice (simulation with the cell's public facts,
    the stated trace and the default spectrum), the theory-only first choice (old advisor), and
    each choice's measured error over the best's (its regret)."""
    rows = []
    for i, cell in enumerate(cells, 1):
        budget = budget_from_params({k: cell[k] for k in ("rho", "eps", "delta", "n") if k in cell})
        names = sorted(cell["measured"])
        frame = measured_advice(int(cell["n"]), int(cell["d"]), budget, 1.0, cell["trace"], decay, names,
                                trials=trials, seed=seed, options=cell["options"], norms=norms)
        best = min(names, key=cell["measured"].get)
        chosen = frame.mechanism.iloc[0]
        theory = frame.dropna(subset=["theory"]).sort_values("theory", kind="stable")
        theory_first = theory.mechanism.iloc[0] if len(theory) else None
        rows.append({"target": cell["target"], "n": cell["n"], "d": cell["d"],
                     "budget": str(budget), "trace": cell["trace"], "best": best, "advisor": chosen,
                     "advisor_regret": cell["measured"][chosen] / cell["measured"][best],
                     "theory": theory_first,
                     "theory_regret": (cell["measured"][theory_first] / cell["measured"][best]) if theory_first else np.nan})
        print(f"[agreement] {i}/{len(cells)} {cell['target']} n={cell['n']:g} d={cell['d']:g}: best {best}, "
              f"advisor {chosen}, theory {theory_first}", flush=True)
    return pd.DataFrame(rows)


def agreement_report(frame: pd.DataFrame) -> str:
    def share(column, regret, limit=None):
        if limit is None:
            return f"{(frame[column] == frame.best).mean():.0%}"
        return f"{(frame[regret] <= limit).mean():.0%}"

    lines = ["# The advisor's first choice against the measured best, on the committed targets", "",
             "Generated by `dpcov advise --agreement` (docs/advisor.md). Each cell",
             "is a committed grid point on Dong et al.'s synthetic data (its trace is public in closed form); the",
             "advisor sees only n, d, r = 1, the budget and that trace (its default spectrum ~ 1/i and row norms, 5 trials",
             "per mechanism)",
             "and runs each mechanism with the options the target ran it with (its config.yaml);",
             "regret = the measured error of its choice / the measured best's.", "",
             f"{len(frame)} cells. | advisor (measures) | theory only (the previous advisor) |", "|---|---|---|",
             f"| first choice = measured best | {share('advisor', None)} | {share('theory', None)} |",
             f"| regret <= 1.1 | {share('advisor', 'advisor_regret', 1.1)} | {share('theory', 'theory_regret', 1.1)} |",
             f"| regret <= 1.5 | {share('advisor', 'advisor_regret', 1.5)} | {share('theory', 'theory_regret', 1.5)} |",
             f"| median regret | {frame.advisor_regret.median():.3g} | {frame.theory_regret.median():.3g} |",
             f"| worst regret | {frame.advisor_regret.max():.3g} | {frame.theory_regret.max():.3g} |", "",
             "Per target:", "", "| target | cells | advisor = best | theory = best |", "|---|---|---|---|"]
    for target, part in frame.groupby("target", sort=False):
        lines.append(f"| {target} | {len(part)} | {(part.advisor == part.best).mean():.0%} | "
                     f"{(part.theory == part.best).mean():.0%} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=positive(int), help="rows (public)")
    parser.add_argument("--d", type=positive(int), help="dimension")
    parser.add_argument("--table", help="a table file: n and d are read from its shape (no value is used)")
    parser.add_argument("--columns", help="the table's columns, comma-separated (default: all)")
    parser.add_argument("--bound", help="the table's norm bound r (a number; 'max': rows scaled to 1, not private)")
    parser.add_argument("--radius", type=positive(float), default=None, help="the rows' norm bound r (default 1)")
    parser.add_argument("--rho", type=float, help="rho-zCDP")
    parser.add_argument("--eps", type=float, help="eps-DP, or (eps, delta)-DP with --delta")
    parser.add_argument("--delta", type=float)
    parser.add_argument("--trace", type=positive(float), help="assumed tr(Sigma) (default: r^2, the worst case)")
    parser.add_argument("--decay", type=float, default=DEFAULT_DECAY,
                        help=f"assumed spectral decay: eigenvalues ~ i^-decay (default {DEFAULT_DECAY:g}; 0: flat, "
                             f"where any orthonormal eigenvectors are right and the eigenvector samplers win trivially)")
    parser.add_argument("--norms", choices=["extreme", "equal"], default="extreme",
                        help="assumed row norms: 'extreme' (default: tr/r^2 of the rows on the sphere, the rest 0, "
                             "the least favourable for clipping) or 'equal' (every row of norm sqrt(tr))")
    parser.add_argument("--seconds", type=positive(float), default=30.0, help="simulation time (default 30 s)")
    parser.add_argument("--trials", type=positive(int), help="fixed trials per mechanism (then reproducible exactly)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--privacy-unit", choices=["replace_one", "add_remove"], default="replace_one",
                        help="replace_one (n public, the papers' model; default) or add_remove (the estimators' "
                             "default: the count is released first, with units.COUNT_SHARE of the budget)")
    parser.add_argument("--theory-only", action="store_true",
                        help="no simulation: the declared predictions and the nearest committed measurements")
    parser.add_argument("--metric", default="fro", choices=["fro", "fro_rel"], help="(--theory-only) the metric")
    parser.add_argument("--mechanisms", help="comma-separated names or plug-in paths (default: every matrix mechanism)")
    parser.add_argument("--phase-diagram", nargs="?", const=str(PHASE_DIR), metavar="DIR",
                        help="draw the phase diagram of DIR/summary.csv (default: the committed sweep)")
    parser.add_argument("--agreement", nargs="?", const=str(AGREEMENT), metavar="DIR",
                        help="how often the first choice is the measured best on the committed targets; writes DIR")
    parser.add_argument("--every", type=positive(int), default=1, help="(--agreement) every k-th committed cell")
    args = parser.parse_args(argv)
    if args.phase_diagram:
        png, cells = phase_diagram(Path(args.phase_diagram), args.metric)
        print(cells.to_string(index=False))
        print(f"phase diagram: {png} (+ .pdf)")
        return
    if args.agreement:
        out = Path(args.agreement)
        out.mkdir(parents=True, exist_ok=True)
        frame = agreement(agreement_cells(every=args.every), trials=args.trials or 5, decay=args.decay, seed=args.seed,
                          norms=args.norms)
        frame.to_csv(out / "cells.csv", index=False)
        (out / "agreement.md").write_text(agreement_report(frame))
        print(agreement_report(frame))
        return
    radius = args.radius or 1.0
    if args.table:
        if args.n or args.d:
            parser.error("give --table or --n/--d, not both")
        if args.bound is None:
            parser.error("--table needs --bound: the declared norm bound r, or 'max'")
        if args.bound != "max":
            try:
                radius = positive(float)(args.bound)
            except (ValueError, argparse.ArgumentTypeError):
                parser.error(f"--bound must be a number > 0 or 'max', got {args.bound!r}")
        try:
            args.n, args.d = table_shape(args.table, args.columns)
        except (ValueError, FileNotFoundError) as err:
            parser.error(str(err))
        print(f"{args.table}: n = {args.n}, d = {args.d} (only the shape is used)"
              + ("; bound=max: rows scaled by their largest norm, a non-private step" if args.bound == "max" else ""))
    if not (args.n and args.d):
        parser.error("give --n and --d (or --table with --bound)")
    point = {k: getattr(args, k) for k in ("rho", "eps", "delta") if getattr(args, k) is not None}
    trace = args.trace if args.trace is not None else radius**2
    try:
        whole = budget_from_params(point)
        # add_remove: the released count takes COUNT_SHARE; the mechanism runs on the rest, with the count public
        budget = whole if args.privacy_unit == "replace_one" else whole.scaled(1 - COUNT_SHARE)
        mechanisms = args.mechanisms.split(",") if args.mechanisms else DEFAULT_MECHANISMS
        if args.theory_only:
            frame = advise(args.n, args.d, budget, radius, args.trace, args.metric, mechanisms)
        else:
            print(f"simulating {len(mechanisms)} mechanisms on synthetic data with these public facts "
                  f"({'%d trials each' % args.trials if args.trials else 'about %g s' % args.seconds}) ...", flush=True)
            frame = measured_advice(args.n, args.d, budget, radius, trace, args.decay, mechanisms, args.seconds,
                                    args.trials, args.seed, norms=args.norms, privacy_unit=args.privacy_unit)
    except ValueError as err:
        parser.error(str(err))
    if args.privacy_unit == "add_remove":
        print(f"privacy unit add_remove: the row count is released with {COUNT_SHARE:g} of {whole}; the mechanisms "
              f"below run at the rest, {budget}, each line with an add/remove calibration at its add/remove "
              f"sensitivity (measured; --theory-only predicts replace-one's), the others at replace-one's "
              f"(results/measurements/privacy_unit.txt)")
    print(f"n = {args.n}, d = {args.d}, r = {radius:g}, budget {budget}, assumed tr = {trace:g}"
          f"{' (the worst case)' if args.trace is None else ''}"
          f"{'' if args.theory_only else f', spectrum ~ i^-{args.decay:g}'}; metric "
          f"{args.metric if args.theory_only else 'fro'}\n")
    print(render(frame) if args.theory_only else render_measured(frame))
    print("\n" + (CAVEATS if args.theory_only else MEASURED_CAVEATS))


if __name__ == "__main__":
    main()
