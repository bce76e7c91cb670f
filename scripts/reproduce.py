"""Regenerate every committed paper figure at paper scale, skipping what is complete; then rebuild
the generated tables at the end of REPRODUCTION.md from the summaries.

    python scripts/reproduce.py --status          what is complete, what is left, time estimate
    python scripts/reproduce.py --all             run everything that is not complete (resumable)
    python scripts/reproduce.py fig3a amin/fig1a  only these targets (by name or output dir)
    python scripts/reproduce.py --tables          only rebuild the tables

A target is complete when its summary.csv has every (mechanism, grid point) at the paper's trial
count. Interrupted targets resume from their results.csv (experiments/store.py).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments.config import compose_experiment  # noqa: E402
from experiments.runner import in_experiment, run_experiment  # noqa: E402
from experiments.seeding import canonical  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from table import markdown  # noqa: E402

REPRODUCTION = ROOT / "REPRODUCTION.md"
BEGIN, END = "<!-- generated tables: begin -->", "<!-- generated tables: end -->"


@dataclass(frozen=True)
class Target:
    out: str  # under results/
    experiment: str
    overrides: tuple = ()
    x: str = ""
    panel: str | None = None
    seconds_per_run: float = 0.05  # wall seconds per run on 2 cores, for targets with no results yet

    @property
    def name(self) -> str:
        return self.out.split("/", 1)[1]


TARGETS = [
    Target("dong2022/fig2", "synthetic_unit_norm", x="d", panel="n", seconds_per_run=0.07),
    Target("dong2022/fig3a", "synthetic_trace", x="N"),
    Target("dong2022/fig3b", "synthetic_dim", x="d", seconds_per_run=0.2),
    Target("dong2022/fig3c", "synthetic_samples", x="n"),
    Target("dong2022/fig3d", "synthetic_rho", x="rho"),
    Target("dong2022/fig4", "mnist_rho", x="rho", panel="n", seconds_per_run=0.5),
    Target("dong2022/fig5", "news_rho", x="rho", panel="d", seconds_per_run=0.25),
    Target("dong2022/fig6", "mnist_digits", x="rho", panel="digit", seconds_per_run=0.4),
    Target("dong2022/fig7", "pure_unit_norm", x="d", panel="n", seconds_per_run=0.12),
    Target("dong2022/fig8_trace", "pure_trace", x="N", panel="n"),
    Target("dong2022/fig8_dim", "pure_dim", x="d", panel="n", seconds_per_run=0.15),
    Target("dong2022/fig8_eps", "pure_eps", x="eps", panel="n"),
    Target("wangxu/sparsity", "wangxu_sparsity", x="n", panel="sr"),
    Target("wangxu/dim", "wangxu_dim", x="n", panel="p"),
    Target("wangxu/eps", "wangxu_eps", x="n", panel="eps"),
    Target("amin2019/fig1a", "amin_fig1a", x="eps", panel="name"),
    Target("amin2019/fig1b", "amin_fig1b", x="eps", panel="name"),
    Target("amin2019/zcdp", "amin_zcdp", x="eps", panel="name"),
    Target("amin2019/regression", "amin_regression", x="eps", panel="name"),
    Target("amin2019/fig1a_raw", "amin_fig1a", ("params.preprocess=raw",), x="eps", panel="name"),
    Target("amin2019/fig1b_raw", "amin_fig1b", ("params.preprocess=raw",), x="eps", panel="name"),
    Target("amin2019/regression_raw", "amin_regression", ("params.preprocess=raw",), x="eps", panel="name"),
    Target("lecture/stable_mahalanobis", "stable_mahalanobis", x="n", panel="kappa", seconds_per_run=0.1),
]


def experiment_of(target: Target, n_jobs: int = -1):
    return compose_experiment([f"experiment={target.experiment}", "scale=paper", f"n_jobs={n_jobs}",
                               f"output_dir={ROOT / 'results' / target.out}", *target.overrides])


def progress(target: Target) -> tuple[int, int, float]:
    """(runs done, runs in total, estimated seconds left) from the committed summary.csv (or, for a
    run in progress, its results.csv)."""
    exp = experiment_of(target)
    total = exp.total_runs()
    out = ROOT / "results" / target.out
    done, per_run = 0, target.seconds_per_run
    if (out / "results.csv").exists():
        frame = pd.read_csv(out / "results.csv", low_memory=False)
        frame = frame[in_experiment(exp, frame)]
        done = len(frame)
        if done:
            per_run = float(frame.seconds.mean()) / 2  # 2 worker processes
    elif (out / "summary.csv").exists():
        names = exp.param_names()
        keys = {tuple(canonical(p[k]) for k in names) for p in exp.grid()}
        trials = {m: exp.trials_for(m) for m in exp.mechanisms}
        summary = pd.read_csv(out / "summary.csv")
        summary = summary[summary.mechanism.isin(exp.mechanisms)]
        in_grid = summary[names].apply(lambda r: tuple(canonical(v) for v in r), axis=1).isin(keys)
        count = [c for c in summary.columns if c.endswith("_count")][0]
        done = int(summary.loc[in_grid, count].clip(upper=summary.mechanism.map(trials)).sum())
        per_run = float((summary.seconds_mean * summary[count]).sum() / max(summary[count].sum(), 1)) / 2
    return min(done, total), total, (total - min(done, total)) * per_run


def tables() -> str:
    parts = [BEGIN, "## Generated tables (mean error over trials; `python scripts/reproduce.py --tables`)", ""]
    for target in TARGETS:
        path = ROOT / "results" / target.out / "summary.csv"
        if not path.exists():
            parts += [f"### {target.out}: not generated yet", ""]
            continue
        summary = pd.read_csv(path)
        metric = [c for c in summary.columns if c.startswith("err_") and c.endswith("_mean")][0][4:-5]
        parts += [f"### {target.out} (`{target.experiment}`{''.join(' ' + o for o in target.overrides)}, {metric})", ""]
        groups = summary.groupby(target.panel) if target.panel else [(None, summary)]
        others = {"d", "scaling"} & set(summary.columns) if target.experiment == "news_rho" else set()
        for value, part in groups:
            if value is not None:
                parts += [f"{target.panel} = {value if isinstance(value, str) else f'{value:g}'}", ""]
            for column in sorted(others - {target.panel}):
                for sub, piece in part.groupby(column):
                    parts += [f"{column} = {sub}", "", markdown(piece, target.x, metric), ""]
            if not (others - {target.panel}):
                parts += [markdown(part, target.x, metric), ""]
    parts.append(END)
    return "\n".join(parts)


def rebuild_tables() -> None:
    text = REPRODUCTION.read_text()
    if BEGIN in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1] if END in rest else ""
        text = head.rstrip("\n") + "\n\n" + tables() + tail
    else:
        text = text.rstrip("\n") + "\n\n" + tables() + "\n"
    REPRODUCTION.write_text(text)
    print(f"rebuilt the generated tables in {REPRODUCTION}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", help="target names (e.g. fig3a) or output dirs (dong2022/fig3a)")
    parser.add_argument("--all", action="store_true", help="every target")
    parser.add_argument("--status", action="store_true", help="print progress and the time estimate only")
    parser.add_argument("--tables", action="store_true", help="only rebuild REPRODUCTION.md's tables")
    parser.add_argument("--n-jobs", type=int, default=-1)
    args = parser.parse_args()
    if args.tables:
        rebuild_tables()
        return
    chosen = TARGETS if args.all or args.status and not args.targets else []
    for wanted in args.targets:
        match = [t for t in TARGETS if wanted in (t.name, t.out)]
        if not match:
            parser.error(f"unknown target {wanted!r}; known: {', '.join(t.out for t in TARGETS)}")
        chosen += match
    if not chosen:
        parser.error("name targets, or use --all / --status / --tables")
    states = {t.out: progress(t) for t in chosen}
    left = sum(s[2] for s in states.values())
    for t in chosen:
        done, total, seconds = states[t.out]
        mark = "complete" if done == total else f"{done}/{total} runs, ~{seconds / 60:.0f} min left"
        print(f"{t.out:32s} {mark}")
    print(f"estimated time left: ~{left / 60:.0f} min on this machine")
    if args.status:
        return
    start = time.perf_counter()
    for t in chosen:
        done, total, seconds = progress(t)
        if done == total:
            continue
        left -= seconds
        print(f"\n=== {t.out}: {total - done} runs (~{seconds / 60:.0f} min; then ~{left / 60:.0f} min for the rest)",
              flush=True)
        run_experiment(experiment_of(t, args.n_jobs))
    print(f"\nall targets complete ({(time.perf_counter() - start) / 60:.1f} min)")
    rebuild_tables()


if __name__ == "__main__":
    main()
