"""The measurements behind the estimators' defaults (dpcov/defaults.py).

    python scripts/defaults.py build [--trials 2] [--n-jobs -1]   # the table mechanism="auto" reads
    python scripts/defaults.py pca [--seeds 5]                     # the defaults against the best, on real data
    python scripts/defaults.py agreement                           # auto's first choice on held-out targets
    python scripts/defaults.py fresh [--seeds 40]                  # pca's ratios re-measured on fresh seeds

build: every cell of the grid (dpcov/defaults.py) measured through the estimators on synthetic rows;
finished cells are kept in results/advisor/defaults/cells.csv, so an interrupted build resumes where it
stopped; the table is then written to dpcov/auto_table.csv.
pca: PrivatePCA(5) with every default left alone (--defaults-only: only the defaults fitted again, the
registered mechanisms' rows kept from the committed pca.csv) (radius=1.0, centering="private") against every
registered mechanism through the same estimator, on MNIST pooled to 7 x 7, scikit-learn's digits and
breast cancer, adult and wine, at eps in {0.5, 1, 2, 4, 16} and rho = 0.5; and radius="private"
against the loose radius 1 and the exact largest norm (the best fixed radius, read from the data: a
reference, not a private choice). Writes results/advisor/defaults/pca.csv and pca.md.
agreement: auto's first choice against the measured best on cells it was not tuned on -- the real-data
PCA cells above and the committed real-data targets (MNIST Figs. 4 and 6, News Fig. 5, Amin's UCI
targets) -- and in sample on its own grid. Writes results/advisor/defaults/agreement.md.
fresh: the default and each real-data cell's best registered mechanism -- picked on pca.csv's and
pca_held_out.csv's seeds -- fitted again on fresh seeds, so the ratio carries no winner's curse (the best
of ~17 noisy means is biased up on the seeds it was picked on); and what any choice from public facts
could reach on these sets: each cell's choice made from the other sets' measured cells. Writes
results/advisor/defaults/fresh.csv and fresh.md.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import dpcov  # noqa: E402
from dpcov import defaults, measure  # noqa: E402
from dpcov.commands.head_to_head import COMPONENTS, HELD_OUT_COMPONENTS, pca_data  # noqa: E402  (the same data)
from dpcov.commands.reproduce import TARGETS, experiment_of  # noqa: E402
from dpcov.data.registry import get_dataset  # noqa: E402
from dpcov.experiments.instances import data_params  # noqa: E402
from dpcov.experiments.seeding import generator, params_key  # noqa: E402
from dpcov.estimators import hardenable  # noqa: E402
from dpcov.mechanisms.registry import MECHANISMS  # noqa: E402

OUT = ROOT / "results" / "advisor" / "defaults"
PCA_BUDGETS = tuple(dpcov.PureDP(e) for e in (0.5, 1.0, 2.0, 4.0, 16.0)) + (dpcov.ZCDP(0.5), dpcov.ApproxDP(1.0, 1e-6))
PCA_DATA = ("mnist49", "digits", "cancer", "adult", "wine")
# the cells of the issue that asked for the defaults (docs/defaults.md): the table it measured
ISSUE_CELLS = {(name, budget) for name in ("mnist49", "digits", "cancer") for budget in ("1-DP", "4-DP", "0.5-zCDP")}
RADIUS_MECHANISMS = ("itu", "lap", "gauss")  # calibrated to the declared radius: where a loose one costs most


def _pca_fit(X, k, budget, seed, radius=1.0, mechanism="auto", privacy_unit="replace_one") -> tuple[float, str]:
    """(captured variance, the mechanism fitted: auto's choice may differ by seed, through the released median)"""
    try:
        return measure.score_fit("pca", mechanism, budget, X, None, k, seed, radius, privacy_unit=privacy_unit)[:2]
    except ValueError:  # radius="private" refuses too few rows for its share: reported as such
        return float("nan"), ""


def measure_pca(seeds: int, n_jobs: int, sets=PCA_DATA, kept: pd.DataFrame | None = None,
                privacy_unit: str = "replace_one") -> pd.DataFrame:
    """Every config of every cell; with ``kept`` (a committed pca.csv), only the defaults' configs ("default...")
    are fitted again and every registered mechanism's rows are kept from it."""
    rows = []
    for name in sets:
        X = pca_data(name)
        k = {**COMPONENTS, **HELD_OUT_COMPONENTS}[name]
        largest = float(np.linalg.norm(X, axis=1).max())
        configs = {"default": dict(radius=1.0), "default, radius=private": dict(radius="private"),
                   "default, exact radius": dict(radius=largest)}
        for budget in PCA_BUDGETS:
            configs_b = {**configs, **{m: dict(radius=1.0, mechanism=m)
                                       for m in defaults.candidates("pca", budget)}}
            for m in [m for m in RADIUS_MECHANISMS if m in configs_b]:
                configs_b.update({f"{m}, radius=private": dict(radius="private", mechanism=m),
                                  f"{m}, exact radius": dict(radius=largest, mechanism=m)})
            if kept is not None:
                configs_b = configs
                old = kept[(kept.data == name) & (kept.budget == str(budget)) & ~kept.config.str.startswith("default")]
            jobs = [(c, s, delayed(_pca_fit)(X, k, budget, s, **settings, privacy_unit=privacy_unit))
                    for c, settings in configs_b.items() for s in range(seeds)]
            values = Parallel(n_jobs=n_jobs)(job for _, _, job in jobs)
            chosen = pd.Series([m for (c, _, _), (_, m) in zip(jobs, values) if c == "default"]).mode()[0]
            rows += [{"data": name, "n": len(X), "d": X.shape[1], "k": k, "budget": str(budget), "config": c,
                      "seed": s, "captured": v, "mechanism": m, "auto": chosen}
                     for (c, s, _), (v, m) in zip(jobs, values)]
            if kept is not None:
                rows += old.assign(auto=chosen).to_dict("records")
            print(f"{name} {budget}: done", flush=True)
    return pd.DataFrame(rows)


def pca_report(frame: pd.DataFrame, held_out: bool = False) -> str:
    title = ("# PrivatePCA with its defaults against the best registered mechanism, on real data no default was "
             "designed on" if held_out else "# PrivatePCA with its defaults against the best registered mechanism, "
             "on real data")
    lines = [title, "",
             f"Generated by `python scripts/defaults.py pca{' --held-out' if held_out else ''}`. Captured variance "
             "of the private top-k subspace over",
             "exact PCA's (1 = exact), mean over the seeds shown; every fit through `dpcov.PrivatePCA(k, budget=...,",
             "radius=1.0, centering=\"private\")` with the same seeds. default: every other parameter left alone",
             "(mechanism=\"auto\"); best: the best mechanism of the registry through the same estimator",
             "(mechanism=...); IT-U: the previous default. radius=private: a private norm bound (10 % of the",
             "budget) instead of radius 1; exact radius: the data's largest norm (read from the data: the best fixed",
             "radius, a reference only).", "",
             "| data (n, d, k) | budget | default (auto's choice) | best registered | default / best | IT-U (old default) "
             "| default, radius=private | default, exact radius |", "|---|---|---|---|---|---|---|---|"]
    for (name, budget), cell in frame.groupby(["data", "budget"], sort=False):
        means = cell.groupby("config", sort=False).captured.mean()
        seeds = cell.seed.nunique()
        registered = means.drop([c for c in means.index if c.startswith("default") or "," in c])
        best = registered.idxmax()
        first = cell.iloc[0]
        choices = cell[cell.config == "default"].mechanism.value_counts()  # auto's choice per seed
        chosen = ", ".join(f"{m}{'' if len(choices) == 1 else f' {c}/{seeds}'}" for m, c in choices.items())
        lines.append(f"| {name} ({first.n}, {first.d}, {first.k}) | {budget} | {means['default']:.3f} ({chosen}) "
                     f"| {registered[best]:.3f} ({best}) | {means['default'] / registered[best]:.2f} "
                     f"| {means.get('itu', float('nan')):.3f} | {means['default, radius=private']:.3f} "
                     f"| {means['default, exact radius']:.3f} |")
    ratios = []
    for _, cell in frame.groupby(["data", "budget"]):
        means = cell.groupby("config").captured.mean()
        ratios.append(means["default"] / means.drop([c for c in means.index if c.startswith("default") or "," in c]).max())
    lines += ["", f"{len(ratios)} cells, {seeds} seeds each; default >= 0.9 x best in "
              f"{sum(r >= 0.9 for r in ratios)} of {len(ratios)}; worst default / best: {min(ratios):.2f}. nan: "
              f"radius='private' refused (too few rows for its share of the budget).", "",
              "## The radius: loose (1.0), private (10 % of the budget), exact (the largest norm, read from the data)", "",
              "For mechanisms calibrated to the declared radius. A private bound needs n >= 4 x its threshold",
              "(mechanisms/norm_bound.py): the small sets at small budgets have none (nan).", "",
              "| data | budget | mechanism | loose | private | exact |", "|---|---|---|---|---|---|"]
    for (name, budget), cell in frame.groupby(["data", "budget"], sort=False):
        means = cell.groupby("config", sort=False).captured.mean()
        for m in RADIUS_MECHANISMS:
            if f"{m}, exact radius" in means:
                lines.append(f"| {name} | {budget} | {m} | {means[m]:.3f} | {means[f'{m}, radius=private']:.3f} "
                             f"| {means[f'{m}, exact radius']:.3f} |")
    return "\n".join(lines) + "\n"


def registered_means(cell: pd.DataFrame) -> pd.Series:
    """A real-data cell's mean captured variance per registered mechanism (radius 1; no default or variant)."""
    return cell[~cell.config.str.contains("default|,")].groupby("config").captured.mean()


def measure_fresh(seeds: int, first_seed: int, n_jobs: int) -> pd.DataFrame:
    """The default and each cell's best registered mechanism (picked on the committed seeds) on seeds
    first_seed, ..., first_seed + seeds - 1."""
    rows = []
    for file in ("pca.csv", "pca_held_out.csv"):
        committed = pd.read_csv(OUT / file)
        for name, frame in committed.groupby("data", sort=False):
            X = pca_data(name)
            k = int(frame.k.iloc[0])
            for budget_name, cell in frame.groupby("budget", sort=False):
                budget = next(b for b in PCA_BUDGETS if str(b) == budget_name)
                best = registered_means(cell).idxmax()
                configs = {"default": "auto", "best": best}
                jobs = [(c, s, delayed(_pca_fit)(X, k, budget, s, mechanism=m))
                        for c, m in configs.items() for s in range(first_seed, first_seed + seeds)]
                values = Parallel(n_jobs=n_jobs)(job for _, _, job in jobs)
                rows += [{"source": file, "data": name, "n": len(X), "d": X.shape[1], "k": k, "budget": budget_name,
                          "config": c, "seed": s, "captured": v, "mechanism": m}
                         for (c, s, _), (v, m) in zip(jobs, values)]
                print(f"{name} {budget_name}: done", flush=True)
    return pd.DataFrame(rows)


def _by_other_sets(cells: pd.DataFrame, width: float = 0.5) -> list[str]:
    """Each cell's choice from the measured cells of the other sets (its own set left out): the mechanism with
    the highest mean relative score (captured / the cell's best) under the same notion, weighed by a Gaussian
    kernel in (log budget, log n, log d) ``width`` grid steps wide (as auto's table is read, dpcov/defaults.py)."""
    choices = []
    steps = {"budget": np.log(4.0), "n": np.log(10.0), "d": np.log(3.0)}
    for _, cell in cells.iterrows():
        others = cells[(cells.data != cell.data) & (cells.notion == cell.notion)]
        distance = sum((np.log(others[a].to_numpy(float) / cell[a]) / steps[a]) ** 2 for a in steps)
        weights = np.exp(-(distance - distance.min()) / (2 * width**2))
        scores = pd.DataFrame([s for s in others.relative]).fillna(0.0)
        choices.append(str((scores.mul(weights, axis=0).sum() / weights.sum()).idxmax()))
    return choices


def fresh_report(fresh: pd.DataFrame) -> str:
    lines = ["# The defaults on real data, re-measured on fresh seeds; and what a choice from public facts can reach",
             "", f"Generated by `python scripts/defaults.py fresh --seeds {fresh.seed.nunique()}`. pca.md and "
             "pca_held_out.md compare the default with the best of ~17",
             "registered mechanisms on the seeds that picked it: that maximum of noisy means is biased up (the winner's",
             "curse). Here the best is the one picked there, and both it and the default are fitted again on fresh seeds",
             f"({fresh.seed.min()}-{fresh.seed.max()}), through the same estimator with the same settings (radius 1, "
             "centering=\"private\").", "",
             "(mean ± its standard error over the fresh seeds.)", "",
             "| data (n, d, k) | budget | best (picked on seeds 0-4) | committed default / best | fresh default | "
             "fresh best | fresh default / best |", "|---|---|---|---|---|---|---|"]
    summary, cells = [], []
    for file in ("pca.csv", "pca_held_out.csv"):
        committed = pd.read_csv(OUT / file)
        for (name, budget), cell in committed.groupby(["data", "budget"], sort=False):
            means = registered_means(cell)
            best = means.idxmax()
            old = cell[cell.config == "default"].captured.mean() / means[best]
            fits = fresh[(fresh.data == name) & (fresh.budget == budget)].groupby("config").captured
            new, error = fits.mean(), fits.sem()
            ratio = new["default"] / new["best"]
            first = cell.iloc[0]
            lines.append(f"| {name} ({first.n}, {first.d}, {first.k}) | {budget} | {best} | {old:.2f} "
                         f"| {new['default']:.3f} ± {error['default']:.3f} | {new['best']:.3f} ± {error['best']:.3f} "
                         f"| {ratio:.2f} |")
            summary.append({"file": file, "old": old, "new": ratio,
                            "issue": (name, budget) in ISSUE_CELLS})
            notion, value = defaults.budget_facts(next(b for b in PCA_BUDGETS if str(b) == budget))
            cells.append({"file": file, "data": name, "notion": notion, "budget": value, "n": first.n, "d": first.d,
                          "relative": (means / means[best]).to_dict()})
    summary, cells = pd.DataFrame(summary), pd.DataFrame(cells)
    lines += ["", "| sets | cells | default >= 0.9 x best, committed seeds | the same, fresh seeds |", "|---|---|---|---|"]
    for file, part in summary.groupby("file", sort=False):
        lines.append(f"| {file} | {len(part)} | {(part.old >= 0.9).sum()} | {(part.new >= 0.9).sum()} |")
    part = summary[summary.issue]
    lines.append(f"| issue 37's own table (MNIST-49, digits, cancer at eps = 1, eps = 4, rho = 0.5) | {len(part)} "
                 f"| {(part.old >= 0.9).sum()} | {(part.new >= 0.9).sum()} |")
    lines += ["", "## What a choice from public facts can reach on these sets", "",
              "Each cell's mechanism chosen from the other sets' measured cells (its own set left out: real data in",
              "place of auto's synthetic scenarios), by the facts auto reads -- notion, budget, n, d -- with kernels of",
              "several widths; 'one per notion': the widest, the same mechanism everywhere under a notion. The ratio is",
              "on the committed seeds (the chosen's mean over the best's).", "",
              "| kernel width (grid steps) | pca.csv cells >= 0.9 x best | pca_held_out.csv cells >= 0.9 x best |",
              "|---|---|---|"]
    for width, label in ((0.3, "0.3"), (0.5, "0.5"), (1.0, "1"), (100.0, "one per notion")):
        cells["chosen"] = _by_other_sets(cells, width)
        reached = cells.apply(lambda c: c.relative.get(c.chosen, 0.0) >= 0.9, axis=1)
        lines.append(f"| {label} | {reached[cells.file == 'pca.csv'].sum()} of {(cells.file == 'pca.csv').sum()} "
                     f"| {reached[cells.file == 'pca_held_out.csv'].sum()} of {(cells.file == 'pca_held_out.csv').sum()} |")
    return "\n".join(lines) + "\n"


def build(trials: int, n_jobs: int, tasks=None, hardened_only: bool = False) -> None:
    """``tasks``: re-measure only these tasks' cells, the others' kept from the committed table (a cache started from
    it). ``hardened_only``: only the candidates the estimators' default numerics run (auto's choices there)."""
    OUT.mkdir(parents=True, exist_ok=True)
    cache = OUT / "cells.csv"
    key = ["task", "notion", "budget", "n", "d", "k"]
    if tasks and not cache.exists():  # the other tasks' cells as committed
        committed = pd.read_csv(defaults.TABLE)
        committed[~committed.task.isin(tasks)].to_csv(cache, index=False, float_format="%.6g")
    done = pd.read_csv(cache) if cache.exists() else pd.DataFrame()
    if not done.empty and "scenario" not in done:  # a cache of the earlier format (scores averaged over scenarios)
        cache.unlink()
        done = pd.DataFrame()

    def cell_key(task, notion, budget, n, d, k):
        return task, notion, round(float(budget), 9), int(n), int(d), -1 if k is None or k != k else int(k)

    finished = set() if done.empty else {cell_key(*r) for r in done[key].itertuples(index=False)}
    cells = [c for c in defaults.grid_cells(tuple(tasks) if tasks else defaults.TASKS) if cell_key(*c) not in finished]
    print(f"{len(finished)} cells measured before, {len(cells)} to go", flush=True)
    started = time.perf_counter()
    # heavy cells first, so the workers end together
    cells.sort(key=lambda c: -c[3] * c[4] ** 2)
    jobs = (delayed(measure.measure_cell)(*cell, trials, hardened_only=hardened_only) for cell in cells)
    for i, frame in enumerate(Parallel(n_jobs=n_jobs, return_as="generator_unordered")(jobs), 1):
        frame.to_csv(cache, mode="a", header=not cache.exists(), index=False)
        if i % 10 == 0 or i == len(cells):
            print(f"{i}/{len(cells)} cells, {time.perf_counter() - started:.0f} s", flush=True)
    table = pd.read_csv(cache).drop_duplicates(key + ["scenario", "mechanism"], keep="last")
    table = table.sort_values(key + ["scenario", "score"], ascending=[True] * (len(key) + 1) + [False], kind="stable")
    table.to_csv(defaults.TABLE, index=False, float_format="%.6g")
    print(f"wrote {defaults.TABLE.relative_to(ROOT)}: {len(table)} rows, "
          f"{len(table.drop_duplicates(key))} cells", flush=True)


# held-out targets: (target, task, metric column); rows/dim from each target's spectrum.csv
HELD_OUT = (("dong2022/fig4", "covariance", "err_fro_mean"), ("dong2022/fig6", "covariance", "err_fro_mean"),
            ("dong2022/fig5", "covariance", "err_fro_mean"), ("amin2019/fig1a", "covariance", "err_fro_rel_mean"),
            ("amin2019/fig1b", "covariance", "err_fro_rel_mean"), ("amin2019/regression", "ridge", "err_reg_mean"))


def target_typicals(target: str, keys: list[str]) -> dict[tuple, float]:
    """Each data point's typical norm as auto would read it from its released median (keyed by the data
    parameters ``keys``, as strings): the exact median rounded up to the walk's grid and moved to the middle of
    its step (defaults.typical_stand_in), without the walk's noise. Loads each point's data once."""
    experiment = experiment_of(next(t for t in TARGETS if t.out == target), n_jobs=1)
    dataset = get_dataset(experiment.dataset)
    typicals = {}
    for point in experiment.grid():
        params = data_params(experiment.dataset, point)
        key = tuple(str(params[k]) for k in keys)
        if key in typicals:
            continue
        data = dataset.load(params, generator(experiment.seed, "data", dataset.name, *params_key(params)),
                            experiment.data_dir)
        typicals[key] = defaults.typical_stand_in(measure.typical_norm(data.X), data.radius)
    return typicals


def target_cells(target: str, task: str, metric: str) -> list[dict]:
    """The committed target's cells: (data point, budget) with each registered mechanism's mean error (its
    variants -- as-published calibrations, other options -- left out: auto names mechanisms only)."""
    summary = pd.read_csv(ROOT / "results" / target / "summary.csv")
    spectrum = pd.read_csv(ROOT / "results" / target / "spectrum.csv")
    budget_column = "rho" if "rho" in summary.columns else "eps"
    keys = [c for c in spectrum.columns if c not in ("rows", "dim", "eigenvalues")]
    summary = summary.merge(spectrum[keys + ["rows", "dim"]], on=keys)
    summary = summary[summary.mechanism.isin(set(MECHANISMS))]
    cells = []
    typicals = target_typicals(target, keys)
    for key, cell in summary.groupby(keys + [budget_column]):
        value = float(key[-1])
        budget = dpcov.ZCDP(value) if budget_column == "rho" else dpcov.PureDP(value)
        dim = int(cell.dim.iloc[0])  # ridge: the rows [x, y], as the table's ridge cells count d
        cells.append({"target": target, "point": ", ".join(f"{k}={v}" for k, v in zip(keys, key[:-1])),
                      "budget": budget, "task": task, "n": int(cell.rows.iloc[0]), "d": dim,
                      "typical": typicals[tuple(str(v) for v in key[:-1])],
                      "errors": dict(zip(cell.mechanism, cell[metric]))})
    return cells


def first_choice(task: str, n: int, d: int, budget, among, k: int | None = None, typical: float | None = None) -> str:
    """auto's ranking restricted to the mechanisms a target ran: its first among them; weighed by the rows'
    median norm where the estimator would release it (defaults.releases_typical)."""
    typical = typical if typical is not None and defaults.releases_typical(task, n, d, budget, k) else None
    ranking = [m for m, _ in defaults.advise(task, n, d, budget, k, typical=typical).ranking if m in among]
    return ranking[0] if ranking else ""


def agreement_frame() -> pd.DataFrame:
    rows = []
    for target, task, metric in HELD_OUT:
        for cell in target_cells(target, task, metric):
            ranked = {m for m in defaults.candidates(task, cell["budget"])  # what auto may choose: hardened ones
                      if hardenable(MECHANISMS[m])}
            errors = {m: e for m, e in cell["errors"].items() if m in ranked}
            if len(errors) < 2:
                continue
            best = min(errors, key=errors.get)
            chosen = first_choice(task, cell["n"], cell["d"], cell["budget"], errors, typical=cell["typical"])
            rows.append({"source": target, "cell": f"{cell['point']}, {cell['budget']}", "chosen": chosen,
                         "best": best, "regret": errors[chosen] / errors[best] if errors[best] > 0 else 1.0})
    for file, source in (("pca.csv", "real-data PCA (pca.csv)"), ("pca_held_out.csv", "held-out PCA (pca_held_out.csv)")):
        if not (OUT / file).exists():
            continue
        frame = pd.read_csv(OUT / file)
        for (name, budget), cell in frame.groupby(["data", "budget"], sort=False):
            means = cell[~cell.config.str.contains("default|,")].groupby("config").captured.mean()
            best = means.idxmax()
            default = cell[cell.config == "default"].captured.mean()  # auto's choices over the seeds
            rows.append({"source": source, "cell": f"{name}, {budget}", "chosen": cell.auto.iloc[0],
                         "best": best, "regret": means[best] / default})
    return pd.DataFrame(rows)


def agreement_report(frame: pd.DataFrame) -> str:
    lines = ["# mechanism=\"auto\" out of sample: its first choice against the measured best", "",
             "Generated by `python scripts/defaults.py agreement`. auto's table (dpcov/auto_table.csv) was measured",
             "on synthetic rows only; no cell below was used to build it, but choices were made after seeing some: the",
             "zero matrix is left out of ridge (dpcov/defaults.py NOT_FOR) after auto chose it and lost Amin's",
             "regression cells; the two nonnegative scenarios and the weighing by the rows' median norm came after the",
             "real-data PCA cells (pca.csv: adult under pure DP) showed the Gaussian scenarios missing min-max scaled",
             "rows. So those 56 cells are not strictly out of sample. The sets of pca_held_out.csv (airfoil, UCI wine",
             "quality, scikit-learn's diabetes and iris) were chosen after those changes and not used to change",
             "anything: they are. Committed targets: auto's ranking for the target's n, d, budget and task",
             "(covariance: Frobenius error; ridge: prediction error) -- weighed by the rows' median norm, read exactly",
             "as a stand-in for the private release, where the estimator would release it -- restricted to the",
             "registered mechanisms the target ran that auto may choose (those with hardened numerics, the estimators'",
             "default since issue 48; variants with other calibrations or options left out), against the lowest mean",
             "error of those. Real-data PCA: the default's mean captured variance (auto's choice may differ by seed;",
             "the most frequent is shown) against the registered mechanism with the most, of any numerics (pca.md,",
             "pca_held_out.md). regret = the chosen's error / the best's (PCA: the best's captured",
             "variance / the default's).", "",
             "| held-out cells | cells | first choice = measured best | regret <= 1.1 | regret <= 1.5 | worst regret |",
             "|---|---|---|---|---|---|"]

    def line(name, part):
        return (f"| {name} | {len(part)} | {(part.chosen == part.best).mean():.0%} | {(part.regret <= 1.1).mean():.0%} "
                f"| {(part.regret <= 1.5).mean():.0%} | {part.regret.max():.2f} |")

    for source, part in frame.groupby("source", sort=False):
        lines.append(line(source, part))
    lines.append(line("**all held-out cells**", frame))
    misses = frame[frame.chosen != frame.best].sort_values("regret", ascending=False)
    lines += ["", "In sample (the grid the table was measured on): the first choice is the cell's best by construction.",
              "", f"Misses ({len(misses)}), worst first:", "", "| source | cell | chosen | best | regret |",
              "|---|---|---|---|---|"]
    lines += [f"| {r.source} | {r.cell} | {r.chosen} | {r.best} | {r.regret:.2f} |" for r in misses.itertuples()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="measure the grid and write dpcov/auto_table.csv")
    b.add_argument("--trials", type=int, default=2)
    b.add_argument("--n-jobs", type=int, default=-1)
    b.add_argument("--tasks", nargs="*", choices=defaults.TASKS, default=None,
                   help="re-measure only these tasks (the others' cells kept from the committed table)")
    b.add_argument("--hardened-only", action="store_true",
                   help="only the candidates hardened numerics run (the estimators' default; auto's choices there)")
    p = sub.add_parser("pca", help="the defaults against the best registered mechanism on real data")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--n-jobs", type=int, default=-1)
    p.add_argument("--defaults-only", action="store_true",
                   help="fit only the defaults' configs again; keep the registered mechanisms' rows of the committed csv")
    p.add_argument("--privacy-unit", choices=("replace_one", "add_remove"), default="replace_one",
                   help="the unit every fit runs under; add_remove writes pca_add_remove.* (the estimators' default "
                        "unit: each line at its add/remove sensitivity, issue 59)")
    p.add_argument("--held-out", action="store_true",
                   help=f"the sets no default was designed on ({', '.join(HELD_OUT_COMPONENTS)}): pca_held_out.*")
    sub.add_parser("agreement", help="auto's first choice against the measured best on held-out cells")
    f = sub.add_parser("fresh", help="pca's default / best re-measured on fresh seeds; the reach of public facts")
    f.add_argument("--seeds", type=int, default=40)
    f.add_argument("--first-seed", type=int, default=100)
    f.add_argument("--n-jobs", type=int, default=-1)
    args = parser.parse_args(argv)
    if args.command == "agreement":
        OUT.mkdir(parents=True, exist_ok=True)
        report = agreement_report(agreement_frame())
        (OUT / "agreement.md").write_text(report)
        print(report)
    elif args.command == "fresh":
        frame = measure_fresh(args.seeds, args.first_seed, args.n_jobs)
        frame.to_csv(OUT / "fresh.csv", index=False, float_format="%.6g")
        report = fresh_report(frame)
        (OUT / "fresh.md").write_text(report)
        print(report)
    elif args.command == "build":
        build(args.trials, args.n_jobs, args.tasks, args.hardened_only)
    elif args.command == "pca":
        OUT.mkdir(parents=True, exist_ok=True)
        sets, stem = (tuple(HELD_OUT_COMPONENTS), "pca_held_out") if args.held_out else (PCA_DATA, "pca")
        stem += "_add_remove" if args.privacy_unit == "add_remove" else ""
        kept = pd.read_csv(OUT / f"{stem}.csv") if args.defaults_only else None
        frame = measure_pca(args.seeds, args.n_jobs, sets, kept, args.privacy_unit)
        frame.to_csv(OUT / f"{stem}.csv", index=False, float_format="%.6g")
        report = pca_report(frame, held_out=args.held_out)
        if args.privacy_unit == "add_remove":
            report = report.replace("\n", " -- under privacy_unit=\"add_remove\" (the estimators' default unit: each "
                                    "line at its add/remove sensitivity, issue 59)\n", 1).replace(
                "scripts/defaults.py pca", "scripts/defaults.py pca --privacy-unit add_remove", 1)
        if args.defaults_only:
            report += ("\nThe defaults' columns were fitted again with `--defaults-only` (hardened numerics, the estimators' "
                       "default since issue 48; auto chooses among hardened mechanisms); the registered mechanisms' "
                       "columns are the committed run's (idealized numerics; hardened and idealized errors are "
                       "statistically identical: results/measurements/hardened_vs_idealized.txt).\n")
        (OUT / f"{stem}.md").write_text(report)
        print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
