"""dpcov against diffprivlib and OpenDP at equal epsilon on real data: private PCA (the captured
variance of the top-k subspace relative to non-private PCA), private linear regression (MSE relative
to non-private least squares), wall time per fit, and each eigenvector sampler's correctness by exact
moments (q = 2: E[u_1^2] = (1 + I1(k/2)/I0(k/2)) / 2 for u ~ exp(k u_1^2) on the circle).

    dpcov head-to-head --peers-python /path/to/peers/venv/bin/python   # the committed run
    dpcov head-to-head --quick                                         # a small smoke run

The peers run in their own interpreter (diffprivlib 0.6.6 needs scikit-learn <= 1.7.2): make one with
    python3 -m venv peers && peers/bin/pip install diffprivlib==0.6.6 scikit-learn==1.7.2 'opendp[numpy]==0.16.0'
Without it (or with --no-peers) only dpcov's rows are measured; a peer that is missing is reported as
such. Every peer call has a time limit (--timeout seconds per fit); a timeout is a row of its own.
Writes results/head_to_head/: pca.csv, regression.csv, samplers.csv, table.md, head_to_head.png (+ .pdf).

Data (public preprocessing only, except where the suite's loaders say so): UCI wine (d = 13) and adult
(d = 108, min-max scaled, rows scaled into the unit ball as in Amin et al.), and MNIST pooled 4 x 4
(d = 49, all 60000 training rows; the pooling and the factor 4 that keeps rows in the unit ball are public).
Every method gets the same epsilon for the whole fit (centring included: each library estimates the
mean privately inside its budget).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from scipy.special import i0e, i1e


import dpcov
from dpcov.defaults import candidates
from dpcov.estimators import hardenable
from dpcov.figures.plot import tight_layout
from dpcov.measure import score_fit
from dpcov.data.files import DataFile, locate
from dpcov.data.mnist import mnist
from dpcov.data.uci import TARGETS, uci
from dpcov.figures.style import style_for
from dpcov.mechanisms.bingham import sample_bingham_eigen
from dpcov.mechanisms.registry import MECHANISMS
from . import project_root

ROOT = project_root()

OUT = ROOT / "results" / "head_to_head"
EPSILONS = (0.5, 1.0, 2.0, 4.0, 16.0)
COMPONENTS = {"wine": 3, "adult": 5, "mnist49": 5, "digits": 5, "cancer": 5}
# sets no default was designed on (scripts/defaults.py pca --held-out): the defaults' out-of-sample check
HELD_OUT_COMPONENTS = {"airfoil": 2, "wine_quality": 3, "diabetes": 3, "iris": 2}
WINE_QUALITY = tuple(DataFile("wine_quality", f"winequality-{colour}.csv", None,
                              how_to_get="UCI Wine Quality: https://archive.ics.uci.edu/dataset/186/wine+quality")
                     for colour in ("red", "white"))
DEFAULT = "dpcov default"  # every parameter but the budget, radius=1.0 and centering="private" left alone
BEST = "dpcov best"  # per cell, the registered mechanism with the best mean through the same estimator
# private as executed (docs/privacy.md; the precision attack on each library's float release:
# results/head_to_head/precision_attack.txt), per column of the tables
AS_EXECUTED = {
    DEFAULT: "yes: hardened numerics (its mean: no event in 20000 fits per neighbour)",
    BEST: "where its mechanism is hardened; † marks idealized numerics (an eigenvector sampler)",
    "diffprivlib PCA": "no: float noise (its tools.mean: ε ≥ 6.12 against 1)",
    "diffprivlib LinearRegression": "no: float noise (its tools.mean: ε ≥ 6.12 against 1)",
    "OpenDP PCA": "not claimed: runs only with OpenDP's idealized-numerics and floating-point features",
}
PEERS_PCA = {"diffprivlib PCA": "diffprivlib_pca", "OpenDP PCA": "opendp_pca"}
PEERS_REGRESSION = {"diffprivlib LinearRegression": "diffprivlib_lr"}
KAPPAS = (1.0, 10.0, 100.0)
PEER_LOOKS = {"diffprivlib": ("tab:green", "s"), "OpenDP": ("tab:purple", "D")}
LOOKS = {DEFAULT: ("tab:blue", "o"), BEST: ("tab:red", "*"),
         "diffprivlib PCA": PEER_LOOKS["diffprivlib"], "OpenDP PCA": PEER_LOOKS["OpenDP"],
         "diffprivlib LinearRegression": PEER_LOOKS["diffprivlib"]}


# --- data ------------------------------------------------------------------------------------------------

def pca_data(name: str, data_dir=None) -> np.ndarray:
    """Rows in the unit ball by public scalings: MNIST pooled 4 x 4 times 4; scikit-learn's digits (pixels
    <= 16) over 16 sqrt(64); breast cancer and the UCI sets min-max scaled (the loaders' rule, which reads
    the columns' ranges) into the ball."""
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris
    from sklearn.preprocessing import MinMaxScaler

    if name == "digits":
        return load_digits().data / 128.0
    if name == "cancer":
        return MinMaxScaler().fit_transform(load_breast_cancer().data) / np.sqrt(30)
    if name in ("diabetes", "iris", "wine_quality"):  # min-max columns over sqrt(d): rows in the unit ball
        if name == "wine_quality":
            data = np.vstack([np.loadtxt(locate(f, data_dir), delimiter=";", skiprows=1) for f in WINE_QUALITY])
        else:
            data = {"diabetes": load_diabetes, "iris": load_iris}[name]().data
        return MinMaxScaler().fit_transform(data) / np.sqrt(data.shape[1])
    if name == "mnist49":
        X = mnist(0, -1, np.random.default_rng(0), data_dir).X  # all 60000 rows, pixels / (255 * 28): ||x|| <= 1
        pooled = X.reshape(len(X), 7, 4, 7, 4).mean(axis=(2, 4)).reshape(len(X), 49)
        return 4.0 * pooled  # ||4 avg|| <= ||x||: each block's mean squared is at most its sum of squares / 16
    return uci(name, "minmax", None, data_dir).X


def regression_data(name: str, data_dir=None) -> tuple[np.ndarray, np.ndarray]:
    """(X, y): the suite's target column predicted from the others; rows [x, y] in the unit ball."""
    rows = uci(name, "minmax", None, data_dir).X
    t = TARGETS[name]
    return np.delete(rows, t, axis=1), rows[:, t]


# --- peers ------------------------------------------------------------------------------------------------

def peer_call(python: str, method: str, spec: dict, X=None, y=None, timeout: float = 60.0) -> dict:
    """One fit (or one batch of sampler draws) by a peer in its own interpreter, within ``timeout`` seconds:
    its output and seconds, or {"status": "timeout" | "missing" | "error", "detail": ...}."""
    with tempfile.TemporaryDirectory() as tmp:
        job = Path(tmp) / "job.npz"
        arrays = {"spec": np.array(json.dumps({**spec, "method": method, "trials": 1}))}
        if X is not None:
            arrays["X"] = X
        if y is not None:
            arrays["y"] = y
        np.savez(job, **arrays)
        try:
            done = subprocess.run([python, str(Path(__file__).with_name("peer_calls.py")), str(job)], capture_output=True,
                                  text=True, timeout=timeout + 15)  # + the interpreter's start and imports
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "seconds": timeout}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if lines:
        out = json.loads(lines[-1])
        return {"status": "timeout", "seconds": out["seconds"]} if out["seconds"] > timeout else out
    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no output"
    return {"status": "missing" if "ModuleNotFoundError" in done.stderr else "error", "detail": last}


def peer_rows(python: str | None, method: str, spec: dict, X=None, y=None, timeout: float = 60.0) -> list[dict]:
    """One dict per trial (seed + trial); after a timeout the remaining trials are not started."""
    if python is None:
        return [{"status": "missing", "detail": "no peers interpreter (--peers-python)"}]
    rows = []
    for trial in range(int(spec["trials"])):
        out = peer_call(python, method, {**spec, "seed": int(spec["seed"]) + trial}, X, y, timeout)
        rows.append(out)
        if out.get("status", "ok") != "ok":
            break
    return rows


# --- measurements ---------------------------------------------------------------------------------------

def ours(task: str, budget) -> dict:
    """label -> mechanism: the default ("auto") and every registered candidate (for the per-cell best)."""
    return {DEFAULT: "auto", **{f"dpcov {m}": m for m in candidates(task, budget)}}


def measure_ours(task: str, X, y, k, eps, trials, seed, privacy_unit: str = "replace_one") -> list[dict]:
    budget = dpcov.PureDP(eps)
    labels = ours(task, budget)
    jobs = [(label, trial, delayed(score_fit)(task, mechanism, budget, X, y, k or 1, 1000 * trial + seed,
                                              privacy_unit=privacy_unit))
            for label, mechanism in labels.items() for trial in range(trials)]
    outs = Parallel(n_jobs=-1)(job for *_, job in jobs)
    return [{"method": label, "trial": trial, "status": "ok", "value": value, "chosen": chosen, "seconds": seconds}
            for (label, trial, _), (value, chosen, seconds) in zip(jobs, outs)]


def measure_pca(datasets, epsilons, trials, python, timeout, data_dir=None,
                privacy_unit: str = "replace_one") -> pd.DataFrame:
    rows = []
    for name in datasets:
        X = pca_data(name, data_dir)
        k = COMPONENTS[name]
        for eps in epsilons:
            facts = {"dataset": name, "d": X.shape[1], "n": len(X), "k": k, "eps": eps}
            for out in measure_ours("pca", X, None, k, eps, trials, 7, privacy_unit):
                rows.append({**facts, **out, "captured": out.pop("value", np.nan)})
            for label, method in PEERS_PCA.items():
                spec = {"epsilon": eps, "k": k, "trials": trials, "seed": 7}
                for trial, out in enumerate(peer_rows(python, method, spec, X, timeout=timeout)):
                    row = {**facts, "method": label, "trial": trial, "status": out.get("status", "ok"),
                           "seconds": out.get("seconds", np.nan), "detail": out.get("detail", "")}
                    if "components" in out:
                        V = np.asarray(out["components"], dtype=float)
                        V = np.linalg.qr(V.T)[0].T  # (their rows are orthonormal up to rounding)
                        row["captured"] = dpcov.captured_variance_ratio(V, X)
                    rows.append(row)
            print(f"pca {name} eps={eps:g} done", flush=True)
    return pd.DataFrame(rows)


def measure_covariance(datasets, epsilons, trials, data_dir=None, privacy_unit: str = "replace_one") -> pd.DataFrame:
    """dpcov's PrivateCovariance (the peers release no covariance): Frobenius error / ||Sigma||_F."""
    rows = []
    for name in datasets:
        X = pca_data(name, data_dir)
        scale = float(np.linalg.norm(np.cov(X.T, bias=True)))
        for eps in epsilons:
            facts = {"dataset": name, "d": X.shape[1], "n": len(X), "eps": eps}
            for out in measure_ours("covariance", X, None, None, eps, trials, 13, privacy_unit):
                rows.append({**facts, **out, "fro_rel": out.pop("value", np.nan) / scale})
            print(f"covariance {name} eps={eps:g} done", flush=True)
    return pd.DataFrame(rows)


def measure_regression(datasets, epsilons, trials, python, timeout, data_dir=None,
                       privacy_unit: str = "replace_one") -> pd.DataFrame:
    from sklearn.linear_model import LinearRegression

    rows = []
    for name in datasets:
        X, y = regression_data(name, data_dir)
        mse_ols = float(np.mean((LinearRegression().fit(X, y).predict(X) - y) ** 2))
        for eps in epsilons:
            facts = {"dataset": name, "d": X.shape[1], "n": len(X), "eps": eps}
            for out in measure_ours("ridge", X, y, None, eps, trials, 11, privacy_unit):
                rows.append({**facts, **out, "mse_ratio": out.pop("value", np.nan) / mse_ols})
            for label, method in PEERS_REGRESSION.items():
                spec = {"epsilon": eps, "trials": trials, "seed": 11}
                for trial, out in enumerate(peer_rows(python, method, spec, X, y, timeout=timeout)):
                    row = {**facts, "method": label, "trial": trial,
                           "status": out.get("status", "ok"), "seconds": out.get("seconds", np.nan),
                           "detail": out.get("detail", "")}
                    if "coef" in out:
                        pred = X @ np.asarray(out["coef"]) + out["intercept"]
                        row["mse_ratio"] = float(np.mean((pred - y) ** 2)) / mse_ols
                    rows.append(row)
            print(f"regression {name} eps={eps:g} done", flush=True)
    return pd.DataFrame(rows)


def exact_top_moment(kappa: float) -> float:
    """E[u_1^2] for u on the circle with density proportional to exp(kappa u_1^2)."""
    return 0.5 * (1 + i1e(kappa / 2) / i0e(kappa / 2))


def measure_samplers(kappas, draws, python, timeout) -> pd.DataFrame:
    """Draws of the top eigenvector of C = diag(kappa, 0) at epsilon = 4 (every sampler here draws
    exp(epsilon/4 u^T C u)): the mean of u_1^2 against its exact value, z = (mean - exact) / se.
    ``timeout``: for the whole batch of draws of one sampler at one kappa."""
    rows = []
    for kappa in kappas:
        exact = exact_top_moment(kappa)
        start = time.perf_counter()
        # density exp(-u^T diag(values) u) = exp(kappa u_1^2) for values (-kappa, 0): u_1 is column 0
        ours = sample_bingham_eigen(np.array([-kappa, 0.0]), np.random.default_rng(int(kappa)), draws)[0]
        samples = {"dpcov": (ours[:, 0] ** 2, time.perf_counter() - start)}
        spec = {"epsilon": 4.0, "trials": 1, "seed": int(kappa), "C": [[kappa, 0.0], [0.0, 0.0]], "draws": draws}
        for label, method in (("diffprivlib", "diffprivlib_bingham"), ("OpenDP", "opendp_bingham")):
            out = peer_rows(python, method, spec, timeout=timeout)[0]
            if "draws" in out:
                samples[label] = (np.asarray(out["draws"])[:, 0] ** 2, out["seconds"])
            else:
                rows.append({"sampler": label, "kappa": kappa, "status": out["status"], "draws": 0})
        for label, (values, seconds) in samples.items():
            se = values.std(ddof=1) / math.sqrt(len(values))
            rows.append({"sampler": label, "kappa": kappa, "status": "ok", "draws": len(values),
                         "mean_u1sq": values.mean(), "exact": exact, "z": (values.mean() - exact) / se,
                         "seconds": seconds})
        print(f"samplers kappa={kappa:g} done", flush=True)
    return pd.DataFrame(rows)


# --- report ---------------------------------------------------------------------------------------------

SECTIONS = (("pca", "captured", True, "PCA: captured variance of the private top-k subspace / the best k-subspace's",
             "1 = exact PCA"),
            ("covariance", "fro_rel", False, "Covariance: ||Sigma~ - Sigma||_F / ||Sigma||_F (dpcov only: the peers "
             "release no covariance)", "0 = exact"),
            ("regression", "mse_ratio", False, "Regression: MSE / non-private least squares' MSE", "1 = non-private"))


def collapse(frame: pd.DataFrame, column: str, higher: bool) -> pd.DataFrame:
    """dpcov's rows as two methods: the default (its choice in ``detail``) and, per cell, the registered
    mechanism with the best mean (its name in ``detail``); the peers' rows unchanged."""
    parts = []
    for _, part in frame.groupby(["dataset", "eps"], sort=False):
        mine = part[part.method.str.startswith("dpcov ") & (part.method != DEFAULT) & (part.status == "ok")]
        means = mine.groupby("method")[column].mean()
        default = part[part.method == DEFAULT].copy()
        if "chosen" in default:
            default["detail"] = default["chosen"]
        parts.append(default)
        if len(means):
            best = means.idxmax() if higher else means.idxmin()
            rows = part[part.method == best].copy()
            rows["detail"], rows["method"] = best.removeprefix("dpcov "), BEST
            parts.append(rows)
        parts.append(part[~part.method.str.startswith("dpcov ")])
    return pd.concat(parts, ignore_index=True)


def cell(part: pd.DataFrame, column: str) -> str:
    ok = part[part.status == "ok"]
    if ok.empty:
        status = part.status.iloc[0] if len(part) else "—"
        return f"{status} (> {part.seconds.max():.0f} s)" if status == "timeout" else status
    mean, sem = ok[column].mean(), ok[column].std(ddof=1) / math.sqrt(len(ok)) if len(ok) > 1 else 0.0
    extra = f", {len(part) - len(ok)} timeout" if len(ok) < len(part) else ""
    name = f" ({_marked(ok.detail.iloc[0])})" if part.method.iloc[0] in (DEFAULT, BEST) and "detail" in ok else ""
    return f"{mean:.3f} ± {sem:.3f}{name}{extra}"


def _marked(mechanism: str) -> str:
    """A mechanism's name, with † where it has no hardened numerics (idealized: private on paper only)."""
    return mechanism if mechanism not in MECHANISMS or hardenable(MECHANISMS[mechanism]) else f"{mechanism} †"


def table(frames: dict, samplers: pd.DataFrame) -> str:
    lines = ["# Head-to-head: dpcov, diffprivlib 0.6.6, OpenDP at equal ε", "",
             "Generated by `dpcov head-to-head` (docs/head_to_head.md). Mean ± standard error over",
             "trials; seconds: median wall time of one fit on the 2-core machine. dpcov default: the estimator with",
             "every default left alone (mechanism=\"auto\"; its choice in brackets), radius=1.0 and",
             "centering=\"private\"; dpcov best: per cell, the registered mechanism with the best mean through the",
             "same estimator (chosen after the fact: an oracle, not a private choice).", ""]
    for kind, column, higher, title, what in SECTIONS:
        if kind not in frames:
            continue
        frame = collapse(frames[kind], column, higher)
        lines += [f"## {title} ({what})", ""]
        methods = list(dict.fromkeys(frame.method))
        lines += ["| data (n, d) | ε | " + " | ".join(methods) + " |", "|---|---|" + "---|" * len(methods),
                  "| private as executed | | " + " | ".join(AS_EXECUTED.get(m, "") for m in methods) + " |"]
        for (name, eps), part in frame.groupby(["dataset", "eps"], sort=False):
            first = part.iloc[0]
            size = f"{name} ({first.n}, {first.d}{', k = ' + str(int(first.k)) if 'k' in part and pd.notna(first.get('k')) else ''})"
            lines.append(f"| {size} | {eps:g} | " + " | ".join(cell(part[part.method == m], column) for m in methods) + " |")
        lines += ["", "Seconds per fit (median):", "", "| data | " + " | ".join(methods) + " |",
                  "|---|" + "---|" * len(methods)]
        for name, part in frame.groupby("dataset", sort=False):
            values = []
            for m in methods:
                sub = part[(part.method == m)]
                ok = sub[sub.status == "ok"]
                values.append(f"{ok.seconds.median():.3g}" if len(ok) else cell(sub, "seconds"))
            lines.append(f"| {name} | " + " | ".join(values) + " |")
        lines.append("")
    lines += ["## Samplers: one eigenvector at q = 2 against its exact moment", "",
              "u ~ exp(κ u₁²) on the circle (C = diag(κ, 0) at ε = 4 for the peers' exp(ε/4 uᵀCu)); exact",
              "E[u₁²] = (1 + I₁(κ/2)/I₀(κ/2))/2; z = (mean − exact)/se. |z| > 4 means the sampler draws from",
              "another distribution.", "", "| sampler | κ | draws | mean u₁² | exact | z | seconds |",
              "|---|---|---|---|---|---|---|"]
    for row in samplers.to_dict("records"):
        if row["status"] != "ok":
            lines.append(f"| {row['sampler']} | {row['kappa']:g} | {row['status']} | | | | |")
            continue
        lines.append(f"| {row['sampler']} | {row['kappa']:g} | {row['draws']} | {row['mean_u1sq']:.5f} | "
                     f"{row['exact']:.5f} | {row['z']:+.1f} | {row['seconds']:.2f} |")
    return "\n".join(lines) + "\n"


def figure(frames: dict, stem: Path, timeout: float = 60.0) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sections = [s for s in SECTIONS if s[0] in frames]
    columns = max(frames[s[0]].dataset.nunique() for s in sections)
    fig, axes = plt.subplots(len(sections), columns, figsize=(3.6 * columns, 3.5 * len(sections)), squeeze=False)
    for ax in axes.flat:
        ax.set_visible(False)
    for row, (kind, column, higher, title, what) in enumerate(sections):
        frame = collapse(frames[kind], column, higher)
        for index, (name, part) in enumerate(frame.groupby("dataset", sort=False)):
            ax = axes[row][index]
            ax.set_visible(True)
            late = []
            for method, sub in part.groupby("method", sort=False):
                colour, marker = LOOKS.get(method, (style_for(method).colour, style_for(method).marker))
                ok = sub[sub.status == "ok"]
                if len(ok):
                    stats = ok.groupby("eps")[column]
                    ax.errorbar(stats.mean().index, stats.mean(), yerr=1.96 * stats.sem().fillna(0), color=colour,
                                marker=marker, label=method, capsize=2)
                timed_out = sorted(set(sub[sub.status == "timeout"].eps) - set(ok.eps))
                if timed_out:
                    late.append((method, colour, timed_out))
            top = ax.get_ylim()[1]
            for shift, (method, colour, eps) in enumerate(late):  # a peer that timed out at every trial there
                ax.plot(np.asarray(eps) * 1.12**shift, [top] * len(eps), linestyle="none", marker="x", ms=9,
                        color=colour, clip_on=False, label=f"{method}: timeout (> {timeout:g} s)")
            ax.set_xscale("log")
            if kind != "pca":
                ax.set_yscale("log")
            first = part.iloc[0]
            ax.set_title(f"{kind}: {name} (n = {first.n}, d = {first.d})", fontsize=9)
            ax.set_xlabel("ε")
            ax.set_ylabel({"pca": "captured variance / exact PCA's", "covariance": "‖Σ̃ − Σ‖F / ‖Σ‖F",
                           "regression": "MSE / least squares' MSE"}[kind])
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=6)
    fig.suptitle("dpcov (default and best per cell) vs diffprivlib 0.6.6 and OpenDP 0.16 at equal ε "
                 "(× at the top edge: a peer's timeout)", fontsize=10)
    tight_layout(fig)
    stem.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(stem.with_suffix(".png"), dpi=110)
    fig.savefig(stem.with_suffix(".pdf"), metadata={"CreationDate": None, "ModDate": None})
    plt.close(fig)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers-python", default=os.environ.get("DPCOV_PEERS_PYTHON"),
                        help="the interpreter with diffprivlib and opendp (default $DPCOV_PEERS_PYTHON; none: dpcov only)")
    parser.add_argument("--no-peers", action="store_true", help="measure dpcov only")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per peer fit (default 60)")
    parser.add_argument("--draws", type=int, default=20000, help="draws per sampler and kappa")
    parser.add_argument("--sampler-timeout", type=float, default=600.0,
                        help="seconds for one sampler's draws at one kappa (default 600)")
    parser.add_argument("--quick", action="store_true", help="wine only, 2 trials, 2000 draws (a smoke run)")
    parser.add_argument("--redraw", action="store_true", help="only rewrite table.md and the figure from the CSVs")
    parser.add_argument("--keep-samplers", action="store_true", help="reuse the committed samplers.csv")
    parser.add_argument("--keep-peers", action="store_true",
                        help="measure dpcov's rows again and keep the peers' rows (and the samplers' check) of the "
                             "committed CSVs: for a change on dpcov's side only (the peers' code, data and seeds are "
                             "the same)")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--privacy-unit", default="replace_one", choices=["replace_one", "add_remove"],
                        help="dpcov's estimators' unit (default replace_one: n public, as the peers' PCA and regression "
                             "assume and the committed table was measured; add_remove: the estimators' own default, "
                             "less error than replace_one since issue 59: results/measurements/privacy_unit.txt)")
    args = parser.parse_args(argv)
    if args.keep_peers and args.quick:
        parser.error("--keep-peers keeps the committed full-size run's peer rows; --quick measures another grid")
    args.keep_samplers = args.keep_samplers or args.keep_peers  # the samplers' check is the peers' too
    python = None if args.no_peers or args.keep_peers else args.peers_python
    if python is not None and not Path(python).exists():
        parser.error(f"--peers-python {python}: no such interpreter")
    pca_sets, reg_sets, trials, draws = (["wine"], ["wine"], 2, 2000) if args.quick else \
        (["wine", "cancer", "digits", "mnist49", "adult"], ["wine", "airfoil", "adult"], args.trials, args.draws)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def read(name):
        return pd.read_csv(out / f"{name}.csv", keep_default_na=False, na_values=[""])

    if args.redraw:
        frames = {kind: read(kind) for kind, *_ in SECTIONS if (out / f"{kind}.csv").exists()}
        (out / "table.md").write_text(table(frames, read("samplers")))
        figure(frames, out / "head_to_head", args.timeout)
        print(f"redrew {out}/table.md and head_to_head.png")
        return
    samplers = read("samplers") if args.keep_samplers else measure_samplers(KAPPAS, draws, python, args.sampler_timeout)
    unit = args.privacy_unit
    frames = {"pca": measure_pca(pca_sets, EPSILONS, trials, python, args.timeout, args.data_dir, unit),
              "covariance": measure_covariance(pca_sets, EPSILONS, trials, args.data_dir, unit),
              "regression": measure_regression(reg_sets, EPSILONS, trials, python, args.timeout, args.data_dir, unit)}
    if args.keep_peers:
        for kind in ("pca", "regression"):
            kept = read(kind)
            kept = kept[~kept.method.str.startswith("dpcov")]
            frames[kind] = pd.concat([frames[kind][frames[kind].method.str.startswith("dpcov")], kept], ignore_index=True)
    for name, frame in (*frames.items(), ("samplers", samplers)):
        frame.to_csv(out / f"{name}.csv", index=False)
    (out / "table.md").write_text(table(frames, samplers))
    figure(frames, out / "head_to_head", args.timeout)
    print((out / "table.md").read_text())
    print(f"wrote {out}/ (pca.csv, covariance.csv, regression.csv, samplers.csv, table.md, head_to_head.png)")


if __name__ == "__main__":
    main()
